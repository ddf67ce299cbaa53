"""Export -> import (the ingest service) recreates the same samples."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from django.db import transaction

from annotations.models import Sample
from annotations.services.exports import export_to_directory
from annotations.services.imports import sample_import
from pipeline.importers import parse_input
from pipeline.importers.records import ParsedRecord
from tests.export.approved import approved_sample
from tests.export.kernels import TRITON_REFERENCE

pytestmark = pytest.mark.django_db


class _Rollback(Exception):
    pass


def _state() -> dict[str, dict]:
    out = {}
    for s in Sample.objects.order_by("task_id").prefetch_related("tags", "revisions"):
        newest: dict[str, str] = {}
        for rev in sorted(s.revisions.all(), key=lambda r: r.seq):
            newest[rev.kind] = rev.content
        out[s.task_id] = {
            "entry_point": s.entry_point,
            "languages": (s.reference_language, s.target_language),
            "kernel_name": s.kernel_name,
            "source": s.source,
            "difficulty": s.difficulty,
            "tags": sorted(t.name for t in s.tags.all()),
            "revisions": newest,
        }
    return out


@pytest.mark.parametrize("target", ["dir", "hf"])
def test_round_trip(reviewer, tmp_path: Path, target: str) -> None:
    # Build and export inside a savepoint, then roll it back: the database is
    # empty again and only the snapshot remains, as on another installation.
    with contextlib.suppress(_Rollback), transaction.atomic():
        approved_sample("rt/hip", reviewer, tags=["elementwise"], difficulty=2, kernel_name="add_kernel")
        approved_sample(
            "rt/triton",
            reviewer,
            target_language="triton",
            kinds={
                "reference": TRITON_REFERENCE,
                "instruction": "Add x and y.",
                "test": "result_gold = {}\n",
            },
        )
        expected = _state()
        export_to_directory(out_dir=tmp_path / "snap", filters={}, layouts=["hf"], name="rt")
        raise _Rollback
    assert not Sample.objects.exists()

    path = tmp_path / "snap" if target == "dir" else tmp_path / "snap/hf/data/train.jsonl"
    module, records = parse_input(path)
    assert module is not None and module.NAME == "ks-export"
    results = [sample_import(record=r, batch=None, user=None) for r in records if isinstance(r, ParsedRecord)]
    assert results == ["created", "created"]
    assert _state() == expected
    # Importing the same snapshot again creates nothing new.
    _, again = parse_input(path)
    assert [sample_import(record=r, batch=None, user=None) for r in again] == ["unchanged", "unchanged"]
