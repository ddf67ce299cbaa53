"""Reads for the sample list and the sample page."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from django.core.paginator import Page, Paginator
from django.db.models import Q, QuerySet
from django.http import QueryDict

from annotations.models import Revision, Run, Sample, SampleStatus, Tag, User
from annotations.models.samples import Language, RevisionKind, RunOutcome

MAX_SEARCH_LENGTH = 200
MAX_PAGE = 1_000_000
PAGE_SIZE = 50
SORT_KEYS = {
    "updated": "updated_at",
    "created": "created_at",
    "task_id": "task_id",
    "status": "status",
    "outcome": "latest_run_outcome",
    "kernel": "kernel_name",
}
DEFAULT_SORT = "-updated"


class InvalidQuery(ValueError):
    """A query parameter the list cannot honour; shown to the user as a 400 page."""


@dataclass(frozen=True)
class SampleQuery:
    search: str = ""
    status: str = ""
    language: str = ""
    outcome: str = ""
    assignee: str = ""
    tag: str = ""
    source: str = ""
    sort: str = DEFAULT_SORT
    page: int = 1
    active_filters: dict[str, str] = field(default_factory=dict)


def parse_sample_query(params: Mapping[str, str]) -> SampleQuery:
    """Validate the list's query string strictly: a bad value is a 400, never a 500 or a silent ignore."""
    if isinstance(params, QueryDict):
        # `?status=bogus&status=draft` would otherwise quietly use one value and drop the other.
        for key, values in params.lists():
            if len(values) > 1:
                raise InvalidQuery(f"The parameter {key[:40]!r} is given {len(values)} times; give it once.")
        params = {key: str(value) for key, value in params.items()}
    search = params.get("q", "").strip()
    if len(search) > MAX_SEARCH_LENGTH:
        raise InvalidQuery(f"The search text is {len(search)} characters long; at most {MAX_SEARCH_LENGTH} are allowed.")
    if "\x00" in search:
        raise InvalidQuery("The search text contains a NUL character.")
    status = params.get("status", "")
    if status and status not in SampleStatus.values:
        raise InvalidQuery(f"Unknown status {status!r}. Use one of: {', '.join(SampleStatus.values)}.")
    language = params.get("language", "")
    if language and language not in Language.values:
        raise InvalidQuery(f"Unknown language {language!r}. Use one of: {', '.join(Language.values)}.")
    outcome = params.get("outcome", "")
    outcome_values = [v for v in RunOutcome.values if v] + ["none"]
    if outcome and outcome not in outcome_values:
        raise InvalidQuery(f"Unknown run outcome {outcome!r}. Use one of: {', '.join(outcome_values)}.")
    assignee = params.get("assignee", "")
    if len(assignee) > 150:
        raise InvalidQuery("The assignee name is too long.")
    tag = params.get("tag", "")
    if len(tag) > 64:
        raise InvalidQuery("The tag is too long (at most 64 characters).")
    source = params.get("source", "")
    if len(source) > 128:
        raise InvalidQuery("The source is too long (at most 128 characters).")
    sort = params.get("sort", DEFAULT_SORT) or DEFAULT_SORT
    if sort.removeprefix("-") not in SORT_KEYS:
        raise InvalidQuery(f"Unknown sort key {sort!r}. Use one of: {', '.join(SORT_KEYS)} (prefix - for descending).")
    raw_page = params.get("page", "1") or "1"
    try:
        page = int(raw_page)
    except ValueError as exc:
        raise InvalidQuery(f"The page number {raw_page[:20]!r} is not a number.") from exc
    if page < 1 or page > MAX_PAGE:
        raise InvalidQuery(f"The page number must be between 1 and {MAX_PAGE}.")
    active = {
        k: v
        for k, v in {"q": search, "status": status, "language": language, "outcome": outcome,
                     "assignee": assignee, "tag": tag, "source": source}.items()
        if v
    }
    return SampleQuery(search, status, language, outcome, assignee, tag, source, sort, page, active)


def sample_list(query: SampleQuery, *, user: User) -> QuerySet[Sample]:
    qs = Sample.objects.all()
    if query.search:
        tag_match = Sample.tags.through.objects.filter(tag__name__icontains=query.search).values("sample_id")
        qs = qs.filter(
            Q(task_id__icontains=query.search) | Q(kernel_name__icontains=query.search) | Q(pk__in=tag_match)
        )
    if query.status:
        qs = qs.filter(status=query.status)
    if query.language:
        qs = qs.filter(Q(reference_language=query.language) | Q(target_language=query.language))
    if query.outcome:
        qs = qs.filter(latest_run_outcome="" if query.outcome == "none" else query.outcome)
    if query.assignee == "none":
        qs = qs.filter(assignee__isnull=True)
    elif query.assignee == "me":
        qs = qs.filter(assignee=user)
    elif query.assignee:
        qs = qs.filter(assignee__username=query.assignee)
    if query.tag:
        qs = qs.filter(pk__in=Sample.tags.through.objects.filter(tag__name=query.tag.lower()).values("sample_id"))
    if query.source:
        qs = qs.filter(source=query.source)
    descending = query.sort.startswith("-")
    column = SORT_KEYS[query.sort.removeprefix("-")]
    # The id tie-breaker keeps pages stable when many rows share a value.
    order = [f"-{column}", "-id"] if descending else [column, "id"]
    return qs.select_related("assignee").order_by(*order)


class SamplePaginator(Paginator):
    """Django's Paginator, with a deferred join for deep pages.

    OFFSET 99,950 on full rows makes the database build every skipped row (1.1 s on SQLite
    at 100,000 samples). Deep pages first pick the page's ids from the ordering index
    alone, then load just those rows, in that order.
    """

    DEFERRED_FROM_OFFSET = 500

    def page(self, number: int | str) -> Page:
        number = self.validate_number(number)
        bottom = (number - 1) * self.per_page
        if bottom < self.DEFERRED_FROM_OFFSET or not isinstance(self.object_list, QuerySet):
            return super().page(number)
        top = bottom + self.per_page
        if top + self.orphans >= self.count:
            top = self.count
        ids = list(self.object_list.values_list("pk", flat=True)[bottom:top])
        model = self.object_list.model
        related = self.object_list.query.select_related
        rows = model._default_manager.filter(pk__in=ids)
        if isinstance(related, dict):
            rows = rows.select_related(*related)
        by_id = {row.pk: row for row in rows}
        return self._get_page([by_id[pk] for pk in ids if pk in by_id], number, self)  # type: ignore[attr-defined]


def filter_choices() -> dict[str, list[tuple[str, str]]]:
    return {
        "status": list(SampleStatus.choices),
        "language": list(Language.choices),
        "outcome": [(v, label) for v, label in RunOutcome.choices if v] + [("none", "No run")],
        "sort": [("-updated", "Recently updated"), ("updated", "Least recently updated"),
                 ("task_id", "Task id A-Z"), ("-task_id", "Task id Z-A"), ("-created", "Newest"),
                 ("created", "Oldest"), ("status", "Status"), ("outcome", "Run outcome")],
    }


def assignee_choices() -> QuerySet[User]:
    return User.objects.exclude(role="").order_by("username")


def tag_names_for(samples: list[Sample]) -> dict[int, list[str]]:
    rows = Sample.tags.through.objects.filter(sample_id__in=[s.pk for s in samples]).values_list(
        "sample_id", "tag__name"
    )
    result: dict[int, list[str]] = {}
    for sample_id, name in rows:
        result.setdefault(sample_id, []).append(name)
    return result


# Order in which artifacts appear on the sample page.
ARTIFACT_ORDER = [
    RevisionKind.INSTRUCTION,
    RevisionKind.REFERENCE,
    RevisionKind.CANDIDATE,
    RevisionKind.WRAPPER,
    RevisionKind.TEST,
    RevisionKind.ANALYSIS,
    RevisionKind.NOTE,
]


def current_revisions(sample: Sample) -> dict[str, Revision]:
    """The newest revision of each kind (one query per kind, each an index seek)."""
    current: dict[str, Revision] = {}
    for kind in ARTIFACT_ORDER:
        rev = (
            Revision.objects.filter(sample=sample, kind=kind)
            .select_related("author")
            .order_by("-seq")
            .first()
        )
        if rev is not None:
            current[kind] = rev
    return current


def revision_history(sample: Sample, kind: str, *, limit: int = 200) -> list[Revision]:
    """Newest first, without the content (history lists can be long)."""
    return list(
        Revision.objects.filter(sample=sample, kind=kind)
        .defer("content")
        .select_related("author")
        .order_by("-seq")[:limit]
    )


def revision_counts(sample: Sample) -> dict[str, int]:
    from django.db.models import Count

    rows = Revision.objects.filter(sample=sample).values("kind").annotate(n=Count("id"))
    return {row["kind"]: row["n"] for row in rows}


def sample_runs(sample: Sample, *, imported: bool, limit: int = 50) -> list[Run]:
    return list(
        Run.objects.filter(sample=sample, imported=imported)
        .defer("log")
        .select_related("requested_by")
        .order_by("-created_at")[:limit]
    )


def all_tags() -> QuerySet[Tag]:
    return Tag.objects.order_by("name")
