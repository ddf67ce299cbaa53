from __future__ import annotations

from django.conf import settings
from django.db import models


class JobState(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class ImportBatch(models.Model):
    file_name = models.CharField(max_length=255)
    # Server-side path of the uploaded or given file.
    path = models.CharField(max_length=1024, blank=True)
    format = models.CharField(max_length=32, blank=True)
    dry_run = models.BooleanField(default=False)
    state = models.CharField(max_length=12, choices=JobState.choices, default=JobState.QUEUED)
    created = models.PositiveIntegerField(default=0)
    updated = models.PositiveIntegerField(default=0)
    unchanged = models.PositiveIntegerField(default=0)
    error_count = models.PositiveIntegerField(default=0)
    # [{"line": 12, "index": null, "field": "label", "message": "..."}]
    errors = models.JSONField(default=list, blank=True)
    processed = models.PositiveIntegerField(default=0)
    # Bytes read / file size: a progress measure that works while streaming.
    progress_bytes = models.BigIntegerField(default=0)
    total_bytes = models.BigIntegerField(default=0)
    message = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
