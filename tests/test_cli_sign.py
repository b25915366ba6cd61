"""`labkit sign`: signs runs that pass their checks, refuses the rest, and never vouches for a changed run."""

import json

import pytest

from labkit.cli import main
from tests.signers import fingerprint, list_key, make_key, needs_ssh_keygen, public_key, reseal_edited_reply


@pytest.fixture
def instructor(course, monkeypatch):
    """A key listed in the course copy's allowed_signers as 'instructor', named by LABKIT_SIGNING_KEY."""
    key = make_key(course / "keys")
    list_key(course / "recorded_runs", key, "instructor")
    monkeypatch.setenv("LABKIT_SIGNING_KEY", str(key))
    return key


def _lines(out):
    return dict(line.split(": ", 1) for line in out.splitlines() if ": " in line and not line.startswith(" "))


@needs_ssh_keygen
def test_sign_all_signs_the_unsigned_runs_that_pass_and_keeps_every_valid_signature(course, instructor, capsys):
    runs = course / "recorded_runs"
    for run_id in ("02-rag-smollm2", "05-system-smollm2"):
        (runs / run_id / "run.json.sig").unlink()
    edited = runs / "05-system-smollm2" / "run.json"
    data = json.loads(edited.read_text(encoding="utf-8"))
    data["description"] = "edited by hand"
    edited.write_text(json.dumps(data, indent=2), encoding="utf-8")
    before = {p: p.read_bytes() for p in runs.rglob("*") if p.is_file()}
    assert main(["sign", "--all"]) == 1
    out = _lines(capsys.readouterr().out)
    assert out["02-rag-smollm2"] == f"now signed by instructor ({fingerprint(instructor)})"
    assert out["05-system-smollm2"].startswith("REFUSED: it fails its checks, so it was not signed: ")
    assert "field 'content_sha256'" in out["05-system-smollm2"]
    assert out["02-rag-authored"].startswith("already signed by labkit-course (SHA256:")
    changed = {p for p in runs.rglob("*") if p.is_file() and before.get(p) != p.read_bytes()}
    assert changed == {runs / "02-rag-smollm2" / "run.json.sig"}
    assert main(["verify"]) == 1  # the edited run is still refused, and named
    assert "05-system-smollm2" in capsys.readouterr().out.split("REFUSED")[0].splitlines()[-1]


@needs_ssh_keygen
def test_signing_twice_changes_nothing(course, instructor, capsys):
    (course / "recorded_runs" / "02-rag-smollm2" / "run.json.sig").unlink()
    assert main(["sign", "02-rag-smollm2"]) == 0
    files = {p: p.read_bytes() for p in (course / "recorded_runs").rglob("*") if p.is_file()}
    assert main(["sign", "--all"]) == 0
    assert {p: p.read_bytes() for p in (course / "recorded_runs").rglob("*") if p.is_file()} == files
    assert "18 of 18 runs signed or already signed" in capsys.readouterr().out


@needs_ssh_keygen
def test_sign_refuses_a_resealed_run_whose_old_signature_no_longer_verifies(course, instructor, capsys):
    reseal_edited_reply("02-rag-smollm2", keep_signature=True)
    assert main(["sign", "02-rag-smollm2"]) == 1
    line = _lines(capsys.readouterr().out)["02-rag-smollm2"]
    assert line.startswith("REFUSED: its signature is invalid (it does not verify over run.json")
    assert line.endswith("Restore it from git; signing it again would vouch for the change")


@needs_ssh_keygen
def test_sign_with_an_unlisted_key_prints_the_allowed_signers_line_to_add(course, monkeypatch, capsys):
    key = make_key(course / "keys", "newcomer")
    monkeypatch.setenv("LABKIT_SIGNING_KEY", str(key))
    (course / "recorded_runs" / "02-rag-smollm2" / "run.json.sig").unlink()
    assert main(["sign", "02-rag-smollm2"]) == 0
    out = capsys.readouterr().out
    assert f"02-rag-smollm2: now signed by an unknown key {fingerprint(key)}" in out
    assert f'  YOUR-NAME namespaces="labkit-run" {public_key(key)}' in out


def test_sign_without_a_key_says_how_to_set_one(course, capsys):
    assert main(["sign", "02-rag-smollm2"]) == 1
    assert "no signing key: set LABKIT_SIGNING_KEY to your SSH private key, or pass --key PATH" in (
        capsys.readouterr().err
    )


def test_sign_names_an_unknown_run(course, tmp_path, capsys):
    key = tmp_path / "key"
    key.write_text("unused\n", encoding="ascii")
    assert main(["sign", "02-no-such-run", "--key", str(key)]) == 1
    assert "02-no-such-run: REFUSED: no run '02-no-such-run' under " in capsys.readouterr().out
