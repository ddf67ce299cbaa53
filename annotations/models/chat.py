from __future__ import annotations

from django.conf import settings
from django.db import models

from annotations.models.samples import Sample


class ChatThread(models.Model):
    sample = models.ForeignKey(Sample, on_delete=models.PROTECT, related_name="threads")
    title = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]


class MessageRole(models.TextChoices):
    SYSTEM = "system", "System"
    USER = "user", "User"
    ASSISTANT = "assistant", "Assistant"
    TOOL = "tool", "Tool"


class MessageState(models.TextChoices):
    COMPLETE = "complete", "Complete"
    STREAMING = "streaming", "Streaming"
    STOPPED = "stopped", "Stopped"
    FAILED = "failed", "Failed"


class ChatMessage(models.Model):
    thread = models.ForeignKey(ChatThread, on_delete=models.CASCADE, related_name="messages")
    role = models.CharField(max_length=12, choices=MessageRole.choices)
    content = models.TextField(blank=True)
    state = models.CharField(max_length=12, choices=MessageState.choices, default=MessageState.COMPLETE)
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    model = models.CharField(max_length=128, blank=True)
    usage = models.JSONField(default=dict, blank=True)
    # What context went into the request (parts included, token estimate).
    context = models.JSONField(default=dict, blank=True)
    # Edit-and-resend and regenerate keep the old message and point at it.
    replaces = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    run = models.ForeignKey("annotations.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
