"""pipeline.importers.ks_export.parse on files our writer produced (no database)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.export.writer import write_snapshot
from pipeline.importers import ks_export
from pipeline.importers.records import ParsedRecord, RecordError, UnreadableInput
from tests.export.builders import export_input
from tests.export.kernels import HIP_CANDIDATE, INSTRUCTION, TRITON_REFERENCE, TRITON_TEST


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    write_snapshot(
        [export_input("demo/add", 1), export_input("demo/t", 2, candidate=False)],
        tmp_path / "s",
        name="s",
        filters={},
        layouts=["hf"],
    )
    return tmp_path / "s"


def _contents(record: ParsedRecord) -> dict[str, str]:
    return {r.kind: r.content for r in record.revisions}


@pytest.mark.parametrize("target", ["dir", "dataset.jsonl", "hf/data/train.jsonl"])
def test_parse_gives_back_every_kind(snapshot: Path, target: str) -> None:
    path = snapshot if target == "dir" else snapshot / target
    assert ks_export.sniff(path)
    records = list(ks_export.parse(path))
    assert all(isinstance(r, ParsedRecord) for r in records)
    first, second = records
    assert first.task_id == "demo/add" and first.line == 1
    assert (first.reference_language, first.target_language, first.entry_point) == (
        "triton",
        "hip",
        "add_wrapper",
    )
    assert _contents(first) == {
        "reference": TRITON_REFERENCE,
        "instruction": INSTRUCTION,
        "candidate": HIP_CANDIDATE,
        "test": TRITON_TEST,
        "note": "Reflection: the first launch used 1024 threads per block.",
    }
    assert "candidate" not in _contents(second)
    assert sorted(first.tags) == ["elementwise", "ünïcode"] and first.difficulty == 2
    assert first.source == "test" and first.kernel_name == "add_kernel"


def test_altered_snapshot_is_refused_whole(snapshot: Path) -> None:
    data = snapshot / "dataset.jsonl"
    data.write_text(data.read_text(encoding="utf-8").replace("add_wrapper", "add_wrapped"), encoding="utf-8")
    with pytest.raises(UnreadableInput, match="does not match the manifest"):
        list(ks_export.parse(snapshot))


def test_bad_rows_get_line_numbers_and_the_rest_imports(snapshot: Path, tmp_path: Path) -> None:
    lines = (snapshot / "dataset.jsonl").read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[0])
    tampered = dict(row, candidate=None, canonical_solution=row["canonical_solution"] + "// edited\n")
    no_test = {k: v for k, v in row.items() if k != "test"}
    bad_lang = dict(row, target="fortran")
    path = tmp_path / "rows.jsonl"
    path.write_text(
        "\n".join(
            [
                lines[1],
                "{not json",
                json.dumps(tampered),
                json.dumps(no_test),
                json.dumps(bad_lang),
                "[1, 2]",
                "",
                lines[0],
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    out = list(ks_export.parse(path))
    kinds = [(type(r).__name__, r.line) for r in out]
    assert kinds == [
        ("ParsedRecord", 1),
        ("RecordError", 2),
        ("RecordError", 3),
        ("RecordError", 4),
        ("RecordError", 5),
        ("RecordError", 6),
        ("ParsedRecord", 8),
    ]
    errors = [r for r in out if isinstance(r, RecordError)]
    assert "not JSON" in errors[0].message
    assert errors[1].message == "candidate content does not match its sha256 in the row"
    assert errors[2].field == "test"
    assert errors[3].message == "unknown target 'fortran'"
    assert errors[4].message == "a row must be a JSON object"


def test_missing_or_foreign_inputs(tmp_path: Path) -> None:
    with pytest.raises(UnreadableInput, match="no manifest.json"):
        list(ks_export.parse(tmp_path))
    (tmp_path / "manifest.json").write_text('{"format": "other"}')
    with pytest.raises(UnreadableInput, match="not a Kernel Studio export manifest"):
        list(ks_export.parse(tmp_path))
    with pytest.raises(UnreadableInput, match="does not exist"):
        list(ks_export.parse(tmp_path / "nope.jsonl"))
    assert not ks_export.sniff(tmp_path)
