import pytest
from pydantic import ValidationError

from labkit.trials import Trials, misled_by_one_trace, pattern, repeat_table, verdict, wilson


class Recorder:
    """An adapter that keeps the per-call settings of every request it is given."""

    model = "fake-model"

    def __init__(self, settings):
        self.settings = settings
        self.calls = []

    def generate(self, question, messages, **settings):
        self.calls.append((question, messages, settings))
        return len(self.calls)


def test_each_trial_sends_its_own_seed_at_the_stated_temperature():
    adapter = Recorder({"temperature": 0, "seed": 4, "max_tokens": 64})
    plan = Trials(n=5, temperature=0.7, first_seed=100)
    for trial in plan.each(adapter):
        trial.generate("q", [{"role": "user", "content": "hi"}])
    assert [settings for _, _, settings in adapter.calls] == [{"temperature": 0.7, "seed": s} for s in range(100, 105)]
    assert plan.seeds == [100, 101, 102, 103, 104]


def test_a_trial_adapter_states_the_request_settings_it_will_send():
    adapter = Recorder({"temperature": 0, "seed": 4, "max_tokens": 64})
    third = list(Trials(n=3, temperature=0.9, first_seed=7).each(adapter))[2]
    assert third.trial == 2 and third.seed == 9 and third.model == "fake-model"
    assert third.settings == {"temperature": 0.9, "seed": 9, "max_tokens": 64}
    assert adapter.settings == {"temperature": 0, "seed": 4, "max_tokens": 64}  # the wrapped adapter is untouched


def test_a_trial_outside_the_plan_is_refused():
    with pytest.raises(IndexError, match=r"outside 0\.\.2"):
        Trials(n=3, temperature=0.5, first_seed=0).settings_for({}, 3)


@pytest.mark.parametrize(
    "fields",
    [
        {"n": 1, "temperature": 0.7, "first_seed": 0},  # one trial is a trace, not a repeat
        {"n": 5, "temperature": 0, "first_seed": 0},  # greedy decoding gives every seed the same reply
        {"n": 5, "temperature": 0.7, "first_seed": -1},
        {"n": 5, "temperature": 0.7, "first_seed": 0, "seeds": [1, 2]},
    ],
)
def test_a_plan_that_cannot_repeat_is_refused(fields):
    with pytest.raises(ValidationError):
        Trials(**fields)


def test_the_description_states_count_temperature_and_seeds():
    text = Trials(n=5, temperature=0.7, first_seed=100).describe()
    assert text == "Each case was sent 5 times at temperature 0.7 with seeds 100..104."


def test_wilson_interval_is_scipys_with_the_exact_normal_quantile():
    from scipy.stats import binomtest

    for n in range(1, 61):
        for k in range(n + 1):
            ci = binomtest(k, n).proportion_ci(method="wilson")
            assert wilson(k, n) == (round(ci.low, 3), round(ci.high, 3)), f"{k}/{n}"
    assert wilson(0, 3) == (0.0, 0.561), "z = 1.96 rounded gives 0.562 here; the exact quantile 1.95996... gives 0.561"
    ci = binomtest(7, 9).proportion_ci(confidence_level=0.9, method="wilson")
    assert wilson(7, 9, confidence=0.9) == (round(ci.low, 3), round(ci.high, 3))


def test_wilson_interval_matches_the_formula():
    assert wilson(6, 6) == (0.61, 1.0)
    assert wilson(0, 6) == (0.0, 0.39)
    assert wilson(3, 5) == (0.231, 0.882)
    with pytest.raises(ValueError, match="0 <= successes <= trials"):
        wilson(6, 5)
    with pytest.raises(ValueError, match="trials > 0"):
        wilson(0, 0)


def test_verdict_separates_always_never_and_sometimes():
    assert verdict([True] * 5) == "always"
    assert verdict([False] * 5) == "never"
    assert verdict([True, True, False, True, True]) == "sometimes"
    assert verdict([False, True]) == "sometimes"
    with pytest.raises(ValueError, match="at least one trial"):
        verdict([])


def test_a_case_that_passes_once_and_fails_on_repeat_is_shown_as_misleading():
    outcomes = {
        "c01": [True, True, True, True, True],
        "c02": [True, False, True, True, False],
        "c03": [False] * 4 + [True],
    }
    table = repeat_table(outcomes)
    assert list(table["case"]) == ["c01", "c02", "c03"]
    assert list(table["trials"]) == ["✓✓✓✓✓", "✓✗✓✓✗", "✗✗✗✗✓"]
    assert list(table["passed"]) == ["5/5", "3/5", "1/5"]
    assert list(table["rate"]) == [1.0, 0.6, 0.2]
    assert list(table["first trial"]) == ["pass", "pass", "fail"]
    assert list(table["verdict"]) == ["always", "sometimes", "sometimes"]
    assert (table["wilson_low"] <= table["rate"]).all() and (table["rate"] <= table["wilson_high"]).all()
    assert tuple(table.loc[1, ["wilson_low", "wilson_high"]]) == wilson(3, 5)
    assert misled_by_one_trace(outcomes) == ["c02", "c03"]


def test_a_case_without_trials_is_refused_in_the_table():
    with pytest.raises(ValueError, match="'c09' has no trials"):
        repeat_table({"c09": []})


def test_pattern_marks_each_trial_in_order():
    assert pattern([True, False, False]) == "✓✗✗"


def test_a_verdict_that_changes_on_repeat_is_shown_as_misleading():
    outcomes = {("p07", "tone"): ["fail", "pass", "fail"], ("p07", "completeness"): ["pass"] * 3}
    assert misled_by_one_trace(outcomes) == [("p07", "tone")]
