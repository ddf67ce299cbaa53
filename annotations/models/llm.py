"""LLM endpoints a maintainer overrides, and generation jobs with their items."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotations.models.samples import Sample


class EndpointOverride(models.Model):
    """A maintainer's override of one named endpoint; blank fields keep the environment's value.

    The key is stored so the maintainer need not restart with new environment
    variables; it is never rendered back (the page says only "set" / "not set")
    and never put in a job payload: jobs resolve endpoints by name.
    """

    name = models.CharField(max_length=40, unique=True)
    base_url = models.CharField(max_length=500, blank=True)
    model = models.CharField(max_length=200, blank=True)
    api_key = models.TextField(blank=True)
    timeout_s = models.FloatField(null=True, blank=True)
    max_tokens = models.PositiveIntegerField(null=True, blank=True)
    temperature = models.FloatField(null=True, blank=True)
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"LLM endpoint override {self.name}"


class GenerationWhat(models.TextChoices):
    WRAPPER_TEST = "wrapper-test", "Wrapper and test (two-stage)"
    HIP = "hip", "HIP candidate"
    INSTRUCTION = "instruction", "Instruction"
    PRE_EVAL = "pre-eval", "Pre-evaluation"


class GenerationJob(models.Model):
    what = models.CharField(max_length=16, choices=GenerationWhat.choices)
    endpoint = models.CharField(max_length=40, default="default")
    # At most this many items are in flight at once (each finished item queues the next).
    concurrency = models.PositiveSmallIntegerField(default=2)
    selection = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"generation job {self.pk} ({self.what})"


class ItemStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"
    SKIPPED = "skipped", "Skipped"


class GenerationItem(models.Model):
    job = models.ForeignKey(GenerationJob, on_delete=models.CASCADE, related_name="items")
    sample = models.ForeignKey(Sample, on_delete=models.CASCADE, related_name="generation_items")
    status = models.CharField(max_length=8, choices=ItemStatus.choices, default=ItemStatus.PENDING)
    error = models.TextField(blank=True)
    usage = models.JSONField(default=dict, blank=True)
    # Ids of the revisions (or pre-eval attempt) this item produced.
    results = models.JSONField(default=dict, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "sample"], name="generation_item_unique")]
        indexes = [models.Index(fields=["job", "status"])]

    def __str__(self) -> str:
        return f"generation item {self.pk}: {self.sample_id} {self.status}"


class PreEvalAttempt(models.Model):
    """A different model's attempt at the task from the instruction alone (BigCodeBench stage 3).

    Kept apart from the revisions so it never becomes the sample's candidate;
    reviewers see it, and its verification run, on the sample page.
    """

    sample = models.ForeignKey(Sample, on_delete=models.CASCADE, related_name="pre_eval_attempts")
    instruction = models.ForeignKey("annotations.Revision", null=True, on_delete=models.PROTECT, related_name="+")
    content = models.TextField()
    language = models.CharField(max_length=16, blank=True)
    model = models.CharField(max_length=200, blank=True)
    provenance = models.JSONField(default=dict, blank=True)
    run = models.ForeignKey("annotations.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # Why the attempt could not be verified (e.g. the sample has no test yet).
    verify_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
