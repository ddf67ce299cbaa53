"""The runs panel of the sample page (the verification area extends it)."""

from __future__ import annotations

from typing import Any

from django import template

from annotations.models import Sample
from annotations.selectors.samples import sample_runs

register = template.Library()


@register.inclusion_tag("runs/_panel.html", takes_context=True)
def runs_panel(context: dict[str, Any], sample: Sample) -> dict[str, Any]:
    return {
        "sample": sample,
        "runs": sample_runs(sample, imported=False),
        "imported_runs": sample_runs(sample, imported=True),
        "user": context["user"],
        "csrf_token": context.get("csrf_token"),
    }
