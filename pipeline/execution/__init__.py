"""Verification engine: sandboxed builds and runs of a sample's reference and candidate.

Plain Python, no Django: a GPU host runs it with only Redis. Entry point:
`verify(spec, log) -> VerifyResult` (see docs/verification.md and docs/test-contract.md).
"""

from pipeline.execution.engine import verify
from pipeline.execution.spec import JobSpec, Limits, Source, SpecError, StageResult, VerifyResult
from pipeline.execution.toolchain import BackendUnavailable

__all__ = [
    "BackendUnavailable",
    "JobSpec",
    "Limits",
    "Source",
    "SpecError",
    "StageResult",
    "VerifyResult",
    "verify",
]
