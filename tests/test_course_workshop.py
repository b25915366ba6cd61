import nbformat
import pytest

from labkit.cli import main
from labkit.course.workshop import SOLUTION_STUB, WorkshopExportRefused, check_exercises, export_workshop, student_copy


def _cell(source, *tags, outputs=()):
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["tags"] = list(tags)
    cell.outputs = [nbformat.v4.new_output("stream", text=t) for t in outputs]
    return cell


def _notebook(path, *cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = list(cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def test_student_copy_clears_outputs_and_removes_solutions_only():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        _cell("x = 1", outputs=["1\n"]),
        _cell("answer = 42", "solution", outputs=["42\n"]),
        _cell("VARIANT = 'malformed-json'", "exercise"),
    ]
    copy = student_copy(nb)
    assert [c.source for c in copy.cells] == ["x = 1", SOLUTION_STUB, "VARIANT = 'malformed-json'"]
    assert all(c.outputs == [] and c.execution_count is None for c in copy.cells)
    assert nb.cells[1].source == "answer = 42"  # the original is untouched


def test_export_writes_every_notebook_and_never_overwrites(tmp_path):
    source = _notebook(tmp_path / "05_demo.ipynb", _cell("pass", "solution"))
    written = export_workshop(tmp_path / "room", [source])
    assert [p.name for p in written] == ["05_demo.ipynb"]
    with pytest.raises(WorkshopExportRefused, match="never overwrites"):
        export_workshop(tmp_path / "room", [source])


def test_checker_reports_each_check_cell(tmp_path, capsys):
    path = _notebook(
        tmp_path / "learner.ipynb",
        _cell("VARIANT = 'nope'", "exercise"),
        _cell("assert VARIANT == 'malformed-json', 'pick the malformed reply'", "check"),
        _cell("assert 1 + 1 == 2", "check"),
    )
    results = check_exercises(path)
    assert [(r.cell, r.passed) for r in results] == [(2, False), (3, True)]
    assert results[0].message == "AssertionError: pick the malformed reply"
    assert main(["workshop", "check", str(path)]) == 1
    assert "1 of 2 exercise checks pass" in capsys.readouterr().out


def test_export_command_writes_the_course_notebooks(tmp_path, capsys):
    assert main(["workshop", "export", str(tmp_path / "copies")]) == 0
    assert "06_routing_gate.ipynb" in {p.name for p in (tmp_path / "copies").iterdir()}


def test_checking_a_missing_notebook_is_a_one_line_error(tmp_path, capsys):
    assert main(["workshop", "check", str(tmp_path / "nope.ipynb")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nope.ipynb: no such file" in err


def test_export_into_a_folder_that_cannot_be_made_is_a_one_line_error_and_writes_nothing(tmp_path, capsys):
    source = _notebook(tmp_path / "05_demo.ipynb", _cell("pass"))
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    from labkit.paths import FolderNotWritable

    with pytest.raises(FolderNotWritable, match="cannot create the folder"):
        export_workshop(tmp_path / "a-file" / "room", [source])


def test_export_with_a_corrupt_notebook_writes_nothing(tmp_path):
    from labkit.course.runner import NotebookUnreadable

    good = _notebook(tmp_path / "01_good.ipynb", _cell("pass"))
    (tmp_path / "02_bad.ipynb").write_text("{", encoding="utf-8")
    with pytest.raises(NotebookUnreadable):
        export_workshop(tmp_path / "room", [good, tmp_path / "02_bad.ipynb"])
    assert not (tmp_path / "room").exists()
