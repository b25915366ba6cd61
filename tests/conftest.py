"""Shared test setup: every write goes under pytest's tmp_path, never into the checkout."""

from __future__ import annotations

import shutil

import pytest
from hypothesis import settings

from labkit.paths import project_root

# The longest test modules, measured with `--durations`, slowest first (each over 5 % of the suite). Under
# pytest-xdist (`course.py test`) they are handed out first, so that no worker starts a long module when the
# rest are nearly done; a stale entry costs time, never a result.
SLOWEST_FIRST = (
    "tests/test_widgets_in_browser.py",
    "tests/test_course_workshop.py",
    "tests/test_course_runner.py",
    "tests/test_course_pytest_plugin.py",
    "tests/test_cli_verify.py",
    "tests/test_course_doctor.py",
    "notebooks/04_refund_agent.ipynb",
)

# Hypothesis would otherwise keep an example database in .hypothesis/ inside the checkout.
settings.register_profile("labkit", database=None, deadline=None)
settings.load_profile("labkit")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a pytest-xdist worker, put the slowest modules first (the order is stable, so every worker agrees)."""
    if not hasattr(config, "workerinput"):
        return  # one process: keep the files' order

    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::")[0]
        return SLOWEST_FIRST.index(path) if path in SLOWEST_FIRST else len(SLOWEST_FIRST)

    items.sort(key=rank)


@pytest.fixture(autouse=True)
def scratch_in_tmp(tmp_path, monkeypatch):
    """Point labkit's scratch folder at a temporary folder for every test."""
    scratch = tmp_path / "scratch"
    monkeypatch.setenv("LABKIT_SCRATCH", str(scratch))
    monkeypatch.delenv("LABKIT_MODE", raising=False)
    monkeypatch.delenv("LABKIT_SIGNING_KEY", raising=False)  # a test signs only with a key it made itself
    return scratch


@pytest.fixture
def course(tmp_path, monkeypatch):
    """A copy of the course's fixtures and recorded runs under tmp_path, with LABKIT_ROOT pointing at it."""
    for name in ("fixtures", "recorded_runs"):
        shutil.copytree(project_root() / name, tmp_path / name)
    monkeypatch.setenv("LABKIT_ROOT", str(tmp_path))
    return tmp_path
