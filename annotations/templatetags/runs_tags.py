"""The runs panel of the sample page: run button with backend choice, live log, cancel, history."""

from __future__ import annotations

from typing import Any

from django import template
from django.conf import settings

from annotations.access import Capability, user_can
from annotations.models import Run, Sample
from annotations.models.runs import Backend, RunStatus
from annotations.selectors.samples import sample_runs

register = template.Library()


@register.inclusion_tag("runs/_panel.html", takes_context=True)
def runs_panel(context: dict[str, Any], sample: Sample) -> dict[str, Any]:
    user = context["user"]
    active = list(
        Run.objects.filter(sample=sample, imported=False, status__in=(RunStatus.QUEUED, RunStatus.RUNNING))
        .defer("log").select_related("requested_by").order_by("-created_at")[:3]
    )
    return {
        "sample": sample,
        "runs": sample_runs(sample, imported=False),
        "imported_runs": sample_runs(sample, imported=True),
        "active_runs": active,
        "backends": Backend.choices,
        "default_backend": getattr(settings, "VERIFY_DEFAULT_BACKEND", Backend.CPU),
        "can_run": user_can(user, Capability.ANNOTATE),
        "user": user,
        "csrf_token": context.get("csrf_token"),
    }
