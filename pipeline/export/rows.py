"""One approved sample (plain data) -> one export row (plain dict).

The row carries BigCodeBench's nine fields, built by the rules in
`pipeline.export.prompts`, plus the kernel's own: languages, the reference,
the verification summary of the approving run, provenance, reviewers, and
every covered revision's content so that importing the row gives the sample
back (`pipeline.importers.ks_export`).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline.export.prompts import (
    C_FAMILY_LANGUAGES,
    PYTHON_LANGUAGES,
    PromptError,
    code_prompt_for,
    complete_prompt,
    instruct_from_doc,
    parse_docstring,
    spec_from_instruction,
    split_complete_prompt,
)

# Bumped whenever a row or file changes shape: it is part of every manifest,
# so two snapshots with the same version and data are byte-identical.
GENERATOR_VERSION = "kernelstudio-export/1.0"
ROW_FORMAT = "kernelstudio-export-row/1"

# Kinds whose content is carried in a named field of the row; the rest
# (wrapper, analysis, note) go into `artifacts`.
_NAMED_KINDS = frozenset({"reference", "instruction", "candidate", "test"})


class RowError(ValueError):
    """This sample cannot become a row; the message says why (shown per sample)."""


@dataclass(frozen=True)
class ArtifactData:
    revision_id: int
    kind: str
    content: str
    sha256: str
    language: str = ""


@dataclass(frozen=True)
class ExportInput:
    """What the exporter reads for one approved sample (no Django objects)."""

    sample_id: int
    task_id: str
    entry_point: str
    reference_language: str
    target_language: str
    kernel_name: str = ""
    source: str = ""
    provenance: Mapping[str, Any] = field(default_factory=dict)
    tags: Sequence[str] = ()
    difficulty: int | None = None
    # The revisions the valid approval(s) cover, one per kind.
    artifacts: Mapping[str, ArtifactData] = field(default_factory=dict)
    # Summary of the approving run: backend, device, status, stages, speedup...
    verification: Mapping[str, Any] | None = None
    reviewers: Sequence[str] = ()
    # ISO 8601 UTC of the newest valid approval.
    approved_at: str = ""


def _python_libs(source: str) -> list[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    libs: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            libs.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            libs.add(node.module.split(".")[0])
    return sorted(libs)


_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)


def _c_libs(source: str) -> list[str]:
    """`<torch/extension.h>` -> torch, `<hip/hip_runtime.h>` -> hip, `<cuda_fp16.h>` -> cuda_fp16."""
    names = set()
    for header in _INCLUDE.findall(source):
        first = header.split("/")[0]
        names.add(first.rsplit(".", 1)[0] if "/" not in header else first)
    return sorted(names)


def libs_of(source: str, language: str) -> list[str]:
    if language in PYTHON_LANGUAGES:
        return _python_libs(source)
    if language in C_FAMILY_LANGUAGES:
        return _c_libs(source)
    return []


_PYBIND_DEF = re.compile(r'\.def\(\s*"(\w+)"\s*,\s*&?\s*([\w:]+)')


def _solution_entry_point(solution: str, entry_point: str, language: str) -> str:
    """The function the code prompt shows.

    A HIP/CUDA candidate often does not define the sample's entry point: a
    Python wrapper adapts the extension's exported function to it
    (docs/test-contract.md). The model then has to write that exported
    function, so it becomes the row's entry point.
    """
    if language not in C_FAMILY_LANGUAGES:
        return entry_point
    if re.search(rf"\b{re.escape(entry_point)}\s*\(", solution):
        return entry_point
    exported = _PYBIND_DEF.findall(solution)
    if not exported:
        return entry_point  # code_prompt_for reports the missing definition
    symbol = exported[0][1].split("::")[-1]
    return symbol


def build_row(item: ExportInput) -> dict[str, Any]:
    """Build the row, or raise RowError naming what is missing."""
    arts = item.artifacts
    if "instruction" not in arts:
        raise RowError("no instruction revision is covered by the approval")
    if "test" not in arts:
        raise RowError("no test revision is covered by the approval")
    if "candidate" in arts:
        solution_kind, solution_language = "candidate", item.target_language
    elif "reference" in arts:
        solution_kind, solution_language = "reference", item.reference_language
    else:
        raise RowError("neither a candidate nor a reference revision is covered by the approval")
    sample_entry_point = entry_point = item.entry_point or item.kernel_name
    if not entry_point:
        raise RowError("the sample has no entry point")
    solution = arts[solution_kind].content
    # A C++ wrapper (launcher + PYBIND11_MODULE) is appended to the candidate
    # before building (docs/test-contract.md): the solution is both, in that order.
    wrapper = arts.get("wrapper")
    joined_wrapper = (
        solution_kind == "candidate"
        and wrapper is not None
        and (wrapper.language or "").lower() in C_FAMILY_LANGUAGES
    )
    if joined_wrapper and wrapper is not None:
        solution = solution + ("" if solution.endswith("\n") else "\n") + wrapper.content
    analysis: dict[str, Any] | None = None
    if "analysis" in arts:
        try:
            loaded = json.loads(arts["analysis"].content)
        except ValueError:
            loaded = None  # a prose analysis adds nothing structured; the instruction still rules
        analysis = loaded if isinstance(loaded, dict) else None
    try:
        entry_point = _solution_entry_point(solution, entry_point, solution_language)
        code_prompt = code_prompt_for(solution, entry_point=entry_point, language=solution_language)
        spec = spec_from_instruction(arts["instruction"].content, analysis)
        complete = complete_prompt(
            code_prompt=code_prompt, entry_point=entry_point, language=solution_language, spec=spec
        )
        # The Instruct prompt and doc_struct come from the Complete prompt as
        # written, through the same rules a reader of docs/prompts.md would apply.
        split = split_complete_prompt(complete, entry_point=entry_point, language=solution_language)
        doc = parse_docstring(split.docstring)
        instruct = instruct_from_doc(doc, code_prompt=split.code_prompt)
    except PromptError as exc:
        raise RowError(f"{solution_kind} ({solution_language}): {exc}") from exc

    reviewers = sorted(set(item.reviewers))
    return {
        # BigCodeBench's nine
        "task_id": item.task_id,
        "complete_prompt": complete,
        "instruct_prompt": instruct,
        "canonical_solution": solution,
        "code_prompt": split.code_prompt,
        "test": arts["test"].content,
        "entry_point": entry_point,
        "doc_struct": doc.to_json(),
        "libs": str(libs_of(solution, solution_language)),
        # ours
        "format": ROW_FORMAT,
        "language": item.reference_language,
        "target": item.target_language,
        "solution_kind": solution_kind,
        # The sample's own entry point (the name the test calls); `entry_point`
        # above is the function the code prompt asks for.
        "sample_entry_point": sample_entry_point,
        # Only when canonical_solution is candidate + C++ wrapper: the candidate
        # alone, so an import gives back each revision as it was.
        **({"candidate": arts["candidate"].content} if joined_wrapper else {}),
        "reference": arts["reference"].content if "reference" in arts else None,
        "instruction": arts["instruction"].content,
        "artifacts": {kind: a.content for kind, a in sorted(arts.items()) if kind not in _NAMED_KINDS},
        "revisions": {
            kind: {"id": a.revision_id, "sha256": a.sha256, "language": a.language}
            for kind, a in sorted(arts.items())
        },
        "verification": dict(item.verification) if item.verification is not None else None,
        "provenance": {
            "source": item.source,
            "kernel_name": item.kernel_name,
            **{k: v for k, v in item.provenance.items() if k not in ("source", "kernel_name")},
        },
        "tags": sorted(set(item.tags)),
        "difficulty": item.difficulty,
        "reviewers": reviewers,
        "reviewer_count": len(reviewers),
        "approved_at": item.approved_at,
    }
