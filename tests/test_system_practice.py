"""Lesson 05's route-prediction exercise: what the graph does with each reply, and a check that hides it."""

import json
from pathlib import Path

import pytest

from labkit.system.policy import load_policy_index
from labkit.system.practice import ROUTE_REPLIES, check_route_predictions, route_taken

RIGHT = {
    "another intent": ("answered", "tool"),
    "a team in the arguments": ("invalid_output", "check"),
    "cites page 2": ("answered", "check"),
    "a decline with a count": ("invalid_output", "check"),
    "an empty list": ("answered", "tool"),
}
NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "05_minimal_system.ipynb"


@pytest.fixture(scope="module")
def index():
    return load_policy_index()


def test_each_reply_ends_where_the_graphs_check_and_route_send_it(index, tmp_path):
    taken = {name: route_taken(raw, index, tmp_path / "t.jsonl") for name, raw in ROUTE_REPLIES.items()}
    assert taken == RIGHT


def test_right_predictions_pass_and_tuples_or_lists_both_count(index, tmp_path):
    check_route_predictions(RIGHT, index, tmp_path / "t.jsonl")
    check_route_predictions({k: list(v) for k, v in RIGHT.items()}, index, tmp_path / "t.jsonl")


def test_an_unfinished_prediction_is_not_finished_rather_than_wrong(index, tmp_path):
    with pytest.raises(NotImplementedError):
        check_route_predictions({**RIGHT, "cites page 2": None}, index, tmp_path / "t.jsonl")
    with pytest.raises(NotImplementedError):
        check_route_predictions({k: v for k, v in RIGHT.items() if k != "an empty list"}, index, tmp_path / "t.jsonl")


def test_a_wrong_prediction_is_counted_without_giving_the_answer(index, tmp_path):
    wrong = {**RIGHT, "cites page 2": ("invalid_citation", "check"), "an empty list": ("invalid_output", "check")}
    with pytest.raises(AssertionError) as refused:
        check_route_predictions(wrong, index, tmp_path / "t.jsonl")
    message = str(refused.value)
    assert message.startswith("2 of your 5 predictions are wrong")
    assert not any(word in message for word in ("answered", "invalid", 'tool"', "page 2"))


def test_the_notebooks_task_shows_every_reply_it_grades():
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    task = next(c for c in cells if "ex:route-prediction" in c["metadata"].get("tags", []))
    for name, raw in ROUTE_REPLIES.items():
        assert f"{name}" in "".join(task["source"]) and raw in "".join(task["source"]), name


QUOTING = """def check_figures(result: dict, evidence: list[dict]) -> dict:
    if result.get("status") != "answered" or "citation_ids" not in result:
        return result
    number = re.compile(r"\\d+(?:\\.\\d+)?")
    cited = " ".join(e["text"] for e in evidence if e["citation_id"] in result["citation_ids"])
    missing = sorted(set(number.findall(result["text"])) - set(number.findall(cited)))
    if missing:
        return {"status": "unsupported_figure", "reason": f"{result['text']!r}: {missing} unstated"}
    return result
"""


def _figure_check_output(solution: str) -> str:
    """Run the notebook up to exercise 2's check with ``solution`` in its solution cell; return the check's output.

    Executing raises if the check refuses the solution.
    """
    from labkit.course.runner import execute, read_notebook
    from labkit.course.workshop import find_exercises

    nb = read_notebook(NOTEBOOK)
    exercise = next(e for e in find_exercises(nb) if e.slug == "figure-support")
    nb.cells[exercise.solution].source = solution
    nb.cells = nb.cells[: exercise.check + 1]
    execute(nb, NOTEBOOK.parent)
    return "".join(o.get("text", "") for o in nb.cells[exercise.check].outputs)


def test_the_figure_check_passes_a_right_solution_whose_reason_quotes_the_answer(tmp_path):
    """A reason may quote the answer (its supported figures included) as long as it names the unsupported ones."""
    assert "ex:figure-support passed" in _figure_check_output(QUOTING)


LISTING = QUOTING.replace(
    """f"{result['text']!r}: {missing} unstated\"""",
    """f"{missing} not in {sorted(set(number.findall(cited)), key=int)}\"""",
)


def test_the_figure_check_fails_a_reason_that_lists_the_cited_figures_the_answer_states(tmp_path):
    """A reason such as "['45'] not in [2026, 11, 30]" for "Within 30 days, or 45 for gifts." names 30,
    a figure the answer states and page 1 supports: the reason must name only the unsupported ones."""
    assert LISTING != QUOTING and "not in" in LISTING
    with pytest.raises(Exception, match="name only the unsupported ones"):
        _figure_check_output(LISTING)


#: The shortcut a reader found: the reason names every figure of the answer, supported ones included.
ANSWER_FIGURES = QUOTING.replace(
    """f"{result['text']!r}: {missing} unstated\"""",
    """f"check {number.findall(result['text'])}\"""",
)


def test_the_figure_check_fails_a_reason_that_names_every_figure_of_the_answer(tmp_path):
    """Flagging the right answers but naming all of the answer's figures must not pass."""
    assert ANSWER_FIGURES != QUOTING and "findall(result['text'])" in ANSWER_FIGURES
    with pytest.raises(Exception, match="name only the unsupported ones"):
        _figure_check_output(ANSWER_FIGURES)


PAGE_NAMING = QUOTING.replace(
    """f"{result['text']!r}: {missing} unstated\"""",
    """f"{missing} not in {' or '.join(result['citation_ids'])}\"""",
)


def test_the_figure_check_passes_a_right_solution_whose_reason_names_the_cited_page(tmp_path):
    """A reason such as "['30'] not in refund_policy.pdf#p2" names the page's number: that is no stray figure."""
    assert PAGE_NAMING != QUOTING and "citation_ids" in PAGE_NAMING
    assert "ex:figure-support passed" in _figure_check_output(PAGE_NAMING)


EVERY_NUMBER = QUOTING.replace(
    """f"{result['text']!r}: {missing} unstated\"""",
    """f"one of {list(range(100))}\"""",
)


def test_the_figure_check_fails_a_reason_that_names_every_number_from_0_to_99(tmp_path):
    """The shortcut names each unsupported figure by naming all numbers: it must name no figure that
    is neither in the answer nor on the pages it cites."""
    assert EVERY_NUMBER != QUOTING and "range(100)" in EVERY_NUMBER
    with pytest.raises(Exception, match="in neither answer nor pages"):
        _figure_check_output(EVERY_NUMBER)


def test_the_figure_check_fails_the_stub(tmp_path):
    from labkit.course.runner import read_notebook
    from labkit.course.workshop import find_exercises

    exercise = next(e for e in find_exercises(read_notebook(NOTEBOOK)) if e.slug == "figure-support")
    stub = read_notebook(NOTEBOOK).cells[exercise.solution].metadata["labkit"]["stub"]
    with pytest.raises(Exception, match="NotImplementedError"):
        _figure_check_output(stub)


COUNTING = QUOTING.replace(
    """f"{result['text']!r}: {missing} unstated\"""",
    """f"{len(missing)} unsupported figure(s): {', '.join(missing)}\"""",
)


def test_the_figure_check_passes_a_right_solution_whose_reason_counts_the_figures(tmp_path):
    """A reason such as "1 unsupported figure(s): 30" for page 2 states how many figures it names:
    that count is no stray figure, though page 2 states no 1."""
    assert COUNTING != QUOTING and "len(missing)" in COUNTING
    assert "ex:figure-support passed" in _figure_check_output(COUNTING)


FLOAT_NAMING = QUOTING.replace(
    """f"{result['text']!r}: {missing} unstated\"""",
    """f"{[float(m) for m in missing]} unstated\"""",
)


def test_the_figure_check_passes_a_right_solution_that_writes_its_figures_as_decimals(tmp_path):
    """A reason naming 45.0 names the figure 45: the check reads figures as values, not as digit runs."""
    assert FLOAT_NAMING != QUOTING and "float(m)" in FLOAT_NAMING
    assert "ex:figure-support passed" in _figure_check_output(FLOAT_NAMING)


def _compiled(source: str):
    """Return the ``check_figures`` a solution's source defines."""
    import re

    namespace = {"re": re}
    exec(source, namespace)  # the course's own test source, not a learner's
    return namespace["check_figures"]


@pytest.fixture(scope="module")
def figure_setup(index):
    from labkit.boundary import connect
    from labkit.system.policy import load_policy_pages, split_policy
    from labkit.system.runs import RUN_AUTHORED, SETTINGS

    chunks = split_policy(load_policy_pages())
    authored = connect(RUN_AUTHORED, lesson="05", settings=SETTINGS)
    wrong = '{"kind": "answer", "text": "Customers can request a refund within 60 days.", "citation_ids": ["refund_policy.pdf#p1"]}'
    return {"chunks": chunks, "index": index, "authored": authored, "wrong_but_cited": wrong}


def test_the_figure_check_passes_a_right_solution_called_directly(figure_setup, tmp_path):
    from labkit.system.practice import check_figure_support

    assert check_figure_support(_compiled(QUOTING), trace_dir=tmp_path, **figure_setup) == ("ex:figure-support passed")


def _substring_check(result, evidence):  # '20' is found inside '2026'
    import re

    if result.get("status") != "answered" or "citation_ids" not in result:
        return result
    cited = " ".join(e["text"] for e in evidence if e["citation_id"] in result["citation_ids"])
    missing = [n for n in re.findall(r"\d+(?:\.\d+)?", result["text"]) if n not in cited]
    return {"status": "unsupported_figure", "reason": f"{missing}"} if missing else result


def _stub(result, evidence):
    raise NotImplementedError("hint")


@pytest.mark.parametrize(
    ("check_figures", "error"),
    [
        (_stub, NotImplementedError),
        (_substring_check, AssertionError),
        (lambda result, evidence: result, AssertionError),  # trusts check: nothing is ever flagged
    ],
    ids=["the stub", "a substring match", "trusting check"],
)
def test_the_figure_check_refuses_the_stub_a_substring_match_and_trusting_check(
    figure_setup, tmp_path, check_figures, error
):
    from labkit.system.practice import check_figure_support

    with pytest.raises(error):
        check_figure_support(check_figures, trace_dir=tmp_path, **figure_setup)


def test_figure_limits_show_a_word_a_unit_a_false_positive_and_a_false_negative(figure_setup):
    from labkit.system.practice import figure_limits

    table = figure_limits(_compiled(QUOTING), figure_setup["chunks"])
    assert list(table["check_figures"]) == ["answered", "answered", "unsupported_figure", "answered"]
