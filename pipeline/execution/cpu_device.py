"""Let tests written for `device='cuda'` run unmodified on a host without a GPU.

Installed only inside a sandboxed step of the cpu backend (never in the worker):
- a TorchFunctionMode rewrites `device=` arguments and `.to('cuda')` to the CPU;
- `Tensor.cuda()`, `Module.cuda()` return CPU objects;
- the `torch.cuda` calls tests use (is_available, synchronize, Event, manual_seed,
  device_count, get_device_name, ...) answer as for one device.
Triton itself runs in its interpreter (TRITON_INTERPRET=1 is set by the backend).
"""

from __future__ import annotations

import time
from typing import Any

_installed = False


def _is_cuda(dev: Any) -> bool:
    import torch

    if isinstance(dev, str):
        return dev == "cuda" or dev.startswith("cuda:")
    if isinstance(dev, torch.device):
        return dev.type == "cuda"
    return False


def _fix(dev: Any) -> Any:
    import torch

    if _is_cuda(dev):
        return torch.device("cpu")
    return dev


class _CpuEvent:
    """torch.cuda.Event stand-in: wall-clock milliseconds between two records."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        self.t: float | None = None

    def record(self, stream: Any = None) -> None:
        self.t = time.perf_counter()

    def synchronize(self) -> None:
        pass

    def wait(self, stream: Any = None) -> None:
        pass

    def query(self) -> bool:
        return True

    def elapsed_time(self, end: _CpuEvent) -> float:
        if self.t is None or end.t is None:
            raise RuntimeError("Event.elapsed_time: both events must be recorded")
        return (end.t - self.t) * 1000.0


def install() -> None:
    global _installed
    if _installed:
        return
    import torch
    from torch.overrides import TorchFunctionMode

    class CudaToCpu(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
            kwargs = dict(kwargs or {})
            if "device" in kwargs:
                kwargs["device"] = _fix(kwargs["device"])
            if args and any(_is_cuda(a) for a in args[1:]):
                # Tensor.to('cuda'), Tensor.to(torch.device('cuda'), dtype), new_empty(..., 'cuda')
                args = (args[0], *(_fix(a) for a in args[1:]))
            return func(*args, **kwargs)

    mode = CudaToCpu()
    mode.__enter__()  # stays active for the life of the step

    def tensor_cuda(self: torch.Tensor, device: Any = None, non_blocking: bool = False, **_: Any) -> torch.Tensor:
        return self.to("cpu")

    def module_cuda(self: torch.nn.Module, device: Any = None) -> torch.nn.Module:
        return self

    torch.Tensor.cuda = tensor_cuda  # type: ignore[method-assign,assignment]
    torch.nn.Module.cuda = module_cuda  # type: ignore[method-assign,assignment]
    cuda = torch.cuda
    cuda.is_available = lambda: True
    cuda.device_count = lambda: 1
    cuda.current_device = lambda: 0
    cuda.set_device = lambda *a, **k: None
    cuda.synchronize = lambda *a, **k: None
    cuda.empty_cache = lambda: None
    cuda.get_device_name = lambda *a, **k: "cpu (cuda mapped by Kernel Studio)"
    cuda.get_device_capability = lambda *a, **k: (8, 0)
    # torch.manual_seed itself calls these when is_available() is True: the CPU generator is already seeded.
    cuda.manual_seed = lambda *a, **k: None
    cuda.manual_seed_all = lambda *a, **k: None
    cuda.max_memory_allocated = lambda *a, **k: 0
    cuda.memory_allocated = lambda *a, **k: 0
    cuda.reset_peak_memory_stats = lambda *a, **k: None
    cuda.Event = _CpuEvent  # type: ignore[assignment,misc]
    _installed = True
