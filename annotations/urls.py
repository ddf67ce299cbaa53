"""URL map: each area's view module declares `app_name` and `urlpatterns`."""

from __future__ import annotations

import importlib
import importlib.util

from django.urls import URLPattern, URLResolver, include, path
from django.views.generic import RedirectView

# (URL prefix, view module). Each module's `app_name` is its namespace.
AREAS = [
    ("samples/", "annotations.views.samples"),
    ("runs/", "annotations.views.runs"),
    ("imports/", "annotations.views.imports"),
    ("extraction/", "annotations.views.extraction"),
    ("chat/", "annotations.views.chat"),
    ("llm/", "annotations.views.llm_settings"),
    ("review/", "annotations.views.review"),
    ("exports/", "annotations.views.exports"),
    ("dashboard/", "annotations.views.dashboard"),
]

urlpatterns: list[URLPattern | URLResolver] = [
    path("", RedirectView.as_view(pattern_name="samples:list", permanent=False)),
]
for prefix, module_name in AREAS:
    # Areas are built in parallel; one that does not exist yet is simply not routed.
    if importlib.util.find_spec(module_name) is None:
        continue
    module = importlib.import_module(module_name)
    urlpatterns.append(path(prefix, include((module.urlpatterns, module.app_name))))
