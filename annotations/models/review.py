from __future__ import annotations

from django.conf import settings
from django.db import models

from annotations.models.samples import Revision, Sample


class Verdict(models.TextChoices):
    APPROVE = "approve", "Approve"
    REQUEST_CHANGES = "request_changes", "Request changes"
    REJECT = "reject", "Reject"


class ReviewAssignment(models.Model):
    sample = models.ForeignKey(Sample, on_delete=models.CASCADE, related_name="review_assignments")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="review_assignments")
    assigned_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)


class Review(models.Model):
    sample = models.ForeignKey(Sample, on_delete=models.PROTECT, related_name="reviews")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="reviews")
    verdict = models.CharField(max_length=16, choices=Verdict.choices)
    checklist = models.JSONField(default=dict, blank=True)
    comment = models.TextField(blank=True)
    # The exact revisions the verdict covers, and the passing run of exactly those.
    revisions = models.ManyToManyField(Revision, related_name="reviews", blank=True)
    run = models.ForeignKey("annotations.Run", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    # An approval goes stale when a new revision lands.
    stale = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]


class Comment(models.Model):
    sample = models.ForeignKey(Sample, on_delete=models.PROTECT, related_name="comments")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="replies")
    body = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]


class AuditEvent(models.Model):
    """Every state change, with who and when."""

    sample = models.ForeignKey(Sample, null=True, blank=True, on_delete=models.PROTECT, related_name="audit_events")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    action = models.CharField(max_length=64)
    from_state = models.CharField(max_length=24, blank=True)
    to_state = models.CharField(max_length=24, blank=True)
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["sample", "-created_at"])]
