"""Lesson 05: the minimal complete system, built from small parts named after the book's nouns.

- `labkit.system.policy`: the ``refund_policy.pdf`` fixture (written by ``python -m labkit.system.policy``),
  `load_policy_pages` with one-based citation ids, the splitter and the FAISS index over saved vectors.
- `labkit.system.tickets`: the four illustrative tickets, `CountTickets` and the team-scoped `count_tickets`.
- `labkit.system.contract`: the `ModelReply` contract and `call_model`.
- `labkit.system.workflow`: the LangGraph ``retrieve -> generate -> check -> tool`` graph and `MinimalSystem.ask`.
- `labkit.system.golden`: the golden set of three cases and `passed`.
- `labkit.system.runs`: the lesson's recorded runs (authored and captured) and what notebook 05 shows of them.

Importing this package imports nothing heavy; LangChain, LangGraph, FAISS and
pypdf load inside the functions that use them.
"""
