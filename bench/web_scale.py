"""Web pages at scale: 100,000 samples and 500,000 revisions, on SQLite and on PostgreSQL.

    .venv/bin/python bench/web_scale.py                      # both databases, full size
    .venv/bin/python bench/web_scale.py --database sqlite --samples 10000 --revisions 50000

Generates the rows with bulk_create (revisions get their sha256 computed here, as
Revision.save would), then requests every page through the whole Django stack
(middleware, session auth, role check, view, template) with the test Client, and
prints p50 / p95 / max server time per page over --requests requests (after warm-up),
and the CPU time the request took in this thread (p50 / p95): on a shared machine the
wall-clock figures include waiting for a core, the CPU figures do not.
The goal (issue 2) is p95 <= 150 ms for every page at full size.

SQLite lives in a temporary directory (or --sqlite-path). PostgreSQL uses a database of
its own (default ks_bench on 127.0.0.1:5432, created if missing); a database named
kernelstudio or test_* is refused. Generated data is reused when the counts match
(--regenerate to start over). Each database runs in a child process because Django
reads DATABASE_URL once, at start-up.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("instruction", "reference", "candidate", "wrapper", "test")
STATUSES = ("draft", "draft", "draft", "in_review", "changes_requested", "approved", "rejected")
OUTCOMES = ("", "", "passed", "failed", "timeout", "crashed", "error", "pending")
LANGS = (("triton", "hip"), ("triton", "hip"), ("cuda", "hip"), ("hip", "hip"), ("cuda", "cuda"))
SOURCES = ("tritonbench-g", "geak-rocm", "train_crawl", "20250709_gaagent_hip_3", "extracted", "mmcv")
WORDS = ("add", "softmax", "layernorm", "matmul", "transpose", "relu", "gelu", "rmsnorm", "rope", "attention",
         "conv2d", "reduce", "scan", "argmax", "dropout", "embedding", "quant", "dequant", "topk", "sort")
HOT_REVISIONS = 300  # one sample with a long candidate history, for the history page


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--database", choices=("sqlite", "postgres", "both"), default="both")
    p.add_argument("--samples", type=int, default=100_000)
    p.add_argument("--revisions", type=int, default=500_000)
    p.add_argument("--requests", type=int, default=50, help="timed requests per page (at least 50 for the record)")
    p.add_argument("--sqlite-path", default=str(Path(tempfile.gettempdir()) / "ks-bench" / "web_scale.sqlite3"))
    p.add_argument("--postgres-url", default="postgres://postgres@127.0.0.1:5432/ks_bench")
    p.add_argument("--regenerate", action="store_true", help="drop the generated data and generate it again")
    p.add_argument("--json", default="", help="also write the figures to this JSON file")
    p.add_argument("--child", default="", help=argparse.SUPPRESS)
    return p.parse_args(argv)


# --- parent: one child process per database -------------------------------------------


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        return child(args)
    targets = ["sqlite", "postgres"] if args.database == "both" else [args.database]
    print(f"web_scale: {args.samples:,} samples, {args.revisions:,} revisions, {args.requests} requests per page")
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    all_results: dict[str, Any] = {}
    worst = 0
    for target in targets:
        out = Path(tempfile.mkdtemp(prefix="ks-bench-")) / "result.json"
        cmd = [sys.executable, __file__, "--child", target, "--json", str(out), "--samples", str(args.samples),
               "--revisions", str(args.revisions), "--requests", str(args.requests),
               "--sqlite-path", args.sqlite_path, "--postgres-url", args.postgres_url]
        if args.regenerate:
            cmd.append("--regenerate")
        code = subprocess.call(cmd, cwd=ROOT)
        if code != 0:
            print(f"{target}: the benchmark failed (exit code {code})")
            worst = max(worst, code)
            continue
        all_results[target] = json.loads(out.read_text())
    if args.json:
        Path(args.json).write_text(json.dumps(all_results, indent=2))
    return worst


# --- child: generate, measure, print ------------------------------------------------------


def child(args: argparse.Namespace) -> int:
    data_dir = Path(tempfile.mkdtemp(prefix="ks-bench-data-"))
    os.environ["KS_DATA_DIR"] = str(data_dir)
    os.environ["ALLOWED_HOSTS"] = "testserver"
    os.environ["DEBUG"] = "false"
    os.environ["LOG_LEVEL"] = "WARNING"
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:1/0")  # pages must not need Redis to render
    if args.child == "sqlite":
        path = Path(args.sqlite_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        os.environ["DATABASE_URL"] = f"sqlite:///{path}"
    else:
        _ensure_postgres_database(args.postgres_url)
        os.environ["DATABASE_URL"] = args.postgres_url
    os.environ["DJANGO_SETTINGS_MODULE"] = "kernelstudio.settings"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    t0 = time.perf_counter()
    generated = generate(samples=args.samples, revisions=args.revisions, regenerate=args.regenerate)
    gen_s = time.perf_counter() - t0
    _vacuum()
    print(f"\n== {args.child} ({_describe_db()}) ==")
    print(f"data: {'generated' if generated else 'reused'} in {gen_s:.1f} s")
    results = measure(requests=args.requests)
    Path(args.json).write_text(json.dumps({"database": args.child, "generated_s": gen_s, "pages": results}))
    return 0


def _ensure_postgres_database(url: str) -> None:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    if not name or name == "kernelstudio" or name.startswith("test_"):
        raise SystemExit(f"refusing to use database {name!r}: give the benchmark a database of its own")
    import psycopg

    admin = parts._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')


def _vacuum() -> None:
    """PostgreSQL: set the visibility map, as autovacuum would on a live site after a bulk load.

    Without it an index-only scan still visits every heap page it skips, so deep pages
    (OFFSET 99,950) measure the freshly loaded state rather than the steady one.
    """
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cur:
        for table in ("annotations_sample", "annotations_revision", "annotations_sample_tags"):
            cur.execute(f"VACUUM (ANALYZE) {table}")  # noqa: S608 - fixed table names


def _describe_db() -> str:
    from django.db import connection

    if connection.vendor == "sqlite":
        import sqlite3

        return f"SQLite {sqlite3.sqlite_version}"
    with connection.cursor() as cur:
        cur.execute("SHOW server_version")
        return f"PostgreSQL {cur.fetchone()[0]}"


KERNEL_TEMPLATE = '''import triton
import triton.language as tl


@triton.jit
def {name}_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    # sample {i}, revision {seq}
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x * {seq}, mask=mask)
'''


def generate(*, samples: int, revisions: int, regenerate: bool) -> bool:
    from django.db import connection, transaction

    from annotations.models import Revision, Role, Sample, Tag, User

    if not regenerate and Sample.objects.count() == samples and Revision.objects.count() == revisions:
        return False
    if revisions < samples + HOT_REVISIONS:
        raise SystemExit(f"--revisions must be at least --samples + {HOT_REVISIONS}")
    with connection.cursor() as cur:
        # Revisions refuse DELETE through the ORM (and PROTECT their sample): clear at the SQL level.
        tables = ["annotations_runrevision", "annotations_run", "annotations_review", "annotations_comment",
                  "annotations_auditevent", "annotations_revision", "annotations_sample_tags", "annotations_sample",
                  "annotations_tag"]
        existing = set(connection.introspection.table_names(cur))
        present = [t for t in tables if t in existing]
        if connection.vendor == "postgresql":
            cur.execute("TRUNCATE " + ", ".join(present) + " RESTART IDENTITY CASCADE")
        else:
            cur.execute("PRAGMA foreign_keys = OFF")
            for t in present:
                cur.execute(f"DELETE FROM {t}")  # noqa: S608 - fixed table names
            cur.execute("PRAGMA foreign_keys = ON")
    rng = random.Random(20251122)
    users = []
    for i in range(20):
        user, _ = User.objects.get_or_create(username=f"bench{i:02d}", defaults={"role": Role.ANNOTATOR})
        users.append(user)
    tags = Tag.objects.bulk_create([Tag(name=f"{w}-{k}") for w in WORDS for k in ("fp16", "fp32", "bf16")])
    batch = 5000
    per_sample = max(1, min(len(KINDS), revisions // samples))
    remaining = revisions - HOT_REVISIONS
    t0 = time.perf_counter()
    for start in range(0, samples, batch):
        rows = []
        for i in range(start, min(samples, start + batch)):
            ref, target = LANGS[i % len(LANGS)]
            word = WORDS[rng.randrange(len(WORDS))]
            rows.append(Sample(
                task_id=f"{SOURCES[i % len(SOURCES)]}/{word}_{i:06d}.py",
                source=SOURCES[i % len(SOURCES)],
                kernel_name=f"{word}_kernel_{i}",
                entry_point=f"{word}_wrapper",
                reference_language=ref,
                target_language=target,
                status=STATUSES[rng.randrange(len(STATUSES))],
                latest_run_outcome=OUTCOMES[rng.randrange(len(OUTCOMES))],
                assignee=users[rng.randrange(len(users))] if rng.random() < 0.6 else None,
                difficulty=rng.randint(1, 5),
                provenance={"file": f"{word}_{i}.py", "line": rng.randint(1, 900)},
            ))
        with transaction.atomic():
            created = Sample.objects.bulk_create(rows)
            through = Sample.tags.through
            links = []
            for s in created:
                for tag in rng.sample(tags, rng.randint(1, 3)):
                    links.append(through(sample_id=s.pk, tag_id=tag.pk))
            through.objects.bulk_create(links)
    sample_ids = list(Sample.objects.order_by("id").values_list("id", flat=True))
    hot_id = sample_ids[len(sample_ids) // 2]
    counts: dict[int, int] = {}

    def rev_rows() -> Any:
        made = 0
        for idx, sid in enumerate(sample_ids):
            n = per_sample if sid != hot_id else 0
            for k in range(n):
                if made >= remaining:
                    break
                made += 1
                kind = KINDS[k]
                content = KERNEL_TEMPLATE.format(name=WORDS[idx % len(WORDS)], i=idx, seq=1) + f"# {kind}\n"
                counts[sid] = counts.get(sid, 0) + 1
                yield Revision(sample_id=sid, kind=kind, seq=1, content=content,
                               sha256=hashlib.sha256(content.encode()).hexdigest(), language="triton",
                               author_label="import:bench", origin="imported")
        # Spread what is left over as extra candidate revisions (call fix, exe fix, perf candidates).
        extra_seq: dict[int, int] = {}
        while made < remaining:
            sid = sample_ids[rng.randrange(len(sample_ids))]
            if sid == hot_id:
                continue
            seq = extra_seq.get(sid, 1) + 1
            extra_seq[sid] = seq
            content = KERNEL_TEMPLATE.format(name="fix", i=sid, seq=seq)
            made += 1
            counts[sid] = counts.get(sid, 0) + 1
            yield Revision(sample_id=sid, kind="candidate", seq=seq, content=content,
                           sha256=hashlib.sha256(content.encode()).hexdigest(), language="hip",
                           author_label="import:bench", origin="exe_fix")
        for seq in range(1, HOT_REVISIONS + 1):
            content = KERNEL_TEMPLATE.format(name="hot", i=hot_id, seq=seq)
            counts[hot_id] = counts.get(hot_id, 0) + 1
            yield Revision(sample_id=hot_id, kind="candidate", seq=seq, content=content,
                           sha256=hashlib.sha256(content.encode()).hexdigest(), language="hip",
                           author_label=f"bench{seq % 20:02d}", origin="perf_candidate", origin_index=seq)

    buf: list[Any] = []
    for rev in rev_rows():
        buf.append(rev)
        if len(buf) >= batch:
            with transaction.atomic():
                Revision.objects.bulk_create(buf)
            buf = []
    if buf:
        with transaction.atomic():
            Revision.objects.bulk_create(buf)
    # Spread updated_at over a year (bulk_create stamps them all "now"), and set revision_count.
    with connection.cursor() as cur:
        if connection.vendor == "postgresql":
            cur.execute("UPDATE annotations_sample SET updated_at = now() - (random() * interval '365 days'), "
                        "created_at = now() - interval '366 days' + (random() * interval '1 day')")
            cur.execute("UPDATE annotations_sample s SET revision_count = c.n FROM (SELECT sample_id, count(*) n "
                        "FROM annotations_revision GROUP BY sample_id) c WHERE c.sample_id = s.id")
            cur.execute("ANALYZE")
        else:
            cur.execute("UPDATE annotations_sample SET updated_at = datetime('now', '-' || "
                        "(abs(random()) % 31536000) || ' seconds')")
            cur.execute("UPDATE annotations_sample SET revision_count = (SELECT count(*) FROM annotations_revision r "
                        "WHERE r.sample_id = annotations_sample.id)")
            cur.execute("ANALYZE")
    print(f"generated {Sample.objects.count():,} samples and {Revision.objects.count():,} revisions "
          f"in {time.perf_counter() - t0:.1f} s")
    return True


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, int(round(q * (len(ordered) - 1)))))
    return ordered[k]


def measure(*, requests: int) -> dict[str, dict[str, float]]:
    from django.test import Client

    from annotations.models import Revision, Role, Sample, User

    user, _ = User.objects.get_or_create(username="bench-reader", defaults={"role": Role.ANNOTATOR})
    client = Client()
    client.force_login(user)
    assignee = User.objects.get(username="bench03")
    hot = Sample.objects.order_by("-revision_count").first()
    assert hot is not None
    rng = random.Random(7)
    max_id = Sample.objects.order_by("-id").values_list("id", flat=True).first() or 1
    n_samples = Sample.objects.count()
    last_page = max(1, (n_samples + 49) // 50)
    list_pages: list[tuple[str, str]] = [
        ("list (no filter)", "/samples/"),
        ("list status=approved", "/samples/?status=approved"),
        ("list language=cuda", "/samples/?language=cuda"),
        ("list outcome=failed", "/samples/?outcome=failed"),
        ("list outcome=none", "/samples/?outcome=none"),
        ("list assignee=me", "/samples/?assignee=me"),
        ("list assignee=none", "/samples/?assignee=none"),
        (f"list assignee={assignee.username}", f"/samples/?assignee={assignee.username}"),
        ("list tag=softmax-fp16", "/samples/?tag=softmax-fp16"),
        ("list source=geak-rocm", "/samples/?source=geak-rocm"),
        ("list q=softmax (search)", "/samples/?q=softmax"),
        ("list q=no-such-kernel (search, 0 hits)", "/samples/?q=no-such-kernel"),
        ("list q=layernorm&status=draft&language=hip", "/samples/?q=layernorm&status=draft&language=hip"),
        ("list sort=task_id", "/samples/?sort=task_id"),
        ("list sort=-created", "/samples/?sort=-created"),
        ("list sort=outcome", "/samples/?sort=outcome"),
        (f"list page={last_page} (last page)", f"/samples/?page={last_page}"),
    ]
    results: dict[str, dict[str, float]] = {}
    header = f"{'page (server time through the full stack)':<46} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'cpu p50':>8} {'cpu p95':>8}  n"
    print(header)
    print("-" * len(header))

    def timed(label: str, urls: list[str]) -> None:
        for url in urls[:3]:  # warm-up: template loading, connection, caches
            client.get(url)
        times = []
        cpu = []
        for i in range(requests):
            url = urls[i % len(urls)]
            c0 = time.thread_time()
            t0 = time.perf_counter()
            response = client.get(url)
            times.append((time.perf_counter() - t0) * 1000)
            # CPU time of this thread: what the request cost, whatever else the machine was doing.
            cpu.append((time.thread_time() - c0) * 1000)
            if response.status_code != 200:
                raise SystemExit(f"{label}: {url} answered {response.status_code}")
        row = {"p50_ms": statistics.median(times), "p95_ms": _percentile(times, 0.95), "max_ms": max(times),
               "cpu_p50_ms": statistics.median(cpu), "cpu_p95_ms": _percentile(cpu, 0.95), "n": len(times)}
        results[label] = row
        flag = "" if row["p95_ms"] <= 150 else "  <-- p95 over the 150 ms goal"
        print(f"{label:<46} {row['p50_ms']:8.1f} {row['p95_ms']:8.1f} {row['max_ms']:8.1f} "
              f"{row['cpu_p50_ms']:8.1f} {row['cpu_p95_ms']:8.1f}  {row['n']}{flag}", flush=True)

    for label, url in list_pages:
        timed(label, [url])
    random_ids: list[int] = []
    while len(random_ids) < requests:
        pk = rng.randint(1, max_id)
        if Sample.objects.filter(pk=pk).exists():
            random_ids.append(pk)
    timed("sample page (random samples)", [f"/samples/{pk}/" for pk in random_ids])
    timed(f"sample page (hot sample, {hot.revision_count} revisions)", [f"/samples/{hot.pk}/"])
    timed("history candidate (random samples)", [f"/samples/{pk}/history/candidate/" for pk in random_ids])
    timed(f"history candidate (hot sample, {hot.revision_count})", [f"/samples/{hot.pk}/history/candidate/"])
    rev_ids = list(Revision.objects.filter(sample_id__in=random_ids[:requests]).values_list("sample_id", "id")[:requests])
    timed("revision page (random revisions)", [f"/samples/{sid}/revisions/{rid}/" for sid, rid in rev_ids])
    return results


if __name__ == "__main__":
    sys.exit(main())
