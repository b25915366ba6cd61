"""The README and the pages under docs/ stay true: links resolve, and every command, flag,
module and setting they name exists in the code."""

import argparse
import importlib.util
import re
import shlex
from pathlib import Path

import pytest

from labkit.cli import build_parser
from labkit.paths import project_root

ROOT = project_root()
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _page_id(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = page.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    return {_slug(m) for m in re.findall(r"^#+ (.+)$", text, flags=re.MULTILINE)}


def _links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    return re.findall(r"\]\(([^)\s]+)\)", text)


def _code(page: Path) -> list[str]:
    """Every command line on the page: lines of fenced blocks and inline code spans."""
    text = page.read_text(encoding="utf-8")
    lines = []
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.DOTALL):
        lines += [line.split(" #")[0] for line in block.splitlines()]
    outside = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    return lines + re.findall(r"`([^`\n]+)`", outside)


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {flag for action in parser._actions for flag in action.option_strings}


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_every_relative_link_and_anchor_resolves(page):
    for link in _links(page):
        if re.match(r"^[a-z]+:", link):
            continue
        target, _, anchor = link.partition("#")
        path = (page.parent / target).resolve() if target else page
        assert path.exists(), f"{_page_id(page)}: link {link} points at a file that does not exist"
        if anchor and path.suffix == ".md":
            assert anchor in _anchors(path), f"{_page_id(page)}: link {link}: no heading with that anchor"


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_every_labkit_command_and_flag_named_exists(page):
    verbs = _subparsers(build_parser())
    for line in _code(page):
        for match in re.finditer(r"(?:^|[\s/\\])labkit ([a-z][a-z-]*)((?: [^|;&]*)?)", line):
            verb, rest = match.group(1), match.group(2)
            assert verb in verbs, f"{_page_id(page)}: `labkit {verb}` is not a labkit verb ({', '.join(verbs)})"
            parser = verbs[verb]
            try:
                words = shlex.split(rest.replace("\\|", "|"))
            except ValueError:
                words = rest.split()
            nested = _subparsers(parser)
            if nested and words and words[0] in nested:
                parser = nested[words[0]]
            for word in words:
                flag = word.strip("[]").split("=")[0]
                if flag.startswith("--"):
                    assert flag in _options(parser), f"{_page_id(page)}: `labkit {verb}` has no option {flag}"


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_every_module_run_with_python_m_exists(page):
    for line in _code(page):
        for module in re.findall(r"python3? -m (labkit[\w.]*)", line):
            assert importlib.util.find_spec(module) is not None, f"{_page_id(page)}: no module {module}"


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_every_course_py_command_exists(page):
    import course

    for line in _code(page):
        for command in re.findall(r"course\.py ([a-z]+)", line):
            assert command in course.COMMANDS, f"{_page_id(page)}: `course.py {command}` is not a command"


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_every_labkit_setting_named_is_read_by_the_code(page):
    sources = [
        *ROOT.joinpath("labkit").rglob("*.py"),
        *ROOT.joinpath("tests").glob("*.py"),
        ROOT / "course.py",
        ROOT / ".ci" / "run",
    ]
    code = "\n".join(p.read_text(encoding="utf-8") for p in sources)
    for name in set(re.findall(r"\bLABKIT_[A-Z_]+\b", page.read_text(encoding="utf-8"))):
        assert f'"{name}"' in code or f"'{name}'" in code or f"${name}" in code or f"{{{name}" in code, (
            f"{_page_id(page)} names {name}, which no code reads"
        )


def test_the_readme_links_every_page_under_docs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for page in PAGES[1:]:
        assert f"](docs/{page.name})" in readme, f"the README does not link docs/{page.name}"


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_every_labkit_mode_named_is_a_mode(page):
    from labkit.boundary import MODES

    for mode in re.findall(r"LABKIT_MODE=([a-z]+)", page.read_text(encoding="utf-8")):
        assert mode in MODES, f"{_page_id(page)} names LABKIT_MODE={mode}, not one of {MODES}"


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_every_extra_named_in_an_install_command_exists(page):
    import tomllib

    extras = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    )
    for line in _code(page):
        for named in re.findall(r"\.\[([a-z,-]+)\]|--extras ([a-z,-]+)", line):
            for extra in ",".join(named).split(","):
                assert not extra or extra in extras, f"{_page_id(page)}: no extra {extra!r} in pyproject.toml"
