"""`manage.py doctor` against a real database and a real Redis (and a dead one of each)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotations.management.commands.doctor import redacted_redis_url
from pipeline.redis_server import free_port

ROOT = Path(__file__).resolve().parent.parent.parent


def _doctor(*args: str) -> str:
    out = io.StringIO()
    call_command("doctor", *args, stdout=out, no_color=True)
    return out.getvalue()


def _subprocess_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env.update(KS_DATA_DIR=str(tmp_path), **extra)
    return env


@pytest.mark.django_db
def test_doctor_reports_queues_and_workers(rq_settings: str) -> None:
    import django_rq
    from rq import Queue, Worker

    # A plain RQ queue: django-rq's own defers enqueueing to a commit that a test transaction never makes.
    Queue("cpu", connection=django_rq.get_connection("cpu")).enqueue("time.sleep", 0)
    queue = django_rq.get_queue("gpu-cuda")
    worker = Worker([queue], connection=queue.connection, name="h200-node-7")
    worker.register_birth()
    try:
        text = _doctor("--no-host")
    finally:
        worker.register_death()
    assert "reachable, migrations applied" in text
    assert "reachable, Redis" in text
    assert "cpu: 1 queued, 0 running, 0 failed; no worker listening" in text
    assert "gpu-cuda: 0 queued, 0 running, 0 failed; 1 worker(s): h200-node-7" in text
    assert "healthy: the database and Redis answer" in text


@pytest.mark.django_db
def test_doctor_fails_when_redis_is_down(settings: object) -> None:
    dead = f"redis://127.0.0.1:{free_port()}/0"
    settings.REDIS_URL = dead  # type: ignore[attr-defined]
    settings.RQ_QUEUES = {n: {"URL": dead} for n in ("default", "cpu", "gpu-rocm", "gpu-cuda")}  # type: ignore[attr-defined]
    out = io.StringIO()
    with pytest.raises(CommandError) as info:
        call_command("doctor", "--no-host", stdout=out, no_color=True)
    assert info.value.returncode == 1
    assert "Redis is unreachable" in str(info.value)
    assert "[FAIL] redis" in out.getvalue() and "unreachable" in out.getvalue()
    # The database line still reports: one failure does not hide the rest.
    assert "reachable, migrations applied" in out.getvalue()


def test_doctor_fails_when_the_database_is_down_and_hides_its_password(tmp_path: Path, redis_url: str) -> None:
    env = _subprocess_env(tmp_path, DATABASE_URL=f"postgres://ks:s3cret-pw@127.0.0.1:{free_port()}/ks_doctor",
                          REDIS_URL=redis_url)
    out = subprocess.run([sys.executable, "manage.py", "doctor", "--no-host", "--no-color"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1
    assert "[FAIL] database" in out.stdout and "unreachable" in out.stdout
    assert "the database is unreachable" in out.stderr
    assert "s3cret-pw" not in out.stdout + out.stderr
    assert "[ok  ] redis" in out.stdout


def test_doctor_warns_about_unapplied_migrations(tmp_path: Path, redis_url: str) -> None:
    # A fresh SQLite file that was never migrated: reachable, but behind.
    env = _subprocess_env(tmp_path, REDIS_URL=redis_url)
    out = subprocess.run([sys.executable, "manage.py", "doctor", "--no-host", "--no-color"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "migration(s) not applied (run: python manage.py migrate)" in out.stdout


@pytest.mark.django_db
def test_doctor_shows_the_llm_endpoint_but_never_its_key(rq_settings: str, settings: object) -> None:
    settings.LLM_BASE_URL = "https://llm.example.org/v1"  # type: ignore[attr-defined]
    settings.LLM_MODEL = "qwen-coder"  # type: ignore[attr-defined]
    settings.LLM_API_KEY = "sk-very-secret"  # type: ignore[attr-defined]
    text = _doctor("--no-host")
    assert "model qwen-coder at llm.example.org, an API key is set" in text
    assert "sk-very-secret" not in text


@pytest.mark.django_db
def test_doctor_without_llm_says_what_still_works(rq_settings: str, settings: object) -> None:
    settings.LLM_BASE_URL = ""  # type: ignore[attr-defined]
    text = _doctor("--no-host")
    assert "[warn] llm" in text and "everything else works" in text


@pytest.mark.slow
@pytest.mark.django_db
def test_doctor_probes_what_this_host_can_run(rq_settings: str) -> None:
    text = _doctor()
    assert "[ok  ] host" in text or "[warn] host" in text
    assert "can run:" in text
    for tool in ("nvcc", "hipcc", "g++"):
        assert f"] {tool}" in text
    try:
        import triton  # noqa: F401
    except ImportError:
        return
    assert "can run: cpu" in text


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://:s3cret@cache.internal:6380/2", "redis://cache.internal:6380/2"),
        ("rediss://user:pw@10.0.0.5/0", "rediss://10.0.0.5/0"),
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
        ("unix:///run/redis.sock", "unix:///run/redis.sock"),
    ],
)
def test_redis_url_is_shown_without_credentials(url: str, shown: str) -> None:
    assert redacted_redis_url(url) == shown
