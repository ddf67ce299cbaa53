"""annotations.services.exports and the selector behind it, on a real database."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from django.db import connection

from annotations.models import ExportSnapshot, Sample
from annotations.models.export import ImmutableSnapshotError
from annotations.models.ingest import JobState
from annotations.selectors.exports import InvalidFilters, export_inputs, parse_export_filters
from annotations.services.exports import ExportRequestError, export_create, export_run, export_to_directory
from pipeline.export.writer import verify_snapshot
from tests.export.approved import add_revision, approve, approved_sample
from tests.export.kernels import HIP_CANDIDATE
from tests.factories import make_sample

pytestmark = pytest.mark.django_db


def _rows(directory: Path) -> list[dict]:
    return [
        json.loads(line) for line in (directory / "dataset.jsonl").read_text(encoding="utf-8").splitlines()
    ]


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_only_approved_samples_with_a_valid_approval(reviewer, tmp_path: Path) -> None:
    approved_sample("k/approved", reviewer)
    make_sample("k/draft", kinds={"reference": "x = 1\n"})
    stale = approved_sample("k/stale", reviewer)
    # A new candidate makes the approval stale and sends the sample back to review.
    add_revision(stale, "candidate", HIP_CANDIDATE + "// tweak\n", author=reviewer)
    rejected = make_sample("k/rejected", kinds={"reference": "x = 1\n"})
    assert rejected.status == "draft"
    result = export_to_directory(out_dir=tmp_path / "s", filters={}, name="t")
    assert [r["task_id"] for r in _rows(tmp_path / "s")] == ["k/approved"]
    assert result.samples == 1


def test_exports_the_covered_revisions_not_the_newest(reviewer, tmp_path: Path) -> None:
    sample = approved_sample("k/a", reviewer)
    # A note does not invalidate the approval, but it is not what was reviewed either.
    add_revision(sample, "note", "written after approval", author=reviewer)
    export_to_directory(out_dir=tmp_path / "s", filters={}, name="t")
    row = _rows(tmp_path / "s")[0]
    assert row["artifacts"] == {}
    review = sample.reviews.get()
    covered = {r.kind: r.pk for r in review.revisions.all()}
    assert set(covered) == {"reference", "instruction", "candidate", "test"}
    assert {k: v["id"] for k, v in row["revisions"].items()} == covered
    assert row["verification"]["backend"] == "cuda" and row["verification"]["speedup"] == 1.25
    assert row["verification"]["run_id"] == str(review.run.public_id)
    assert row["reviewers"] == ["bob"]


def test_second_approval_adds_a_reviewer(reviewer, reviewer2, settings, tmp_path: Path) -> None:
    settings.REVIEW_REQUIRED_APPROVALS = 2
    sample = approved_sample("k/two", reviewer)
    assert sample.status == "in_review"  # one of two approvals: not exported yet
    assert export_to_directory(out_dir=tmp_path / "one", filters={}, name="t").samples == 0
    approve(sample, reviewer2)
    export_to_directory(out_dir=tmp_path / "two", filters={}, name="t")
    row = _rows(tmp_path / "two")[0]
    assert row["reviewers"] == ["bea", "bob"] and row["reviewer_count"] == 2


def test_same_database_state_gives_byte_identical_snapshots(reviewer, tmp_path: Path) -> None:
    for i in range(5):
        approved_sample(f"k/{i:02d}", reviewer, tags=["b", "a"], difficulty=i)
    export_to_directory(out_dir=tmp_path / "one", filters={}, layouts=["hf", "tritonbench"], name="t")
    export_to_directory(out_dir=tmp_path / "two", filters={}, layouts=["tritonbench", "hf"], name="t")
    assert _tree(tmp_path / "one") == _tree(tmp_path / "two")
    assert verify_snapshot(tmp_path / "one") == []


def test_task_id_order_is_byte_order_on_every_database(reviewer, tmp_path: Path) -> None:
    # Locale collations put "a-b" and "a_b" and "B" in other orders than bytes do.
    for task_id in ("a_b", "a-b", "B", "a", "é"):
        approved_sample(task_id, reviewer)
    export_to_directory(out_dir=tmp_path / "s", filters={}, name="t")
    assert [r["task_id"] for r in _rows(tmp_path / "s")] == sorted(["a_b", "a-b", "B", "a", "é"])


def test_filters(reviewer, reviewer2, settings, tmp_path: Path) -> None:
    old = dt.datetime(2026, 1, 10, 12, tzinfo=dt.UTC)
    new = dt.datetime(2026, 6, 1, 12, tzinfo=dt.UTC)
    approved_sample("f/1", reviewer, tags=["gemm"], difficulty=1, at=old)
    settings.REVIEW_REQUIRED_APPROVALS = 2
    s2 = approved_sample("f/2", reviewer, tags=["gemm", "fp16"], difficulty=4, at=new, backend="rocm")
    approve(s2, reviewer2, backend="rocm", at=new)
    settings.REVIEW_REQUIRED_APPROVALS = 1
    approved_sample(
        "f/3",
        reviewer,
        target_language="cuda",
        difficulty=3,
        at=new,
        kinds={
            "reference": "import torch\n\ndef add_wrapper(x):\n    return x\n",
            "instruction": "Copy x.",
            "test": "result_gold = {}\n",
        },
    )

    def ids(**filters: str) -> list[str]:
        return [i.task_id for i in export_inputs(parse_export_filters(filters))]

    assert ids() == ["f/1", "f/2", "f/3"]
    assert ids(tags="gemm") == ["f/1", "f/2"]
    assert ids(tags="GEMM,fp16") == ["f/2"]  # all of them, case-insensitive as stored
    assert ids(target="cuda") == ["f/3"]
    assert ids(language="hip") == []
    assert ids(backend="rocm") == ["f/2"]
    assert ids(difficulty_min="2", difficulty_max="3") == ["f/3"]
    assert ids(min_reviewers="2") == ["f/2"]
    assert ids(approved_since="2026-02-01") == ["f/2", "f/3"]
    assert ids(approved_until="2026-01-10") == ["f/1"]


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        ({"difficulty_min": "hard"}, "difficulty_min: 'hard' is not a whole number"),
        ({"difficulty_min": "4", "difficulty_max": "2"}, "difficulty_min is greater than difficulty_max"),
        ({"language": "fortran"}, "language: 'fortran' is not one of"),
        ({"approved_since": "yesterday"}, "approved_since: 'yesterday' is not a date"),
        ({"approved_since": "2026-05-01", "approved_until": "2026-01-01"}, "approved_since is after"),
        ({"min_reviewers": "0"}, "min_reviewers: 0 is outside 1..100"),
        ({"colour": "red"}, "unknown filter(s): colour"),
    ],
)
def test_bad_filters_are_refused_with_the_filter_named(filters: dict, message: str) -> None:
    with pytest.raises(InvalidFilters, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_export_filters(filters)


def test_snapshot_lifecycle_and_immutability(
    reviewer, maintainer, settings, tmp_path: Path, django_capture_on_commit_callbacks
) -> None:
    settings.DATA_DIR = tmp_path
    approved_sample("k/1", reviewer)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        snapshot = export_create(name="v1", filters={"target": "hip"}, layouts=["hf"], actor=maintainer)
    assert len(callbacks) == 1  # the job is queued only after commit
    assert snapshot.state == JobState.QUEUED and snapshot.sample_count == 1
    done = export_run(snapshot_id=snapshot.pk)
    assert done is not None and done.state == JobState.DONE
    assert Path(done.directory) == tmp_path / "exports" / str(done.public_id)
    assert [f["path"] for f in done.files] == [
        "README.md",
        "dataset.jsonl",
        "hf/README.md",
        "hf/data/train.jsonl",
    ]
    assert verify_snapshot(Path(done.directory)) == []
    manifest = json.loads((Path(done.directory) / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["filters"] == {"target": "hip"}
    # A retried job finds it claimed and writes nothing.
    assert export_run(snapshot_id=snapshot.pk) is None
    done.name = "renamed"
    with pytest.raises(ImmutableSnapshotError):
        done.save()
    with pytest.raises(ImmutableSnapshotError):
        done.delete()
    assert ExportSnapshot.objects.get(pk=done.pk).name == "v1"


def test_failed_write_marks_the_snapshot_failed(reviewer, maintainer, settings, tmp_path: Path) -> None:
    settings.DATA_DIR = tmp_path
    approved_sample("k/1", reviewer)
    snapshot = export_create(name="v1", filters={}, actor=maintainer)
    blocker = tmp_path / "exports" / str(snapshot.public_id)
    blocker.mkdir(parents=True)
    (blocker / "someone-elses-file").write_text("keep me")
    failed = export_run(snapshot_id=snapshot.pk)
    assert failed is not None and failed.state == JobState.FAILED
    assert "not an empty directory" in failed.message
    assert (blocker / "someone-elses-file").read_text() == "keep me"


def test_request_errors(maintainer) -> None:
    with pytest.raises(ExportRequestError, match="name must be"):
        export_create(name="  ", filters={}, actor=maintainer)
    with pytest.raises(ExportRequestError, match="unknown layout"):
        export_create(name="x", filters={}, layouts=["parquet"], actor=maintainer)
    with pytest.raises(ExportRequestError, match="difficulty_max"):
        export_create(name="x", filters={"difficulty_max": "-1"}, actor=maintainer)
    assert not ExportSnapshot.objects.exists()


def test_queries_per_chunk_do_not_grow_with_samples(
    reviewer, tmp_path: Path, django_assert_max_num_queries
) -> None:
    for i in range(12):
        approved_sample(f"q/{i:02d}", reviewer, tags=["t"])
    # 1 sample query + 5 per chunk of 500 (approvals, covered, revisions, runs, tags) + savepoints.
    with django_assert_max_num_queries(12):
        list(export_inputs(parse_export_filters({})))
    assert Sample.objects.count() == 12
    assert connection.vendor in ("sqlite", "postgresql")


def test_redis_down_marks_the_snapshot_failed_without_naming_it(
    reviewer, maintainer, settings, django_capture_on_commit_callbacks
) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"redis://127.0.0.1:{port}/0"
    settings.RQ_QUEUES = {"default": {"URL": url, "DEFAULT_TIMEOUT": 60}}
    approved_sample("k/1", reviewer)
    with django_capture_on_commit_callbacks(execute=True):
        snapshot = export_create(name="v1", filters={}, actor=maintainer)
    snapshot.refresh_from_db()
    assert snapshot.state == JobState.FAILED
    assert "Could not queue the export job" in snapshot.message
    assert str(port) not in snapshot.message and "127.0.0.1" not in snapshot.message


def test_a_snapshot_whose_worker_died_is_marked_lost(maintainer, settings, tmp_path: Path) -> None:
    import datetime as dt

    from django.utils import timezone

    from annotations.services.exports import export_mark_lost

    settings.DATA_DIR = tmp_path
    stuck = export_create(name="stuck", filters={}, actor=maintainer)
    long_ago = timezone.now() - dt.timedelta(hours=3)
    ExportSnapshot.objects.filter(pk=stuck.pk).update(state=JobState.RUNNING, started_at=long_ago)
    partial = tmp_path / "exports" / f".{stuck.public_id}.partial-abc"
    partial.mkdir(parents=True)
    (partial / "dataset.jsonl").write_text("{}\n")
    fresh = export_create(name="fresh", filters={}, actor=maintainer)  # requesting another export checks
    ExportSnapshot.objects.filter(pk=fresh.pk).update(state=JobState.RUNNING, started_at=timezone.now())
    stuck.refresh_from_db()
    assert stuck.state == JobState.FAILED and stuck.message.startswith("Lost:")
    assert not partial.exists()
    assert export_mark_lost() == 0  # the fresh one is still within its time limit
    fresh.refresh_from_db()
    assert fresh.state == JobState.RUNNING
