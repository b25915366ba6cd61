"""An exercise's check sees a call to the labkit function it asks the learner to write, under any name."""

from __future__ import annotations

import sys

import pytest

from labkit.course.shortcuts import calls_to
from labkit.evaluator.calibration import agreement, route_criterion
from labkit.evaluator.calibration import route_criterion as renamed
from labkit.recording import Binding, binding_key
from labkit.replay import explain_difference, request_diff
from tests.test_evaluator_calibration import HUMAN, JUDGE, RULE


def test_a_call_under_another_name_is_seen_with_the_functions_own_name():
    alias = binding_key

    def shortcut(request):
        return alias(request)

    with calls_to(binding_key, request_diff) as called:
        shortcut({"model": "m"})
    assert called == ["labkit.recording.binding_key"]


def test_a_call_made_inside_another_labkit_function_is_seen_too():
    def shortcut(recorded, actual):
        return explain_difference(recorded, actual)

    recorded = Binding.make({"model": "m", "messages": []}, None, status_code=0)
    with calls_to(request_diff) as called:
        shortcut(recorded, {"model": "n", "messages": []})
    assert called and set(called) == {"labkit.replay.request_diff"}


def test_own_code_calls_nothing_watched_and_the_previous_profiler_comes_back():
    seen = []

    def outer_profiler(frame, event, arg):
        seen.append(event)

    def own(a, b):
        return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))

    sys.setprofile(outer_profiler)
    try:
        with calls_to(request_diff) as called:
            own({"a": 1}, {"a": 2})
        assert sys.getprofile() is outer_profiler
    finally:
        sys.setprofile(None)
    assert called == [] and "call" in seen  # the outer profiler went on seeing calls meanwhile


def test_a_function_without_python_code_cannot_be_watched():
    with pytest.raises(TypeError, match="has no code to recognise"), calls_to(len):
        pass


def _own(kappa):
    return "judge" if kappa >= 0.6 else "human_review"


def _through_labkit(human, judge):
    return renamed(agreement("tone", "per_criterion", human, judge), RULE).scorer


def test_a_call_under_another_name_is_named_and_own_code_is_not():
    with calls_to(route_criterion) as called:
        _own(0.7)
    assert called == []
    with calls_to(route_criterion) as called:
        _through_labkit(HUMAN, JUDGE)
    assert called == ["labkit.evaluator.calibration.route_criterion"]


def test_the_previous_profiler_is_restored_also_when_the_block_raises():
    before = sys.getprofile()
    with pytest.raises(ZeroDivisionError), calls_to(route_criterion):
        _ = 1 / 0
    assert sys.getprofile() is before


def test_a_function_without_python_code_is_refused_with_what_it_watches():
    with pytest.raises(TypeError, match="watches Python functions"), calls_to(len):
        pass


def test_cell_that_set_returns_the_latest_earlier_cell_assigning_the_name(monkeypatch):
    import IPython

    from labkit.course.shortcuts import cell_that_set

    history = [
        "",
        "VALUE = 0.38",
        "from labkit.evaluator.calibration import kappa_after_one_fix\nVALUE = round(kappa_after_one_fix(a, b), 2)",
        "x = 1",
        "check(VALUE)  # the current cell",
    ]
    shell = type("Shell", (), {"user_ns": {"In": history}})()
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell)
    assert "kappa_after_one_fix" in cell_that_set("VALUE")
    history.append("VALUE: float = 0.55")
    history.append("check(VALUE)")
    assert cell_that_set("VALUE") == "VALUE: float = 0.55"
    assert cell_that_set("OTHER") == ""
    monkeypatch.setattr(IPython, "get_ipython", lambda: None)
    assert cell_that_set("VALUE") == ""


def test_typed_as_number_refuses_a_computed_value_and_accepts_a_typed_one(monkeypatch):
    import IPython

    from labkit.course.shortcuts import typed_as_number

    history = ["", "VALUE = round(kappa(people, fixed), 2)", "check(VALUE)"]
    shell = type("Shell", (), {"user_ns": {"In": history}})()
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell)
    assert not typed_as_number("VALUE")
    history[-1:] = ["VALUE: float = 0.55", "check(VALUE)"]
    assert typed_as_number("VALUE")
    history[-1:] = ["x = 1\nVALUE = -0.07", "check(VALUE)"]
    assert typed_as_number("VALUE")
    history[-1:] = ["VALUE = True", "check(VALUE)"]
    assert not typed_as_number("VALUE")
    assert typed_as_number("OTHER")  # no cell assigns it: no source to refuse


def test_grade_prediction_refuses_no_prediction_a_wrong_one_and_one_computed_instead_of_typed(monkeypatch):
    import pytest

    from labkit.course import shortcuts
    from labkit.course.shortcuts import grade_prediction, typed_as_literal

    choices = ("agree", "disagree")
    monkeypatch.setattr(shortcuts, "cell_that_set", lambda name: 'GUESS = "agree"  # typed\n')
    assert typed_as_literal("GUESS")
    grade_prediction("GUESS", "agree", "agree", choices=choices)
    with pytest.raises(AssertionError, match="set GUESS to one of 'agree', 'disagree'"):
        grade_prediction("GUESS", None, "agree", choices=choices)
    with pytest.raises(AssertionError, match="is not what the check finds: look at it") as wrong:
        grade_prediction("GUESS", "disagree", "agree", choices=choices, hint="look at it")
    assert "'agree'" not in str(wrong.value)  # the message does not name the answer
    computed = 'i = most_influential_item(p, j)\nGUESS = "agree" if p[i] == j[i] else "disagree"\n'
    monkeypatch.setattr(shortcuts, "cell_that_set", lambda name: computed)
    assert not typed_as_literal("GUESS")
    with pytest.raises(AssertionError, match="do not compute it"):
        grade_prediction("GUESS", "agree", "agree", choices=choices)
    monkeypatch.setattr(shortcuts, "cell_that_set", lambda name: 'GUESS: str | None = "agree"\n')
    assert typed_as_literal("GUESS")


def test_grade_prediction_of_a_dict_wants_its_shape_typed_out_and_equal(monkeypatch):
    import pytest

    from labkit.course import shortcuts
    from labkit.course.shortcuts import grade_prediction, typed_as_literal

    truth = {"p06": ["fabric"], "p01": []}
    monkeypatch.setattr(shortcuts, "cell_that_set", lambda name: 'FLAGS = {"p06": ["fabric"], "p01": []}\n')
    assert typed_as_literal("FLAGS")
    grade_prediction("FLAGS", {"p06": ["fabric"], "p01": []}, truth)
    for unshaped in (None, {"p06": ["fabric"]}, [["fabric"], []]):
        with pytest.raises(AssertionError, match="shaped as its comment says"):
            grade_prediction("FLAGS", unshaped, truth)
    with pytest.raises(AssertionError, match="is not what the check finds"):
        grade_prediction("FLAGS", {"p06": [], "p01": []}, truth)
    computed = 'FLAGS = {p: report.flag_descriptions(find).get(p, []) for p in ("p06", "p01")}\n'
    monkeypatch.setattr(shortcuts, "cell_that_set", lambda name: computed)
    with pytest.raises(AssertionError, match="do not compute it"):
        grade_prediction("FLAGS", {"p06": ["fabric"], "p01": []}, truth)
