"""`manage.py import_samples PATH [--format F] [--dry-run] [--user NAME]`.

Detects the format (or takes --format), shows a progress bar on stderr, lists
per-record errors on stderr and ends with exactly one line on stdout:
`imported: created=N updated=N unchanged=N errors=N`. Exits 0 unless the input
could not be read at all.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, TextIO, cast

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotations.models import ImportBatch, User
from annotations.models.ingest import JobState
from annotations.services.imports import import_batch_create, import_batch_execute, summary_line
from pipeline.importers import available_formats
from pipeline.importers.records import location_text

SHOWN_ERRORS = 50
BAR_WIDTH = 30


class ProgressBar:
    """An in-place bar: bytes read of the input, records, errors."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.interactive = stream.isatty()
        self.last_percent = -1

    def update(self, batch: ImportBatch) -> None:
        total = batch.total_bytes or 1
        percent = min(100, int(100 * batch.progress_bytes / total))
        if not self.interactive and percent // 10 == self.last_percent // 10:
            return  # a log file gets a line per 10%, a terminal every update
        self.last_percent = percent
        filled = BAR_WIDTH * percent // 100
        text = (f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {percent:3d}%  {batch.processed} records, "
                f"{batch.error_count} errors")
        self.stream.write(("\r" + text) if self.interactive else text + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.interactive and self.last_percent >= 0:
            self.stream.write("\n")
            self.stream.flush()


class Command(BaseCommand):
    help = "Import samples from a file or directory in any supported format (see docs/importing.md)."

    def add_arguments(self, parser: CommandParser) -> None:
        names = [m.NAME for m in available_formats()]
        parser.add_argument("path", help="file (.json, .jsonl, .jsonl.gz, .py) or directory of gold .py files")
        parser.add_argument("--format", dest="format_name", choices=names, default="",
                            help="skip detection and read the input as this format")
        parser.add_argument("--dry-run", action="store_true", help="count what would change; write nothing")
        parser.add_argument("--user", default="", help="record this user as the importer")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["path"]).expanduser()
        user = None
        if options["user"]:
            user = User.objects.filter(username=options["user"]).first()
            if user is None:
                raise CommandError(f"no user named {options['user']!r}")
        batch = import_batch_create(path=path.resolve(), user=user, file_name=path.name,
                                    format_name=options["format_name"], dry_run=options["dry_run"])
        # The bar goes to the command's stderr (a StringIO under call_command in tests).
        bar = ProgressBar(cast(TextIO, getattr(self.stderr, "_out", sys.stderr)))
        try:
            batch = import_batch_execute(batch=batch, user=user, on_progress=bar.update)
            bar.update(batch)
        finally:
            bar.close()
        if batch.state == JobState.FAILED and batch.processed == 0:
            raise CommandError(batch.message)
        err = self.stderr
        for error in batch.errors[:SHOWN_ERRORS]:
            where = location_text(line=error.get("line"), index=error.get("index"), file=error.get("file") or "")
            field = f" [{error['field']}]" if error.get("field") else ""
            err.write(f"error at {where}{field}: {error.get('message', '')}")
        if batch.error_count > SHOWN_ERRORS:
            err.write(f"... and {batch.error_count - SHOWN_ERRORS} more errors (all listed on the import's page, "
                      f"batch {batch.pk})")
        if batch.state == JobState.FAILED:
            err.write(f"import stopped: {batch.message}")
        if batch.dry_run:
            err.write("dry run: nothing was written")
        self.stdout.write(summary_line(batch))
