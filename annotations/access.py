"""Who may do what. Every view goes through `role_required` and every object
through a `get_*_for_user` helper, so no view does a bare `.get(pk=...)`.

Anonymous users are sent to the login page; a logged-in user with no role (an
outsider) gets 404 everywhere, so the site does not even confirm what exists;
a role without the capability gets 403.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404

from annotations.models import Role, Sample, User


class Capability(enum.Enum):
    READ = "read"
    ANNOTATE = "annotate"
    # Bringing new samples in (imports, kernel extraction): annotators' and maintainers' work.
    INGEST = "ingest"
    REVIEW = "review"
    MAINTAIN = "maintain"


ROLE_CAPABILITIES: dict[str, frozenset[Capability]] = {
    Role.ANNOTATOR: frozenset({Capability.READ, Capability.ANNOTATE, Capability.INGEST}),
    Role.REVIEWER: frozenset({Capability.READ, Capability.ANNOTATE, Capability.REVIEW}),
    Role.MAINTAINER: frozenset(Capability),
}


def user_can(user: Any, capability: Capability) -> bool:
    if not getattr(user, "is_authenticated", False):
        return False
    return capability in ROLE_CAPABILITIES.get(user.role, frozenset())


def check_capability(user: Any, capability: Capability) -> None:
    """Raise 404 for outsiders and 403 for a role without the capability."""
    if not getattr(user, "role", ""):
        raise Http404("Not found")
    if not user_can(user, capability):
        raise PermissionDenied(f"Your role ({user.role}) cannot do this.")


def role_required(capability: Capability) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def decorator(view: Callable[..., Any]) -> Callable[..., Any]:
        import asyncio

        if asyncio.iscoroutinefunction(view):

            @wraps(view)
            async def async_wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
                user = await request.auser()
                if not user.is_authenticated:
                    return redirect_to_login(request.get_full_path())
                check_capability(user, capability)
                return await view(request, *args, **kwargs)

            return async_wrapped

        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            check_capability(request.user, capability)
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


def request_user(request: HttpRequest) -> User:
    """The logged-in user of a view already guarded by `role_required`."""
    user = request.user
    if not isinstance(user, User):
        raise Http404("Not found")
    return user


def get_sample_for_user(user: User, pk: int, capability: Capability = Capability.READ) -> Sample:
    """The sample, if this user may see it with this capability (404 / 403 otherwise)."""
    check_capability(user, capability)
    return get_object_or_404(Sample, pk=pk)


def get_rw_sample_for_user(user: User, pk: int) -> Sample:
    return get_sample_for_user(user, pk, Capability.ANNOTATE)
