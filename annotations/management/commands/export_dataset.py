"""python manage.py export_dataset --out DIR [filters]: the export page's job, from a shell."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotations.selectors.exports import FILTER_FIELDS
from annotations.services.exports import ExportRequestError, export_to_directory
from pipeline.export.writer import LAYOUTS


class Command(BaseCommand):
    help = (
        "Export approved samples (their approved revisions only) as a snapshot folder: dataset.jsonl, "
        "manifest.json, README.md and the chosen layouts. Prints the manifest's path."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--out", required=True, type=Path, help="a folder that does not exist yet, or is empty"
        )
        parser.add_argument("--name", default="Kernel Studio dataset", help="title of the dataset card")
        parser.add_argument(
            "--layout",
            action="append",
            default=[],
            choices=LAYOUTS,
            help="extra layout, repeatable: hf (loads with `datasets`), tritonbench (gold files)",
        )
        parser.add_argument("--tags", default="", help="comma-separated; a sample must have all of them")
        parser.add_argument("--language", default="", help="reference language (triton, cuda, hip, ...)")
        parser.add_argument("--target", default="", help="target language")
        parser.add_argument(
            "--backend", default="", help="only samples whose approving run passed on this backend"
        )
        parser.add_argument("--difficulty-min", default="")
        parser.add_argument("--difficulty-max", default="")
        parser.add_argument("--min-reviewers", default="", help="distinct approving reviewers at least")
        parser.add_argument("--approved-since", default="", help="YYYY-MM-DD (UTC, inclusive)")
        parser.add_argument("--approved-until", default="", help="YYYY-MM-DD (UTC, inclusive)")

    def handle(self, *args: Any, **options: Any) -> None:
        filters = {key: options[key] for key in FILTER_FIELDS if options[key]}
        try:
            result = export_to_directory(
                out_dir=options["out"], filters=filters, layouts=options["layout"], name=options["name"]
            )
        except ExportRequestError as exc:
            raise CommandError(str(exc)) from exc
        if result.skipped:
            self.stderr.write(f"{len(result.skipped)} approved sample(s) skipped:")
            for item in result.skipped:
                self.stderr.write(f"  {item['task_id']}: {item['reason']}")
        self.stderr.write(f"{result.samples} sample(s) exported")
        # stdout carries only the path, so scripts can use $(manage.py export_dataset ...).
        self.stdout.write(str(result.manifest_path.resolve()))
