"""Importer for Kernel Studio's own export (formats.md section 8).

Reads a snapshot directory (manifest.json + dataset.jsonl) or a bare
dataset.jsonl (either file of the "hf" layout too, where free-form objects are
JSON strings). Each row gives back its sample: the same task id, languages,
entry point, tags, difficulty, and one revision per covered kind with the same
content. When a manifest is present, the data file must match its sha256: an
altered snapshot is refused as a whole rather than imported in part.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipeline.importers.records import (
    KINDS,
    LANGUAGES,
    ParsedRecord,
    RecordError,
    RevisionData,
    UnreadableInput,
)

NAME = "ks-export"
LABEL = "Kernel Studio export snapshot (folder with manifest.json, or its dataset.jsonl)"
ACCEPTS_DIRECTORY = True
FORMAT = NAME
SOURCE_LABEL = "import:ks-export"
_ROW_MARK = b'"format":"kernelstudio-export-row/'

_REQUIRED = ("task_id", "canonical_solution", "test", "entry_point", "language", "target", "instruction")
_JSON_STRING_FIELDS = ("artifacts", "revisions", "verification", "provenance")


def detect(path: Path, head_bytes: bytes) -> bool:
    """A snapshot folder (its manifest says so) or a JSONL whose first row is one of ours."""
    path = Path(path)
    if path.is_dir():
        manifest = path / "manifest.json"
        try:
            with open(manifest, "rb") as fh:
                head = fh.read(4096)
        except OSError:
            return False
        return b'"format": "kernelstudio-export/' in head
    first_line = head_bytes.split(b"\n", 1)[0]
    return _ROW_MARK in first_line


def sniff(path: Path) -> bool:
    """detect() for callers that have no head bytes at hand."""
    path = Path(path)
    if path.is_dir():
        return detect(path, b"")
    try:
        with open(path, "rb") as fh:
            return detect(path, fh.read(1 << 16))
    except OSError:
        return False


def input_size(path: Path) -> int:
    """Bytes of the JSONL that parse() reads (progress is counted in those)."""
    path = Path(path)
    data = path / "dataset.jsonl" if path.is_dir() else path
    try:
        return data.stat().st_size
    except OSError:
        return 0


def _data_file(path: Path) -> tuple[Path, str | None]:
    """The JSONL to read and the sha256 the manifest promises for it (if any)."""
    if path.is_dir():
        manifest_path = path / "manifest.json"
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise UnreadableInput(f"{path} has no manifest.json: not a Kernel Studio snapshot") from exc
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise UnreadableInput(f"{manifest_path}: cannot read the manifest ({exc})") from exc
        if not isinstance(manifest, dict) or not str(manifest.get("format", "")).startswith(
            "kernelstudio-export/"
        ):
            raise UnreadableInput(f"{manifest_path} is not a Kernel Studio export manifest")
        entries = {f.get("path"): f.get("sha256") for f in manifest.get("files", []) if isinstance(f, dict)}
        if "dataset.jsonl" not in entries:
            raise UnreadableInput(f"{manifest_path} lists no dataset.jsonl")
        return path / "dataset.jsonl", str(entries["dataset.jsonl"])
    if not path.is_file():
        raise UnreadableInput(f"{path} does not exist or is not a file")
    return path, None


def _check_sha(path: Path, expected: str) -> None:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    except OSError as exc:
        raise UnreadableInput(f"{path}: {exc}") from exc
    if digest.hexdigest() != expected:
        raise UnreadableInput(
            f"{path.name} does not match the manifest (sha256 {digest.hexdigest()}, manifest says {expected}):"
            " the snapshot was changed after export; nothing was imported"
        )


def _record(row: dict[str, Any], *, line: int, offset: int) -> ParsedRecord | RecordError:
    raw_id = row.get("task_id")
    task_id: str = raw_id if isinstance(raw_id, str) else ""
    for key in _REQUIRED:
        if not isinstance(row.get(key), str) or (key != "test" and not row.get(key)):
            return RecordError(
                f"missing or not a string: {key}", line=line, field=key, task_id=task_id, byte_offset=offset
            )
    for key in _JSON_STRING_FIELDS:
        value = row.get(key)
        if isinstance(value, str):  # the "hf" layout
            try:
                row[key] = json.loads(value)
            except ValueError:
                return RecordError(
                    f"{key} is a string but not JSON",
                    line=line,
                    field=key,
                    task_id=task_id,
                    byte_offset=offset,
                )
    revisions = row.get("revisions") or {}
    artifacts = row.get("artifacts") or {}
    if not isinstance(revisions, dict) or not isinstance(artifacts, dict):
        return RecordError(
            "revisions and artifacts must be objects",
            line=line,
            field="revisions",
            task_id=task_id,
            byte_offset=offset,
        )
    for language_key in ("language", "target"):
        if row[language_key] not in LANGUAGES:
            return RecordError(
                f"unknown {language_key} {row[language_key]!r}",
                line=line,
                field=language_key,
                task_id=task_id,
                byte_offset=offset,
            )
    solution_kind = row.get("solution_kind", "candidate")
    if solution_kind not in ("candidate", "reference"):
        return RecordError(
            f"unknown solution_kind {solution_kind!r}",
            line=line,
            field="solution_kind",
            task_id=task_id,
            byte_offset=offset,
        )

    contents: dict[str, str] = {"instruction": row["instruction"], "test": row["test"]}
    contents[solution_kind] = row["canonical_solution"]
    if solution_kind == "candidate" and isinstance(row.get("candidate"), str):
        # canonical_solution is candidate + C++ wrapper; the wrapper is in artifacts.
        contents["candidate"] = row["candidate"]
    if isinstance(row.get("reference"), str):
        contents["reference"] = row["reference"]
    for kind, content in artifacts.items():
        if kind not in KINDS or not isinstance(content, str):
            return RecordError(
                f"artifact {kind!r} is not a known kind with text content",
                line=line,
                field=f"artifacts.{kind}",
                task_id=task_id,
                byte_offset=offset,
            )
        contents[kind] = content

    revision_data = []
    for kind in KINDS:  # a fixed order, so two imports of one row agree
        if kind not in contents:
            continue
        raw_meta = revisions.get(kind)
        meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        expected = meta.get("sha256")
        if expected and hashlib.sha256(contents[kind].encode("utf-8")).hexdigest() != expected:
            return RecordError(
                f"{kind} content does not match its sha256 in the row",
                line=line,
                field=kind,
                task_id=task_id,
                byte_offset=offset,
            )
        revision_data.append(
            RevisionData(
                kind=kind,
                content=contents[kind],
                origin="imported",
                author_label=SOURCE_LABEL,
                language=str(meta.get("language") or ""),
                provenance={"field": kind, "export_revision_id": meta.get("id"), "sha256": expected or ""},
            )
        )

    provenance = dict(row.get("provenance") or {})
    source = str(provenance.pop("source", "") or FORMAT)
    kernel_name = str(provenance.pop("kernel_name", "") or "")
    provenance["ks_export"] = {
        "approved_at": row.get("approved_at", ""),
        "reviewers": row.get("reviewers", []),
        "verification": row.get("verification"),
    }
    tags = row.get("tags") or []
    difficulty = row.get("difficulty")
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        return RecordError(
            "tags must be a list of strings", line=line, field="tags", task_id=task_id, byte_offset=offset
        )
    if difficulty is not None and not (isinstance(difficulty, int) and not isinstance(difficulty, bool)):
        return RecordError(
            "difficulty must be an integer or null",
            line=line,
            field="difficulty",
            task_id=task_id,
            byte_offset=offset,
        )
    return ParsedRecord(
        task_id=task_id,
        source=source,
        kernel_name=kernel_name,
        entry_point=str(row.get("sample_entry_point") or row["entry_point"]),
        reference_language=row["language"],
        target_language=row["target"],
        tags=list(tags),
        difficulty=difficulty,
        provenance=provenance,
        revisions=revision_data,
        line=line,
        byte_offset=offset,
    )


def parse(path: Path) -> Iterator[ParsedRecord | RecordError]:
    """Yield one ParsedRecord per row; a bad row yields a RecordError with its line."""
    data, expected_sha = _data_file(Path(path))
    if expected_sha is not None:
        _check_sha(data, expected_sha)
    offset = 0
    try:
        with open(data, "rb") as fh:
            for number, raw in enumerate(fh, start=1):
                offset += len(raw)
                if not raw.strip():
                    continue
                try:
                    row = json.loads(raw.decode("utf-8"))
                except UnicodeDecodeError as exc:
                    yield RecordError(f"not UTF-8: {exc.reason}", line=number, byte_offset=offset)
                    continue
                except ValueError as exc:
                    yield RecordError(f"not JSON: {exc}", line=number, byte_offset=offset)
                    continue
                if not isinstance(row, dict):
                    yield RecordError("a row must be a JSON object", line=number, byte_offset=offset)
                    continue
                yield _record(row, line=number, offset=offset)
    except OSError as exc:
        raise UnreadableInput(f"{data}: {exc}") from exc
