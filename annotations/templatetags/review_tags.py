"""Review panels of the sample page: the review box (status, actions, comments, audit trail) and the workspace."""

from __future__ import annotations

from typing import Any

from django import template
from django.conf import settings

from annotations.access import Capability, user_can
from annotations.models import Sample
from annotations.selectors import reviews as selectors
from annotations.services.reviews import SUBMITTABLE

register = template.Library()


@register.inclusion_tag("review/_panel.html", takes_context=True)
def review_panel(context: dict[str, Any], sample: Sample) -> dict[str, Any]:
    user = context["user"]
    reviews = selectors.reviews(sample)
    return {
        "sample": sample,
        "user": user,
        "request": context.get("request"),
        "csrf_token": context.get("csrf_token"),
        "reviews": reviews,
        "latest_verdict": reviews[0] if reviews else None,
        "approvals": list(selectors.active_approvals(sample)),
        "required_approvals": settings.REVIEW_REQUIRED_APPROVALS,
        "assignment": selectors.active_assignment(sample),
        "comments": selectors.comments(sample),
        "events": selectors.audit_trail(sample, limit=50),
        "can_submit": user_can(user, Capability.ANNOTATE) and sample.status in SUBMITTABLE,
        "can_review": user_can(user, Capability.REVIEW),
    }


@register.inclusion_tag("review/_workspace.html", takes_context=True)
def workspace_panel(context: dict[str, Any], sample: Sample) -> dict[str, Any]:
    """Everything about a sample's history in one place: every revision of every kind in order
    (initial, call fixes, exe fixes, perf candidates...), notes and reflections, and error logs."""
    return {
        "sample": sample,
        "history": selectors.workspace_history(sample),
        "notes": selectors.notes(sample),
        "error_runs": selectors.error_runs(sample),
    }
