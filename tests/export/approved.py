"""Approved samples for the export tests.

Approvals are made by the review service when it exists; until then (the
review area is built in parallel) this writes the Review row the way that
service does: verdict approve, the exact current revisions it covers and a
passing run of exactly those. Revisions always go through revision_create.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.utils import timezone

from annotations.models import Review, Run, RunRevision, Sample, SampleStatus, User
from annotations.models.review import Verdict
from annotations.models.runs import RunStatus
from tests.export.kernels import HIP_CANDIDATE, INSTRUCTION, TRITON_REFERENCE, TRITON_TEST
from tests.factories import add_revision, make_sample

DEFAULT_KINDS = {
    "reference": TRITON_REFERENCE,
    "instruction": INSTRUCTION,
    "candidate": HIP_CANDIDATE,
    "test": TRITON_TEST,
}


def approve(
    sample: Sample,
    reviewer: User,
    *,
    backend: str = "cuda",
    speedup: float | None = 1.25,
    device: str = "NVIDIA H200",
    at: dt.datetime | None = None,
) -> Review:
    current = {}
    for rev in sample.revisions.order_by("kind", "-seq"):
        current.setdefault(rev.kind, rev)
    run = Run.objects.create(
        sample=sample, backend=backend, status=RunStatus.PASSED, call_ok=True, exe_ok=True,
        perf_ok=speedup is not None, speedup=speedup, device=device, emulated=backend == "cuda",
        toolchain={"torch": "2.13.0"}, finished_at=at or timezone.now(),
    )
    for kind, rev in current.items():
        RunRevision.objects.create(run=run, revision=rev, kind=kind)
    review = Review.objects.create(sample=sample, reviewer=reviewer, verdict=Verdict.APPROVE, run=run)
    review.revisions.set(current.values())
    if at is not None:
        Review.objects.filter(pk=review.pk).update(created_at=at)
    Sample.objects.filter(pk=sample.pk).update(status=SampleStatus.APPROVED)
    return review


def approved_sample(task_id: str, reviewer: User, *, kinds: dict[str, str] | None = None,
                    at: dt.datetime | None = None, backend: str = "cuda", **fields: Any) -> Sample:
    fields.setdefault("entry_point", "add_wrapper")
    fields.setdefault("reference_language", "triton")
    fields.setdefault("target_language", "hip")
    sample = make_sample(task_id, kinds=kinds if kinds is not None else dict(DEFAULT_KINDS), **fields)
    approve(sample, reviewer, at=at, backend=backend)
    sample.refresh_from_db()
    return sample


__all__ = ["add_revision", "approve", "approved_sample"]
