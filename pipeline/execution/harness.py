"""The program that runs INSIDE a sandboxed step: one side (reference or candidate) of a sample.

`python -m pipeline.execution.harness job.json` in the step's private directory.
It builds the module namespace (code or extension, wrapper, test), runs the test
in TritonBench gold style or with pytest, saves `result_gold` with `torch.save`,
and times the recorded entry-point calls. Progress goes to an events file, one
JSON object per line, written unbuffered: if the step crashes (SIGSEGV, SIGABRT),
the last event tells the worker which stage it died in.

Exit codes: 0 done; 3 the sample failed (the event says which stage); anything
else or a signal is a crash.
"""

from __future__ import annotations

import builtins
import faulthandler
import json
import os
import random
import sys
import time
import traceback
import types
from typing import Any

SAMPLE_FAILED = 3
_HERE = os.path.abspath(__file__)
_OWN_FILES = {"test_code.py", "reference.py", "candidate.py", "wrapper.py"}
MAX_RECORDED_CALLS = 8
ALLOWED_SCALARS = (bool, int, float, complex, str, type(None))


class _Events:
    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def emit(self, event: str, **data: Any) -> None:
        data.update(event=event, t=time.time())
        os.write(self.fd, (json.dumps(data, default=str) + "\n").encode())


class _SampleFailure(Exception):
    def __init__(self, stage: str, message: str) -> None:
        super().__init__(message)
        self.stage = stage
        self.message = message


def _seed(seed: int) -> None:
    import torch

    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy

        numpy.random.seed(seed)
    except ImportError:
        pass


def _clone(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, list | tuple):
        return type(value)(_clone(v) for v in value) if not hasattr(value, "_fields") else value
    if isinstance(value, dict):
        return {k: _clone(v) for k, v in value.items()}
    return value


class _Recorder:
    """Wraps the entry point: records the arguments of its first calls for the perf stage."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self.calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        self.__name__ = getattr(fn, "__name__", "entry_point")
        self.__doc__ = getattr(fn, "__doc__", None)
        self.__wrapped__ = fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(self.calls) < MAX_RECORDED_CALLS:
            self.calls.append((_clone(args), _clone(kwargs)))
        return self.fn(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.fn, name)


def _to_saveable(value: Any, path: str) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().cpu().contiguous().clone()
    if isinstance(value, dict):
        return {str(k): _to_saveable(v, f"{path}[{k!r}]") for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_to_saveable(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, ALLOWED_SCALARS):
        return value
    try:
        import numpy

        if isinstance(value, numpy.ndarray | numpy.generic):
            return torch.as_tensor(numpy.asarray(value))
    except ImportError:
        pass
    raise _SampleFailure(
        "call", f"{path} is a {type(value).__name__}; result_gold may hold tensors, numbers, strings and containers"
    )


def _exception_stage(exc: BaseException) -> str:
    # The test's own assertion failing means wrong outputs (exe); anything else means it did not run (call).
    return "exe" if isinstance(exc, AssertionError) else "call"


def _format_exc(exc: BaseException, limit_lines: int = 40) -> str:
    """The error first, then where in the sample's own files, then the traceback without our frames."""
    head = "".join(traceback.format_exception_only(exc)).strip()
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if os.path.abspath(f.filename) != _HERE]
    own = [f for f in frames if os.path.basename(f.filename) in _OWN_FILES]
    where = ""
    if own:
        f = own[-1]
        where = f"\nat {os.path.basename(f.filename)}:{f.lineno} in {f.name}: {(f.line or '').strip()}"
    tb_lines = "".join(traceback.format_list(frames)).rstrip().splitlines()
    if len(tb_lines) > limit_lines:
        tb_lines = tb_lines[:6] + ["  ..."] + tb_lines[-(limit_lines - 7):]
    return head + where + ("\n\nTraceback (most recent call last):\n" + "\n".join(tb_lines) if tb_lines else "")


def _load_extension(path: str, name: str) -> types.ModuleType:
    import importlib.machinery
    import importlib.util

    import torch  # noqa: F401  (the extension links against torch's libraries)

    loader = importlib.machinery.ExtensionFileLoader(name, path)
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    if spec is None:
        raise _SampleFailure("call", f"cannot load the built extension {path}")
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _run_pytest(module: types.ModuleType, test_path: str, seed: int) -> tuple[int, list[str]]:
    import pytest

    failures: list[str] = []

    class Plugin:
        @pytest.hookimpl(tryfirst=True)
        def pytest_pycollect_makemodule(self, module_path: Any, parent: Any) -> Any:
            if str(module_path) == os.path.abspath(test_path):
                m = pytest.Module.from_parent(parent, path=module_path)
                m._getobj = lambda: module  # type: ignore[method-assign]
                return m
            return None

        def pytest_runtest_setup(self, item: Any) -> None:
            _seed(seed)

        def pytest_runtest_logreport(self, report: Any) -> None:
            if report.failed:
                text = str(report.longrepr)
                kind = "exe" if "AssertionError" in text or "assert " in text else "call"
                failures.append(f"[{kind}] {report.nodeid}: " + "\n".join(text.splitlines()[-25:]))

    code = pytest.main(
        [test_path, "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--no-header", "-rN",
         "--rootdir", os.path.dirname(os.path.abspath(test_path)), "-o", "python_files=*.py"],
        plugins=[Plugin()],
    )
    return int(code), failures


def _time_calls(entry: Any, calls: list[tuple[tuple[Any, ...], dict[str, Any]]], repeats: int, backend: str) -> dict[str, Any]:
    import statistics

    import torch

    per_call = []
    for args, kwargs in calls:
        for _ in range(3):  # warm-up (also JIT compile)
            entry(*args, **kwargs)
        torch.cuda.synchronize()
        samples = []
        for _ in range(repeats):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            entry(*args, **kwargs)
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end))
        per_call.append(statistics.median(samples))
    return {"ms": sum(per_call), "per_call_ms": per_call, "calls": len(per_call), "repeats": repeats}


def main(job_path: str) -> int:
    faulthandler.enable()
    with open(job_path) as fh:
        job = json.load(fh)
    events = _Events(job["events_path"])
    side = job["side"]
    events.emit("start", side=side, pid=os.getpid())
    lock_fd = None
    t_lock = 0.0
    try:
        import torch

        if job["backend"] == "cpu":
            from pipeline.execution import cpu_device

            cpu_device.install()
        # One real module object from the start: functions defined by the code or the
        # wrapper must share their globals with the test (and with pytest's collection).
        module = types.ModuleType("test_subject")
        ns: dict[str, Any] = module.__dict__
        ns.update({"__name__": "__main__", "__builtins__": builtins})
        stage = "call"
        if job.get("ext_path"):
            ext = _load_extension(job["ext_path"], job["ext_name"])
            ns.update({k: getattr(ext, k) for k in dir(ext) if not k.startswith("_")})
            ns[f"{side}_ext"] = ext
        if job.get("code_path"):
            with open(job["code_path"]) as fh:
                ns["__file__"] = os.path.abspath(job["code_path"])
                exec(compile(fh.read(), job["code_path"], "exec"), ns)  # noqa: S102 - sandboxed step
        if job.get("wrapper_path"):
            with open(job["wrapper_path"]) as fh:
                exec(compile(fh.read(), job["wrapper_path"], "exec"), ns)  # noqa: S102 - sandboxed step
        entry_name = job.get("entry_point") or ""
        recorder = None
        if entry_name:
            if entry_name not in ns:
                raise _SampleFailure("call", f"entry point {entry_name!r} is not defined by the {side}")
            recorder = _Recorder(ns[entry_name])
            ns[entry_name] = recorder
        events.emit("loaded", side=side)
        if job.get("gpu_lock"):
            import fcntl

            lock_fd = os.open(job["gpu_lock"], os.O_RDWR | os.O_CREAT, 0o666)
            t0 = time.monotonic()
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
            t_lock = time.monotonic()
            events.emit("gpu_lock", waited_s=t_lock - t0)
        _seed(int(job.get("seed", 0)))
        with open(job["test_path"]) as fh:
            test_src = fh.read()
        t_test = time.monotonic()
        try:
            exec(compile(test_src, job["test_path"], "exec"), ns)  # noqa: S102 - sandboxed step
        except SystemExit as exc:
            if exc.code not in (0, None):
                raise _SampleFailure("call", f"the test called sys.exit({exc.code!r})") from None
        except Exception as exc:
            raise _SampleFailure(_exception_stage(exc), _format_exc(exc)) from None
        style = job.get("style", "auto")
        gold = ns.get("result_gold")
        has_tests = any(k.startswith("test_") and callable(v) for k, v in ns.items())
        if style == "pytest" or (style == "auto" and not (isinstance(gold, dict) and gold) and has_tests):
            style = "pytest"
            ns["__name__"] = "test_subject"
            code, failures = _run_pytest(module, job["test_path"], int(job.get("seed", 0)))
            if failures:
                stage = "exe" if all(f.startswith("[exe]") for f in failures) else "call"
                raise _SampleFailure(stage, f"{len(failures)} pytest test(s) failed:\n" + "\n\n".join(failures[:3]))
            if code not in (0,):
                raise _SampleFailure("call", f"pytest exited with status {code} (no tests collected or usage error)")
            gold = ns.get("result_gold")
        else:
            style = "gold"
        test_s = time.monotonic() - t_test
        if not isinstance(gold, dict) or not gold:
            raise _SampleFailure(
                "call", "the test produced no outputs: result_gold must be a non-empty dict (docs/test-contract.md)"
            )
        torch.save(_to_saveable(gold, "result_gold"), job["outputs_path"])
        events.emit("outputs", side=side, style=style, keys=len(gold), test_s=test_s)
        if job.get("perf"):
            perf_fn = ns.get("perf_cases")
            entry = recorder.fn if recorder else None
            calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
            if callable(perf_fn) and entry is not None:
                _seed(int(job.get("seed", 0)))
                calls = [(tuple(c) if isinstance(c, list | tuple) else (c,), {}) for c in perf_fn()]
            elif recorder is not None:
                calls = recorder.calls
            if entry is None or not calls:
                events.emit("perf_skipped", side=side,
                            reason=f"the test never called the entry point {entry_name!r}" if entry_name
                            else "the sample has no entry point to time")
            else:
                try:
                    perf = _time_calls(entry, calls, int(job.get("perf_repeats", 20)), job["backend"])
                except Exception as exc:
                    raise _SampleFailure("perf", "timing the recorded calls failed: " + _format_exc(exc, 12)) from None
                events.emit("perf", side=side, **perf)
        events.emit("done", side=side, gpu_s=(time.monotonic() - t_lock) if t_lock else 0.0)
        return 0
    except _SampleFailure as fail:
        events.emit("failed", side=side, stage=fail.stage, message=fail.message,
                    gpu_s=(time.monotonic() - t_lock) if t_lock else 0.0)
        return SAMPLE_FAILED
    except Exception as exc:
        events.emit("failed", side=side, stage="call", message=_format_exc(exc),
                    gpu_s=(time.monotonic() - t_lock) if t_lock else 0.0)
        return SAMPLE_FAILED
    finally:
        if lock_fd is not None:
            os.close(lock_fd)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
