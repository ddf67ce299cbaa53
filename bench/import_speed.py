"""Import throughput and memory: `python bench/import_speed.py [--records N] [--big-mb M]`.

Builds synthetic inputs in a temporary directory (BigCodeBench-shaped JSONL
rows with unique task ids: 4 revisions each; and agent-run JSONL + _mem.json:
up to 10 revisions and an imported run each), imports them into a fresh SQLite
database in a temporary KS_DATA_DIR, imports them again (idempotency: nothing
created), and with --big-mb streams a JSONL of that size through the parser
alone, printing peak RSS. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "ingest"


def write_bigcodebench(path: Path, n: int) -> None:
    rows = [json.loads(line) for line in (FIXTURES / "bigcodebench_small.jsonl").read_text().splitlines()]
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            row = dict(rows[i % len(rows)])
            row["task_id"] = f"BigCodeBench/{i}"
            # Unique content per row, as in a real file.
            row["canonical_solution"] = row["canonical_solution"] + f"    # variant {i}\n"
            fh.write(json.dumps(row) + "\n")


def write_agent(dirpath: Path, n: int) -> Path:
    rows = [json.loads(line) for line in (FIXTURES / "agent" / "20250709_gaagent_hip_3.jsonl").read_text().splitlines()]
    mem_src = json.loads((FIXTURES / "agent" / "20250709_gaagent_hip_3_mem.json").read_text())
    jsonl = dirpath / "bench_run.jsonl"
    mem: dict[str, object] = {}
    with open(jsonl, "w", encoding="utf-8") as fh:
        for i in range(n):
            base = rows[i % len(rows)]
            name = f"task_{i}.py"
            row = dict(base, filename=name, predict=base["predict"] + f"// variant {i}\n")
            fh.write(json.dumps(row) + "\n")
            mem[name] = mem_src[base["filename"]]
    (dirpath / "bench_run_mem.json").write_text(json.dumps(mem))
    return jsonl


def peak_rss_mb() -> float:
    """Peak resident memory of this process (VmHWM: unlike ru_maxrss it is not inherited across exec)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--agent-records", type=int, default=2_000)
    parser.add_argument("--big-mb", type=int, default=0,
                        help="also stream a JSONL and a JSON array of this size through the parser")
    parser.add_argument("--big-import", action="store_true", help="and import the big JSONL")
    parser.add_argument("--parse-only", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.parse_only:
        parse_only(Path(args.parse_only))
        return

    tmp = Path(tempfile.mkdtemp(prefix="ks-import-bench-"))
    os.environ["KS_DATA_DIR"] = str(tmp / "data")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kernelstudio.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    from annotations.models import Revision, Sample
    from annotations.services.imports import import_batch_create, import_batch_execute, summary_line

    call_command("migrate", verbosity=0)
    print(f"machine: {platform.machine()} {os.cpu_count()} cpus, python {platform.python_version()}, "
          f"sqlite at {tmp / 'data'}")

    def timed_import(path: Path, label: str) -> None:
        for attempt in ("first", "again"):
            batch = import_batch_create(path=path, user=None)
            t0, c0 = time.perf_counter(), time.process_time()
            batch = import_batch_execute(batch=batch)
            dt, cpu = time.perf_counter() - t0, time.process_time() - c0
            rate = batch.processed / dt if dt else 0.0
            # The dev VM is shared: CPU time says what the import costs when the cores are not contended.
            print(f"{label} ({attempt}): {batch.processed} records in {dt:.2f} s wall, {cpu:.2f} s CPU "
                  f"= {rate:,.0f} records/s; load average {os.getloadavg()[0]:.1f}; {summary_line(batch)}")

    if args.records:
        bcb = tmp / "bigcodebench_bench.jsonl"
        write_bigcodebench(bcb, args.records)
        print(f"input: {bcb.name} {bcb.stat().st_size / 1e6:.1f} MB, {args.records} rows x 4 revisions")
        timed_import(bcb, "bigcodebench-shaped")
    if args.agent_records:
        jsonl = write_agent(tmp, args.agent_records)
        print(f"input: {jsonl.name} + _mem.json {(jsonl.stat().st_size + (tmp / 'bench_run_mem.json').stat().st_size) / 1e6:.1f} MB, "
              f"{args.agent_records} tasks x up to 10 revisions + 1 imported run")
        timed_import(jsonl, "agent-run")
    print(f"database: {Sample.objects.count()} samples, {Revision.objects.count()} revisions")


    if args.big_mb:
        big_jsonl, big_array = tmp / "big.jsonl", tmp / "train_crawl_big.json"
        write_big(big_jsonl, big_array, args.big_mb)
        for path in (big_jsonl, big_array):
            # A fresh process per file, so its peak RSS is the parser's alone.
            subprocess.run([sys.executable, __file__, "--parse-only", str(path)], check=True)
        if args.big_import:
            batch = import_batch_create(path=big_jsonl, user=None)
            t0, c0 = time.perf_counter(), time.process_time()
            batch = import_batch_execute(batch=batch)
            print(f"import of {big_jsonl.stat().st_size / 1e6:.0f} MB JSONL: {summary_line(batch)} in "
                  f"{time.perf_counter() - t0:.1f} s wall, {time.process_time() - c0:.1f} s CPU; "
                  f"peak RSS of the whole bench process {peak_rss_mb():.0f} MB")


def write_big(jsonl: Path, array: Path, megabytes: int) -> None:
    row = json.loads((FIXTURES / "bigcodebench_small.jsonl").read_text().splitlines()[0])
    crawl = json.loads((FIXTURES / "train_crawl.json").read_text())[1]
    pad = "x" * 2000
    i = 0
    with open(jsonl, "w", encoding="utf-8") as fh:
        while fh.tell() < megabytes * 1_000_000:
            fh.write(json.dumps(dict(row, task_id=f"BigCodeBench/{i}", test=row["test"] + f"# {pad} {i}\n")) + "\n")
            i += 1
    i = 0
    with open(array, "w", encoding="utf-8") as fh:
        fh.write("[\n")
        while fh.tell() < megabytes * 1_000_000:
            fh.write(("" if i == 0 else ",\n") + json.dumps(dict(crawl, code=crawl["code"] + f"# {pad} {i}\n"), indent=4))
            i += 1
        fh.write("\n]\n")


def parse_only(path: Path) -> None:
    sys.path.insert(0, str(ROOT))
    from pipeline.importers import RecordError, parse_input

    before = peak_rss_mb()
    t0 = time.perf_counter()
    module, items = parse_input(path)
    n = errors = 0
    for item in items:
        n += 1
        errors += isinstance(item, RecordError)
    dt = time.perf_counter() - t0
    name = module.NAME if module else "?"
    print(f"streaming parse of {path.stat().st_size / 1e6:.0f} MB ({name}): {n} records ({errors} errors) in "
          f"{dt:.1f} s; peak RSS {peak_rss_mb():.0f} MB (the interpreter with the parser loaded: {before:.0f} MB)")


if __name__ == "__main__":
    main()
