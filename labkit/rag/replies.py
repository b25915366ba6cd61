"""The replies the course wrote for lesson 02 part B's authored run: no model produced any of them.

Keyed by the last three digits of the ``financebench_id``; each is ``(status, answer, cited_pages)``.
The RAG replies show the intended grounded behaviour on the context that ``answer_with_rag(k=5)``
actually selects, plus deliberate mistakes the metrics must catch:

- 005 and 017 answer only half of a two-page question (the other page was not selected): ``partial``.
- 020 adds a figure it computed (a share of revenue) that no cited page prints: correct but unfaithful.
- 025 reads the wrong year's filing: a cited, printed figure that is wrong (faithful but incorrect).
- 036 answers a question the filings cannot answer with the prior year's figure: ``wrong``.
- 018 has no reply: reranking selects nothing for it, so no request is ever made.

The baseline replies show what a model without retrieval does with invented companies: refuse, or guess.
"""

from __future__ import annotations

_NOT_STATED = "The supplied pages do not state this."

RAG_REPLIES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "001": ("answered", "Total revenue in fiscal 2024 was $2,374.4 million.", ("ACME_2024_10K#p7",)),
    "002": ("answered", "Net income for fiscal 2024 was $273.3 million.", ("ACME_2024_10K#p7",)),
    "003": ("answered", "At the end of 2024 the company had 9,940 employees.", ("ACME_2024_10K#p4",)),
    "004": ("answered", "Capital expenditures in fiscal 2024 were $105.2 million.", ("ACME_2024_10K#p9",)),
    "005": (
        "answered",
        "Revenue in fiscal 2024 was $2,374.4 million; the supplied pages do not give the headcount.",
        ("ACME_2024_10K#p7",),
    ),
    "006": ("cannot_answer", _NOT_STATED, ()),
    "007": ("cannot_answer", _NOT_STATED, ()),
    "008": ("answered", "Diluted earnings per share in fiscal 2025 were $1.92.", ("ACME_2025_10K#p10",)),
    "009": ("answered", "The effective tax rate in fiscal 2025 was 23.1%.", ("ACME_2025_10K#p15",)),
    "010": (
        "answered",
        "The Services segment reported revenue of $1,251.2 million in fiscal 2025.",
        ("ACME_2025_10K#p8",),
    ),
    "011": (
        "answered",
        "Cash and cash equivalents were $497.8 million at the end of fiscal 2025, and the board "
        "declared a quarterly dividend of $0.15 per share.",
        ("ACME_2025_10K#p9", "ACME_2025_10K#p16"),
    ),
    "012": ("cannot_answer", "The filing incorporates executive compensation by reference and states no figure.", ()),
    "013": ("cannot_answer", _NOT_STATED, ()),
    "014": ("answered", "Long-term debt at the end of fiscal 2024 was $1,527.7 million.", ("BRIGHTWAVE_2024_10K#p11",)),
    "015": ("answered", "Fourth-quarter revenue in fiscal 2024 was $1,421.7 million.", ("BRIGHTWAVE_2024_10K#p17",)),
    "016": ("answered", "At the end of 2024 the company had 22,950 employees.", ("BRIGHTWAVE_2024_10K#p4",)),
    "017": (
        "answered",
        "The board declared a quarterly dividend of $0.24 per share; the supplied pages do not give year-end cash.",
        ("BRIGHTWAVE_2024_10K#p16",),
    ),
    "019": ("answered", "Total revenue in fiscal 2025 was $5,166.2 million.", ("BRIGHTWAVE_2025_10K#p7",)),
    "020": (
        "answered",
        "Capital expenditures in fiscal 2025 were $205.5 million, about 4.0% of revenue.",
        ("BRIGHTWAVE_2025_10K#p9",),
    ),
    "021": (
        "answered",
        "The Snacks segment reported revenue of $2,071.6 million in fiscal 2025.",
        ("BRIGHTWAVE_2025_10K#p8",),
    ),
    "022": ("answered", "The effective tax rate in fiscal 2025 was 20.9%.", ("BRIGHTWAVE_2025_10K#p15",)),
    "023": ("cannot_answer", _NOT_STATED, ()),
    "024": ("cannot_answer", "The filing incorporates executive compensation by reference and states no figure.", ()),
    "025": ("answered", "Net income was $249.2 million.", ("CORVID_2025_10K#p7",)),
    "026": ("cannot_answer", _NOT_STATED, ()),
    "027": ("answered", "Diluted earnings per share in fiscal 2024 were $1.89.", ("CORVID_2024_10K#p10",)),
    "028": ("answered", "Fourth-quarter revenue in fiscal 2024 was $477.0 million.", ("CORVID_2024_10K#p17",)),
    "029": ("cannot_answer", _NOT_STATED, ()),
    "030": ("cannot_answer", "The filings give no revenue outlook for fiscal 2026.", ()),
    "031": (
        "answered",
        "Net cash provided by operating activities in fiscal 2025 was $260.7 million.",
        ("CORVID_2025_10K#p9",),
    ),
    "032": ("answered", "Long-term debt at the end of fiscal 2025 was $322.3 million.", ("CORVID_2025_10K#p11",)),
    "033": ("answered", "At the end of 2025 the company had 7,720 employees.", ("CORVID_2025_10K#p4",)),
    "034": ("answered", "Total revenue in fiscal 2025 was $1,804.8 million.", ("CORVID_2025_10K#p7",)),
    "035": (
        "answered",
        "Cash and cash equivalents were $445.6 million at the end of fiscal 2025, and the board "
        "declared a quarterly dividend of $0.17 per share.",
        ("CORVID_2025_10K#p9", "CORVID_2025_10K#p16"),
    ),
    "036": ("answered", "Revenue was $1,719.2 million.", ("CORVID_2024_10K#p7",)),
}

_NO_DATA = "I have no reliable information about this company's annual report."

NAIVE_REPLIES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "001": ("answered", "Acme Industrial Tools reported total revenue of about $3.1 billion in fiscal 2024.", ()),
    "002": ("cannot_answer", _NO_DATA, ()),
    "003": ("answered", "Acme Industrial Tools employed roughly 12,000 people at the end of 2024.", ()),
    "004": ("cannot_answer", _NO_DATA, ()),
    "005": ("answered", "Revenue was about $3.1 billion and the company had roughly 12,000 employees.", ()),
    "006": ("answered", "Acme expects revenue of about $3.4 billion in fiscal 2026.", ()),
    "007": ("cannot_answer", _NO_DATA, ()),
    "008": ("answered", "Diluted earnings per share were $2.45 in fiscal 2025.", ()),
    "009": ("answered", "The effective tax rate was 21.0%, the US federal statutory rate.", ()),
    "010": ("cannot_answer", _NO_DATA, ()),
    "011": ("cannot_answer", _NO_DATA, ()),
    "012": ("answered", "The chief executive officer's total compensation was about $9.8 million.", ()),
    "013": ("cannot_answer", _NO_DATA, ()),
    "014": ("answered", "Brightwave Foods reported long-term debt of about $2.0 billion.", ()),
    "015": ("cannot_answer", _NO_DATA, ()),
    "016": ("answered", "Brightwave Foods employed about 18,500 people at the end of 2024.", ()),
    "017": ("cannot_answer", _NO_DATA, ()),
    "018": ("cannot_answer", "I do not know which hockey club you mean.", ()),
    "019": ("answered", "Brightwave Foods reported total revenue of about $4.8 billion in fiscal 2025.", ()),
    "020": ("cannot_answer", _NO_DATA, ()),
    "021": ("answered", "The Snacks segment reported revenue of about $2.4 billion.", ()),
    "022": ("cannot_answer", _NO_DATA, ()),
    "023": ("cannot_answer", _NO_DATA, ()),
    "024": ("answered", "The chief executive officer earned about $7.2 million in total compensation.", ()),
    "025": ("cannot_answer", _NO_DATA, ()),
    "026": ("answered", "Total assets were about $2.6 billion at December 31, 2024.", ()),
    "027": ("cannot_answer", _NO_DATA, ()),
    "028": ("answered", "Fourth-quarter revenue was about $450 million.", ()),
    "029": ("cannot_answer", _NO_DATA, ()),
    "030": ("cannot_answer", "Companies rarely publish such forecasts; I cannot say.", ()),
    "031": ("answered", "Operating cash flow was about $310 million in fiscal 2025.", ()),
    "032": ("cannot_answer", _NO_DATA, ()),
    "033": ("cannot_answer", _NO_DATA, ()),
    "034": ("answered", "Corvid Freight Systems reported revenue of about $2.2 billion in fiscal 2025.", ()),
    "035": ("cannot_answer", _NO_DATA, ()),
    "036": ("answered", "Revenue in fiscal 2022 was about $1.5 billion.", ()),
}
