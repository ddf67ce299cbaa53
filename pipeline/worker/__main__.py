"""Verification worker: `REDIS_URL=redis://... python -m pipeline.worker --queues gpu-cuda`.

Needs only Redis, `pipeline`, PyTorch and Triton: no Django, no database
credentials. It refuses a queue its host cannot serve, with the reason.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import logging
import os
import sys

from pipeline.execution.toolchain import QUEUE_BACKENDS, BackendUnavailable, probe, require_backend

PR_SET_DUMPABLE = 4


def _harden() -> None:
    # Non-dumpable: processes of the same user (a sandboxed step) cannot read this
    # worker's /proc/<pid>/environ, where REDIS_URL lives. (Root bypasses this: run
    # workers as an unprivileged user; see docs/verification.md.)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipeline.worker", description=__doc__)
    parser.add_argument("--queues", nargs="+", required=True, help="cpu, gpu-cuda and/or gpu-rocm")
    parser.add_argument("--burst", action="store_true", help="exit when the queues are empty")
    parser.add_argument("--name", default=None, help="worker name (default: RQ's)")
    args = parser.parse_args(argv)
    url = os.environ.get("REDIS_URL", "")
    if not url:
        print("error: set REDIS_URL (for example redis://127.0.0.1:6379/0)", file=sys.stderr)
        return 2
    queues = [q for group in args.queues for q in group.split(",") if q]
    for q in queues:
        if q not in QUEUE_BACKENDS:
            hint = " (the default queue needs the Django app: python manage.py rqworker default)" if q == "default" else ""
            print(f"error: unknown queue {q!r}; expected cpu, gpu-cuda or gpu-rocm{hint}", file=sys.stderr)
            return 2
    try:
        info = probe()
        for q in queues:
            require_backend(QUEUE_BACKENDS[q], info)
    except BackendUnavailable as exc:
        print(f"error: refusing to serve {', '.join(queues)}: {exc}", file=sys.stderr)
        return 2
    _harden()
    os.environ.pop("REDIS_URL", None)  # nothing below needs it in the environment
    # Imported once here (no GPU touched), so each forked job starts warm.
    import redis
    import torch  # noqa: F401
    from rq import Queue, Worker

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    conn = redis.Redis.from_url(url)
    print(
        f"worker on {info.get('host')}: queues {', '.join(queues)}; device {info.get('device')}; "
        f"torch {info.get('torch')}, triton {info.get('triton')}",
        flush=True,
    )
    worker = Worker([Queue(q, connection=conn) for q in queues], connection=conn, name=args.name)
    worker.work(burst=args.burst, logging_level="INFO")
    return 0


if __name__ == "__main__":
    sys.exit(main())
