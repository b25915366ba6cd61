"""`labkit grade-routes`: the report on standard output and the exit codes 0, 2 and 1."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pytest

from labkit.canonical import pretty_json
from labkit.cli import main
from labkit.paths import fixtures_dir
from labkit.routing.grader import load
from labkit.routing.suite import write_routing_fixtures


@pytest.fixture
def folder(tmp_path):
    write_routing_fixtures(tmp_path / "routing")
    return tmp_path / "routing"


def grade(folder, candidate="candidate.json", *extra):
    return main(
        ["grade-routes", str(folder / "suite.json"), str(folder / "baseline.json"), str(folder / candidate), *extra]
    )


def write_candidate(folder, name, edit):
    run, _ = load(folder / "candidate.json")
    edit(run)
    (folder / name).write_text(pretty_json(run), encoding="utf-8")


def test_shipped_fixtures_exit_2_with_the_lesson_numbers(capsys):
    shipped = fixtures_dir() / "routing"
    code = main(
        ["grade-routes", str(shipped / "suite.json"), str(shipped / "baseline.json"), str(shipped / "candidate.json")]
    )
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert code == 2
    assert captured.err == ""
    old, new = report["baseline"], report["candidate"]
    assert (old["correct"], old["cases"], old["penalty_points"], old["urgent_misses"]) == (8, 10, 2, 0)
    assert (new["correct"], new["cases"], new["penalty_points"], new["urgent_misses"]) == (9, 10, 20, 1)
    assert report["pass"] is False


def test_report_is_printed_as_indented_json(folder, capsys):
    grade(folder)
    out = capsys.readouterr().out
    assert out.startswith('{\n  "suite_version": ')
    assert out.endswith("}\n")


def test_passing_candidate_exits_0(folder, capsys):
    def fix_t1(run):
        run["predictions"][0]["route"] = "urgent_support"

    write_candidate(folder, "fixed.json", fix_t1)
    assert grade(folder, "fixed.json") == 0
    assert json.loads(capsys.readouterr().out)["pass"] is True


def test_protect_flag_turns_an_allowed_swap_into_a_failure(folder, capsys):
    def swap(run):
        run["predictions"][0]["route"] = "urgent_support"
        run["predictions"][2]["route"] = "sales"  # t3 regresses; t7 and t9 stay fixed

    write_candidate(folder, "swap.json", swap)
    assert grade(folder, "swap.json") == 0
    capsys.readouterr()
    assert grade(folder, "swap.json", "--protect", "t3", "--protect", "t6") == 2
    report = json.loads(capsys.readouterr().out)
    assert report["protected"] == ["t3", "t6"]
    assert report["reasons"] == ["protected case(s) regressed: t3"]


def drop_t10(run):
    run["predictions"].pop()


def add_field(run):
    run["notes"] = "hand-checked"


def nan_text(folder, name):
    (folder / name).write_text('{"label": NaN}', encoding="utf-8")


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (lambda f, n: write_candidate(f, n, drop_t10), "candidate run has no prediction for t10"),
        (lambda f, n: write_candidate(f, n, add_field), 'unexpected field(s) "notes"'),
        (nan_text, "non-finite number NaN"),
        (lambda f, n: None, "no such file"),
        (lambda f, n: (f / n).mkdir(), "bad.json is a folder, not a regular file"),
    ],
    ids=["missing-id", "unexpected-field", "nan", "missing-file", "folder"],
)
def test_invalid_input_exits_1_with_one_line_and_no_report(folder, capsys, make, problem):
    make(folder, "bad.json")
    assert grade(folder, "bad.json") == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert captured.err.startswith("labkit grade-routes: ")
    assert problem in captured.err


def test_unknown_protected_id_exits_1(folder, capsys):
    assert grade(folder, "candidate.json", "--protect", "t42") == 1
    captured = capsys.readouterr()
    assert captured.out == "" and '"t42" is not in the suite' in captured.err


def test_wrong_number_of_arguments_exits_1_not_2(folder, capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["grade-routes", str(folder / "suite.json")])
    assert stopped.value.code == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "required" in captured.err


def test_an_unrecognized_argument_exits_1_not_2(folder, capsys):
    with pytest.raises(SystemExit) as stopped:
        grade(folder, "candidate.json", "--bogus")
    assert stopped.value.code == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "unrecognized arguments: --bogus" in captured.err


def test_an_unrecognized_argument_of_another_verb_keeps_argparses_2(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["verify", "--bogus-flag-for-this-test"])
    assert stopped.value.code == 2


def test_help_shows_an_example_and_the_exit_codes(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["grade-routes", "--help"])
    assert stopped.value.code == 0
    out = capsys.readouterr().out
    assert "labkit grade-routes fixtures/routing/suite.json" in out
    assert "2  the inputs are valid and the candidate fails" in out


def run_cli(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "labkit", "grade-routes", *args], capture_output=True, text=True, cwd=cwd
    )


def test_real_process_exit_codes_are_0_2_and_1(folder):
    write_candidate(folder, "fixed.json", lambda run: run["predictions"][0].update(route="urgent_support"))
    write_candidate(folder, "short.json", drop_t10)
    passed = run_cli("suite.json", "baseline.json", "fixed.json", cwd=folder)
    failed = run_cli("suite.json", "baseline.json", "candidate.json", cwd=folder)
    invalid = run_cli("suite.json", "baseline.json", "short.json", cwd=folder)
    assert (passed.returncode, failed.returncode, invalid.returncode) == (0, 2, 1)
    assert json.loads(passed.stdout)["pass"] is True
    assert json.loads(failed.stdout)["reasons"][-1] == "1 urgent_support case(s) misrouted: t1 (sent to billing)"
    assert invalid.stdout == ""
    assert invalid.stderr.count("\n") == 1 and "Traceback" not in invalid.stderr


# The routing walkthrough (seeds/004) ships make_fixture.py; this writes the same three files from its
# description: ten Maple Services tickets under field "input", version "maple-routing-v1", each file as
# two-space-indented JSON plus a newline, runs pointing at the suite's exact bytes. The walkthrough ran on
# Windows, where Path.write_text turns each "\n" into "\r\n": its printed suite hash is of those bytes.
MAPLE_TICKETS = [
    ("t1", "Checkout returns errors for everyone and all orders stopped five minutes ago.", "urgent_support"),
    ("t2", "Our whole website is unavailable right now and customers cannot access it.", "urgent_support"),
    ("t3", "Please resend last month's invoice.", "billing"),
    ("t4", "We were charged twice for the same service.", "billing"),
    ("t5", "Please review a refund for our cancelled subscription.", "billing"),
    ("t6", "We need a quote for a new booking website.", "sales"),
    ("t7", "Do you sell monthly automation support plans? We are considering one.", "sales"),
    ("t8", "Can you estimate the price of a new inventory integration?", "sales"),
    ("t9", "How do I update a team member's email in our existing account?", "support"),
    ("t10", "Where is the documentation for changing notification settings?", "support"),
]
MAPLE_SUITE_SHA256 = "a4fba47d7a1f6ad261201b616f0e54ca270f3b23d407c6abc6cdae9769703a12"


def write_walkthrough_files(folder, *, newline="\r\n"):
    folder.mkdir(parents=True, exist_ok=True)

    def write(name, value):
        (folder / name).write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8", newline=newline)

    cases = [{"id": cid, "input": text, "expected": route} for cid, text, route in MAPLE_TICKETS]
    penalties = {"sales": 1, "billing": 1, "support": 1, "urgent_support": 20}
    write("suite.json", {"version": "maple-routing-v1", "penalties": penalties, "cases": cases})
    digest = hashlib.sha256((folder / "suite.json").read_bytes()).hexdigest()
    misroutes = {"baseline": {"t7": "support", "t9": "sales"}, "candidate": {"t1": "billing"}}
    for name, changed in misroutes.items():
        predictions = [{"id": c["id"], "route": changed.get(c["id"], c["expected"])} for c in cases]
        run = {"label": f"{name}-fixture", "origin": "simulated", "suite_sha256": digest, "predictions": predictions}
        write(f"{name}.json", run)
    write("model-inputs.json", [{"id": c["id"], "input": c["input"]} for c in cases])
    return folder


@pytest.mark.parametrize("newline", ["\r\n", "\n"], ids=["windows-as-published", "posix"])
def test_walkthrough_files_grade_as_its_report_says(tmp_path, capsys, newline):
    folder = write_walkthrough_files(tmp_path / "maple", newline=newline)
    code = main(
        ["grade-routes", str(folder / "suite.json"), str(folder / "baseline.json"), str(folder / "candidate.json")]
    )
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert (code, captured.err) == (2, "")
    assert report["suite_version"] == "maple-routing-v1"
    assert report["suite_sha256"] == hashlib.sha256((folder / "suite.json").read_bytes()).hexdigest()
    if newline == "\r\n":
        assert report["suite_sha256"] == MAPLE_SUITE_SHA256  # the hash printed in the walkthrough's own report
    shared = ("label", "origin", "cases", "correct", "accuracy", "penalty_points", "urgent_misses", "failures")
    assert {k: report["baseline"][k] for k in shared} == {
        "label": "baseline-fixture",
        "origin": "simulated",
        "cases": 10,
        "correct": 8,
        "accuracy": 0.8,
        "penalty_points": 2,
        "urgent_misses": 0,
        "failures": [
            {"id": "t7", "expected": "sales", "actual": "support", "penalty": 1},
            {"id": "t9", "expected": "support", "actual": "sales", "penalty": 1},
        ],
    }
    assert {k: report["candidate"][k] for k in shared} == {
        "label": "candidate-fixture",
        "origin": "simulated",
        "cases": 10,
        "correct": 9,
        "accuracy": 0.9,
        "penalty_points": 20,
        "urgent_misses": 1,
        "failures": [{"id": "t1", "expected": "urgent_support", "actual": "billing", "penalty": 20}],
    }
    assert report["pass"] is False
    # The walkthrough's two reasons, in its order: penalty points increased, an urgent case misrouted.
    assert len(report["reasons"]) == 2
    assert report["reasons"][0].startswith("penalty points rose from 2 to 20")
    assert "urgent_support case(s) misrouted: t1 (sent to billing)" in report["reasons"][1]


def test_walkthrough_suite_with_the_course_field_name_is_refused(tmp_path, capsys):
    folder = write_walkthrough_files(tmp_path / "maple")
    suite = json.loads((folder / "suite.json").read_text(encoding="utf-8"))
    suite["version"] = "quillfeather-routing-v1"  # that schema's cases carry "message", not "input"
    (folder / "suite.json").write_text(json.dumps(suite, indent=2) + "\n", encoding="utf-8")
    code = main(
        ["grade-routes", str(folder / "suite.json"), str(folder / "baseline.json"), str(folder / "candidate.json")]
    )
    captured = capsys.readouterr()
    assert (code, captured.out) == (1, "")
    assert 'case 1 (schema quillfeather-routing-v1) has missing field(s) "message"' in captured.err


def test_suite_with_an_unknown_schema_version_is_refused(tmp_path, capsys):
    folder = write_walkthrough_files(tmp_path / "maple")
    suite = json.loads((folder / "suite.json").read_text(encoding="utf-8"))
    suite["version"] = "maple-routing-v2"
    (folder / "suite.json").write_text(json.dumps(suite, indent=2) + "\n", encoding="utf-8")
    code = main(
        ["grade-routes", str(folder / "suite.json"), str(folder / "baseline.json"), str(folder / "candidate.json")]
    )
    captured = capsys.readouterr()
    assert (code, captured.out) == (1, "")
    assert "not a schema this gate knows" in captured.err and "maple-routing-v1 (cases carry 'input')" in captured.err


def test_a_utf16_suite_is_refused_with_exit_1(folder, capsys):
    suite = folder / "suite.json"
    suite.write_text(suite.read_text(encoding="utf-8"), encoding="utf-16")
    assert grade(folder) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "suite.json: not UTF-8 text" in captured.err and captured.err.count("\n") == 1


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_pipe_or_device_as_input_is_refused_before_reading(folder, capsys, kind):
    import os

    if kind == "fifo":
        (folder / "candidate.fifo").unlink(missing_ok=True)
        os.mkfifo(folder / "candidate.fifo")
        code = grade(folder, "candidate.fifo")
    else:
        code = main(["grade-routes", str(folder / "suite.json"), str(folder / "baseline.json"), "/dev/zero"])
    assert code == 1
    err = capsys.readouterr().err
    named = {"fifo": f"{folder / 'candidate.fifo'} is a named pipe (FIFO)", "device": "/dev/zero is a character device"}
    assert f"{named[kind]}, not a regular file; pass the path of a JSON file" in err and err.count("\n") == 1


def test_a_folder_given_for_the_suite_is_refused_saying_it_is_a_folder(folder, capsys):
    (folder / "suites").mkdir()
    code = main(["grade-routes", str(folder / "suites"), str(folder / "baseline.json"), str(folder / "candidate.json")])
    captured = capsys.readouterr()
    assert (code, captured.out) == (1, "")
    assert captured.err == (
        f"labkit grade-routes: {folder / 'suites'} is a folder, not a regular file; pass the path of a JSON file\n"
    )


def test_ids_that_differ_from_the_suites_only_in_unicode_form_are_named_with_both_forms(folder, capsys):
    import unicodedata

    suite, _ = load(folder / "suite.json")
    suite["cases"][0]["id"] = "café"  # NFC: é is one code point
    (folder / "suite.json").write_text(pretty_json(suite), encoding="utf-8")
    digest = hashlib.sha256((folder / "suite.json").read_bytes()).hexdigest()
    for name in ("baseline.json", "candidate.json"):
        run, _ = load(folder / name)
        run["suite_sha256"] = digest
        run["predictions"][0]["id"] = unicodedata.normalize("NFD", "café") if name == "candidate.json" else "café"
        (folder / name).write_text(pretty_json(run), encoding="utf-8")
    assert grade(folder) == 1
    err = capsys.readouterr().err
    assert "candidate run has no prediction for café; a run must answer every suite case" in err
    assert (
        'Note: the run\'s id "cafe\u0301" is the suite\'s "café" in another Unicode form (NFD in the run, NFC in the '
        "suite: at character 3 the suite has U+00E9, the run U+0065 U+0301). Write each id with the same code points "
        "as the suite (the grader never normalises)"
    ) in err
    assert err.count("\n") == 1
