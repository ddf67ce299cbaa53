"""Run one untrusted step in its own process session, with limits, a timeout and capped output.

Every step (a compile, a reference run, a candidate run) goes through `run_step`.
What it guarantees:
- its own session and process group (`setsid`), so a timeout or a cancel kills the
  whole group, grandchildren included, and the group is killed again when the step
  ends, so nothing it started in the background outlives it;
- PR_SET_PDEATHSIG: if the worker itself dies (SIGKILL), the step dies with it;
- resource limits set before exec: CPU seconds, largest file, processes, no core files;
- a scrubbed environment built from an allow-list (no secrets, no Redis or database
  URL) and a private temporary directory as HOME, TMPDIR and working directory;
- output capped: the first and last parts are kept, the bytes between are counted.

The limits are set by a tiny launcher (`python -S -c ...`, then exec) rather than a
`preexec_fn`, because builds run in threads and `preexec_fn` is unsafe with threads.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

# Names a step may inherit from the worker. Everything else (REDIS_URL, DATABASE_URL,
# *_API_KEY, SECRET_KEY, AWS_*, ...) is dropped by construction.
_ENV_ALLOW = (
    "PATH",
    "LANG",
    "LC_ALL",
    "TZ",
    "LD_LIBRARY_PATH",
    "CUDA_HOME",
    "CUDA_PATH",
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "ROCM_PATH",
    "HIP_PATH",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "HSA_OVERRIDE_GFX_VERSION",
    # NVLink multicast stays off on shared hosts (it can take a host's GPUs down).
    "NCCL_NVLS_ENABLE",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST",
    "NVSHMEM_DISABLE_NVLS",
)

# The launcher runs with -S (no site) so it starts in ~10 ms; it only uses builtins.
_LAUNCHER = r"""
import ctypes, json, os, resource, signal, sys
lim = json.loads(sys.argv[1])
try:
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
except Exception:
    pass
os.chdir(lim["cwd"])  # posix_spawn in 3.11 cannot chdir
if os.getppid() != lim["parent"]:
    os._exit(137)  # the worker died before we armed PDEATHSIG
for name, value in (("RLIMIT_CPU", lim["cpu_s"]), ("RLIMIT_FSIZE", lim["fsize"]),
                    ("RLIMIT_NPROC", lim["nproc"]), ("RLIMIT_CORE", 0)):
    try:
        resource.setrlimit(getattr(resource, name), (value, value))
    except (ValueError, OSError):
        pass
os.execvpe(sys.argv[2], sys.argv[2:], os.environ)
"""

EXITED = "exited"
SIGNALED = "signaled"
TIMED_OUT = "timeout"
CANCELLED = "cancelled"


@dataclass
class StepLimits:
    timeout_s: float = 300.0
    cpu_s: int = 600
    file_size_mb: int = 512
    nproc: int = 4096
    output_head_bytes: int = 64 * 1024
    output_tail_bytes: int = 64 * 1024


@dataclass
class StepOutcome:
    status: str  # exited | signaled | timeout | cancelled
    exit_code: int | None
    signal_name: str
    output: str
    omitted_bytes: int
    total_bytes: int
    wall_s: float
    cpu_s: float  # user + system of the step and the children it waited for
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == EXITED and self.exit_code == 0


def scrubbed_env(extra: Mapping[str, str] | None = None, *, home: str) -> dict[str, str]:
    env = {k: os.environ[k] for k in _ENV_ALLOW if k in os.environ}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update({"HOME": home, "TMPDIR": home, "PYTHONNOUSERSITE": "1", "PYTHONUNBUFFERED": "1"})
    env.setdefault("NCCL_NVLS_ENABLE", "0")
    env.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    env.setdefault("NVSHMEM_DISABLE_NVLS", "1")
    if extra:
        env.update(extra)
    return env


@contextlib.contextmanager
def private_dir(prefix: str = "ks-step-") -> Iterator[str]:
    path = tempfile.mkdtemp(prefix=prefix)  # mode 0700
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


class _CappedOutput:
    """Keeps the first `head` and the last `tail` bytes; streams complete lines of the head."""

    def __init__(self, head: int, tail: int, on_line: Callable[[str], None] | None) -> None:
        self.head_limit, self.tail_limit = head, tail
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.on_line = on_line
        self._pending = bytearray()
        self._announced = False

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_limit - len(self.head)
        if room > 0:
            part = chunk[:room]
            self.head += part
            self._stream(part)
            chunk = chunk[room:]
        if chunk:
            if not self._announced and self.on_line:
                self._flush_pending()
                self.on_line("[output over the cap: the live log pauses here; the end follows when the step ends]")
                self._announced = True
            self.tail += chunk
            if len(self.tail) > self.tail_limit:
                del self.tail[: len(self.tail) - self.tail_limit]

    def _stream(self, data: bytes) -> None:
        if not self.on_line:
            return
        self._pending += data
        while b"\n" in self._pending:
            line, _, rest = bytes(self._pending).partition(b"\n")
            self._pending = bytearray(rest)
            self.on_line(line.decode("utf-8", "replace"))

    def _flush_pending(self) -> None:
        if self.on_line and self._pending:
            self.on_line(self._pending.decode("utf-8", "replace"))
            self._pending = bytearray()

    @property
    def omitted(self) -> int:
        return max(0, self.total - len(self.head) - len(self.tail))

    def finish(self) -> str:
        self._flush_pending()
        text = self.head.decode("utf-8", "replace")
        if self.tail:
            marker = f"\n[... {self.omitted} bytes of output omitted ...]\n" if self.omitted else ""
            tail_text = self.tail.decode("utf-8", "replace")
            if self.on_line:
                if marker:
                    self.on_line(marker.strip())
                for line in tail_text.splitlines():
                    self.on_line(line)
            text += marker + tail_text
        return text


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def run_step(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    limits: StepLimits,
    on_line: Callable[[str], None] | None = None,
    cancel: threading.Event | None = None,
) -> StepOutcome:
    """Run argv sandboxed and wait for it; never raises for anything the step does."""
    lim = {
        "parent": os.getpid(),
        "cpu_s": int(limits.cpu_s),
        "fsize": int(limits.file_size_mb) * 1024 * 1024,
        "nproc": int(limits.nproc),
        "cwd": cwd,
    }
    full = [sys.executable, "-S", "-c", _LAUNCHER, json.dumps(lim), *argv]
    out = _CappedOutput(limits.output_head_bytes, limits.output_tail_bytes, on_line)
    read_fd, write_fd = os.pipe()
    start = time.monotonic()
    try:
        pid = _spawn(full, env=env, stdout=write_fd)
    finally:
        os.close(write_fd)
    deadline = start + limits.timeout_s
    verdict = ""
    status: int | None = None
    rusage = None
    grace_until = 0.0
    try:
        eof = False
        while True:
            if status is None:
                wpid, st, ru = os.wait4(pid, os.WNOHANG)
                if wpid == pid:
                    status, rusage = st, ru
                    # The step is gone: kill what it left in its group so the pipe closes;
                    # a process that escaped with setsid gets a short grace, not a wait.
                    _kill_group(pid)
                    grace_until = time.monotonic() + 2.0
            if status is not None and (eof or time.monotonic() > grace_until):
                break
            if status is None:
                if time.monotonic() >= deadline:
                    verdict = TIMED_OUT
                    _kill_group(pid)
                elif cancel is not None and cancel.is_set():
                    verdict = CANCELLED
                    _kill_group(pid)
            if eof:
                time.sleep(0.02)
                continue
            ready, _, _ = select.select([read_fd], [], [], 0.05)
            if ready:
                chunk = os.read(read_fd, 1 << 16)
                if chunk:
                    out.feed(chunk)
                else:
                    eof = True
    finally:
        os.close(read_fd)
        if status is None:
            _kill_group(pid)
            _, status, rusage = os.wait4(pid, 0)
        _kill_group(pid)
    wall = time.monotonic() - start
    cpu = (rusage.ru_utime + rusage.ru_stime) if rusage is not None else 0.0
    text = out.finish()
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = _signal_name(sig)
        if verdict:
            return StepOutcome(verdict, None, name, text, out.omitted, out.total, wall, cpu)
        if sig == signal.SIGXCPU:
            return StepOutcome(TIMED_OUT, None, name, text + "\n[CPU time limit reached]", out.omitted, out.total, wall, cpu)
        return StepOutcome(SIGNALED, None, name, text, out.omitted, out.total, wall, cpu)
    code = os.WEXITSTATUS(status)
    if verdict:
        return StepOutcome(verdict, code, "", text, out.omitted, out.total, wall, cpu)
    return StepOutcome(EXITED, code, "", text, out.omitted, out.total, wall, cpu)


def _spawn(argv: Sequence[str], *, env: Mapping[str, str], stdout: int) -> int:
    # posix_spawn with setsid: no Python code runs between fork and exec (thread-safe).
    devnull = os.open(os.devnull, os.O_RDONLY)
    try:
        return os.posix_spawn(
            argv[0],
            list(argv),
            dict(env),
            file_actions=[
                (os.POSIX_SPAWN_DUP2, devnull, 0),
                (os.POSIX_SPAWN_DUP2, stdout, 1),
                (os.POSIX_SPAWN_DUP2, stdout, 2),
            ],
            setsid=True,
        )
    finally:
        os.close(devnull)


def _signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"SIG{sig}"
