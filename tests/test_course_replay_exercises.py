import copy
import json

import pytest

from labkit.canonical import json_inside
from labkit.course.replay_exercises import (
    CHANGES,
    REWRITE_KINDS,
    check_changed_fields,
    check_equal_yet_refused,
    check_hash_predictions,
    hash_effects,
)
from labkit.rag.trace import RUN_AUTHORED
from labkit.recording import load_run
from labkit.replay import request_diff


@pytest.fixture(scope="module")
def run():
    return load_run(RUN_AUTHORED)


def _schema_reversed(request):
    changed = copy.deepcopy(request)
    schema = changed["response_format"]["schema"]
    schema["properties"] = dict(reversed(schema["properties"].items()))
    return changed


def test_one_key_order_and_one_number_rewrite_pass(run):
    check_equal_yet_refused(lambda r: [_schema_reversed(r), {**r, "seed": float(r["seed"])}], run)


def test_two_number_rewrites_are_refused_as_one_kind(run):
    def two_numbers(r):
        return [{**r, "seed": float(r["seed"])}, {**r, "max_tokens": float(r["max_tokens"])}]

    with pytest.raises(AssertionError, match="one of each kind"):
        check_equal_yet_refused(two_numbers, run)


def test_a_rewrite_the_client_sends_as_recorded_is_refused(run):
    with pytest.raises(AssertionError, match="got the recorded reply"):
        check_equal_yet_refused(lambda r: [_schema_reversed(r), dict(reversed(r.items()))], run)


def test_a_rewrite_that_edits_its_argument_is_refused(run):
    def in_place(r):
        r["seed"] = float(r["seed"])
        return [_schema_reversed(r), r]

    with pytest.raises(AssertionError, match="changed the request it was given"):
        check_equal_yet_refused(in_place, run)


def test_changed_values_are_refused_as_not_equal(run):
    with pytest.raises(AssertionError, match="not == the request"):
        check_equal_yet_refused(lambda r: [{**r, "seed": 8}, {**r, "temperature": 0.5}], run)


def test_the_rewrite_kinds_are_named_in_the_failure(run):
    with pytest.raises(AssertionError) as raised:
        check_equal_yet_refused(lambda r: [_schema_reversed(r), _schema_reversed(r)], run)
    assert all(kind in str(raised.value) for kind in REWRITE_KINDS)


def _paths(recorded, actual):
    return sorted(d.path for d in request_diff(recorded, actual))


def _json_text_equal(recorded, actual):
    return json.dumps(recorded) == json.dumps(actual)


def _own_walk(recorded, actual, path="", same=_json_text_equal, lengths=True):

    recorded, actual = json_inside(recorded), json_inside(actual)
    if isinstance(recorded, dict) and isinstance(actual, dict):
        found = []
        for key in set(recorded) | set(actual):
            where = f"{path}.{key}" if path else key
            if key in recorded and key in actual:
                found += _own_walk(recorded[key], actual[key], where, same, lengths)
            else:
                found.append(where)
        return sorted(found)
    if isinstance(recorded, list) and isinstance(actual, list) and (lengths or len(recorded) == len(actual)):
        length = [f"{path} (length)"] if len(recorded) != len(actual) else []
        return sorted(
            length
            + [
                p
                for i, (r, a) in enumerate(zip(recorded, actual, strict=False))
                for p in _own_walk(r, a, f"{path}[{i}]", same, lengths)
            ]
        )
    return [] if same(recorded, actual) else [path]


def test_a_walk_of_its_own_passes_the_changed_fields_check(run):
    check_changed_fields(_own_walk, run)


def test_calling_labkits_diff_is_refused(run):
    with pytest.raises(AssertionError, match="called labkit's"):
        check_changed_fields(_paths, run)


def test_comparing_leaves_with_python_equality_is_refused(run):
    def python_equal(recorded, actual):
        return _own_walk(recorded, actual, same=lambda r, a: r == a)

    with pytest.raises(AssertionError, match="yours \\[\\], the refusal's diff names \\['temperature'\\]"):
        check_changed_fields(python_equal, run)


def test_a_list_of_another_length_named_as_one_changed_value_is_refused(run):
    def whole_list(recorded, actual):
        return _own_walk(recorded, actual, lengths=False)

    with pytest.raises(AssertionError, match="passages \\(length\\)"):
        check_changed_fields(whole_list, run)


def test_unsorted_paths_are_refused(run):
    with pytest.raises(AssertionError, match="not sorted"):
        check_changed_fields(lambda r, a: sorted(_own_walk(r, a), reverse=True), run)


WHAT_HAPPENS = {
    "a space at the end of the question": {"request_key", "replay refuses"},
    "a link edited in a scratch copy of the corpus": {"index id", "request_key"},
    "a link edited in the repository's corpus": {"index id", "request_key", "load refuses"},
    "the repository's corpus re-indented": {"index id", "request_key", "load refuses"},
    "a copy of the run file re-indented": set(),
}


def test_each_hash_moves_only_for_the_changes_it_covers(run, tmp_path):
    assert hash_effects(run, tmp_path) == WHAT_HAPPENS


def test_right_predictions_pass(run, tmp_path):
    check_hash_predictions(lambda change: set(WHAT_HAPPENS[change]), run, tmp_path)


def test_a_wrong_prediction_is_counted_but_not_named(run, tmp_path):
    predicted = {**WHAT_HAPPENS, "a copy of the run file re-indented": {"load refuses"}}
    with pytest.raises(AssertionError, match="1 of 5 predictions") as refused:
        check_hash_predictions(predicted.__getitem__, run, tmp_path)
    assert "re-indented" not in str(refused.value) and "load refuses" not in str(refused.value)


def test_predicting_that_replay_refuses_every_change_is_refused(run, tmp_path):
    predicted = {change: effects | {"replay refuses"} for change, effects in WHAT_HAPPENS.items()}
    with pytest.raises(AssertionError, match="4 of 5 predictions"):
        check_hash_predictions(predicted.__getitem__, run, tmp_path)


def test_computing_the_effects_with_labkit_is_refused(run, tmp_path):
    with pytest.raises(AssertionError, match=r"called labkit's .*hash_effects"):
        check_hash_predictions(lambda change: hash_effects(run, tmp_path / "mine")[change], run, tmp_path)


def test_predictions_must_be_sets_of_known_effects(run, tmp_path):
    with pytest.raises(AssertionError, match="a set drawn from"):
        check_hash_predictions(
            {**WHAT_HAPPENS, "a copy of the run file re-indented": {"binding key"}}.__getitem__, run, tmp_path
        )
    with pytest.raises(AssertionError, match="a set drawn from"):
        check_hash_predictions(lambda change: list(WHAT_HAPPENS[change]), run, tmp_path)
    assert list(WHAT_HAPPENS) == list(CHANGES)


def test_loading_the_edited_run_inside_predict_is_refused(run, tmp_path):
    from labkit.recording import load_run

    def predict(change):
        load_run("02-rag-authored")
        return set(WHAT_HAPPENS[change])

    with pytest.raises(AssertionError, match=r"called labkit's .*load_run"):
        check_hash_predictions(predict, run, tmp_path)
