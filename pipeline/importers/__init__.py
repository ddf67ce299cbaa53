"""Importers: parse each input format into plain data (no Django here).

A format is one module in this package with:

    NAME: str                      # "tritonbench-g", used by `--format` and stored on the batch
    LABEL: str                     # human name for the upload page
    def detect(path: Path, head_bytes: bytes) -> bool
    def parse(path: Path) -> Iterator[ParsedRecord | RecordError]
    def input_size(path: Path) -> int   # optional: bytes the progress bar counts (default: file size)
    ACCEPTS_DIRECTORY: bool             # optional: True if `path` may be a directory (default False)

`head_bytes` is the first 64 KiB of the file, already gunzipped (empty for a
directory). `parse` streams: it yields one `ParsedRecord` per record it
understood and one `RecordError` (line or index, field, message) per record it
could not use, and keeps going. It raises `UnreadableInput` only when the input
cannot be read at all. Records carry `byte_offset` so callers can show
progress as bytes read / `input_size`.

Modules are listed in `FORMAT_MODULES`, most specific first: detection asks
each in turn and takes the first that says yes. A module that is not there
(or does not have the interface yet, like a format still being written) is
skipped. Another package
can add a format at run time with `register(module)`.

`parse_input(path, format_name)` is what callers use: it picks the format,
and on top of the format's own checks turns into per-record errors the two
problems every format shares: a task id seen earlier in the same input, and
text holding bytes that are not UTF-8.

See docs/importing.md for each format's mapping to samples and revisions.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

from pipeline.importers.reading import file_size, find_undecodable, read_head, undecodable_message
from pipeline.importers.records import ParsedRecord, RecordError, RevisionData, UnreadableInput

__all__ = [
    "FORMAT_MODULES",
    "ParsedRecord",
    "RecordError",
    "RevisionData",
    "UnreadableInput",
    "available_formats",
    "detect_format",
    "input_size",
    "parse_input",
    "register",
]

# Detection order: most specific first. Our own export carries BigCodeBench's
# fields too, so it must be asked before bigcodebench.
FORMAT_MODULES: list[str] = [
    "pipeline.importers.ks_export",
    "pipeline.importers.agent_run",
    "pipeline.importers.tritonbench_gold",
    "pipeline.importers.tritonbench_g",
    "pipeline.importers.geak_rocm",
    "pipeline.importers.geak_hip",
    "pipeline.importers.train_crawl",
    "pipeline.importers.bigcodebench",
]
_registered: list[ModuleType] = []


def register(module: ModuleType) -> None:
    """Add a format module (checked for the interface above) after the built-in ones."""
    for attr in ("NAME", "LABEL", "detect", "parse"):
        if not hasattr(module, attr):
            raise TypeError(f"format module {module.__name__} lacks {attr}")
    if module not in _registered:
        _registered.append(module)


def available_formats() -> list[ModuleType]:
    modules: list[ModuleType] = []
    for name in FORMAT_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        if all(hasattr(module, attr) for attr in ("NAME", "LABEL", "detect", "parse")):
            modules.append(module)
    modules.extend(m for m in _registered if m not in modules)
    return modules


def format_by_name(name: str) -> ModuleType:
    for module in available_formats():
        if name == module.NAME:
            return module
    known = ", ".join(m.NAME for m in available_formats())
    raise UnreadableInput(f"unknown format {name!r}; known formats: {known}")


def _check_exists(path: Path) -> None:
    if not path.exists():
        raise UnreadableInput(f"{path.name} does not exist")
    if not (path.is_file() or path.is_dir()):
        raise UnreadableInput(f"{path.name} is not a regular file or a directory")


def detect_format(path: Path) -> ModuleType:
    """The first format that recognises `path`, or UnreadableInput saying which exist."""
    _check_exists(path)
    head = b"" if path.is_dir() else read_head(path)
    if path.is_file() and not head.strip():
        raise UnreadableInput(f"{path.name} is empty: nothing to import")
    for module in available_formats():
        if module.detect(path, head):
            return module
    known = ", ".join(m.NAME for m in available_formats())
    raise UnreadableInput(f"cannot tell the format of {path.name}; choose one with --format ({known})")


def input_size(module: ModuleType, path: Path) -> int:
    sizer = getattr(module, "input_size", None)
    return int(sizer(path)) if sizer else file_size(path)


def parse_input(
    path: Path, format_name: str | None = None
) -> tuple[ModuleType | None, Iterator[ParsedRecord | RecordError]]:
    """(the format, its records with the shared checks applied). Raises UnreadableInput.

    An empty file is not unreadable: it gives one error record and no format
    (there is nothing to tell the format from).
    """
    _check_exists(path)
    if not format_name and path.is_file() and not read_head(path).strip():
        return None, iter([RecordError(message="the file is empty: no records to import", line=1)])
    module = format_by_name(format_name) if format_name else detect_format(path)
    if path.is_dir() and not getattr(module, "ACCEPTS_DIRECTORY", False):
        raise UnreadableInput(f"{path.name} is a directory; the {module.NAME} format reads a single file")
    return module, _checked(module.parse(path))


def _checked(records: Iterator[ParsedRecord | RecordError]) -> Iterator[ParsedRecord | RecordError]:
    first_seen: dict[str, str] = {}
    for record in records:
        if isinstance(record, RecordError):
            yield record
            continue
        problem = _undecodable(record) if record.scan_text else None
        if problem:
            yield RecordError(message=undecodable_message(problem), field=problem, line=record.line,
                              index=record.index, file=record.file, task_id=record.task_id,
                              byte_offset=record.byte_offset)
            continue
        earlier = first_seen.get(record.task_id)
        if earlier is not None:
            yield RecordError(
                message=f"duplicate task id {record.task_id!r} (first at {earlier}); this record was skipped",
                field="task_id", line=record.line, index=record.index, file=record.file, task_id=record.task_id,
                byte_offset=record.byte_offset,
            )
            continue
        first_seen[record.task_id] = record.location
        yield record


def _undecodable(record: ParsedRecord) -> str | None:
    for name in ("task_id", "kernel_name", "entry_point"):
        if find_undecodable(getattr(record, name)):
            return name
    for revision in record.revisions:
        if find_undecodable(revision.content):
            return revision.field_name or revision.kind
        found = find_undecodable(revision.provenance)
        if found:
            return f"{revision.field_name or revision.kind}.{found}"
    for tag in record.tags:
        if find_undecodable(tag):
            return "tags"
    found = find_undecodable(record.provenance)
    if found:
        # provenance mirrors the record's fields (extra_fields.x -> x)
        return found.removeprefix("extra_fields.")
    found = find_undecodable(record.imported_runs)
    if found:
        return f"imported run {found}"
    return None
