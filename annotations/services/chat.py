"""The chat refinement panel: threads, turns, stop/regenerate/edit, apply, run results.

The LLM reply itself is produced by an RQ job (annotations.jobs.llm.chat_reply)
that streams into a Redis stream per message; nothing here waits on the LLM.
An assistant message is saved as `complete` only when the whole reply arrived;
a stopped or broken reply is kept as `stopped`/`failed` and can never be
applied as a revision.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from annotations.models import ChatMessage, ChatThread, Revision, Run, Sample, User
from annotations.models.chat import MessageRole, MessageState
from annotations.models.samples import RevisionKind, RevisionOrigin
from annotations.services.audit import audit_record
from annotations.services.revisions import revision_create
from pipeline.llm import codeblocks
from pipeline.llm import context as llm_context

# Kinds a code block may be applied as (the buttons under each block).
APPLY_KINDS = (RevisionKind.CANDIDATE, RevisionKind.WRAPPER, RevisionKind.TEST, RevisionKind.INSTRUCTION)
CONTEXT_KINDS = (RevisionKind.REFERENCE, RevisionKind.INSTRUCTION, RevisionKind.CANDIDATE,
                 RevisionKind.WRAPPER, RevisionKind.TEST, RevisionKind.ANALYSIS)
MAX_MESSAGE_CHARS = 100_000
# A reply still "streaming" this long after it was asked for has lost its
# worker (the job's own timeout is 30 minutes and ends it as failed).
STALE_AFTER_S = 1800 + 120
RUN_LOG_TAIL_CHARS = 6000


class ChatError(ValueError):
    """A chat action that cannot be done; the message is shown to the user."""


# --- context -----------------------------------------------------------------
def current_revisions(sample: Sample) -> dict[str, Revision]:
    out: dict[str, Revision] = {}
    for rev in Revision.objects.filter(sample=sample, kind__in=CONTEXT_KINDS).order_by("kind", "-seq"):
        out.setdefault(rev.kind, rev)
    return out


def latest_run(sample: Sample) -> Run | None:
    return Run.objects.filter(sample=sample, imported=False).exclude(purpose="pre-eval").order_by("-created_at").first()


def run_report(run: Run) -> str:
    """A run as the expert would paste it: status, stages, errors, mismatch, log tail."""
    lines = [f"Run #{run.pk} on {run.get_backend_display()}: {run.get_status_display()}"]
    if run.emulated:
        lines.append("(HIP emulated on CUDA: wavefront 64 vs warp 32 may matter)")
    stage_messages = []
    for stage in ("call", "exe", "perf"):
        info = (run.stages or {}).get(stage)
        if not isinstance(info, dict):
            continue
        ok = info.get("ok")
        mark = "passed" if ok is True else "FAILED" if ok is False else "not run"
        line = f"- {stage}: {mark}"
        if info.get("message"):
            line += f": {info['message']}"
            stage_messages.append(str(info["message"]).strip())
        lines.append(line)
    if run.speedup is not None:
        lines.append(f"- speedup: {run.speedup:.2f}x" + (" (flagged as suspicious)" if run.speedup_flagged else ""))
    if run.exit_code is not None:
        lines.append(f"- exit code: {run.exit_code}")
    if run.signal_name:
        lines.append(f"- signal: {run.signal_name}")
    if run.message:
        message = run.message
        # The run's message often repeats the failing stage's; say it once.
        for repeated in stage_messages:
            if repeated and repeated in message:
                message = message.replace(repeated, "(see the stage above)")
        lines.append(f"\nMessage:\n{message}")
    for caveat in run.caveats or []:
        lines.append(f"Caveat: {caveat}")
    if run.log:
        tail = run.log[-RUN_LOG_TAIL_CHARS:]
        cut = len(run.log) - len(tail)
        lines.append(f"\nLog{f' (last {len(tail)} characters of {len(run.log)})' if cut else ''}:\n{tail}")
    return "\n".join(lines)


def context_parts(sample: Sample) -> list[llm_context.Part]:
    parts = []
    revs = current_revisions(sample)
    for kind in CONTEXT_KINDS:
        rev = revs.get(kind)
        if rev is None:
            continue
        parts.append(llm_context.Part(
            key=kind, label=f"{kind} (revision {rev.seq}, {rev.author_label})",
            text=rev.content, language=rev.language if kind != RevisionKind.INSTRUCTION else ""))
    run = latest_run(sample)
    if run is not None and run.is_finished:
        parts.append(llm_context.Part(key="run", label=f"latest run #{run.pk}", text=run_report(run)))
    return parts


# --- threads and turns --------------------------------------------------------
def thread_create(*, sample: Sample, user: User, title: str = "") -> ChatThread:
    title = title.strip()[:200]
    count = ChatThread.objects.filter(sample=sample).count()
    return ChatThread.objects.create(sample=sample, created_by=user, title=title or f"Thread {count + 1}")


def thread_default(*, sample: Sample, user: User) -> ChatThread:
    """The sample's first thread, created on first use."""
    thread = ChatThread.objects.filter(sample=sample).order_by("created_at", "id").first()
    return thread or thread_create(sample=sample, user=user)


def active_messages(thread: ChatThread) -> list[ChatMessage]:
    """The thread's messages that still count: not replaced by an edit or a
    regeneration, and (for replies) answering a message that still counts."""
    msgs = list(thread.messages.order_by("created_at", "id"))
    replaced = {m.replaces_id for m in msgs if m.replaces_id}
    active: list[ChatMessage] = []
    active_ids: set[int] = set()
    for m in msgs:
        if m.pk in replaced:
            continue
        reply_to = (m.context or {}).get("reply_to")
        if m.role == MessageRole.ASSISTANT and reply_to and reply_to not in active_ids:
            continue
        active.append(m)
        active_ids.add(m.pk)
    return active


def _history(thread: ChatThread, upto: ChatMessage) -> list[dict[str, str]]:
    """user/assistant/tool turns the model sees, ending with `upto`."""
    out = []
    for m in active_messages(thread):
        if m.created_at > upto.created_at or (m.created_at == upto.created_at and m.pk > upto.pk):
            break
        if m.role == MessageRole.ASSISTANT and m.state != MessageState.COMPLETE:
            continue  # a stopped or broken reply is not something the model said
        if m.role == MessageRole.TOOL:
            # Tool results go in as user-visible text: not every OpenAI-compatible
            # server accepts role "tool" without a tool call before it.
            out.append({"role": "user", "content": f"[verification result]\n{m.content}"})
        elif m.role in (MessageRole.USER, MessageRole.ASSISTANT):
            out.append({"role": m.role, "content": m.content})
        if m.pk == upto.pk:
            break
    return out


def _start_reply(*, thread: ChatThread, reply_to: ChatMessage, exclude: list[str],
                 replaces: ChatMessage | None = None) -> ChatMessage:
    from annotations.jobs.llm import enqueue_chat_reply
    from annotations.services.generation import endpoint_get

    endpoint = endpoint_get(name="default")
    if not endpoint.configured:
        raise ChatError(
            f"No LLM is configured: set {' and '.join(endpoint.missing())} "
            "(environment, or a maintainer's LLM settings page)."
        )
    parts = context_parts(thread.sample)
    unknown = set(exclude) - {p.key for p in parts}
    exclude = [e for e in exclude if e not in unknown]
    summary = llm_context.summary(parts, exclude=exclude)
    reply = ChatMessage.objects.create(
        thread=thread, role=MessageRole.ASSISTANT, state=MessageState.STREAMING, model=endpoint.model,
        replaces=replaces,
        context={
            "reply_to": reply_to.pk,
            "exclude": exclude,
            "parts": summary,
            "tokens": sum(int(str(p["tokens"])) for p in summary if p["included"]),
            "revisions": {k: r.pk for k, r in current_revisions(thread.sample).items() if k not in exclude},
        },
    )
    transaction.on_commit(lambda: enqueue_chat_reply(reply.pk))
    return reply


def message_post(*, thread: ChatThread, user: User, content: str, exclude: list[str] | None = None,
                 replaces: ChatMessage | None = None) -> tuple[ChatMessage, ChatMessage]:
    content = content.strip()
    if not content:
        raise ChatError("The message is empty.")
    if len(content) > MAX_MESSAGE_CHARS:
        raise ChatError(f"The message is {len(content)} characters long; at most {MAX_MESSAGE_CHARS} are allowed.")
    with transaction.atomic():
        msg = ChatMessage.objects.create(thread=thread, role=MessageRole.USER, content=content, author=user,
                                         replaces=replaces)
        reply = _start_reply(thread=thread, reply_to=msg, exclude=list(exclude or []))
    return msg, reply


def message_edit_resend(*, message: ChatMessage, user: User, content: str,
                        exclude: list[str] | None = None) -> tuple[ChatMessage, ChatMessage]:
    """A new user message replacing `message` (kept, shown as edited) and a new reply."""
    if message.role != MessageRole.USER:
        raise ChatError("Only your own messages can be edited.")
    if message.author_id != user.pk:
        raise ChatError("Only the author of a message can edit it.")
    return message_post(thread=message.thread, user=user, content=content, exclude=exclude, replaces=message)


def message_regenerate(*, message: ChatMessage, user: User) -> ChatMessage:
    """A fresh reply to the same user message; the old reply stays, marked replaced."""
    if message.role != MessageRole.ASSISTANT:
        raise ChatError("Only an assistant reply can be regenerated.")
    if message.state == MessageState.STREAMING:
        raise ChatError("This reply is still streaming; stop it first.")
    reply_to_id = (message.context or {}).get("reply_to")
    reply_to = (ChatMessage.objects.filter(pk=int(reply_to_id), thread=message.thread).first()
                if isinstance(reply_to_id, int) else None)
    if reply_to is None:
        raise ChatError("The message this reply answered no longer exists.")
    with transaction.atomic():
        return _start_reply(thread=message.thread, reply_to=reply_to,
                            exclude=list((message.context or {}).get("exclude", [])), replaces=message)


def message_stop(*, message: ChatMessage, user: User) -> None:
    from pipeline.llm import relay

    if message.role != MessageRole.ASSISTANT or message.state != MessageState.STREAMING:
        return  # already finished: stopping is a no-op, not an error
    import django_rq

    relay.request_stop(django_rq.get_connection("default"), message.pk)


def message_mark_lost(*, message_id: int) -> bool:
    """End a reply whose worker died (killed, host lost) so nobody waits forever."""
    cutoff = timezone.now() - timedelta(seconds=STALE_AFTER_S)
    return ChatMessage.objects.filter(pk=message_id, state=MessageState.STREAMING, created_at__lt=cutoff).update(
        state=MessageState.FAILED, error="The reply was lost: its worker stopped before it finished.") == 1


def messages_for_request(message: ChatMessage) -> list[dict[str, str]]:
    """Everything the job sends for `message` (an assistant reply being made)."""
    from pipeline.llm import prompts

    thread = message.thread
    ctx = message.context or {}
    parts = context_parts(thread.sample)
    reply_to = ChatMessage.objects.get(pk=ctx["reply_to"])
    system = prompts.load("chat_system").render({
        "task_id": thread.sample.task_id,
        "context": llm_context.render(parts, exclude=ctx.get("exclude", [])),
    })
    return system + _history(thread, reply_to)


# --- applying code ------------------------------------------------------------
@dataclass(frozen=True)
class ApplyPreview:
    message: ChatMessage
    block: codeblocks.CodeBlock
    kind: str
    current: Revision | None
    diff: list[str]


def apply_preview(*, message: ChatMessage, index: int, kind: str) -> ApplyPreview:
    if kind not in APPLY_KINDS:
        raise ChatError(f"A code block can be applied as {', '.join(APPLY_KINDS)}, not {kind!r}.")
    if message.role != MessageRole.ASSISTANT:
        raise ChatError("Only code from an assistant reply can be applied.")
    if message.state != MessageState.COMPLETE:
        raise ChatError("This reply is incomplete (stopped or broken off); regenerate it before applying its code.")
    blocks = codeblocks.code_blocks(message.content)
    if not 0 <= index < len(blocks):
        raise ChatError(f"The reply has no code block {index + 1}.")
    block = blocks[index]
    if not block.closed:
        raise ChatError("This code block is not closed; it may be cut off.")
    current = Revision.objects.filter(sample=message.thread.sample, kind=kind).order_by("-seq").first()
    old = current.content if current else ""
    diff = [line.rstrip("\n") for line in difflib.unified_diff(
        old.splitlines(), block.code.splitlines(),
        fromfile=f"{kind} revision {current.seq}" if current else f"{kind} (none yet)",
        tofile=f"{kind} from message {message.pk}, block {index + 1}", n=3, lineterm="")]
    return ApplyPreview(message=message, block=block, kind=kind, current=current, diff=diff)


def _block_language(sample: Sample, kind: str, block_lang: str) -> str:
    if kind == RevisionKind.INSTRUCTION:
        return "markdown"
    if kind == RevisionKind.CANDIDATE:
        return sample.target_language
    if kind in (RevisionKind.WRAPPER, RevisionKind.TEST):
        return {"cpp": "cpp", "c++": "cpp", "hip": "hip", "cuda": "cuda"}.get(block_lang, "python")
    return block_lang


def message_apply(*, message: ChatMessage, index: int, kind: str, user: User,
                  expected_parent: int | None = None) -> Revision:
    """Create a revision of `kind` from code block `index` of a complete reply.

    expected_parent is the revision the user saw in the diff (0: none); if another
    revision landed since, the apply is refused rather than silently
    overwriting what the user did not review.
    """
    preview = apply_preview(message=message, index=index, kind=kind)
    current_id = preview.current.pk if preview.current else None
    if expected_parent is not None and expected_parent != (current_id or 0):
        raise ChatError("The current revision changed since the diff was shown; review the new diff.")
    if preview.current is not None and preview.current.content == preview.block.code:
        raise ChatError(f"The code block is identical to the current {kind}; nothing to apply.")
    sample = message.thread.sample
    with transaction.atomic():
        rev = revision_create(
            sample=sample, kind=kind, content=preview.block.code, author=user,
            origin=RevisionOrigin.CHAT,
            language=_block_language(sample, kind, preview.block.language),
            provenance={"message_id": message.pk, "thread_id": message.thread_id, "block": index,
                        "model": message.model, "usage": message.usage,
                        "template": "chat_system"},
        )
        ChatMessage.objects.create(
            thread=message.thread, role=MessageRole.SYSTEM, author=user,
            content=f"{user.username} applied block {index + 1} of message {message.pk} as {kind} revision {rev.seq}.",
            context={"applied": {"revision_id": rev.pk, "message_id": message.pk, "block": index, "kind": kind}},
        )
        audit_record(action="chat_apply", sample=sample, actor=user,
                     data={"revision_id": rev.pk, "message_id": message.pk, "kind": kind})
    return rev


# --- runs ---------------------------------------------------------------------
def thread_run(*, thread: ChatThread, user: User, backend: str) -> Run:
    from annotations.services.runs import run_request

    return run_request(sample=thread.sample, backend=backend, user=user, thread=thread)


def chat_post_run_result(*, run: Run) -> ChatMessage | None:
    """Post a finished run's result into its thread as a tool message (once)."""
    if run.thread_id is None:
        return None
    with transaction.atomic():
        existing = ChatMessage.objects.filter(thread_id=run.thread_id, role=MessageRole.TOOL, run=run).first()
        if existing is not None:
            return existing  # a retried collect step must not post twice
        return ChatMessage.objects.create(
            thread_id=run.thread_id, role=MessageRole.TOOL, run=run, content=run_report(run),
            context={"run_status": run.status},
        )


def llm_configured() -> tuple[bool, list[str]]:
    from annotations.services.generation import endpoint_get

    ep = endpoint_get(name="default")
    return ep.configured, ep.missing()

