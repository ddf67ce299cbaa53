"""Crawled Triton kernels (`train_crawl.json`): a JSON array, streamed element by element.

Task id `train-crawl/<index>` (the position in the array: stable as long as the
file is). `code` is the reference (kept exactly as crawled, a stray
`triton.compile(...)`/`print(ret)` tail included: provenance flags it);
`description_1` (interface and implementation details) is the instruction,
`description_2` (the high-level task) a note; after generation `kernel_wrapper`,
`unitest_code` and `kernel_analysis` become wrapper, test and analysis
revisions authored by the generating pipeline.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipeline.importers.common import (
    FieldProblem,
    extra_fields,
    head_has,
    json_records,
    json_text,
    text_field,
    triton_kernel_name,
)
from pipeline.importers.reading import Item
from pipeline.importers.records import ParsedRecord, RecordError, RevisionData

NAME = "train-crawl"
LABEL = "Crawled Triton kernels (train_crawl.json)"
KNOWN = frozenset({"code", "description_1", "description_2", "kernel_wrapper", "unitest_code", "kernel_analysis",
                   "processing_status"})
AUTHOR = "import:train-crawl"
_STRAY = re.compile(r"^\s*(?:\w+\s*=\s*)?triton\.compile\(", re.MULTILINE)


def detect(path: Path, head: bytes) -> bool:
    return head_has(head, "code") and (
        head_has(head, "description_1") or head_has(head, "description_2")
    )


def parse(path: Path) -> Iterator[ParsedRecord | RecordError]:
    return json_records(path, expect="array", build=lambda obj, item: build(obj, item, path))


def build(obj: dict[str, Any], item: Item, path: Path) -> ParsedRecord:
    assert item.index is not None or item.line is not None
    position = item.index if item.index is not None else (item.line or 1) - 1
    code = text_field(obj, "code")
    desc1 = text_field(obj, "description_1", required=False)
    desc2 = text_field(obj, "description_2", required=False)
    wrapper = text_field(obj, "kernel_wrapper", required=False)
    test = text_field(obj, "unitest_code", required=False)
    status = text_field(obj, "processing_status", required=False)
    analysis = obj.get("kernel_analysis")
    if analysis is not None and not isinstance(analysis, str | dict | list):
        raise FieldProblem("kernel_analysis", "expected an object or a string")
    provenance: dict[str, Any] = {"format": NAME, "import_file": path.name, "index": position}
    if status:
        provenance["processing_status"] = status
    if _STRAY.search(code):
        # Seed 004: these tails run the compiler at import time; keep the code exact, flag it.
        provenance["stray_compile_call"] = True
    extras = extra_fields(obj, KNOWN)
    if extras:
        provenance["extra_fields"] = extras
    revisions = [RevisionData(kind="reference", content=code, author_label=AUTHOR, language="triton",
                              provenance={"field": "code"})]
    if desc1.strip():
        revisions.append(RevisionData(kind="instruction", content=desc1, author_label=AUTHOR,
                                      provenance={"field": "description_1"}))
    if desc2.strip():
        revisions.append(RevisionData(kind="note", content=desc2, author_label=AUTHOR,
                                      provenance={"field": "description_2", "title": "High-level task"}))
    if analysis not in (None, "", {}, []):
        revisions.append(RevisionData(kind="analysis", content=json_text(analysis), origin="generated",
                                      author_label=AUTHOR, language="json", provenance={"field": "kernel_analysis"}))
    if wrapper.strip():
        revisions.append(RevisionData(kind="wrapper", content=wrapper, origin="generated", author_label=AUTHOR,
                                      language="python", provenance={"field": "kernel_wrapper"}))
    if test.strip():
        revisions.append(RevisionData(kind="test", content=test, origin="generated", author_label=AUTHOR,
                                      language="python", provenance={"field": "unitest_code"}))
    tags = ["train-crawl"]
    if status:
        tags.append(status)
    return ParsedRecord(
        task_id=f"train-crawl/{position}",
        source=NAME,
        kernel_name=triton_kernel_name(code),
        reference_language="triton",
        target_language="hip",
        tags=tags,
        provenance=provenance,
        revisions=revisions,
    )
