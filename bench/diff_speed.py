"""Server time of the review diff: two 2,000-line revisions, through the whole Django stack.

    .venv/bin/python bench/diff_speed.py [--requests 30] [--lines 2000]

For each scenario it prints the time of `pipeline.diffing.side_by_side` alone, then
of GET /review/<pk>/diff/candidate/?a=..&b=.. with the test Client (middleware,
session auth, role check, queries, diff, Pygments highlighting of the shown rows,
template) and of the unified-diff download: p50 / p95 wall time over --requests
requests, cold (the cache cleared before each request, so the diff is computed and
highlighted) and cached (rendered diffs of a revision pair are cached: revisions
are immutable), and the CPU time of this thread (p50): on a shared machine wall
time includes waiting for a core, CPU time does not.

Scenarios (both sides --lines long; text is real Triton code from TritonBench-G
when ../shared is present, else generated kernel-like code):
- typical: 5% of lines edited, 1% inserted, 1% deleted, scattered (a fixed candidate)
- heavy:   30% of lines edited, scattered
- rewrite: two unrelated files (worst case: every row shown and highlighted)

The goal (issue 6) is <= 200 ms server time for the diff page of two 2,000-line revisions.
SQLite in a temporary directory; nothing else is touched.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED_TRITONBENCH = ROOT.parent / "shared" / "data" / "tritonbench" / "TritonBench_G_v1.json"


def source_lines(n: int, seed: int) -> tuple[list[str], str]:
    if SHARED_TRITONBENCH.is_file():
        rows = json.loads(SHARED_TRITONBENCH.read_text())
        random.Random(seed).shuffle(rows)
        lines = "\n".join(r["output"] for r in rows).split("\n")
        return lines[:n], "TritonBench-G outputs"
    rng = random.Random(seed)
    lines = []
    for i in range(n):
        r = rng.random()
        if r < 0.12:
            lines.append("")
        elif r < 0.2:
            lines.append("    # stride of the row: BLOCK rows per program")
        else:
            lines.append(f"    acc{i % 17} += tl.load(x_ptr + offs * stride_{i % 7}, mask=mask{i % 3}) * w{i % 11}")
    return lines, "generated kernel-like code"


def edit(lines: list[str], *, edited: float, inserted: float, deleted: float, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for line in lines:
        r = rng.random()
        if r < deleted:
            continue
        if r < deleted + edited:
            line = line.replace("BLOCK", "BLOCK_SIZE").replace("x", "x_ptr") + "  # fixed" if line else "# added"
        out.append(line)
        if rng.random() < inserted:
            out.append("    tl.debug_barrier()")
    return out


def timed(fn, n: int) -> dict[str, float]:  # type: ignore[no-untyped-def]
    wall: list[float] = []
    cpu: list[float] = []
    for _ in range(n):
        c0, w0 = time.thread_time(), time.perf_counter()
        fn()
        wall.append((time.perf_counter() - w0) * 1000)
        cpu.append((time.thread_time() - c0) * 1000)
    wall.sort()
    return {
        "p50": statistics.median(wall),
        "p95": wall[min(len(wall) - 1, int(round(0.95 * (len(wall) - 1))))],
        "max": wall[-1],
        "cpu_p50": statistics.median(cpu),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=30)
    p.add_argument("--lines", type=int, default=2000)
    args = p.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="ks-diff-bench-"))
    os.environ["DATABASE_URL"] = f"sqlite:///{tmp / 'bench.sqlite3'}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kernelstudio.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.conf import settings
    from django.core.cache import cache
    from django.core.management import call_command
    from django.test import Client
    from django.test.utils import setup_test_environment

    setup_test_environment()  # allows the test Client's 'testserver' host
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    call_command("migrate", verbosity=0)

    from annotations.models import Role, User
    from annotations.services.revisions import revision_create
    from annotations.services.samples import sample_create
    from pipeline.diffing import side_by_side

    user = User.objects.create_user(username="bench", password="x", role=Role.REVIEWER)
    client = Client()
    client.force_login(user)

    base, origin = source_lines(args.lines, 1)
    other, _ = source_lines(args.lines * 3, 2)
    scenarios = {
        "typical": edit(base, edited=0.05, inserted=0.01, deleted=0.01, seed=3),
        "heavy": edit(base, edited=0.30, inserted=0.0, deleted=0.0, seed=4),
        "rewrite": other[-args.lines:],
    }
    print(f"diff speed: {args.lines}-line revisions ({origin}), {args.requests} requests per figure")
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
          f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    # One request first, so one-time costs (imports, URL map, template compilation) are not in the figures.
    warm = sample_create(task_id="bench/warm-up", source="bench")
    for text in ("x = 1\n", "x = 2\n"):
        revision_create(sample=warm, kind="candidate", content=text, author_label="import:bench", origin="initial")
    client.get(f"/review/{warm.pk}/diff/candidate/")
    print(f"{'scenario':9} {'rows shown':>10} {'changed':>8} | {'engine p50':>10} {'cpu':>6} | "
          f"{'cold p50':>8} {'p95':>7} {'cpu p50':>8} | {'cached p50':>10} {'p95':>7} {'cpu p50':>8} | "
          f"{'unified p50':>11}")
    for name, right in scenarios.items():
        left_text, right_text = "\n".join(base) + "\n", "\n".join(right) + "\n"
        sample = sample_create(task_id=f"bench/{name}", source="bench", target_language="triton")
        a = revision_create(sample=sample, kind="candidate", content=left_text, author_label="import:bench",
                            origin="initial", language="triton")
        b = revision_create(sample=sample, kind="candidate", content=right_text, author_label="import:bench",
                            origin="exe_fix", language="triton")
        diff = side_by_side(left_text, right_text)
        shown = sum(b.size for b in diff.blocks if not b.folded)
        engine = timed(lambda lt=left_text, rt=right_text: side_by_side(lt, rt), args.requests)
        url = f"/review/{sample.pk}/diff/candidate/?a={a.pk}&b={b.pk}"
        # Cold: the pair's diff is not cached yet (each timed request first clears the cache).
        cold = timed(lambda u=url: (cache.clear(), client.get(u)), args.requests)
        response = client.get(url)
        assert response.status_code == 200, response.status_code
        page = timed(lambda u=url: client.get(u), args.requests)
        unified = timed(lambda u=url: client.get(u + "&format=unified"), args.requests)
        print(f"{name:9} {shown:>10} {diff.changed + diff.added + diff.removed:>8} | {engine['p50']:>8.1f}ms "
              f"{engine['cpu_p50']:>4.1f}ms | "
              f"{cold['p50']:>6.1f}ms {cold['p95']:>5.1f}ms {cold['cpu_p50']:>6.1f}ms | "
              f"{page['p50']:>8.1f}ms {page['p95']:>5.1f}ms {page['cpu_p50']:>6.1f}ms | {unified['p50']:>9.1f}ms")


if __name__ == "__main__":
    main()
