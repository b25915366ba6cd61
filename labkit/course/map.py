"""The course map: the chapter's architecture (12.1) as components, the evidence that links them, and their notebooks.

`mermaid` draws it as a Mermaid flowchart, the figure that opens the README's
lesson table (GitHub and JupyterLab render it; a test keeps the README's copy
equal to this one). ``python -m labkit.course.map`` prints it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Component:
    """One part of the architecture and the notebooks that teach it."""

    key: str
    """The node's id in the flowchart."""
    title: str
    """What the part is called in the chapter."""
    detail: str
    """What it holds, in the course's names."""
    notebooks: tuple[str, ...]
    """The notebooks (``"01"`` .. ``"06"``; lesson 02 is ``"02a"`` and ``"02b"``) where a learner builds or inspects it."""


COMPONENTS: tuple[Component, ...] = (
    Component("app", "Application", "caller, scope and session, fixed by code", ("04", "05")),
    Component("ingest", "Ingestion and index", "PDF loader, splitter, FAISS over saved vectors", ("02b", "05")),
    Component("retrieval", "Retrieval", "candidates, rerank, selected context, page-hit@k", ("02a", "02b", "05")),
    Component("boundary", "Model boundary", "openai client; replay bound to the exact request, live, record", ("03",)),
    Component(
        "checks",
        "Output checks",
        "reply contract, citations, numeric claims, final-answer validator",
        ("01", "02a", "02b", "04", "05"),
    ),
    Component("tools", "Agent tools", "router, typed tools, row_ref, step budget, iteration cap", ("04", "05")),
    Component(
        "records",
        "Evaluation records",
        "rubric hash, judge calibration, traces, golden set",
        ("01", "02a", "02b", "04", "05"),
    ),
    Component("gate", "Release gate", "penalty-weighted regression rule, exit codes", ("06",)),
)

#: (from, to, the evidence that passes between them).
FLOWS: tuple[tuple[str, str, str], ...] = (
    ("app", "retrieval", "question + scope"),
    ("ingest", "retrieval", "index"),
    ("retrieval", "boundary", "selected context"),
    ("app", "tools", "authorized caller"),
    ("tools", "boundary", "proposal request"),
    ("boundary", "checks", "reply"),
    ("checks", "tools", "validated call"),
    ("checks", "records", "verdicts"),
    ("tools", "records", "trace"),
    ("records", "gate", "evidence"),
)


def mermaid() -> str:
    """Return the course map as a Mermaid flowchart (components labelled with the notebooks that teach them)."""
    lines = ["flowchart LR"]
    for c in COMPONENTS:
        taught = ", ".join(c.notebooks)
        noun = "notebook" if len(c.notebooks) == 1 else "notebooks"
        lines.append(f'  {c.key}["<b>{c.title}</b><br/>{c.detail}<br/><i>{noun} {taught}</i>"]')
    lines += [f"  {a} -->|{label}| {b}" for a, b, label in FLOWS]
    return "\n".join(lines)


if __name__ == "__main__":
    print(mermaid())
