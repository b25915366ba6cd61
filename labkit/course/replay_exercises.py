"""The checks of lesson 03's three exercises, kept here so the notebook's check cells stay short.

Exercises 1 and 3 ask for predictions: their checks make each change, try it
(under replay, through the real `openai` client) and count the wrong
predictions. Exercise 2's check runs the learner's diff on the recorded run's
requests. Each raises `AssertionError` with what to fix. A check prints
nothing: it never shows the answer before it passes.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from labkit.canonical import request_json
from labkit.course.shortcuts import calls_to
from labkit.recording import CHAT_PATH, RecordedRun
from labkit.replay import (
    BindingStore,
    ReplayRequestMismatch,
    explain_difference,
    replay_client,
    request_diff,
    text_diff,
)

#: Short names of lesson 02a's two questions, for the notebook's printed lines.
LABEL = {
    "How do I parse an ISO 8601 timestamp that ends in Z?": "ISO timestamp",
    "How many days does this service keep backups?": "backups",
}


def work_folder() -> Path:
    """Return (and create) ``scratch/03_bound_replay``, the only folder lesson 03 writes to."""
    from labkit.paths import scratch_dir

    folder = scratch_dir() / "03_bound_replay"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def error_text(error: BaseException) -> str:
    """Return an error's message with this machine's folders written as ``scratch/`` and repository paths."""
    from labkit.paths import portable_text

    return portable_text(str(error))


def passages_sent(index: Any, question: str) -> list[Any]:
    """Return the `K` passages lesson 02a's search selects for ``question``, best first, as the app sends them."""
    from labkit.rag.trace import K

    return [doc for doc, _score in index.store.similarity_search_with_score(question, k=K)]


def passage_sources(traced: Any) -> list[str]:
    """Return the source id of each passage a traced request sent, in order (its ``context_selected`` event)."""
    selected = traced.trace.first("context_selected")
    if selected is None:
        raise AssertionError("this trace selected no passages: it stopped before context_selected")
    return list(selected.data["source_ids"])


def refused_fields(refusal: ReplayRequestMismatch | None) -> list[str]:
    """Return the paths a refusal's diff names, those inside the user message without its ``messages[1].content.``."""
    if refusal is None:
        return []
    return [d.path.removeprefix("messages[1].content.") for d in refusal.diff]


#: What exercise 1 asks about each rewrite: is it ``==`` to the recorded request, and does replay refuse it.
REWRITE_EFFECTS = ("equal", "refused")
#: Exercise 1's rewrites of a recorded request, each made alone (`rewrites` makes them).
REWRITES = (
    "seed as a float",
    "the schema's properties in reverse order",
    "the system message with content before role",
    "messages passed as a tuple",
    "a header added with extra_headers",
    "top_p=None added",
    "the user message's JSON re-indented",
)


def rewrites(request: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Return each of `REWRITES` made to a copy of ``request``, as keyword arguments of ``create``."""

    def reversed_dict(value: dict[str, Any]) -> dict[str, Any]:
        return dict(reversed(list(value.items())))

    def edited(edit: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
        changed = copy.deepcopy(request)
        edit(changed)
        return changed

    def schema_reversed(r: dict[str, Any]) -> None:
        schema = r["response_format"]["schema"]
        schema["properties"] = reversed_dict(schema["properties"])

    def user_indented(r: dict[str, Any]) -> None:
        user = r["messages"][1]
        user["content"] = json.dumps(json.loads(user["content"]), indent=2, ensure_ascii=False)

    made = [
        edited(lambda r: r.update(seed=float(r["seed"]))),
        edited(schema_reversed),
        edited(lambda r: r["messages"].__setitem__(0, reversed_dict(r["messages"][0]))),
        edited(lambda r: r.update(messages=tuple(r["messages"]))),
        edited(lambda r: r.update(extra_headers={"X-Trace-Id": "lesson-03"})),
        edited(lambda r: r.update(top_p=None)),
        edited(user_indented),
    ]
    return dict(zip(REWRITES, made, strict=True))


def rewrite_effects(run: RecordedRun) -> dict[str, set[str]]:
    """Make each of `REWRITES` to the run's first request and return its effects, as sets drawn from `REWRITE_EFFECTS`.

    "equal": the rewrite is ``==`` to the recorded request; "refused": sent
    through the real `openai` client under replay, it is refused.
    """
    client = replay_client(BindingStore.from_run(run))
    recorded = run.bindings[0].request
    found: dict[str, set[str]] = {}
    for name, rewritten in rewrites(recorded).items():
        found[name] = {"equal"} if rewritten == recorded else set()
        try:
            client.chat.completions.create(**rewritten)
        except ReplayRequestMismatch:
            found[name].add("refused")
    return found


def check_rewrite_predictions(predict: Callable[[str], set[str]], run: RecordedRun) -> dict[str, set[str]]:
    """Check exercise 1: ``predict(rewrite)`` returns the set of `REWRITE_EFFECTS` each of `REWRITES` has.

    The check makes and sends every rewrite (`rewrite_effects`), says only how
    many predictions are wrong, never which, and returns what happened. A
    ``predict`` that builds, hashes or sends the rewrites with labkit
    (`rewrites`, `binding_key`, `request_json`, the store's lookup) is refused.
    """
    from labkit.canonical import request_sha256
    from labkit.recording import binding_key

    watched = (rewrites, rewrite_effects, binding_key, request_sha256, request_json, BindingStore.lookup)
    predicted = _predicted_sets(
        predict,
        REWRITES,
        REWRITE_EFFECTS,
        watched,
        name="predict_rewrite",
        source="exercise 1's three client rules and §2",
    )
    happened = rewrite_effects(run)
    _refuse_wrong(predicted, happened, reread="exercise 1's three client rules and §2")
    return happened


def _predicted_sets(
    predict: Callable[[str], set[str]],
    names: Iterable[str],
    allowed: Iterable[str],
    watched: tuple[Callable[..., Any], ...],
    *,
    name: str,
    source: str,
    empty: str = "",
) -> dict[str, set[str]]:
    """Return ``predict``'s set for each name, refusing a call to a watched labkit function or a set outside ``allowed``."""
    with calls_to(*watched) as called:
        predicted = {item: predict(item) for item in names}
    if called:
        raise AssertionError(f"{name} called labkit's {called[0]}: predict from {source}")
    for item, said in predicted.items():
        if not isinstance(said, set) or not said <= set(allowed):
            raise AssertionError(f"{name}({item!r}): return a set drawn from {list(allowed)}{empty}")
    return predicted


def _refuse_wrong(predicted: dict[str, set[str]], happened: dict[str, set[str]], *, reread: str) -> None:
    """Raise `AssertionError` saying how many predictions differ from what happened, never which."""
    wrong = sum(predicted[item] != happened[item] for item in predicted)
    if wrong:
        raise AssertionError(f"{wrong} of {len(predicted)} predictions do not match what happens: reread {reread}")


def rewrite_debrief(effects: dict[str, set[str]], run: RecordedRun | None = None) -> str:
    """Say, from what happened, which rewrites `==` and replay judge differently, and what each refused one changed.

    Given ``run``, each rewrite that is ``==`` yet refused is sent again and the
    refusal's diff lines are shown under it: what the learner would read. Each
    rewrite that is not ``==`` yet replayed is shown with the body the client
    writes for it (`as_sent`) set against the recorded body, as the binding key reads both.
    Each rewrite that is neither ``==`` nor replayed is shown with the paths its
    refusal names and any field the client's body adds (``"top_p":null``).
    """
    from labkit.replay import as_sent, describe_diff

    equal_refused = [name for name, found in effects.items() if found == {"equal", "refused"}]
    unequal_replayed = [name for name, found in effects.items() if not found]
    made = rewrites(run.bindings[0].request) if run is not None else {}
    client = replay_client(BindingStore.from_run(run)) if run is not None else None
    lines = [f"== yet refused, {len(equal_refused)} of {len(effects)}:"]
    for name in equal_refused:
        lines.append(f"  {name}")
        refusal = _refusal(client, made.get(name, {}))
        if refusal is not None:
            lines += [f"    refusal: {line.strip()}" for line in describe_diff(refusal.diff).splitlines()]
    lines.append(f"not == yet replayed, {len(unequal_replayed)} of {len(effects)}:")
    recorded = request_json(as_sent(run.bindings[0].request)) if run is not None else ""
    for name in unequal_replayed:
        lines.append(f"  {name}")
        if run is not None:
            same = request_json(as_sent(made[name])) == recorded
            lines.append(f"    the body the client writes for it is the recorded text: {same}")
    unequal_refused = [name for name, found in effects.items() if found == {"refused"}]
    lines.append(f"not == and refused, {len(unequal_refused)} of {len(effects)}:")
    recorded_body = as_sent(run.bindings[0].request) if run is not None else {}
    for name in unequal_refused:
        lines.append(f"  {name}")
        refusal = _refusal(client, made.get(name, {}))
        if refusal is not None:
            lines.append(f"    refused at: {', '.join(d.path for d in refusal.diff)}")
            added = {k: v for k, v in as_sent(made[name]).items() if k not in recorded_body}
            lines += [f"    the body the client writes adds {request_json({k: v})[1:-1]}" for k, v in added.items()]
    lines.append("The binding key is read from the body the client writes, not from the dict passed to create.")
    return "\n".join(lines)


def without_word(message: dict[str, str], word: str) -> dict[str, str]:
    """Return a copy of ``message`` whose content drops the whole word ``word`` once (§3's changed system prompt).

    A word the content does not hold raises `MessageEditError`, so the edit never silently changes nothing.
    """
    from labkit.rag.trace import MessageEditError

    content = message["content"]
    if f" {word} " not in content:
        raise MessageEditError(f"{word!r} is not a word of this message: pick one it holds")
    return {**message, "content": content.replace(f" {word} ", " ", 1)}


def _with_user_content(request: dict[str, Any], edit: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    changed = copy.deepcopy(request)
    content = json.loads(changed["messages"][1]["content"])
    edit(content)
    changed["messages"][1]["content"] = json.dumps(content, ensure_ascii=False)
    return changed


def request_changes(request: dict[str, Any]) -> list[dict[str, Any]]:
    """Return changed copies of a recorded RAG request: settings and prompt, most one or two fields each.

    The last two copies send one passage fewer: the refusal's diff names a list
    whose length changed as ``path (length)``, then compares the items both
    lists have; the very last also edits the first passage's text, so a walk
    that stops at the length is caught.
    """
    policy = request["messages"][0]["content"] + " Be brief."
    return [
        {**request, "temperature": 0.3},
        {**request, "seed": request["seed"] + 1},
        {**request, "temperature": float(request["temperature"])},
        {**request, "seed": float(request["seed"])},
        {**request, "max_tokens": request["max_tokens"] - 1},
        {**request, "model": "another-model"},
        {**request, "top_p": 0.9},
        {**request, "top_p": None},  # a field added with the value null is a field added
        {key: value for key, value in request.items() if key != "seed"},
        {**request, "temperature": 0.3, "frequency_penalty": 0.5},
        {**request, "messages": [{"role": "system", "content": policy}, request["messages"][1]]},
        _with_user_content(request, lambda c: c.update(question="How long are backups kept?")),
        _with_user_content(request, lambda c: c["passages"].reverse()),
        _with_user_content(request, lambda c: c["passages"].pop()),
        _with_user_content(request, _one_fewer_and_first_edited),
    ]


def _one_fewer_and_first_edited(content: dict[str, Any]) -> None:
    content["passages"].pop()
    content["passages"][0]["text"] += " Edited."


def check_changed_fields(changed_fields: Callable[[Any, Any], list[str]], run: RecordedRun) -> None:
    """Check exercise 2 on the last request of ``run``.

    ``changed_fields(recorded, actual)`` must return the sorted paths that the
    refusal's diff names for each of `request_changes`, ``[]`` for an unchanged
    copy and for the schema's properties in another order, and must not call
    labkit's own diff (`request_diff`, `text_diff`, `explain_difference`).
    """
    recorded = run.bindings[-1].request
    client = replay_client(BindingStore.from_run(run))
    for number, changed in enumerate(request_changes(recorded), start=1):
        want = sorted(d.path for d in request_diff(recorded, changed))
        with calls_to(request_diff, text_diff, explain_difference) as called:
            yours = changed_fields(recorded, changed)
        if called:
            raise AssertionError(f"changed_fields called labkit's {called[0]}: compare the requests yourself")
        if sorted(yours) == want != yours:
            raise AssertionError(f"change {number}: the right paths, but not sorted: {yours}")
        if yours != want:
            raise AssertionError(f"change {number}: yours {yours}, the refusal's diff names {want}")
        try:
            client.chat.completions.create(**changed)
        except ReplayRequestMismatch:
            pass
        else:  # pragma: no cover - each change is a new request
            raise AssertionError(f"change {number}: a changed request got a recorded reply")
    if changed_fields(recorded, copy.deepcopy(recorded)) != []:
        raise AssertionError("an unchanged copy of the request must give []")
    reordered = copy.deepcopy(recorded)
    schema = reordered["response_format"]["schema"]
    schema["properties"] = dict(reversed(schema["properties"].items()))
    yours = changed_fields(recorded, reordered)
    if yours != []:
        raise AssertionError(f"the schema's properties in another order hold equal values: yours {yours}, not []")
    client.chat.completions.create(**copy.deepcopy(recorded))  # the unchanged request is still bound


#: Three edits of a run file (`load_refusals` makes each, then reseals it as a forger would).
RUN_EDITS = ("a reply's text edited", "the run's recorded time edited", "origin flipped to captured")
#: What `load_refusals` reports per edit: `load_run` on the edit, on the edit resealed, and verify's signature check.
REFUSAL_STAGES = ("as edited", "hashes recomputed", "signature")


def reseal(data: dict[str, Any]) -> None:
    """Recompute, in place, every hash a run file holds over its own content, as a forger would.

    Each binding's ``key`` and ``response_sha256``, then ``content_sha256``. After
    this, only a rule about the content (such as the captured check) or the
    signature, which needs the signer's private key, can refuse the edited run.
    """
    from labkit.recording import binding_key, response_sha256, run_content_sha256

    for binding in data["bindings"]:
        query = [tuple(pair) for pair in binding.get("query", [])]
        binding["key"] = binding_key(binding["request"], path=binding.get("path", CHAT_PATH), query=query)
        binding["response_sha256"] = response_sha256(binding["response"])
    data["content_sha256"] = run_content_sha256(data)


def load_refusals(run_id: str, folder: Path) -> dict[str, dict[str, str]]:
    """Make each of `RUN_EDITS` to a copy of the run file under ``folder``; say what refuses it at each of `REFUSAL_STAGES`.

    "as edited": why `load_run` refuses the edited copy; "hashes recomputed": why
    it refuses the copy after `reseal`, or "loaded"; "signature": what `labkit
    verify`'s signature check says of the resealed copy beside the run's recorded
    signature. (verify also compares the manifest's file hash, but a forger can
    rewrite that too: the signature needs the signer's private key.)
    """
    from labkit.errors import RecordedRunError
    from labkit.recording import load_run, refusal_reason, run_path, write_edited_run
    from labkit.signing import check_signature, read_allowed_signers, signature_problem

    def reply_edited(data: dict[str, Any]) -> None:
        message = data["bindings"][0]["response"]["choices"][0]["message"]
        message["content"] = message["content"].replace("3.11", "3.12")

    def resealed(edit: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], None]:
        def edit_then_reseal(data: dict[str, Any]) -> None:
            edit(data)
            reseal(data)

        return edit_then_reseal

    def refused(path: Path) -> str:
        try:
            load_run(path)
        except RecordedRunError as error:
            return refusal_reason(error)
        return "loaded"

    edits: list[Callable[[dict[str, Any]], Any]] = [
        reply_edited,
        lambda data: data.update(created_at="2026-12-01T00:00:00Z"),
        lambda data: data.update(origin="captured"),
    ]
    recorded = run_path(run_id)
    allowed = read_allowed_signers(recorded.parent.parent)
    reasons = {}
    for number, (name, edit) in enumerate(zip(RUN_EDITS, edits, strict=True), start=1):
        forged = write_edited_run(run_id, folder / f"resealed-{number}", resealed(edit))
        forged.with_name(f"{forged.name}.sig").write_bytes(recorded.with_name(f"{recorded.name}.sig").read_bytes())
        origin = json.loads(forged.read_text(encoding="utf-8"))["origin"]
        signature = check_signature(forged, allowed=allowed)
        problem = signature_problem(run_id, origin, signature)
        reasons[name] = {
            "as edited": refused(write_edited_run(run_id, folder / f"edit-{number}", edit)),
            "hashes recomputed": refused(forged),
            "signature": f"{signature.status}: {signature.reason}" if problem else f"accepted ({signature.status})",
        }
        if reasons[name]["as edited"] == "loaded":
            raise AssertionError(f"{name}: the edited run was loaded")
    return reasons


def refusal_table(reasons: dict[str, dict[str, str]], width: int = 96) -> str:
    """Return `load_refusals`'s answers as lines: each edit, then each stage's verdict, wrapped whole at ``width``."""
    import textwrap

    lines = []
    for edit, stages in reasons.items():
        lines.append(f"{edit}:")
        for stage, reason in stages.items():
            first = f"  {stage:18} "
            lines += textwrap.wrap(
                reason, width, initial_indent=first, subsequent_indent=" " * len(first), break_on_hyphens=False
            )
    return "\n".join(lines)


def untouched_signature(run_id: str) -> str:
    """Return what `labkit verify`'s signature check says of the recorded, unedited run file."""
    from labkit.recording import run_path
    from labkit.signing import check_signature, read_allowed_signers

    recorded = run_path(run_id)
    signature = check_signature(recorded, allowed=read_allowed_signers(recorded.parent.parent))
    verdict = "valid" if signature.status == "signed" else signature.status
    return f"{verdict}: {signature.describe()}"


#: What exercise 3 asks about each change: which identifiers move, and what refuses.
EFFECTS = ("index id", "request_key", "replay refuses", "load refuses")
#: Exercise 3's changes, each made alone to the timestamp question's request, its corpus or its run file.
CHANGES = (
    "a space at the end of the question",
    "a link edited in a scratch copy of the corpus",
    "a link edited in the repository's corpus",
    "the repository's corpus re-indented",
    "a copy of the run file re-indented",
)


def hash_effects(run: RecordedRun, folder: Path) -> dict[str, set[str]]:
    """Make each of `CHANGES` to the timestamp question and return what it does, as sets drawn from `EFFECTS`.

    "index id" and "request_key": the logical index id or the question's
    ``request_key`` differs from the unchanged one; "replay refuses": a
    `BoundReplay` of ``run`` refuses the request the change sends; "load
    refuses": `load_run` (with the `check_fixtures` it ends with) refuses the
    run. The question with a space at its end is sent with the passages of the
    unchanged question. Re-indenting writes the same data with another indent
    (the corpus with 4 spaces, the run file with 1). An edit to the repository's
    corpus is made in a copy of the run's fixtures under ``folder``
    (`copy_fixtures`), and the run file is rewritten in a copy under ``folder``,
    so the repository is never touched.
    """
    from labkit.errors import RecordedRunError
    from labkit.rag.trace import QUESTIONS, K, corpus_path, load_docs_index, prompt, request_key, write_edited_corpus
    from labkit.recording import check_fixtures, copy_fixtures, load_run, write_edited_run
    from labkit.replay import BoundReplay

    folder.mkdir(parents=True, exist_ok=True)
    question = QUESTIONS["answered"]
    replay = BoundReplay.from_run(run)
    index = load_docs_index()
    relinked_file = write_edited_corpus(
        folder / "relinked.json", source_id="zoneinfo", old=".html", new=".html?edited", field="url"
    )
    relinked = load_docs_index(corpus_file=relinked_file)
    in_repository = copy_fixtures(run, folder / "checkout", replace={"fixtures/docs/api_summaries.json": relinked_file})

    reindented_file = folder / "reindented.json"
    reindented_file.write_text(
        json.dumps(json.loads(corpus_path().read_text(encoding="utf-8")), indent=4, ensure_ascii=False),
        encoding="utf-8",
    )
    reindented = load_docs_index(corpus_file=reindented_file)
    reindented_in_repository = copy_fixtures(
        run, folder / "reindented-checkout", replace={"fixtures/docs/api_summaries.json": reindented_file}
    )
    rewritten_run = write_edited_run(run.run_id, folder, lambda data: None)  # written with indent 1, not 2

    def passages(ix: Any, asked: str) -> list[Any]:
        return [doc for doc, _score in ix.store.similarity_search_with_score(asked, k=K)]

    def effects(asked: str, ix: Any, messages: list[dict[str, Any]], load: Callable[[], Any]) -> set[str]:
        found = set()
        if ix.identity["logical_index_id"] != index.identity["logical_index_id"]:
            found.add("index id")
        if request_key(asked, ix.identity) != request_key(question, index.identity):
            found.add("request_key")
        request = replay.request_for(messages, question=asked)
        try:
            replay_client(replay.store).chat.completions.create(**request)
        except ReplayRequestMismatch:
            found.add("replay refuses")
        try:
            load()
        except RecordedRunError:
            found.add("load refuses")
        return found

    def unchanged_run() -> Any:
        return check_fixtures(run)

    spaced = question + " "
    sent = passages(index, question)
    return {
        "a space at the end of the question": effects(spaced, index, prompt(spaced, sent), unchanged_run),
        "a link edited in a scratch copy of the corpus": effects(
            question, relinked, prompt(question, passages(relinked, question)), unchanged_run
        ),
        "a link edited in the repository's corpus": effects(
            question,
            relinked,
            prompt(question, passages(relinked, question)),
            lambda: check_fixtures(run, root=in_repository),
        ),
        "the repository's corpus re-indented": effects(
            question,
            reindented,
            prompt(question, passages(reindented, question)),
            lambda: check_fixtures(run, root=reindented_in_repository),
        ),
        "a copy of the run file re-indented": effects(
            question, index, prompt(question, sent), lambda: load_run(rewritten_run)
        ),
    }


def check_hash_predictions(predict: Callable[[str], set[str]], run: RecordedRun, folder: Path) -> dict[str, set[str]]:
    """Check exercise 3: ``predict(change)`` returns the set of `EFFECTS` each of `CHANGES` has.

    The check makes every change (`hash_effects`) and says only how many
    predictions are wrong, never which, so the answer cannot be read off it.
    A ``predict`` that computes the effects with labkit (`hash_effects`,
    `request_key`, `check_fixtures`, `load_run`) instead of predicting them is refused.
    Once every prediction is right, it returns what happened, for `hash_debrief`.
    """
    from labkit.rag.trace import request_key
    from labkit.recording import check_fixtures, load_run

    watched = (hash_effects, request_key, check_fixtures, load_run)
    predicted = _predicted_sets(
        predict,
        CHANGES,
        EFFECTS,
        watched,
        name="predict",
        source="what sections 2 to 5 show",
        empty=" (set() for none)",
    )
    happened = hash_effects(run, folder)
    _refuse_wrong(predicted, happened, reread="sections 2 to 5")
    return happened


def hash_debrief(effects: dict[str, set[str]]) -> str:
    """Return exercise 3's debrief: one line per change, naming what it moved or refused, in `EFFECTS` order."""
    width = max(len(change) for change in effects)
    return "\n".join(
        f"{change:{width}} -> {', '.join(e for e in EFFECTS if e in found) or 'none of the four'}"
        for change, found in effects.items()
    )


def _refusal(client: Any, request: dict[str, Any]) -> ReplayRequestMismatch | None:
    """Send ``request`` through a replay ``client``; return its refusal, or None if it replied (or no client)."""
    if client is None:
        return None
    try:
        client.chat.completions.create(**request)
    except ReplayRequestMismatch as refusal:
        return refusal
    return None
