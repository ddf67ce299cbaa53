from __future__ import annotations

from django.core.paginator import EmptyPage
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import path
from django.views.decorators.http import require_GET

from annotations.access import Capability, get_sample_for_user, request_user, role_required
from annotations.highlight import highlight_code
from annotations.models import Revision
from annotations.selectors import samples as selectors
from annotations.views.common import error_page


@require_GET
@role_required(Capability.READ)
def sample_list(request: HttpRequest) -> HttpResponse:
    try:
        query = selectors.parse_sample_query(request.GET)
    except selectors.InvalidQuery as exc:
        return error_page(request, str(exc), status=400)
    paginator = selectors.SamplePaginator(selectors.sample_list(query, user=request_user(request)), selectors.PAGE_SIZE)
    try:
        page = paginator.page(query.page)
    except EmptyPage:
        return error_page(request, f"Page {query.page} does not exist; there are {paginator.num_pages}.", status=404)
    samples = list(page.object_list)
    tags = selectors.tag_names_for(samples)
    rows = [{"sample": s, "tags": tags.get(s.pk, [])} for s in samples]
    params = request.GET.copy()
    params.pop("page", None)
    return render(
        request,
        "samples/list.html",
        {
            "rows": rows,
            "page": page,
            "query": query,
            "choices": selectors.filter_choices(),
            "assignees": selectors.assignee_choices(),
            "querystring": params.urlencode(),
        },
    )


@require_GET
@role_required(Capability.READ)
def sample_detail(request: HttpRequest, pk: int) -> HttpResponse:
    sample = get_sample_for_user(request_user(request), pk)
    current = selectors.current_revisions(sample)
    counts = selectors.revision_counts(sample)
    artifacts = []
    for kind in selectors.ARTIFACT_ORDER:
        rev = current.get(kind)
        artifacts.append(
            {
                "kind": kind,
                "label": kind.label,
                "revision": rev,
                "count": counts.get(kind, 0),
                "html": highlight_code(rev.content, rev.language, cache_key=rev.sha256) if rev else None,
            }
        )
    # Open on the first artifact that exists rather than on an empty tab.
    active_kind = next((a["kind"] for a in artifacts if a["revision"] is not None), "")
    return render(
        request,
        "samples/detail.html",
        {"sample": sample, "artifacts": artifacts, "active_kind": active_kind,
         "tags": list(sample.tags.values_list("name", flat=True))},
    )


@require_GET
@role_required(Capability.READ)
def revision_history(request: HttpRequest, pk: int, kind: str) -> HttpResponse:
    sample = get_sample_for_user(request_user(request), pk)
    if kind not in selectors.RevisionKind.values:
        return error_page(request, f"Unknown artifact kind {kind[:40]!r}.", status=404)
    history = selectors.revision_history(sample, kind)
    return render(request, "samples/history.html", {"sample": sample, "kind": kind, "history": history})


@require_GET
@role_required(Capability.READ)
def revision_detail(request: HttpRequest, pk: int, rev_pk: int) -> HttpResponse:
    sample = get_sample_for_user(request_user(request), pk)
    revision = get_object_or_404(Revision.objects.select_related("author", "parent"), pk=rev_pk, sample=sample)
    if request.GET.get("raw") == "1":
        response = HttpResponse(revision.content, content_type="text/plain; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{sample.pk}-{revision.kind}-{revision.seq}.txt"'
        return response
    return render(
        request,
        "samples/revision.html",
        {
            "sample": sample,
            "revision": revision,
            "html": highlight_code(revision.content, revision.language, cache_key=revision.sha256),
        },
    )


app_name = "samples"
urlpatterns = [
    path("", sample_list, name="list"),
    path("<int:pk>/", sample_detail, name="detail"),
    path("<int:pk>/history/<str:kind>/", revision_history, name="history"),
    path("<int:pk>/revisions/<int:rev_pk>/", revision_detail, name="revision"),
]
