"""Snapshot writer (pipeline only): determinism, layouts, hashes, atomicity, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.export.writer import (
    TRITONBENCH_SEPARATOR,
    ExportError,
    verify_snapshot,
    write_snapshot,
)
from tests.export.builders import export_input
from tests.export.kernels import TRITON_REFERENCE, TRITON_TEST

NINE = (
    "task_id",
    "complete_prompt",
    "instruct_prompt",
    "canonical_solution",
    "code_prompt",
    "test",
    "entry_point",
    "doc_struct",
    "libs",
)


def _items() -> list:
    return [
        export_input("demo/add", 1),
        export_input("demo/add-triton", 2, candidate=False),
        export_input("demo/z", 3, reviewers=["bob", "bea"]),
    ]


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_input_gives_byte_identical_files(tmp_path: Path) -> None:
    a = write_snapshot(
        _items(), tmp_path / "a", name="s", filters={"tags": ["x"]}, layouts=["hf", "tritonbench"]
    )
    b = write_snapshot(
        _items(), tmp_path / "b", name="s", filters={"tags": ["x"]}, layouts=["tritonbench", "hf"]
    )
    assert _tree(tmp_path / "a") == _tree(tmp_path / "b")
    assert a.manifest_sha256 == b.manifest_sha256


def test_rows_have_the_nine_fields_and_ours(tmp_path: Path) -> None:
    write_snapshot(_items(), tmp_path / "s", name="s", filters={})
    rows = [
        json.loads(line) for line in (tmp_path / "s/dataset.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert [r["task_id"] for r in rows] == ["demo/add", "demo/add-triton", "demo/z"]
    for row in rows:
        assert all(isinstance(row[key], str) for key in NINE)
        for key in ("language", "target", "reference", "verification", "provenance", "reviewers"):
            assert key in row
    hip, triton = rows[0], rows[1]
    assert hip["solution_kind"] == "candidate" and hip["target"] == "hip"
    assert hip["libs"] == "['hip', 'torch']"
    assert hip["code_prompt"].endswith("torch::Tensor add_wrapper(torch::Tensor x, torch::Tensor y) {\n")
    assert triton["solution_kind"] == "reference" and triton["canonical_solution"] == TRITON_REFERENCE
    assert hip["verification"]["device"] == "NVIDIA H200"
    assert hip["artifacts"] == {"note": "Reflection: the first launch used 1024 threads per block."}
    assert rows[2]["reviewers"] == ["bea", "bob"] and rows[2]["reviewer_count"] == 2
    assert json.loads(hip["doc_struct"])["params"][0].startswith("x (torch.Tensor)")
    # Non-ASCII is written as UTF-8, not \u escapes.
    assert "ünïcode" in (tmp_path / "s/dataset.jsonl").read_text(encoding="utf-8")


def test_manifest_lists_every_file_with_its_hash_and_the_revision_ids(tmp_path: Path) -> None:
    result = write_snapshot(
        _items(), tmp_path / "s", name="s", filters={"language": "triton"}, layouts=["hf"]
    )
    manifest = json.loads(result.manifest_path.read_text(encoding="utf-8"))
    paths = [f["path"] for f in manifest["files"]]
    assert paths == sorted(paths) == ["README.md", "dataset.jsonl", "hf/README.md", "hf/data/train.jsonl"]
    assert verify_snapshot(tmp_path / "s") == []
    assert manifest["filters"] == {"language": "triton"}
    assert manifest["generator"].startswith("kernelstudio-export/")
    assert manifest["created_at"] == "2026-11-23T01:00:00+00:00"  # the newest approval, not the clock
    assert manifest["counts"]["samples"] == 3
    assert manifest["samples"][0] == {
        "sample_id": 1,
        "task_id": "demo/add",
        "revisions": {"candidate": 15, "instruction": 12, "note": 14, "reference": 11, "test": 13},
    }
    # Tampering is detected.
    (tmp_path / "s/dataset.jsonl").write_text("{}\n")
    assert verify_snapshot(tmp_path / "s") and "does not match" in verify_snapshot(tmp_path / "s")[0]


def test_card_has_statistics(tmp_path: Path) -> None:
    write_snapshot(_items(), tmp_path / "s", name="Kernels v1", filters={})
    card = (tmp_path / "s/README.md").read_text(encoding="utf-8")
    assert card.startswith("# Kernels v1\n")
    assert "| hip | 2 |" in card and "| triton | 1 |" in card
    assert "3 of 3 samples have a measured speedup; geometric mean 1.25x." in card
    assert "| 1.1-2x | 3 |" in card


def test_tritonbench_gold_files(tmp_path: Path) -> None:
    result = write_snapshot(_items(), tmp_path / "s", name="s", filters={}, layouts=["tritonbench"])
    gold = sorted((tmp_path / "s/tritonbench").iterdir())
    assert len(gold) == 3
    manifest = json.loads(result.manifest_path.read_text(encoding="utf-8"))
    entries = {s["task_id"]: s["tritonbench_file"] for s in manifest["samples"]}
    assert entries["demo/add"]["path"].startswith("tritonbench/demo_add-")
    text = (tmp_path / "s" / entries["demo/add-triton"]["path"]).read_text(encoding="utf-8")
    assert text == f"{TRITON_REFERENCE}{TRITONBENCH_SEPARATOR}\n{TRITON_TEST}"
    assert len(TRITONBENCH_SEPARATOR) == 146 and set(TRITONBENCH_SEPARATOR) == {"#"}
    assert manifest["counts"]["tritonbench_files"] == 3
    assert verify_snapshot(tmp_path / "s") == []
    Path(tmp_path / "s" / entries["demo/z"]["path"]).write_text("tampered")
    assert verify_snapshot(tmp_path / "s") == [
        f"{entries['demo/z']['path']}: sha256 {__import__('hashlib').sha256(b'tampered').hexdigest()}"
        " does not match the manifest"
    ]


def test_gold_file_names_never_escape_or_collide(tmp_path: Path) -> None:
    items = [
        export_input(t, i) for i, t in enumerate(["../../etc/passwd", "A_b", "a/b", "a_b", "plain-id"], 1)
    ]
    write_snapshot(items, tmp_path / "s", name="s", filters={}, layouts=["tritonbench"])
    names = sorted(p.name for p in (tmp_path / "s/tritonbench").iterdir())
    assert len(names) == 5 and len({n.lower() for n in names}) == 5
    assert "plain-id.py" in names and "a_b.py" in names
    assert all(n.startswith(("etc_passwd-", "A_b-", "a_b", "plain-id")) for n in names)
    assert not (tmp_path / "etc").exists()


def test_sample_that_cannot_become_a_row_is_skipped_with_its_reason(tmp_path: Path) -> None:
    bad = export_input("demo/zz-bad", 4, candidate=False, entry_point="missing_fn")
    result = write_snapshot([*_items(), bad], tmp_path / "s", name="s", filters={})
    assert result.samples == 3
    assert result.skipped == [
        {
            "task_id": "demo/zz-bad",
            "reason": "reference (triton): entry point 'missing_fn' is not a top-level function of the solution",
        }
    ]
    manifest = json.loads(result.manifest_path.read_text(encoding="utf-8"))
    assert manifest["skipped"] == result.skipped and manifest["counts"]["skipped"] == 1
    assert "`demo/zz-bad`: reference (triton)" in (tmp_path / "s/README.md").read_text(encoding="utf-8")


def test_unsorted_input_fails_and_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="ascending task_id"):
        write_snapshot([export_input("b", 1), export_input("a", 2)], tmp_path / "s", name="s", filters={})
    assert list(tmp_path.iterdir()) == []


def test_failure_mid_stream_leaves_no_partial_snapshot(tmp_path: Path) -> None:
    def items():
        yield export_input("a", 1)
        raise RuntimeError("database went away")

    with pytest.raises(RuntimeError):
        write_snapshot(items(), tmp_path / "s", name="s", filters={})
    assert list(tmp_path.iterdir()) == []


def test_refuses_a_non_empty_output_directory_and_unknown_layouts(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s/keep.txt").write_text("mine")
    with pytest.raises(ExportError, match="not an empty directory"):
        write_snapshot(_items(), tmp_path / "s", name="s", filters={})
    assert (tmp_path / "s/keep.txt").read_text() == "mine"
    with pytest.raises(ExportError, match="unknown layout"):
        write_snapshot(_items(), tmp_path / "t", name="s", filters={}, layouts=["parquet"])


def test_empty_selection_still_writes_a_valid_snapshot(tmp_path: Path) -> None:
    result = write_snapshot([], tmp_path / "s", name="s", filters={})
    assert result.samples == 0
    assert (tmp_path / "s/dataset.jsonl").read_bytes() == b""
    assert verify_snapshot(tmp_path / "s") == []


def test_hip_candidate_without_the_entry_point_uses_its_pybind_export(tmp_path: Path) -> None:
    from tests.export.builders import art
    from tests.export.kernels import HIP_CANDIDATE

    source = HIP_CANDIDATE.replace("add_wrapper", "kernel_function")
    item = export_input("demo/pybind", 1)
    item = export_input(
        "demo/pybind", 1, artifacts={**item.artifacts, "candidate": art(15, "candidate", source, "hip")}
    )
    write_snapshot([item], tmp_path / "s", name="s", filters={})
    row = json.loads((tmp_path / "s/dataset.jsonl").read_text(encoding="utf-8"))
    assert row["entry_point"] == "kernel_function" and row["sample_entry_point"] == "add_wrapper"
    assert row["code_prompt"].endswith("torch::Tensor kernel_function(torch::Tensor x, torch::Tensor y) {\n")


def test_cpp_wrapper_is_appended_to_the_candidate_and_imports_back_apart(tmp_path: Path) -> None:
    from pipeline.importers import ks_export
    from tests.export.builders import art
    from tests.export.kernels import HIP_CANDIDATE

    cut = HIP_CANDIDATE.index("torch::Tensor add_wrapper")
    kernel_only, launcher = HIP_CANDIDATE[:cut], "#include <torch/extension.h>\n" + HIP_CANDIDATE[cut:]
    base = export_input("demo/wrapped", 1)
    item = export_input(
        "demo/wrapped",
        1,
        artifacts={
            **base.artifacts,
            "candidate": art(15, "candidate", kernel_only, "hip"),
            "wrapper": art(16, "wrapper", launcher, "cpp"),
        },
    )
    write_snapshot([item], tmp_path / "s", name="s", filters={})
    row = json.loads((tmp_path / "s/dataset.jsonl").read_text(encoding="utf-8"))
    assert row["canonical_solution"] == kernel_only + launcher
    assert row["code_prompt"].endswith("torch::Tensor add_wrapper(torch::Tensor x, torch::Tensor y) {\n")
    assert row["candidate"] == kernel_only and row["artifacts"]["wrapper"] == launcher
    (record,) = list(ks_export.parse(tmp_path / "s"))
    contents = {r.kind: r.content for r in record.revisions}
    assert contents["candidate"] == kernel_only and contents["wrapper"] == launcher


def test_card_tables_survive_pipes_and_newlines_in_values(tmp_path: Path) -> None:
    item = export_input(
        "demo/pipe", 1, verification={"backend": "cuda", "device": "GPU | A\nB", "speedup": 2.5}
    )
    write_snapshot([item], tmp_path / "s", name="s", filters={})
    card = (tmp_path / "s/README.md").read_text(encoding="utf-8")
    assert "| GPU \\| A B | 1 |" in card
