"""Import pages: upload, a batch's live progress (a fragment polled with a cursor), its result and errors.

Maintainers and annotators may import; reviewers get 403, outsiders 404.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path
from django.views.decorators.http import require_GET, require_POST

from annotations.access import Capability, check_capability, request_user, role_required
from annotations.models import ImportBatch, User
from annotations.models.ingest import JobState
from annotations.services.imports import import_batch_create
from annotations.views.common import error_page
from pipeline.importers import available_formats

app_name = "imports"
RECENT = 30
# Errors sent per poll: a file with 100,000 bad lines streams them in pieces.
ERRORS_PER_POLL = 500
# Errors rendered with the page itself; the rest stream in pages of ERRORS_PER_POLL.
DETAIL_ERRORS = 1000
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._+-]+")


def get_batch_for_user(user: User, pk: int) -> ImportBatch:
    check_capability(user, Capability.INGEST)
    return get_object_or_404(ImportBatch.objects.select_related("created_by"), pk=pk)


def _formats() -> list[tuple[str, str]]:
    return [(m.NAME, m.LABEL) for m in available_formats()]


@require_GET
@role_required(Capability.INGEST)
def import_list(request: HttpRequest) -> HttpResponse:
    batches = ImportBatch.objects.select_related("created_by").order_by("-created_at")[:RECENT]
    return render(request, "imports/list.html", {"batches": batches, "formats": _formats(), "form_error": ""})


def _safe_name(name: str) -> str:
    base = Path(name.replace("\\", "/")).name
    cleaned = _SAFE_NAME.sub("_", base).strip("._") or "upload"
    return cleaned[:120]


def _store_uploads(files: list[UploadedFile]) -> tuple[Path, str]:
    """Save uploads under DATA_DIR/imports/<uuid>/ and say what to import: the file, the agent pair, or the directory."""
    folder = Path(settings.DATA_DIR) / "imports" / uuid.uuid4().hex
    folder.mkdir(parents=True, exist_ok=False)
    names = []
    for upload in files:
        name = _safe_name(upload.name or "upload")
        while name in names:
            name = f"1_{name}"
        names.append(name)
        with open(folder / name, "wb") as fh:
            for chunk in upload.chunks():
                fh.write(chunk)
    if len(names) == 1:
        return folder / names[0], names[0]
    jsonl = [n for n in names if n.endswith((".jsonl", ".jsonl.gz"))]
    if len(jsonl) == 1 and all(n == jsonl[0] or n.endswith("_mem.json") for n in names):
        return folder / jsonl[0], " + ".join(sorted(names))
    if all(n.endswith(".py") for n in names):
        return folder, f"{len(names)} gold files"
    raise ValueError("Upload one file, an agent run pair (<run>.jsonl + <run>_mem.json), or several gold .py files.")


@require_POST
@role_required(Capability.INGEST)
def import_upload(request: HttpRequest) -> HttpResponse:
    user = request_user(request)
    check_capability(user, Capability.INGEST)
    files = request.FILES.getlist("files")
    format_name = request.POST.get("format", "")
    known = {name for name, _ in _formats()}

    def bad(message: str) -> HttpResponse:
        batches = ImportBatch.objects.select_related("created_by").order_by("-created_at")[:RECENT]
        return render(request, "imports/list.html",
                      {"batches": batches, "formats": _formats(), "form_error": message}, status=400)

    if not files:
        return bad("Choose a file to import.")
    if format_name and format_name not in known:
        return bad(f"Unknown format {format_name[:40]!r}.")
    try:
        target, label = _store_uploads(files)
    except ValueError as exc:
        return bad(str(exc))
    with transaction.atomic():
        batch = import_batch_create(path=target, user=user, file_name=label, format_name=format_name,
                                    dry_run=request.POST.get("dry_run") == "on")
        from annotations.jobs.imports import enqueue_import

        transaction.on_commit(lambda: enqueue_import(batch.pk))
    return redirect("imports:detail", pk=batch.pk)


@require_GET
@role_required(Capability.INGEST)
def import_detail(request: HttpRequest, pk: int) -> HttpResponse:
    batch = get_batch_for_user(request_user(request), pk)
    shown = batch.errors[:DETAIL_ERRORS]
    context = _status_context(batch)
    # The rest of a long error list (and, while running, new errors) arrive through the fragment.
    context.update({"errors": shown, "cursor": len(shown),
                    "load_more": not context["finished"] or len(batch.errors) > len(shown)})
    return render(request, "imports/detail.html", context)


def _status_context(batch: ImportBatch) -> dict[str, object]:
    total = batch.total_bytes or 0
    percent = 100 if batch.state == JobState.DONE else (min(99, int(100 * batch.progress_bytes / total)) if total else 0)
    return {"batch": batch, "percent": percent, "finished": batch.state in (JobState.DONE, JobState.FAILED)}


@require_GET
@role_required(Capability.INGEST)
def import_progress(request: HttpRequest, pk: int) -> HttpResponse:
    """The status fragment plus the error rows after `cursor` (an index into the batch's errors).

    Headers: X-Cursor (pass it back next time), X-Finished ("1" once the batch is done or failed and
    every error was sent) and X-More ("1" while stored errors remain beyond this page).
    """
    batch = get_batch_for_user(request_user(request), pk)
    try:
        cursor = max(0, int(request.GET.get("cursor", "0")))
    except ValueError:
        return error_page(request, "cursor must be a whole number", status=400)
    new_errors = batch.errors[cursor : cursor + ERRORS_PER_POLL]
    context = {**_status_context(batch), "new_errors": new_errors, "first_number": cursor + 1}
    response = render(request, "imports/_progress.html", context)
    next_cursor = cursor + len(new_errors)
    response["X-Cursor"] = str(next_cursor)
    response["X-Finished"] = "1" if context["finished"] and next_cursor >= len(batch.errors) else "0"
    # More stored errors wait beyond this page: the page asks again at once instead of after a pause.
    response["X-More"] = "1" if next_cursor < len(batch.errors) else "0"
    response["Cache-Control"] = "no-store"
    return response


urlpatterns = [
    path("", import_list, name="list"),
    path("upload/", import_upload, name="upload"),
    path("<int:pk>/", import_detail, name="detail"),
    path("<int:pk>/progress/", import_progress, name="progress"),
]
