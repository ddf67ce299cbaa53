"""Browser fixtures: Playwright driving Debian's chromium against pytest-django's live server.

Use them from any test area:

    # tests/<area>/conftest.py
    from tests.browser_fixtures import *  # noqa: F401,F403  (or pytest_plugins = ["tests.browser_fixtures"])

    @pytest.mark.browser
    def test_something(browser_page, live_server, browser_login, annotator, screenshot):
        browser_login(browser_page, annotator)
        browser_page.goto(live_server.url + "/samples/")
        screenshot(browser_page, "sample-list")

- `browser` (module): one chromium process per test module; the tests skip with
  the reason when chromium or Playwright is missing.
- `browser_context` / `browser_page`: a fresh context (cookies, storage) per test;
  collects JavaScript errors in `page.js_errors` (a list of strings) so a test can
  assert that none happened, and dialogs (`alert()` from an XSS payload, say) in
  `page.dialogs`; dialogs are dismissed so they never block the test.
- `browser_login(page, user)`: logs `user` in by planting a real session cookie
  (the same as `Client.force_login`), so tests do not depend on the login form.
- `new_browser_page()`: a factory for a second, independent page (another user).
- `screenshot(page, name)`: saves test-artifacts/<test name>/<name>.png.

Playwright's sync API runs an event loop in the test thread, which makes Django
refuse ORM calls from it ("SynchronousOnlyOperation"); the tests are plain
synchronous code, so DJANGO_ALLOW_ASYNC_UNSAFE is set while Playwright runs. The
browser lives per module (not per session) so that the variable and the loop are
gone again for the ordinary tests that follow.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("KS_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS_DIR = Path(__file__).resolve().parent.parent / "test-artifacts"
# Generous: the 2-core dev VM is shared, and a live-server page may wait on a busy CPU.
DEFAULT_TIMEOUT_MS = 20_000


def _chromium_path() -> str | None:
    if os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK):
        return CHROMIUM
    return shutil.which("chromium")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # pragma: no cover - playwright is a dev dependency
        pytest.skip("python playwright is not installed")
    executable = _chromium_path()
    if executable is None:
        pytest.skip(f"chromium is not installed ({CHROMIUM} is missing; apt-get install chromium)")
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    playwright = sync_playwright().start()
    try:
        try:
            chromium = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, headless=True)
        except Exception as exc:  # noqa: BLE001 - any launch failure means "no usable browser here"
            pytest.skip(f"chromium at {executable} did not start: {str(exc).splitlines()[0][:200]}")
        yield chromium
        chromium.close()
    finally:
        playwright.stop()
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


def _instrument(page: Any) -> Any:
    page.set_default_timeout(DEFAULT_TIMEOUT_MS)
    page.js_errors = []
    page.dialogs = []
    page.on("pageerror", lambda exc: page.js_errors.append(str(exc)))

    def on_dialog(dialog: Any) -> None:
        page.dialogs.append(f"{dialog.type}: {dialog.message}")
        # The page may already be gone when the dialog is dismissed.
        with contextlib.suppress(Exception):
            dialog.dismiss()

    page.on("dialog", on_dialog)
    return page


@pytest.fixture
def new_browser_page(browser: Any, live_server: Any) -> Iterator[Callable[[], Any]]:
    """A factory of independent pages (each its own context: its own cookies and session)."""
    contexts: list[Any] = []

    def make() -> Any:
        context = browser.new_context(base_url=live_server.url, viewport={"width": 1400, "height": 1000})
        contexts.append(context)
        return _instrument(context.new_page())

    yield make
    for context in contexts:
        context.close()


@pytest.fixture
def browser_page(new_browser_page: Callable[[], Any]) -> Any:
    """A fresh page whose relative `goto("/samples/")` goes to the live server."""
    return new_browser_page()


@pytest.fixture
def browser_login(live_server: Any) -> Callable[[Any, Any], None]:
    """Log a user in on a page by planting a real session cookie."""
    from django.conf import settings
    from django.test import Client

    def login(page: Any, user: Any) -> None:
        client = Client()
        client.force_login(user)
        cookie = client.cookies[settings.SESSION_COOKIE_NAME]
        page.context.clear_cookies()
        page.context.add_cookies(
            [{"name": settings.SESSION_COOKIE_NAME, "value": cookie.value, "url": live_server.url, "httpOnly": True}]
        )

    return login


@pytest.fixture
def screenshot(request: pytest.FixtureRequest) -> Callable[[Any, str], Path]:
    """Save a full-page screenshot under test-artifacts/<test name>/<name>.png and return its path."""
    test_dir = ARTIFACTS_DIR / re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)[:120]

    def take(page: Any, name: str) -> Path:
        test_dir.mkdir(parents=True, exist_ok=True)
        target = test_dir / (re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:80] + ".png")
        page.screenshot(path=str(target), full_page=True)
        return target

    return take
