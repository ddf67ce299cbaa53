"""manage.py extract_kernels: JSON out, --import (idempotent), errors."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotations.models import Revision, Sample
from tests.extraction.helpers import CORPUS, corpus_tar_bytes

pytestmark = pytest.mark.django_db


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("extract_kernels", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_json_and_summary(tmp_path: Path) -> None:
    target = tmp_path / "kernels.json"
    out, _ = run(str(CORPUS), "--no-compile", "--json", str(target))
    data = json.loads(target.read_text())
    (source,) = data["sources"]
    assert source["source"] == "mmcv_like"
    assert len(source["kernels"]) == 7
    kernel = next(k for k in source["kernels"] if k["name"] == "roi_align_forward_cuda_kernel")
    assert kernel["launches"][0]["template_args"] == [["double"], ["float"], ["c10::Half"]]
    assert kernel["compile"]["compiles"] is None
    assert "mmcv_like/common/cuda/roi_align_cuda_kernel.cuh:9-64 roi_align_forward_cuda_kernel" in out
    assert "mmcv_like: 7 kernel(s) in 12 file(s) (1 ignored)" in out
    assert not list(tmp_path.glob(".extract-*"))  # the atomic write left no temp file


def test_json_to_stdout_keeps_stdout_clean() -> None:
    out, err = run(str(CORPUS / "hip"), "--no-compile", "--json", "-")
    data = json.loads(out)
    assert [k["name"] for k in data["sources"][0]["kernels"]] == ["scatter_max_kernel"]
    assert "1 kernel(s)" in err


def test_import_creates_samples_once(tmp_path: Path) -> None:
    archive = tmp_path / "mmcv_like.tar.gz"
    archive.write_bytes(corpus_tar_bytes())
    out, _ = run(str(archive), "--no-compile", "--import")
    assert "imported 7 sample(s), 0 already present" in out
    sample = Sample.objects.get(
        task_id="extracted/mmcv_like/common/cuda/roi_align_cuda_kernel.cuh::roi_align_forward_cuda_kernel"
    )
    assert sample.source == "extracted"
    assert sample.kernel_name == "roi_align_forward_cuda_kernel"
    assert sample.reference_language == "cuda"
    assert sample.provenance["repository"] == "mmcv_like"
    assert sample.provenance["path"] == "common/cuda/roi_align_cuda_kernel.cuh"
    assert (sample.provenance["start_line"], sample.provenance["end_line"]) == (9, 64)
    assert "templated" in sample.provenance["flags"]
    assert {t.name for t in sample.tags.all()} >= {"extracted", "templated"}
    ref = Revision.objects.get(sample=sample, kind="reference")
    assert ref.origin == "extracted"
    assert ref.author_label == "import:extract_kernels"
    assert ref.content.startswith("// Kernel Studio extraction unit: roi_align_forward_cuda_kernel")
    assert ref.language == "cuda"
    hip = Sample.objects.get(kernel_name="scatter_max_kernel")
    assert hip.reference_language == "hip"

    out, _ = run(str(archive), "--no-compile", "--import")
    assert "imported 0 sample(s), 7 already present" in out
    assert Sample.objects.count() == 7


def test_import_respects_line_bounds() -> None:
    out, _ = run(str(CORPUS), "--no-compile", "--import", "--max-lines", "30")
    # Only the kernels of at most 30 lines: sigmoid focal loss (27), scatter_max (14), gather_keep (11), box_iou (20)
    assert set(Sample.objects.values_list("kernel_name", flat=True)) == {
        "sigmoid_focal_loss_forward_cuda_kernel",
        "scatter_max_kernel",
        "gather_keep_kernel",
        "box_iou_rotated_cuda_kernel",
    }
    assert "too_long" in out


def test_errors_are_command_errors(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="no such file"):
        run(str(tmp_path / "missing"), "--no-compile")
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"not a zip at all")
    with pytest.raises(CommandError, match="unreadable archive"):
        run(str(bad), "--no-compile")
    with pytest.raises(CommandError, match="min lines must not be above max lines"):
        run(str(CORPUS), "--no-compile", "--min-lines", "50", "--max-lines", "10")
    with pytest.raises(CommandError, match="whole number"):
        run(str(CORPUS), "--no-compile", "--min-lines", "many")
    with pytest.raises(CommandError, match="is a directory"):
        run(str(CORPUS / "hip"), "--no-compile", "--json", str(tmp_path))
    with pytest.raises(CommandError, match="no user"):
        run(str(CORPUS / "hip"), "--no-compile", "--import", "--user", "nobody")
    assert Sample.objects.count() == 0
