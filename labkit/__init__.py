"""labkit: the support package of a hands-on course on engineering integrated AI systems.

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
    "labkit.widgets": ("TraceViewer",),
    "labkit.embeddings": ("SavedEmbeddings", "UnrecordedText"),
    "labkit.serve": ("local_model_server", "local_response_format"),
    "labkit.rag_trace": ("Reply", "check_reply", "trace_request", "load_docs_index"),
    "labkit.routing": ("compare", "explain"),
    "labkit.variants": ("VARIANTS", "demonstrate", "variant"),
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
