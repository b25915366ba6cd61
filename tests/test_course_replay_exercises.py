import ast
import copy
import json
import shutil

import pytest

from labkit.canonical import json_inside
from labkit.course.replay_exercises import (
    CHANGES,
    REWRITES,
    RUN_EDITS,
    check_changed_fields,
    check_hash_predictions,
    check_rewrite_predictions,
    hash_debrief,
    hash_effects,
    load_refusals,
    rewrite_debrief,
    rewrite_effects,
    rewrites,
    without_word,
)
from labkit.paths import project_root
from labkit.rag.trace import RUN_AUTHORED, MessageEditError
from labkit.recording import binding_key, load_run, write_edited_run
from labkit.replay import BindingStore, ReplayRequestMismatch, replay_client, request_diff


@pytest.fixture(scope="module")
def run():
    return load_run(RUN_AUTHORED)


#: What each rewrite does, worked out by hand from the client's behaviour (the check measures it).
EXPECTED_REWRITES = {
    "seed as a float": {"equal", "refused"},
    "the schema's properties in reverse order": {"equal", "refused"},
    "the system message with content before role": {"equal", "refused"},
    "messages passed as a tuple": set(),
    "a header added with extra_headers": set(),
    "top_p=None added": {"refused"},
    "the user message's JSON re-indented": {"refused"},
}


def test_every_way_equal_and_refused_can_disagree_has_a_rewrite(run):
    # The fourth quadrant (== and replayed: the top-level keys reordered) is shown in the lesson, not asked.
    effects = rewrite_effects(run)
    assert effects == EXPECTED_REWRITES
    assert {frozenset(found) for found in effects.values()} == {
        frozenset(),
        frozenset({"refused"}),
        frozenset({"equal", "refused"}),
    }


def test_exercise_1s_listed_attempts_predict_exactly_todays_rewrites():
    # A wrong attempt's table must name the rewrites the check asks about, no removed or missing one.
    nb = json.loads((project_root() / "notebooks" / "03_bound_replay.ipynb").read_text(encoding="utf-8"))
    cells = [c for c in nb["cells"] if "def predict_rewrite" in "".join(c["source"])]
    attempts = cells[0]["metadata"]["labkit"]["attempts"]
    tables = [node for a in attempts for node in ast.walk(ast.parse(a["code"])) if isinstance(node, ast.Dict)]
    assert tables, "no attempt of exercise 1 lists a table of predictions"
    for table in tables:
        assert [ast.literal_eval(key) for key in table.keys if key is not None] == list(REWRITES)


def test_rewrites_leave_the_request_alone_and_change_one_thing_each(run):
    recorded = copy.deepcopy(run.bindings[0].request)
    made = rewrites(recorded)
    assert recorded == run.bindings[0].request
    assert list(made) == list(REWRITES)
    assert len({json.dumps(r, default=repr) for r in made.values()}) == len(REWRITES)


def test_the_right_predictions_pass_and_are_returned_for_the_debrief(run):
    happened = check_rewrite_predictions(EXPECTED_REWRITES.__getitem__, run)
    assert happened == EXPECTED_REWRITES
    debrief = rewrite_debrief(happened)
    assert debrief.splitlines()[:2] == ["== yet refused, 3 of 7:", "  seed as a float"]
    assert (
        "not == yet replayed, 2 of 7:\n  messages passed as a tuple\n  a header added with extra_headers\n" in debrief
    )


def test_the_debrief_shows_the_refusal_of_each_equal_yet_refused_rewrite(run):
    lines = rewrite_debrief(rewrite_effects(run), run).splitlines()
    assert lines[:3] == ["== yet refused, 3 of 7:", "  seed as a float", "    refusal: seed: '7' -> '7.0'"]
    schema = next(line for line in lines if "response_format.schema.properties (key order)" in line)
    assert schema.startswith("    refusal: ") and schema.endswith("[same JSON, different text: key order / whitespace]")
    assert not any("refusal:" in line for line in lines[lines.index("not == yet replayed, 2 of 7:") :])


def test_the_debrief_sets_the_body_sent_for_each_unequal_yet_replayed_rewrite_against_the_recorded_one(run):
    lines = rewrite_debrief(rewrite_effects(run), run).splitlines()
    tail = lines[lines.index("not == yet replayed, 2 of 7:") + 1 :]
    sent = "    the body the client writes for it is the recorded text: True"
    assert tail[:4] == ["  messages passed as a tuple", sent, "  a header added with extra_headers", sent]


def test_the_debrief_names_where_each_unequal_refused_rewrite_was_refused_and_what_the_body_adds(run):
    lines = rewrite_debrief(rewrite_effects(run), run).splitlines()
    tail = lines[lines.index("not == and refused, 2 of 7:") + 1 :]
    assert tail[:5] == [
        "  top_p=None added",
        "    refused at: top_p",
        '    the body the client writes adds "top_p":null',
        "  the user message's JSON re-indented",
        "    refused at: messages[1].content (JSON text)",
    ]


def test_each_run_edit_is_refused_at_load_by_its_own_check(run, tmp_path):
    reasons = load_refusals(run.run_id, tmp_path)
    assert list(reasons) == list(RUN_EDITS)
    assert "field 'response' was edited after recording" in reasons["a reply's text edited"]["as edited"]
    assert "field 'content_sha256'" in reasons["the run's recorded time edited"]["as edited"]
    assert "a captured run must name the model" in reasons["origin flipped to captured"]["as edited"]
    unedited = load_run(write_edited_run(run.run_id, tmp_path / "unedited", lambda data: None))
    assert unedited.bindings == run.bindings


@pytest.mark.parametrize("guess", [{"refused"}, {"equal", "refused"}, set()])
def test_one_answer_for_every_rewrite_is_refused(run, guess):
    with pytest.raises(AssertionError, match=f"of {len(REWRITES)} predictions do not match"):
        check_rewrite_predictions(lambda rewrite: set(guess), run)


def test_one_wrong_prediction_is_counted_not_named(run):
    def top_p_as_left_out(rewrite):
        return set() if rewrite == "top_p=None added" else EXPECTED_REWRITES[rewrite]

    with pytest.raises(AssertionError, match=r"^1 of 7 predictions") as raised:
        check_rewrite_predictions(top_p_as_left_out, run)
    assert "top_p" not in str(raised.value)
    # it sends the learner to the rules the exercise states, not to sections that do not state them
    assert str(raised.value).endswith("reread exercise 1's three client rules and §2")


def test_comparing_binding_keys_is_refused(run):
    def by_key(rewrite):
        recorded = run.bindings[0].request
        rewritten = {**recorded, "seed": float(recorded["seed"])}  # built by hand, hashed by labkit
        return {"equal"} if binding_key(rewritten) == binding_key(recorded) else {"equal", "refused"}

    with pytest.raises(AssertionError, match=r"called labkit's labkit\.recording\.binding_key"):
        check_rewrite_predictions(by_key, run)


def test_sending_the_rewrites_through_replay_is_refused(run):
    client = replay_client(BindingStore.from_run(run))

    def by_sending(rewrite):
        recorded = run.bindings[0].request
        rewritten = {**recorded, "seed": float(recorded["seed"])}  # built by hand, sent through replay
        try:
            client.chat.completions.create(**rewritten)
        except ReplayRequestMismatch:
            return {"refused"}
        return set()

    with pytest.raises(AssertionError, match=r"called labkit's labkit\.replay\.BindingStore\.lookup"):
        check_rewrite_predictions(by_sending, run)


def test_a_prediction_that_is_not_a_set_of_the_two_effects_is_refused(run):
    with pytest.raises(AssertionError, match="return a set drawn from"):
        check_rewrite_predictions(lambda rewrite: ["equal"], run)


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


def test_a_walk_that_stops_at_a_changed_length_is_refused(run):
    # the shortcut: name `path (length)` and skip the items both lists have
    def stops_at_length(recorded, actual, path=""):
        recorded, actual = json_inside(recorded), json_inside(actual)
        if isinstance(recorded, list) and isinstance(actual, list) and len(recorded) != len(actual):
            return [f"{path} (length)"]
        if isinstance(recorded, dict) and isinstance(actual, dict):
            found = []
            for key in set(recorded) | set(actual):
                where = f"{path}.{key}" if path else key
                both = key in recorded and key in actual
                found += stops_at_length(recorded[key], actual[key], where) if both else [where]
            return sorted(found)
        if isinstance(recorded, list) and isinstance(actual, list):
            pairs = enumerate(zip(recorded, actual, strict=True))
            return sorted(p for i, (r, a) in pairs for p in stops_at_length(r, a, f"{path}[{i}]"))
        return [] if _json_text_equal(recorded, actual) else [path]

    with pytest.raises(AssertionError, match="passages\\[0\\]\\.text"):
        check_changed_fields(stops_at_length, run)


def test_a_walk_that_reads_a_missing_field_as_null_is_refused(run):
    def null_as_missing(recorded, actual, path=""):  # dict.get: an absent field and a null one look alike
        recorded, actual = json_inside(recorded), json_inside(actual)
        if isinstance(recorded, dict) and isinstance(actual, dict):
            found = []
            for key in set(recorded) | set(actual):
                where = f"{path}.{key}" if path else key
                found += null_as_missing(recorded.get(key), actual.get(key), where)
            return sorted(found)
        return _own_walk(recorded, actual, path)

    with pytest.raises(AssertionError, match="top_p"):
        check_changed_fields(null_as_missing, run)


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


def test_right_predictions_pass_and_return_what_happened_for_the_debrief(run, tmp_path):
    assert check_hash_predictions(lambda change: set(WHAT_HAPPENS[change]), run, tmp_path) == WHAT_HAPPENS


def test_the_hash_debrief_names_each_change_and_exactly_what_it_moved(run, tmp_path):
    lines = hash_debrief(hash_effects(run, tmp_path)).splitlines()
    assert [line.split(" -> ")[0].rstrip() for line in lines] == list(CHANGES)
    named = [set(line.split(" -> ")[1].split(", ")) for line in lines]
    assert named[:4] == [WHAT_HAPPENS[change] for change in CHANGES[:4]]
    assert lines[4].endswith("-> none of the four")
    assert lines[3].endswith("-> index id, request_key, load refuses")  # in EFFECTS order


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


def test_without_word_drops_one_whole_word_and_refuses_a_word_the_message_lacks():
    message = {"role": "system", "content": "Answer only from the passages; only cite them."}
    assert without_word(message, "only") == {"role": "system", "content": "Answer from the passages; only cite them."}
    assert message["content"] == "Answer only from the passages; only cite them."  # the original is left alone
    with pytest.raises(MessageEditError, match="'passage' is not a word of this message"):
        without_word(message, "passage")  # inside "passages", not a word of its own


def test_a_resealed_edit_is_refused_by_load_run_only_for_a_rule_and_always_by_the_signature(run, tmp_path):
    from labkit.course.replay_exercises import REFUSAL_STAGES, refusal_table
    from labkit.recording import run_path
    from labkit.signing import check_signature, read_allowed_signers

    reasons = load_refusals(run.run_id, tmp_path)
    assert all(list(stages) == list(REFUSAL_STAGES) for stages in reasons.values())
    # resealed, the two edits that only a hash caught now load; the origin flip is still refused by its rule
    assert reasons["a reply's text edited"]["hashes recomputed"] == "loaded"
    assert reasons["the run's recorded time edited"]["hashes recomputed"] == "loaded"
    flipped = reasons["origin flipped to captured"]["hashes recomputed"]
    assert "a captured run must name the model" in flipped and "content_sha256" not in flipped
    # the recorded signature verifies over the recorded file, and over none of the forged copies
    recorded = run_path(run.run_id)
    allowed = read_allowed_signers(recorded.parent.parent)
    assert check_signature(recorded, allowed=allowed).status == "signed"
    assert all(stages["signature"].startswith("invalid: ") for stages in reasons.values())
    table = refusal_table(reasons)
    assert table.count("hashes recomputed  loaded") == 2
    assert max(len(line) for line in table.splitlines()) <= 96


def test_the_refusal_table_prints_every_reason_whole_within_its_width(run, tmp_path):
    from labkit.course.replay_exercises import refusal_table

    reasons = load_refusals(run.run_id, tmp_path)
    table = refusal_table(reasons)
    assert max(len(line) for line in table.splitlines()) <= 96
    flat = " ".join(line.strip() for line in table.splitlines())
    for stages in reasons.values():
        for stage, reason in stages.items():
            assert f"{stage} {reason}" in " ".join(flat.split())  # whole, not cut at the width
    assert any(len(reason) > 96 for stages in reasons.values() for reason in stages.values())  # some wrap


def test_the_untouched_run_signature_is_valid_and_a_resealed_copy_in_its_place_is_not(run, tmp_path, monkeypatch):
    import labkit.recording
    from labkit.course.replay_exercises import untouched_signature
    from labkit.recording import run_path

    assert untouched_signature(run.run_id).startswith("valid: signed by labkit-course (SHA256:")
    load_refusals(run.run_id, tmp_path)  # writes resealed copies, each beside the recorded signature
    forged = next(tmp_path.glob("resealed-1/**/run.json"))
    recorded = run_path(run.run_id)
    placed = tmp_path / "runs" / recorded.parent.name / recorded.name
    placed.parent.mkdir(parents=True)
    shutil.copy(recorded.parent.parent / "allowed_signers", tmp_path / "runs")
    shutil.copy(recorded.with_name("run.json.sig"), placed.with_name("run.json.sig"))
    placed.write_bytes(recorded.read_bytes())
    monkeypatch.setattr(labkit.recording, "run_path", lambda run_id: placed)
    assert untouched_signature(run.run_id).startswith("valid: ")
    placed.write_bytes(forged.read_bytes())
    assert untouched_signature(run.run_id).startswith("invalid: ")


def test_reseal_recomputes_every_hash_so_a_resealed_unedited_run_loads_with_its_own_hashes(run, tmp_path):
    from labkit.course.replay_exercises import reseal

    def broken_then_resealed(data):
        data["content_sha256"] = "0" * 64
        data["bindings"][0]["key"] = "0" * 64
        data["bindings"][0]["response_sha256"] = "0" * 64
        reseal(data)

    resealed = load_run(write_edited_run(run.run_id, tmp_path, broken_then_resealed))
    assert resealed.content_sha256 == run.content_sha256
    assert [b.key for b in resealed.bindings] == [b.key for b in run.bindings]


def test_the_notebook_helpers_name_both_questions_and_the_passages_the_app_sends(run, tmp_path, monkeypatch):
    from labkit.course.replay_exercises import (
        LABEL,
        error_text,
        passage_sources,
        passages_sent,
        refused_fields,
        work_folder,
    )
    from labkit.rag.trace import QUESTIONS, K, load_docs_index, prompt, trace_request
    from labkit.replay import BoundReplay, replay_refusal

    assert set(LABEL) == set(QUESTIONS.values())
    monkeypatch.setenv("LABKIT_SCRATCH", str(tmp_path))
    assert work_folder() == tmp_path / "03_bound_replay" and work_folder().is_dir()
    assert error_text(ValueError(f"see {tmp_path}/x.json")) == "see scratch/x.json"
    index, replay = load_docs_index(), BoundReplay.from_run(run)
    question = QUESTIONS["answered"]
    selected = passages_sent(index, question)
    traced = trace_request(question, index, replay)
    assert len(selected) == K and passage_sources(traced) == [d.metadata["id"] for d in selected]
    assert replay_refusal(replay, question, prompt(question, selected)) is None  # what the app sent replays
    assert refused_fields(None) == []
    changed = prompt(question + " ", selected)
    assert "question" in refused_fields(replay_refusal(replay, question + " ", changed))
    unsaved = trace_request("How do I read a TOML file?", index, replay)
    with pytest.raises(AssertionError, match="selected no passages"):
        passage_sources(unsaved)
