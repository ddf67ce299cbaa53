"""GEAK HIP task list: a JSON array of {task, instruction, output, file_path, file_name}.

Task id `geak-hip/<task>`. The list names the HIP source to optimise
(`file_path`/`file_name` in a ROCm examples or mmcv checkout) but does not
contain it, so these samples start with an instruction and no reference; a
non-empty `output` becomes the initial candidate.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipeline.importers.common import FieldProblem, extra_fields, head_has, json_records, text_field
from pipeline.importers.reading import Item
from pipeline.importers.records import ParsedRecord, RecordError, RevisionData

NAME = "geak-hip"
LABEL = "GEAK HIP task list (FromRe_instructions_FULL.json)"
KNOWN = frozenset({"task", "instruction", "output", "file_path", "file_name"})
AUTHOR = "import:geak-hip"
_TASK = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")


def detect(path: Path, head: bytes) -> bool:
    return head_has(head, "task", "file_path")


def parse(path: Path) -> Iterator[ParsedRecord | RecordError]:
    return json_records(path, expect="array", build=lambda obj, item: build(obj, item, path))


def build(obj: dict[str, Any], item: Item, path: Path) -> ParsedRecord:
    task = text_field(obj, "task").strip()
    if not _TASK.fullmatch(task):
        raise FieldProblem("task", f"{task[:60]!r} is not a usable task name (letters, digits, _ . + -)")
    instruction = text_field(obj, "instruction")
    output = text_field(obj, "output", required=False)
    file_path = text_field(obj, "file_path", required=False)
    file_name = text_field(obj, "file_name", required=False)
    provenance: dict[str, Any] = {"format": NAME, "import_file": path.name, "path": file_path, "file_name": file_name,
                                  "source_not_included": True}
    extras = extra_fields(obj, KNOWN)
    if extras:
        provenance["extra_fields"] = extras
    revisions = [RevisionData(kind="instruction", content=instruction, author_label=AUTHOR,
                              provenance={"field": "instruction"})]
    if output.strip():
        revisions.append(RevisionData(kind="candidate", content=output, author_label=AUTHOR, language="hip",
                                      provenance={"field": "output"}))
    return ParsedRecord(
        task_id=f"geak-hip/{task}",
        source=NAME,
        kernel_name=task,
        reference_language="hip",
        target_language="hip",
        tags=["geak-hip"],
        provenance=provenance,
        revisions=revisions,
    )
