"""The shipped demo samples: their files, loading them (idempotently, atomically), the logins, and the engine."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import stat
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotations.demo import SAMPLES_DIR, DemoDataError, read_demo_samples
from annotations.models import Revision, Role, Sample, User
from annotations.services.demo import DEMO_USERS, demo_password, demo_samples_load, demo_users_ensure

KINDS = {"instruction", "reference", "candidate", "wrapper", "test"}


def test_five_demo_samples_with_every_artifact() -> None:
    demos = read_demo_samples()
    assert [d.task_id for d in demos] == ["demo/relu_scale", "demo/row_softmax", "demo/row_sum",
                                          "demo/transpose_copy", "demo/vector_add"]
    for d in demos:
        assert {a.kind for a in d.artifacts} == KINDS
        reference = d.artifact("reference").content
        assert "@triton.jit" in reference and f"def {d.kernel_name}(" in reference
        candidate = d.artifact("candidate").content
        assert "hipLaunchKernelGGL" in candidate and "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)" in candidate
        assert '"kernel_function"' in candidate
        instruction = d.artifact("instruction").content
        assert f"`{d.kernel_name}`" in instruction and "kernel_function" in instruction
        assert "PYBIND11_MODULE" in instruction
        assert f"def {d.entry_point}(" in d.artifact("wrapper").content
        test = d.artifact("test").content
        # TritonBench gold style, written for device='cuda' (docs/test-contract.md).
        assert re.search(r"^result_gold = test_\w+\(\)$", test, flags=re.M)
        assert "device='cuda'" in test and "is_cuda" not in test


def _copy_samples(tmp_path: Path) -> Path:
    root = tmp_path / "samples"
    shutil.copytree(SAMPLES_DIR, root)
    return root


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: (d / "sample.json").unlink(), "sample.json: missing"),
        (lambda d: (d / "sample.json").write_text("{not json"), "not valid JSON"),
        (lambda d: (d / "sample.json").write_text("[]"), "expected a JSON object"),
        (lambda d: (d / "sample.json").write_text(json.dumps({"task_id": "x", "kernel_name": "k"})),
         "'entry_point' must be a non-empty string"),
        (lambda d: (d / "sample.json").write_text(json.dumps(
            {"task_id": "x", "kernel_name": "k", "entry_point": "e", "difficulty": 9})), "'difficulty' must be"),
        (lambda d: (d / "sample.json").write_text(json.dumps(
            {"task_id": "x", "kernel_name": "k", "entry_point": "e", "tags": "a,b"})), "'tags' must be a list"),
        (lambda d: (d / "candidate.hip").unlink(), "candidate.hip: missing"),
        (lambda d: (d / "test.py").write_text("  \n"), "test.py: empty"),
    ],
)
def test_malformed_demo_files_are_named(tmp_path: Path, damage: object, message: str) -> None:
    root = _copy_samples(tmp_path)
    damage(root / "row_sum")  # type: ignore[operator]
    with pytest.raises(DemoDataError, match=re.escape(message)) as info:
        read_demo_samples(root)
    assert "row_sum" in str(info.value)


def test_missing_samples_directory(tmp_path: Path) -> None:
    with pytest.raises(DemoDataError, match="demo samples directory is missing"):
        read_demo_samples(tmp_path / "nowhere")


@pytest.mark.django_db
def test_loading_is_idempotent_and_goes_through_revisions() -> None:
    first = demo_samples_load()
    assert len(first.created) == 5 and not first.updated
    again = demo_samples_load()
    assert again.created == [] and again.updated == [] and len(again.unchanged) == 5
    assert Sample.objects.filter(source="demo").count() == 5
    sample = Sample.objects.get(task_id="demo/row_softmax")
    assert sample.revision_count == 5 and sample.entry_point == "softmax_wrapper"
    assert set(sample.tags.values_list("name", flat=True)) == {"demo", "reduction", "softmax"}
    revs = Revision.objects.filter(sample=sample)
    assert {r.kind for r in revs} == KINDS
    assert all(r.author_label == "import:demo" and r.origin == "initial" for r in revs)
    assert revs.get(kind="candidate").language == "hip" and revs.get(kind="reference").language == "triton"


@pytest.mark.django_db
def test_changed_demo_file_adds_a_revision(tmp_path: Path) -> None:
    root = _copy_samples(tmp_path)
    demo_samples_load(root=root)
    path = root / "vector_add" / "test.py"
    path.write_text(path.read_text() + "\n# one more edge case\n")
    report = demo_samples_load(root=root)
    assert report.updated == ["demo/vector_add"]
    tests = Revision.objects.filter(sample__task_id="demo/vector_add", kind="test").order_by("seq")
    assert [r.seq for r in tests] == [1, 2] and tests[1].origin == "imported"
    assert tests[1].parent_id == tests[0].pk


@pytest.mark.django_db
def test_a_bad_sample_loads_nothing(tmp_path: Path) -> None:
    root = _copy_samples(tmp_path)
    (root / "vector_add" / "wrapper.py").unlink()
    with pytest.raises(DemoDataError):
        demo_samples_load(root=root)
    assert Sample.objects.count() == 0


@pytest.mark.django_db
def test_command_reports_a_bad_directory_clearly(tmp_path: Path) -> None:
    root = _copy_samples(tmp_path)
    (root / "relu_scale" / "sample.json").write_text("{")
    with pytest.raises(CommandError, match="demo samples not loaded: .*relu_scale/sample.json: not valid JSON"):
        call_command("load_demo", "--from-dir", str(root), stdout=io.StringIO())
    assert Sample.objects.count() == 0


@pytest.mark.django_db
def test_command_prints_the_demo_logins(settings: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KS_DEMO_PASSWORD", raising=False)
    settings.DATA_DIR = tmp_path  # type: ignore[attr-defined]
    out = io.StringIO()
    call_command("load_demo", "--users", stdout=out)
    text = out.getvalue()
    password = (tmp_path / "demo_password").read_text()
    assert stat.S_IMODE(os.stat(tmp_path / "demo_password").st_mode) == 0o600
    assert len(password) >= 12
    for name, role in DEMO_USERS:
        assert re.search(rf"{name}\s+{role.value}\s+password: {re.escape(password)}", text)
        assert User.objects.get(username=name).check_password(password)
    assert "not for a shared server" in text
    assert "5 created" in text


@pytest.mark.django_db
def test_existing_demo_users_keep_their_password(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KS_DEMO_PASSWORD", "first-demo-password")
    demo_users_ensure(password=demo_password(data_dir=tmp_path))
    user = User.objects.get(username="demo-reviewer")
    user.set_password("changed-by-the-user")
    user.save()
    result = demo_users_ensure(password="another-password-1")
    assert [u.created for u in result] == [False, False, False]
    user.refresh_from_db()
    assert user.check_password("changed-by-the-user") and user.role == Role.REVIEWER


def test_demo_password_is_generated_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KS_DEMO_PASSWORD", raising=False)
    first = demo_password(data_dir=tmp_path)
    assert demo_password(data_dir=tmp_path) == first
    monkeypatch.setenv("KS_DEMO_PASSWORD", "from-the-environment")
    assert demo_password(data_dir=tmp_path) == "from-the-environment"


@pytest.mark.slow
def test_demo_tests_pass_on_the_cpu_backend_with_the_engine() -> None:
    """Reference + wrapper + test of every demo sample, through pipeline.execution.verify on the cpu backend."""
    pytest.importorskip("triton")
    pytest.importorskip("torch")
    from annotations.demo.verify import spec_for
    from pipeline.execution import verify

    for demo in read_demo_samples():
        result = verify(spec_for(demo, backend="cpu", with_candidate=False), use_golden_cache=False)
        assert result.status == "passed", f"{demo.task_id}: {result.message}\n{result.log[-3000:]}"
        assert result.stages["call"].ok is True
        assert "outputs" in result.stages["call"].message
