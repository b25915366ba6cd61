"""The rubric is fixed before generation; its hash pins every generation and judge run to it."""

import json

import pytest

from labkit.canonical import pretty_json
from labkit.errors import FixtureChanged
from labkit.evaluator.fixtures import rubric as rubric_data
from labkit.evaluator.products import EvaluatorFixtureError
from labkit.evaluator.rubric import (
    StaleRubric,
    ensure_same_rubric,
    load_rubric,
    parse_rubric,
    rubric_bytes_unchanged,
)
from labkit.recording import load_run


def _edit_rubric(course, change):
    path = course / "fixtures" / "evaluator" / "rubric.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(pretty_json(data))


def test_rubric_hash_ignores_file_formatting_but_not_content():
    data = rubric_data()
    assert parse_rubric(data).sha256 == parse_rubric(json.loads(json.dumps(data))).sha256
    data["criteria"][2]["anchors"]["pass"] = "Plain and friendly."
    assert parse_rubric(data).sha256 != parse_rubric(rubric_data()).sha256


def test_changed_rubric_invalidates_old_recorded_runs(course):
    assert load_run("01-evaluator-authored").origin == "authored"
    _edit_rubric(course, lambda d: d["limits"].update(max_words=120))
    for run_id in ("01-evaluator-authored", "01-evaluator-smollm2"):
        with pytest.raises(FixtureChanged, match=r"rubric\.json"):
            load_run(run_id)


def test_reformatted_rubric_file_no_longer_has_the_bytes_the_run_recorded(course):
    fixtures = load_run("01-evaluator-authored").fixtures
    assert rubric_bytes_unchanged(fixtures)
    path = course / "fixtures" / "evaluator" / "rubric.json"
    before = load_rubric().sha256
    path.write_text(json.dumps(json.loads(path.read_text())))  # layout only
    assert load_rubric().sha256 == before
    assert not rubric_bytes_unchanged(fixtures)


def test_run_without_a_rubric_hash_is_not_bound_to_a_rubric():
    with pytest.raises(StaleRubric, match="nothing binds it"):
        rubric_bytes_unchanged({"fixtures/evaluator/products.json": "0" * 64})


def test_changed_rubric_invalidates_old_generation_and_judge_runs(course):
    from labkit.boundary import connect
    from labkit.evaluator import lesson
    from labkit.evaluator.report import build_report

    boundary = connect(lesson.RUN_AUTHORED, lesson="01", settings=lesson.SETTINGS)
    runs = lesson.make_requests(boundary)
    assert runs.generation.rubric_sha256 == load_rubric().sha256
    assert {c.rubric_sha256 for c in runs.judging.calls} == {load_rubric().sha256}
    _edit_rubric(course, lambda d: d.update(version="product-description-v2"))
    new = load_rubric()
    with pytest.raises(StaleRubric, match="Generate and judge again"):
        ensure_same_rubric(runs.generation, new)
    with pytest.raises(StaleRubric):
        ensure_same_rubric(runs.judging, new)
    inputs = lesson.LessonInputs(lesson.load_products(), new, None, {}, None)  # type: ignore[arg-type]
    with pytest.raises(StaleRubric):
        build_report("01-evaluator-authored", "authored", inputs, runs)


def test_human_labels_made_under_another_rubric_are_refused(course):
    from labkit.evaluator.lesson import load_inputs

    _edit_rubric(
        course, lambda d: d["criteria"][1]["anchors"].update(partial="It leaves out exactly one of those facts.")
    )
    with pytest.raises(StaleRubric, match="labeled again"):
        load_inputs()


@pytest.mark.parametrize(
    "change,message",
    [
        (lambda d: d["criteria"][0].update(pass_labels=["pass", "fail"]), "some, not all"),
        (lambda d: d["criteria"][0]["anchors"].pop("fail"), "anchors must name exactly"),
        (lambda d: d["criteria"].append(dict(d["criteria"][0])), "repeated"),
        (lambda d: d.update(extra="x"), "extra"),
    ],
)
def test_malformed_rubric_is_refused_with_the_reason(change, message):
    data = rubric_data()
    change(data)
    with pytest.raises(EvaluatorFixtureError, match=message):
        parse_rubric(data)


def test_a_stamp_of_another_rubric_is_refused_and_one_of_this_rubric_passes():
    from labkit.evaluator.rubric import RubricStamp, StaleRubric, ensure_same_rubric, load_rubric

    rubric = load_rubric()
    ensure_same_rubric(RubricStamp(rubric_sha256=rubric.sha256), rubric)
    with pytest.raises(StaleRubric, match="Generate and judge again"):
        ensure_same_rubric(RubricStamp(rubric_sha256="0" * 64), rubric)


def test_changed_rubric_copies_move_the_stamp_only_when_reworded_and_both_break_the_fixture_hash(tmp_path):
    from labkit.evaluator.rubric import RUBRIC_FIXTURE, changed_rubric_copies
    from labkit.recording import check_fixtures, copy_fixtures

    run = load_run("01-evaluator-authored")
    copies = changed_rubric_copies(tmp_path)
    assert load_rubric(copies["re-laid"]).sha256 == load_rubric().sha256
    assert load_rubric(copies["reworded"]).sha256 != load_rubric().sha256
    for name, path in copies.items():
        with pytest.raises(FixtureChanged, match=r"rubric\.json \(now"):
            check_fixtures(run, root=copy_fixtures(run, tmp_path / name, replace={RUBRIC_FIXTURE: path}))


def test_guard_table_shows_the_stamp_passing_a_re_laid_copy_that_the_fixture_check_refuses(tmp_path):
    from labkit.evaluator.rubric import guard_table

    table = guard_table("01-evaluator-authored", tmp_path)
    assert table.to_dict(orient="index") == {
        "re-laid": {"rubric_sha256": "same", "stamp check": "passes", "fixture check": "FixtureChanged"},
        "reworded": {"rubric_sha256": "changed", "stamp check": "StaleRubric", "fixture check": "FixtureChanged"},
    }
