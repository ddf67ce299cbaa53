"""Helpers the format modules share: typed field access and record building."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from pipeline.importers.reading import Item, iter_records
from pipeline.importers.records import ParsedRecord, RecordError


class FieldProblem(Exception):
    """A field of one record is missing or has the wrong type: the record is refused."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def type_name(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


def text_field(obj: dict[str, Any], name: str, *, required: bool = True) -> str:
    """A string field; "" when optional and absent or null."""
    if name not in obj or obj[name] is None:
        if required:
            raise FieldProblem(name, "missing required field" if name not in obj else "required field is null")
        return ""
    value = obj[name]
    if not isinstance(value, str):
        raise FieldProblem(name, f"expected a string, got {type_name(value)}")
    if required and not value.strip():
        raise FieldProblem(name, "required field is empty")
    return value


def int_field(obj: dict[str, Any], name: str, *, low: int | None = None, high: int | None = None) -> int | None:
    """An optional integer; digits in a string are accepted (TritonBench writes difficulty as "3")."""
    value = obj.get(name)
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise FieldProblem(name, f"expected an integer, got {type_name(value)}")
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value.strip())
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int):
        raise FieldProblem(name, f"expected an integer, got {type_name(value)} {str(value)[:40]!r}")
    if (low is not None and value < low) or (high is not None and value > high):
        raise FieldProblem(name, f"{value} is outside {low}..{high}")
    return value


def bool_field(obj: dict[str, Any], name: str) -> bool | None:
    value = obj.get(name)
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise FieldProblem(name, f"expected true or false, got {type_name(value)} {str(value)[:40]!r}")


def extra_fields(obj: dict[str, Any], known: frozenset[str]) -> dict[str, Any]:
    """Unknown fields, kept verbatim in provenance so nothing in the file is lost."""
    return {k: v for k, v in obj.items() if k not in known}


def file_stem(name: str) -> str:
    """`sub/dir/sin_kernel.py` -> `sin_kernel` (Windows separators too)."""
    return PurePosixPath(name.replace("\\", "/")).stem


def json_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


_TRITON_DEF = re.compile(r"@triton\.jit[^\n]*\n(?:\s*@[^\n]*\n)*\s*def\s+([A-Za-z_]\w*)")


def triton_kernel_name(code: str) -> str:
    """Name of the first `@triton.jit` function, or ""."""
    m = _TRITON_DEF.search(code)
    return m.group(1) if m else ""


def json_records(
    path: Path,
    *,
    expect: str,
    build: Callable[[dict[str, Any], Item], ParsedRecord],
) -> Iterator[ParsedRecord | RecordError]:
    """Run `build` over every object of a JSONL file or JSON array, turning problems into errors."""
    for item in iter_records(path, expect=expect):
        if item.error is not None:
            yield RecordError(message=item.error, line=item.line, index=item.index, byte_offset=item.byte_offset)
            continue
        if not isinstance(item.value, dict):
            yield RecordError(message=f"expected a JSON object, got {type_name(item.value)}",
                              line=item.line, index=item.index, byte_offset=item.byte_offset)
            continue
        try:
            record = build(item.value, item)
        except FieldProblem as problem:
            yield RecordError(message=problem.message, field=problem.field, line=item.line, index=item.index,
                              byte_offset=item.byte_offset)
            continue
        record.line, record.index, record.byte_offset = item.line, item.index, item.byte_offset
        record.scan_text = item.suspect
        yield record


def head_has(head: bytes, *keys: str) -> bool:
    return all(f'"{k}"'.encode() in head for k in keys)
