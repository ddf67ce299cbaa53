"""RQ job for an import started from the upload page. The payload is the batch id only."""

from __future__ import annotations

import django_rq
from django.db import close_old_connections, connection

from annotations.models import ImportBatch
from annotations.models.ingest import JobState
from annotations.services.imports import import_batch_execute

QUEUE = "default"
# A 100 MB file imports in minutes; the batch keeps its own progress.
IMPORT_JOB_TIMEOUT_S = 6 * 3600


def enqueue_import(batch_id: int) -> None:
    django_rq.get_queue(QUEUE).enqueue(import_batch_job, batch_id, job_timeout=IMPORT_JOB_TIMEOUT_S,
                                       description=f"import batch {batch_id}")


def import_batch_job(batch_id: int) -> str:
    """Run a queued batch. A retried or duplicated job finds the batch no longer queued and does nothing."""
    if not connection.in_atomic_block:
        # A long-lived worker may hold a connection the database dropped. (Under pytest the
        # in-process worker runs inside the test's transaction, which must stay open.)
        close_old_connections()
    batch = ImportBatch.objects.select_related("created_by").filter(pk=batch_id).first()
    if batch is None or batch.state != JobState.QUEUED:
        return "nothing to do"
    batch = import_batch_execute(batch=batch, user=batch.created_by)
    return batch.state
