"""Reads for the maintainers' dashboard: aggregate queries only, and chart geometry.

Every figure is one GROUP BY or one aggregate over the database; nothing here
loops over samples in Python (the loops below run over the handful of rows
an aggregate returns). The charts are drawn server-side as SVG from the plain
dicts `bar_chart` returns: bars carry their label and value as text and a
pattern per series, so they read without colour.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Max, Min, Q
from django.db.models.functions import TruncWeek
from django.utils import timezone

from annotations.models import Review, Run, Sample, SampleStatus
from annotations.models.review import Verdict
from annotations.models.runs import RunStatus
from annotations.models.samples import Language

# Upper bounds (exclusive) of the speedup buckets; the last one is open.
SPEEDUP_EDGES: tuple[tuple[str, float], ...] = (
    ("< 0.5x", 0.5),
    ("0.5-0.9x", 0.9),
    ("0.9-1.1x", 1.1),
    ("1.1-1.5x", 1.5),
    ("1.5-2x", 2.0),
    ("2-5x", 5.0),
    ("5-10x", 10.0),
    ("> 10x (suspicious)", math.inf),
)
WEEKS = 12
WAITING_LIMIT = 10


@dataclass
class Bar:
    label: str
    value: int
    # Index into the chart's series (pattern and legend).
    series: int = 0
    note: str = ""


@dataclass
class Chart:
    title: str
    # Short description for screen readers and the figure caption.
    summary: str
    bars: list[Bar]
    series: list[str] = field(default_factory=lambda: ["count"])
    unit: str = "samples"


# --- queries ---------------------------------------------------------------


def counts_by(field_name: str, choices: Sequence[tuple[str, str]]) -> list[Bar]:
    rows = dict(
        Sample.objects.order_by().values_list(field_name).annotate(n=Count("id")).values_list(field_name, "n")
    )
    bars = [Bar(label=str(label), value=int(rows.pop(value, 0))) for value, label in choices]
    # Values outside the choices (older data) still show, after the known ones.
    bars += [Bar(label=str(value) or "(none)", value=int(n)) for value, n in sorted(rows.items(), key=str)]
    return bars


def status_counts() -> list[Bar]:
    return counts_by("status", SampleStatus.choices)


def language_counts() -> list[Bar]:
    return [b for b in counts_by("reference_language", Language.choices) if b.value]


def target_counts() -> list[Bar]:
    return [b for b in counts_by("target_language", Language.choices) if b.value]


def funnel() -> list[Bar]:
    """Samples with at least one of our runs reaching each stage (imported agent runs excluded)."""
    ours = Run.objects.filter(imported=False)
    agg = ours.aggregate(
        ran=Count("sample", distinct=True),
        call=Count("sample", distinct=True, filter=Q(call_ok=True)),
        exe=Count("sample", distinct=True, filter=Q(exe_ok=True)),
        perf=Count("sample", distinct=True, filter=Q(perf_ok=True)),
    )
    total = Sample.objects.count()
    return [
        Bar("all samples", total),
        Bar("verified at least once", agg["ran"] or 0),
        Bar("call passed", agg["call"] or 0),
        Bar("exe passed", agg["exe"] or 0),
        Bar("perf passed", agg["perf"] or 0),
    ]


def speedup_histogram() -> tuple[list[Bar], int]:
    """Best speedup per sample over our passing, timed runs; (bars, samples measured)."""
    # Count per bucket in the database, over the per-sample maxima (Django
    # aggregates an aggregate annotation through a subquery).
    buckets: dict[str, Any] = {}
    low = 0.0
    for i, (_label, high) in enumerate(SPEEDUP_EDGES):
        cond = Q(best__gte=low) if math.isinf(high) else Q(best__gte=low, best__lt=high)
        buckets[f"b{i}"] = Count("id", filter=cond)
        low = high
    per_sample = Sample.objects.annotate(
        best=Max(
            "runs__speedup",
            filter=Q(runs__imported=False, runs__status=RunStatus.PASSED, runs__speedup__gt=0),
        )
    ).filter(best__isnull=False)
    agg = per_sample.aggregate(**buckets, total=Count("id"))
    bars = [
        Bar(label, int(agg[f"b{i}"] or 0), series=1 if math.isinf(high) else 0)
        for i, (label, high) in enumerate(SPEEDUP_EDGES)
    ]
    return bars, int(agg["total"] or 0)


def review_throughput(weeks: int = WEEKS, now: dt.datetime | None = None) -> tuple[list[str], list[Bar]]:
    """Reviews per ISO week and verdict for the last `weeks` weeks (oldest first)."""
    now = now or timezone.now()
    start_day = (now - dt.timedelta(weeks=weeks - 1)).date()
    start_day -= dt.timedelta(days=start_day.weekday())  # Monday
    start = dt.datetime.combine(start_day, dt.time.min, tzinfo=dt.UTC)
    rows = (
        Review.objects.filter(created_at__gte=start)
        .annotate(week=TruncWeek("created_at", tzinfo=dt.UTC))
        .order_by()
        .values("week", "verdict")
        .annotate(n=Count("id"))
    )
    counts: dict[tuple[dt.date, str], int] = {}
    for row in rows:
        week = row["week"].date() if isinstance(row["week"], dt.datetime) else row["week"]
        counts[(week, row["verdict"])] = int(row["n"])
    verdicts = [v for v, _ in Verdict.choices]
    labels = dict(Verdict.choices)
    weeks_list = [start_day + dt.timedelta(weeks=i) for i in range(weeks)]
    bars = []
    for week in weeks_list:
        for s, verdict in enumerate(verdicts):
            bars.append(
                Bar(
                    label=week.isoformat(),
                    value=counts.get((week, verdict), 0),
                    series=s,
                    note=str(labels[verdict]),
                )
            )
    return [str(labels[v]) for v in verdicts], bars


def waiting_longest(limit: int = WAITING_LIMIT) -> list[dict[str, Any]]:
    """Samples in review, longest-waiting first (since they last entered review)."""
    return [
        dict(row)
        for row in Sample.objects.filter(status=SampleStatus.IN_REVIEW)
        .annotate(
            since=Max("audit_events__created_at", filter=Q(audit_events__to_state=SampleStatus.IN_REVIEW)),
        )
        .order_by("since", "updated_at", "pk")
        .values("pk", "task_id", "since", "updated_at", "assignee__username")[:limit]
    ]


def oldest_in_review() -> dt.datetime | None:
    value: dt.datetime | None = Sample.objects.filter(status=SampleStatus.IN_REVIEW).aggregate(
        t=Min("updated_at")
    )["t"]
    return value


# --- chart geometry ---------------------------------------------------------

BAR_H = 22
GAP = 6
LABEL_W = 170
PLOT_W = 360
VALUE_W = 60


def bar_chart(chart: Chart) -> dict[str, Any]:
    """Horizontal bars: label at the left, bar, value printed after the bar."""
    top = max((b.value for b in chart.bars), default=0)
    rows = []
    y = 0
    for bar in chart.bars:
        width = 0 if top == 0 else max(1 if bar.value else 0, round(PLOT_W * bar.value / top))
        rows.append(
            {
                "label": bar.label,
                "value": bar.value,
                "note": bar.note,
                "series": bar.series,
                "y": y,
                "text_y": y + BAR_H * 0.7,
                "width": width,
                "value_x": LABEL_W + width + 6,
            }
        )
        y += BAR_H + GAP
    return {
        "title": chart.title,
        "summary": chart.summary,
        "rows": rows,
        "series": [{"index": i, "name": name} for i, name in enumerate(chart.series)],
        "width": LABEL_W + PLOT_W + VALUE_W,
        "height": max(y, BAR_H),
        "label_w": LABEL_W,
        "unit": chart.unit,
        "empty": top == 0,
    }


COL_W = 14
COL_GAP = 10
PLOT_H = 140


def grouped_columns(title: str, summary: str, series: list[str], bars: list[Bar]) -> dict[str, Any]:
    """Vertical grouped columns (one group per week), values printed on top of each column."""
    top = max((b.value for b in bars), default=0)
    groups: dict[str, list[Bar]] = {}
    for bar in bars:
        groups.setdefault(bar.label, []).append(bar)
    cols = []
    x = 30
    group_w = len(series) * COL_W
    labels = []
    for label, members in groups.items():
        for i, bar in enumerate(members):
            height = 0 if top == 0 else round(PLOT_H * bar.value / top)
            cols.append(
                {
                    "x": x + i * COL_W,
                    "y": 20 + PLOT_H - height,
                    "height": height,
                    "value": bar.value,
                    "series": bar.series,
                    "note": bar.note,
                    "label": label,
                    "value_y": 20 + PLOT_H - height - 3,
                    "text_x": x + i * COL_W + COL_W / 2,
                }
            )
        labels.append({"x": x + group_w / 2, "text": label[5:], "full": label})
        x += group_w + COL_GAP
    return {
        "title": title,
        "summary": summary,
        "cols": cols,
        "labels": labels,
        "series": [{"index": i, "name": name} for i, name in enumerate(series)],
        "width": x + 20,
        "height": PLOT_H + 60,
        "base_y": 20 + PLOT_H,
        "label_y": 20 + PLOT_H + 16,
        "col_w": COL_W - 2,
        "empty": top == 0,
    }


def dashboard_context() -> dict[str, Any]:
    speed_bars, measured = speedup_histogram()
    verdicts, weekly = review_throughput()
    funnel_bars = funnel()
    return {
        "status": bar_chart(
            Chart("Samples by status", "Number of samples in each review state.", status_counts())
        ),
        "language": bar_chart(
            Chart("Reference language", "Samples by the language of their reference.", language_counts())
        ),
        "target": bar_chart(
            Chart("Target language", "Samples by the language they are translated to.", target_counts())
        ),
        "funnel": bar_chart(
            Chart(
                "Verification funnel",
                "Samples whose runs (ours, not imported agent logs) reached each stage: call, exe, perf.",
                funnel_bars,
            )
        ),
        "speedup": bar_chart(
            Chart(
                "Speedup histogram",
                f"Best measured speedup (reference time / candidate time) of {measured} sample(s) with a "
                "passing timed run. Above 10x is flagged as suspicious.",
                speed_bars,
                series=["speedup", "suspicious (> 10x)"],
            )
        ),
        "measured": measured,
        "throughput": grouped_columns(
            "Review throughput per week",
            f"Verdicts recorded per week over the last {WEEKS} weeks, by verdict.",
            verdicts,
            weekly,
        ),
        "waiting": waiting_longest(),
        "now": timezone.now(),
    }
