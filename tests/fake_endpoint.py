"""A tiny OpenAI-compatible endpoint on 127.0.0.1 for record-mode tests: it answers by echoing the question."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeEndpoint:
    """Serve chat completions on loopback; `fail_first` makes the first N attempts answer 429.

    ``answer`` turns a request body into the reply text (default: echo the last message);
    ``fail_after`` makes every attempt after the first N answered ones a 500, as a dying endpoint.
    With `echo_headers`, each reply also repeats the request's Authorization header, as a
    misbehaving endpoint might.
    """

    def __init__(
        self,
        fail_first: int = 0,
        *,
        answer: Callable[[dict[str, Any]], str] | None = None,
        fail_after: int | None = None,
        echo_headers: bool = False,
    ) -> None:
        self.fail_first = fail_first
        self.fail_after = fail_after
        self.echo_headers = echo_headers
        self.answered = 0
        answer = answer or (lambda body: "echo: " + body["messages"][-1]["content"])
        self.attempts = 0
        self.headers_seen: list[dict[str, str]] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                endpoint.attempts += 1
                endpoint.headers_seen.append({k.lower(): v for k, v in self.headers.items()})
                if endpoint.attempts <= endpoint.fail_first:
                    payload, status = {"error": {"message": "rate limited", "type": "rate_limit"}}, 429
                elif endpoint.fail_after is not None and endpoint.answered >= endpoint.fail_after:
                    payload, status = {"error": {"message": "the model crashed", "type": "server_error"}}, 500
                else:
                    endpoint.answered += 1
                    text = answer(body)
                    if endpoint.echo_headers:
                        text += " (sent with Authorization: " + self.headers.get("Authorization", "") + ")"
                    payload, status = (
                        {
                            "id": f"fake-{endpoint.attempts}",
                            "object": "chat.completion",
                            "created": 1,
                            "model": body["model"],
                            "choices": [
                                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                            ],
                            "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
                        },
                        200,
                    )
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                if status == 429:
                    self.send_header("retry-after-ms", "1")
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeEndpoint:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
