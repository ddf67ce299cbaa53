"""The export job on a real Redis with a real RQ worker (burst mode)."""

from __future__ import annotations

import json
from pathlib import Path

import django_rq
import pytest

from annotations.models import ExportSnapshot
from annotations.models.ingest import JobState
from annotations.services.exports import export_create
from tests.export.approved import approved_sample

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_job_writes_the_snapshot_after_commit(
    reviewer, maintainer, settings, tmp_path: Path, drain_queues
) -> None:
    settings.DATA_DIR = tmp_path
    approved_sample("job/1", reviewer)
    approved_sample("job/2", reviewer, tags=["x"])
    snapshot = export_create(name="nightly", filters={"tags": "x"}, layouts=["tritonbench"], actor=maintainer)
    snapshot.refresh_from_db()
    assert snapshot.rq_job_id  # queued on commit, id recorded
    drain_queues("default")
    snapshot.refresh_from_db()
    assert snapshot.state == JobState.DONE, snapshot.message
    assert snapshot.sample_count == 1
    rows = (Path(snapshot.directory) / "dataset.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(r)["task_id"] for r in rows] == ["job/2"]
    assert [p.name[:6] for p in (Path(snapshot.directory) / "tritonbench").iterdir()] == ["job_2-"]
    # The payload is the id only: no paths, filters or settings travel through Redis.
    job = django_rq.get_queue("default").fetch_job(snapshot.rq_job_id)
    assert job is not None and job.args == (snapshot.pk,) and job.kwargs == {}
    assert ExportSnapshot.objects.count() == 1
