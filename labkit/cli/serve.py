"""`labkit serve`: serve the bundled SmolLM2-135M-Instruct on 127.0.0.1 until Ctrl-C (needs the [local] extra)."""

from __future__ import annotations

import argparse
import signal
import sys
from types import FrameType


def add_parser(subparsers: argparse._SubParsersAction, name: str) -> None:
    parser = subparsers.add_parser(
        name,
        help="serve the bundled local model as an OpenAI-compatible endpoint (needs the [local] extra)",
        description="Start an OpenAI-compatible server (llama.cpp's, from xllamacpp; or llama-cpp-python's) with "
        "SmolLM2-135M-Instruct on 127.0.0.1, "
        "print its base URL and model id, and keep it running until Ctrl-C or SIGTERM, then stop it cleanly.",
        epilog="examples:\n  labkit serve\n  labkit serve --port 8080 --ctx 4096\n\n"
        "then, in another terminal:\n"
        "  export LABKIT_MODE=record LABKIT_BASE_URL=<the URL printed> LABKIT_MODEL=SmolLM2-135M-Instruct",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--port", type=int, default=None, metavar="N", help="TCP port on 127.0.0.1 (default: a free one, printed)"
    )
    parser.add_argument("--ctx", type=int, default=None, metavar="N", help="context size in tokens (default 2048)")
    parser.set_defaults(handler=run)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def run(args: argparse.Namespace) -> int:
    from labkit.serve import DEFAULT_CTX, LocalServerError, find_gguf, local_model_server

    gguf = find_gguf()  # fail at once, with the pip command, when the extra is missing
    print(f"labkit serve: starting {gguf.name} on 127.0.0.1 ...", file=sys.stderr, flush=True)
    previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        with local_model_server(port=args.port, ctx=args.ctx or DEFAULT_CTX) as server:
            print(f"base_url: {server.base_url}", flush=True)
            print(f"model: {server.model_id}", flush=True)
            print(f"pid: {server.process.pid}", flush=True)
            print(
                f"labkit serve: use it with: export LABKIT_BASE_URL={server.base_url} LABKIT_MODEL={server.model_id}\n"
                "labkit serve: press Ctrl-C to stop",
                file=sys.stderr,
                flush=True,
            )
            code = server.process.wait()
            raise LocalServerError(
                f"the local model server exited on its own with code {code}. Its last lines:\n{server.log_tail()}"
            )
    except KeyboardInterrupt:
        print("labkit serve: stopped", file=sys.stderr, flush=True)
        return 0
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
