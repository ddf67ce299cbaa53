"""The chat panel of the sample page (the LLM area extends it)."""

from __future__ import annotations

from typing import Any

from django import template

from annotations.models import ChatThread, Sample

register = template.Library()


@register.inclusion_tag("chat/_panel.html", takes_context=True)
def chat_panel(context: dict[str, Any], sample: Sample) -> dict[str, Any]:
    threads = ChatThread.objects.filter(sample=sample).prefetch_related("messages")
    return {"sample": sample, "threads": threads, "user": context["user"]}
