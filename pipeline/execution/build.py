"""Build native sources (HIP, CUDA, C++) into PyTorch extension modules, with a cache.

The compiler is called directly (nvcc, hipcc or g++ with the flags
`torch.utils.cpp_extension` would use) rather than through
`cpp_extension.load`: that saves a Python + torch start per build and lets the
cache key be exactly what decides the output.

Cache: `<root>/<key[:2]>/<key>/` holds `<name>.so`, `build.log` and `meta.json`, where
key = sha256(sources, compiler argv, toolchain versions, the compatibility header).
Safe under concurrent workers: one builder per key holds an flock on
`<root>/locks/<key>.lock` (others wait, then find the result), and a build happens in
a private directory that is renamed into place only when complete. Definitive
compile errors are cached too (same inputs, same errors); timeouts and crashes are not.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

from pipeline.execution.sandbox import EXITED, StepLimits, run_step, scrubbed_env
from pipeline.execution.spec import Source

COMPAT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hip")
# A light <torch/extension.h> (see the header): tried first, the real one if the source needs more.
LIGHT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "light")
# Errors that mean "the light header lacks a declaration", not "the source is wrong".
_LIGHT_MISS = re.compile(r'(namespace "(torch|at|c10)[^"]*" has no member|is not a member of .(torch|at|c10)\b)')
BUILD_FORMAT = 1  # bump when the cache layout or the command lines change meaning


@dataclass
class BuildResult:
    ok: bool
    status: str  # exited | signaled | timeout | cancelled
    path: str = ""  # the .so (empty for compile-only or failure)
    name: str = ""  # the Python module name (TORCH_EXTENSION_NAME)
    log: str = ""
    compiler: str = ""
    command: str = ""
    cache_hit: bool = False
    wall_s: float = 0.0
    cpu_s: float = 0.0
    exit_code: int | None = None
    signal_name: str = ""
    compile_only: bool = False


def _compat_sha() -> str:
    h = hashlib.sha256()
    for root, _, files in sorted(os.walk(COMPAT_DIR)):
        for f in sorted(files):
            with open(os.path.join(root, f), "rb") as fh:
                h.update(f.encode() + fh.read())
    return h.hexdigest()


def _light_sha() -> str:
    with open(os.path.join(LIGHT_DIR, "torch", "extension.h"), "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def _torch_flags(info: dict[str, Any], name: str, light: bool = False) -> list[str]:
    flags = [f"-I{LIGHT_DIR}"] if light else []
    flags += [f"-I{p}" for p in info.get("include_paths", [])]
    flags.append(f"-I{info['python_include']}")
    flags += [
        f"-DTORCH_EXTENSION_NAME={name}",
        "-DTORCH_API_INCLUDE_EXTENSION_H",
        f"-D_GLIBCXX_USE_CXX11_ABI={info.get('cxx11_abi', 1)}",
        *info.get("pybind_abi_flags", []),
    ]
    return flags


def _link_flags(info: dict[str, Any], libs: list[str]) -> list[str]:
    out = []
    for p in info.get("library_paths", []):
        out += [f"-L{p}", f"-Wl,-rpath,{p}"]
    return out + [f"-l{lib}" for lib in libs]


def compiler_argv(
    *, language: str, backend: str, info: dict[str, Any], name: str, src: str, out: str,
    compile_only: bool, extra: tuple[str, ...] = (), light: bool = False,
) -> tuple[str, list[str]]:
    """The compiler and argv for one source; `name`/`src`/`out` may be placeholders."""
    torch_flags = _torch_flags(info, name, light)
    base_libs = ["c10", "torch", "torch_cpu", "torch_python"]
    if language == "cpp":
        argv = ["g++", "-std=c++17", "-O2", "-fPIC", *torch_flags, *extra]
        if compile_only:
            return "g++", [*argv, "-c", src, "-o", out]
        return "g++", [*argv, "-shared", src, "-o", out, *_link_flags(info, base_libs)]
    if backend == "rocm":
        arch = info.get("arch", "").split(":")[0]
        argv = ["hipcc", "-std=c++17", "-O3", "-fPIC", "-D__HIP_PLATFORM_AMD__=1", "-DUSE_ROCM=1",
                *info.get("hipcc_common_flags", []), *([f"--offload-arch={arch}"] if arch else []), *torch_flags,
                *extra]
        if compile_only:
            return "hipcc", [*argv, "-c", "-x", "hip", src, "-o", out]
        return "hipcc", [*argv, "-shared", "-x", "hip", src, "-o", out,
                         *_link_flags(info, [*base_libs, "c10_hip", "torch_hip", "amdhip64"])]
    # cuda backend, or a compile-only check on the cpu backend: nvcc, HIP through our header.
    argv = ["nvcc", "-x", "cu", "-std=c++17", "-O3", "-Xcompiler", "-fPIC",
            *info.get("nvcc_common_flags", [])]
    if language == "hip":
        argv += [f"-I{COMPAT_DIR}", "-D__HIP_PLATFORM_NVIDIA__=1"]
    cap = info.get("capability", "")
    if cap and not compile_only:
        cc = cap.replace(".", "")
        argv.append(f"-gencode=arch=compute_{cc},code=sm_{cc}")
    argv += [*torch_flags, *extra]
    if compile_only:
        return "nvcc", [*argv, "-c", src, "-o", out]
    libs = [*base_libs, "c10_cuda", "torch_cuda"]
    link: list[str] = []
    for flag in _link_flags(info, libs):
        link += ["-Xlinker", flag[len("-Wl,"):]] if flag.startswith("-Wl,") else [flag]
    return "nvcc", [*argv, "--cudart", "shared", "-shared", src, "-o", out, *link]


def cache_key(*, code: str, language: str, backend: str, info: dict[str, Any], argv: list[str]) -> str:
    payload = {
        "format": BUILD_FORMAT,
        "code": code,
        "language": language,
        "backend": backend,
        "argv": argv,
        "toolchain": {k: info.get(k, "") for k in ("torch", "torch_cuda", "torch_hip", "nvcc", "hipcc", "gxx",
                                                   "python", "capability", "arch")},
        "compat": _compat_sha() if language == "hip" else "",
        "light": _light_sha() if any(LIGHT_DIR in a for a in argv) else "",
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


@contextlib.contextmanager
def _flock(path: str) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def build(
    *,
    source: Source,
    backend: str,
    info: dict[str, Any],
    cache_root: str,
    limits: StepLimits,
    compile_only: bool = False,
    extra_cflags: tuple[str, ...] = (),
    on_line: Callable[[str], None] | None = None,
    cancel: threading.Event | None = None,
    light: bool | None = None,
) -> BuildResult:
    """Build one native source (kernel + C++ wrapper already joined) or return it from the cache.

    Sources that include <torch/extension.h> are first built against the light
    header; if that fails for a missing torch declaration, they are rebuilt with the
    real one (the log says so).
    """
    if light is None:
        light = "torch/extension.h" in source.code and os.environ.get("KS_LIGHT_TORCH_HEADER", "1") == "1"
    result = _build(source=source, backend=backend, info=info, cache_root=cache_root, limits=limits,
                    compile_only=compile_only, extra_cflags=extra_cflags, on_line=on_line, cancel=cancel,
                    light=light)
    if light and not result.ok and result.status == EXITED and needs_full_header(result.log):
        if on_line:
            on_line("[build] the light torch/extension.h lacks something this source uses; "
                    "building again with the full header")
        full = _build(source=source, backend=backend, info=info, cache_root=cache_root, limits=limits,
                      compile_only=compile_only, extra_cflags=extra_cflags, on_line=on_line, cancel=cancel,
                      light=False)
        full.wall_s += result.wall_s
        full.cpu_s += result.cpu_s
        return full
    return result


def needs_full_header(log: str) -> bool:
    """True when a light-header build failed for a torch declaration the light header leaves out."""
    return bool(_LIGHT_MISS.search(log))


def _build(
    *,
    source: Source,
    backend: str,
    info: dict[str, Any],
    cache_root: str,
    limits: StepLimits,
    compile_only: bool,
    extra_cflags: tuple[str, ...],
    on_line: Callable[[str], None] | None,
    cancel: threading.Event | None,
    light: bool,
) -> BuildResult:
    compiler, template = compiler_argv(
        language=source.language, backend=backend, info=info, name="@NAME@", src="@SRC@", out="@OUT@",
        compile_only=compile_only, extra=extra_cflags, light=light,
    )
    if not shutil.which(compiler):
        return BuildResult(ok=False, status="missing", compiler=compiler, compile_only=compile_only,
                           log=f"{compiler} is not installed on this host")
    key = cache_key(code=source.code, language=source.language, backend=backend, info=info, argv=template)
    name = f"ks_{key[:24]}"
    final = os.path.join(cache_root, key[:2], key)
    os.makedirs(os.path.join(cache_root, "locks"), exist_ok=True)
    os.makedirs(os.path.join(cache_root, "tmp"), exist_ok=True)
    with _flock(os.path.join(cache_root, "locks", f"{key}.lock")):
        cached = _read_cached(final)
        if cached is not None:
            if on_line:
                on_line(f"[build] cache hit {key[:12]} ({compiler})")
            cached.cache_hit = True
            return cached
        work = tempfile.mkdtemp(prefix=f"{key[:12]}-", dir=os.path.join(cache_root, "tmp"))
        try:
            ext = {"hip": ".hip" if backend == "rocm" else ".cu", "cuda": ".cu", "cpp": ".cpp"}[source.language]
            src = os.path.join(work, "source" + ext)
            with open(src, "w") as fh:
                fh.write(source.code)
            out = os.path.join(work, name + (".o" if compile_only else ".so"))
            argv = [a.replace("@NAME@", name).replace("@SRC@", src).replace("@OUT@", out) for a in template]
            if on_line:
                on_line(f"[build] {' '.join(argv[:6])} ... ({compiler}, {'compile only' if compile_only else 'link'})")
            t0 = time.monotonic()
            # LC_ALL=C: plain ASCII diagnostics, the same on every host.
            outcome = run_step(argv, cwd=work, env=scrubbed_env({"LC_ALL": "C", "LANG": "C"}, home=work),
                               limits=limits, on_line=on_line, cancel=cancel)
            outcome.output = outcome.output.replace(work + os.sep, "")
            result = BuildResult(
                ok=outcome.ok and os.path.exists(out),
                status=outcome.status,
                name=name,
                log=outcome.output,
                compiler=compiler,
                command=" ".join(template),
                wall_s=time.monotonic() - t0,
                cpu_s=outcome.cpu_s,
                exit_code=outcome.exit_code,
                signal_name=outcome.signal_name,
                compile_only=compile_only,
            )
            if outcome.status != EXITED:
                return result  # timeouts, signals and cancels are not cached
            if result.ok:
                result.path = os.path.join(final, os.path.basename(out))
                # Only the artefact and the record move into the cache.
                for f in os.listdir(work):
                    if f != os.path.basename(out):
                        os.unlink(os.path.join(work, f))
            with open(os.path.join(work, "meta.json"), "w") as fh:
                json.dump(asdict(result), fh)
            os.makedirs(os.path.dirname(final), exist_ok=True)
            try:
                os.rename(work, final)
            except OSError:
                # Another host sharing the cache won the race; theirs is as good as ours.
                shutil.rmtree(work, ignore_errors=True)
            return result
        finally:
            if os.path.isdir(work):
                shutil.rmtree(work, ignore_errors=True)


def _read_cached(final: str) -> BuildResult | None:
    meta = os.path.join(final, "meta.json")
    if not os.path.exists(meta):
        return None
    try:
        with open(meta) as fh:
            data = json.load(fh)
        result = BuildResult(**data)
    except (OSError, ValueError, TypeError):
        return None
    if result.ok and not os.path.exists(result.path):
        return None
    return result
