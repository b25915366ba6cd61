"""Signatures on recorded runs: ssh-keygen's SSHSIG checked in Python, against the course's allowed signers."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from labkit.paths import project_root
from labkit.signing import (
    NAMESPACE,
    AllowedSignersError,
    SigningFailed,
    check_armored,
    check_signature,
    read_allowed_signers,
    sign_run_file,
    signature_path,
    signing_key,
)
from tests.signers import fingerprint, list_key, make_key, needs_ssh_keygen, public_key, ssh_keygen_sign

CHECKOUT = project_root()


@pytest.fixture
def run_file(tmp_path):
    """A run-like file in a runs folder, as ``recorded_runs/<id>/run.json``."""
    path = tmp_path / "recorded_runs" / "05-demo" / "run.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"run_id": "05-demo", "origin": "captured"}\n', encoding="utf-8")
    return path


# --- ssh-keygen signs, Python checks --------------------------------------------------------------


@needs_ssh_keygen
def test_a_signature_made_by_ssh_keygen_verifies_and_a_tampered_file_does_not(tmp_path, run_file):
    key = make_key(tmp_path / "keys")
    list_key(run_file.parent.parent, key, "instructor")
    ssh_keygen_sign(run_file, key)
    allowed = read_allowed_signers(run_file.parent.parent)
    signed = check_signature(run_file, allowed=allowed)
    assert (signed.status, signed.principal, signed.fingerprint) == ("signed", "instructor", fingerprint(key))
    run_file.write_text('{"run_id": "05-demo", "origin": "captured "}\n', encoding="utf-8")  # one byte more
    tampered = check_signature(run_file, allowed=allowed)
    assert tampered.status == "invalid" and "does not verify over run.json" in tampered.reason


@needs_ssh_keygen
def test_labkits_signature_verifies_with_ssh_keygen_itself(tmp_path, run_file):
    key = make_key(tmp_path / "keys")
    list_key(run_file.parent.parent, key, "instructor")
    assert sign_run_file(run_file, key=key).principal == "instructor"
    allowed = run_file.parent.parent / "allowed_signers"
    command = ["ssh-keygen", "-Y", "verify", "-f", str(allowed), "-I", "instructor", "-n", NAMESPACE]
    done = subprocess.run(
        [*command, "-s", str(signature_path(run_file))],
        input=run_file.read_bytes(),
        capture_output=True,
        timeout=30,
    )
    assert done.returncode == 0 and f'Good "{NAMESPACE}" signature for instructor' in done.stdout.decode()


def test_the_committed_signatures_are_checked_in_python_with_no_ssh_binary(monkeypatch):
    from labkit.recording import verify_runs

    monkeypatch.setenv("PATH", "")
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("checking a signature ran a program"))
    results = verify_runs()
    assert len(results) == 18
    assert {(run.signature.status, run.signature.principal) for _, run, _ in results if run} == {
        ("signed", "labkit-course")
    }


@needs_ssh_keygen
def test_a_signature_made_for_another_namespace_is_invalid(tmp_path, run_file):
    key = make_key(tmp_path / "keys")
    list_key(run_file.parent.parent, key, "instructor")
    ssh_keygen_sign(run_file, key, namespace="git")  # the same key's signature for a git commit does not count
    signature = check_signature(run_file, allowed=read_allowed_signers(run_file.parent.parent))
    assert signature.status == "invalid" and f"in namespace {NAMESPACE!r}" in signature.reason


@needs_ssh_keygen
def test_a_signature_by_an_unlisted_key_names_its_fingerprint(tmp_path, run_file):
    listed, other = make_key(tmp_path / "keys", "course"), make_key(tmp_path / "keys", "stranger")
    list_key(run_file.parent.parent, listed, "labkit-course")
    ssh_keygen_sign(run_file, other)
    signature = check_signature(run_file, allowed=read_allowed_signers(run_file.parent.parent))
    assert (signature.status, signature.principal) == ("unknown key", None)
    assert signature.describe() == f"signed by an unknown key {fingerprint(other)}"


@needs_ssh_keygen
def test_a_key_listed_only_for_git_does_not_sign_runs(tmp_path, run_file):
    key = make_key(tmp_path / "keys")
    list_key(run_file.parent.parent, key, "instructor", options='namespaces="git" ')
    ssh_keygen_sign(run_file, key)
    assert read_allowed_signers(run_file.parent.parent) == []
    assert check_signature(run_file, allowed=[]).status == "unknown key"


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("instructor", "not an allowed-signers line"),
        ("instructor cert-authority ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA", "option 'cert-authority' cannot be"),
        ('instructor valid-before="20300101" ssh-ed25519 AAAA', "option 'valid-before' cannot be checked"),
        ("instructor ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTY=", "ssh-ed25519 and ssh-rsa"),
        ("instructor ssh-ed25519 bm90IGEga2V5", "not a valid ssh-ed25519 public key"),
    ],
)
def test_an_allowed_signers_line_labkit_cannot_check_is_refused_naming_the_line(tmp_path, line, words):
    (tmp_path / "allowed_signers").write_text(f"# the course's keys\n\n{line}\n", encoding="ascii")
    with pytest.raises(AllowedSignersError, match=r"allowed_signers, line 3: ") as refused:
        read_allowed_signers(tmp_path)
    assert words in str(refused.value)


def test_no_allowed_signers_file_lists_no_key(tmp_path):
    assert read_allowed_signers(tmp_path) == []


@pytest.mark.parametrize(
    "armored",
    [
        b"not a signature\n",
        b"-----BEGIN SSH SIGNATURE-----\nU1NIU0lHAAAAAQ==\n-----END SSH SIGNATURE-----\n",  # cut short
        b"",
    ],
)
def test_a_signature_file_that_is_not_an_ssh_signature_is_invalid(run_file, armored):
    signature_path(run_file).write_bytes(armored)
    signature = check_signature(run_file, allowed=[])
    assert signature.status == "invalid" and signature.describe().startswith("INVALID signature: ")


def test_a_signature_file_that_is_a_link_or_too_large_is_invalid_without_being_read(run_file, tmp_path):
    elsewhere = tmp_path / "elsewhere.sig"
    elsewhere.write_bytes(b"x")
    signature_path(run_file).symlink_to(elsewhere)
    assert "not a regular file" in check_signature(run_file, allowed=[]).reason
    signature_path(run_file).unlink()
    signature_path(run_file).write_bytes(b"x" * 20_000)
    assert "far larger than an SSH signature" in check_signature(run_file, allowed=[]).reason


def test_a_run_without_a_signature_file_is_unsigned(run_file):
    assert check_signature(run_file, allowed=[]).describe() == "unsigned"


# --- signing -------------------------------------------------------------------------------------


def test_signing_without_ssh_keygen_says_how_to_get_it(run_file, monkeypatch, tmp_path):
    key = tmp_path / "key"
    key.write_text("not used\n", encoding="ascii")
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(SigningFailed, match=r"signing needs ssh-keygen \(OpenSSH 8\.1 or newer\), which is not on"):
        sign_run_file(run_file, key=key)
    assert not signature_path(run_file).exists()


@needs_ssh_keygen
def test_a_file_that_is_not_a_key_is_refused_by_ssh_keygen_and_nothing_is_written(run_file, tmp_path):
    key = tmp_path / "key"
    key.write_text("not a key\n", encoding="ascii")
    with pytest.raises(SigningFailed, match=r"ssh-keygen could not sign with .*key: "):
        sign_run_file(run_file, key=key)
    assert not signature_path(run_file).exists()


def test_a_signing_key_setting_that_names_no_file_is_refused(monkeypatch, tmp_path):
    monkeypatch.setenv("LABKIT_SIGNING_KEY", str(tmp_path / "missing"))
    with pytest.raises(SigningFailed, match=r"missing is not a file; set LABKIT_SIGNING_KEY to your SSH private key"):
        signing_key()
    monkeypatch.setenv("LABKIT_SIGNING_KEY", " ")
    assert signing_key() is None


@needs_ssh_keygen
def test_an_unlisted_key_signs_but_its_runs_stay_unknown_until_it_is_listed(run_file, tmp_path):
    key = make_key(tmp_path / "keys")
    assert sign_run_file(run_file, key=key).status == "unknown key"
    list_key(run_file.parent.parent, key, "instructor")
    assert check_signature(run_file, allowed=read_allowed_signers(run_file.parent.parent)).status == "signed"


# --- the course's trust root ---------------------------------------------------------------------


def test_the_course_lists_its_own_key_for_runs_only():
    [signer] = read_allowed_signers(CHECKOUT / "recorded_runs")
    assert signer.principals == "labkit-course"
    line = next(
        line
        for line in (CHECKOUT / "recorded_runs" / "allowed_signers").read_text(encoding="ascii").splitlines()
        if line.startswith("labkit-course ")
    )
    assert f'namespaces="{NAMESPACE}"' in line


# Headers of private keys in every format ssh-keygen, OpenSSL and PuTTY write, and the start of an OpenSSH
# private key's body ("openssh-key-v1" in base64), which remains if the header lines are cut off.
PRIVATE_KEY = re.compile(
    "-----BEGIN [A-Z0-9 ]*" + "PRIVATE KEY-----" + "|PuTTY-User-Key-" + "File-|b3BlbnNzaC1rZXkt" + "djE",
)


def private_key_files(paths):
    """Return the paths among ``paths`` whose bytes hold private key material."""
    found = []
    for path in paths:
        if path.is_file() and not path.is_symlink() and PRIVATE_KEY.search(path.read_bytes().decode("latin-1")):
            found.append(path)
    return found


def _tracked_files():
    if shutil.which("git") is None or not (CHECKOUT / ".git").exists():
        pytest.skip("not a git checkout: the tracked files are unknown")
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=CHECKOUT, capture_output=True, check=True, timeout=60
    ).stdout.split(b"\0")
    return [CHECKOUT / name.decode() for name in listed if name]


def test_no_tracked_file_holds_a_private_key():
    files = _tracked_files()
    assert len(files) > 100 and CHECKOUT / "recorded_runs" / "allowed_signers" in files
    assert private_key_files(files) == []


@needs_ssh_keygen
def test_the_private_key_scan_finds_a_key_in_every_form_it_may_take(tmp_path):
    key = make_key(tmp_path / "keys")
    body = "".join(key.read_text(encoding="ascii").splitlines()[1:-1])
    pem = tmp_path / "pem"
    subprocess.run(["ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-m", "PEM", "-N", "", "-f", str(pem)], check=True)
    (tmp_path / "headless").write_text(f"key = '{body}'\n", encoding="ascii")
    planted = [key, pem, tmp_path / "headless"]
    assert private_key_files([*planted, key.with_name(key.name + ".pub")]) == planted
    assert public_key(key).startswith("ssh-ed25519 ")


def _sshsig_over(message: bytes, *, hash_name: str) -> bytes:
    """Return an armored SSHSIG of ``message`` whose inner hash is ``hash_name``, made in Python (no ssh-keygen)."""
    import hashlib
    import struct

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
    from sshsig.sshsig import SshsigWrapper, ssh_enarmor_sshsig

    def string(data: bytes) -> bytes:
        return struct.pack("!L", len(data)) + data

    private = Ed25519PrivateKey.generate()
    raw = private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    digest = hashlib.new(hash_name, message).digest()
    wrapped = SshsigWrapper(namespace=NAMESPACE.encode(), hash_algo=hash_name.encode(), hash=digest)
    signed = string(b"ssh-ed25519") + string(private.sign(wrapped.to_bytes()))
    blob = b"SSHSIG" + struct.pack("!L", 1) + string(string(b"ssh-ed25519") + string(raw))
    blob += string(NAMESPACE.encode()) + string(b"") + string(hash_name.encode()) + string(signed)
    return ssh_enarmor_sshsig(blob).encode()


def test_a_signature_over_a_hash_ssh_keygen_never_uses_is_invalid(run_file):
    message = run_file.read_bytes()
    assert check_armored(message, _sshsig_over(message, hash_name="sha512"), allowed=[]).status == "unknown key"
    weak = check_armored(message, _sshsig_over(message, hash_name="sha1"), allowed=[])
    assert weak.status == "invalid" and weak.reason == "it hashes with 'sha1'; ssh-keygen uses sha512"
