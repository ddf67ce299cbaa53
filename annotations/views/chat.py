"""The chat panel's views: post, stream (SSE), stop, regenerate, edit, apply, run.

Reading a thread needs READ (every role: other experts can read threads);
changing anything needs ANNOTATE; editing a message is for its author only.
Fragment requests (the panel's JS) get HTML fragments; plain form posts are
redirected back to the sample page, so the panel also works without JS.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import redis.asyncio as aioredis
from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib import messages as flash
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.views.decorators.http import require_GET, require_POST

from annotations.access import Capability, check_capability, get_sample_for_user, request_user, role_required
from annotations.models import ChatMessage, ChatThread, User
from annotations.models.chat import MessageState
from annotations.models.runs import Backend
from annotations.services import chat as chat_service
from annotations.templatetags.chat_tags import message_context, panel_context
from annotations.views.common import error_page, is_fragment_request
from pipeline.llm import relay

app_name = "chat"
_ENTRY_ID_RE = re.compile(r"^(0|\d{1,20}-\d{1,20})$")
SSE_BLOCK_MS = 15000


def get_thread_for_user(user: User, pk: int, capability: Capability = Capability.READ) -> ChatThread:
    check_capability(user, capability)
    thread = ChatThread.objects.select_related("sample").filter(pk=pk).first()
    if thread is None:
        raise Http404("Not found")
    return thread


def get_message_for_user(user: User, pk: int, capability: Capability = Capability.READ) -> ChatMessage:
    check_capability(user, capability)
    msg = ChatMessage.objects.select_related("thread__sample").filter(pk=pk).first()
    if msg is None:
        raise Http404("Not found")
    return msg


def _back(thread: ChatThread) -> HttpResponse:
    return redirect(f"{reverse('samples:detail', args=[thread.sample_id])}?thread={thread.pk}#chat")


def _fail(request: HttpRequest, thread: ChatThread, message: str, status: int = 400) -> HttpResponse:
    if is_fragment_request(request):
        return render(request, "chat/_error.html", {"message": message}, status=status)
    flash.error(request, message)
    return _back(thread)


def _messages_fragment(request: HttpRequest, msgs: list[ChatMessage], thread: ChatThread) -> HttpResponse:
    user = request_user(request)
    active = {m.pk for m in chat_service.active_messages(thread)}
    ctx = {"items": [message_context(m, user, inactive=m.pk not in active) for m in msgs], "thread": thread}
    resp = render(request, "chat/_messages.html", ctx)
    if msgs:
        resp["X-Last-Message-Id"] = str(max(m.pk for m in msgs))
    return resp


@require_GET
@role_required(Capability.READ)
def panel(request: HttpRequest, sample_pk: int) -> HttpResponse:
    sample = get_sample_for_user(request_user(request), sample_pk)
    thread_id = request.GET.get("thread", "")
    ctx = panel_context(sample, request_user(request), thread_id)
    return render(request, "chat/_panel.html", ctx)


@require_POST
@role_required(Capability.ANNOTATE)
def thread_new(request: HttpRequest, sample_pk: int) -> HttpResponse:
    user = request_user(request)
    sample = get_sample_for_user(user, sample_pk, Capability.ANNOTATE)
    thread = chat_service.thread_create(sample=sample, user=user, title=request.POST.get("title", ""))
    return _back(thread)


@require_POST
@role_required(Capability.ANNOTATE)
def sample_post(request: HttpRequest, sample_pk: int) -> HttpResponse:
    """The first message about a sample: its first thread is created on the way."""
    user = request_user(request)
    sample = get_sample_for_user(user, sample_pk, Capability.ANNOTATE)
    try:
        with transaction.atomic():
            thread = chat_service.thread_default(sample=sample, user=user)
            chat_service.message_post(thread=thread, user=user, content=request.POST.get("content", ""),
                                      exclude=_exclude(request))
    except chat_service.ChatError as exc:
        flash.error(request, str(exc))
        return redirect(f"{reverse('samples:detail', args=[sample.pk])}#chat")
    return _back(thread)


@require_POST
@role_required(Capability.ANNOTATE)
def sample_generate(request: HttpRequest, sample_pk: int) -> HttpResponse:
    """Draft an artifact of this one sample with the LLM (the `generate` command for one item)."""
    from annotations.jobs.llm import QueueUnavailable
    from annotations.services import generation

    user = request_user(request)
    sample = get_sample_for_user(user, sample_pk, Capability.ANNOTATE)
    what = request.POST.get("what", "")
    try:
        generation.generation_job_create(what=what, samples=[sample], user=user, concurrency=1, force=True,
                                         selection={"task_ids": [sample.task_id], "from": "sample page"})
    except (generation.GenerationError, QueueUnavailable) as exc:
        return error_page(request, str(exc), status=400)
    flash.success(request, "Generation queued; its revisions appear here when it finishes.")
    return redirect(f"{reverse('samples:detail', args=[sample.pk])}#chat")


@require_GET
@role_required(Capability.READ)
def thread_messages(request: HttpRequest, pk: int) -> HttpResponse:
    """Messages after a cursor (the panel polls it for tool results and other experts' turns)."""
    thread = get_thread_for_user(request_user(request), pk)
    raw = request.GET.get("after", "0") or "0"
    if not raw.isdigit() or len(raw) > 18:
        return error_page(request, "The cursor 'after' must be a message id.", status=400)
    msgs = list(thread.messages.filter(pk__gt=int(raw)).order_by("created_at", "id"))
    return _messages_fragment(request, msgs, thread)


def _exclude(request: HttpRequest) -> list[str]:
    # The form lists every context part as a checkbox named "include"; what is
    # offered but not ticked is left out.
    offered = request.POST.getlist("offered")
    included = set(request.POST.getlist("include"))
    return [k for k in offered if k not in included][:20]


@require_POST
@role_required(Capability.ANNOTATE)
def message_post(request: HttpRequest, pk: int) -> HttpResponse:
    user = request_user(request)
    thread = get_thread_for_user(user, pk, Capability.ANNOTATE)
    try:
        msg, reply = chat_service.message_post(thread=thread, user=user, content=request.POST.get("content", ""),
                                               exclude=_exclude(request))
    except chat_service.ChatError as exc:
        return _fail(request, thread, str(exc))
    if is_fragment_request(request):
        return _messages_fragment(request, [msg, reply], thread)
    return _back(thread)


def _whole_thread(request: HttpRequest, thread: ChatThread) -> HttpResponse:
    """After an edit or a regenerate the earlier messages are superseded: send the whole thread again."""
    if is_fragment_request(request):
        return _messages_fragment(request, list(thread.messages.order_by("created_at", "id")), thread)
    return _back(thread)


@require_POST
@role_required(Capability.ANNOTATE)
def message_edit(request: HttpRequest, pk: int) -> HttpResponse:
    user = request_user(request)
    old = get_message_for_user(user, pk, Capability.ANNOTATE)
    if old.author_id != user.pk:
        raise PermissionDenied("Only the author of a message can edit it.")
    try:
        chat_service.message_edit_resend(message=old, user=user,
                                                      content=request.POST.get("content", ""),
                                                      exclude=_exclude(request))
    except chat_service.ChatError as exc:
        return _fail(request, old.thread, str(exc))
    return _whole_thread(request, old.thread)


@require_POST
@role_required(Capability.ANNOTATE)
def message_regenerate(request: HttpRequest, pk: int) -> HttpResponse:
    user = request_user(request)
    old = get_message_for_user(user, pk, Capability.ANNOTATE)
    try:
        chat_service.message_regenerate(message=old, user=user)
    except chat_service.ChatError as exc:
        return _fail(request, old.thread, str(exc))
    return _whole_thread(request, old.thread)


@require_POST
@role_required(Capability.ANNOTATE)
def message_stop(request: HttpRequest, pk: int) -> HttpResponse:
    user = request_user(request)
    msg = get_message_for_user(user, pk, Capability.ANNOTATE)
    chat_service.message_stop(message=msg, user=user)
    if is_fragment_request(request):
        return HttpResponse(status=204)
    return _back(msg.thread)


@require_GET
@role_required(Capability.READ)
def message_detail(request: HttpRequest, pk: int) -> HttpResponse:
    msg = get_message_for_user(request_user(request), pk)
    return _messages_fragment(request, [msg], msg.thread)


@role_required(Capability.ANNOTATE)
def message_apply(request: HttpRequest, pk: int, index: int) -> HttpResponse:
    """GET: the diff against the current revision; POST: create the revision."""
    user = request_user(request)
    msg = get_message_for_user(user, pk, Capability.ANNOTATE)
    kind = (request.POST if request.method == "POST" else request.GET).get("kind", "")
    if request.method == "POST":
        raw_parent = request.POST.get("expected_parent", "")
        if raw_parent and not raw_parent.isdigit():
            return _fail(request, msg.thread, "expected_parent must be a revision id.")
        try:
            # "0" = the user saw no current revision; "" = no check (a scripted client).
            expected = int(raw_parent) if raw_parent else None
            rev = chat_service.message_apply(message=msg, index=index, kind=kind, user=user,
                                             expected_parent=expected)
        except chat_service.ChatError as exc:
            return _fail(request, msg.thread, str(exc), status=409 if "changed since" in str(exc) else 400)
        flash.success(request, f"Applied as {kind} revision {rev.seq}.")
        return _back(msg.thread)
    if request.method != "GET":
        return HttpResponse(status=405)
    try:
        preview = chat_service.apply_preview(message=msg, index=index, kind=kind)
    except chat_service.ChatError as exc:
        return error_page(request, str(exc), status=400)
    return render(request, "chat/apply.html", {"preview": preview, "sample": msg.thread.sample,
                                               "thread": msg.thread, "message": msg, "index": index})


@require_POST
@role_required(Capability.ANNOTATE)
def thread_run(request: HttpRequest, pk: int) -> HttpResponse:
    user = request_user(request)
    thread = get_thread_for_user(user, pk, Capability.ANNOTATE)
    backend = request.POST.get("backend", "")
    if backend not in Backend.values:
        return _fail(request, thread, f"Unknown backend {backend[:20]!r}; use one of {', '.join(Backend.values)}.")
    try:
        from annotations.services.runs import RunError
    except ImportError:  # the verification area is optional in a partial checkout
        return _fail(request, thread, "Verification is not available in this installation.", status=503)
    try:
        run = chat_service.thread_run(thread=thread, user=user, backend=backend)
    except RunError as exc:  # the runs service's own refusals (e.g. no candidate or test yet)
        return _fail(request, thread, str(exc))
    note = ChatMessage.objects.create(
        thread=thread, role="system", author=user,
        content=f"{user.username} started run #{run.pk} on {run.get_backend_display()}; "
                "its result will be posted here.", run=run)
    if is_fragment_request(request):
        return _messages_fragment(request, [note], thread)
    return _back(thread)


# --- streaming (ASGI) ---------------------------------------------------------
def _sse(event: str, data: Any, entry_id: str = "") -> bytes:
    head = f"id: {entry_id}\n" if entry_id else ""
    return f"{head}event: {event}\ndata: {json.dumps(data)}\n\n".encode()


@require_GET
@role_required(Capability.READ)
async def message_stream(request: HttpRequest, pk: int) -> HttpResponseBase:
    """Relay a reply's Redis stream to the browser as server-sent events.

    Resumes after `Last-Event-ID` (EventSource sends it on reconnect) or
    ?after=, so a reload or a dropped connection loses nothing.
    """
    user = await request.auser()
    msg = await sync_to_async(get_message_for_user)(user, pk)  # type: ignore[arg-type]
    after = request.headers.get("Last-Event-ID") or request.GET.get("after") or "0"
    if not _ENTRY_ID_RE.match(after):
        return HttpResponse("Bad Last-Event-ID.", status=400, content_type="text/plain")
    key = relay.stream_key(msg.pk)

    async def events() -> AsyncIterator[bytes]:
        nonlocal after
        conn = aioredis.Redis.from_url(settings.REDIS_URL)
        try:
            if msg.state == MessageState.STREAMING and await sync_to_async(chat_service.message_mark_lost)(
                    message_id=msg.pk):
                yield _sse("end", {"status": MessageState.FAILED, "error": "lost"})
                return
            if msg.state != MessageState.STREAMING and not await conn.exists(key):
                yield _sse("end", {"status": msg.state, "error": msg.error})
                return
            yield b"retry: 1000\n\n"
            while True:
                res = await conn.xread({key: after}, count=500, block=SSE_BLOCK_MS)
                if not res:
                    yield b": keep-alive\n\n"
                    if await sync_to_async(chat_service.message_mark_lost)(message_id=msg.pk):
                        yield _sse("end", {"status": MessageState.FAILED, "error": "lost"})
                        return
                    state = await ChatMessage.objects.filter(pk=msg.pk).values_list("state", flat=True).afirst()
                    if state != MessageState.STREAMING and not await conn.exists(key):
                        yield _sse("end", {"status": state, "error": ""})
                        return
                    continue
                stream_entries: list[Any] = res  # type: ignore[assignment]  # RESP2 reply: a list
                # Everything one XREAD returned goes out in one write: when the
                # relay falls behind a fast stream it catches up in one step.
                batch: list[bytes] = []
                ended = False
                for _key, entries in stream_entries:
                    for raw_id, fields in entries:
                        after = raw_id.decode()
                        f = {k.decode(): v.decode() for k, v in fields.items()}
                        if f.get("t") == "delta":
                            batch.append(_sse("delta", f.get("d", ""), after))
                        else:
                            batch.append(_sse("end", {"status": f.get("status", ""),
                                                      "error": f.get("error", "")}, after))
                            ended = True
                            break
                yield b"".join(batch)
                if ended:
                    return
        except asyncio.CancelledError:
            raise  # the browser went away
        finally:
            await conn.aclose()

    resp = StreamingHttpResponse(events(), content_type="text/event-stream")
    resp["Cache-Control"] = "no-cache"
    resp["X-Accel-Buffering"] = "no"  # nginx: do not buffer the stream
    return resp


urlpatterns = [
    path("sample/<int:sample_pk>/", panel, name="panel"),
    path("sample/<int:sample_pk>/threads/new/", thread_new, name="thread_new"),
    path("sample/<int:sample_pk>/post/", sample_post, name="sample_post"),
    path("sample/<int:sample_pk>/generate/", sample_generate, name="generate"),
    path("thread/<int:pk>/messages/", thread_messages, name="thread_messages"),
    path("thread/<int:pk>/post/", message_post, name="post"),
    path("thread/<int:pk>/run/", thread_run, name="run"),
    path("message/<int:pk>/", message_detail, name="message"),
    path("message/<int:pk>/stream/", message_stream, name="stream"),
    path("message/<int:pk>/stop/", message_stop, name="stop"),
    path("message/<int:pk>/regenerate/", message_regenerate, name="regenerate"),
    path("message/<int:pk>/edit/", message_edit, name="edit"),
    path("message/<int:pk>/apply/<int:index>/", message_apply, name="apply"),
]
