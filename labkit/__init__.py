"""labkit: the support package of a hands-on course on engineering integrated AI systems.

The map, in three layers; an import only ever points down the list:

- ``labkit.cli``: the ``labkit`` command, one module per verb.
- ``labkit.course``: what runs the course rather than teaches it (runner, doctor,
  workshop, failure variants, lesson registry, pytest plugin).
- one package per lesson (notebook: package):

  - ``01_product_evaluator``: ``labkit.evaluator``
  - ``02a_rag_trace`` and ``02b_filings_rag``: ``labkit.rag`` (02a, the traced docs app, is ``labkit.rag.trace``)
  - ``03_bound_replay``: no package of its own; it teaches the foundation's ``labkit.replay``
  - ``04_refund_agent``: ``labkit.agent``
  - ``05_minimal_system``: ``labkit.system``
  - ``06_routing_gate``: ``labkit.routing``

- the foundation every lesson stands on, at the top level: ``errors``, ``paths``,
  ``canonical`` (canonical JSON and hashes), the model boundary (``boundary``,
  ``replay``, ``recording``, ``capture``, ``authored``, ``offline``, ``secret_scan``,
  ``serve``, ``explore`` (explore mode), ``refusal`` (what a refusal suggests), ``embeddings``), ``traces`` and the trace viewer (``widgets``), ``trials`` (repeated trials: one request, several seeds),
  ``listing`` (``show_source``),
  ``fixtures`` (the guard every fixture script uses) and ``plots``.

Public names are listed in ``__all__``, grouped by the module that implements
them. They load on first use, so ``import labkit`` stays fast; heavy libraries
(pandas, LangChain, matplotlib) are imported only where a lesson needs them.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS: dict[str, tuple[str, ...]] = {
    "labkit.errors": (
        "LabkitError",
        "InvalidJSON",
        "RecordedRunError",
        "FixtureChanged",
        "RouteGradeError",
        "FixtureOverwriteRefused",
        "MissingExtra",
    ),
    "labkit.canonical": ("canonical_json", "canonical_sha256", "file_sha256", "load_strict", "loads_strict"),
    "labkit.recording": ("RecordedRun", "Binding", "load_run", "save_run"),
    "labkit.offline": ("NetworkBlocked", "block_network"),
    "labkit.boundary": ("ModelBoundary", "connect", "current_mode"),
    "labkit.replay": ("BoundReplay", "ReplayRequestMismatch", "OrderedReplay"),
    "labkit.traces": ("Trace", "TraceEvent"),
    "labkit.trials": ("Trials", "repeat_table"),
    "labkit.widgets": ("TraceViewer",),
    "labkit.listing": ("show_source",),
    "labkit.embeddings": ("SavedEmbeddings", "UnrecordedText"),
    "labkit.serve": ("local_model_server", "local_response_format"),
    "labkit.rag.trace": ("Reply", "check_reply", "trace_request", "load_docs_index"),
    "labkit.routing.grader": ("compare", "explain"),
    "labkit.course.variants": ("VARIANTS", "demonstrate", "variant"),
}

_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'labkit' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
