"""GEAK-eval ROCm tasks: a JSON array of {file, target_kernel_name, instruction, label}.

Task id `geak-rocm/<file stem>`. `label` (the full reference Triton file with its
pytest tests) is the reference; `instruction` (the signature and docstring to
complete) the instruction; the target is a Triton kernel for ROCm.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipeline.importers.common import (
    FieldProblem,
    extra_fields,
    file_stem,
    head_has,
    json_records,
    text_field,
)
from pipeline.importers.reading import Item
from pipeline.importers.records import ParsedRecord, RecordError, RevisionData

NAME = "geak-rocm"
LABEL = "GEAK-eval ROCm tasks (ROCm_eval_complex_instruct_v1.json)"
KNOWN = frozenset({"file", "target_kernel_name", "instruction", "label"})
AUTHOR = "import:geak-rocm"


def detect(path: Path, head: bytes) -> bool:
    return head_has(head, "target_kernel_name", "label")


def parse(path: Path) -> Iterator[ParsedRecord | RecordError]:
    return json_records(path, expect="array", build=lambda obj, item: build(obj, item, path))


def build(obj: dict[str, Any], item: Item, path: Path) -> ParsedRecord:
    name = text_field(obj, "file")
    stem = file_stem(name)
    if not stem:
        raise FieldProblem("file", f"cannot make a task id from {name!r}")
    label = text_field(obj, "label")
    instruction = text_field(obj, "instruction")
    kernel = text_field(obj, "target_kernel_name", required=False)
    provenance: dict[str, Any] = {"format": NAME, "import_file": path.name, "file": name}
    extras = extra_fields(obj, KNOWN)
    if extras:
        provenance["extra_fields"] = extras
    return ParsedRecord(
        task_id=f"geak-rocm/{stem}",
        source=NAME,
        kernel_name=kernel.strip(),
        reference_language="triton",
        target_language="triton",
        tags=["geak-rocm"],
        provenance=provenance,
        revisions=[
            RevisionData(kind="reference", content=label, author_label=AUTHOR, language="triton",
                         provenance={"field": "label"}),
            RevisionData(kind="instruction", content=instruction, author_label=AUTHOR,
                         provenance={"field": "instruction"}),
        ],
    )
