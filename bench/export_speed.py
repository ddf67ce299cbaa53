"""Export throughput and memory: `python bench/export_speed.py [--samples N] [--layouts hf,tritonbench]`.

Seeds a fresh SQLite database (temporary KS_DATA_DIR) with N approved samples
(Triton reference, HIP candidate, instruction, test; one passing run and one
approval each, covering exactly those revisions), then:

1. times `export_to_directory` over all N (wall and CPU seconds, rows/s, MB written);
2. exports again and checks the two snapshots are byte-identical;
3. measures the Python heap peak (tracemalloc) of exports of growing subsets
   (N/8, N/4, N/2, N) - flat peaks mean memory does not grow with the samples.

Seeding writes rows in bulk (revisions through revision_bulk_create_new; the
approvals as the review service records them) because 10,000 one-by-one
reviews would take minutes and measure the review service, not the export.
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import platform
import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def seed(n: int, fractions: list[int]) -> None:
    from django.db import transaction
    from django.utils import timezone

    from annotations.models import Review, Run, RunRevision, Sample, SampleStatus, Tag, User
    from annotations.models.review import Verdict
    from annotations.models.runs import RunStatus
    from annotations.services.revisions import NewRevision, revision_bulk_create_new
    from tests.export.kernels import HIP_CANDIDATE, INSTRUCTION, TRITON_REFERENCE, TRITON_TEST

    reviewer = User.objects.create_user(username="bench-reviewer", password="x", role="reviewer")
    tags = {f: Tag.objects.create(name=f"first-{f}") for f in fractions}
    batch = 1000
    now = timezone.now()
    for start in range(0, n, batch):
        with transaction.atomic():
            samples = Sample.objects.bulk_create(
                [
                    Sample(
                        task_id=f"bench/{i:06d}",
                        source="bench",
                        kernel_name="add_kernel",
                        entry_point="add_wrapper",
                        reference_language="triton",
                        target_language="hip",
                        difficulty=i % 5 + 1,
                        provenance={"repository": "bench/kernels", "index": i},
                    )
                    for i in range(start, min(n, start + batch))
                ]
            )
            new = []
            for s in samples:
                i = int(s.task_id.split("/")[1])
                # Unique content per sample, as in a real dataset.
                new += [
                    NewRevision(
                        sample=s,
                        kind="reference",
                        content=TRITON_REFERENCE + f"# variant {i}\n",
                        author_label="import:bench",
                        language="triton",
                    ),
                    NewRevision(
                        sample=s,
                        kind="instruction",
                        content=INSTRUCTION + f"\nVariant {i}.\n",
                        author_label="import:bench",
                    ),
                    NewRevision(
                        sample=s,
                        kind="candidate",
                        content=HIP_CANDIDATE + f"// variant {i}\n",
                        author_label="import:bench",
                        language="hip",
                    ),
                    NewRevision(
                        sample=s,
                        kind="test",
                        content=TRITON_TEST + f"# variant {i}\n",
                        author_label="import:bench",
                    ),
                ]
            revision_bulk_create_new(revisions=new)
            runs = Run.objects.bulk_create(
                [
                    Run(
                        sample=s,
                        backend="cuda",
                        status=RunStatus.PASSED,
                        call_ok=True,
                        exe_ok=True,
                        perf_ok=True,
                        speedup=0.8 + (int(s.task_id[-6:]) % 50) / 20,
                        device="NVIDIA H200",
                        emulated=True,
                        finished_at=now,
                    )
                    for s in samples
                ]
            )
            by_sample: dict[int, list[NewRevision]] = {}
            for rev in new:
                assert rev.pk is not None  # revision_bulk_create_new fills it in
                by_sample.setdefault(rev.sample.pk, []).append(rev)
            RunRevision.objects.bulk_create(
                [
                    RunRevision(run=run, revision_id=int(rev.pk or 0), kind=rev.kind)
                    for run, s in zip(runs, samples, strict=True)
                    for rev in by_sample[s.pk]
                    if rev.kind != "instruction"
                ]
            )
            reviews = Review.objects.bulk_create(
                [
                    Review(
                        sample=s, reviewer=reviewer, verdict=Verdict.APPROVE, run=run, checklist={"all": True}
                    )
                    for s, run in zip(samples, runs, strict=True)
                ]
            )
            Review.revisions.through.objects.bulk_create(
                [
                    Review.revisions.through(review_id=review.pk, revision_id=rev.pk)
                    for review, s in zip(reviews, samples, strict=True)
                    for rev in by_sample[s.pk]
                ]
            )
            Sample.tags.through.objects.bulk_create(
                [
                    Sample.tags.through(sample_id=s.pk, tag_id=tags[f].pk)
                    for s in samples
                    for f in fractions
                    if int(s.task_id[-6:]) < n // f
                ]
            )
            Sample.objects.filter(pk__in=[s.pk for s in samples]).update(status=SampleStatus.APPROVED)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--layouts", default="", help="comma-separated extra layouts: hf, tritonbench")
    args = parser.parse_args()
    layouts = [x for x in args.layouts.split(",") if x]

    tmp = Path(tempfile.mkdtemp(prefix="ks-export-bench-"))
    os.environ["KS_DATA_DIR"] = str(tmp / "data")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kernelstudio.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    from annotations.services.exports import export_to_directory

    call_command("migrate", verbosity=0)
    fractions = [8, 4, 2]
    print(
        f"machine: {platform.machine()} {os.cpu_count()} cpus, python {platform.python_version()}, "
        f"SQLite at {tmp / 'data'}; load average {os.getloadavg()[0]:.1f}"
    )
    t0 = time.perf_counter()
    seed(args.samples, fractions)
    print(f"seeded {args.samples} approved samples in {time.perf_counter() - t0:.1f} s")

    rss_before = peak_rss_mb()
    t0, c0 = time.perf_counter(), time.process_time()
    result = export_to_directory(out_dir=tmp / "snap-a", filters={}, layouts=layouts, name="bench")
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    size = sum(f["bytes"] for f in result.files)
    print(
        f"export of {result.samples} samples (layouts: jsonl{''.join(',' + x for x in layouts)}): "
        f"{wall:.2f} s wall, {cpu:.2f} s CPU = {result.samples / wall:,.0f} rows/s; "
        f"{size / 1e6:.1f} MB written; skipped {len(result.skipped)}; "
        f"peak RSS {peak_rss_mb():.0f} MB (was {rss_before:.0f} MB before the export)"
    )

    export_to_directory(out_dir=tmp / "snap-b", filters={}, layouts=layouts, name="bench")
    match, mismatch, errors = filecmp.cmpfiles(
        tmp / "snap-a", tmp / "snap-b", ["dataset.jsonl", "manifest.json", "README.md"], shallow=False
    )
    print(f"second export byte-identical: {not mismatch and not errors} ({', '.join(match)})")

    for label, filters in [
        *[(f"first {args.samples // f}", {"tags": f"first-{f}"}) for f in fractions],
        (f"all {args.samples}", {}),
    ]:
        out = tmp / f"snap-mem-{label.replace(' ', '-')}"
        tracemalloc.start()
        r = export_to_directory(out_dir=out, filters=filters, layouts=layouts, name="bench")
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(f"heap peak while exporting {r.samples:>6} samples: {peak / 1e6:6.1f} MB (tracemalloc)")


if __name__ == "__main__":
    main()
