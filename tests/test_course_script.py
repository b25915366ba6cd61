"""course.py, the two commands' bootstrap, is plain standard-library Python at the top of the checkout."""

import importlib.util

import pytest

from labkit.paths import project_root


@pytest.fixture
def course():
    spec = importlib.util.spec_from_file_location("course_script", project_root() / "course.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_install_uses_the_tested_pins(course):
    command = course.pip_command("test")
    assert command[command.index("-c") + 1] == "constraints.txt" and command[-1] == ".[test]"


def test_a_wheelhouse_makes_the_install_offline(course, tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_WHEELHOUSE", str(tmp_path))
    command = course.pip_command("test")
    assert command[-3:] == ["--no-index", "--find-links", str(tmp_path)]


def test_extras_are_added_to_test_and_unknown_ones_refused(course):
    assert course._extras(["--extras", "local,embed", "-x"]) == ("test,embed,local", ["-x"])
    assert course._extras(["-q"]) == ("test", ["-q"])
    with pytest.raises(SystemExit, match="unknown extras"):
        course._extras(["--extras", "gpu"])


def test_the_install_stamp_changes_with_the_pins(course, tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("a")
    (tmp_path / "constraints.txt").write_text("x==1\n")
    monkeypatch.setattr(course, "ROOT", tmp_path)
    before = course._install_fingerprint("test")
    (tmp_path / "constraints.txt").write_text("x==2\n")
    assert course._install_fingerprint("test") != before
