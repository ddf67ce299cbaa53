"""Reads for the review area: queues, the workspace, authorship and the run an approval needs."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Exists, OuterRef, Q, QuerySet

from annotations.models import (
    AuditEvent,
    Comment,
    Review,
    ReviewAssignment,
    Revision,
    Run,
    RunRevision,
    Sample,
    SampleStatus,
    User,
)
from annotations.models.review import Verdict
from annotations.models.runs import RunStatus
from annotations.models.samples import RevisionKind
from annotations.services.revisions import REVIEWED_KINDS

# The kinds a verification run builds and runs; an approval needs a passing run of exactly these.
RUN_KINDS = (RevisionKind.REFERENCE, RevisionKind.CANDIDATE, RevisionKind.WRAPPER, RevisionKind.TEST)
# Kinds offered in the diff picker, in workspace order.
DIFF_KINDS = (
    RevisionKind.CANDIDATE,
    RevisionKind.REFERENCE,
    RevisionKind.WRAPPER,
    RevisionKind.TEST,
    RevisionKind.INSTRUCTION,
    RevisionKind.ANALYSIS,
    RevisionKind.NOTE,
)


def current_revisions(sample: Sample, kinds: tuple[str, ...] | frozenset[str] | None = None) -> dict[str, Revision]:
    """The newest revision of each kind (one query; revisions per sample are few)."""
    qs = Revision.objects.filter(sample=sample).defer("content").select_related("author").order_by("kind", "-seq")
    if kinds is not None:
        qs = qs.filter(kind__in=list(kinds))
    current: dict[str, Revision] = {}
    for rev in qs:
        current.setdefault(rev.kind, rev)
    return current


def current_reviewed_revisions(sample: Sample) -> dict[str, Revision]:
    return current_revisions(sample, REVIEWED_KINDS)


def is_current_author(sample: Sample, user: User) -> bool:
    """Did `user` write any current revision of a reviewed kind (by hand, or by applying LLM output)?"""
    return any(
        rev.author_id == user.pk or (rev.author_id is None and rev.author_label == user.username)
        for rev in current_reviewed_revisions(sample).values()
    )


def _current_author_subquery(user: User) -> Exists:
    """Samples where `user` authored a revision that is still current (no newer one of its kind)."""
    newer = Revision.objects.filter(sample_id=OuterRef("sample_id"), kind=OuterRef("kind"), seq__gt=OuterRef("seq"))
    mine = Revision.objects.filter(
        sample_id=OuterRef("pk"), author=user, kind__in=list(REVIEWED_KINDS)
    ).exclude(Exists(newer))
    return Exists(mine)


def passing_run_of_current(sample: Sample) -> Run | None:
    """The newest finished, passing (call and exe) run of our own whose revisions are exactly the current ones.

    "Exactly": the run used the current revision of every run kind the sample has,
    and nothing else. Imported agent runs, pre-evaluation runs and runs with
    overridden code never count.
    """
    current = {kind: rev.pk for kind, rev in current_revisions(sample, RUN_KINDS).items()}
    if not current:
        return None
    # Only ordinary verification runs: a pre-evaluation run verifies another model's candidate
    # (passed in as an override), not the revisions it links to.
    candidates = Run.objects.filter(
        sample=sample, imported=False, purpose="verify", status=RunStatus.PASSED, call_ok=True, exe_ok=True
    ).order_by("-created_at", "-id")[:50]
    runs = list(candidates.defer("log"))
    links: dict[int, dict[str, int]] = {}
    for run_id, kind, revision_id in RunRevision.objects.filter(run__in=runs).values_list(
        "run_id", "kind", "revision_id"
    ):
        links.setdefault(run_id, {})[kind] = revision_id
    for run in runs:
        if getattr(run, "overrides", None):
            continue  # it ran code that is not one of its revisions
        if links.get(run.pk, {}) == current:
            return run
    return None


def active_approvals(sample: Sample) -> QuerySet[Review]:
    return Review.objects.filter(sample=sample, verdict=Verdict.APPROVE, stale=False)


def active_assignment(sample: Sample) -> ReviewAssignment | None:
    return (
        ReviewAssignment.objects.filter(sample=sample, active=True)
        .select_related("reviewer")
        .order_by("-created_at")
        .first()
    )


def needs_my_review(user: User) -> QuerySet[Sample]:
    """In review, assigned to me or to nobody, not written by me, not already approved by me."""
    assigned_to_me = ReviewAssignment.objects.filter(sample_id=OuterRef("pk"), active=True, reviewer=user)
    assigned_to_anyone = ReviewAssignment.objects.filter(sample_id=OuterRef("pk"), active=True)
    approved_by_me = Review.objects.filter(
        sample_id=OuterRef("pk"), reviewer=user, verdict=Verdict.APPROVE, stale=False
    )
    return (
        Sample.objects.filter(status=SampleStatus.IN_REVIEW)
        .filter(Q(Exists(assigned_to_me)) | ~Q(Exists(assigned_to_anyone)))
        .exclude(_current_author_subquery(user))
        .exclude(Exists(approved_by_me))
        .annotate(mine=Exists(assigned_to_me))
        .order_by("-mine", "updated_at", "id")
    )


def my_changes_requested(user: User) -> QuerySet[Sample]:
    """My samples (I am the assignee or wrote a revision) that a reviewer sent back."""
    wrote = Revision.objects.filter(sample_id=OuterRef("pk"), author=user)
    return (
        Sample.objects.filter(status=SampleStatus.CHANGES_REQUESTED)
        .filter(Q(assignee=user) | Q(Exists(wrote)))
        .order_by("-updated_at", "-id")
    )


def all_in_review() -> QuerySet[Sample]:
    return Sample.objects.filter(status=SampleStatus.IN_REVIEW).order_by("updated_at", "id")


def assignments_for(samples: list[Sample]) -> dict[int, ReviewAssignment]:
    rows = (
        ReviewAssignment.objects.filter(sample__in=samples, active=True)
        .select_related("reviewer")
        .order_by("created_at")
    )
    return {a.sample_id: a for a in rows}


def reviewers() -> QuerySet[User]:
    return User.objects.filter(role__in=["reviewer", "maintainer"], is_active=True).order_by("username")


def next_in_queue(user: User, after: Sample, *, step: int = 1) -> Sample | None:
    """The sample after (step=1) or before (step=-1) `after` in my review queue, wrapping around.

    When `after` is not in the queue (just reviewed, say), the first sample of the queue.
    """
    ids = list(needs_my_review(user).values_list("pk", flat=True)[:500])
    others = [pk for pk in ids if pk != after.pk]
    if not others:
        return None
    if after.pk not in ids:
        return Sample.objects.get(pk=others[0])
    position = ids.index(after.pk)
    return Sample.objects.get(pk=ids[(position + step) % len(ids)])


def comments(sample: Sample) -> list[Comment]:
    """Top-level comments with their replies attached as `thread_replies` (one query)."""
    rows = list(Comment.objects.filter(sample=sample).select_related("author").order_by("created_at", "id"))
    by_id = {c.pk: c for c in rows}
    top: list[Comment] = []
    for c in rows:
        c.thread_replies = []  # type: ignore[attr-defined]
    for c in rows:
        parent = by_id.get(c.parent_id) if c.parent_id else None
        if parent is not None:
            parent.thread_replies.append(c)  # type: ignore[attr-defined]
        else:
            top.append(c)
    return top


def audit_trail(sample: Sample, limit: int = 200) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(sample=sample).select_related("actor")[:limit])


def reviews(sample: Sample) -> list[Review]:
    return list(
        Review.objects.filter(sample=sample).select_related("reviewer", "run").prefetch_related("revisions")[:50]
    )


@dataclass(frozen=True)
class KindHistory:
    kind: str
    label: str
    revisions: list[Revision]
    # Revisions left out between the first few and the newest (the full list is on the history page).
    omitted: int = 0
    omitted_after: int = 0


# A long fix history (agents leave hundreds) shows its start and its newest stretch;
# rendering every row made the sample page of a 300-revision sample miss its budget.
WORKSPACE_HEAD = 3
WORKSPACE_TAIL = 25


def workspace_history(sample: Sample) -> list[KindHistory]:
    """Every revision of every kind, oldest first (the fixes in the order they were made), without content."""
    by_kind: dict[str, list[Revision]] = {}
    for rev in Revision.objects.filter(sample=sample).defer("content").select_related("author").order_by("kind", "seq"):
        by_kind.setdefault(rev.kind, []).append(rev)
    order = [RevisionKind.INSTRUCTION, RevisionKind.REFERENCE, *DIFF_KINDS]
    seen: set[str] = set()
    out: list[KindHistory] = []
    for kind in order:
        if kind in seen or kind not in by_kind:
            continue
        seen.add(kind)
        revisions = by_kind[kind]
        if len(revisions) > WORKSPACE_HEAD + WORKSPACE_TAIL:
            omitted = len(revisions) - WORKSPACE_HEAD - WORKSPACE_TAIL
            shown = revisions[:WORKSPACE_HEAD] + revisions[-WORKSPACE_TAIL:]
            out.append(KindHistory(kind, RevisionKind(kind).label, shown, omitted, WORKSPACE_HEAD))
        else:
            out.append(KindHistory(kind, RevisionKind(kind).label, revisions))
    return out


def notes(sample: Sample, limit: int = 20) -> list[Revision]:
    """Notes and reflections, newest first, with content (they are short)."""
    return list(
        Revision.objects.filter(sample=sample, kind=RevisionKind.NOTE).select_related("author").order_by("-seq")[:limit]
    )


def error_runs(sample: Sample, limit: int = 20) -> list[Run]:
    """Runs (ours and imported) that did not pass, newest first, with their messages."""
    return list(
        Run.objects.filter(sample=sample)
        .exclude(status__in=[RunStatus.PASSED, RunStatus.QUEUED, RunStatus.RUNNING])
        .defer("log")
        .order_by("-created_at", "-id")[:limit]
    )


def runs_with_logs(sample: Sample, limit: int = 100) -> list[Run]:
    return list(Run.objects.filter(sample=sample).defer("log").order_by("-created_at", "-id")[:limit])


def kinds_with_revisions(sample: Sample) -> list[str]:
    """The kinds this sample has revisions of, in the diff picker's order."""
    present = set(Revision.objects.filter(sample=sample).order_by().values_list("kind", flat=True).distinct())
    return [k for k in DIFF_KINDS if k in present]


def diff_default_pair(sample: Sample, kind: str) -> tuple[Revision, Revision] | None:
    """Initial (first) against current (newest) revision of a kind, or None when there is only one."""
    qs = Revision.objects.filter(sample=sample, kind=kind).order_by("seq")
    first = qs.first()
    last = qs.last()
    if first is None or last is None:
        return None
    return first, last
