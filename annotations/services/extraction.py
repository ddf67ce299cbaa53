"""Kernel extraction: create a run (upload or server directory), run it (the job), import kernels.

A run goes queued -> running -> done | failed, each step a conditional update
that checks the row count, so a retried job cannot record twice. The parsing
itself is `pipeline.extraction` (no Django); this module stores its results and
turns chosen kernels into samples through the sample and revision services.
"""

from __future__ import annotations

import logging
import re
import shutil
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils import timezone

from annotations.models import ExtractedKernel, KernelExtraction, Sample, User
from annotations.models.extraction import ExtractionSourceKind
from annotations.models.ingest import JobState
from annotations.models.samples import RevisionKind, RevisionOrigin
from annotations.services.revisions import revision_create
from annotations.services.samples import SampleError, sample_create
from pipeline.extraction import ArchiveError, ExtractionReport, ExtractOptions, extract_source, source_name
from pipeline.extraction.sources import ARCHIVE_SUFFIXES

log = logging.getLogger(__name__)

__all__ = [
    "ExtractionError",
    "ImportOutcome",
    "extracted_kernels_import",
    "extraction_create_from_directory",
    "extraction_check_lost",
    "extraction_create_from_upload",
    "extraction_options",
    "extraction_run",
    "report_import",
    "server_directories",
]

# How often the job writes progress to the database while it parses.
PROGRESS_EVERY_S = 0.5
AUTHOR_LABEL = "import:extract_kernels"


class ExtractionError(ValueError):
    """Bad request (file, directory, options): a 400 on the page, an error on the command line."""


@dataclass
class ImportOutcome:
    created: list[Sample] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)  # task ids that already existed
    errors: list[str] = field(default_factory=list)


def extraction_options(data: Mapping[str, Any]) -> dict[str, Any]:
    """Validated options from a form or the command line."""

    def number(key: str, default: int, low: int, high: int) -> int:
        raw = data.get(key)
        if raw is None or str(raw).strip() == "":
            return default
        try:
            value = int(str(raw).strip())
        except ValueError:
            raise ExtractionError(
                f"{key.replace('_', ' ')} must be a whole number, got {str(raw)[:20]!r}"
            ) from None
        if not low <= value <= high:
            raise ExtractionError(f"{key.replace('_', ' ')} must be between {low} and {high}")
        return value

    min_lines = number("min_lines", 5, 0, 100_000)
    max_lines = number("max_lines", 300, 1, 1_000_000)
    if min_lines > max_lines:
        raise ExtractionError("min lines must not be above max lines")
    compile_flag = data.get("compile", True)
    if isinstance(compile_flag, str):
        compile_flag = compile_flag.strip().lower() in ("1", "true", "on", "yes")
    return {"min_lines": min_lines, "max_lines": max_lines, "compile": bool(compile_flag)}


# -- server directories ------------------------------------------------------------


def server_directories() -> list[Path]:
    """The configured roots and their direct subdirectories (one repository each, typically)."""
    out: list[Path] = []
    for root in settings.EXTRACTION_ROOTS:
        root = Path(root)
        if not root.is_dir():
            continue
        out.append(root)
        try:
            children = sorted(
                p for p in root.iterdir() if p.is_dir() and not p.is_symlink() and not p.name.startswith(".")
            )
        except OSError:
            continue
        out.extend(children)
    return out


def _checked_directory(raw: str) -> Path:
    roots = [Path(r).resolve() for r in settings.EXTRACTION_ROOTS]
    if not roots:
        raise ExtractionError("no server directories are configured (EXTRACTION_ROOTS)")
    raw = (raw or "").strip()
    if not raw:
        raise ExtractionError("choose a directory")
    path = Path(raw)
    if not path.is_absolute() or path.is_symlink():
        raise ExtractionError("choose one of the listed directories")
    resolved = path.resolve()
    if not any(resolved == r or r in resolved.parents for r in roots):
        raise ExtractionError("that directory is not inside a configured extraction root")
    if not resolved.is_dir():
        raise ExtractionError("that directory does not exist")
    return resolved


# -- creating runs -----------------------------------------------------------------


def uploads_root() -> Path:
    return Path(settings.DATA_DIR) / "extraction-uploads"


_SAFE_NAME = re.compile(r"[^A-Za-z0-9._+-]+")


def extraction_create_from_upload(
    *, upload: UploadedFile, options: Mapping[str, Any], actor: User | None
) -> KernelExtraction:
    name = Path(upload.name or "").name
    if not name.lower().endswith(ARCHIVE_SUFFIXES):
        raise ExtractionError("upload a .zip or .tar.gz archive of CUDA/HIP sources")
    limit = settings.EXTRACTION_MAX_UPLOAD_BYTES
    if upload.size is not None and upload.size > limit:
        raise ExtractionError(f"the archive is larger than {limit // (1024 * 1024)} MB")
    opts = extraction_options(options)
    safe = _SAFE_NAME.sub("_", name)[-200:]
    folder = uploads_root() / uuid.uuid4().hex
    folder.mkdir(parents=True)
    target = folder / safe
    written = 0
    try:
        with open(target, "wb") as out:
            for chunk in upload.chunks():
                written += len(chunk)
                if written > limit:
                    raise ExtractionError(f"the archive is larger than {limit // (1024 * 1024)} MB")
                out.write(chunk)
        with transaction.atomic():
            extraction = KernelExtraction.objects.create(
                source_name=source_name(Path(name))[:255],
                source_kind=ExtractionSourceKind.UPLOAD,
                path=str(target),
                options=opts,
                created_by=actor,
            )
            transaction.on_commit(lambda: _enqueue(extraction.pk))
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return extraction


def extraction_create_from_directory(
    *, path: str, options: Mapping[str, Any], actor: User | None
) -> KernelExtraction:
    directory = _checked_directory(path)
    opts = extraction_options(options)
    with transaction.atomic():
        extraction = KernelExtraction.objects.create(
            source_name=directory.name[:255],
            source_kind=ExtractionSourceKind.SERVER_DIR,
            path=str(directory),
            options=opts,
            created_by=actor,
        )
        transaction.on_commit(lambda: _enqueue(extraction.pk))
    return extraction


def _enqueue(extraction_id: int) -> None:
    from annotations.jobs.extraction import enqueue_extraction

    job_id = enqueue_extraction(extraction_id)
    KernelExtraction.objects.filter(pk=extraction_id, state=JobState.QUEUED).update(rq_job_id=job_id)


# -- running -------------------------------------------------------------------------


def _progress_writer(extraction_id: int) -> Any:
    last = [0.0]

    def progress(stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - last[0] < PROGRESS_EVERY_S:
            return
        last[0] = now
        KernelExtraction.objects.filter(pk=extraction_id, state=JobState.RUNNING).update(
            stage=stage, progress_done=done, progress_total=total
        )

    return progress


def task_id_for(source: str, file: str, name: str, start_line: int | None = None) -> str:
    base = f"extracted/{source}/{file}::{name}"
    return f"{base}@L{start_line}" if start_line is not None else base


def _task_ids(report: ExtractionReport) -> list[str]:
    """One task id per kernel; same-named kernels in one file get their line appended."""
    counts: dict[tuple[str, str], int] = {}
    for k in report.kernels:
        counts[(k.file, k.name)] = counts.get((k.file, k.name), 0) + 1
    return [
        task_id_for(report.source, k.file, k.name, k.start_line if counts[(k.file, k.name)] > 1 else None)
        for k in report.kernels
    ]


def extraction_run(*, extraction_id: int) -> KernelExtraction | None:
    """Extract and store the kernels (the job's body). Returns None if another run has it."""
    claimed = KernelExtraction.objects.filter(pk=extraction_id, state=JobState.QUEUED).update(
        state=JobState.RUNNING, started_at=timezone.now()
    )
    if not claimed:
        return None
    extraction = KernelExtraction.objects.get(pk=extraction_id)
    opts = extraction.options or {}
    options = ExtractOptions(
        min_lines=int(opts.get("min_lines", 5)),
        max_lines=int(opts.get("max_lines", 300)),
        compile=bool(opts.get("compile", True)),
        compile_cache_dir=str(Path(settings.DATA_DIR) / "cache" / "extract-compile"),
        isolate=True,
        progress=_progress_writer(extraction_id),
    )
    try:
        report = extract_source(Path(extraction.path), options, name=extraction.source_name)
    except (ArchiveError, FileNotFoundError, OSError) as exc:
        _fail(extraction_id, str(exc))
        return KernelExtraction.objects.get(pk=extraction_id)
    except Exception as exc:
        _fail(extraction_id, f"internal error ({type(exc).__name__}); see the worker log")
        raise
    finally:
        if extraction.source_kind == ExtractionSourceKind.UPLOAD:
            # The results are in the database; the uploaded archive is not kept.
            shutil.rmtree(Path(extraction.path).parent, ignore_errors=True)
    with transaction.atomic():
        rows = [
            ExtractedKernel(
                extraction_id=extraction_id,
                name=k.name[:255],
                qualified_name=k.qualified_name[:512],
                file=k.file[:1024],
                start_line=k.start_line,
                end_line=k.end_line,
                lines=k.lines,
                language=k.language,
                is_template=k.is_template,
                flags=k.flags,
                compiles=k.compile.compiles,
                data=k.to_dict(),
                task_id=task_id[:255],
                sample=Sample.objects.filter(task_id=task_id).first(),
            )
            for k, task_id in zip(report.kernels, _task_ids(report), strict=True)
        ]
        ExtractedKernel.objects.bulk_create(rows)
        KernelExtraction.objects.filter(pk=extraction_id, state=JobState.RUNNING).update(
            state=JobState.DONE,
            stage="",
            files_scanned=report.files_scanned,
            files_ignored=report.files_ignored,
            kernel_count=len(report.kernels),
            problems=[p.__dict__ for p in report.problems[:500]],
            missing_includes=report.missing_includes[:200],
            seconds={
                "parse": report.parse_seconds,
                "compile": report.compile_seconds,
                "total": report.seconds,
            },
            message=f"{len(report.problems) - 500} more problems not kept"
            if len(report.problems) > 500
            else "",
            finished_at=timezone.now(),
        )
    return KernelExtraction.objects.get(pk=extraction_id)


def extraction_check_lost(*, extraction: KernelExtraction) -> KernelExtraction:
    """Mark a queued/running run failed when its RQ job failed or vanished without it.

    A job that raised already marked its run; this covers a work-horse killed
    from outside (OOM killer, SIGKILL) or a job lost with its queue, which would
    otherwise leave the page saying "running" forever.
    """
    if extraction.state not in (JobState.QUEUED, JobState.RUNNING) or not extraction.rq_job_id:
        return extraction
    import django_rq
    from rq.exceptions import NoSuchJobError
    from rq.job import Job, JobStatus

    try:
        connection = django_rq.get_connection("default")
        try:
            job = Job.fetch(extraction.rq_job_id, connection=connection)
            status = job.get_status()
            result = job.latest_result() if status == JobStatus.FAILED else None
            why = (result.exc_string or "") if result is not None else ""
        except NoSuchJobError:
            status, why = None, "the job is gone from the queue"
    except Exception:  # Redis unreachable: say nothing rather than guess
        log.warning("could not check extraction %s's job", extraction.pk, exc_info=True)
        return extraction
    if status in (JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED, None):
        last_line = (why or "").strip().splitlines()[-1:] or [str(status)]
        message = f"the worker stopped without finishing: {last_line[0]}"[:2000]
        KernelExtraction.objects.filter(
            pk=extraction.pk, state__in=(JobState.QUEUED, JobState.RUNNING)
        ).update(state=JobState.FAILED, stage="", message=message, finished_at=timezone.now())
        extraction.refresh_from_db()
    return extraction


def _fail(extraction_id: int, message: str) -> None:
    KernelExtraction.objects.filter(pk=extraction_id, state=JobState.RUNNING).update(
        state=JobState.FAILED, stage="", message=message[:2000], finished_at=timezone.now()
    )
    log.warning("extraction %s failed: %s", extraction_id, message)


# -- importing -------------------------------------------------------------------------


def _provenance(record: Mapping[str, Any], source: str, extraction_id: int | None) -> dict[str, Any]:
    compile_info = record.get("compile") or {}
    return {
        "origin_format": "extracted",
        "repository": source,
        "path": record["file"],
        "start_line": record["start_line"],
        "end_line": record["end_line"],
        "kernel": record["qualified_name"],
        "flags": list(record.get("flags", [])),
        "is_template": record.get("is_template", False),
        "instantiations": record.get("instantiations", []),
        "launches": record.get("launches", []),
        "device_functions": record.get("device_functions", []),
        "macros": record.get("macros", []),
        "types": record.get("types", []),
        "compile": {k: compile_info.get(k) for k in ("compiler", "compiles", "command")},
        "extraction": extraction_id,
    }


def _import_one(
    record: Mapping[str, Any], *, task_id: str, source: str, extraction_id: int | None, actor: User | None
) -> Sample:
    language = record.get("language", "cuda")
    sample = sample_create(
        task_id=task_id,
        source="extracted",
        kernel_name=record["name"],
        entry_point=record["name"],
        reference_language=language,
        target_language="hip",
        provenance=_provenance(record, source, extraction_id),
        tags=["extracted", *record.get("flags", [])],
        actor=actor,
    )
    revision_create(
        sample=sample,
        kind=RevisionKind.REFERENCE,
        content=record["unit"],
        author=actor,
        author_label="" if actor else AUTHOR_LABEL,
        origin=RevisionOrigin.EXTRACTED,
        language=language,
        provenance={
            "extracted_from": f"{source}/{record['file']}:{record['start_line']}-{record['end_line']}",
            "source_sha256": _sha(record["source"]),
        },
    )
    return sample


def _sha(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def extracted_kernels_import(
    *, extraction: KernelExtraction, kernel_ids: Iterable[int], actor: User | None
) -> ImportOutcome:
    """Create a sample (reference = the unit) for each chosen kernel; all or nothing."""
    ids = sorted({int(i) for i in kernel_ids})
    if not ids:
        raise ExtractionError("choose at least one kernel to import")
    if extraction.state != JobState.DONE:
        raise ExtractionError("this extraction has not finished")
    outcome = ImportOutcome()
    with transaction.atomic():
        kernels = list(
            ExtractedKernel.objects.select_for_update()
            .filter(extraction=extraction, pk__in=ids)
            .order_by("pk")
        )
        if len(kernels) != len(ids):
            raise ExtractionError("some chosen kernels are not part of this extraction")
        for kernel in kernels:
            existing = Sample.objects.filter(task_id=kernel.task_id).first()
            if existing is not None:
                outcome.unchanged.append(kernel.task_id)
                if kernel.sample_id is None:
                    ExtractedKernel.objects.filter(pk=kernel.pk).update(sample=existing)
                continue
            sample = _import_one(
                kernel.data,
                task_id=kernel.task_id,
                source=extraction.source_name,
                extraction_id=extraction.pk,
                actor=actor,
            )
            ExtractedKernel.objects.filter(pk=kernel.pk).update(sample=sample)
            outcome.created.append(sample)
    return outcome


def report_import(
    *, report: ExtractionReport, actor: User | None, min_lines: int = 0, max_lines: int | None = None
) -> ImportOutcome:
    """The command line's --import: every kernel within the line bounds, one transaction per kernel.

    A kernel that fails (a task id too long, say) is reported and the others still import;
    importing the same tree twice creates nothing new.
    """
    outcome = ImportOutcome()
    for kernel, task_id in zip(report.kernels, _task_ids(report), strict=True):
        if kernel.lines < min_lines or (max_lines is not None and kernel.lines > max_lines):
            continue
        if Sample.objects.filter(task_id=task_id).exists():
            outcome.unchanged.append(task_id)
            continue
        try:
            with transaction.atomic():
                sample = _import_one(
                    kernel.to_dict(), task_id=task_id, source=report.source, extraction_id=None, actor=actor
                )
        except SampleError as exc:
            outcome.errors.append(f"{kernel.file}:{kernel.start_line} {kernel.name}: {exc}")
            continue
        outcome.created.append(sample)
    return outcome
