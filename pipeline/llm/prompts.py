"""Prompt templates: version-controlled files under prompts/.

A template is `prompts/<name>.v<N>.md`: front matter (name, version, purpose,
variables) then `## system` / `## user` sections. `{{var}}` placeholders are
filled in one pass, so a value containing `{{x}}` (kernel code may) is never
expanded again. The revision an LLM produces records name, version and the
file's sha256, so a prompt edit without a version bump still shows up.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Mapping
from pathlib import Path

PROMPTS_DIR = Path(__file__).resolve().parents[2] / "prompts"
_FILE_RE = re.compile(r"^(?P<name>[a-z][a-z0-9_]*)\.v(?P<version>\d+)\.md$")
_VAR_RE = re.compile(r"\{\{\s*([a-z_][a-z0-9_]*)\s*\}\}")
_SECTION_RE = re.compile(r"^## (system|user|assistant)\s*$", re.M)


class TemplateError(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class Template:
    name: str
    version: int
    sha256: str
    sections: tuple[tuple[str, str], ...]  # (role, text)
    variables: frozenset[str]

    def render(self, values: Mapping[str, object]) -> list[dict[str, str]]:
        missing = self.variables - set(values)
        if missing:
            raise TemplateError(f"prompt {self.name}.v{self.version} needs {', '.join(sorted(missing))}")

        def fill(text: str) -> str:
            return _VAR_RE.sub(lambda m: str(values[m.group(1)]), text)

        return [{"role": role, "content": fill(text)} for role, text in self.sections]

    def provenance(self) -> dict[str, object]:
        return {"template": self.name, "template_version": self.version,
                "template_sha256": self.sha256[:16]}


def parse_template(name: str, version: int, raw: str) -> Template:
    body = raw
    if raw.startswith("---\n"):
        end = raw.find("\n---\n", 4)
        if end < 0:
            raise TemplateError(f"prompt {name}.v{version}: unterminated front matter")
        body = raw[end + 5 :]
    parts = _SECTION_RE.split(body)
    sections = []
    # split() gives [before, role, text, role, text, ...]
    for i in range(1, len(parts), 2):
        text = parts[i + 1].strip("\n")
        sections.append((parts[i], text.strip() + "\n" if text.strip() else ""))
    if not sections:
        raise TemplateError(f"prompt {name}.v{version}: no '## system' or '## user' section")
    variables = frozenset(v for _, t in sections for v in _VAR_RE.findall(t))
    return Template(name=name, version=version,
                    sha256=hashlib.sha256(raw.encode()).hexdigest(),
                    sections=tuple(sections), variables=variables)


def available(root: Path = PROMPTS_DIR) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for path in root.glob("*.md"):
        m = _FILE_RE.match(path.name)
        if m:
            out.setdefault(m["name"], []).append(int(m["version"]))
    return {k: sorted(v) for k, v in out.items()}


def load(name: str, version: int | None = None, root: Path = PROMPTS_DIR) -> Template:
    """The template `name` at `version`, or its newest version."""
    versions = available(root).get(name)
    if not versions:
        raise TemplateError(f"no prompt template named {name!r} in {root}")
    if version is None:
        version = versions[-1]
    elif version not in versions:
        raise TemplateError(f"prompt {name!r} has no version {version} (have {versions})")
    raw = (root / f"{name}.v{version}.md").read_text(encoding="utf-8")
    return parse_template(name, version, raw)
