"""Fenced code blocks in an LLM reply (Markdown ``` fences)."""

from __future__ import annotations

import dataclasses
import re

_OPEN_RE = re.compile(r"^(?P<indent>[ ]{0,3})(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)$")


@dataclasses.dataclass(frozen=True)
class CodeBlock:
    index: int
    language: str
    code: str
    closed: bool  # False when the reply ended (or broke off) inside the block


@dataclasses.dataclass(frozen=True)
class Segment:
    """A piece of a reply: prose (block is None) or a code block."""

    text: str
    block: CodeBlock | None = None


def split_reply(text: str) -> list[Segment]:
    """Prose and code blocks in order; an unterminated fence runs to the end."""
    segments: list[Segment] = []
    prose: list[str] = []
    lines = text.split("\n")
    i = 0
    n_blocks = 0
    while i < len(lines):
        m = _OPEN_RE.match(lines[i])
        if not m:
            prose.append(lines[i])
            i += 1
            continue
        fence = m["fence"]
        info = m["info"].strip().split()
        lang = info[0].lower() if info else ""
        body: list[str] = []
        i += 1
        closed = False
        while i < len(lines):
            stripped = lines[i].strip()
            if stripped.startswith(fence[0] * len(fence)) and stripped.strip(fence[0]) == "":
                closed = True
                i += 1
                break
            body.append(lines[i])
            i += 1
        if prose:
            segments.append(Segment("\n".join(prose)))
            prose = []
        code = "\n".join(body)
        if code and not code.endswith("\n"):
            code += "\n"
        segments.append(Segment(code, CodeBlock(n_blocks, lang, code, closed)))
        n_blocks += 1
    if prose:
        segments.append(Segment("\n".join(prose)))
    return segments


def code_blocks(text: str) -> list[CodeBlock]:
    return [s.block for s in split_reply(text) if s.block is not None]


def main_block(text: str, prefer: tuple[str, ...] = ()) -> CodeBlock | None:
    """The block a generation task asked for: a closed block in a preferred
    language if any, else the longest closed block."""
    blocks = [b for b in code_blocks(text) if b.closed and b.code.strip()]
    if not blocks:
        return None
    preferred = [b for b in blocks if b.language in prefer]
    return max(preferred or blocks, key=lambda b: len(b.code))
