"""RQ job for export snapshots: takes an id, calls the service."""

from __future__ import annotations

import django_rq
from django.db import close_old_connections

QUEUE = "default"
# 10,000 samples take seconds (docs/performance.md); the limit is for the pathological case.
EXPORT_JOB_TIMEOUT_S = 3600


def enqueue_export(snapshot_id: int) -> str:
    # The service already calls this from transaction.on_commit; "auto" makes
    # django-rq enqueue now instead of deferring (and returning no job) again.
    job = django_rq.get_queue(QUEUE, commit_mode="auto").enqueue(
        export_snapshot,
        snapshot_id,
        job_timeout=EXPORT_JOB_TIMEOUT_S,
        description=f"export snapshot {snapshot_id}",
    )
    return str(job.id)


def export_snapshot(snapshot_id: int) -> str:
    from annotations.services.exports import export_run

    close_old_connections()
    snapshot = export_run(snapshot_id=snapshot_id)
    return snapshot.state if snapshot is not None else "already claimed"
