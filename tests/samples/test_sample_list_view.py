from __future__ import annotations

import pytest
from django.urls import reverse

from annotations.models import Sample
from tests.factories import make_sample

URL = "/samples/"


@pytest.fixture
def samples(annotator):  # type: ignore[no-untyped-def]
    a = make_sample("tritonbench-g/add_example", kernel_name="add_kernel", tags=["elementwise"])
    b = make_sample("geak-rocm/softmax", kernel_name="softmax_kernel", source="geak-rocm", tags=["reduction"])
    Sample.objects.filter(pk=b.pk).update(status="in_review", assignee=annotator, latest_run_outcome="failed")
    return a, b


def test_anonymous_is_sent_to_login(client, db):  # type: ignore[no-untyped-def]
    response = client.get(URL)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_outsider_gets_404(outsider_client):  # type: ignore[no-untyped-def]
    assert outsider_client.get(URL).status_code == 404


@pytest.mark.parametrize("client_name", ["annotator_client", "reviewer_client", "maintainer_client"])
def test_every_role_sees_the_list(request, client_name, samples):  # type: ignore[no-untyped-def]
    response = request.getfixturevalue(client_name).get(URL)
    assert response.status_code == 200
    assert b"tritonbench-g/add_example" in response.content


@pytest.mark.parametrize(
    "params, present, absent",
    [
        ({"q": "softmax"}, "geak-rocm/softmax", "add_example"),
        ({"q": "add_k"}, "add_example", "geak-rocm/softmax"),
        ({"q": "reduction"}, "geak-rocm/softmax", "add_example"),
        ({"status": "in_review"}, "geak-rocm/softmax", "add_example"),
        ({"outcome": "failed"}, "geak-rocm/softmax", "add_example"),
        ({"outcome": "none"}, "add_example", "geak-rocm/softmax"),
        ({"assignee": "alice"}, "geak-rocm/softmax", "add_example"),
        ({"assignee": "none"}, "add_example", "geak-rocm/softmax"),
        ({"tag": "elementwise"}, "add_example", "geak-rocm/softmax"),
        ({"source": "geak-rocm"}, "geak-rocm/softmax", "add_example"),
        ({"language": "triton", "sort": "task_id"}, "add_example", "nothing-else"),
    ],
)
def test_search_and_filters(annotator_client, samples, params, present, absent):  # type: ignore[no-untyped-def]
    response = annotator_client.get(URL, params)
    assert response.status_code == 200
    assert present.encode() in response.content
    assert absent.encode() not in response.content


def test_sorting_and_pagination(annotator_client, db):  # type: ignore[no-untyped-def]
    for i in range(55):
        make_sample(f"bulk/{i:03d}", kinds={})
    first = annotator_client.get(URL, {"sort": "task_id"})
    assert b"bulk/000" in first.content and b"bulk/050" not in first.content
    second = annotator_client.get(URL, {"sort": "task_id", "page": 2})
    assert b"bulk/050" in second.content and b"Page 2 of 2" in second.content
    descending = annotator_client.get(URL, {"sort": "-task_id"})
    assert descending.content.index(b"bulk/054") < descending.content.index(b"bulk/010")


@pytest.mark.parametrize(
    "params, status, text",
    [
        ({"status": "bogus"}, 400, "Unknown status"),
        ({"language": "fortran"}, 400, "Unknown language"),
        ({"outcome": "maybe"}, 400, "Unknown run outcome"),
        ({"sort": "password"}, 400, "Unknown sort key"),
        ({"page": "abc"}, 400, "is not a number"),
        ({"page": "-3"}, 400, "between 1 and"),
        ({"page": "0"}, 400, "between 1 and"),
        ({"page": "99999999999999999999"}, 400, "between 1 and"),
        ({"page": "500"}, 404, "does not exist"),
        ({"q": "x" * 201}, 400, "at most 200"),
        ({"q": "a\x00b"}, 400, "NUL"),
        ({"tag": "t" * 65}, 400, "too long"),
    ],
)
def test_bad_query_values_get_a_clear_4xx(annotator_client, samples, params, status, text):  # type: ignore[no-untyped-def]
    response = annotator_client.get(URL, params)
    assert response.status_code == status
    assert text.encode() in response.content


def test_task_ids_and_tags_are_escaped(annotator_client, db):  # type: ignore[no-untyped-def]
    make_sample("x/<script>alert(1)</script>", kinds={}, tags=["<img src=x onerror=alert(1)>"])
    body = annotator_client.get(URL).content
    assert b"<script>alert(1)</script>" not in body
    assert b"&lt;script&gt;" in body
    assert b"<img src=x" not in body


def test_maintainers_get_a_batch_verification_link_for_the_source(maintainer_client, annotator_client, samples):  # type: ignore[no-untyped-def]
    body = maintainer_client.get(URL, {"source": "geak-rocm"}).content.decode()
    assert "/runs/batches/new/?source=geak-rocm" in body
    assert "/runs/batches/new/" not in annotator_client.get(URL).content.decode()
