"""Test data for the review area, built through the real services.

A finished run is recorded with `Run.objects.create` + `RunRevision` rows: that
records a fact (this run used these revisions and passed), it does not stand in
for any component; the real cpu backend is exercised in test_review_real_run.py.
"""

from __future__ import annotations

from annotations.models import Run, RunRevision, Sample, User
from annotations.selectors.reviews import RUN_KINDS, current_revisions
from tests.factories import TRITON_ADD, add_revision, make_sample

HIP_ADD = """#include <hip/hip_runtime.h>
__global__ void add_kernel(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}
"""
HIP_ADD_FIXED = HIP_ADD.replace("out[i] = x[i] + y[i];", "out[i] = x[i] + y[i];  // bounds checked")
TEST_ADD = "import torch\n\nresult_gold = {'n1025': add_wrapper(torch.ones(1025), torch.ones(1025))}\n"


def reviewable_sample(task_id: str = "demo/add", *, author: User | None = None, submit_by: User | None = None,
                      passing_run: bool = True) -> Sample:
    """A sample with a reference, an instruction, an initial and a fixed candidate, a test; optionally in review."""
    sample = make_sample(task_id, author=None, kinds={"reference": TRITON_ADD, "instruction": "Add two vectors."})
    add_revision(sample, "candidate", HIP_ADD)
    add_revision(sample, "candidate", HIP_ADD_FIXED, author=author, origin="exe_fix" if author else "initial")
    add_revision(sample, "test", TEST_ADD)
    if passing_run:
        record_run(sample)
    if submit_by is not None:
        from annotations.services.reviews import review_submit_for_review

        review_submit_for_review(sample=sample, actor=submit_by)
    sample.refresh_from_db()
    return sample


def record_run(sample: Sample, *, status: str = "passed", call_ok: bool | None = True, exe_ok: bool | None = True,
               imported: bool = False, log: str = "build ok\ncall ok\nexe ok\n", message: str = "",
               revisions: dict | None = None, purpose: str = "verify") -> Run:
    """Record a finished run of the sample's current revisions (or of `revisions`, kind -> Revision)."""
    run = Run.objects.create(sample=sample, backend="cpu", status=status, call_ok=call_ok, exe_ok=exe_ok,
                             imported=imported, log=log, message=message, purpose=purpose,
                             failed_stage="" if status == "passed" else "exe")
    used = revisions if revisions is not None else current_revisions(sample, RUN_KINDS)
    for kind, rev in used.items():
        RunRevision.objects.create(run=run, revision=rev, kind=kind)
    return run


def all_ticked() -> dict[str, bool]:
    from annotations.services.reviews import CHECKLIST

    return {key: True for key, _ in CHECKLIST}


def approve_post(sample: Sample, **overrides: object) -> dict[str, object]:
    """The POST the review form sends for an approval, as rendered for `sample` now."""
    from annotations.services.reviews import CHECKLIST

    data: dict[str, object] = {
        "verdict": "approve",
        "checklist": [key for key, _ in CHECKLIST],
        "comment": "",
        "seen_status": sample.status,
        "seen_revision_count": sample.revision_count,
    }
    data.update(overrides)
    return data
