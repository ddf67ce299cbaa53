"""`manage.py doctor`: is this installation healthy, and what can this host run?

Reports the database (reachable, migrations applied), Redis (reachable), each RQ
queue's length and failed jobs, the workers listening on each queue, and the local
host's toolchain (the same probe a verification worker uses). Exits 1 when the
database or Redis cannot be reached, so scripts and container health checks can use it.
Never prints a password or a URL with credentials.
"""

from __future__ import annotations

import shutil
import subprocess
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor


def redacted_redis_url(url: str) -> str:
    """scheme://host:port/db: enough to tell which server, never the password."""
    parts = urlsplit(url)
    if parts.scheme == "unix":
        return f"unix://{parts.path}"
    host = parts.hostname or "?"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path or ''}"


def describe_database() -> str:
    db = settings.DATABASES[DEFAULT_DB_ALIAS]
    engine = str(db["ENGINE"]).rsplit(".", 1)[-1]
    if engine == "sqlite3":
        return f"SQLite at {db['NAME']}"
    host = db.get("HOST") or "localhost"
    port = f":{db['PORT']}" if db.get("PORT") else ""
    return f"{engine} database {db['NAME']!s} on {host}{port}"


class Command(BaseCommand):
    help = "Report the database, Redis, queues, workers and what this host can run. Exit 1 if the database or Redis is down."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--no-host", action="store_true",
                            help="skip probing this host's toolchain (PyTorch, Triton, compilers, GPUs)")

    def handle(self, *args: Any, **options: Any) -> None:
        problems: list[str] = []
        self._database(problems)
        redis_ok = self._redis(problems)
        if redis_ok:
            self._queues()
        self._llm()
        if not options["no_host"]:
            self._host()
        if problems:
            raise CommandError("unhealthy: " + "; ".join(problems), returncode=1)
        self.stdout.write(self.style.SUCCESS("healthy: the database and Redis answer"))

    def _line(self, label: str, ok: bool | None, text: str) -> None:
        mark = {True: self.style.SUCCESS("ok  "), False: self.style.ERROR("FAIL"), None: self.style.WARNING("warn")}[ok]
        self.stdout.write(f"[{mark}] {label:<10} {text}")

    def _database(self, problems: list[str]) -> None:
        where = describe_database()
        connection = connections[DEFAULT_DB_ALIAS]
        try:
            connection.ensure_connection()
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
            executor = MigrationExecutor(connection)
            pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
        except Exception as exc:  # any driver error means "unreachable" to the operator
            self._line("database", False, f"{where}: unreachable ({type(exc).__name__}: {_first_line(exc)})")
            problems.append("the database is unreachable")
            return
        if pending:
            self._line("database", None, f"{where}: reachable, {len(pending)} migration(s) not applied "
                                         "(run: python manage.py migrate)")
        else:
            self._line("database", True, f"{where}: reachable, migrations applied")

    def _redis(self, problems: list[str]) -> bool:
        import redis

        where = redacted_redis_url(settings.REDIS_URL)
        try:
            conn = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=3, socket_timeout=3)
            info = conn.info("server")
        except (redis.RedisError, OSError) as exc:
            self._line("redis", False, f"{where}: unreachable ({_first_line(exc)})")
            problems.append("Redis is unreachable")
            return False
        self._line("redis", True, f"{where}: reachable, Redis {info.get('redis_version', '?')}")
        return True

    def _queues(self) -> None:
        import django_rq
        from rq import Worker
        from rq.registry import FailedJobRegistry, StartedJobRegistry

        listening: dict[str, list[str]] = {}
        first = django_rq.get_queue(settings.RQ_QUEUE_NAMES[0])
        workers = Worker.all(connection=first.connection)
        for worker in workers:
            for name in worker.queue_names():
                listening.setdefault(name, []).append(f"{worker.name} ({worker.hostname}, {worker.get_state()})")
        for name in settings.RQ_QUEUE_NAMES:
            queue = django_rq.get_queue(name)
            failed = FailedJobRegistry(queue=queue).count
            running = StartedJobRegistry(queue=queue).count
            who = listening.get(name, [])
            text = f"{queue.count} queued, {running} running, {failed} failed; "
            text += f"{len(who)} worker(s): {', '.join(who)}" if who else "no worker listening"
            # default and cpu are served by every installation; GPU queues only where a GPU host joined.
            ok: bool | None = True if who else (None if name in ("default", "cpu") or queue.count else True)
            self._line("queue", ok, f"{name}: {text}")

    def _llm(self) -> None:
        if settings.LLM_BASE_URL and settings.LLM_MODEL:
            key = "an API key is set" if settings.LLM_API_KEY else "no API key"
            self._line("llm", True, f"model {settings.LLM_MODEL} at {urlsplit(settings.LLM_BASE_URL).netloc}, {key}")
        else:
            self._line("llm", None, "not configured (LLM_BASE_URL, LLM_MODEL): generation and chat say so; "
                                    "everything else works")

    def _host(self) -> None:
        try:
            from pipeline.execution.toolchain import BackendUnavailable, probe
        except ImportError:
            self._fallback_host()
            return
        try:
            info = probe()
        except (BackendUnavailable, subprocess.SubprocessError, OSError, ValueError) as exc:
            self._line("host", False, f"the toolchain probe failed: {_first_line(exc)}")
            self._fallback_host()
            return
        backends = info.get("backends") or []
        self._line("host", True if backends else None,
                   f"{info.get('host', '?')}: {info.get('device', '?')}; can run: "
                   f"{', '.join(backends) if backends else 'nothing (see below)'}")
        versions = [f"{name} {info[key]}" for name, key in (
            ("Python", "python"), ("PyTorch", "torch"), ("CUDA", "torch_cuda"), ("HIP", "torch_hip"),
            ("Triton", "triton")) if info.get(key)]
        self._line("toolchain", True if info.get("torch") else None, ", ".join(versions) or "PyTorch not importable")
        if info.get("error"):
            self._line("toolchain", None, str(info["error"]))
        if info.get("gpu_available"):
            self._line("gpu", True, f"{info.get('device_count', 0)} x {info.get('device', '?')} "
                                    f"({info.get('arch', '')}, driver {info.get('driver', '?')})")
        else:
            self._line("gpu", None, "no GPU visible to PyTorch: the cuda and rocm backends are not available here")
        for name, key in (("nvcc", "nvcc"), ("hipcc", "hipcc"), ("g++", "gxx")):
            self._line(name, True if info.get(key) else None, str(info.get(key) or "not found"))

    def _fallback_host(self) -> None:
        for name in ("nvcc", "hipcc", "g++"):
            path = shutil.which(name)
            self._line(name, True if path else None, path or "not found")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__
