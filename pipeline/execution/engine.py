"""verify(spec) -> result: build, run the reference and the candidate sandboxed, compare, time.

Order of work for one sample:
1. check this host can run the backend (else: error, with the reason);
2. build native sources (reference and candidate in parallel; cached);
3. run the reference side in its own sandboxed step -> golden outputs (cached per
   reference, test, seed, backend and toolchain, so an unchanged sample re-runs only
   the candidate);
4. run the candidate side in its own sandboxed step with the same seed;
5. compare in this (trusted) process; 6. speedup from both sides' timings.
GPU work inside a step holds a per-device lock, so builds overlap while timings
are never taken with two samples on one GPU.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from pipeline.execution import build as build_mod
from pipeline.execution.compare import compare_outputs, load_outputs
from pipeline.execution.sandbox import (
    CANCELLED as STEP_CANCELLED,
)
from pipeline.execution.sandbox import (
    SIGNALED,
    TIMED_OUT,
    StepLimits,
    private_dir,
    run_step,
    scrubbed_env,
)
from pipeline.execution.spec import (
    CANCELLED,
    CRASHED,
    ERROR,
    FAILED,
    PASSED,
    TIMEOUT,
    JobSpec,
    Source,
    StageResult,
    VerifyResult,
)
from pipeline.execution.toolchain import (
    BackendUnavailable,
    package_root,
    probe,
    require_backend,
    toolchain_record,
)

GOLD_SEPARATOR = "#" * 146
SPEEDUP_FLAG = 10.0
LOG_CAP = 256 * 1024
HARNESS_EXIT_SAMPLE_FAILED = 3


def default_cache_root() -> str:
    root = os.environ.get("KS_CACHE_DIR") or os.path.join(tempfile.gettempdir(), "kernel-studio-cache")
    os.makedirs(root, exist_ok=True)
    return root


class _Log:
    """Collects the run's log (capped) and forwards each line as it is produced."""

    def __init__(self, sink: Callable[[str], None] | None) -> None:
        self.sink = sink
        self.lines: list[str] = []
        self.size = 0
        self.dropped = 0
        self.lock = threading.Lock()

    def __call__(self, line: str) -> None:
        with self.lock:
            if self.size < LOG_CAP:
                self.lines.append(line)
                self.size += len(line) + 1
            else:
                self.dropped += 1
        if self.sink is not None:
            try:
                self.sink(line)
            except Exception:  # a broken log sink must not fail the verification
                self.sink = None

    def prefixed(self, prefix: str) -> Callable[[str], None]:
        return lambda line: self(f"[{prefix}] {line}")

    def text(self) -> str:
        extra = f"\n[... {self.dropped} more log lines not kept ...]" if self.dropped else ""
        return "\n".join(self.lines) + extra


@dataclass
class SideRun:
    side: str
    status: str  # passed | failed | timeout | crashed | cancelled | error
    stage: str = ""
    message: str = ""
    outputs: Any = None
    perf: dict[str, Any] | None = None
    perf_skipped: str = ""
    style: str = ""
    exit_code: int | None = None
    signal_name: str = ""
    wall_s: float = 0.0
    gpu_s: float = 0.0
    test_s: float = 0.0
    cached: bool = False
    events: list[dict[str, Any]] = field(default_factory=list)


def split_gold_file(code: str) -> tuple[str, str]:
    """A TritonBench gold file is code, a line of 146 '#', then the test."""
    lines = code.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.strip() == GOLD_SEPARATOR:
            return "".join(lines[:i]), "".join(lines[i + 1 :])
    return code, ""


def _step_limits(spec: JobSpec, *, build: bool = False) -> StepLimits:
    lim = spec.limits
    return StepLimits(
        timeout_s=lim.build_timeout_s if build else lim.timeout_s,
        cpu_s=lim.cpu_s,
        file_size_mb=lim.file_size_mb,
        nproc=lim.nproc,
        output_head_bytes=lim.output_head_bytes,
        output_tail_bytes=lim.output_tail_bytes,
    )


def _gpu_lock_path(backend: str, cache_root: str) -> str | None:
    if backend == "cpu":
        return None
    devices = os.environ.get("CUDA_VISIBLE_DEVICES") or os.environ.get("HIP_VISIBLE_DEVICES") or "all"
    os.makedirs(os.path.join(cache_root, "locks"), exist_ok=True)
    return os.path.join(cache_root, "locks", f"gpu-{backend}-{devices.replace(',', '_')}.lock")


def _read_events(path: str) -> list[dict[str, Any]]:
    events = []
    try:
        with open(path) as fh:
            for line in fh:
                try:
                    events.append(json.loads(line))
                except ValueError:
                    continue  # a torn last line after a crash
    except OSError:
        pass
    return events


def _stage_at_crash(events: list[dict[str, Any]]) -> str:
    names = [e.get("event") for e in events]
    if "outputs" in names:
        return "perf"
    return "call"


def _run_side(
    side: str,
    *,
    spec: JobSpec,
    code: str | None,
    ext: build_mod.BuildResult | None,
    wrapper_py: str | None,
    test: str,
    info: dict[str, Any],
    cache_root: str,
    log: _Log,
    cancel: threading.Event | None,
    keep_outputs_in: str | None = None,
) -> SideRun:
    with private_dir(prefix=f"ks-{side}-") as work:
        job: dict[str, Any] = {
            "side": side,
            "backend": spec.backend,
            "entry_point": spec.entry_point,
            "style": spec.test_style,
            "seed": spec.seed,
            "perf": spec.perf and spec.backend != "cpu",
            "perf_repeats": spec.perf_repeats,
            "events_path": os.path.join(work, ".events.jsonl"),
            "outputs_path": os.path.join(work, "outputs.pt"),
            "test_path": os.path.join(work, "test_code.py"),
            "gpu_lock": _gpu_lock_path(spec.backend, cache_root),
        }
        with open(job["test_path"], "w") as fh:
            fh.write(test)
        if code is not None:
            job["code_path"] = os.path.join(work, f"{side}.py")
            with open(job["code_path"], "w") as fh:
                fh.write(code)
        if wrapper_py is not None:
            job["wrapper_path"] = os.path.join(work, "wrapper.py")
            with open(job["wrapper_path"], "w") as fh:
                fh.write(wrapper_py)
        if ext is not None:
            job["ext_path"], job["ext_name"] = ext.path, ext.name
        job_path = os.path.join(work, ".job.json")
        with open(job_path, "w") as fh:
            json.dump(job, fh)
        extra_env = {
            "PYTHONPATH": package_root(),
            "TRITON_CACHE_DIR": os.path.join(cache_root, "triton"),
            "OMP_NUM_THREADS": os.environ.get("KS_STEP_THREADS", "4"),
        }
        if spec.backend == "cpu":
            extra_env["TRITON_INTERPRET"] = "1"
        log(f"[{side}] sandboxed step started ({'compiled extension' if ext else 'Python/Triton source'}, "
            f"timeout {spec.limits.timeout_s:g} s)")
        step = run_step(
            [sys.executable, "-m", "pipeline.execution.harness", job_path],
            cwd=work,
            env=scrubbed_env(extra_env, home=work),
            limits=_step_limits(spec),
            on_line=log.prefixed(side),
            cancel=cancel,
        )
        events = _read_events(job["events_path"])
        run = SideRun(side=side, status=ERROR, exit_code=step.exit_code, signal_name=step.signal_name,
                      wall_s=step.wall_s, events=events)
        for ev in events:
            if ev.get("event") in ("done", "failed"):
                run.gpu_s = float(ev.get("gpu_s") or 0.0)
            if ev.get("event") == "outputs":
                run.style, run.test_s = ev.get("style", ""), float(ev.get("test_s") or 0.0)
            if ev.get("event") == "perf":
                run.perf = {k: ev[k] for k in ("ms", "per_call_ms", "calls", "repeats")}
            if ev.get("event") == "perf_skipped":
                run.perf_skipped = ev.get("reason", "")
        failed = next((e for e in events if e.get("event") == "failed"), None)
        if step.status == TIMED_OUT:
            run.status, run.stage = TIMEOUT, _stage_at_crash(events)
            run.message = f"{side} timed out after {spec.limits.timeout_s:g} s (whole process group killed)"
            if step.signal_name == "SIGXCPU":
                run.message = f"{side} used up its CPU time limit ({spec.limits.cpu_s} s)"
        elif step.status == STEP_CANCELLED:
            run.status, run.message = CANCELLED, f"cancelled while the {side} was running"
        elif step.status == SIGNALED:
            run.status, run.stage = CRASHED, _stage_at_crash(events)
            run.message = f"{side} crashed with {step.signal_name}" + _tail_hint(step.output)
        elif failed is not None:
            run.status, run.stage, run.message = FAILED, failed.get("stage", "call"), failed.get("message", "")
        elif step.exit_code != 0:
            run.status, run.stage = FAILED, _stage_at_crash(events)
            run.message = f"{side} exited with status {step.exit_code}" + _tail_hint(step.output)
        elif not any(e.get("event") == "done" for e in events):
            run.status, run.stage = FAILED, "call"
            run.message = f"{side} exited before finishing (did the code call sys.exit(0) or os._exit?)"
        else:
            run.status = PASSED
            try:
                if keep_outputs_in:
                    os.makedirs(keep_outputs_in, exist_ok=True)
                    shutil.copy(job["outputs_path"], os.path.join(keep_outputs_in, "outputs.pt"))
                run.outputs = load_outputs(job["outputs_path"])
            except Exception as exc:  # weights_only refused something: never trust it
                run.status, run.stage = FAILED, "call"
                run.message = f"the {side}'s outputs could not be read safely: {exc}"
        return run


def _tail_hint(output: str, lines: int = 6) -> str:
    tail = [ln for ln in output.strip().splitlines() if ln.strip()][-lines:]
    return (":\n" + "\n".join(tail)) if tail else ""


def _compiler_errors(log: str, limit: int = 30) -> str:
    lines = log.splitlines()
    errs = [ln for ln in lines if "error" in ln.lower()]
    picked = errs[:limit] if errs else lines[-limit:]
    return "\n".join(picked)


def _native_source(src: Source, wrapper: Source | None) -> Source:
    if wrapper is not None and wrapper.is_native:
        return Source(language=src.language, code=src.code.rstrip() + "\n\n// ---- wrapper ----\n" + wrapper.code)
    return src


def _golden_key(spec: JobSpec, ref_code: str, test: str, ext: build_mod.BuildResult | None,
                toolchain: dict[str, str]) -> str:
    payload = {
        "ref": ref_code,
        "ext": ext.name if ext else "",
        "wrapper": spec.wrapper.code if spec.wrapper else "",
        "test": test,
        "entry": spec.entry_point,
        "seed": spec.seed,
        "style": spec.test_style,
        "backend": spec.backend,
        "perf": spec.perf,
        "repeats": spec.perf_repeats,
        "toolchain": toolchain,
        "format": 1,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def verify(
    spec: JobSpec,
    log: Callable[[str], None] | None = None,
    *,
    cancel: threading.Event | None = None,
    cache_root: str | None = None,
    info: dict[str, Any] | None = None,
    use_golden_cache: bool = True,
) -> VerifyResult:
    """Verify one sample. Never raises for anything the sample does; returns a result."""
    t_start = time.monotonic()
    logger = _Log(log)
    result = VerifyResult(task_id=spec.task_id, backend=spec.backend, status=ERROR)
    try:
        _verify(spec, result, logger, cancel=cancel, cache_root=cache_root or default_cache_root(), info=info,
                use_golden_cache=use_golden_cache)
    except BackendUnavailable as exc:
        result.status, result.message = ERROR, str(exc)
        logger(f"[worker] {exc}")
    except Exception as exc:  # infrastructure: our bug or the host's, never the sample's
        result.status, result.message = ERROR, f"infrastructure error: {type(exc).__name__}: {exc}"
        logger(f"[worker] {result.message}")
    result.duration_s = time.monotonic() - t_start
    result.log = logger.text()
    logger(f"[worker] verdict: {result.summary()} in {result.duration_s:.1f} s")
    return result


def _verify(
    spec: JobSpec,
    result: VerifyResult,
    log: _Log,
    *,
    cancel: threading.Event | None,
    cache_root: str,
    info: dict[str, Any] | None,
    use_golden_cache: bool,
) -> None:
    info = require_backend(spec.backend, info if info is not None else probe())
    result.host = info.get("host", "")
    result.device = info.get("device", "")
    result.toolchain = toolchain_record(info, spec.backend)
    log(f"[worker] {spec.task_id} on {spec.backend} at {result.host} ({result.device})")
    ref_code, test = spec.reference.code, spec.test
    if not test.strip():
        ref_code, test = split_gold_file(ref_code)
    cand = spec.candidate
    wrapper_py = spec.wrapper.code if spec.wrapper is not None and not spec.wrapper.is_native else None
    natives = [s for s in (spec.reference, cand) if s is not None and s.is_native]
    if spec.backend == "cuda" and any(s.language == "hip" for s in natives):
        result.emulated = True
        result.caveats.append(
            "HIP emulated on an NVIDIA GPU through Kernel Studio's hip_runtime.h: warp size is 32 here, "
            "64 on AMD CDNA GPUs; warp-level code (shuffles, ballots, 64-lane assumptions) may behave differently."
        )
    if spec.backend == "rocm" and any(s.language == "cuda" for s in natives):
        raise BackendUnavailable("CUDA sources need the cuda backend (no hipify step on ROCm hosts)")
    stages = result.stages
    # --- 2. builds ---------------------------------------------------------
    ext: dict[str, build_mod.BuildResult | None] = {"reference": None, "candidate": None}
    compile_only: dict[str, bool] = {}
    jobs: dict[str, Source] = {}
    builds: dict[str, build_mod.BuildResult] = {}
    for side, src in (("reference", spec.reference), ("candidate", cand)):
        if src is not None and src.is_native:
            jobs[side] = _native_source(src, spec.wrapper)
            compile_only[side] = spec.backend == "cpu" and src.language in ("hip", "cuda")
    if jobs:
        t_build = time.monotonic()
        with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
            futures = {
                side: pool.submit(
                    _build_one, src, spec=spec, info=info, cache_root=cache_root, log=log,
                    compile_only=compile_only[side], cancel=cancel,
                )
                for side, src in jobs.items()
            }
            builds = {side: f.result() for side, f in futures.items()}
        result.timings["build_s"] = round(time.monotonic() - t_build, 3)
        result.timings["build_cpu_s"] = round(sum(b.cpu_s for b in builds.values() if not b.cache_hit), 3)
        result.timings["build_cache_hit"] = all(b.cache_hit for b in builds.values())
        for side, b in builds.items():
            if not b.ok:
                _record_build_failure(result, side, b, has_candidate=cand is not None)
                return
            ext[side] = None if b.compile_only else b
    if cancel is not None and cancel.is_set():
        result.status, result.message = CANCELLED, "cancelled before running"
        return
    # --- 3. reference -----------------------------------------------------------
    if compile_only.get("reference"):
        stages["call"] = StageResult(ok=None, skipped=f"cpu backend: the {spec.reference.language} reference "
                                     "compiled, but running it needs a GPU backend")
        result.status = ERROR
        result.message = "not verified: the cpu backend can only compile-check GPU sources; use cuda or rocm"
        return
    ref = _reference_side(spec, ref_code=None if spec.reference.is_native else ref_code, test=test,
                          ext=ext["reference"], wrapper_py=wrapper_py, info=info, cache_root=cache_root, log=log,
                          cancel=cancel, use_cache=use_golden_cache, toolchain=result.toolchain)
    result.timings["reference_s"] = round(ref.wall_s, 3)
    result.timings["gpu_s"] = round(ref.gpu_s, 3) if not ref.cached else 0.0
    result.timings["reference_cached"] = ref.cached
    result.cache_hit = bool(result.timings.get("build_cache_hit", True)) and ref.cached
    if ref.status != PASSED:
        _record_side_failure(result, ref, reference=True, has_candidate=cand is not None)
        return
    if cand is None:
        stages["call"] = StageResult(ok=True, message=f"reference ran ({ref.style} style, {_count(ref.outputs)} outputs)",
                                     seconds=ref.test_s)
        stages["exe"] = StageResult(ok=None, skipped="no candidate: nothing to compare with the reference")
        stages["perf"] = StageResult(ok=None, skipped="no candidate to time")
        result.status = PASSED
        return
    # --- 4. candidate -----------------------------------------------------------
    if compile_only.get("candidate"):
        b = builds["candidate"]
        stages["call"] = StageResult(
            ok=None,
            skipped=f"cpu backend: compile-only check passed with {b.compiler}; the test was not run "
            "(running HIP/CUDA needs the cuda or rocm backend)",
        )
        stages["exe"] = StageResult(ok=None, skipped="cpu backend cannot run a HIP/CUDA candidate")
        stages["perf"] = StageResult(ok=None, skipped="cpu backend cannot run a HIP/CUDA candidate")
        result.status = ERROR
        result.message = (f"not verified: the candidate compiles ({b.compiler}) and the reference runs, "
                          "but the cpu backend cannot run HIP/CUDA; verify on cuda or rocm")
        return
    can = _run_side("candidate", spec=spec, code=None if cand.is_native else cand.code, ext=ext["candidate"],
                    wrapper_py=wrapper_py, test=test, info=info, cache_root=cache_root, log=log, cancel=cancel)
    result.timings["candidate_s"] = round(can.wall_s, 3)
    result.timings["gpu_s"] = round(result.timings.get("gpu_s", 0.0) + can.gpu_s, 3)
    if can.status != PASSED:
        _record_side_failure(result, can, reference=False, has_candidate=True)
        return
    stages["call"] = StageResult(ok=True, message=f"candidate ran ({can.style} style)", seconds=can.test_s)
    # --- 5. compare -------------------------------------------------------------
    t_cmp = time.monotonic()
    report = compare_outputs(ref.outputs, can.outputs, spec.tolerances)
    stages["exe"] = StageResult(ok=report.ok, message=report.message, seconds=round(time.monotonic() - t_cmp, 3))
    if not report.ok:
        result.status, result.failed_stage = FAILED, "exe"
        result.message = "outputs differ from the reference:\n" + report.message
        for line in report.message.splitlines():
            log(f"[compare] {line}")
        stages["perf"] = StageResult(ok=None, skipped="not timed: the outputs are wrong")
        return
    log(f"[compare] {report.message}")
    # --- 6. perf ----------------------------------------------------------------
    _record_perf(result, spec, ref, can, log)
    result.status = PASSED if stages["perf"].ok is not False else FAILED
    if result.status == FAILED:
        result.failed_stage = "perf"
        result.message = stages["perf"].message


def _count(outputs: Any) -> int:
    return len(outputs) if isinstance(outputs, dict) else 0


def _build_one(src: Source, *, spec: JobSpec, info: dict[str, Any], cache_root: str, log: _Log,
               compile_only: bool, cancel: threading.Event | None) -> build_mod.BuildResult:
    res = build_mod.build(
        source=src, backend=spec.backend, info=info, cache_root=os.path.join(cache_root, "builds"),
        limits=_step_limits(spec, build=True), compile_only=compile_only, extra_cflags=spec.extra_cflags,
        on_line=log.prefixed("build"), cancel=cancel,
    )
    if (not res.ok and res.status == "missing" and compile_only and src.language == "hip"
            and shutil.which("hipcc")):
        # No nvcc: Debian's hipcc can still compile-check plain HIP for an AMD target.
        res = _hipcc_compile_check(src, spec=spec, log=log, cancel=cancel)
    if res.ok:
        what = "compile-only check" if res.compile_only else "build"
        log(f"[build] {what} ok ({res.compiler}, {res.wall_s:.1f} s{', cached' if res.cache_hit else ''})")
    return res


def _hipcc_compile_check(src: Source, *, spec: JobSpec, log: _Log, cancel: threading.Event | None
                         ) -> build_mod.BuildResult:
    with private_dir(prefix="ks-hipcc-") as work:
        path = os.path.join(work, "source.hip")
        with open(path, "w") as fh:
            fh.write(src.code)
        argv = ["hipcc", "--offload-arch=gfx90a", "-std=c++17", "-c", path, "-o", os.path.join(work, "source.o")]
        out = run_step(argv, cwd=work, env=scrubbed_env({"HIP_PLATFORM": "amd"}, home=work),
                       limits=_step_limits(spec, build=True), on_line=log.prefixed("build"), cancel=cancel)
    return build_mod.BuildResult(ok=out.ok, status=out.status, log=out.output, compiler="hipcc (gfx90a)",
                                 command=" ".join(argv), wall_s=out.wall_s, cpu_s=out.cpu_s,
                                 exit_code=out.exit_code, signal_name=out.signal_name, compile_only=True)


def _record_build_failure(result: VerifyResult, side: str, b: build_mod.BuildResult, *, has_candidate: bool) -> None:
    stages = result.stages
    if b.status == "missing":
        result.status, result.message = ERROR, f"cannot build the {side}: {b.log}"
        return
    if b.status == TIMED_OUT:
        status, msg = TIMEOUT, f"building the {side} timed out"
    elif b.status == SIGNALED:
        status, msg = CRASHED, f"the compiler crashed on the {side} ({b.signal_name})"
        result.signal_name = b.signal_name
    elif b.status == STEP_CANCELLED:
        result.status, result.message = CANCELLED, "cancelled while building"
        return
    else:
        status, msg = FAILED, f"the {side} does not compile ({b.compiler}):\n{_compiler_errors(b.log)}"
    result.exit_code = b.exit_code
    if side == "reference" and has_candidate:
        result.status, result.message = ERROR, "the reference is broken, so the candidate cannot be judged: " + msg
        stages["call"] = StageResult(ok=None, skipped="reference does not build")
        return
    stages["call"] = StageResult(ok=False, message=msg, seconds=round(b.wall_s, 3))
    result.status, result.failed_stage, result.message = status, "call", msg


def _record_side_failure(result: VerifyResult, run: SideRun, *, reference: bool, has_candidate: bool) -> None:
    result.exit_code, result.signal_name = run.exit_code, run.signal_name
    stages = result.stages
    if run.status == CANCELLED:
        result.status, result.message = CANCELLED, run.message
        return
    if reference and has_candidate:
        result.status = ERROR
        result.message = ("the reference failed, so the candidate cannot be judged "
                          f"({run.status} at {run.stage or 'call'}): {run.message}")
        stages["call"] = StageResult(ok=None, skipped="the reference failed")
        return
    stage = run.stage or "call"
    stages[stage] = StageResult(ok=False, message=run.message, seconds=round(run.wall_s, 3))
    if stage in ("exe", "perf") and stages["call"].ok is None:
        stages["call"] = StageResult(ok=True, message="ran until its own check failed")
    result.status, result.failed_stage, result.message = run.status, stage, run.message


def _reference_side(spec: JobSpec, *, ref_code: str | None, test: str, ext: build_mod.BuildResult | None,
                    wrapper_py: str | None, info: dict[str, Any], cache_root: str, log: _Log,
                    cancel: threading.Event | None, use_cache: bool, toolchain: dict[str, str]) -> SideRun:
    key = _golden_key(spec, ref_code or "", test, ext, toolchain)
    gold_dir = os.path.join(cache_root, "golden", key[:2], key)
    meta_path = os.path.join(gold_dir, "meta.json")
    if use_cache and os.path.exists(meta_path):
        try:
            with open(meta_path) as fh:
                meta = json.load(fh)
            outputs = load_outputs(os.path.join(gold_dir, "outputs.pt"))
            log(f"[reference] golden outputs from cache {key[:12]} (made {meta.get('made_at', '?')})")
            return SideRun(side="reference", status=PASSED, outputs=outputs, perf=meta.get("perf"),
                           perf_skipped=meta.get("perf_skipped", ""), style=meta.get("style", ""), cached=True,
                           test_s=float(meta.get("test_s") or 0.0))
        except Exception as exc:
            log(f"[reference] golden cache entry unreadable ({exc}); running the reference")
    tmp = tempfile.mkdtemp(prefix="gold-", dir=_ensure(os.path.join(cache_root, "golden", "tmp")))
    try:
        run = _run_side("reference", spec=spec, code=ref_code, ext=ext, wrapper_py=wrapper_py, test=test, info=info,
                        cache_root=cache_root, log=log, cancel=cancel, keep_outputs_in=tmp)
        if run.status == PASSED and use_cache:
            with open(os.path.join(tmp, "meta.json"), "w") as fh:
                json.dump({"perf": run.perf, "perf_skipped": run.perf_skipped, "style": run.style,
                           "test_s": run.test_s, "made_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, fh)
            os.makedirs(os.path.dirname(gold_dir), exist_ok=True)
            # OSError: a concurrent worker stored the same golden outputs first.
            with contextlib.suppress(OSError):
                os.rename(tmp, gold_dir)
        return run
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _ensure(path: str) -> str:
    os.makedirs(path, exist_ok=True)
    return path


def _record_perf(result: VerifyResult, spec: JobSpec, ref: SideRun, can: SideRun, log: _Log) -> None:
    stages = result.stages
    if not spec.perf:
        stages["perf"] = StageResult(ok=None, skipped="perf not requested for this run")
        return
    if spec.backend == "cpu":
        stages["perf"] = StageResult(ok=None, skipped="cpu backend: Triton interpreter timings say nothing about "
                                     "GPU speed, so perf is not run")
        return
    if not ref.perf or not can.perf:
        reason = can.perf_skipped or ref.perf_skipped or "no timings were taken"
        stages["perf"] = StageResult(ok=None, skipped=reason)
        return
    n = min(int(ref.perf["calls"]), int(can.perf["calls"]))
    t_ref = sum(ref.perf["per_call_ms"][:n])
    t_can = sum(can.perf["per_call_ms"][:n])
    result.timings.update(ref_ms=round(t_ref, 6), candidate_ms=round(t_can, 6), perf_calls=n,
                          perf_repeats=spec.perf_repeats, ref_timing_cached=ref.cached)
    if t_can <= 0:
        stages["perf"] = StageResult(ok=False, message="candidate timing is zero: nothing was measured")
        return
    speedup = t_ref / t_can
    result.speedup = round(speedup, 4)
    msg = (f"speedup {speedup:.2f}x (reference {t_ref:.4f} ms, candidate {t_can:.4f} ms; median of "
           f"{spec.perf_repeats} runs over {n} recorded calls{', reference timing cached' if ref.cached else ''})")
    if speedup > SPEEDUP_FLAG:
        result.speedup_flagged = True
        result.caveats.append(f"speedup {speedup:.1f}x is above {SPEEDUP_FLAG:g}x: check that the candidate does "
                              "the same work (KernelBench flags these as suspicious)")
    stages["perf"] = StageResult(ok=True, message=msg)
    log(f"[perf] {msg}")
