"""RQ glue for verification runs. Jobs take ids and stay thin.

- `execute` (pipeline.worker.jobs.execute_run) runs on the cpu / gpu-cuda / gpu-rocm
  queues, on hosts that have only Redis; it is enqueued by name so this module
  never needs torch.
- `run_collect_job` runs on `default` (a Django worker): it reads the result the
  GPU host left in Redis and records it once.
"""

from __future__ import annotations

import json

import django_rq

from pipeline.execution.spec import JobSpec
from pipeline.worker import keys

EXECUTE_FUNC = "pipeline.worker.jobs.execute_run"


def job_timeout_for(spec: JobSpec) -> int:
    """RQ's own timeout: generous enough for two builds, both sides and the comparison."""
    lim = spec.limits
    return int(2 * lim.build_timeout_s + 2 * lim.timeout_s + 300)


def enqueue_execute(*, run_id: int, attempt: int, backend: str, spec: JobSpec) -> str:
    queue = django_rq.get_queue(keys.QUEUE_FOR_BACKEND[backend])
    job = queue.enqueue(
        EXECUTE_FUNC, run_id, attempt,
        job_id=f"ks-run-{run_id}-{attempt}",
        job_timeout=job_timeout_for(spec),
        result_ttl=24 * 3600,
        failure_ttl=7 * 24 * 3600,
        description=f"verify run {run_id} ({spec.task_id}) attempt {attempt} on {backend}",
    )
    return str(job.id)


def run_collect_job(run_id: int, attempt: int) -> bool:
    """Record the result of (run, attempt) from Redis; a second call changes nothing."""
    from annotations.models import Run
    from annotations.services.runs import redis_conn, run_collect

    raw = redis_conn().get(keys.result(run_id, attempt))
    run = Run.objects.filter(pk=run_id).only("attempt", "status").first()
    if raw is None or run is None or run.attempt != attempt:
        return False  # an old attempt's result, or the run is gone
    return run_collect(run_id=run_id, result=json.loads(raw))


def run_sweep_job() -> dict[str, int]:
    from annotations.services.runs import run_sweep

    return run_sweep()
