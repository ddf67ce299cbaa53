"""The "hf" layout loads with the Hugging Face `datasets` library as it is (offline, from the folder)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.export.writer import write_snapshot
from tests.export.builders import export_input

datasets = pytest.importorskip("datasets", reason="the `datasets` package (dev extra) is not installed")

NINE = [
    "task_id",
    "complete_prompt",
    "instruct_prompt",
    "canonical_solution",
    "code_prompt",
    "test",
    "entry_point",
    "doc_struct",
    "libs",
]


@pytest.mark.slow
def test_load_dataset_reads_the_hf_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    # Provenance with different keys and value types per row: the reason these are JSON strings.
    items = [
        export_input("hf/a", 1, provenance={"lines": [1, 20]}),
        export_input(
            "hf/b", 2, candidate=False, provenance={"lines": "1-20", "commit": "abc"}, difficulty=None
        ),
        export_input("hf/c", 3, verification=None),
    ]
    write_snapshot(items, tmp_path / "s", name="hf", filters={}, layouts=["hf"])
    ds = datasets.load_dataset(str(tmp_path / "s" / "hf"), split="train", cache_dir=str(tmp_path / "cache"))
    assert ds.num_rows == 3
    assert set(NINE) <= set(ds.column_names)
    assert ds["task_id"] == ["hf/a", "hf/b", "hf/c"]
    rows = [
        json.loads(line) for line in (tmp_path / "s/dataset.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    for loaded, row in zip(ds, rows, strict=True):
        for key in NINE:
            assert loaded[key] == row[key]
        assert json.loads(loaded["provenance"]) == row["provenance"]
        assert json.loads(loaded["verification"]) == row["verification"]
