"""Signatures on recorded runs: who sealed a run, checked against the keys the course accepts.

The hashes of `labkit.recording` show that a run file is unchanged since it was
sealed, but anyone can recompute them. A signature anchors the claim in a key.
The run writer signs the exact bytes of ``run.json`` with ``ssh-keygen -Y sign``
in the namespace ``labkit-run`` (SSHSIG, the format git uses for SSH-signed
commits) and keeps the signature beside it as ``run.json.sig``. The file holds
the run id, the origin, the model and every binding with its hashes, so one
signature covers them all: a reply edited and re-sealed (every hash and the
manifest entry recomputed) no longer verifies.

``recorded_runs/allowed_signers`` (ssh-keygen's and git's allowed-signers format,
one ``principal key-type base64-key`` a line) lists the keys the course accepts.
Signatures are checked in Python with the `sshsig` package (built on
`cryptography`), so `labkit verify` and `labkit doctor` need no ssh binary on a
learner's laptop; only signing runs ``ssh-keygen``. Each run is reported as
signed by a listed key (its principal and key fingerprint), signed by an unknown
key, or unsigned. Refused: an invalid signature, a signature by a key the list
does not hold, and a run without a signature, authored or captured: an
authored run claims no model call, but unsigned its replies could be edited and
its hashes recomputed with nothing to show it.

What a signature proves: the holder of a listed private key sealed exactly these
bytes. It does not prove that the replies are right, nor that the signer ran the
model honestly; and ``allowed_signers`` lives in the repository, so whoever can
change it can add a key of their own. That file is the trust root: `labkit
verify` prints each signer's principal and fingerprint, and a change to the file
is reviewed like a change to the code.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from labkit.errors import LabkitError
from labkit.paths import atomic_write, recorded_runs_dir

#: The SSHSIG namespace of a run's signature: a signature made for git (``-n git``) or files does not count here.
NAMESPACE = "labkit-run"
#: The signature of ``run.json`` is ``run.json.sig`` beside it (ssh-keygen's own name for a file's signature).
SIGNATURE_SUFFIX = ".sig"
#: The trust root, in recorded_runs/: the public keys whose signatures the course accepts.
ALLOWED_SIGNERS_FILE = "allowed_signers"
#: The setting that names the private key (or, with ssh-agent, the public key) that recording signs with.
SIGNING_KEY_SETTING = "LABKIT_SIGNING_KEY"
#: An armored SSH signature is well under a kilobyte; anything far larger is not one.
MAX_SIGNATURE_BYTES = 16_384
MAX_ALLOWED_SIGNERS_BYTES = 1_000_000
#: How long ssh-keygen may take to sign, a passphrase typed at its prompt included.
SIGN_TIMEOUT_S = 120
#: The hashes ssh-keygen accepts inside a signature (it signs with sha512).
_HASHES = (b"sha256", b"sha512")
#: The key types `sshsig` checks.
_KEY_TYPES = ("ssh-ed25519", "ssh-rsa")

Status = Literal["signed", "unknown key", "unsigned", "invalid"]


class SigningFailed(LabkitError, RuntimeError):
    """A run could not be signed: no ssh-keygen, no key, or ssh-keygen refused."""


class AllowedSignersError(LabkitError, ValueError):
    """``recorded_runs/allowed_signers`` holds a line labkit cannot read or check."""


@dataclass(frozen=True)
class AllowedSigner:
    """One key the course accepts, as listed in ``allowed_signers``."""

    principals: str
    """Who holds the key, as the line names them (comma-separated, as ssh-keygen writes them)."""
    key: str
    """The public key in OpenSSH form: ``ssh-ed25519 AAAA...``."""
    fingerprint: str
    """Its SHA-256 fingerprint, as ``ssh-keygen -l`` prints it."""


@dataclass(frozen=True)
class RunSignature:
    """What a run's signature file says about who sealed the run."""

    status: Status
    """``signed`` (by a listed key), ``unknown key``, ``unsigned`` (no signature file) or ``invalid``."""
    principal: str | None = None
    """The listed principal of the signing key, when it is listed."""
    fingerprint: str | None = None
    """The signing key's SHA-256 fingerprint, when the signature is valid."""
    key: str | None = None
    """The signing public key in OpenSSH form, when the signature is valid."""
    reason: str = ""
    """Why an invalid signature does not verify."""

    def describe(self) -> str:
        """Return the signature's state in a few words, as `labkit verify` prints it."""
        if self.status == "signed":
            return f"signed by {self.principal} ({self.fingerprint})"
        if self.status == "unknown key":
            return f"signed by an unknown key {self.fingerprint}"
        if self.status == "invalid":
            return f"INVALID signature: {self.reason}"
        return "unsigned"


def signature_path(run_file: Path) -> Path:
    """Return where the signature of ``run_file`` lives: ``run.json.sig`` beside ``run.json``."""
    return run_file.with_name(run_file.name + SIGNATURE_SUFFIX)


def allowed_signers_path(runs_dir: Path | None = None) -> Path:
    """Return the allowed-signers file of ``runs_dir`` (default ``recorded_runs/``)."""
    return (runs_dir or recorded_runs_dir()) / ALLOWED_SIGNERS_FILE


def read_allowed_signers(runs_dir: Path | None = None) -> list[AllowedSigner]:
    """Return the keys ``allowed_signers`` lists for run signatures; no file lists none.

    A line restricted to other namespaces (``namespaces="git"``) is left out, as
    ssh-keygen leaves it out. Certificate authorities and validity dates are
    refused rather than ignored: labkit cannot check them.
    """
    from sshsig import PublicKey
    from sshsig.allowed_signers import AllowedSigner as Line

    from labkit.canonical import read_strict_bytes

    path = allowed_signers_path(runs_dir)
    if not path.exists():
        return []
    raw = read_strict_bytes(path, max_bytes=MAX_ALLOWED_SIGNERS_BYTES)
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        raise AllowedSignersError(f"{path}: not ASCII text; restore it from git") from None
    signers = []
    for number, line in enumerate(text.splitlines(), start=1):
        where = f"{path}, line {number}"
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            parsed = Line.parse(line.strip())
        except (ValueError, IndexError) as exc:
            raise AllowedSignersError(
                f"{where}: not an allowed-signers line ({exc}); write `principal ssh-ed25519 AAAA...`, "
                "as docs/recording.md shows"
            ) from None
        options = parsed.options or {}
        refused = sorted(set(options) & {"cert-authority", "valid-after", "valid-before"})
        if refused:
            raise AllowedSignersError(
                f"{where}: option {refused[0]!r} cannot be checked by labkit verify; list the signer's own "
                "public key without it"
            )
        if "namespaces" in options and NAMESPACE not in options["namespaces"].split(","):
            continue
        if parsed.key_type not in _KEY_TYPES:
            raise AllowedSignersError(
                f"{where}: a {parsed.key_type} key cannot be checked here (labkit checks ssh-ed25519 and ssh-rsa "
                "signatures); make an ed25519 key with `ssh-keygen -t ed25519` and list that"
            )
        try:
            key = PublicKey.from_openssh_str(f"{parsed.key_type} {parsed.base64_key}")
        except (ValueError, NotImplementedError):
            raise AllowedSignersError(
                f"{where}: not a valid {parsed.key_type} public key; copy the .pub again"
            ) from None
        signers.append(AllowedSigner(parsed.principals, key.openssh_str(), key.sha256_str()))
    return signers


def _invalid(reason: str) -> RunSignature:
    return RunSignature("invalid", reason=reason)


def check_armored(message: bytes, armored: bytes, *, allowed: list[AllowedSigner]) -> RunSignature:
    """Check an armored SSH signature of ``message`` in the ``labkit-run`` namespace against ``allowed``."""
    import sshsig
    from sshsig.sshsig import SshsigSignature

    try:
        parsed = SshsigSignature.from_armored(armored)
        if parsed.hash_algo not in _HASHES:
            return _invalid(f"it hashes with {parsed.hash_algo.decode(errors='replace')!r}; ssh-keygen uses sha512")
        key = sshsig.check_signature(message, armored, namespace=NAMESPACE)
    except sshsig.InvalidSignature as exc:
        detail = f" ({exc})" if str(exc) else ""
        return _invalid(f"it does not verify over run.json in namespace {NAMESPACE!r}{detail}")
    except (ValueError, NotImplementedError, AssertionError) as exc:  # sshsig asserts on a mislabelled signature
        return _invalid(f"it is not an SSH signature labkit can check ({exc or type(exc).__name__})")
    openssh, fingerprint = key.openssh_str(), key.sha256_str()
    listed = [signer.principals for signer in allowed if signer.key == openssh]
    if not listed:
        return RunSignature("unknown key", fingerprint=fingerprint, key=openssh)
    return RunSignature("signed", principal=",".join(listed), fingerprint=fingerprint, key=openssh)


def check_signature(run_file: Path, *, allowed: list[AllowedSigner]) -> RunSignature:
    """Check the signature beside ``run_file`` over its exact bytes; no signature file is ``unsigned``."""
    import stat

    path = signature_path(run_file)
    try:
        status = path.lstat()
    except FileNotFoundError:
        return RunSignature("unsigned")
    if not stat.S_ISREG(status.st_mode):
        return _invalid(f"{path.name} is not a regular file (a link, folder or device)")
    if status.st_size > MAX_SIGNATURE_BYTES:
        return _invalid(f"{path.name} is {status.st_size:,} bytes, far larger than an SSH signature")
    from labkit.canonical import MAX_RUN_BYTES, read_strict_bytes
    from labkit.errors import InvalidJSON

    try:
        message = read_strict_bytes(run_file, max_bytes=MAX_RUN_BYTES)
    except InvalidJSON as exc:  # an oversized or odd run file is refused by the loader too
        return _invalid(f"the run file cannot be read to check it: {exc}")
    return check_armored(message, path.read_bytes(), allowed=allowed)


def signature_problem(run_id: str, origin: str | None, signature: RunSignature) -> str:
    """Return why `labkit verify` refuses a run's signature, or "" when it accepts it.

    ``origin`` is None when the run could not be read: it is refused for that already, and
    only a signature that is present is judged.
    """
    where = f"recorded_runs/{ALLOWED_SIGNERS_FILE}"
    if signature.status == "invalid":
        return (
            f"run {run_id!r}: its signature run.json{SIGNATURE_SUFFIX} is invalid: {signature.reason}. "
            "The run changed after it was signed (or the signature was replaced); restore both from git, "
            "or record the run again"
        )
    if signature.status == "unknown key":
        return (
            f"run {run_id!r} is signed by the key {signature.fingerprint}, which {where} does not list. "
            f"If it is your key, add its public half to {where} (docs/recording.md, 'Signing runs') in a commit "
            "that others review; otherwise restore the run and its signature from git"
        )
    if signature.status == "unsigned" and origin is not None:
        return (
            f"{origin} run {run_id!r} is unsigned, so nothing shows who sealed it (and an edit with its hashes "
            f"recomputed would pass). Sign it with `labkit sign {run_id}` ({SIGNING_KEY_SETTING} names your private "
            "key; docs/recording.md)"
        )
    return ""


def signing_key(value: str | None = None) -> Path | None:
    """Return the key named by ``value`` or `LABKIT_SIGNING_KEY`, or None when neither names one."""
    value = (value if value is not None else os.environ.get(SIGNING_KEY_SETTING, "")).strip()
    if not value:
        return None
    path = Path(value).expanduser()
    if not path.is_file():
        raise SigningFailed(
            f"the signing key {value} is not a file; set {SIGNING_KEY_SETTING} to your SSH private key "
            "(or to its .pub, with the key loaded in ssh-agent)"
        )
    return path


def sign_bytes(message: bytes, *, key: Path) -> bytes:
    """Return ``ssh-keygen -Y sign -n labkit-run``'s armored signature of ``message`` made with ``key``."""
    program = shutil.which("ssh-keygen")
    if program is None:
        raise SigningFailed(
            "signing needs ssh-keygen (OpenSSH 8.1 or newer), which is not on PATH: install the OpenSSH client "
            "(Debian and Ubuntu: apt install openssh-client; macOS has it; Windows: Settings, Optional features, "
            "OpenSSH Client). Checking signatures needs no ssh-keygen."
        )
    with tempfile.TemporaryDirectory(prefix="labkit-sign-") as folder:
        # ssh-keygen writes FILE.sig beside a file it signs and would ask before overwriting one: sign a copy
        copy = Path(folder) / "run.json"
        copy.write_bytes(message)
        try:
            done = subprocess.run(
                [program, "-Y", "sign", "-f", str(key), "-n", NAMESPACE, str(copy)],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=SIGN_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise SigningFailed(
                f"ssh-keygen did not sign within {SIGN_TIMEOUT_S} s (was it waiting for a passphrase?); "
                "load the key into ssh-agent (ssh-add KEY) and try again"
            ) from None
        produced = signature_path(copy)
        if done.returncode != 0 or not produced.is_file():
            said = done.stderr.decode(errors="replace").strip().splitlines()
            raise SigningFailed(f"ssh-keygen could not sign with {key}: {said[-1] if said else 'no reason given'}")
        return produced.read_bytes()


def sign_run_file(run_file: Path, *, key: Path, allowed: list[AllowedSigner] | None = None) -> RunSignature:
    """Sign ``run_file``'s exact bytes with ``key``; the signature is checked before it is written beside the run."""
    if allowed is None:
        allowed = read_allowed_signers(run_file.parent.parent)
    message = run_file.read_bytes()
    armored = sign_bytes(message, key=key)
    signature = check_armored(message, armored, allowed=allowed)
    if signature.status == "invalid":  # never keep a signature that would not verify
        raise SigningFailed(
            f"ssh-keygen's signature of {run_file} does not verify ({signature.reason}); nothing written"
        )
    atomic_write(signature_path(run_file), armored)
    return signature


def sign_written_run(run_file: Path) -> RunSignature:
    """Sign a run file the run writer has just written, if a signing key is set; say what it is now.

    A signature that still verifies over the new bytes (an authored run rebuilt
    byte for byte) is kept. One that no longer does covered the old bytes: it is
    replaced by a new signature, or removed when no key is set, and the run is
    then reported unsigned.
    """
    allowed = read_allowed_signers(run_file.parent.parent)
    current = check_signature(run_file, allowed=allowed)
    if current.status in ("signed", "unknown key"):
        return current
    try:
        key = signing_key()
        if key is None:
            if current.status == "invalid":
                signature_path(run_file).unlink()
            return RunSignature("unsigned")
        return sign_run_file(run_file, key=key, allowed=allowed)
    except SigningFailed as exc:
        if current.status == "invalid":
            signature_path(run_file).unlink()
        raise SigningFailed(
            f"the run was saved as {run_file}, unsigned: {exc}. Then sign it with `labkit sign {run_file.parent.name}`"
        ) from None


def signature_notice(run_id: str, signature: RunSignature, *, origin: str) -> str:
    """Return what `labkit record` says about a new run's signature."""
    if signature.status == "signed":
        return f"{origin} run {run_id} is {signature.describe()}"
    if signature.status == "unknown key":
        return (
            f"{origin} run {run_id} is {signature.describe()}: `labkit verify` refuses it until that key is in "
            f"recorded_runs/{ALLOWED_SIGNERS_FILE} (docs/recording.md, 'Signing runs')"
        )
    return (
        f"{origin} run {run_id} was saved UNSIGNED: no signing key is set, and `labkit verify` refuses an unsigned "
        f"run. Set {SIGNING_KEY_SETTING} to your SSH private key and run `labkit sign {run_id}` "
        "(docs/recording.md, 'Signing runs')"
    )


def signer_lines(signatures: Sequence[RunSignature], *, runs_dir: Path | None = None) -> list[str]:
    """Return one line per key ``allowed_signers`` lists: principal, fingerprint, and how many of ``signatures`` it made.

    Raises `AllowedSignersError` if the file cannot be read; no file lists no key.
    """
    signers = read_allowed_signers(runs_dir)
    width = max([len(signer.principals) for signer in signers], default=0)
    return [
        f"{signer.principals:<{width}}  {signer.fingerprint}  signed "
        f"{sum(signature.fingerprint == signer.fingerprint for signature in signatures)} of the runs"
        for signer in signers
    ]
