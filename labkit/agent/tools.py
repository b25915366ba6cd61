"""The agent's typed tools: Pydantic inputs, bounded outputs, and access checks the application enforces.

`filter_by_intent` returns an opaque ``row_ref`` to the complete authorized
filtered set and a capped preview; `count_rows` takes that reference, rechecks
the caller and the current dataset version, and returns a typed count. A
reference that was never issued (forged), issued to another caller (foreign)
or issued for an older dataset version (stale) is refused. `count_by_intent`
is the direct count tool: one call, no reference, for a count the application
already knows it must answer. Every call, refused or not, is written to the
audit log that the evaluation reads.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from labkit.agent.dataset import CATEGORY_OF, SCOPES, Intent, SupportRow, load_scope
from labkit.agent.identity import Caller, ScopeRefused
from labkit.errors import LabkitError

#: The most rows a preview may show, whatever the model asks for.
PREVIEW_CAP = 20
#: A template slot of the dataset, such as ``{{Order Number}}``: its words are not the customer's.
_PLACEHOLDER = re.compile(r"\{\{[^{}]*\}\}")


class RowRefRefused(LabkitError, LookupError):
    """A ``row_ref`` is forged, belongs to another caller, or is stale; nothing was counted."""

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        super().__init__(message)


class IntentFilter(BaseModel):
    """Arguments of `filter_by_intent`: which intent, and how many rows the preview may show."""

    model_config = ConfigDict(extra="forbid")
    intent: Intent = Field(description="One of the 27 standard intents, e.g. get_refund.")
    limit: int = Field(default=5, ge=1, le=PREVIEW_CAP, description="Rows in the preview (the row_ref covers all).")
    offset: int = Field(default=0, ge=0, description="How many matching rows the preview skips (for 'show more').")


class CountRows(BaseModel):
    """Arguments of `count_rows`: the reference a filter returned."""

    model_config = ConfigDict(extra="forbid")
    rows: str = Field(pattern=r"^rows-[0-9a-f]{16}$", description="The opaque row_ref from filter_by_intent.")


class IntentCount(BaseModel):
    """Arguments of `count_by_intent`, the direct count tool: which intent to count."""

    model_config = ConfigDict(extra="forbid")
    intent: Intent = Field(description="One of the 27 standard intents, e.g. get_refund.")


class SummarizeRequests(BaseModel):
    """Arguments of `summarize_requests`: which intent's requests to retrieve and summarise."""

    model_config = ConfigDict(extra="forbid")
    intent: Intent = Field(description="One of the 27 standard intents.")
    limit: int = Field(default=10, ge=1, le=PREVIEW_CAP, description="How many requests to retrieve as examples.")


#: Tool name -> its argument model; the only tools the agent may call.
TOOL_ARGUMENTS: dict[str, type[BaseModel]] = {
    "filter_by_intent": IntentFilter,
    "count_rows": CountRows,
    "summarize_requests": SummarizeRequests,
}


@dataclass(frozen=True)
class RowSet:
    """What a ``row_ref`` stands for: a complete filtered set, bound to who asked and which version."""

    row_ref: str
    """The opaque reference handed to the model."""
    user_id: str
    """The caller it was issued to."""
    caller_scope: str
    """The scope that was filtered."""
    dataset_version: str
    """The dataset version at filtering time."""
    intent: str
    """The intent the rows were filtered on."""
    row_ids: tuple[int, ...]
    """Positions of every matching row in the scope file."""


def make_row_ref(user_id: str, caller_scope: str, dataset_version: str, intent: str, number: int) -> str:
    """Return the opaque reference of the ``number``-th set issued (deterministic, so runs replay exactly)."""
    seed = f"{user_id}|{caller_scope}|{dataset_version}|{intent}|{number}"
    return "rows-" + hashlib.sha256(seed.encode("utf-8")).hexdigest()[:16]


@dataclass
class SupportData:
    """The application's side of the data: loaded scopes, the current version, issued row refs and the audit log."""

    folder: Path | None = None
    scopes: dict[str, list[SupportRow]] = field(default_factory=dict)
    dataset_version: str = ""
    row_sets: dict[str, RowSet] = field(default_factory=dict)
    audit: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.scopes:
            return
        for scope in SCOPES:
            rows, version = load_scope(scope, folder=self.folder)
            self.scopes[scope] = rows
            self.dataset_version = version

    def publish(self, version: str) -> None:
        """Mark a new dataset version as current (as a data refresh would), so older row refs go stale."""
        self.dataset_version = version

    def fresh(self) -> SupportData:
        """Return a reset copy: the same loaded rows and version, no issued refs, an empty audit log."""
        return SupportData(self.folder, dict(self.scopes), self.dataset_version)

    def issue(self, caller: Caller, intent: str, row_ids: tuple[int, ...]) -> RowSet:
        """Store a filtered set and return it with a fresh opaque reference."""
        ref = make_row_ref(caller.user_id, caller.caller_scope, self.dataset_version, intent, len(self.row_sets))
        row_set = RowSet(ref, caller.user_id, caller.caller_scope, self.dataset_version, intent, row_ids)
        self.row_sets[ref] = row_set
        return row_set


class SupportTools:
    """The tools bound to one caller; every method checks the caller before it touches data."""

    def __init__(self, caller: Caller, data: SupportData) -> None:
        self.caller = caller
        self.data = data

    def _log(self, tool: str, arguments: dict[str, Any], outcome: str, scope_read: str | None) -> None:
        self.data.audit.append(
            {
                "tool": tool,
                "user_id": self.caller.user_id,
                "caller_scope": self.caller.caller_scope,
                "scope_read": scope_read,
                "arguments": arguments,
                "outcome": outcome,
            }
        )

    def _permit(self, tool: str, arguments: dict[str, Any], *, permission: str | None = None) -> None:
        if (permission or tool) not in self.caller.tools:
            self._log(tool, arguments, "refused:tool_not_allowed", None)
            raise ScopeRefused(f"user {self.caller.user_id!r} may not call {tool}; nothing was run")

    def filter_by_intent(self, args: IntentFilter) -> dict[str, Any]:
        """Filter the caller's scope on one intent: an opaque ``row_ref`` to every match and a capped preview."""
        self._permit("filter_by_intent", args.model_dump())
        rows = self.data.scopes[self.caller.caller_scope]
        matches = tuple(n for n, row in enumerate(rows) if row.intent == args.intent)
        row_set = self.data.issue(self.caller, args.intent, matches)
        shown = matches[args.offset : args.offset + args.limit]
        preview = [{"row": n, "flags": rows[n].flags, "instruction": rows[n].instruction} for n in shown]
        self._log("filter_by_intent", args.model_dump(), "ok", self.caller.caller_scope)
        return {"row_ref": row_set.row_ref, "preview": preview}

    def count_rows(self, args: CountRows) -> dict[str, Any]:
        """Count the rows behind a ``row_ref`` after rechecking its caller, scope and dataset version."""
        self._permit("count_rows", args.model_dump())
        row_set = self.data.row_sets.get(args.rows)
        if row_set is None:
            problem = ("forged", f"{args.rows} was never issued; call filter_by_intent for a fresh row_ref")
        elif row_set.user_id != self.caller.user_id or row_set.caller_scope != self.caller.caller_scope:
            problem = ("foreign", f"{args.rows} was issued to another caller or scope; filter again in your own scope")
        elif row_set.dataset_version != self.data.dataset_version:
            problem = (
                "stale",
                f"{args.rows} was filtered from {row_set.dataset_version}, but the current version is "
                f"{self.data.dataset_version}; filter again",
            )
        else:
            self._log("count_rows", args.model_dump(), "ok", row_set.caller_scope)
            return {
                "count": len(row_set.row_ids),
                "dataset_version": row_set.dataset_version,
                "caller_scope": row_set.caller_scope,
                "intent": row_set.intent,
            }
        self._log("count_rows", args.model_dump(), f"refused:{problem[0]}", None)
        raise RowRefRefused(*problem)

    def count_by_intent(self, args: IntentCount) -> dict[str, Any]:
        """Count one intent in the caller's scope in a single call: no row_ref is issued or stored.

        It needs the caller's permission to count (``count_rows``) and returns what
        `count_rows` returns, so `verify_final` checks its answer the same way.
        """
        self._permit("count_by_intent", args.model_dump(), permission="count_rows")
        rows = self.data.scopes[self.caller.caller_scope]
        self._log("count_by_intent", args.model_dump(), "ok", self.caller.caller_scope)
        return {
            "count": sum(row.intent == args.intent for row in rows),
            "dataset_version": self.data.dataset_version,
            "caller_scope": self.caller.caller_scope,
            "intent": args.intent,
        }

    def summarize_requests(self, args: SummarizeRequests) -> dict[str, Any]:
        """Retrieve up to ``limit`` requests of an intent and summarise them from what was retrieved only."""
        self._permit("summarize_requests", args.model_dump())
        rows = self.data.scopes[self.caller.caller_scope]
        retrieved = [n for n, row in enumerate(rows) if row.intent == args.intent][: args.limit]
        flags = Counter(flag for n in retrieved for flag in rows[n].flags)
        words = Counter(
            w.strip("?.,!").lower()
            for n in retrieved
            for w in _PLACEHOLDER.sub(" ", rows[n].instruction).split()
            if len(w.strip("?.,!")) > 4
        )
        self._log("summarize_requests", args.model_dump(), "ok", self.caller.caller_scope)
        return {
            "intent": args.intent,
            "category": CATEGORY_OF[args.intent],
            "caller_scope": self.caller.caller_scope,
            "dataset_version": self.data.dataset_version,
            "retrieved_rows": retrieved,
            "polite": flags.get("P", 0),
            "colloquial": flags.get("Q", 0),
            "with_typos": flags.get("Z", 0),
            "common_words": [w for w, _ in sorted(words.items(), key=lambda kv: (-kv[1], kv[0]))[:5]],
        }

    def export_rows(self, args: IntentFilter) -> dict[str, Any]:
        """Return full rows (all five fields) of one intent, capped at ``limit``: a lead's tool, not an analyst's."""
        self._permit("export_rows", args.model_dump())
        rows = self.data.scopes[self.caller.caller_scope]
        chosen = [n for n, row in enumerate(rows) if row.intent == args.intent][args.offset : args.offset + args.limit]
        self._log("export_rows", args.model_dump(), "ok", self.caller.caller_scope)
        return {"caller_scope": self.caller.caller_scope, "rows": [{"row": n, **rows[n].model_dump()} for n in chosen]}

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Validate ``arguments`` against the tool's model and run it; an unknown tool is refused."""
        if name not in TOOL_ARGUMENTS:
            raise ScopeRefused(f"{name!r} is not one of the agent's tools ({', '.join(TOOL_ARGUMENTS)})")
        args = TOOL_ARGUMENTS[name].model_validate(arguments)
        return getattr(self, name)(args)


def unauthorized_calls(audit: list[dict[str, Any]], *, allowed_scopes: dict[str, list[str]]) -> int:
    """Count audit entries where data was read from a scope the user may not read."""
    return sum(
        1 for e in audit if e["scope_read"] is not None and e["scope_read"] not in allowed_scopes.get(e["user_id"], [])
    )


def tampered_row_refs(tools: SupportTools, *, other_user: str = "lead-lee") -> dict[str, str]:
    """Return three row_refs `count_rows` must refuse for ``tools``' caller: forged, foreign and stale.

    ``forged`` was never issued; ``foreign`` was issued to ``other_user`` on the same
    data; ``stale`` was issued to the caller, and then the data publishes a new
    version (``<version>-refreshed``), as a refresh would. So this changes ``tools.data``.
    """
    from labkit.agent.identity import authorize

    other = SupportTools(
        authorize(other_user, f"{tools.caller.session_id}-other", tools.caller.caller_scope), tools.data
    )
    refund = IntentFilter(intent="get_refund")
    refs = {
        "forged": "rows-0123456789abcdef",
        "foreign": other.filter_by_intent(refund)["row_ref"],
        "stale": tools.filter_by_intent(refund)["row_ref"],
    }
    tools.data.publish(f"{tools.data.dataset_version}-refreshed")
    return refs
