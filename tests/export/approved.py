"""Approved samples for the export tests, made through the review service.

The run is recorded the way a finished verification records it (a passing Run
with the exact revisions it used); the approval itself is
`annotations.services.reviews.review_record`, so the covered revisions and
the run are chosen by the review rules, not by this file.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.utils import timezone

from annotations.models import Review, Run, RunRevision, Sample, SampleStatus, User
from annotations.models.review import Verdict
from annotations.models.runs import RunStatus
from annotations.selectors.reviews import RUN_KINDS, current_revisions
from annotations.services.reviews import CHECKLIST_KEYS, review_record, review_submit_for_review
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
    sample.refresh_from_db()
    current = {kind: rev for kind, rev in current_revisions(sample, RUN_KINDS).items()}
    run = Run.objects.create(
        sample=sample,
        backend=backend,
        status=RunStatus.PASSED,
        call_ok=True,
        exe_ok=True,
        perf_ok=speedup is not None,
        speedup=speedup,
        device=device,
        emulated=backend == "cuda",
        toolchain={"torch": "2.13.0"},
        finished_at=at or timezone.now(),
    )
    for kind, rev in current.items():
        RunRevision.objects.create(run=run, revision=rev, kind=kind)
    if sample.status in (SampleStatus.DRAFT, SampleStatus.CHANGES_REQUESTED):
        review_submit_for_review(sample=sample, actor=reviewer)
    review = review_record(
        sample=sample,
        reviewer=reviewer,
        verdict=Verdict.APPROVE,
        checklist=dict.fromkeys(CHECKLIST_KEYS, True),
        seen_status=sample.status,
        seen_revision_count=sample.revision_count,
    )
    if at is not None:
        Review.objects.filter(pk=review.pk).update(created_at=at)
    return review


def approved_sample(
    task_id: str,
    reviewer: User,
    *,
    kinds: dict[str, str] | None = None,
    at: dt.datetime | None = None,
    backend: str = "cuda",
    **fields: Any,
) -> Sample:
    fields.setdefault("entry_point", "add_wrapper")
    fields.setdefault("reference_language", "triton")
    fields.setdefault("target_language", "hip")
    sample = make_sample(task_id, kinds=kinds if kinds is not None else dict(DEFAULT_KINDS), **fields)
    approve(sample, reviewer, at=at, backend=backend)
    sample.refresh_from_db()
    return sample


__all__ = ["add_revision", "approve", "approved_sample"]
