"""Kernel extraction runs (issue 3, extractor half) and the kernels they found.

A run is one archive upload or one server directory, extracted in the
background by `annotations.jobs.extraction`. Each kernel found is a row so the
results page filters in the database and remembers which kernels were imported.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models

from annotations.models.ingest import JobState


class ExtractionSourceKind(models.TextChoices):
    UPLOAD = "upload", "Uploaded archive"
    SERVER_DIR = "server_dir", "Server directory"
    COMMAND = "command", "Command line"


class KernelExtraction(models.Model):
    # The name task ids use: the archive's stem or the directory's name.
    source_name = models.CharField(max_length=255)
    source_kind = models.CharField(max_length=16, choices=ExtractionSourceKind.choices)
    # Server-side path of the stored upload or of the chosen directory.
    path = models.CharField(max_length=1024)
    # {"min_lines": 5, "max_lines": 300, "compile": true}
    options = models.JSONField(default=dict, blank=True)
    state = models.CharField(max_length=12, choices=JobState.choices, default=JobState.QUEUED)
    stage = models.CharField(max_length=16, blank=True)  # "parse" | "compile" while running
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    files_scanned = models.PositiveIntegerField(default=0)
    files_ignored = models.PositiveIntegerField(default=0)
    kernel_count = models.PositiveIntegerField(default=0)
    # [{"file": "a.cu", "line": 3, "message": "...", "severity": "warning"}]
    problems = models.JSONField(default=list, blank=True)
    missing_includes = models.JSONField(default=list, blank=True)
    # {"parse": 1.2, "compile": 30.1, "total": 31.5}
    seconds = models.JSONField(default=dict, blank=True)
    message = models.TextField(blank=True)
    rq_job_id = models.CharField(max_length=64, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"extraction {self.pk} of {self.source_name}"

    @property
    def finished(self) -> bool:
        return self.state in (JobState.DONE, JobState.FAILED)

    @property
    def percent(self) -> int:
        if not self.progress_total:
            return 0
        return min(100, round(100 * self.progress_done / self.progress_total))


class ExtractedKernel(models.Model):
    extraction = models.ForeignKey(KernelExtraction, on_delete=models.CASCADE, related_name="kernels")
    name = models.CharField(max_length=255)
    qualified_name = models.CharField(max_length=512)
    file = models.CharField(max_length=1024)
    start_line = models.PositiveIntegerField()
    end_line = models.PositiveIntegerField()
    lines = models.PositiveIntegerField()
    language = models.CharField(max_length=8)  # cuda | hip
    is_template = models.BooleanField(default=False)
    flags = models.JSONField(default=list, blank=True)
    # None: not checked (no compiler or disabled).
    compiles = models.BooleanField(null=True)
    # The extractor's whole record for this kernel (see docs/extraction.md).
    data = models.JSONField(default=dict)
    task_id = models.CharField(max_length=255)
    sample = models.ForeignKey(
        "annotations.Sample", null=True, blank=True, on_delete=models.SET_NULL, related_name="extracted_from"
    )

    class Meta:
        ordering = ["file", "start_line", "name"]
        indexes = [models.Index(fields=["extraction", "file", "start_line"])]

    def __str__(self) -> str:
        return f"{self.file}:{self.start_line} {self.name}"

    def record(self) -> dict[str, Any]:
        return dict(self.data)
