"""The maintainers' dashboard: figures drawn server-side as SVG."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import path
from django.views.decorators.http import require_GET

from annotations.access import Capability, role_required
from annotations.selectors.dashboard import dashboard_context


@require_GET
@role_required(Capability.MAINTAIN)
def dashboard(request: HttpRequest) -> HttpResponse:
    return render(request, "dashboard/index.html", dashboard_context())


app_name = "dashboard"
urlpatterns = [path("", dashboard, name="index")]
