"""Exports: create a snapshot, run it (from the job), or write one to a folder (command).

A snapshot goes queued -> running -> done | failed, each step a conditional
update that checks the row count, so a retried job cannot write twice. The
files are written by `pipeline.export.writer` into a temporary folder that is
renamed into DATA_DIR/exports/<public_id> only when complete.
"""

from __future__ import annotations

import datetime as dt
import logging
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from annotations.models import ExportSnapshot, User
from annotations.models.ingest import JobState
from annotations.selectors.exports import (
    ExportFilters,
    InvalidFilters,
    count_matching,
    export_inputs,
    parse_export_filters,
)
from pipeline.export.rows import GENERATOR_VERSION
from pipeline.export.writer import LAYOUTS, ExportError, SnapshotResult, write_snapshot

log = logging.getLogger(__name__)

__all__ = [
    "ExportRequestError",
    "export_create",
    "export_mark_lost",
    "export_run",
    "export_to_directory",
    "exports_root",
]


class ExportRequestError(ValueError):
    """Bad export request (filters, layouts, name): a 400 for the page, an error for the command."""


def exports_root() -> Path:
    return Path(settings.DATA_DIR) / "exports"


def _check_layouts(layouts: Iterable[str]) -> list[str]:
    chosen = sorted({str(layout).strip() for layout in layouts if str(layout).strip()})
    unknown = [layout for layout in chosen if layout not in LAYOUTS]
    if unknown:
        raise ExportRequestError(f"unknown layout(s): {', '.join(unknown)} (known: {', '.join(LAYOUTS)})")
    return chosen


def _check_filters(filters: Mapping[str, Any] | ExportFilters) -> ExportFilters:
    if isinstance(filters, ExportFilters):
        return filters
    try:
        return parse_export_filters(filters)
    except InvalidFilters as exc:
        raise ExportRequestError(str(exc)) from exc


def export_create(
    *, name: str, filters: Mapping[str, Any] | ExportFilters, layouts: Iterable[str] = (), actor: User | None
) -> ExportSnapshot:
    """Record a snapshot request and queue its job once the transaction commits."""
    name = " ".join(name.split())
    if not name or len(name) > 128:
        raise ExportRequestError("the name must be 1 to 128 characters")
    parsed = _check_filters(filters)
    chosen = _check_layouts(layouts)
    export_mark_lost()
    with transaction.atomic():
        snapshot = ExportSnapshot.objects.create(
            name=name,
            filters=parsed.as_dict(),
            layouts=chosen,
            sample_count=count_matching(parsed),
            generator=GENERATOR_VERSION,
            created_by=actor,
        )
        transaction.on_commit(lambda: _enqueue(snapshot.pk))
    return snapshot


def export_mark_lost(*, now: dt.datetime | None = None) -> int:
    """Fail snapshots whose worker died: still running after the job's time limit.

    RQ kills a job at its timeout, so a snapshot running longer than that has
    no writer left. Its half-written temporary folder is removed too. Returns
    how many were marked. Called whenever a new export is requested.
    """
    from annotations.jobs.exports import EXPORT_JOB_TIMEOUT_S

    cutoff = (now or timezone.now()) - dt.timedelta(seconds=EXPORT_JOB_TIMEOUT_S + 60)
    lost = list(
        ExportSnapshot.objects.filter(state=JobState.RUNNING, started_at__lt=cutoff).values_list(
            "pk", "public_id"
        )
    )
    marked = 0
    for pk, public_id in lost:
        marked += ExportSnapshot.objects.filter(pk=pk, state=JobState.RUNNING, started_at__lt=cutoff).update(
            state=JobState.FAILED,
            message="Lost: the worker stopped before the snapshot was finished. Export again.",
            finished_at=timezone.now(),
        )
        root = exports_root()
        if root.is_dir():
            for partial in root.glob(f".{public_id}.partial-*"):
                shutil.rmtree(partial, ignore_errors=True)
    return marked


def _enqueue(snapshot_id: int) -> None:
    from redis.exceptions import RedisError

    from annotations.jobs.exports import enqueue_export

    try:
        job_id = enqueue_export(snapshot_id)
    except (RedisError, OSError) as exc:
        # Say so on the page instead of leaving it "queued" forever; the
        # exception text names the Redis host, which does not belong on a page.
        ExportSnapshot.objects.filter(pk=snapshot_id, state=JobState.QUEUED).update(
            state=JobState.FAILED,
            message=f"Could not queue the export job ({type(exc).__name__}): is Redis running? Export again.",
            finished_at=timezone.now(),
        )
        log.warning("export %s: could not enqueue: %s", snapshot_id, exc)
        return
    ExportSnapshot.objects.filter(pk=snapshot_id, state=JobState.QUEUED).update(rq_job_id=job_id)


def _consistent_read(*, outermost: bool) -> None:
    """One snapshot of the database for the whole export.

    On PostgreSQL the default (read committed) lets each chunk's queries see
    newer commits; repeatable read makes every query see the state at the
    first one. SQLite's transactions already read one state.
    """
    # Only the first statement of a real transaction may set it (not a savepoint).
    if connection.vendor == "postgresql" and outermost:
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")


def _write(filters: ExportFilters, out_dir: Path, *, name: str, layouts: list[str]) -> SnapshotResult:
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        _consistent_read(outermost=outermost)
        return write_snapshot(
            export_inputs(filters), out_dir, name=name, filters=filters.as_dict(), layouts=layouts
        )


def export_run(*, snapshot_id: int) -> ExportSnapshot | None:
    """Write the snapshot's files (the job's body). Returns None if another run has it."""
    claimed = ExportSnapshot.objects.filter(pk=snapshot_id, state=JobState.QUEUED).update(
        state=JobState.RUNNING, started_at=timezone.now()
    )
    if not claimed:
        return None
    snapshot = ExportSnapshot.objects.get(pk=snapshot_id)
    out_dir = exports_root() / str(snapshot.public_id)
    try:
        filters = parse_export_filters(snapshot.filters)
        result = _write(filters, out_dir, name=snapshot.name, layouts=list(snapshot.layouts))
    except (ExportError, InvalidFilters, OSError) as exc:
        ExportSnapshot.objects.filter(pk=snapshot_id, state=JobState.RUNNING).update(
            state=JobState.FAILED, message=f"{type(exc).__name__}: {exc}"[:2000], finished_at=timezone.now()
        )
        log.warning("export %s failed: %s", snapshot_id, exc)
        return ExportSnapshot.objects.get(pk=snapshot_id)
    except Exception as exc:
        # Anything else is a bug, but the snapshot must not stay "running" forever.
        ExportSnapshot.objects.filter(pk=snapshot_id, state=JobState.RUNNING).update(
            state=JobState.FAILED,
            message=f"internal error ({type(exc).__name__}); see the worker log",
            finished_at=timezone.now(),
        )
        raise
    ExportSnapshot.objects.filter(pk=snapshot_id, state=JobState.RUNNING).update(
        state=JobState.DONE,
        directory=str(out_dir),
        sample_count=result.samples,
        skipped=result.skipped,
        files=result.files,
        manifest_sha256=result.manifest_sha256,
        data_created_at=result.created_at,
        message=(f"{len(result.skipped)} approved sample(s) skipped; see the list" if result.skipped else ""),
        finished_at=timezone.now(),
    )
    return ExportSnapshot.objects.get(pk=snapshot_id)


def export_to_directory(
    *, out_dir: Path, filters: Mapping[str, Any] | ExportFilters, layouts: Iterable[str] = (), name: str
) -> SnapshotResult:
    """Write a snapshot straight to `out_dir` (the command line); no row is recorded."""
    parsed = _check_filters(filters)
    chosen = _check_layouts(layouts)
    try:
        return _write(parsed, Path(out_dir), name=name, layouts=chosen)
    except ExportError as exc:
        raise ExportRequestError(str(exc)) from exc
