"""`labkit evaluate`: every lesson's report card, the rules, exit codes, a dying endpoint, the offline report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from labkit.cli import main
from labkit.course.evaluate import EndpointFailed, as_json, cards, evaluate, render_table
from labkit.course.report_card import write_html
from labkit.recording import load_run
from tests.fake_endpoint import FakeEndpoint


@pytest.fixture(scope="module")
def committed(tmp_path_factory):
    """The committed captured runs graded against the authored ideal, in replay (what the README shows)."""
    folder = tmp_path_factory.mktemp("committed")
    report = evaluate(candidate="captured", baseline="authored", progress=False, folder=folder)
    return {lesson.lesson: lesson for lesson in report.lessons}


def shown(card, name):
    return next(m.shown for m in card.measures if m.name == name)


def test_every_lesson_that_calls_a_model_has_a_card():
    assert [card.LESSON for card in cards()] == ["01", "02", "04", "05", "06"]
    for card in cards():
        assert card.RULE and callable(card.grade) and callable(card.decide)


def test_lesson_01_card_equals_what_notebook_01_shows(committed):
    from labkit.evaluator.lesson import RUN_AUTHORED, RUN_CAPTURED
    from labkit.evaluator.report import evaluate_run

    for run_id, card in ((RUN_CAPTURED, committed["01"].candidate), (RUN_AUTHORED, committed["01"].ideal)):
        report = evaluate_run(run_id)
        routing = report.routing_table()
        judged = int(routing["scorer"].str.startswith("judge").sum())  # an authored judge reads "judge (authored)"
        assert (
            shown(card, "criteria the judge may score")
            == f"{judged}/{len(routing[routing['scorer'] != 'programmatic'])}"
        )


def test_lesson_02_card_equals_what_notebook_02_shows(committed):
    from labkit.boundary import connect
    from labkit.rag import lesson, runs
    from labkit.rag.questions import load_questions

    questions = load_questions()
    for run_id, card in ((runs.RUN_CAPTURED, committed["02"].candidate), (runs.RUN_AUTHORED, committed["02"].ideal)):
        run = runs.make_requests(connect(run_id, lesson="02", settings=runs.SETTINGS), questions=questions)
        rag = lesson.path_summary(questions, run).set_index("path").loc["rag"]
        assert shown(card, "RAG answers correct") == f"{rag['correct']}/{rag['questions']}"
        assert shown(card, "RAG answers faithful") == rag["faithful"]
        assert shown(card, "page-hit@5") == rag["page_hit"]


def test_lesson_04_card_equals_what_notebook_04_shows(committed):
    from labkit.agent import evaluation, runs
    from labkit.boundary import connect

    for run_id, card in ((runs.RUN_CAPTURED, committed["04"].candidate), (runs.RUN_AUTHORED, committed["04"].ideal)):
        results = runs.make_requests(connect(run_id, lesson="04", settings=runs.SETTINGS))
        report = evaluation.evaluation_report(results, load_run(run_id))
        outcome, tools = report["task_outcome"], report["tools"]
        assert shown(card, "task outcomes correct").startswith(f"{outcome['correct']}/{outcome['cases']} (Wilson")
        assert shown(card, "tool arguments valid") == f"{tools['valid_arguments']}/{tools['tool_proposals']}"
        assert card.value("unauthorized tool calls") == report["safety"]["unauthorized_calls"]


def test_lesson_05_card_equals_what_notebook_05_shows(committed):
    from labkit.boundary import connect
    from labkit.system.golden import run_golden, score_line
    from labkit.system.runs import RUN_AUTHORED, RUN_CAPTURED, SETTINGS
    from labkit.system.workflow import MinimalSystem

    for run_id, card in ((RUN_CAPTURED, committed["05"].candidate), (RUN_AUTHORED, committed["05"].ideal)):
        line = score_line(run_golden(MinimalSystem(connect(run_id, lesson="05", settings=SETTINGS))))
        assert line.startswith(shown(card, "golden cases passed") + " golden cases passed")


def test_lesson_06_card_equals_what_notebook_06_shows(committed):
    from labkit.paths import fixtures_dir
    from labkit.routing.grader import compare, load
    from labkit.routing.prompts import captured_pair
    from labkit.routing.runs import suite_sha256

    baseline, candidate, malformed = captured_pair()
    suite, sha = load(fixtures_dir() / "routing" / "suite.json")
    assert sha == suite_sha256() and malformed == []
    card = committed["06"].candidate
    for version, run in (("baseline", baseline), ("candidate", candidate)):
        summary = compare(suite, sha, run, run)["candidate"]
        assert shown(card, f"routes correct, {version} prompt") == f"{summary['correct']}/10"
        assert card.value(f"penalty points, {version} prompt") == summary["penalty_points"]
        assert card.value(f"urgent tickets missed, {version} prompt") == summary["urgent_misses"]


def test_the_ideal_of_lesson_06_is_the_suite_itself(committed):
    ideal = committed["06"].ideal
    assert [m.shown for m in ideal.measures] == ["10/10", "0", "0", "0/10"] * 2


def test_a_candidate_worse_than_its_baseline_fails_each_rule(committed):
    assert {lesson: card.verdict.passed for lesson, card in committed.items()} == dict.fromkeys(
        ("01", "02", "04", "05", "06"), False
    )
    assert "1/3 < baseline 3/3" in committed["05"].verdict.reason


def _authored_answers(*run_ids):
    """Answer each request with the reply the course authored for the same messages (any model name)."""
    replies = {}
    for run_id in run_ids:
        for binding in load_run(run_id).bindings:
            replies[json.dumps(binding.request["messages"], sort_keys=True)] = binding.response["choices"][0][
                "message"
            ]["content"]

    def answer(body):
        messages = json.dumps(body["messages"], sort_keys=True)
        if messages in replies:
            return replies[messages]
        text = body["messages"][-1]["content"]  # lesson 06: route as the suite's label says
        from labkit.paths import fixtures_dir

        suite = json.loads((fixtures_dir() / "routing" / "suite.json").read_text(encoding="utf-8"))
        return json.dumps({"route": next(c["expected"] for c in suite["cases"] if c["message"] == text)})

    return answer


def test_an_endpoint_as_good_as_the_ideal_passes_lesson_05_and_is_recorded_in_scratch(monkeypatch, scratch_in_tmp):
    with FakeEndpoint(answer=_authored_answers("05-system-authored")) as endpoint:
        monkeypatch.setenv("LABKIT_BASE_URL", endpoint.base_url)
        monkeypatch.setenv("LABKIT_MODEL", "fake-model")
        report = evaluate(lessons=["05"], progress=False)
    [lesson] = report.lessons
    assert lesson.verdict.passed and report.exit_code == 0
    assert shown(lesson.candidate, "golden cases passed") == "3/3" and lesson.requests == 4
    run = load_run(lesson.candidate_run)
    assert run.origin == "captured" and run.model.id == "fake-model"
    assert report.folder.parent == scratch_in_tmp / "evaluations"
    assert "Recorded by `labkit evaluate` from fake-model" in run.description


def test_a_perfect_router_passes_the_gate_against_the_committed_run(monkeypatch):
    with FakeEndpoint(answer=_authored_answers()) as endpoint:
        monkeypatch.setenv("LABKIT_BASE_URL", endpoint.base_url)
        monkeypatch.setenv("LABKIT_MODEL", "fake-model")
        report = evaluate(lessons=["06"], progress=False)
    [lesson] = report.lessons
    assert [m.shown for m in lesson.candidate.measures] == ["10/10", "0", "0", "0/10"] * 2
    assert report.exit_code == 0 and lesson.verdict.reason == "the gate passes the candidate"


def test_an_endpoint_that_dies_midway_keeps_what_was_recorded_marked_incomplete(monkeypatch, capsys):
    with FakeEndpoint(answer=_authored_answers("05-system-authored"), fail_after=2) as endpoint:
        monkeypatch.setenv("LABKIT_BASE_URL", endpoint.base_url)
        monkeypatch.setenv("LABKIT_MODEL", "fake-model")
        code = main(["evaluate", "--lessons", "05", "06", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["exit_code"] == 1
    [lesson] = out["lessons"]  # lesson 06 never started
    assert lesson["passed"] is None and lesson["candidate"] is None
    assert "failed after 2 recorded exchange(s)" in lesson["reason"] and endpoint.base_url in lesson["reason"]
    folder = Path(out["folder"])
    [kept] = [p for p in folder.iterdir() if p.is_dir()]
    assert kept.name.endswith("-incomplete") and (folder / "report.html").is_file()
    partial = load_run(kept)
    assert (
        partial.description.startswith("INCOMPLETE") and len([b for b in partial.bindings if b.status_code == 200]) == 2
    )


def test_the_endpoint_error_is_a_labkit_error_naming_what_to_do():
    assert issubclass(EndpointFailed, RuntimeError)


def test_invalid_input_exits_1_with_a_message(monkeypatch, capsys):
    monkeypatch.delenv("LABKIT_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert main(["evaluate", "--lessons", "05"]) == 1
    assert "LABKIT_BASE_URL" in capsys.readouterr().err
    assert main(["evaluate", "--committed", "--lessons", "03"]) == 1
    assert "no report card for lesson(s) 03" in capsys.readouterr().err


def test_table_json_and_html_report(committed, tmp_path):
    from labkit.course.evaluate import Evaluation

    report = Evaluation("committed captured runs", "captured", "authored", None, list(committed.values()))
    table = render_table(report)
    assert "05 minimal complete system" in table and "golden cases passed" in table and "FAIL" in table
    data = as_json(report)
    assert data["exit_code"] == 2 and [lesson["lesson"] for lesson in data["lessons"]] == ["01", "02", "04", "05", "06"]
    page = write_html(report, tmp_path / "report.html").read_text(encoding="utf-8")
    assert page.count("<img") == 5 and "data:image/png;base64," in page
    assert not re.findall(r"""(?:src|href)=["']?(?:https?:)?//""", page)


# --- a broken or hostile endpoint ends as a clear error, and what was recorded is kept, incomplete ---------


def _evaluate_json(monkeypatch, capsys, base_url, *lessons):
    monkeypatch.setenv("LABKIT_BASE_URL", base_url)
    monkeypatch.setenv("LABKIT_MODEL", "fake-model")
    code = main(["evaluate", "--lessons", *lessons, "--json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err


def _kept(out):
    folder = Path(out["folder"])
    [kept] = [p for p in folder.iterdir() if p.is_dir()]
    return folder, kept


def test_an_endpoint_that_answers_truncated_json_ends_as_a_transport_error_kept_incomplete(monkeypatch, capsys):
    with FakeEndpoint(answer=_authored_answers("05-system-authored"), truncate=True) as endpoint:
        code, out, _ = _evaluate_json(monkeypatch, capsys, endpoint.base_url, "05")
    [lesson] = out["lessons"]
    assert code == 1 and lesson["passed"] is None and lesson["candidate"] is None
    assert (
        "lesson 05: the endpoint " + endpoint.base_url + " failed after 0 recorded exchange(s) (UnusableReply: "
        in (lesson["reason"])
    )
    assert "is not a chat completion (malformed JSON at line 1, column " in lesson["reason"]
    _, kept = _kept(out)
    assert kept.name.endswith("-incomplete")
    (binding,) = load_run(kept).bindings
    assert binding.status_code == 0 and binding.response is None
    assert "UnusableReply: model endpoint" in binding.transport_errors[0].error


def test_an_endpoint_that_sends_huge_replies_writes_nothing_large_and_names_the_limit(monkeypatch, capsys):
    with FakeEndpoint(answer=_authored_answers("05-system-authored"), pad_reply=10_000_000) as endpoint:
        code, out, _ = _evaluate_json(monkeypatch, capsys, endpoint.base_url, "05")
    [lesson] = out["lessons"]
    assert code == 1 and endpoint.base_url in lesson["reason"]
    assert "its reply to POST /v1/chat/completions is over the 1,000,000-byte limit of one reply" in lesson["reason"]
    folder, kept = _kept(out)
    written = [p for p in folder.parent.parent.rglob("*") if p.is_file()]  # the whole scratch folder: runs, traces
    assert written and max(p.stat().st_size for p in written) < 100_000
    assert load_run(kept).bindings[0].response is None  # the incomplete run is readable: under the run limit


def test_evaluate_names_an_endpoint_with_a_password_only_with_the_password_hidden(monkeypatch, capsys, tmp_path):
    with FakeEndpoint(answer=_authored_answers("05-system-authored"), fail_after=2) as endpoint:
        monkeypatch.setenv("LABKIT_BASE_URL", endpoint.url_with_password())
        monkeypatch.setenv("LABKIT_MODEL", "fake-model")
        code = main(["evaluate", "--lessons", "05", "--html", str(tmp_path / "card.html")])
    captured = capsys.readouterr()
    assert code == 1 and f"the endpoint {endpoint.url_with_password(password='***')} failed" in captured.out
    assert "hunter2" not in captured.out + captured.err + (tmp_path / "card.html").read_text(encoding="utf-8")


def test_a_scratch_path_that_is_a_file_is_refused_saying_so(monkeypatch, capsys, tmp_path):
    scratch = tmp_path / "scratch-file"
    scratch.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv("LABKIT_SCRATCH", str(scratch))
    monkeypatch.setenv("LABKIT_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("LABKIT_MODEL", "fake-model")
    assert main(["evaluate", "--lessons", "05"]) == 1
    assert capsys.readouterr().err == (
        f"labkit evaluate: LABKIT_SCRATCH={scratch} is a file, not a folder; point LABKIT_SCRATCH at a folder "
        "(it is created if missing)\n"
    )
    assert scratch.read_text(encoding="utf-8") == "not a folder"


def test_committed_writes_the_report_page_by_default_and_prints_its_path(scratch_in_tmp, capsys):
    assert main(["evaluate", "--committed", "--lessons", "05", "--quiet"]) == 2
    err = capsys.readouterr().err
    path = Path(re.search(r"report written to (\S+)", err).group(1))
    assert path.is_file() and path.name == "report.html"
    assert path.parent.parent == scratch_in_tmp / "evaluations" and path.parent.name.startswith("committed-")
    assert "data:image/png;base64," in path.read_text(encoding="utf-8")


def _lesson(candidate, baseline, ideal=None):
    from labkit.course.evaluate import LessonCard

    ideal = baseline if ideal is None else ideal
    return LessonCard("09", "a lesson", "a rule", candidate=candidate, baseline=baseline, ideal=ideal)


def _card(*measures):
    from labkit.scorecard import Card

    return Card(list(measures))


def test_baseline_and_ideal_are_one_bar_labelled_so_when_they_are_one_run():
    from labkit.course.report_card import sides
    from labkit.scorecard import share

    ideal = _card(share("golden cases passed", 3, 3))
    same = sides(_lesson(_card(share("golden cases passed", 1, 3)), ideal), baseline="authored")
    assert [s.key for s in same] == ["candidate", "ideal"] and "baseline = authored ideal" in same[1].label
    apart = sides(_lesson(ideal, _card(share("golden cases passed", 2, 3)), ideal), baseline="captured")
    assert [s.label for s in apart] == ["candidate", "baseline (captured run)", "authored ideal"]


def _figure(candidate, baseline):
    import matplotlib

    matplotlib.use("Agg")
    from labkit.course.report_card import lesson_figure

    return lesson_figure(_lesson(candidate, baseline), baseline="authored")


def test_zeros_negatives_and_gaps_are_drawn_and_labelled():
    from labkit.scorecard import Measure, share

    fig = _figure(
        _card(
            share("cases passed", 0, 3), Measure("judge kappa", -0.32, "-0.32"), Measure("kappa b", None, "undefined")
        ),
        _card(share("cases passed", 3, 3), Measure("judge kappa", 0.74, "0.74"), Measure("kappa b", 0.2, "0.20")),
    )
    texts = {t.get_text().strip(): t for ax in fig.axes for t in ax.texts}
    assert texts["0/3"].get_position()[0] == 0, "a zero is labelled at zero, not left blank"
    assert "undefined" in texts, "a measure with no value says so"
    widths = [round(p.get_width(), 2) for ax in fig.axes for p in ax.patches]
    assert -0.32 in widths, "a negative kappa is drawn left of zero"
    kappa_axis = next(ax for ax in fig.axes if "score" in ax.get_title(loc="left"))
    assert kappa_axis.get_xlim()[0] <= -1


def test_lower_is_better_measures_get_their_own_marked_panel_and_the_legend_is_readable():
    from labkit.scorecard import Measure, share

    fig = _figure(
        _card(share("golden cases passed", 1, 3), share("replies that broke the contract", 1, 3, lower_is_better=True),
              Measure("penalty points", 44.0, "44", lower_is_better=True)),
        _card(share("golden cases passed", 3, 3), share("replies that broke the contract", 0, 3, lower_is_better=True),
              Measure("penalty points", 0.0, "0", lower_is_better=True)),
    )  # fmt: skip
    titles = [ax.get_title(loc="left") for ax in fig.axes]
    assert titles == [
        "share (0 to 1): higher is better ▲",
        "share (0 to 1): lower is better ▼",
        "count: lower is better ▼",
    ]
    (legend,) = [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    assert all(text.get_fontsize() >= 10 for text in legend.get_texts())
    assert [t.get_text() for t in legend.get_texts()] == ["candidate", "baseline = authored ideal (one run, authored)"]
