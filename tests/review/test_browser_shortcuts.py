"""Reviewer keyboard shortcuts in chromium: listed on the page, working, and off while typing."""

from __future__ import annotations

from typing import Any

import pytest

from tests.review.helpers import reviewable_sample

pytestmark = pytest.mark.browser


def test_shortcuts(browser_page: Any, browser_login: Any, screenshot: Any, annotator: Any, reviewer: Any) -> None:
    first = reviewable_sample("keys/1", author=annotator, submit_by=annotator)
    second = reviewable_sample("keys/2", author=annotator, submit_by=annotator)
    third = reviewable_sample("keys/3", author=annotator, submit_by=annotator)
    page = browser_page
    browser_login(page, reviewer)
    page.goto(f"/review/{first.pk}/")
    shortcuts = page.locator(".shortcuts").inner_text()
    for key in ("n", "j", "k", "d", "a", "r"):
        assert f"{key}" in shortcuts

    # r: "request changes" chosen, the comment focused; typing there does not trigger shortcuts.
    page.keyboard.press("r")
    assert page.locator("#review-form input[value=request_changes]").is_checked()
    page.keyboard.type("add n=1 and a test")  # contains a, d, n, k... none may fire
    assert page.locator("#review-form textarea[name=comment]").input_value() == "add n=1 and a test"
    assert page.locator("#review-form input[value=request_changes]").is_checked()
    assert page.url.endswith(f"/review/{first.pk}/")
    assert page.locator("[data-diff-body]").is_visible()
    screenshot(page, "typing-in-comment")

    # Out of the field: n goes to the next sample, k back, j forward again.
    page.locator("h1").click()
    page.keyboard.press("n")
    page.wait_for_url(f"**/review/{second.pk}/")
    page.keyboard.press("k")
    page.wait_for_url(f"**/review/{first.pk}/")
    page.keyboard.press("j")
    page.wait_for_url(f"**/review/{second.pk}/")
    page.keyboard.press("n")
    page.wait_for_url(f"**/review/{third.pk}/")
    assert page.js_errors == []
