"""The dashboard in a real browser (kept beside the export browser tests so they share one browser fixture)."""

from __future__ import annotations

import pytest

from tests.export.approved import approved_sample


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_dashboard_renders_charts(  # type: ignore[no-untyped-def]
    browser_page, live_server, browser_login, maintainer, reviewer, screenshot
) -> None:
    for i in range(3):
        approved_sample(f"dash/{i}", reviewer, target_language="cuda" if i else "hip")
    page = browser_page
    browser_login(page, maintainer)
    page.goto(live_server.url + "/dashboard/")
    figures = page.locator("figure.chart")
    assert figures.count() == 6
    status = page.get_by_role(
        "img", name="Samples by status: Draft 0; In review 0; Changes requested 0; Approved 3; Rejected 0"
    )
    assert status.count() == 1
    # The bars have a size the browser computes (the SVG is laid out, not just present).
    box = page.locator("figure.chart svg.bars").first.bounding_box()
    assert box is not None and box["width"] > 300 and box["height"] > 50
    assert page.js_errors == []
    screenshot(page, "dashboard")
