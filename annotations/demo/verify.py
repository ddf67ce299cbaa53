"""Verify the shipped demo samples with the real engine: `python -m annotations.demo.verify --backend cuda`.

Plain Python (no Django), like a GPU host's worker: reads the demo files, builds one
JobSpec per sample (reference, HIP candidate, wrapper, test) and prints each verdict.
On the cpu backend the candidate is left out by default (HIP cannot run there; the
reference, wrapper and test still must pass); --candidate-on-cpu asks for the
compile-only check instead. Exits 1 if any sample does not pass.
"""

from __future__ import annotations

import argparse
import sys

from annotations.demo import DemoSample, read_demo_samples
from pipeline.execution import JobSpec, Source, verify


def spec_for(demo: DemoSample, *, backend: str, with_candidate: bool) -> JobSpec:
    return JobSpec(
        task_id=demo.task_id,
        backend=backend,
        reference=Source(demo.reference_language, demo.artifact("reference").content),
        candidate=Source(demo.target_language, demo.artifact("candidate").content) if with_candidate else None,
        wrapper=Source("python", demo.artifact("wrapper").content),
        test=demo.artifact("test").content,
        entry_point=demo.entry_point,
        perf=backend != "cpu",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m annotations.demo.verify", description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("cpu", "cuda", "rocm"), default="cpu")
    parser.add_argument("--candidate-on-cpu", action="store_true")
    parser.add_argument("--only", default="", help="one task id, e.g. demo/row_softmax")
    parser.add_argument("-v", "--verbose", action="store_true", help="print each run's log")
    args = parser.parse_args(argv)
    with_candidate = args.backend != "cpu" or args.candidate_on_cpu
    failed = 0
    for demo in read_demo_samples():
        if args.only and demo.task_id != args.only:
            continue
        result = verify(spec_for(demo, backend=args.backend, with_candidate=with_candidate),
                        (lambda line: print("   ", line, flush=True)) if args.verbose else None)
        print(f"{result.summary()}  ({result.duration_s:.1f} s)", flush=True)
        for name, stage in result.stages.items():
            detail = stage.message or stage.skipped
            if detail:
                print(f"    {name}: {detail.splitlines()[0][:200]}")
        for caveat in result.caveats:
            print(f"    caveat: {caveat}")
        if result.status != "passed":
            failed += 1
            print(result.message[:3000])
            print(result.log[-4000:])
    print(f"{failed} sample(s) did not pass" if failed else "all demo samples passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
