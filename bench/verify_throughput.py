"""Verification throughput on an NVIDIA GPU host (figures for docs/performance.md, "Verification").

Measures, in one run:
1. a COLD batch of N distinct HIP candidates (+ their Triton references) through real
   workers: wall time vs the ideal  sum(build CPU-s)/cores + sum(GPU-s);
2. re-runs of an unchanged sample (build and golden outputs cached): request -> verdict;
3. the seeds'/TritonBench's way on K of the same samples: one fresh `python file.py`
   per sample, serially, building with torch.utils.cpp_extension.load; the ratio;
4. (--build-variants) one small HIP+PyTorch build: cpp_extension.load vs our direct nvcc.

Usage: python3 bench/verify_throughput.py [--samples 32] [--workers CORES] [--baseline 6] [--build-variants]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from gpu_common import REPO, Cluster

from pipeline.execution import JobSpec, Source
from pipeline.execution.build import COMPAT_DIR, build
from pipeline.execution.sandbox import StepLimits
from pipeline.execution.toolchain import probe

REFERENCE = '''
import torch
import triton
import triton.language as tl


@triton.jit
def affine_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * @A@ + @B@, mask=mask)


def affine_wrapper(x):
    out = torch.empty_like(x)
    n = x.numel()
    affine_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
    return out
'''

CANDIDATE = '''
#include <hip/hip_runtime.h>
#include <torch/extension.h>

__global__ void affine_kernel(const float* __restrict__ x, float* __restrict__ out, int64_t n) {
    int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] * @A@f + @B@f;
}

torch::Tensor affine_wrapper(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "float32 only");
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    int64_t n = xc.numel();
    if (n == 0) return out;
    const int threads = 256;
    const int blocks = static_cast<int>((n + threads - 1) / threads);
    hipLaunchKernelGGL(affine_kernel, dim3(blocks), dim3(threads), 0, 0, xc.data_ptr<float>(),
                       out.data_ptr<float>(), n);
    TORCH_CHECK(hipGetLastError() == hipSuccess, "launch failed");
    return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("affine_wrapper", &affine_wrapper); }
'''

TEST = '''
import torch


def test_affine():
    results = {}
    x = torch.randn(1 << 22, device='cuda')
    results['large'] = affine_wrapper(x)
    x = torch.randn(1000, device='cuda')
    results['ragged'] = affine_wrapper(x)
    x = torch.randn(1, device='cuda')
    results['one'] = affine_wrapper(x)
    return results


result_gold = test_affine()
'''

BASELINE_FILE = '''
import os, sys, torch
from torch.utils.cpp_extension import load
torch.manual_seed(0)
@REFERENCE@
@TEST@
gold = result_gold
torch.manual_seed(0)
ext = load(name="cand_@I@", sources=[os.path.join(os.path.dirname(__file__), "cand_@I@.cu")],
           extra_include_paths=[@COMPAT@], verbose=False)
affine_wrapper = ext.affine_wrapper
@TEST@
for k in gold:
    torch.testing.assert_close(result_gold[k], gold[k])
print("ok")
'''


def sample(i: int) -> tuple[str, str]:
    a, b = f"{1.0 + i / 16:.4f}", f"{i * 0.25:.4f}"
    return REFERENCE.replace("@A@", a).replace("@B@", b), CANDIDATE.replace("@A@", a).replace("@B@", b)


def spec(i: int) -> JobSpec:
    ref, cand = sample(i)
    return JobSpec(task_id=f"affine-{i}", backend="cuda", reference=Source("triton", ref),
                   candidate=Source("hip", cand), test=TEST, entry_point="affine_wrapper")


def cold_batch(n: int, workers: int) -> dict[str, Any]:
    cache = tempfile.mkdtemp(prefix="ks-tp-cache-")
    cluster = Cluster(workers=workers, queue="gpu-cuda", cache_dir=cache)
    try:
        time.sleep(8)  # let the workers finish importing torch before the clock starts
        t0 = time.monotonic()
        ids = [cluster.submit(spec(i)) for i in range(n)]
        results = cluster.wait(ids)
        wall = max(r["_done_at"] for r in results.values()) - t0
        statuses = [r["status"] for r in results.values()]
        build_cpu = sum(r["timings"].get("build_cpu_s", 0.0) for r in results.values())
        gpu = sum(r["timings"].get("gpu_s", 0.0) for r in results.values())
        cores = os.cpu_count() or 1
        ideal = build_cpu / cores + gpu
        out = {"n": n, "wall": wall, "build_cpu": build_cpu, "gpu": gpu, "ideal": ideal, "cores": cores,
               "statuses": {s: statuses.count(s) for s in set(statuses)},
               "build_wall": statistics.median(r["timings"].get("build_s", 0.0) for r in results.values())}
        failed = [r for r in results.values() if r["status"] != "passed"]
        if failed:
            out["first_failure"] = failed[0]["message"][:2000]
        # Re-runs of an unchanged sample, workers warm: build and golden outputs cached.
        reruns = []
        for _ in range(3):
            t = time.monotonic()
            rid = cluster.submit(spec(0))
            r = cluster.wait([rid])[rid]
            reruns.append((time.monotonic() - t, r["status"], r["cache_hit"], r["duration_s"],
                           r["timings"].get("candidate_s")))
        out["reruns"] = reruns
        return out
    finally:
        cluster.stop()
        shutil.rmtree(cache, ignore_errors=True)


def baseline(k: int) -> list[float]:
    times = []
    for i in range(k):
        d = Path(tempfile.mkdtemp(prefix="ks-baseline-"))
        ref, cand = sample(i)
        (d / f"cand_{i}.cu").write_text(cand)
        (d / f"sample_{i}.py").write_text(
            BASELINE_FILE.replace("@REFERENCE@", ref).replace("@TEST@", TEST).replace("@I@", str(i))
            .replace("@COMPAT@", repr(COMPAT_DIR)))
        env = dict(os.environ, TORCH_EXTENSIONS_DIR=str(d / "ext"), TRITON_CACHE_DIR=str(d / "triton"))
        t = time.monotonic()
        out = subprocess.run([sys.executable, str(d / f"sample_{i}.py")], env=env, capture_output=True, text=True,
                             check=False)
        times.append(time.monotonic() - t)
        if out.returncode != 0 or "ok" not in out.stdout:
            print(f"baseline sample {i} FAILED:\n{out.stderr[-3000:]}")
        shutil.rmtree(d, ignore_errors=True)
    return times


def build_variants() -> None:
    """One small HIP+PyTorch source, four ways, side by side (4 of the host's cores)."""
    from concurrent.futures import ThreadPoolExecutor

    info = probe()
    _, cand = sample(999)
    d = Path(tempfile.mkdtemp(prefix="ks-bv-"))
    (d / "probe.cu").write_text(cand)
    code = (f"import time,torch;from torch.utils.cpp_extension import load;t=time.time();"
            f"load(name='probe',sources=[{str(d / 'probe.cu')!r}],extra_include_paths=[{COMPAT_DIR!r}]);"
            f"print(time.time()-t)")

    def plain_load() -> str:
        t = time.monotonic()
        out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, TORCH_EXTENSIONS_DIR=str(d / "ext")),
                             capture_output=True, text=True, check=False)
        return (f"torch.utils.cpp_extension.load, cold: {time.monotonic() - t:.1f} s wall incl. python+torch start "
                f"(load() itself {out.stdout.strip() or out.stderr[-300:]} s)")

    def ours(label: str, light: bool, extra: tuple[str, ...]) -> str:
        cache = tempfile.mkdtemp(prefix="ks-bv-cache-")
        r = build(source=Source("hip", cand + f"// {label}\n"), backend="cuda", info=info, cache_root=cache,
                  limits=StepLimits(timeout_s=600), extra_cflags=extra, light=light)
        shutil.rmtree(cache, ignore_errors=True)
        return f"direct nvcc, {label}: {r.wall_s:.1f} s wall, {r.cpu_s:.1f} CPU-s, ok={r.ok}"

    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(plain_load),
                   pool.submit(ours, "full torch/extension.h, host -O3", False, ()),
                   pool.submit(ours, "light torch/extension.h, host -O3 (default)", True, ()),
                   pool.submit(ours, "light torch/extension.h, host -O1", True, ("-Xcompiler", "-O1"))]
        for f in futures:
            print("build: " + f.result(), flush=True)
    shutil.rmtree(d, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=32)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--baseline", type=int, default=6)
    parser.add_argument("--build-variants", action="store_true")
    parser.add_argument("--skip-batch", action="store_true")
    args = parser.parse_args()
    info = probe()
    print(f"# verify_throughput on {platform.node()}: {info.get('device')}, {os.cpu_count()} cores, "
          f"torch {info.get('torch')}, triton {info.get('triton')}, {info.get('nvcc')}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    if args.build_variants:
        build_variants()
    if not args.skip_batch:
        res = cold_batch(args.samples, args.workers)
        print(f"cold batch: {res['n']} HIP candidates + Triton references, {args.workers} workers: "
              f"wall {res['wall']:.1f} s; outcomes {res['statuses']}")
        print(f"  sum build CPU-s {res['build_cpu']:.1f} / {res['cores']} cores + sum GPU-s {res['gpu']:.1f} "
              f"= ideal {res['ideal']:.1f} s; wall / ideal = {res['wall'] / res['ideal']:.2f} "
              f"(efficiency {100 * res['ideal'] / res['wall']:.0f}%); median build wall {res['build_wall']:.1f} s")
        if "first_failure" in res:
            print("  first failure: " + res["first_failure"])
        for i, (secs, status, hit, dur, cand) in enumerate(res["reruns"], 1):
            print(f"re-run {i} of an unchanged sample: {secs:.2f} s request -> verdict ({status}, cache hit={hit}; "
                  f"verify() {dur:.2f} s, of which the candidate's sandboxed step {cand} s)")
    if args.baseline:
        times = baseline(args.baseline)
        per = statistics.mean(times)
        print(f"baseline (fresh `python file.py` per sample, serial, cpp_extension.load): {args.baseline} samples, "
              f"{sum(times):.1f} s, {per:.1f} s per sample (min {min(times):.1f}, max {max(times):.1f})")
        if not args.skip_batch:
            print(f"  for {args.samples} samples that is ~{per * args.samples:.0f} s serial (extrapolated from "
                  f"{args.baseline}) vs {res['wall']:.1f} s here: {per * args.samples / res['wall']:.1f}x faster; "
                  f"per sample {per:.1f} s vs {res['wall'] / args.samples:.2f} s")


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    main()
