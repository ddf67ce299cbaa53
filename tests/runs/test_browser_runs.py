"""The runs panel in a real browser: request a run, watch its log arrive live, see the verdict.

Real parts: chromium (Playwright), the live server, Redis, a real
`python -m pipeline.worker --queues cpu` in a subprocess, the cpu backend.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from annotations.models import Run, Sample, User
from annotations.models.runs import RunStatus

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]
REPO = str(Path(__file__).resolve().parents[2])


@pytest.fixture
def cpu_worker(rq_settings: str, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    env = dict(os.environ, REDIS_URL=rq_settings, PYTHONPATH=REPO, KS_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.Popen([sys.executable, "-m", "pipeline.worker", "--queues", "cpu"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    yield proc
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def test_run_from_the_sample_page_streams_its_log_and_shows_the_verdict(
    browser_page: Any, browser_login: Any, live_server: Any, annotator: User, add_sample: Sample,
    cpu_worker: Any, screenshot: Any,
) -> None:
    page = browser_page
    page.set_default_timeout(300_000)  # the cpu backend on a shared 2-core VM
    browser_login(page, annotator)
    page.goto(f"{live_server.url}/samples/{add_sample.pk}/")
    page.select_option("#runs select[name=backend]", "cpu")
    page.click("#runs button:has-text('Verify current revisions')")
    run = Run.objects.get(sample=add_sample)
    log = page.locator(f".run-active[data-run='{run.pk}'] pre[data-run-log]")
    # Lines written by the worker appear while the run is still going.
    log.locator("text=/\\[worker\\] .* runs attempt 1/").wait_for()
    screenshot(page, "live-log")
    # When the verdict is in, the panel reloads and the history shows it.
    page.locator("table.runs-table .badge.run-passed").wait_for()
    run.refresh_from_db()
    assert run.status == RunStatus.PASSED
    history = page.locator("table.runs-table").first.inner_text()
    assert "✓ call" in history and "✓ exe" in history
    screenshot(page, "verdict")
    # The run's own page: stages, toolchain, the whole log.
    page.click(f"a[href='/runs/{run.pk}/']")
    page.locator("pre[data-run-log]:has-text('[compare] 3 outputs match the reference')").wait_for()
    assert "torch" in page.locator("h2:has-text('Toolchain') + dl").inner_text().lower()
    assert page.js_errors == []
