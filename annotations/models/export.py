from __future__ import annotations

from django.conf import settings
from django.db import models

from annotations.models.ingest import JobState


class ExportSnapshot(models.Model):
    name = models.CharField(max_length=128)
    filters = models.JSONField(default=dict, blank=True)
    layouts = models.JSONField(default=list, blank=True)
    state = models.CharField(max_length=12, choices=JobState.choices, default=JobState.QUEUED)
    sample_count = models.PositiveIntegerField(default=0)
    # Directory under DATA_DIR/exports holding the files; never changed once done.
    directory = models.CharField(max_length=1024, blank=True)
    manifest_sha256 = models.CharField(max_length=64, blank=True)
    message = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
