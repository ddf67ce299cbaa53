"""RQ jobs for the LLM: a chat reply streamed into Redis, and generation lanes.

Payloads are ids only. Endpoints (and keys) are resolved inside the job.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import django_rq
from django.utils import timezone
from redis.exceptions import RedisError

from annotations.models import ChatMessage, GenerationJob
from annotations.models.chat import MessageState
from pipeline.llm import relay
from pipeline.llm.client import chat_stream
from pipeline.llm.errors import LLMError, StreamInterrupted

log = logging.getLogger(__name__)
QUEUE = "default"
# An LLM reply can be long; the client's own timeout bounds each wait.
CHAT_JOB_TIMEOUT_S = 1800
GENERATION_LANE_TIMEOUT_S = 6 * 3600
STOP_CHECK_S = 0.2


def enqueue_chat_reply(message_id: int) -> None:
    try:
        django_rq.get_queue(QUEUE).enqueue(chat_reply, message_id, job_timeout=CHAT_JOB_TIMEOUT_S,
                                           description=f"chat reply {message_id}")
    except RedisError:
        # The user's message is saved; the reply cannot start. Say so on the
        # reply instead of leaving it "streaming" forever (or answering 500).
        log.warning("chat reply %s: the job queue is not reachable", message_id)
        ChatMessage.objects.filter(pk=message_id, state=MessageState.STREAMING).update(
            state=MessageState.FAILED,
            error="The job queue (Redis) is not reachable, so no reply was started; try again later.")


def chat_reply(message_id: int) -> str:
    """Stream the reply for assistant message `message_id` into its Redis stream.

    The message row moves streaming -> complete | stopped | failed exactly
    once (conditional update); only `complete` carries a finished reply.
    """
    from annotations.services.chat import messages_for_request
    from annotations.services.generation import endpoint_get

    msg = ChatMessage.objects.select_related("thread__sample").filter(pk=message_id).first()
    if msg is None or msg.state != MessageState.STREAMING:
        return "nothing to do"
    r = django_rq.get_connection(QUEUE)

    def finish(state: str, *, content: str, error: str = "", **fields: object) -> str:
        updated = ChatMessage.objects.filter(pk=message_id, state=MessageState.STREAMING).update(
            state=state, content=content, error=error, **fields)
        relay.publish_end(r, message_id, status=state if updated else "gone", error=error)
        return state

    publisher = relay.Publisher(r, message_id)
    try:
        endpoint = endpoint_get(name="default")
        messages = messages_for_request(msg)
        try:
            completion = chat_stream(
                endpoint, messages,
                on_delta=publisher.add,
                should_stop=_throttled(lambda: relay.stop_requested(r, message_id), STOP_CHECK_S),
            )
        finally:
            # Every delta is in Redis before the end entry is written.
            publisher.close()
    except StreamInterrupted as exc:
        return finish(MessageState.FAILED, content=exc.partial_text, error=exc.message)
    except LLMError as exc:
        return finish(MessageState.FAILED, content="", error=exc.message)
    except Exception:
        # Never leave a message "streaming" forever; the traceback goes to the
        # worker log (it holds no key: endpoints hide theirs from repr).
        log.exception("chat reply %s failed", message_id)
        return finish(MessageState.FAILED, content="", error="The reply failed with an internal error.")
    usage = completion.usage.as_dict()
    if not completion.complete:
        return finish(MessageState.STOPPED, content=completion.text, error="Stopped by the user.",
                      model=completion.model, usage=usage)
    return finish(MessageState.COMPLETE, content=completion.text, model=completion.model, usage=usage)


def _throttled(check: Callable[[], bool], every_s: float) -> Callable[[], bool]:
    """Ask Redis about the stop flag at most every `every_s`, not once per chunk:
    at hundreds of chunks a second the round trips were the worker's main cost."""
    last = [float("-inf")]

    def wrapped() -> bool:
        now = time.monotonic()
        if now - last[0] < every_s:
            return False
        last[0] = now
        return check()

    return wrapped


class QueueUnavailable(RuntimeError):
    pass


def enqueue_generation_start(job_id: int) -> None:
    try:
        django_rq.get_queue(QUEUE).enqueue(generation_start, job_id, description=f"generation job {job_id}")
    except RedisError:
        raise QueueUnavailable(
            f"Generation job #{job_id} is saved but the job queue (Redis) is not reachable; "
            "rerun the same command when it is (finished items are skipped).") from None


def generation_start(job_id: int) -> int:
    """Start `concurrency` lanes; each lane claims and does items until none is left."""
    job = GenerationJob.objects.get(pk=job_id)
    queue = django_rq.get_queue(QUEUE)
    for lane in range(job.concurrency):
        queue.enqueue(generation_lane, job_id, job_timeout=GENERATION_LANE_TIMEOUT_S,
                      description=f"generation job {job_id} lane {lane}")
    return job.concurrency


def generation_lane(job_id: int) -> int:
    from annotations.services.generation import (
        generation_item_claim,
        generation_item_run,
        generation_next_items,
    )

    job = GenerationJob.objects.get(pk=job_id)
    done = 0
    while True:
        claimed = None
        for item_id in generation_next_items(job=job, limit=job.concurrency + 1):
            claimed = generation_item_claim(item_id=item_id)
            if claimed is not None:
                break
        if claimed is None:
            return done
        generation_item_run(item=claimed)
        done += 1
        log.info("generation job %s: item %s finished at %s", job_id, claimed.pk, timezone.now())
