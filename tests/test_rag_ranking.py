import json
import re

import pytest

from labkit.boundary import connect
from labkit.embeddings import SavedEmbeddings
from labkit.rag import trace as rag_trace
from labkit.rag.ranking import RUN_AUTHORED, run_fixtures, write_authored
from labkit.rag.trace import (
    RANKING_QUESTION,
    SETTINGS,
    StaleIndex,
    docs_vectors,
    load_docs_index,
    ranking_embeddings_path,
    trace_request,
)
from labkit.recording import load_run


@pytest.fixture(scope="module")
def ranked():
    return trace_request(RANKING_QUESTION, load_docs_index(), connect(RUN_AUTHORED, lesson="02", settings=SETTINGS))


def test_similarity_ranks_the_read_text_passages_above_the_cited_write_text_one(ranked):
    candidates = ranked.trace.first("retrieval_completed").data["candidates"]
    sources = [c["source_id"] for c in candidates]
    assert sources[0] == "path-read-text"
    assert sources.index("path-write-text") > 0
    assert ranked.result["source_ids"] == ["path-write-text"]
    scores = [c["score"] for c in candidates]
    assert scores == sorted(scores, reverse=True)


def test_the_authored_ranking_reply_quotes_no_argument_from_a_passage_it_does_not_cite(ranked):
    # The course's own citation rule: source_ids lists every passage the answer uses. A keyword argument with a
    # value (such as encoding='utf-8') that the answer writes must stand in a passage it cites.
    cited = [
        c["text"]
        for c in ranked.trace.first("retrieval_completed").data["candidates"]
        if c["source_id"] in ranked.result["source_ids"]
    ]
    arguments = re.findall(r"\w+='[^']*'", ranked.result["answer"])
    assert all(any(a in text for text in cited) for a in arguments), (arguments, ranked.result["source_ids"])


def test_the_ranking_run_replays_only_its_own_question():
    run = load_run(RUN_AUTHORED)
    assert run.origin == "authored"
    assert [b.question for b in run.bindings] == [RANKING_QUESTION]


def test_the_ranking_run_binds_the_vectors_file_it_needs():
    assert ranking_embeddings_path() in run_fixtures()
    assert "fixtures/docs/ranking_embeddings.json" in load_run(RUN_AUTHORED).fixtures


def test_rewriting_the_authored_ranking_run_reproduces_the_committed_one(tmp_path):
    path = write_authored(runs_dir=tmp_path)
    written = json.loads(path.read_text(encoding="utf-8"))
    assert written["content_sha256"] == load_run(RUN_AUTHORED).content_sha256


def test_vectors_from_another_model_are_refused(monkeypatch):
    real = SavedEmbeddings.from_set

    def from_set(name):
        saved = real(name)
        if name != rag_trace.RANKING_SET:
            return saved
        vectors = {text: saved.vector(text) for text in saved.texts}
        return SavedEmbeddings(vectors, model="another/model", dimension=saved.dimension, normalized=True)

    monkeypatch.setattr(SavedEmbeddings, "from_set", staticmethod(from_set))
    with pytest.raises(StaleIndex, match="labkit embed rag-docs-ranking"):
        docs_vectors()


def test_the_docs_vectors_hold_both_sets():
    vectors = docs_vectors()
    assert RANKING_QUESTION in vectors
    assert all(text in vectors for text in SavedEmbeddings.from_set(rag_trace.EMBEDDING_SET).texts)
