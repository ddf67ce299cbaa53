"""Compare a candidate's outputs with the reference's golden outputs.

Runs in the trusted worker, never in the sandbox: the outputs files are read with
`torch.load(weights_only=True)`, which refuses anything but tensors and plain
containers, so a candidate cannot smuggle code into the comparison, and it cannot
patch the comparison either (it never runs in this process).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# (rtol, atol) per dtype; integers and bool compare exactly. See docs/test-contract.md.
DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-7),
    "float32": (1e-4, 1e-5),
    "float16": (1e-3, 1e-3),
    "bfloat16": (1.6e-2, 1e-2),
    "float8_e4m3fn": (0.125, 0.125),
    "float8_e4m3fnuz": (0.125, 0.125),
    "float8_e5m2": (0.125, 0.125),
    "float8_e5m2fnuz": (0.125, 0.125),
    "complex64": (1e-4, 1e-5),
    "complex128": (1e-7, 1e-7),
}

MAX_REPORTED = 5


@dataclass
class CompareReport:
    ok: bool
    compared: int = 0
    failures: list[str] = field(default_factory=list)

    @property
    def message(self) -> str:
        if self.ok:
            return f"{self.compared} outputs match the reference"
        head = self.failures[:MAX_REPORTED]
        more = len(self.failures) - len(head)
        text = "\n".join(head)
        if more > 0:
            text += f"\n... and {more} more mismatching outputs"
        return text


def tolerance_for(dtype_name: str, overrides: dict[str, dict[str, float]]) -> tuple[float, float]:
    rtol, atol = DEFAULT_TOLERANCES.get(dtype_name, (0.0, 0.0))
    if dtype_name in overrides:
        rtol = float(overrides[dtype_name].get("rtol", rtol))
        atol = float(overrides[dtype_name].get("atol", atol))
    return rtol, atol


def load_outputs(path: str) -> Any:
    import torch

    return torch.load(path, map_location="cpu", weights_only=True)


def compare_outputs(golden: Any, actual: Any, tolerances: dict[str, dict[str, float]] | None = None) -> CompareReport:
    report = CompareReport(ok=True)
    _compare(golden, actual, "result_gold", tolerances or {}, report)
    report.ok = not report.failures
    return report


def _compare(g: Any, a: Any, path: str, tol: dict[str, dict[str, float]], rep: CompareReport) -> None:
    import torch

    if isinstance(g, dict):
        if not isinstance(a, dict):
            rep.failures.append(f"{path}: reference is a dict, candidate gave {type(a).__name__}")
            return
        missing = [k for k in g if k not in a]
        extra = [k for k in a if k not in g]
        if missing:
            rep.failures.append(f"{path}: candidate is missing keys {missing[:10]}")
        if extra:
            rep.failures.append(f"{path}: candidate has extra keys {extra[:10]}")
        for k in g:
            if k in a:
                _compare(g[k], a[k], f"{path}[{k!r}]", tol, rep)
        return
    if isinstance(g, list | tuple):
        if not isinstance(a, list | tuple) or len(a) != len(g):
            got = f"{type(a).__name__} of length {len(a)}" if isinstance(a, list | tuple) else type(a).__name__
            rep.failures.append(f"{path}: reference is a {type(g).__name__} of length {len(g)}, candidate gave {got}")
            return
        for i, (gi, ai) in enumerate(zip(g, a, strict=True)):
            _compare(gi, ai, f"{path}[{i}]", tol, rep)
        return
    rep.compared += 1
    if isinstance(g, torch.Tensor):
        if not isinstance(a, torch.Tensor):
            rep.failures.append(f"{path}: reference is a tensor, candidate gave {type(a).__name__}")
            return
        _compare_tensor(g, a, path, tol, rep)
        return
    if isinstance(g, bool) or g is None or isinstance(g, str):
        if a != g or type(a) is not type(g):
            rep.failures.append(f"{path}: reference {g!r}, candidate {a!r}")
        return
    if isinstance(g, int | float | complex):
        if isinstance(a, bool) or not isinstance(a, int | float | complex):
            rep.failures.append(f"{path}: reference {g!r}, candidate {a!r}")
            return
        rtol, atol = tolerance_for("float64" if isinstance(g, float) else "int64", tol)
        if isinstance(g, int) and isinstance(a, int):
            if a != g:
                rep.failures.append(f"{path}: reference {g}, candidate {a}")
            return
        if not (abs(a - g) <= atol + rtol * abs(g) or (g != g and a != a)):
            rep.failures.append(f"{path}: reference {g!r}, candidate {a!r} (abs diff {abs(a - g):.3g})")
        return
    if a != g:
        rep.failures.append(f"{path}: reference {g!r}, candidate {a!r}")


def _compare_tensor(g: Any, a: Any, path: str, tol: dict[str, dict[str, float]], rep: CompareReport) -> None:
    import torch

    if g.shape != a.shape:
        rep.failures.append(f"{path}: shape {tuple(a.shape)}, expected {tuple(g.shape)}")
        return
    if g.dtype != a.dtype:
        rep.failures.append(f"{path}: dtype {a.dtype}, expected {g.dtype}")
        return
    dtype_name = str(g.dtype).replace("torch.", "")
    rtol, atol = tolerance_for(dtype_name, tol)
    try:
        torch.testing.assert_close(a, g, rtol=rtol, atol=atol, equal_nan=True, check_device=False)
        return
    except AssertionError:
        pass
    rep.failures.append(_describe_mismatch(g, a, path, rtol, atol))


def _describe_mismatch(g: Any, a: Any, path: str, rtol: float, atol: float) -> str:
    """Where and by how much: the worst element, both values, and how many are off."""
    import torch

    if g.is_complex():
        g, a = torch.view_as_real(g), torch.view_as_real(a)
    gd, ad = g.to(torch.float64), a.to(torch.float64)
    diff = (ad - gd).abs()
    nan_mismatch = torch.isnan(gd) != torch.isnan(ad)
    allowed = atol + rtol * gd.abs()
    bad = (diff > allowed) | nan_mismatch
    bad = bad & ~(torch.isnan(gd) & torch.isnan(ad))
    n_bad = int(bad.sum())
    excess = torch.where(bad, torch.nan_to_num(diff - allowed, nan=float("inf")), torch.zeros_like(diff))
    flat = int(torch.argmax(excess.reshape(-1)))
    idx = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), g.shape)) if g.dim() else ()
    gv, av = gd.reshape(-1)[flat].item(), ad.reshape(-1)[flat].item()
    absd = abs(av - gv)
    reld = absd / abs(gv) if gv else float("inf")
    return (
        f"{path}: {n_bad} of {g.numel()} elements differ ({100.0 * n_bad / max(1, g.numel()):.2f}%); "
        f"worst at index {idx}: candidate {av:.6g}, reference {gv:.6g}, "
        f"abs diff {absd:.3g}, rel diff {reld:.3g} (allowed rtol={rtol:g}, atol={atol:g}, dtype {g.dtype})"
    )
