"""End to end on an NVIDIA GPU host: Triton references and HIP candidates through Redis and real workers.

Run with bench/gpu_e2e.sh. Prints one line per run and the re-run (cache hit) time.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time

from gpu_common import Cluster, demo_samples, first_line, spec_for, stage_marks

WRONG_FROM = "out[i] = x[i] + y[i];"
WRONG_TO = "out[i] = (i == 7) ? x[i] : x[i] + y[i];  // deliberately wrong at element 7"
CRASH_FROM = "torch::Tensor kernel_function(torch::Tensor x, torch::Tensor y) {"
CRASH_TO = CRASH_FROM + "\n    if (x.numel() > 0) { volatile int* p = nullptr; *p = 42; }  // deliberate host crash"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=min(8, os.cpu_count() or 1))
    args = parser.parse_args()
    samples = demo_samples()
    cache = tempfile.mkdtemp(prefix="ks-e2e-cache-")
    cluster = Cluster(workers=args.workers, queue="gpu-cuda", cache_dir=cache)
    print(f"# gpu_e2e on {platform.node()}, {os.cpu_count()} cores, {args.workers} workers, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    try:
        jobs: list[tuple[str, int]] = []
        t0 = time.monotonic()
        for s in samples:
            jobs.append((f"{s['name']}: Triton reference", cluster.submit(spec_for(f"demo/{s['name']}", s, candidate=None))))
            jobs.append((f"{s['name']}: HIP candidate", cluster.submit(spec_for(f"demo/{s['name']}", s,
                                                                                  candidate=s["candidate"]))))
        add = next(s for s in samples if s["name"] == "vector_add")
        assert WRONG_FROM in add["candidate"] and CRASH_FROM in add["candidate"]
        jobs.append(("vector_add: wrong HIP (element 7)", cluster.submit(
            spec_for("demo/vector_add-wrong", add, candidate=add["candidate"].replace(WRONG_FROM, WRONG_TO)))))
        jobs.append(("vector_add: crashing HIP (null write)", cluster.submit(
            spec_for("demo/vector_add-crash", add, candidate=add["candidate"].replace(CRASH_FROM, CRASH_TO)))))
        results = cluster.wait([rid for _, rid in jobs])
        wall = time.monotonic() - t0
        print(f"{'run':42} {'status':8} {'stages':28} {'speedup':>8} {'build s':>8} {'total s':>8}  message")
        for label, rid in jobs:
            r = results[rid]
            sp = f"{r['speedup']:.2f}x" if r.get("speedup") else "-"
            build = r["timings"].get("build_s")
            print(f"{label:42} {r['status']:8} {stage_marks(r):28} {sp:>8} "
                  f"{build if build is not None else '-':>8} {r['duration_s']:8.1f}  "
                  f"{r['signal_name'] + ' ' if r['signal_name'] else ''}{first_line(r['message'] or r['stages']['exe']['message'])}")
        print(f"# cold batch of {len(jobs)} runs: {wall:.1f} s wall")
        some = results[jobs[1][1]]
        print(f"# device: {some['device']}; toolchain: {some['toolchain']}")
        print(f"# emulated: {some['emulated']}; caveats: {some['caveats']}")
        wrong = results[jobs[-2][1]]
        print("# the wrong candidate's exe message:\n" + wrong["stages"]["exe"]["message"])
        # Re-run of an unchanged sample: build and golden outputs come from the cache.
        for i in range(3):
            t = time.monotonic()
            rid = cluster.submit(spec_for("demo/vector_add", add, candidate=add["candidate"]))
            r = cluster.wait([rid])[rid]
            print(f"# re-run {i + 1} of demo/vector_add (cache hit={r['cache_hit']}): "
                  f"{time.monotonic() - t:.2f} s from request to verdict, status {r['status']}, "
                  f"speedup {r.get('speedup')}")
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
