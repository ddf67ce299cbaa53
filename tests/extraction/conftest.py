"""Shared fixtures for the extractor tests: the mmcv-style corpus, extracted once."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.extraction import ExtractionReport, ExtractOptions, Kernel, extract_source

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "mmcv_like"


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    return CORPUS


@pytest.fixture(scope="session")
def corpus_report() -> ExtractionReport:
    """The corpus extracted without the compile check (fast); compile tests do their own."""
    return extract_source(CORPUS, ExtractOptions(compile=False, jobs=1))


def by_name(report: ExtractionReport) -> dict[str, Kernel]:
    return {k.name: k for k in report.kernels}


from tests.browser_fixtures import *  # noqa: E402,F401,F403 - browser_page, browser_login, screenshot...
