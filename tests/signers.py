"""Keys for signature tests: made by ssh-keygen under tmp_path, listed in a copy's allowed_signers."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

needs_ssh_keygen = pytest.mark.skipif(
    shutil.which("ssh-keygen") is None,
    reason="ssh-keygen (OpenSSH) is not installed: making a test signature needs it (checking one does not)",
)


def make_key(folder: Path, name: str = "instructor") -> Path:
    """Make an ed25519 key pair without passphrase under ``folder``; return the private key's path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(path)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=True,
        timeout=30,
    )
    return path


def public_key(key: Path) -> str:
    """Return the ``type base64`` part of a key's ``.pub`` file."""
    return " ".join(key.with_name(key.name + ".pub").read_text(encoding="ascii").split()[:2])


def list_key(runs_dir: Path, key: Path, principal: str, *, options: str = 'namespaces="labkit-run" ') -> None:
    """Append ``key``'s public half to ``runs_dir/allowed_signers`` under ``principal``."""
    with (runs_dir / "allowed_signers").open("a", encoding="ascii") as handle:
        handle.write(f"{principal} {options}{public_key(key)}\n")


def ssh_keygen_sign(path: Path, key: Path, *, namespace: str = "labkit-run") -> Path:
    """Sign ``path`` with ssh-keygen itself (no labkit code), as an instructor would by hand; return the .sig."""
    subprocess.run(
        ["ssh-keygen", "-Y", "sign", "-f", str(key), "-n", namespace, str(path)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=True,
        timeout=30,
    )
    return path.with_name(path.name + ".sig")


def fingerprint(key: Path) -> str:
    """Return ssh-keygen's SHA-256 fingerprint of ``key``."""
    done = subprocess.run(
        ["ssh-keygen", "-l", "-E", "sha256", "-f", str(key.with_name(key.name + ".pub"))],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return done.stdout.split()[1]


def reseal_edited_reply(run_id: str, content: str = '{"status": "not_in_docs"}', *, keep_signature: bool) -> Path:
    """Edit a reply of a run the way a thorough forger would: every hash and the manifest entry recomputed.

    The run writer drops the signature the new bytes made stale; with ``keep_signature`` the old
    one is put back, as a forger who edits the files by hand would leave it. Returns the run file.
    """
    from labkit.paths import recorded_runs_dir
    from labkit.recording import Binding, load_run, seal_run, write_run_file

    run = load_run(run_id)
    data = run.model_dump(mode="json")
    binding = data["bindings"][-1]
    binding["response"]["choices"][0]["message"]["content"] = content
    kept = {k: v for k, v in binding.items() if k not in ("key", "response_sha256", "request", "response")}
    data["bindings"][-1] = Binding.make(binding["request"], binding["response"], **kept).model_dump(mode="json")
    forged = seal_run(**{k: v for k, v in data.items() if k not in ("schema_version", "content_sha256")})
    signature = recorded_runs_dir() / run_id / "run.json.sig"
    old = signature.read_bytes() if signature.exists() else None
    path = write_run_file(forged, replace=True)
    if keep_signature and old is not None:
        signature.write_bytes(old)
    return path
