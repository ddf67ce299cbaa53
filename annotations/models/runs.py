from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from annotations.models.samples import Revision, Sample


class Backend(models.TextChoices):
    ROCM = "rocm", "ROCm (AMD GPU)"
    CUDA = "cuda", "CUDA (NVIDIA GPU, HIP emulated)"
    CPU = "cpu", "CPU (Triton interpreter)"


class RunStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    PASSED = "passed", "Passed"
    FAILED = "failed", "Failed"
    TIMEOUT = "timeout", "Timeout"
    CRASHED = "crashed", "Crashed"
    ERROR = "error", "Error"
    LOST = "lost", "Lost"
    CANCELLED = "cancelled", "Cancelled"


FINISHED_RUN_STATUSES = frozenset(
    {RunStatus.PASSED, RunStatus.FAILED, RunStatus.TIMEOUT, RunStatus.CRASHED, RunStatus.ERROR,
     RunStatus.LOST, RunStatus.CANCELLED}
)


class VerificationBatch(models.Model):
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    backend = models.CharField(max_length=8, choices=Backend.choices)
    # The filters or explicit task ids it was made from, for the progress page.
    selection = models.JSONField(default=dict, blank=True)
    total = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)


class Run(models.Model):
    """One verification of a sample on one backend, or one imported from an agent's log."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    sample = models.ForeignKey(Sample, on_delete=models.PROTECT, related_name="runs")
    revisions = models.ManyToManyField(Revision, through="RunRevision", related_name="runs")
    backend = models.CharField(max_length=8, choices=Backend.choices)
    status = models.CharField(max_length=12, choices=RunStatus.choices, default=RunStatus.QUEUED)
    # Imported runs come from an agent's _mem.json: shown apart, never mistaken for ours.
    imported = models.BooleanField(default=False)
    # "verify" for ordinary runs; "pre-eval" for a pre-evaluation attempt.
    purpose = models.CharField(max_length=16, default="verify")
    # Per stage: {"call": {"ok": bool|None, "message": str, "seconds": float}, "exe": ..., "perf": ...}
    stages = models.JSONField(default=dict, blank=True)
    call_ok = models.BooleanField(null=True)
    exe_ok = models.BooleanField(null=True)
    perf_ok = models.BooleanField(null=True)
    failed_stage = models.CharField(max_length=8, blank=True)
    message = models.TextField(blank=True)
    speedup = models.FloatField(null=True, blank=True)
    speedup_flagged = models.BooleanField(default=False)
    timings = models.JSONField(default=dict, blank=True)
    exit_code = models.IntegerField(null=True, blank=True)
    signal_name = models.CharField(max_length=16, blank=True)
    host = models.CharField(max_length=255, blank=True)
    device = models.CharField(max_length=255, blank=True)
    toolchain = models.JSONField(default=dict, blank=True)
    emulated = models.BooleanField(default=False)
    caveats = models.JSONField(default=list, blank=True)
    log = models.TextField(blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs"
    )
    batch = models.ForeignKey(VerificationBatch, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs")
    thread = models.ForeignKey(
        "annotations.ChatThread", null=True, blank=True, on_delete=models.SET_NULL, related_name="runs"
    )
    attempt = models.PositiveSmallIntegerField(default=1)
    # A lost run is retried once as a new run pointing back at it (history stays truthful).
    retry_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="retries")
    # Sources that are not revisions, e.g. a pre-evaluation attempt's candidate:
    # {"candidate": {"language": "hip", "code": "..."}}. Empty for ordinary runs.
    overrides = models.JSONField(default=dict, blank=True)
    rq_job_id = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["sample", "-created_at"]), models.Index(fields=["status"])]
        ordering = ["-created_at"]

    @property
    def is_finished(self) -> bool:
        return self.status in FINISHED_RUN_STATUSES

    @property
    def duration_seconds(self) -> float | None:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None

    def __str__(self) -> str:
        return f"run {self.pk} of {self.sample_id} on {self.backend}: {self.status}"


class RunRevision(models.Model):
    """The exact revisions a run used (one per kind)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE)
    revision = models.ForeignKey(Revision, on_delete=models.PROTECT)
    kind = models.CharField(max_length=16)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "kind"], name="run_revision_kind_unique")]
