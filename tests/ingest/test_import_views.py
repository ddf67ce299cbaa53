"""Import pages: access rules, upload -> job on the default queue (real Redis and RQ worker) -> result page."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from annotations.models import ImportBatch, Sample
from annotations.models.ingest import JobState

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "ingest"

pytestmark = pytest.mark.django_db


@pytest.fixture
def batch(annotator):  # type: ignore[no-untyped-def]
    return ImportBatch.objects.create(file_name="x.jsonl", path="/nonexistent/x.jsonl", created_by=annotator,
                                      state=JobState.DONE, errors=[{"line": 3, "index": None, "field": "label",
                                                                     "message": "<b>missing</b>", "task_id": "",
                                                                     "file": ""}], error_count=1)


def urls(batch: ImportBatch) -> list[str]:
    return ["/imports/", f"/imports/{batch.pk}/", f"/imports/{batch.pk}/progress/"]


def test_anonymous_goes_to_login(client: Client, batch: ImportBatch) -> None:
    for url in urls(batch):
        response = client.get(url)
        assert response.status_code == 302 and "/login/" in response["Location"]
    assert client.post("/imports/upload/").status_code == 302


def test_outsider_gets_404(outsider_client: Client, batch: ImportBatch) -> None:
    for url in urls(batch):
        assert outsider_client.get(url).status_code == 404
    assert outsider_client.post("/imports/upload/").status_code == 404


def test_reviewer_gets_403(reviewer_client: Client, batch: ImportBatch) -> None:
    for url in urls(batch):
        assert reviewer_client.get(url).status_code == 403
    upload = SimpleUploadedFile("b.jsonl", (FIXTURES / "bigcodebench_small.jsonl").read_bytes())
    assert reviewer_client.post("/imports/upload/", {"files": upload}).status_code == 403
    assert not ImportBatch.objects.exclude(pk=batch.pk).exists()


def test_missing_batch_is_404(annotator_client: Client) -> None:
    assert annotator_client.get("/imports/999999/").status_code == 404


def test_list_and_detail_escape_errors(maintainer_client: Client, batch: ImportBatch) -> None:
    body = maintainer_client.get("/imports/").content.decode()
    assert "x.jsonl" in body and "Detect from the content" in body
    body = maintainer_client.get(f"/imports/{batch.pk}/").content.decode()
    assert "&lt;b&gt;missing&lt;/b&gt;" in body and "<b>missing</b>" not in body
    assert "line 3" in body and "label" in body


def test_upload_without_file_is_400(annotator_client: Client) -> None:
    response = annotator_client.post("/imports/upload/", {"format": ""})
    assert response.status_code == 400 and "Choose a file" in response.content.decode()


def test_upload_with_unknown_format_is_400(annotator_client: Client) -> None:
    upload = SimpleUploadedFile("b.jsonl", b"{}\n")
    response = annotator_client.post("/imports/upload/", {"files": upload, "format": "nope"})
    assert response.status_code == 400 and not ImportBatch.objects.exists()


def test_upload_of_an_unrelated_set_of_files_is_400(annotator_client: Client) -> None:
    files = [SimpleUploadedFile("a.json", b"[]"), SimpleUploadedFile("b.json", b"[]")]
    response = annotator_client.post("/imports/upload/", {"files": files})
    assert response.status_code == 400 and "agent run pair" in response.content.decode()


def test_progress_cursor(annotator_client: Client, batch: ImportBatch) -> None:
    response = annotator_client.get(f"/imports/{batch.pk}/progress/?cursor=0")
    assert response.status_code == 200
    assert response["X-Cursor"] == "1" and response["X-Finished"] == "1"
    body = response.content.decode()
    assert 'id="import-status"' in body and "&lt;b&gt;missing&lt;/b&gt;" in body
    response = annotator_client.get(f"/imports/{batch.pk}/progress/?cursor=1")
    assert response["X-Cursor"] == "1" and "&lt;b&gt;missing" not in response.content.decode()
    assert annotator_client.get(f"/imports/{batch.pk}/progress/?cursor=x").status_code == 400


@pytest.mark.slow
def test_upload_runs_on_the_default_queue_and_lists_every_error(
    annotator_client: Client, drain_queues, settings, tmp_path: Path,  # type: ignore[no-untyped-def]
    django_capture_on_commit_callbacks,
) -> None:
    settings.DATA_DIR = tmp_path
    content = (FIXTURES / "bigcodebench_small.jsonl").read_bytes() + b"{broken\n[1]\n"
    upload = SimpleUploadedFile("../../etc/b c.jsonl", content)
    with django_capture_on_commit_callbacks(execute=True):  # the job is enqueued after commit
        response = annotator_client.post("/imports/upload/", {"files": upload, "format": ""})
    assert response.status_code == 302
    batch = ImportBatch.objects.get()
    assert response["Location"] == f"/imports/{batch.pk}/"
    assert batch.state == JobState.QUEUED and Path(batch.path).parent.parent == tmp_path / "imports"
    assert Path(batch.path).name == "b_c.jsonl"  # no path tricks in stored names
    body = annotator_client.get(f"/imports/{batch.pk}/").content.decode()
    assert "Queued" in body and "data-progress-url" in body
    drain_queues("default")
    batch.refresh_from_db()
    assert batch.state == JobState.DONE and (batch.created, batch.error_count) == (2, 2)
    assert Sample.objects.get(task_id="bigcodebench/0").revisions.count() == 4
    body = annotator_client.get(f"/imports/{batch.pk}/").content.decode()
    assert "imported: created=2 updated=0 unchanged=0 errors=2" in body
    assert "line 3" in body and "line 4" in body and "expected a JSON object" in body
    assert "data-progress-url" not in body  # finished: no more polling


@pytest.mark.slow
def test_agent_pair_upload(annotator_client: Client, drain_queues, settings, tmp_path: Path,  # type: ignore[no-untyped-def]
                           django_capture_on_commit_callbacks) -> None:
    settings.DATA_DIR = tmp_path
    agent = FIXTURES / "agent"
    files = [SimpleUploadedFile(p.name, p.read_bytes()) for p in sorted(agent.iterdir())]
    with django_capture_on_commit_callbacks(execute=True):
        assert annotator_client.post("/imports/upload/", {"files": files, "dry_run": "on"}).status_code == 302
    drain_queues("default")
    batch = ImportBatch.objects.get()
    assert batch.dry_run and batch.format == "agent-run" and batch.created == 3 and not Sample.objects.exists()


def test_long_error_lists_stream_in_pages(annotator_client: Client, annotator) -> None:  # type: ignore[no-untyped-def]
    errors = [{"line": i, "index": None, "field": "", "message": f"bad {i}", "task_id": "", "file": ""}
              for i in range(1, 1601)]
    batch = ImportBatch.objects.create(file_name="many.jsonl", created_by=annotator, state=JobState.DONE,
                                       errors=errors, error_count=1600)
    body = annotator_client.get(f"/imports/{batch.pk}/").content.decode()
    assert "bad 1000<" in body and "bad 1001<" not in body
    assert 'data-cursor="1000"' in body  # the page fetches the rest
    first = annotator_client.get(f"/imports/{batch.pk}/progress/?cursor=1000")
    assert (first["X-Cursor"], first["X-More"], first["X-Finished"]) == ("1500", "1", "0")
    last = annotator_client.get(f"/imports/{batch.pk}/progress/?cursor=1500")
    assert (last["X-Cursor"], last["X-More"], last["X-Finished"]) == ("1600", "0", "1")
    assert "bad 1600<" in last.content.decode()


def test_imported_agent_sample_page_renders(annotator_client: Client) -> None:
    from django.core.management import call_command

    call_command("import_samples", str(FIXTURES / "agent" / "20250709_gaagent_hip_3.jsonl"), stdout=StringIO(),
                 stderr=StringIO())
    sample = Sample.objects.get(task_id="20250709_gaagent_hip_3/sin_kernel")
    response = annotator_client.get(f"/samples/{sample.pk}/")
    assert response.status_code == 200
    body = response.content.decode()
    assert "20250709_gaagent_hip_3/sin_kernel" in body and "sine_kernel" in body
    if "Imported runs" in body:  # the runs panel (verification area) lists imported runs apart
        assert "not run here" in body
