"""Extraction speed on an mmcv-style tree: prints files/s for parsing, and unit compile times.

Builds a tree like mmcv's ops/csrc from tests/fixtures/mmcv_like: the shared
helper headers once, and COPIES renamed copies of each kernel header and each
launcher (.cu including pytorch_cuda_helper.hpp and its kernel header), then
runs the extractor over it with 1 and 2 parser processes, compile check off.
Then it compiles a few units with nvcc (compile check on, fresh cache) to show
what the check costs per kernel.

    .venv/bin/python bench/extract_speed.py [--copies 25] [--compile-sample 4]
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline.extraction import ExtractOptions, extract_source  # noqa: E402
from pipeline.extraction.toolchain import find_nvcc  # noqa: E402

FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "mmcv_like"
KERNEL_HEADERS = [
    "roi_align_cuda_kernel.cuh",
    "sigmoid_focal_loss_cuda_kernel.cuh",
    "box_iou_rotated_cuda.cuh",
    "nms_cuda_kernel.cuh",
]
LAUNCHERS = {
    "roi_align_cuda.cu": "roi_align_cuda_kernel.cuh",
    "focal_loss_cuda.cu": "sigmoid_focal_loss_cuda_kernel.cuh",
    "box_iou_rotated_cuda.cu": "box_iou_rotated_cuda.cuh",
}
RENAME = re.compile(
    r"\b(roi_align_forward_cuda_kernel|roi_align_backward_cuda_kernel|sigmoid_focal_loss_forward_cuda_kernel|"
    r"box_iou_rotated_cuda_kernel|single_box_area_ratio|nms_cuda|devIoU|gather_keep_kernel|"
    r"ROIAlignForwardCUDAKernelLauncher|ROIAlignBackwardCUDAKernelLauncher|"
    r"SigmoidFocalLossForwardCUDAKernelLauncher|box_iou_rotated_cuda|NMSCUDAKernelLauncher|"
    r"[A-Z_]+_CUH|FOCAL_LOG_EPS|FOCAL_SAFE_LOG|DIVUP|kBlockDimIou|threadsPerBlock)\b"
)


def build_tree(root: Path, copies: int) -> int:
    common = root / "common"
    (common / "cuda").mkdir(parents=True)
    (root / "pytorch" / "cuda").mkdir(parents=True)
    shutil.copy(FIXTURE / "common" / "pytorch_cuda_helper.hpp", common)
    for name in ("common_cuda_helper.hpp", "box_geometry.cuh"):
        shutil.copy(FIXTURE / "common" / "cuda" / name, common / "cuda")
    for i in range(copies):

        def rename(text: str, i: int = i) -> str:
            text = RENAME.sub(lambda m: f"{m.group(0)}_{i}", text)
            for h in KERNEL_HEADERS:
                text = text.replace(f'"{h}"', f'"{h.replace(".cuh", f"_{i}.cuh")}"')
            return text

        for h in KERNEL_HEADERS:
            src = (FIXTURE / "common" / "cuda" / h).read_text()
            (common / "cuda" / h.replace(".cuh", f"_{i}.cuh")).write_text(rename(src))
        for launcher in [*LAUNCHERS, "nms_cuda.cu"]:
            src = (FIXTURE / "pytorch" / "cuda" / launcher).read_text()
            (root / "pytorch" / "cuda" / launcher.replace(".cu", f"_{i}.cu")).write_text(rename(src))
    return sum(1 for _ in root.rglob("*") if _.is_file())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, default=25)
    parser.add_argument("--compile-sample", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ks-bench-extract-") as tmp:
        root = Path(tmp) / "mmcv_csrc"
        files = build_tree(root, args.copies)
        cpus = len(os.sched_getaffinity(0))
        print(
            f"machine: {platform.machine()}, {cpus} usable CPU(s) of {os.cpu_count()}; python {platform.python_version()}"
        )
        print(f"load average before: {os.getloadavg()[0]:.2f}")
        print(f"tree: {files} files ({args.copies} copies of 4 kernel headers + 4 launchers, shared helpers)")
        for jobs in (1, 2):
            started = time.perf_counter()
            report = extract_source(root, ExtractOptions(compile=False, jobs=jobs))
            wall = time.perf_counter() - started
            print(
                f"jobs={jobs}: {len(report.kernels)} kernels, {report.files_scanned} files in {wall:.2f} s "
                f"= {report.files_scanned / wall:.1f} files/s (parse phase {report.parse_seconds:.2f} s)"
            )
        if args.compile_sample and find_nvcc() is not None:
            small = Path(tmp) / "one_copy"
            build_tree(small, 1)
            cache = Path(tmp) / "cc-cache"
            started = time.perf_counter()
            report = extract_source(small, ExtractOptions(compile=True, jobs=2, compile_cache_dir=str(cache)))
            wall = time.perf_counter() - started
            times = sorted(k.compile.seconds or 0.0 for k in report.kernels)
            ok = sum(1 for k in report.kernels if k.compile.compiles)
            print(
                f"compile check ({report.kernels[0].compile.compiler}): {ok}/{len(report.kernels)} units compile; "
                f"per unit {times[0]:.1f}-{times[-1]:.1f} s; whole run {wall:.1f} s with 2 at a time"
            )
            started = time.perf_counter()
            extract_source(small, ExtractOptions(compile=True, jobs=2, compile_cache_dir=str(cache)))
            print(f"same tree again with the compile cache: {time.perf_counter() - started:.2f} s")


if __name__ == "__main__":
    main()
