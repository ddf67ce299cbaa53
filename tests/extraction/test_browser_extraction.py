"""Upload -> live progress -> results -> select all -> import, in a real browser (Playwright + chromium)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from annotations.models import KernelExtraction, Sample
from tests.extraction.helpers import corpus_tar_bytes

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_upload_follow_progress_and_import_everything(
    browser_page: Any,
    browser_login: Any,
    screenshot: Any,
    annotator: Any,
    drain_queues: Any,
    settings: Any,
    tmp_path: Path,
) -> None:
    settings.DATA_DIR = tmp_path / "data"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    archive = tmp_path / "mmcv_like.tar.gz"
    archive.write_bytes(corpus_tar_bytes())
    page = browser_page
    browser_login(page, annotator)
    page.goto("/extraction/")
    page.set_input_files("input[name=archive]", str(archive))
    page.uncheck("input[name=compile]")  # the compile check has its own tests; keep this one quick
    page.click(".extract-form button[type=submit]")
    page.wait_for_url("**/extraction/*/")
    assert "Waiting for a worker" in page.inner_text("#extract-progress")
    screenshot(page, "01-queued")
    drain_queues("default")  # a real RQ worker runs the extraction
    # The page polls the progress fragment and reloads itself when the job is done.
    page.wait_for_selector("table.kernels", timeout=30_000)
    assert KernelExtraction.objects.get().state == "done"
    assert page.locator("input[name=kernel]").count() == 7
    screenshot(page, "02-results")
    page.check("#select-all")
    page.click("text=Import selected as samples")
    page.wait_for_selector(".msg-success")
    assert "Imported 7 kernel(s)" in page.inner_text(".messages")
    assert Sample.objects.filter(source="extracted").count() == 7
    assert page.locator("input[name=kernel]").count() == 0  # imported kernels have no checkbox
    page.click("text=roi_align_forward_cuda_kernel")
    page.wait_for_selector(".codepanel")
    assert "AT_DISPATCH_FLOATING_TYPES_AND_HALF" in page.inner_text("body")
    screenshot(page, "03-kernel")
    assert page.js_errors == []
