"""Importing: persist what `pipeline.importers` parsed, idempotently, record by record.

Rules (issue 3, docs/importing.md):
- Each record is written inside its own savepoint, inside a transaction per
  chunk of records: a failure in a record leaves nothing of it behind, and a
  process killed mid-import loses at most the uncommitted chunk, never half a
  sample.
- Importing the same input twice creates nothing. A revision is appended only
  when its content differs both from the sample's current revision of that
  kind and from the newest revision of its own stream (same kind, origin,
  origin index, source field and importing source); revisions are never
  changed.
- Imported runs (an agent's pass flags) become `Run` rows with imported=True.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

from django.db import DatabaseError, transaction
from django.utils import timezone

from annotations.models import (
    AuditEvent,
    ImportBatch,
    Revision,
    Run,
    RunRevision,
    Sample,
    SampleStatus,
    Tag,
    User,
)
from annotations.models.ingest import JobState
from annotations.models.runs import RunStatus
from annotations.services.audit import audit_record
from annotations.services.bulk_insert import insert_returning
from annotations.services.revisions import (
    NewRevision,
    RevisionError,
    revision_bulk_create_new,
    revision_create,
)
from annotations.services.samples import SampleError, sample_create, sample_set_tags
from pipeline.importers import (
    ParsedRecord,
    RecordError,
    RevisionData,
    UnreadableInput,
    input_size,
    parse_input,
)

CREATED, UPDATED, UNCHANGED = "created", "updated", "unchanged"
# A chunk commits after this many records or this many seconds, whichever comes
# first: few commits keep SQLite fast, and the progress bar still moves.
CHUNK_RECORDS = 500
CHUNK_SECONDS = 1.0
# A file that is wrong on every line still gets a readable result page and a bounded batch row.
MAX_STORED_ERRORS = 100_000
RUN_STATUSES = {RunStatus.PASSED, RunStatus.FAILED, RunStatus.ERROR}


class RecordImportError(ValueError):
    """A record that cannot be persisted (reported as a per-record error)."""


def _sha(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


StreamKey = tuple[str, str, int, str, str]


def _stream_key(kind: str, origin: str, origin_index: int, field_name: str, author_label: str) -> StreamKey:
    return (kind, origin, origin_index, field_name, author_label)


@dataclass
class _Existing:
    """What a sample already has, enough to tell new content from old (sha256 and ids, no contents)."""

    current: dict[str, tuple[int, str]] = field(default_factory=dict)  # kind -> (seq, sha)
    current_id: dict[str, int] = field(default_factory=dict)
    streams: dict[StreamKey, tuple[int, str, int]] = field(default_factory=dict)  # -> (seq, sha, id)

    @classmethod
    def load(cls, sample: Sample) -> _Existing:
        existing = cls()
        rows = Revision.objects.filter(sample=sample).values_list(
            "id", "kind", "seq", "sha256", "origin", "origin_index", "author_label", "provenance"
        )
        for rev_id, kind, seq, sha, origin, origin_index, author_label, provenance in rows:
            existing.add(rev_id=rev_id, kind=kind, seq=seq, sha=sha,
                         key=_stream_key(kind, origin, origin_index, str((provenance or {}).get("field", "")),
                                         author_label))
        return existing

    def add(self, *, rev_id: int, kind: str, seq: int, sha: str, key: StreamKey) -> None:
        if kind not in self.current or seq > self.current[kind][0]:
            self.current[kind] = (seq, sha)
            self.current_id[kind] = rev_id
        if key not in self.streams or seq > self.streams[key][0]:
            self.streams[key] = (seq, sha, rev_id)

    def match(self, data: RevisionData, author_label: str, sha: str) -> int | None:
        """The id of an existing revision with this content (current of its kind, or newest of its stream)."""
        if data.kind in self.current and self.current[data.kind][1] == sha:
            return self.current_id[data.kind]
        stream = self.streams.get(_stream_key(data.kind, data.origin, data.origin_index, data.field_name,
                                              author_label))
        if stream is not None and stream[1] == sha:
            return stream[2]
        return None


def _merged_provenance(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """Same format: the record's provenance wins key by key. Another format: kept beside it."""
    merged = dict(old)
    fmt = new.get("format")
    if not old or old.get("format") == fmt:
        merged.update(new)
    else:
        others = dict(merged.get("other_sources") or {})
        others[str(fmt)] = new
        merged["other_sources"] = others
    return merged


SAMPLE_FIELDS = ("kernel_name", "entry_point", "reference_language", "target_language", "difficulty")


def _field_updates(sample: Sample, record: ParsedRecord) -> dict[str, Any]:
    """Sample fields the record changes.

    The sample's own format (the one that created it) may change any of them.
    Another format (a gold file for a TritonBench-G task) only fills what is
    empty: it never rewrites what the sample's own format said.
    """
    same_format = sample.provenance.get("format") == record.provenance.get("format")
    updates: dict[str, Any] = {}
    for name in SAMPLE_FIELDS:
        value = getattr(record, name)
        current = getattr(sample, name)
        if value in ("", None) or current == value:
            continue
        if same_format or current in ("", None):
            updates[name] = value
    return updates


def _update_sample(sample: Sample, record: ParsedRecord) -> list[str]:
    """Bring sample-level fields up to date; returns the names of what changed."""
    changed: list[str] = []
    for name, value in _field_updates(sample, record).items():
        setattr(sample, name, value)
        changed.append(name)
    provenance = _merged_provenance(sample.provenance or {}, record.provenance)
    if provenance != sample.provenance:
        sample.provenance = provenance
        changed.append("provenance")
    if changed:
        sample.save(update_fields=[*changed, "updated_at"])
    have = set(sample.tags.values_list("name", flat=True))
    wanted = {t.strip().lower()[:64] for t in record.tags if t and t.strip()}
    if not wanted <= have:
        sample_set_tags(sample=sample, tags=have | wanted)
        changed.append("tags")
    return changed


def _run_fingerprint(status: str, stages: Any, message: str, log: str, host: str) -> str:
    blob = json.dumps([status, stages, message, log, host], sort_keys=True, ensure_ascii=False)
    return _sha(blob)


def imported_run_create(
    *, sample: Sample, run: dict[str, Any], revision_ids: dict[str, int], user: User | None
) -> Run | None:
    """Record a run made by someone else's tool (imported=True), unless the same one is already there.

    Only imported runs are written here; runs made by Kernel Studio belong to services.runs.
    """
    status = str(run.get("status", ""))
    if status not in RUN_STATUSES:
        raise RecordImportError(f"imported run status {status!r} is not one of {sorted(RUN_STATUSES)}")
    stages = run.get("stages") or {}
    message = str(run.get("message") or "")
    log = str(run.get("log") or "")
    host = str(run.get("host") or "import")[:255]
    fingerprint = _run_fingerprint(status, stages, message, log, host)
    for old in Run.objects.filter(sample=sample, imported=True).only("status", "stages", "message", "log", "host"):
        if _run_fingerprint(old.status, old.stages, old.message, old.log, old.host) == fingerprint:
            return None

    created = _imported_run_object(sample=sample, run=run, user=user, now=timezone.now())
    created.save()
    RunRevision.objects.bulk_create(
        [RunRevision(run=created, revision_id=rev_id, kind=kind) for kind, rev_id in sorted(revision_ids.items())]
    )
    return created


def _imported_run_object(*, sample: Sample, run: dict[str, Any], user: User | None, now: Any) -> Run:
    status = str(run.get("status", ""))
    if status not in RUN_STATUSES:
        raise RecordImportError(f"imported run status {status!r} is not one of {sorted(RUN_STATUSES)}")
    stages = run.get("stages") or {}

    def ok(stage: str) -> bool | None:
        value = (stages.get(stage) or {}).get("ok")
        return value if isinstance(value, bool) else None

    speedup = run.get("speedup")
    return Run(
        sample_id=sample.pk,
        imported=True,
        backend=str(run.get("backend") or "rocm"),
        status=status,
        stages=stages,
        call_ok=ok("call"),
        exe_ok=ok("exe"),
        perf_ok=ok("perf"),
        failed_stage=str(run.get("failed_stage") or "")[:8],
        message=str(run.get("message") or ""),
        speedup=speedup if isinstance(speedup, int | float) and not isinstance(speedup, bool) else None,
        log=str(run.get("log") or ""),
        caveats=list(run.get("caveats") or []),
        host=str(run.get("host") or "import")[:255],
        requested_by=user,
        finished_at=now,
    )


def sample_import(*, record: ParsedRecord, batch: ImportBatch | None, user: User | None) -> str:
    """Create or update the sample a record describes: "created", "updated" or "unchanged".

    Runs in its own savepoint: if anything fails, nothing of this record stays.
    """
    with transaction.atomic():
        sample = Sample.objects.filter(task_id=record.task_id).first()
        created = sample is None
        changed: list[str] = []
        if sample is None:
            sample = sample_create(
                task_id=record.task_id,
                source=record.source[:128],
                kernel_name=record.kernel_name[:255],
                entry_point=record.entry_point[:255],
                reference_language=record.reference_language,
                target_language=record.target_language,
                provenance=record.provenance,
                tags=record.tags,
                difficulty=record.difficulty,
                actor=user,
            )
            existing = _Existing()
        else:
            changed = _update_sample(sample, record)
            existing = _Existing.load(sample)

        stamp: dict[str, Any] = {"batch": batch.pk if batch else None, "location": record.location}
        if user is not None:
            stamp["by"] = user.username
        default_author = f"import:{record.source}"[:128]
        resolved: dict[str, int] = {}
        last_candidate: int | None = None
        added = 0
        for data in record.revisions:
            author_label = (data.author_label or default_author)[:128]
            sha = _sha(data.content)
            rev_id = existing.match(data, author_label, sha)
            if rev_id is None:
                revision = revision_create(
                    sample=sample,
                    kind=data.kind,
                    content=data.content,
                    author=None,  # imported text was not written by the person importing it
                    author_label=author_label,
                    origin=data.origin,
                    origin_index=data.origin_index,
                    provenance={**data.provenance, "import": stamp},
                    language=data.language,
                )
                rev_id = revision.pk
                existing.add(rev_id=rev_id, kind=data.kind, seq=revision.seq, sha=sha,
                             key=_stream_key(data.kind, data.origin, data.origin_index, data.field_name, author_label))
                added += 1
            resolved.setdefault(data.kind, rev_id)
            if data.kind == "candidate":
                last_candidate = rev_id
        if last_candidate is not None:
            resolved["candidate"] = last_candidate
        runs = 0
        for run in record.imported_runs:
            link = {k: v for k, v in resolved.items() if k in ("reference", "test", "candidate", "wrapper")}
            if imported_run_create(sample=sample, run=run, revision_ids=link, user=user) is not None:
                runs += 1
        if created:
            return CREATED
        if changed or added or runs:
            audit_record(action="sample_reimported", sample=sample, actor=user,
                         data={"batch": batch.pk if batch else None, "fields": changed, "revisions": added,
                               "imported_runs": runs})
            return UPDATED
        return UNCHANGED


# --- batches ------------------------------------------------------------------

def import_batch_create(
    *, path: Path, user: User | None, file_name: str = "", format_name: str = "", dry_run: bool = False
) -> ImportBatch:
    return ImportBatch.objects.create(
        file_name=(file_name or path.name)[:255],
        path=str(path)[:1024],
        format=format_name[:32],
        dry_run=dry_run,
        state=JobState.QUEUED,
        created_by=user,
    )


@dataclass
class _Tally:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)
    # Errors beyond MAX_STORED_ERRORS are counted, not stored (the batch row is rewritten per chunk).
    unstored_errors: int = 0
    processed: int = 0
    progress_bytes: int = 0

    def add_error(self, error: RecordError) -> None:
        if len(self.errors) < MAX_STORED_ERRORS:
            self.errors.append(_error_dict(error))
        else:
            self.unstored_errors += 1

    def mark(self) -> tuple[int, ...]:
        return (self.created, self.updated, self.unchanged, len(self.errors), self.unstored_errors, self.processed,
                self.progress_bytes)

    def restore(self, mark: tuple[int, ...]) -> None:
        """Forget a chunk whose transaction rolled back, so the batch's counts stay true."""
        (self.created, self.updated, self.unchanged, n_errors, self.unstored_errors, self.processed,
         self.progress_bytes) = mark
        del self.errors[n_errors:]


def _error_dict(error: RecordError) -> dict[str, Any]:
    return error.as_dict()


def _chunks(items: Iterator[ParsedRecord | RecordError]) -> Iterator[list[ParsedRecord | RecordError]]:
    chunk: list[ParsedRecord | RecordError] = []
    started = time.monotonic()
    for item in items:
        chunk.append(item)
        if len(chunk) >= CHUNK_RECORDS or time.monotonic() - started >= CHUNK_SECONDS:
            yield chunk
            chunk = []
            started = time.monotonic()
    if chunk:
        yield chunk


def import_batch_execute(
    *, batch: ImportBatch, user: User | None = None, on_progress: Callable[[ImportBatch], None] | None = None
) -> ImportBatch:
    """Parse the batch's input and import it, committing chunk by chunk and saving progress as it goes.

    Used by `manage.py import_samples` and by the background job. A dry run does
    all the work and rolls every chunk back, so its counts are what a real run
    would do. The batch ends `done` (even with per-record errors) or `failed`
    (the input could not be read at all, or an unexpected error).
    """
    claimed = ImportBatch.objects.filter(pk=batch.pk, state=JobState.QUEUED).update(state=JobState.RUNNING)
    if not claimed:
        batch.refresh_from_db()
        return batch
    batch.state = JobState.RUNNING
    path = Path(batch.path)
    try:
        module, items = parse_input(path, batch.format or None)
        total = input_size(module, path) if module else 0
    except UnreadableInput as exc:
        return _finish(batch, state=JobState.FAILED, message=str(exc))
    batch.format = module.NAME if module else batch.format
    batch.total_bytes = total
    batch.save(update_fields=["format", "total_bytes"])
    tally = _Tally()
    mark = tally.mark()
    try:
        for chunk in _chunks(items):
            mark = tally.mark()
            _import_chunk(chunk, batch=batch, user=user, tally=tally)
            _save_progress(batch, tally)
            if on_progress:
                on_progress(batch)
    except UnreadableInput as exc:
        # Raised while reading (between chunks): every counted record is committed.
        _save_progress(batch, tally)
        return _finish(batch, state=JobState.FAILED, message=f"stopped: {exc}")
    except Exception as exc:
        # The chunk in flight rolled back whole; what committed before stays (and
        # re-importing is idempotent, so running the batch again finishes it).
        tally.restore(mark)
        _save_progress(batch, tally)
        _finish(batch, state=JobState.FAILED, message=f"stopped by an unexpected error: {type(exc).__name__}: {exc}")
        raise
    batch.progress_bytes = max(batch.progress_bytes, batch.total_bytes)
    batch.save(update_fields=["progress_bytes"])
    notes = []
    if batch.dry_run:
        notes.append("dry run: nothing was written")
    if tally.unstored_errors:
        notes.append(f"only the first {MAX_STORED_ERRORS:,} errors are listed; {tally.unstored_errors:,} more were "
                     "counted")
    return _finish(batch, state=JobState.DONE, message="; ".join(notes))


def _import_chunk(chunk: list[ParsedRecord | RecordError], *, batch: ImportBatch, user: User | None,
                  tally: _Tally) -> None:
    """Import one chunk in one transaction.

    Fast paths (the common cases of a bulk import): records whose sample exists
    and would not change are recognised from a few prefetch queries and not
    touched; records for new samples are inserted in bulk inside one savepoint.
    Everything else, and the new records again if the bulk insert fails, goes
    through `sample_import` one record per savepoint, which reports each
    failure as that record's error.
    """
    records = [item for item in chunk if isinstance(item, ParsedRecord)]
    with transaction.atomic():
        snapshot = _Snapshot.load([r.task_id for r in records])
        new_records: list[ParsedRecord] = []
        for item in chunk:
            tally.processed += 1
            tally.progress_bytes = max(tally.progress_bytes, item.byte_offset)
            if isinstance(item, RecordError):
                tally.add_error(item)
            elif item.task_id not in snapshot.samples:
                new_records.append(item)
            elif snapshot.unchanged(item):
                tally.unchanged += 1
            else:
                _import_one(item, batch=batch, user=user, tally=tally)
        if new_records:
            try:
                with transaction.atomic():
                    _bulk_create_new(new_records, batch=batch, user=user)
                tally.created += len(new_records)
            except (DatabaseError, SampleError, RevisionError, RecordImportError, ValueError):
                # Somebody else created one of them meanwhile, or one record is bad:
                # redo them one by one so each failure is reported on its own record.
                for record in new_records:
                    _import_one(record, batch=batch, user=user, tally=tally)
        if batch.dry_run:
            transaction.set_rollback(True)


def _import_one(record: ParsedRecord, *, batch: ImportBatch, user: User | None, tally: _Tally) -> None:
    try:
        outcome = sample_import(record=record, batch=batch, user=user)
    except (DatabaseError, SampleError, RevisionError, RecordImportError, ValueError) as exc:
        # The record's savepoint rolled back: no half-written sample.
        tally.add_error(RecordError(
            message=f"could not be saved: {exc}", line=record.line, index=record.index, file=record.file,
            task_id=record.task_id,
        ))
        return
    if outcome == CREATED:
        tally.created += 1
    elif outcome == UPDATED:
        tally.updated += 1
    else:
        tally.unchanged += 1


@dataclass
class _Snapshot:
    """What the database holds for one chunk's task ids, fetched in four queries."""

    samples: dict[str, Sample] = field(default_factory=dict)
    existing: dict[int, _Existing] = field(default_factory=dict)
    tags: dict[int, set[str]] = field(default_factory=dict)
    runs: dict[int, set[str]] = field(default_factory=dict)

    @classmethod
    def load(cls, task_ids: list[str]) -> _Snapshot:
        snap = cls()
        if not task_ids:
            return snap
        snap.samples = {s.task_id: s for s in Sample.objects.filter(task_id__in=task_ids)}
        ids = [s.pk for s in snap.samples.values()]
        if not ids:
            return snap
        snap.existing = {pk: _Existing() for pk in ids}
        rows = Revision.objects.filter(sample_id__in=ids).values_list(
            "sample_id", "id", "kind", "seq", "sha256", "origin", "origin_index", "author_label", "provenance"
        )
        for sample_id, rev_id, kind, seq, sha, origin, origin_index, author_label, provenance in rows:
            snap.existing[sample_id].add(
                rev_id=rev_id, kind=kind, seq=seq, sha=sha,
                key=_stream_key(kind, origin, origin_index, str((provenance or {}).get("field", "")), author_label),
            )
        through = Sample.tags.through
        for sample_id, name in through.objects.filter(sample_id__in=ids).values_list("sample_id", "tag__name"):
            snap.tags.setdefault(sample_id, set()).add(name)
        for sample_id, status, stages, message, log, host in Run.objects.filter(
            sample_id__in=ids, imported=True
        ).values_list("sample_id", "status", "stages", "message", "log", "host"):
            snap.runs.setdefault(sample_id, set()).add(_run_fingerprint(status, stages, message, log, host))
        return snap

    def unchanged(self, record: ParsedRecord) -> bool:
        """True when importing `record` would write nothing (mirrors sample_import's decisions)."""
        sample = self.samples[record.task_id]
        if _field_updates(sample, record):
            return False
        if _merged_provenance(sample.provenance or {}, record.provenance) != sample.provenance:
            return False
        wanted = {t.strip().lower()[:64] for t in record.tags if t and t.strip()}
        if not wanted <= self.tags.get(sample.pk, set()):
            return False
        existing = self.existing.get(sample.pk, _Existing())
        default_author = f"import:{record.source}"[:128]
        for data in record.revisions:
            if existing.match(data, (data.author_label or default_author)[:128], _sha(data.content)) is None:
                return False
        fingerprints = self.runs.get(sample.pk, set())
        for run in record.imported_runs:
            fp = _run_fingerprint(str(run.get("status", "")), run.get("stages") or {}, str(run.get("message") or ""),
                                  str(run.get("log") or ""), str(run.get("host") or "import")[:255])
            if fp not in fingerprints:
                return False
        return True


_SAMPLE_COLUMNS = ("task_id", "source", "kernel_name", "entry_point", "reference_language", "target_language",
                   "provenance", "difficulty", "status", "latest_run_outcome", "revision_count", "created_at",
                   "updated_at")


def _bulk_create_new(records: list[ParsedRecord], *, batch: ImportBatch, user: User | None) -> None:
    """Create the samples of `records` (none exists yet) with their revisions and runs, in a few queries.

    Writes what sample_create + revision_create would (sample, tags, audit event,
    revisions with seq/parent/sha256, imported runs), as multi-row inserts.
    """
    now = timezone.now()
    rows = []
    for record in records:
        task_id = record.task_id.strip()
        if not task_id or len(task_id) > 255 or task_id != record.task_id:
            raise SampleError("task_id must be 1 to 255 characters without surrounding spaces")
        rows.append((task_id, record.source[:128], record.kernel_name[:255], record.entry_point[:255],
                     record.reference_language, record.target_language, record.provenance, record.difficulty,
                     SampleStatus.DRAFT, "", 0, now, now))
    ids = dict(insert_returning(Sample, _SAMPLE_COLUMNS, rows, ("task_id", "id")))
    # Light stand-ins for the new rows: building 10,000 model instances costs more than inserting them.
    samples = [
        cast(Sample, SimpleNamespace(pk=ids[r.task_id], task_id=r.task_id, source=r.source[:128],
                                     reference_language=r.reference_language, target_language=r.target_language,
                                     status=SampleStatus.DRAFT))
        for r in records
    ]

    tag_sets = [sorted({t.strip().lower()[:64] for t in r.tags if t and t.strip()}) for r in records]
    names = sorted({n for names in tag_sets for n in names})
    if names:
        Tag.objects.bulk_create([Tag(name=n) for n in names], ignore_conflicts=True)
        tag_ids = dict(Tag.objects.filter(name__in=names).values_list("name", "id"))
        through = Sample.tags.through
        insert_returning(through, ("sample", "tag"),
                         [(s.pk, tag_ids[n]) for s, names_of in zip(samples, tag_sets, strict=True) for n in names_of],
                         ("id",))
    insert_returning(
        AuditEvent, ("sample", "actor", "action", "from_state", "to_state", "data", "created_at"),
        [(s.pk, user.pk if user else None, "sample_created", "", SampleStatus.DRAFT,
          {"source": s.source, "batch": batch.pk}, now) for s in samples],
        ("id",),
    )

    stamp: dict[str, Any] = {"batch": batch.pk}
    if user is not None:
        stamp["by"] = user.username
    revisions: list[NewRevision] = []
    links: list[tuple[Sample, ParsedRecord, dict[str, NewRevision]]] = []
    for sample, record in zip(samples, records, strict=True):
        existing = _Existing()
        resolved: dict[str, NewRevision] = {}
        seqs: dict[str, int] = {}
        default_author = f"import:{record.source}"[:128]
        location = record.location
        for data in record.revisions:
            author_label = (data.author_label or default_author)[:128]
            sha = _sha(data.content)
            index = existing.match(data, author_label, sha)
            if index is None:
                # Same decision as sample_import: content equal to the current one of its kind is not repeated.
                index = len(revisions)
                revisions.append(NewRevision(
                    sample=sample, kind=data.kind, content=data.content, author_label=author_label,
                    origin=data.origin, origin_index=data.origin_index,
                    provenance={**data.provenance, "import": {**stamp, "location": location}}, language=data.language,
                ))
                seqs[data.kind] = seqs.get(data.kind, 0) + 1
                existing.add(rev_id=index, kind=data.kind, seq=seqs[data.kind], sha=sha,
                             key=_stream_key(data.kind, data.origin, data.origin_index, data.field_name, author_label))
            resolved.setdefault(data.kind, revisions[index])
            if data.kind == "candidate":
                resolved["candidate_last"] = revisions[index]
        links.append((sample, record, resolved))
    revision_bulk_create_new(revisions=revisions)

    runs: list[Run] = []
    run_links: list[tuple[Run, dict[str, NewRevision]]] = []
    for sample, record, resolved in links:
        link = {k: v for k, v in resolved.items() if k in ("reference", "test", "wrapper")}
        if "candidate_last" in resolved:
            link["candidate"] = resolved["candidate_last"]
        for run in record.imported_runs:
            obj = _imported_run_object(sample=sample, run=run, user=user, now=now)
            runs.append(obj)
            run_links.append((obj, link))
    if runs:
        Run.objects.bulk_create(runs)
        RunRevision.objects.bulk_create([
            RunRevision(run=run, revision_id=rev.pk, kind=kind)
            for run, link in run_links for kind, rev in sorted(link.items()) if rev.pk is not None
        ])


def _save_progress(batch: ImportBatch, tally: _Tally) -> None:
    batch.created, batch.updated, batch.unchanged = tally.created, tally.updated, tally.unchanged
    batch.error_count = len(tally.errors) + tally.unstored_errors
    batch.errors = tally.errors
    batch.processed = tally.processed
    batch.progress_bytes = tally.progress_bytes
    batch.save(update_fields=["created", "updated", "unchanged", "error_count", "errors", "processed",
                              "progress_bytes"])


def _finish(batch: ImportBatch, *, state: str, message: str) -> ImportBatch:
    batch.state = state
    batch.message = message[:2000]
    batch.finished_at = timezone.now()
    batch.save(update_fields=["state", "message", "finished_at"])
    if state == JobState.DONE and not batch.dry_run:
        audit_record(action="import_finished", actor=batch.created_by,
                     data={"batch": batch.pk, "file": batch.file_name, "format": batch.format,
                           "created": batch.created, "updated": batch.updated, "unchanged": batch.unchanged,
                           "errors": batch.error_count})
    return batch


def summary_line(batch: ImportBatch) -> str:
    """The exact last line of `import_samples`."""
    return (f"imported: created={batch.created} updated={batch.updated} unchanged={batch.unchanged} "
            f"errors={batch.error_count}")
