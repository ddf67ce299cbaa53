from __future__ import annotations

import pytest

from pipeline.llm import jsonreply
from pipeline.llm.jsonreply import ReplyError, extract_json, validate


def test_plain_object() -> None:
    assert extract_json('{"a": 1}') == {"a": 1}


def test_fenced_with_prose_around() -> None:
    text = 'Here is the analysis:\n```json\n{"a": "x {not a brace}"}\n```\nHope this helps!'
    assert extract_json(text) == {"a": "x {not a brace}"}


def test_prose_around_without_fence_and_braces_in_strings() -> None:
    text = 'Sure. {"code": "if (x) { y(); }", "n": [1, 2,]} Done.'
    assert extract_json(text) == {"code": "if (x) { y(); }", "n": [1, 2]}


def test_first_valid_object_wins_over_broken_one() -> None:
    assert extract_json('{broken} and then {"ok": true}') == {"ok": True}


@pytest.mark.parametrize(("text", "why"), [
    ("", "empty"),
    ("no json here", "no JSON object"),
    ('{"a": }', "invalid JSON"),
    ("[1, 2]", "not an object"),
])
def test_errors_say_why(text: str, why: str) -> None:
    with pytest.raises(ReplyError, match=why):
        extract_json(text)


def test_validate_lists_every_problem() -> None:
    schema = {"core_function": jsonreply.nonempty_str, "functional_contract": jsonreply.python_expression,
              "key_parameters": jsonreply.str_list}
    with pytest.raises(ReplyError) as info:
        validate({"core_function": "", "functional_contract": "Z = X.T"}, schema)
    msg = str(info.value)
    assert "'core_function' must be a non-empty string" in msg
    assert "'functional_contract' must be a single Python expression" in msg
    assert "'key_parameters' is missing" in msg


def test_validate_keeps_only_schema_keys() -> None:
    out = validate({"a": "x", "extra": 1}, {"a": jsonreply.nonempty_str})
    assert out == {"a": "x"}


def test_python_source_reports_line() -> None:
    assert "line 2" in (jsonreply.python_source("x = 1\ndef (:\n") or "")


def test_unwrap() -> None:
    assert jsonreply.unwrap({"analysis": {"a": 1}}, "analysis") == {"a": 1}
    assert jsonreply.unwrap({"a": 1}, "analysis") == {"a": 1}
