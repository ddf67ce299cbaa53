"""Line diffs for the review workspace: side-by-side rows, intra-line marks, folding, unified text.

Plain Python (no Django): the web layer highlights and escapes what this returns.

How the alignment is made, and why:
- The common prefix and suffix are trimmed first. Reviews mostly compare a file
  with a lightly edited copy of itself, so this leaves a small middle and makes
  the common case linear.
- The middle is aligned with `difflib.SequenceMatcher`; lines without a letter
  or digit are junk (they cannot anchor a match but are absorbed next to one),
  and `autojunk=False`:
  autojunk treats lines that occur in more than 1% of a 200+ line file (blank
  lines, `}`, `return out`) as junk, which produces "changes" on lines that did
  not change. Without autojunk the matcher can get slow when the middle is big
  and full of repeated lines, so above `AUTOJUNK_ABOVE` middle lines we accept
  the heuristic: a slightly noisier diff beats a page that never renders.
- Inside a replaced block, lines are paired by position (left i with right i),
  the rest are pure deletions or insertions. Character marks are computed only
  for those pairs, on word/punctuation tokens (so `128`→`256` marks the number,
  not the digits `1`→`2`, `28`→`56`), and a replaced token pair is narrowed to
  the characters that actually differ (`stride_xm`→`stride_xn` marks `m`/`n`).
  Pairs that share too little are shown as wholly changed, and very long lines
  skip the intra-line work (`MAX_INTRALINE_CHARS`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

AUTOJUNK_ABOVE = 5_000
MAX_INTRALINE_CHARS = 2_000
# Below this similarity, a positional pair is two different lines: no intra-line marks.
MIN_PAIR_RATIO = 0.3
# An unchanged stretch is folded only when it hides at least this many lines.
MIN_FOLD = 4
DEFAULT_CONTEXT = 3
# Inputs longer than this (per side) are cut, and the result says so.
DEFAULT_MAX_LINES = 50_000

_TOKEN_RE = re.compile(r"\w+|\s+|[^\w\s]")
_ALNUM_RE = re.compile(r"[^\W_]")

Span = tuple[int, int]
Opcode = tuple[str, int, int, int, int]


@dataclass(frozen=True, slots=True)
class Line:
    """One side of a row: its 1-based number, its text (no newline) and changed character spans."""

    number: int
    text: str
    marks: tuple[Span, ...] = ()


@dataclass(frozen=True, slots=True)
class Row:
    """equal, replace (both sides), delete (left only) or insert (right only)."""

    tag: str
    left: Line | None
    right: Line | None


@dataclass(frozen=True, slots=True)
class Block:
    """Rows shown together, or a folded stretch of unchanged rows (expandable)."""

    rows: tuple[Row, ...]
    folded: bool = False

    @property
    def size(self) -> int:
        return len(self.rows)


@dataclass(frozen=True)
class SideBySide:
    blocks: list[Block]
    added: int
    removed: int
    changed: int
    left_lines: int
    right_lines: int
    truncated: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return self.added == 0 and self.removed == 0 and self.changed == 0

    def rows(self) -> Iterator[Row]:
        for block in self.blocks:
            yield from block.rows


def split_lines(text: str) -> list[str]:
    """Lines without their newline; a final newline does not make an extra empty line."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def _is_line_junk(line: str) -> bool:
    """Lines with no letter or digit (blank, `}`, `});`) never anchor a match on their own.

    They still match when next to a real match (SequenceMatcher extends matches
    over junk), so they are not reported as changed; they just cannot pull the
    alignment around, and they are what makes the matcher slow when repeated.
    """
    return not _ALNUM_RE.search(line)


def line_opcodes(a: Sequence[str], b: Sequence[str]) -> list[Opcode]:
    """SequenceMatcher-style opcodes over whole lines (see the module docstring)."""
    n, m = len(a), len(b)
    prefix = 0
    limit = min(n, m)
    while prefix < limit and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and a[n - 1 - suffix] == b[m - 1 - suffix]:
        suffix += 1
    ops: list[Opcode] = []
    if prefix:
        ops.append(("equal", 0, prefix, 0, prefix))
    a_mid, b_mid = a[prefix : n - suffix], b[prefix : m - suffix]
    if a_mid or b_mid:
        if not a_mid:
            ops.append(("insert", prefix, prefix, prefix, m - suffix))
        elif not b_mid:
            ops.append(("delete", prefix, n - suffix, prefix, prefix))
        else:
            autojunk = max(len(a_mid), len(b_mid)) > AUTOJUNK_ABOVE
            matcher = difflib.SequenceMatcher(_is_line_junk, a_mid, b_mid, autojunk=autojunk)
            for tag, i1, i2, j1, j2 in matcher.get_opcodes():
                ops.append((tag, i1 + prefix, i2 + prefix, j1 + prefix, j2 + prefix))
    if suffix:
        ops.append(("equal", n - suffix, n, m - suffix, m))
    return _merge_equal(ops)


def _merge_equal(ops: list[Opcode]) -> list[Opcode]:
    merged: list[Opcode] = []
    for op in ops:
        if merged and merged[-1][0] == op[0] == "equal":
            prev = merged[-1]
            merged[-1] = ("equal", prev[1], op[2], prev[3], op[4])
        else:
            merged.append(op)
    return merged


def _merge_spans(spans: list[Span]) -> tuple[Span, ...]:
    out: list[Span] = []
    for start, end in spans:
        if start >= end:
            continue
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return tuple(out)


def _narrow(left: str, right: str) -> tuple[Span, Span]:
    """The differing middle of two strings, after their common prefix and suffix."""
    p = 0
    limit = min(len(left), len(right))
    while p < limit and left[p] == right[p]:
        p += 1
    s = 0
    while s < limit - p and left[-1 - s] == right[-1 - s]:
        s += 1
    return (p, len(left) - s), (p, len(right) - s)


def intraline_marks(left: str, right: str) -> tuple[tuple[Span, ...], tuple[Span, ...]] | None:
    """Changed character spans of a paired line, or None when the lines are too different or too long."""
    if len(left) + len(right) > MAX_INTRALINE_CHARS:
        return None
    lt, rt = _TOKEN_RE.findall(left), _TOKEN_RE.findall(right)
    matcher = difflib.SequenceMatcher(None, lt, rt, autojunk=False)
    # The cheap upper bound first: most unrelated pairs stop here.
    if matcher.quick_ratio() < MIN_PAIR_RATIO or matcher.ratio() < MIN_PAIR_RATIO:
        return None
    # Character offsets of every token boundary.
    lpos = [0]
    for tok in lt:
        lpos.append(lpos[-1] + len(tok))
    rpos = [0]
    for tok in rt:
        rpos.append(rpos[-1] + len(tok))
    lmarks: list[Span] = []
    rmarks: list[Span] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if tag == "replace" and i2 - i1 == 1 and j2 - j1 == 1:
            (ls, le), (rs, re_) = _narrow(lt[i1], rt[j1])
            lmarks.append((lpos[i1] + ls, lpos[i1] + le))
            rmarks.append((rpos[j1] + rs, rpos[j1] + re_))
            continue
        lmarks.append((lpos[i1], lpos[i2]))
        rmarks.append((rpos[j1], rpos[j2]))
    return _merge_spans(lmarks), _merge_spans(rmarks)


def _whole(text: str) -> tuple[Span, ...]:
    return ((0, len(text)),) if text else ()


def _rows(a: Sequence[str], b: Sequence[str], ops: list[Opcode]) -> Iterator[Row]:
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal":
            for k in range(i2 - i1):
                yield Row("equal", Line(i1 + k + 1, a[i1 + k]), Line(j1 + k + 1, b[j1 + k]))
        elif tag == "delete":
            for i in range(i1, i2):
                yield Row("delete", Line(i + 1, a[i], _whole(a[i])), None)
        elif tag == "insert":
            for j in range(j1, j2):
                yield Row("insert", None, Line(j + 1, b[j], _whole(b[j])))
        else:
            pairs = min(i2 - i1, j2 - j1)
            for k in range(pairs):
                left, right = a[i1 + k], b[j1 + k]
                marks = intraline_marks(left, right)
                lm, rm = marks if marks is not None else (_whole(left), _whole(right))
                yield Row("replace", Line(i1 + k + 1, left, lm), Line(j1 + k + 1, right, rm))
            for i in range(i1 + pairs, i2):
                yield Row("delete", Line(i + 1, a[i], _whole(a[i])), None)
            for j in range(j1 + pairs, j2):
                yield Row("insert", None, Line(j + 1, b[j], _whole(b[j])))


def _fold(rows: list[Row], context: int) -> list[Block]:
    """Group rows into blocks, folding unchanged stretches that are far from any change."""
    blocks: list[Block] = []
    shown: list[Row] = []
    i = 0
    n = len(rows)
    while i < n:
        if rows[i].tag != "equal":
            shown.append(rows[i])
            i += 1
            continue
        j = i
        while j < n and rows[j].tag == "equal":
            j += 1
        # Keep `context` lines next to a change on each side; the start and end of the file have only one.
        keep_before = context if i > 0 else 0
        keep_after = context if j < n else 0
        hidden = (j - i) - keep_before - keep_after
        if hidden >= MIN_FOLD:
            shown.extend(rows[i : i + keep_before])
            if shown:
                blocks.append(Block(tuple(shown)))
            blocks.append(Block(tuple(rows[i + keep_before : j - keep_after]), folded=True))
            shown = list(rows[j - keep_after : j])
        else:
            shown.extend(rows[i:j])
        i = j
    if shown:
        blocks.append(Block(tuple(shown)))
    return blocks


def side_by_side(
    left: str, right: str, *, context: int = DEFAULT_CONTEXT, max_lines: int = DEFAULT_MAX_LINES
) -> SideBySide:
    """Side-by-side rows of `left` against `right`, unchanged stretches folded beyond `context` lines."""
    a, b = split_lines(left), split_lines(right)
    notes: list[str] = []
    truncated = False
    for name, lines in (("left", a), ("right", b)):
        if len(lines) > max_lines:
            notes.append(f"The {name} side has {len(lines):,} lines; only the first {max_lines:,} are compared.")
            del lines[max_lines:]
            truncated = True
    if left.endswith("\n") != right.endswith("\n") and (left or right):
        side = "left" if not left.endswith("\n") else "right"
        notes.append(f"The {side} side has no newline at the end of the file.")
    ops = line_opcodes(a, b)
    rows = list(_rows(a, b, ops))
    added = sum(1 for r in rows if r.tag == "insert")
    removed = sum(1 for r in rows if r.tag == "delete")
    changed = sum(1 for r in rows if r.tag == "replace")
    return SideBySide(
        blocks=_fold(rows, max(0, context)),
        added=added,
        removed=removed,
        changed=changed,
        left_lines=len(a),
        right_lines=len(b),
        truncated=truncated,
        notes=notes,
    )


def _grouped(ops: list[Opcode], n: int) -> Iterator[list[Opcode]]:
    """difflib.SequenceMatcher.get_grouped_opcodes, over opcodes we computed ourselves."""
    codes = list(ops)
    if not codes:
        codes = [("equal", 0, 1, 0, 1)]
    if codes[0][0] == "equal":
        tag, i1, i2, j1, j2 = codes[0]
        codes[0] = (tag, max(i1, i2 - n), i2, max(j1, j2 - n), j2)
    if codes[-1][0] == "equal":
        tag, i1, i2, j1, j2 = codes[-1]
        codes[-1] = (tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n))
    nn = n + n
    group: list[Opcode] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > nn:
            group.append((tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n)))
            yield group
            group = []
            i1, j1 = max(i1, i2 - n), max(j1, j2 - n)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        yield group


def _range(start: int, stop: int) -> str:
    """Unified diff range, as GNU diff writes it."""
    beginning = start + 1
    length = stop - start
    if length == 1:
        return f"{beginning}"
    if not length:
        beginning -= 1
    return f"{beginning},{length}"


def unified(
    left: str, right: str, *, from_name: str = "a", to_name: str = "b", context: int = DEFAULT_CONTEXT
) -> str:
    """A unified diff (`patch` applies it), empty when the texts are equal."""
    a, b = split_lines(left), split_lines(right)
    a_eol, b_eol = left.endswith("\n") or not left, right.endswith("\n") or not right
    a_cmp, b_cmp = a, b
    if a_eol != b_eol:
        # "x" and "x\n" differ as last lines: the patch must add or drop that newline.
        a_cmp = a if a_eol else [*a[:-1], a[-1] + "\x00no-eol"]
        b_cmp = b if b_eol else [*b[:-1], b[-1] + "\x00no-eol"]
    ops = line_opcodes(a_cmp, b_cmp)
    out: list[str] = []
    for group in _grouped(ops, max(0, context)):
        if not out:
            out.append(f"--- {from_name}\n")
            out.append(f"+++ {to_name}\n")
        first, last = group[0], group[-1]
        out.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for i in range(i1, i2):
                    out.append(" " + a[i] + "\n")
                    # The last line of a side lacking a newline: both sides share it only if both lack it.
                    if i == len(a) - 1 and not a_eol:
                        out.append("\\ No newline at end of file\n")
                continue
            for i in range(i1, i2):
                out.append("-" + a[i] + "\n")
                if i == len(a) - 1 and not a_eol:
                    out.append("\\ No newline at end of file\n")
            for j in range(j1, j2):
                out.append("+" + b[j] + "\n")
                if j == len(b) - 1 and not b_eol:
                    out.append("\\ No newline at end of file\n")
    return "".join(out)
