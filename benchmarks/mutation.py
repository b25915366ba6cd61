"""Mutation score of the modules that carry the course's guarantees, by unit tests alone (mutmut, no notebooks).

.venv/bin/python benchmarks/mutation.py                 # every module below
.venv/bin/python benchmarks/mutation.py routing.grader  # one or more modules by their short name
.venv/bin/python benchmarks/mutation.py --list          # the module names and the tests that guard each
.venv/bin/python benchmarks/mutation.py rag.answer --show                     # each survivor's full diff too
.venv/bin/python benchmarks/mutation.py rag.answer --mutants '*bm25_rerank*'  # only these mutants (fnmatch)
.venv/bin/python benchmarks/mutation.py rag.answer --max-children 1           # one test process on a busy machine

Each module runs in its own temporary copy of the checkout (mutmut writes a ``mutants/`` folder beside the
code it mutates; the checkout is never touched), with only the unit tests that exercise that module and
without nbval. The table prints killed / survived / equivalent per module and in total; a survivor listed in
``benchmarks/mutation_equivalents.toml`` (each with a one-line reason) counts as equivalent. The score is
killed / (killed + survived), the share of non-equivalent mutants the unit tests kill; the target is 90%.
Exit status 0 when every module run reaches the target, 1 otherwise.

mutmut runs, per mutant, only the tests it saw call the mutated function. A module-scoped fixture is built inside
the first test that uses it, so the later tests that only read its result are never run against that function's
mutants: a rule they alone guard shows up as a survivor. Guard such a rule with a test that calls the function.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EQUIVALENTS = ROOT / "benchmarks" / "mutation_equivalents.toml"
TARGET = 0.90

# Short name -> (the module mutated, the unit tests that guard it). Tests are chosen per module so that a run
# stays feasible on two shared cores; mutmut further runs, per mutant, only the tests that reach the function.
MODULES: dict[str, tuple[str, tuple[str, ...]]] = {
    "canonical": ("labkit/canonical.py", ("tests/test_canonical.py",)),
    "replay": ("labkit/replay.py", ("tests/test_replay.py", "tests/test_transports.py")),
    "recording": ("labkit/recording.py", ("tests/test_recording.py",)),
    "secret_scan": ("labkit/secret_scan.py", ("tests/test_secret_scan.py",)),
    "routing.grader": ("labkit/routing/grader.py", ("tests/test_routing_grader.py",)),
    "agent.identity": ("labkit/agent/identity.py", ("tests/test_agent_identity.py", "tests/test_agent_tools.py")),
    "agent.tools": ("labkit/agent/tools.py", ("tests/test_agent_tools.py",)),
    "agent.validator": ("labkit/agent/validator.py", ("tests/test_agent_validator.py",)),
    "system.contract": ("labkit/system/contract.py", ("tests/test_system_contract.py",)),
    "system.workflow": ("labkit/system/workflow.py", ("tests/test_system_workflow.py",)),
    "system.golden": ("labkit/system/golden.py", ("tests/test_system_golden.py",)),
    "evaluator.calibration": ("labkit/evaluator/calibration.py", ("tests/test_evaluator_calibration.py",)),
    "evaluator.record": ("labkit/evaluator/record.py", ("tests/test_evaluator_record.py",)),
    "rag.answer": ("labkit/rag/answer.py", ("tests/test_rag_answer.py",)),
    "rag.trace": ("labkit/rag/trace.py", ("tests/test_rag_trace.py",)),
}

# The folders a unit test may read besides the package and the tests themselves.
_DATA = ("fixtures", "recorded_runs")
# "no tests": no selected unit test reaches the mutated function, so nothing would catch the change either.
_SURVIVED = ("survived", "no tests")
_STATUS = re.compile(r"^\s*(?P<name>\S+__mutmut_\d+): (?P<status>.+)$")


@dataclass
class ModuleScore:
    """The outcome of one module's mutation run."""

    name: str
    seconds: float
    killed: list[str] = field(default_factory=list)
    survived: list[str] = field(default_factory=list)
    equivalent: list[str] = field(default_factory=list)
    other: dict[str, str] = field(default_factory=dict)

    @property
    def score(self) -> float:
        """The share of non-equivalent mutants killed (1.0 when there are none)."""
        judged = len(self.killed) + len(self.survived)
        return len(self.killed) / judged if judged else 1.0


def load_equivalents(path: Path = EQUIVALENTS) -> dict[str, str]:
    """Return the equivalent mutants (mutant name -> one-line reason) listed in ``path``."""
    if not path.exists():
        return {}
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    listed = data.get("equivalent", {})
    for name, reason in listed.items():
        if not isinstance(reason, str) or not reason.strip():
            raise SystemExit(f"{path}: mutant {name} needs a one-line reason why it is equivalent")
    return dict(listed)


def _pyproject_for(module: str, tests: tuple[str, ...]) -> str:
    """Return the checkout's pyproject.toml with nbval off and a [tool.mutmut] table for ``module``."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    text = re.sub(
        r'^addopts = ".*"$',
        'addopts = "-p labkit.course.pytest_plugin -p no:cacheprovider"',
        text,
        flags=re.MULTILINE,
    )
    text = re.sub(r"^testpaths = .*$", 'testpaths = ["tests"]', text, flags=re.MULTILINE)
    selection = ", ".join(f'"{test}"' for test in tests)
    also_copy = ", ".join(f'"{name}/"' for name in _DATA)
    return (
        text
        + "\n[tool.mutmut]\n"
        + 'source_paths = ["labkit"]\n'
        + f'only_mutate = ["{module}"]\n'
        + f"pytest_add_cli_args_test_selection = [{selection}]\n"
        + f"also_copy = [{also_copy}]\n"
        + "use_git_change_detection = false\n"
    )


def run_module(
    name: str,
    *,
    equivalents: dict[str, str],
    workdir: Path,
    verbose: bool = False,
    show: bool = False,
    mutants: tuple[str, ...] = (),
    max_children: int | None = None,
) -> ModuleScore:
    """Run mutmut over one module in a fresh copy under ``workdir`` and sort its mutants.

    ``show`` prints each survivor's full ``mutmut show`` diff; ``mutants`` (fnmatch patterns) limits the run and
    the count to the mutants they match; ``max_children`` caps mutmut's parallel test processes.
    """
    module, tests = MODULES[name]
    copy = workdir / name
    shutil.copytree(ROOT / "labkit", copy / "labkit", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "tests", copy / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    for folder in _DATA:
        shutil.copytree(ROOT / folder, copy / folder)
    (copy / "pyproject.toml").write_text(_pyproject_for(module, tests), encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if key not in ("LABKIT_ROOT", "PYTHONPATH")}
    mutmut = [sys.executable, "-m", "mutmut"]
    children = [] if max_children is None else ["--max-children", str(max_children)]
    started = time.perf_counter()
    done = subprocess.run([*mutmut, "run", *children, *mutants], cwd=copy, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if verbose or done.returncode != 0:
        print(done.stdout[-4000:], done.stderr[-4000:], sep="\n")
    if done.returncode != 0:
        raise SystemExit(f"mutmut failed on {name} (exit {done.returncode}); output above")
    listing = subprocess.run(
        [*mutmut, "results", "--all", "true"], cwd=copy, env=env, capture_output=True, text=True, check=True
    )
    result = ModuleScore(name=name, seconds=seconds)
    for line in listing.stdout.splitlines():
        match = _STATUS.match(line)
        if not match:
            continue
        mutant, status = match["name"], match["status"].strip()
        if mutants and not any(fnmatch.fnmatchcase(mutant, pattern) for pattern in mutants):
            continue
        if status == "killed" or status == "timeout":
            result.killed.append(mutant)
        elif status in _SURVIVED and mutant in equivalents:
            result.equivalent.append(mutant)
        elif status in _SURVIVED:
            result.survived.append(mutant)
        else:
            result.other[mutant] = status
    for mutant in result.survived:
        diff = subprocess.run([*mutmut, "show", mutant], cwd=copy, env=env, capture_output=True, text=True)
        changed = [line for line in diff.stdout.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
        print(f"  survived {mutant}: " + " | ".join(changed))
        if show:
            print(diff.stdout.rstrip() + "\n")
    return result


def print_table(scores: list[ModuleScore]) -> None:
    """Print killed / survived / equivalent per module and in total, with the score and the seconds taken."""
    header = f"{'module':<24}{'mutants':>8}{'killed':>8}{'survived':>9}{'equiv.':>8}{'other':>7}{'score':>8}{'time':>8}"
    print(header)
    print("-" * len(header))
    totals = ModuleScore(name="total", seconds=0.0)
    for score in scores:
        count = len(score.killed) + len(score.survived) + len(score.equivalent) + len(score.other)
        print(
            f"{score.name:<24}{count:>8}{len(score.killed):>8}{len(score.survived):>9}{len(score.equivalent):>8}"
            f"{len(score.other):>7}{score.score:>8.1%}{score.seconds:>7.0f}s"
        )
        totals.killed += score.killed
        totals.survived += score.survived
        totals.equivalent += score.equivalent
        totals.other.update(score.other)
        totals.seconds += score.seconds
    count = len(totals.killed) + len(totals.survived) + len(totals.equivalent) + len(totals.other)
    print("-" * len(header))
    print(
        f"{'total':<24}{count:>8}{len(totals.killed):>8}{len(totals.survived):>9}{len(totals.equivalent):>8}"
        f"{len(totals.other):>7}{totals.score:>8.1%}{totals.seconds:>7.0f}s"
    )
    for mutant, status in sorted(totals.other.items()):
        print(f"  not judged {mutant}: {status}")


def main(argv: list[str] | None = None) -> int:
    """Run the chosen modules (all by default), print the table, return 0 when each reaches the target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", help="short module names (default: all); see --list")
    parser.add_argument("--list", action="store_true", help="print the module names and their tests")
    parser.add_argument("--verbose", action="store_true", help="print mutmut's own output")
    parser.add_argument("--show", action="store_true", help="print each survivor's full diff (mutmut show)")
    parser.add_argument(
        "--mutants",
        nargs="+",
        default=(),
        metavar="PATTERN",
        help="run and count only the mutants matching these fnmatch patterns, e.g. '*bm25_rerank*'",
    )
    parser.add_argument(
        "--max-children",
        type=int,
        metavar="N",
        help="at most N parallel test processes (mutmut's default: one per CPU)",
    )
    args = parser.parse_args(argv)
    if args.max_children is not None and args.max_children < 1:
        parser.error("--max-children must be 1 or more")
    if args.list:
        for name, (module, tests) in MODULES.items():
            print(f"{name:<24}{module}  <- {' '.join(tests)}")
        return 0
    unknown = [name for name in args.modules if name not in MODULES]
    if unknown:
        parser.error(f"unknown module(s) {', '.join(unknown)}; choose from {', '.join(MODULES)}")
    equivalents = load_equivalents()
    scores = []
    with tempfile.TemporaryDirectory(prefix="labkit-mutation-") as folder:
        for name in args.modules or list(MODULES):
            print(f"{name}: mutating {MODULES[name][0]}", flush=True)
            score = run_module(
                name,
                equivalents=equivalents,
                workdir=Path(folder),
                verbose=args.verbose,
                show=args.show,
                mutants=tuple(args.mutants),
                max_children=args.max_children,
            )
            scores.append(score)
    print_table(scores)
    return 0 if all(score.score >= TARGET for score in scores) else 1


if __name__ == "__main__":
    sys.exit(main())
