"""The workshop hub's spawners: each learner's server starts in a home that holds the student copy of the course.

`IsolatedLearnerSpawner` (Linux, hub running as root): JupyterHub's
`LocalProcessSpawner`, with each learner's server running as a system account of
its own (``learner-<name>``), whose home no other learner can open.
`SharedLearnerSpawner` (everywhere else): JupyterHub's `SimpleLocalProcessSpawner`;
every server runs as the hub's own user, so learners are not kept apart (the hub
says so when it starts). Both seed a home on its first start and never after.
This module is loaded by the hub process (it needs the ``hub`` extra).
"""

from __future__ import annotations

import asyncio
import pwd
from pathlib import Path
from typing import Any

from jupyterhub.spawner import LocalProcessSpawner, SimpleLocalProcessSpawner, set_user_setuid
from traitlets import Unicode
from traitlets.config import Configurable

from labkit.course.hub_homes import account_name, ensure_account, prepare_home, seed_home


class LearnerHomes(Configurable):
    """Where learners' homes live and what a new home receives (set by `labkit.course.hub_config.configure`)."""

    homes = Unicode(config=True, help="Folder holding one home per learner, homes/<name>.")
    notebooks = Unicode(config=True, help="Folder of the course's notebooks, exported into a new home.")
    account_prefix = Unicode("learner-", config=True, help="Prefix of the learners' system accounts.")

    def learner_home(self, learner: str) -> Path:
        """Return the home of ``learner``."""
        return Path(self.homes) / learner

    def course_notebooks(self) -> list[Path]:
        """Return the notebooks a new home receives (student copies are made of them)."""
        from labkit.course.runner import course_notebooks

        return course_notebooks(Path(self.notebooks))


class IsolatedLearnerSpawner(LearnerHomes, LocalProcessSpawner):
    """Start each learner's server as the learner's own system account, in a home only that account can open."""

    @property
    def account(self) -> str:
        """The learner's system account."""
        return account_name(self.user.name, self.account_prefix)

    def _prepare(self) -> None:
        home = self.learner_home(self.user.name)
        uid, gid = ensure_account(self.account, home)
        prepare_home(home, uid, gid)
        result = seed_home(home, self.course_notebooks(), owner=(uid, gid))
        self.log.info("home of %s (%s): %s", self.user.name, self.account, result)

    def make_preexec_fn(self, name: str) -> Any:
        return set_user_setuid(self.account)

    def user_env(self, env: dict[str, str]) -> dict[str, str]:
        entry = pwd.getpwnam(self.account)
        env.update(USER=entry.pw_name, HOME=entry.pw_dir, SHELL=entry.pw_shell)
        return env

    async def start(self) -> Any:
        await asyncio.to_thread(self._prepare)
        return await super().start()


class SharedLearnerSpawner(LearnerHomes, SimpleLocalProcessSpawner):
    """Start every learner's server as the hub's own user, each in a home of its own (not isolated from each other)."""

    def _prepare(self) -> None:
        result = seed_home(Path(self.home_dir), self.course_notebooks())
        self.log.info("home of %s: %s", self.user.name, result)

    def _default_home_dir(self) -> str:
        return str(self.learner_home(self.user.name))

    async def start(self) -> Any:
        self.home_dir = str(self.learner_home(self.user.name))
        await asyncio.to_thread(self._prepare)
        return await super().start()
