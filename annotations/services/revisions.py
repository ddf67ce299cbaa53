"""Creating revisions: the only way artifacts change."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotations.models import Review, Revision, Sample, SampleStatus, User
from annotations.models.review import Verdict
from annotations.models.samples import RevisionKind, RevisionOrigin
from annotations.services.audit import audit_record

DEFAULT_LANGUAGE = {
    RevisionKind.INSTRUCTION: "markdown",
    RevisionKind.ANALYSIS: "json",
    RevisionKind.NOTE: "markdown",
    RevisionKind.TEST: "python",
    RevisionKind.WRAPPER: "python",
}
# Kinds whose change makes an approval stale (notes and analyses do not change what was approved).
REVIEWED_KINDS = frozenset(
    {RevisionKind.REFERENCE, RevisionKind.INSTRUCTION, RevisionKind.CANDIDATE, RevisionKind.WRAPPER, RevisionKind.TEST}
)


class RevisionError(ValueError):
    pass


def revision_create(
    *,
    sample: Sample,
    kind: str,
    content: str,
    author: User | None = None,
    author_label: str = "",
    origin: str = RevisionOrigin.MANUAL_EDIT,
    origin_index: int = 0,
    provenance: dict[str, Any] | None = None,
    language: str = "",
) -> Revision:
    """Append a revision of `kind` to `sample`; the newest revision of a kind is the current one.

    A new revision of a reviewed kind makes any approval stale and sends an
    approved sample back to review (design.md "Review rules").
    """
    if kind not in RevisionKind.values:
        raise RevisionError(f"unknown revision kind {kind!r}")
    if origin not in RevisionOrigin.values:
        raise RevisionError(f"unknown revision origin {origin!r}")
    if author is None and not author_label:
        raise RevisionError("a revision needs an author or an author label such as 'import:<source>'")
    with transaction.atomic():
        # Lock the sample row so two writers cannot take the same seq number.
        locked = Sample.objects.select_for_update().get(pk=sample.pk)
        parent = Revision.objects.filter(sample=locked, kind=kind).order_by("-seq").first()
        revision = Revision.objects.create(
            sample=locked,
            kind=kind,
            seq=(parent.seq + 1) if parent else 1,
            content=content,
            language=language or DEFAULT_LANGUAGE.get(RevisionKind(kind), "") or _language_of(locked, kind),
            parent=parent,
            author=author,
            author_label=author_label or (author.username if author else ""),
            origin=origin,
            origin_index=origin_index,
            provenance=provenance or {},
        )
        Sample.objects.filter(pk=locked.pk).update(revision_count=F("revision_count") + 1, updated_at=timezone.now())
        if kind in REVIEWED_KINDS:
            _invalidate_approvals(locked, revision, author)
    sample.refresh_from_db(fields=["revision_count", "updated_at", "status"])
    return revision


def _language_of(sample: Sample, kind: str) -> str:
    if kind == RevisionKind.REFERENCE:
        return sample.reference_language
    if kind == RevisionKind.CANDIDATE:
        return sample.target_language
    return ""


def _invalidate_approvals(sample: Sample, revision: Revision, author: User | None) -> None:
    stale = Review.objects.filter(sample=sample, verdict=Verdict.APPROVE, stale=False).update(stale=True)
    if sample.status == SampleStatus.APPROVED:
        Sample.objects.filter(pk=sample.pk, status=SampleStatus.APPROVED).update(status=SampleStatus.IN_REVIEW)
        audit_record(
            action="approval_stale",
            sample=sample,
            actor=author,
            from_state=SampleStatus.APPROVED,
            to_state=SampleStatus.IN_REVIEW,
            data={"revision_id": revision.pk, "kind": revision.kind, "stale_reviews": stale},
        )
