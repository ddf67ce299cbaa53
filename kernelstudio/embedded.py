"""`make run`: the whole product on one machine with one command.

Starts, in order: a private Redis (only when REDIS_URL is unset), `migrate`, the demo
samples and logins (`load_demo --users`), an RQ worker for the `default` queue
(`manage.py rqworker default`), the verification worker for the `cpu` queue
(`python -m pipeline.worker --queues cpu`, without database credentials), and uvicorn
serving the site. Ctrl-C (SIGINT) or SIGTERM stops everything it
started and leaves no process behind.

Django is not imported here: every Django step runs as its own `manage.py`
subprocess, so this supervisor holds no database connection and no settings that a
child could disagree with. Each child runs in its own session (process group), so
a terminal's Ctrl-C reaches only the supervisor, which then stops the children in
order (web first, Redis last): SIGTERM to the group, a grace period, then SIGKILL.
On Linux the supervisor is also a "child subreaper", so grandchildren whose parent
died (an RQ work-horse, a sandboxed verification step) are re-parented to it and are
found and stopped too instead of escaping to init.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from pipeline.redis_server import RedisServer

BASE_DIR = Path(__file__).resolve().parent.parent
DEFAULT_PORT = 8000
GRACE_SECONDS = 10.0
PR_SET_CHILD_SUBREAPER = 36


class EmbeddedError(RuntimeError):
    """A start-up step failed; the message says which and why."""


class StopRequested(Exception):  # noqa: N818 - a control-flow signal, not an error
    """Ctrl-C or SIGTERM arrived."""


@dataclass
class Child:
    name: str
    process: subprocess.Popen[bytes]
    optional: bool = False
    reported: bool = False


@dataclass
class Supervisor:
    children: list[Child] = field(default_factory=list)
    redis: RedisServer | None = None  # stopped last

    def start(self, name: str, argv: Sequence[str], env: dict[str, str], *, optional: bool = False) -> Child:
        process = subprocess.Popen(list(argv), cwd=BASE_DIR, env=env, start_new_session=True)
        child = Child(name, process, optional)
        self.children.append(child)
        return child

    def exited(self) -> Child | None:
        """The first required child that has exited; an optional one is reported once and tolerated."""
        for child in self.children:
            if child.process.poll() is None:
                continue
            if not child.optional:
                return child
            if not child.reported:
                child.reported = True
                print(f"[embedded] warning: the {child.name} process exited with code {child.process.returncode} "
                      "(see its message above); the site keeps running without it", file=sys.stderr, flush=True)
        return None

    def stop_all(self) -> None:
        # Snapshot the whole tree first: once a parent dies its children are harder to find.
        tree = {pid for child in self.children for pid in descendants(child.process.pid)}
        for child in reversed(self.children):  # web first, worker next
            _signal_group(child.process.pid, signal.SIGTERM)
        deadline = time.monotonic() + GRACE_SECONDS
        for child in reversed(self.children):
            if child.name.startswith("worker") and child.process.poll() is None:
                # RQ's first SIGTERM waits for the running job; a second one stops it (cold shutdown).
                time.sleep(0.5)
                _signal_group(child.process.pid, signal.SIGTERM)
            _wait(child.process, deadline)
        for child in self.children:
            if child.process.poll() is None:
                _signal_group(child.process.pid, signal.SIGKILL)
                child.process.wait()
            else:
                # The leader is gone; anything left in its group is not.
                _signal_group(child.process.pid, signal.SIGKILL)
        if self.redis is not None:
            self.redis.stop()
            self.redis = None
        known = {child.process.pid for child in self.children}
        _kill_leftovers((tree | set(descendants(os.getpid()))) - known)
        self.children.clear()


def _wait(process: subprocess.Popen[bytes], deadline: float) -> None:
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=max(0.0, deadline - time.monotonic()))


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _kill_leftovers(pids: set[int]) -> None:
    for pid in pids:
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue
    # Reap the ones that were re-parented to us (subreaper), so no zombie is left either;
    # WNOHANG with a deadline, because a process stuck in the kernel must not hang the exit.
    waiting = set(pids)
    deadline = time.monotonic() + 5.0
    while waiting and time.monotonic() < deadline:
        for pid in list(waiting):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:  # not our child: init reaps it
                waiting.discard(pid)
                continue
            if done:
                waiting.discard(pid)
        if waiting:
            time.sleep(0.05)


def descendants(root: int) -> list[int]:
    """Every live process below `root`, read from /proc (empty where there is no /proc)."""
    parents: dict[int, list[int]] = {}
    proc = Path("/proc")
    if not proc.is_dir():
        return []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name may contain spaces and parentheses: the fields after the last ')' are fixed.
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) < 2 or fields[0] == "Z":
            continue
        parents.setdefault(int(fields[1]), []).append(int(entry.name))
    found: list[int] = []
    stack = [root]
    while stack:
        for child in parents.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def become_subreaper() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def port_from(value: str) -> int:
    try:
        port = int(value)
    except ValueError as exc:
        raise EmbeddedError(f"PORT={value!r}: expected a number from 1 to 65535") from exc
    if not 1 <= port <= 65535:
        raise EmbeddedError(f"PORT={port}: expected a number from 1 to 65535")
    return port


def check_port_free(host: str, port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise EmbeddedError(
                f"{host}:{port} is already in use ({exc.strerror}); stop what runs there or pick another "
                f"port: PORT=8001 make run"
            ) from exc


def check_redis(url: str) -> None:
    """Fail before starting anything when the given Redis does not answer (workers would just crash)."""
    import redis

    parts = urlsplit(url)
    where = f"{parts.hostname or parts.path}:{parts.port or 6379}" if parts.scheme != "unix" else parts.path
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=3, socket_timeout=3)
        client.ping()
        client.close()
    except (redis.RedisError, OSError, ValueError) as exc:
        # Only host and port: the URL itself may carry a password.
        raise EmbeddedError(f"REDIS_URL: Redis at {where} does not answer ({type(exc).__name__}); "
                            "start it, or unset REDIS_URL to let `make run` start its own") from exc


def wait_for_port(host: str, port: int, supervisor: Supervisor, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        dead = supervisor.exited()
        if dead is not None:
            raise EmbeddedError(f"the {dead.name} process exited with code {dead.process.returncode} during start-up")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise EmbeddedError(f"the web server did not answer on {host}:{port} within {timeout:.0f} s")


def manage(env: dict[str, str], *args: str) -> None:
    """Run one manage.py step in the foreground; its output goes straight to the terminal."""
    process = subprocess.Popen([sys.executable, "manage.py", *args], cwd=BASE_DIR, env=env, start_new_session=True)
    try:
        code = process.wait()
    except StopRequested:
        _signal_group(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            _signal_group(process.pid, signal.SIGKILL)
            process.wait()
        raise
    if code != 0:
        raise EmbeddedError(f"`manage.py {' '.join(args)}` failed with exit code {code}")


def build_env(base: dict[str, str]) -> dict[str, str]:
    env = dict(base)
    env.setdefault("DJANGO_SETTINGS_MODULE", "kernelstudio.settings")
    env.setdefault("KS_DATA_DIR", str(BASE_DIR / "var"))
    env["PYTHONUNBUFFERED"] = "1"
    return env


# What a verification worker may see of the environment: no database URL, no secret key, no LLM keys.
WORKER_ENV_DROP_PREFIXES = ("DATABASE_", "SECRET_KEY", "LLM_", "KS_DEMO_PASSWORD", "PG", "AWS_", "OPENAI_")


def worker_env(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if not k.startswith(WORKER_ENV_DROP_PREFIXES)}


def _on_signal(signum: int, frame: object) -> None:
    raise StopRequested(signal.Signals(signum).name)


def run(*, host: str, port: int, load_demo: bool, env: dict[str, str]) -> int:
    supervisor = Supervisor()
    say = print
    try:
        check_port_free(host, port)
        Path(env["KS_DATA_DIR"]).mkdir(parents=True, exist_ok=True)
        if env.get("REDIS_URL"):
            check_redis(env["REDIS_URL"])
            # The URL may carry a password: name where it came from, not what it is.
            redis_line = "Redis: REDIS_URL from the environment"
        else:
            from pipeline.redis_server import start_redis

            server = start_redis()
            supervisor.redis = server
            env["REDIS_URL"] = server.url
            redis_line = f"Redis: started here on 127.0.0.1:{server.port} (stopped on exit)"
        say(f"[embedded] {redis_line}", flush=True)
        say("[embedded] migrating the database", flush=True)
        manage(env, "migrate", "--noinput", "-v", "0")
        if load_demo:
            manage(env, "load_demo", "--users")
        supervisor.start("worker-default", [sys.executable, "manage.py", "rqworker", "default"], env)
        # Nobody may be looking at a page when a worker dies: the sweeper marks its run lost and retries it.
        supervisor.start("runs-sweep", [sys.executable, "manage.py", "runs_sweep", "--every", "30", "--quiet"], env)
        # Untrusted code runs on `cpu`: its worker is the GPU hosts' one (no Django), started without
        # database credentials or keys, so a sample's test has nothing to steal.
        supervisor.start("worker-cpu", [sys.executable, "-m", "pipeline.worker", "--queues", "cpu"],
                         worker_env(env), optional=True)
        supervisor.start(
            "web",
            [sys.executable, "-m", "uvicorn", "kernelstudio.asgi:application", "--host", host, "--port", str(port),
             "--lifespan", "off", "--no-server-header"],
            env,
        )
        wait_for_port(host, port, supervisor)
        database = "DATABASE_URL from the environment" if env.get("DATABASE_URL") else (
            f"SQLite at {Path(env['KS_DATA_DIR']) / 'kernelstudio.sqlite3'}")
        say("", flush=True)
        say(f"Kernel Studio is running at http://{host}:{port}/", flush=True)
        say(f"  database: {database}", flush=True)
        say(f"  {redis_line}", flush=True)
        say("  workers: `default` (Django jobs), `cpu` (verification on this host's CPU)", flush=True)
        say("Press Ctrl-C to stop everything.", flush=True)
        while True:
            dead = supervisor.exited()
            if dead is not None:
                raise EmbeddedError(f"the {dead.name} process exited with code {dead.process.returncode}")
            time.sleep(0.5)
    except StopRequested as stop:
        say(f"\n[embedded] {stop.args[0] if stop.args else 'stop'} received: stopping", flush=True)
        code = 0
    except EmbeddedError as exc:
        say(f"[embedded] error: {exc}", file=sys.stderr, flush=True)
        code = 1
    finally:
        # A second Ctrl-C while stopping must not abandon the children half-stopped.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        supervisor.stop_all()
    say("[embedded] stopped", flush=True)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernelstudio.embedded", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    parser.add_argument("--port", default=os.environ.get("PORT", str(DEFAULT_PORT)))
    parser.add_argument("--no-demo", action="store_true", help="skip loading the demo samples and logins")
    args = parser.parse_args(argv)
    try:
        port = port_from(str(args.port))
    except EmbeddedError as exc:
        print(f"[embedded] error: {exc}", file=sys.stderr)
        return 2
    become_subreaper()
    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)
    return run(host=args.host, port=port, load_demo=not args.no_demo, env=build_env(dict(os.environ)))


if __name__ == "__main__":
    sys.exit(main())
