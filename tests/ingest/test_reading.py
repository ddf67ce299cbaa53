"""The streaming readers: element by element, across chunk boundaries, with exact byte positions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.importers import reading
from pipeline.importers.reading import InputFile, iter_array, iter_object, read_span

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "ingest"

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**12), 10**12) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=20,
)


def read_array(path: Path) -> list[object]:
    with InputFile(path) as f:
        items = list(iter_array(f))
    assert all(i.error is None for i in items), [i.error for i in items if i.error]
    return [i.value for i in items]


@pytest.mark.parametrize("chunk", [1, 3, 7, 64, 1 << 20])
def test_array_across_chunk_boundaries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    monkeypatch.setattr(reading, "CHUNK_CHARS", chunk)
    value = [12345678, "ünïcødé ✓ 中文", {"a": [1.5e10, None, True]}, -0.25, "", [], {}]
    p = tmp_path / "a.json"
    p.write_text(json.dumps(value, ensure_ascii=False, indent=1))
    assert read_array(p) == value


@settings(max_examples=60, deadline=None)
@given(st.lists(json_values, max_size=6), st.sampled_from([1, 2, 5, 1 << 20]), st.booleans())
def test_array_matches_json_load(tmp_path_factory: pytest.TempPathFactory, values: list[object], chunk: int,
                                 pretty: bool) -> None:
    p = tmp_path_factory.mktemp("h") / "a.json"
    p.write_text(json.dumps(values, ensure_ascii=False, indent=2 if pretty else None), encoding="utf-8")
    old = reading.CHUNK_CHARS
    reading.CHUNK_CHARS = chunk
    try:
        assert read_array(p) == json.loads(p.read_text(encoding="utf-8"))
    finally:
        reading.CHUNK_CHARS = old


@pytest.mark.parametrize("chunk", [1, 5, 1 << 20])
def test_object_spans_are_exact_byte_offsets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    monkeypatch.setattr(reading, "CHUNK_CHARS", chunk)
    src = FIXTURES / "agent" / "20250709_gaagent_hip_3_mem.json"
    p = tmp_path / "m.json"
    p.write_bytes(b"\xef\xbb\xbf" + src.read_bytes().replace(b"anonymous namespace", "anonymous 名前空間".encode()))
    expected = json.loads(p.read_text(encoding="utf-8-sig"))
    with InputFile(p) as f:
        items = list(iter_object(f))
    assert [i.key for i in items] == list(expected)
    for item in items:
        assert read_span(p, item.start, item.end) == expected[item.key]


def test_array_progress_reaches_the_end(tmp_path: Path) -> None:
    p = tmp_path / "a.json"
    p.write_text(json.dumps([{"x": "é" * 10}, {"y": 2}]))
    with InputFile(p) as f:
        items = list(iter_array(f))
    assert items[-1].byte_offset == p.stat().st_size - 1  # everything but the closing bracket


def test_trailing_garbage_after_array(tmp_path: Path) -> None:
    p = tmp_path / "a.json"
    p.write_text('[{"a": 1}] {"b": 2}')
    with InputFile(p) as f:
        items = list(iter_array(f))
    assert items[0].value == {"a": 1}
    assert "after the end" in (items[1].error or "")


def test_unclosed_string_is_an_error_not_a_hang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reading, "CHUNK_CHARS", 16)
    p = tmp_path / "a.json"
    p.write_text('[{"a": 1}, {"b": "never closed' + "x" * 500)
    with InputFile(p) as f:
        items = list(iter_array(f))
    assert items[0].value == {"a": 1} and items[1].index == 1 and "malformed" in (items[1].error or "")
