from __future__ import annotations

import hashlib
from typing import Any, NoReturn

from django.conf import settings
from django.db import models


class SampleStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    IN_REVIEW = "in_review", "In review"
    CHANGES_REQUESTED = "changes_requested", "Changes requested"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"


class Language(models.TextChoices):
    TRITON = "triton", "Triton"
    CUDA = "cuda", "CUDA"
    HIP = "hip", "HIP"
    PYTHON = "python", "Python"
    CPP = "cpp", "C++"


class RunOutcome(models.TextChoices):
    """Denormalised outcome of a sample's latest run, so the list filters by index."""

    NONE = "", "No run"
    PASSED = "passed", "Passed"
    FAILED = "failed", "Failed"
    TIMEOUT = "timeout", "Timeout"
    CRASHED = "crashed", "Crashed"
    ERROR = "error", "Error"
    LOST = "lost", "Lost"
    CANCELLED = "cancelled", "Cancelled"
    PENDING = "pending", "Queued or running"


class Tag(models.Model):
    name = models.CharField(max_length=64, unique=True)

    def __str__(self) -> str:
        return self.name


class Sample(models.Model):
    task_id = models.CharField(max_length=255, unique=True)
    # Where it came from: "tritonbench-g", "geak-rocm", an agent run's file stem, "extracted", "demo", ...
    source = models.CharField(max_length=128, db_index=True)
    kernel_name = models.CharField(max_length=255, blank=True, db_index=True)
    entry_point = models.CharField(max_length=255, blank=True)
    reference_language = models.CharField(max_length=16, choices=Language.choices, default=Language.TRITON)
    target_language = models.CharField(max_length=16, choices=Language.choices, default=Language.HIP)
    provenance = models.JSONField(default=dict, blank=True)
    tags = models.ManyToManyField(Tag, blank=True, related_name="samples")
    difficulty = models.PositiveSmallIntegerField(null=True, blank=True)
    status = models.CharField(max_length=24, choices=SampleStatus.choices, default=SampleStatus.DRAFT)
    assignee = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="assigned_samples"
    )
    latest_run_outcome = models.CharField(max_length=16, choices=RunOutcome.choices, blank=True, default="")
    # Bumped by every new revision; approvals compare against it to go stale.
    revision_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        # The list orders by (sort key, id) and pages with LIMIT/OFFSET: each index ends in the
        # id tie-breaker so the database walks it in order and stops after one page, instead of
        # sorting every match (bench/web_scale.py, docs/performance.md "Web scale").
        indexes = [
            models.Index(fields=["-updated_at", "-id"], name="sample_updated_id"),
            models.Index(fields=["status", "-updated_at", "-id"], name="sample_status_updated"),
            models.Index(fields=["latest_run_outcome", "-updated_at", "-id"], name="sample_outcome_updated"),
            models.Index(fields=["assignee", "-updated_at", "-id"], name="sample_assignee_updated"),
            models.Index(fields=["source", "-updated_at", "-id"], name="sample_source_updated"),
            models.Index(fields=["-created_at", "-id"], name="sample_created_id"),
            models.Index(fields=["status", "id"], name="sample_status_id"),
            models.Index(fields=["latest_run_outcome", "id"], name="sample_outcome_id"),
            # No index on the languages: the filter is "reference OR target is X", and with one the
            # planners collect every match and sort it (330 ms at 100,000 samples) instead of
            # walking sample_updated_id and stopping after a page (1 ms).
        ]

    def __str__(self) -> str:
        return self.task_id


class RevisionKind(models.TextChoices):
    REFERENCE = "reference", "Reference"
    INSTRUCTION = "instruction", "Instruction"
    CANDIDATE = "candidate", "Candidate"
    WRAPPER = "wrapper", "Wrapper"
    TEST = "test", "Test"
    ANALYSIS = "analysis", "Analysis"
    NOTE = "note", "Note"


class RevisionOrigin(models.TextChoices):
    INITIAL = "initial", "Initial"
    CALL_FIX = "call_fix", "Call fix"
    EXE_FIX = "exe_fix", "Exe fix"
    PERF_CANDIDATE = "perf_candidate", "Perf candidate"
    MANUAL_EDIT = "manual_edit", "Manual edit"
    CHAT = "chat", "Chat"
    GENERATED = "generated", "Generated"
    IMPORTED = "imported", "Imported"
    EXTRACTED = "extracted", "Extracted"


class ImmutableRevisionError(Exception):
    """Raised when any code path tries to change or remove a revision."""


class RevisionQuerySet(models.QuerySet["Revision"]):
    def update(self, **kwargs: Any) -> NoReturn:
        raise ImmutableRevisionError("revisions are immutable: create a new revision instead of updating")

    def delete(self) -> NoReturn:
        raise ImmutableRevisionError("revisions are immutable and are never deleted")

    def bulk_update(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise ImmutableRevisionError("revisions are immutable: create a new revision instead of updating")


def content_sha256(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


class Revision(models.Model):
    """One immutable version of one artifact of a sample.

    The model, its QuerySet and a database trigger (migration 0002) refuse
    updates; deletion is refused by the model, the QuerySet and PROTECT.
    """

    sample = models.ForeignKey(Sample, on_delete=models.PROTECT, related_name="revisions")
    kind = models.CharField(max_length=16, choices=RevisionKind.choices)
    # 1, 2, 3... within (sample, kind): the newest is the current one.
    seq = models.PositiveIntegerField()
    content = models.TextField()
    sha256 = models.CharField(max_length=64)
    # Language for highlighting and building: triton, hip, cuda, python, cpp, json, markdown, text.
    language = models.CharField(max_length=16, blank=True)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="children")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="revisions"
    )
    # "alice", "llm:<model>" or "import:<source>": who or what wrote it.
    author_label = models.CharField(max_length=128)
    origin = models.CharField(max_length=24, choices=RevisionOrigin.choices, default=RevisionOrigin.INITIAL)
    # n for "perf candidate n"; 0 otherwise.
    origin_index = models.PositiveSmallIntegerField(default=0)
    # Prompt template and version, model, token usage, chat message id, import batch, file lines...
    provenance = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = RevisionQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["sample", "kind", "seq"], name="revision_seq_unique")]
        indexes = [models.Index(fields=["sample", "kind", "-seq"])]
        ordering = ["sample_id", "kind", "seq"]

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise ImmutableRevisionError("revisions are immutable: create a new revision instead of saving")
        self.sha256 = content_sha256(self.content)
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise ImmutableRevisionError("revisions are immutable and are never deleted")

    @property
    def origin_display(self) -> str:
        if self.origin == RevisionOrigin.PERF_CANDIDATE:
            return f"Perf candidate {self.origin_index}"
        return self.get_origin_display()

    def __str__(self) -> str:
        return f"{self.sample_id}:{self.kind}#{self.seq}"
