"""The shared browser fixtures work: chromium starts, a planted session logs in, screenshots land."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.mark.browser
def test_login_cookie_opens_sample_list(browser_page: Any, browser_login: Any, annotator: Any, screenshot: Any) -> None:
    browser_login(browser_page, annotator)
    browser_page.goto("/samples/")
    assert browser_page.locator(".userbox .who").inner_text().startswith("alice")
    path = screenshot(browser_page, "sample-list")
    assert path.is_file() and path.stat().st_size > 0
    assert browser_page.js_errors == []


@pytest.mark.browser
def test_anonymous_page_lands_on_login(browser_page: Any) -> None:
    browser_page.goto("/samples/")
    assert "/login/" in browser_page.url
