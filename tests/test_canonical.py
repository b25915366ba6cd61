import hashlib
import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from labkit.canonical import (
    MAX_JSON_BYTES,
    canonical_json,
    canonical_sha256,
    file_sha256,
    load_strict,
    loads_strict,
    ordered_pretty_json,
    pretty_json,
    read_strict_bytes,
    request_json,
    request_sha256,
)
from labkit.errors import InvalidJSON, LabkitError


def test_canonical_json_sorts_keys_and_drops_whitespace():
    assert canonical_json({"b": 1, "a": [1, {"d": 2, "c": "é"}]}) == '{"a":[1,{"c":"é","d":2}],"b":1}'


def test_canonical_sha256_ignores_key_order_but_not_values():
    assert canonical_sha256({"a": 1, "b": 2}) == canonical_sha256({"b": 2, "a": 1})
    assert canonical_sha256({"a": 1}) != canonical_sha256({"a": 2})
    assert canonical_sha256({"a": 1}) == hashlib.sha256(b'{"a":1}').hexdigest()


def test_canonical_json_refuses_nan():
    with pytest.raises(InvalidJSON, match="NaN"):
        canonical_json({"x": float("nan")})


def test_pretty_json_is_sorted_indented_and_ends_with_newline():
    assert pretty_json({"b": 1, "a": 2}) == '{\n  "a": 2,\n  "b": 1\n}\n'


def test_repeated_key_is_refused_and_named():
    with pytest.raises(InvalidJSON, match="repeated JSON key 'route'"):
        loads_strict('{"route": "sales", "route": "billing"}')


def test_repeated_key_in_nested_object_is_refused():
    with pytest.raises(InvalidJSON, match="repeated"):
        loads_strict('[{"id": 1, "x": {"k": 1, "k": 1}}]')


@pytest.mark.parametrize("text", ['{"x": NaN}', '{"x": Infinity}', "[-Infinity]", "[1e999]"])
def test_non_finite_numbers_are_refused(text):
    with pytest.raises(InvalidJSON, match="finit"):
        loads_strict(text)


def test_malformed_json_names_line_and_column():
    with pytest.raises(InvalidJSON, match="line 2, column"):
        loads_strict('{\n  "a": }', source="suite.json")


def test_file_over_the_size_limit_is_refused_before_parsing(tmp_path):
    path = tmp_path / "big.json"
    path.write_text('"' + "x" * MAX_JSON_BYTES + '"', encoding="utf-8")
    with pytest.raises(InvalidJSON, match="over the 1,000,000-byte limit"):
        load_strict(path)


def test_file_at_the_size_limit_is_read(tmp_path):
    path = tmp_path / "edge.json"
    path.write_text('"' + "x" * (MAX_JSON_BYTES - 2) + '"', encoding="utf-8")
    data, _ = load_strict(path)
    assert len(data) == MAX_JSON_BYTES - 2


def test_load_strict_returns_the_hash_of_the_exact_bytes(tmp_path):
    path = tmp_path / "a.json"
    path.write_bytes(b'{"a": 1}\n')
    data, digest = load_strict(path)
    assert data == {"a": 1}
    assert digest == hashlib.sha256(b'{"a": 1}\n').hexdigest()


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(InvalidJSON, match="no such file"):
        load_strict(tmp_path / "absent.json")


def test_invalid_utf8_is_refused(tmp_path):
    path = tmp_path / "latin.json"
    path.write_bytes(b'{"a": "\xff"}')
    with pytest.raises(InvalidJSON, match="UTF-8"):
        load_strict(path)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=20,
)


@given(json_values)
def test_canonical_round_trip_preserves_value(value):
    text = canonical_json(value)
    assert loads_strict(text) == value
    assert json.loads(text) == value
    assert canonical_json(loads_strict(text)) == text


def test_canonical_json_keeps_case_and_non_ascii_text_exactly():
    value = {"b": "Ab Ç ü", "B": ["MiXeD", 1.5, None, True]}
    assert canonical_json(value) == '{"B":["MiXeD",1.5,null,true],"b":"Ab Ç ü"}'


@given(st.binary(max_size=200) | st.builds(lambda v: canonical_json(v).encode("utf-8"), json_values))
def test_arbitrary_bytes_never_raise_a_bare_exception(raw):
    try:
        value = loads_strict(raw)
    except LabkitError as exc:
        assert isinstance(exc, ValueError) and str(exc)
    else:
        # What the strict loader accepts, it reads exactly as json does.
        assert value == json.loads(raw)


def test_a_fifo_is_refused_before_reading(tmp_path):
    import os

    fifo = tmp_path / "suite.json"
    os.mkfifo(fifo)  # reading it would block forever
    with pytest.raises(InvalidJSON, match="not a regular file"):
        load_strict(fifo)


def test_a_device_is_refused_before_reading():
    with pytest.raises(InvalidJSON, match="not a regular file"):
        load_strict("/dev/zero")


def test_utf16_json_is_refused_as_not_utf8(tmp_path):
    path = tmp_path / "suite.json"
    path.write_text('{"cases": []}', encoding="utf-16")
    with pytest.raises(InvalidJSON, match="not UTF-8"):
        load_strict(path)


def test_request_json_keeps_the_senders_key_order_and_only_drops_whitespace():
    value = {"model": "m", "b": 1, "a": ["Ç ü", {"z": None, "y": True}]}
    assert request_json(value) == '{"model":"m","b":1,"a":["Ç ü",{"z":null,"y":true}]}'


def test_request_sha256_is_the_hash_of_the_compact_utf8_text_and_counts_key_order():
    assert request_sha256({"b": "é", "a": 1}) == hashlib.sha256('{"b":"é","a":1}'.encode()).hexdigest()
    assert request_sha256({"b": 1, "a": 1}) != request_sha256({"a": 1, "b": 1})


def test_ordered_pretty_json_keeps_key_order_indents_by_two_and_ends_with_newline():
    assert ordered_pretty_json({"b": "é", "a": [1]}) == '{\n  "b": "é",\n  "a": [\n    1\n  ]\n}\n'


def test_pretty_json_keeps_non_ascii_text_as_is():
    assert pretty_json({"b": "Ç", "a": "ü"}) == '{\n  "a": "ü",\n  "b": "Ç"\n}\n'


@pytest.mark.parametrize("writer", [canonical_json, request_json, ordered_pretty_json, pretty_json])
@pytest.mark.parametrize("number", [float("nan"), float("inf"), float("-inf")])
def test_every_writer_refuses_a_non_finite_number_and_says_what_to_use(writer, number):
    with pytest.raises(InvalidJSON, match="Replace NaN or Infinity with a number or null"):
        writer({"x": [number]})


def test_file_sha256_is_the_hash_of_the_exact_bytes(tmp_path):
    path = tmp_path / "run.json"
    path.write_bytes(b'{"a":1}\r\n\xc3\xa9')
    assert file_sha256(path) == hashlib.sha256(b'{"a":1}\r\n\xc3\xa9').hexdigest()
    assert file_sha256(str(path)) == file_sha256(path)


def test_an_error_in_text_without_a_source_is_named_json_text():
    with pytest.raises(InvalidJSON, match=r"^JSON text: malformed JSON at line 1"):
        loads_strict("{")


def test_an_error_in_a_file_names_the_file(tmp_path):
    path = tmp_path / "suite.json"
    path.write_text('{"a": 1, "a": 2}', encoding="utf-8")
    with pytest.raises(InvalidJSON, match=f"^{re.escape(str(path))}: repeated JSON key 'a'"):
        load_strict(path)


def test_json_nested_too_deeply_is_a_clear_error_not_a_recursion_error():
    with pytest.raises(InvalidJSON, match=r"^rules: JSON nested too deeply to read$"):
        loads_strict("[" * 200_000 + "]" * 200_000, source="rules")


def test_load_strict_honours_a_smaller_size_limit(tmp_path):
    path = tmp_path / "suite.json"
    path.write_text('{"cases": [1, 2, 3]}', encoding="utf-8")
    with pytest.raises(InvalidJSON, match="20 bytes is over the 10-byte limit"):
        load_strict(path, max_bytes=10)
    assert load_strict(path, max_bytes=20)[0] == {"cases": [1, 2, 3]}


def test_a_file_that_grows_between_stat_and_read_is_refused(tmp_path, monkeypatch):
    from pathlib import Path

    path = tmp_path / "suite.json"
    path.write_text("[1]", encoding="utf-8")
    # The size check passed on the 3 bytes stat saw; the read returns what a writer appended since.
    monkeypatch.setattr(Path, "read_bytes", lambda self: b"[1, 2, 3, 4]")
    with pytest.raises(InvalidJSON, match="over the 5-byte limit; refusing to read it"):
        read_strict_bytes(path, max_bytes=5)


def test_the_parse_hooks_refuse_a_repeated_key_a_constant_and_an_overflow_on_their_own():
    from labkit.canonical import finite_float, reject_constant, unique_object

    assert unique_object([("a", 1), ("b", 2)]) == {"a": 1, "b": 2}
    with pytest.raises(InvalidJSON, match="repeated JSON key 'a'"):
        unique_object([("a", 1), ("a", 2)])
    with pytest.raises(InvalidJSON, match="non-finite number NaN"):
        reject_constant("NaN")
    assert finite_float("2.5") == 2.5
    with pytest.raises(InvalidJSON, match="1e999 overflows to infinity"):
        finite_float("1e999")


def test_request_json_writes_escapes_and_number_spellings_as_json_does_but_keeps_float_and_int_apart() -> None:
    from labkit.canonical import loads_strict, request_json

    assert request_json(loads_strict('{"a": "\\u00e9", "b": 1.50}')) == request_json(loads_strict('{"a":"é","b":1.5}'))
    assert request_json(loads_strict('{"seed": 7}')) != request_json(loads_strict('{"seed": 7.0}'))


def test_a_whole_number_too_long_for_python_is_a_clear_error_not_a_value_error():
    with pytest.raises(InvalidJSON, match=r"^suite: a number too long to read \(Exceeds the limit \(4300 digits\)"):
        loads_strict('{"weight": 1' + "0" * 5000 + "}", source="suite")
