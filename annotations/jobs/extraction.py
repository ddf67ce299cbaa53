"""RQ job for kernel extraction: takes an id, calls the service."""

from __future__ import annotations

import django_rq

QUEUE = "default"
# Parsing is ~10 files/s per core; the compile check is seconds per kernel
# (cached across runs). The limit is for very large trees.
EXTRACTION_JOB_TIMEOUT_S = 4 * 3600


def enqueue_extraction(extraction_id: int) -> str:
    # The caller already waits for the commit (transaction.on_commit); "auto" enqueues now.
    job = django_rq.get_queue(QUEUE, commit_mode="auto").enqueue(
        extract_kernels,
        extraction_id,
        job_timeout=EXTRACTION_JOB_TIMEOUT_S,
        description=f"kernel extraction {extraction_id}",
    )
    return str(job.id)


def extract_kernels(extraction_id: int) -> str:
    from annotations.services.extraction import extraction_run

    # No close_old_connections() here: rqworker runs each job in a fresh fork with
    # no connection open, and in tests a SimpleWorker shares the test's connection
    # (on PostgreSQL closing it would end the test's transaction).
    extraction = extraction_run(extraction_id=extraction_id)
    return extraction.state if extraction is not None else "already claimed"
