"""Lesson 04: a support-data agent with routing, typed tools, budgets, durable sessions, a profile and MCP.

The parts, one noun each: `dataset` (the synthetic Bitext-schema requests),
`identity` (who asks, in which session, over which scope), `router`, `tools`,
`trace` (`refund_count_trace`), `validator`, `graph` (the LangGraph agent),
`sessions`, `profile`, `mcp_server`, `runs` (the recorded runs and case set)
and `evaluation`. Importing this package imports none of the heavy libraries;
each module imports them where used.
"""
