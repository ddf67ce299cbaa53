"""Units compile with the real nvcc / hipcc (compile only, in the sandbox)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.extraction import ExtractOptions, extract_source
from pipeline.extraction.compile import check_unit
from pipeline.extraction.toolchain import find_hipcc, find_nvcc

pytestmark = pytest.mark.slow


@pytest.fixture
def fresh_compilers() -> Iterator[None]:
    find_nvcc.cache_clear()
    find_hipcc.cache_clear()
    yield
    find_nvcc.cache_clear()
    find_hipcc.cache_clear()


def test_every_corpus_unit_compiles(corpus_dir: Path, tmp_path: Path) -> None:
    if find_nvcc() is None:
        pytest.skip("nvcc is not installed")
    report = extract_source(
        corpus_dir, ExtractOptions(compile=True, compile_cache_dir=str(tmp_path / "cache"))
    )
    for kernel in report.kernels:
        if kernel.language == "hip" and find_hipcc() is None:
            assert kernel.compile.compiles is None
            assert "no hipcc" in kernel.compile.message
            continue
        assert kernel.compile.compiles is True, f"{kernel.name}:\n{kernel.compile.message}\n{kernel.unit}"
        assert kernel.compile.compiler and kernel.compile.compiler.split()[0] in ("nvcc", "hipcc")
        assert "compile_failed" not in kernel.flags
    # The second run answers from the cache (same unit, same compiler).
    again = extract_source(
        corpus_dir, ExtractOptions(compile=True, compile_cache_dir=str(tmp_path / "cache"))
    )
    assert [k.compile.compiles for k in again.kernels] == [k.compile.compiles for k in report.kernels]


def test_a_unit_that_does_not_compile_says_why(tmp_path: Path) -> None:
    if find_nvcc() is None:
        pytest.skip("nvcc is not installed")
    src = tmp_path / "tree"
    src.mkdir()
    # The helper lives in a header that is not in the tree: the unit cannot have it.
    (src / "k.cu").write_text(
        '#include "vendor/helpers.cuh"\n'
        "__global__ void uses_missing(float* x) {\n"
        "  x[threadIdx.x] = vendor_helper(x[threadIdx.x]);\n"
        "}\n"
    )
    report = extract_source(src, ExtractOptions(compile=True))
    (kernel,) = report.kernels
    assert kernel.compile.compiles is False
    assert "vendor_helper" in kernel.compile.message
    assert "compile_failed" in kernel.flags
    assert "missing_headers" in kernel.flags
    assert report.missing_includes == ["vendor/helpers.cuh"]


def test_no_compiler_is_reported_not_guessed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_compilers: None
) -> None:
    monkeypatch.setenv("KS_NVCC", "none")
    result = check_unit("__global__ void k() {}\n", "cuda")
    assert result.compiles is None
    assert result.compiler is None
    assert "no nvcc" in result.message


def test_hip_unit_with_hipcc(corpus_dir: Path) -> None:
    if find_hipcc() is None or shutil.which("hipcc") is None:
        pytest.skip("hipcc is not installed")
    report = extract_source(corpus_dir / "hip", ExtractOptions(compile=True))
    (kernel,) = report.kernels
    assert kernel.compile.compiles is True, kernel.compile.message
    assert kernel.compile.command and "--offload-arch=gfx90a" in kernel.compile.command


def test_per_type_results_when_only_half_fails(tmp_path: Path) -> None:
    """ATen's c10::Half mixes with double literals; CUDA's __half does not. Say which type fails."""
    if find_nvcc() is None:
        pytest.skip("nvcc is not installed")
    (tmp_path / "clamp.cu").write_text(
        "#include <ATen/ATen.h>\n"
        "template <typename T>\n"
        "__global__ void clamp_kernel(T* x, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n && x[i] < -1.0) x[i] = -1.0;\n"
        "}\n"
        "void clamp(at::Tensor t) {\n"
        '  AT_DISPATCH_FLOATING_TYPES_AND_HALF(t.scalar_type(), "clamp", [&] {\n'
        "    clamp_kernel<scalar_t><<<(t.numel() + 255) / 256, 256>>>(t.data_ptr<scalar_t>(), t.numel());\n"
        "  });\n"
        "}\n"
    )
    report = extract_source(tmp_path, ExtractOptions(compile=True))
    (kernel,) = report.kernels
    assert kernel.diagnostics == []  # the parse, with c10::Half's operators, is clean
    assert kernel.instantiations == [["double"], ["float"], ["__half"]]
    assert kernel.compile.compiles is False
    assert kernel.compile.per_instantiation == {"<double>": True, "<float>": True, "<__half>": False}
