"""The routing fixtures script: what it writes, that it is deterministic, and that it spares captured runs."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections import Counter

import pytest

from labkit.canonical import pretty_json
from labkit.errors import FixtureOverwriteRefused, LabkitError
from labkit.paths import fixtures_dir
from labkit.routing.grader import compare, grade_files, load
from labkit.routing.suite import FILES, grade_bad_inputs, main, write_bad_inputs, write_routing_fixtures


def snapshot(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_writer_creates_the_four_files_with_the_lesson_numbers(tmp_path):
    write_routing_fixtures(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(FILES)
    suite, _sha = load(tmp_path / "suite.json")
    assert suite["penalties"] == {"sales": 1, "billing": 1, "support": 1, "urgent_support": 20}
    assert [c["id"] for c in suite["cases"]] == [f"t{n}" for n in range(1, 11)]
    assert Counter(c["expected"] for c in suite["cases"]) == {
        "urgent_support": 2,
        "billing": 3,
        "sales": 3,
        "support": 2,
    }
    assert suite["cases"][0]["expected"] == "urgent_support"


def test_runs_are_simulated_and_fingerprint_the_exact_suite_bytes(tmp_path):
    write_routing_fixtures(tmp_path)
    sha = hashlib.sha256((tmp_path / "suite.json").read_bytes()).hexdigest()
    for name in ("baseline.json", "candidate.json"):
        run, _ = load(tmp_path / name)
        assert run["origin"] == "simulated"
        assert run["suite_sha256"] == sha


def test_baseline_misses_t7_and_t9_and_candidate_sends_the_checkout_outage_to_billing(tmp_path):
    write_routing_fixtures(tmp_path)
    suite, sha = load(tmp_path / "suite.json")
    report = compare(suite, sha, load(tmp_path / "baseline.json")[0], load(tmp_path / "candidate.json")[0])
    assert [f["id"] for f in report["baseline"]["failures"]] == ["t7", "t9"]
    assert report["candidate"]["failures"] == [
        {"id": "t1", "expected": "urgent_support", "actual": "billing", "penalty": 20}
    ]


def test_model_inputs_hold_ids_and_messages_only(tmp_path):
    write_routing_fixtures(tmp_path)
    inputs, _ = load(tmp_path / "model-inputs.json")
    suite, _ = load(tmp_path / "suite.json")
    assert all(set(row) == {"id", "message"} for row in inputs)
    assert inputs == [{"id": c["id"], "message": c["message"]} for c in suite["cases"]]
    text = (tmp_path / "model-inputs.json").read_text(encoding="utf-8")
    assert "expected" not in text and "penalt" not in text and "urgent_support" not in text


def test_files_are_canonical_pretty_json(tmp_path):
    write_routing_fixtures(tmp_path)
    for name in FILES:
        raw = (tmp_path / name).read_text(encoding="utf-8")
        assert raw == pretty_json(json.loads(raw))


def test_writing_twice_gives_byte_identical_files(tmp_path):
    first = write_routing_fixtures(tmp_path / "a")
    before = snapshot(tmp_path / "a")
    second = write_routing_fixtures(tmp_path / "a")
    assert snapshot(tmp_path / "a") == before
    write_routing_fixtures(tmp_path / "b")
    assert snapshot(tmp_path / "b") == before
    assert first == second == {name: hashlib.sha256(raw).hexdigest() for name, raw in before.items()}


def test_shipped_fixtures_equal_a_fresh_write(tmp_path):
    write_routing_fixtures(tmp_path)
    assert snapshot(fixtures_dir() / "routing") == snapshot(tmp_path)


@pytest.mark.parametrize("name", ["candidate.json", "my-real-run.json"])
def test_folder_holding_a_captured_run_is_refused_and_left_unchanged(tmp_path, name):
    write_routing_fixtures(tmp_path)
    run, _ = load(tmp_path / "candidate.json")
    (tmp_path / name).write_text(pretty_json({**run, "origin": "captured", "label": "local-model"}), encoding="utf-8")
    (tmp_path / "notes.txt").write_text("keep me", encoding="utf-8")
    before = snapshot(tmp_path)
    with pytest.raises(FixtureOverwriteRefused, match=f"{name} is a captured run; .*nothing was written"):
        write_routing_fixtures(tmp_path)
    assert snapshot(tmp_path) == before


def test_folder_with_unreadable_json_is_refused_because_it_might_be_captured(tmp_path):
    (tmp_path / "half-written.json").write_text('{"origin": "capt', encoding="utf-8")
    with pytest.raises(FixtureOverwriteRefused, match="might be a captured run"):
        write_routing_fixtures(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["half-written.json"]


def test_a_file_in_place_of_the_folder_is_refused(tmp_path):
    target = tmp_path / "routing"
    target.write_text("not a folder", encoding="utf-8")
    with pytest.raises(FixtureOverwriteRefused, match="is a file, not a folder"):
        write_routing_fixtures(target)


def test_module_entry_point_writes_into_the_given_folder(tmp_path, capsys):
    assert main([str(tmp_path / "out")]) == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(FILES)
    assert capsys.readouterr().out.count("\n") == 4


def test_module_entry_point_refusal_exits_1_with_one_line(tmp_path, capsys):
    (tmp_path / "run.json").write_text(pretty_json({"origin": "captured"}), encoding="utf-8")
    assert main([str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "captured run" in captured.err


def test_module_runs_with_python_dash_m(tmp_path):
    done = subprocess.run([sys.executable, "-m", "labkit.routing.suite", str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "suite.json").exists()


EXPECTED_MESSAGES = {
    "repeated key": "repeated JSON key 'label'",
    "NaN weight": "non-finite number NaN",
    "overflowing weight": "number 1e999 overflows to infinity",
    "over 1 MB": "over the 1,000,000-byte limit",
    "unexpected field": 'unexpected field(s) "confidence"',
    "missing field": 'missing field(s) "suite_sha256"',
    "unknown route": '"refunds", not a known route',
    "missing prediction": "no prediction for t10",
    "extra prediction": "ids the suite does not have: t11",
    "duplicate prediction": 'predicts case "t4" more than once',
    "duplicate case id": 'suite case id "t9" appears more than once',
    "wrong fingerprint": "grade it against the suite it was made for",
    "empty suite": "suite has no cases",
    "zero weight": "penalty for sales is 0;",
    "negative weight": "penalty for billing is -1;",
    "true as a weight": "penalty for urgent_support is true;",
    "text weight": 'penalty for urgent_support is "20";',
    "decimal weight": "penalty for support is 1.5;",
    "blank message": "suite case 6 message must be non-blank text",
    "blank label": "candidate run label must be non-blank text",
    "wrong origin": 'origin is "production"',
    "predictions not a list": "predictions must be a list",
    "not an object": "candidate run must be a JSON object, got list",
}


def test_every_bad_input_example_is_refused_with_its_own_message(tmp_path):
    write_routing_fixtures(tmp_path / "good")
    good = {role: tmp_path / "good" / f"{role}.json" for role in ("suite", "baseline", "candidate")}
    examples = write_bad_inputs(tmp_path / "bad")
    assert [e.name for e in examples] == list(EXPECTED_MESSAGES)
    for example in examples:
        paths = {**good, example.role: example.path}
        with pytest.raises(LabkitError) as caught:
            grade_files(paths["suite"], paths["baseline"], paths["candidate"])
        assert isinstance(caught.value, ValueError)
        assert EXPECTED_MESSAGES[example.name] in str(caught.value), example.name


def test_the_refusal_table_has_one_row_per_bad_input_each_refused_naming_its_file_not_its_path(tmp_path):
    table = grade_bad_inputs(tmp_path / "bad")
    assert list(table.index) == list(EXPECTED_MESSAGES)
    assert list(table.columns) == ["file", "what is wrong", "refused by", "message"]
    assert set(table["refused by"]) == {"InvalidJSON", "RouteGradeError"}
    for name, row in table.iterrows():
        assert EXPECTED_MESSAGES[name] in row["message"], name
        assert str(tmp_path) not in row["message"], name
    assert table.loc["repeated key", "message"].startswith("repeated-key.json: repeated JSON key 'label'")


def test_a_bad_input_the_gate_would_grade_is_shown_as_not_refused(tmp_path, monkeypatch):
    from labkit.routing import suite as module

    real = module.write_bad_inputs

    def with_a_good_file(folder):
        written = real(folder)
        good = fixtures_dir() / "routing" / "candidate.json"
        written[0].path.write_bytes(good.read_bytes())
        return written

    monkeypatch.setattr(module, "write_bad_inputs", with_a_good_file)
    table = grade_bad_inputs(tmp_path / "bad")
    assert table.iloc[0]["refused by"] == "NOT REFUSED"
    assert (table.iloc[1:]["refused by"] != "NOT REFUSED").all()


def test_the_loader_refuses_exactly_the_loader_kinds_and_the_grader_every_other(tmp_path):
    from labkit.routing.suite import LOADER_KINDS, refusal_table

    table = refusal_table(grade_bad_inputs(tmp_path / "bad"))
    assert list(table.columns) == ["refused by", "says", "what to do"]
    for name, row in table.iterrows():
        assert row["refused by"] == ("InvalidJSON" if name in LOADER_KINDS else "RouteGradeError"), name
        assert ";" not in row["says"] or not row["what to do"], name
    assert table.loc["zero weight", "says"] == "suite penalty for sales is 0"


def test_the_refusal_table_keeps_the_whole_message_in_says_and_what_to_do(tmp_path):
    from labkit.routing.suite import refusal_table

    refusals = grade_bad_inputs(tmp_path / "bad")
    table = refusal_table(refusals)
    for name, row in table.iterrows():
        message = refusals.loc[name, "message"]
        rejoined = (
            {row["says"] + sep + row["what to do"] for sep in ("; ", ": ")} if row["what to do"] else {row["says"]}
        )
        assert message in rejoined, name
        assert row["what to do"] == row["what to do"].strip(), name
    assert table.loc["duplicate case id", "what to do"] == "give every case its own id"
    assert table.loc["blank label", "what to do"] == ""  # a message with no semicolon
    assert (table["what to do"] != "").sum() >= len(table) // 2  # most refusals say what to do
    one = refusals.iloc[:1].assign(message="no semicolon here")
    assert refusal_table(one).iloc[0]["what to do"] == ""


def test_a_tail_that_only_says_what_the_loader_did_stays_in_says_not_what_to_do(tmp_path):
    from labkit.routing.suite import refusal_table

    table = refusal_table(grade_bad_inputs(tmp_path / "bad"))
    assert table.loc["over 1 MB", "what to do"] == ""
    assert table.loc["over 1 MB", "says"].endswith("byte limit; refusing to read it")
    for name, row in table.iterrows():
        assert not row["what to do"].lower().startswith("refusing"), name
    two = grade_bad_inputs(tmp_path / "again").iloc[:2]
    two = two.assign(message=["a.json: too big; Refusing to read it", "b.json: too big; shrink the file"])
    split = refusal_table(two)
    assert list(split["what to do"]) == ["", "shrink the file"]
    assert list(split["says"]) == ["a.json: too big; Refusing to read it", "b.json: too big"]


def test_the_loader_refusals_split_at_their_last_colon_only_before_an_imperative_verb(tmp_path):
    from labkit.routing.suite import refusal_table, split_advice

    table = refusal_table(grade_bad_inputs(tmp_path / "bad"))
    expected = {
        "repeated key": ("repeated-key.json: repeated JSON key 'label'", "keep exactly one value for it"),
        "NaN weight": ("NaN-weight.json: non-finite number NaN is not allowed", "use a finite number or null"),
        "overflowing weight": ("overflowing-weight.json: number 1e999 overflows to infinity", "use a smaller number"),
        "over 1 MB": (
            "over-1-MB.json: 1,000,714 bytes is over the 1,000,000-byte limit; refusing to read it",
            "",
        ),
    }
    for name, (says, advice) in expected.items():
        assert (table.loc[name, "says"], table.loc[name, "what to do"]) == (says, advice), name
    assert split_advice("a.json: bad: Use b") == ("a.json: bad", "Use b")  # the last colon, any case
    assert split_advice("a.json: key: keep one: use two") == ("a.json: key: keep one", "use two")
    assert split_advice("a.json: users: 3") == ("a.json: users: 3", "")  # no verb: no advice
    assert split_advice("a.json: bad: user error") == ("a.json: bad: user error", "")  # a whole word only
    assert split_advice("a.json: bad: keep") == ("a.json: bad", "keep")  # a verb alone is advice too
    assert split_advice("no colon at all") == ("no colon at all", "")
    assert split_advice("x: y; z: use w") == ("x: y", "z: use w")  # a semicolon comes first


def test_every_refusal_names_its_problem_before_saying_what_to_do(tmp_path):
    from labkit.routing.suite import REFUSAL_SAYS, refusal_table

    table = refusal_table(grade_bad_inputs(tmp_path / "bad"))
    assert set(REFUSAL_SAYS) == set(table.index)
    for name, row in table.iterrows():
        assert REFUSAL_SAYS[name] in row["says"], (name, row["says"])
    other = {**REFUSAL_SAYS, "zero weight": "sales is 1"}  # a wrong expectation is caught
    assert other["zero weight"] not in table.loc["zero weight", "says"]
