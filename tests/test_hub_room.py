"""The workshop hub end to end: a real JupyterHub, proxy and learners' servers on 127.0.0.1, driven as browsers do.

One hub (``python -m labkit.course.hub``, as ``course.py hub`` runs it) serves
the module, in a state folder under /tmp that learners' accounts can reach. As
root on Linux it runs with one system account per learner; where the course's
Python sits under a folder other users may not enter (pyenv under /root), the hub
runs in a private mount namespace in which that folder shows only the Python
tree, so the machine itself is left as it is. Elsewhere the hub runs unisolated
and the isolation test is skipped with the reason. Every process the hub started
is stopped, and the accounts it made are removed, also when a test fails.

Needs the ``hub`` extra and the proxy (``python -m labkit.course.hub install-proxy``);
skipped with the reason otherwise. ``.ci/run`` installs both.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from labkit.paths import notebooks_dir, project_root

pytestmark = pytest.mark.hub

ROOM = "room-password-for-the-test"
ADMIN = "admin-password-for-the-test-" + "x" * 8
LESSON = "03_bound_replay.ipynb"
START_TIMEOUT_S = 180


def _closed_ancestors(path: Path) -> list[Path]:
    return [p for p in reversed(path.parents) if p.is_dir() and not os.stat(p).st_mode & 0o001]


def _namespace_wrapper(view: Path) -> list[str]:
    """Return a command prefix that runs its command where every folder on the way to Python and the clone can be passed.

    For each such folder F (say /root, mode 0700), a private mount namespace shows at
    F a folder of mode 0711 that holds only the entries on the way (F/.pyenv).
    """
    script = []
    targets = [Path(sys.base_prefix).resolve(), project_root().resolve()]
    for closed in {c for t in targets for c in _closed_ancestors(t)}:
        shown = view / closed.relative_to("/").as_posix().replace("/", "_")
        shown.mkdir(mode=0o711, parents=True)
        os.chmod(shown, 0o711)
        for child in {t.relative_to(closed).parts[0] for t in targets if closed in t.parents}:
            (shown / child).mkdir()
            script.append(f"mount --bind '{closed / child}' '{shown / child}'")
        script.append(f"mount --rbind '{shown}' '{closed}'")
    if not script:
        return []
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", " && ".join([*script, 'exec "$@"']), "sh"]


class Room:
    """The hub under test: its address, folders, isolation, and a way to restart it."""

    def __init__(self, top: Path, isolation: str, prefix: str, wrapper: list[str]) -> None:
        self.top, self.isolation, self.prefix, self.wrapper = top, isolation, prefix, wrapper
        self.port = 0
        self.process: subprocess.Popen[str] | None = None
        self.output: list[str] = []
        self.stray: list[int] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    @property
    def homes(self) -> Path:
        return self.top / "homes"

    def start(self) -> None:
        from labkit.course.hub import free_port

        self.port = free_port()
        command = [*self.wrapper, sys.executable, "-m", "labkit.course.hub", "--port", str(self.port)]
        command += ["--state", str(self.top), "--isolation", self.isolation, "--account-prefix", self.prefix]
        env = {**os.environ, "LABKIT_HUB_PASSWORD": ROOM, "LABKIT_HUB_ADMIN_PASSWORD": ADMIN}
        self.process = subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
        )
        assert self.process.stdout is not None
        selector, deadline = selectors.DefaultSelector(), time.monotonic() + START_TIMEOUT_S
        selector.register(self.process.stdout, selectors.EVENT_READ)
        while (left := deadline - time.monotonic()) > 0 and selector.select(timeout=left):
            line = self.process.stdout.readline()
            if not line:
                break
            self.output.append(line)
            if "labkit hub: ready at" in line:
                return
        self.stop()
        raise AssertionError("the hub did not start:\n" + "".join(self.output[-20:]))

    def stop(self) -> None:
        """Stop the hub as Ctrl-C does (it stops every learner's server and the proxy); kill what is left."""
        import psutil

        if self.process is None:
            return
        left = psutil.Process(self.process.pid).children(recursive=True) if self.process.poll() is None else []
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        for child in left:
            if child.is_running():
                child.kill()
        self.process = None
        self.stray = [c.pid for c in left if c.is_running()]

    def restart(self) -> None:
        self.stop()
        self.start()


@pytest.fixture(scope="module")
def room() -> Iterator[Room]:
    pytest.importorskip("jupyterhub", reason='the hub extra is not installed: pip install -e ".[hub]"')
    from labkit.course.hub_proxy import pinned_version, proxy_executable, proxy_version

    if proxy_version(proxy_executable()) != pinned_version():
        pytest.skip("the hub's proxy is not installed: python -m labkit.course.hub install-proxy")
    top = Path(tempfile.mkdtemp(prefix="labkit-hub-test-", dir="/tmp"))  # tmp_path's parent admits no learner
    os.chmod(top, 0o711)
    prefix = f"lkt{secrets.token_hex(2)}-"
    isolated = sys.platform.startswith("linux") and os.geteuid() == 0 and shutil.which("unshare") is not None
    wrapper = _namespace_wrapper(top / "view") if isolated else []
    hub = Room(top, "users" if isolated else "none", prefix, wrapper)
    try:
        hub.start()
        yield hub
    finally:
        hub.stop()
        if isolated:
            from labkit.course.hub_homes import remove_accounts

            remove_accounts(prefix)
        shutil.rmtree(top, ignore_errors=True)


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


async def _learner(room: Room, name: str, password: str = ROOM) -> Any:
    from labkit.course.hub_client import HubSession

    session = HubSession(room.url, name)
    await session.login(password)
    return session


def test_a_wrong_room_password_is_refused_and_so_is_the_instructor_with_it(room):
    from labkit.course.hub_client import LoginRefused

    async def attempt(name: str, password: str) -> None:
        session = await _learner(room, name, password)
        await session.client.aclose()

    with pytest.raises(LoginRefused):
        run(attempt("mallory", "not-the-room-password"))
    with pytest.raises(LoginRefused):
        run(attempt("instructor", ROOM))  # the admin logs in with the admin password only


def test_each_learner_gets_the_student_copy_and_runs_a_lesson_offline(room):
    from labkit.course.workshop import student_copy

    original = nbformat.read(notebooks_dir() / LESSON, as_version=4)
    expected = [c.source for c in student_copy(original, name=LESSON).cells]
    cells = [c.source for c in original.cells if c.cell_type == "code" and c.source.strip()]

    async def scenario() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for name in ("alice", "bob"):
            session = await _learner(room, name)
            async with session:
                await session.start_server(timeout=START_TIMEOUT_S)
                listing = await session.server("GET", "api/contents/course", expect=(200,))
                copy = await session.server("GET", f"api/contents/course/{LESSON}", expect=(200,))
                seen[name] = {"names": sorted(i["name"] for i in listing["content"]), "copy": copy["content"]}
                if name == "alice":
                    kernel = await session.open_kernel(f"course/{LESSON}")
                    try:
                        guard = await kernel.execute(
                            "import os, socket; print(os.environ['LABKIT_MODE'], getattr(socket, '_labkit_offline', 0))"
                        )
                        results = [await kernel.execute(code) for code in cells]
                    finally:
                        await kernel.close()
                    seen["guard"], seen["results"] = guard, results
        return seen

    seen = run(scenario())
    notebooks = sorted(p.name for p in notebooks_dir().glob("[0-9][0-9]*_*.ipynb"))
    for name in ("alice", "bob"):
        assert seen[name]["names"] == notebooks
        assert [c["source"] for c in seen[name]["copy"]["cells"]] == expected
    assert seen["guard"].text.split() == ["replay", "True"]
    failed = [(i, r.error or r.status) for i, r in enumerate(seen["results"]) if r.status != "ok"]
    assert failed == [], f"cells of {LESSON} failed in alice's kernel: {failed}"


def test_a_later_login_and_a_hub_restart_keep_an_edited_notebook(room):
    mark = f"alice's own note {secrets.token_hex(4)}"

    async def edit() -> None:
        async with await _learner(room, "alice") as session:
            await session.start_server(timeout=START_TIMEOUT_S)
            model = await session.server("GET", f"api/contents/course/{LESSON}", expect=(200,))
            model["content"]["cells"].insert(0, nbformat.v4.new_markdown_cell(mark))
            body = {"type": "notebook", "format": "json", "content": model["content"]}
            await session.server("PUT", f"api/contents/course/{LESSON}", expect=(200,), body=body)
            await session.stop_server()

    async def first_cell() -> str:
        async with await _learner(room, "alice") as session:
            await session.start_server(timeout=START_TIMEOUT_S)
            model = await session.server("GET", f"api/contents/course/{LESSON}", expect=(200,))
            return str(model["content"]["cells"][0]["source"])

    run(edit())
    assert run(first_cell()) == mark
    room.restart()
    assert room.stray == []
    assert run(first_cell()) == mark


def test_one_learner_cannot_read_another_learners_home(room):
    if room.isolation != "users":
        pytest.skip("the hub runs unisolated here (not root on Linux): learners share one account")

    async def peek() -> Any:
        async with await _learner(room, "bob") as bob:  # bob's home exists, with his copy in it
            await bob.start_server(timeout=START_TIMEOUT_S)
        async with await _learner(room, "alice") as session:
            await session.start_server(timeout=START_TIMEOUT_S)
            kernel = await session.open_kernel(f"course/{LESSON}")
            try:
                code = f"open({str(room.homes / 'bob' / 'course' / LESSON)!r}).read(10)"
                reading = await kernel.execute(code)
                listing = await kernel.execute(f"import os; os.listdir({str(room.homes)!r})")
                own = await kernel.execute("import os; print('course' in os.listdir(os.environ['HOME']))")
            finally:
                await kernel.close()
            return reading, listing, own

    reading, listing, own = run(peek())
    assert reading.error.startswith("PermissionError"), reading
    assert listing.error.startswith("PermissionError"), listing
    assert own.text.strip() == "True", own  # while alice's own home stays open to her


def test_the_admin_lists_learners_and_stops_a_learners_server(room):
    async def scenario() -> tuple[set[str], set[str], bool, dict[str, Any]]:
        async with await _learner(room, "bob") as bob:
            await bob.start_server(timeout=START_TIMEOUT_S)
        async with await _learner(room, "instructor", ADMIN) as admin:
            users = await admin.hub("GET", "users", expect=(200,))
            names = {u["name"] for u in users}
            running = {u["name"] for u in users if u.get("servers", {}).get("")}
            await admin.stop_server("bob")
            after = await admin.hub("GET", "users/bob", expect=(200,))
            services = await admin.hub("GET", "services", expect=(200,))
            return names, running, bool(after.get("servers", {}).get("")), services

    names, running, still_running, services = run(scenario())
    assert {"alice", "bob", "instructor"} <= names
    assert "bob" in running and not still_running
    assert "idle-culler" in services  # the culler runs as a service of the hub
