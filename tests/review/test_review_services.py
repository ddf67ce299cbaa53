"""annotations.services.reviews: every review rule, through the real services and database."""

from __future__ import annotations

import pytest

from annotations.models import AuditEvent, Review, ReviewAssignment, SampleStatus
from annotations.services import reviews as services
from annotations.services.reviews import ReviewConflict, ReviewError
from tests.factories import add_revision
from tests.review.helpers import all_ticked, record_run, reviewable_sample

pytestmark = pytest.mark.django_db


def approve(sample, reviewer, **kw):
    sample.refresh_from_db()
    return services.review_record(
        sample=sample, reviewer=reviewer, verdict=kw.pop("verdict", "approve"), checklist=kw.pop("checklist", all_ticked()),
        comment=kw.pop("comment", ""), seen_status=kw.pop("seen_status", sample.status),
        seen_revision_count=kw.pop("seen_revision_count", sample.revision_count), **kw,
    )


class TestSubmit:
    def test_draft_goes_to_review_with_an_audit_event(self, annotator):
        sample = reviewable_sample(author=annotator)
        services.review_submit_for_review(sample=sample, actor=annotator)
        assert sample.status == SampleStatus.IN_REVIEW
        event = AuditEvent.objects.filter(sample=sample, action="submitted_for_review").get()
        assert (event.actor, event.from_state, event.to_state) == (annotator, "draft", "in_review")

    def test_in_review_cannot_be_submitted_again(self, annotator):
        sample = reviewable_sample(author=annotator, submit_by=annotator)
        with pytest.raises(ReviewError, match="only a draft"):
            services.review_submit_for_review(sample=sample, actor=annotator)

    def test_nothing_to_review(self, annotator):
        from tests.factories import make_sample

        sample = make_sample("empty/one", kinds={"instruction": "Say what."})
        with pytest.raises(ReviewError, match="nothing to review"):
            services.review_submit_for_review(sample=sample, actor=annotator)

    def test_stale_page_is_refused(self, annotator):
        sample = reviewable_sample(author=annotator)
        seen = sample.revision_count
        add_revision(sample, "candidate", "// newer", author=annotator)
        with pytest.raises(ReviewConflict, match="changed since you opened it"):
            services.review_submit_for_review(sample=sample, actor=annotator, seen_revision_count=seen)

    def test_outsider_cannot_submit(self, annotator, outsider):
        sample = reviewable_sample(author=annotator)
        with pytest.raises(ReviewError, match="cannot submit"):
            services.review_submit_for_review(sample=sample, actor=outsider)


class TestClaimAndAssign:
    def test_claim_then_another_reviewer_is_told(self, annotator, reviewer, reviewer2):
        sample = reviewable_sample(author=annotator, submit_by=annotator)
        services.review_claim(sample=sample, reviewer=reviewer)
        assert services.review_claim(sample=sample, reviewer=reviewer).reviewer == reviewer  # idempotent
        with pytest.raises(ReviewError, match="already claimed by bob"):
            services.review_claim(sample=sample, reviewer=reviewer2)

    def test_author_cannot_claim(self, reviewer):
        sample = reviewable_sample(author=reviewer, submit_by=reviewer)
        with pytest.raises(ReviewError, match="You wrote a current revision"):
            services.review_claim(sample=sample, reviewer=reviewer)

    def test_annotator_cannot_claim(self, annotator, annotator2):
        sample = reviewable_sample(author=annotator, submit_by=annotator)
        with pytest.raises(ReviewError, match="cannot review"):
            services.review_claim(sample=sample, reviewer=annotator2)

    def test_bulk_assign_reports_each_refusal(self, annotator, reviewer, reviewer2, maintainer):
        ok = reviewable_sample("t/ok", author=annotator, submit_by=annotator)
        own = reviewable_sample("t/own", author=reviewer, submit_by=annotator)
        draft = reviewable_sample("t/draft", author=annotator)
        result = services.review_assign(samples=[ok, own, draft], reviewer=reviewer, actor=maintainer)
        assert [s.task_id for s in result.assigned] == ["t/ok"]
        assert dict(result.skipped) == {"t/own": "bob wrote a current revision", "t/draft": "not in review (draft)"}
        # Reassign: the old assignment is closed, the audit trail says who replaced whom.
        services.review_assign(samples=[ok], reviewer=reviewer2, actor=maintainer)
        active = ReviewAssignment.objects.filter(sample=ok, active=True).get()
        assert active.reviewer == reviewer2
        event = AuditEvent.objects.filter(sample=ok, action="review_reassigned").get()
        assert event.data == {"reviewer": "bea", "previous": "bob"}

    def test_only_maintainers_assign_and_only_to_reviewers(self, annotator, reviewer, maintainer):
        sample = reviewable_sample(author=annotator, submit_by=annotator)
        with pytest.raises(ReviewError, match="cannot assign"):
            services.review_assign(samples=[sample], reviewer=reviewer, actor=reviewer)
        with pytest.raises(ReviewError, match="alice is not a reviewer"):
            services.review_assign(samples=[sample], reviewer=annotator, actor=maintainer)


class TestApproval:
    def test_approval_records_the_revisions_and_the_run(self, annotator, reviewer):
        sample = reviewable_sample(author=annotator, submit_by=annotator)
        run = sample.runs.get()
        review = approve(sample, reviewer)
        assert sample.status == SampleStatus.APPROVED
        assert review.run == run
        kinds = sorted((r.kind, r.seq) for r in review.revisions.all())
        assert kinds == [("candidate", 2), ("instruction", 1), ("reference", 1), ("test", 1)]
        event = AuditEvent.objects.filter(sample=sample, action="review_approve").get()
        assert (event.from_state, event.to_state, event.data["run_id"]) == ("in_review", "approved", run.pk)

    def test_author_of_a_current_revision_cannot_approve(self, reviewer):
        sample = reviewable_sample(author=reviewer, submit_by=reviewer)
        with pytest.raises(ReviewError, match="cannot approve"):
            approve(sample, reviewer)
        assert not Review.objects.exists()

    def test_author_of_an_old_revision_only_may_approve(self, reviewer, annotator):
        sample = reviewable_sample(author=reviewer)
        add_revision(sample, "candidate", "// rewritten by alice", author=annotator)
        record_run(sample)
        services.review_submit_for_review(sample=sample, actor=annotator)
        approve(sample, reviewer)
        assert sample.status == SampleStatus.APPROVED

    def test_applying_llm_output_makes_you_an_author(self, annotator, reviewer):
        # The chat's "apply" creates the revision with author=the user who applied it.
        sample = reviewable_sample(author=annotator)
        add_revision(sample, "wrapper", "def add_wrapper(x, y): return x + y\n", author=reviewer, origin="chat")
        record_run(sample)
        services.review_submit_for_review(sample=sample, actor=annotator)
        with pytest.raises(ReviewError, match="cannot approve"):
            approve(sample, reviewer)

    def test_every_checklist_item_is_needed(self, annotator, reviewer):
        sample = reviewable_sample(author=annotator, submit_by=annotator)
        ticks = all_ticked() | {"tests_cover_inputs": False}
        with pytest.raises(ReviewError, match="Not ticked: Tests cover"):
            approve(sample, reviewer, checklist=ticks)

    def test_unknown_checklist_item_and_verdict(self, annotator, reviewer):
        sample = reviewable_sample(author=annotator, submit_by=annotator)
        with pytest.raises(ReviewError, match="Unknown checklist item"):
            approve(sample, reviewer, checklist=all_ticked() | {"looks_fine": True})
        with pytest.raises(ReviewError, match="Unknown verdict"):
            approve(sample, reviewer, verdict="lgtm")

    def test_no_run_no_approval(self, annotator, reviewer):
        sample = reviewable_sample(author=annotator, submit_by=annotator, passing_run=False)
        with pytest.raises(ReviewError, match="no passing run"):
            approve(sample, reviewer)

    @pytest.mark.parametrize(
        "run_kwargs",
        [
            {"status": "failed", "exe_ok": False},
            {"status": "passed", "exe_ok": None},
            {"status": "passed", "call_ok": False},
            {"imported": True},
            {"purpose": "pre-eval"},
        ],
        ids=["failed", "exe-not-checked", "call-failed", "imported-agent-run", "pre-evaluation-run"],
    )
    def test_only_our_own_passing_call_and_exe_run_counts(self, annotator, reviewer, run_kwargs):
        sample = reviewable_sample(author=annotator, submit_by=annotator, passing_run=False)
        record_run(sample, **run_kwargs)
        with pytest.raises(ReviewError, match="no passing run"):
            approve(sample, reviewer)

    def test_a_run_of_other_revisions_does_not_count(self, annotator, reviewer):
        sample = reviewable_sample(author=annotator, passing_run=False)
        old = {r.kind: r for r in sample.revisions.filter(seq=1)}  # initial candidate, not the current one
        record_run(sample, revisions={k: old[k] for k in ("reference", "candidate", "test")})
        services.review_submit_for_review(sample=sample, actor=annotator)
        with pytest.raises(ReviewError, match="no passing run"):
            approve(sample, reviewer)
        # A run missing the test, or with an extra wrapper, is not "exactly" either.
        current = {r.kind: r for r in sample.revisions.filter(kind__in=["reference", "candidate", "test"]).order_by("seq")}
        record_run(sample, revisions={k: current[k] for k in ("reference", "candidate")})
        with pytest.raises(ReviewError, match="no passing run"):
            approve(sample, reviewer)

    def test_same_reviewer_cannot_approve_twice_with_two_reviewer_policy(self, settings, annotator, reviewer,
                                                                         reviewer2):
        settings.REVIEW_REQUIRED_APPROVALS = 2
        sample = reviewable_sample(author=annotator, submit_by=annotator)
        approve(sample, reviewer)
        assert sample.status == SampleStatus.IN_REVIEW
        with pytest.raises(ReviewError, match="already approved"):
            approve(sample, reviewer)
        approve(sample, reviewer2)
        assert sample.status == SampleStatus.APPROVED
        last = AuditEvent.objects.filter(sample=sample, action="review_approve").first()
        assert (last.data["approvals"], last.data["required"]) == (2, 2)

    def test_new_revision_makes_approval_stale_and_sends_sample_back(self, annotator, reviewer):
        sample = reviewable_sample(author=annotator, submit_by=annotator)
        review = approve(sample, reviewer)
        add_revision(sample, "test", TEST_EDGE, author=annotator)
        sample.refresh_from_db()
        review.refresh_from_db()
        assert review.stale and sample.status == SampleStatus.IN_REVIEW
        # The old run no longer covers the current revisions.
        with pytest.raises(ReviewError, match="no passing run"):
            approve(sample, reviewer)
        record_run(sample)
        approve(sample, reviewer)
        assert sample.status == SampleStatus.APPROVED


TEST_EDGE = "import torch\n\nresult_gold = {'n1': add_wrapper(torch.ones(1), torch.ones(1))}\n"


class TestOtherVerdicts:
    def test_request_changes_needs_a_comment_and_comes_back(self, annotator, reviewer):
        sample = reviewable_sample(author=annotator, submit_by=annotator)
        with pytest.raises(ReviewError, match="comment is required"):
            approve(sample, reviewer, verdict="request_changes", comment="  ")
        approve(sample, reviewer, verdict="request_changes", comment="Test n=1 and n=1025.", checklist={})
        assert sample.status == SampleStatus.CHANGES_REQUESTED
        services.review_submit_for_review(sample=sample, actor=annotator)
        assert sample.status == SampleStatus.IN_REVIEW

    def test_reject_then_maintainer_reopens(self, annotator, reviewer, maintainer):
        sample = reviewable_sample(author=annotator, submit_by=annotator)
        approve(sample, reviewer, verdict="reject", comment="Duplicate of demo/add2.", checklist={})
        assert sample.status == SampleStatus.REJECTED
        with pytest.raises(ReviewError, match="cannot reopen"):
            services.review_reopen(sample=sample, actor=reviewer)
        services.review_reopen(sample=sample, actor=maintainer, reason="Not a duplicate after all")
        assert sample.status == SampleStatus.IN_REVIEW
        assert AuditEvent.objects.filter(sample=sample, action="review_reopened", actor=maintainer).exists()

    def test_reopen_makes_approvals_stale(self, annotator, reviewer, maintainer):
        sample = reviewable_sample(author=annotator, submit_by=annotator)
        review = approve(sample, reviewer)
        services.review_reopen(sample=sample, actor=maintainer)
        review.refresh_from_db()
        assert review.stale

    def test_draft_cannot_be_reopened_or_reviewed(self, annotator, reviewer, maintainer):
        sample = reviewable_sample(author=annotator)
        with pytest.raises(ReviewError, match="only approved, rejected"):
            services.review_reopen(sample=sample, actor=maintainer)
        with pytest.raises(ReviewError, match="not in review"):
            approve(sample, reviewer)

    def test_annotators_cannot_record_verdicts(self, annotator, annotator2):
        sample = reviewable_sample(author=annotator, submit_by=annotator)
        with pytest.raises(ReviewError, match="cannot review"):
            approve(sample, annotator2)

    def test_oversized_and_nul_comments(self, annotator, reviewer):
        sample = reviewable_sample(author=annotator, submit_by=annotator)
        with pytest.raises(ReviewError, match="at most 20,000"):
            approve(sample, reviewer, verdict="reject", comment="x" * 20_001, checklist={})
        with pytest.raises(ReviewError, match="NUL"):
            approve(sample, reviewer, verdict="reject", comment="a\x00b", checklist={})


class TestComments:
    def test_threads_are_one_level_deep(self, annotator, reviewer):
        sample = reviewable_sample(author=annotator)
        top = services.comment_add(sample=sample, author=reviewer, body="Why BLOCK=128?")
        reply = services.comment_add(sample=sample, author=annotator, body="Occupancy.", parent_id=top.pk)
        again = services.comment_add(sample=sample, author=reviewer, body="OK.", parent_id=reply.pk)
        assert reply.parent == top and again.parent == top

    def test_bad_comments_are_refused(self, annotator, outsider):
        sample = reviewable_sample(author=annotator)
        other = reviewable_sample("other/x", author=annotator)
        foreign = services.comment_add(sample=other, author=annotator, body="elsewhere")
        with pytest.raises(ReviewError, match="empty"):
            services.comment_add(sample=sample, author=annotator, body=" \n ")
        with pytest.raises(ReviewError, match="does not exist on this sample"):
            services.comment_add(sample=sample, author=annotator, body="hi", parent_id=foreign.pk)
        with pytest.raises(ReviewError, match="cannot comment"):
            services.comment_add(sample=sample, author=outsider, body="hi")
