"""python manage.py runs_sweep [--every SECONDS]

Brings queued/running runs up to date from Redis: records results left there,
marks runs whose worker stopped heart-beating as lost and queues their one retry.
The live pages and `verify --wait` do this as they poll; run this from cron or a
supervisor (`--every 30`) so no run stays "running" when nobody is looking.
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from annotations.services.runs import run_sweep


class Command(BaseCommand):
    help = "Collect finished runs from Redis and detect lost ones (once, or every N seconds)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--every", type=float, default=0, help="repeat every N seconds (0: once)")
        parser.add_argument("--quiet", action="store_true", help="print only sweeps that found something")

    def handle(self, *args: Any, **opts: Any) -> None:
        while True:
            counts = run_sweep()
            if not (opts["quiet"] and counts["finished"] == 0 and counts["lost"] == 0):
                self.stdout.write(f"runs_sweep: checked={counts['checked']} finished={counts['finished']} "
                                  f"lost={counts['lost']}")
            if not opts["every"]:
                return
            time.sleep(opts["every"])
