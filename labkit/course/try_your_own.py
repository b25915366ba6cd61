"""The "try your own" cell of each notebook: one named change, its answer, and how the lesson's checks judge it.

Each lesson has one function here, called from the last cell of its notebook
with the value the learner edits (a question, a prompt line, ``k``). It builds
the lesson's real request with that value and sends it through `connect`:

- unchanged (as committed), the request is the recorded one and the answer is
  replayed from the course's run, in every mode;
- changed, replay mode (nbval, ``labkit run``, the default) refuses it and the
  result shows the diff and the one-line hint; explore mode asks a live model,
  saves the exchange under ``scratch/explore/`` and labels the answer
  "captured now from <model>, your change: not part of the course's recorded runs".

No function here opens a socket in replay mode: replay never does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from labkit.boundary import connect
from labkit.errors import RecordedRunError
from labkit.explore import answer_origin, changed_fields
from labkit.refusal import hints_in
from labkit.replay import ReplayRequestMismatch, describe_diff

if TYPE_CHECKING:
    from labkit.recording import RecordedRun

AnswerPath = Literal["recorded", "explore", "refused"]
#: The line a replayed answer ends with: how to see a real answer to a change.
TRY_HINT = (
    "Change the value and run the cell again: replay mode refuses the new request and shows what changed; "
    "in explore mode (`python3 course.py lab --explore`) a real model answers it."
)


@dataclass(frozen=True)
class TryYourOwn:
    """What one "try your own" request did: where its answer came from and what the lesson's check says."""

    change: str
    """The learner's change, as ``NAME = value``."""
    path: AnswerPath
    """``recorded`` (the course's run answered), ``explore`` (a live model answered) or ``refused`` (replay mode)."""
    origin: str
    """Where the answer came from, as a notebook shows origins."""
    answer: str | None
    """The model's reply text, or None when the request was refused."""
    verdict: str
    """How the lesson's check judges the answer."""
    look_for: str
    """What to look for in the answer."""
    diff: list[dict[str, Any]] = field(default_factory=list)
    """How the request differs from the nearest recorded one (empty when it is the recorded one)."""
    hints: list[str] = field(default_factory=list)
    """What to do next, for a refused request."""

    def __str__(self) -> str:
        lines = [f"your change: {self.change}", f"answer from: {self.origin}"]
        if self.diff and self.path == "explore":
            lines.append("your request differs from the nearest recorded one in:")
            lines.extend(f"  {d['path']}" for d in self.diff[:6])
        if self.answer is not None:
            lines.append(f"answer: {self.answer}")
        lines.append(f"the lesson's check: {self.verdict}")
        lines.append(f"look for: {self.look_for}")
        lines.extend(self.hints)
        return "\n".join(lines)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))


def ask(
    *,
    change: str,
    run_id: str,
    lesson: str,
    settings: dict[str, Any],
    key: str,
    messages: list[dict[str, Any]],
    judge: Callable[[str], str],
    look_for: str,
    per_call: dict[str, Any] | None = None,
) -> TryYourOwn:
    """Send one lesson request through `connect` in the current mode and judge its answer with ``judge``."""
    boundary = connect(run_id, lesson=lesson, settings=settings)
    try:
        completion = boundary.generate(key, messages, **(per_call or {}))
    except ReplayRequestMismatch as refusal:
        diff = [{"path": d.path, "recorded": d.recorded, "actual": d.actual} for d in refusal.diff]
        return TryYourOwn(
            change,
            "refused",
            f"nothing: replay mode has no recorded answer for this request (run {run_id})",
            None,
            "not judged: there is no answer",
            look_for,
            diff,
            ["what changed, field by field:\n" + describe_diff(refusal.diff), *hints_in(str(refusal))],
        )
    text = completion.choices[0].message.content or ""
    label = answer_origin(completion)
    if label is None:
        origin = f"the course's recorded run {run_id} ({boundary.origin})"
        hints = [] if boundary.mode == "explore" else [TRY_HINT]
        return TryYourOwn(change, "recorded", origin, text, judge(text), look_for, hints=hints)
    return TryYourOwn(change, "explore", label, text, judge(text), look_for, changed_fields(boundary))


# --- lesson 01: a prompt line for the description writer -------------------------------------------------


def try_generation_line(line: str, *, product: str = "p01") -> TryYourOwn:
    """Lesson 01: add ``line`` to the description writer's instructions for one product; run the programmatic checks.

    An empty ``line`` is the recorded request. The cost check is left out of the verdict: no
    price is computed for a try-your-own reply, so its status would say nothing.
    """
    from labkit.evaluator.checks import run_checks
    from labkit.evaluator.generation import GENERATION_SETTINGS, generation_messages
    from labkit.evaluator.lesson import RUN_AUTHORED, SETTINGS, load_inputs

    inputs = load_inputs()
    chosen = inputs.products[product]
    messages = generation_messages(chosen, inputs.rubric)
    if line:
        messages[0]["content"] += " " + line

    def judge(text: str) -> str:
        report = run_checks(text, chosen, inputs.rubric, cost_usd=0.0)  # cost is not measured here: left out
        measured = ", ".join(f"{r.name} {r.status}" for r in report.results if r.name != "cost")
        return f"{measured} (cost not measured here)"

    return ask(
        change=f"PROMPT_LINE = {line!r}",
        run_id=RUN_AUTHORED,
        lesson="01",
        settings=SETTINGS,
        key=f"describe:{chosen.id}",
        messages=messages,
        per_call=GENERATION_SETTINGS,
        judge=judge,
        look_for="a number with a unit the check reads (h, g, kg, mm, cm, EUR) that is not in the product's "
        "facts: numeric_claims fails on it ('a 5-year warranty' or 'waterproof' passes every check: none reads them)",
    )


# --- lessons 02 and 03: the docs app's policy line and question --------------------------------------------


def _docs_request(question: str, line: str) -> tuple[list[dict[str, Any]], Callable[[str], str]]:
    """Return the docs app's messages for ``question`` over the passages retrieved for the recorded question."""
    from pydantic import ValidationError

    from labkit.rag.trace import QUESTIONS, K, Reply, ReplyRejected, check_reply, load_docs_index, prompt

    index = load_docs_index()
    recorded = QUESTIONS["answered"]  # its query vector is saved, so retrieval needs no embedding model
    selected = [doc for doc, _ in index.store.similarity_search_with_score(recorded, k=K)]
    messages = prompt(question, selected)
    if line:
        messages[0]["content"] += " " + line

    def judge(text: str) -> str:
        try:
            reply = Reply.model_validate_json(text)
            check_reply(reply, selected)
        except ValidationError as exc:
            return f"reply_rejected (invalid shape: {exc.errors(include_url=False)[0]['msg']})"
        except ReplyRejected as exc:
            return f"reply_rejected ({exc})"
        return f"reply_checked: status {reply.status}, sources {reply.source_ids} (all among the passages sent)"

    return messages, judge


def try_policy_line(line: str) -> TryYourOwn:
    """Lesson 02: add ``line`` to the docs app's system policy for the timestamp question (empty: the recorded one)."""
    from labkit.rag.trace import QUESTIONS, RUN_AUTHORED, SETTINGS

    question = QUESTIONS["answered"]
    messages, judge = _docs_request(question, line)
    return ask(
        change=f"POLICY_LINE = {line!r}",
        run_id=RUN_AUTHORED,
        lesson="02",
        settings=SETTINGS,
        key=question,
        messages=messages,
        judge=judge,
        look_for="whether the reply still cites only passages it was sent, and whether the line changed its status",
    )


def try_question(question: str) -> TryYourOwn:
    """Lesson 03: ask ``question`` over the passages the recorded timestamp question retrieved."""
    from labkit.rag.trace import RUN_AUTHORED, SETTINGS

    messages, judge = _docs_request(question, "")
    return ask(
        change=f"QUESTION = {question!r}",
        run_id=RUN_AUTHORED,
        lesson="02",
        settings=SETTINGS,
        key=question,
        messages=messages,
        judge=judge,
        look_for="a question the passages do not answer should come back not_in_docs with no sources",
    )


def explore_run_for(question: str, *, folder: Path | None = None) -> RecordedRun | None:
    """Lesson 03: return the newest run explore mode saved for `try_question` (``question``), or None.

    Explore mode saves each answer to a changed request as a captured run under
    ``scratch/explore/`` (or ``folder``). The run returned binds exactly the
    request `try_question` sends for ``question``, so `BoundReplay.from_run`
    replays it; a run that no longer loads is passed over, as explore mode does.
    """
    from labkit.explore import EXPLORE_FOLDER
    from labkit.paths import scratch_dir
    from labkit.recording import RUN_FILE, load_run

    folder = folder or scratch_dir() / EXPLORE_FOLDER
    messages, _judge = _docs_request(question, "")
    found = []
    for path in sorted(folder.glob(f"explore-02-*/{RUN_FILE}")):
        try:
            run = load_run(path)
        except RecordedRunError:
            continue
        if any(b.question == question and b.request.get("messages") == messages for b in run.bindings):
            found.append(run)
    return max(found, key=lambda run: run.created_at, default=None)


def replay_your_run(question: str, *, folder: Path | None = None) -> str:
    """Lesson 03: replay the run explore mode saved for ``question`` with `BoundReplay`, and say what came back.

    Your question gets the reply your run recorded; the course's recorded
    question is refused, because your run does not bind it. Without such a run
    (explore mode never answered ``question``), say how to make one.
    """
    from labkit.rag.trace import QUESTIONS
    from labkit.replay import BoundReplay, replay_refusal

    mine = explore_run_for(question, folder=folder)
    if mine is None:
        return "No run of yours binds this question yet: change QUESTION in explore mode first."
    own = BoundReplay.from_run(mine)
    recorded = QUESTIONS["answered"]
    reply = own.generate(question, _docs_request(question, "")[0]).choices[0].message.content
    refused = replay_refusal(own, recorded, _docs_request(recorded, "")[0]) is not None
    return "\n".join(
        [
            f"your run {mine.run_id} | origin: {mine.origin} | model id: {mine.model.id}",
            f"your question, replayed: {reply}",
            f"the course's recorded question: {'refused' if refused else 'replayed'}",
        ]
    )


# --- lesson 04: the router's question ---------------------------------------------------------------------


def try_router_question(question: str) -> TryYourOwn:
    """Lesson 04: route ``question`` for analyst-ana on the approved dataset; the router accepts one of four routes."""
    from labkit.agent.identity import authorize
    from labkit.agent.router import parse_route, router_messages
    from labkit.agent.runs import CASES, RUN_AUTHORED, SETTINGS

    case = CASES[0]  # "How many refund requests are in the dataset?", routed `structured`
    caller = authorize(case.user_id, f"eval-{case.id}", case.scope)

    def judge(text: str) -> str:
        result = parse_route(text)
        return f"route {result.route}" if result.problem is None else f"invalid route: {result.problem}"

    return ask(
        change=f"QUESTION = {question!r}",
        run_id=RUN_AUTHORED,
        lesson="04",
        settings=SETTINGS,
        key=f"route:{question}",
        messages=router_messages(question, caller),
        judge=judge,
        look_for="a sports or CRM question should route out_of_scope, so no data tool is ever called",
    )


# --- lesson 02b: a line added to the filings pipeline's grounded policy ---------------------------------


def try_filings_policy_line(line: str, *, question_id: str = "017") -> TryYourOwn:
    """Lesson 02b: add ``line`` to the grounded policy for one filings question (empty: the recorded request).

    The passages are the ones `FilingsRAG.retrieve` selects at k=5 (saved vectors, no embedding model);
    the lesson's checks judge the reply: the reply schema, citations among the passages sent, correctness
    against the reference answer and faithfulness of its figures to the cited pages.
    """
    from pydantic import ValidationError

    from labkit.rag.answer import SETTINGS, FilingsRAG, InvalidCitation, Reply, check_citations, render_grounded_prompt
    from labkit.rag.index import open_index, saved_vectors
    from labkit.rag.metrics import correctness, faithful
    from labkit.rag.questions import load_questions
    from labkit.rag.runs import RUN_AUTHORED, K

    questions = load_questions()
    question = next(q for q in questions if q.financebench_id == f"labkit_filings_{question_id}")
    index = open_index({q.doc_name for q in questions}, embeddings=saved_vectors())
    _candidates, selected = FilingsRAG(index, model=None).retrieve(question.question, k=K)
    messages = render_grounded_prompt(question=question.question, evidence=selected)
    if line:
        messages[0]["content"] += " " + line

    def judge(text: str) -> str:
        try:
            reply = Reply.model_validate_json(text)
            check_citations(reply, {item["citation_id"] for item in selected})
        except ValidationError as exc:
            return f"failed trial (invalid shape: {exc.errors(include_url=False)[0]['msg']})"
        except InvalidCitation as exc:
            return f"failed trial ({exc})"
        status = "answered" if reply.status == "answered" else "refused"
        record = {"status": status, "answer": reply.answer, "cited_pages": reply.cited_pages, "retrieved": selected}
        return f"correctness {correctness(question, record)}, faithful {faithful(record)}, cited {reply.cited_pages}"

    return ask(
        change=f"POLICY_LINE = {line!r}",
        run_id=RUN_AUTHORED,
        lesson="02",
        settings=SETTINGS,
        key=question.question,
        messages=messages,
        judge=judge,
        look_for="whether the figure is still one a cited page prints (faithful True), or the reply now breaks the schema",
    )


# --- lesson 05: how many policy chunks go in as evidence --------------------------------------------------


def try_evidence_k(k: int) -> TryYourOwn:
    """Lesson 05: answer the first golden question with the ``k`` nearest policy chunks as evidence (3 is recorded)."""
    from labkit.system.contract import SETTINGS
    from labkit.system.golden import GOLDEN
    from labkit.system.policy import load_policy_index
    from labkit.system.runs import RUN_AUTHORED
    from labkit.system.workflow import build_messages, check

    question = GOLDEN[0].question
    found = load_policy_index().store.similarity_search_with_score(question, k=k)
    evidence = [{"citation_id": doc.metadata["citation_id"], "text": doc.page_content} for doc, _ in found]

    def judge(text: str) -> str:
        result = check({"question": question, "team": GOLDEN[0].team, "evidence": evidence, "reply": text})["result"]
        return f"{result['status']}" + (f" ({result['reason']})" if "reason" in result else "")

    return ask(
        change=f"K = {k!r}",
        run_id=RUN_AUTHORED,
        lesson="05",
        settings=SETTINGS,
        key=question,
        messages=build_messages(question, evidence),
        judge=judge,
        look_for=(
            "the reply above is the course's authored one, not a model's; the optional part's tables show what "
            "SmolLM2 replied at K = 3, with the unchanged prompt and with prompt_fix.SYSTEM_FIXED. K = 1 keeps only "
            "the rank-1 chunk, which holds the refund window: does a real model, given the shorter prompt, answer "
            "and cite refund_policy.pdf#p1, or name get_refund as those replies did? If it names get_refund, change "
            "the prompt too (MinimalSystem(connect(...), system=...)): a prompt of your own."
        ),
    )


# --- lesson 06: one ticket's text -------------------------------------------------------------------------


def try_ticket_message(message: str, *, ticket: str = "t1", prompt: str = "candidate") -> TryYourOwn:
    """Lesson 06: route ``ticket`` with ``message`` as its text, as section 11 sends it; the suite's route judges the reply.

    The request is section 11's ``prompt`` version (`labkit.routing.prompts`): the system prompt, the
    text alone as the user message, and a reply schema that allows only a route.
    """
    from labkit.canonical import load_strict
    from labkit.paths import fixtures_dir
    from labkit.routing.prompts import RUN_CAPTURED, SETTINGS, prompt_messages

    suite, _ = load_strict(fixtures_dir() / "routing" / "suite.json")
    expected = next(case["expected"] for case in suite["cases"] if case["id"] == ticket)

    def judge(text: str) -> str:
        return route_reply_verdict(expected, text)

    return ask(
        change=f"TICKET_MESSAGE = {message!r}",
        run_id=RUN_CAPTURED,
        lesson="06",
        settings=SETTINGS,
        key=f"{prompt}: {ticket}",
        messages=prompt_messages(prompt, message),
        judge=judge,
        look_for=(
            "whether a reworded outage still routes urgent_support, where a miss costs "
            f"{suite['penalties'][expected]} penalty points"
        ),
    )


def route_reply_verdict(expected: str, text: str) -> str:
    """Lesson 06's check of one route-only reply: its route against the suite's, or why the gate could not grade it."""
    from labkit.routing.prompts import parse_route

    route, problem = parse_route(text)
    if problem is not None:
        return f"malformed ({problem}): the gate refuses to grade a run that holds it (exit code 1)"
    return f"route {route}; the suite expects {expected}: {'correct' if route == expected else 'a miss'}"


def recorded_ticket_message(ticket: str = "t1") -> str:
    """Return the recorded text of ``ticket`` (the value a notebook's "try your own" cell starts from)."""
    from labkit.canonical import load_strict
    from labkit.paths import fixtures_dir

    inputs, _ = load_strict(fixtures_dir() / "routing" / "model-inputs.json")
    return str(next(item["message"] for item in inputs if item["id"] == ticket))
