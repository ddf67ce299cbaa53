"""Plain ExportInput builders for the pipeline-level export tests."""

from __future__ import annotations

import hashlib
from typing import Any

from pipeline.export.rows import ArtifactData, ExportInput
from tests.export.kernels import HIP_CANDIDATE, INSTRUCTION, TRITON_REFERENCE, TRITON_TEST


def art(revision_id: int, kind: str, content: str, language: str = "") -> ArtifactData:
    return ArtifactData(revision_id, kind, content, hashlib.sha256(content.encode()).hexdigest(), language)


def export_input(
    task_id: str = "demo/add", sample_id: int = 1, *, candidate: bool = True, **over: Any
) -> ExportInput:
    base = sample_id * 10
    artifacts = {
        "reference": art(base + 1, "reference", TRITON_REFERENCE, "triton"),
        "instruction": art(base + 2, "instruction", INSTRUCTION, "markdown"),
        "test": art(base + 3, "test", TRITON_TEST, "python"),
        "note": art(
            base + 4, "note", "Reflection: the first launch used 1024 threads per block.", "markdown"
        ),
    }
    if candidate:
        artifacts["candidate"] = art(base + 5, "candidate", HIP_CANDIDATE, "hip")
    fields: dict[str, Any] = {
        "sample_id": sample_id,
        "task_id": task_id,
        "entry_point": "add_wrapper",
        "reference_language": "triton",
        "target_language": "hip" if candidate else "triton",
        "kernel_name": "add_kernel",
        "source": "test",
        "provenance": {"repository": "example/kernels", "path": "add.py"},
        "tags": ["elementwise", "ünïcode"],
        "difficulty": 2,
        "artifacts": artifacts,
        "verification": {
            "backend": "cuda",
            "device": "NVIDIA H200",
            "speedup": 1.25,
            "perf_ok": True,
            "call_ok": True,
            "exe_ok": True,
            "emulated": True,
        },
        "reviewers": ["bob"],
        "approved_at": f"2026-11-2{sample_id % 10}T01:00:00+00:00",
    }
    fields.update(over)
    return ExportInput(**fields)
