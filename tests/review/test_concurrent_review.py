"""Two reviewers acting on one sample at once: one outcome, nothing lost, the other told."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

from annotations.models import AuditEvent, Review, SampleStatus
from tests.review.helpers import approve_post, reviewable_sample


@pytest.mark.django_db
def test_stale_form_of_the_second_reviewer_is_refused_and_kept(annotator, reviewer, reviewer2, client_for):
    sample = reviewable_sample(author=annotator, submit_by=annotator)
    # Both open the review form: it carries the same state.
    first_form = approve_post(sample)
    second_form = approve_post(sample, verdict="request_changes", comment="Please add n=1 to the test.",
                               checklist=["instruction_clear"])
    assert client_for(reviewer).post(reverse("review:record", args=[sample.pk]), first_form).status_code == 302
    response = client_for(reviewer2).post(reverse("review:record", args=[sample.pk]), second_form)
    assert response.status_code == 409
    text = response.content.decode()
    assert "changed since you opened it: its status is now approved (it was in review)" in text
    assert "Please add n=1 to the test.</textarea>" in text  # what bea typed is still there
    sample.refresh_from_db()
    assert sample.status == SampleStatus.APPROVED
    assert list(Review.objects.values_list("reviewer__username", "verdict")) == [("bob", "approve")]


@pytest.mark.django_db
def test_two_approvals_with_the_two_reviewer_policy_both_count(settings, annotator, reviewer, reviewer2, client_for):
    settings.REVIEW_REQUIRED_APPROVALS = 2
    sample = reviewable_sample(author=annotator, submit_by=annotator)
    form = approve_post(sample)
    assert client_for(reviewer).post(reverse("review:record", args=[sample.pk]), form).status_code == 302
    assert client_for(reviewer2).post(reverse("review:record", args=[sample.pk]), form).status_code == 302
    sample.refresh_from_db()
    assert sample.status == SampleStatus.APPROVED
    assert Review.objects.filter(verdict="approve", stale=False).count() == 2


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("verdicts", [("approve", "request_changes"), ("request_changes", "reject")])
def test_two_threads_at_once_leave_exactly_one_outcome(verdicts, annotator, reviewer, reviewer2):
    if connection.vendor == "sqlite":
        pytest.skip("SQLite's in-memory test database (shared cache) reports table locks instead of waiting; "
                    "run with DATABASE_URL=postgres://... (CI does); the stale-form tests cover SQLite")
    sample = reviewable_sample(author=annotator, submit_by=annotator)
    clients = []
    for user in (reviewer, reviewer2):
        c = Client()
        c.force_login(user)
        clients.append(c)
    forms = [approve_post(sample, verdict=v, comment=f"{v} from thread") for v in verdicts]
    barrier = threading.Barrier(2)
    statuses: list[int] = [0, 0]

    def act(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            statuses[i] = clients[i].post(reverse("review:record", args=[sample.pk]), forms[i]).status_code
        finally:
            connection.close()

    threads = [threading.Thread(target=act, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert sorted(statuses) == [302, 409], statuses
    winner = statuses.index(302)
    reviews = list(Review.objects.all())
    assert len(reviews) == 1 and reviews[0].verdict == verdicts[winner]
    sample.refresh_from_db()
    expected = {"approve": "approved", "request_changes": "changes_requested", "reject": "rejected"}
    assert sample.status == expected[verdicts[winner]]
    assert AuditEvent.objects.filter(sample=sample, action__startswith="review_").count() == 1
