"""Robust parsing of replies that must be JSON, and their validation.

Models wrap JSON in code fences, add a sentence before or after it, or emit a
trailing comma. We find the first balanced JSON object in the text (inside a
```json fence when there is one), parse it strictly, and validate it against a
small schema. Anything we cannot parse becomes a `ReplyError` whose message is
sent back to the model in one repair round.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

_FENCE_RE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.S)


class ReplyError(ValueError):
    """The reply is not the JSON we asked for; the message tells the model why."""


def _balanced_objects(text: str) -> list[str]:
    """Every top-level {...} span, honouring strings and escapes."""
    spans = []
    depth = 0
    start = -1
    in_str = False
    esc = False
    for i, ch in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"':
            if depth:
                in_str = True
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                spans.append(text[start : i + 1])
    return spans


def _loads_lenient(candidate: str) -> Any:
    try:
        return json.loads(candidate)
    except json.JSONDecodeError:
        # The one repair worth doing locally: trailing commas before } or ].
        fixed = re.sub(r",(\s*[}\]])", r"\1", candidate)
        return json.loads(fixed)


def extract_json(text: str) -> dict[str, Any]:
    """The JSON object in a model's reply, or ReplyError saying what is wrong."""
    if not text.strip():
        raise ReplyError("The reply was empty; answer with one JSON object.")
    candidates: list[str] = []
    for lang, body in _FENCE_RE.findall(text):
        if lang.lower() in ("json", "jsonc", ""):
            candidates.append(body.strip())
    candidates.append(text.strip())
    last_error = "no JSON object found"
    for cand in candidates:
        spans = _balanced_objects(cand) or ([cand] if cand.startswith(("{", "[")) else [])
        for span in spans:
            try:
                value = _loads_lenient(span)
            except json.JSONDecodeError as exc:
                last_error = f"invalid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
                continue
            if isinstance(value, dict):
                return value
            last_error = f"the JSON is a {type(value).__name__}, not an object"
    raise ReplyError(f"The reply is not usable: {last_error}. Answer with exactly one JSON object.")


# A schema maps a key to a checker that returns an error string or None.
Checker = Callable[[Any], str | None]


def nonempty_str(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return "must be a non-empty string"
    return None


def python_expression(value: Any) -> str | None:
    """The functional contract must parse as a Python expression (e.g. `Z == X.T`)."""
    err = nonempty_str(value)
    if err:
        return err
    try:
        compile(value, "<contract>", "eval")
    except SyntaxError as exc:
        return f"must be a single Python expression such as 'Z == X.T' ({exc.msg})"
    return None


def str_or_mapping(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return None
    if isinstance(value, Mapping) and value:
        return None
    return "must be a non-empty string or object"


def str_list(value: Any) -> str | None:
    if isinstance(value, list) and all(isinstance(v, str | dict) for v in value):
        return None
    return "must be a list"


def python_source(value: Any) -> str | None:
    """Python code the model wrote must at least parse (it runs later, sandboxed)."""
    err = nonempty_str(value)
    if err:
        return err
    try:
        compile(value, "<generated>", "exec")
    except SyntaxError as exc:
        return f"is not valid Python ({exc.msg} at line {exc.lineno})"
    return None


def validate(obj: Mapping[str, Any], schema: Mapping[str, Checker]) -> dict[str, Any]:
    """Keep the schema's keys, or raise ReplyError listing every problem."""
    problems = []
    for key, check in schema.items():
        if key not in obj:
            problems.append(f"'{key}' is missing")
            continue
        err = check(obj[key])
        if err:
            problems.append(f"'{key}' {err}")
    if problems:
        raise ReplyError("The JSON does not match what was asked: " + "; ".join(problems) + ".")
    return {k: obj[k] for k in schema}


def unwrap(obj: dict[str, Any], key: str) -> dict[str, Any]:
    """Accept {"analysis": {...}} as well as {...} (seed 004's prompt nests it)."""
    inner = obj.get(key)
    return inner if isinstance(inner, dict) and len(obj) == 1 else obj
