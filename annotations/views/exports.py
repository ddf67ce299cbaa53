"""Export snapshots: list and create, follow one while it runs, download its files (maintainers only)."""

from __future__ import annotations

import os
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

from django.contrib import messages
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path
from django.views.decorators.http import require_GET, require_http_methods

from annotations.access import Capability, check_capability, role_required
from annotations.models import ExportSnapshot, User
from annotations.models.ingest import JobState
from annotations.models.runs import Backend
from annotations.models.samples import Language
from annotations.selectors.exports import FILTER_FIELDS
from annotations.services.exports import ExportRequestError, export_create
from annotations.views.common import is_fragment_request
from pipeline.export.writer import LAYOUTS, MANIFEST

LIST_LIMIT = 100


def _user(request: HttpRequest) -> User:
    # role_required has already turned anonymous users away.
    return cast(User, request.user)


def get_snapshot_for_user(user: User, pk: int) -> ExportSnapshot:
    """404 for outsiders, 403 for roles that cannot maintain, 404 for unknown ids."""
    check_capability(user, Capability.MAINTAIN)
    return get_object_or_404(ExportSnapshot.objects.select_related("created_by"), pk=pk)


def _form_context(values: dict[str, Any], layouts: list[str], error: str = "") -> dict[str, Any]:
    return {
        "values": values,
        "layouts": layouts,
        "layout_choices": LAYOUTS,
        "languages": Language.choices,
        "backends": Backend.choices,
        "error": error,
        "snapshots": ExportSnapshot.objects.select_related("created_by")[:LIST_LIMIT],
    }


@require_http_methods(["GET", "POST"])
@role_required(Capability.MAINTAIN)
def export_list(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return render(request, "exports/list.html", _form_context({"name": ""}, []))
    values = {key: request.POST.get(key, "").strip() for key in ("name", *FILTER_FIELDS)}
    layouts = request.POST.getlist("layout")
    filters = {key: values[key] for key in FILTER_FIELDS if values[key]}
    try:
        snapshot = export_create(name=values["name"], filters=filters, layouts=layouts, actor=_user(request))
    except ExportRequestError as exc:
        return render(request, "exports/list.html", _form_context(values, layouts, str(exc)), status=400)
    messages.success(
        request, f"Snapshot “{snapshot.name}” queued: {snapshot.sample_count} approved sample(s) match."
    )
    return redirect("exports:detail", pk=snapshot.pk)


@require_GET
@role_required(Capability.MAINTAIN)
def export_detail(request: HttpRequest, pk: int) -> HttpResponse:
    snapshot = get_snapshot_for_user(_user(request), pk)
    context = {
        "snapshot": snapshot,
        "finished": snapshot.is_finished,
        "done": snapshot.state == JobState.DONE,
    }
    if is_fragment_request(request):
        return render(request, "exports/_status.html", context)
    return render(request, "exports/detail.html", context)


def _snapshot_file(snapshot: ExportSnapshot, relpath: str) -> Path:
    """Only files the manifest lists (or the manifest itself), inside the snapshot folder."""
    if snapshot.state != JobState.DONE:
        raise Http404("This snapshot has no files yet.")
    listed = {f["path"] for f in snapshot.files} | {MANIFEST}
    if relpath not in listed:
        raise Http404("No such file in this snapshot.")
    root = Path(snapshot.directory).resolve()
    target = (root / relpath).resolve()
    if not target.is_relative_to(root) or not target.is_file():
        raise Http404("The file is missing from the snapshot folder.")
    return target


@require_GET
@role_required(Capability.MAINTAIN)
def export_file(request: HttpRequest, pk: int, relpath: str) -> FileResponse:
    snapshot = get_snapshot_for_user(_user(request), pk)
    target = _snapshot_file(snapshot, relpath)
    content_type = "application/json" if target.suffix == ".json" else "text/plain; charset=utf-8"
    if target.suffix == ".jsonl":
        content_type = "application/jsonl; charset=utf-8"
    name = f"{_slug(snapshot)}-{relpath.replace('/', '-')}"
    return FileResponse(open(target, "rb"), as_attachment=True, filename=name, content_type=content_type)


def _slug(snapshot: ExportSnapshot) -> str:
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in snapshot.name.lower()).strip("-.")
    return f"{safe or 'snapshot'}-{str(snapshot.public_id)[:8]}"


_BLOCK = 512
_CHUNK = 1 << 16


def _snapshot_paths(root: Path) -> list[str]:
    """Every regular file under the snapshot folder (gold files included), sorted; links are skipped."""
    paths = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in filenames:
            target = Path(dirpath) / name
            if target.is_file() and not target.is_symlink():
                paths.append(target.relative_to(root).as_posix())
    return sorted(paths)


def _tar_stream(snapshot: ExportSnapshot) -> Iterator[bytes]:
    """A tar (pax) archive written by hand, one chunk at a time: memory stays flat for any size.

    Entries are sorted by path and mtime is fixed, so the same snapshot always
    gives the same archive bytes.
    """
    prefix = _slug(snapshot)
    root = Path(snapshot.directory).resolve()
    for relpath in _snapshot_paths(root):
        target = root / relpath
        info = tarfile.TarInfo(f"{prefix}/{relpath}")
        info.size = target.stat().st_size
        info.mode = 0o644
        info.mtime = 0
        info.uname = info.gname = ""
        yield info.tobuf(format=tarfile.PAX_FORMAT)
        with open(target, "rb") as fh:
            while chunk := fh.read(_CHUNK):
                yield chunk
        if info.size % _BLOCK:
            yield b"\0" * (_BLOCK - info.size % _BLOCK)
    yield b"\0" * (2 * _BLOCK)


@require_GET
@role_required(Capability.MAINTAIN)
def export_archive(request: HttpRequest, pk: int) -> StreamingHttpResponse:
    snapshot = get_snapshot_for_user(_user(request), pk)
    if snapshot.state != JobState.DONE or not Path(snapshot.directory).is_dir():
        raise Http404("This snapshot has no files yet.")
    response = StreamingHttpResponse(_tar_stream(snapshot), content_type="application/x-tar")
    response["Content-Disposition"] = f'attachment; filename="{_slug(snapshot)}.tar"'
    return response


app_name = "exports"
urlpatterns = [
    path("", export_list, name="list"),
    path("<int:pk>/", export_detail, name="detail"),
    path("<int:pk>/archive.tar", export_archive, name="archive"),
    path("<int:pk>/files/<path:relpath>", export_file, name="file"),
]
