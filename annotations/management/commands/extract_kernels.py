"""python manage.py extract_kernels PATH... [--json OUT] [--import]: find every CUDA/HIP kernel.

PATH is a file, a directory or an archive (.zip, .tar.gz). Prints one line per
kernel (location, flags, whether its unit compiled) and a summary; --json
writes the full records; --import creates samples (reference = the unit).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotations.models import User
from annotations.services.extraction import ExtractionError, extraction_options, report_import
from pipeline.extraction import ArchiveError, ExtractionReport, ExtractOptions, extract_source


class Command(BaseCommand):
    help = (
        "Extract every __global__ kernel from CUDA/HIP files, directories or archives (.zip, .tar.gz) "
        "with libclang: exact source, dependencies, launches and a self-contained unit checked with "
        "nvcc/hipcc when available."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", type=Path, metavar="PATH")
        parser.add_argument(
            "--json", dest="json_out", default=None, help="write the records here ('-' = stdout)"
        )
        parser.add_argument("--import", dest="do_import", action="store_true", help="create samples")
        parser.add_argument(
            "--min-lines", default=None, help="kernels shorter are flagged too_short (default 5)"
        )
        parser.add_argument(
            "--max-lines", default=None, help="kernels longer are flagged too_long (default 300)"
        )
        parser.add_argument(
            "--no-compile", action="store_true", help="skip the nvcc/hipcc check of each unit"
        )
        parser.add_argument(
            "--no-toolkit-headers",
            action="store_true",
            help="do not search an installed CUDA toolkit's headers (cub, cooperative_groups, ...) after the shim",
        )
        parser.add_argument("--jobs", type=int, default=0, help="parser processes (default: up to 2)")
        parser.add_argument(
            "--user", default="", help="author of imported samples (default: import:extract_kernels)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            opts = extraction_options(
                {
                    "min_lines": options["min_lines"],
                    "max_lines": options["max_lines"],
                    "compile": not options["no_compile"],
                }
            )
        except ExtractionError as exc:
            raise CommandError(str(exc)) from exc
        actor = None
        if options["user"]:
            actor = User.objects.filter(username=options["user"]).first()
            if actor is None:
                raise CommandError(f"no user {options['user']!r}")
        extract = ExtractOptions(
            min_lines=opts["min_lines"],
            max_lines=opts["max_lines"],
            compile=opts["compile"],
            jobs=max(0, options["jobs"]),
            toolkit_headers=not options["no_toolkit_headers"],
        )
        reports: list[ExtractionReport] = []
        for path in options["paths"]:
            try:
                reports.append(extract_source(path, extract))
            except (ArchiveError, FileNotFoundError) as exc:
                raise CommandError(str(exc)) from exc
        to_stdout = options["json_out"] == "-"
        log = self.stderr if to_stdout else self.stdout
        for report in reports:
            self._print(report, log)
        if options["json_out"]:
            self._write_json(reports, options["json_out"])
        if options["do_import"]:
            for report in reports:
                outcome = report_import(
                    report=report, actor=actor, min_lines=opts["min_lines"], max_lines=opts["max_lines"]
                )
                log.write(
                    f"{report.source}: imported {len(outcome.created)} sample(s), "
                    f"{len(outcome.unchanged)} already present, {len(outcome.errors)} error(s)"
                )
                for err in outcome.errors:
                    self.stderr.write(f"  error: {err}")

    def _print(self, report: ExtractionReport, out: Any) -> None:
        for p in report.problems:
            where = f"{p.file}:{p.line}" if p.line else p.file
            self.stderr.write(f"{p.severity}: {where}: {p.message}")
        for k in report.kernels:
            compiled = {True: "compiles", False: "does NOT compile", None: "not compiled"}[k.compile.compiles]
            if k.compile.per_instantiation:
                compiled += "; " + ", ".join(
                    f"{args} {'ok' if ok else 'fails'}" for args, ok in k.compile.per_instantiation.items()
                )
            flags = f" [{', '.join(k.flags)}]" if k.flags else ""
            out.write(
                f"{report.source}/{k.file}:{k.start_line}-{k.end_line} {k.qualified_name} ({compiled}){flags}"
            )
        ok = sum(1 for k in report.kernels if k.compile.compiles)
        checked = sum(1 for k in report.kernels if k.compile.compiles is not None)
        out.write(
            f"{report.source}: {len(report.kernels)} kernel(s) in {report.files_scanned} file(s) "
            f"({report.files_ignored} ignored); {ok}/{checked} unit(s) compiled; "
            f"parse {report.parse_seconds:.2f} s, compile {report.compile_seconds:.2f} s"
        )

    def _write_json(self, reports: list[ExtractionReport], target: str) -> None:
        payload = {"version": 1, "sources": [r.to_dict() for r in reports]}
        text = json.dumps(payload, indent=1, ensure_ascii=False)
        if target == "-":
            self.stdout.write(text)
            return
        out = Path(target)
        if out.is_dir():
            raise CommandError(f"{out} is a directory; give a file name for --json")
        # Atomic: a reader never sees half a file, and a failure leaves no partial file.
        fd, tmp = tempfile.mkstemp(
            prefix=".extract-", suffix=".json", dir=out.parent if str(out.parent) else "."
        )
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, out)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
