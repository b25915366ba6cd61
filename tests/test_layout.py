"""The package's layout: the foundation at the top level, one package per lesson, course tooling apart.

Imports point down only: ``cli`` -> ``course`` -> lessons -> foundation. A lesson
never imports another lesson, the course tooling or the command line; the
foundation imports none of them. ``labkit/__init__.py`` is the public facade
(its names load lazily from every layer) and is not part of any layer. No two
modules import each other, directly or through others, even lazily inside a
function: what both need moves below them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import labkit

PACKAGE = Path(labkit.__file__).parent
LESSONS = {"evaluator": "01", "rag": "02", "agent": "04", "system": "05", "routing": "06"}
RANK = {"foundation": 0, "lesson": 1, "course": 2, "cli": 3}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer(module: str) -> tuple[str, str]:
    """Return (layer, group) of a ``labkit...`` module name; group tells lesson packages apart."""
    parts = module.split(".")
    head = parts[1] if len(parts) > 1 else ""
    if head in ("cli", "__main__"):
        return "cli", "cli"
    if head == "course":
        return "course", "course"
    if head in LESSONS:
        return "lesson", head
    return "foundation", "foundation"


def labkit_imports(path: Path, *, names: bool = False) -> list[tuple[int, str]]:
    """Every ``labkit`` module that a file imports, at any depth (lazy imports inside functions too).

    ``names=True`` gives ``from labkit.rag import questions`` as ``labkit.rag.questions`` (a name imported
    from a package may be a module; `imported_modules` resolves each to a file).
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names if alias.name.split(".")[0] == "labkit"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base.split(".")[0] != "labkit":
                continue
            # `from labkit import rag` names a module; `from labkit.rag.trace import Reply` names a value.
            found += [
                (node.lineno, f"{base}.{alias.name}" if base == "labkit" or names else base) for alias in node.names
            ]
    return found


def upward_imports() -> list[str]:
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = module_name(path)
        if source == "labkit":
            continue
        source_layer, source_group = layer(source)
        for lineno, target in labkit_imports(path):
            target_layer, target_group = layer(target)
            where = f"{path.relative_to(PACKAGE.parent)}:{lineno} ({source_layer}) imports {target} ({target_layer})"
            if RANK[target_layer] > RANK[source_layer]:
                problems.append(where)
            elif source_layer == target_layer == "lesson" and source_group != target_group:
                problems.append(where + ": one lesson imports another")
    return problems


def imported_modules(path: Path, modules: set[str]) -> set[str]:
    """The ``labkit`` modules a file imports, each resolved to a module file (a name imported from one is its module)."""
    found = set()
    for _, target in labkit_imports(path, names=True):
        while target not in modules and "." in target:
            target = target.rsplit(".", 1)[0]
        if target in modules:
            found.add(target)
    return found


def import_cycle() -> list[str]:
    """A ring of labkit modules that import each other, directly or through others (the facade left out), or []."""
    from graphlib import CycleError, TopologicalSorter

    paths = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph = {
        module: imported_modules(path, set(paths)) - {module, "labkit"}
        for module, path in paths.items()
        if module != "labkit"
    }
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as cycle:
        return list(cycle.args[1])
    return []


def test_no_modules_import_each_other():
    assert import_cycle() == []


def test_the_checker_sees_an_import_cycle_even_a_lazy_one(tmp_path, monkeypatch):
    fake = tmp_path / "labkit"
    (fake / "rag").mkdir(parents=True)
    (fake / "__init__.py").write_text("from labkit.rag import filings\n")  # the facade is no part of a ring
    (fake / "rag" / "__init__.py").write_text("")
    (fake / "rag" / "filings.py").write_text("def main():\n    from labkit.rag.questions import write_questions\n")
    (fake / "rag" / "questions.py").write_text("from labkit.rag.names import money\n")
    (fake / "rag" / "names.py").write_text("from . import filings\n")
    (fake / "rag" / "index.py").write_text("from labkit.rag import questions\nfrom labkit.rag.index import x\n")
    monkeypatch.setitem(globals(), "PACKAGE", fake)
    ring = import_cycle()
    assert ring[0] == ring[-1] and sorted(ring[1:]) == [
        "labkit.rag.filings",
        "labkit.rag.names",
        "labkit.rag.questions",
    ]


def test_no_import_points_upward_or_across_lessons():
    assert upward_imports() == []


def test_the_checker_sees_an_upward_import(tmp_path, monkeypatch):
    fake = tmp_path / "labkit"
    (fake / "rag").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "rag" / "__init__.py").write_text("")
    (fake / "replay.py").write_text("def f():\n    from labkit.course.runner import execute\n")
    (fake / "rag" / "answer.py").write_text("from ..agent import tools\nfrom labkit import cli\n")
    monkeypatch.setitem(globals(), "PACKAGE", fake)
    assert upward_imports() == [
        "labkit/rag/answer.py:1 (lesson) imports labkit.agent (lesson): one lesson imports another",
        "labkit/rag/answer.py:2 (lesson) imports labkit.cli (cli)",
        "labkit/replay.py:2 (foundation) imports labkit.course.runner (course)",
    ]


@pytest.mark.parametrize(
    "gone",
    [
        "rag_trace",
        "routing_suite",
        "routing_capture",
        "runner",
        "doctor",
        "workshop",
        "variants",
        "lessons",
        "pytest_plugin",
    ],
)
def test_no_top_level_module_is_named_after_a_lesson_or_a_tool(gone):
    assert not (PACKAGE / f"{gone}.py").exists()


def test_every_lesson_is_one_package():
    for name in LESSONS:
        assert (PACKAGE / name / "__init__.py").is_file()
        assert not (PACKAGE / f"{name}.py").exists()
