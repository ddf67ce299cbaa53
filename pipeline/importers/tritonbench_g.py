"""TritonBench-G JSON: a JSON array of {file, repo, simp_instru, comp_instru, output, difficulty, star, *_len}.

Task id `tritonbench-g/<file stem>`. `output` (the Triton code) is the reference,
`comp_instru` (the long instruction) the instruction, `simp_instru` (the short
one) a note; repository, star count and length counts go to provenance.
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
    int_field,
    json_records,
    text_field,
    triton_kernel_name,
)
from pipeline.importers.reading import Item
from pipeline.importers.records import ParsedRecord, RecordError, RevisionData

NAME = "tritonbench-g"
LABEL = "TritonBench-G JSON (TritonBench_G_v1.json)"
KNOWN = frozenset({"file", "repo", "simp_instru", "simp_instru_len", "comp_instru", "comp_instru_len", "output",
                   "output_triton_len", "star", "difficulty"})
AUTHOR = "import:tritonbench-g"


def detect(path: Path, head: bytes) -> bool:
    # Keys, not shape: an array given as JSONL (or the reverse) is still recognised and reported.
    return head_has(head, "comp_instru", "output")


def parse(path: Path) -> Iterator[ParsedRecord | RecordError]:
    return json_records(path, expect="array", build=lambda obj, item: build(obj, item, path))


def build(obj: dict[str, Any], item: Item, path: Path) -> ParsedRecord:
    name = text_field(obj, "file")
    stem = file_stem(name)
    if not stem:
        raise FieldProblem("file", f"cannot make a task id from {name!r}")
    output = text_field(obj, "output")
    comp = text_field(obj, "comp_instru")
    simp = text_field(obj, "simp_instru", required=False)
    repo = text_field(obj, "repo", required=False)
    difficulty = int_field(obj, "difficulty", low=1, high=5)
    star = int_field(obj, "star", low=0)
    lengths = {k: obj[k] for k in ("simp_instru_len", "comp_instru_len", "output_triton_len") if k in obj}
    provenance: dict[str, Any] = {"format": NAME, "import_file": path.name, "file": name, "repo": repo,
                                  "star": star, "lengths": lengths}
    extras = extra_fields(obj, KNOWN)
    if extras:
        provenance["extra_fields"] = extras
    revisions = [
        RevisionData(kind="reference", content=output, author_label=AUTHOR, language="triton",
                     provenance={"field": "output"}),
        RevisionData(kind="instruction", content=comp, author_label=AUTHOR, provenance={"field": "comp_instru"}),
    ]
    if simp.strip():
        revisions.append(RevisionData(kind="note", content=simp, author_label=AUTHOR,
                                      provenance={"field": "simp_instru", "title": "Short instruction"}))
    return ParsedRecord(
        task_id=f"tritonbench-g/{stem}",
        source=NAME,
        kernel_name=triton_kernel_name(output),
        reference_language="triton",
        target_language="hip",
        tags=["tritonbench-g"],
        difficulty=difficulty,
        provenance=provenance,
        revisions=revisions,
    )
