"""``labkit doctor --hub``: the server-side checks say what a room of N learners needs and what is missing."""

import socket

import pytest

from labkit.cli import main
from labkit.course import hub_checks
from labkit.course.hub_checks import DISK_MIB_PER_LEARNER, HUB_OVERHEAD_MIB, MIB_PER_LEARNER


def test_memory_for_the_room_is_the_learners_peak_times_their_number_plus_the_hub():
    enough = 30 * MIB_PER_LEARNER + HUB_OVERHEAD_MIB
    assert hub_checks.check_memory(30, available=enough).ok
    short = hub_checks.check_memory(30, available=enough - 1)
    assert not short.ok and "add memory or split the room" in short.detail


def test_disk_for_the_room_counts_every_learners_home(tmp_path):
    assert hub_checks.check_disk(10, folder=tmp_path, free=10 * DISK_MIB_PER_LEARNER * 2**20).ok
    assert not hub_checks.check_disk(10, folder=tmp_path, free=10 * DISK_MIB_PER_LEARNER * 2**20 - 1).ok


def test_a_room_larger_than_the_cores_hold_fails_and_says_what_to_add():
    holds = int(2 * hub_checks.LEARNERS_PER_CORE)
    assert hub_checks.check_cores(holds, cores=2).ok
    line = hub_checks.check_cores(holds + 1, cores=2)
    assert not line.ok and "add cores" in line.detail


def test_a_taken_port_fails():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        check = hub_checks.check_port("127.0.0.1", taken.getsockname()[1])
    assert not check.ok and "--port" in check.detail


def test_missing_hub_packages_fail_with_the_install_command(monkeypatch):
    import importlib.metadata

    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(hub_checks.importlib.metadata, "version", missing)
    check = hub_checks.check_hub_packages()
    assert not check.ok and "jupyterhub missing" in check.detail and '".[hub]"' in check.detail


def test_a_proxy_at_another_version_than_the_pin_fails(monkeypatch):
    from labkit.course import hub_proxy

    monkeypatch.setattr(hub_proxy, "node_version", lambda: (20, 20, 2))
    monkeypatch.setattr(hub_proxy, "proxy_version", lambda executable: "4.0.0")
    check = hub_checks.check_proxy()
    assert not check.ok and "4.0.0 installed" in check.detail and hub_proxy.pinned_version() in check.detail


def test_an_old_node_fails_the_proxy_check(monkeypatch):
    from labkit.course import hub_proxy

    monkeypatch.setattr(hub_proxy, "node_version", lambda: (18, 19, 0))
    check = hub_checks.check_proxy()
    assert not check.ok and "20.19 or newer" in check.detail


def test_doctor_hub_prints_the_server_side_report(monkeypatch, capsys):
    monkeypatch.setattr(hub_checks, "check_isolation", lambda: hub_checks.Check("isolation", True, "stub"))
    pytest.importorskip("jupyterhub")
    code = main(["doctor", "--hub", "--learners", "100000", "--hub-port", "1"])
    out = capsys.readouterr().out
    assert code == 1
    assert "FAIL  memory for 100000 learners" in out and "FAIL  cores for 100000 learners" in out
