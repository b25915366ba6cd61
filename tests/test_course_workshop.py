import ast
import contextlib
import re
import shutil
import subprocess
import tomllib

import nbformat
import pytest
from nbclient.exceptions import CellExecutionError
from nbval.plugin import find_comment_markers, find_metadata_tags

from labkit.cli import main
from labkit.course.runner import course_notebooks, execute, read_notebook
from labkit.course.workshop import (
    RAISES_EXCEPTION,
    ExerciseIncomplete,
    ExportInsideClone,
    ListingNotHidden,
    SolutionWithoutStub,
    WorkshopExportRefused,
    attempts_copy,
    check_attempts,
    check_exercises,
    exercise_attempts,
    exercise_result,
    export_workshop,
    find_exercises,
    hide_listings,
    student_copy,
)
from labkit.paths import project_root

STUB = 'def double(x):\n    """Return twice x."""\n    raise NotImplementedError("hint: multiply by two")\n'


def _code(source, *tags, stub=None, outputs=()):
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["tags"] = list(tags)
    if stub is not None:
        cell.metadata["labkit"] = {"stub": stub}
    cell.outputs = [nbformat.v4.new_output("stream", text=t) for t in outputs]
    return cell


def _task(text, slug, *, hide=None):
    cell = nbformat.v4.new_markdown_cell(text)
    cell.metadata["tags"] = ["exercise", f"ex:{slug}"]
    if hide is not None:
        cell.metadata["labkit"] = {"hide_listings": hide}
    return cell


def _exercise(slug, solution, check, *, stub=STUB, hide=None):
    return [
        _task(f"Write `double` ({slug}).", slug, hide=hide),
        _code(solution, "solution", f"ex:{slug}", stub=stub, outputs=["defined\n"]),
        _code(check, "check", f"ex:{slug}"),
    ]


def _notebook(*cells, path=None):
    nb = nbformat.v4.new_notebook()
    nb.cells = list(cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    if path is not None:
        nbformat.write(nb, path)
    return nb


CHECK = "assert double(21) == 42, 'double(21) should be 42'\nprint('ex:{slug} passed')"


def test_student_copy_swaps_each_solution_for_its_stub_and_clears_outputs():
    nb = _notebook(_code("x = 1", outputs=["1\n"]), *_exercise("double", "def double(x):\n    return 2 * x", "pass"))
    copy = student_copy(nb)
    assert [c.source for c in copy.cells if c.cell_type == "code"] == ["x = 1", STUB, "pass"]
    assert all(c.outputs == [] and c.execution_count is None for c in copy.cells if c.cell_type == "code")
    assert nb.cells[2].source.startswith("def double(x):\n    return")  # the original is untouched


def test_student_copy_drops_the_recorded_attempts_whose_reasons_would_hint_at_the_answer():
    nb = _notebook(*_exercise("double", "def double(x):\n    return 2 * x", "pass"))
    wrong = {"kind": "wrong", "why": "adds instead of multiplying", "code": "def double(x):\n    return x + 1"}
    nb.cells[1].metadata["labkit"]["attempts"] = [wrong]
    solution = student_copy(nb).cells[1]
    assert "attempts" not in solution.metadata["labkit"] and solution.metadata["labkit"]["stub"] == STUB
    assert nb.cells[1].metadata["labkit"]["attempts"] == [wrong]  # the instructor's copy keeps them


@pytest.mark.parametrize(
    ("stub", "complaint"),
    [
        (None, "has no stub"),
        ("def double(x):\n    return 0\n", "must raise NotImplementedError"),
        ("def (:\n    raise NotImplementedError", "not valid"),
    ],
)
def test_a_solution_without_a_usable_stub_is_refused_naming_the_cell(stub, complaint):
    nb = _notebook(_code("x = 1"), *_exercise("double", "def double(x):\n    return 2 * x", "pass", stub=stub))
    with pytest.raises(SolutionWithoutStub, match=complaint) as refused:
        student_copy(nb, name="07_demo.ipynb")
    assert "07_demo.ipynb cell 2 ('def double(x):')" in str(refused.value)


def test_export_refuses_before_writing_anything_when_a_stub_is_missing(tmp_path):
    source = tmp_path / "07_demo.ipynb"
    _notebook(*_exercise("double", "def double(x):\n    return 2 * x", "pass", stub=None), path=source)
    with pytest.raises(SolutionWithoutStub):
        export_workshop(tmp_path / "room", [source])
    assert not (tmp_path / "room").exists()


def test_export_writes_every_notebook_and_never_overwrites(tmp_path):
    source = tmp_path / "05_demo.ipynb"
    _notebook(*_exercise("double", "def double(x):\n    return 2 * x", "pass"), path=source)
    written = export_workshop(tmp_path / "room", [source])
    assert [p.name for p in written] == ["05_demo.ipynb"]
    assert nbformat.read(written[0], as_version=4).cells[1].source == STUB
    with pytest.raises(WorkshopExportRefused, match="never overwrites"):
        export_workshop(tmp_path / "room", [source])


@pytest.mark.parametrize(
    ("cells", "complaint"),
    [
        (lambda: _exercise("a", "pass", "pass")[:2], "has no check cell"),
        (lambda: [_code("pass", "check")], "exactly one 'ex:<slug>' tag"),
        (lambda: [_code("pass", "exercise", "ex:a")], "is a code cell; make it a markdown cell"),
        (lambda: [*_exercise("a", "pass", "pass"), _code("pass", "check", "ex:a")], "already has a 'check' cell"),
        (lambda: list(reversed(_exercise("a", "pass", "pass"))), "in that order"),
    ],
)
def test_incomplete_exercises_are_refused(cells, complaint):
    with pytest.raises(ExerciseIncomplete, match=re.escape(complaint)):
        find_exercises(_notebook(*cells()))


def test_checker_reports_passed_not_finished_and_failed_and_names_the_unfinished(tmp_path, capsys):
    wrong = "def double(x):\n    return x + 2"
    path = tmp_path / "learner.ipynb"
    _notebook(
        *_exercise("done", "def double(x):\n    return 2 * x", CHECK.format(slug="done")),
        *_exercise("todo", STUB, CHECK.format(slug="todo")),
        *_exercise("wrong", wrong, CHECK.format(slug="wrong")),
        *_exercise("silent", "def double(x):\n    return 2 * x", "assert double(1) == 2"),
        path=path,
    )
    assert main(["workshop", "check", str(path)]) == 1
    out = capsys.readouterr().out
    assert re.search(r"ex:done +passed\n", out)
    assert re.search(r"ex:todo +not finished: NotImplementedError: hint: multiply by two\n", out)
    assert re.search(r"ex:wrong +failed: AssertionError: double\(21\) should be 42\n", out)
    assert re.search(r"ex:silent +failed: the check did not print 'ex:silent passed'\n", out)
    assert "1 of 4 exercises in learner.ipynb pass" in out
    assert "not finished: todo\n" in out and "failed: wrong, silent" in out


def test_a_cell_that_loops_forever_is_stopped_at_the_cell_timeout_and_named(tmp_path, capsys):
    path = tmp_path / "learner.ipynb"
    _notebook(
        *_exercise("done", "def double(x):\n    return 2 * x", CHECK.format(slug="done")),
        *_exercise("loops", "while True:\n    pass", CHECK.format(slug="loops")),
        *_exercise("later", "def double(x):\n    return 2 * x", CHECK.format(slug="later")),
        path=path,
    )
    assert main(["workshop", "check", str(path), "--cell-timeout", "2"]) == 1
    out = capsys.readouterr().out
    assert re.search(r"ex:done +passed\n", out)
    assert re.search(
        r"ex:loops +failed: its solution cell \(cell 4\) ran past the 2 s limit for one cell and was stopped; "
        r"look for a loop that never ends, or give a slow cell more time with --cell-timeout\n",
        out,
    )
    assert re.search(
        r"ex:later +not run: the notebook stopped at cell 4 \(ex:loops's solution cell\), which ran past the 2 s "
        r"limit for one cell and was stopped\n",
        out,
    )
    assert "1 of 3 exercises in learner.ipynb pass" in out and "not run: later" in out


def test_the_cell_timeout_of_a_check_defaults_to_a_minute_and_must_be_a_positive_whole_number(tmp_path, capsys):
    import inspect

    from labkit.course.workshop import EXERCISE_CELL_TIMEOUT_S

    assert EXERCISE_CELL_TIMEOUT_S == 60
    assert inspect.signature(check_exercises).parameters["cell_timeout"].default == 60
    for bad in ("0", "1.5", "soon"):
        with pytest.raises(SystemExit):
            main(["workshop", "check", str(tmp_path / "x.ipynb"), "--cell-timeout", bad])
        assert "is not a whole number of seconds, 1 or more" in capsys.readouterr().err


def test_export_command_writes_the_course_notebooks(tmp_path, capsys):
    assert main(["workshop", "export", str(tmp_path / "copies")]) == 0
    assert {p.name for p in course_notebooks()} == {p.name for p in (tmp_path / "copies").iterdir()}


def test_export_without_a_folder_writes_to_scratch_student_and_says_where(scratch_in_tmp, capsys):
    assert main(["workshop", "export"]) == 0
    assert {p.name for p in course_notebooks()} == {p.name for p in (scratch_in_tmp / "student").iterdir()}
    out = capsys.readouterr().out
    assert f"into {(scratch_in_tmp / 'student').as_posix()}/" in out and "course.py lab" in out


# --- Run All in a student copy -------------------------------------------------------------------------

LATER = "print('the lesson goes on')"


def _run_as_jupyterlab_does(nb, folder):
    """Execute like Restart and Run All: stop at the first error, except in a cell tagged raises-exception.

    Return how many code cells ran; an error that stopped the run is left in its cell's outputs.
    """
    with contextlib.suppress(CellExecutionError):
        execute(nb, folder)
    return sum(c.execution_count is not None for c in nb.cells if c.cell_type == "code")


def test_student_copy_tags_each_check_raises_exception_and_nothing_else():
    nb = _notebook(_code("x = 1"), *_exercise("double", "def double(x):\n    return 2 * x", "pass"), _code(LATER))
    tags = [c.metadata.get("tags", []) for c in student_copy(nb).cells]
    assert tags == [
        [],
        ["exercise", "ex:double"],
        ["solution", "ex:double"],
        ["check", "ex:double", RAISES_EXCEPTION],
        [],
    ]
    assert RAISES_EXCEPTION not in nb.cells[3].metadata["tags"]  # the instructor's notebook keeps failing loudly


def test_run_all_goes_past_an_unfinished_and_a_wrong_exercise_and_the_checker_still_tells_them_apart(tmp_path):
    nb = _notebook(
        *_exercise("todo", "def double(x):\n    return 2 * x", CHECK.format(slug="todo")),
        _code(LATER),
        *_exercise("done", "def double(x):\n    return 2 * x", CHECK.format(slug="done")),
        _code(LATER),
    )
    copy = student_copy(nb)
    copy.cells[5].source = "def double(x):\n    return x + 2"  # the learner's wrong answer to the second exercise
    path = tmp_path / "learner.ipynb"
    nbformat.write(copy, path)
    ran = _run_as_jupyterlab_does(copy, tmp_path)
    assert ran == 6, f"Run All stopped after {ran} of 6 code cells"
    assert "the lesson goes on" in "".join(o.get("text", "") for o in copy.cells[7].outputs)
    verdicts = {r.slug: (r.status, r.message) for r in check_exercises(path)}
    assert verdicts == {
        "todo": ("not finished", "NotImplementedError: hint: multiply by two"),
        "done": ("failed", "AssertionError: double(21) should be 42"),
    }


# --- listings an exercise asks the learner to write ----------------------------------------------------

SHOWN = "from labkit.listing import show_source\nfrom labkit.paths import project_root\n\n"


def test_a_hidden_listing_is_shown_to_the_instructor_and_not_to_the_student_whose_check_fails(tmp_path):
    """nbgrader's `validate --invert`: the instructor's notebook passes every check, the student copy none."""
    check = "from labkit.listing import show_source\nassert double(2) == 4\nprint('ex:double passed')"
    instructor = _notebook(
        _code(SHOWN + 'display(show_source(project_root, note="the function the exercise asks for"))'),
        _code("print('not hidden')"),
        *_exercise("double", "def double(x):\n    return 2 * x", check, hide=["project_root"]),
    )
    nbformat.write(instructor, tmp_path / "instructor.ipynb")
    (student,) = export_workshop(tmp_path / "room", [tmp_path / "instructor.ipynb"])
    assert "show_source(project_root" not in nbformat.read(student, as_version=4).cells[0].source
    assert [r.status for r in check_exercises(tmp_path / "instructor.ipynb")] == ["passed"]
    assert [r.status for r in check_exercises(student)] == ["not finished"]
    executed = read_notebook(student)
    _run_as_jupyterlab_does(executed, tmp_path)
    said = "".join(o.get("text", "") for o in executed.cells[0].outputs)
    assert said == "The listing of project_root is hidden in this copy: it would give away exercise ex:double.\n"
    assert not any("data" in o for o in executed.cells[0].outputs)  # no listing displayed


@pytest.mark.parametrize(
    "cell",
    [
        "show_source(project_root)",
        "show_source(\n    project_root,\n    note='a note',\n)",
        "display(\n    show_source(project_root, note='x')\n)",
        "listing.show_source(project_root)",
    ],
)
def test_each_way_a_notebook_shows_a_listing_is_hidden_and_the_rest_of_the_cell_kept(cell):
    source = f"import os\n{cell}\nshow_source(os.getcwd)\n"
    hidden, found = hide_listings(source, {"project_root": "double"})
    assert found == {"project_root"}
    calls = [ast.unparse(n.args[0]) for n in ast.walk(ast.parse(hidden)) if isinstance(n, ast.Call) and n.args]
    assert "project_root" not in calls and "os.getcwd" in calls and hidden.startswith("import os\nprint(")
    assert hidden.endswith("\nshow_source(os.getcwd)\n")


@pytest.mark.parametrize(
    ("cells", "complaint"),
    [
        (lambda: [_code(SHOWN + "listing = show_source(project_root)")], "part of a larger statement"),
        (lambda: [_code(SHOWN + "x = 1; show_source(project_root)")], "part of a larger statement"),
        (lambda: [_code(SHOWN + "print(show_source(project_root))")], "part of a larger statement"),
        (lambda: [_code("show_source(project_route)")], "no code cell shows it with show_source(project_root, ...)"),
    ],
)
def test_a_listing_that_cannot_be_hidden_is_refused_before_anything_is_written(cells, complaint, tmp_path):
    source = tmp_path / "07_demo.ipynb"
    _notebook(
        *cells(), *_exercise("double", "def double(x):\n    return 2 * x", "pass", hide=["project_root"]), path=source
    )
    with pytest.raises(ListingNotHidden, match=re.escape(complaint)):
        export_workshop(tmp_path / "room", [source])
    assert not (tmp_path / "room").exists()


def test_hide_listings_must_be_a_list_of_names():
    nb = _notebook(*_exercise("double", "def double(x):\n    return 2 * x", "pass", hide="project_root"))
    with pytest.raises(ExerciseIncomplete, match="must be a list of names"):
        find_exercises(nb)


# Which listings today's notebooks would hide (the exercises are rewritten later; these name listings they show).
COURSE_LISTINGS = {
    "01_product_evaluator.ipynb": {"what-tone-needs": ["route_criterion"]},
    "03_bound_replay.ipynb": {"binding-key": ["binding_key"]},
    "06_routing_gate.ipynb": {"release-rule": ["release_reasons"], "protected-rule": ["regressions"]},
}


@pytest.mark.parametrize("name", COURSE_LISTINGS)
def test_the_course_notebooks_listings_can_be_hidden_as_their_cells_show_them(name):
    nb = nbformat.read(project_root() / "notebooks" / name, as_version=4)
    for exercise in find_exercises(nb, name=name):
        if exercise.slug in COURSE_LISTINGS[name]:
            nb.cells[exercise.exercise].metadata["labkit"] = {"hide_listings": COURSE_LISTINGS[name][exercise.slug]}
    copy = student_copy(nb, name=name)
    hidden = {listing for listings in COURSE_LISTINGS[name].values() for listing in listings}
    for before, after in zip(nb.cells, copy.cells, strict=True):
        if before.cell_type != "code" or "solution" in before.metadata.get("tags", []):
            continue
        shown = {ast.unparse(n.args[0]) for n in ast.walk(ast.parse(after.source)) if _is_listing(n)}
        assert not shown & hidden
        if not {ast.unparse(n.args[0]) for n in ast.walk(ast.parse(before.source)) if _is_listing(n)} & hidden:
            assert after.source == before.source  # a cell that shows no hidden listing is left as it was


def _is_listing(node):
    return isinstance(node, ast.Call) and ast.unparse(node.func).endswith("show_source") and node.args


# --- where an export may go ----------------------------------------------------------------------------


@pytest.fixture
def clone(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed, so no folder can be committed by mistake")
    folder = tmp_path / "clone"
    subprocess.run(["git", "init", "--quiet", str(folder)], check=True)
    (folder / ".gitignore").write_text("scratch/\n", encoding="utf-8")
    return folder


@pytest.mark.parametrize("inside", [".", "copies", "notebooks/copies"])
def test_export_into_a_folder_git_would_commit_is_refused_and_writes_nothing(clone, inside, tmp_path):
    source = tmp_path / "05_demo.ipynb"
    _notebook(_code("pass"), path=source)
    with pytest.raises(ExportInsideClone, match=r"git does not ignore it.*scratch/student/.*outside the clone"):
        export_workshop(clone / inside, [source], clone=clone)
    assert sorted(p.name for p in clone.iterdir()) == [".git", ".gitignore"]


def test_export_into_an_ignored_folder_of_the_clone_or_outside_it_is_written(clone, tmp_path):
    source = tmp_path / "05_demo.ipynb"
    _notebook(_code("pass"), path=source)
    assert export_workshop(clone / "scratch" / "student", [source], clone=clone)
    assert export_workshop(tmp_path / "elsewhere", [source], clone=clone)
    assert export_workshop(clone / "notebooks", [source], clone=tmp_path / "not-a-clone")


def test_the_export_command_refuses_a_folder_inside_the_clone_in_one_line(clone, monkeypatch, capsys):
    monkeypatch.setenv("LABKIT_ROOT", str(clone))
    monkeypatch.chdir(clone)
    assert main(["workshop", "export", "copies"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "copies is inside the course's git clone" in err
    assert not (clone / "copies").exists()


# --- the course's own notebooks -----------------------------------------------------------------------


@pytest.mark.parametrize("notebook", course_notebooks(), ids=lambda p: p.stem)
def test_every_notebook_has_at_least_two_complete_exercises(notebook):
    exercises = find_exercises(nbformat.read(notebook, as_version=4), name=notebook.name)
    assert len(exercises) >= 2, f"{notebook.name} has {len(exercises)} exercises; the course asks for two or more"


# nbval's markers (a cell tag or a ``# NBVAL_...`` comment) that stop it comparing a cell's outputs, or accept its error.
NBVAL_OPT_OUTS = {("check", False), ("check_exception", True), ("skip", True)}


def _worked_solutions_as_strict_nbval_checks_them(notebook):
    """Return each exercise's result on its worked solution, read from the committed notebook's outputs.

    This suite runs every committed notebook under strict nbval (a fresh kernel, outputs compared), so a worked
    solution or check that stops passing fails there; executing the notebook here again would check the same
    outputs a second time. That holds only while nbval compares these cells: asserted here.
    """
    options = tomllib.loads((project_root() / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]
    options = options["ini_options"]
    assert "notebooks" in options["testpaths"] and "--nbval" in options["addopts"].split()
    assert "--nbval-lax" not in options["addopts"]
    nb = nbformat.read(notebook, as_version=4)
    exercises = find_exercises(nb, name=notebook.name)
    for exercise in exercises:
        for index in (exercise.solution, exercise.check):
            cell = nb.cells[index]
            opted_out = NBVAL_OPT_OUTS & {*find_comment_markers(cell.source), *find_metadata_tags(cell.metadata)}
            assert not opted_out, f"{notebook.name} cell {index} ({exercise.slug}) is tagged {opted_out}"
            assert cell.execution_count is not None, f"{notebook.name} cell {index} was never executed"
    return [exercise_result(nb, exercise) for exercise in exercises]


@pytest.mark.parametrize("notebook", course_notebooks(), ids=lambda p: p.stem)
def test_a_student_copy_runs_to_its_last_cell_and_fails_every_check_the_worked_solutions_pass(notebook, tmp_path):
    """Restart and Run All of the student copy, as JupyterLab does it, reaches every code cell; every check says
    "not finished" with a hint, while the instructor's notebook passes them all (nbgrader's `validate --invert`)."""
    (exported,) = export_workshop(tmp_path / "copies", [notebook])
    student = read_notebook(exported)
    ran = _run_as_jupyterlab_does(student, exported.parent)
    code = [i for i, c in enumerate(student.cells) if c.cell_type == "code"]
    stopped = next((i for i in code if student.cells[i].execution_count is None), None)
    assert ran == len(code), (
        f"{notebook.name}: Run All stopped before cell {stopped}: {ran} of {len(code)} code cells ran"
    )
    exercises = find_exercises(student, name=notebook.name)
    on_stubs = {e.slug: exercise_result(student, e) for e in exercises}
    on_solutions = {r.slug: r for r in _worked_solutions_as_strict_nbval_checks_them(notebook)}
    assert on_stubs.keys() == on_solutions.keys() and on_stubs
    for slug, result in on_solutions.items():
        assert result.status == "passed", f"{notebook.name} ex:{slug} fails on its worked solution: {result.message}"
    for slug, result in on_stubs.items():
        assert result.status == "not finished", (
            f"{notebook.name} ex:{slug} on its stub: {result.status} {result.message}"
        )
        assert "hint" in result.message, f"{notebook.name} ex:{slug}: the stub's NotImplementedError gives no hint"
    hidden = {listing for e in exercises for listing in e.hide_listings}
    shown = {
        ast.unparse(n.args[0]) for i in code for n in ast.walk(ast.parse(student.cells[i].source)) if _is_listing(n)
    }
    assert not hidden & shown, f"{notebook.name}: the student copy still shows {hidden & shown}"


def test_the_instructors_page_states_each_notebooks_exercise_count():
    page = (project_root() / "docs" / "instructors.md").read_text(encoding="utf-8")
    section = page[page.index("**Student copies and exercises.**") :]
    stated = dict(re.findall(r"^\| `(\d\d[a-z]?_\w+\.ipynb)` \| (\d+) \|", section, flags=re.MULTILINE))
    actual = {p.name: str(len(find_exercises(nbformat.read(p, as_version=4), name=p.name))) for p in course_notebooks()}
    assert stated == actual


def test_checking_a_missing_notebook_is_a_one_line_error(tmp_path, capsys):
    assert main(["workshop", "check", str(tmp_path / "nope.ipynb")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nope.ipynb: no such file" in err


def test_export_into_a_folder_that_cannot_be_made_is_a_one_line_error_and_writes_nothing(tmp_path, capsys):
    source = tmp_path / "05_demo.ipynb"
    _notebook(_code("pass"), path=source)
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    from labkit.paths import FolderNotWritable

    with pytest.raises(FolderNotWritable, match="cannot create the folder"):
        export_workshop(tmp_path / "a-file" / "room", [source])


def test_export_with_a_corrupt_notebook_writes_nothing(tmp_path):
    from labkit.course.runner import NotebookUnreadable

    good = tmp_path / "01_good.ipynb"
    _notebook(_code("pass"), path=good)
    (tmp_path / "02_bad.ipynb").write_text("{", encoding="utf-8")
    with pytest.raises(NotebookUnreadable):
        export_workshop(tmp_path / "room", [good, tmp_path / "02_bad.ipynb"])
    assert not (tmp_path / "room").exists()


# --- the answers a check must refuse: a plausible wrong answer and the most tempting shortcut ---------------


def _with_attempts(cells, *attempts):
    cells[1].metadata["labkit"]["attempts"] = [{"kind": k, "why": w, "code": c} for k, w, c in attempts]
    return cells


WRONG = ("wrong", "adds instead of multiplying", "def double(x):\n    return x + 2")
SHORTCUT = ("shortcut", "answers the one input the task showed", "def double(x):\n    return 42")


def test_a_check_that_refuses_each_attempt_reports_each_as_failed(tmp_path):
    path = tmp_path / "01_demo.ipynb"
    solution = "def double(x):\n    return 2 * x"
    check = "assert double(21) == 42 and double(5) == 10, 'double is wrong'\nprint('ex:double passed')"
    _notebook(
        *_with_attempts(_exercise("double", solution, check), WRONG, SHORTCUT), _code("print(double(3))"), path=path
    )
    results = check_attempts(path)
    assert [(r.attempt.kind, r.status) for r in results] == [("wrong", "failed"), ("shortcut", "failed")]
    assert "double is wrong" in results[0].message


def test_a_check_too_weak_for_the_shortcut_is_reported_as_letting_it_pass(tmp_path):
    path = tmp_path / "01_demo.ipynb"
    weak = "assert double(21) == 42, 'double(21) should be 42'\nprint('ex:double passed')"
    _notebook(
        *_with_attempts(_exercise("double", "def double(x):\n    return 2 * x", weak), WRONG, SHORTCUT), path=path
    )
    statuses = {r.attempt.kind: r.status for r in check_attempts(path)}
    assert statuses == {"wrong": "failed", "shortcut": "passed"}


def test_the_worked_solution_still_runs_after_its_attempts_for_the_cells_below(tmp_path):
    nb = _notebook(*_with_attempts(_exercise("double", "def double(x):\n    return 2 * x", "pass"), WRONG, SHORTCUT))
    copied, placed = attempts_copy(nb)
    sources = [c.source for c in copied.cells if c.cell_type == "code"]
    assert sources == [WRONG[2], "pass", SHORTCUT[2], "pass", "def double(x):\n    return 2 * x", "pass"]
    assert [copied.cells[where.check].source for _, where in placed] == ["pass", "pass"]
    assert not any("check" in c.metadata.get("tags", []) for c in copied.cells[:5])  # only the real check is tagged


@pytest.mark.parametrize(
    ("attempts", "complaint"),
    [
        ((WRONG,), "names no shortcut answer"),
        ((SHORTCUT,), "names no wrong answer"),
        ((), "names no wrong and no shortcut answer"),
        ((("typo", "x", "y"), SHORTCUT), "each of labkit.attempts must be"),
        ((("wrong", "", "y"), SHORTCUT), "each of labkit.attempts must be"),
    ],
)
def test_an_exercise_without_a_wrong_answer_and_a_shortcut_is_refused(attempts, complaint):
    nb = _notebook(*_with_attempts(_exercise("double", "def double(x):\n    return 2 * x", "pass"), *attempts))
    (exercise,) = find_exercises(nb)
    with pytest.raises(ExerciseIncomplete, match=complaint):
        exercise_attempts(nb, exercise)


@pytest.mark.parametrize("notebook", course_notebooks(), ids=lambda p: p.stem)
def test_every_check_refuses_its_exercises_wrong_answer_and_shortcut(notebook):
    """Each exercise names a plausible wrong answer and the most tempting shortcut; its check refuses both."""
    results = check_attempts(notebook)
    exercises = find_exercises(read_notebook(notebook), name=notebook.name)
    assert {r.attempt.slug for r in results} == {e.slug for e in exercises}
    let_through = [f"ex:{r.attempt.slug} {r.attempt.kind} ({r.attempt.why})" for r in results if r.status == "passed"]
    assert not let_through, f"{notebook.name}: checks let these through: {let_through}"
