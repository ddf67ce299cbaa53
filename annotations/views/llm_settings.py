"""The maintainer's LLM settings page: per named endpoint, override the
environment's base URL, model, key, timeout, token limit and temperature.

A stored key is never rendered back: the page says "set" or "not set".
"""

from __future__ import annotations

from django.contrib import messages as flash
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_http_methods

from annotations.access import Capability, request_user, role_required
from annotations.models import EndpointOverride, GenerationJob
from annotations.services import generation
from annotations.views.common import error_page

app_name = "llm"


def _number(raw: str, cast: type, label: str) -> float | int | None:
    raw = raw.strip()
    if not raw:
        return None
    try:
        return cast(raw)
    except ValueError:
        raise generation.GenerationError(f"{label} must be a number, got {raw[:30]!r}.") from None


@require_http_methods(["GET", "POST"])
@role_required(Capability.MAINTAIN)
def settings_page(request: HttpRequest) -> HttpResponse:
    user = request_user(request)
    if request.method == "POST":
        name = request.POST.get("name", "")
        try:
            generation.endpoint_override_save(
                name=name, user=user,
                base_url=request.POST.get("base_url", ""),
                model=request.POST.get("model", ""),
                api_key=request.POST.get("api_key") or None,
                clear_key=request.POST.get("clear_key") == "1",
                timeout_s=_number(request.POST.get("timeout_s", ""), float, "The timeout"),
                max_tokens=_number(request.POST.get("max_tokens", ""), int, "Max tokens"),  # type: ignore[arg-type]
                temperature=_number(request.POST.get("temperature", ""), float, "The temperature"),
            )
        except generation.GenerationError as exc:
            return error_page(request, str(exc), status=400)
        flash.success(request, f"Saved the {name} endpoint.")
        return redirect("llm:settings")
    rows = []
    overrides = {o.name: o for o in EndpointOverride.objects.all()}
    for name in generation.ENDPOINT_NAMES:
        effective = generation.endpoint_get(name=name)
        rows.append({"name": name, "effective": effective.public(), "missing": effective.missing(),
                     "override": overrides.get(name),
                     "override_key_set": bool(overrides.get(name) and overrides[name].api_key)})
    jobs = GenerationJob.objects.order_by("-created_at")[:10]
    job_rows = [{"job": j, "progress": generation.generation_job_progress(j)} for j in jobs]
    return render(request, "llm/settings.html", {"rows": rows, "jobs": job_rows})


urlpatterns = [path("", settings_page, name="settings")]
