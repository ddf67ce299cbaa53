from __future__ import annotations

import pytest

from annotations.models import Run
from tests.factories import add_revision, make_sample


@pytest.fixture
def sample(db):  # type: ignore[no-untyped-def]
    s = make_sample("tritonbench-g/add_example")
    add_revision(s, "candidate", "__global__ void add_kernel(float* x) { x[0] = 1; }")
    add_revision(s, "candidate", "__global__ void add_kernel(float* x) { x[0] = 2; }", origin="call_fix")
    return s


def test_outsider_gets_404(outsider_client, sample):  # type: ignore[no-untyped-def]
    assert outsider_client.get(f"/samples/{sample.pk}/").status_code == 404
    rev = sample.revisions.first()
    assert outsider_client.get(f"/samples/{sample.pk}/revisions/{rev.pk}/").status_code == 404
    assert outsider_client.get(f"/samples/{sample.pk}/history/candidate/").status_code == 404


def test_anonymous_is_sent_to_login(client, sample):  # type: ignore[no-untyped-def]
    assert client.get(f"/samples/{sample.pk}/").status_code == 302


def test_shows_current_revision_of_every_artifact_highlighted(annotator_client, sample):  # type: ignore[no-untyped-def]
    body = annotator_client.get(f"/samples/{sample.pk}/").content.decode()
    assert "tritonbench-g/add_example" in body
    assert "x[0] = 2" not in body  # highlighted: tokens are wrapped in spans
    assert 'class="code"' in body
    assert "Call fix" in body
    assert "Add two vectors." in body


def test_history_lists_every_revision_newest_first(reviewer_client, sample):  # type: ignore[no-untyped-def]
    body = reviewer_client.get(f"/samples/{sample.pk}/history/candidate/").content.decode()
    assert body.index("Call fix") < body.index("Initial")


def test_revision_page_and_raw_download(annotator_client, sample):  # type: ignore[no-untyped-def]
    rev = sample.revisions.get(kind="candidate", seq=1)
    assert annotator_client.get(f"/samples/{sample.pk}/revisions/{rev.pk}/").status_code == 200
    raw = annotator_client.get(f"/samples/{sample.pk}/revisions/{rev.pk}/?raw=1")
    assert raw.content.decode() == rev.content
    assert raw["Content-Type"].startswith("text/plain")


def test_revision_of_another_sample_is_404(annotator_client, sample):  # type: ignore[no-untyped-def]
    other = make_sample("other/x")
    rev = other.revisions.first()
    assert annotator_client.get(f"/samples/{sample.pk}/revisions/{rev.pk}/").status_code == 404


@pytest.mark.parametrize("path", ["/samples/abc/", "/samples/999999/", "/samples/1/history/bogus/"])
def test_bad_ids_are_404(annotator_client, sample, path):  # type: ignore[no-untyped-def]
    assert annotator_client.get(path).status_code == 404


def test_code_is_escaped(annotator_client, db):  # type: ignore[no-untyped-def]
    s = make_sample("xss/1", kinds={"reference": "</script><img src=x onerror=alert(1)>"})
    body = annotator_client.get(f"/samples/{s.pk}/").content
    assert b"<img src=x onerror" not in body


def test_imported_runs_are_shown_apart(annotator_client, sample):  # type: ignore[no-untyped-def]
    Run.objects.create(sample=sample, backend="rocm", status="failed", imported=True, call_ok=False,
                       message="imported failure")
    body = annotator_client.get(f"/samples/{sample.pk}/").content.decode()
    assert "Imported runs" in body and "imported failure" in body


def test_opens_on_the_first_artifact_that_exists(annotator_client, db):  # type: ignore[no-untyped-def]
    s = make_sample("tabs/1", kinds={"reference": "x = 1"})
    body = annotator_client.get(f"/samples/{s.pk}/").content.decode()
    assert 'class="tab active" data-tab="art-reference"' in body
    assert 'class="tabpanel active" id="art-reference"' in body
