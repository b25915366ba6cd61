"""FinanceBench's document names: every form its own data uses parses; anything else is refused with the rule."""

from __future__ import annotations

import json

import pytest

from labkit.errors import LabkitError
from labkit.rag.financebench.names import DocNameError, parse_doc_name, try_parse
from tests.financebench_folders import sample_folder

# One name of every shape in FinanceBench's two data files and its pdfs/ folder (the development sample's
# 361 document records, 84 question documents and 17 PDF names), with the parts it must parse to.
SHAPES = [
    ("3M_2018_10K", ("3M", 2018, None, "10K", None)),
    ("3M_2023Q2_10Q", ("3M", 2023, 2, "10Q", None)),
    ("AMCOR_2023Q4_EARNINGS", ("AMCOR", 2023, 4, "EARNINGS", None)),
    ("AMD_2022_annualreport", ("AMD", 2022, None, "annualreport", None)),
    ("JOHNSON_JOHNSON_2022_10K", ("JOHNSON_JOHNSON", 2022, None, "10K", None)),
    ("JOHNSON_JOHNSON_2022Q4_EARNINGS", ("JOHNSON_JOHNSON", 2022, 4, "EARNINGS", None)),
    ("Pfizer_2023Q2_10Q", ("Pfizer", 2023, 2, "10Q", None)),
    ("PG_E_2023Q3_10Q", ("PG_E", 2023, 3, "10Q", None)),
    ("EBAY_2023Q1_8K", ("EBAY", 2023, 1, "8K", None)),
    ("AMCOR_2022_8K_dated-2022-07-01", ("AMCOR", 2022, None, "8K", "2022-07-01")),
    ("JOHNSON_JOHNSON_2023_8K_dated-2023-08-30", ("JOHNSON_JOHNSON", 2023, None, "8K", "2023-08-30")),
    ("FOOTLOCKER_2022_8K_dated_2022-08-19", ("FOOTLOCKER", 2022, None, "8K", "2022-08-19")),
    ("AMCOR_2022_8K_2022-04-26", ("AMCOR", 2022, None, "8K", "2022-04-26")),
    ("MCDONALDS_8K_dated-2023-01-06", ("MCDONALDS", None, None, "8K", "2023-01-06")),
    ("PG_E_2023_EARNINGS_dated-2023-05-04", ("PG_E", 2023, None, "EARNINGS", "2023-05-04")),
    ("PG_E_2023_EARNINGS-dated-2023-06-01", ("PG_E", 2023, None, "EARNINGS", "2023-06-01")),
]


@pytest.mark.parametrize("name, parts", SHAPES, ids=[name for name, _ in SHAPES])
def test_every_shape_financebench_uses_is_parsed(name, parts):
    parsed = parse_doc_name(name)
    assert (parsed.company, parsed.year, parsed.quarter, parsed.kind, parsed.dated) == parts
    assert parsed.name == name


def test_a_name_without_a_year_takes_its_dates_year_as_its_period():
    assert parse_doc_name("MCDONALDS_8K_dated-2023-01-06").period == 2023
    assert parse_doc_name("SALESFORCE_2021_8K_dated-2023-01-04").period == 2021  # the name's own year first


def test_two_spellings_of_one_document_share_an_identity():
    assert (
        parse_doc_name("AMCOR_2022_8K_2022-04-26").identity == parse_doc_name("AMCOR_2022_8K_dated-2022-04-26").identity
    )
    assert parse_doc_name("Pfizer_2023Q2_10Q").identity == parse_doc_name("PFIZER_2023Q2_10Q").identity
    assert parse_doc_name("AMCOR_2022_8K_2022-04-26").identity != parse_doc_name("AMCOR_2022_8K_2022-07-01").identity


@pytest.mark.parametrize(
    "name",
    ["ACME-2024-10K", "ACME_24_10K", "ACME_2024_10-K", "ACME_2024_8K_dated-2022", "_2024_10K", "ACME_10K", "notes"],
)
def test_a_name_outside_the_rule_is_refused_stating_the_rule(name):
    with pytest.raises(DocNameError, match=r"COMPANY\[_YEAR\[Qn\]\]_KIND") as caught:
        parse_doc_name(name)
    assert isinstance(caught.value, LabkitError) and isinstance(caught.value, ValueError)
    assert try_parse(name) is None


def test_every_name_in_the_samples_data_and_pdfs_parses_and_agrees_with_its_record():
    root = sample_folder()
    kinds = {"10k": "10K", "10q": "10Q", "8k": "8K", "Earnings": "EARNINGS", "10k_annualreport": "annualreport"}
    records = [json.loads(line) for line in (root / "data" / "financebench_document_information.jsonl").open()]
    questions = [json.loads(line) for line in (root / "data" / "financebench_open_source.jsonl").open()]
    assert len(records) == 361 and len(questions) == 150
    for record in records:
        assert parse_doc_name(record["doc_name"]).kind == kinds[record["doc_type"]], record["doc_name"]
    for question in questions:
        parse_doc_name(question["doc_name"])
        for evidence in question["evidence"]:
            parse_doc_name(evidence["doc_name"])
    pdfs = sorted((root / "pdfs").glob("*.pdf"))
    assert pdfs and all(try_parse(pdf.stem) for pdf in pdfs)
