"""Shared test setup: every write goes under pytest's tmp_path, never into the checkout."""

from __future__ import annotations

import shutil

import pytest
from hypothesis import settings

from labkit.paths import project_root

# Hypothesis would otherwise keep an example database in .hypothesis/ inside the checkout.
settings.register_profile("labkit", database=None, deadline=None)
settings.load_profile("labkit")


@pytest.fixture(autouse=True)
def scratch_in_tmp(tmp_path, monkeypatch):
    """Point labkit's scratch folder at a temporary folder for every test."""
    scratch = tmp_path / "scratch"
    monkeypatch.setenv("LABKIT_SCRATCH", str(scratch))
    monkeypatch.delenv("LABKIT_MODE", raising=False)
    return scratch


@pytest.fixture
def course(tmp_path, monkeypatch):
    """A copy of the course's fixtures and recorded runs under tmp_path, with LABKIT_ROOT pointing at it."""
    for name in ("fixtures", "recorded_runs"):
        shutil.copytree(project_root() / name, tmp_path / name)
    monkeypatch.setenv("LABKIT_ROOT", str(tmp_path))
    return tmp_path
