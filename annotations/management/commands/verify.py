"""python manage.py verify TASK_ID... | --all | --source S  [--backend B] [--wait]

Queues one verification run per sample (a batch) on the backend's queue
(cpu, gpu-cuda or gpu-rocm). With --wait it follows the runs, collecting
results straight from Redis (no `default` worker needed), prints one line per
finished run, and ends with exactly

    verified: passed=N failed=N timeout=N crashed=N error=N

exiting 0 only when every run passed. A run lost with its worker is retried
once; a lost retry and a cancelled run count as error. Without --wait it
prints the batch and returns (exit 0 once queued).
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotations.models import Run
from annotations.models.runs import FINISHED_RUN_STATUSES, Backend, RunStatus
from annotations.selectors.runs import batch_progress
from annotations.services import runs as service

COUNTED = ("passed", "failed", "timeout", "crashed", "error")


class Command(BaseCommand):
    help = "Verify samples on a backend; --wait follows them and summarises the verdicts."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("task_ids", nargs="*", metavar="TASK_ID")
        parser.add_argument("--all", action="store_true", help="every sample")
        parser.add_argument("--source", default="", help="every sample from this source")
        parser.add_argument("--backend", default=Backend.CPU, choices=Backend.values)
        parser.add_argument("--wait", action="store_true", help="follow the runs until all finished")
        parser.add_argument("--timeout", type=float, default=0, help="give up waiting after this many seconds")
        parser.add_argument("--poll", type=float, default=0.5)

    def handle(self, *args: Any, **opts: Any) -> None:
        if sum(bool(x) for x in (opts["task_ids"], opts["all"], opts["source"])) != 1:
            raise CommandError("give TASK_IDs, --all or --source S (exactly one of them)")
        try:
            samples = service.samples_for_selection(task_ids=opts["task_ids"], source=opts["source"],
                                                    all_samples=opts["all"])
            batch, skipped = service.batch_create(
                user=None, backend=opts["backend"], samples=samples,
                selection={"task_ids": opts["task_ids"][:1000], "source": opts["source"], "all": opts["all"],
                           "via": "manage.py verify"},
            )
        except service.RunError as exc:
            raise CommandError(str(exc)) from None
        for reason in skipped:
            self.stderr.write(f"skipped: {reason}")
        self.stdout.write(f"batch {batch.pk}: {batch.total} run(s) queued on {opts['backend']}"
                          f"{f', {len(skipped)} skipped' if skipped else ''}")
        if not opts["wait"]:
            return
        deadline = time.monotonic() + opts["timeout"] if opts["timeout"] else None
        reported: set[int] = set()
        while True:
            service.run_sweep()
            progress = batch_progress(batch)
            for run in progress.runs:
                if run.status in FINISHED_RUN_STATUSES and run.pk not in reported and run.status != RunStatus.LOST:
                    reported.add(run.pk)
                    self.stdout.write(_line(run))
            if progress.done and not Run.objects.filter(batch=batch, status__in=service.ACTIVE).exists():
                break
            if deadline is not None and time.monotonic() > deadline:
                self.stderr.write("gave up waiting (--timeout); unfinished runs count as error")
                break
            time.sleep(opts["poll"])
        counts = dict.fromkeys(COUNTED, 0)
        for run in batch_progress(batch).runs:
            counts[run.status if run.status in COUNTED else "error"] += 1
        counts["error"] += len(skipped)
        self.stdout.write("verified: " + " ".join(f"{k}={counts[k]}" for k in COUNTED))
        if counts["passed"] != sum(counts.values()):
            raise SystemExit(1)


def _line(run: Run) -> str:
    stages = " ".join(
        f"{name}={'-' if (run.stages.get(name) or {}).get('ok') is None else ('ok' if run.stages[name]['ok'] else 'FAIL')}"
        for name in ("call", "exe", "perf")
    )
    speed = f" speedup={run.speedup:.2f}x" if run.speedup else ""
    msg = (run.message or "").strip().splitlines()
    tail = f"  {msg[0][:160]}" if msg and run.status != RunStatus.PASSED else ""
    return f"{run.sample.task_id}: {run.status} {stages}{speed}{tail}"
