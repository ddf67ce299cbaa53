"""Kernel extraction from CUDA/HIP source trees with libclang (no Django here).

Use :func:`extract_source` / :func:`extract_paths`; see docs/extraction.md.
"""

from pipeline.extraction.extract import ExtractOptions, extract_paths, extract_source, source_name
from pipeline.extraction.model import CompileResult, ExtractionReport, FileProblem, Kernel, Launch
from pipeline.extraction.sources import ArchiveError, ArchiveLimits

__all__ = [
    "ArchiveError",
    "ArchiveLimits",
    "CompileResult",
    "ExtractOptions",
    "ExtractionReport",
    "FileProblem",
    "Kernel",
    "Launch",
    "extract_paths",
    "extract_source",
    "source_name",
]
