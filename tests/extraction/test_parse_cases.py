"""Edge cases of parsing: bad files, text that only looks like a kernel, options, the pool."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.extraction import ExtractOptions, extract_source
from tests.extraction.conftest import by_name


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_kernels_come_from_the_ast_not_from_text(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "k.cu": (
                "// __global__ void in_a_comment(float* x) {}\n"
                'const char* doc = "__global__ void in_a_string() {}";\n'
                "__global__ void declared_only(float* x);\n"
                "#if 0\n__global__ void disabled(float* x) {}\n#endif\n"
                "#define MAKE_KERNEL(name) __global__ void name(float* x) { x[0] = 0.f; }\n"
                "MAKE_KERNEL(from_macro)\n"
                "__device__ float not_a_kernel(float v) { return v; }\n"
                "__global__\nvoid\nreal_one(float* x)\n{\n  x[0] = not_a_kernel(1.f);\n}\n"
            )
        },
    )
    report = extract_source(tmp_path, ExtractOptions(compile=False))
    names = sorted(k.name for k in report.kernels)
    # The macro-made kernel is a real kernel in the AST; comments, strings,
    # disabled code and declarations are not.
    assert names == ["from_macro", "real_one"]
    real = by_name(report)["real_one"]
    assert real.source == "__global__\nvoid\nreal_one(float* x)\n{\n  x[0] = not_a_kernel(1.f);\n}"
    assert real.device_functions == ["not_a_kernel"]


def test_a_broken_file_is_reported_with_lines_and_the_rest_still_extracts(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "good.cu": "__global__ void good(float* x) { x[threadIdx.x] = 2.f; }\n",
            "broken.cu": ("__global__ void half_written(float* x) {\n  x[0] = undefined_thing + ;\n}\n"),
        },
    )
    report = extract_source(tmp_path, ExtractOptions(compile=False))
    kernels = by_name(report)
    assert set(kernels) == {"good", "half_written"}
    assert "parse_errors" in kernels["half_written"].flags
    assert "parse_errors" not in kernels["good"].flags
    lines = {(p.file, p.line) for p in report.problems}
    assert ("broken.cu", 2) in lines


def test_missing_headers_get_an_empty_stand_in_and_a_warning(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "k.cu": (
                "#include <vendorlib/block_reduce.cuh>\n"
                '#include "../outside/project.h"\n'
                "__global__ void k(float* x) { x[0] = 1.f; }\n"
            )
        },
    )
    report = extract_source(tmp_path, ExtractOptions(compile=False))
    (kernel,) = report.kernels
    assert "missing_headers" in kernel.flags
    assert "vendorlib/block_reduce.cuh" in report.missing_includes
    warnings = [p.message for p in report.problems if p.severity == "warning"]
    assert any("vendorlib/block_reduce.cuh" in w for w in warnings)
    # A name that would leave the stand-in directory gets no stand-in at all.
    assert not (tmp_path.parent / "outside").exists()
    assert "#include <vendorlib/block_reduce.cuh>" in kernel.unit


def test_instantiation_defaults_and_flags(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "k.cuh": (
                "template <typename T>\n__global__ void never_launched(T* x) {\n  x[0] = T(1);\n}\n\n"
                "template <typename T, int BLOCK>\n__global__ void needs_block(T* x) {\n  x[BLOCK - 1] = T(0);\n}\n\n"
                "template <typename T, int BLOCK = 128>\n__global__ void has_default(T* x) {\n  x[BLOCK - 1] = T(0);\n}\n"
            ),
        },
    )
    report = extract_source(tmp_path, ExtractOptions(compile=False, min_lines=5))
    k = by_name(report)
    assert k["never_launched"].instantiations == [["float"]]
    assert {"default_instantiation", "no_launch_found", "templated", "too_short"} <= set(
        k["never_launched"].flags
    )
    assert "template __global__ void never_launched<float>(float *);" in k["never_launched"].unit
    assert k["needs_block"].instantiations == []
    assert "not_instantiated" in k["needs_block"].flags
    assert k["has_default"].instantiations == [["float", "128"]]
    assert k["needs_block"].template_params[1] == {
        "name": "BLOCK",
        "kind": "non_type",
        "default": None,
        "type": "int",
    }


def test_launch_with_non_type_template_arguments(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "k.cu": (
                "template <typename T, int BLOCK>\n"
                "__global__ void tiled(const T* in, T* out, int n) {\n"
                "  __shared__ T tile[BLOCK];\n"
                "  int i = blockIdx.x * BLOCK + threadIdx.x;\n"
                "  if (i < n) { tile[threadIdx.x] = in[i]; __syncthreads(); out[i] = tile[BLOCK - 1 - threadIdx.x]; }\n"
                "}\n"
                "void run(const float* in, float* out, int n) {\n"
                "  tiled<float, 256><<<(n + 255) / 256, 256>>>(in, out, n);\n"
                "}\n"
            )
        },
    )
    report = extract_source(tmp_path, ExtractOptions(compile=False))
    (kernel,) = report.kernels
    (launch,) = kernel.launches
    assert launch.template_args == [["float", "256"]]
    assert (launch.grid, launch.block, launch.shared_mem) == ("(n + 255) / 256", "256", None)
    assert kernel.instantiations == [["float", "256"]]
    assert "template __global__ void tiled<float, 256>(const float *, float *, int);" in kernel.unit


def test_line_thresholds(tmp_path: Path) -> None:
    body = "\n".join(f"  x[{i}] = {i}.f;" for i in range(20))
    write(tmp_path, {"k.cu": f"__global__ void long_one(float* x) {{\n{body}\n}}\n"})
    report = extract_source(tmp_path, ExtractOptions(compile=False, max_lines=10))
    assert "too_long" in report.kernels[0].flags
    report = extract_source(tmp_path, ExtractOptions(compile=False, max_lines=100, min_lines=50))
    assert "too_short" in report.kernels[0].flags


def test_the_process_pool_gives_the_same_answer(corpus_dir: Path) -> None:
    serial = extract_source(corpus_dir, ExtractOptions(compile=False, jobs=1))
    pooled = extract_source(corpus_dir, ExtractOptions(compile=False, jobs=2, isolate=True))
    assert [k.to_dict() for k in serial.kernels] == [k.to_dict() for k in pooled.kernels]


def test_progress_is_reported(corpus_dir: Path) -> None:
    seen: list[tuple[str, int, int]] = []
    extract_source(
        corpus_dir, ExtractOptions(compile=False, jobs=1, progress=lambda s, d, t: seen.append((s, d, t)))
    )
    assert seen[-1] == ("parse", 12, 12)


def test_missing_path_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such file"):
        extract_source(tmp_path / "nope", ExtractOptions(compile=False))


def test_symlinked_files_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.cu"
    outside.write_text("__global__ void secret(float* x) { x[0] = 1.f; }\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "k.cu").write_text("__global__ void mine(float* x) { x[0] = 1.f; }\n")
    (tree / "link.cu").symlink_to(outside)
    report = extract_source(tree, ExtractOptions(compile=False))
    assert [k.name for k in report.kernels] == ["mine"]


@pytest.mark.slow
def test_toolkit_headers_serve_what_the_shim_does_not(tmp_path: Path) -> None:
    from pipeline.extraction.toolchain import cuda_toolkit_include_dirs

    if not cuda_toolkit_include_dirs():
        pytest.skip("no CUDA toolkit headers on this host")
    write(
        tmp_path,
        {
            "k.cu": (
                "#include <cub/block/block_reduce.cuh>\n"
                "__global__ void block_sum(const float* in, float* out) {\n"
                "  typedef cub::BlockReduce<float, 128> BR;\n"
                "  __shared__ typename BR::TempStorage tmp;\n"
                "  float v = BR(tmp).Sum(in[threadIdx.x]);\n"
                "  if (threadIdx.x == 0) out[blockIdx.x] = v;\n"
                "}\n"
            )
        },
    )
    with_toolkit = extract_source(tmp_path, ExtractOptions(compile=False))
    (kernel,) = with_toolkit.kernels
    assert with_toolkit.missing_includes == [] and kernel.diagnostics == []
    assert with_toolkit.toolkit_includes
    assert "#include <cub/block/block_reduce.cuh>" in kernel.unit
    shim_only = extract_source(tmp_path, ExtractOptions(compile=False, toolkit_headers=False))
    assert shim_only.missing_includes == ["cub/block/block_reduce.cuh"]
    assert "parse_errors" in shim_only.kernels[0].flags


def test_high_dependency_and_dependent_launches(tmp_path: Path) -> None:
    helpers = "".join(f"__device__ float h{i}(float v) {{ return v + {i}.f; }}\n" for i in range(10))
    calls = " + ".join(f"h{i}(x[0])" for i in range(10))
    write(
        tmp_path,
        {
            "k.cu": (
                helpers
                + f"__global__ void busy(float* x) {{\n  x[0] = {calls};\n}}\n"
                + "template <typename T>\n__global__ void scale(T* x, T s) {\n  x[threadIdx.x] *= s;\n}\n"
                + "template <typename T>\nvoid launch_scale(T* x, T s, int n) {\n"
                + "  scale<T><<<(n + 127) / 128, 128>>>(x, s);\n}\n"
                + "template void launch_scale<double>(double*, double, int);\n"
            )
        },
    )
    report = extract_source(tmp_path, ExtractOptions(compile=False))
    k = by_name(report)
    assert len(k["busy"].device_functions) == 10
    assert "high_dependency" in k["busy"].flags
    (launch,) = k["scale"].launches
    # Inside a template launcher the kernel's arguments are the launcher's parameters.
    assert launch.dependent is True and launch.template_args == []
    assert (launch.grid, launch.block, launch.caller) == ("(n + 127) / 128", "128", "launch_scale")
    assert "default_instantiation" in k["scale"].flags
    assert k["scale"].instantiations == [["float"]]


def test_parses_with_no_compiler_headers_installed(monkeypatch: pytest.MonkeyPatch, corpus_dir: Path) -> None:
    """The libclang wheel has no stddef.h/float.h; without clang's or GCC's, ours stand in."""
    from pipeline.extraction.toolchain import builtin_include_dir

    monkeypatch.setenv("KS_CLANG_RESOURCE_INCLUDE", "none")
    builtin_include_dir.cache_clear()
    try:
        assert builtin_include_dir() is None
        report = extract_source(corpus_dir, ExtractOptions(compile=False, jobs=1))
    finally:
        monkeypatch.delenv("KS_CLANG_RESOURCE_INCLUDE")
        builtin_include_dir.cache_clear()
    assert len(report.kernels) == 7
    assert report.problems == [] and report.missing_includes == []
