"""What this host can run: backends, devices and toolchain versions.

The probe runs in a subprocess (`python -m pipeline.execution.toolchain`) so the
worker itself never imports torch or touches a GPU driver: a worker that forks
work-horses must not hold a CUDA context.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import socket
import subprocess
import sys
from typing import Any

QUEUE_BACKENDS = {"cpu": "cpu", "gpu-cuda": "cuda", "gpu-rocm": "rocm"}


class BackendUnavailable(RuntimeError):
    """This host cannot run the requested backend; the message says why."""


def _version_line(argv: list[str], match: str = "") -> str:
    exe = shutil.which(argv[0])
    if not exe:
        return ""
    try:
        out = subprocess.run([exe, *argv[1:]], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    lines = [ln.strip() for ln in (out.stdout + out.stderr).splitlines() if ln.strip()]
    if match:
        lines = [ln for ln in lines if match in ln] or lines
    return lines[-1] if lines else ""


def _probe_in_process() -> dict[str, Any]:
    """Runs in the probe subprocess only."""
    import sysconfig

    info: dict[str, Any] = {
        "host": socket.gethostname(),
        "python": sys.version.split()[0],
        "python_include": sysconfig.get_paths()["include"],
        "nvcc": _version_line(["nvcc", "--version"], "release"),
        "hipcc": _version_line(["hipcc", "--version"], "HIP version"),
        "gxx": _version_line(["g++", "--version"])
        and subprocess.run(["g++", "--version"], capture_output=True, text=True, check=False).stdout.splitlines()[0],
        "nproc": os.cpu_count() or 1,
    }
    try:
        import torch
        import torch.utils.cpp_extension as cpp
    except Exception as exc:  # a host without torch can only refuse
        info.update(torch="", error=f"torch is not importable: {exc}")
        info["backends"] = []
        return info
    info["torch"] = torch.__version__
    info["torch_cuda"] = torch.version.cuda or ""
    info["torch_hip"] = getattr(torch.version, "hip", None) or ""
    try:
        import triton

        info["triton"] = triton.__version__
    except Exception as exc:
        info["triton"] = ""
        info["triton_error"] = str(exc)
    info["include_paths"] = cpp.include_paths()
    info["library_paths"] = cpp.library_paths()
    info["cxx11_abi"] = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    abi = getattr(cpp, "_get_pybind11_abi_build_flags", None)
    info["pybind_abi_flags"] = list(abi()) if abi else []
    info["nvcc_common_flags"] = list(getattr(cpp, "COMMON_NVCC_FLAGS", []))
    info["hipcc_common_flags"] = list(getattr(cpp, "COMMON_HIPCC_FLAGS", []))
    gpu = torch.cuda.is_available()
    info["gpu_available"] = gpu
    info["device_count"] = torch.cuda.device_count() if gpu else 0
    if gpu:
        props = torch.cuda.get_device_properties(0)
        info["device"] = props.name
        info["capability"] = f"{props.major}.{props.minor}"
        info["arch"] = getattr(props, "gcnArchName", "") or f"sm_{props.major}{props.minor}"
        info["warp_size"] = getattr(props, "warp_size", 64 if info["torch_hip"] else 32)
        if info["torch_hip"]:
            info["driver"] = _version_line(["rocm-smi", "--showdriverversion"], "Driver")
        else:
            info["driver"] = _version_line(
                ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]
            )
    else:
        import platform

        info["device"] = f"CPU ({platform.machine()}, {os.cpu_count()} cores)"
    backends = []
    if info["triton"]:
        backends.append("cpu")
    if gpu and info["torch_cuda"] and info["triton"]:
        backends.append("cuda")
    if gpu and info["torch_hip"]:
        backends.append("rocm")
    info["backends"] = backends
    return info


@functools.lru_cache(maxsize=1)
def probe() -> dict[str, Any]:
    """Toolchain and device facts of this host (cached for the process's life)."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LD_LIBRARY_PATH", "HOME", "CUDA_VISIBLE_DEVICES",
                                                         "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_HOME",
                                                         "ROCM_PATH")}
    env["PYTHONPATH"] = package_root()
    out = subprocess.run(
        [sys.executable, "-m", "pipeline.execution.toolchain"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    if out.returncode != 0:
        raise BackendUnavailable(f"the toolchain probe failed: {out.stderr.strip()[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def package_root() -> str:
    """The directory that holds the `pipeline` package (put on a step's PYTHONPATH)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def toolchain_record(info: dict[str, Any], backend: str) -> dict[str, str]:
    """The versions a result records: what a GPU expert needs to reproduce it."""
    rec = {
        "python": info.get("python", ""),
        "torch": info.get("torch", ""),
        "triton": info.get("triton", ""),
        "device": info.get("device", ""),
    }
    if backend == "cuda":
        rec.update(cuda=info.get("torch_cuda", ""), nvcc=info.get("nvcc", ""), driver=info.get("driver", ""),
                   capability=info.get("capability", ""))
    elif backend == "rocm":
        rec.update(hip=info.get("torch_hip", ""), hipcc=info.get("hipcc", ""), driver=info.get("driver", ""),
                   arch=info.get("arch", ""))
    else:
        rec.update(gxx=info.get("gxx", ""), hipcc=info.get("hipcc", ""), nvcc=info.get("nvcc", ""))
    return {k: str(v) for k, v in rec.items() if v}


def require_backend(backend: str, info: dict[str, Any] | None = None) -> dict[str, Any]:
    """Return the probe, or raise BackendUnavailable with a message a person can act on."""
    info = info if info is not None else probe()
    if backend in info.get("backends", []):
        return info
    host = info.get("host", "this host")
    if info.get("error"):
        reason = info["error"]
    elif backend == "cuda":
        reason = (
            "PyTorch here is a ROCm build" if info.get("torch_hip") else
            "no NVIDIA GPU is visible to PyTorch (torch.cuda.is_available() is False)"
        )
    elif backend == "rocm":
        reason = (
            "PyTorch here is not a ROCm build" if not info.get("torch_hip") else
            "no AMD GPU is visible to PyTorch"
        )
    else:
        reason = f"Triton is not importable: {info.get('triton_error', 'not installed')}"
    raise BackendUnavailable(f"{host} cannot run the {backend} backend: {reason}")


if __name__ == "__main__":
    print(json.dumps(_probe_in_process()))
