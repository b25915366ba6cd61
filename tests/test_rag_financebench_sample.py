"""The command on FinanceBench's own layout: the development sample as published, and a copy with odd names.

These tests read ``../shared/financebench-sample`` (or ``$LABKIT_FINANCEBENCH_SAMPLE``) and need the embed
extra; they skip, saying why, where either is absent. Parsing and embedding the sample's 14 measured filings
costs several CPU-minutes the first time, so they also need ``$LABKIT_FINANCEBENCH_CACHE``: a cache folder
kept between runs (``.ci/run`` points it at ``~/.cache/labkit/financebench``); with a warm cache each run
costs seconds. The first test regenerates the committed results (``fixtures/financebench/sample_results.json``)
and requires them to be equal, commit and timings aside: a change to the retrievers, the chunking or the
grading changes that file, and it is then made again with the command its docs page gives.
"""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import pytest

from labkit.rag.financebench.cache import CACHE_SETTING
from labkit.rag.financebench.command import main
from labkit.rag.financebench.results import comparable, load_results, sample_results_path
from tests.financebench_folders import require_embed_extra, sample_folder

ODD_NAMES = (
    "AMCOR_2022_8K_2022-04-26",
    "FOOTLOCKER_2022_8K_dated_2022-08-19",
    "MCDONALDS_8K_dated-2023-01-06",
    "PG_E_2023_EARNINGS-dated-2023-06-01",
)


def persistent_cache() -> Path:
    """Return the cache folder kept between runs, or skip saying how to set it."""
    chosen = os.environ.get(CACHE_SETTING)
    if not chosen:
        pytest.skip(
            f"set {CACHE_SETTING} to a folder kept between runs to measure the FinanceBench sample "
            "(the first run parses and embeds 14 filings: several CPU-minutes)"
        )
    return Path(chosen)


def run(folder: Path, results: Path) -> tuple[int, str]:
    """Run the command as the committed results were made; return its exit code and standard output."""
    settings = load_results().settings
    argv = [
        str(folder),
        "--k",
        *map(str, settings["ks"]),
        "--chunk-size",
        str(settings["chunk_size"]),
        "--chunk-overlap",
        str(settings["chunk_overlap"]),
        "--extraction",
        settings["extraction"],
        "--context",
        settings["context"],
        "--cache",
        str(persistent_cache()),
        "--results",
        str(results),
        "--quiet",
    ]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    return code, out.getvalue()


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    folder = sample_folder()
    require_embed_extra()
    path = tmp_path_factory.mktemp("published") / "results.json"
    code, out = run(folder, path)
    return code, out, path


def test_the_sample_as_published_gives_the_committed_results(published):
    code, _, path = published
    assert code == 0
    assert comparable(load_results(path)) == comparable(load_results(sample_results_path()))


def test_the_sample_as_published_exits_0_and_names_every_absent_document(published):
    code, out, path = published
    results = load_results(path)
    assert code == 0 and results.absent
    listed = f"{len(results.absent)} documents asked about have no PDF; their {sum(results.absent.values())} questions"
    assert listed in out
    for doc, count in results.absent.items():
        assert f"{doc} ({count})" in out
    assert "single-document store: page-hit@k per retriever and question kind" in out and "] best" in out


def test_a_copy_holding_the_odd_names_and_a_stray_pdf_exits_0_and_measures_the_same(published, tmp_path):
    _, _, path = published
    folder = sample_folder()
    copy = tmp_path / "financebench"
    (copy / "data").mkdir(parents=True)
    (copy / "pdfs").mkdir()
    for data in (folder / "data").glob("*.jsonl"):
        (copy / "data" / data.name).write_bytes(data.read_bytes())
    measured = set(load_results(path).documents)
    for pdf in (folder / "pdfs").glob("*.pdf"):
        if pdf.stem in measured or pdf.stem in ODD_NAMES:
            (copy / "pdfs" / pdf.name).symlink_to(pdf.resolve())
    assert all((copy / "pdfs" / f"{name}.pdf").exists() for name in ODD_NAMES)
    (copy / "pdfs" / "analyst notes.pdf").symlink_to((folder / "pdfs" / f"{ODD_NAMES[2]}.pdf").resolve())
    code, out = run(copy, tmp_path / "copy.json")
    assert code == 0
    assert "analyst notes" in out and "outside FinanceBench's naming rule" in out
    assert f"{ODD_NAMES[0]}.pdf is used for AMCOR_2022_8K_dated-2022-04-26" in out
    ours, theirs = comparable(load_results(tmp_path / "copy.json")), comparable(load_results(path))
    assert ours["names"]["unknown"]["pdfs"] == ["analyst notes"]
    assert {k: v for k, v in ours.items() if k != "names"} == {k: v for k, v in theirs.items() if k != "names"}
