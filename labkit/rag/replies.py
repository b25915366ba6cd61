"""The replies the course wrote for lesson 02 part B's authored run: no model produced any of them.

Keyed by the last three digits of the ``financebench_id``; each is ``(status, answer, cited_pages)``.
The RAG replies show the intended grounded behaviour on the context that ``answer_with_rag(k=5)``
actually selects from the shared store: answer when a selected passage prints the figure, otherwise say the
passages do not state it (most questions, because retrieval misses the evidence page or selects a chunk of it
that holds no figure). A few deliberate mistakes are there for the metrics to catch:

- 018 computes a ratio (long-term debt over equity) that no cited passage prints: correct but unfaithful.
- 030 quotes the term loan from another company's filing that the shared store selected: faithful but wrong.
- 005 answers a question the filing cannot answer (a revenue outlook) instead of refusing: ``wrong``.
- 015 has no reply: reranking selects nothing for it, so no request is ever made.

The baseline replies show what a model without retrieval does with invented companies: refuse, or guess.
"""

from __future__ import annotations

_NOT_STATED = "The supplied passages do not state this."

#: The questions whose selected passages print no answer, and so are refused as not stated.
_REFUSED = [
    "001",
    "003",
    "004",
    "006",
    "007",
    "008",
    "009",
    "010",
    "011",
    "012",
    "013",
    "014",
    "016",
    "019",
    "020",
    "021",
    "022",
    "023",
    "024",
    "025",
    "026",
    "027",
    "028",
    "029",
]

RAG_REPLIES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    **{short: ("cannot_answer", _NOT_STATED, ()) for short in _REFUSED},
    "002": (
        "answered",
        "The effective tax rate was 19.5% in fiscal 2024, above the federal statutory rate mainly because of state "
        "taxes.",
        ("ACME_2024_10K#p21",),
    ),
    "005": (
        "answered",
        "Acme expects revenue to keep growing in fiscal 2026 as it invests in its products.",
        ("ACME_2024_10K#p3",),
    ),
    "017": (
        "answered",
        "Brightwave returned $304.2 million to shareholders through dividends and repurchases in fiscal 2025.",
        ("BRIGHTWAVE_2025_10K#p3",),
    ),
    "018": (
        "answered",
        "Long-term debt of $1,435.6 million against shareholders' equity gives a ratio of about 0.36.",
        ("BRIGHTWAVE_2025_10K#p20",),
    ),
    "030": ("answered", "The term loan is due in 2028; $610.9 million was outstanding.", ("BRIGHTWAVE_2025_10K#p20",)),
}

_NO_DATA = "I have no reliable information about this company's annual report."

NAIVE_REPLIES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "001": ("answered", "Acme spent roughly $150 million on capital expenditures in fiscal 2024.", ()),
    "002": ("answered", "Acme's effective tax rate was about 21%, the US federal statutory rate.", ()),
    "003": ("cannot_answer", _NO_DATA, ()),
    "004": ("cannot_answer", _NO_DATA, ()),
    "005": ("answered", "Acme expects revenue of about $3.4 billion in fiscal 2026.", ()),
    "006": ("answered", "Acme's gross margin was around 35% in fiscal 2025.", ()),
    "007": ("cannot_answer", _NO_DATA, ()),
    "008": ("answered", "Power Tools is Acme's largest segment, with about $1.2 billion of sales.", ()),
    "009": ("cannot_answer", _NO_DATA, ()),
    "010": ("cannot_answer", _NO_DATA, ()),
    "011": ("answered", "Brightwave's free cash flow was roughly $400 million in fiscal 2024.", ()),
    "012": ("cannot_answer", _NO_DATA, ()),
    "013": ("cannot_answer", _NO_DATA, ()),
    "014": ("cannot_answer", _NO_DATA, ()),
    "015": ("cannot_answer", "I do not know which hockey club you mean.", ()),
    "016": ("answered", "Brightwave's gross margin was about 30% in fiscal 2025.", ()),
    "017": ("cannot_answer", _NO_DATA, ()),
    "018": ("answered", "Brightwave's long-term debt was about half of its shareholders' equity.", ()),
    "019": ("answered", "Brightwave runs about 25 plants and distribution centers.", ()),
    "020": ("cannot_answer", _NO_DATA, ()),
    "021": ("answered", "Corvid Freight Systems earned about $180 million after tax in fiscal 2024.", ()),
    "022": ("cannot_answer", _NO_DATA, ()),
    "023": ("answered", "Yes: trucking is capital-intensive; Corvid spends several hundred million a year.", ()),
    "024": ("cannot_answer", _NO_DATA, ()),
    "025": ("answered", "Corvid's chief executive received about $6.5 million in total compensation.", ()),
    "026": ("cannot_answer", _NO_DATA, ()),
    "027": ("answered", "Corvid reinvests roughly 8% of its sales in capital projects.", ()),
    "028": ("cannot_answer", _NO_DATA, ()),
    "029": ("cannot_answer", _NO_DATA, ()),
    "030": ("cannot_answer", _NO_DATA, ()),
}
