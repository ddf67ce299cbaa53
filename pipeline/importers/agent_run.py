"""Agent run output (seed 003): `<run>.jsonl` plus `<run>_mem.json` beside it.

The JSONL has one task per line: `instruction`, `label` (the Triton reference),
`predict` (the model's first HIP output), `test_code`, `filename` (the join key).
The `_mem.json` is one object keyed by `filename` holding the agent's history:
pass flags and error messages per stage, the call/exe fixes, perf candidates
and the agent's strategies. Any of it may be missing or null.

Task id `<run file stem>/<filename stem>`. Revisions, in this order (the newest
candidate becomes the current one): reference <- label, instruction, candidate
<- predict (initial), test <- test_code, candidate <- call_candidate (call fix),
candidate <- exe_candidate (exe fix), candidate <- perf_candidates[n] (perf
candidate n, 1-based, with its numbers), then notes: temp_strategy, reflection,
perf_strategy and each perf candidate's analysis. The pass flags and messages
become one imported run (never mistaken for a run made here).

The mem file is indexed first (key -> byte span, values are not kept), so a
large mem file costs memory for its keys only.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipeline.importers.common import (
    FieldProblem,
    bool_field,
    extra_fields,
    file_stem,
    head_has,
    json_records,
    text_field,
    type_name,
)
from pipeline.importers.reading import InputFile, Item, iter_object, read_span
from pipeline.importers.records import ParsedRecord, RecordError, RevisionData, UnreadableInput

NAME = "agent-run"
LABEL = "Agent run output (<run>.jsonl + <run>_mem.json)"
KNOWN = frozenset({"instruction", "label", "predict", "test_code", "filename"})
MEM_KNOWN = frozenset({"oneshot", "pass_call", "call_err_msg", "call_candidate", "pass_exe", "exe_err_msg",
                       "exe_candidate", "pass_perf", "perf_candidates", "temp_strategy", "reflection",
                       "perf_strategy", "perf_debug_num", "perf_err_msg"})
MEM_SUFFIX = "_mem.json"


def run_paths(path: Path) -> tuple[Path, Path]:
    """(the .jsonl, its _mem.json) for either of the two files."""
    name = path.name
    if name.endswith(MEM_SUFFIX):
        return path.with_name(name[: -len(MEM_SUFFIX)] + ".jsonl"), path
    stem = name[: -len(".jsonl.gz")] if name.endswith(".jsonl.gz") else path.stem
    return path, path.with_name(stem + MEM_SUFFIX)


def run_stem(jsonl: Path) -> str:
    name = jsonl.name
    return name[: -len(".jsonl.gz")] if name.endswith(".jsonl.gz") else jsonl.stem


def detect(path: Path, head: bytes) -> bool:
    if path.name.endswith(MEM_SUFFIX):
        return True  # parse() explains when the .jsonl is not beside it
    return head_has(head, "predict", "label", "filename")


class MemIndex:
    """filename -> the agent's history for it, read back from the mem file on demand."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.spans: dict[str, tuple[int, int]] = {}
        self.values: dict[str, Any] = {}
        self.errors: list[RecordError] = []
        self.duplicates: set[str] = set()
        with InputFile(path) as f:
            compressed = f.compressed
            for item in iter_object(f):
                if item.error is not None:
                    self.errors.append(RecordError(message=item.error, index=item.index, file=path.name,
                                                   field="(mem file)"))
                    continue
                key = str(item.key)
                if key in self.spans or key in self.values:
                    self.duplicates.add(key)
                if compressed:
                    # A span into compressed data cannot be seeked; keep the value (mem.json.gz is rare).
                    self.values[key] = item.value
                else:
                    self.spans[key] = (item.start, item.end)

    def __contains__(self, key: str) -> bool:
        return key in self.spans or key in self.values

    def get(self, key: str) -> Any:
        if key in self.values:
            return self.values[key]
        start, end = self.spans[key]
        return read_span(self.path, start, end)

    def keys(self) -> set[str]:
        return set(self.spans) | set(self.values)


def parse(path: Path) -> Iterator[ParsedRecord | RecordError]:
    jsonl, mem_path = run_paths(path)
    if not jsonl.is_file():
        raise UnreadableInput(f"{mem_path.name} is the second half of an agent run: import {jsonl.name} "
                              "(with this file beside it)")
    stem = run_stem(jsonl)
    mem: MemIndex | None = None
    if mem_path.is_file():
        mem = MemIndex(mem_path)
        yield from mem.errors
        for key in sorted(mem.duplicates):
            yield RecordError(message=f"{key!r} appears more than once in the mem file; the last entry is used",
                              file=mem_path.name, field="filename", task_id=f"{stem}/{file_stem(key)}")
    seen: set[str] = set()

    def build_one(obj: dict[str, Any], item: Item) -> ParsedRecord:
        if isinstance(obj.get("filename"), str):
            # Marked before building: a task refused for a bad field is not also an orphan mem entry.
            seen.add(obj["filename"].strip())
        return build(obj, item, stem=stem, jsonl=jsonl, mem=mem, mem_name=mem_path.name)

    for record in json_records(jsonl, expect="lines", build=build_one):
        if isinstance(record, ParsedRecord) and "mem_file" in record.provenance:
            record.scan_text = True  # its mem entry was not part of the line the reader checked
        yield record
    if mem is not None:
        for key in sorted(mem.keys() - seen):
            yield RecordError(message=f"the mem file has an entry for {key!r} but {jsonl.name} has no task with "
                              "that filename; it was not imported", file=mem_path.name, field="filename")


def build(obj: dict[str, Any], item: Item, *, stem: str, jsonl: Path, mem: MemIndex | None,
          mem_name: str) -> ParsedRecord:
    filename = text_field(obj, "filename").strip()
    task_stem = file_stem(filename)
    if not task_stem:
        raise FieldProblem("filename", f"cannot make a task id from {filename!r}")
    label = text_field(obj, "label")
    instruction = text_field(obj, "instruction", required=False)
    predict = text_field(obj, "predict", required=False)
    test_code = text_field(obj, "test_code", required=False)
    author = f"import:{stem}"
    provenance: dict[str, Any] = {"format": NAME, "import_file": jsonl.name, "run": stem, "filename": filename}
    extras = extra_fields(obj, KNOWN)
    if extras:
        provenance["extra_fields"] = extras

    revisions = [RevisionData(kind="reference", content=label, author_label=author, language="triton",
                              provenance={"field": "label"})]
    if instruction.strip():
        revisions.append(RevisionData(kind="instruction", content=instruction, author_label=author,
                                      provenance={"field": "instruction"}))
    if predict.strip():
        revisions.append(RevisionData(kind="candidate", content=predict, author_label=author, language="hip",
                                      provenance={"field": "predict"}))
    if test_code.strip():
        revisions.append(RevisionData(kind="test", content=test_code, author_label=author, language="python",
                                      provenance={"field": "test_code"}))
    runs: list[dict[str, Any]] = []
    if mem is not None and filename in mem:
        try:
            history = mem.get(filename)
        except (ValueError, OSError) as exc:
            raise FieldProblem(mem_name, f"cannot read the mem entry for {filename!r}: {exc}") from exc
        if not isinstance(history, dict):
            raise FieldProblem(mem_name, f"the mem entry for {filename!r} is {type_name(history)}, expected an object")
        provenance["mem_file"] = mem_name
        _add_history(history, revisions=revisions, runs=runs, provenance=provenance, author=author, mem_name=mem_name)
    elif mem is not None:
        provenance["mem_file"] = mem_name
        provenance["mem_entry"] = "missing"
    return ParsedRecord(
        task_id=f"{stem}/{task_stem}",
        source=stem,
        kernel_name=task_stem,
        reference_language="triton",
        target_language="hip",
        tags=["agent-run"],
        provenance=provenance,
        revisions=revisions,
        imported_runs=runs,
    )


def _mem_text(history: dict[str, Any], name: str) -> str:
    try:
        return text_field(history, name, required=False)
    except FieldProblem as problem:
        raise FieldProblem(f"mem.{name}", problem.message) from None


def _add_history(history: dict[str, Any], *, revisions: list[RevisionData], runs: list[dict[str, Any]],
                 provenance: dict[str, Any], author: str, mem_name: str) -> None:
    label_sha_differs = False
    oneshot = _mem_text(history, "oneshot")
    reference = revisions[0].content
    if oneshot.strip() and oneshot != reference:
        label_sha_differs = True
    for name, origin in (("call_candidate", "call_fix"), ("exe_candidate", "exe_fix")):
        code = _mem_text(history, name)
        if code.strip():
            revisions.append(RevisionData(kind="candidate", content=code, origin=origin, author_label=author,
                                          language="hip", provenance={"field": name, "file": mem_name}))
    perf = history.get("perf_candidates")
    perf_notes: list[RevisionData] = []
    if perf is not None:
        if not isinstance(perf, list):
            raise FieldProblem("mem.perf_candidates", f"expected an array, got {type_name(perf)}")
        for n, entry in enumerate(perf, start=1):
            code, numbers, analysis = _perf_entry(entry, n)
            if code.strip():
                revisions.append(RevisionData(kind="candidate", content=code, origin="perf_candidate", origin_index=n,
                                              author_label=author, language="hip",
                                              provenance={"field": "perf_candidates", "file": mem_name,
                                                          "numbers": numbers}))
            if analysis.strip():
                perf_notes.append(RevisionData(kind="note", content=analysis, origin="perf_candidate", origin_index=n,
                                               author_label=author,
                                               provenance={"field": "perf_candidates.analysis", "file": mem_name,
                                                           "title": f"Performance analysis of perf candidate {n}"}))
    for name, title in (("temp_strategy", "Fix strategy"), ("reflection", "Reflection"),
                        ("perf_strategy", "Performance strategy")):
        text = _mem_text(history, name)
        if text.strip():
            revisions.append(RevisionData(kind="note", content=text, origin="imported", author_label=author,
                                          provenance={"field": name, "file": mem_name, "title": title}))
    revisions.extend(perf_notes)

    flags = {stage: _flag(history, f"pass_{stage}") for stage in ("call", "exe", "perf")}
    messages = {stage: _mem_text(history, f"{stage}_err_msg") for stage in ("call", "exe", "perf")}
    debug_num = history.get("perf_debug_num")
    extras = extra_fields(history, MEM_KNOWN)
    if extras:
        provenance["mem_extra_fields"] = extras
    if label_sha_differs:
        provenance["mem_oneshot_differs_from_label"] = True
    if debug_num is not None:
        provenance["perf_debug_num"] = debug_num
    if any(v is not None for v in flags.values()) or any(messages.values()):
        runs.append(_imported_run(flags, messages, mem_name=mem_name, debug_num=debug_num))


def _flag(history: dict[str, Any], name: str) -> bool | None:
    try:
        return bool_field(history, name)
    except FieldProblem as problem:
        raise FieldProblem(f"mem.{name}", problem.message) from None


def _perf_entry(entry: Any, n: int) -> tuple[str, list[Any], str]:
    """(code, numbers, analysis) from a perf candidate written as [code, [numbers], analysis] or as an object."""
    where = f"mem.perf_candidates[{n - 1}]"
    if isinstance(entry, str):
        return entry, [], ""
    if isinstance(entry, list):
        strings = [x for x in entry if isinstance(x, str)]
        numbers: list[Any] = []
        for x in entry:
            if isinstance(x, int | float) and not isinstance(x, bool):
                numbers.append(x)
            elif isinstance(x, list) and all(isinstance(v, int | float | None) for v in x):
                numbers.extend(x)
            elif not isinstance(x, str) and x is not None:
                raise FieldProblem(where, f"unexpected {type_name(x)} in a perf candidate")
        if not strings:
            raise FieldProblem(where, "a perf candidate without code")
        return strings[0], numbers, "\n\n".join(strings[1:])
    if isinstance(entry, dict):
        code = next((entry[k] for k in ("code", "predict", "candidate") if isinstance(entry.get(k), str)), None)
        if code is None:
            raise FieldProblem(where, "a perf candidate object without a 'code' string")
        analysis = next((entry[k] for k in ("analysis", "perf_analysis", "report") if isinstance(entry.get(k), str)),
                        "")
        numbers_obj = {k: v for k, v in entry.items() if isinstance(v, int | float) and not isinstance(v, bool)}
        return code, [numbers_obj] if numbers_obj else [], analysis
    raise FieldProblem(where, f"expected an array or an object, got {type_name(entry)}")


def _imported_run(flags: dict[str, bool | None], messages: dict[str, str], *, mem_name: str,
                  debug_num: Any) -> dict[str, Any]:
    failed = next((s for s in ("call", "exe") if flags[s] is False), "")
    if failed:
        status = "failed"
    elif flags["call"] and flags["exe"]:
        status = "passed"
    else:
        status = "error"
    if flags["perf"] is False and not failed and status == "passed":
        perf_note = "the perf stage did not reach its target"
    else:
        perf_note = ""
    message = messages.get(failed, "") if failed else perf_note
    if status == "error":
        message = "the agent's log does not say whether every stage passed"
    log_parts = [f"[{stage}] {'passed' if flags[stage] else 'failed' if flags[stage] is False else 'not recorded'}"
                 + (f"\n{messages[stage]}" if messages[stage] else "") for stage in ("call", "exe", "perf")]
    return {
        "backend": "rocm",
        "status": status,
        "stages": {stage: {"ok": flags[stage], "message": messages[stage]} for stage in ("call", "exe", "perf")},
        # Only call and exe decide pass/fail; a missed perf target shows as perf_ok = False.
        "failed_stage": failed,
        "message": message,
        "log": f"Imported from {mem_name}\n\n" + "\n\n".join(log_parts),
        "caveats": [
            f"imported from {mem_name}: measured by the agent's own harness, not by Kernel Studio",
            "the log does not say which candidate each stage ran; linked to the last candidate it recorded",
            "the log does not name the GPU; the backend is assumed to be ROCm (a HIP agent)",
        ],
        "host": f"import:{mem_name}",
        "candidate": "last",
        "perf_debug_num": debug_num,
    }
