"""Check that an extracted unit compiles, with nvcc or hipcc, inside the sandbox.

Units are built from untrusted source trees, so the compiler runs through
`pipeline.execution.sandbox.run_step`: own session, timeout, resource limits,
scrubbed environment, private directory, capped output. Compile only (`-c`):
nothing extracted is ever executed here.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

from pipeline.execution.sandbox import StepLimits, private_dir, run_step, scrubbed_env
from pipeline.extraction.model import CompileResult
from pipeline.extraction.toolchain import Compiler, find_hipcc, find_nvcc

HIP_ARCH = "gfx90a"
MESSAGE_CAP = 4000


def compiler_for(language: str) -> Compiler | None:
    # HIP units need hipcc (nvcc has no HIP runtime); CUDA units need nvcc.
    return find_hipcc() if language == "hip" else find_nvcc()


def compile_argv(compiler: Compiler, source: str, output: str) -> list[str]:
    if compiler.kind == "hipcc":
        return [compiler.path, f"--offload-arch={HIP_ARCH}", "-std=c++17", "-c", source, "-o", output]
    return [compiler.path, "-std=c++17", "-x", "cu", "-c", source, "-o", output]


def _cache_path(cache_dir: str | None, compiler: Compiler, unit: str) -> Path | None:
    if not cache_dir:
        return None
    key = hashlib.sha256(json.dumps([compiler.label, compiler.kind, unit, HIP_ARCH]).encode()).hexdigest()
    return Path(cache_dir) / f"{key}.json"


def check_unit(
    unit: str, language: str, *, timeout_s: float = 180.0, cache_dir: str | None = None
) -> CompileResult:
    """Compile `unit` once; results are cached by unit text and compiler version."""
    compiler = compiler_for(language)
    if compiler is None:
        wanted = "hipcc" if language == "hip" else "nvcc"
        return CompileResult(
            compiler=None, compiles=None, message=f"not checked: no {wanted} found on this host"
        )
    cached = _cache_path(cache_dir, compiler, unit)
    if cached is not None and cached.is_file():
        try:
            data = json.loads(cached.read_text())
            return CompileResult(**data)
        except (ValueError, TypeError, OSError):
            pass
    filename = "unit.hip" if language == "hip" else "unit.cu"
    started = time.monotonic()
    with private_dir("ks-extract-cc-") as work:
        src = os.path.join(work, filename)
        with open(src, "w") as fh:
            fh.write(unit)
        argv = compile_argv(compiler, filename, "unit.o")
        outcome = run_step(
            argv,
            cwd=work,
            # Debian's hipcc picks NVIDIA when nvcc is on PATH; units for HIP are AMD.
            env=scrubbed_env({"HIP_PLATFORM": "amd"} if compiler.kind == "hipcc" else None, home=work),
            limits=StepLimits(
                timeout_s=timeout_s,
                cpu_s=int(timeout_s) * 2,
                file_size_mb=256,
                output_head_bytes=16 * 1024,
                output_tail_bytes=4 * 1024,
            ),
        )
    seconds = time.monotonic() - started
    message = outcome.output.replace(work + "/", "").strip()
    if outcome.status == "timeout":
        message = f"compiler timed out after {timeout_s:.0f} s\n{message}"
    elif outcome.status == "signaled":
        message = f"compiler killed by {outcome.signal_name}\n{message}"
    if len(message) > MESSAGE_CAP:
        message = message[:MESSAGE_CAP] + "\n[... truncated ...]"
    result = CompileResult(
        compiler=compiler.label,
        compiles=outcome.ok,
        message=message or ("compiled" if outcome.ok else f"exit code {outcome.exit_code}"),
        command=" ".join(os.path.basename(a) if a == compiler.path else a for a in argv),
        seconds=round(seconds, 2),
    )
    if cached is not None and outcome.status in ("exited",):
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            tmp = cached.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(result.__dict__))
            os.replace(tmp, cached)
        except OSError:
            pass
    return result
