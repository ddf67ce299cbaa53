"""BigCodeBench JSONL (plain or .gz): nine string fields per row.

Python, not kernels, but imported as samples (language python): they are the
reference shape of our Complete/Instruct export. Task id `bigcodebench/<n>` from
`BigCodeBench/<n>`. `complete_prompt` is the instruction, `canonical_solution`
the reference, `test` the test, `instruct_prompt` a note; `code_prompt`,
`doc_struct` and `libs` are kept verbatim in provenance.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipeline.importers.common import FieldProblem, extra_fields, head_has, json_records, text_field
from pipeline.importers.reading import Item
from pipeline.importers.records import ParsedRecord, RecordError, RevisionData

NAME = "bigcodebench"
LABEL = "BigCodeBench JSONL (.jsonl or .jsonl.gz)"
KNOWN = frozenset({"task_id", "complete_prompt", "instruct_prompt", "canonical_solution", "code_prompt", "test",
                   "entry_point", "doc_struct", "libs"})
AUTHOR = "import:bigcodebench"


def detect(path: Path, head: bytes) -> bool:
    return head_has(head, "complete_prompt", "canonical_solution")


def parse(path: Path) -> Iterator[ParsedRecord | RecordError]:
    return json_records(path, expect="lines", build=lambda obj, item: build(obj, item, path))


def build(obj: dict[str, Any], item: Item, path: Path) -> ParsedRecord:
    original_id = text_field(obj, "task_id").strip()
    n = original_id.rsplit("/", 1)[-1].strip()
    if not n or any(c.isspace() for c in n):
        raise FieldProblem("task_id", f"cannot make a task id from {original_id[:60]!r}")
    complete = text_field(obj, "complete_prompt")
    solution = text_field(obj, "canonical_solution")
    test = text_field(obj, "test")
    entry_point = text_field(obj, "entry_point").strip()
    instruct = text_field(obj, "instruct_prompt", required=False)
    code_prompt = text_field(obj, "code_prompt", required=False)
    doc_struct = text_field(obj, "doc_struct", required=False)
    libs = obj.get("libs")
    if libs is not None and not isinstance(libs, str | list):
        raise FieldProblem("libs", "expected a string or an array of library names")
    provenance: dict[str, Any] = {
        "format": NAME,
        "import_file": path.name,
        "bigcodebench_task_id": original_id,
        "code_prompt": code_prompt,
        "doc_struct": doc_struct,
        "libs": libs if libs is not None else "",
    }
    extras = extra_fields(obj, KNOWN)
    if extras:
        provenance["extra_fields"] = extras
    revisions = [
        RevisionData(kind="instruction", content=complete, author_label=AUTHOR, language="python",
                     provenance={"field": "complete_prompt"}),
        RevisionData(kind="reference", content=solution, author_label=AUTHOR, language="python",
                     provenance={"field": "canonical_solution"}),
        RevisionData(kind="test", content=test, author_label=AUTHOR, language="python", provenance={"field": "test"}),
    ]
    if instruct.strip():
        revisions.append(RevisionData(kind="note", content=instruct, author_label=AUTHOR,
                                      provenance={"field": "instruct_prompt", "title": "Instruct prompt"}))
    return ParsedRecord(
        task_id=f"bigcodebench/{n}",
        source=NAME,
        kernel_name=entry_point,
        entry_point=entry_point,
        reference_language="python",
        target_language="python",
        tags=["bigcodebench"],
        provenance=provenance,
        revisions=revisions,
    )
