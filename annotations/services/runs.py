"""Verification runs: request, collect, cancel, refresh from Redis, detect lost runs, batches.

A run's state moves forward only through conditional updates
(`filter(pk=..., status__in=...).update(...)`, row count checked), so a retried
collect or two sweepers racing cannot record twice. The job itself runs on a GPU
host that has no database: it finds its spec in Redis and leaves its result there
(pipeline/worker/keys.py); `run_collect` writes it here.
"""

from __future__ import annotations

import datetime
import json
import logging
import time
from collections.abc import Iterable
from typing import Any

import redis
from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotations.models import Revision, RevisionKind, Run, RunRevision, Sample, User, VerificationBatch
from annotations.models.runs import FINISHED_RUN_STATUSES, Backend, RunStatus
from annotations.models.samples import RunOutcome
from annotations.selectors.samples import current_revisions
from pipeline.execution.engine import GOLD_SEPARATOR
from pipeline.execution.spec import JobSpec, Limits, SpecError, VerifyResult
from pipeline.worker import keys

log = logging.getLogger(__name__)

RUN_KINDS = (RevisionKind.REFERENCE, RevisionKind.CANDIDATE, RevisionKind.WRAPPER, RevisionKind.TEST)
ACTIVE = (RunStatus.QUEUED, RunStatus.RUNNING)
RESULT_STATUSES = {RunStatus.PASSED, RunStatus.FAILED, RunStatus.TIMEOUT, RunStatus.CRASHED, RunStatus.ERROR,
                   RunStatus.CANCELLED}
MAX_ATTEMPTS = 2  # the first try and one retry after it was lost
LANGUAGES = {"triton", "python", "hip", "cuda", "cpp"}


class RunError(Exception):
    """A run cannot be requested or changed as asked; the message says why (shown to the user)."""


def redis_conn() -> redis.Redis:
    import django_rq

    return django_rq.get_queue("default").connection


# --- the job spec ---------------------------------------------------------------
def _language(rev: Revision, default: str) -> str:
    lang = (rev.language or "").lower()
    if lang in LANGUAGES:
        return lang
    return default if default in LANGUAGES else "python"


def _wrapper_language(rev: Revision) -> str:
    lang = (rev.language or "").lower()
    if lang in LANGUAGES:
        return lang
    # LLM-written wrappers are Python adapters or C++ launchers with a PYBIND11 module.
    text = rev.content
    return "cpp" if "PYBIND11_MODULE" in text or "#include" in text else "python"


def sample_tolerances(sample: Sample) -> dict[str, dict[str, float]]:
    """Per-sample overrides live in sample.provenance["tolerances"] ({"float16": {"rtol": .., "atol": ..}})."""
    tol = (sample.provenance or {}).get("tolerances")
    return tol if isinstance(tol, dict) else {}


def run_spec(*, run: Run) -> JobSpec:
    """The plain-data job for a run, from exactly the revisions the run snapshotted."""
    revs = {rr.kind: rr.revision for rr in RunRevision.objects.filter(run=run).select_related("revision")}
    sample = run.sample
    ref = revs.get(RevisionKind.REFERENCE)
    if ref is None:
        raise SpecError("the run has no reference revision")
    data: dict[str, Any] = {
        "task_id": sample.task_id,
        "backend": run.backend,
        "reference": {"language": _language(ref, sample.reference_language), "code": ref.content},
        "test": revs[RevisionKind.TEST].content if RevisionKind.TEST in revs else "",
        "entry_point": sample.entry_point,
        "tolerances": sample_tolerances(sample),
        "limits": {"timeout_s": float(getattr(settings, "VERIFY_STEP_TIMEOUT_S", Limits.timeout_s))},
    }
    cand_override = (run.overrides or {}).get("candidate")
    if cand_override:
        data["candidate"] = {"language": cand_override["language"], "code": cand_override["code"]}
    elif RevisionKind.CANDIDATE in revs:
        cand = revs[RevisionKind.CANDIDATE]
        data["candidate"] = {"language": _language(cand, sample.target_language), "code": cand.content}
    if RevisionKind.WRAPPER in revs:
        w = revs[RevisionKind.WRAPPER]
        data["wrapper"] = {"language": _wrapper_language(w), "code": w.content}
    return JobSpec.from_dict(data)


def _check_runnable(sample: Sample, current: dict[str, Revision]) -> None:
    ref = current.get(RevisionKind.REFERENCE)
    if ref is None:
        raise RunError(f"{sample.task_id} has no reference revision to verify against.")
    if RevisionKind.TEST not in current and GOLD_SEPARATOR not in ref.content:
        raise RunError(f"{sample.task_id} has no test revision (docs/test-contract.md says what a test looks like).")


# --- request ------------------------------------------------------------------
def run_request(
    *,
    sample: Sample,
    backend: str,
    user: User | None,
    thread: Any = None,
    batch: VerificationBatch | None = None,
    purpose: str = "verify",
    overrides: dict[str, Any] | None = None,
) -> Run:
    """Snapshot the sample's current revisions into a queued run; enqueue it after commit."""
    if backend not in Backend.values:
        raise RunError(f"Unknown backend {backend!r}; choose one of {', '.join(Backend.values)}.")
    current = current_revisions(sample)
    _check_runnable(sample, current)
    with transaction.atomic():
        run = Run.objects.create(sample=sample, backend=backend, status=RunStatus.QUEUED, requested_by=user,
                                 thread=thread, batch=batch, purpose=purpose, overrides=overrides or {})
        RunRevision.objects.bulk_create(
            [RunRevision(run=run, revision=current[k], kind=k) for k in RUN_KINDS if k in current]
        )
        if purpose != "pre-eval":  # a pre-evaluation never stands for the sample's own state
            _mark_sample_pending(sample.pk)
        run_id = run.pk
        transaction.on_commit(lambda: enqueue_run(run_id=run_id))
    return run


def run_request_pre_eval(*, attempt: Any) -> Run:
    """Verify a pre-evaluation attempt (a different model's candidate) without making it a revision."""
    sample = attempt.sample
    language = attempt.language if attempt.language in LANGUAGES else sample.target_language
    backend = getattr(settings, "VERIFY_PRE_EVAL_BACKEND", Backend.CPU)
    return run_request(sample=sample, backend=backend, user=None, purpose="pre-eval",
                       overrides={"candidate": {"language": language, "code": attempt.content}})


def _mark_sample_pending(sample_id: int) -> None:
    Sample.objects.filter(pk=sample_id).update(latest_run_outcome=RunOutcome.PENDING)


def enqueue_run(*, run_id: int) -> None:
    """Write the spec to Redis and queue the job (called after the run's transaction committed)."""
    from annotations.jobs.runs import enqueue_execute

    run = Run.objects.select_related("sample").filter(pk=run_id).first()
    if run is None or run.status != RunStatus.QUEUED:
        return
    try:
        spec = run_spec(run=run)
    except SpecError as exc:
        _finish_without_result(run.pk, RunStatus.ERROR, f"cannot build the job: {exc}")
        return
    try:
        conn = redis_conn()
        conn.set(keys.spec(run.pk), json.dumps(spec.to_dict()), ex=keys.RETENTION_S)
        job_id = enqueue_execute(run_id=run.pk, attempt=run.attempt, backend=run.backend, spec=spec)
    except redis.RedisError as exc:
        log.warning("run %s: cannot queue: %s", run.pk, type(exc).__name__)
        _finish_without_result(run.pk, RunStatus.ERROR, "could not queue the run: Redis is unreachable")
        return
    Run.objects.filter(pk=run.pk).update(rq_job_id=job_id)


# --- collect ------------------------------------------------------------------
def run_collect(*, run_id: int, result: dict[str, Any]) -> bool:
    """Record a finished result once. Returns False if the run had already finished (idempotent)."""
    try:
        vr = VerifyResult.from_dict(result)
    except (TypeError, KeyError, ValueError) as exc:
        return _finish_without_result(run_id, RunStatus.ERROR, f"the worker returned an unreadable result: {exc}")
    status = vr.status if vr.status in RESULT_STATUSES else RunStatus.ERROR
    now = timezone.now()
    started = (datetime.datetime.fromtimestamp(time.time() - vr.duration_s, tz=datetime.UTC)
               if vr.duration_s else now)
    stages = {name: {"ok": st.ok, "message": st.message, "seconds": st.seconds, "skipped": st.skipped}
              for name, st in vr.stages.items()}
    fields = {
        "status": status,
        "stages": stages,
        "call_ok": stages.get("call", {}).get("ok"),
        "exe_ok": stages.get("exe", {}).get("ok"),
        "perf_ok": stages.get("perf", {}).get("ok"),
        "failed_stage": vr.failed_stage[:8],
        "message": vr.message,
        "speedup": vr.speedup,
        "speedup_flagged": vr.speedup_flagged,
        "timings": {**vr.timings, "duration_s": round(vr.duration_s, 3), "cache_hit": vr.cache_hit},
        "exit_code": vr.exit_code,
        "signal_name": vr.signal_name[:16],
        "host": vr.host[:255],
        "device": vr.device[:255],
        "toolchain": vr.toolchain,
        "emulated": vr.emulated,
        "caveats": vr.caveats,
        "log": vr.log,
        "finished_at": now,
    }
    with transaction.atomic():
        updated = Run.objects.filter(pk=run_id, status__in=ACTIVE).update(**fields)
        if not updated:
            return False
        Run.objects.filter(pk=run_id, started_at__isnull=True).update(started_at=started)
        run = Run.objects.get(pk=run_id)
        _after_finish(run)
    return True


def _finish_without_result(run_id: int, status: str, message: str) -> bool:
    with transaction.atomic():
        updated = Run.objects.filter(pk=run_id, status__in=ACTIVE).update(
            status=status, message=message, finished_at=timezone.now()
        )
        if updated:
            _after_finish(Run.objects.get(pk=run_id))
    return bool(updated)


def _after_finish(run: Run) -> None:
    """Denormalise the sample's latest outcome and tell the chat thread (after commit)."""
    latest = (Run.objects.filter(sample_id=run.sample_id, imported=False).exclude(purpose="pre-eval")
              .order_by("-created_at", "-pk").values_list("pk", "status").first())
    if latest is not None and latest[0] == run.pk and run.purpose != "pre-eval":
        outcome = run.status if run.status in RunOutcome.values else RunOutcome.ERROR
        Sample.objects.filter(pk=run.sample_id).update(latest_run_outcome=outcome)
    if run.thread_id:
        run_pk = run.pk
        transaction.on_commit(lambda: _post_to_thread(run_pk))


def _post_to_thread(run_id: int) -> None:
    try:
        from annotations.services import chat
    except ImportError:
        return
    post = getattr(chat, "chat_post_run_result", None)
    if post is not None:
        post(run=Run.objects.get(pk=run_id))


# --- cancel -------------------------------------------------------------------
def run_cancel(*, run: Run, user: User) -> Run:
    """Cancel a queued or running run (its requester or a maintainer)."""
    if run.requested_by_id != user.pk and user.role != "maintainer":
        raise PermissionDenied("Only the person who requested this run, or a maintainer, can cancel it.")
    if run.status not in ACTIVE:
        raise RunError(f"Run {run.pk} already finished ({run.get_status_display()}).")
    try:
        redis_conn().set(keys.cancel(run.pk), user.username, ex=keys.RETENTION_S)
    except redis.RedisError as exc:
        raise RunError("Cannot reach Redis to cancel the run; try again.") from exc
    # Not started yet: cancel here. Running: the worker sees the key within a
    # heartbeat, kills the step's process group and reports "cancelled".
    started = _redis_state(run.pk).get("status") == "running"
    if not started:
        _finish_without_result(run.pk, RunStatus.CANCELLED, f"cancelled by {user.username} before it started")
    run.refresh_from_db()
    return run


# --- refresh, lost runs, retries -------------------------------------------------
def _redis_state(run_id: int) -> dict[str, str]:
    try:
        raw: Any = redis_conn().hgetall(keys.state(run_id))
    except redis.RedisError:
        return {}
    return {k.decode(): v.decode() for k, v in raw.items()}


def run_refresh(*, run: Run) -> Run:
    """Bring a queued/running run up to date from Redis: started, finished, or lost (then retried once)."""
    if run.status not in ACTIVE or run.imported:
        return run
    try:
        conn = redis_conn()
        raw = conn.get(keys.result(run.pk, run.attempt))
        state = _redis_state(run.pk)
        beating = bool(conn.exists(keys.heartbeat(run.pk, run.attempt)))
    except redis.RedisError:
        return run  # cannot tell: leave it as it is, the next refresh will know
    if raw is not None:
        run_collect(run_id=run.pk, result=json.loads(raw))
    elif state.get("status") == "running" and state.get("attempt") == str(run.attempt):
        if run.status == RunStatus.QUEUED:
            started = datetime.datetime.fromtimestamp(float(state.get("started_at") or time.time()), tz=datetime.UTC)
            Run.objects.filter(pk=run.pk, status=RunStatus.QUEUED).update(
                status=RunStatus.RUNNING, started_at=started, host=state.get("host", "")[:255]
            )
        if not beating:
            run_mark_lost(run_id=run.pk)
    elif run.status == RunStatus.QUEUED and run.rq_job_id:
        _fail_if_the_queue_dropped_it(run)
    run.refresh_from_db()
    return run


def _fail_if_the_queue_dropped_it(run: Run) -> None:
    """A job RQ itself failed or stopped before our code claimed it would otherwise stay queued forever."""
    from rq.exceptions import NoSuchJobError
    from rq.job import Job, JobStatus

    try:
        job = Job.fetch(run.rq_job_id, connection=redis_conn())
        status = job.get_status()
    except NoSuchJobError:
        return  # not ours to judge: the queue may have been flushed; the run can be cancelled
    except redis.RedisError:
        return
    if status in (JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED):
        _finish_without_result(run.pk, RunStatus.ERROR,
                               f"the queue gave up on the job before a worker ran it (RQ status {getattr(status, 'value', status)})")


def run_mark_lost(*, run_id: int) -> Run | None:
    """The worker died mid-job (its heartbeat lapsed): mark the run lost and retry it once."""
    with transaction.atomic():
        updated = Run.objects.filter(pk=run_id, status__in=ACTIVE).update(
            status=RunStatus.LOST, finished_at=timezone.now(),
            message="the worker stopped sending heartbeats mid-job (killed or its host went away)",
        )
        if not updated:
            return None
        run = Run.objects.select_related("sample").get(pk=run_id)
        _after_finish(run)
        if run.attempt >= MAX_ATTEMPTS:
            Run.objects.filter(pk=run_id).update(message=run.message + "; already retried once, not retrying again")
            return None
        retry = Run.objects.create(
            sample=run.sample, backend=run.backend, status=RunStatus.QUEUED, requested_by=run.requested_by,
            thread=run.thread, batch=run.batch, purpose=run.purpose, overrides=run.overrides,
            attempt=run.attempt + 1, retry_of=run,
        )
        RunRevision.objects.bulk_create(
            [RunRevision(run=retry, revision_id=rr.revision_id, kind=rr.kind)
             for rr in RunRevision.objects.filter(run=run)]
        )
        if run.purpose != "pre-eval":
            _mark_sample_pending(run.sample_id)
        retry_id = retry.pk
        transaction.on_commit(lambda: enqueue_run(run_id=retry_id))
    return retry


def run_sweep(*, limit: int = 500) -> dict[str, int]:
    """Refresh every active run (oldest first): used by live pages, `verify --wait` and `runs_sweep`."""
    counts = {"checked": 0, "finished": 0, "lost": 0}
    for run in Run.objects.filter(status__in=ACTIVE, imported=False).order_by("created_at")[:limit]:
        counts["checked"] += 1
        after = run_refresh(run=run)
        if after.status == RunStatus.LOST:
            counts["lost"] += 1
        elif after.status in FINISHED_RUN_STATUSES:
            counts["finished"] += 1
    return counts


# --- batches ------------------------------------------------------------------
def batch_create(*, user: User | None, backend: str, samples: Iterable[Sample],
                 selection: dict[str, Any]) -> tuple[VerificationBatch, list[str]]:
    """One run per runnable sample; samples that cannot run are listed (with why) and skipped."""
    if backend not in Backend.values:
        raise RunError(f"Unknown backend {backend!r}; choose one of {', '.join(Backend.values)}.")
    samples = list(samples)
    if not samples:
        raise RunError("No samples match this selection.")
    skipped: list[str] = []
    with transaction.atomic():
        batch = VerificationBatch.objects.create(created_by=user, backend=backend, selection=selection)
        made = 0
        for sample in samples:
            try:
                run_request(sample=sample, backend=backend, user=user, batch=batch)
                made += 1
            except RunError as exc:
                skipped.append(str(exc))
        batch.total = made
        batch.selection = {**selection, "skipped": skipped}
        batch.save(update_fields=["total", "selection"])
    return batch, skipped


def samples_for_selection(*, task_ids: list[str] | None = None, source: str = "", all_samples: bool = False
                          ) -> list[Sample]:
    """Resolve a batch selection; unknown task ids are an error (nothing is queued)."""
    if task_ids:
        found = {s.task_id: s for s in Sample.objects.filter(task_id__in=task_ids)}
        missing = [t for t in task_ids if t not in found]
        if missing:
            raise RunError(f"Unknown task ids: {', '.join(missing[:20])}")
        return [found[t] for t in dict.fromkeys(task_ids)]
    qs = Sample.objects.all()
    if source:
        qs = qs.filter(source=source)
    elif not all_samples:
        raise RunError("Choose task ids, a source, or all samples.")
    return list(qs.order_by("task_id"))


def runs_active_for(batch: VerificationBatch) -> Q:
    return Q(batch=batch, status__in=ACTIVE)
