"""The chat panel's views: access rules, fragments, escaping, apply, SSE relay."""

from __future__ import annotations

import asyncio
import importlib.util
import threading
from collections.abc import Coroutine
from typing import Any

import django_rq
import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient, Client
from django.urls import reverse

from annotations.models import ChatMessage, ChatThread, Revision, Sample, User
from annotations.models.chat import MessageRole, MessageState
from annotations.services import chat as chat_service
from pipeline.llm import relay
from tests.llm.fake_openai import FakeOpenAI

XSS = "<script>alert('x')</script>"
REPLY = f"Careful {XSS}\n```cpp\nint a = 1; // {XSS}\n```\n"


@pytest.fixture
def thread(sample: Sample, annotator: User) -> ChatThread:
    return chat_service.thread_create(sample=sample, user=annotator, title="t")


@pytest.fixture
def reply(thread: ChatThread, annotator: User) -> ChatMessage:
    """A finished assistant reply (as the job leaves it)."""
    user_msg = ChatMessage.objects.create(thread=thread, role=MessageRole.USER, content="q", author=annotator)
    return ChatMessage.objects.create(thread=thread, role=MessageRole.ASSISTANT, content=REPLY, model="m",
                                      state=MessageState.COMPLETE, context={"reply_to": user_msg.pk})


def _urls(sample: Sample, thread: ChatThread, reply: ChatMessage) -> list[tuple[str, str]]:
    return [
        ("get", reverse("chat:panel", args=[sample.pk])),
        ("post", reverse("chat:thread_new", args=[sample.pk])),
        ("post", reverse("chat:sample_post", args=[sample.pk])),
        ("post", reverse("chat:generate", args=[sample.pk])),
        ("get", reverse("chat:thread_messages", args=[thread.pk])),
        ("post", reverse("chat:post", args=[thread.pk])),
        ("post", reverse("chat:run", args=[thread.pk])),
        ("get", reverse("chat:message", args=[reply.pk])),
        ("post", reverse("chat:stop", args=[reply.pk])),
        ("post", reverse("chat:regenerate", args=[reply.pk])),
        ("post", reverse("chat:edit", args=[reply.pk])),
        ("get", reverse("chat:apply", args=[reply.pk, 0]) + "?kind=candidate"),
        ("post", reverse("chat:apply", args=[reply.pk, 0])),
    ]


def test_outsider_gets_404_everywhere(outsider_client: Client, sample, thread, reply) -> None:
    for method, url in _urls(sample, thread, reply):
        assert getattr(outsider_client, method)(url).status_code == 404, url
    assert outsider_client.get(reverse("chat:stream", args=[reply.pk])).status_code == 404


def test_anonymous_is_sent_to_login(client: Client, sample, thread, reply) -> None:
    for method, url in _urls(sample, thread, reply):
        resp = getattr(client, method)(url)
        assert resp.status_code == 302 and resp["Location"].startswith(reverse("login")), url


def test_unknown_objects_are_404(annotator_client: Client) -> None:
    assert annotator_client.get(reverse("chat:message", args=[999999])).status_code == 404
    assert annotator_client.post(reverse("chat:post", args=[999999]), {"content": "x"}).status_code == 404


def test_editing_someone_elses_message_is_403(client_for, annotator2: User, thread, reply) -> None:
    user_msg = ChatMessage.objects.get(pk=reply.context["reply_to"])
    resp = client_for(annotator2).post(reverse("chat:edit", args=[user_msg.pk]), {"content": "mine now"})
    assert resp.status_code == 403
    assert not ChatMessage.objects.filter(content="mine now").exists()


def test_reviewer_reads_threads_of_others(reviewer_client: Client, sample, thread, reply) -> None:
    page = reviewer_client.get(reverse("samples:detail", args=[sample.pk]) + f"?thread={thread.pk}")
    assert page.status_code == 200
    assert f'id="msg-{reply.pk}"' in page.content.decode()


def test_panel_renders_llm_output_escaped(annotator_client: Client, sample, thread, reply, llm_settings) -> None:
    html = annotator_client.get(reverse("samples:detail", args=[sample.pk])).content.decode()
    assert XSS not in html
    assert "&lt;script&gt;alert(" in html
    # The code block is highlighted (escaped by Pygments) and offers apply buttons.
    assert reverse("chat:apply", args=[reply.pk, 0]) + "?kind=candidate" in html
    assert "Apply as test" in html


def test_panel_without_llm_names_the_settings(annotator_client: Client, sample, thread, no_llm) -> None:
    html = annotator_client.get(reverse("samples:detail", args=[sample.pk])).content.decode()
    assert "No LLM is configured" in html and "LLM_BASE_URL" in html and "LLM_MODEL" in html
    resp = annotator_client.post(reverse("chat:post", args=[thread.pk]), {"content": "hi"}, HTTP_HX_REQUEST="true")
    assert resp.status_code == 400 and "set LLM_BASE_URL and LLM_MODEL" in resp.content.decode()


def test_post_returns_fragment_with_a_live_reply(annotator_client: Client, thread, llm_settings, rq_settings) -> None:
    resp = annotator_client.post(
        reverse("chat:post", args=[thread.pk]),
        {"content": "why?", "offered": ["reference", "candidate"], "include": ["reference"]},
        HTTP_HX_REQUEST="true")
    assert resp.status_code == 200
    html = resp.content.decode()
    reply = ChatMessage.objects.get(thread=thread, role=MessageRole.ASSISTANT)
    assert f'data-stream-url="{reverse("chat:stream", args=[reply.pk])}"' in html
    assert resp["X-Last-Message-Id"] == str(reply.pk)
    assert reply.context["exclude"] == ["candidate"]


def test_post_without_js_redirects_back(annotator_client: Client, sample, thread, llm_settings, rq_settings) -> None:
    resp = annotator_client.post(reverse("chat:post", args=[thread.pk]), {"content": "why?"})
    assert resp.status_code == 302 and f"?thread={thread.pk}#chat" in resp["Location"]


def test_empty_post_is_a_clear_400(annotator_client: Client, thread, llm_settings) -> None:
    resp = annotator_client.post(reverse("chat:post", args=[thread.pk]), {"content": " "}, HTTP_HX_REQUEST="true")
    assert resp.status_code == 400 and "The message is empty." in resp.content.decode()


def test_thread_messages_cursor(annotator_client: Client, thread, reply) -> None:
    url = reverse("chat:thread_messages", args=[thread.pk])
    resp = annotator_client.get(url, {"after": reply.pk - 1}, HTTP_HX_REQUEST="true")
    assert f'id="msg-{reply.pk}"' in resp.content.decode() and resp["X-Last-Message-Id"] == str(reply.pk)
    assert annotator_client.get(url, {"after": reply.pk}).content.decode().strip() == ""
    assert annotator_client.get(url, {"after": "x; drop"}).status_code == 400


def test_new_thread(annotator_client: Client, sample) -> None:
    resp = annotator_client.post(reverse("chat:thread_new", args=[sample.pk]), {"title": "second opinion"})
    t = ChatThread.objects.get(title="second opinion")
    assert resp.status_code == 302 and f"?thread={t.pk}" in resp["Location"]


def test_apply_shows_diff_then_creates_revision(annotator_client: Client, sample, reply) -> None:
    url = reverse("chat:apply", args=[reply.pk, 0])
    page = annotator_client.get(url, {"kind": "candidate"})
    html = page.content.decode()
    assert page.status_code == 200
    assert "-__global__ void add_kernel" in html and "+int a = 1;" in html and XSS not in html
    current = Revision.objects.filter(sample=sample, kind="candidate").order_by("-seq").first()
    resp = annotator_client.post(url, {"kind": "candidate", "expected_parent": current.pk})
    assert resp.status_code == 302
    new = Revision.objects.filter(sample=sample, kind="candidate").order_by("-seq").first()
    assert new.seq == current.seq + 1 and new.provenance["message_id"] == reply.pk
    # Same diff posted again: the current revision changed, so it is refused.
    again = annotator_client.post(url, {"kind": "candidate", "expected_parent": current.pk}, HTTP_HX_REQUEST="true")
    assert again.status_code in (400, 409)


def test_apply_bad_input(annotator_client: Client, reply) -> None:
    url = reverse("chat:apply", args=[reply.pk, 0])
    assert annotator_client.get(url, {"kind": "reference"}).status_code == 400
    assert annotator_client.get(reverse("chat:apply", args=[reply.pk, 7]), {"kind": "test"}).status_code == 400
    resp = annotator_client.post(url, {"kind": "test", "expected_parent": "abc"}, HTTP_HX_REQUEST="true")
    assert resp.status_code == 400


def test_apply_first_revision_of_a_kind(annotator_client: Client, sample, reply) -> None:
    resp = annotator_client.post(reverse("chat:apply", args=[reply.pk, 0]), {"kind": "wrapper", "expected_parent": "0"})
    assert resp.status_code == 302
    rev = Revision.objects.get(sample=sample, kind="wrapper")
    assert rev.seq == 1 and rev.language == "cpp" and rev.origin == "chat"


def test_run_rejects_unknown_backend(annotator_client: Client, thread) -> None:
    resp = annotator_client.post(reverse("chat:run", args=[thread.pk]), {"backend": "tpu"}, HTTP_HX_REQUEST="true")
    assert resp.status_code == 400 and "Unknown backend" in resp.content.decode()


def test_stop_sets_the_flag(annotator_client: Client, thread, annotator, rq_settings) -> None:
    live = ChatMessage.objects.create(thread=thread, role=MessageRole.ASSISTANT, state=MessageState.STREAMING)
    resp = annotator_client.post(reverse("chat:stop", args=[live.pk]), HTTP_HX_REQUEST="true")
    assert resp.status_code == 204
    assert relay.stop_requested(django_rq.get_connection("default"), live.pk)


def _in_fresh_loop(coro: Coroutine[Any, Any, None]) -> None:
    """Run a coroutine on its own loop in its own thread: a browser test earlier in
    the session leaves Playwright's loop on this thread, where asyncio.run refuses."""
    errors: list[BaseException] = []

    def target() -> None:
        try:
            asyncio.run(coro)
        except BaseException as exc:
            errors.append(exc)

    t = threading.Thread(target=target)
    t.start()
    t.join(60)
    if errors:
        raise errors[0]


@pytest.mark.django_db(transaction=True)
def test_stream_relays_redis_entries_as_sse(thread, annotator, rq_settings) -> None:
    _in_fresh_loop(_stream_relays(thread, annotator))


async def _stream_relays(thread: ChatThread, annotator: User) -> None:
    live = await ChatMessage.objects.acreate(thread=thread, role=MessageRole.ASSISTANT, state=MessageState.STREAMING)
    r = django_rq.get_connection("default")
    first = relay.publish_delta(r, live.pk, "Hel")
    relay.publish_delta(r, live.pk, "lo <b>\n")
    relay.publish_end(r, live.pk, status="complete")
    client = AsyncClient()
    await sync_to_async(client.force_login)(annotator)
    resp = await client.get(reverse("chat:stream", args=[live.pk]))
    assert resp.status_code == 200 and resp["Content-Type"] == "text/event-stream"
    body = b"".join([chunk async for chunk in resp.streaming_content]).decode()
    assert 'event: delta\ndata: "Hel"' in body
    assert 'data: "lo <b>\\n"' in body  # JSON-encoded: the page inserts it as text
    assert 'event: end\ndata: {"status": "complete"' in body
    # Resuming after the first entry (a reconnect) skips what the page has.
    resp2 = await client.get(reverse("chat:stream", args=[live.pk]), headers={"Last-Event-ID": first})
    body2 = b"".join([chunk async for chunk in resp2.streaming_content]).decode()
    assert '"Hel"' not in body2 and '"lo <b>\\n"' in body2
    bad = await client.get(reverse("chat:stream", args=[live.pk]), headers={"Last-Event-ID": "nope"})
    assert bad.status_code == 400


@pytest.mark.django_db(transaction=True)
def test_stream_of_a_finished_message_ends_at_once(thread, annotator, rq_settings) -> None:
    _in_fresh_loop(_finished_stream(thread, annotator))


async def _finished_stream(thread: ChatThread, annotator: User) -> None:
    done = await ChatMessage.objects.acreate(thread=thread, role=MessageRole.ASSISTANT, content="x",
                                             state=MessageState.FAILED, error="broke off")
    client = AsyncClient()
    await sync_to_async(client.force_login)(annotator)
    resp = await client.get(reverse("chat:stream", args=[done.pk]))
    body = b"".join([chunk async for chunk in resp.streaming_content]).decode()
    assert body.startswith("event: end") and "broke off" in body


def test_fake_server_is_not_called_by_page_views(annotator_client: Client, sample, thread, llm_settings: FakeOpenAI) -> None:
    annotator_client.get(reverse("samples:detail", args=[sample.pk]))
    assert llm_settings.requests == []  # rendering never blocks on the LLM


@pytest.mark.django_db(transaction=True)
def test_stream_of_a_reply_whose_worker_died_ends_as_failed(thread, annotator, rq_settings) -> None:
    from datetime import timedelta

    from django.utils import timezone

    live = ChatMessage.objects.create(thread=thread, role=MessageRole.ASSISTANT, state=MessageState.STREAMING)
    ChatMessage.objects.filter(pk=live.pk).update(created_at=timezone.now() - timedelta(hours=2))

    async def go() -> None:
        client = AsyncClient()
        await sync_to_async(client.force_login)(annotator)
        resp = await client.get(reverse("chat:stream", args=[live.pk]))
        body = b"".join([chunk async for chunk in resp.streaming_content]).decode()
        assert body.startswith("event: end") and '"failed"' in body

    _in_fresh_loop(go())
    live.refresh_from_db()
    assert live.state == MessageState.FAILED and "worker stopped" in live.error


def test_panel_fragment_marks_superseded_and_tool_messages(annotator_client: Client, sample, thread, reply,
                                                           annotator) -> None:
    newer = ChatMessage.objects.create(thread=thread, role=MessageRole.ASSISTANT, content="better",
                                       state=MessageState.COMPLETE, replaces=reply,
                                       context={"reply_to": reply.context["reply_to"]})
    tool = ChatMessage.objects.create(thread=thread, role=MessageRole.TOOL, content="exe: FAILED: <mismatch>")
    resp = annotator_client.get(reverse("chat:panel", args=[sample.pk]), {"thread": thread.pk})
    html = resp.content.decode()
    assert resp.status_code == 200
    old_article = html.split(f'id="msg-{reply.pk}"')[0].rsplit("<article", 1)[1]
    assert "inactive" in old_article  # the regenerated-away reply is shown, marked superseded
    assert f"replaces #{reply.pk}" in html and f'id="msg-{newer.pk}"' in html
    assert f'id="msg-{tool.pk}"' in html and "exe: FAILED: &lt;mismatch&gt;" in html


@pytest.mark.skipif(importlib.util.find_spec("annotations.services.runs") is None,
                    reason="the runs service (verification area) is not in this checkout")
def test_run_refusal_is_a_clear_400(annotator_client: Client, thread) -> None:
    # The fixture sample has no test revision: the runs service refuses, the panel says why.
    resp = annotator_client.post(reverse("chat:run", args=[thread.pk]), {"backend": "cpu"}, HTTP_HX_REQUEST="true")
    assert resp.status_code == 400 and "has no test revision" in resp.content.decode()
    assert not ChatMessage.objects.filter(thread=thread).exists()


def test_edit_fragment_rerenders_the_thread_with_superseded_marks(annotator_client: Client, thread, reply,
                                                                  llm_settings, rq_settings) -> None:
    user_msg = ChatMessage.objects.get(pk=reply.context["reply_to"])
    resp = annotator_client.post(reverse("chat:edit", args=[user_msg.pk]), {"content": "better question"},
                                 HTTP_HX_REQUEST="true")
    html = resp.content.decode()
    assert resp.status_code == 200 and "better question" in html
    for old in (user_msg, reply):
        article = html.split(f'id="msg-{old.pk}"')[0].rsplit("<article", 1)[1]
        assert "inactive" in article, old.pk


def test_first_message_creates_the_thread(annotator_client: Client, sample, llm_settings, rq_settings) -> None:
    resp = annotator_client.post(reverse("chat:sample_post", args=[sample.pk]), {"content": "hello"})
    thread = ChatThread.objects.get(sample=sample)
    assert resp.status_code == 302 and f"?thread={thread.pk}#chat" in resp["Location"]
    assert [m.role for m in thread.messages.all()] == ["user", "assistant"]


def test_first_message_without_llm_creates_nothing(annotator_client: Client, sample, no_llm) -> None:
    resp = annotator_client.post(reverse("chat:sample_post", args=[sample.pk]), {"content": "hello"}, follow=True)
    assert "set LLM_BASE_URL and LLM_MODEL" in resp.content.decode()
    assert not ChatThread.objects.filter(sample=sample).exists()


@pytest.mark.django_db(transaction=True)
def test_generate_from_the_sample_page(annotator_client: Client, sample, llm_settings: FakeOpenAI,
                                       drain_queues) -> None:
    llm_settings.reply("Add two vectors `x` and `y` of n floats into `out`.")
    resp = annotator_client.post(reverse("chat:generate", args=[sample.pk]), {"what": "instruction"})
    assert resp.status_code == 302
    drain_queues("default")
    rev = Revision.objects.filter(sample=sample, kind="instruction").order_by("-seq").first()
    assert rev is not None and rev.origin == "generated" and rev.content.startswith("Add two vectors")
    html = annotator_client.get(reverse("samples:detail", args=[sample.pk])).content.decode()
    assert "Instruction · " in html and ">Done<" in html


def test_generate_bad_choice_and_no_llm(annotator_client: Client, sample, no_llm) -> None:
    resp = annotator_client.post(reverse("chat:generate", args=[sample.pk]), {"what": "poem"})
    assert resp.status_code == 400 and "Unknown generation &#x27;poem&#x27;; choose one of" in resp.content.decode()
    resp = annotator_client.post(reverse("chat:generate", args=[sample.pk]), {"what": "hip"})
    assert resp.status_code == 400 and "set LLM_BASE_URL and LLM_MODEL" in resp.content.decode()
