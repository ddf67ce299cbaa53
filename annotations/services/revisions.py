"""Creating revisions: the only way artifacts change."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotations.models import Review, Revision, Sample, SampleStatus, User
from annotations.models.review import Verdict
from annotations.models.samples import RevisionKind, RevisionOrigin, content_sha256
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



@dataclass
class NewRevision:
    """A revision to insert with `revision_bulk_create_new`; `pk` and `seq` are filled in."""

    sample: Sample
    kind: str
    content: str
    author_label: str
    origin: str = RevisionOrigin.INITIAL
    origin_index: int = 0
    provenance: dict[str, Any] = field(default_factory=dict)
    language: str = ""
    author: User | None = None
    pk: int | None = None
    seq: int = 0


_KINDS = frozenset(RevisionKind.values)
_ORIGINS = frozenset(RevisionOrigin.values)
_REVISION_COLUMNS = ("sample", "kind", "seq", "content", "sha256", "language", "parent", "author", "author_label",
                     "origin", "origin_index", "provenance", "created_at")


def revision_bulk_create_new(*, revisions: list[NewRevision]) -> list[NewRevision]:
    """Insert the first revisions of samples that have none yet, in few queries (bulk import).

    Same rules as `revision_create` (kinds, origins, an author or label, sha256,
    seq numbering and parent chain per kind, default language), for samples
    created in the same transaction: there is nothing to invalidate and no
    concurrent writer can see them yet. Revisions are given in order; the
    newest of a kind becomes the current one. Bumps each sample's
    revision_count. Added by the importer (issue 3): a few multi-row INSERTs
    instead of six queries per revision.
    """
    from annotations.services.bulk_insert import insert_returning

    if not revisions:
        return []
    sample_ids = {rev.sample.pk for rev in revisions}
    if Revision.objects.filter(sample_id__in=sample_ids).exists():
        raise RevisionError("revision_bulk_create_new is only for samples without revisions")
    next_seq: dict[tuple[int, str], int] = {}
    levels: dict[int, list[NewRevision]] = {}
    for rev in revisions:
        if rev.kind not in _KINDS:
            raise RevisionError(f"unknown revision kind {rev.kind!r}")
        if rev.origin not in _ORIGINS:
            raise RevisionError(f"unknown revision origin {rev.origin!r}")
        if rev.author is None and not rev.author_label:
            raise RevisionError("a revision needs an author or an author label such as 'import:<source>'")
        key = (rev.sample.pk, rev.kind)
        rev.seq = next_seq.get(key, 0) + 1
        next_seq[key] = rev.seq
        rev.language = rev.language or DEFAULT_LANGUAGE.get(RevisionKind(rev.kind), "") or _language_of(
            rev.sample, rev.kind)
        levels.setdefault(rev.seq, []).append(rev)
    now = timezone.now()
    ids_by_key: dict[tuple[int, str, int], int] = {}
    with transaction.atomic():
        # Level by level, so each revision's parent (the previous one of its kind) has an id.
        for seq in sorted(levels):
            batch = levels[seq]
            rows = []
            for rev in batch:
                parent = ids_by_key.get((rev.sample.pk, rev.kind, seq - 1)) if seq > 1 else None
                rows.append((rev.sample.pk, rev.kind, seq, rev.content, content_sha256(rev.content), rev.language,
                             parent, rev.author.pk if rev.author else None, rev.author_label or rev.author.username
                             if rev.author else rev.author_label, rev.origin, rev.origin_index, rev.provenance, now))
            returned = insert_returning(Revision, _REVISION_COLUMNS, rows, ("id", "sample", "kind", "seq"))
            ids_by_key.update({(sample_id, kind, s): pk for pk, sample_id, kind, s in returned})
            for rev in batch:
                rev.pk = ids_by_key[(rev.sample.pk, rev.kind, seq)]
        counts: dict[int, int] = {}
        for rev in revisions:
            counts[rev.sample.pk] = counts.get(rev.sample.pk, 0) + 1
        by_count: dict[int, list[int]] = {}
        for sample_id, n in counts.items():
            by_count.setdefault(n, []).append(sample_id)
        for n, ids_with_n in by_count.items():
            Sample.objects.filter(pk__in=ids_with_n).update(revision_count=F("revision_count") + n)
    return revisions
