"""Chat turns end to end: service -> RQ job (real Redis, burst worker) -> fake OpenAI server."""

from __future__ import annotations

from collections.abc import Callable

import django_rq
import pytest

from annotations.models import ChatMessage, Revision, Run, Sample, User
from annotations.models.chat import MessageRole, MessageState
from annotations.services import chat as chat_service
from annotations.services.chat import ChatError
from pipeline.llm import relay
from tests.llm.fake_openai import FakeOpenAI

KEY = "sk-test-SECRET-4242"
FIX = "The mask is missing. Here is the fix:\n```cpp\n#include <hip/hip_runtime.h>\n// fixed\n```\nDone."


@pytest.fixture
def thread(sample: Sample, annotator: User) -> chat_service.ChatThread:  # type: ignore[name-defined]
    return chat_service.thread_create(sample=sample, user=annotator, title="fix the mask")


pytestmark = pytest.mark.django_db(transaction=True)


def _entries(message_id: int) -> list[tuple[str, dict[str, str]]]:
    return relay.read(django_rq.get_connection("default"), message_id, "0", block_ms=1)


def test_a_turn_streams_and_completes(thread, annotator, llm_settings: FakeOpenAI, drain_queues: Callable) -> None:
    llm_settings.stream(["The mask ", "is missing."], usage=(300, 6))
    msg, reply = chat_service.message_post(thread=thread, user=annotator, content="Why does exe fail?")
    assert reply.state == MessageState.STREAMING and reply.context["reply_to"] == msg.pk
    assert reply.context["tokens"] > 0
    drain_queues("default")
    reply.refresh_from_db()
    assert reply.state == MessageState.COMPLETE
    assert reply.content == "The mask is missing."
    assert reply.usage["prompt_tokens"] == 300 and reply.model == "fake-model"
    entries = _entries(reply.pk)
    # Deltas may be coalesced on the way; their text, in order, is the reply.
    assert "".join(e[1]["d"] for e in entries[:-1]) == "The mask is missing."
    assert {e[1]["t"] for e in entries[:-1]} == {"delta"}
    assert entries[-1][1]["t"] == "end" and entries[-1][1]["status"] == "complete"
    # What the model saw: system prompt with the artifacts, then the user's turn.
    sent = llm_settings.requests[0].body["messages"]
    assert sent[0]["role"] == "system" and "__global__ void add_kernel" in sent[0]["content"]
    assert "demo/add" in sent[0]["content"]
    assert sent[-1] == {"role": "user", "content": "Why does exe fail?"}


def test_left_out_parts_are_not_sent(thread, annotator, llm_settings: FakeOpenAI, drain_queues: Callable) -> None:
    llm_settings.stream(["ok"])
    _, reply = chat_service.message_post(thread=thread, user=annotator, content="hi", exclude=["candidate", "bogus"])
    drain_queues("default")
    system = llm_settings.requests[0].body["messages"][0]["content"]
    assert "__global__ void add_kernel" not in system and "add_kernel(x_ptr" in system
    reply.refresh_from_db()
    assert reply.context["exclude"] == ["candidate"]
    assert {p["key"]: p["included"] for p in reply.context["parts"]}["candidate"] is False


def test_dropped_stream_is_kept_incomplete_and_cannot_be_applied(
        thread, annotator, sample, llm_settings: FakeOpenAI, drain_queues: Callable) -> None:
    llm_settings.drop(["Fix:\n```cpp\n", "int x;\n", "```\n", "more"], after=3)
    _, reply = chat_service.message_post(thread=thread, user=annotator, content="fix it")
    drain_queues("default")
    reply.refresh_from_db()
    assert reply.state == MessageState.FAILED
    assert reply.content == "Fix:\n```cpp\nint x;\n```\n"  # kept for the record
    assert "broke off" in reply.error
    before = Revision.objects.filter(sample=sample).count()
    with pytest.raises(ChatError, match="incomplete"):
        chat_service.message_apply(message=reply, index=0, kind="candidate", user=annotator)
    assert Revision.objects.filter(sample=sample).count() == before
    assert _entries(reply.pk)[-1][1]["status"] == "failed"


def test_stop_keeps_a_stopped_message(thread, annotator, llm_settings: FakeOpenAI, drain_queues: Callable) -> None:
    llm_settings.stream(["one ", "two ", "three"], chunk_delay_s=0.05)
    _, reply = chat_service.message_post(thread=thread, user=annotator, content="count")
    # The stop flag is set before the worker starts: the job stops at the first chunk.
    chat_service.message_stop(message=reply, user=annotator)
    drain_queues("default")
    reply.refresh_from_db()
    assert reply.state == MessageState.STOPPED and reply.content == ""
    assert reply.error == "Stopped by the user."
    assert _entries(reply.pk)[-1][1]["status"] == "stopped"
    with pytest.raises(ChatError, match="incomplete"):
        chat_service.apply_preview(message=reply, index=0, kind="candidate")


def test_llm_error_is_a_sentence_on_the_message(thread, annotator, llm_settings: FakeOpenAI,
                                                drain_queues: Callable) -> None:
    llm_settings.error(401, message=f"bad key {KEY}")
    _, reply = chat_service.message_post(thread=thread, user=annotator, content="hi")
    drain_queues("default")
    reply.refresh_from_db()
    assert reply.state == MessageState.FAILED
    assert "refused the API key" in reply.error and KEY not in reply.error


def test_not_configured(thread, annotator, no_llm: None) -> None:
    with pytest.raises(ChatError, match="set LLM_BASE_URL and LLM_MODEL"):
        chat_service.message_post(thread=thread, user=annotator, content="hi")
    assert not ChatMessage.objects.filter(thread=thread).exists()  # nothing half-written


def test_empty_and_oversized_messages(thread, annotator, llm_settings: FakeOpenAI) -> None:
    with pytest.raises(ChatError, match="empty"):
        chat_service.message_post(thread=thread, user=annotator, content="   ")
    with pytest.raises(ChatError, match="at most"):
        chat_service.message_post(thread=thread, user=annotator, content="x" * 100_001)


def test_key_is_not_in_job_payloads_or_messages(thread, annotator, llm_settings: FakeOpenAI,
                                                drain_queues: Callable) -> None:
    llm_settings.stream(["ok"])
    chat_service.message_post(thread=thread, user=annotator, content="hi")
    conn = django_rq.get_connection("default")
    dumped = b"".join(
        b"".join(v for v in conn.hgetall(k).values()) for k in conn.keys("rq:job:*"))
    assert dumped and KEY.encode() not in dumped
    drain_queues("default")
    for m in ChatMessage.objects.all():
        assert KEY not in m.content + m.error + str(m.context) + str(m.usage)
    for key in conn.keys("kstudio:chat:*"):
        if conn.type(key) == b"stream":
            assert KEY.encode() not in str(conn.xrange(key)).encode()


def test_apply_creates_a_revision_with_provenance(thread, annotator, sample, llm_settings: FakeOpenAI,
                                                  drain_queues: Callable) -> None:
    llm_settings.stream([FIX])
    _, reply = chat_service.message_post(thread=thread, user=annotator, content="fix")
    drain_queues("default")
    reply.refresh_from_db()
    preview = chat_service.apply_preview(message=reply, index=0, kind="candidate")
    assert any(line.startswith("+// fixed") for line in preview.diff)
    current = preview.current
    assert current is not None
    rev = chat_service.message_apply(message=reply, index=0, kind="candidate", user=annotator,
                                     expected_parent=current.pk)
    assert rev.kind == "candidate" and rev.seq == current.seq + 1 and rev.origin == "chat"
    assert rev.provenance["message_id"] == reply.pk and rev.provenance["thread_id"] == thread.pk
    assert rev.language == sample.target_language and rev.author == annotator
    note = ChatMessage.objects.filter(thread=thread, role=MessageRole.SYSTEM).get()
    assert f"as candidate revision {rev.seq}" in note.content
    # The diff the user saw is now stale: applying again against it is refused.
    with pytest.raises(ChatError, match="identical|changed since"):
        chat_service.message_apply(message=reply, index=0, kind="candidate", user=annotator,
                                   expected_parent=current.pk)


@pytest.mark.parametrize(("index", "kind", "error"), [
    (5, "candidate", "no code block 6"),
    (0, "reference", "can be applied as"),
])
def test_apply_refuses_bad_requests(thread, annotator, llm_settings: FakeOpenAI, drain_queues: Callable,
                                    index: int, kind: str, error: str) -> None:
    llm_settings.stream([FIX])
    _, reply = chat_service.message_post(thread=thread, user=annotator, content="fix")
    drain_queues("default")
    reply.refresh_from_db()
    with pytest.raises(ChatError, match=error):
        chat_service.message_apply(message=reply, index=index, kind=kind, user=annotator)


def test_user_message_cannot_be_applied(thread, annotator, llm_settings: FakeOpenAI) -> None:
    llm_settings.stream(["x"])
    msg, _ = chat_service.message_post(thread=thread, user=annotator, content="```cpp\nint x;\n```")
    with pytest.raises(ChatError, match="assistant"):
        chat_service.apply_preview(message=msg, index=0, kind="candidate")


def test_regenerate_and_edit_keep_history(thread, annotator, annotator2, llm_settings: FakeOpenAI,
                                          drain_queues: Callable) -> None:
    llm_settings.stream(["first answer"])
    msg, reply = chat_service.message_post(thread=thread, user=annotator, content="question one")
    drain_queues("default")
    reply.refresh_from_db()
    llm_settings.stream(["second answer"])
    again = chat_service.message_regenerate(message=reply, user=annotator)
    drain_queues("default")
    assert again.replaces_id == reply.pk
    active = [m.pk for m in chat_service.active_messages(thread)]
    assert reply.pk not in active and again.pk in active
    # The regenerated request is the same conversation without the old reply.
    assert llm_settings.requests[1].body["messages"][1:] == [{"role": "user", "content": "question one"}]

    with pytest.raises(ChatError, match="author"):
        chat_service.message_edit_resend(message=msg, user=annotator2, content="hijack")
    llm_settings.stream(["third answer"])
    edited, reply3 = chat_service.message_edit_resend(message=msg, user=annotator, content="question one, better")
    drain_queues("default")
    active = [m.pk for m in chat_service.active_messages(thread)]
    assert msg.pk not in active and again.pk not in active  # the old turn and its replies are superseded
    assert edited.pk in active and reply3.pk in active
    assert llm_settings.requests[2].body["messages"][1:] == [{"role": "user", "content": "question one, better"}]
    assert ChatMessage.objects.filter(thread=thread).count() == 5  # nothing deleted


def test_regenerate_refuses_streaming_and_user_messages(thread, annotator, llm_settings: FakeOpenAI) -> None:
    llm_settings.stream(["x"])
    msg, reply = chat_service.message_post(thread=thread, user=annotator, content="q")
    with pytest.raises(ChatError, match="still streaming"):
        chat_service.message_regenerate(message=reply, user=annotator)
    with pytest.raises(ChatError, match="Only an assistant reply"):
        chat_service.message_regenerate(message=msg, user=annotator)


def test_run_result_is_posted_once_and_feeds_the_next_turn(
        thread, annotator, sample, llm_settings: FakeOpenAI, drain_queues: Callable) -> None:
    run = Run.objects.create(
        sample=sample, backend="cpu", status="failed", thread=thread, failed_stage="exe",
        stages={"call": {"ok": True, "message": ""},
                "exe": {"ok": False, "message": "Mismatched elements: 3 / 1000 (0.3%) at index 999"}},
        message="exe: outputs differ from the reference", exit_code=1, log="compile ok\nAssertionError: mismatch\n")
    tool = chat_service.chat_post_run_result(run=run)
    assert tool is not None and tool.role == MessageRole.TOOL and tool.run_id == run.pk
    assert "exe: FAILED: Mismatched elements: 3 / 1000" in tool.content
    assert "AssertionError: mismatch" in tool.content
    assert chat_service.chat_post_run_result(run=run) == tool  # a retried collect posts nothing new
    assert ChatMessage.objects.filter(thread=thread, role=MessageRole.TOOL).count() == 1
    llm_settings.stream(["fixing the last block"])
    chat_service.message_post(thread=thread, user=annotator, content="fix the failing stage")
    drain_queues("default")
    sent = llm_settings.requests[0].body["messages"]
    assert sent[1]["role"] == "user" and sent[1]["content"].startswith("[verification result]")
    assert "Mismatched elements" in sent[1]["content"]
    assert "latest run #" in sent[0]["content"]  # and the run is part of the context


def test_run_without_thread_posts_nothing(sample: Sample) -> None:
    run = Run.objects.create(sample=sample, backend="cpu", status="passed")
    assert chat_service.chat_post_run_result(run=run) is None


def test_unreachable_queue_fails_the_reply_with_a_sentence(thread, annotator, llm_settings: FakeOpenAI,
                                                          settings) -> None:
    settings.RQ_QUEUES = {name: {"URL": "redis://127.0.0.1:9/0", "DEFAULT_TIMEOUT": 60}
                          for name in ("default", "cpu", "gpu-rocm", "gpu-cuda")}
    msg, reply = chat_service.message_post(thread=thread, user=annotator, content="hi")
    reply.refresh_from_db()
    assert reply.state == MessageState.FAILED and "Redis" in reply.error
    assert ChatMessage.objects.filter(pk=msg.pk).exists()  # the user's message is kept
