"""The whole path with real parts: web-side request -> Redis -> `python -m pipeline.worker` -> collect -> DB.

Also: a worker SIGKILLed mid-job leaves a run that is found lost and retried once,
and `manage.py verify --wait` prints its summary line and exit status.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import redis
from django.core.management import call_command

from annotations.models import Run, Sample
from annotations.models.runs import RunStatus
from annotations.services import runs as service
from pipeline.worker import keys
from tests.execution.kernels import candidate_with
from tests.factories import add_revision

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
REPO = str(Path(__file__).resolve().parents[2])


def _env(redis_url: str, tmp_path: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ, REDIS_URL=redis_url, PYTHONPATH=REPO, KS_CACHE_DIR=str(tmp_path / "cache"), **extra)
    return env


def _burst(redis_url: str, tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "pipeline.worker", "--queues", "cpu", "--burst"],
                         env=_env(redis_url, tmp_path), capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]


def test_request_worker_collect_round_trip(rq_settings: str, drain_queues: Any, add_sample: Sample,
                                           annotator: Any, tmp_path: Path) -> None:
    run = service.run_request(sample=add_sample, backend="cpu", user=annotator)
    _burst(rq_settings, tmp_path)
    assert drain_queues("default") == 0  # the collect job the worker queued by name
    run.refresh_from_db()
    assert run.status == RunStatus.PASSED, run.message
    assert run.call_ok is True and run.exe_ok is True
    assert "[compare] 3 outputs match" in run.log
    assert run.toolchain["torch"] and run.host and run.device.startswith("CPU")
    add_sample.refresh_from_db()
    assert add_sample.latest_run_outcome == "passed"
    # Collecting again (a retried collect job) changes nothing.
    from annotations.jobs.runs import run_collect_job

    assert run_collect_job(run.pk, 1) is False


def test_wrong_candidate_round_trip_records_the_exe_failure(rq_settings: str, drain_queues: Any,
                                                             wrong_sample: Sample, annotator: Any,
                                                             tmp_path: Path) -> None:
    run = service.run_request(sample=wrong_sample, backend="cpu", user=annotator)
    _burst(rq_settings, tmp_path)
    drain_queues("default")
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and run.failed_stage == "exe"
    assert run.exe_ok is False and "elements differ" in run.stages["exe"]["message"]


def test_sigkill_of_a_worker_mid_job_is_lost_then_retried(rq_settings: str, add_sample: Sample, annotator: Any,
                                                          tmp_path: Path, settings: Any) -> None:
    # Long enough for the reference on a loaded 2-core VM; the looping candidate always hits it.
    settings.VERIFY_STEP_TIMEOUT_S = 25.0
    add_revision(add_sample, "candidate", candidate_with("while True:\n    pass\n"))
    run = service.run_request(sample=add_sample, backend="cpu", user=annotator)
    conn = redis.Redis.from_url(rq_settings)
    worker = subprocess.Popen([sys.executable, "-m", "pipeline.worker", "--queues", "cpu"],
                              env=_env(rq_settings, tmp_path, KS_HEARTBEAT_TTL="2"),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while conn.hget(keys.state(run.pk), "status") != b"running":
            assert time.monotonic() < deadline, "the job never started"
            time.sleep(0.2)
        run = service.run_refresh(run=run)
        assert run.status == RunStatus.RUNNING
        horses = [int(p) for p in filter(str.isdigit, os.listdir("/proc"))
                  if Path(f"/proc/{p}/stat").exists() and _ppid(int(p)) == worker.pid]
        for pid in [worker.pid, *horses]:
            os.kill(pid, signal.SIGKILL)
        worker.wait(timeout=30)
        deadline = time.monotonic() + 30
        while run.status == RunStatus.RUNNING and time.monotonic() < deadline:
            time.sleep(0.5)
            run = service.run_refresh(run=run)
        assert run.status == RunStatus.LOST
        retry = Run.objects.get(retry_of=run)
        assert retry.attempt == 2 and retry.status == RunStatus.QUEUED
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
    # The retry runs on a healthy worker: the looping candidate now ends as a timeout, not "running" forever.
    _burst(rq_settings, tmp_path)
    retry = service.run_refresh(run=retry)
    assert retry.status == RunStatus.TIMEOUT, retry.message


def _ppid(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return -1


def test_verify_command_waits_and_summarises(rq_settings: str, add_sample: Sample, wrong_sample: Sample,
                                             tmp_path: Path, capsys: Any) -> None:
    worker = subprocess.Popen([sys.executable, "-m", "pipeline.worker", "--queues", "cpu"],
                              env=_env(rq_settings, tmp_path), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        with pytest.raises(SystemExit) as exc:
            call_command("verify", "runs/add", "runs/add-wrong", "--backend", "cpu", "--wait", "--timeout", "500")
        assert exc.value.code == 1
        out = capsys.readouterr().out.strip().splitlines()
        assert out[-1] == "verified: passed=1 failed=1 timeout=0 crashed=0 error=0"
        assert any(line.startswith("runs/add-wrong: failed call=ok exe=FAIL") for line in out)
        call_command("verify", "runs/add", "--backend", "cpu", "--wait", "--timeout", "500")  # exit 0: no SystemExit
        assert capsys.readouterr().out.strip().splitlines()[-1] == (
            "verified: passed=1 failed=0 timeout=0 crashed=0 error=0")
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(timeout=60)


def test_verify_command_bad_input(rq_settings: str, add_sample: Sample) -> None:
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="exactly one"):
        call_command("verify")
    with pytest.raises(CommandError, match="Unknown task ids: nope"):
        call_command("verify", "nope")
    assert not Run.objects.exists()
