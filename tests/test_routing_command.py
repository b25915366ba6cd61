"""The gate as a CI job runs it: `grade_routes` runs `labkit grade-routes` in a fresh process."""

from __future__ import annotations

import subprocess

import pytest

from labkit.canonical import pretty_json
from labkit.cli.grade_routes import EXAMPLE
from labkit.paths import fixtures_dir, project_root
from labkit.routing import command
from labkit.routing.command import EXIT_CODES, GateCommandTimedOut, grade_routes, shown_path
from labkit.routing.grader import load

SHIPPED = fixtures_dir() / "routing"


def test_the_shipped_candidate_exits_2_with_the_report_on_standard_output():
    run = grade_routes(SHIPPED / "suite.json", SHIPPED / "baseline.json", SHIPPED / "candidate.json")
    assert run.exit_code == 2 and run.stderr == ""
    assert run.meaning == EXIT_CODES[2]
    assert run.report is not None and run.report["pass"] is False
    assert run.command == (
        "labkit grade-routes fixtures/routing/suite.json fixtures/routing/baseline.json fixtures/routing/candidate.json"
    )
    assert str(run).splitlines()[1] == f"exit code: 2 ({EXIT_CODES[2]})"


def test_an_unrecognized_argument_exits_1_with_one_line_and_nothing_on_stdout():
    run = grade_routes(SHIPPED / "suite.json", SHIPPED / "baseline.json", SHIPPED / "candidate.json", extra=["--bogus"])
    assert run.exit_code == 1 and run.stdout == ""
    assert run.command.endswith("candidate.json --bogus")
    assert run.stderr.count("\n") == 1 and "unrecognized arguments: --bogus" in run.stderr


def test_a_protected_case_goes_to_the_command_as_protect_flags(scratch_in_tmp):
    candidate, _ = load(SHIPPED / "candidate.json")
    candidate["predictions"][0]["route"] = "urgent_support"  # t1 fixed: the candidate now passes
    candidate["predictions"][2]["route"] = "sales"  # t3 broken: allowed unless protected
    path = scratch_in_tmp / "swapped.json"
    scratch_in_tmp.mkdir()
    path.write_text(pretty_json(candidate), encoding="utf-8")
    free = grade_routes(SHIPPED / "suite.json", SHIPPED / "baseline.json", path)
    guarded = grade_routes(SHIPPED / "suite.json", SHIPPED / "baseline.json", path, protect=["t3"])
    assert (free.exit_code, guarded.exit_code) == (0, 2)
    assert guarded.command.endswith("scratch/swapped.json --protect t3")


def test_invalid_input_exits_1_with_nothing_on_stdout_and_the_path_written_as_typed(scratch_in_tmp):
    path = scratch_in_tmp / "bad" / "broken.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"label": "a", "label": "b"}', encoding="utf-8")
    run = grade_routes(SHIPPED / "suite.json", SHIPPED / "baseline.json", path)
    assert (run.exit_code, run.stdout, run.report) == (1, "", None)
    assert run.meaning == EXIT_CODES[1]
    assert run.stderr.strip() == (
        "labkit grade-routes: scratch/bad/broken.json: repeated JSON key 'label': keep exactly one value for it"
    )
    assert "stdout: (empty)" in str(run)


def test_a_path_outside_the_course_and_scratch_folders_is_shown_as_given(tmp_path, scratch_in_tmp):
    assert shown_path(tmp_path / "x.json") == str(tmp_path / "x.json")
    assert shown_path(project_root() / "fixtures" / "routing" / "suite.json") == "fixtures/routing/suite.json"


def test_a_command_that_runs_past_its_time_limit_is_stopped_with_a_clear_error(monkeypatch):
    def too_slow(*args, **kwargs):
        raise subprocess.TimeoutExpired(args[0], kwargs["timeout"])

    monkeypatch.setattr(command.subprocess, "run", too_slow)
    with pytest.raises(GateCommandTimedOut, match="did not finish in 120 s"):
        grade_routes(SHIPPED / "suite.json", SHIPPED / "baseline.json", SHIPPED / "candidate.json")


@pytest.mark.parametrize("code", sorted(EXIT_CODES))
def test_each_exit_codes_meaning_agrees_with_the_commands_help(code):
    helped = next(line for line in EXAMPLE.splitlines() if line.strip().startswith(f"{code} "))
    said = {0: "passes the release rule", 2: "fails the rule", 1: "inputs are invalid"}[code]
    assert said in helped
