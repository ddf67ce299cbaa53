"""The chat panel of the sample page, and how one message is rendered.

LLM output is untrusted text. Prose is rendered escaped by the template;
fenced code blocks go through Pygments (which escapes); nothing else is ever
marked safe.
"""

from __future__ import annotations

from typing import Any

from django import template
from django.urls import reverse

from annotations.access import Capability, user_can
from annotations.highlight import highlight_code
from annotations.models import ChatMessage, ChatThread, GenerationItem, PreEvalAttempt, Sample, User
from annotations.models.chat import MessageRole, MessageState
from annotations.models.llm import GenerationWhat
from annotations.models.runs import Backend
from annotations.services import chat as chat_service
from pipeline.llm import codeblocks

register = template.Library()

_HIGHLIGHT_AS = {"py": "python", "python": "python", "triton": "python", "cpp": "cpp", "c++": "cpp", "c": "cpp",
                 "cu": "cuda", "cuda": "cuda", "hip": "hip", "json": "json"}


def message_context(msg: ChatMessage, user: User | Any, *, inactive: bool = False) -> dict[str, Any]:
    segments: list[dict[str, Any]] = []
    can_apply = (msg.role == MessageRole.ASSISTANT and msg.state == MessageState.COMPLETE
                 and user_can(user, Capability.ANNOTATE))
    if msg.role == MessageRole.ASSISTANT and msg.state != MessageState.STREAMING:
        for seg in codeblocks.split_reply(msg.content):
            if seg.block is None:
                if seg.text.strip():
                    segments.append({"text": seg.text.strip("\n")})
                continue
            segments.append({
                "block": seg.block,
                "html": highlight_code(seg.block.code, _HIGHLIGHT_AS.get(seg.block.language, "text")),
                "apply_kinds": chat_service.APPLY_KINDS if can_apply and seg.block.closed else (),
            })
    return {
        "m": msg,
        "segments": segments,
        "inactive": inactive,
        "streaming": msg.state == MessageState.STREAMING,
        "editable": msg.role == MessageRole.USER and msg.author_id == getattr(user, "pk", None),
        "can_annotate": user_can(user, Capability.ANNOTATE),
        "stream_url": reverse("chat:stream", args=[msg.pk]) if msg.state == MessageState.STREAMING else "",
    }


def panel_context(sample: Sample, user: User | Any, thread_id: str = "") -> dict[str, Any]:
    threads = list(ChatThread.objects.filter(sample=sample).order_by("created_at", "id"))
    thread = None
    if thread_id.isdigit():
        thread = next((t for t in threads if t.pk == int(thread_id)), None)
    if thread is None and threads:
        thread = threads[0]
    items: list[dict[str, Any]] = []
    last_id = 0
    if thread is not None:
        active = {m.pk for m in chat_service.active_messages(thread)}
        for m in thread.messages.order_by("created_at", "id"):
            items.append(message_context(m, user, inactive=m.pk not in active))
            last_id = max(last_id, m.pk)
    llm_ok, missing = chat_service.llm_configured()
    parts = chat_service.context_parts(sample)
    return {
        "sample": sample,
        "threads": threads,
        "thread": thread,
        "items": items,
        "last_id": last_id,
        "llm_ok": llm_ok,
        "llm_missing": missing,
        "parts": [{"key": p.key, "label": p.label, "tokens": p.tokens} for p in parts if p.text.strip()],
        "total_tokens": sum(p.tokens for p in parts),
        "backends": Backend.choices,
        "can_annotate": user_can(user, Capability.ANNOTATE),
        "pre_evals": list(PreEvalAttempt.objects.filter(sample=sample).select_related("run")[:5]),
        "generations": list(GenerationItem.objects.filter(sample=sample).select_related("job")
                            .order_by("-id")[:5]),
        "generation_choices": GenerationWhat.choices,
        "user": user,
    }


@register.inclusion_tag("chat/_panel.html", takes_context=True)
def chat_panel(context: dict[str, Any], sample: Sample) -> dict[str, Any]:
    request = context.get("request")
    thread_id = request.GET.get("thread", "") if request is not None else ""
    ctx = panel_context(sample, context["user"], thread_id)
    ctx["csrf_token"] = context.get("csrf_token")
    return ctx
