"""The hub's proxy: pinned in deploy/proxy, installed from npm or offline from the wheelhouse's tarballs."""

import json
import shutil

import pytest

from labkit.course import hub_proxy
from labkit.course.hub_proxy import HubProxyMissing, locked_packages, pinned_version, tarball_name


def test_the_lock_pins_the_proxy_at_the_version_package_json_names():
    locked = {name: version for _, name, version in locked_packages()}
    assert locked["configurable-http-proxy"] == pinned_version()
    assert all(version.count(".") == 2 for version in locked.values())


def test_the_committed_lock_names_no_registry_and_every_package_has_an_integrity_hash():
    lock = json.loads((hub_proxy.pin_folder() / "package-lock.json").read_text(encoding="utf-8"))
    entries = [entry for path, entry in lock["packages"].items() if path]
    assert all("resolved" not in entry for entry in entries)
    assert all(entry["integrity"].startswith("sha512-") for entry in entries)


@pytest.mark.parametrize(
    ("name", "version", "file"),
    [("@colors/colors", "1.6.0", "colors-colors-1.6.0.tgz"), ("winston", "3.19.0", "winston-3.19.0.tgz")],
)
def test_tarball_names_are_the_ones_npm_pack_writes(name, version, file):
    assert tarball_name(name, version) == file


def test_a_wheelhouse_missing_some_tarballs_is_refused_naming_them(tmp_path):
    (tmp_path / "npm").mkdir()
    (tmp_path / "npm" / "winston-3.19.0.tgz").write_bytes(b"")
    with pytest.raises(HubProxyMissing, match="lacks"):
        hub_proxy.wheelhouse_tarballs(tmp_path)
    assert hub_proxy.wheelhouse_tarballs(tmp_path / "none") is None


def test_without_npm_the_install_says_how_to_get_node(monkeypatch, tmp_path):
    monkeypatch.setattr(hub_proxy.shutil, "which", lambda name: None)
    with pytest.raises(HubProxyMissing, match="apt-get install nodejs npm"):
        hub_proxy.install_proxy(folder=tmp_path / "proxy")


@pytest.mark.hub
def test_the_proxy_installs_offline_from_tarballs_packed_into_a_wheelhouse(tmp_path):
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed")
    wheelhouse = tmp_path / "wheelhouse"
    try:
        written = hub_proxy.pack_proxy(wheelhouse)  # the one step that needs the npm registry
    except HubProxyMissing as exc:
        pytest.skip(f"the npm registry is out of reach: {exc}")
    assert len(written) == len({(n, v) for _, n, v in locked_packages()}) and all(p.is_file() for p in written)
    executable = hub_proxy.install_proxy(wheelhouse=wheelhouse, folder=tmp_path / "proxy")
    assert hub_proxy.proxy_version(executable) == pinned_version()
    lock = json.loads((tmp_path / "proxy" / "package-lock.json").read_text(encoding="utf-8"))
    assert all(e["resolved"].startswith("file:") for p, e in lock["packages"].items() if p)
