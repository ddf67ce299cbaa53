"""annotations.jobs.imports: the job takes a batch id, runs it once, and records failure on the batch."""

from __future__ import annotations

from pathlib import Path

import pytest

from annotations.jobs.imports import enqueue_import, import_batch_job
from annotations.models import Sample
from annotations.models.ingest import JobState
from annotations.services.imports import import_batch_create

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "ingest"

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def test_job_runs_on_a_real_worker_and_only_once(  # type: ignore[no-untyped-def]
    annotator, drain_queues, django_capture_on_commit_callbacks
) -> None:
    batch = import_batch_create(path=FIXTURES / "geak_hip_small.json", user=annotator)
    with django_capture_on_commit_callbacks(execute=True):  # django-rq enqueues when the transaction commits
        enqueue_import(batch.pk)
        enqueue_import(batch.pk)  # a duplicate (a retry, a double click) must not import twice
    drain_queues("default")
    batch.refresh_from_db()
    assert batch.state == JobState.DONE and (batch.created, batch.unchanged) == (2, 0)
    assert Sample.objects.count() == 2
    assert import_batch_job(batch.pk) == "nothing to do"
    assert import_batch_job(999999) == "nothing to do"


def test_unreadable_file_fails_the_batch(  # type: ignore[no-untyped-def]
    annotator, drain_queues, tmp_path: Path, django_capture_on_commit_callbacks
) -> None:
    batch = import_batch_create(path=tmp_path / "gone.jsonl", user=annotator)
    with django_capture_on_commit_callbacks(execute=True):
        enqueue_import(batch.pk)
    drain_queues("default")
    batch.refresh_from_db()
    assert batch.state == JobState.FAILED and "does not exist" in batch.message and batch.finished_at
