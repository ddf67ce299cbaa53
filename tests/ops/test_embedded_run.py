"""`make run`'s supervisor, run for real: its own Redis, migrate, demo data, an RQ worker, uvicorn."""

from __future__ import annotations

import http.cookiejar
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from kernelstudio.embedded import descendants
from pipeline.redis_server import free_port

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO_PASSWORD = "demo-password-for-tests"


def _env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "KS_DATA_DIR", "PORT"}}
    # SQLite in a temp dir: never the developer's var/ or a PostgreSQL database.
    env.update(KS_DATA_DIR=str(data_dir), KS_DEMO_PASSWORD=DEMO_PASSWORD, PYTHONUNBUFFERED="1")
    return env


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return state[state.rfind(")") + 2 :].split()[0] != "Z"


def _wait_for_line(log: Path, pattern: str, process: subprocess.Popen[bytes], timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        if re.search(pattern, text):
            return text
        if process.poll() is not None:
            pytest.fail(f"embedded run exited with {process.returncode}:\n{text[-3000:]}")
        time.sleep(0.3)
    pytest.fail(f"{pattern!r} not printed within {timeout} s:\n{log.read_text(errors='replace')[-3000:]}")


def _login(base: str, username: str, password: str) -> urllib.request.OpenerDirector:
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    page = opener.open(f"{base}/login/", timeout=30).read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert token, page[:500]
    data = urllib.parse.urlencode(
        {"username": username, "password": password, "csrfmiddlewaretoken": token.group(1)}
    ).encode()
    request = urllib.request.Request(f"{base}/login/", data=data, headers={"Referer": f"{base}/login/"})
    opener.open(request, timeout=30).read()
    return opener


@pytest.mark.slow
def test_embedded_run_serves_demo_and_leaves_no_process(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "embedded.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "kernelstudio.embedded", "--port", str(port)],
            cwd=ROOT, env=_env(tmp_path / "data"), stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
    try:
        text = _wait_for_line(log, r"Kernel Studio is running at http://127\.0\.0\.1:\d+/", process, 240)
        assert f"http://127.0.0.1:{port}/" in text
        # The demo logins are printed, with the password, and labelled as demo logins.
        for name in ("demo-annotator", "demo-reviewer", "demo-maintainer"):
            assert re.search(rf"{name}\s+\w+\s+password: {DEMO_PASSWORD}", text), text
        assert "not for a shared server" in text
        assert "Redis: started here" in text

        base = f"http://127.0.0.1:{port}"
        opener = _login(base, "demo-annotator", DEMO_PASSWORD)
        page = opener.open(f"{base}/samples/", timeout=30).read().decode()
        for task_id in ("demo/vector_add", "demo/relu_scale", "demo/row_softmax", "demo/transpose_copy",
                        "demo/row_sum"):
            assert task_id in page
        # A worker listens on each queue of the embedded run.
        _wait_for_line(log, r"Listening on default\.\.\.", process, 60)
        _wait_for_line(log, r"Listening on cpu\.\.\.", process, 120)

        tree = descendants(process.pid)
        names = {Path(f"/proc/{pid}/comm").read_text().strip() for pid in tree if _alive(pid)}
        assert any("redis" in n for n in names), names
        assert len(tree) >= 4  # redis-server, two workers, uvicorn
        # The cpu worker runs untrusted code: it must not hold the database location or the demo password.
        cpu_workers = [pid for pid in tree if _alive(pid) and b"pipeline.worker" in Path(f"/proc/{pid}/cmdline").read_bytes()]
        assert cpu_workers
        for pid in cpu_workers:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
            assert b"KS_DEMO_PASSWORD" not in environ and b"DATABASE_URL" not in environ

        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    text = log.read_text(errors="replace")
    assert "SIGINT received: stopping" in text
    assert "[embedded] stopped" in text
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(pid) for pid in tree):
        time.sleep(0.2)
    assert [pid for pid in tree if _alive(pid)] == []
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


@pytest.mark.slow
def test_embedded_run_sigterm_stops_a_worker_busy_with_a_job(tmp_path: Path) -> None:
    """SIGTERM while the worker's work-horse runs a job: the horse (its own session) is stopped too."""
    port = free_port()
    log = tmp_path / "embedded.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "kernelstudio.embedded", "--port", str(port), "--no-demo"],
            cwd=ROOT, env=_env(tmp_path / "data"), stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
    try:
        text = _wait_for_line(log, r"Redis: started here on 127\.0\.0\.1:(\d+)", process, 120)
        redis_port = re.search(r"Redis: started here on 127\.0\.0\.1:(\d+)", text).group(1)  # type: ignore[union-attr]
        text = _wait_for_line(log, r"Listening on cpu\.\.\.", process, 120)
        # The cpu worker's line: "Worker <name>: started with PID <pid>" followed by "Listening on cpu".
        pids = re.findall(r"started with PID (\d+)", text)
        worker_pid = next(int(p) for p in pids if b"pipeline.worker" in Path(f"/proc/{p}/cmdline").read_bytes())
        import redis
        from rq import Queue

        conn = redis.Redis.from_url(f"redis://127.0.0.1:{redis_port}/0")
        Queue("cpu", connection=conn).enqueue("time.sleep", 600, job_timeout=900)
        _wait_for_line(log, r"cpu: time\.sleep\(600\)", process, 60)
        # The work-horse: a forked child of the worker, in a process group of its own (RQ calls setpgrp).
        deadline = time.monotonic() + 30
        horses: list[int] = []
        while time.monotonic() < deadline and not horses:
            horses = [pid for pid in descendants(worker_pid) if _alive(pid)]
            time.sleep(0.2)
        assert horses, log.read_text()[-2000:]
        assert any(os.getpgid(pid) != os.getpgid(worker_pid) for pid in horses)
        tree = descendants(process.pid)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
        conn.close()
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert "SIGTERM received: stopping" in log.read_text()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(pid) for pid in tree):
        time.sleep(0.2)
    assert [pid for pid in tree if _alive(pid)] == []


def test_embedded_run_refuses_a_port_in_use(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        out = subprocess.run(
            [sys.executable, "-m", "kernelstudio.embedded", "--port", str(port)],
            cwd=ROOT, env=_env(tmp_path / "data"), capture_output=True, text=True, timeout=60,
        )
    assert out.returncode == 1
    assert f"127.0.0.1:{port} is already in use" in out.stderr
    assert "PORT=8001 make run" in out.stderr
    # It failed before starting anything: no Redis was started, no database was created.
    assert "Redis: started here" not in out.stdout
    assert not (tmp_path / "data" / "kernelstudio.sqlite3").exists()


@pytest.mark.parametrize("value", ["abc", "0", "70000"])
def test_embedded_run_refuses_a_bad_port(tmp_path: Path, value: str) -> None:
    env = _env(tmp_path / "data")
    env["PORT"] = value
    out = subprocess.run([sys.executable, "-m", "kernelstudio.embedded"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert f"PORT={value}" in out.stderr or f"PORT={value!r}" in out.stderr


def test_embedded_run_refuses_an_unreachable_redis_without_showing_its_password(tmp_path: Path) -> None:
    env = _env(tmp_path / "data")
    env["REDIS_URL"] = f"redis://:hunter2-secret@127.0.0.1:{free_port()}/0"
    out = subprocess.run([sys.executable, "-m", "kernelstudio.embedded", "--port", str(free_port())], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert "REDIS_URL: Redis at 127.0.0.1:" in out.stderr and "does not answer" in out.stderr
    assert "hunter2-secret" not in out.stdout + out.stderr
    # Nothing was started or migrated.
    assert not (tmp_path / "data" / "kernelstudio.sqlite3").exists()
