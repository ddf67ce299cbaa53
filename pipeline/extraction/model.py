"""Plain data the extractor produces (no Django: GPU hosts and the CLI use it).

Everything here converts to JSON with :func:`dataclasses.asdict`; the field
names are the ones `extract_kernels --json` writes and docs/extraction.md
describes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

#: File suffixes the extractor reads; every other file is ignored.
SOURCE_SUFFIXES = (".cu", ".hip", ".cpp", ".cc", ".cxx")
HEADER_SUFFIXES = (".cuh", ".h", ".hpp", ".hh", ".hxx", ".inl")
ALL_SUFFIXES = SOURCE_SUFFIXES + HEADER_SUFFIXES


@dataclass
class Launch:
    """One host call site of a kernel."""

    file: str
    line: int
    kind: str  # "triple_chevron" | "hipLaunchKernelGGL" | "explicit_instantiation"
    grid: str | None = None
    block: str | None = None
    shared_mem: str | None = None
    stream: str | None = None
    caller: str | None = None
    dispatch: str | None = None  # e.g. "AT_DISPATCH_FLOATING_TYPES_AND_HALF"
    # One entry per concrete instantiation seen at this site, e.g.
    # [["double"], ["float"], ["c10::Half"]]; empty for a non-template kernel.
    template_args: list[list[str]] = field(default_factory=list)
    dependent: bool = False  # launched from a template with unresolved args


@dataclass
class CompileResult:
    compiler: str | None  # "nvcc 13.0.88" / "hipcc 5.2" / None
    compiles: bool | None  # None: not checked (no compiler, or disabled)
    message: str  # compiler output (capped) or the reason it was not checked
    command: str | None = None
    seconds: float | None = None
    # When the unit fails and instantiates several types: which ones compile on
    # their own, e.g. {"<float>": true, "<__half>": false}.
    per_instantiation: dict[str, bool] | None = None


@dataclass
class Kernel:
    name: str
    qualified_name: str
    file: str
    start_line: int
    end_line: int
    source: str
    language: str  # "cuda" | "hip"
    is_template: bool
    template_params: list[dict[str, Any]]
    parameters: list[dict[str, str]]
    device_functions: list[str]
    macros: list[str]
    types: list[str]
    constants: list[str]
    intrinsics: list[str]
    system_includes: list[str]
    launches: list[Launch]
    lines: int
    flags: list[str]
    unit: str
    instantiations: list[list[str]]
    compile: CompileResult
    diagnostics: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class FileProblem:
    """A per-file error or warning: the rest of the corpus still extracts."""

    file: str
    line: int | None
    message: str
    severity: str = "error"  # "error" | "warning"


@dataclass
class ExtractionReport:
    source: str  # the path or archive name given
    files_scanned: int
    files_ignored: int
    kernels: list[Kernel]
    problems: list[FileProblem]
    missing_includes: list[str]
    seconds: float
    parse_seconds: float
    compile_seconds: float
    # CUDA toolkit include directories searched after the shim (empty: shim only).
    toolkit_includes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
