from __future__ import annotations

import pytest

from tests.browser_fixtures import *  # noqa: F401,F403 - browser_page, browser_login, screenshot...


@pytest.fixture(autouse=True)
def fast_password_hashing(settings: object) -> None:
    """The standing users are created with passwords; PBKDF2 costs ~1 s each on the shared 2-core VM."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # type: ignore[attr-defined]
