"""Complete and Instruct prompts: the deterministic rules (no Django, no LLM).

BigCodeBench builds its Instruct prompt from its Complete prompt with parsing
rules rather than an LLM, so the same Complete prompt always gives the same
Instruct prompt (seed 001). We do the same for kernels. `docs/prompts.md`
defines the Complete prompt and shows examples; this module is the rules.

The pieces:

* `parse_docstring` splits a structured doc comment into BigCodeBench's seven
  sections (`description`, `notes`, `params`, `returns`, `reqs`, `raises`,
  `examples`). The rules reproduce BigCodeBench's own `doc_struct` (measured in
  `tests/export/test_prompts_bigcodebench.py`), quirks included: a blank line
  ends a section and any paragraph after it without a header belongs to the
  description; a plural header (`Notes:`, `Examples:`) stays as the first line.
* `split_complete_prompt` finds the doc comment of the entry point in a Python
  (docstring) or C-family (`/** ... */` above the signature) Complete prompt and
  returns the code prompt (the prompt without the doc comment and blank lines).
* `instruct_prompt` renders the Instruct prompt: keep description, notes, raised
  errors and outputs; drop parameters, requirements and examples; end with
  "You should write self-contained code starting with:" and the code prompt.
* `complete_prompt` builds a kernel's Complete prompt from a code prompt and the
  sections derived from the sample's instruction.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

SECTION_KEYS: tuple[str, ...] = ("description", "notes", "params", "returns", "reqs", "raises", "examples")

# Header line -> section. Checked with str.startswith, first match wins, so the
# longer spellings come first where one is a prefix of another.
_HEADERS: tuple[tuple[str, str], ...] = (
    ("Parameters:", "params"),
    ("Returns:", "returns"),
    ("Requirements:", "reqs"),
    ("Raises:", "raises"),
    ("Examples:", "examples"),
    ("Example:", "examples"),
    ("Notes:", "notes"),
    ("Note:", "notes"),
    # Our addition for kernels. Constraints ("no device checks", "block size
    # must divide N") are things the implementer must respect, so they travel
    # with the notes, which the Instruct prompt keeps.
    ("Constraints:", "notes"),
)
# Headers whose text is removed from the line. BigCodeBench keeps the plural
# spellings `Notes:` and `Examples:` as content (its doc_struct shows it);
# matching that keeps our rules checkable against its 1,140 rows.
_DROPPED_HEADERS = frozenset(
    {"Parameters:", "Returns:", "Requirements:", "Raises:", "Example:", "Note:", "Constraints:"}
)
_HEADER_SPAN = max(len(header) for header, _ in _HEADERS)
_BULLET = re.compile(r"^-(?![\d.])\s*")

INSTRUCT_CODE_LEAD = "You should write self-contained code starting with:"


class PromptError(ValueError):
    """A Complete prompt that the rules cannot take apart (message says why)."""


@dataclass(frozen=True)
class DocStruct:
    description: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    params: tuple[str, ...] = ()
    returns: tuple[str, ...] = ()
    reqs: tuple[str, ...] = ()
    raises: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, list[str]]:
        return {key: list(getattr(self, key)) for key in SECTION_KEYS}

    def to_json(self) -> str:
        """BigCodeBench's `doc_struct` string: keys in its order, default separators."""
        return json.dumps(self.as_dict(), ensure_ascii=False)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Iterable[str]]) -> DocStruct:
        unknown = set(data) - set(SECTION_KEYS)
        if unknown:
            raise PromptError(f"unknown doc_struct sections: {', '.join(sorted(unknown))}")
        return cls(**{key: tuple(str(line) for line in data.get(key, ())) for key in SECTION_KEYS})


def _parse_sections(text: str, *, split_constraints: bool) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {key: [] for key in (*SECTION_KEYS, "constraints")}
    current = "description"
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            # A blank line closes the section: an unheaded paragraph after it is
            # description again (BigCodeBench/500's second example shows this).
            current = "description"
            continue
        # Every header ends with ':' within its first _HEADER_SPAN characters: a
        # cheap test that skips the header scan for almost every line (export speed).
        if ":" in line[:_HEADER_SPAN]:
            for header, key in _HEADERS:
                if line.startswith(header):
                    current = "constraints" if split_constraints and header == "Constraints:" else key
                    if header in _DROPPED_HEADERS:
                        line = line[len(header) :].strip()
                    break
        if current != "description" and line[:1] == "-":
            # "- item" bullets lose the dash; "-1.5" (a number) keeps its sign.
            line = _BULLET.sub("", line)
        if line:
            sections[current].append(line)
    return sections


def parse_docstring(text: str) -> DocStruct:
    """Split a doc comment body into BigCodeBench's sections (lines stripped, blank lines dropped).

    `Constraints:` (ours) is read as notes, in document order.
    """
    sections = _parse_sections(text, split_constraints=False)
    return DocStruct(**{key: tuple(sections[key]) for key in SECTION_KEYS})


@dataclass(frozen=True)
class SplitPrompt:
    code_prompt: str
    docstring: str


def _strip_blank_lines(text: str) -> str:
    # Only truly empty lines go: BigCodeBench/363 keeps a line of spaces.
    lines = [line for line in text.splitlines() if line]
    # ... but not at the end, where the signature must be the last line (BigCodeBench/729).
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines) + "\n" if lines else ""


def _parse_python(source: str) -> ast.Module:
    # Prompts are data: an invalid escape such as "\d" in a docstring is the
    # author's business, not a warning for whoever runs the export.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(source)


def _split_python(prompt: str, entry_point: str) -> SplitPrompt:
    try:
        tree = _parse_python(prompt)
    except SyntaxError as exc:
        raise PromptError(f"Complete prompt is not valid Python (line {exc.lineno}): {exc.msg}") from exc
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == entry_point:
            break
    else:
        raise PromptError(f"entry point {entry_point!r} is not defined in the Complete prompt")
    first = node.body[0] if node.body else None
    if not (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        raise PromptError(f"entry point {entry_point!r} has no docstring")
    segment = ast.get_source_segment(prompt, first.value)
    assert segment is not None  # parsed from this very text
    # The raw text between the quotes, not the evaluated string: BigCodeBench
    # keeps escapes such as `\n` in a regular expression as written.
    body = re.sub(r"^[rRuUbB]*('''|\"\"\")|('''|\"\"\")$", "", segment)
    lines = prompt.splitlines(keepends=True)
    head = "".join(lines[: first.lineno - 1])
    return SplitPrompt(code_prompt=_strip_blank_lines(head), docstring=body)


_C_DOC = re.compile(r"/\*\*(?P<body>.*?)\*/", re.S)
_C_LINE_LEAD = re.compile(r"^\s*\* ?")


def _split_c_family(prompt: str, entry_point: str) -> SplitPrompt:
    """The doc comment is the last `/** ... */` block before the entry point's name."""
    comments = list(_C_DOC.finditer(prompt))
    # The first mention outside a doc comment: the example inside one may call it.
    signature = next(
        (
            m
            for m in re.finditer(rf"\b{re.escape(entry_point)}\s*\(", prompt)
            if not any(c.start() <= m.start() < c.end() for c in comments)
        ),
        None,
    )
    if signature is None:
        raise PromptError(f"entry point {entry_point!r} is not declared in the Complete prompt")
    blocks = [m for m in comments if m.end() <= signature.start()]
    if not blocks:
        raise PromptError(f"entry point {entry_point!r} has no /** ... */ doc comment above it")
    block = blocks[-1]
    body_lines = [_C_LINE_LEAD.sub("", line, count=1) for line in block.group("body").splitlines()]
    code = prompt[: block.start()] + prompt[block.end() :]
    return SplitPrompt(code_prompt=_strip_blank_lines(code), docstring="\n".join(body_lines))


PYTHON_LANGUAGES = frozenset({"python", "triton"})
C_FAMILY_LANGUAGES = frozenset({"cuda", "hip", "cpp", "c++", "c"})


def split_complete_prompt(prompt: str, *, entry_point: str, language: str) -> SplitPrompt:
    if language in PYTHON_LANGUAGES:
        return _split_python(prompt, entry_point)
    if language in C_FAMILY_LANGUAGES:
        return _split_c_family(prompt, entry_point)
    raise PromptError(f"no Complete prompt rules for language {language!r}")


def instruct_from_doc(doc: DocStruct, *, code_prompt: str) -> str:
    """Render the Instruct prompt (BigCodeBench's layout, line for line)."""
    if not code_prompt.strip():
        raise PromptError("the code prompt is empty")
    parts = [" ".join(doc.description)]
    if doc.notes:
        parts.append("Note that: " + " ".join(doc.notes))
    if doc.raises:
        parts.append("The function should raise the exception for: " + " ".join(doc.raises))
    if doc.returns:
        parts.append("The function should output with:\n" + "\n".join("    " + line for line in doc.returns))
    if not code_prompt.endswith("\n"):
        code_prompt += "\n"
    parts.append(f"{INSTRUCT_CODE_LEAD}\n```\n{code_prompt}```")
    return "\n".join(parts)


def instruct_prompt(complete: str, *, entry_point: str, language: str) -> str:
    """Complete prompt -> Instruct prompt by the documented rules."""
    split = split_complete_prompt(complete, entry_point=entry_point, language=language)
    return instruct_from_doc(parse_docstring(split.docstring), code_prompt=split.code_prompt)


# ---------------------------------------------------------------------------
# Building a kernel's Complete prompt


@dataclass(frozen=True)
class KernelSpec:
    """What a kernel's doc comment says, section by section (plain lines)."""

    description: Sequence[str]
    params: Sequence[str] = ()
    returns: Sequence[str] = ()
    constraints: Sequence[str] = ()
    raises: Sequence[str] = ()
    requirements: Sequence[str] = ()
    example: Sequence[str] = ()
    notes: Sequence[str] = field(default_factory=tuple)


def _section(title: str, lines: Sequence[str], *, bullets: bool) -> list[str]:
    if not lines:
        return []
    body = [f"- {line}" if bullets else line for line in lines]
    return ["", title, *body]


def doc_comment_lines(spec: KernelSpec) -> list[str]:
    description = [line for line in spec.description if line.strip()]
    if not description:
        raise PromptError("the description is empty: a Complete prompt needs one")
    lines = list(description)
    lines += _section("Parameters:", spec.params, bullets=False)
    lines += _section("Returns:", spec.returns, bullets=False)
    lines += _section("Constraints:", spec.constraints, bullets=True)
    lines += _section("Note:", spec.notes, bullets=True)
    lines += _section("Raises:", spec.raises, bullets=False)
    lines += _section("Requirements:", spec.requirements, bullets=True)
    lines += _section("Example:", spec.example, bullets=False)
    return lines


def complete_prompt(*, code_prompt: str, entry_point: str, language: str, spec: KernelSpec) -> str:
    """Put the doc comment where the language expects it.

    Python/Triton: a docstring right under the entry point's `def` line, as in
    BigCodeBench. C-family: a `/** ... */` block right above the signature.
    """
    doc = doc_comment_lines(spec)
    # A line made only of whitespace would read as a blank line and close a
    # section; the rules would then not give back what we wrote.
    lines = code_prompt.rstrip("\n").splitlines()
    if language in PYTHON_LANGUAGES:
        for index, line in enumerate(lines):  # noqa: B007 - index is used after the loop
            if re.match(rf"\s*(async\s+)?def\s+{re.escape(entry_point)}\s*\(", line):
                break
        else:
            raise PromptError(f"entry point {entry_point!r} is not defined in the code prompt")
        # The signature may span lines; the docstring goes after the line that ends with ':'.
        end = index
        while end < len(lines) and not lines[end].rstrip().endswith(":"):
            end += 1
        if end == len(lines):
            raise PromptError(f"the signature of {entry_point!r} does not end with ':'")
        indent = re.match(r"\s*", lines[index]).group(0) + "    "  # type: ignore[union-attr]
        if any('"""' in line for line in doc):
            raise PromptError('the doc text contains """ and cannot sit in a docstring')
        body = [f'{indent}"""'] + [f"{indent}{line}" if line else "" for line in doc] + [f'{indent}"""']
        # A blank line before the def, as BigCodeBench writes it (code_prompt drops it again).
        before = [*lines[:index], ""] if index > 0 else []
        out = before + lines[index : end + 1] + body + lines[end + 1 :]
        return "\n".join(out) + "\n"
    if language in C_FAMILY_LANGUAGES:
        for index, line in enumerate(lines):  # noqa: B007 - index is used after the loop
            if re.search(rf"\b{re.escape(entry_point)}\s*\(", line):
                break
        else:
            raise PromptError(f"entry point {entry_point!r} is not declared in the code prompt")
        if any("*/" in line for line in doc):
            raise PromptError("the doc text contains */ and cannot sit in a comment")
        # Template or attribute lines directly above the name belong to the signature.
        start = index
        while start > 0 and re.match(r"\s*(template\s*<|__global__|__host__|extern\b)", lines[start - 1]):
            start -= 1
        body = ["/**"] + [f" * {line}" if line else " *" for line in doc] + [" */"]
        before = [*lines[:start], ""] if start > 0 else []
        out = before + body + lines[start:]
        return "\n".join(out) + "\n"
    raise PromptError(f"no Complete prompt rules for language {language!r}")


# ---------------------------------------------------------------------------
# Code prompts from a solution


_PY_SIGNATURE_END = re.compile(r"\)\s*(->\s*[^:]+)?:\s*$")


def python_code_prompt(source: str, *, entry_point: str) -> str:
    """Top-level imports and module constants of `source`, then the entry point's signature."""
    try:
        tree = _parse_python(source)
    except SyntaxError as exc:
        raise PromptError(f"solution is not valid Python (line {exc.lineno}): {exc.msg}") from exc
    lines = source.splitlines()
    keep: list[str] = []
    target: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            keep.extend(lines[node.lineno - 1 : (node.end_lineno or node.lineno)])
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == entry_point:
            target = node
    if target is None:
        raise PromptError(f"entry point {entry_point!r} is not a top-level function of the solution")
    first_body = target.body[0]
    start = (target.decorator_list[0].lineno if target.decorator_list else target.lineno) - 1
    # The signature is everything from the decorators to the line before the body.
    signature = lines[start : first_body.lineno - 1] if first_body.lineno > target.lineno else []
    if not signature:
        raise PromptError(f"the body of {entry_point!r} starts on its def line; put it on its own line")
    # Drop a docstring the solution already has: the Complete prompt writes its own.
    while signature and not _PY_SIGNATURE_END.search(signature[-1]):
        signature.pop()
    if not signature:
        raise PromptError(f"cannot find where the signature of {entry_point!r} ends")
    return _strip_blank_lines("\n".join(keep + signature))


_C_INCLUDE = re.compile(r"^\s*#\s*include\b.*$", re.M)


def c_code_prompt(source: str, *, entry_point: str) -> str:
    """`#include` lines of `source`, then the entry point's declaration up to its `{`."""
    includes = [m.group(0).strip() for m in _C_INCLUDE.finditer(source)]
    # The definition, not a call or a prototype: name, balanced parentheses, then `{`.
    for match in re.finditer(rf"\b{re.escape(entry_point)}\s*\(", source):
        depth, pos = 0, match.end() - 1
        while pos < len(source):
            if source[pos] == "(":
                depth += 1
            elif source[pos] == ")":
                depth -= 1
                if depth == 0:
                    break
            pos += 1
        rest = source[pos + 1 :]
        brace = re.match(r"[^;{()]*\{", rest)
        if brace is None:
            continue
        line_start = source.rfind("\n", 0, match.start()) + 1
        header = source[line_start : pos + 1 + brace.end()]
        # Return type on the line(s) above (`torch::Tensor\nkernel_function(...)`).
        above = source[:line_start].rstrip("\n").splitlines()
        lead: list[str] = []
        while above and above[-1].strip() and not re.search(r"[;{}]\s*$|^\s*#|\*/\s*$|^\s*//", above[-1]):
            lead.insert(0, above.pop())
        signature = "\n".join([*lead, header.rstrip()])
        return _strip_blank_lines("\n".join([*includes, signature]))
    raise PromptError(f"entry point {entry_point!r} has no definition in the solution")


def code_prompt_for(source: str, *, entry_point: str, language: str) -> str:
    if language in PYTHON_LANGUAGES:
        return python_code_prompt(source, entry_point=entry_point)
    if language in C_FAMILY_LANGUAGES:
        return c_code_prompt(source, entry_point=entry_point)
    raise PromptError(f"no code prompt rules for language {language!r}")


# ---------------------------------------------------------------------------
# Instruction text -> KernelSpec


def spec_from_instruction(instruction: str, analysis: Mapping[str, object] | None = None) -> KernelSpec:
    """Turn an instruction (free text or already sectioned) and an optional
    analysis contract into a KernelSpec.

    The instruction is the expert-curated text, so its sections win; the
    analysis (the LLM's JSON contract) only fills sections the instruction
    leaves empty. Requirements and examples that the instruction gives are kept
    in the Complete prompt and dropped by the Instruct rules.
    """
    doc = _parse_sections(instruction, split_constraints=True)
    analysis = analysis or {}

    def lines_of(key: str) -> list[str]:
        value = analysis.get(key)
        if value is None:
            return []
        if isinstance(value, str):
            return [line.strip() for line in value.splitlines() if line.strip()]
        if isinstance(value, Mapping):
            return [f"{k}: {v}" for k, v in value.items()]
        if isinstance(value, list | tuple):
            out: list[str] = []
            for item in value:
                if isinstance(item, Mapping):
                    name = item.get("name", "")
                    kind = item.get("type") or item.get("dtype") or ""
                    text = item.get("description") or item.get("desc") or ""
                    out.append(f"{name} ({kind}): {text}".replace(" ()", "") if name else str(text))
                else:
                    out.append(str(item))
            return [line for line in out if line.strip()]
        return [str(value)]

    description = doc["description"] or lines_of("description") or lines_of("core_function")
    return KernelSpec(
        description=description,
        params=doc["params"] or lines_of("parameters") or lines_of("params"),
        returns=doc["returns"] or lines_of("returns"),
        constraints=doc["constraints"] or (lines_of("constraints") if not doc["notes"] else []),
        notes=doc["notes"],
        raises=doc["raises"] or lines_of("raises"),
        requirements=doc["reqs"] or lines_of("requirements"),
        example=doc["examples"] or lines_of("example"),
    )
