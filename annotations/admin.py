from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from django.http import HttpRequest

from annotations.models import (
    AuditEvent,
    ChatMessage,
    ChatThread,
    Comment,
    ExportSnapshot,
    ImportBatch,
    Review,
    Revision,
    Run,
    Sample,
    Tag,
    User,
)


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    list_display = ("username", "email", "role", "is_active", "is_staff")
    list_filter = ("role", "is_active", "is_staff")
    fieldsets = (*BaseUserAdmin.fieldsets, ("Kernel Studio", {"fields": ("role",)}))  # type: ignore[misc]


@admin.register(Sample)
class SampleAdmin(admin.ModelAdmin):
    list_display = ("task_id", "kernel_name", "source", "status", "latest_run_outcome", "assignee", "updated_at")
    list_filter = ("status", "source", "reference_language", "target_language", "latest_run_outcome")
    search_fields = ("task_id", "kernel_name")
    raw_id_fields = ("assignee",)
    # Status moves only through the review services (rules, audit trail): never by hand here.
    readonly_fields = ("status", "revision_count")


class ReadOnlyAdmin(admin.ModelAdmin):
    """Immutable records: visible to maintainers, never editable or deletable here."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Revision)
class RevisionAdmin(ReadOnlyAdmin):
    list_display = ("sample", "kind", "seq", "origin", "author_label", "created_at")
    list_filter = ("kind", "origin")
    search_fields = ("sample__task_id", "sha256")


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "sample", "actor", "action", "from_state", "to_state")
    list_filter = ("action",)


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("pk", "sample", "backend", "status", "imported", "speedup", "created_at")
    list_filter = ("backend", "status", "imported")
    raw_id_fields = ("sample", "requested_by", "batch", "thread")
    exclude = ("revisions",)


@admin.register(Review)
class ReviewAdmin(ReadOnlyAdmin):
    """Verdicts are recorded only by annotations.services.reviews, which enforces the review rules."""

    list_display = ("created_at", "sample", "reviewer", "verdict", "stale")
    list_filter = ("verdict", "stale")


admin.site.register([Tag, ChatThread, ChatMessage, Comment, ImportBatch, ExportSnapshot])
