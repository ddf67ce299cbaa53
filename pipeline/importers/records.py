"""Plain data every importer yields: no Django, no database.

A format's `parse(path)` yields `ParsedRecord` for every record it understood
and `RecordError` for every record (or stretch of the file) it could not use.
`annotations.services.imports.sample_import` persists the records.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Revision kinds and origins, as plain strings (they mirror
# annotations.models.samples.RevisionKind / RevisionOrigin; pipeline never imports Django).
KINDS = ("reference", "instruction", "candidate", "wrapper", "test", "analysis", "note")
ORIGINS = ("initial", "call_fix", "exe_fix", "perf_candidate", "imported", "generated", "extracted")
LANGUAGES = ("triton", "cuda", "hip", "python", "cpp")


class UnreadableInput(Exception):
    """The file (or directory) cannot be read at all: missing, not a file, unknown format.

    Everything else is a per-record `RecordError` and the rest of the file still imports.
    """


@dataclass(frozen=True)
class RevisionData:
    """One artifact version to append to a sample (if its content is new)."""

    kind: str
    content: str
    origin: str = "initial"
    # n for "perf candidate n" (1-based); 0 otherwise.
    origin_index: int = 0
    # "import:<source>" unless the format knows better (e.g. "llm:<model>").
    author_label: str = ""
    # Highlighting/build language; empty lets the service pick from the kind and sample.
    language: str = ""
    # Where it came from: {"field": "label"}, {"field": "perf_candidates", "numbers": [...]}, ...
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def field_name(self) -> str:
        """The source field: together with kind/origin/origin_index it names one stream."""
        return str(self.provenance.get("field", ""))

    @property
    def stream_key(self) -> tuple[str, str, int, str]:
        # Two notes from different fields (temp_strategy, perf_strategy) are different
        # streams, so re-importing compares each with its own previous content.
        return (self.kind, self.origin, self.origin_index, self.field_name)


@dataclass
class ParsedRecord:
    """One sample as a format describes it."""

    task_id: str
    # Format name such as "tritonbench-g", or an agent run's file stem.
    source: str
    kernel_name: str = ""
    entry_point: str = ""
    reference_language: str = "triton"
    target_language: str = "hip"
    tags: list[str] = field(default_factory=list)
    difficulty: int | None = None
    # Origin format, repository, file, star counts, and every unknown extra field.
    provenance: dict[str, Any] = field(default_factory=dict)
    # In creation order: the newest revision of a kind becomes the current one.
    revisions: list[RevisionData] = field(default_factory=list)
    # Runs recorded by someone else's tool (agent logs). Keys: backend, status,
    # stages {"call": {"ok", "message"}, ...}, failed_stage, message, log, caveats,
    # speedup, candidate ("last" links the last candidate revision of this record).
    imported_runs: list[dict[str, Any]] = field(default_factory=list)
    # Where in the input: 1-based line (JSONL, .py files) or 0-based index (arrays).
    line: int | None = None
    index: int | None = None
    # The file it came from when importing a directory (gold files).
    file: str = ""
    # Bytes of input consumed once this record was read: progress = byte_offset / input size.
    byte_offset: int = 0
    # False when the reader saw that the record's raw text cannot hold undecodable bytes,
    # so the registry may skip its deep scan (a speed-up only: True is always safe).
    scan_text: bool = True

    @property
    def languages(self) -> tuple[str, str]:
        return (self.reference_language, self.target_language)

    @property
    def location(self) -> str:
        return location_text(line=self.line, index=self.index, file=self.file)


@dataclass
class RecordError:
    """A record (or part of the file) that could not be imported, and why."""

    message: str
    line: int | None = None
    index: int | None = None
    # The offending field ("label", "difficulty", "perf_candidates[2]"), or "" for the whole record.
    field: str = ""
    task_id: str = ""
    file: str = ""
    byte_offset: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "line": self.line,
            "index": self.index,
            "field": self.field,
            "message": self.message,
            "task_id": self.task_id,
            "file": self.file,
        }

    @property
    def location(self) -> str:
        return location_text(line=self.line, index=self.index, file=self.file)


def location_text(*, line: int | None, index: int | None, file: str = "") -> str:
    parts = []
    if file:
        parts.append(file)
    if line is not None:
        parts.append(f"line {line}")
    if index is not None:
        parts.append(f"index {index}")
    return ", ".join(parts) or "file"
