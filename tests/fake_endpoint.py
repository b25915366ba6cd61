"""A tiny OpenAI-compatible endpoint on 127.0.0.1 for record-mode tests: it answers by echoing the question.

It can also misbehave as a hostile or broken endpoint does: stay silent, trickle its reply,
send truncated JSON, or send a huge reply. Used as a context manager, it stops (every
handler thread included) when the block ends, also when a test fails inside it.
"""

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
    misbehaving endpoint might. The hostile ones:

    - ``silent``: accept the request and never answer;
    - ``drip_every``: send the headers, then the body one byte per that many seconds;
    - ``truncate``: answer 200 with the reply's JSON cut in half;
    - ``pad_reply``: make each reply's text that many bytes long;
    - ``fail_message``: the error message of a 429 or 500 reply (``{url}`` is the base URL with a password in it,
      as a proxy's error page may repeat the URL it was asked for).
    """

    def __init__(
        self,
        fail_first: int = 0,
        *,
        answer: Callable[[dict[str, Any]], str] | None = None,
        fail_after: int | None = None,
        echo_headers: bool = False,
        silent: bool = False,
        drip_every: float | None = None,
        truncate: bool = False,
        pad_reply: int = 0,
        fail_message: str = "",
    ) -> None:
        self.fail_first = fail_first
        self.fail_after = fail_after
        self.echo_headers = echo_headers
        self.stopping = threading.Event()
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
                if silent:
                    endpoint.stopping.wait()  # until the test ends
                    return
                said = fail_message.format(url=endpoint.url_with_password())
                if endpoint.attempts <= endpoint.fail_first:
                    payload, status = {"error": {"message": said or "rate limited", "type": "rate_limit"}}, 429
                elif endpoint.fail_after is not None and endpoint.answered >= endpoint.fail_after:
                    payload, status = {"error": {"message": said or "the model crashed", "type": "server_error"}}, 500
                else:
                    endpoint.answered += 1
                    text = answer(body)
                    if pad_reply:
                        text = (text + " " + "x" * pad_reply)[:pad_reply]
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
                if truncate:
                    raw = raw[: len(raw) // 2]
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                if status == 429:
                    self.send_header("retry-after-ms", "1")
                self.end_headers()
                if drip_every is None:
                    self.wfile.write(raw)
                    return
                for byte in raw:  # one byte at a time: each read is quick, the whole reply never ends
                    if endpoint.stopping.wait(drip_every):
                        return
                    try:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                    except OSError:  # the client hung up
                        return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def url_with_password(self, user: str = "learner", password: str = "hunter2") -> str:
        """The base URL with a user name and password in it, as a learner might set LABKIT_BASE_URL."""
        return f"http://{user}:{password}@127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeEndpoint:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopping.set()  # a silent or dripping handler ends now
        self.server.shutdown()
        self.server.server_close()
