"""Verification views: request a run, watch its live log, cancel it, batches with live progress.

Capabilities: reading runs and logs needs READ; requesting or cancelling a run
needs ANNOTATE (cancel: the requester or a maintainer); batch verification needs
MAINTAIN, because a batch occupies the shared GPU queues for everyone.
Live parts poll server-rendered fragments with a cursor (X-Log-Cursor), as
healthchecks' log_events does; the worker appends to Redis within milliseconds
and the page polls every 500 ms, so a line shows up within a second.
"""

from __future__ import annotations

from django.contrib import messages as flash
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotations.access import Capability, check_capability, get_sample_for_user, request_user, role_required
from annotations.models import Run, Sample, User, VerificationBatch
from annotations.models.runs import Backend
from annotations.selectors import runs as selectors
from annotations.services import runs as service
from annotations.views.common import error_page, is_fragment_request

app_name = "runs"


def get_run_for_user(user: User, pk: int, capability: Capability = Capability.READ) -> Run:
    check_capability(user, capability)
    run = selectors.run_for_detail(pk)
    if run is None:
        raise Http404("Not found")
    return run


def get_batch_for_user(user: User, pk: int, capability: Capability = Capability.READ) -> VerificationBatch:
    check_capability(user, capability)
    batch = VerificationBatch.objects.filter(pk=pk).first()
    if batch is None:
        raise Http404("Not found")
    return batch


@require_POST
@role_required(Capability.ANNOTATE)
def run_create(request: HttpRequest, sample_pk: int) -> HttpResponse:
    user = request_user(request)
    sample = get_sample_for_user(user, sample_pk, Capability.ANNOTATE)
    try:
        run = service.run_request(sample=sample, backend=request.POST.get("backend", ""), user=user)
    except service.RunError as exc:
        return error_page(request, str(exc), status=400)
    if is_fragment_request(request):
        return render(request, "runs/_active.html", {"run": run, "user": user})
    flash.success(request, f"Run {run.pk} queued on {run.get_backend_display()}.")
    return redirect(f"{reverse('samples:detail', args=[sample.pk])}#runs")


@require_GET
@role_required(Capability.READ)
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_run_for_user(request_user(request), pk)
    run = service.run_refresh(run=run)
    revisions = list(run.runrevision_set.select_related("revision").order_by("kind"))
    return render(request, "runs/detail.html", {
        "run": run,
        "revisions": revisions,
        "stages": [(name, run.stages.get(name) or {}) for name in ("call", "exe", "perf")],
        "retries": list(run.retries.all()),
        "can_cancel": _can_cancel(request_user(request), run),
    })


@require_GET
@role_required(Capability.READ)
def run_log(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_run_for_user(request_user(request), pk)
    run = service.run_refresh(run=run)
    try:
        chunk = selectors.run_log_chunk(run=run, cursor=request.GET.get("cursor", "0"))
    except selectors.BadCursor as exc:
        return error_page(request, str(exc), status=400)
    response = render(request, "runs/_log_lines.html", {"lines": chunk.lines})
    response["X-Log-Cursor"] = chunk.cursor
    response["X-Run-Status"] = run.status
    response["X-Log-Done"] = "1" if chunk.done else "0"
    response["Cache-Control"] = "no-store"
    return response


def _can_cancel(user: User, run: Run) -> bool:
    return run.status in service.ACTIVE and (run.requested_by_id == user.pk or user.role == "maintainer")


@require_POST
@role_required(Capability.ANNOTATE)
def run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    user = request_user(request)
    run = get_run_for_user(user, pk, Capability.ANNOTATE)
    try:
        run = service.run_cancel(run=run, user=user)
    except service.RunError as exc:
        return error_page(request, str(exc), status=409)
    flash.info(request, f"Cancel requested for run {run.pk}.")
    return redirect(reverse("runs:detail", args=[run.pk]))


@require_http_methods(["GET", "POST"])
@role_required(Capability.MAINTAIN)
def batch_create(request: HttpRequest) -> HttpResponse:
    user = request_user(request)
    # GET ?task_ids=a,b&source=S&backend=B prefills the form (the sample list can link here).
    form = request.POST if request.method == "POST" else request.GET
    context = {"backends": Backend.choices, "sources": _sources(), "form": form}
    if request.method == "GET":
        return render(request, "runs/batch_new.html", context)
    ids_text = request.POST.get("task_ids", "")
    task_ids = [t for t in (part.strip() for part in ids_text.replace(",", "\n").splitlines()) if t]
    source = request.POST.get("source", "")
    everything = request.POST.get("all") == "1"
    try:
        samples = service.samples_for_selection(task_ids=task_ids, source=source, all_samples=everything)
        batch, skipped = service.batch_create(
            user=user, backend=request.POST.get("backend", ""), samples=samples,
            selection={"task_ids": task_ids[:1000], "source": source, "all": everything},
        )
    except service.RunError as exc:
        return render(request, "runs/batch_new.html", {**context, "error": str(exc)}, status=400)
    if skipped:
        flash.warning(request, f"{len(skipped)} samples were skipped (listed below).")
    return redirect(reverse("runs:batch_detail", args=[batch.pk]))


def _sources() -> list[str]:
    return list(Sample.objects.order_by("source").values_list("source", flat=True).distinct())


@require_GET
@role_required(Capability.READ)
def batch_detail(request: HttpRequest, pk: int) -> HttpResponse:
    batch = get_batch_for_user(request_user(request), pk)
    service.run_sweep(limit=200)
    progress = selectors.batch_progress(batch)
    context = {"batch": batch, "progress": progress, "skipped": (batch.selection or {}).get("skipped", [])}
    if is_fragment_request(request):
        response = render(request, "runs/_batch_progress.html", context)
        response["X-Batch-Done"] = "1" if progress.done else "0"
        response["Cache-Control"] = "no-store"
        return response
    return render(request, "runs/batch_detail.html", context)


urlpatterns = [
    path("sample/<int:sample_pk>/run/", run_create, name="create"),
    path("<int:pk>/", run_detail, name="detail"),
    path("<int:pk>/log/", run_log, name="log"),
    path("<int:pk>/cancel/", run_cancel, name="cancel"),
    path("batches/new/", batch_create, name="batch_create"),
    path("batches/<int:pk>/", batch_detail, name="batch_detail"),
]
