"""Reads for exports: which samples a snapshot takes, streamed as plain data.

"Approved" means: the sample's status is approved and it has at least one
valid (non-stale) approving review. The revisions exported are exactly the
ones those approvals cover (newest covered revision per kind), never simply
the newest revisions. Samples stream in task_id order (byte order on every
database, so SQLite and PostgreSQL give the same files), in chunks whose
related rows are fetched with one query per table.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import islice
from typing import Any

from django.db import connection
from django.db.models import Count, Exists, F, IntegerField, OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce, Collate

from annotations.models import Review, Revision, Run, Sample, SampleStatus
from annotations.models.review import Verdict
from annotations.models.runs import Backend, RunStatus
from annotations.models.samples import Language
from pipeline.export.rows import ArtifactData, ExportInput

DEFAULT_CHUNK = 500


class InvalidFilters(ValueError):
    """A filter value that makes no sense; the message names the filter."""


@dataclass(frozen=True)
class ExportFilters:
    tags: tuple[str, ...] = ()
    language: str = ""
    target: str = ""
    # Only samples whose approving run passed on this backend.
    backend: str = ""
    difficulty_min: int | None = None
    difficulty_max: int | None = None
    min_reviewers: int | None = None
    approved_since: dt.date | None = None
    approved_until: dt.date | None = None

    def as_dict(self) -> dict[str, Any]:
        """Only the filters that are set, JSON-ready: this goes into the manifest."""
        out: dict[str, Any] = {}
        if self.tags:
            out["tags"] = list(self.tags)
        for key in ("language", "target", "backend"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        for key in ("difficulty_min", "difficulty_max", "min_reviewers"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        for key in ("approved_since", "approved_until"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key).isoformat()
        return out


def _int(data: Mapping[str, Any], key: str, low: int, high: int) -> int | None:
    raw = data.get(key)
    if raw is None or str(raw).strip() == "":
        return None
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise InvalidFilters(f"{key}: {str(raw)[:40]!r} is not a whole number") from None
    if not low <= value <= high:
        raise InvalidFilters(f"{key}: {value} is outside {low}..{high}")
    return value


def _date(data: Mapping[str, Any], key: str) -> dt.date | None:
    raw = data.get(key)
    if raw is None or str(raw).strip() == "":
        return None
    try:
        return dt.date.fromisoformat(str(raw).strip())
    except ValueError:
        raise InvalidFilters(f"{key}: {str(raw)[:40]!r} is not a date (YYYY-MM-DD)") from None


def _choice(data: Mapping[str, Any], key: str, choices: list[str]) -> str:
    value = str(data.get(key) or "").strip()
    if value and value not in choices:
        raise InvalidFilters(f"{key}: {value[:40]!r} is not one of {', '.join(choices)}")
    return value


# The filter names the form, the command line and the parser share.
FILTER_FIELDS = (
    "tags",
    "language",
    "target",
    "backend",
    "difficulty_min",
    "difficulty_max",
    "min_reviewers",
    "approved_since",
    "approved_until",
)


def parse_export_filters(data: Mapping[str, Any]) -> ExportFilters:
    """From form or command-line values (strings; tags comma-separated or a list)."""
    unknown = sorted(set(data) - set(FILTER_FIELDS))
    if unknown:
        raise InvalidFilters(f"unknown filter(s): {', '.join(unknown)}")
    raw_tags = data.get("tags") or []
    if isinstance(raw_tags, str):
        raw_tags = raw_tags.split(",")
    # Tags are stored lower-case (sample_set_tags); match them the same way.
    tags = tuple(sorted({str(t).strip().lower() for t in raw_tags if str(t).strip()}))
    filters = ExportFilters(
        tags=tags,
        language=_choice(data, "language", list(Language.values)),
        target=_choice(data, "target", list(Language.values)),
        backend=_choice(data, "backend", list(Backend.values)),
        difficulty_min=_int(data, "difficulty_min", 0, 100),
        difficulty_max=_int(data, "difficulty_max", 0, 100),
        min_reviewers=_int(data, "min_reviewers", 1, 100),
        approved_since=_date(data, "approved_since"),
        approved_until=_date(data, "approved_until"),
    )
    if (
        filters.difficulty_min is not None
        and filters.difficulty_max is not None
        and filters.difficulty_min > filters.difficulty_max
    ):
        raise InvalidFilters("difficulty_min is greater than difficulty_max")
    if filters.approved_since and filters.approved_until and filters.approved_since > filters.approved_until:
        raise InvalidFilters("approved_since is after approved_until")
    return filters


def _valid_approvals() -> QuerySet[Review]:
    return Review.objects.filter(verdict=Verdict.APPROVE, stale=False)


def _byte_order(field: str) -> Collate:
    # PostgreSQL's default collation is the locale's ("a-b" vs "a_b" order
    # depends on it); "C" is byte order, which is SQLite's BINARY default.
    return Collate(F(field), "C" if connection.vendor == "postgresql" else "BINARY")


def approved_samples(filters: ExportFilters) -> QuerySet[Sample]:
    approvals = _valid_approvals().filter(sample=OuterRef("pk"))
    qs = Sample.objects.filter(status=SampleStatus.APPROVED).filter(Exists(approvals))
    for tag in filters.tags:
        qs = qs.filter(tags__name=tag)
    if filters.language:
        qs = qs.filter(reference_language=filters.language)
    if filters.target:
        qs = qs.filter(target_language=filters.target)
    if filters.difficulty_min is not None:
        qs = qs.filter(difficulty__gte=filters.difficulty_min)
    if filters.difficulty_max is not None:
        qs = qs.filter(difficulty__lte=filters.difficulty_max)
    if filters.backend:
        qs = qs.filter(Exists(approvals.filter(run__backend=filters.backend, run__status=RunStatus.PASSED)))
    if filters.min_reviewers is not None:
        reviewers = (
            _valid_approvals()
            .filter(sample=OuterRef("pk"))
            .order_by()
            .values("sample")
            .annotate(n=Count("reviewer", distinct=True))
            .values("n")
        )
        qs = qs.annotate(
            valid_reviewers=Coalesce(Subquery(reviewers, output_field=IntegerField()), Value(0))
        ).filter(valid_reviewers__gte=filters.min_reviewers)
    if filters.approved_since or filters.approved_until:
        newest = approvals.order_by("-created_at").values("created_at")[:1]
        qs = qs.annotate(approved_at=Subquery(newest))
        if filters.approved_since:
            start = dt.datetime.combine(filters.approved_since, dt.time.min, tzinfo=dt.UTC)
            qs = qs.filter(approved_at__gte=start)
        if filters.approved_until:
            end = dt.datetime.combine(
                filters.approved_until + dt.timedelta(days=1), dt.time.min, tzinfo=dt.UTC
            )
            qs = qs.filter(approved_at__lt=end)
    return qs.distinct().order_by(_byte_order("task_id"))


def count_matching(filters: ExportFilters) -> int:
    return approved_samples(filters).count()


def _iso(value: dt.datetime | None) -> str:
    return value.astimezone(dt.UTC).isoformat() if value else ""


_SAMPLE_FIELDS = (
    "pk",
    "task_id",
    "entry_point",
    "kernel_name",
    "reference_language",
    "target_language",
    "source",
    "provenance",
    "difficulty",
)


def _verification(run: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if run is None:
        return None
    return {
        "run_id": str(run["public_id"]),
        "backend": run["backend"],
        "device": run["device"],
        "emulated": run["emulated"],
        "status": run["status"],
        "call_ok": run["call_ok"],
        "exe_ok": run["exe_ok"],
        "perf_ok": run["perf_ok"],
        "speedup": run["speedup"],
        "speedup_flagged": run["speedup_flagged"],
        "toolchain": run["toolchain"],
        "caveats": run["caveats"],
        "finished_at": _iso(run["finished_at"]),
    }


def _chunk_inputs(rows: list[dict[str, Any]]) -> Iterator[ExportInput]:
    ids = [row["pk"] for row in rows]
    approvals: list[dict[str, Any]] = [
        dict(a)
        for a in _valid_approvals()
        .filter(sample_id__in=ids)
        .order_by("sample_id", "-created_at", "-id")
        .values("id", "sample_id", "reviewer__username", "created_at", "run_id")
    ]
    covered = list(
        Review.revisions.through.objects.filter(review_id__in=[a["id"] for a in approvals]).values_list(
            "review_id", "revision_id"
        )
    )
    revisions = {
        r["id"]: r
        for r in Revision.objects.filter(pk__in={rev for _, rev in covered}).values(
            "id", "sample_id", "kind", "seq", "content", "sha256", "language"
        )
    }
    run_ids = {a["run_id"] for a in approvals if a["run_id"]}
    runs = {
        r["id"]: r
        for r in Run.objects.filter(pk__in=run_ids).values(
            "id",
            "public_id",
            "backend",
            "device",
            "emulated",
            "status",
            "call_ok",
            "exe_ok",
            "perf_ok",
            "speedup",
            "speedup_flagged",
            "toolchain",
            "caveats",
            "finished_at",
        )
    }
    tags: dict[int, list[str]] = defaultdict(list)
    for sample_id, name in Sample.tags.through.objects.filter(sample_id__in=ids).values_list(
        "sample_id", "tag__name"
    ):
        tags[sample_id].append(name)

    approvals_by_sample: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for approval in approvals:
        approvals_by_sample[approval["sample_id"]].append(approval)
    covered_by_review: dict[int, list[int]] = defaultdict(list)
    for review_id, revision_id in covered:
        covered_by_review[review_id].append(revision_id)

    for row in rows:
        mine = approvals_by_sample.get(row["pk"], [])  # newest first
        artifacts: dict[str, ArtifactData] = {}
        best_seq: dict[str, int] = {}
        for approval in mine:
            for revision_id in covered_by_review.get(approval["id"], []):
                rev = revisions[revision_id]
                if rev["sample_id"] != row["pk"]:
                    continue  # a review can only cover its own sample's revisions; be strict anyway
                if rev["seq"] > best_seq.get(rev["kind"], 0):
                    best_seq[rev["kind"]] = rev["seq"]
                    artifacts[rev["kind"]] = ArtifactData(
                        revision_id=rev["id"],
                        kind=rev["kind"],
                        content=rev["content"],
                        sha256=rev["sha256"],
                        language=rev["language"],
                    )
        run = next((runs[a["run_id"]] for a in mine if a["run_id"] in runs), None)
        yield ExportInput(
            sample_id=row["pk"],
            task_id=row["task_id"],
            entry_point=row["entry_point"],
            reference_language=row["reference_language"],
            target_language=row["target_language"],
            kernel_name=row["kernel_name"],
            source=row["source"],
            provenance=row["provenance"] or {},
            tags=sorted(tags.get(row["pk"], [])),
            difficulty=row["difficulty"],
            artifacts=artifacts,
            verification=_verification(run),
            reviewers=sorted({a["reviewer__username"] for a in mine}),
            approved_at=_iso(mine[0]["created_at"]) if mine else "",
        )


def export_inputs(filters: ExportFilters, *, chunk_size: int = DEFAULT_CHUNK) -> Iterator[ExportInput]:
    """Stream the matching samples as ExportInput, `chunk_size` samples per round of queries."""
    rows = approved_samples(filters).values(*_SAMPLE_FIELDS).iterator(chunk_size=chunk_size)
    while True:
        chunk = list(islice(rows, chunk_size))
        if not chunk:
            return
        yield from _chunk_inputs(chunk)
