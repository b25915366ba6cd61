"""Learners' homes on the workshop hub: the student copy on first login, never overwritten; one account per learner.

`seed_home` writes the student copy of the course (`export_workshop`) into
``HOME/course`` once: into a private staging folder first, then renamed into
place, so a learner never sees half a copy. When ``HOME/course`` exists, in any
state, it is the learner's work and is kept as it is.

With isolation, each learner runs as a system account of their own
(``learner-<name>``, created on first login, marked in its comment field so that
only such accounts are ever reused or removed), whose home only that account can
open; the folder of homes can be passed through but not listed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal

from labkit.course.hub_config import COURSE_FOLDER
from labkit.errors import LabkitError

#: The comment (GECOS) field of every account the hub creates; only such accounts are reused or removed.
ACCOUNT_MARK = "labkit hub learner"
STAGING_PREFIX = ".labkit-seeding-"
#: The account that probes whether an unprivileged user can run the course's Python.
PROBE_ACCOUNT = "nobody"


class LearnerAccountConflict(LabkitError, PermissionError):
    """A system account with a learner's account name exists and was not made by the hub."""


class IsolationUnavailable(LabkitError, PermissionError):
    """One account per learner was asked for, but this machine cannot give it."""


def seed_home(home: Path, notebooks: list[Path], *, owner: tuple[int, int] | None = None) -> Literal["seeded", "kept"]:
    """Give ``home`` the student copy of ``notebooks`` in ``home/course`` unless it has one; never overwrite.

    ``owner`` (uid, gid) receives the new files. A staging folder left by an
    interrupted seeding (ours by name) is removed first.
    """
    from labkit.course.workshop import export_workshop

    course = home / COURSE_FOLDER
    home.mkdir(parents=True, exist_ok=True)
    for leftover in home.glob(f"{STAGING_PREFIX}*"):
        if leftover.is_dir() and not leftover.is_symlink():
            shutil.rmtree(leftover)
    if course.exists() or course.is_symlink():
        return "kept"
    staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=home))
    try:
        export_workshop(staging, notebooks)
        if owner is not None:
            give_to(staging, *owner)
        os.chmod(staging, 0o755 if owner is None else 0o700)
        os.rename(staging, course)  # refuses if something named course appeared meanwhile
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return "seeded"


def _tree(top: Path) -> Iterator[Path]:
    yield top
    for folder, folders, files in os.walk(top):  # os.walk does not follow symlinks
        for name in [*folders, *files]:
            yield Path(folder) / name


def give_to(top: Path, uid: int, gid: int) -> None:
    """Make ``top`` and everything under it belong to ``uid``/``gid``; symlinks are changed, never followed."""
    for path in _tree(top):
        os.chown(path, uid, gid, follow_symlinks=False)


def account_name(learner: str, prefix: str) -> str:
    """Return the system account of a learner (``learner-alice`` for ``alice``)."""
    return f"{prefix}{learner}"


def ensure_account(name: str, home: Path) -> tuple[int, int]:
    """Return (uid, gid) of the hub-made account ``name``, creating it (home ``home``, no login shell) if missing."""
    import pwd

    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        command = ["useradd", "--system", "--user-group", "--no-create-home", "--home-dir", str(home)]
        command += ["--shell", "/usr/sbin/nologin", "--comment", ACCOUNT_MARK, name]
        result = subprocess.run(command, capture_output=True, text=True, check=False, timeout=60)
        if result.returncode != 0:
            raise IsolationUnavailable(
                f"useradd could not create the learner account {name}: {result.stderr.strip()}; "
                "run the hub as root on Linux, or start it with --isolation none"
            ) from None
        entry = pwd.getpwnam(name)
    if entry.pw_gecos != ACCOUNT_MARK:
        raise LearnerAccountConflict(
            f"the system account {name} exists but was not made by the hub (its comment is {entry.pw_gecos!r}); "
            "choose another --account-prefix, or remove that account"
        )
    return entry.pw_uid, entry.pw_gid


def prepare_home(home: Path, uid: int, gid: int) -> None:
    """Make ``home`` exist, belong to ``uid`` (everything in it, if an older account held it) and open to it only."""
    home.mkdir(parents=True, exist_ok=True)
    if home.stat().st_uid != uid:
        give_to(home, uid, gid)
    os.chmod(home, 0o700)


def prepare_homes_folder(homes: Path, *, isolated: bool) -> None:
    """Create the folder of homes; with isolation, others may pass through it but not list it."""
    homes.mkdir(parents=True, exist_ok=True)
    if isolated:
        os.chmod(homes, 0o711)


def hub_accounts(prefix: str) -> list[str]:
    """Return the names of the accounts the hub made with ``prefix``."""
    import pwd

    return sorted(e.pw_name for e in pwd.getpwall() if e.pw_name.startswith(prefix) and e.pw_gecos == ACCOUNT_MARK)


def remove_accounts(prefix: str) -> list[str]:
    """Remove the accounts the hub made with ``prefix`` (their homes and the work in them are kept); return them."""
    removed = []
    for name in hub_accounts(prefix):
        result = subprocess.run(["userdel", name], capture_output=True, text=True, check=False, timeout=60)
        if result.returncode == 0:
            removed.append(name)
    return removed


def _blocking_folder(paths: list[Path], *, mode: Callable[[Path], int] = lambda p: os.stat(p).st_mode) -> Path | None:
    """Return the first folder on the way to ``paths`` that other users may not pass through, if any."""
    for path in paths:
        for folder in reversed([path, *path.parents]):
            if folder.is_dir() and not mode(folder) & 0o001:
                return folder
    return None


def isolation_problem(python: str, course: Path) -> str | None:
    """Return why learners cannot each have an account of their own here, or None when they can.

    Needs Linux, root (to create accounts and start servers as them) and a course
    Python that an unprivileged account can run: probed for real, as ``nobody``.
    """
    if not sys.platform.startswith("linux"):
        return f"one account per learner needs Linux; this is {sys.platform}"
    if os.geteuid() != 0:
        return "one account per learner needs the hub to run as root (it creates the accounts)"
    if shutil.which("useradd") is None:
        return "useradd is not installed, so no learner accounts can be made"
    import pwd

    try:
        probe = pwd.getpwnam(PROBE_ACCOUNT)
    except KeyError:
        return f"there is no {PROBE_ACCOUNT!r} account to check that learners can run the course's Python"

    def become_probe() -> None:
        os.setgroups([])
        os.setgid(probe.pw_gid)
        os.setuid(probe.pw_uid)

    result = subprocess.run(
        [python, "-c", "import sys, labkit.course.hub_singleuser; print(sys.base_prefix)"],
        preexec_fn=become_probe,  # the probe must start as the unprivileged account, hence before exec
        cwd="/",
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/"},
        capture_output=True,
        timeout=60,
        check=False,
    )
    seen = result.stdout.decode(errors="replace").strip()
    if result.returncode == 0 and seen == sys.base_prefix:
        return None
    blocked = _blocking_folder([Path(python).resolve(), Path(sys.base_prefix), course])
    where = (
        f": {blocked} lets no other user pass (chmod o+x {blocked} lets them pass without listing it)"
        if blocked
        else ""
    )
    if result.returncode == 0:  # it ran, but on another Python's standard library (its own was out of reach)
        what = f"runs the course's Python {python} on another standard library ({seen}, not {sys.base_prefix})"
    else:
        what = f"cannot run the course's Python {python}"
    return f"an unprivileged account {what}{where}; put Python and the clone where every user can read them"
