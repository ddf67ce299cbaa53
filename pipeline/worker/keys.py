"""Redis keys and records shared by the GPU-host job and the Django side.

A GPU host has no database: everything a run needs or produces goes through these
keys. The Django side writes the spec, reads state/heartbeat/result, and the
collect job (queue `default`) writes the database.
"""

from __future__ import annotations

RETENTION_S = 7 * 24 * 3600
LOG_MAXLEN = 50_000


def spec(run_id: int) -> str:
    return f"ks:run:{run_id}:spec"


def log_stream(run_id: int) -> str:
    return f"ks:run:{run_id}:log"


def state(run_id: int) -> str:
    """Hash: status (running|finished), attempt, host, worker, started_at."""
    return f"ks:run:{run_id}:state"


def claim(run_id: int, attempt: int) -> str:
    return f"ks:run:{run_id}:claim:{attempt}"


def heartbeat(run_id: int, attempt: int) -> str:
    return f"ks:run:{run_id}:hb:{attempt}"


def result(run_id: int, attempt: int) -> str:
    return f"ks:run:{run_id}:result:{attempt}"


def cancel(run_id: int) -> str:
    return f"ks:run:{run_id}:cancel"


QUEUE_FOR_BACKEND = {"cpu": "cpu", "cuda": "gpu-cuda", "rocm": "gpu-rocm"}
BACKEND_FOR_QUEUE = {v: k for k, v in QUEUE_FOR_BACKEND.items()}
COLLECT_FUNC = "annotations.jobs.runs.run_collect_job"
COLLECT_QUEUE = "default"
