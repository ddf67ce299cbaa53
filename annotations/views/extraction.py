"""Kernel extraction pages: upload an archive (or, for maintainers, choose a server
directory), follow the background job, filter the kernels it found, read one
highlighted, and import the chosen ones as samples."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages as flash
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotations.access import Capability, check_capability, request_user, role_required, user_can
from annotations.highlight import highlight_code
from annotations.models import ExtractedKernel, KernelExtraction, User
from annotations.services import extraction as service
from annotations.views.common import error_page, is_fragment_request

app_name = "extraction"

KNOWN_FLAGS = [
    "too_short",
    "too_long",
    "templated",
    "high_dependency",
    "no_launch_found",
    "default_instantiation",
    "not_instantiated",
    "warp_level",
    "parse_errors",
    "missing_headers",
    "compile_failed",
]
PAGE_SIZE = 100


def get_extraction_for_user(user: User, pk: int) -> KernelExtraction:
    check_capability(user, Capability.INGEST)
    return get_object_or_404(KernelExtraction, pk=pk)


def get_extracted_kernel_for_user(user: User, extraction: KernelExtraction, pk: int) -> ExtractedKernel:
    check_capability(user, Capability.INGEST)
    return get_object_or_404(ExtractedKernel, pk=pk, extraction=extraction)


def _options_from(request: HttpRequest) -> dict[str, Any]:
    return {
        "min_lines": request.POST.get("min_lines", ""),
        "max_lines": request.POST.get("max_lines", ""),
        "compile": request.POST.get("compile") == "1",
    }


@require_GET
@role_required(Capability.INGEST)
def extraction_list(request: HttpRequest) -> HttpResponse:
    user = request_user(request)
    runs = KernelExtraction.objects.select_related("created_by").order_by("-created_at")[:50]
    return render(
        request,
        "extraction/list.html",
        {
            "runs": runs,
            "can_maintain": user_can(user, Capability.MAINTAIN),
            "defaults": service.extraction_options({}),
        },
    )


@require_POST
@role_required(Capability.INGEST)
def extraction_upload(request: HttpRequest) -> HttpResponse:
    user = request_user(request)
    upload = request.FILES.get("archive")
    if upload is None:
        return error_page(request, "Choose a .zip or .tar.gz archive to upload.", status=400)
    try:
        run = service.extraction_create_from_upload(upload=upload, options=_options_from(request), actor=user)
    except service.ExtractionError as exc:
        return error_page(request, str(exc), status=400)
    flash.success(request, f"Extraction of {run.source_name} queued.")
    return redirect("extraction:detail", run.pk)


@require_http_methods(["GET", "POST"])
@role_required(Capability.MAINTAIN)
def extraction_server(request: HttpRequest) -> HttpResponse:
    """Extract from a directory on the server, inside EXTRACTION_ROOTS (maintainers only)."""
    user = request_user(request)
    if request.method == "POST":
        try:
            run = service.extraction_create_from_directory(
                path=request.POST.get("directory", ""), options=_options_from(request), actor=user
            )
        except service.ExtractionError as exc:
            return error_page(request, str(exc), status=400)
        flash.success(request, f"Extraction of {run.source_name} queued.")
        return redirect("extraction:detail", run.pk)
    return render(
        request,
        "extraction/server.html",
        {"directories": service.server_directories(), "defaults": service.extraction_options({})},
    )


def _filtered(run: KernelExtraction, params: Any) -> tuple[QuerySet[ExtractedKernel], dict[str, str]]:
    query = {
        key: params.get(key, "").strip()[:200] for key in ("q", "flag", "language", "compiles", "imported")
    }
    kernels = run.kernels.all()
    if query["q"]:
        from django.db.models import Q

        kernels = kernels.filter(Q(name__icontains=query["q"]) | Q(file__icontains=query["q"]))
    if query["flag"] in KNOWN_FLAGS:
        # JSON text contains "flag" (quotes included): works on SQLite and PostgreSQL alike.
        kernels = kernels.filter(flags__icontains=f'"{query["flag"]}"')
    elif query["flag"] == "none":
        kernels = kernels.filter(flags=[])
    if query["language"] in ("cuda", "hip"):
        kernels = kernels.filter(language=query["language"])
    if query["compiles"] == "yes":
        kernels = kernels.filter(compiles=True)
    elif query["compiles"] == "no":
        kernels = kernels.filter(compiles=False)
    elif query["compiles"] == "unchecked":
        kernels = kernels.filter(compiles__isnull=True)
    if query["imported"] == "yes":
        kernels = kernels.filter(sample__isnull=False)
    elif query["imported"] == "no":
        kernels = kernels.filter(sample__isnull=True)
    return kernels.select_related("sample"), query


@require_GET
@role_required(Capability.INGEST)
def extraction_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_extraction_for_user(request_user(request), pk)
    if not run.finished:
        run = service.extraction_check_lost(extraction=run)
    if is_fragment_request(request):
        return render(request, "extraction/_progress.html", {"run": run})
    kernels, query = _filtered(run, request.GET)
    page = Paginator(kernels, PAGE_SIZE).get_page(request.GET.get("page"))
    querystring = urlencode({k: v for k, v in query.items() if v})
    return render(
        request,
        "extraction/detail.html",
        {
            "run": run,
            "page": page,
            "query": query,
            "querystring": querystring,
            "flags": KNOWN_FLAGS,
            "warnings": [p for p in run.problems if p.get("severity") == "warning"][:200],
            "errors": [p for p in run.problems if p.get("severity") == "error"][:200],
        },
    )


@require_GET
@role_required(Capability.INGEST)
def extraction_kernel(request: HttpRequest, pk: int, kernel_pk: int) -> HttpResponse:
    user = request_user(request)
    run = get_extraction_for_user(user, pk)
    kernel = get_extracted_kernel_for_user(user, run, kernel_pk)
    record = kernel.record()
    language = kernel.language
    return render(
        request,
        "extraction/kernel.html",
        {
            "run": run,
            "kernel": kernel,
            "record": record,
            "source_html": highlight_code(record.get("source", ""), language, first_line=kernel.start_line),
            "unit_html": highlight_code(record.get("unit", ""), language),
            "compile": record.get("compile") or {},
        },
    )


@require_POST
@role_required(Capability.INGEST)
def extraction_import(request: HttpRequest, pk: int) -> HttpResponse:
    user = request_user(request)
    run = get_extraction_for_user(user, pk)
    try:
        ids = [int(v) for v in request.POST.getlist("kernel")]
    except ValueError:
        return error_page(request, "Bad kernel selection.", status=400)
    try:
        outcome = service.extracted_kernels_import(extraction=run, kernel_ids=ids, actor=user)
    except service.ExtractionError as exc:
        return error_page(request, str(exc), status=400)
    text = f"Imported {len(outcome.created)} kernel(s) as samples."
    if outcome.unchanged:
        text += f" {len(outcome.unchanged)} already had a sample."
    flash.success(request, text)
    back = request.POST.get("back", "")
    target = redirect("extraction:detail", run.pk)
    if back and back.startswith("?") and "\n" not in back and "\r" not in back:
        target["Location"] += back
    return target


urlpatterns = [
    path("", extraction_list, name="list"),
    path("upload/", extraction_upload, name="upload"),
    path("server/", extraction_server, name="server"),
    path("<int:pk>/", extraction_detail, name="detail"),
    path("<int:pk>/import/", extraction_import, name="import"),
    path("<int:pk>/kernels/<int:kernel_pk>/", extraction_kernel, name="kernel"),
]
