"""annotations.services.imports: sample_import and import_batch_execute on a real database."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from django.db import DatabaseError

from annotations.models import AuditEvent, ImportBatch, Revision, Run, Sample
from annotations.models.ingest import JobState
from annotations.services import imports as service
from annotations.services.imports import import_batch_create, import_batch_execute, sample_import
from pipeline.importers import ParsedRecord, RevisionData

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "ingest"
AGENT = FIXTURES / "agent" / "20250709_gaagent_hip_3.jsonl"

pytestmark = pytest.mark.django_db


def run_import(path: Path, *, fmt: str = "", dry_run: bool = False, user=None) -> ImportBatch:  # type: ignore[no-untyped-def]
    batch = import_batch_create(path=path, user=user, format_name=fmt, dry_run=dry_run)
    return import_batch_execute(batch=batch, user=user)


def counts(batch: ImportBatch) -> tuple[int, int, int, int]:
    return (batch.created, batch.updated, batch.unchanged, batch.error_count)


def history(sample: Sample) -> list[tuple[str, int, str, int]]:
    """Revisions per kind in seq order (the bulk path inserts level by level, so ids interleave kinds)."""
    order = ["reference", "instruction", "candidate", "test", "note"]
    revs = sorted(sample.revisions.all(), key=lambda r: (order.index(r.kind), r.seq))
    return [(r.kind, r.seq, r.origin, r.origin_index) for r in revs]


class TestAgentRunImport:
    def test_creates_samples_revisions_and_imported_runs(self, annotator) -> None:  # type: ignore[no-untyped-def]
        batch = run_import(AGENT, user=annotator)
        assert batch.state == JobState.DONE and counts(batch) == (3, 0, 0, 0)
        assert batch.format == "agent-run" and batch.progress_bytes == batch.total_bytes > 0
        sin = Sample.objects.get(task_id="20250709_gaagent_hip_3/sin_kernel")
        assert history(sin) == [
            ("reference", 1, "initial", 0), ("instruction", 1, "initial", 0), ("candidate", 1, "initial", 0),
            ("candidate", 2, "call_fix", 0), ("candidate", 3, "exe_fix", 0), ("candidate", 4, "perf_candidate", 1),
            ("test", 1, "initial", 0), ("note", 1, "imported", 0), ("note", 2, "imported", 0),
            ("note", 3, "perf_candidate", 1),
        ]
        cands = list(sin.revisions.filter(kind="candidate").order_by("seq"))
        assert [c.parent_id for c in cands] == [None, cands[0].pk, cands[1].pk, cands[2].pk]
        assert all(r.author is None and r.author_label == "import:20250709_gaagent_hip_3" for r in cands)
        assert cands[0].provenance["import"]["batch"] == batch.pk and cands[0].provenance["field"] == "predict"
        assert sin.revision_count == 10 and sin.reference_language == "triton" and sin.target_language == "hip"
        [run] = Run.objects.filter(sample=sin)
        assert run.imported and run.status == "failed" and run.failed_stage == "call"
        assert (run.call_ok, run.exe_ok, run.perf_ok) == (False, True, False)
        assert "call_kernel" in run.message
        linked = {rr.kind: rr.revision_id for rr in run.runrevision_set.all()}
        assert linked["candidate"] == cands[-1].pk  # the last candidate the agent recorded
        assert set(linked) == {"reference", "test", "candidate"}
        assert AuditEvent.objects.filter(sample=sin, action="sample_created").count() == 1
        assert set(sin.tags.values_list("name", flat=True)) == {"agent-run"}

    def test_second_import_creates_nothing(self) -> None:
        run_import(AGENT)
        before = (Sample.objects.count(), Revision.objects.count(), Run.objects.count())
        again = run_import(AGENT)
        assert counts(again) == (0, 0, 3, 0)
        assert (Sample.objects.count(), Revision.objects.count(), Run.objects.count()) == before

    def test_changed_record_adds_revisions_and_keeps_the_old(self, tmp_path: Path) -> None:
        shutil.copy(AGENT, tmp_path / "run.jsonl")
        shutil.copy(AGENT.with_name("20250709_gaagent_hip_3_mem.json"), tmp_path / "run_mem.json")
        run_import(tmp_path / "run.jsonl")
        sin = Sample.objects.get(task_id="run/sin_kernel")
        old_ids = set(sin.revisions.values_list("id", flat=True))
        old_predict = sin.revisions.get(kind="candidate", seq=1).content
        rows = [json.loads(line) for line in (tmp_path / "run.jsonl").read_text().splitlines()]
        rows[0]["predict"] += "// retried with a new prompt\n"
        mem = json.loads((tmp_path / "run_mem.json").read_text())
        mem["sin_kernel.py"]["pass_call"] = True
        (tmp_path / "run.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        (tmp_path / "run_mem.json").write_text(json.dumps(mem))
        batch = run_import(tmp_path / "run.jsonl")
        assert counts(batch) == (0, 1, 2, 0)
        sin.refresh_from_db()
        assert old_ids < set(sin.revisions.values_list("id", flat=True))  # nothing removed
        new = sin.revisions.filter(kind="candidate").order_by("-seq").first()
        assert new is not None and new.seq == 5 and new.content.endswith("// retried with a new prompt\n")
        assert sin.revisions.get(kind="candidate", seq=1).content == old_predict
        assert Run.objects.filter(sample=sin, imported=True).count() == 2  # the old run stays beside the new one
        assert AuditEvent.objects.filter(sample=sin, action="sample_reimported").count() == 1
        assert counts(run_import(tmp_path / "run.jsonl")) == (0, 0, 3, 0)


class TestOtherFormats:
    @pytest.mark.parametrize(
        ("name", "expected"),
        [
            ("train_crawl.json", 3),
            ("tritonbench_g_small.json", 2),
            ("gold", 2),
            ("geak_rocm_small.json", 1),
            ("geak_hip_small.json", 2),
            ("bigcodebench_small.jsonl.gz", 2),
        ],
    )
    def test_each_fixture_imports_then_is_unchanged(self, name: str, expected: int) -> None:
        assert counts(run_import(FIXTURES / name)) == (expected, 0, 0, 0)
        assert counts(run_import(FIXTURES / name)) == (0, 0, expected, 0)

    def test_gold_file_adds_its_test_to_the_tritonbench_sample(self) -> None:
        run_import(FIXTURES / "tritonbench_g_small.json")
        add = Sample.objects.get(task_id="tritonbench-g/add_example")
        assert not add.revisions.filter(kind="test").exists()
        batch = run_import(FIXTURES / "gold")
        assert counts(batch) == (0, 2, 0, 0)
        add.refresh_from_db()
        assert "result_gold" in add.revisions.get(kind="test").content
        # the gold reference is the same code as the JSON's output: no second reference revision
        assert add.revisions.filter(kind="reference").count() == 1
        assert add.provenance["format"] == "tritonbench-g"
        assert add.provenance["other_sources"]["tritonbench-gold"]["gold_file"] == "add_example.py"
        assert counts(run_import(FIXTURES / "tritonbench_g_small.json")) == (0, 0, 2, 0)
        assert counts(run_import(FIXTURES / "gold")) == (0, 0, 2, 0)

    def test_gold_first_then_json_fills_what_is_empty(self) -> None:
        run_import(FIXTURES / "gold")
        add = Sample.objects.get(task_id="tritonbench-g/add_example")
        assert add.difficulty is None and add.provenance["format"] == "tritonbench-gold"
        assert counts(run_import(FIXTURES / "tritonbench_g_small.json")) == (0, 2, 0, 0)
        add.refresh_from_db()
        assert add.difficulty == 1 and add.provenance["other_sources"]["tritonbench-g"]["repo"] == "example/triton-add"
        assert add.revisions.filter(kind="reference").count() == 1  # identical code is not repeated
        assert counts(run_import(FIXTURES / "tritonbench_g_small.json")) == (0, 0, 2, 0)

    def test_bigcodebench_sample(self) -> None:
        run_import(FIXTURES / "bigcodebench_small.jsonl")
        s = Sample.objects.get(task_id="bigcodebench/0")
        assert (s.reference_language, s.target_language, s.entry_point) == ("python", "python", "task_func")
        assert s.revisions.get(kind="reference").language == "python"
        assert s.provenance["libs"] == "['itertools']"


class TestBadInputAndFailures:
    def test_errors_are_recorded_and_the_rest_imports(self, tmp_path: Path) -> None:
        lines = (FIXTURES / "bigcodebench_small.jsonl").read_text().splitlines()
        p = tmp_path / "b.jsonl"
        bad = lines[1].replace("BigCodeBench/1", "BigCodeBench/7").encode().replace(b"Count the", b"Count \xff the")
        p.write_bytes((lines[0] + "\n{not json\n" + lines[1] + "\n" + lines[0] + "\n").encode() + bad + b"\n")
        batch = run_import(p)
        assert counts(batch) == (2, 0, 0, 3)
        assert [(e["line"], e["field"]) for e in batch.errors] == [(2, ""), (4, "task_id"), (5, "complete_prompt")]

    def test_error_list_is_capped_but_counted(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(service, "MAX_STORED_ERRORS", 2)
        p = tmp_path / "b.jsonl"
        p.write_text((FIXTURES / "bigcodebench_small.jsonl").read_text() + "{bad\n" * 4)
        batch = run_import(p)
        assert counts(batch) == (2, 0, 0, 4) and len(batch.errors) == 2
        assert "2 more were counted" in batch.message

    def test_unreadable_input_fails_the_batch(self, tmp_path: Path) -> None:
        batch = run_import(tmp_path / "missing.jsonl")
        assert batch.state == JobState.FAILED and "does not exist" in batch.message

    def test_dry_run_writes_nothing_but_counts(self) -> None:
        batch = run_import(AGENT, dry_run=True)
        assert batch.state == JobState.DONE and counts(batch) == (3, 0, 0, 0)
        assert not Sample.objects.exists() and not Revision.objects.exists() and not Run.objects.exists()

    def test_failure_in_the_middle_of_a_record_leaves_no_half_written_sample(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Force the one-by-one path and make the 3rd revision of the 2nd record fail: that record vanishes whole."""

        def no_bulk(**kwargs: object) -> None:
            raise DatabaseError("bulk path disabled for this test")

        calls = {"n": 0}
        real = service.revision_create

        def flaky(**kwargs):  # type: ignore[no-untyped-def]
            calls["n"] += 1
            if kwargs["sample"].task_id.endswith("cosine_compute") and kwargs["kind"] == "candidate":
                raise DatabaseError("disk I/O error (injected)")
            return real(**kwargs)

        monkeypatch.setattr(service, "revision_bulk_create_new", no_bulk)
        monkeypatch.setattr(service, "revision_create", flaky)
        batch = run_import(AGENT)
        assert counts(batch) == (2, 0, 0, 1)
        assert batch.errors[0]["line"] == 2 and "disk I/O error" in batch.errors[0]["message"]
        assert not Sample.objects.filter(task_id__endswith="cosine_compute").exists()
        assert not AuditEvent.objects.filter(data__source="20250709_gaagent_hip_3", sample__isnull=True).exists()
        sin = Sample.objects.get(task_id__endswith="sin_kernel")
        assert sin.revisions.count() == 10 and sin.revision_count == 10
        # the fixed input then imports the missing one and leaves the others alone
        monkeypatch.setattr(service, "revision_create", real)
        assert counts(run_import(AGENT)) == (1, 0, 2, 0)

    def test_unexpected_error_stops_the_batch_with_true_counts(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(service, "CHUNK_RECORDS", 1)
        real = service._bulk_create_new

        def explode_on_second(records, **kwargs):  # type: ignore[no-untyped-def]
            if records[0].task_id.endswith("cosine_compute"):
                raise RuntimeError("a bug, not bad input")
            return real(records, **kwargs)

        monkeypatch.setattr(service, "_bulk_create_new", explode_on_second)
        batch = import_batch_create(path=AGENT, user=None)
        with pytest.raises(RuntimeError):
            import_batch_execute(batch=batch)
        batch.refresh_from_db()
        assert batch.state == JobState.FAILED and "RuntimeError: a bug" in batch.message
        assert (batch.created, batch.processed) == (1, 1)  # only the committed chunk is counted
        assert list(Sample.objects.values_list("task_id", flat=True)) == ["20250709_gaagent_hip_3/sin_kernel"]

    def test_sample_import_directly(self) -> None:
        record = ParsedRecord(task_id="demo/one", source="demo", revisions=[
            RevisionData(kind="reference", content="x = 1\n", author_label="import:demo"),
            RevisionData(kind="reference", content="x = 1\n", author_label="import:demo"),
        ])
        assert sample_import(record=record, batch=None, user=None) == "created"
        assert Sample.objects.get(task_id="demo/one").revisions.count() == 1  # same content is not repeated
        assert sample_import(record=record, batch=None, user=None) == "unchanged"
        record.revisions.append(RevisionData(kind="note", content="why", author_label="import:demo"))
        assert sample_import(record=record, batch=None, user=None) == "updated"

    def test_invalid_revision_kind_is_a_record_error(self, monkeypatch: pytest.MonkeyPatch) -> None:
        good = ParsedRecord(task_id="demo/good", source="demo",
                            revisions=[RevisionData(kind="reference", content="a", author_label="import:demo")])
        bad = ParsedRecord(task_id="demo/bad", source="demo", line=2,
                           revisions=[RevisionData(kind="reference", content="a", author_label="import:demo"),
                                      RevisionData(kind="bogus", content="b", author_label="import:demo")])
        monkeypatch.setattr(service, "parse_input", lambda path, fmt=None: (None, iter([good, bad])))
        batch = run_import(Path("/nonexistent-but-unused"))
        assert counts(batch) == (1, 0, 0, 1)
        assert "unknown revision kind" in batch.errors[0]["message"] and batch.errors[0]["line"] == 2
        assert not Sample.objects.filter(task_id="demo/bad").exists()


def test_real_tritonbench_twice(shared_dir: Path, db: None) -> None:
    path = shared_dir / "data" / "tritonbench" / "TritonBench_G_v1.json"
    assert counts(run_import(path)) == (184, 0, 0, 0)
    assert Sample.objects.filter(source="tritonbench-g").count() == 184
    revisions = Revision.objects.count()
    assert counts(run_import(path)) == (0, 0, 184, 0)
    assert Revision.objects.count() == revisions
