"""Views of the runs area: access rules for every view, then behaviour (real Redis, real DB)."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.test import Client
from django.urls import reverse

from annotations.models import Run, Sample
from annotations.models.runs import RunStatus
from annotations.services import runs as service
from pipeline.worker import keys


@pytest.fixture
def run(rq_settings: str, add_sample: Sample, annotator: Any) -> Run:
    return service.run_request(sample=add_sample, backend="cpu", user=annotator)


def _urls(run: Run) -> dict[str, tuple[str, str]]:
    return {
        "create": ("post", reverse("runs:create", args=[run.sample_id])),
        "detail": ("get", reverse("runs:detail", args=[run.pk])),
        "log": ("get", reverse("runs:log", args=[run.pk])),
        "cancel": ("post", reverse("runs:cancel", args=[run.pk])),
        "batch_new": ("get", reverse("runs:batch_create")),
        "batch_post": ("post", reverse("runs:batch_create")),
    }


@pytest.mark.parametrize("name", ["create", "detail", "log", "cancel", "batch_new", "batch_post"])
def test_outsider_gets_404_everywhere(name: str, run: Run, outsider_client: Client) -> None:
    method, url = _urls(run)[name]
    assert getattr(outsider_client, method)(url).status_code == 404


@pytest.mark.parametrize("name", ["create", "detail", "log", "cancel", "batch_new", "batch_post"])
def test_anonymous_is_sent_to_login(name: str, run: Run, client: Client) -> None:
    method, url = _urls(run)[name]
    response = getattr(client, method)(url)
    assert response.status_code == 302 and "/login/" in response["Location"]


@pytest.mark.parametrize("name", ["batch_new", "batch_post"])
def test_batches_need_a_maintainer(name: str, run: Run, annotator_client: Client, reviewer_client: Client) -> None:
    method, url = _urls(run)[name]
    assert getattr(annotator_client, method)(url).status_code == 403
    assert getattr(reviewer_client, method)(url).status_code == 403


def test_batch_detail_access(rq_settings: str, add_sample: Sample, maintainer: Any, outsider_client: Client,
                             reviewer_client: Client) -> None:
    batch, _ = service.batch_create(user=maintainer, backend="cpu", samples=[add_sample], selection={})
    url = reverse("runs:batch_detail", args=[batch.pk])
    assert outsider_client.get(url).status_code == 404
    assert reviewer_client.get(url).status_code == 200  # reading progress is for every role


def test_cancel_by_another_annotator_is_403(run: Run, client_for: Any, annotator2: Any) -> None:
    response = client_for(annotator2).post(reverse("runs:cancel", args=[run.pk]))
    assert response.status_code == 403
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED


def test_create_queues_a_run_and_redirects_to_the_sample(rq_settings: str, add_sample: Sample,
                                                         annotator_client: Client) -> None:
    response = annotator_client.post(reverse("runs:create", args=[add_sample.pk]), {"backend": "cpu"})
    assert response.status_code == 302 and response["Location"].endswith(f"/samples/{add_sample.pk}/#runs")
    run = Run.objects.get(sample=add_sample)
    assert run.backend == "cpu" and run.status == RunStatus.QUEUED


def test_create_with_a_bad_backend_is_400_and_creates_nothing(rq_settings: str, add_sample: Sample,
                                                              annotator_client: Client) -> None:
    response = annotator_client.post(reverse("runs:create", args=[add_sample.pk]), {"backend": "tpu"})
    assert response.status_code == 400 and b"Unknown backend" in response.content
    assert not Run.objects.exists()


def test_create_for_a_sample_without_test_is_400(rq_settings: str, untested_sample: Sample,
                                                 annotator_client: Client) -> None:
    response = annotator_client.post(reverse("runs:create", args=[untested_sample.pk]), {"backend": "cpu"})
    assert response.status_code == 400 and b"no test revision" in response.content


def test_log_fragment_follows_the_stream_with_a_cursor(run: Run, rq_settings: str, reviewer_client: Client) -> None:
    conn = redis.Redis.from_url(rq_settings)
    conn.xadd(keys.log_stream(run.pk), {"line": "[build] <b>nvcc</b> & co", "attempt": 1})
    url = reverse("runs:log", args=[run.pk])
    first = reviewer_client.get(url, {"cursor": "0"})
    assert first.status_code == 200
    assert b"&lt;b&gt;nvcc&lt;/b&gt; &amp; co" in first.content  # escaped, never raw HTML
    cursor = first["X-Log-Cursor"]
    assert first["X-Run-Status"] == "queued" and first["X-Log-Done"] == "0"
    conn.xadd(keys.log_stream(run.pk), {"line": "[reference] second", "attempt": 1})
    second = reviewer_client.get(url, {"cursor": cursor})
    assert b"second" in second.content and b"nvcc" not in second.content


def test_log_with_a_bad_cursor_is_400(run: Run, reviewer_client: Client) -> None:
    response = reviewer_client.get(reverse("runs:log", args=[run.pk]), {"cursor": "1-2; DROP"})
    assert response.status_code == 400


def test_finished_run_without_a_stream_shows_the_stored_log(run: Run, reviewer_client: Client) -> None:
    from pipeline.execution.spec import VerifyResult

    service.run_collect(run_id=run.pk, result=VerifyResult(task_id="x", backend="cpu", status="passed",
                                                           log="stored line").to_dict())
    response = reviewer_client.get(reverse("runs:log", args=[run.pk]), {"cursor": "0"})
    assert b"stored line" in response.content and response["X-Log-Done"] == "1"


def test_detail_page_shows_stages_toolchain_and_escapes_messages(run: Run, reviewer_client: Client) -> None:
    from pipeline.execution.spec import StageResult, VerifyResult

    result = VerifyResult(task_id="x", backend="cpu", status="failed", failed_stage="exe",
                          message="<script>alert(1)</script> differs", toolchain={"torch": "2.13"},
                          caveats=["warp size 32 vs 64"])
    result.stages["call"] = StageResult(ok=True, message="ran")
    result.stages["exe"] = StageResult(ok=False, message="result_gold['a']: 3 of 10 elements differ")
    service.run_collect(run_id=run.pk, result=result.to_dict())
    response = reviewer_client.get(reverse("runs:detail", args=[run.pk]))
    assert response.status_code == 200
    body = response.content.decode()
    assert "<script>alert(1)</script>" not in body and "&lt;script&gt;" in body
    assert "3 of 10 elements differ" in body and "warp size 32 vs 64" in body and "2.13" in body


def test_cancel_view_cancels_a_queued_run(run: Run, annotator_client: Client) -> None:
    response = annotator_client.post(reverse("runs:cancel", args=[run.pk]))
    assert response.status_code == 302
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED
    again = annotator_client.post(reverse("runs:cancel", args=[run.pk]))
    assert again.status_code == 409


def test_batch_form_errors_are_shown_and_nothing_is_queued(rq_settings: str, add_sample: Sample,
                                                           maintainer_client: Client) -> None:
    url = reverse("runs:batch_create")
    response = maintainer_client.post(url, {"backend": "cpu", "task_ids": "runs/add\nnope"})
    assert response.status_code == 400 and b"Unknown task ids: nope" in response.content
    assert not Run.objects.exists()
    response = maintainer_client.post(url, {"backend": "cpu"})
    assert response.status_code == 400 and b"Choose task ids" in response.content


def test_batch_create_and_progress_fragment(rq_settings: str, add_sample: Sample, untested_sample: Sample,
                                            maintainer_client: Client) -> None:
    response = maintainer_client.post(reverse("runs:batch_create"), {"backend": "cpu", "source": "test"})
    assert response.status_code == 302
    page = maintainer_client.get(response["Location"])
    assert b"runs/no-test has no test revision" in page.content
    fragment = maintainer_client.get(response["Location"], {"fragment": "1"})
    assert fragment["X-Batch-Done"] == "0"
    assert b"verified: passed=0 failed=0" in fragment.content


def test_sample_page_shows_the_run_form_and_the_active_run(run: Run, annotator_client: Client) -> None:
    response = annotator_client.get(reverse("samples:detail", args=[run.sample_id]))
    body = response.content.decode()
    assert reverse("runs:create", args=[run.sample_id]) in body
    assert reverse("runs:log", args=[run.pk]) in body and "js/runs.js" in body


def test_batch_form_is_prefilled_from_the_query(rq_settings: str, add_sample: Sample,
                                                maintainer_client: Client) -> None:
    response = maintainer_client.get(reverse("runs:batch_create"), {"task_ids": "runs/add", "backend": "cuda"})
    body = response.content.decode()
    assert ">runs/add</textarea>" in body and '<option value="cuda" selected>' in body
