"""The extractor on the mmcv-style corpus: every kernel, exact text, dependencies, launches."""

from __future__ import annotations

from pathlib import Path

from pipeline.extraction import ExtractionReport
from tests.extraction.conftest import by_name

EXPECTED = {
    "roi_align_forward_cuda_kernel": "common/cuda/roi_align_cuda_kernel.cuh",
    "roi_align_backward_cuda_kernel": "common/cuda/roi_align_cuda_kernel.cuh",
    "sigmoid_focal_loss_forward_cuda_kernel": "common/cuda/sigmoid_focal_loss_cuda_kernel.cuh",
    "box_iou_rotated_cuda_kernel": "common/cuda/box_iou_rotated_cuda.cuh",
    "nms_cuda": "common/cuda/nms_cuda_kernel.cuh",
    "gather_keep_kernel": "pytorch/cuda/nms_cuda.cu",
    "scatter_max_kernel": "hip/scatter_points_hip.hip",
}


def test_finds_every_kernel_once(corpus_report: ExtractionReport) -> None:
    found = [(k.name, k.file) for k in corpus_report.kernels]
    assert sorted(found) == sorted(EXPECTED.items())
    assert corpus_report.files_scanned == 12
    assert corpus_report.files_ignored == 1  # README.md
    errors = [p for p in corpus_report.problems if p.severity == "error"]
    assert errors == []
    # No parse error anywhere: the shim gives clang everything these files use.
    assert corpus_report.problems == []


def test_source_is_the_exact_text(corpus_report: ExtractionReport, corpus_dir: Path) -> None:
    for k in corpus_report.kernels:
        lines = (corpus_dir / k.file).read_text().splitlines()
        assert k.source == "\n".join(lines[k.start_line - 1 : k.end_line]), k.name
        assert k.lines == k.end_line - k.start_line + 1
    fwd = by_name(corpus_report)["roi_align_forward_cuda_kernel"]
    assert fwd.source.startswith("template <typename T>\n__global__ void roi_align_forward_cuda_kernel(")
    assert fwd.source.endswith("}")
    assert (fwd.start_line, fwd.end_line) == (9, 64)


def test_templates_and_parameters(corpus_report: ExtractionReport) -> None:
    k = by_name(corpus_report)
    fwd = k["roi_align_forward_cuda_kernel"]
    assert fwd.is_template
    assert fwd.template_params == [{"name": "T", "kind": "type", "default": None}]
    assert fwd.parameters[1] == {"name": "input", "type": "const T *"}
    assert "templated" in fwd.flags
    assert not k["nms_cuda"].is_template
    assert k["nms_cuda"].template_params == []


def test_device_functions_transitive_across_headers(corpus_report: ExtractionReport) -> None:
    k = by_name(corpus_report)
    box = k["box_iou_rotated_cuda_kernel"]
    # single_box_area_ratio (same header) calls into box_geometry.cuh, which calls cross_2d.
    assert set(box.device_functions) == {
        "single_box_area_ratio",
        "geometry::box_corners",
        "geometry::dot_2d",
        "geometry::polygon_area",
        "geometry::cross_2d",
    }
    assert box.types == ["geometry::Point"]
    assert box.constants == ["geometry::kEps"]
    assert box.macros == ["CUDA_1D_KERNEL_LOOP"]
    # The overloaded helper: a dependent call keeps both overloads available.
    fwd = k["roi_align_forward_cuda_kernel"]
    assert fwd.device_functions == ["bilinear_interpolate"]
    assert fwd.unit.count("bilinear_interpolate(") >= 3  # template, float overload, the call
    assert k["roi_align_backward_cuda_kernel"].device_functions == ["bilinear_interpolate_gradient"]
    assert k["nms_cuda"].device_functions == ["devIoU"]
    assert k["nms_cuda"].constants == ["threadsPerBlock"]
    assert k["scatter_max_kernel"].device_functions == ["wave_reduce_max"]


def test_macros_including_macros_used_by_macros(corpus_report: ExtractionReport) -> None:
    k = by_name(corpus_report)
    focal = k["sigmoid_focal_loss_forward_cuda_kernel"]
    # FOCAL_SAFE_LOG uses FOCAL_LOG_EPS: found through the macro body.
    assert set(focal.macros) == {"CUDA_1D_KERNEL_LOOP", "FOCAL_LOG_EPS", "FOCAL_SAFE_LOG"}
    assert k["nms_cuda"].macros == ["CUDA_2D_KERNEL_LOOP"]
    # Builtins used are listed apart from project helpers.
    assert "atomicAdd" in k["roi_align_backward_cuda_kernel"].intrinsics
    assert "__syncthreads" in k["nms_cuda"].intrinsics


def test_launches_with_dispatch_types_and_config(corpus_report: ExtractionReport) -> None:
    k = by_name(corpus_report)
    (launch,) = k["roi_align_forward_cuda_kernel"].launches
    assert launch.file == "pytorch/cuda/roi_align_cuda.cu"
    assert launch.line == 19
    assert launch.kind == "triple_chevron"
    assert launch.dispatch == "AT_DISPATCH_FLOATING_TYPES_AND_HALF"
    assert launch.template_args == [["double"], ["float"], ["c10::Half"]]
    assert (launch.grid, launch.block, launch.shared_mem, launch.stream) == (
        "GET_BLOCKS(output_size)",
        "THREADS_PER_BLOCK",
        "0",
        "stream",
    )
    assert launch.caller == "ROIAlignForwardCUDAKernelLauncher"

    (nms,) = k["nms_cuda"].launches
    assert (nms.grid, nms.block, nms.dispatch, nms.template_args) == ("blocks", "threads", None, [])
    (gather,) = k["gather_keep_kernel"].launches
    assert gather.line == 40 and gather.grid == "GET_BLOCKS(boxes_num)"
    assert k["gather_keep_kernel"].qualified_name == "mmcv_like::ops::gather_keep_kernel"


def test_explicit_instantiation_and_dispatch_both_count(corpus_report: ExtractionReport) -> None:
    box = by_name(corpus_report)["box_iou_rotated_cuda_kernel"]
    kinds = {(ln.kind, ln.line) for ln in box.launches}
    assert kinds == {("explicit_instantiation", 5), ("triple_chevron", 17)}
    dispatch = next(ln for ln in box.launches if ln.kind == "triple_chevron")
    assert dispatch.dispatch == "AT_DISPATCH_FLOATING_TYPES"
    assert sorted(box.instantiations) == [["double"], ["float"]]


def test_hip_launch(corpus_report: ExtractionReport) -> None:
    hip = by_name(corpus_report)["scatter_max_kernel"]
    assert hip.language == "hip"
    (launch,) = hip.launches
    assert launch.kind == "hipLaunchKernelGGL"
    assert (launch.grid, launch.block, launch.shared_mem, launch.stream) == ("grid", "block", "0", "stream")
    assert launch.template_args == [["float"]]
    assert "warp_level" in hip.flags  # __shfl_down: wavefront 64 vs warp 32 matters here
    assert hip.unit.startswith("// Kernel Studio extraction unit")
    assert "#include <hip/hip_runtime.h>" in hip.unit


def test_units_are_self_contained(corpus_report: ExtractionReport) -> None:
    k = by_name(corpus_report)
    fwd = k["roi_align_forward_cuda_kernel"]
    unit = fwd.unit
    assert '#include "' not in unit  # project headers are replaced by the code they held
    assert "ATen" not in unit and "#include <torch" not in unit
    assert "#define CUDA_1D_KERNEL_LOOP(i, n)" in unit
    assert "#include <float.h>" in unit
    assert "#include <cuda_fp16.h>" in unit  # at::Half launches instantiate __half
    assert unit.index("bilinear_interpolate(const T* input") < unit.index("__global__ void roi_align_forward")
    assert fwd.source in unit
    assert (
        "template __global__ void roi_align_forward_cuda_kernel<__half>(const int, const __half *, const __half *,"
        in unit
    )
    # Things the kernel does not use stay out.
    assert "bilinear_interpolate_gradient" not in unit
    assert "warp_reduce_sum" not in unit
    gather = k["gather_keep_kernel"].unit
    assert "namespace mmcv_like { namespace ops {\n__constant__ float kScaleTable[4]" in gather


def test_flags(corpus_report: ExtractionReport) -> None:
    k = by_name(corpus_report)
    assert "high_dependency" not in k["nms_cuda"].flags
    for kernel in corpus_report.kernels:
        assert "no_launch_found" not in kernel.flags, kernel.name
        assert "too_long" not in kernel.flags and "too_short" not in kernel.flags


def test_json_shape(corpus_report: ExtractionReport) -> None:
    data = corpus_report.to_dict()
    kernel = data["kernels"][0]
    for field in (
        "name",
        "file",
        "start_line",
        "end_line",
        "source",
        "is_template",
        "template_params",
        "device_functions",
        "macros",
        "types",
        "launches",
        "lines",
        "flags",
        "unit",
        "compile",
    ):
        assert field in kernel
    assert set(kernel["compile"]) >= {"compiler", "compiles", "message"}
