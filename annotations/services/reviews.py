"""The review flow (design.md "Review rules"): every rule is enforced here, never only in a template.

States: draft -> in review -> approved | changes requested | rejected. A new
revision sends an approved sample back to review (annotations.services.revisions).

Concurrency: every state change locks the sample row (`select_for_update`; on
SQLite the IMMEDIATE transaction mode serialises writers) and checks the state
the actor saw - the form carries the sample's `revision_count` and status it was
rendered with - so two reviewers acting at once leave exactly one outcome and the
other is told what changed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction

from annotations.access import Capability, user_can
from annotations.models import Comment, Review, ReviewAssignment, Sample, SampleStatus, User
from annotations.models.review import Verdict
from annotations.selectors import reviews as selectors
from annotations.services.audit import audit_record

# BigCodeBench's human curation, as design.md lists it. Keys are stored in Review.checklist.
CHECKLIST: tuple[tuple[str, str], ...] = (
    ("instruction_clear", "The instruction is clear and unambiguous"),
    ("code_matches_instruction", "Code and instruction agree: nothing missing, nothing extra"),
    (
        "tests_cover_inputs",
        "Tests cover normal sizes, edge sizes (1, a block multiple, not a block multiple) and special values",
    ),
    ("verification_passed", "Verification passed on the target backend"),
    ("style", "Style: readable, idiomatic, no dead code"),
)
CHECKLIST_KEYS = frozenset(key for key, _ in CHECKLIST)
MAX_COMMENT = 20_000
SUBMITTABLE = frozenset({SampleStatus.DRAFT, SampleStatus.CHANGES_REQUESTED})
REOPENABLE = frozenset({SampleStatus.APPROVED, SampleStatus.REJECTED, SampleStatus.CHANGES_REQUESTED})


class ReviewError(ValueError):
    """A review action that the rules refuse; the message is shown to the user as is."""


class ReviewConflict(ReviewError):
    """The sample changed since the actor opened it (another reviewer, a new revision)."""


def _require(user: User, capability: Capability, what: str) -> None:
    if not user_can(user, capability):
        raise ReviewError(f"Your role ({user.role or 'none'}) cannot {what}.")


def _lock(sample_id: int) -> Sample:
    return Sample.objects.select_for_update().get(pk=sample_id)


def _check_seen(sample: Sample, *, seen_status: str | None, seen_revision_count: int | None) -> None:
    changes = []
    if seen_status is not None and sample.status != seen_status:
        was = SampleStatus(seen_status).label.lower() if seen_status in SampleStatus.values else repr(seen_status)
        changes.append(f"its status is now {SampleStatus(sample.status).label.lower()} (it was {was})")
    if seen_revision_count is not None and sample.revision_count != seen_revision_count:
        n = sample.revision_count - seen_revision_count
        changes.append(f"{n} new revision{'s' if n != 1 else ''} arrived" if n > 0 else "its revisions changed")
    if changes:
        raise ReviewConflict(
            f"{sample.task_id} changed since you opened it: {'; '.join(changes)}. "
            "Nothing was recorded; reload the page, look again and resubmit."
        )


def review_submit_for_review(
    *, sample: Sample, actor: User, seen_revision_count: int | None = None
) -> Sample:
    """draft / changes requested -> in review."""
    _require(actor, Capability.ANNOTATE, "submit samples for review")
    with transaction.atomic():
        locked = _lock(sample.pk)
        _check_seen(locked, seen_status=None, seen_revision_count=seen_revision_count)
        if locked.status not in SUBMITTABLE:
            raise ReviewError(
                f"{locked.task_id} is {SampleStatus(locked.status).label.lower()}; only a draft or a sample "
                "with changes requested can be submitted for review."
            )
        current = selectors.current_reviewed_revisions(locked)
        if "candidate" not in current and "reference" not in current:
            raise ReviewError(f"{locked.task_id} has no reference or candidate yet: there is nothing to review.")
        previous = locked.status
        locked.status = SampleStatus.IN_REVIEW
        locked.save(update_fields=["status", "updated_at"])
        audit_record(action="submitted_for_review", sample=locked, actor=actor, from_state=previous,
                     to_state=locked.status, data={"revision_count": locked.revision_count})
    sample.refresh_from_db()
    return sample


def review_claim(*, sample: Sample, reviewer: User) -> ReviewAssignment:
    """A reviewer picks an unclaimed sample in review."""
    _require(reviewer, Capability.REVIEW, "review samples")
    with transaction.atomic():
        locked = _lock(sample.pk)
        if locked.status != SampleStatus.IN_REVIEW:
            raise ReviewError(f"{locked.task_id} is not in review ({SampleStatus(locked.status).label.lower()}).")
        if selectors.is_current_author(locked, reviewer):
            raise ReviewError(f"You wrote a current revision of {locked.task_id}; another reviewer must review it.")
        existing = selectors.active_assignment(locked)
        if existing is not None:
            if existing.reviewer_id == reviewer.pk:
                return existing
            raise ReviewError(f"{locked.task_id} is already claimed by {existing.reviewer.username}.")
        assignment = ReviewAssignment.objects.create(sample=locked, reviewer=reviewer, assigned_by=reviewer)
        audit_record(action="review_claimed", sample=locked, actor=reviewer, data={"reviewer": reviewer.username})
    return assignment


@dataclass
class AssignResult:
    assigned: list[Sample] = field(default_factory=list)
    # (task id, why) for each sample that was not assigned.
    skipped: list[tuple[str, str]] = field(default_factory=list)


def review_assign(*, samples: Iterable[Sample], reviewer: User, actor: User) -> AssignResult:
    """Maintainers assign (or reassign) a reviewer to many samples; each refusal is reported per sample."""
    _require(actor, Capability.MAINTAIN, "assign reviewers")
    if not user_can(reviewer, Capability.REVIEW) or not reviewer.is_active:
        raise ReviewError(f"{reviewer.username} is not a reviewer.")
    result = AssignResult()
    for sample in samples:
        with transaction.atomic():
            locked = _lock(sample.pk)
            if locked.status != SampleStatus.IN_REVIEW:
                result.skipped.append((locked.task_id, f"not in review ({SampleStatus(locked.status).label.lower()})"))
                continue
            if selectors.is_current_author(locked, reviewer):
                result.skipped.append((locked.task_id, f"{reviewer.username} wrote a current revision"))
                continue
            existing = selectors.active_assignment(locked)
            if existing is not None and existing.reviewer_id == reviewer.pk:
                result.skipped.append((locked.task_id, f"already assigned to {reviewer.username}"))
                continue
            ReviewAssignment.objects.filter(sample=locked, active=True).update(active=False)
            ReviewAssignment.objects.create(sample=locked, reviewer=reviewer, assigned_by=actor)
            audit_record(
                action="review_reassigned" if existing else "review_assigned",
                sample=locked,
                actor=actor,
                data={"reviewer": reviewer.username, "previous": existing.reviewer.username if existing else ""},
            )
            result.assigned.append(locked)
    return result


def _clean_checklist(checklist: Mapping[str, object]) -> dict[str, bool]:
    unknown = set(checklist) - CHECKLIST_KEYS
    if unknown:
        raise ReviewError(f"Unknown checklist item(s): {', '.join(sorted(unknown))[:200]}.")
    return {key: bool(checklist.get(key)) for key, _ in CHECKLIST}


def review_record(
    *,
    sample: Sample,
    reviewer: User,
    verdict: str,
    checklist: Mapping[str, object],
    comment: str = "",
    seen_status: str,
    seen_revision_count: int,
) -> Review:
    """Record a verdict. The rules, in order:

    - only reviewers and maintainers; only a sample in review, unchanged since the form was opened;
    - nobody approves a sample in which they wrote any current revision;
    - an approval needs every checklist item ticked and a passing (call and exe)
      run of exactly the current revisions; it records those revisions and that run;
    - request changes and reject need a comment saying why;
    - with REVIEW_REQUIRED_APPROVALS = 2, the sample is approved at the second
      approval by a different reviewer.
    """
    _require(reviewer, Capability.REVIEW, "review samples")
    if verdict not in Verdict.values:
        raise ReviewError(f"Unknown verdict {verdict[:40]!r}; use approve, request_changes or reject.")
    answers = _clean_checklist(checklist)
    comment = comment.strip()
    if len(comment) > MAX_COMMENT:
        raise ReviewError(f"The comment is {len(comment):,} characters; at most {MAX_COMMENT:,} are allowed.")
    if "\x00" in comment:
        raise ReviewError("The comment contains a NUL character.")
    if verdict != Verdict.APPROVE and not comment:
        raise ReviewError("Say what needs to change: a comment is required to request changes or reject.")
    with transaction.atomic():
        locked = _lock(sample.pk)
        _check_seen(locked, seen_status=seen_status, seen_revision_count=seen_revision_count)
        if locked.status != SampleStatus.IN_REVIEW:
            raise ReviewError(f"{locked.task_id} is not in review ({SampleStatus(locked.status).label.lower()}).")
        current = selectors.current_reviewed_revisions(locked)
        run = None
        if verdict == Verdict.APPROVE:
            if selectors.is_current_author(locked, reviewer):
                raise ReviewError(
                    f"You wrote a current revision of {locked.task_id}, so you cannot approve it; "
                    "another reviewer must."
                )
            missing = [label for key, label in CHECKLIST if not answers[key]]
            if missing:
                raise ReviewError("An approval needs every checklist item ticked. Not ticked: " + "; ".join(missing))
            if selectors.active_approvals(locked).filter(reviewer=reviewer).exists():
                raise ReviewError(f"You have already approved the current revisions of {locked.task_id}.")
            run = selectors.passing_run_of_current(locked)
            if run is None:
                raise ReviewError(
                    f"{locked.task_id} has no passing run (call and exe) of exactly its current revisions. "
                    "Run verification on the current revisions first."
                )
        review = Review.objects.create(
            sample=locked, reviewer=reviewer, verdict=verdict, checklist=answers, comment=comment, run=run
        )
        review.revisions.set(list(current.values()))
        previous = locked.status
        data: dict[str, object]
        if verdict == Verdict.APPROVE:
            approvals = selectors.active_approvals(locked).order_by().values("reviewer").distinct().count()
            required = settings.REVIEW_REQUIRED_APPROVALS
            new_status = SampleStatus.APPROVED if approvals >= required else SampleStatus.IN_REVIEW
            data = {"approvals": approvals, "required": required, "run_id": run.pk if run else None}
        elif verdict == Verdict.REQUEST_CHANGES:
            new_status, data = SampleStatus.CHANGES_REQUESTED, {}
        else:
            new_status, data = SampleStatus.REJECTED, {}
        data.update({"review_id": review.pk, "revision_ids": sorted(r.pk for r in current.values())})
        locked.status = new_status
        # The first of two approvals keeps the sample in review: a second reviewer's open form stays
        # valid on purpose, since two approvals of the same revisions agree.
        locked.save(update_fields=["status", "updated_at"])
        if new_status != SampleStatus.IN_REVIEW:
            ReviewAssignment.objects.filter(sample=locked, active=True).update(active=False)
        audit_record(action=f"review_{verdict}", sample=locked, actor=reviewer, from_state=previous,
                     to_state=new_status, data=data)
    sample.refresh_from_db()
    return review


def review_reopen(*, sample: Sample, actor: User, reason: str = "") -> Sample:
    """Maintainers send an approved, rejected or sent-back sample back to review; approvals go stale."""
    _require(actor, Capability.MAINTAIN, "reopen reviews")
    with transaction.atomic():
        locked = _lock(sample.pk)
        if locked.status not in REOPENABLE:
            raise ReviewError(
                f"{locked.task_id} is {SampleStatus(locked.status).label.lower()}; only approved, rejected or "
                "sent-back samples can be reopened."
            )
        previous = locked.status
        stale = selectors.active_approvals(locked).update(stale=True)
        locked.status = SampleStatus.IN_REVIEW
        locked.save(update_fields=["status", "updated_at"])
        audit_record(action="review_reopened", sample=locked, actor=actor, from_state=previous,
                     to_state=locked.status, data={"stale_reviews": stale, "reason": reason.strip()[:2000]})
    sample.refresh_from_db()
    return sample


def comment_add(*, sample: Sample, author: User, body: str, parent_id: int | None = None) -> Comment:
    """A comment on the sample, or a reply in a thread (replies attach to the top-level comment)."""
    _require(author, Capability.ANNOTATE, "comment")
    body = body.strip()
    if not body:
        raise ReviewError("The comment is empty.")
    if len(body) > MAX_COMMENT:
        raise ReviewError(f"The comment is {len(body):,} characters; at most {MAX_COMMENT:,} are allowed.")
    if "\x00" in body:
        raise ReviewError("The comment contains a NUL character.")
    parent = None
    if parent_id is not None:
        parent = Comment.objects.filter(pk=parent_id, sample=sample).first()
        if parent is None:
            raise ReviewError("The comment you replied to does not exist on this sample.")
        # Threads are one level deep: a reply to a reply joins the same thread.
        if parent.parent_id is not None:
            parent = Comment.objects.get(pk=parent.parent_id)
    return Comment.objects.create(sample=sample, author=author, body=body, parent=parent)
