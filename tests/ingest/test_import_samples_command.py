"""manage.py import_samples: detection, --format, --dry-run, the exact last line, exit codes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotations.models import ImportBatch, Revision, Sample

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "ingest"
ROOT = Path(__file__).resolve().parent.parent.parent

pytestmark = pytest.mark.django_db


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("import_samples", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_last_line_and_second_run() -> None:
    out, err = run(str(FIXTURES / "agent" / "20250709_gaagent_hip_3.jsonl"))
    assert out.splitlines()[-1] == "imported: created=3 updated=0 unchanged=0 errors=0"
    assert "100%" in err  # the progress bar, on stderr
    out, _ = run(str(FIXTURES / "agent" / "20250709_gaagent_hip_3.jsonl"))
    assert out == "imported: created=0 updated=0 unchanged=3 errors=0\n"


def test_errors_listed_on_stderr_and_exit_zero(tmp_path: Path) -> None:
    p = tmp_path / "b.jsonl"
    p.write_text((FIXTURES / "bigcodebench_small.jsonl").read_text() + "{broken\n")
    out, err = run(str(p))
    assert out.strip() == "imported: created=2 updated=0 unchanged=0 errors=1"
    assert "error at line 3: malformed JSON" in err


def test_format_override(tmp_path: Path) -> None:
    out, _ = run(str(FIXTURES / "gold"), "--format", "tritonbench-gold")
    assert out.strip() == "imported: created=2 updated=0 unchanged=0 errors=0"
    assert ImportBatch.objects.get().format == "tritonbench-gold"


def test_format_that_does_not_fit_gives_per_record_errors() -> None:
    out, _ = run(str(FIXTURES / "geak_hip_small.json"), "--format", "tritonbench-g")
    assert out.strip() == "imported: created=0 updated=0 unchanged=0 errors=2"
    assert not Sample.objects.exists()


def test_dry_run() -> None:
    out, err = run(str(FIXTURES / "train_crawl.json"), "--dry-run")
    assert out.strip() == "imported: created=3 updated=0 unchanged=0 errors=0"
    assert "dry run" in err and not Sample.objects.exists()


def test_empty_file_is_an_error_not_a_failure(tmp_path: Path) -> None:
    p = tmp_path / "empty.jsonl"
    p.write_text("")
    out, err = run(str(p))
    assert out.strip() == "imported: created=0 updated=0 unchanged=0 errors=1"
    assert "empty" in err


@pytest.mark.parametrize("content", [None, b"just some text\n"])
def test_unreadable_input_exits_non_zero(tmp_path: Path, content: bytes | None) -> None:
    p = tmp_path / "input.txt"
    if content is not None:
        p.write_bytes(content)
    with pytest.raises(CommandError):
        run(str(p))


def test_unknown_user() -> None:
    with pytest.raises(CommandError, match="no user"):
        run(str(FIXTURES / "train_crawl.json"), "--user", "nobody")


def test_real_tritonbench(shared_dir: Path) -> None:
    path = str(shared_dir / "data" / "tritonbench" / "TritonBench_G_v1.json")
    out, _ = run(path)
    assert out.strip() == "imported: created=184 updated=0 unchanged=0 errors=0"
    revisions = Revision.objects.count()
    out, _ = run(path)
    assert out.strip() == "imported: created=0 updated=0 unchanged=184 errors=0"
    assert Revision.objects.count() == revisions


@pytest.mark.slow
def test_killed_mid_import_leaves_only_whole_samples(tmp_path: Path) -> None:
    """A real crash: SIGKILL the command while it imports; every sample that exists has all its revisions."""
    env = {**os.environ, "KS_DATA_DIR": str(tmp_path / "data"), "DATABASE_URL": ""}
    env.pop("DATABASE_URL")
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], env=env, check=True, cwd=ROOT, timeout=300)
    rows = (FIXTURES / "bigcodebench_small.jsonl").read_text().splitlines()
    big = tmp_path / "big.jsonl"
    with open(big, "w") as fh:
        for i in range(20000):
            fh.write(rows[i % 2].replace('"BigCodeBench/' + str(i % 2) + '"', f'"BigCodeBench/{i}"')
                     .replace("task_func", f"task_func_{i}", 1) + "\n")
    proc = subprocess.Popen([*manage, "import_samples", str(big)], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    db = tmp_path / "data" / "kernelstudio.sqlite3"
    import sqlite3

    deadline = time.monotonic() + 240
    committed = 0
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
        try:
            with sqlite3.connect(db, timeout=1) as conn:
                committed = conn.execute("select count(*) from annotations_sample").fetchone()[0]
        except sqlite3.OperationalError:
            continue
        if committed:
            break
    assert proc.poll() is None, "the import finished before it could be interrupted"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    with sqlite3.connect(db) as conn:
        samples = conn.execute("select count(*) from annotations_sample").fetchone()[0]
        partial = conn.execute(
            "select count(*) from annotations_sample s where (select count(*) from annotations_revision r"
            " where r.sample_id = s.id) != 4 or s.revision_count != 4").fetchone()[0]
    assert 0 < samples < 20000
    assert partial == 0
    # Running it again finishes the job without duplicating anything.
    done = subprocess.run([*manage, "import_samples", str(big)], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0
    assert done.stdout.strip() == f"imported: created={20000 - samples} updated=0 unchanged={samples} errors=0"
