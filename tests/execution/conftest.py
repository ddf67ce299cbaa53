from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def cache_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One build/golden cache for the session (tests that study the cache make their own)."""
    yield str(tmp_path_factory.mktemp("ks-cache"))


@pytest.fixture
def fresh_cache(tmp_path: Path) -> str:
    return str(tmp_path / "cache")
