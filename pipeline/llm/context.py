"""The context a chat turn sends: current artifacts and the latest run.

Parts are plain data; the user sees each with a token estimate and can leave
any out. Long parts are cut in the middle (the head has the signatures, the
tail the error that matters) and the cut is stated, never silent.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from .client import estimate_tokens


@dataclasses.dataclass(frozen=True)
class Part:
    key: str  # e.g. "reference", "candidate", "run"
    label: str  # e.g. "reference (rev 3, triton)"
    text: str
    language: str = ""

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)


def clip(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    head = max_chars * 2 // 3
    tail = max_chars - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut} characters left out ...]\n{text[-tail:]}"


def render(parts: Iterable[Part], *, exclude: Iterable[str] = (), max_chars_per_part: int = 24000) -> str:
    excluded = set(exclude)
    out = []
    for p in parts:
        if p.key in excluded or not p.text.strip():
            continue
        body = clip(p.text, max_chars_per_part)
        if p.language:
            out.append(f"### {p.label}\n```{p.language}\n{body.rstrip()}\n```")
        else:
            out.append(f"### {p.label}\n{body.rstrip()}")
    return "\n\n".join(out) if out else "(no artifacts included)"


def summary(parts: Iterable[Part], *, exclude: Iterable[str] = ()) -> list[dict[str, object]]:
    excluded = set(exclude)
    return [{"key": p.key, "label": p.label, "tokens": p.tokens, "included": p.key not in excluded}
            for p in parts if p.text.strip()]
