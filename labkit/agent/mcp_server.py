"""The MCP boundary: the caller's allowed tools served over stdio with the official ``mcp`` SDK.

The launching application decides who the server acts for (``--user`` and
``--scope``; never the model or the client), and the server registers only
the tools that user may call, each with a typed, discoverable input schema.
A tool outside the caller's permissions is therefore neither listed nor
callable. The ``mcp`` SDK is a core dependency; `count_over_mcp` is the
notebook's one-call round trip through a real client.

    python -m labkit.agent.mcp_server --user analyst-ana --scope approved_support_dataset
"""

from __future__ import annotations

import argparse
import sys
from typing import Annotated, Any

from pydantic import BaseModel

from labkit.agent.dataset import APPROVED_SCOPE
from labkit.agent.identity import Caller, authorize
from labkit.agent.tools import CountRows, IntentFilter, SummarizeRequests, SupportData, SupportTools
from labkit.errors import LabkitError, MissingExtra

INSTRUCTIONS = (
    "Support-data tools for one caller and one dataset scope, both fixed when the server started. "
    "To count requests of an intent: call filter_by_intent, then pass its row_ref to count_rows. "
    "A row_ref is valid only in this server, for this caller and the current dataset version."
)


def _declared(model: type[BaseModel], name: str) -> Any:
    """Return argument ``name`` as its tool's Pydantic class declares it (type and Field), so MCP serves that schema."""
    info = model.model_fields[name]
    return Annotated[info.annotation, info]


# One declaration of each argument: the tools' own classes, which the agent validates with too.
FilterIntent = _declared(IntentFilter, "intent")
FilterLimit = _declared(IntentFilter, "limit")
FilterOffset = _declared(IntentFilter, "offset")
SummaryIntent = _declared(SummarizeRequests, "intent")
SummaryLimit = _declared(SummarizeRequests, "limit")
RowRef = _declared(CountRows, "rows")


def build_server(caller: Caller, data: SupportData | None = None) -> Any:
    """Return an ``MCPServer`` that serves exactly the tools ``caller`` may call."""
    try:
        from mcp.server.mcpserver import MCPServer
    except ImportError:
        raise MissingExtra("mcp", "Serving the agent's tools over MCP") from None
    tools = SupportTools(caller, data or SupportData())
    server = MCPServer("labkit-support", instructions=INSTRUCTIONS, log_level="WARNING")

    def filter_by_intent(intent: FilterIntent, limit: FilterLimit = 5, offset: FilterOffset = 0) -> dict[str, Any]:  # type: ignore[valid-type]  # read from IntentFilter
        """Filter the caller's scope on one intent: a row_ref to every match and a capped preview."""
        return tools.filter_by_intent(IntentFilter(intent=intent, limit=limit, offset=offset))

    def count_rows(rows: RowRef) -> dict[str, Any]:  # type: ignore[valid-type]  # read from CountRows
        """Count the rows behind a row_ref after rechecking caller, scope and dataset version."""
        return tools.count_rows(CountRows(rows=rows))

    def summarize_requests(intent: SummaryIntent, limit: SummaryLimit = 10) -> dict[str, Any]:  # type: ignore[valid-type]  # read from SummarizeRequests
        """Summarise up to ``limit`` retrieved requests of one intent."""
        return tools.summarize_requests(SummarizeRequests(intent=intent, limit=limit))

    def export_rows(intent: FilterIntent, limit: FilterLimit = 5, offset: FilterOffset = 0) -> dict[str, Any]:  # type: ignore[valid-type]  # read from IntentFilter
        """Return full rows (all five fields) of one intent."""
        return tools.export_rows(IntentFilter(intent=intent, limit=limit, offset=offset))

    for fn in (filter_by_intent, count_rows, summarize_requests, export_rows):
        if fn.__name__ in caller.tools:
            server.add_tool(fn, name=fn.__name__, description=fn.__doc__)
    return server


def server_command(user_id: str, scope: str = APPROVED_SCOPE) -> tuple[str, list[str]]:
    """Return the command and arguments that start this server for ``user_id`` over stdio."""
    return sys.executable, ["-m", "labkit.agent.mcp_server", "--user", user_id, "--scope", scope]


async def client_session_demo(
    user_id: str, calls: list[tuple[str, dict[str, Any]]], *, scope: str = APPROVED_SCOPE
) -> dict[str, Any]:
    """Start the server as a subprocess and, over a real MCP client session, read its instructions and tools, then call.

    ``calls`` are made in order.

    Each call's result is ``{"is_error", "content"}`` where content is the
    structured result (or the error text); a later call may use ``"$row_ref"``
    as an argument value to pass on the last row_ref seen.
    """
    try:
        from mcp import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client
    except ImportError:
        raise MissingExtra("mcp", "The MCP client demo") from None
    import os
    import tempfile

    command, args = server_command(user_id, scope)
    params = StdioServerParameters(command=command, args=args, env=dict(os.environ))
    results, row_ref = [], None
    # The server's stderr goes to a real file: a notebook kernel's sys.stderr has no file descriptor to hand on.
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            initialized = await session.initialize()
            listed = await session.list_tools()
            schemas = {tool.name: tool.input_schema for tool in listed.tools}
            for name, arguments in calls:
                arguments = {k: (row_ref if v == "$row_ref" else v) for k, v in arguments.items()}
                reply = await session.call_tool(name, arguments)
                content = reply.structured_content
                if content is None:
                    content = " ".join(getattr(part, "text", "") for part in reply.content)
                if isinstance(content, dict) and "row_ref" in content:
                    row_ref = content["row_ref"]
                results.append({"tool": name, "is_error": bool(reply.is_error), "content": content})
    return {"instructions": initialized.instructions, "tools": sorted(schemas), "schemas": schemas, "calls": results}


def call_over_mcp(
    user_id: str, calls: list[tuple[str, dict[str, Any]]], *, scope: str = APPROVED_SCOPE
) -> dict[str, Any]:
    """Run `client_session_demo` in a thread of its own (a notebook kernel already runs an event loop).

    Returns what the client saw: the tools listed and each call's ``{"tool", "is_error", "content"}``;
    a call to a tool the server does not serve comes back with ``is_error`` set, and nothing runs.
    """
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, client_session_demo(user_id, calls, scope=scope)).result()


def count_over_mcp(user_id: str, intent: str, *, scope: str = APPROVED_SCOPE) -> dict[str, Any]:
    """Start the stdio server for ``user_id``, then count ``intent`` through a real MCP client; return what it saw.

    The client lists the served tools, calls ``filter_by_intent`` and passes the
    returned row_ref to ``count_rows``. It runs in a thread of its own, so it also
    works inside a notebook, whose kernel already runs an event loop.
    """
    calls: list[tuple[str, dict[str, Any]]] = [
        ("filter_by_intent", {"intent": intent, "limit": 1}),
        ("count_rows", {"rows": "$row_ref"}),
    ]
    session = call_over_mcp(user_id, calls, scope=scope)
    filtered, counted = session["calls"]
    for call in (filtered, counted):
        if call["is_error"]:
            raise ToolCallFailed(f"{call['tool']} failed over MCP: {call['content']}")
    return {
        "tools_listed": session["tools"],
        "row_ref": filtered["content"]["row_ref"],
        **counted["content"],
    }


class ToolCallFailed(LabkitError, RuntimeError):
    """A tool called through the MCP client returned an error instead of a result."""


def main(argv: list[str] | None = None) -> int:
    """Serve the caller's tools over stdio until the client closes the connection."""
    parser = argparse.ArgumentParser(prog="python -m labkit.agent.mcp_server", description=__doc__.splitlines()[0])
    parser.add_argument("--user", required=True, help="the user the server acts for, e.g. analyst-ana")
    parser.add_argument("--scope", default=APPROVED_SCOPE, help="the dataset scope it may read")
    args = parser.parse_args(argv)
    caller = authorize(args.user, "mcp-stdio", args.scope)
    build_server(caller).run("stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main())
