"""Write a snapshot directory: streaming, hashed while written, atomic, byte-identical.

Layout of a snapshot (every layout shares the first three files):

    dataset.jsonl          one row per sample, sorted by task_id
    manifest.json          filters, counts, generator version, sample and revision ids, sha256 of every file
    README.md              the dataset card, with statistics
    hf/README.md           ("hf" layout) a card whose YAML `configs` points `datasets` at hf/data/train.jsonl
    hf/data/train.jsonl    ("hf" layout) the rows with free-form objects as JSON strings
    tritonbench/<name>.py  ("tritonbench" layout) reference, a line of 146 '#', the test;
                           listed with its sha256 in its sample's manifest entry

Why it is byte-identical for the same data: rows come in task_id order and are
dumped with sorted keys and fixed separators; the only date is `created_at`,
taken from the data (the newest approval); files are listed in sorted order.
Why memory stays flat: rows are written as they come; statistics are counters
over small domains and a fixed-bucket histogram; the per-sample part of the
manifest is spooled to a temporary file and copied in at the end.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pipeline.export.rows import GENERATOR_VERSION, ExportInput, RowError, build_row

LAYOUTS = ("hf", "tritonbench")
TRITONBENCH_SEPARATOR = "#" * 146
MANIFEST = "manifest.json"
DATASET = "dataset.jsonl"
CARD = "README.md"

# Speedup histogram buckets (upper bounds, exclusive); > 10x is flagged as suspicious.
SPEEDUP_BUCKETS: tuple[tuple[str, float], ...] = (
    ("< 0.5x", 0.5),
    ("0.5-0.9x", 0.9),
    ("0.9-1.1x", 1.1),
    ("1.1-2x", 2.0),
    ("2-5x", 5.0),
    ("5-10x", 10.0),
    ("> 10x (suspicious)", math.inf),
)


class ExportError(Exception):
    """The snapshot cannot be written at all (bad output directory, unsorted input)."""


def dumps_row(row: Mapping[str, Any]) -> str:
    return json.dumps(row, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def speedup_bucket(value: float) -> str:
    for label, upper in SPEEDUP_BUCKETS:
        if value < upper:
            return label
    return SPEEDUP_BUCKETS[-1][0]


class _HashingFile:
    """Write text as UTF-8 and hash the exact bytes on the way (no second pass)."""

    def __init__(self, root: Path, relpath: str) -> None:
        self.relpath = relpath
        path = root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: IO[bytes] = open(path, "wb")  # noqa: SIM115 - closed in close()
        self._hash = hashlib.sha256()
        self.size = 0

    def write(self, text: str) -> None:
        data = text.encode("utf-8")
        self._hash.update(data)
        self._fh.write(data)
        self.size += len(data)

    def close(self, *, sync: bool = True) -> dict[str, Any]:
        self._fh.flush()
        if sync:
            os.fsync(self._fh.fileno())
        self._fh.close()
        return {"path": self.relpath, "sha256": self._hash.hexdigest(), "bytes": self.size}


@dataclass
class Stats:
    samples: int = 0
    skipped: int = 0
    by_language: Counter[str] = field(default_factory=Counter)
    by_target: Counter[str] = field(default_factory=Counter)
    by_backend: Counter[str] = field(default_factory=Counter)
    by_device: Counter[str] = field(default_factory=Counter)
    by_difficulty: Counter[str] = field(default_factory=Counter)
    by_tag: Counter[str] = field(default_factory=Counter)
    by_reviewer_count: Counter[str] = field(default_factory=Counter)
    speedup_histogram: Counter[str] = field(default_factory=Counter)
    speedup_log_sum: float = 0.0
    speedup_count: int = 0
    perf_passed: int = 0
    newest_approval: str = ""
    prompt_chars_complete: int = 0
    prompt_chars_instruct: int = 0

    def add(self, row: Mapping[str, Any]) -> None:
        self.samples += 1
        self.by_language[row["language"]] += 1
        self.by_target[row["target"]] += 1
        verification = row.get("verification") or {}
        self.by_backend[verification.get("backend") or "none"] += 1
        self.by_device[verification.get("device") or "unknown"] += 1
        self.by_difficulty[str(row["difficulty"]) if row["difficulty"] is not None else "unset"] += 1
        for tag in row["tags"]:
            self.by_tag[tag] += 1
        self.by_reviewer_count[str(row["reviewer_count"])] += 1
        speedup = verification.get("speedup")
        if isinstance(speedup, int | float) and speedup > 0 and math.isfinite(speedup):
            self.speedup_histogram[speedup_bucket(float(speedup))] += 1
            self.speedup_log_sum += math.log(speedup)
            self.speedup_count += 1
        if verification.get("perf_ok"):
            self.perf_passed += 1
        self.newest_approval = max(self.newest_approval, row.get("approved_at") or "")
        self.prompt_chars_complete += len(row["complete_prompt"])
        self.prompt_chars_instruct += len(row["instruct_prompt"])

    @property
    def speedup_geomean(self) -> float | None:
        if not self.speedup_count:
            return None
        return round(math.exp(self.speedup_log_sum / self.speedup_count), 4)

    def as_dict(self) -> dict[str, Any]:
        return {
            "samples": self.samples,
            "skipped": self.skipped,
            "by_language": dict(sorted(self.by_language.items())),
            "by_target": dict(sorted(self.by_target.items())),
            "by_backend": dict(sorted(self.by_backend.items())),
            "by_device": dict(sorted(self.by_device.items())),
            "by_difficulty": dict(sorted(self.by_difficulty.items())),
            "by_tag": dict(sorted(self.by_tag.items())),
            "by_reviewer_count": dict(sorted(self.by_reviewer_count.items())),
            "speedup_histogram": {
                label: self.speedup_histogram.get(label, 0) for label, _ in SPEEDUP_BUCKETS
            },
            "speedup_measured": self.speedup_count,
            "speedup_geomean": self.speedup_geomean,
            "perf_passed": self.perf_passed,
        }


@dataclass
class SnapshotResult:
    directory: Path
    manifest_path: Path
    manifest_sha256: str
    samples: int
    skipped: list[dict[str, str]]
    files: list[dict[str, Any]]
    created_at: str


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _gold_name(task_id: str) -> str:
    """A file name for the TritonBench layout that no task id can turn into a path.

    Task ids made only of safe lower-case characters are used as they are;
    any other gets a short hash of the id, so "a/b", "a_b" and "A_b" never
    collide (not even on a case-insensitive file system) and no set of names
    has to be kept in memory.
    """
    base = _UNSAFE.sub("_", task_id).strip("._") or "task"
    if base == task_id and base == base.lower():
        return f"{base[:150]}.py"
    digest = hashlib.sha256(task_id.encode("utf-8")).hexdigest()[:10]
    return f"{base[:150]}-{digest}.py"


def _hf_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """Free-form objects become JSON strings (as BigCodeBench does with doc_struct),
    so Arrow sees one type per column whatever keys each sample's provenance has."""
    out = dict(row)
    for key in ("artifacts", "revisions", "verification", "provenance"):
        out[key] = json.dumps(row[key], sort_keys=True, ensure_ascii=False)
    return out


def _hf_card(name: str) -> str:
    return (
        "---\n"
        "configs:\n"
        "- config_name: default\n"
        "  data_files:\n"
        "  - split: train\n"
        "    path: data/train.jsonl\n"
        "---\n\n"
        f"# {name}\n\n"
        "Hugging Face layout of a Kernel Studio snapshot: `datasets.load_dataset(<this folder>)`\n"
        "loads it as is. `artifacts`, `revisions`, `verification` and `provenance` are JSON strings\n"
        "(like `doc_struct`); everything else is as in `../dataset.jsonl`.\n"
    )


def _cell(text: str) -> str:
    """A value (tag, device name) as one Markdown table cell."""
    return " ".join(str(text).split()).replace("\\", "\\\\").replace("|", "\\|") or " "


def _table(title: str, counts: Mapping[str, int]) -> str:
    if not counts:
        return f"### {title}\n\nnone\n\n"
    lines = [f"### {title}\n", "| value | samples |", "|---|---:|"]
    lines += [f"| {_cell(key)} | {value} |" for key, value in counts.items()]
    return "\n".join(lines) + "\n\n"


def _card(
    name: str,
    stats: Mapping[str, Any],
    *,
    filters: Mapping[str, Any],
    created_at: str,
    skipped: list[dict[str, str]],
    layouts: list[str],
    prompt_chars: tuple[int, int],
) -> str:
    n = stats["samples"]
    avg_c = round(prompt_chars[0] / n) if n else 0
    avg_i = round(prompt_chars[1] / n) if n else 0
    geomean = stats["speedup_geomean"]
    parts = [
        f"# {name}\n\n",
        "A Kernel Studio dataset snapshot: GPU kernels written or translated by experts with an LLM,\n"
        "verified on real hardware and approved by a second expert. Each row carries BigCodeBench's\n"
        "nine fields (`task_id`, `complete_prompt`, `instruct_prompt`, `canonical_solution`, `code_prompt`,\n"
        "`test`, `entry_point`, `doc_struct`, `libs`) and the kernel's own: `language` (of the reference),\n"
        "`target`, `reference`, `verification` (backend, device, stages, speedup of the approving run),\n"
        "`provenance`, `reviewers`. The Instruct prompt is derived from the Complete prompt by the\n"
        "deterministic rules of Kernel Studio's docs/prompts.md.\n\n",
        f"- generator: `{GENERATOR_VERSION}`\n",
        f"- approved up to: {created_at or 'n/a'}\n",
        f"- samples: {n}\n",
        f"- skipped (approved but not exportable): {len(skipped)}\n",
        f"- layouts: {', '.join(['jsonl', *layouts])}\n",
        f"- filters: `{json.dumps(filters, sort_keys=True, ensure_ascii=False)}`\n",
        f"- mean prompt length: Complete {avg_c} chars, Instruct {avg_i} chars\n\n",
        "## Statistics\n\n",
        _table("Reference language", stats["by_language"]),
        _table("Target language", stats["by_target"]),
        _table("Verification backend", stats["by_backend"]),
        _table("Device", stats["by_device"]),
        _table("Difficulty", stats["by_difficulty"]),
        _table("Reviewers per sample", stats["by_reviewer_count"]),
        _table("Tags", stats["by_tag"]),
        "### Speedup of the approving run (reference time / candidate time)\n\n",
        f"{stats['speedup_measured']} of {n} samples have a measured speedup"
        + (f"; geometric mean {geomean}x.\n\n" if geomean is not None else ".\n\n"),
        "| bucket | samples |\n|---|---:|\n",
        "".join(f"| {label} | {count} |\n" for label, count in stats["speedup_histogram"].items()),
        "\n",
    ]
    if skipped:
        parts.append("## Skipped samples\n\n")
        parts.append("".join(f"- `{s['task_id']}`: {s['reason']}\n" for s in skipped))
        parts.append("\n")
    parts.append(
        "## Files\n\nSee `manifest.json` for the sha256 of every file and the revision ids of every row.\n"
    )
    return "".join(parts)


def write_snapshot(
    items: Iterable[ExportInput],
    out_dir: Path,
    *,
    name: str,
    filters: Mapping[str, Any],
    layouts: Iterable[str] = (),
    progress: Any = None,
) -> SnapshotResult:
    """Write the snapshot to `out_dir` (which must not exist or be empty).

    `items` must come in ascending task_id order. Files are written into a
    temporary sibling directory which is renamed into place at the end, so a
    failure leaves nothing behind and a reader never sees half a snapshot.
    `progress`, if given, is called with the number of samples seen so far.
    """
    layouts = sorted(set(layouts))
    unknown = set(layouts) - set(LAYOUTS)
    if unknown:
        raise ExportError(f"unknown layout(s): {', '.join(sorted(unknown))} (known: {', '.join(LAYOUTS)})")
    out_dir = Path(out_dir)
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise ExportError(f"{out_dir} exists and is not an empty directory")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.partial-", dir=out_dir.parent))
    # mkdtemp makes it 0700; a snapshot is meant to be read and downloaded.
    tmp.chmod(0o755)
    try:
        result = _write(items, tmp, name=name, filters=filters, layouts=layouts, progress=progress)
        if "tritonbench" in layouts:
            os.sync()  # the gold files were not fsynced one by one
        if out_dir.exists():
            out_dir.rmdir()
        os.replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    result.directory = out_dir
    result.manifest_path = out_dir / MANIFEST
    return result


def _write(
    items: Iterable[ExportInput],
    root: Path,
    *,
    name: str,
    filters: Mapping[str, Any],
    layouts: list[str],
    progress: Any,
) -> SnapshotResult:
    stats = Stats()
    skipped: list[dict[str, str]] = []
    files: list[dict[str, Any]] = []
    dataset = _HashingFile(root, DATASET)
    hf = _HashingFile(root, "hf/data/train.jsonl") if "hf" in layouts else None
    gold_count = 0
    # The per-sample part of the manifest, spooled so memory stays flat.
    spool = tempfile.TemporaryFile(mode="w+", encoding="utf-8", dir=root)  # noqa: SIM115 - closed in finally
    previous = None
    seen = 0
    try:
        for item in items:
            seen += 1
            if previous is not None and item.task_id <= previous:
                raise ExportError(
                    f"samples must come in ascending task_id order: {item.task_id!r} after {previous!r}"
                )
            previous = item.task_id
            try:
                row = build_row(item)
            except RowError as exc:
                skipped.append({"task_id": item.task_id, "reason": str(exc)})
                stats.skipped += 1
                continue
            line = dumps_row(row) + "\n"
            dataset.write(line)
            if hf is not None:
                hf.write(dumps_row(_hf_row(row)) + "\n")
            gold_entry = None
            if "tritonbench" in layouts and row["language"] == "triton" and row["reference"] is not None:
                gold = _HashingFile(root, "tritonbench/" + _gold_name(item.task_id))
                reference = row["reference"] if row["reference"].endswith("\n") else row["reference"] + "\n"
                gold.write(f"{reference}{TRITONBENCH_SEPARATOR}\n{row['test']}")
                # One fsync per small file would dominate the export; the
                # os.sync() before the snapshot is renamed into place covers them.
                gold_entry = gold.close(sync=False)
                gold_count += 1
            stats.add(row)
            spool.write(
                json.dumps(
                    {
                        "sample_id": item.sample_id,
                        "task_id": item.task_id,
                        "revisions": {kind: rev["id"] for kind, rev in row["revisions"].items()},
                        # Its gold file, hash included: listed here rather than in
                        # "files" so the manifest header stays small for any size.
                        **({"tritonbench_file": gold_entry} if gold_entry else {}),
                    },
                    sort_keys=True,
                    ensure_ascii=False,
                    separators=(",", ":"),
                )
                + "\n"
            )
            if progress is not None:
                progress(seen)
        files.append(dataset.close())
        if hf is not None:
            files.append(hf.close())
            card = _HashingFile(root, "hf/README.md")
            card.write(_hf_card(name))
            files.append(card.close())
        stats_dict = stats.as_dict()
        if "tritonbench" in layouts:
            stats_dict["tritonbench_files"] = gold_count
        created_at = stats.newest_approval
        card = _HashingFile(root, CARD)
        card.write(
            _card(
                name,
                stats_dict,
                filters=filters,
                created_at=created_at,
                skipped=skipped,
                layouts=layouts,
                prompt_chars=(stats.prompt_chars_complete, stats.prompt_chars_instruct),
            )
        )
        files.append(card.close())
        files.sort(key=lambda f: f["path"])
        manifest = _HashingFile(root, MANIFEST)
        header = {
            "counts": stats_dict,
            "created_at": created_at,
            "files": files,
            "filters": dict(filters),
            "format": "kernelstudio-export/1",
            "generator": GENERATOR_VERSION,
            "layouts": ["jsonl", *layouts],
            "name": name,
            "skipped": skipped,
        }
        # Hand-assembled so the samples list can stream from the spool; one
        # sample per line keeps diffs between snapshots readable.
        text = json.dumps(header, sort_keys=True, ensure_ascii=False, indent=1)
        manifest.write(text[:-2] + ',\n "samples": [\n')
        spool.seek(0)
        first = True
        for line in spool:
            manifest.write(("" if first else ",\n") + "  " + line.rstrip("\n"))
            first = False
        manifest.write("\n ]\n}\n")
        info = manifest.close()
    finally:
        spool.close()
    return SnapshotResult(
        directory=root,
        manifest_path=root / MANIFEST,
        manifest_sha256=info["sha256"],
        samples=stats.samples,
        skipped=skipped,
        files=files,
        created_at=created_at,
    )


def verify_snapshot(directory: Path) -> list[str]:
    """Re-hash every file the manifest lists (gold files included); return the problems (empty = intact)."""
    directory = Path(directory)
    try:
        manifest = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return [f"manifest.json unreadable: {exc}"]
    entries = list(manifest.get("files", []))
    entries += [s["tritonbench_file"] for s in manifest.get("samples", []) if "tritonbench_file" in s]
    problems = []
    for entry in entries:
        path = directory / entry["path"]
        try:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError as exc:
            problems.append(f"{entry['path']}: {exc}")
            continue
        if digest != entry["sha256"]:
            problems.append(f"{entry['path']}: sha256 {digest} does not match the manifest")
    return problems
