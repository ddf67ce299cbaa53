"""verify() end to end on the cpu backend: real subprocesses, Triton's interpreter, real torch."""

from __future__ import annotations

import os

import pytest

from pipeline.execution import JobSpec, Limits, Source, verify
from tests.execution.kernels import (
    ADD_GOLD_FILE,
    ADD_PYTEST,
    ADD_REFERENCE,
    ADD_TEST,
    ADD_WRONG,
    candidate_with,
)

pytestmark = pytest.mark.slow


def _spec(candidate: str | None, *, test: str = ADD_TEST, reference: str = ADD_REFERENCE, **kw: object) -> JobSpec:
    return JobSpec(
        task_id="add",
        backend="cpu",
        reference=Source("triton", reference),
        candidate=Source("triton", candidate) if candidate is not None else None,
        test=test,
        entry_point="add_wrapper",
        **kw,  # type: ignore[arg-type]
    )


def test_triton_sample_passes_with_a_gold_test_written_for_cuda(cache_root: str) -> None:
    lines: list[str] = []
    result = verify(_spec(ADD_REFERENCE), lines.append, cache_root=cache_root)
    assert result.status == "passed", result.message + result.log
    assert result.stages["call"].ok is True
    assert result.stages["exe"].ok is True
    assert "3 outputs match" in result.stages["exe"].message
    # The cpu backend says why it did not time anything.
    assert result.stages["perf"].ok is None
    assert "interpreter" in result.stages["perf"].skipped
    assert result.toolchain["torch"] and result.toolchain["triton"]
    assert result.device.startswith("CPU")
    assert any("[compare]" in line for line in lines)


def test_tritonbench_gold_file_is_split_at_the_146_hashes(cache_root: str) -> None:
    result = verify(_spec(None, test="", reference=ADD_GOLD_FILE), cache_root=cache_root)
    assert result.status == "passed", result.message
    assert result.stages["call"].ok is True
    assert result.stages["exe"].skipped.startswith("no candidate")


def test_wrong_candidate_fails_exe_and_says_where_and_by_how_much(cache_root: str) -> None:
    result = verify(_spec(ADD_WRONG), cache_root=cache_root)
    assert result.status == "failed"
    assert result.failed_stage == "exe"
    assert result.stages["call"].ok is True
    msg = result.stages["exe"].message
    # 1025 elements, blocks of 128: element 7 of each of the 9 blocks, minus none out of range = 8 in range
    assert "result_gold['test_case_1']: 8 of 1025 elements differ" in msg
    assert "worst at index (" in msg and "abs diff" in msg and "rel diff" in msg
    assert "test_case_2" not in msg  # a single element (index 0) is computed correctly


def test_pytest_style_test_passes_and_fails(cache_root: str) -> None:
    ok = verify(_spec(ADD_REFERENCE, test=ADD_PYTEST), cache_root=cache_root)
    assert ok.status == "passed", ok.message + ok.log
    bad = verify(_spec(ADD_WRONG, test=ADD_PYTEST), cache_root=cache_root)
    assert bad.status == "failed"
    assert bad.failed_stage == "exe"
    assert "test_add[128]" in bad.message


def test_missing_entry_point_fails_call(cache_root: str) -> None:
    cand = ADD_REFERENCE.replace("def add_wrapper", "def add_wrapper_renamed")
    result = verify(_spec(cand), cache_root=cache_root)
    assert result.status == "failed"
    assert result.failed_stage == "call"
    assert "entry point 'add_wrapper' is not defined by the candidate" in result.message


def test_exception_in_candidate_fails_call_with_traceback(cache_root: str) -> None:
    cand = ADD_REFERENCE.replace("out = torch.empty_like(x)", "out = torch.empty_like(x)\n    raise ValueError('bad grid')")
    result = verify(_spec(cand), cache_root=cache_root)
    assert result.status == "failed" and result.failed_stage == "call"
    assert "ValueError: bad grid" in result.message


def test_abort_is_crashed_sigabrt(cache_root: str) -> None:
    result = verify(_spec(candidate_with("import os\nos.abort()")), cache_root=cache_root)
    assert result.status == "crashed"
    assert result.signal_name == "SIGABRT"
    assert result.failed_stage == "call"


def test_segfault_is_crashed_sigsegv(cache_root: str) -> None:
    result = verify(_spec(candidate_with("import ctypes\nctypes.string_at(0)")), cache_root=cache_root)
    assert result.status == "crashed"
    assert result.signal_name == "SIGSEGV"


def _processes_with(marker: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmd = fh.read()
            with open(f"/proc/{pid}/stat") as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmd and state != "Z":
            found.append(int(pid))
    return found


def test_infinite_loop_times_out_and_leaves_no_process_behind(cache_root: str) -> None:
    marker = "ks-loop-marker-7f3a"
    prelude = (
        "import subprocess, sys\n"
        f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', '{marker}'])\n"
        "while True:\n    pass\n"
    )
    # Golden outputs first (cached), so the short limit below only ever meets the looping candidate.
    assert verify(_spec(ADD_REFERENCE), cache_root=cache_root).status == "passed"
    result = verify(_spec(candidate_with(prelude), limits=Limits(timeout_s=4)), cache_root=cache_root)
    assert result.timings["reference_cached"] is True
    assert result.status == "timeout"
    assert "timed out after 4 s" in result.message
    assert _processes_with(marker) == []


def test_fifty_megabytes_of_output_are_capped(cache_root: str) -> None:
    prelude = "import sys\nfor _ in range(50):\n    sys.stdout.write('x' * (1 << 20) + '\\n')\n"
    lines: list[str] = []
    result = verify(_spec(candidate_with(prelude)), lines.append, cache_root=cache_root)
    assert result.status == "passed", result.message
    assert "bytes of output omitted" in result.log
    assert len(result.log) < 1_000_000
    assert sum(len(line) for line in lines) < 1_000_000


def test_the_test_cannot_see_secrets_or_the_redis_url(cache_root: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "REDIS_URL": "redis://:hunter2@redis:6379/0",
        "DATABASE_URL": "postgres://ks:hunter2@db/ks",
        "SECRET_KEY": "hunter2",
        "OPENAI_API_KEY": "sk-hunter2",
        "KS_LLM_API_KEY": "hunter2",
    }.items():
        monkeypatch.setenv(name, value)
    probe_test = ADD_TEST + (
        "\nimport os\n"
        "secret = 'hun' + 'ter2'  # not spelled out: this file itself lies in the directory we scan\n"
        "seen = [k for k, v in os.environ.items() if secret in v or k in ('REDIS_URL', 'DATABASE_URL')]\n"
        "with open('/proc/self/environ', 'rb') as fh:\n"
        "    raw = fh.read()\n"
        "files = ' '.join(open(f, errors='replace').read() for f in os.listdir('.') if os.path.isfile(f))\n"
        "assert not seen, seen\n"
        "assert secret.encode() not in raw\n"
        "assert secret not in files\n"
        "assert os.environ['HOME'] == os.getcwd()\n"
        "result_gold['clean'] = True\n"
    )
    result = verify(_spec(ADD_REFERENCE, test=probe_test), cache_root=cache_root)
    assert result.status == "passed", result.message
    assert "hunter2" not in result.log


def test_a_test_without_outputs_fails_call(cache_root: str) -> None:
    result = verify(_spec(None, test="x = 1\n"), cache_root=cache_root)
    assert result.status == "failed"
    assert "result_gold must be a non-empty dict" in result.message


def test_broken_reference_is_an_error_not_a_candidate_failure(cache_root: str) -> None:
    broken = ADD_REFERENCE.replace("def add_wrapper(x, y):", "def add_wrapper(x, y):\n    raise RuntimeError('ref')")
    result = verify(_spec(ADD_REFERENCE, reference=broken), cache_root=cache_root)
    assert result.status == "error"
    assert "the reference failed" in result.message


def test_tolerance_override_lets_a_small_difference_pass(cache_root: str) -> None:
    nudged = ADD_REFERENCE.replace("x + y, mask=mask)", "x + y + 1e-3, mask=mask)")
    strict = verify(_spec(nudged), cache_root=cache_root)
    assert strict.status == "failed" and strict.failed_stage == "exe"
    loose = verify(_spec(nudged, tolerances={"float32": {"rtol": 0.0, "atol": 2e-3}}), cache_root=cache_root)
    assert loose.status == "passed", loose.message


def test_golden_outputs_are_cached_per_reference_and_test(fresh_cache: str) -> None:
    first = verify(_spec(ADD_REFERENCE), cache_root=fresh_cache)
    second = verify(_spec(ADD_REFERENCE), cache_root=fresh_cache)
    assert first.timings["reference_cached"] is False
    assert second.timings["reference_cached"] is True
    assert second.status == "passed"
    other_seed = verify(_spec(ADD_REFERENCE, seed=1), cache_root=fresh_cache)
    assert other_seed.timings["reference_cached"] is False


def test_cuda_backend_is_refused_on_a_host_without_a_gpu(cache_root: str) -> None:
    spec = JobSpec(task_id="x", backend="cuda", reference=Source("triton", ADD_REFERENCE), test=ADD_TEST)
    result = verify(spec, cache_root=cache_root)
    assert result.status == "error"
    assert "cannot run the cuda backend" in result.message
    assert "no NVIDIA GPU" in result.message
