"""A refusal points the way: one line on how to see an answer, and a restart only when the state looks stale."""

from __future__ import annotations

import copy

import pytest

from labkit.recording import load_run
from labkit.refusal import EXPLORE_HINT, STALE_HINT, looks_like_stale_state
from labkit.replay import BindingStore, ReplayRequestMismatch

RUN = "02-rag-authored"


@pytest.fixture(scope="module")
def store():
    return BindingStore.from_run(load_run(RUN))


@pytest.fixture(scope="module")
def recorded():
    return load_run(RUN).bindings[0].request


def refusal(store, request):
    with pytest.raises(ReplayRequestMismatch) as caught:
        store.lookup(request)
    return str(caught.value)


def with_policy(request, policy):
    changed = copy.deepcopy(request)
    changed["messages"][0]["content"] = policy
    return changed


def test_every_refusal_ends_with_how_to_see_an_answer(store, recorded):
    message = refusal(store, {**recorded, "temperature": 0.5})
    assert message.splitlines()[-1] == EXPLORE_HINT
    assert "LABKIT_MODE=explore" in EXPLORE_HINT and "LABKIT_BASE_URL" in EXPLORE_HINT
    assert STALE_HINT not in message


def test_a_sentence_appended_twice_suggests_restarting_the_kernel(store, recorded):
    policy = recorded["messages"][0]["content"]
    message = refusal(store, with_policy(recorded, policy + " Answer in French." * 2))
    assert message.splitlines()[-2:] == [EXPLORE_HINT, STALE_HINT]


def test_the_recorded_ending_appended_once_more_suggests_restarting(recorded):
    policy = recorded["messages"][0]["content"]
    ending = policy[-len(" If the passages do not answer the question, use status 'not_in_docs'") :]
    base = with_policy(recorded, policy + ending)
    assert looks_like_stale_state(base, with_policy(recorded, policy + ending + ending))


def test_a_message_list_sent_again_inside_itself_suggests_restarting(store, recorded):
    repeated = {**recorded, "messages": recorded["messages"] * 2}
    extended = {**recorded, "messages": [*recorded["messages"], recorded["messages"][-1]]}
    assert STALE_HINT in refusal(store, repeated)
    assert looks_like_stale_state(recorded, extended)
    new = {"role": "user", "content": "and one more thing"}
    assert looks_like_stale_state(recorded, {**recorded, "messages": [*recorded["messages"], new, new]})


def test_a_sentence_added_once_is_an_edit_not_stale_state(store, recorded):
    policy = recorded["messages"][0]["content"]
    message = refusal(store, with_policy(recorded, policy + " Answer in French."))
    assert message.splitlines()[-1] == EXPLORE_HINT and STALE_HINT not in message


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda r, p: with_policy(r, p + "!!"), id="a short repeat"),
        pytest.param(lambda r, p: {**with_policy(r, p + " Be brief." * 2), "seed": 8}, id="a repeat and an edit"),
        pytest.param(lambda r, p: with_policy(r, " Be brief. Be brief." + p), id="a repeat put in front"),
        pytest.param(lambda r, p: with_policy(r, p.replace("JSON", "YAML")), id="a word replaced"),
        pytest.param(
            lambda r, p: {**r, "messages": [*r["messages"], {"role": "user", "content": "a follow-up"}]},
            id="one new message",
        ),
        pytest.param(lambda r, p: {**r, "messages": r["messages"][:1]}, id="a message removed"),
    ],
)
def test_other_changes_do_not_look_like_stale_state(recorded, change):
    assert not looks_like_stale_state(recorded, change(recorded, recorded["messages"][0]["content"]))


def test_a_change_inside_the_user_json_is_judged_inside_it(recorded):
    import json

    changed = copy.deepcopy(recorded)
    content = json.loads(changed["messages"][1]["content"])
    question = content["question"]
    content["question"] = question + " Explain." * 2
    changed["messages"][1]["content"] = json.dumps(content, ensure_ascii=False)
    assert looks_like_stale_state(recorded, changed)
    content["question"] = question + " Explain."
    changed["messages"][1]["content"] = json.dumps(content, ensure_ascii=False)
    assert not looks_like_stale_state(recorded, changed)
