"""python manage.py generate --what wrapper-test|hip|instruction|pre-eval TASK_ID... | --source S [--wait]

Queues one background job on `default`; `concurrency` lanes each claim items
until none is left, and every result is saved as it lands. Items already done
for the same --what are skipped (resumable) unless --force. --wait shows a
progress bar and prints the token totals at the end.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotations.jobs.llm import QueueUnavailable
from annotations.models import GenerationJob
from annotations.models.llm import GenerationWhat, ItemStatus
from annotations.services import generation


class Command(BaseCommand):
    help = "Generate wrappers+tests, HIP candidates, instructions or pre-evaluations with the LLM."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("task_ids", nargs="*", metavar="TASK_ID")
        parser.add_argument("--what", required=True, choices=GenerationWhat.values)
        parser.add_argument("--source", default="", help="every sample from this source")
        parser.add_argument("--concurrency", type=int, default=2, help="items in flight at once (default 2)")
        parser.add_argument("--force", action="store_true", help="redo items already generated")
        parser.add_argument("--wait", action="store_true", help="show progress until the job finishes")
        parser.add_argument("--poll", type=float, default=1.0, help=argparse_hidden())

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            samples = generation.samples_select(task_ids=opts["task_ids"], source=opts["source"])
            job, todo = generation.generation_job_create(
                what=opts["what"], samples=samples, concurrency=opts["concurrency"], force=opts["force"],
                selection={"task_ids": opts["task_ids"], "source": opts["source"]})
        except (generation.GenerationError, QueueUnavailable) as exc:
            raise CommandError(str(exc)) from None
        skipped = len(samples) - todo
        self.stdout.write(f"Generation job #{job.pk}: {opts['what']} for {len(samples)} sample(s)"
                          + (f", {skipped} already done (skipped)" if skipped else "")
                          + f"; {job.concurrency} at a time on queue 'default'.")
        if not opts["wait"] or not todo:
            if todo:
                self.stdout.write("Workers on 'default' do the work; rerun the same command to resume.")
            return
        self._wait(job, opts["poll"])

    def _wait(self, job: GenerationJob, poll: float) -> None:
        tty = sys.stdout.isatty()
        last = ""
        while True:
            p = generation.generation_job_progress(job)
            bar = _bar(p["finished"], p["total"])
            line = (f"{bar} {p['finished']}/{p['total']}  done {p['counts'][ItemStatus.DONE]}"
                    f"  failed {p['counts'][ItemStatus.FAILED]}  skipped {p['counts'][ItemStatus.SKIPPED]}"
                    f"  tokens {p['usage'].total_tokens}")
            if line != last:
                self.stdout.write(("\r" + line) if tty else line, ending="" if tty else "\n")
                self.stdout.flush()
                last = line
            if p["complete"]:
                break
            time.sleep(poll)
        if tty:
            self.stdout.write("")
        for item in job.items.filter(status=ItemStatus.FAILED).select_related("sample").order_by("id"):
            self.stdout.write(f"FAILED {item.sample.task_id}: {item.error}")
        u = p["usage"]
        self.stdout.write(f"Tokens: {u.prompt_tokens} prompt + {u.completion_tokens} completion = "
                          f"{u.total_tokens}{' (partly estimated)' if u.estimated else ''}.")
        if p["counts"][ItemStatus.FAILED]:
            raise CommandError(f"{p['counts'][ItemStatus.FAILED]} item(s) failed; rerun the command to retry them.")


def _bar(done: int, total: int, width: int = 30) -> str:
    filled = int(width * done / total) if total else width
    return "[" + "#" * filled + "." * (width - filled) + "]"


def argparse_hidden() -> str:
    import argparse

    return argparse.SUPPRESS
