"""calls_to: a check tells the learner's own code from a call to the labkit function it asks them to write."""

import sys

import pytest

from labkit.course.shortcuts import calls_to
from labkit.evaluator.calibration import agreement, route_criterion
from labkit.evaluator.calibration import route_criterion as renamed
from tests.test_evaluator_calibration import HUMAN, JUDGE, RULE


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
