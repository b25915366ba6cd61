"""`pytest` and `python -m pytest` collect the same tests: the console script does not put the checkout on sys.path."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from labkit.paths import project_root

# Test files that import a helper module from tests/ (the ones that failed to collect under `pytest`).
FILES = ["tests/test_capture.py", "tests/test_course_lessons.py"]


def _collected(command: list[str]) -> tuple[int, str]:
    done = subprocess.run(
        [*command, "--collect-only", "-q", "-p", "no:nbval", "-o", "addopts=", *FILES],
        cwd=project_root(),
        capture_output=True,
        text=True,
    )
    match = re.search(r"(\d+) tests? collected", done.stdout)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert match, done.stdout[-2000:]
    return int(match[1]), done.stdout


def test_pytest_script_and_python_m_pytest_collect_the_same_tests():
    script = Path(sys.executable).with_name("pytest")
    by_module, _ = _collected([sys.executable, "-m", "pytest"])
    by_script, _ = _collected([str(script)])
    assert by_module == by_script > 0
