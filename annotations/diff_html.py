"""HTML for the side-by-side diff: Pygments colours with the diff engine's character marks laid over.

Every piece of text goes through `html.escape` (the five HTML-special characters) here; the only markup
is our own (`<tr>`, `<td>`, `<span class=...>` with class names from a fixed
table), so the result may be marked safe. Nothing else in the review area is.

Highlighting costs more than diffing, so only the rows on screen are coloured,
each shown block as one chunk (a multi-line string inside a block colours
correctly; one that starts above a fold may not - the price of not lexing hidden
lines); folded stretches are coloured when expanded. Python/Triton and
C/C++/CUDA/HIP go through `pipeline.quicklex` (one regex scan, Pygments' class
names); other languages through Pygments itself, which is about ten times slower.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape

from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from pygments.token import STANDARD_TYPES, _TokenType

from annotations.highlight import MAX_HIGHLIGHT_BYTES, lexer_for
from pipeline.diffing import Block, Line, Row, SideBySide
from pipeline.quicklex import tokenize_lines

Piece = tuple[str, str]  # (css class, text)
# Blocks whose text is larger than this are shown escaped but not coloured.
MAX_LEX_CHARS = MAX_HIGHLIGHT_BYTES


def _css_class(ttype: _TokenType) -> str:
    while ttype not in STANDARD_TYPES:
        ttype = ttype.parent
    return STANDARD_TYPES[ttype]


def lex_lines(lines: Sequence[str], language: str) -> list[list[Piece]]:
    """Per line, the (class, text) pieces Pygments gives for `lines` lexed as one chunk."""
    if not lines:
        return []
    quick = tokenize_lines(lines, language)
    if quick is not None:
        return quick
    text = "\n".join(lines)
    if len(text) > MAX_LEX_CHARS:
        return [[("", line)] for line in lines]
    out: list[list[Piece]] = [[]]
    for ttype, value in lexer_for(language).get_tokens(text + "\n"):
        cls = _css_class(ttype)
        parts = value.split("\n")
        for k, part in enumerate(parts):
            if k:
                out.append([])
            if part:
                out[-1].append((cls, part))
    # The trailing newline we added opens one extra empty line.
    while len(out) > len(lines):
        out.pop()
    while len(out) < len(lines):
        out.append([])
    return out


def _line_html(pieces: Iterable[Piece], marks: tuple[tuple[int, int], ...]) -> str:
    """Escaped, coloured text with the changed spans wrapped in <span class="x">."""
    if not marks:
        return "".join(f'<span class="{cls}">{escape(text)}</span>' if cls else escape(text) for cls, text in pieces)
    html: list[str] = []
    pos = 0
    mi = 0
    for cls, text in pieces:
        start = 0
        while start < len(text):
            abs_start = pos + start
            while mi < len(marks) and marks[mi][1] <= abs_start:
                mi += 1
            if mi < len(marks) and marks[mi][0] <= abs_start:
                end = min(len(text), marks[mi][1] - pos)
                marked = True
            else:
                end = len(text) if mi >= len(marks) else min(len(text), marks[mi][0] - pos)
                marked = False
            chunk = escape(text[start:end])
            classes = f"{cls} x" if marked and cls else ("x" if marked else cls)
            html.append(f'<span class="{classes}">{chunk}</span>' if classes else chunk)
            start = end
        pos += len(text)
    return "".join(html)


def _cells(line: Line | None, pieces: list[Piece] | None, side: str) -> str:
    if line is None:
        return '<td class="ln empty"></td><td class="src empty"></td>'
    body = _line_html(pieces if pieces is not None else [("", line.text)], line.marks)
    return f'<td class="ln" data-side="{side}">{line.number}</td><td class="src">{body}</td>'


def rows_html(rows: Sequence[Row], left_language: str, right_language: str) -> str:
    """<tr> rows for one block, both sides lexed as chunks."""
    left_lines = [r.left.text for r in rows if r.left is not None]
    right_lines = [r.right.text for r in rows if r.right is not None]
    left_pieces = iter(lex_lines(left_lines, left_language))
    right_pieces = iter(lex_lines(right_lines, right_language))
    out: list[str] = []
    for row in rows:
        lp = next(left_pieces) if row.left is not None else None
        rp = next(right_pieces) if row.right is not None else None
        out.append(f'<tr class="{row.tag}">{_cells(row.left, lp, "l")}{_cells(row.right, rp, "r")}</tr>')
    return "\n".join(out)


def fold_html(block: Block, index: int, expand_url: str) -> str:
    first = block.rows[0]
    left_from = first.left.number if first.left else 0
    right_from = first.right.number if first.right else 0
    return str(
        format_html(
            '<tr class="fold" data-fold="{}"><td colspan="4"><a class="expand" href="{}" data-fold="{}">'
            "⋯ {} unchanged lines (left {}–{}, right {}–{}) · expand</a></td></tr>",
            index, expand_url, index, block.size, left_from, left_from + block.size - 1,
            right_from, right_from + block.size - 1,
        )
    )


def diff_table_html(
    diff: SideBySide,
    *,
    left_language: str,
    right_language: str,
    expand_url: str,
    expanded: frozenset[int] = frozenset(),
) -> SafeString:
    """The <tbody> elements of the diff table; `expand_url` gets `&expand=<index>` appended for each fold."""
    parts: list[str] = []
    for index, block in enumerate(diff.blocks):
        if block.folded and index not in expanded:
            parts.append(f'<tbody class="folded" id="fold-{index}">{fold_html(block, index, f"{expand_url}&expand={index}#fold-{index}")}</tbody>')
        else:
            parts.append(f'<tbody id="block-{index}">{rows_html(block.rows, left_language, right_language)}</tbody>')
    return mark_safe("\n".join(parts))  # noqa: S308 - every text above went through html.escape()/format_html


def block_rows_html(diff: SideBySide, index: int, *, left_language: str, right_language: str) -> SafeString:
    """The rows of one block (an expanded fold), for the fragment request."""
    block = diff.blocks[index]
    return mark_safe(rows_html(block.rows, left_language, right_language))  # noqa: S308 - escaped above
