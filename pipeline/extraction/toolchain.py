"""Where the extractor finds clang's builtin headers and the GPU compilers.

The `libclang` wheel ships libclang.so but not clang's resource directory
(stddef.h, float.h, ...). Sources include those, so we look for a resource
directory of any installed clang, and fall back to GCC's, which serves the
same small set of headers well enough for parsing.
"""

from __future__ import annotations

import functools
import glob
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

SHIM_DIR = Path(__file__).resolve().parent / "shim"
SHIM_INCLUDE_DIR = SHIM_DIR / "include"
PRELUDE = SHIM_DIR / "ks_prelude.h"
# stddef.h, stdint.h, float.h, limits.h of our own, for hosts with no compiler headers at all.
FALLBACK_BUILTIN_DIR = SHIM_DIR / "fallback"


def _version_key(path: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", path))


@functools.cache
def builtin_include_dir() -> str | None:
    """clang's (or failing that GCC's) builtin header directory, or None."""
    explicit = os.environ.get("KS_CLANG_RESOURCE_INCLUDE")
    if explicit and explicit.lower() == "none":
        return None
    if explicit and os.path.isfile(os.path.join(explicit, "stddef.h")):
        return explicit
    patterns = [
        "/usr/lib/llvm-*/lib/clang/*/include",
        "/usr/lib/clang/*/include",
        "/usr/local/lib/clang/*/include",
        "/opt/rocm*/llvm/lib/clang/*/include",
        "/usr/lib/gcc/*/*/include",
    ]
    for pattern in patterns:
        found = [d for d in glob.glob(pattern) if os.path.isfile(os.path.join(d, "stddef.h"))]
        if found:
            return max(found, key=_version_key)
    return None


@dataclass(frozen=True)
class Compiler:
    kind: str  # "nvcc" | "hipcc"
    path: str
    version: str

    @property
    def label(self) -> str:
        return f"{self.kind} {self.version}"


def _probe(path: str, pattern: str) -> str:
    try:
        out = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=30, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    match = re.search(pattern, out)
    return match.group(1) if match else "unknown"


@functools.cache
def find_nvcc() -> Compiler | None:
    """nvcc from KS_NVCC (a path, or "none" to skip the check), PATH, CUDA_HOME/CUDA_PATH."""
    if os.environ.get("KS_NVCC", "").lower() == "none":
        return None
    candidates = [os.environ.get("KS_NVCC", ""), shutil.which("nvcc") or ""]
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            candidates.append(os.path.join(home, "bin", "nvcc"))
    for path in candidates:
        if path and os.access(path, os.X_OK):
            return Compiler("nvcc", path, _probe(path, r"release [\d.]+, V([\d.]+)"))
    return None


@functools.cache
def find_hipcc() -> Compiler | None:
    """hipcc from KS_HIPCC (a path, or "none" to skip the check), PATH, ROCM_PATH."""
    if os.environ.get("KS_HIPCC", "").lower() == "none":
        return None
    candidates = [os.environ.get("KS_HIPCC", ""), shutil.which("hipcc") or ""]
    for home in (os.environ.get("ROCM_PATH"), "/opt/rocm"):
        if home:
            candidates.append(os.path.join(home, "bin", "hipcc"))
    for path in candidates:
        if path and os.access(path, os.X_OK):
            return Compiler("hipcc", path, _probe(path, r"HIP version: ([\w.\-]+)"))
    return None


@functools.cache
def cuda_toolkit_include_dirs() -> list[str]:
    """Include directories of an installed CUDA toolkit (CCCL's cub/thrust/libcu++ included).

    The parse searches them *after* the shim, so the shim still stands in for
    the runtime headers clang cannot read without its CUDA wrapper, and the
    toolkit's real headers serve everything else (cooperative_groups.h, cub, ...)
    instead of empty stand-ins.
    """
    if os.environ.get("KS_CUDA_INCLUDE", "").lower() == "none":
        return []
    homes = [
        os.environ.get("KS_CUDA_INCLUDE", ""),
        os.environ.get("CUDA_HOME", ""),
        os.environ.get("CUDA_PATH", ""),
    ]
    nvcc = find_nvcc()
    if nvcc is not None:
        homes.append(os.path.dirname(os.path.dirname(os.path.realpath(nvcc.path))))
    homes.append("/usr/local/cuda")
    for home in homes:
        if not home:
            continue
        include = (
            home if os.path.isfile(os.path.join(home, "cuda_runtime.h")) else os.path.join(home, "include")
        )
        if os.path.isfile(os.path.join(include, "cuda_runtime.h")):
            dirs = [include]
            if os.path.isdir(os.path.join(include, "cccl")):
                dirs.append(os.path.join(include, "cccl"))
            return dirs
    return []
