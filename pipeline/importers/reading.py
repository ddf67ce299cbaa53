"""Streaming readers for JSON Lines, big JSON arrays and big JSON objects.

Memory stays bounded by the largest single record, not the file: JSONL is read
line by line; arrays and objects are read in chunks and decoded one element at
a time with `json.JSONDecoder.raw_decode`. Input is decoded as UTF-8 with
`surrogateescape`, so one record with bad bytes does not stop the file: the
bytes survive as lone surrogates, `find_undecodable` finds them and that record
gets an error while its neighbours import. `.gz` input is recognised by its
magic bytes, whatever the file is called.
"""

from __future__ import annotations

import codecs
import gzip
import io
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

from pipeline.importers.records import UnreadableInput

CHUNK_CHARS = 1 << 20
# One record larger than this is refused rather than buffered (a broken file
# that never closes a string would otherwise be read whole into memory).
MAX_RECORD_CHARS = 256 * 1024 * 1024
HEAD_BYTES = 64 * 1024
GZIP_MAGIC = b"\x1f\x8b"

_decoder = json.JSONDecoder()
_SURROGATE = re.compile("[\ud800-\udfff]")
_WS = " \t\r\n"


@dataclass
class Item:
    """One JSON value read from a stream, or why it could not be read."""

    value: Any = None
    error: str | None = None
    line: int | None = None
    index: int | None = None
    # Input bytes consumed once this item was read (compressed bytes for .gz).
    byte_offset: int = 0
    # For object members: the key, and the value's exact byte span in the (plain) file.
    key: str | None = None
    start: int = 0
    end: int = 0
    # False when the raw text of this item held no undecodable bytes (the deep scan can be skipped).
    suspect: bool = True


class InputFile:
    """A binary input, transparently gunzipped, that knows how far it has read."""

    def __init__(self, path: Path) -> None:
        try:
            self._raw: IO[bytes] = open(path, "rb")  # noqa: SIM115 - closed in close()
        except OSError as exc:
            raise UnreadableInput(f"cannot open {path.name}: {exc.strerror or exc}") from exc
        self.compressed = self._raw.read(2) == GZIP_MAGIC
        self._raw.seek(0)
        self.stream: IO[bytes] = (
            cast(IO[bytes], gzip.GzipFile(fileobj=self._raw, mode="rb")) if self.compressed else self._raw
        )
        self._pending_error: UnreadableInput | None = None

    @property
    def position(self) -> int:
        return self._raw.tell()

    def read(self, size: int) -> bytes:
        """Up to `size` bytes; on a damaged .gz, the bytes before the damage first, then the error."""
        if self._pending_error is not None:
            raise self._pending_error
        if not self.compressed:
            return self._raw.read(size)
        parts: list[bytes] = []
        got = 0
        while got < size:
            try:
                data = self.stream.read1(size - got)  # type: ignore[attr-defined]
            except (OSError, EOFError, gzip.BadGzipFile) as exc:
                error = UnreadableInput(f"the compressed input is damaged: {exc}")
                if not parts:
                    raise error from exc
                self._pending_error = error
                break
            if not data:
                break
            parts.append(data)
            got += len(data)
        return b"".join(parts)

    def read1(self, size: int) -> bytes:
        """At most one read from the file: returns the bytes before damage instead of losing them."""
        try:
            return self.stream.read1(size)  # type: ignore[attr-defined]
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise UnreadableInput(f"the compressed input is damaged: {exc}") from exc

    def close(self) -> None:
        if self.stream is not self._raw:
            self.stream.close()
        self._raw.close()

    def __enter__(self) -> InputFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_head(path: Path, size: int = HEAD_BYTES) -> bytes:
    """The first bytes of a file (decompressed), for format detection."""
    parts: list[bytes] = []
    got = 0
    with InputFile(path) as f:
        # Small reads, so a damaged .gz still shows what precedes the damage.
        while got < size:
            try:
                data = f.read1(min(4096, size - got))
            except UnreadableInput:
                break
            if not data:
                break
            parts.append(data)
            got += len(data)
    return b"".join(parts)


def first_char(head: bytes) -> str:
    text = head.decode("utf-8", "replace").lstrip("\ufeff" + _WS)
    return text[:1]


def find_undecodable(value: Any, path: str = "") -> str | None:
    """The path of the first string holding bytes that were not UTF-8 (or a lone surrogate)."""
    if isinstance(value, str):
        if not value.isascii() and _SURROGATE.search(value):
            return path or "(value)"
        return None
    if isinstance(value, dict):
        for k, v in value.items():
            sub = f"{path}.{k}" if path else str(k)
            if isinstance(k, str) and not k.isascii() and _SURROGATE.search(k):
                return sub
            found = find_undecodable(v, sub)
            if found:
                return found
        return None
    if isinstance(value, list):
        for i, v in enumerate(value):
            found = find_undecodable(v, f"{path}[{i}]")
            if found:
                return found
    return None


def _suspect(text: str) -> bool:
    """Could a value decoded from `text` hold a lone surrogate (undecodable bytes, or a \\udXXX escape)?"""
    if text.isascii():
        return "\\ud" in text or "\\uD" in text
    return _SURROGATE.search(text) is not None or "\\ud" in text or "\\uD" in text


def undecodable_message(where: str) -> str:
    return f"{where} contains bytes that are not valid UTF-8; fix the file's encoding (records beside it still import)"


def iter_jsonl(f: InputFile) -> Iterator[Item]:
    """One item per non-blank line; a malformed line is an error item, the next line goes on."""
    line_no = 0
    while True:
        try:
            raw = f.stream.readline()
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            yield Item(error=f"the compressed input is damaged after line {line_no}: {exc}", line=line_no + 1,
                       byte_offset=f.position)
            return
        if not raw:
            return
        line_no += 1
        text = raw.decode("utf-8", "surrogateescape")
        if line_no == 1:
            text = text.lstrip("\ufeff")
        text = text.strip()
        if not text:
            continue
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            yield Item(error=f"malformed JSON: {exc.msg} (column {exc.colno})", line=line_no, byte_offset=f.position)
            continue
        except RecursionError:
            yield Item(error="malformed JSON: nested too deeply", line=line_no, byte_offset=f.position)
            continue
        yield Item(value=value, line=line_no, byte_offset=f.position, suspect=_suspect(text))


class _TextStream:
    """Decoded text in a sliding buffer, with the exact byte position of the cursor."""

    def __init__(self, f: InputFile) -> None:
        self.f = f
        self.decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
        self.buf = ""
        self.pos = 0
        self.eof = False
        # Bytes of the decoded input before self.pos (uncompressed bytes).
        self.byte_pos = 0
        self._bom_checked = False
        self.last_suspect = True

    def fill(self, want: int = CHUNK_CHARS) -> bool:
        if self.eof:
            return False
        data = self.f.read(max(want, CHUNK_CHARS))
        if not data:
            self.eof = True
            text = self.decoder.decode(b"", final=True)
        else:
            text = self.decoder.decode(data)
        if not self._bom_checked and (text or self.eof):
            self._bom_checked = True
            if text.startswith("\ufeff"):
                text = text[1:]
                self.byte_pos += 3
        # Drop what was consumed so memory holds one record at most (plus a chunk).
        self.buf = self.buf[self.pos :] + text
        self.pos = 0
        return bool(data)

    def advance_to(self, end: int) -> None:
        segment = self.buf[self.pos : end]
        self.byte_pos += len(segment) if segment.isascii() else len(segment.encode("utf-8", "surrogateescape"))
        self.pos = end

    def peek(self) -> str:
        """The next non-whitespace character ('' at the end of input)."""
        while True:
            i = self.pos
            n = len(self.buf)
            while i < n and self.buf[i] in _WS:
                i += 1
            self.advance_to(i)
            if i < n:
                return self.buf[i]
            if not self.fill():
                return ""

    def decode_value(self) -> Any:
        """Decode the JSON value at the cursor, reading more input while it is incomplete."""
        while True:
            try:
                value, end = _decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                if self.eof or not _maybe_incomplete(exc, self.buf):
                    raise
                if len(self.buf) - self.pos > MAX_RECORD_CHARS:
                    raise json.JSONDecodeError(
                        f"record larger than {MAX_RECORD_CHARS // (1024 * 1024)} MiB or never closed", self.buf, self.pos
                    ) from exc
                self.fill(len(self.buf) - self.pos)
                continue
            if end == len(self.buf) and not self.eof and self.fill():
                # A number or literal at the very end may continue in the next chunk.
                continue
            self.last_suspect = _suspect(self.buf[self.pos : end])
            self.advance_to(end)
            return value


def _maybe_incomplete(exc: json.JSONDecodeError, buf: str) -> bool:
    # Truncation shows up either as an unterminated string (reported at its start)
    # or as an error at the very end of the buffer; anything else is a real syntax
    # error and is reported at once instead of reading the rest of the file.
    return exc.msg.startswith("Unterminated string") or exc.pos >= len(buf) - 16


def iter_array(f: InputFile) -> Iterator[Item]:
    index = 0
    try:
        for item in _iter_array(f):
            index = item.index if item.index is not None else index
            yield item
    except UnreadableInput as exc:
        # A damaged .gz in the middle: the elements before the damage are already out.
        yield Item(error=f"{exc}; the rest of the file cannot be read", index=index + 1, byte_offset=f.position)


def _iter_array(f: InputFile) -> Iterator[Item]:
    """Elements of a top-level JSON array, one at a time.

    A syntax error inside the array ends the reading (the elements after it
    cannot be found reliably); elements before it are already yielded.
    """
    ts = _TextStream(f)
    if ts.peek() != "[":
        yield Item(error="expected a JSON array ('[' at the start of the file)", index=None, byte_offset=ts.byte_pos)
        return
    ts.advance_to(ts.pos + 1)
    index = 0
    if ts.peek() == "]":
        ts.advance_to(ts.pos + 1)
    else:
        while True:
            try:
                ts.peek()
                value = ts.decode_value()
            except json.JSONDecodeError as exc:
                yield Item(
                    error=f"malformed JSON at element {index} (byte {ts.byte_pos}): {exc.msg}; "
                    "the rest of the array cannot be read",
                    index=index,
                    byte_offset=f.position,
                )
                return
            except RecursionError:
                yield Item(error=f"malformed JSON at element {index}: nested too deeply", index=index,
                           byte_offset=f.position)
                return
            yield Item(value=value, index=index, byte_offset=ts.byte_pos if not f.compressed else f.position,
                       suspect=ts.last_suspect)
            index += 1
            c = ts.peek()
            if c == ",":
                ts.advance_to(ts.pos + 1)
                continue
            if c == "]":
                ts.advance_to(ts.pos + 1)
                break
            what = repr(c) if c else "the end of the file"
            yield Item(error=f"malformed JSON after element {index - 1}: expected ',' or ']' but found {what}",
                       index=index, byte_offset=f.position)
            return
    if ts.peek() != "":
        yield Item(error="unexpected data after the end of the JSON array", index=index, byte_offset=f.position)


def iter_object(f: InputFile) -> Iterator[Item]:
    try:
        yield from _iter_object(f)
    except UnreadableInput as exc:
        yield Item(error=f"{exc}; the rest of the file cannot be read")


def _iter_object(f: InputFile) -> Iterator[Item]:
    """Members of a top-level JSON object, one at a time, with each value's byte span."""
    ts = _TextStream(f)
    if ts.peek() != "{":
        yield Item(error="expected a JSON object ('{' at the start of the file)")
        return
    ts.advance_to(ts.pos + 1)
    index = 0
    if ts.peek() == "}":
        return
    while True:
        try:
            if ts.peek() != '"':
                raise json.JSONDecodeError("expected a member name in double quotes", ts.buf, ts.pos)
            key = ts.decode_value()
            if ts.peek() != ":":
                raise json.JSONDecodeError("expected ':' after the member name", ts.buf, ts.pos)
            ts.advance_to(ts.pos + 1)
            ts.peek()
            start = ts.byte_pos
            value = ts.decode_value()
            end = ts.byte_pos
        except json.JSONDecodeError as exc:
            yield Item(error=f"malformed JSON at member {index} (byte {ts.byte_pos}): {exc.msg}; "
                       "the rest of the object cannot be read", index=index)
            return
        yield Item(value=value, key=key, index=index, start=start, end=end, byte_offset=ts.byte_pos)
        index += 1
        c = ts.peek()
        if c == ",":
            ts.advance_to(ts.pos + 1)
            continue
        if c == "}":
            return
        what = repr(c) if c else "the end of the file"
        yield Item(error=f"malformed JSON after member {index - 1}: expected ',' or '}}' but found {what}",
                   index=index)
        return


def iter_records(path: Path, *, expect: str) -> Iterator[Item]:
    """Items of a JSONL file (expect="lines") or a JSON array (expect="array").

    The file's real shape wins: a JSON array given where JSON Lines was expected
    (or the reverse) is read as what it is, after one error item that says so,
    so nothing is lost and the user learns the file is not what they said.
    """
    head = read_head(path)
    shape = "array" if first_char(head) == "[" else "lines"
    with InputFile(path) as f:
        if not head.strip():
            yield Item(error="the file is empty: no records", line=1 if expect == "lines" else None,
                       index=0 if expect == "array" else None)
            return
        if shape != expect:
            if expect == "lines":
                yield Item(error="expected JSON Lines (one object per line) but the file is a JSON array; "
                           "its elements were read by index instead", line=1)
            else:
                yield Item(error="expected a JSON array but the file looks like JSON Lines (one value per line); "
                           "it was read line by line instead", index=0)
        yield from (iter_array(f) if shape == "array" else iter_jsonl(f))


def file_size(path: Path) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def read_span(path: Path, start: int, end: int) -> Any:
    """Decode the JSON value at an exact byte span of a plain file (see iter_object)."""
    with open(path, "rb") as fh:
        fh.seek(start)
        data = fh.read(end - start)
    return json.loads(io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="surrogateescape").read())
