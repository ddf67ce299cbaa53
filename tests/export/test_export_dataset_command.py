"""python manage.py export_dataset"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from tests.export.approved import approved_sample

pytestmark = pytest.mark.django_db


def _run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("export_dataset", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_prints_the_manifest_path_and_writes_the_snapshot(reviewer, tmp_path: Path) -> None:
    approved_sample("cmd/1", reviewer, difficulty=3)
    approved_sample("cmd/2", reviewer, difficulty=5)
    out, err = _run("--out", str(tmp_path / "snap"), "--difficulty-max", "4", "--layout", "hf")
    manifest = Path(out.strip())
    assert manifest == (tmp_path / "snap" / "manifest.json").resolve()
    data = json.loads(manifest.read_text(encoding="utf-8"))
    assert data["filters"] == {"difficulty_max": 4}
    assert [s["task_id"] for s in data["samples"]] == ["cmd/1"]
    assert "1 sample(s) exported" in err


def test_command_and_job_agree_byte_for_byte(reviewer, tmp_path: Path) -> None:
    approved_sample("cmd/1", reviewer)
    _run("--out", str(tmp_path / "a"), "--name", "same")
    _run("--out", str(tmp_path / "b"), "--name", "same")
    for name in ("dataset.jsonl", "manifest.json", "README.md"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_bad_filter_is_a_command_error(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="approved_since: 'last week' is not a date"):
        _run("--out", str(tmp_path / "s"), "--approved-since", "last week")
    assert not (tmp_path / "s").exists()


def test_non_empty_output_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "x").write_text("x")
    with pytest.raises(CommandError, match="not an empty directory"):
        _run("--out", str(tmp_path / "s"))
