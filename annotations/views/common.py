"""Helpers every view module shares."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def is_fragment_request(request: HttpRequest) -> bool:
    """One place decides page vs fragment: polling and htmx-style requests ask for fragments."""
    return request.headers.get("HX-Request") == "true" or request.GET.get("fragment") == "1"


def error_page(request: HttpRequest, message: str, *, status: int = 400, title: str = "") -> HttpResponse:
    titles = {400: "Bad request", 403: "Not allowed", 404: "Not found", 409: "Conflict", 413: "Too large"}
    context: dict[str, Any] = {"message": message, "status": status, "title": title or titles.get(status, "Error")}
    return render(request, "error.html", context, status=status)
