"""Lesson 05: the minimal complete system, built from small parts named after the book's nouns.

- `labkit.system.policy`: the ``refund_policy.pdf`` fixture (``python -m labkit.system.policy``
  writes it), `load_policy_pages` with one-based citation ids, the splitter, the FAISS index.
- `labkit.system.tickets`: the four illustrative tickets, `CountTickets`, `count_tickets`.
- `labkit.system.contract`: the `ModelReply` contract and `call_model`.
- `labkit.system.workflow`: the LangGraph ``retrieve -> generate -> check -> tool`` graph and
  `MinimalSystem.ask`.
- `labkit.system.golden`: the golden set of three cases, `unmet` and `passed`.
- `labkit.system.runs`: the lesson's recorded runs (authored and captured) and the tables
  notebook 05 shows of them; `labkit.system.repeats`: the golden set over repeated trials.
- `labkit.system.practice`: the route-prediction exercise's written replies and its check.

Importing this package imports nothing heavy; LangChain, LangGraph, FAISS and
pypdf load inside the functions that use them.
"""
