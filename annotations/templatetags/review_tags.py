"""The review panel of the sample page (the review area extends it)."""

from __future__ import annotations

from typing import Any

from django import template

from annotations.models import AuditEvent, Review, Sample

register = template.Library()


@register.inclusion_tag("review/_panel.html", takes_context=True)
def review_panel(context: dict[str, Any], sample: Sample) -> dict[str, Any]:
    return {
        "sample": sample,
        "reviews": Review.objects.filter(sample=sample).select_related("reviewer")[:20],
        "events": AuditEvent.objects.filter(sample=sample).select_related("actor")[:20],
        "user": context["user"],
    }
