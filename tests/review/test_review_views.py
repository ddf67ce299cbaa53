"""Review views: the permission matrix, self-approval by every route, queues, diffs and downloads."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from annotations.models import AuditEvent, Comment, Review, ReviewAssignment, Revision, SampleStatus
from tests.factories import add_revision
from tests.review.helpers import approve_post, record_run, reviewable_sample

pytestmark = pytest.mark.django_db


@pytest.fixture
def sample(annotator):
    return reviewable_sample(author=annotator, submit_by=annotator)


def snapshot(sample):
    """Everything a review action can write, to prove that a refused one wrote nothing."""
    sample.refresh_from_db()
    return (sample.status, sample.revision_count, Review.objects.count(), AuditEvent.objects.count(),
            Comment.objects.count(), ReviewAssignment.objects.filter(active=True).count())


def actions(sample, reviewer):
    pk = sample.pk
    return {
        "queue": ("get", reverse("review:queue"), {}),
        "review_page": ("get", reverse("review:sample", args=[pk]), {}),
        "diff": ("get", reverse("review:diff", args=[pk, "candidate"]), {}),
        "logs_diff": ("get", reverse("review:logs_diff", args=[pk]), {}),
        "record": ("post", reverse("review:record", args=[pk]), approve_post(sample)),
        "claim": ("post", reverse("review:claim", args=[pk]), {}),
        "assign": ("post", reverse("review:assign"), {"sample": [pk], "reviewer": reviewer.pk}),
        "reopen": ("post", reverse("review:reopen", args=[pk]), {}),
        "comment": ("post", reverse("review:comment", args=[pk]), {"body": "hello"}),
        "submit": ("post", reverse("review:submit", args=[pk]), {}),
    }


# Expected status per (action, role). Writes are 302/303 on success; a refused rule is 4xx.
MATRIX = {
    "queue": {"annotator": 200, "reviewer": 200, "maintainer": 200},
    "review_page": {"annotator": 403, "reviewer": 200, "maintainer": 200},
    "diff": {"annotator": 200, "reviewer": 200, "maintainer": 200},
    "logs_diff": {"annotator": 200, "reviewer": 200, "maintainer": 200},
    "record": {"annotator": 403, "reviewer": 302, "maintainer": 302},
    "claim": {"annotator": 403, "reviewer": 302, "maintainer": 302},
    "assign": {"annotator": 403, "reviewer": 403, "maintainer": 302},
    "reopen": {"annotator": 403, "reviewer": 403, "maintainer": 409},  # in review: nothing to reopen
    "comment": {"annotator": 302, "reviewer": 302, "maintainer": 302},
    "submit": {"annotator": 400, "reviewer": 400, "maintainer": 400},  # already in review
}
WRITES = {"record", "claim", "assign", "reopen", "comment", "submit"}


@pytest.mark.parametrize("action", sorted(MATRIX))
@pytest.mark.parametrize("role", ["annotator", "reviewer", "maintainer"])
def test_permission_matrix(action, role, sample, request, reviewer2, client_for):
    user = request.getfixturevalue(role if role != "annotator" else "annotator2")
    method, url, data = actions(sample, reviewer2)[action]
    before = snapshot(sample)
    response = getattr(client_for(user), method)(url, data)
    assert response.status_code == MATRIX[action][role], response.content[:500]
    if action in WRITES and response.status_code >= 400:
        assert snapshot(sample) == before


@pytest.mark.parametrize("action", sorted(MATRIX))
def test_outsider_gets_404_and_writes_nothing(action, sample, outsider_client, reviewer2):
    method, url, data = actions(sample, reviewer2)[action]
    before = snapshot(sample)
    assert getattr(outsider_client, method)(url, data).status_code == 404
    assert snapshot(sample) == before


@pytest.mark.parametrize("action", sorted(MATRIX))
def test_anonymous_is_sent_to_login(action, sample, reviewer2):
    method, url, data = actions(sample, reviewer2)[action]
    response = getattr(Client(), method)(url, data)
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("action", sorted(WRITES))
def test_writes_refuse_get(action, sample, maintainer_client, reviewer2):
    _, url, _ = actions(sample, reviewer2)[action]
    assert maintainer_client.get(url).status_code == 405


class TestSelfApproval:
    """A reviewer never approves a sample in which they wrote a current revision - by any route."""

    @pytest.fixture
    def own(self, reviewer, annotator):
        return reviewable_sample("own/sample", author=reviewer, submit_by=annotator)

    def test_through_the_form(self, own, reviewer_client):
        page = reviewer_client.get(reverse("review:sample", args=[own.pk]))
        assert b"you may comment or request changes, but not approve" in page.content
        before = snapshot(own)
        response = reviewer_client.post(reverse("review:record", args=[own.pk]), approve_post(own))
        assert response.status_code == 400
        assert b"cannot approve" in response.content
        assert snapshot(own) == before

    def test_with_a_crafted_post(self, own, reviewer_client, reviewer2):
        before = snapshot(own)
        crafted = approve_post(own, reviewer=reviewer2.pk, author="bea", then="next", run=1)
        response = reviewer_client.post(reverse("review:record", args=[own.pk]), crafted)
        assert response.status_code == 400
        assert snapshot(own) == before

    def test_with_a_replayed_post(self, own, reviewer_client, reviewer2, client_for, settings):
        settings.REVIEW_REQUIRED_APPROVALS = 2
        legit = approve_post(own)
        assert client_for(reviewer2).post(reverse("review:record", args=[own.pk]), legit).status_code == 302
        before = snapshot(own)
        response = reviewer_client.post(reverse("review:record", args=[own.pk]), legit)
        assert response.status_code == 400 and b"cannot approve" in response.content
        assert snapshot(own) == before
        # And the second reviewer replaying their own approval does not count twice.
        response = client_for(reviewer2).post(reverse("review:record", args=[own.pk]), legit)
        assert response.status_code == 400 and b"already approved" in response.content
        own.refresh_from_db()
        assert own.status == SampleStatus.IN_REVIEW

    def test_after_adding_a_revision(self, sample, reviewer, reviewer_client):
        form = approve_post(sample)
        add_revision(sample, "candidate", "// reviewer's own tweak", author=reviewer)
        record_run(sample)
        before = snapshot(sample)
        # The form opened before the revision is stale...
        response = reviewer_client.post(reverse("review:record", args=[sample.pk]), form)
        assert response.status_code == 409 and b"changed since you opened it" in response.content
        # ...and a fresh one is refused because the reviewer now wrote the current candidate.
        sample.refresh_from_db()
        response = reviewer_client.post(reverse("review:record", args=[sample.pk]), approve_post(sample))
        assert response.status_code == 400 and b"cannot approve" in response.content
        assert snapshot(sample) == before

    def test_after_approval_a_new_revision_by_the_approver_sends_it_back(self, sample, reviewer, reviewer_client):
        assert reviewer_client.post(reverse("review:record", args=[sample.pk]), approve_post(sample)).status_code == 302
        sample.refresh_from_db()
        assert sample.status == SampleStatus.APPROVED
        add_revision(sample, "candidate", "// tweak after approval", author=reviewer)
        record_run(sample)
        sample.refresh_from_db()
        assert sample.status == SampleStatus.IN_REVIEW
        response = reviewer_client.post(reverse("review:record", args=[sample.pk]), approve_post(sample))
        assert response.status_code == 400


def test_form_without_seen_state_is_refused(sample, reviewer_client):
    data = approve_post(sample)
    del data["seen_revision_count"]
    before = snapshot(sample)
    response = reviewer_client.post(reverse("review:record", args=[sample.pk]), data)
    assert response.status_code == 400 and b"reload the page" in response.content
    assert snapshot(sample) == before


def test_refused_form_keeps_what_the_reviewer_typed(sample, reviewer_client):
    data = approve_post(sample, verdict="request_changes", comment="n=1025 is <missing>", checklist=["style"],
                        seen_revision_count=sample.revision_count - 1)
    response = reviewer_client.post(reverse("review:record", args=[sample.pk]), data)
    assert response.status_code == 409
    body = response.content.decode()
    assert "n=1025 is &lt;missing&gt;</textarea>" in body
    assert 'value="style" checked' in body and 'value="request_changes" required checked' in body


def test_record_then_next_sample(annotator, reviewer_client):
    first = reviewable_sample("q/1", author=annotator, submit_by=annotator)
    second = reviewable_sample("q/2", author=annotator, submit_by=annotator)
    response = reviewer_client.post(reverse("review:record", args=[first.pk]), approve_post(first, then="next"))
    assert response["Location"] == reverse("review:sample", args=[second.pk])


class TestQueues:
    def test_needs_my_review(self, annotator, reviewer, reviewer2, maintainer, client_for):
        unclaimed = reviewable_sample("q/unclaimed", author=annotator, submit_by=annotator)
        mine = reviewable_sample("q/assigned-to-me", author=annotator, submit_by=annotator)
        theirs = reviewable_sample("q/assigned-to-bea", author=annotator, submit_by=annotator)
        own = reviewable_sample("q/written-by-me", author=reviewer, submit_by=annotator)
        reviewable_sample("q/draft", author=annotator)
        from annotations.services.reviews import review_assign

        review_assign(samples=[mine], reviewer=reviewer, actor=maintainer)
        review_assign(samples=[theirs], reviewer=reviewer2, actor=maintainer)
        body = client_for(reviewer).get(reverse("review:queue")).content.decode()
        needs = body.split('data-queue="needs"')[1].split("</table>")[0]
        assert "q/assigned-to-me" in needs and "q/unclaimed" in needs
        assert "q/assigned-to-bea" not in needs and "q/written-by-me" not in needs and "q/draft" not in needs
        assert needs.index("q/assigned-to-me") < needs.index("q/unclaimed")
        assert 'data-queue="all"' not in body  # bulk assign is for maintainers
        everything = client_for(maintainer).get(reverse("review:queue")).content.decode()
        for s in (unclaimed, mine, theirs, own):
            assert f'name="sample" value="{s.pk}"' in everything

    def test_my_changes_requested(self, annotator, annotator2, reviewer, client_for):
        sample = reviewable_sample("q/back", author=annotator, submit_by=annotator)
        client_for(reviewer).post(reverse("review:record", args=[sample.pk]), approve_post(
            sample, verdict="request_changes", comment="Add n=1.", checklist=[]))
        mine = client_for(annotator).get(reverse("review:queue")).content.decode()
        assert "q/back" in mine.split('data-queue="changes"')[1]
        other = client_for(annotator2).get(reverse("review:queue")).content.decode()
        assert "q/back" not in other.split('data-queue="changes"')[1]
        assert 'data-queue="needs"' not in mine  # annotators do not review

    def test_bulk_assign_through_the_view(self, annotator, reviewer, maintainer_client):
        a = reviewable_sample("b/1", author=annotator, submit_by=annotator)
        b = reviewable_sample("b/2", author=reviewer, submit_by=annotator)
        response = maintainer_client.post(reverse("review:assign"), {"sample": [a.pk, b.pk, "junk"],
                                                                    "reviewer": reviewer.pk}, follow=True)
        text = response.content.decode()
        assert "Assigned 1 sample(s) to bob." in text and "b/2: not assigned, bob wrote a current revision." in text
        assert ReviewAssignment.objects.filter(sample=a, reviewer=reviewer, active=True).exists()

    @pytest.mark.parametrize("data", [{"reviewer": "999999", "sample": ["1"]}, {"reviewer": "x"}, {"sample": ["1"]}])
    def test_bulk_assign_bad_input(self, data, maintainer_client, reviewer):
        if data.get("reviewer") == "999999":
            data = {"reviewer": str(reviewer.pk)}
        assert maintainer_client.post(reverse("review:assign"), data).status_code == 400


class TestDiffViews:
    def test_default_is_initial_against_current_candidate(self, sample, reviewer_client):
        page = reviewer_client.get(reverse("review:diff", args=[sample.pk, "candidate"])).content.decode()
        assert "Candidate: #1 → #2" in page
        # The added comment is coloured as a comment and marked as changed.
        assert '<span class="c1 x">// bounds checked</span>' in page

    def test_unified_download(self, sample, reviewer_client):
        revs = list(Revision.objects.filter(sample=sample, kind="candidate").order_by("seq"))
        response = reviewer_client.get(reverse("review:diff", args=[sample.pk, "candidate"]),
                                       {"a": revs[0].pk, "b": revs[1].pk, "format": "unified"})
        assert response["Content-Type"].startswith("text/x-diff")
        assert 'filename="demo_add-candidate-1-2.diff"' in response["Content-Disposition"]
        text = response.content.decode()
        assert text.startswith("--- demo_add/candidate#1\n+++ demo_add/candidate#2\n@@ ")
        assert "+    if (i < n) out[i] = x[i] + y[i];  // bounds checked\n" in text

    def test_revisions_of_another_sample_or_kind_are_404(self, sample, annotator, reviewer_client):
        other = reviewable_sample("other/x", author=annotator)
        foreign = Revision.objects.filter(sample=other, kind="candidate").first()
        test_rev = Revision.objects.get(sample=sample, kind="test")
        url = reverse("review:diff", args=[sample.pk, "candidate"])
        assert reviewer_client.get(url, {"a": foreign.pk}).status_code == 404
        assert reviewer_client.get(url, {"b": test_rev.pk}).status_code == 404
        assert reviewer_client.get(url, {"a": "abc"}).status_code == 404
        assert reviewer_client.get(reverse("review:diff", args=[sample.pk, "bogus"])).status_code == 404
        assert reviewer_client.get(reverse("review:diff", args=[sample.pk, "wrapper"])).status_code == 404

    def test_folds_expand_with_and_without_javascript(self, annotator, reviewer_client):
        body = "\n".join(f"x{i} = {i}" for i in range(60)) + "\n"
        sample = reviewable_sample("fold/x", author=annotator)
        add_revision(sample, "wrapper", body)
        add_revision(sample, "wrapper", body.replace("x30 = 30", "x30 = 31"))
        url = reverse("review:diff", args=[sample.pk, "wrapper"])
        page = reviewer_client.get(url).content.decode()
        assert page.count('class="fold"') == 2 and "x10 = 10" not in page
        assert "27 unchanged lines (left 1–27, right 1–27)" in page
        expanded = reviewer_client.get(url, {"expand": "0"}).content.decode()
        assert "x10" in expanded and expanded.count('class="fold"') == 1
        fragment = reviewer_client.get(url, {"fragment": "1", "block": "0"}, HTTP_HX_REQUEST="true")
        assert fragment.status_code == 200 and "x10" in fragment.content.decode()
        assert "<html" not in fragment.content.decode()
        assert reviewer_client.get(url, {"fragment": "1", "block": "99"}).status_code == 404
        whole = reviewer_client.get(url, {"context": "all"}).content.decode()
        assert 'class="fold"' not in whole

    def test_logs_diff(self, sample, reviewer_client):
        failed = record_run(sample, status="failed", exe_ok=False, log="build ok\ncall ok\nexe: mismatch at [1024]\n",
                            message="exe: mismatch at [1024]")
        passed = record_run(sample, log="build ok\ncall ok\nexe ok\n")
        url = reverse("review:logs_diff", args=[sample.pk])
        page = reviewer_client.get(url).content.decode()
        assert f"Logs: run {failed.pk} → run {passed.pk}" in page
        download = reviewer_client.get(url, {"a": failed.pk, "b": passed.pk, "format": "unified"}).content.decode()
        assert "-exe: mismatch at [1024]\n+exe ok\n" in download
        assert reviewer_client.get(url, {"a": 999999}).status_code == 404

    def test_logs_diff_without_runs(self, annotator, reviewer_client):
        sample = reviewable_sample("norun/x", author=annotator, passing_run=False)
        assert reviewer_client.get(reverse("review:logs_diff", args=[sample.pk])).status_code == 404


class TestSamplePage:
    def test_workspace_lists_every_revision_notes_and_errors(self, sample, annotator, annotator_client):
        add_revision(sample, "note", "Reflection: the mask was missing for n % BLOCK != 0.", author=annotator)
        record_run(sample, status="failed", exe_ok=False, message="exe: max abs diff 3.2 at index 1024")
        page = annotator_client.get(reverse("samples:detail", args=[sample.pk])).content.decode()
        workspace = page.split('id="workspace"')[1].split("</section>")[0]
        assert "Exe fix" in workspace and "#2" in workspace and "diff vs #1" in workspace
        assert "the mask was missing" in workspace and "max abs diff 3.2" in workspace
        assert 'id="review"' in page and "Submit for review" not in page  # already in review

    def test_a_long_fix_history_shows_its_start_and_newest_stretch(self, sample, annotator, annotator_client):
        from annotations.selectors.reviews import WORKSPACE_HEAD, WORKSPACE_TAIL

        existing = sample.revisions.filter(kind="candidate").count()
        total = WORKSPACE_HEAD + WORKSPACE_TAIL + 10
        for i in range(total - existing):
            add_revision(sample, "candidate", f"// fix {i}", author=annotator, origin="manual_edit")
        page = annotator_client.get(reverse("samples:detail", args=[sample.pk])).content.decode()
        workspace = page.split('id="workspace"')[1].split("</section>")[0]
        assert "… 10 more" in workspace
        assert reverse("samples:history", args=[sample.pk, "candidate"]) in workspace
        assert f"#{total}<" in workspace and "#1<" in workspace and f"#{WORKSPACE_HEAD + 1}<" not in workspace

    def test_submit_and_comment_from_the_sample_page(self, annotator, annotator_client):
        sample = reviewable_sample("page/x", author=annotator)
        page = annotator_client.get(reverse("samples:detail", args=[sample.pk])).content.decode()
        assert "Submit for review" in page
        response = annotator_client.post(reverse("review:submit", args=[sample.pk]),
                                         {"seen_revision_count": sample.revision_count,
                                          "next": "https://evil.example/"})
        assert response.status_code == 302 and response["Location"] == reverse("samples:detail", args=[sample.pk])
        sample.refresh_from_db()
        assert sample.status == SampleStatus.IN_REVIEW
        response = annotator_client.post(reverse("review:comment", args=[sample.pk]), {"body": ""})
        assert response.status_code == 400 and b"The comment is empty." in response.content


def test_the_admin_is_no_route_around_the_rules(sample, client_for, reviewer):
    """Even a superuser cannot add or edit verdicts, or set a sample's status, in the Django admin."""
    from annotations.models import User

    root = User.objects.create_superuser(username="root", password="x", role="maintainer")
    admin = client_for(root)
    assert admin.get("/admin/annotations/review/add/").status_code == 403
    page = admin.get(f"/admin/annotations/sample/{sample.pk}/change/").content.decode()
    assert 'name="status"' not in page
    before = snapshot(sample)
    admin.post(f"/admin/annotations/sample/{sample.pk}/change/",
               {"task_id": sample.task_id, "source": sample.source, "status": "approved",
                "reference_language": "triton", "target_language": "hip", "provenance": "{}",
                "latest_run_outcome": "", "tags": []})
    sample.refresh_from_db()
    assert sample.status == SampleStatus.IN_REVIEW
    assert Review.objects.count() == before[2]
