"""A learner's session with the workshop hub, over the same HTTP and websocket APIs a browser uses.

`HubSession` logs in through the hub's real login form (with its XSRF token),
gets an API token, starts and stops the learner's server through the hub's REST
API, reads and saves files through the server's contents API, and opens a kernel
the way JupyterLab does (a session for a notebook path, then the kernel's
websocket channels), where `KernelChannel.execute` runs one cell and returns its
outputs. Every wait is bounded. Used by the hub's end-to-end test and by
``benchmarks/hub_load.py``; it needs the ``hub`` extra (httpx, websockets).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx

from labkit.errors import LabkitError

#: Seconds one HTTP request may take.
REQUEST_TIMEOUT_S = 60.0


class HubClientError(LabkitError, RuntimeError):
    """A step of a learner's session with the hub failed or took too long (the message names the step)."""


class LoginRefused(LabkitError, PermissionError):
    """The hub refused a login (wrong password, or a name it does not accept)."""


@dataclass
class CellResult:
    """What one executed cell produced."""

    status: str
    """``ok`` or ``error`` (from the kernel's execute_reply), or ``timeout``."""
    text: str = ""
    """Printed text and the plain-text form of results, in order."""
    error: str = ""
    """``ename: evalue`` of the error, when the cell failed."""
    seconds: float = 0.0
    """Seconds from sending the request to the kernel going idle."""


@dataclass
class KernelChannel:
    """One kernel of a learner's server, reached over its websocket channels."""

    session: HubSession
    session_id: str
    kernel_id: str
    socket: Any
    messages: list[dict[str, Any]] = field(default_factory=list)

    async def execute(self, code: str, *, timeout: float = 120.0) -> CellResult:
        """Run ``code`` as a notebook cell (execute_request on the shell channel); wait, bounded, for the kernel to go idle."""
        msg_id = uuid.uuid4().hex
        header = {"msg_id": msg_id, "username": self.session.name, "session": self.session_id}
        header |= {"msg_type": "execute_request", "version": "5.3", "date": ""}
        content = {"code": code, "silent": False, "store_history": True, "user_expressions": {}}
        content |= {"allow_stdin": False, "stop_on_error": True}
        request = {"header": header, "parent_header": {}, "metadata": {}, "content": content, "channel": "shell"}
        started = time.monotonic()
        await self.socket.send(json.dumps(request))
        result, replied, idle = CellResult(status="timeout"), False, False
        texts: list[str] = []
        while not (replied and idle):
            left = timeout - (time.monotonic() - started)
            if left <= 0:
                result.seconds = time.monotonic() - started
                result.text = "".join(texts)
                return result
            try:
                message = json.loads(await asyncio.wait_for(self.socket.recv(), timeout=left))
            except TimeoutError:
                continue
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, body = message.get("msg_type") or message["header"]["msg_type"], message.get("content", {})
            if kind == "stream":
                texts.append(body.get("text", ""))
            elif kind in ("execute_result", "display_data"):
                texts.append(str(body.get("data", {}).get("text/plain", "")) + "\n")
            elif kind == "error":
                result.error = f"{body.get('ename')}: {body.get('evalue')}"
            elif kind == "execute_reply":
                replied, result.status = True, body.get("status", "error")
                if body.get("status") == "error" and not result.error:
                    result.error = f"{body.get('ename')}: {body.get('evalue')}"
            elif kind == "status" and body.get("execution_state") == "idle":
                idle = True
        result.seconds, result.text = time.monotonic() - started, "".join(texts)
        return result

    async def close(self) -> None:
        """Close the websocket and delete the session (which shuts its kernel down)."""
        try:
            await self.socket.close()
        finally:
            await self.session.server("DELETE", f"api/sessions/{self.session_id}", expect=(204, 404))


@dataclass
class HubSession:
    """One learner (or the instructor) talking to the hub at ``base`` (``http://127.0.0.1:8000/``)."""

    base: str
    name: str
    client: httpx.AsyncClient = field(init=False)
    token: str = ""

    def __post_init__(self) -> None:
        self.client = httpx.AsyncClient(base_url=self.base, timeout=REQUEST_TIMEOUT_S, follow_redirects=False)

    async def __aenter__(self) -> HubSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.client.aclose()

    async def login(self, password: str) -> None:
        """Log in through the hub's login form, as a browser does; raise `LoginRefused` when the hub says no."""
        page = await self.client.get("hub/login")
        match = re.search(r'name="_xsrf"\s+value="([^"]+)"', page.text)
        if page.status_code != 200 or match is None:
            raise HubClientError(f"the login page of {self.base} did not load (HTTP {page.status_code})")
        form = {"username": self.name, "password": password, "_xsrf": match.group(1)}
        answer = await self.client.post("hub/login", data=form)
        if answer.status_code != 302:
            raise LoginRefused(f"the hub refused the login of {self.name!r} (HTTP {answer.status_code})")
        xsrf = self.client.cookies.get("_xsrf", path="/hub/") or self.client.cookies.get("_xsrf") or ""
        tokens = await self.client.post(
            f"hub/api/users/{self.name}/tokens",
            json={"note": "labkit hub client", "expires_in": 7200},
            headers={"X-XSRFToken": xsrf, "Referer": f"{self.base}hub/"},
        )
        if tokens.status_code != 201:
            raise HubClientError(f"logged in as {self.name!r}, but no API token was given (HTTP {tokens.status_code})")
        self.token = tokens.json()["token"]

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"token {self.token}"}

    async def hub(self, method: str, path: str, *, expect: tuple[int, ...], body: Any = None) -> Any:
        """Call the hub's REST API (``hub/api/<path>``) with this session's token; return the JSON answer, if any."""
        answer = await self.client.request(method, f"hub/api/{path}", json=body, headers=self._headers())
        if answer.status_code not in expect:
            raise HubClientError(f"{method} hub/api/{path} answered HTTP {answer.status_code}: {answer.text[:200]}")
        return answer.json() if answer.content else None

    async def server(self, method: str, path: str, *, expect: tuple[int, ...], body: Any = None) -> Any:
        """Call the learner's own server (``user/<name>/<path>``) with this session's token."""
        url = f"user/{self.name}/{path}"
        answer = await self.client.request(method, url, json=body, headers=self._headers())
        if answer.status_code not in expect:
            raise HubClientError(f"{method} {url} answered HTTP {answer.status_code}: {answer.text[:200]}")
        return answer.json() if answer.content else None

    async def wait_for_server(self, user: str, *, running: bool, timeout: float) -> None:
        """Wait, bounded, until ``user``'s server is ready (``running``) or gone."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            model = await self.hub("GET", f"users/{user}", expect=(200,))
            server = model.get("servers", {}).get("")
            if running and server and server.get("ready"):
                return
            if not running and not server:
                return
            if running and not server and not model.get("pending"):
                raise HubClientError(f"the server of {user!r} stopped while starting; see the hub's log")
            await asyncio.sleep(0.5)
        state = "start" if running else "stop"
        raise HubClientError(f"the server of {user!r} did not {state} within {timeout:.0f} s")

    async def start_server(self, *, timeout: float = 180.0) -> None:
        """Start this learner's server through the REST API (a running one is kept) and wait until it is ready."""
        answer = await self.client.post(f"hub/api/users/{self.name}/server", headers=self._headers())
        if answer.status_code not in (201, 202) and "already running" not in answer.text:
            raise HubClientError(
                f"starting the server of {self.name!r} answered HTTP {answer.status_code}: {answer.text[:200]}"
            )
        await self.wait_for_server(self.name, running=True, timeout=timeout)

    async def stop_server(self, user: str | None = None, *, timeout: float = 120.0) -> None:
        """Stop a server (this learner's, or ``user``'s for an admin) through the REST API and wait until it is gone."""
        user = user or self.name
        await self.hub("DELETE", f"users/{user}/server", expect=(202, 204, 400))
        await self.wait_for_server(user, running=False, timeout=timeout)

    async def open_kernel(self, notebook: str) -> KernelChannel:
        """Open a kernel for ``notebook`` (a path in the learner's home) as JupyterLab does, and connect to it."""
        from websockets.asyncio.client import connect

        body = {
            "path": notebook,
            "name": notebook.rsplit("/", 1)[-1],
            "type": "notebook",
            "kernel": {"name": "python3"},
        }
        session = await self.server("POST", "api/sessions", expect=(201,), body=body)
        ws = self.base.replace("http", "ws", 1) + f"user/{self.name}/api/kernels/{session['kernel']['id']}/channels"
        socket = await connect(
            f"{ws}?session_id={session['id']}", additional_headers=self._headers(), max_size=2**25, open_timeout=60
        )
        return KernelChannel(self, session["id"], session["kernel"]["id"], socket)
