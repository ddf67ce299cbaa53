from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse

from annotations.access import Capability, user_can

# (label, url name, capability). Areas whose pages do not exist yet are skipped.
NAV_ITEMS = [
    ("Samples", "samples:list", Capability.READ),
    ("Review", "review:queue", Capability.READ),
    ("Verify batch", "runs:batch_create", Capability.MAINTAIN),
    ("Import", "imports:list", Capability.INGEST),
    ("Extract", "extraction:list", Capability.INGEST),
    ("Exports", "exports:list", Capability.MAINTAIN),
    ("Dashboard", "dashboard:index", Capability.MAINTAIN),
    ("LLM", "llm:settings", Capability.MAINTAIN),
]


def navigation(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    items = []
    if user is not None and user.is_authenticated and getattr(user, "role", None):
        for label, name, capability in NAV_ITEMS:
            if not user_can(user, capability):
                continue
            try:
                url = reverse(name)
            except NoReverseMatch:
                continue
            items.append({"label": label, "url": url, "active": request.path.startswith(url) and url != "/"})
    # What the user may do, for templates that offer an action only to those who can take it.
    can = {c.value: bool(user is not None and user_can(user, c)) for c in Capability}
    return {"nav_items": items, "can": can}
