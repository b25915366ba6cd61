"""``python3 course.py hub`` is a thin entry: the hub extra, then labkit.course.hub with the course's Python."""

import argparse

import pytest

from labkit.course import hub
from labkit.paths import project_root
from tests.test_course_script import load


@pytest.fixture
def course():
    return load(project_root() / "course.py", "course_script_hub")


def test_course_py_hub_installs_the_hub_extra_and_runs_the_hub_module(course):
    assert "hub" in course.COMMANDS and "hub" in course.OPTIONAL_EXTRAS
    assert course._extras(["--port", "9000"], needed=course.HUB_EXTRAS) == ("test,hub", ["--port", "9000"])
    assert course.hub_command(["--port", "9000"])[1:] == ["-m", "labkit.course.hub", "--port", "9000"]


def test_the_hub_defaults_to_this_machine_only_and_keeps_its_state_in_the_clone():
    args = hub.build_parser().parse_args([])
    assert (args.verb, args.ip, args.port, args.isolation) == ("start", "127.0.0.1", 8000, "auto")
    assert args.state == str(project_root() / ".hub")


def test_a_taken_port_is_refused_before_anything_starts(monkeypatch, tmp_path):
    monkeypatch.setattr(hub, "port_problem", lambda ip, port: f"cannot listen on {ip}:{port} (Address in use)")
    monkeypatch.setattr(hub, "check_passwords", lambda room, admin: None)
    args = argparse.Namespace(ip="127.0.0.1", port=8000)
    with pytest.raises(hub.HubPortBusy, match="choose another with --port"):
        hub.prepare(args, room="r", admin="a")


def test_without_isolation_the_hub_says_what_is_not_isolated(monkeypatch):
    monkeypatch.setattr("labkit.course.hub_homes.isolation_problem", lambda python, course: "not root")
    isolation, note = hub.choose_isolation("auto", python="python")
    assert isolation == "none"
    assert note.startswith("NOT ISOLATED (not root)") and "read and change every other learner's files" in note


def test_isolation_users_is_refused_where_the_machine_cannot_give_it(monkeypatch):
    from labkit.course.hub_homes import IsolationUnavailable

    monkeypatch.setattr("labkit.course.hub_homes.isolation_problem", lambda python, course: "not root")
    with pytest.raises(IsolationUnavailable, match="not root"):
        hub.choose_isolation("users", python="python")


def test_a_hub_that_stops_while_starting_is_reported_with_its_log(tmp_path):
    import subprocess
    import sys

    process = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    process.wait()
    log = tmp_path / "jupyterhub.log"
    log.write_text("line one\nthe reason\n", encoding="utf-8")
    with pytest.raises(hub.HubStartFailed, match="exit code 3") as failed:
        hub.wait_until_ready(process, "http://127.0.0.1:9/", log=log, timeout=5)
    assert "the reason" in str(failed.value)
