"""Replay's cost per call against a bare ``httpx2.MockTransport`` under the same `openai` client; print a table.

    .venv/bin/python benchmarks/replay_cost.py [--calls 200] [--rounds 15] [--budget 1.2]

Both sides make the same ``chat.completions.create`` call with a request taken
from a committed run and get the same recorded reply back as a real
``ChatCompletion``. The bare side is the least a transport can do: a
``MockTransport`` whose handler returns the reply, checking nothing. The replay
side is `labkit.replay.replay_client` over the run's `BindingStore`: it parses
the body strictly, refuses streaming, hashes the request as sent (path, query,
body) and copies the bound reply. Rounds alternate the two sides, so a
machine that gets busier during the run slows both alike; each round times
``--calls`` calls, and the table reports the median per-call time over the
rounds. Exits 1 if a ratio exceeds ``--budget`` (the course's 1.2x).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any

import httpx2
import openai

from labkit.recording import load_run
from labkit.replay import REPLAY_BASE_URL, BindingStore, create_arguments, replay_client

#: (label, run id, which binding): a small request and the largest one the course replays.
CASES = [
    ("lesson 02 part A, one question", "02-rag-authored", "first"),
    ("lesson 02 part B, RAG", "02-filings-smollm2", "largest"),
]


def _bare_client(reply: dict[str, Any]) -> Any:
    def handler(request: httpx2.Request) -> httpx2.Response:
        request.read()
        return httpx2.Response(200, json=reply, request=request)

    return openai.OpenAI(
        api_key="bench",
        base_url=REPLAY_BASE_URL,
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )


def _per_call(client: Any, arguments: dict[str, Any], calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        client.chat.completions.create(**arguments)
    return (time.perf_counter() - started) / calls


def measure(run_id: str, which: str, *, calls: int, rounds: int) -> tuple[float, float, int]:
    """Return (bare median seconds per call, replay median seconds per call, request bytes)."""
    run = load_run(run_id)
    answered = [b for b in run.bindings if b.status_code == 200]
    binding = answered[0] if which == "first" else max(answered, key=lambda b: len(str(b.request)))
    arguments = create_arguments(binding.request)
    bare, replay = _bare_client(binding.response or {}), replay_client(BindingStore.from_run(run))
    assert replay.chat.completions.create(**arguments).choices[0].message.content == (
        bare.chat.completions.create(**arguments).choices[0].message.content
    )
    for client in (bare, replay):  # warm both
        _per_call(client, arguments, 20)
    bare_times, replay_times = [], []
    for _ in range(rounds):
        bare_times.append(_per_call(bare, arguments, calls))
        replay_times.append(_per_call(replay, arguments, calls))
    return statistics.median(bare_times), statistics.median(replay_times), len(str(binding.request))


def main(argv: list[str] | None = None) -> int:
    """Measure every case, print the table, and exit 1 if a ratio is over budget."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="calls per round (default 200)")
    parser.add_argument("--rounds", type=int, default=15, help="alternating rounds per side (default 15)")
    parser.add_argument("--budget", type=float, default=1.2, help="largest allowed replay/bare ratio (default 1.2)")
    args = parser.parse_args(argv)
    print(f"{'case':<32}  {'request':>9}  {'bare ms/call':>12}  {'replay ms/call':>14}  {'ratio':>5}")
    over = False
    for label, run_id, which in CASES:
        bare, replay, size = measure(run_id, which, calls=args.calls, rounds=args.rounds)
        ratio = replay / bare
        over |= ratio > args.budget
        print(f"{label:<32}  {size:>7,} B  {1000 * bare:>12.3f}  {1000 * replay:>14.3f}  {ratio:>5.2f}")
    print(f"budget: replay within {args.budget}x of the bare transport: {'exceeded' if over else 'met'}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
