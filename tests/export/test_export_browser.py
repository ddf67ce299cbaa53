"""The export page in a real browser: create a snapshot, watch it finish (real RQ worker), download."""

from __future__ import annotations

from pathlib import Path

import pytest

from annotations.models import ExportSnapshot
from annotations.models.ingest import JobState
from tests.export.approved import approved_sample


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_create_follow_and_download(  # type: ignore[no-untyped-def]
    browser_page,
    live_server,
    browser_login,
    maintainer,
    reviewer,
    drain_queues,
    screenshot,
    settings,
    tmp_path,
) -> None:
    settings.DATA_DIR = tmp_path
    approved_sample("web/<b>bold</b>", reviewer, tags=["gemm"])
    approved_sample("web/other", reviewer)
    page = browser_page
    browser_login(page, maintainer)
    page.goto(live_server.url + "/exports/")
    page.fill("input[name=name]", "gemm <v1>")
    page.fill("input[name=tags]", "gemm")
    page.check("input[name=layout][value=hf]")
    page.click("form.export-form button[type=submit]")
    page.wait_for_url("**/exports/*/")
    assert "Waiting for a worker" in page.inner_text("#export-status")
    drain_queues("default")  # a real worker writes the snapshot; the page finds out by polling
    page.wait_for_selector("text=Download everything (.tar)", timeout=30_000)
    snapshot = ExportSnapshot.objects.get()
    assert snapshot.state == JobState.DONE and snapshot.sample_count == 1
    assert page.locator("h1").inner_text() == "gemm <v1>"  # shown as text
    assert page.locator("table.grid tbody tr").count() == len(snapshot.files)
    with page.expect_download() as info:
        page.click("text=dataset.jsonl")
    saved = Path(info.value.path())
    assert saved.read_bytes() == (Path(snapshot.directory) / "dataset.jsonl").read_bytes()
    assert page.dialogs == [] and page.js_errors == []
    screenshot(page, "export-done")
