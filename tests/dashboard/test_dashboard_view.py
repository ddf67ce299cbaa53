"""The maintainers' dashboard: access, aggregate queries, and charts that read without colour."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.urls import reverse
from django.utils import timezone

from annotations.models import Review, Run
from annotations.models.runs import RunStatus
from annotations.selectors import dashboard as selectors
from tests.export.approved import approved_sample
from tests.factories import make_sample

pytestmark = pytest.mark.django_db
URL = "/dashboard/"


def test_url() -> None:
    assert reverse("dashboard:index") == URL


def test_anonymous_is_sent_to_login(client) -> None:
    response = client.get(URL)
    assert response.status_code == 302 and response.url.startswith("/login/")


def test_outsider_gets_404(outsider_client) -> None:
    assert outsider_client.get(URL).status_code == 404


@pytest.mark.parametrize("who", ["annotator_client", "reviewer_client"])
def test_other_roles_get_403(request, who: str) -> None:
    assert request.getfixturevalue(who).get(URL).status_code == 403


def test_empty_database_renders(maintainer_client) -> None:
    page = maintainer_client.get(URL).content.decode()
    assert "Nothing is waiting for review." in page


def _data(reviewer) -> None:
    make_sample("d/draft", kinds={"reference": "x = 1\n"})
    waiting = make_sample("d/<waiting>", kinds={"reference": "x = 1\n", "test": "result_gold = {}\n"})
    from annotations.services.reviews import review_submit_for_review

    review_submit_for_review(sample=waiting, actor=reviewer)
    a = approved_sample("d/fast", reviewer)
    b = approved_sample("d/slow", reviewer, target_language="cuda")
    Run.objects.filter(sample=b).update(speedup=0.7)
    # A suspicious speedup and an imported agent run that must not count.
    Run.objects.create(
        sample=a,
        backend="cuda",
        status=RunStatus.PASSED,
        call_ok=True,
        exe_ok=True,
        perf_ok=True,
        speedup=12.0,
    )
    Run.objects.create(
        sample=b,
        backend="rocm",
        status=RunStatus.PASSED,
        call_ok=True,
        exe_ok=True,
        perf_ok=True,
        speedup=3.0,
        imported=True,
    )


def test_aggregates(reviewer) -> None:
    _data(reviewer)
    status = {b.label: b.value for b in selectors.status_counts()}
    assert status == {"Draft": 1, "In review": 1, "Changes requested": 0, "Approved": 2, "Rejected": 0}
    assert {b.label: b.value for b in selectors.target_counts()} == {"CUDA": 1, "HIP": 3}
    funnel = {b.label: b.value for b in selectors.funnel()}
    assert funnel == {
        "all samples": 4,
        "verified at least once": 2,
        "call passed": 2,
        "exe passed": 2,
        "perf passed": 2,
    }
    bars, measured = selectors.speedup_histogram()
    hist = {b.label: b.value for b in bars}
    assert measured == 2  # best per sample; the imported 3.0x does not count
    assert hist["0.5-0.9x"] == 1 and hist["> 10x (suspicious)"] == 1 and sum(hist.values()) == 2
    _, weekly = selectors.review_throughput()
    assert sum(b.value for b in weekly) == Review.objects.count() == 2
    waiting = selectors.waiting_longest()
    assert [w["task_id"] for w in waiting] == ["d/<waiting>"]


def test_queries_do_not_grow_with_samples(reviewer, django_assert_max_num_queries) -> None:
    _data(reviewer)
    for i in range(15):
        approved_sample(f"d/more-{i:02d}", reviewer)
    with django_assert_max_num_queries(10):
        selectors.dashboard_context()


def test_weeks_are_mondays_and_old_reviews_fall_out(reviewer) -> None:
    sample = approved_sample("d/old", reviewer)
    Review.objects.filter(sample=sample).update(created_at=timezone.now() - dt.timedelta(weeks=30))
    labels, bars = selectors.review_throughput()
    assert labels == ["Approve", "Request changes", "Reject"]
    assert sum(b.value for b in bars) == 0
    assert all(dt.date.fromisoformat(b.label).weekday() == 0 for b in bars)


def test_page_prints_labels_and_values_and_uses_patterns(maintainer_client, reviewer) -> None:
    _data(reviewer)
    page = maintainer_client.get(URL).content.decode()
    # Values are printed as text next to each bar, not only encoded as length or colour.
    assert re.search(r'class="lbl">Approved</text>\s*<rect[^>]*/>\s*<text[^>]*class="val">2</text>', page)
    assert 'fill="url(#pat-1)"' in page  # the suspicious bucket has its own pattern
    assert '<pattern id="pat-0"' in page
    assert "d/&lt;waiting&gt;" in page and "d/<waiting>" not in page
    assert 'role="img"' in page and 'aria-label="Samples by status: Draft 1; In review 1;' in page
