from __future__ import annotations

import uuid
from typing import Any, NoReturn

from django.conf import settings
from django.db import models

from annotations.models.ingest import JobState


class ImmutableSnapshotError(Exception):
    """A finished snapshot is never changed or removed: its files are what was published."""


class ExportSnapshot(models.Model):
    """One export: queued -> running -> done | failed.

    Its files live in DATA_DIR/exports/<public_id>/. Once `done`, the row and
    the files never change (save() and delete() refuse); state moves forward
    only through conditional updates in annotations.services.exports.
    """

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    name = models.CharField(max_length=128)
    # Canonical filters (annotations.services.exports.ExportFilters.as_dict()).
    filters = models.JSONField(default=dict, blank=True)
    layouts = models.JSONField(default=list, blank=True)
    state = models.CharField(max_length=12, choices=JobState.choices, default=JobState.QUEUED)
    # Matching samples when queued; rows written once done.
    sample_count = models.PositiveIntegerField(default=0)
    # Approved samples that matched but could not become rows: [{"task_id", "reason"}].
    skipped = models.JSONField(default=list, blank=True)
    # Directory under DATA_DIR/exports holding the files; never changed once done.
    directory = models.CharField(max_length=1024, blank=True)
    # The manifest's list: [{"path", "sha256", "bytes"}], sorted by path.
    files = models.JSONField(default=list, blank=True)
    manifest_sha256 = models.CharField(max_length=64, blank=True)
    generator = models.CharField(max_length=64, blank=True)
    # Derived from the data (newest approval), as written into the manifest.
    data_created_at = models.CharField(max_length=40, blank=True)
    message = models.TextField(blank=True)
    rq_job_id = models.CharField(max_length=64, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"export {self.name} ({self.state})"

    @property
    def is_finished(self) -> bool:
        return self.state in (JobState.DONE, JobState.FAILED)

    @property
    def filters_display(self) -> str:
        """`tags=gemm,fp16 · target=hip`, or "" when every approved sample was taken."""
        parts = []
        for key, value in sorted(self.filters.items()):
            shown = ",".join(str(v) for v in value) if isinstance(value, list) else str(value)
            parts.append(f"{key}={shown}")
        return " · ".join(parts)

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding and self.pk is not None:
            stored = type(self).objects.filter(pk=self.pk).values_list("state", flat=True).first()
            if stored == JobState.DONE:
                raise ImmutableSnapshotError("a finished snapshot never changes; export a new one")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> NoReturn:  # type: ignore[override]
        raise ImmutableSnapshotError("snapshots are kept: a published dataset must stay reproducible")
