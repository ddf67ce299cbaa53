"""The whole review flow in a real browser (Playwright + Debian's chromium), screenshots in test-artifacts/.

import (upload page + a real RQ worker) -> open the workspace -> diff -> submit ->
a second user (reviewer) approves with the keyboard.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from annotations.models import Review, Sample, SampleStatus
from tests.review.helpers import record_run

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "ingest" / "agent"
AGENT_FILES = ["20250709_gaagent_hip_3.jsonl", "20250709_gaagent_hip_3_mem.json"]

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _import_through_the_upload_page(page: Any, tmp_path: Path, drain_queues: Any) -> None:
    if not all((FIXTURES / name).is_file() for name in AGENT_FILES):
        pytest.skip("the importer's agent-run fixtures are not present")
    for name in AGENT_FILES:
        shutil.copy(FIXTURES / name, tmp_path / name)
    page.goto("/imports/")
    page.set_input_files("#import-files", [str(tmp_path / name) for name in AGENT_FILES])
    page.click(".import-form button[type=submit]")
    page.wait_for_url("**/imports/*/")
    drain_queues("default")  # a real RQ worker runs the import job
    page.reload()


def test_import_workspace_diff_submit_and_cross_review(
    browser_page: Any, new_browser_page: Any, browser_login: Any, screenshot: Any, annotator: Any, reviewer: Any,
    drain_queues: Any, tmp_path: Path,
) -> None:
    alice = browser_page
    browser_login(alice, annotator)
    _import_through_the_upload_page(alice, tmp_path, drain_queues)
    screenshot(alice, "01-import-result")
    # The imported sample with the longest history of candidate fixes.
    sample = max(Sample.objects.all(), key=lambda s: s.revisions.filter(kind="candidate").count())
    assert sample.revisions.filter(kind="candidate").count() >= 2, "the agent log should bring candidate fixes"

    # The workspace: every candidate fix in order, error logs from the agent's runs.
    alice.goto(f"/samples/{sample.pk}/")
    workspace = alice.locator("#workspace")
    assert workspace.locator("li[data-revision]").count() >= sample.revisions.count()
    assert "Call fix" in workspace.inner_text() or "Exe fix" in workspace.inner_text()
    screenshot(alice, "02-workspace")

    # The default diff: initial against current candidate, with character marks; download the unified diff.
    alice.click("text=Diff: initial → current candidate")
    alice.wait_for_selector("table.difftable")
    assert alice.locator("table.difftable tr.replace, table.difftable tr.insert, table.difftable tr.delete").count() > 0
    folds = alice.locator("a.expand")
    if folds.count():
        before = alice.locator("table.difftable tr").count()
        folds.first.click()
        alice.wait_for_function(f"document.querySelectorAll('table.difftable tr').length > {before}")
    screenshot(alice, "03-diff")
    with alice.expect_download() as download_info:
        alice.click("text=Download unified diff")
    patch_text = Path(download_info.value.path()).read_text()
    assert patch_text.startswith("--- ") and "\n@@ -" in patch_text

    # A passing run of exactly the current revisions (recorded as the verification collector would).
    record_run(sample)
    alice.goto(f"/samples/{sample.pk}/")
    alice.click("[data-submit-review]")
    alice.wait_for_selector(".badge.status-in_review")
    screenshot(alice, "04-submitted")

    # Bob, in his own browser context, finds it in his queue and approves with the keyboard.
    bob = new_browser_page()
    browser_login(bob, reviewer)
    bob.goto("/review/")
    bob.click(f"[data-queue=needs] >> text={sample.task_id}")
    bob.wait_for_selector("#review-form")
    assert bob.locator("[data-passing-run]").count() == 1
    bob.keyboard.press("d")
    assert bob.locator("[data-diff-body]").is_hidden()
    bob.keyboard.press("d")
    assert bob.locator("[data-diff-body]").is_visible()
    for box in bob.locator("#review-form input[name=checklist]").all():
        box.check()
    bob.locator("body").click(position={"x": 5, "y": 5})  # leave the checkbox so shortcuts are live
    bob.keyboard.press("a")
    assert bob.locator("#review-form input[value=approve]").is_checked()
    screenshot(bob, "05-review-form")
    bob.keyboard.press("Enter")  # "a" focused the record button
    bob.wait_for_selector(".badge.status-approved")
    screenshot(bob, "06-approved")
    assert bob.js_errors == [] and alice.js_errors == []

    sample.refresh_from_db()
    assert sample.status == SampleStatus.APPROVED
    review = Review.objects.get(sample=sample)
    assert review.reviewer == reviewer and review.run is not None

    # Alice sees the verdict and the audit trail on her sample page.
    alice.goto(f"/samples/{sample.pk}/")
    alice.click("#review summary")
    trail = alice.locator("ul.audit").inner_text()
    assert "submitted_for_review" in trail and "review_approve" in trail
    screenshot(alice, "07-audit-trail")
