"""Every relative link in a notebook opens in JupyterLab as `python3 course.py lab` serves the course."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from test_docs import _anchors

from labkit.course.runner import course_notebooks
from labkit.paths import project_root

ROOT = project_root()


def _course_script():
    import course

    return course


def _option(arguments: list[str], name: str) -> str:
    return next(word.partition("=")[2] for word in arguments if word.startswith(f"{name}="))


def _links(notebook: Path) -> list[tuple[int, str]]:
    """Return (cell index, link) for every link in the notebook's markdown cells: Markdown and HTML anchors."""
    found = []
    for index, cell in enumerate(nbformat.read(notebook, as_version=4).cells):
        if cell.cell_type == "markdown":
            text = re.sub(r"```.*?```", "", cell.source, flags=re.DOTALL)
            links = re.findall(r"\]\(([^)\s]+)\)", text) + re.findall(r"<a\s[^>]*href=[\"']([^\"']+)", text)
            found += [(index, link) for link in links]
    return found


def _relative(link: str) -> bool:
    return not re.match(r"^[a-z][a-z+.-]*:", link) and not link.startswith(("#", "/"))


def _served(notebook: Path, link: str, root: Path) -> tuple[Path, str]:
    """Return the file a relative link names, as JupyterLab resolves it from the notebook's folder, and its anchor."""
    target, _, anchor = link.partition("#")
    path = Path(os.path.normpath(notebook.parent / target))
    assert path.is_relative_to(root), f"{notebook.name}: {link} leaves the folder JupyterLab serves ({root})"
    return path, anchor


def test_course_py_lab_serves_a_folder_that_holds_the_notebooks():
    root = Path(_option(_course_script().lab_arguments([], root=ROOT, as_root=False), "--ServerApp.root_dir"))
    assert all(notebook.is_relative_to(root) for notebook in course_notebooks())


@pytest.mark.parametrize("notebook", course_notebooks(), ids=lambda p: p.stem)
def test_every_relative_link_in_a_notebook_opens_in_jupyterlab_as_course_py_lab_serves_it(notebook):
    arguments = _course_script().lab_arguments([], root=ROOT, as_root=False)
    root = Path(_option(arguments, "--ServerApp.root_dir"))
    for index, link in _links(notebook):
        if not _relative(link):
            continue
        path, anchor = _served(notebook, link, root)
        assert path.is_file() or path.is_dir(), f"{notebook.name} cell {index}: {link} names no file ({path})"
        if anchor and path.suffix == ".md":
            assert anchor in _anchors(path), f"{notebook.name} cell {index}: {link}: no heading with that anchor"


def test_a_link_outside_the_served_folder_is_caught(tmp_path):
    """The rule the test above applies: served from notebooks/ alone, as before, the course map is out of reach."""
    with pytest.raises(AssertionError, match="leaves the folder JupyterLab serves"):
        _served(ROOT / "notebooks" / "01_product_evaluator.ipynb", "../README.md#the-course-map", ROOT / "notebooks")


# --- the real server, started as course.py lab starts it -----------------------------------------------


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:  # 127.0.0.1 only
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, b""


def _written_port(runtime: Path) -> int | None:
    """The port in JupyterLab's server file, or None while the file is missing or still being written."""
    for info in runtime.glob("jpserver-*.json"):
        try:
            return int(json.loads(info.read_text(encoding="utf-8"))["port"])
        except (json.JSONDecodeError, KeyError):
            return None
    return None


def _status(url: str) -> int | None:
    """The status of a GET, or None while the server is not yet listening."""
    try:
        return _get(url)[0]
    except (urllib.error.URLError, ConnectionError):
        return None


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """JupyterLab started with course.py's own arguments (plus a random port, a token, private folders), stopped after."""
    course = _course_script()
    home = tmp_path_factory.mktemp("lab")
    settings = course.write_lab_settings(home / ".venv").parent  # the environment's settings, in a copy
    token = secrets.token_hex(16)
    own = course.lab_arguments([], root=ROOT, as_root=course.running_as_root())
    command = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        *own,
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        "--ServerApp.port=0",
        f"--IdentityProvider.token={token}",
        "--LabApp.extension_manager=readonly",  # never ask PyPI about extensions
        f"--LabApp.app_settings_dir={settings}",
        f"--LabApp.user_settings_dir={home / 'user-settings'}",
        f"--LabApp.workspaces_dir={home / 'workspaces'}",
    ]
    runtime = home / "runtime"
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(home / "config"), "JUPYTER_RUNTIME_DIR": str(runtime)}
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90
        port = None
        while port is None and server.poll() is None and time.monotonic() < deadline:
            port = _written_port(runtime)
            time.sleep(0.2)
        assert port is not None, f"JupyterLab did not start within 90 s (exit code {server.poll()})"
        url = f"http://127.0.0.1:{port}"
        while _status(f"{url}/api/status?token={token}") != 200 and time.monotonic() < deadline:
            time.sleep(0.2)
        yield {"url": url, "token": token}
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@pytest.mark.filterwarnings("ignore::ResourceWarning")
def test_the_served_course_opens_every_notebook_link_and_starts_in_notebooks(lab):
    for notebook in course_notebooks():
        for _index, link in filter(lambda found: _relative(found[1]), _links(notebook)):
            path, _ = _served(notebook, link, ROOT)
            api = path.relative_to(ROOT).as_posix()
            assert _get(f"{lab['url']}/api/contents/{api}?content=0&token={lab['token']}")[0] == 200, link
    status, page = _get(f"{lab['url']}/lab?token={lab['token']}")
    config = json.loads(re.search(rb'id="jupyter-config-data"[^>]*>(.*?)</script>', page, re.DOTALL)[1])
    assert status == 200 and config["preferredPath"].strip("/") == "notebooks"


def test_the_served_course_asks_no_jupyter_news_question(lab):
    """JupyterLab applies the environment's overrides as the settings' defaults; unset, fetchNews is "none" (ask)."""
    plugin = "@jupyterlab/apputils-extension:notification"
    status, body = _get(f"{lab['url']}/lab/api/settings/{plugin}?token={lab['token']}")
    assert status == 200 and json.loads(body)["schema"]["properties"]["fetchNews"]["default"] == "false"
