import shutil

import pytest

from labkit.cli import main
from labkit.course.lessons import UnknownLesson, write_authored
from labkit.paths import project_root
from labkit.recording import load_run
from tests.fake_endpoint import FakeEndpoint

CHECKOUT = project_root()  # read before the `course` fixture points LABKIT_ROOT at a copy


@pytest.fixture
def course(course):
    shutil.copytree(CHECKOUT / "notebooks", course / "notebooks")  # record names the cells to refresh
    return course


def test_authored_run_is_rewritten_byte_for_byte(course):
    path = course / "recorded_runs" / "02-rag-authored" / "run.json"
    before = path.read_bytes()
    assert write_authored("02") == path and path.read_bytes() == before


def test_authored_run_never_replaces_a_captured_run(course, monkeypatch):
    from labkit.errors import RecordedRunError
    from labkit.rag import trace as rag_trace

    monkeypatch.setattr(rag_trace, "RUN_AUTHORED", "02-rag-smollm2")
    with pytest.raises(RecordedRunError, match="never replaces"):
        write_authored("02")
    assert load_run("02-rag-smollm2").origin == "captured"


def test_lesson_without_model_calls_is_refused(course):
    with pytest.raises(UnknownLesson, match="records no model runs; choose one of 0"):
        write_authored("03")


def test_lesson_without_an_authored_run_says_so(course):
    with pytest.raises(UnknownLesson, match="no authored model run"):
        write_authored("06")


def test_record_writes_a_new_captured_run_beside_the_old_one(course, monkeypatch, capsys):
    with FakeEndpoint() as endpoint:
        monkeypatch.setenv("LABKIT_BASE_URL", endpoint.base_url)
        monkeypatch.setenv("LABKIT_MODEL", "fake-echo")
        assert main(["record", "06", "--run-id", "06-routing-echo"]) == 0
    out = capsys.readouterr().out
    assert "recorded_runs/06-routing-echo/run.json" in out and "06_routing_gate.ipynb" in out
    assert "Code cells that show the captured run, whose outputs will change:" in out
    run = load_run("06-routing-echo")
    assert run.origin == "captured" and len(run.bindings) == 20 and run.model.id == "fake-echo"  # 2 prompts x 10
    assert load_run("06-routing-smollm2-prompts").origin == "captured"  # the old runs are untouched
    assert load_run("06-routing-smollm2").origin == "captured"


def test_cells_showing_a_run_are_found_by_constant_or_id(tmp_path):
    import nbformat

    from labkit.course.lessons import cells_showing_runs

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("RUN_CAPTURED in prose"),
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_code_cell("load_run(RUN_CAPTURED)"),
        nbformat.v4.new_code_cell("load_run('06-a')"),
    ]
    nbformat.write(nb, tmp_path / "n.ipynb")
    assert cells_showing_runs(tmp_path / "n.ipynb", ["RUN_CAPTURED", "06-a"]) == [2, 3]


@pytest.mark.parametrize("run_id", ["../x", "06-routing-smollm2", "Upper"])
def test_a_bad_or_taken_run_id_is_refused_before_any_request(course, monkeypatch, capsys, run_id):
    with FakeEndpoint() as endpoint:
        monkeypatch.setenv("LABKIT_BASE_URL", endpoint.base_url)
        monkeypatch.setenv("LABKIT_MODEL", "fake-echo")
        assert main(["record", "06", "--run-id", run_id]) == 1
    assert endpoint.attempts == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and repr(run_id).strip("'") in err
    assert not (course / "x").exists()


def test_rewriting_an_authored_run_keeps_other_files_in_its_folder(course):
    folder = course / "recorded_runs" / "02-rag-authored"
    (folder / "NOTES.md").write_text("kept\n", encoding="utf-8")
    write_authored("02")
    assert (folder / "NOTES.md").read_text(encoding="utf-8") == "kept\n"
    assert sorted(p.name for p in folder.iterdir()) == ["NOTES.md", "run.json", "run.json.sig"]


def test_record_refuses_a_run_whose_endpoint_echoes_the_key(course, monkeypatch, capsys):
    with FakeEndpoint(echo_headers=True) as endpoint:
        monkeypatch.setenv("LABKIT_BASE_URL", endpoint.base_url)
        monkeypatch.setenv("LABKIT_MODEL", "fake-echo")
        monkeypatch.setenv("LABKIT_API_KEY", "s" + "k-proj-" + "Ab3" * 12)
        assert main(["record", "06", "--run-id", "06-routing-echo"]) == 1
    err = capsys.readouterr().err
    assert "was not saved" in err and "binding 1 (" in err and "Bearer token" in err and "Ab3Ab3" not in err
    assert not (course / "recorded_runs" / "06-routing-echo").exists()


@pytest.fixture
def repeats_lesson(monkeypatch):
    """Lesson 06 given a repeated-trials module: one question sent with each of three seeds."""
    import sys
    import types

    from labkit.course import lessons
    from labkit.trials import Trials

    module = types.ModuleType("fake_repeats")
    module.RUN_CAPTURED = "06-routing-repeats"
    module.TRIALS = Trials(n=3, temperature=0.8, first_seed=40)
    module.SETTINGS = module.TRIALS.settings_for({"temperature": 0, "seed": 0, "max_tokens": 8}, 0)
    module.CAPTURED_DESCRIPTION = "Three trials of one question. " + module.TRIALS.describe()
    module.run_fixtures = list

    def make_requests(adapter):
        return [t.generate("ping?", [{"role": "user", "content": "ping?"}]) for t in module.TRIALS.each(adapter)]

    module.make_requests = make_requests
    monkeypatch.setitem(sys.modules, "fake_repeats", module)
    monkeypatch.setitem(lessons.REPEAT_MODULES, "06", "fake_repeats")
    return module


def test_repeats_are_recorded_as_one_binding_per_seed_and_replay_exactly(course, monkeypatch, repeats_lesson):
    from labkit.boundary import connect

    with FakeEndpoint() as endpoint:
        monkeypatch.setenv("LABKIT_BASE_URL", endpoint.base_url)
        monkeypatch.setenv("LABKIT_MODEL", "fake-echo")
        assert main(["record", "06", "--repeats", "--run-id", "06-routing-repeats"]) == 0
    run = load_run("06-routing-repeats")
    assert sorted(b.request["seed"] for b in run.bindings) == [40, 41, 42]
    assert {b.request["temperature"] for b in run.bindings} == {0.8}
    assert run.settings["temperature"] == 0.8 and "seeds 40..42" in run.description
    replayed = repeats_lesson.make_requests(
        connect("06-routing-repeats", lesson="06", settings=repeats_lesson.SETTINGS)
    )
    assert len(replayed) == 3


def test_a_lesson_without_repeats_says_which_lessons_have_them(course, monkeypatch, repeats_lesson, capsys):
    assert main(["record", "03", "--repeats"]) == 1
    from labkit.course.lessons import REPEAT_MODULES

    assert "06" in REPEAT_MODULES
    expected = f"lesson '03' has no repeated-trials run; lessons with one: {', '.join(sorted(REPEAT_MODULES))}"
    assert expected in capsys.readouterr().err


def test_repeats_and_authored_cannot_be_asked_together(course, capsys):
    with pytest.raises(SystemExit):
        main(["record", "04", "--repeats", "--authored"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_a_run_belongs_to_the_module_with_its_exact_id_before_one_whose_id_prefixes_it():
    from labkit.agent import repeats, runs
    from labkit.course.lessons import module_of_run

    assert repeats.RUN_CAPTURED.startswith(runs.RUN_CAPTURED + "-")
    assert module_of_run(load_run(repeats.RUN_CAPTURED)) is repeats
    assert module_of_run(load_run(runs.RUN_CAPTURED)) is runs


def test_a_repeats_run_belongs_to_its_repeats_module_though_the_lesson_run_id_prefixes_it():
    from labkit.course.lessons import module_of_run

    assert module_of_run(load_run("05-system-smollm2-repeats")).__name__ == "labkit.system.repeats"
    assert module_of_run(load_run("05-system-smollm2")).__name__ == "labkit.system.runs"
