"""Fixtures for the runs area: samples with the tiny Triton add kernel and a gold-style test."""

from __future__ import annotations

import pytest

from annotations.models import Sample
from tests.browser_fixtures import (  # noqa: F401 - shared browser fixtures for test_browser_runs.py
    browser,
    browser_login,
    browser_page,
    new_browser_page,
    screenshot,
)
from tests.execution.kernels import ADD_REFERENCE, ADD_TEST, ADD_WRONG
from tests.factories import add_revision, make_sample


@pytest.fixture
def add_sample(db: None) -> Sample:
    return make_sample("runs/add", kinds={"reference": ADD_REFERENCE, "candidate": ADD_REFERENCE, "test": ADD_TEST},
                       entry_point="add_wrapper", target_language="triton")


@pytest.fixture
def wrong_sample(db: None) -> Sample:
    return make_sample("runs/add-wrong", kinds={"reference": ADD_REFERENCE, "candidate": ADD_WRONG, "test": ADD_TEST},
                       entry_point="add_wrapper", target_language="triton")


@pytest.fixture
def untested_sample(db: None) -> Sample:
    return make_sample("runs/no-test", kinds={"reference": ADD_REFERENCE}, entry_point="add_wrapper", target_language="triton")


__all__ = ["add_revision"]
