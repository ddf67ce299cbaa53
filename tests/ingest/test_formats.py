"""The format parsers (pipeline.importers): plain data out of every format, bad input as per-record errors."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from pipeline.importers import ParsedRecord, RecordError, UnreadableInput, detect_format, parse_input

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "ingest"
AGENT = FIXTURES / "agent" / "20250709_gaagent_hip_3.jsonl"


def parse(path: Path, fmt: str | None = None) -> tuple[str, list[ParsedRecord], list[RecordError]]:
    module, items = parse_input(path, fmt)
    records: list[ParsedRecord] = []
    errors: list[RecordError] = []
    for item in items:
        if isinstance(item, RecordError):
            errors.append(item)
        else:
            records.append(item)
    return (module.NAME if module else ""), records, errors


def by_id(records: list[ParsedRecord]) -> dict[str, ParsedRecord]:
    return {r.task_id: r for r in records}


def revs(record: ParsedRecord) -> list[tuple[str, str, int, str]]:
    return [(r.kind, r.origin, r.origin_index, r.field_name) for r in record.revisions]


class TestDetection:
    @pytest.mark.parametrize(
        ("name", "fmt"),
        [
            ("agent/20250709_gaagent_hip_3.jsonl", "agent-run"),
            ("agent/20250709_gaagent_hip_3_mem.json", "agent-run"),
            ("train_crawl.json", "train-crawl"),
            ("tritonbench_g_small.json", "tritonbench-g"),
            ("gold", "tritonbench-gold"),
            ("gold/add_example.py", "tritonbench-gold"),
            ("geak_rocm_small.json", "geak-rocm"),
            ("geak_hip_small.json", "geak-hip"),
            ("bigcodebench_small.jsonl", "bigcodebench"),
            ("bigcodebench_small.jsonl.gz", "bigcodebench"),
        ],
    )
    def test_detects_each_fixture(self, name: str, fmt: str) -> None:
        assert fmt == detect_format(FIXTURES / name).NAME

    def test_unknown_content_is_unreadable(self, tmp_path: Path) -> None:
        p = tmp_path / "x.json"
        p.write_text('[{"what": 1}]')
        with pytest.raises(UnreadableInput, match="--format"):
            parse_input(p)

    def test_missing_path_is_unreadable(self, tmp_path: Path) -> None:
        with pytest.raises(UnreadableInput, match="does not exist"):
            parse_input(tmp_path / "nope.jsonl")

    def test_unknown_format_name(self) -> None:
        with pytest.raises(UnreadableInput, match="unknown format"):
            parse_input(FIXTURES / "train_crawl.json", "nope")

    def test_directory_for_a_single_file_format(self) -> None:
        with pytest.raises(UnreadableInput, match="directory"):
            parse_input(FIXTURES / "gold", "bigcodebench")


class TestAgentRun:
    def test_pair_is_joined_by_filename(self) -> None:
        fmt, records, errors = parse(AGENT)
        assert fmt == "agent-run" and errors == []
        recs = by_id(records)
        assert set(recs) == {
            "20250709_gaagent_hip_3/sin_kernel",
            "20250709_gaagent_hip_3/cosine_compute",
            "20250709_gaagent_hip_3/relu_kernel",
        }
        sin = recs["20250709_gaagent_hip_3/sin_kernel"]
        assert sin.source == "20250709_gaagent_hip_3"
        assert revs(sin) == [
            ("reference", "initial", 0, "label"),
            ("instruction", "initial", 0, "instruction"),
            ("candidate", "initial", 0, "predict"),
            ("test", "initial", 0, "test_code"),
            ("candidate", "call_fix", 0, "call_candidate"),
            ("candidate", "exe_fix", 0, "exe_candidate"),
            ("candidate", "perf_candidate", 1, "perf_candidates"),
            ("note", "imported", 0, "temp_strategy"),
            ("note", "imported", 0, "perf_strategy"),
            ("note", "perf_candidate", 1, "perf_candidates.analysis"),
        ]
        assert sin.revisions[6].provenance["numbers"] == [0, 0]
        assert "call_kernel" in sin.revisions[4].content
        [run] = sin.imported_runs
        assert run["status"] == "failed" and run["failed_stage"] == "call"
        assert "has no attribute 'call_kernel'" in run["stages"]["call"]["message"]
        assert run["stages"]["exe"]["ok"] is True and run["stages"]["perf"]["ok"] is False

    def test_passing_task_and_missing_fields(self) -> None:
        _, records, _ = parse(AGENT)
        recs = by_id(records)
        cos = recs["20250709_gaagent_hip_3/cosine_compute"]
        assert cos.imported_runs[0]["status"] == "passed"
        # call_candidate is null: no call fix revision
        assert ("candidate", "call_fix", 0, "call_candidate") not in revs(cos)
        relu = recs["20250709_gaagent_hip_3/relu_kernel"]
        assert relu.imported_runs[0]["failed_stage"] == "exe"
        assert relu.imported_runs[0]["stages"]["perf"]["ok"] is None
        # unknown extra fields are kept, from both files
        assert relu.provenance["extra_fields"] == {"model": "gaagent-hip-v2", "temperature": 0.2}
        assert relu.provenance["mem_extra_fields"] == {"agent_version": "2025.07"}

    def test_mem_file_path_imports_the_pair(self) -> None:
        _, records, errors = parse(AGENT.with_name("20250709_gaagent_hip_3_mem.json"))
        assert len(records) == 3 and errors == []

    def test_mem_file_alone(self, tmp_path: Path) -> None:
        shutil.copy(AGENT.with_name("20250709_gaagent_hip_3_mem.json"), tmp_path / "r_mem.json")
        with pytest.raises(UnreadableInput, match="import r.jsonl"):
            parse(tmp_path / "r_mem.json")

    def test_without_mem_file(self, tmp_path: Path) -> None:
        shutil.copy(AGENT, tmp_path / "run7.jsonl")
        _, records, errors = parse(tmp_path / "run7.jsonl")
        assert errors == [] and len(records) == 3
        assert all(r.imported_runs == [] for r in records)
        assert {r.task_id for r in records} == {"run7/sin_kernel", "run7/cosine_compute", "run7/relu_kernel"}

    def test_mem_entry_without_task_and_bad_mem_types(self, tmp_path: Path) -> None:
        shutil.copy(AGENT, tmp_path / "r.jsonl")
        mem = json.loads(AGENT.with_name("20250709_gaagent_hip_3_mem.json").read_text())
        mem["ghost.py"] = {"pass_call": True}
        mem["cosine_compute.py"]["pass_exe"] = "maybe"
        mem["relu_kernel.py"]["perf_candidates"] = [42]
        (tmp_path / "r_mem.json").write_text(json.dumps(mem))
        _, records, errors = parse(tmp_path / "r.jsonl")
        assert [r.task_id for r in records] == ["r/sin_kernel"]
        fields = {e.field: e for e in errors}
        assert fields["mem.pass_exe"].line == 2
        assert "true or false" in fields["mem.pass_exe"].message
        assert fields["mem.perf_candidates[0]"].line == 3
        assert "ghost.py" in fields["filename"].message

    def test_perf_candidate_objects(self, tmp_path: Path) -> None:
        shutil.copy(AGENT, tmp_path / "r.jsonl")
        mem = {"sin_kernel.py": {"pass_call": True, "pass_exe": True, "pass_perf": True,
                                 "perf_candidates": [{"code": "// v1", "speedup": 1.4, "analysis": "## faster"},
                                                     ["// v2", [2.1, 0.8], "## even faster"]]}}
        (tmp_path / "r_mem.json").write_text(json.dumps(mem))
        _, records, errors = parse(tmp_path / "r.jsonl")
        sin = by_id(records)["r/sin_kernel"]
        perf = [r for r in sin.revisions if r.origin == "perf_candidate"]
        assert [(r.kind, r.origin_index, r.content) for r in perf] == [
            ("candidate", 1, "// v1"), ("candidate", 2, "// v2"), ("note", 1, "## faster"), ("note", 2, "## even faster")
        ]
        assert perf[0].provenance["numbers"] == [{"speedup": 1.4}]
        assert perf[1].provenance["numbers"] == [2.1, 0.8]


class TestTrainCrawl:
    def test_mapping(self) -> None:
        fmt, records, errors = parse(FIXTURES / "train_crawl.json")
        assert fmt == "train-crawl" and errors == []
        recs = by_id(records)
        copy = recs["train-crawl/0"]
        assert copy.kernel_name == "kernel"
        assert copy.provenance["stray_compile_call"] is True
        assert copy.revisions[0].content.endswith("print(ret)\n")  # kept exactly as crawled
        add = recs["train-crawl/1"]
        assert revs(add) == [
            ("reference", "initial", 0, "code"),
            ("instruction", "initial", 0, "description_1"),
            ("note", "initial", 0, "description_2"),
            ("analysis", "generated", 0, "kernel_analysis"),
            ("wrapper", "generated", 0, "kernel_wrapper"),
            ("test", "generated", 0, "unitest_code"),
        ]
        assert json.loads(add.revisions[3].content)["functional_contract"] == "output == x + y"
        assert recs["train-crawl/2"].provenance["extra_fields"] == {"crawl_source": "github.com/example/triton-kernels"}


class TestTritonBench:
    def test_json(self) -> None:
        fmt, records, errors = parse(FIXTURES / "tritonbench_g_small.json")
        assert fmt == "tritonbench-g" and errors == []
        add = by_id(records)["tritonbench-g/add_example"]
        assert add.difficulty == 1 and add.kernel_name == "add_kernel"
        assert add.provenance["repo"] == "example/triton-add" and add.provenance["star"] == 12
        assert [r.kind for r in add.revisions] == ["reference", "instruction", "note"]

    def test_gold_directory(self) -> None:
        fmt, records, errors = parse(FIXTURES / "gold")
        assert fmt == "tritonbench-gold" and errors == []
        add = by_id(records)["tritonbench-g/add_example"]
        ref, test = add.revisions
        assert ref.content.rstrip().endswith("return out") and "#" * 146 not in ref.content
        assert "result_gold = test_add_kernel()" in test.content

    def test_gold_without_separator(self) -> None:
        _, records, errors = parse(FIXTURES / "gold_bad")
        assert [r.task_id for r in records] == ["tritonbench-g/good_one"]
        [err] = errors
        assert err.file == "no_separator.py" and err.field == "separator"
        assert "exactly 146" in err.message and "145" in err.message

    def test_real_file(self, shared_dir: Path) -> None:
        _, records, errors = parse(shared_dir / "data" / "tritonbench" / "TritonBench_G_v1.json")
        assert errors == [] and len(records) == 184
        assert len({r.task_id for r in records}) == 184
        assert all(r.kernel_name for r in records)


class TestGeakAndBigCodeBench:
    def test_geak_rocm(self) -> None:
        _, records, errors = parse(FIXTURES / "geak_rocm_small.json")
        [rec] = records
        assert errors == [] and rec.task_id == "geak-rocm/add_kernel" and rec.kernel_name == "add_kernel"
        assert rec.target_language == "triton"

    def test_geak_hip(self) -> None:
        _, records, errors = parse(FIXTURES / "geak_hip_small.json")
        recs = by_id(records)
        assert errors == [] and set(recs) == {"geak-hip/histogram", "geak-hip/knn"}
        assert [r.kind for r in recs["geak-hip/histogram"].revisions] == ["instruction"]
        assert [r.kind for r in recs["geak-hip/knn"].revisions] == ["instruction", "candidate"]
        assert recs["geak-hip/knn"].provenance["file_name"] == "src/knn_cuda.hip"

    @pytest.mark.parametrize("name", ["bigcodebench_small.jsonl", "bigcodebench_small.jsonl.gz"])
    def test_bigcodebench(self, name: str) -> None:
        _, records, errors = parse(FIXTURES / name)
        assert errors == [] and [r.task_id for r in records] == ["bigcodebench/0", "bigcodebench/1"]
        first = records[0]
        assert first.reference_language == "python" and first.entry_point == "task_func"
        assert first.provenance["code_prompt"].startswith("import itertools")

    def test_real_files(self, shared_dir: Path) -> None:
        data = shared_dir / "data"
        for rel, count in (("geak/ROCm_eval_complex_instruct_v1.json", 31), ("geak/FromRe_instructions_FULL.json", 20),
                           ("bigcodebench/hf_data_BigCodeBench.jsonl.gz", 1140)):
            _, records, errors = parse(data / rel)
            assert errors == [] and len(records) == count, rel


class TestBadInput:
    """Each kind of bad input gives a per-record error with its place; the rest still parses."""

    def bcb_rows(self) -> list[dict[str, object]]:
        return [json.loads(line) for line in (FIXTURES / "bigcodebench_small.jsonl").read_text().splitlines()]

    def write_jsonl(self, path: Path, rows: list[object]) -> Path:
        path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
        return path

    def test_malformed_json_line(self, tmp_path: Path) -> None:
        a, b = self.bcb_rows()
        p = self.write_jsonl(tmp_path / "b.jsonl", [a, '{"task_id": "BigCodeBench/9", "complete_prompt": ', b])
        _, records, errors = parse(p)
        assert [r.task_id for r in records] == ["bigcodebench/0", "bigcodebench/1"]
        [err] = errors
        assert err.line == 2 and "malformed JSON" in err.message
        assert records[1].line == 3

    def test_wrong_type(self, tmp_path: Path) -> None:
        a, b = self.bcb_rows()
        b["test"] = 42
        _, records, errors = parse(self.write_jsonl(tmp_path / "b.jsonl", [a, b]))
        assert len(records) == 1
        assert (errors[0].line, errors[0].field) == (2, "test")
        assert "expected a string, got a number" in errors[0].message

    def test_line_that_is_not_an_object(self, tmp_path: Path) -> None:
        a, _ = self.bcb_rows()
        _, records, errors = parse(self.write_jsonl(tmp_path / "b.jsonl", [a, "[1, 2]"]), "bigcodebench")
        assert len(records) == 1 and errors[0].line == 2 and "expected a JSON object" in errors[0].message

    def test_missing_required_field(self, tmp_path: Path) -> None:
        data = json.loads((FIXTURES / "tritonbench_g_small.json").read_text())
        del data[1]["output"]
        p = tmp_path / "tb.json"
        p.write_text(json.dumps(data))
        _, records, errors = parse(p)
        assert len(records) == 1
        assert (errors[0].index, errors[0].field, errors[0].message) == (1, "output", "missing required field")

    def test_out_of_range_difficulty(self, tmp_path: Path) -> None:
        data = json.loads((FIXTURES / "tritonbench_g_small.json").read_text())
        data[0]["difficulty"] = "hard"
        p = tmp_path / "tb.json"
        p.write_text(json.dumps(data))
        _, records, errors = parse(p)
        assert len(records) == 1 and (errors[0].index, errors[0].field) == (0, "difficulty")

    def test_unknown_extra_fields_are_kept(self, tmp_path: Path) -> None:
        a, b = self.bcb_rows()
        a["reviewer_note"] = {"ok": True}
        _, records, errors = parse(self.write_jsonl(tmp_path / "b.jsonl", [a, b]))
        assert errors == [] and records[0].provenance["extra_fields"] == {"reviewer_note": {"ok": True}}

    def test_duplicate_task_ids(self, tmp_path: Path) -> None:
        a, b = self.bcb_rows()
        _, records, errors = parse(self.write_jsonl(tmp_path / "b.jsonl", [a, b, a]))
        assert [r.task_id for r in records] == ["bigcodebench/0", "bigcodebench/1"]
        [err] = errors
        assert err.line == 3 and err.field == "task_id" and "first at line 1" in err.message

    def test_non_utf8_bytes_in_jsonl(self, tmp_path: Path) -> None:
        a, b = self.bcb_rows()
        p = tmp_path / "b.jsonl"
        bad = json.dumps(b).replace("Count the letters", "Count the \udcff letters".replace("\udcff", "XX"))
        raw = (json.dumps(a) + "\n" + bad + "\n").encode().replace(b"XX", b"\xff\xfe")
        p.write_bytes(raw)
        _, records, errors = parse(p)
        assert [r.task_id for r in records] == ["bigcodebench/0"]
        [err] = errors
        assert err.line == 2 and "not valid UTF-8" in err.message and err.field == "complete_prompt"

    def test_non_utf8_bytes_in_array(self, tmp_path: Path) -> None:
        raw = (FIXTURES / "train_crawl.json").read_bytes().replace(b"Element-wise vector addition.", b"Element\xc3 add.")
        p = tmp_path / "train_crawl.json"
        p.write_bytes(raw)
        _, records, errors = parse(p)
        assert [r.task_id for r in records] == ["train-crawl/0", "train-crawl/2"]
        assert (errors[0].index, errors[0].field) == (1, "description_2")

    def test_empty_file(self, tmp_path: Path) -> None:
        p = tmp_path / "empty.jsonl"
        p.write_bytes(b"")
        fmt, records, errors = parse(p)
        assert fmt == "" and records == [] and "empty" in errors[0].message
        _, records, errors = parse(p, "bigcodebench")
        assert records == [] and errors[0].line == 1 and "empty" in errors[0].message

    def test_array_where_jsonl_was_expected(self, tmp_path: Path) -> None:
        p = tmp_path / "b.jsonl"
        p.write_text(json.dumps(self.bcb_rows(), indent=2))
        fmt, records, errors = parse(p)
        assert fmt == "bigcodebench" and len(records) == 2 and records[1].index == 1
        [err] = errors
        assert err.line == 1 and "JSON array" in err.message

    def test_jsonl_where_array_was_expected(self, tmp_path: Path) -> None:
        rows = json.loads((FIXTURES / "tritonbench_g_small.json").read_text())
        p = self.write_jsonl(tmp_path / "tb.json", rows)
        fmt, records, errors = parse(p)
        assert fmt == "tritonbench-g" and [r.line for r in records] == [1, 2]
        [err] = errors
        assert "expected a JSON array" in err.message

    def test_malformed_array_keeps_what_came_before(self, tmp_path: Path) -> None:
        text = (FIXTURES / "tritonbench_g_small.json").read_text()
        cut = text.index('"file": "sin_kernel.py"')
        p = tmp_path / "tb.json"
        p.write_text(text[:cut] + '"file": "sin_kernel.py", oops }]')
        _, records, errors = parse(p)
        assert [r.task_id for r in records] == ["tritonbench-g/add_example"]
        assert errors[0].index == 1 and "malformed JSON" in errors[0].message

    def test_truncated_gzip(self, tmp_path: Path) -> None:
        data = gzip.compress(("\n".join(json.dumps(r) for r in self.bcb_rows() * 50)).encode())
        p = tmp_path / "b.jsonl.gz"
        p.write_bytes(data[: len(data) // 2])
        _, records, errors = parse(p, "bigcodebench")
        assert errors and "damaged" in errors[-1].message

    def test_truncated_gzip_array(self, tmp_path: Path) -> None:
        rows = [{"code": f"@triton.jit\ndef k{i}(x):\n    pass\n# {i * 7919 % 1000003}", "description_1": str(i)}
                for i in range(3000)]
        data = gzip.compress(json.dumps(rows).encode())
        p = tmp_path / "train_crawl.json.gz"
        p.write_bytes(data[: len(data) * 2 // 3])
        _, records, errors = parse(p)
        assert len(records) > 100
        assert "damaged" in errors[-1].message and errors[-1].index == len(records)

    def test_lone_surrogate_escape_is_refused(self, tmp_path: Path) -> None:
        a, b = self.bcb_rows()
        b["test"] = "ok \udcff"  # json.dumps writes the escape \udcff: pure ASCII on disk
        _, records, errors = parse(self.write_jsonl(tmp_path / "b.jsonl", [a, b]))
        assert len(records) == 1 and (errors[0].line, errors[0].field) == (2, "test")

    def test_emoji_escapes_are_fine(self, tmp_path: Path) -> None:
        a, b = self.bcb_rows()
        b["test"] = "ok \U0001f600"
        _, records, errors = parse(self.write_jsonl(tmp_path / "b.jsonl", [a, b]))
        assert errors == [] and records[1].revisions[2].content == "ok \U0001f600"
