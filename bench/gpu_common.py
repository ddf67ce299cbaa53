"""Shared by bench/gpu_e2e.py and bench/verify_throughput.py: a local Redis, real workers, submit/wait.

No Django: this is exactly what a GPU host runs (pipeline + Redis), with the web
side's two duties (write the spec, read the result) done here directly.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import redis  # noqa: E402
from rq import Queue  # noqa: E402

from pipeline.execution import JobSpec, Source  # noqa: E402
from pipeline.redis_server import RedisServer, start_redis  # noqa: E402
from pipeline.worker import keys  # noqa: E402

DEMO = REPO / "annotations" / "demo" / "samples"
EXECUTE = "pipeline.worker.jobs.execute_run"


def demo_samples() -> list[dict[str, Any]]:
    out = []
    for d in sorted(DEMO.iterdir()):
        if not (d / "sample.json").exists():
            continue
        meta = json.loads((d / "sample.json").read_text())
        out.append({
            "name": d.name,
            "entry_point": meta.get("entry_point", ""),
            "reference": (d / "reference.py").read_text(),
            "candidate": (d / "candidate.hip").read_text(),
            "wrapper": (d / "wrapper.py").read_text(),
            "test": (d / "test.py").read_text(),
        })
    return out


def spec_for(task_id: str, sample: dict[str, Any], *, candidate: str | None, backend: str = "cuda",
             **kw: Any) -> JobSpec:
    return JobSpec(
        task_id=task_id,
        backend=backend,
        reference=Source("triton", sample["reference"]),
        candidate=Source("hip", candidate) if candidate is not None else None,
        wrapper=Source("python", sample["wrapper"]),
        test=sample["test"],
        entry_point=sample["entry_point"],
        **kw,
    )


class Cluster:
    """A Redis server and N `python -m pipeline.worker` processes on one queue."""

    def __init__(self, *, workers: int, queue: str, cache_dir: str, env: dict[str, str] | None = None) -> None:
        self.server: RedisServer = start_redis()
        self.conn = redis.Redis.from_url(self.server.url)
        self.queue = Queue(queue, connection=self.conn)
        self.procs: list[subprocess.Popen[bytes]] = []
        wenv = dict(os.environ)
        wenv.update(REDIS_URL=self.server.url, PYTHONPATH=str(REPO) + os.pathsep + wenv.get("PYTHONPATH", ""),
                    KS_CACHE_DIR=cache_dir, **(env or {}))
        self.log_dir = Path(cache_dir) / "worker-logs"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        for i in range(workers):
            fh = open(self.log_dir / f"worker-{i}.log", "wb")  # noqa: SIM115 - closed at stop
            self.procs.append(subprocess.Popen(
                [sys.executable, "-m", "pipeline.worker", "--queues", queue, "--name", f"bench-{os.getpid()}-{i}"],
                env=wenv, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True,
            ))
        self.next_id = 1

    def submit(self, spec: JobSpec) -> int:
        run_id = self.next_id
        self.next_id += 1
        self.conn.set(keys.spec(run_id), json.dumps(spec.to_dict()))
        self.queue.enqueue(EXECUTE, run_id, 1, job_timeout=3600, result_ttl=3600)
        return run_id

    def wait(self, run_ids: list[int], timeout: float = 3000) -> dict[int, dict[str, Any]]:
        deadline = time.monotonic() + timeout
        results: dict[int, dict[str, Any]] = {}
        while len(results) < len(run_ids):
            for rid in run_ids:
                if rid not in results:
                    raw = self.conn.get(keys.result(rid, 1))
                    if raw is not None:
                        results[rid] = json.loads(raw)
                        results[rid]["_done_at"] = time.monotonic()
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(run_ids) - len(results)} runs unfinished")
            dead = [p for p in self.procs if p.poll() is not None]
            if dead and len(dead) == len(self.procs):
                tail = (self.log_dir / "worker-0.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"all workers exited:\n{tail}")
            time.sleep(0.05)
        return results

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
        self.server.stop()


def stage_marks(result: dict[str, Any]) -> str:
    marks = []
    for name in ("call", "exe", "perf"):
        st = result["stages"].get(name) or {}
        ok = st.get("ok")
        marks.append(f"{name}:{'-' if ok is None else ('ok' if ok else 'FAIL')}")
    return " ".join(marks)


def first_line(text: str, width: int = 110) -> str:
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    return line[:width]
