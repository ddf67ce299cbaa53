"""`python -m pipeline.worker` against a real Redis: real RQ workers in real subprocesses."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis
from rq import Queue

from pipeline.execution import JobSpec, Limits, Source
from pipeline.worker import keys
from tests.execution.kernels import ADD_REFERENCE, ADD_TEST, candidate_with

pytestmark = pytest.mark.slow
REPO = str(Path(__file__).resolve().parents[2])
EXECUTE = "pipeline.worker.jobs.execute_run"


def _worker_env(redis_url: str, cache_root: str, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(REDIS_URL=redis_url, PYTHONPATH=REPO, KS_CACHE_DIR=cache_root, **extra)
    return env


def _put_spec(conn: redis.Redis, run_id: int, candidate: str, **kw: object) -> None:
    spec = JobSpec(task_id=f"run-{run_id}", backend="cpu", reference=Source("triton", ADD_REFERENCE),
                   candidate=Source("triton", candidate), test=ADD_TEST, entry_point="add_wrapper",
                   **kw)  # type: ignore[arg-type]
    conn.set(keys.spec(run_id), json.dumps(spec.to_dict()))


def _log_lines(conn: redis.Redis, run_id: int) -> list[str]:
    return [fields[b"line"].decode() for _, fields in conn.xrange(keys.log_stream(run_id))]


def test_round_trip_through_redis_and_a_real_rq_worker(redis_url: str, cache_root: str) -> None:
    conn = redis.Redis.from_url(redis_url)
    _put_spec(conn, 11, ADD_REFERENCE)
    Queue("cpu", connection=conn).enqueue(EXECUTE, 11, 1, job_timeout=900)
    out = subprocess.run([sys.executable, "-m", "pipeline.worker", "--queues", "cpu", "--burst"],
                         env=_worker_env(redis_url, cache_root), capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    result = json.loads(conn.get(keys.result(11, 1)))
    assert result["status"] == "passed", result["message"]
    assert result["stages"]["exe"]["ok"] is True
    lines = _log_lines(conn, 11)
    assert any("[compare] 3 outputs match" in line for line in lines)
    assert conn.hget(keys.state(11), "status") == b"finished"
    # The collect job waits on `default` for the Django side, enqueued by name.
    collect = Queue("default", connection=conn).fetch_job("ks-collect-11-1")
    assert collect is not None and collect.func_name == keys.COLLECT_FUNC and collect.args == (11, 1)
    # The worker never put REDIS_URL where a step could read it.
    assert redis_url not in result["log"]


def test_two_workers_never_run_one_job_twice(redis_url: str, cache_root: str) -> None:
    conn = redis.Redis.from_url(redis_url)
    _put_spec(conn, 12, ADD_REFERENCE)
    q = Queue("cpu", connection=conn)
    jobs = [q.enqueue(EXECUTE, 12, 1, job_timeout=900) for _ in range(2)]
    env = _worker_env(redis_url, cache_root)
    procs = [subprocess.Popen([sys.executable, "-m", "pipeline.worker", "--queues", "cpu", "--burst"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(2)]
    for p in procs:
        assert p.wait(timeout=600) == 0
    returns = [j.latest_result().return_value for j in jobs]  # type: ignore[union-attr]
    skipped = [r for r in returns if "skipped" in r]
    ran = [r for r in returns if "status" in r]
    assert len(skipped) == 1 and len(ran) == 1
    assert "already claimed" in skipped[0]["skipped"]
    assert sum("runs attempt 1" in line for line in _log_lines(conn, 12)) == 1


def _alive_with(marker: str) -> list[int]:
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmd and state != "Z":
            pids.append(int(pid))
    return pids


def _ppid(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return -1


def test_sigkill_of_a_worker_mid_job_lets_the_heartbeat_lapse(redis_url: str, cache_root: str) -> None:
    conn = redis.Redis.from_url(redis_url)
    marker = "ks-sigkill-marker-91c2"
    looping = candidate_with(f"import sys\nsys.argv.append('{marker}')\nwhile True:\n    pass\n")
    _put_spec(conn, 13, looping, limits=Limits(timeout_s=120))
    Queue("cpu", connection=conn).enqueue(EXECUTE, 13, 1, job_timeout=900)
    worker = subprocess.Popen([sys.executable, "-m", "pipeline.worker", "--queues", "cpu"],
                              env=_worker_env(redis_url, cache_root, KS_HEARTBEAT_TTL="2"),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not any("[candidate] sandboxed step started" in ln for ln in _log_lines(conn, 13)):
            assert time.monotonic() < deadline, "the job never started"
            time.sleep(0.2)
        assert conn.exists(keys.heartbeat(13, 1))
        # The worker and its work-horse (RQ forks it into a session of its own), like a host going away.
        horses = [int(p) for p in filter(str.isdigit, os.listdir("/proc")) if _ppid(int(p)) == worker.pid]
        assert horses, "no work-horse found"
        for pid in [worker.pid, *horses]:
            os.kill(pid, signal.SIGKILL)
        worker.wait(timeout=30)
        time.sleep(4)
        assert not conn.exists(keys.heartbeat(13, 1))
        assert conn.hget(keys.state(13), "status") == b"running"
        assert not conn.exists(keys.result(13, 1))
        # The sandboxed step had its own session but died with its parent (PR_SET_PDEATHSIG).
        deadline = time.monotonic() + 10
        while _alive_with(marker) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _alive_with(marker) == []
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)


def test_worker_refuses_a_queue_its_host_cannot_serve(redis_url: str, cache_root: str) -> None:
    out = subprocess.run([sys.executable, "-m", "pipeline.worker", "--queues", "gpu-cuda", "--burst"],
                         env=_worker_env(redis_url, cache_root), capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert "cannot run the cuda backend" in out.stderr


def test_worker_needs_redis_url_and_known_queues(cache_root: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env["PYTHONPATH"] = REPO
    out = subprocess.run([sys.executable, "-m", "pipeline.worker", "--queues", "cpu"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "set REDIS_URL" in out.stderr
    env["REDIS_URL"] = "redis://127.0.0.1:1/0"
    out = subprocess.run([sys.executable, "-m", "pipeline.worker", "--queues", "default"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "rqworker default" in out.stderr


def test_cancel_of_a_running_job_kills_the_step_and_reports_cancelled(redis_url: str, cache_root: str) -> None:
    conn = redis.Redis.from_url(redis_url)
    marker = "ks-cancel-marker-5e1d"
    looping = candidate_with(f"import sys\nsys.argv.append('{marker}')\nwhile True:\n    pass\n")
    _put_spec(conn, 14, looping, limits=Limits(timeout_s=300))
    Queue("cpu", connection=conn).enqueue(EXECUTE, 14, 1, job_timeout=900)
    worker = subprocess.Popen([sys.executable, "-m", "pipeline.worker", "--queues", "cpu", "--burst"],
                              env=_worker_env(redis_url, cache_root, KS_HEARTBEAT_TTL="2"),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not any("[candidate] sandboxed step started" in ln for ln in _log_lines(conn, 14)):
            assert time.monotonic() < deadline, "the candidate step never started"
            time.sleep(0.2)
        conn.set(keys.cancel(14), "alice")
        assert worker.wait(timeout=120) == 0
        result = json.loads(conn.get(keys.result(14, 1)))
        assert result["status"] == "cancelled"
        assert "cancelled while the candidate was running" in result["message"]
        assert _alive_with(marker) == []
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
