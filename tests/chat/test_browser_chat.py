"""One chat turn in a real browser: the reply streams in, its code is applied
after a diff, a run on the cpu backend is started from the thread and its
result appears in the thread as a tool message.

Real parts: chromium (Playwright), uvicorn serving the ASGI app (SSE), Redis,
RQ burst workers, the fake OpenAI server over TCP, the cpu verification backend.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.conf import settings
from django.test import Client

from annotations.models import ChatMessage, Revision, Sample, User
from annotations.models.chat import MessageRole, MessageState
from tests.execution.kernels import ADD_REFERENCE, ADD_TEST, ADD_WRONG
from tests.factories import make_sample
from tests.llm.fake_openai import FakeOpenAI

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

FIXED_REPLY_HEAD = "Element 7 of every block gets `x + 2*y`: the `tl.where` is wrong. <b>Fixed</b>:\n```python\n"


@pytest.fixture
def wrong_sample(annotator: User) -> Sample:
    return make_sample("chat/add-wrong", target_language="triton",
                       kinds={"reference": ADD_REFERENCE, "candidate": ADD_WRONG, "test": ADD_TEST,
                              "instruction": "Add two float vectors."})


@pytest.fixture
def page(browser: Any, asgi_server: str, annotator: User) -> Any:
    context = browser.new_context(base_url=asgi_server, viewport={"width": 1400, "height": 1000})
    client = Client()
    client.force_login(annotator)
    context.add_cookies([{"name": settings.SESSION_COOKIE_NAME,
                          "value": client.cookies[settings.SESSION_COOKIE_NAME].value, "url": asgi_server}])
    p = context.new_page()
    p.set_default_timeout(30_000)
    p.js_errors = []
    p.on("pageerror", lambda exc: p.js_errors.append(str(exc)))
    p.on("dialog", lambda d: (p.js_errors.append("dialog: " + d.message), d.dismiss()))
    yield p
    context.close()


def _drain_until(drain: Callable[..., int], cond: Callable[[], bool], *queues: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out waiting for the workers"
        drain(*queues)
        time.sleep(0.1)


def test_turn_streams_then_apply_after_diff(page: Any, wrong_sample: Sample, llm_settings: FakeOpenAI,
                                            drain_queues: Callable[..., int], screenshot: Any) -> None:
    chunks = [FIXED_REPLY_HEAD] + [line + "\n" for line in ADD_REFERENCE.strip("\n").split("\n")] + ["```\n"]
    llm_settings.stream(chunks, chunk_delay_s=0.01)
    page.goto(f"/samples/{wrong_sample.pk}/")
    # The first message creates the sample's first thread (a plain form post).
    page.fill(".chat-form textarea[name=content]", "The exe stage fails at element 7. Fix the candidate.")
    page.uncheck(".ctx-part input[type=checkbox][value=instruction]")
    page.click(".chat-form button.primary")
    page.wait_for_selector(".chat-msg.role-assistant.state-streaming")
    assert "Fix the candidate." in page.inner_text(".chat-msg.role-user")
    reply = ChatMessage.objects.get(role=MessageRole.ASSISTANT)
    assert reply.context["exclude"] == ["instruction"]
    _drain_until(drain_queues, lambda: ChatMessage.objects.filter(
        pk=reply.pk, state=MessageState.COMPLETE).exists(), "default")
    page.wait_for_selector(".chat-msg.role-assistant.state-complete .chat-apply")
    text = page.inner_text(".chat-msg.role-assistant")
    assert "<b>Fixed</b>" in text  # shown as text, not markup
    assert page.locator(".chat-msg.role-assistant b").count() == 0
    screenshot(page, "reply")

    page.click(".chat-msg.role-assistant a.chat-apply:has-text('Apply as candidate')")
    page.wait_for_selector("pre.diff")
    diff = page.inner_text("pre.diff")
    assert "-    tl.store(out_ptr + offs, tl.where((offs % 128) == 7" in diff
    assert "+    tl.store(out_ptr + offs, x + y, mask=mask)" in diff
    screenshot(page, "diff")
    page.click("button:has-text('Create candidate revision')")
    page.wait_for_selector(".msg-success")
    new = Revision.objects.filter(sample=wrong_sample, kind="candidate").order_by("-seq").first()
    assert new is not None and new.seq == 2 and new.origin == "chat"
    assert new.provenance["message_id"] == reply.pk
    assert new.content.strip() == ADD_REFERENCE.strip()
    assert "applied block 1" in page.inner_text(".chat-msg.role-system")

    # A second turn goes through fetch: the page is not reloaded while it streams.
    page.evaluate("window.__marker = 'still-here'")
    llm_settings.stream(["Looks ", "right ", "now."], chunk_delay_s=0.01)
    page.fill(".chat-form textarea[name=content]", "Anything else?")
    page.click(".chat-form button.primary")
    page.wait_for_selector(".chat-msg.role-assistant.state-streaming")
    second = ChatMessage.objects.filter(role=MessageRole.ASSISTANT).order_by("-id").first()
    assert second is not None and second.pk != reply.pk
    _drain_until(drain_queues, lambda: ChatMessage.objects.filter(
        pk=second.pk, state=MessageState.COMPLETE).exists(), "default")
    page.wait_for_selector(f"#msg-{second.pk}.state-complete")
    assert page.inner_text(f"#msg-{second.pk} .chat-text") == "Looks right now."
    assert page.evaluate("window.__marker") == "still-here"
    assert page.js_errors == []


@pytest.mark.skipif(importlib.util.find_spec("annotations.services.runs") is None,
                    reason="the runs service (verification area) is not in this checkout")
def test_run_from_the_thread_posts_the_result(page: Any, wrong_sample: Sample, annotator: User,
                                              drain_queues: Callable[..., int], llm_settings: FakeOpenAI,
                                              screenshot: Any) -> None:
    from annotations.services import chat as chat_service

    chat_service.thread_create(sample=wrong_sample, user=annotator, title="verify")
    page.goto(f"/samples/{wrong_sample.pk}/")
    page.select_option(".chat-run select[name=backend]", "cpu")
    page.click(".chat-run button[type=submit]")
    page.wait_for_selector(".chat-msg.role-system:has-text('started run')")
    _drain_until(drain_queues, lambda: ChatMessage.objects.filter(role=MessageRole.TOOL).exists(),
                 "cpu", "default", timeout=240)
    # The panel polls for new messages: the tool message appears without a reload.
    page.wait_for_selector(".chat-msg.role-tool", timeout=30_000)
    tool = page.inner_text(".chat-msg.role-tool")
    assert "CPU" in tool and "exe: FAILED" in tool  # the wrong candidate fails the exe stage
    screenshot(page, "run-result")
    assert page.js_errors == []
