"""The extraction job on a real Redis with a real (burst) RQ worker."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from annotations.models import KernelExtraction, User
from annotations.services import extraction as service
from tests.extraction.helpers import corpus_upload

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def test_upload_runs_through_the_queue(
    annotator: User,
    drain_queues: Callable[..., int],
    django_capture_on_commit_callbacks: object,
    settings: object,
    tmp_path: Path,
) -> None:
    settings.DATA_DIR = tmp_path  # type: ignore[attr-defined]
    with django_capture_on_commit_callbacks(execute=True):  # type: ignore[operator]
        run = service.extraction_create_from_upload(
            upload=corpus_upload(), options={"compile": False}, actor=annotator
        )
    run.refresh_from_db()
    assert run.rq_job_id  # enqueued after commit, id recorded
    drain_queues("default")
    run.refresh_from_db()
    assert run.state == "done", run.message
    assert run.kernel_count == 7
    assert run.progress_done == run.progress_total == 12
    assert not Path(run.path).exists()


def test_job_for_a_claimed_run_does_nothing(annotator: User, rq_settings: str) -> None:
    from annotations.jobs.extraction import extract_kernels

    run = KernelExtraction.objects.create(
        source_name="x", source_kind="upload", path="/nonexistent", state="done"
    )
    assert extract_kernels(run.pk) == "already claimed"


def test_a_run_whose_job_died_is_marked_failed(
    annotator: User, rq_settings: str, drain_queues: Callable[..., int]
) -> None:
    import django_rq

    from annotations.services.extraction import extraction_check_lost

    # A job that dies in the worker without reaching our code (here: it cannot even be imported).
    job = django_rq.get_queue("default", commit_mode="auto").enqueue(
        "annotations.jobs.no_such_module.extract", 1
    )
    run = KernelExtraction.objects.create(
        source_name="x", source_kind="upload", path="/nonexistent", state="running", rq_job_id=job.id
    )
    assert extraction_check_lost(extraction=run).state == "running"  # still queued in RQ: nothing to say
    drain_queues("default")
    run = extraction_check_lost(extraction=run)
    assert run.state == "failed"
    assert run.message.startswith("the worker stopped without finishing:")
    gone = KernelExtraction.objects.create(
        source_name="y", source_kind="upload", path="/nonexistent", state="queued", rq_job_id="no-such-job"
    )
    assert extraction_check_lost(extraction=gone).message.endswith("the job is gone from the queue")
