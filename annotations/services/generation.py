"""LLM endpoints (environment + a maintainer's overrides) and generation jobs.

Jobs and their items carry ids and an endpoint *name*; the endpoint (with its
key) is resolved here, in the worker, at the moment of the call.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotations.models import (
    EndpointOverride,
    GenerationItem,
    GenerationJob,
    PreEvalAttempt,
    Revision,
    Sample,
    User,
)
from annotations.models.llm import GenerationWhat, ItemStatus
from annotations.models.samples import RevisionKind, RevisionOrigin
from annotations.services.revisions import revision_create
from pipeline.llm import tasks
from pipeline.llm.client import Usage
from pipeline.llm.config import DEFAULT_ENDPOINT, Endpoint
from pipeline.llm.errors import LLMError

ENDPOINT_NAMES = (DEFAULT_ENDPOINT, "preeval")
# Which endpoint each task uses: pre-evaluation wants a *different* model.
ENDPOINT_FOR = {GenerationWhat.PRE_EVAL: "preeval"}
MAX_CONCURRENCY = 16


class GenerationError(ValueError):
    pass


# --- endpoints --------------------------------------------------------------
def _env_endpoint(name: str) -> Endpoint:
    if name == "preeval":
        base = _env_endpoint(DEFAULT_ENDPOINT)
        own_url = settings.LLM_PREEVAL_BASE_URL
        return dataclasses.replace(
            base, name="preeval",
            base_url=own_url or base.base_url,
            model=settings.LLM_PREEVAL_MODEL or base.model,
            # The default key is for the default server; another server needs its own.
            api_key=settings.LLM_PREEVAL_API_KEY or ("" if own_url else base.api_key),
        )
    return Endpoint(
        name=name,
        base_url=settings.LLM_BASE_URL,
        model=settings.LLM_MODEL,
        api_key=settings.LLM_API_KEY,
        timeout_s=float(settings.LLM_TIMEOUT),
        max_tokens=int(settings.LLM_MAX_TOKENS),
        temperature=float(settings.LLM_TEMPERATURE),
        max_retries=int(settings.LLM_MAX_RETRIES),
        backoff_s=float(getattr(settings, "LLM_BACKOFF", 1.0)),
    )


def endpoint_get(*, name: str = DEFAULT_ENDPOINT) -> Endpoint:
    """The effective endpoint: environment, then the maintainer's override."""
    if name not in ENDPOINT_NAMES:
        raise GenerationError(f"unknown LLM endpoint {name!r}; known: {', '.join(ENDPOINT_NAMES)}")
    ep = _env_endpoint(name)
    override = EndpointOverride.objects.filter(name=name).first()
    if override is not None:
        ep = ep.with_overrides({
            "base_url": override.base_url, "model": override.model, "api_key": override.api_key,
            "timeout_s": override.timeout_s, "max_tokens": override.max_tokens,
            "temperature": override.temperature,
        })
    return ep


def endpoint_override_save(*, name: str, user: User, base_url: str = "", model: str = "",
                           api_key: str | None = None, clear_key: bool = False,
                           timeout_s: float | None = None, max_tokens: int | None = None,
                           temperature: float | None = None) -> EndpointOverride:
    """Save a maintainer's override. api_key None keeps the stored key; clear_key removes it."""
    if name not in ENDPOINT_NAMES:
        raise GenerationError(f"unknown LLM endpoint {name!r}")
    base_url = base_url.strip()
    if base_url and not base_url.startswith(("http://", "https://")):
        raise GenerationError("The base URL must start with http:// or https://.")
    if timeout_s is not None and not 1 <= timeout_s <= 3600:
        raise GenerationError("The timeout must be between 1 and 3600 seconds.")
    if max_tokens is not None and not 1 <= max_tokens <= 1_000_000:
        raise GenerationError("Max tokens must be between 1 and 1,000,000.")
    if temperature is not None and not 0 <= temperature <= 2:
        raise GenerationError("The temperature must be between 0 and 2.")
    with transaction.atomic():
        obj, _ = EndpointOverride.objects.select_for_update().get_or_create(name=name)
        obj.base_url = base_url
        obj.model = model.strip()[:200]
        if clear_key:
            obj.api_key = ""
        elif api_key:
            obj.api_key = api_key.strip()
        obj.timeout_s = timeout_s
        obj.max_tokens = max_tokens
        obj.temperature = temperature
        obj.updated_by = user
        obj.save()
    return obj


# --- generation jobs ----------------------------------------------------------
def current(sample: Sample, kind: str) -> Revision | None:
    return Revision.objects.filter(sample=sample, kind=kind).order_by("-seq").first()


def samples_select(*, task_ids: Iterable[str] = (), source: str = "") -> list[Sample]:
    ids = [t for t in task_ids if t]
    if not ids and not source:
        raise GenerationError("Name task ids or a --source.")
    qs = Sample.objects.all()
    cond = Q()
    if ids:
        cond |= Q(task_id__in=ids)
    if source:
        cond |= Q(source=source)
    found = list(qs.filter(cond).order_by("task_id"))
    missing = sorted(set(ids) - {s.task_id for s in found})
    if missing:
        raise GenerationError(f"No sample with task id {', '.join(missing[:10])}"
                              + (f" (and {len(missing) - 10} more)" if len(missing) > 10 else "") + ".")
    if not found:
        raise GenerationError(f"No samples from source {source!r}.")
    return found


def generation_job_create(*, what: str, samples: list[Sample], user: User | None = None,
                          concurrency: int = 2, force: bool = False,
                          selection: dict[str, Any] | None = None) -> tuple[GenerationJob, int]:
    """A job with one item per sample; items already done for `what` are skipped
    (resumable) unless force. Returns the job and the number of items to do."""
    if what not in GenerationWhat.values:
        raise GenerationError(f"Unknown generation {what!r}; choose one of {', '.join(GenerationWhat.values)}.")
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise GenerationError(f"The concurrency must be between 1 and {MAX_CONCURRENCY}.")
    endpoint_name = ENDPOINT_FOR.get(GenerationWhat(what), DEFAULT_ENDPOINT)
    ep = endpoint_get(name=endpoint_name)
    if not ep.configured:
        raise GenerationError(f"No LLM is configured for {what}: set {' and '.join(ep.missing())}.")
    done = set()
    if not force:
        done = set(GenerationItem.objects.filter(
            job__what=what, sample__in=samples, status=ItemStatus.DONE).values_list("sample_id", flat=True))
    with transaction.atomic():
        job = GenerationJob.objects.create(what=what, endpoint=endpoint_name, concurrency=concurrency,
                                           created_by=user, selection=selection or {})
        GenerationItem.objects.bulk_create([
            GenerationItem(job=job, sample=s,
                           status=ItemStatus.SKIPPED if s.pk in done else ItemStatus.PENDING,
                           error="already generated (use --force to redo)" if s.pk in done else "")
            for s in samples
        ])
        todo = len(samples) - len(done)
        if todo:
            from annotations.jobs.llm import enqueue_generation_start

            transaction.on_commit(lambda: enqueue_generation_start(job.pk))
    return job, todo


def generation_job_progress(job: GenerationJob) -> dict[str, Any]:
    counts = {s: 0 for s in ItemStatus.values}
    usage = Usage()
    for status, u in job.items.values_list("status", "usage"):
        counts[status] += 1
        if u:
            usage = usage + Usage(int(u.get("prompt_tokens", 0)), int(u.get("completion_tokens", 0)),
                                  bool(u.get("estimated", False)))
    total = sum(counts.values())
    finished = counts[ItemStatus.DONE] + counts[ItemStatus.FAILED] + counts[ItemStatus.SKIPPED]
    return {"total": total, "finished": finished, "counts": counts, "usage": usage,
            "complete": finished == total}


def generation_item_claim(*, item_id: int) -> GenerationItem | None:
    """Move an item pending -> running; None if someone else has it (or it is done)."""
    claimed = GenerationItem.objects.filter(pk=item_id, status=ItemStatus.PENDING).update(
        status=ItemStatus.RUNNING, started_at=timezone.now())
    if claimed != 1:
        return None
    return GenerationItem.objects.select_related("job", "sample").get(pk=item_id)


def _label(draft: tasks.Draft) -> str:
    return f"llm:{draft.provenance.get('model', '?')}"


def _require(sample: Sample, kind: str) -> Revision:
    rev = current(sample, kind)
    if rev is None or not rev.content.strip():
        raise GenerationError(f"The sample has no {kind} revision to work from.")
    return rev


def generation_item_run(*, item: GenerationItem) -> None:
    """Do one item and record its result; errors are recorded, never raised."""
    sample = item.sample
    what = item.job.what
    try:
        ep = endpoint_get(name=item.job.endpoint)
        outcome = _generate(what, sample, ep)
        results = _store(what, sample, outcome, item)
    except (LLMError, GenerationError) as exc:
        GenerationItem.objects.filter(pk=item.pk, status=ItemStatus.RUNNING).update(
            status=ItemStatus.FAILED, error=str(exc), finished_at=timezone.now())
        return
    GenerationItem.objects.filter(pk=item.pk, status=ItemStatus.RUNNING).update(
        status=ItemStatus.DONE, error="", usage=outcome.usage.as_dict(), results=results,
        finished_at=timezone.now())


def _generate(what: str, sample: Sample, ep: Endpoint) -> tasks.Outcome:
    if what == GenerationWhat.WRAPPER_TEST:
        ref = _require(sample, RevisionKind.REFERENCE)
        instr = current(sample, RevisionKind.INSTRUCTION)
        return tasks.wrapper_and_test(ep, code=ref.content, language=ref.language or sample.reference_language,
                                      context=instr.content if instr else "")
    if what == GenerationWhat.HIP:
        instr = _require(sample, RevisionKind.INSTRUCTION)
        ref = _require(sample, RevisionKind.REFERENCE)
        return tasks.hip_candidate(ep, instruction=instr.content, reference=ref.content)
    if what == GenerationWhat.INSTRUCTION:
        ref = _require(sample, RevisionKind.REFERENCE)
        return tasks.instruction(ep, code=ref.content, language=ref.language or sample.reference_language,
                                 target=sample.get_target_language_display(),
                                 entry_point=sample.entry_point or sample.kernel_name)
    if what == GenerationWhat.PRE_EVAL:
        instr = _require(sample, RevisionKind.INSTRUCTION)
        return tasks.pre_eval(ep, instruction_text=instr.content, target=sample.target_language)
    raise GenerationError(f"unknown generation {what!r}")


def _store(what: str, sample: Sample, outcome: tasks.Outcome, item: GenerationItem) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with transaction.atomic():
        if what == GenerationWhat.PRE_EVAL:
            draft = outcome.drafts[0]
            attempt = PreEvalAttempt.objects.create(
                sample=sample, instruction=current(sample, RevisionKind.INSTRUCTION), content=draft.content,
                language=sample.target_language, model=str(draft.provenance.get("model", "")),
                provenance={**draft.provenance, "generation_item": item.pk})
            results["pre_eval_attempt"] = attempt.pk
            transaction.on_commit(lambda: _verify_pre_eval(attempt.pk))
            return results
        for draft in outcome.drafts:
            rev = revision_create(
                sample=sample, kind=draft.kind, content=draft.content, author_label=_label(draft),
                origin=RevisionOrigin.GENERATED,
                language="json" if draft.kind == RevisionKind.ANALYSIS else "",
                provenance={**draft.provenance, "generation_item": item.pk, "generation_job": item.job_id},
            )
            results[draft.kind] = rev.pk
    return results


def _verify_pre_eval(attempt_id: int) -> None:
    """Verify the attempt (a run with purpose "pre-eval" that never touches the
    revisions); a refusal is recorded on the attempt, never raised into the item."""
    try:
        from annotations.services import runs as runs_service
    except ImportError:  # the verification area is optional in a partial checkout
        PreEvalAttempt.objects.filter(pk=attempt_id).update(
            verify_error="Verification is not available in this installation.")
        return
    attempt = PreEvalAttempt.objects.select_related("sample").get(pk=attempt_id)
    try:
        run = runs_service.run_request_pre_eval(attempt=attempt)
    except runs_service.RunError as exc:
        PreEvalAttempt.objects.filter(pk=attempt_id).update(verify_error=str(exc))
        return
    PreEvalAttempt.objects.filter(pk=attempt_id).update(run=run)


def generation_next_items(*, job: GenerationJob, limit: int) -> list[int]:
    return list(job.items.filter(status=ItemStatus.PENDING).order_by("id").values_list("id", flat=True)[:limit])
