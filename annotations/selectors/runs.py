"""Reads for the runs area: a run's live log (Redis stream, then the stored log), batch progress."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import redis

from annotations.models import Run, VerificationBatch
from annotations.models.runs import FINISHED_RUN_STATUSES, RunStatus
from pipeline.worker import keys

_CURSOR_RE = re.compile(r"^(0|\d{1,20}-\d{1,20}|db)$")
PAGE = 500


class BadCursor(ValueError):
    pass


@dataclass
class LogChunk:
    lines: list[str] = field(default_factory=list)
    cursor: str = "0"
    done: bool = False


def run_log_chunk(*, run: Run, cursor: str) -> LogChunk:
    """Lines after `cursor` from the run's Redis stream; once the run finished and the stream is
    gone (expired, or Redis was restarted), the log stored with the run, once (cursor "db")."""
    if not _CURSOR_RE.match(cursor):
        raise BadCursor(f"bad cursor {cursor!r}")
    finished = run.status in FINISHED_RUN_STATUSES
    if cursor == "db":
        return LogChunk(cursor="db", done=finished)
    from annotations.services.runs import redis_conn

    try:
        start = "-" if cursor == "0" else f"({cursor}"
        entries: Any = redis_conn().xrange(keys.log_stream(run.pk), min=start, count=PAGE)
    except redis.RedisError:
        entries = []
    chunk = LogChunk(cursor=cursor)
    for entry_id, fields in entries:
        chunk.cursor = entry_id.decode()
        if fields.get(b"end"):
            continue
        attempt = fields.get(b"attempt", b"1").decode()
        line = fields.get(b"line", b"").decode("utf-8", "replace")
        chunk.lines.append(line if attempt == "1" else f"(attempt {attempt}) {line}")
    if not entries and cursor == "0" and finished:
        chunk.lines = run.log.splitlines() if run.log else ["(no log was recorded)"]
        chunk.cursor = "db"
    chunk.done = finished and len(entries) < PAGE
    return chunk


@dataclass
class BatchProgress:
    total: int
    counts: dict[str, int]
    finished: int
    runs: list[Run]

    @property
    def done(self) -> bool:
        return self.finished >= self.total

    @property
    def percent(self) -> int:
        return int(100 * self.finished / self.total) if self.total else 100


def batch_progress(batch: VerificationBatch) -> BatchProgress:
    # Retries of lost runs join the batch; the lost originals are superseded by them.
    runs = list(batch.runs.select_related("sample").defer("log").order_by("sample__task_id", "-attempt"))
    latest: dict[int, Run] = {}
    for r in runs:
        latest.setdefault(r.sample_id, r)
    current = list(latest.values())
    counts = {s: 0 for s in RunStatus.values}
    for r in current:
        counts[r.status] += 1
    finished = sum(1 for r in current if r.status in FINISHED_RUN_STATUSES)
    return BatchProgress(total=batch.total, counts=counts, finished=finished, runs=current)


def run_for_detail(pk: int) -> Run | None:
    return Run.objects.select_related("sample", "requested_by", "retry_of").filter(pk=pk).first()
