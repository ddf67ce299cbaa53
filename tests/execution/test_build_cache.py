"""Native builds on the cpu backend: g++ host C++, HIP compile-only checks, the build cache."""

from __future__ import annotations

import threading

import pytest

from pipeline.execution import JobSpec, Source, verify
from pipeline.execution.build import build
from pipeline.execution.sandbox import StepLimits
from pipeline.execution.toolchain import probe

pytestmark = pytest.mark.slow

TWICE_CPP = """
#include <pybind11/pybind11.h>
double twice(double x) { return 2.0 * x; }
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("twice", &twice); }
"""
TWICE_PY = "def twice(x):\n    return 2.0 * x\n"
TWICE_TEST = "result_gold = {'a': twice(3.0), 'b': twice(-1.5), 'c': [twice(0.25)]}\n"

PLAIN_HIP = """
#include <hip/hip_runtime.h>
__global__ void scale(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + __shfl_down(x[i], 1);
}
void launch(const float* x, float* y, float a, int n, hipStream_t s) {
    hipLaunchKernelGGL(scale, dim3((n + 255) / 256), dim3(256), 0, s, x, y, a, n);
}
"""


def test_host_cpp_candidate_is_built_with_gxx_and_runs(cache_root: str) -> None:
    spec = JobSpec(task_id="twice", backend="cpu", reference=Source("python", TWICE_PY),
                   candidate=Source("cpp", TWICE_CPP), test=TWICE_TEST, entry_point="twice")
    result = verify(spec, cache_root=cache_root)
    assert result.status == "passed", result.message + result.log
    assert result.stages["exe"].ok is True
    assert "g++" in result.log


def test_wrong_host_cpp_candidate_fails_exe(cache_root: str) -> None:
    wrong = TWICE_CPP.replace("2.0 * x", "2.0 * x + (x < 0 ? 1.0 : 0.0)")
    spec = JobSpec(task_id="twice", backend="cpu", reference=Source("python", TWICE_PY),
                   candidate=Source("cpp", wrong), test=TWICE_TEST, entry_point="twice")
    result = verify(spec, cache_root=cache_root)
    assert result.status == "failed" and result.failed_stage == "exe"
    assert "result_gold['b']: reference -3.0, candidate -2.0" in result.message


def test_compile_error_fails_call_with_the_compiler_message(cache_root: str) -> None:
    broken = TWICE_CPP.replace("return 2.0 * x;", "return 2.0 * y;")
    spec = JobSpec(task_id="twice", backend="cpu", reference=Source("python", TWICE_PY),
                   candidate=Source("cpp", broken), test=TWICE_TEST, entry_point="twice")
    result = verify(spec, cache_root=cache_root)
    assert result.status == "failed" and result.failed_stage == "call"
    assert "does not compile" in result.message
    assert "'y' was not declared" in result.message


def test_hip_candidate_on_cpu_is_compile_checked_and_reported_as_not_verified(cache_root: str) -> None:
    spec = JobSpec(task_id="scale", backend="cpu", reference=Source("python", TWICE_PY),
                   candidate=Source("hip", PLAIN_HIP), test=TWICE_TEST, entry_point="twice")
    result = verify(spec, cache_root=cache_root)
    assert result.status == "error"
    assert result.message.startswith("not verified")
    assert "compile-only check passed" in result.stages["call"].skipped
    assert result.stages["exe"].ok is None and "cpu backend cannot run" in result.stages["exe"].skipped


def test_hip_syntax_error_on_cpu_fails_call(cache_root: str) -> None:
    spec = JobSpec(task_id="scale", backend="cpu", reference=Source("python", TWICE_PY),
                   candidate=Source("hip", PLAIN_HIP.replace("y[i] =", "y[i] = undefined_symbol +")),
                   test=TWICE_TEST, entry_point="twice")
    result = verify(spec, cache_root=cache_root)
    assert result.status == "failed" and result.failed_stage == "call"
    assert "undefined_symbol" in result.message


def test_concurrent_builds_of_one_source_compile_once(fresh_cache: str) -> None:
    info = probe()
    results = []

    def one() -> None:
        results.append(build(source=Source("cpp", TWICE_CPP + "// concurrency\n"), backend="cpu", info=info,
                             cache_root=fresh_cache, limits=StepLimits(timeout_s=300)))

    threads = [threading.Thread(target=one) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r.ok for r in results)
    assert sorted(r.cache_hit for r in results) == [False, True, True]
    assert len({r.path for r in results}) == 1


def test_build_cache_key_changes_with_the_source(fresh_cache: str) -> None:
    info = probe()
    a = build(source=Source("cpp", TWICE_CPP), backend="cpu", info=info, cache_root=fresh_cache,
              limits=StepLimits(timeout_s=300))
    b = build(source=Source("cpp", TWICE_CPP + "\n// changed\n"), backend="cpu", info=info, cache_root=fresh_cache,
              limits=StepLimits(timeout_s=300))
    again = build(source=Source("cpp", TWICE_CPP), backend="cpu", info=info, cache_root=fresh_cache,
                  limits=StepLimits(timeout_s=300))
    assert a.ok and b.ok and again.ok
    assert not a.cache_hit and not b.cache_hit and again.cache_hit
    assert a.path != b.path and a.path == again.path


def test_the_light_header_fallback_triggers_only_on_missing_torch_declarations() -> None:
    from pipeline.execution.build import needs_full_header

    assert needs_full_header('source.cu(12): error: namespace "torch::nn" has no member "functional"')
    assert needs_full_header("source.cpp:5:12: error: 'nn' is not a member of 'torch'")
    assert not needs_full_header("source.cpp:3:39: error: 'y' was not declared in this scope")
    assert not needs_full_header('source.cu(7): error: identifier "undefined_symbol" is undefined')


def test_compiler_command_lines_per_backend() -> None:
    """No AMD GPU here: at least the ROCm and CUDA command lines are what cpp_extension would run."""
    from pipeline.execution.build import COMPAT_DIR, LIGHT_DIR, compiler_argv

    info = {"include_paths": ["/t/include"], "library_paths": ["/t/lib"], "python_include": "/py",
            "cxx11_abi": 1, "arch": "gfx942:sramecc+:xnack-", "capability": "9.0",
            "hipcc_common_flags": ["-D__HIP_NO_HALF_OPERATORS__=1"], "nvcc_common_flags": ["--expt-relaxed-constexpr"]}
    cc, rocm = compiler_argv(language="hip", backend="rocm", info=info, name="ks_x", src="s.hip", out="x.so",
                             compile_only=False, light=True)
    assert cc == "hipcc"
    assert "--offload-arch=gfx942" in rocm and "-D__HIP_PLATFORM_AMD__=1" in rocm
    assert f"-I{COMPAT_DIR}" not in rocm  # the real HIP headers on ROCm, never our CUDA mapping
    assert rocm.index(f"-I{LIGHT_DIR}") < rocm.index("-I/t/include")
    assert {"-lc10_hip", "-ltorch_hip", "-lamdhip64", "-DTORCH_EXTENSION_NAME=ks_x"} <= set(rocm)
    cc, cuda = compiler_argv(language="hip", backend="cuda", info=info, name="ks_x", src="s.cu", out="x.so",
                             compile_only=False)
    assert cc == "nvcc"
    assert f"-I{COMPAT_DIR}" in cuda and "-gencode=arch=compute_90,code=sm_90" in cuda
    assert {"--cudart", "shared", "-lc10_cuda", "-ltorch_cuda"} <= set(cuda)
    assert f"-I{LIGHT_DIR}" not in cuda
