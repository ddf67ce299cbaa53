"""The upload page in a real browser: upload, live progress while a real RQ worker imports, every error listed."""

from __future__ import annotations

from pathlib import Path

import pytest

from annotations.models import ImportBatch
from annotations.models.ingest import JobState

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "ingest"


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_upload_and_watch_progress(  # type: ignore[no-untyped-def]
    browser_page, live_server, browser_login, annotator, drain_queues, screenshot, settings, tmp_path
) -> None:
    settings.DATA_DIR = tmp_path
    bad = tmp_path / "with_errors.jsonl"
    bad.write_bytes((FIXTURES / "bigcodebench_small.jsonl").read_bytes() + b'{"task_id": "BigCodeBench/<img src=x onerror=alert(1)>"}\n')
    page = browser_page
    browser_login(page, annotator)
    page.goto(live_server.url + "/imports/")
    page.set_input_files("#import-files", str(bad))
    page.click("form.import-form button[type=submit]")
    page.wait_for_url("**/imports/*/")
    batch = ImportBatch.objects.get()
    assert page.locator(".import-status .badge").first.inner_text() == "Queued"
    drain_queues("default")  # a real worker runs the job; the page learns of it by polling
    page.wait_for_selector('#import-status[data-state="done"]', timeout=30_000)
    assert "imported: created=2 updated=0 unchanged=0 errors=1" in page.inner_text("#import-status")
    rows = page.locator("#import-error-rows tr")
    assert rows.count() == 1 and "line 3" in rows.first.inner_text()
    assert "<img src=x onerror=alert(1)>" in rows.first.inner_text()  # shown as text, never run
    assert page.locator("#import-error-rows img").count() == 0
    assert page.dialogs == [] and page.js_errors == []
    batch.refresh_from_db()
    assert batch.state == JobState.DONE
    screenshot(page, "import-done")
