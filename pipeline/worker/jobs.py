"""The RQ job a verification worker runs: `execute_run(run_id, attempt)`.

It takes ids only: the job spec waits in Redis (`keys.spec`), written by the web
side after its transaction committed. The job
1. claims (run, attempt) with SET NX, so two workers never run one job twice;
2. heartbeats while it works (a run whose heartbeat lapses is marked lost and
   retried once by the Django side), and watches for a cancel request;
3. streams every log line into the run's Redis stream as it is produced;
4. stores the result and enqueues the collect job on `default` (by name: this
   host has no Django).
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from typing import Any

import redis
from rq import Queue, get_current_job

from pipeline.execution.engine import verify
from pipeline.execution.spec import CANCELLED, ERROR, JobSpec, SpecError, VerifyResult
from pipeline.worker import keys

HEARTBEAT_TTL_S = float(os.environ.get("KS_HEARTBEAT_TTL", "15"))
HEARTBEAT_EVERY_S = max(0.2, HEARTBEAT_TTL_S / 5)


def _connection() -> redis.Redis:
    job = get_current_job()
    if job is not None:
        return job.connection
    return redis.Redis.from_url(os.environ["REDIS_URL"])


class RunLog:
    """Appends lines to the run's stream immediately (the page shows them within a second)."""

    def __init__(self, conn: redis.Redis, run_id: int, attempt: int) -> None:
        self.conn, self.key, self.attempt = conn, keys.log_stream(run_id), attempt
        self.failed = False

    def __call__(self, line: str) -> None:
        if self.failed:
            return
        try:
            self.conn.xadd(self.key, {"line": line[:4000], "attempt": self.attempt},
                           maxlen=keys.LOG_MAXLEN, approximate=True)
        except redis.RedisError:
            self.failed = True  # the verdict still reaches the database through the result key

    def end(self) -> None:
        try:
            self.conn.xadd(self.key, {"line": "", "attempt": self.attempt, "end": 1}, maxlen=keys.LOG_MAXLEN,
                           approximate=True)
            self.conn.expire(self.key, keys.RETENTION_S)
        except redis.RedisError:
            pass


def _heartbeat(conn: redis.Redis, run_id: int, attempt: int, stop: threading.Event, cancel: threading.Event) -> None:
    while not stop.is_set():
        try:
            conn.set(keys.heartbeat(run_id, attempt), str(time.time()), ex=max(1, int(HEARTBEAT_TTL_S)))
            if conn.exists(keys.cancel(run_id)):
                cancel.set()
        except redis.RedisError:
            pass
        stop.wait(HEARTBEAT_EVERY_S)


def execute_run(run_id: int, attempt: int = 1) -> dict[str, Any]:
    conn = _connection()
    worker = f"{socket.gethostname()}:{os.getpid()}"
    log = RunLog(conn, run_id, attempt)
    if not conn.set(keys.claim(run_id, attempt), worker, nx=True, ex=keys.RETENTION_S):
        owner = conn.get(keys.claim(run_id, attempt))
        return {"run_id": run_id, "attempt": attempt, "skipped": f"already claimed by {owner!r}"}
    # Heartbeat first, then state: a reader that sees "running" also sees a heartbeat.
    conn.set(keys.heartbeat(run_id, attempt), str(time.time()), ex=max(1, int(HEARTBEAT_TTL_S)))
    conn.hset(keys.state(run_id), mapping={"status": "running", "attempt": attempt, "worker": worker,
                                           "host": socket.gethostname(), "started_at": time.time()})
    conn.expire(keys.state(run_id), keys.RETENTION_S)
    stop, cancel = threading.Event(), threading.Event()
    beat = threading.Thread(target=_heartbeat, args=(conn, run_id, attempt, stop, cancel), daemon=True)
    beat.start()
    try:
        result = _run(conn, run_id, attempt, log, cancel, worker)
    finally:
        stop.set()
        beat.join(timeout=5)
    payload = json.dumps(result.to_dict())
    conn.set(keys.result(run_id, attempt), payload, ex=keys.RETENTION_S)
    conn.hset(keys.state(run_id), mapping={"status": "finished", "finished_at": time.time()})
    conn.delete(keys.heartbeat(run_id, attempt))
    log.end()
    Queue(keys.COLLECT_QUEUE, connection=conn).enqueue(
        keys.COLLECT_FUNC, run_id, attempt, job_id=f"ks-collect-{run_id}-{attempt}", result_ttl=600,
        description=f"collect run {run_id} attempt {attempt}",
    )
    return {"run_id": run_id, "attempt": attempt, "status": result.status}


def _run(conn: redis.Redis, run_id: int, attempt: int, log: RunLog, cancel: threading.Event,
         worker: str) -> VerifyResult:
    raw = conn.get(keys.spec(run_id))
    if raw is None:
        return VerifyResult(task_id=str(run_id), backend="", status=ERROR,
                            message=f"the job spec of run {run_id} is not in Redis (expired or never written)")
    try:
        spec = JobSpec.from_dict(json.loads(raw))
    except (ValueError, SpecError) as exc:
        return VerifyResult(task_id=str(run_id), backend="", status=ERROR, message=f"bad job spec: {exc}")
    if conn.exists(keys.cancel(run_id)):
        return VerifyResult(task_id=spec.task_id, backend=spec.backend, status=CANCELLED,
                            message="cancelled before it started")
    log(f"[worker] {worker} runs attempt {attempt}")
    return verify(spec, log, cancel=cancel)
