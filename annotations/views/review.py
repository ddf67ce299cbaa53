"""Review pages: the queues, the review form, diffs of revisions and of run logs, and the review actions.

Views stay thin: access helper, one service call, render or redirect. A refused
action re-renders the page with the reason (and, for the review form, with what
the reviewer typed), so nothing is lost.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, QueryDict
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.utils.http import url_has_allowed_host_and_scheme, urlencode
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_POST

from annotations import diff_html
from annotations.access import Capability, get_sample_for_user, role_required, user_can
from annotations.models import Revision, Run, Sample, SampleStatus, User
from annotations.models.review import Verdict
from annotations.models.samples import RevisionKind
from annotations.selectors import reviews as selectors
from annotations.services import reviews as services
from annotations.views.common import error_page, is_fragment_request
from pipeline import diffing

# "Show the whole file": context large enough that nothing folds.
WHOLE_FILE_CONTEXT = 1_000_000
MAX_CONTEXT = 1_000
MAX_BULK = 500


def _back(request: HttpRequest, default: str) -> HttpResponseRedirect:
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        return HttpResponseRedirect(target)
    return HttpResponseRedirect(default)


def _int_or_none(value: str | None) -> int | None:
    if value is None or not value.strip().lstrip("-").isdigit():
        return None
    return int(value)


# ---------------------------------------------------------------- queue


@require_GET
@role_required(Capability.READ)
def queue(request: HttpRequest) -> HttpResponse:
    user: User = request.user  # type: ignore[assignment]
    can_review = user_can(user, Capability.REVIEW)
    can_maintain = user_can(user, Capability.MAINTAIN)
    needs = list(selectors.needs_my_review(user)[:200]) if can_review else []
    changes = list(selectors.my_changes_requested(user)[:200])
    in_review = list(selectors.all_in_review()[:MAX_BULK]) if can_maintain else []
    assignments = selectors.assignments_for(needs + in_review)
    return render(
        request,
        "review/queue.html",
        {
            "needs": [{"sample": s, "assignment": assignments.get(s.pk)} for s in needs],
            "changes": changes,
            "in_review": [{"sample": s, "assignment": assignments.get(s.pk)} for s in in_review],
            "reviewers": list(selectors.reviewers()) if can_maintain else [],
            "can_review": can_review,
            "can_maintain": can_maintain,
        },
    )


@require_POST
@role_required(Capability.MAINTAIN)
def assign(request: HttpRequest) -> HttpResponse:
    ids = [i for i in (_int_or_none(v) for v in request.POST.getlist("sample")) if i is not None]
    reviewer_id = _int_or_none(request.POST.get("reviewer"))
    reviewer = User.objects.filter(pk=reviewer_id).first() if reviewer_id is not None else None
    if reviewer is None:
        return error_page(request, "Choose a reviewer to assign.", status=400)
    if not ids:
        return error_page(request, "Tick at least one sample to assign.", status=400)
    if len(ids) > MAX_BULK:
        return error_page(request, f"At most {MAX_BULK} samples can be assigned at once.", status=400)
    samples = list(Sample.objects.filter(pk__in=ids).order_by("pk"))
    try:
        result = services.review_assign(samples=samples, reviewer=reviewer, actor=request.user)  # type: ignore[arg-type]
    except services.ReviewError as exc:
        return error_page(request, str(exc), status=400)
    if result.assigned:
        messages.success(request, f"Assigned {len(result.assigned)} sample(s) to {reviewer.username}.")
    for task_id, why in result.skipped:
        messages.warning(request, f"{task_id}: not assigned, {why}.")
    return _back(request, reverse("review:queue"))


# ---------------------------------------------------------------- the review page


def _review_context(request: HttpRequest, sample: Sample, form: dict[str, Any] | None = None) -> dict[str, Any]:
    user: User = request.user  # type: ignore[assignment]
    current = selectors.current_reviewed_revisions(sample)
    approvals = list(selectors.active_approvals(sample).select_related("reviewer"))
    pair = selectors.diff_default_pair(sample, RevisionKind.CANDIDATE)
    diff_ctx = _diff_context(sample, RevisionKind.CANDIDATE, pair[0], pair[1], base_url=reverse(
        "review:diff", args=[sample.pk, RevisionKind.CANDIDATE])) if pair else None
    form = form or {"verdict": "", "checklist": {}, "comment": ""}
    return {
        "sample": sample,
        "current": [current[k] for k in RevisionKind.values if k in current],
        "passing_run": selectors.passing_run_of_current(sample),
        "is_author": selectors.is_current_author(sample, user),
        "approvals": approvals,
        "required_approvals": settings.REVIEW_REQUIRED_APPROVALS,
        "assignment": selectors.active_assignment(sample),
        "checklist": [{"key": k, "label": label, "checked": bool(form["checklist"].get(k))}
                      for k, label in services.CHECKLIST],
        "verdicts": Verdict.choices,
        "form": form,
        "next_sample": selectors.next_in_queue(user, sample) if user_can(user, Capability.REVIEW) else None,
        "previous_sample": (
            selectors.next_in_queue(user, sample, step=-1) if user_can(user, Capability.REVIEW) else None
        ),
        "diff": diff_ctx,
        "comments": selectors.comments(sample),
        "events": selectors.audit_trail(sample),
        "reviews": selectors.reviews(sample),
        "reviewers": list(selectors.reviewers()) if user_can(user, Capability.MAINTAIN) else [],
        "can_maintain": user_can(user, Capability.MAINTAIN),
    }


@require_GET
@role_required(Capability.REVIEW)
def review_page(request: HttpRequest, pk: int) -> HttpResponse:
    sample = get_sample_for_user(request.user, pk, Capability.REVIEW)  # type: ignore[arg-type]
    return render(request, "review/review.html", _review_context(request, sample))


@require_POST
@role_required(Capability.REVIEW)
def record(request: HttpRequest, pk: int) -> HttpResponse:
    sample = get_sample_for_user(request.user, pk, Capability.REVIEW)  # type: ignore[arg-type]
    verdict = request.POST.get("verdict", "")
    checklist = {key: True for key in request.POST.getlist("checklist")}
    comment = request.POST.get("comment", "")
    form = {"verdict": verdict, "checklist": checklist, "comment": comment}
    seen_count = _int_or_none(request.POST.get("seen_revision_count"))
    seen_status = request.POST.get("seen_status", "")
    if seen_count is None or seen_status not in SampleStatus.values:
        # A form without the state it was rendered with cannot be checked for staleness: refuse it.
        return _refuse(request, sample, form, "The form is missing the state it was opened with; reload the page.", 400)
    try:
        services.review_record(
            sample=sample,
            reviewer=request.user,  # type: ignore[arg-type]
            verdict=verdict,
            checklist=checklist,
            comment=comment,
            seen_status=seen_status,
            seen_revision_count=seen_count,
        )
    except services.ReviewConflict as exc:
        return _refuse(request, sample, form, str(exc), 409)
    except services.ReviewError as exc:
        return _refuse(request, sample, form, str(exc), 400)
    messages.success(request, f"Recorded: {Verdict(verdict).label.lower()} on {sample.task_id}.")
    nxt = selectors.next_in_queue(request.user, sample)  # type: ignore[arg-type]
    if request.POST.get("then") == "next" and nxt is not None:
        return redirect("review:sample", nxt.pk)
    return redirect("review:sample", sample.pk)


def _refuse(request: HttpRequest, sample: Sample, form: dict[str, Any], message: str, status: int) -> HttpResponse:
    sample.refresh_from_db()
    context = _review_context(request, sample, form)
    context["error"] = message
    return render(request, "review/review.html", context, status=status)


# ---------------------------------------------------------------- small actions


def _action(request: HttpRequest, pk: int, capability: Capability) -> Sample:
    return get_sample_for_user(request.user, pk, capability)  # type: ignore[arg-type]


@require_POST
@role_required(Capability.ANNOTATE)
def submit(request: HttpRequest, pk: int) -> HttpResponse:
    sample = _action(request, pk, Capability.ANNOTATE)
    try:
        services.review_submit_for_review(
            sample=sample, actor=request.user,  # type: ignore[arg-type]
            seen_revision_count=_int_or_none(request.POST.get("seen_revision_count")),
        )
    except services.ReviewConflict as exc:
        return error_page(request, str(exc), status=409)
    except services.ReviewError as exc:
        return error_page(request, str(exc), status=400)
    messages.success(request, f"{sample.task_id} is now in review.")
    return _back(request, reverse("samples:detail", args=[sample.pk]))


@require_POST
@role_required(Capability.REVIEW)
def claim(request: HttpRequest, pk: int) -> HttpResponse:
    sample = _action(request, pk, Capability.REVIEW)
    try:
        services.review_claim(sample=sample, reviewer=request.user)  # type: ignore[arg-type]
    except services.ReviewError as exc:
        return error_page(request, str(exc), status=409)
    messages.success(request, f"You are reviewing {sample.task_id}.")
    return redirect("review:sample", sample.pk)


@require_POST
@role_required(Capability.MAINTAIN)
def reopen(request: HttpRequest, pk: int) -> HttpResponse:
    sample = _action(request, pk, Capability.MAINTAIN)
    try:
        services.review_reopen(sample=sample, actor=request.user, reason=request.POST.get("reason", ""))  # type: ignore[arg-type]
    except services.ReviewError as exc:
        return error_page(request, str(exc), status=409)
    messages.success(request, f"{sample.task_id} is back in review.")
    return _back(request, reverse("review:sample", args=[sample.pk]))


@require_POST
@role_required(Capability.ANNOTATE)
def comment(request: HttpRequest, pk: int) -> HttpResponse:
    sample = _action(request, pk, Capability.ANNOTATE)
    try:
        services.comment_add(
            sample=sample, author=request.user,  # type: ignore[arg-type]
            body=request.POST.get("body", ""), parent_id=_int_or_none(request.POST.get("parent")),
        )
    except services.ReviewError as exc:
        return error_page(request, str(exc), status=400)
    return _back(request, reverse("samples:detail", args=[sample.pk]) + "#comments")


# ---------------------------------------------------------------- diffs


def _context_param(request: HttpRequest) -> int:
    raw = request.GET.get("context", "")
    if raw == "all":
        return WHOLE_FILE_CONTEXT
    value = _int_or_none(raw)
    return diffing.DEFAULT_CONTEXT if value is None else max(0, min(value, MAX_CONTEXT))


# Revisions are immutable, so the rendered diff of a pair (with its context and expanded folds)
# never changes: cache it. Very large tables are not cached, to keep the cache small.
DIFF_CACHE_SECONDS = 6 * 3600
MAX_CACHED_TABLE = 2_000_000


def _diff_context(
    sample: Sample, kind: str, a: Revision, b: Revision, *, base_url: str, context: int = diffing.DEFAULT_CONTEXT,
    expanded: frozenset[int] = frozenset(),
) -> dict[str, Any]:
    query: dict[str, str | int] = {"a": a.pk, "b": b.pk}
    if context != diffing.DEFAULT_CONTEXT:
        query["context"] = "all" if context == WHOLE_FILE_CONTEXT else context
    url = f"{base_url}?{urlencode(query)}"
    expand_url = url + "".join(f"&expand={i}" for i in sorted(expanded))
    # Content hashes as well as ids: a reused id (a recreated database) can never serve another pair's diff.
    fingerprint = "|".join([a.sha256, b.sha256, a.language, b.language, expand_url, str(context)])
    key = "ks:review-diff:v1:" + hashlib.sha256(fingerprint.encode()).hexdigest()
    cached = cache.get(key)
    if cached is None:
        diff = diffing.side_by_side(a.content, b.content, context=context)
        stats = {"identical": diff.identical, "added": diff.added, "removed": diff.removed, "changed": diff.changed,
                 "left_lines": diff.left_lines, "right_lines": diff.right_lines, "notes": diff.notes}
        table = str(diff_html.diff_table_html(
            diff, left_language=a.language, right_language=b.language, expand_url=expand_url, expanded=expanded
        ))
        cached = (stats, table)
        if len(table) <= MAX_CACHED_TABLE:
            cache.set(key, cached, DIFF_CACHE_SECONDS)
    stats, table = cached
    return {
        "kind": kind,
        "a": a,
        "b": b,
        "diff": stats,
        "url": url,
        "left_label": f"{kind} #{a.seq} · {a.origin_display} · {a.author_label}",
        "right_label": f"{kind} #{b.seq} · {b.origin_display} · {b.author_label}",
        "table": mark_safe(table),  # noqa: S308 - built by diff_html, where every text is escaped
    }


def _expanded(request: HttpRequest) -> frozenset[int]:
    return frozenset(i for i in (_int_or_none(v) for v in request.GET.getlist("expand")) if i is not None and i >= 0)


def _safe_name(text: str) -> str:
    """For diff headers and file names: no line breaks, quotes or path tricks."""
    return re.sub(r"[^A-Za-z0-9_.#@+-]+", "_", text)[:120]


@require_GET
@role_required(Capability.READ)
def diff(request: HttpRequest, pk: int, kind: str) -> HttpResponse:
    sample = get_sample_for_user(request.user, pk)  # type: ignore[arg-type]
    if kind not in RevisionKind.values:
        return error_page(request, f"Unknown artifact kind {kind[:40]!r}.", status=404)
    revisions = list(Revision.objects.filter(sample=sample, kind=kind).defer("content").order_by("seq"))
    if not revisions:
        return error_page(request, f"{sample.task_id} has no {kind} revisions to compare.", status=404)
    a_id, b_id = _int_or_none(request.GET.get("a")), _int_or_none(request.GET.get("b"))
    by_id = {r.pk: r for r in revisions}
    if (request.GET.get("a") and a_id not in by_id) or (request.GET.get("b") and b_id not in by_id):
        return error_page(request, f"Both revisions must be {kind} revisions of {sample.task_id}.", status=404)
    a_pk = a_id if a_id is not None else revisions[0].pk
    b_pk = b_id if b_id is not None else revisions[-1].pk
    a = Revision.objects.get(pk=a_pk)
    b = Revision.objects.get(pk=b_pk)
    base_url = reverse("review:diff", args=[sample.pk, kind])
    if request.GET.get("format") == "unified":
        text = diffing.unified(
            a.content, b.content,
            from_name=f"{_safe_name(sample.task_id)}/{kind}#{a.seq}", to_name=f"{_safe_name(sample.task_id)}/{kind}#{b.seq}",
            context=_context_param(request),
        )
        return _download(text, f"{_safe_name(sample.task_id)}-{kind}-{a.seq}-{b.seq}.diff")
    if is_fragment_request(request):
        diff = diffing.side_by_side(a.content, b.content, context=_context_param(request))
        return _fold_fragment(request, diff, a.language, b.language)
    ctx = _diff_context(sample, kind, a, b, base_url=base_url, context=_context_param(request),
                        expanded=_expanded(request))
    return render(
        request,
        "review/diff.html",
        {"sample": sample, "kind": kind, "kinds": selectors.kinds_with_revisions(sample), "revisions": revisions,
         "d": ctx, "unified_url": ctx["url"] + "&format=unified", "whole_url": f"{base_url}?a={a.pk}&b={b.pk}&context=all"},
    )


def _fold_fragment(request: HttpRequest, diff: diffing.SideBySide, left_language: str, right_language: str) -> HttpResponse:
    index = _int_or_none(request.GET.get("block"))
    if index is None or not 0 <= index < len(diff.blocks):
        return HttpResponse("No such block.", status=404, content_type="text/plain; charset=utf-8")
    return HttpResponse(diff_html.block_rows_html(diff, index, left_language=left_language, right_language=right_language))


def _download(text: str, filename: str) -> HttpResponse:
    response = HttpResponse(text, content_type="text/x-diff; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@require_GET
@role_required(Capability.READ)
def logs_diff(request: HttpRequest, pk: int) -> HttpResponse:
    sample = get_sample_for_user(request.user, pk)  # type: ignore[arg-type]
    runs = selectors.runs_with_logs(sample)
    if len(runs) < 1:
        return error_page(request, f"{sample.task_id} has no runs to compare.", status=404)
    by_id = {r.pk: r for r in runs}
    a_id, b_id = _int_or_none(request.GET.get("a")), _int_or_none(request.GET.get("b"))
    if (request.GET.get("a") and a_id not in by_id) or (request.GET.get("b") and b_id not in by_id):
        return error_page(request, f"Both runs must be runs of {sample.task_id}.", status=404)
    # Default: the right side is the latest run, the left side the run before the right one.
    b_pk = b_id if b_id is not None else runs[0].pk
    if a_id is not None:
        a_pk = a_id
    else:
        position = [r.pk for r in runs].index(b_pk)
        a_pk = runs[position + 1].pk if position + 1 < len(runs) else b_pk
    a, b = Run.objects.get(pk=a_pk), Run.objects.get(pk=b_pk)
    base_url = reverse("review:logs_diff", args=[sample.pk])
    if request.GET.get("format") == "unified":
        text = diffing.unified(a.log, b.log, from_name=f"run-{a.pk}.log", to_name=f"run-{b.pk}.log",
                               context=_context_param(request))
        return _download(text, f"{_safe_name(sample.task_id)}-run-{a.pk}-run-{b.pk}.diff")
    diff = diffing.side_by_side(a.log, b.log, context=_context_param(request))
    if is_fragment_request(request):
        return _fold_fragment(request, diff, "text", "text")
    query = QueryDict(mutable=True)
    query.update({"a": str(a.pk), "b": str(b.pk)})
    url = f"{base_url}?{query.urlencode()}"
    expanded = _expanded(request)
    table = diff_html.diff_table_html(diff, left_language="text", right_language="text",
                                      expand_url=url + "".join(f"&expand={i}" for i in sorted(expanded)),
                                      expanded=expanded)
    return render(
        request,
        "review/logs_diff.html",
        {"sample": sample, "runs": runs, "a": a, "b": b, "diff": diff, "table": table, "url": url,
         "unified_url": url + "&format=unified", "whole_url": url + "&context=all",
         "left_label": f"run {a.pk} · {a.backend} · {a.status}", "right_label": f"run {b.pk} · {b.backend} · {b.status}"},
    )


app_name = "review"
urlpatterns = [
    path("", queue, name="queue"),
    path("assign/", assign, name="assign"),
    path("<int:pk>/", review_page, name="sample"),
    path("<int:pk>/record/", record, name="record"),
    path("<int:pk>/submit/", submit, name="submit"),
    path("<int:pk>/claim/", claim, name="claim"),
    path("<int:pk>/reopen/", reopen, name="reopen"),
    path("<int:pk>/comments/", comment, name="comment"),
    path("<int:pk>/diff/<str:kind>/", diff, name="diff"),
    path("<int:pk>/logs-diff/", logs_diff, name="logs_diff"),
]
