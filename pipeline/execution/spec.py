"""The plain-data contract of a verification: a JobSpec goes in, a VerifyResult comes out.

Both travel through Redis as JSON (a GPU host has no database), so every field is
a JSON type and `from_dict(to_dict(x)) == x`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

BACKENDS = ("cpu", "cuda", "rocm")
# Languages built as a native extension rather than executed as Python.
NATIVE_LANGUAGES = frozenset({"hip", "cuda", "cpp"})
PYTHON_LANGUAGES = frozenset({"triton", "python"})

# Outcomes of a whole verification.
PASSED = "passed"
FAILED = "failed"
TIMEOUT = "timeout"
CRASHED = "crashed"
ERROR = "error"
CANCELLED = "cancelled"
OUTCOMES = (PASSED, FAILED, TIMEOUT, CRASHED, ERROR, CANCELLED)

STAGES = ("call", "exe", "perf")


class SpecError(ValueError):
    """A job spec that cannot be verified as written (caller's mistake, not the sample's)."""


@dataclass(frozen=True)
class Source:
    language: str
    code: str

    def __post_init__(self) -> None:
        if self.language not in NATIVE_LANGUAGES | PYTHON_LANGUAGES:
            raise SpecError(f"unknown source language {self.language!r}")

    @property
    def is_native(self) -> bool:
        return self.language in NATIVE_LANGUAGES


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 300.0  # wall clock per step; the whole process group is killed
    cpu_s: int = 600  # RLIMIT_CPU per step
    file_size_mb: int = 512  # RLIMIT_FSIZE: largest file a step may write
    nproc: int = 4096  # RLIMIT_NPROC (threads count; root ignores it, see docs/verification.md)
    output_head_bytes: int = 64 * 1024  # kept from the start of a step's output
    output_tail_bytes: int = 64 * 1024  # kept from the end
    build_timeout_s: float = 600.0


@dataclass(frozen=True)
class JobSpec:
    task_id: str
    backend: str
    reference: Source
    test: str
    entry_point: str = ""
    candidate: Source | None = None
    wrapper: Source | None = None
    # {"float16": {"rtol": 1e-2, "atol": 1e-2}, ...}: per-sample overrides of the defaults.
    tolerances: dict[str, dict[str, float]] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)
    seed: int = 0
    test_style: str = "auto"  # auto | gold | pytest
    perf: bool = True
    perf_repeats: int = 20
    extra_cflags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise SpecError(f"unknown backend {self.backend!r}; expected one of {', '.join(BACKENDS)}")
        if self.test_style not in ("auto", "gold", "pytest"):
            raise SpecError(f"unknown test_style {self.test_style!r}")
        if not self.test.strip() and "#" * 146 not in self.reference.code:
            raise SpecError("the job has no test code")
        for dtype, tol in self.tolerances.items():
            if not isinstance(tol, dict) or set(tol) - {"rtol", "atol"}:
                raise SpecError(f"tolerance for {dtype!r} must be {{'rtol': x, 'atol': y}}")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["extra_cflags"] = list(self.extra_cflags)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobSpec:
        try:
            d = dict(data)
            d["reference"] = Source(**d["reference"])
            d["candidate"] = Source(**d["candidate"]) if d.get("candidate") else None
            d["wrapper"] = Source(**d["wrapper"]) if d.get("wrapper") else None
            d["limits"] = Limits(**d.get("limits") or {})
            d["extra_cflags"] = tuple(d.get("extra_cflags") or ())
            return cls(**d)
        except (KeyError, TypeError) as exc:
            raise SpecError(f"malformed job spec: {exc}") from exc


@dataclass
class StageResult:
    # ok: True passed, False failed, None not run (skipped says why).
    ok: bool | None = None
    message: str = ""
    seconds: float | None = None
    skipped: str = ""


@dataclass
class VerifyResult:
    task_id: str
    backend: str
    status: str  # one of OUTCOMES
    stages: dict[str, StageResult] = field(default_factory=lambda: {s: StageResult() for s in STAGES})
    failed_stage: str = ""
    message: str = ""
    speedup: float | None = None
    speedup_flagged: bool = False
    timings: dict[str, Any] = field(default_factory=dict)
    exit_code: int | None = None
    signal_name: str = ""
    host: str = ""
    device: str = ""
    toolchain: dict[str, str] = field(default_factory=dict)
    emulated: bool = False
    caveats: list[str] = field(default_factory=list)
    log: str = ""
    duration_s: float = 0.0
    cache_hit: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> VerifyResult:
        d = dict(data)
        d["stages"] = {k: StageResult(**v) for k, v in (d.get("stages") or {}).items()}
        return cls(**d)

    def summary(self) -> str:
        parts = []
        for name in STAGES:
            st = self.stages.get(name)
            mark = "-" if st is None or st.ok is None else ("ok" if st.ok else "FAIL")
            parts.append(f"{name}={mark}")
        speed = f" speedup={self.speedup:.2f}x" if self.speedup else ""
        return f"{self.task_id} [{self.backend}] {self.status} " + " ".join(parts) + speed
