"""The list's deferred-join paginator: deep pages hold the same rows, in the same order, as plain OFFSET."""

from __future__ import annotations

import pytest
from django.core.paginator import Paginator
from django.test import Client

from annotations.models import Sample, User
from annotations.selectors.samples import SamplePaginator, SampleQuery, sample_list


def _bulk_samples(n: int) -> None:
    Sample.objects.bulk_create(
        [Sample(task_id=f"bulk/{i:04d}", source="bulk", kernel_name=f"k{i % 7}", status=("draft", "approved")[i % 2])
         for i in range(n)]
    )


@pytest.mark.django_db
@pytest.mark.parametrize("sort", ["-updated", "task_id", "-created", "outcome", "status"])
def test_deep_pages_match_plain_offset(annotator: User, sort: str) -> None:
    _bulk_samples(620)
    SamplePaginator.DEFERRED_FROM_OFFSET = 100  # exercise the deferred path with a small table
    try:
        qs = sample_list(SampleQuery(sort=sort), user=annotator)
        deferred = SamplePaginator(qs, 50)
        plain = Paginator(qs, 50)
        assert deferred.num_pages == plain.num_pages == 13
        for number in (1, 3, 12, 13):  # shallow, deep, and the short last page
            got = [s.pk for s in deferred.page(number).object_list]
            want = [s.pk for s in plain.page(number).object_list]
            assert got == want
        assert len(deferred.page(13).object_list) == 20
    finally:
        SamplePaginator.DEFERRED_FROM_OFFSET = 500


@pytest.mark.django_db
def test_deep_page_through_the_view_keeps_filters(annotator_client: Client) -> None:
    _bulk_samples(1200)
    # 600 approved samples: page 11 (offset 500) goes through the deferred join.
    response = annotator_client.get("/samples/?status=approved&sort=task_id&page=11")
    assert response.status_code == 200
    rows = [s for s in (r["sample"] for r in response.context["rows"])]
    assert len(rows) == 50
    assert all(s.status == "approved" for s in rows)
    assert [s.task_id for s in rows] == sorted(s.task_id for s in rows)
    assert rows[0].task_id == "bulk/1001"
    assert annotator_client.get("/samples/?status=approved&page=13").status_code == 404
