"""`labkit record` says whether the run it saved is signed, and how to sign it when it is not."""

import shutil

import pytest

from labkit.cli import main
from labkit.paths import project_root
from tests.fake_endpoint import FakeEndpoint
from tests.signers import list_key, make_key, needs_ssh_keygen

CHECKOUT = project_root()  # read before the `course` fixture points LABKIT_ROOT at a copy


@pytest.fixture
def course(course):
    shutil.copytree(CHECKOUT / "notebooks", course / "notebooks")  # record names the cells to refresh
    return course


def _record(monkeypatch, run_id):
    with FakeEndpoint() as endpoint:
        monkeypatch.setenv("LABKIT_BASE_URL", endpoint.base_url)
        monkeypatch.setenv("LABKIT_MODEL", "fake-echo")
        return main(["record", "06", "--run-id", run_id])


def test_record_without_a_key_saves_the_run_and_says_it_is_unsigned_and_how_to_sign(course, monkeypatch, capsys):
    assert _record(monkeypatch, "06-routing-echo") == 0
    out = capsys.readouterr().out
    assert (
        "captured run 06-routing-echo was saved UNSIGNED: no signing key is set, and `labkit verify` refuses an "
        "unsigned run. Set LABKIT_SIGNING_KEY to your SSH private key and run "
        "`labkit sign 06-routing-echo`"
    ) in out
    assert (course / "recorded_runs" / "06-routing-echo" / "run.json").is_file()


@needs_ssh_keygen
def test_record_with_a_listed_key_signs_the_run_and_names_the_signer(course, monkeypatch, capsys):
    key = make_key(course / "keys")
    list_key(course / "recorded_runs", key, "instructor")
    monkeypatch.setenv("LABKIT_SIGNING_KEY", str(key))
    assert _record(monkeypatch, "06-routing-echo") == 0
    assert "captured run 06-routing-echo is signed by instructor (SHA256:" in capsys.readouterr().out
    assert main(["verify"]) == 0


@needs_ssh_keygen
def test_record_with_an_unlisted_key_says_verify_will_refuse_it(course, monkeypatch, capsys):
    monkeypatch.setenv("LABKIT_SIGNING_KEY", str(make_key(course / "keys")))
    assert _record(monkeypatch, "06-routing-echo") == 0
    out = capsys.readouterr().out
    assert "captured run 06-routing-echo is signed by an unknown key SHA256:" in out
    assert "`labkit verify` refuses it until that key is in recorded_runs/allowed_signers" in out


def test_record_authored_without_a_key_keeps_a_signature_the_same_bytes_still_carry(course, capsys):
    assert main(["record", "02", "--authored"]) == 0
    assert "authored run 02-rag-authored is signed by labkit-course (SHA256:" in capsys.readouterr().out
