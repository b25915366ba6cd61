"""The lesson 04 support dataset: Bitext schema, 27 intents, 11 categories, deterministic, scoped, versioned."""

import json

import pytest

from labkit.agent.dataset import (
    APPROVED_SCOPE,
    CATEGORIES,
    DATASET_VERSION,
    INTENTS,
    RESTRICTED_SCOPE,
    DatasetError,
    load_scope,
    main,
    write_support_fixtures,
)
from labkit.errors import FixtureOverwriteRefused
from labkit.paths import fixtures_dir


def test_approved_scope_holds_exactly_27_get_refund_rows():
    rows, version = load_scope(APPROVED_SCOPE)
    assert version == DATASET_VERSION == "support-2026-09-01"
    assert sum(row.intent == "get_refund" for row in rows) == 27


def test_dataset_covers_bitexts_27_intents_and_11_categories():
    rows, _ = load_scope(APPROVED_SCOPE)
    assert len(INTENTS) == 27 and len(CATEGORIES) == 11
    assert {row.intent for row in rows} == set(INTENTS)
    assert {row.category for row in rows} == set(CATEGORIES)


def test_rows_have_exactly_the_bitext_fields_with_variation_and_placeholders():
    data = json.loads((fixtures_dir() / "support" / f"{APPROVED_SCOPE}.json").read_text())
    assert all(set(row) == {"flags", "instruction", "category", "intent", "response"} for row in data["rows"])
    flags = "".join(row["flags"] for row in data["rows"])
    assert {"P", "Q", "Z", "K", "I"} <= set(flags)
    assert any("{{Order Number}}" in row["instruction"] for row in data["rows"])


def test_restricted_scope_is_a_separate_file_with_its_own_rows():
    rows, _ = load_scope(RESTRICTED_SCOPE)
    assert rows and sum(row.intent == "get_refund" for row in rows) != 27


def test_generator_rewrites_the_committed_files_byte_identically(tmp_path):
    write_support_fixtures(tmp_path)
    for path in sorted(tmp_path.iterdir()):
        assert path.read_bytes() == (fixtures_dir() / "support" / path.name).read_bytes(), path.name


def test_generator_refuses_a_folder_holding_a_captured_run(tmp_path):
    (tmp_path / "run.json").write_text(json.dumps({"origin": "captured"}))
    with pytest.raises(FixtureOverwriteRefused):
        write_support_fixtures(tmp_path)
    assert main([str(tmp_path)]) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]


def test_mislabelled_scope_file_is_refused(tmp_path):
    write_support_fixtures(tmp_path)
    path = tmp_path / f"{APPROVED_SCOPE}.json"
    data = json.loads(path.read_text())
    data["rows"][0]["category"] = "SHIPPING" if data["rows"][0]["category"] != "SHIPPING" else "ORDER"
    path.write_text(json.dumps(data))
    with pytest.raises(DatasetError, match="row 0"):
        load_scope(APPROVED_SCOPE, folder=tmp_path)


def test_every_flag_the_rows_carry_has_a_meaning():
    from labkit.agent.dataset import FLAG_MEANINGS, SCOPES, load_scope

    seen = {flag for scope in SCOPES for row in load_scope(scope)[0] for flag in row.flags}
    assert seen == set(FLAG_MEANINGS)
