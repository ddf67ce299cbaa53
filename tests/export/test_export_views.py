"""Export pages: list/create, detail (page and fragment), file and archive downloads."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest
from django.urls import reverse

from annotations.models import ExportSnapshot
from annotations.models.ingest import JobState
from annotations.services.exports import export_create, export_run
from tests.export.approved import approved_sample

pytestmark = pytest.mark.django_db


@pytest.fixture
def done_snapshot(reviewer, maintainer, settings, tmp_path: Path) -> ExportSnapshot:
    settings.DATA_DIR = tmp_path
    approved_sample("v/1", reviewer)
    snapshot = export_create(name="Kernels <v1>", filters={}, layouts=["hf", "tritonbench"], actor=maintainer)
    done = export_run(snapshot_id=snapshot.pk)
    assert done is not None and done.state == JobState.DONE
    return done


def _urls(pk: int) -> list[str]:
    return [
        reverse("exports:list"),
        reverse("exports:detail", args=[pk]),
        reverse("exports:file", args=[pk, "dataset.jsonl"]),
        reverse("exports:archive", args=[pk]),
    ]


def test_anonymous_is_sent_to_login(client, done_snapshot) -> None:
    for url in _urls(done_snapshot.pk):
        response = client.get(url)
        assert response.status_code == 302 and response.url.startswith("/login/"), url


def test_outsider_gets_404(outsider_client, done_snapshot) -> None:
    for url in _urls(done_snapshot.pk):
        assert outsider_client.get(url).status_code == 404, url
    assert outsider_client.post(reverse("exports:list"), {"name": "x"}).status_code == 404


@pytest.mark.parametrize("who", ["annotator_client", "reviewer_client"])
def test_other_roles_get_403(request, who: str, done_snapshot) -> None:
    client = request.getfixturevalue(who)
    for url in _urls(done_snapshot.pk):
        assert client.get(url).status_code == 403, url
    assert client.post(reverse("exports:list"), {"name": "x"}).status_code == 403
    assert ExportSnapshot.objects.count() == 1


def test_list_shows_snapshots_escaped(maintainer_client, done_snapshot) -> None:
    page = maintainer_client.get(reverse("exports:list")).content.decode()
    assert "Kernels &lt;v1&gt;" in page and "Kernels <v1>" not in page
    assert "New snapshot" in page


def test_create_queues_a_snapshot_and_redirects(
    maintainer_client, reviewer, django_capture_on_commit_callbacks
) -> None:
    approved_sample("v/2", reviewer, tags=["gemm"])
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = maintainer_client.post(
            reverse("exports:list"), {"name": "gemm only", "tags": "gemm", "layout": ["tritonbench"]}
        )
    snapshot = ExportSnapshot.objects.get()
    assert response.status_code == 302 and response.url == reverse("exports:detail", args=[snapshot.pk])
    assert snapshot.filters == {"tags": ["gemm"]} and snapshot.layouts == ["tritonbench"]
    assert snapshot.state == JobState.QUEUED and len(callbacks) == 1
    page = maintainer_client.get(response.url).content.decode()
    assert "Waiting for a worker" in page and "data-poll=" in page


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"name": "x", "difficulty_min": "easy"}, "difficulty_min: &#x27;easy&#x27; is not a whole number"),
        ({"name": "x", "layout": "parquet"}, "unknown layout(s): parquet"),
        ({"name": ""}, "the name must be 1 to 128 characters"),
        (
            {"name": "x", "approved_since": "2026-13-01"},
            "approved_since: &#x27;2026-13-01&#x27; is not a date",
        ),
    ],
)
def test_bad_requests_get_400_and_keep_the_form(maintainer_client, data: dict, message: str) -> None:
    response = maintainer_client.post(reverse("exports:list"), data)
    assert response.status_code == 400
    page = response.content.decode()
    assert message in page
    if data.get("difficulty_min"):
        assert 'value="easy"' in page  # what was typed is kept
    assert not ExportSnapshot.objects.exists()


def test_get_and_post_only(maintainer_client, done_snapshot) -> None:
    assert maintainer_client.delete(reverse("exports:list")).status_code == 405
    assert maintainer_client.post(reverse("exports:detail", args=[done_snapshot.pk])).status_code == 405


def test_detail_lists_files_with_hashes_and_the_fragment_stops_polling(
    maintainer_client, done_snapshot
) -> None:
    page = maintainer_client.get(reverse("exports:detail", args=[done_snapshot.pk])).content.decode()
    for f in done_snapshot.files:
        assert f["sha256"] in page and f["path"] in page
    fragment = maintainer_client.get(
        reverse("exports:detail", args=[done_snapshot.pk]), HTTP_HX_REQUEST="true"
    )
    body = fragment.content.decode()
    assert "<html" not in body and 'id="export-status"' in body and "data-poll" not in body


def test_file_download_matches_the_manifest(maintainer_client, done_snapshot) -> None:
    response = maintainer_client.get(reverse("exports:file", args=[done_snapshot.pk, "dataset.jsonl"]))
    assert response.status_code == 200
    assert "attachment" in response["Content-Disposition"]
    data = b"".join(response.streaming_content)
    import hashlib

    listed = {f["path"]: f["sha256"] for f in done_snapshot.files}
    assert hashlib.sha256(data).hexdigest() == listed["dataset.jsonl"]
    manifest = maintainer_client.get(reverse("exports:file", args=[done_snapshot.pk, "manifest.json"]))
    assert json.loads(b"".join(manifest.streaming_content))["name"] == "Kernels <v1>"


@pytest.mark.parametrize("relpath", ["../../etc/passwd", "nope.txt", "hf/../dataset.jsonl", "%2e%2e/secret"])
def test_file_download_refuses_unlisted_paths(maintainer_client, done_snapshot, relpath: str) -> None:
    assert maintainer_client.get(f"/exports/{done_snapshot.pk}/files/{relpath}").status_code == 404


def test_missing_file_on_disk_is_404_not_500(maintainer_client, done_snapshot) -> None:
    (Path(done_snapshot.directory) / "README.md").unlink()
    assert (
        maintainer_client.get(reverse("exports:file", args=[done_snapshot.pk, "README.md"])).status_code
        == 404
    )


def test_unknown_snapshot_and_unfinished_snapshot(maintainer_client, maintainer) -> None:
    assert maintainer_client.get(reverse("exports:detail", args=[999])).status_code == 404
    queued = export_create(name="later", filters={}, actor=maintainer)
    assert maintainer_client.get(reverse("exports:archive", args=[queued.pk])).status_code == 404
    assert (
        maintainer_client.get(reverse("exports:file", args=[queued.pk, "dataset.jsonl"])).status_code == 404
    )


def test_archive_holds_every_file_and_is_reproducible(maintainer_client, done_snapshot) -> None:
    url = reverse("exports:archive", args=[done_snapshot.pk])
    first = b"".join(maintainer_client.get(url).streaming_content)
    second = b"".join(maintainer_client.get(url).streaming_content)
    assert first == second
    with tarfile.open(fileobj=io.BytesIO(first)) as tar:
        names = tar.getnames()
        prefix = names[0].split("/")[0]
        manifest = json.loads((Path(done_snapshot.directory) / "manifest.json").read_text(encoding="utf-8"))
        gold = [s["tritonbench_file"]["path"] for s in manifest["samples"]]
        assert len(gold) == 1
        assert sorted(n.split("/", 1)[1] for n in names) == sorted(
            [f["path"] for f in done_snapshot.files] + ["manifest.json", *gold]
        )
        member = tar.extractfile(f"{prefix}/dataset.jsonl")
        assert member is not None
        assert member.read() == (Path(done_snapshot.directory) / "dataset.jsonl").read_bytes()


def test_filters_are_shown_readably(maintainer_client, reviewer, maintainer) -> None:
    snapshot = export_create(name="f", filters={"tags": "gemm,fp16", "target": "hip"}, actor=maintainer)
    assert snapshot.filters_display == "tags=fp16,gemm · target=hip"
    page = maintainer_client.get(reverse("exports:detail", args=[snapshot.pk])).content.decode()
    assert "tags=fp16,gemm · target=hip" in page
