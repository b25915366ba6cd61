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
    return page.relative_to(ROOT).as_posix() if page.is_relative_to(ROOT) else page.name


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


def _words(page: str) -> str:
    return " ".join((ROOT / "docs" / page).read_text(encoding="utf-8").split())


def test_the_recording_page_states_the_timeouts_deadline_attempts_and_limits_the_code_uses():
    from labkit.boundary import CONNECT_TIMEOUT_S, MAX_RETRIES, READ_TIMEOUT_S, REQUEST_DEADLINE_S
    from labkit.capture import MAX_REPLY_BYTES
    from labkit.recording import MAX_RUN_BYTES

    page = _words("recording.md")
    assert (
        f"waits {CONNECT_TIMEOUT_S:g} s to connect and {READ_TIMEOUT_S:g} s for each read of the reply, and each "
        f"attempt has a deadline of {REQUEST_DEADLINE_S:g} s in all"
    ) in page
    assert f"; {['one', 'two', 'three', 'four'][MAX_RETRIES]} attempts." in page
    assert f"One reply may be {MAX_REPLY_BYTES:,} bytes and a run {MAX_RUN_BYTES:,} bytes." in page
    for setting in ("LABKIT_CONNECT_TIMEOUT", "LABKIT_READ_TIMEOUT", "LABKIT_REQUEST_DEADLINE"):
        assert f"`{setting}`" in page


def test_the_recording_page_names_every_token_format_labkits_plugins_add():
    from labkit.secret_plugins import OWN_PLUGINS

    page = _words("recording.md")
    prefixes = {"sk-": "`sk-`", "hf_": "`hf_`", "AIza": "`AIza`", "github_pat_": "`github_pat_`", "npm_": "`npm_`"}
    patterns = " ".join(p.pattern for cls in OWN_PLUGINS for p in cls.denylist)
    for prefix, shown in prefixes.items():
        assert prefix in patterns and shown in page
    assert "`http://user:***@host/v1`" in page


def test_the_instructors_page_states_the_cell_timeout_of_a_check():
    from labkit.course.workshop import EXERCISE_CELL_TIMEOUT_S

    assert f"A cell may run {EXERCISE_CELL_TIMEOUT_S} s (`labkit workshop check --cell-timeout SECONDS`" in _words(
        "instructors.md"
    )


def test_the_signers_table_in_recording_md_lists_exactly_the_keys_in_allowed_signers():
    from labkit.signing import read_allowed_signers

    text = (ROOT / "docs" / "recording.md").read_text(encoding="utf-8")
    table = re.findall(r"^\| `([^`]+)` \| `(SHA256:[A-Za-z0-9+/]+)` \|$", text, flags=re.MULTILINE)
    listed = [(signer.principals, signer.fingerprint) for signer in read_allowed_signers(ROOT / "recorded_runs")]
    assert table == listed, "docs/recording.md's table of signers differs from recorded_runs/allowed_signers"


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_every_signature_namespace_named_is_the_one_labkit_checks(page):
    from labkit.signing import NAMESPACE

    for line in _code(page):
        if "ssh-keygen -Y" in line and " -f " in line:  # a command, not the tool named in prose
            assert f"-n {NAMESPACE}" in line, f"{_page_id(page)}: `{line}` signs or checks outside {NAMESPACE}"
    text = page.read_text(encoding="utf-8")
    for named in re.findall(r'namespaces=\\?`?"([^"`\\]+)', text):
        assert named == NAMESPACE, f"{_page_id(page)}: namespaces={named!r}, but runs are signed in {NAMESPACE!r}"


def _one_line(command: str) -> str:
    return " ".join(command.split())


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_every_venv_command_is_also_given_in_its_windows_form(page):
    """A `.venv/bin/X ...` command on a page appears there as `.venv\\Scripts\\X ...` too, with the same arguments.

    A page about something that runs on POSIX systems only says so, and why, in a ``<!-- posix-only: ... -->`` line.
    """
    if _posix_only(page):
        return
    code = _code(page)
    windows = [_one_line(line.replace(".venv\\Scripts\\", ".venv/bin/")) for line in code if ".venv\\Scripts\\" in line]
    for line in code:
        for command in re.findall(r"\.venv/bin/\S.*", line):
            wanted = command.strip().replace(".venv/bin/", ".venv\\Scripts\\")
            assert any(_one_line(command) in form for form in windows), (
                f"{_page_id(page)}: `{command.strip()}` has no Windows form (`{wanted}`)"
            )


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_every_variable_a_page_exports_is_also_set_the_powershell_way(page):
    if _posix_only(page):
        return
    text = page.read_text(encoding="utf-8")
    for line in _code(page):
        if re.match(r"\s*export ", line):
            for name in re.findall(r"\b([A-Z][A-Z0-9_]*)=", line):
                assert f"$env:{name} = " in text, f'{_page_id(page)}: no PowerShell form $env:{name} = "..."'


def _posix_only(page: Path) -> bool:
    return re.search(r"<!-- posix-only: \S.*-->", page.read_text(encoding="utf-8")) is not None


def test_a_page_without_the_windows_form_of_a_command_is_caught(tmp_path):
    """The two rules above can fail: a page with only the POSIX forms is refused by each."""
    page = tmp_path / "page.md"
    page.write_text("```bash\n.venv/bin/labkit doctor\nexport LABKIT_MODE=live\n```\n", encoding="utf-8")
    with pytest.raises(AssertionError, match="has no Windows form"):
        test_every_venv_command_is_also_given_in_its_windows_form(page)
    with pytest.raises(AssertionError, match="no PowerShell form"):
        test_every_variable_a_page_exports_is_also_set_the_powershell_way(page)


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


def _workshop_path(page: Path) -> dict[str, list[list[str]]]:
    """The instructors page's path table: notebook -> its three columns, each a list of section names."""
    text = page.read_text(encoding="utf-8").split("## A path through each notebook", 1)[1]
    rows = {}
    for line in text.splitlines():
        if line.startswith("| `") and line.count("|") == 5:
            name, *columns = [cell.strip() for cell in line.strip("|").split("|")]
            rows[name.strip("`")] = [re.findall(r"`([^`]+)`", column) for column in columns]
    return rows


def _sections(notebook: Path) -> list[str]:
    """A notebook's `##` headings without code formatting, less the closing ones every notebook has."""
    import json

    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    headings = [h.replace("`", "").strip() for h in re.findall(r"^## (.+)$", text, flags=re.MULTILINE)]
    return [h for h in headings if not h.startswith(("Try your own", "Recap", "Next"))]


def test_the_workshop_path_places_every_section_of_every_notebook_exactly_once():
    from labkit.course.runner import course_notebooks

    path = _workshop_path(ROOT / "docs" / "instructors.md")
    notebooks = {nb.name: nb for nb in course_notebooks()}
    assert set(path) == set(notebooks), "one row per notebook"
    for name, columns in path.items():
        placed = [section for column in columns for section in column]
        assert columns[0], f"{name}: some section is taught live"
        assert sorted(placed) == sorted(_sections(notebooks[name])), f"{name}: each section once, none invented"


def test_a_workshop_path_naming_a_section_the_notebook_lacks_is_caught(tmp_path):
    page = tmp_path / "instructors.md"
    page.write_text(
        "## A path through each notebook\n\n| notebook | live | reading | optional |\n|---|---|---|---|\n"
        "| `03_bound_replay.ipynb` | `1. Replay by order` | `a section nobody wrote` | `x` |\n",
        encoding="utf-8",
    )
    from labkit.course.runner import course_notebooks

    columns = _workshop_path(page)["03_bound_replay.ipynb"]
    notebook = next(nb for nb in course_notebooks() if nb.name == "03_bound_replay.ipynb")
    assert sorted(s for c in columns for s in c) != sorted(_sections(notebook))
