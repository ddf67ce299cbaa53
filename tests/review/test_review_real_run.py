"""An approval needs a passing run of exactly the current revisions: here with a real run.

The cpu backend (Triton's interpreter, a real sandboxed subprocess) verifies the
sample through `run_request` and real RQ workers (cpu queue, then the collect job
on default); the approval then records that run. A new revision makes it stale.
"""

from __future__ import annotations

import importlib.util

import pytest

from annotations.models import Run, SampleStatus
from annotations.services.reviews import review_record, review_submit_for_review
from tests.factories import TRITON_ADD, add_revision, make_sample
from tests.review.helpers import all_ticked

# Transactional: the run is enqueued after its transaction commits, as in production
# (django-rq defers an enqueue made inside an atomic block, and the test's own
# transaction would be one).
pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

WRAPPER = '''import torch
import triton


def add_wrapper(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[(triton.cdiv(n, 128),)](x, y, out, n, BLOCK=128)
    return out
'''
TEST = '''import torch

torch.manual_seed(0)
result_gold = {
    "n1025": add_wrapper(torch.rand(1025), torch.rand(1025)),  # not a multiple of BLOCK
    "n1": add_wrapper(torch.rand(1), torch.rand(1)),
    "n256": add_wrapper(torch.rand(256), torch.rand(256)),
}
'''


def test_approval_with_a_real_cpu_run(annotator, reviewer, drain_queues):
    if importlib.util.find_spec("annotations.services.runs") is None:
        pytest.skip("the verification service (annotations.services.runs) is not in this checkout")
    from annotations.services.runs import run_request

    sample = make_sample("real/add", entry_point="add_wrapper", reference_language="triton",
                         target_language="triton", kinds={"reference": TRITON_ADD, "instruction": "Add two vectors."})
    add_revision(sample, "candidate", TRITON_ADD, author=annotator)
    add_revision(sample, "wrapper", WRAPPER, author=annotator)
    add_revision(sample, "test", TEST, author=annotator)
    run = run_request(sample=sample, backend="cpu", user=annotator)
    drain_queues("cpu")
    drain_queues("default")
    run.refresh_from_db()
    assert run.status == "passed", (run.status, run.failed_stage, run.message, run.log[-2000:])
    assert run.call_ok and run.exe_ok

    review_submit_for_review(sample=sample, actor=annotator)
    review = review_record(sample=sample, reviewer=reviewer, verdict="approve", checklist=all_ticked(),
                           seen_status=sample.status, seen_revision_count=sample.revision_count)
    sample.refresh_from_db()
    assert sample.status == SampleStatus.APPROVED and review.run == run
    assert {r.kind for r in review.revisions.all()} == {"reference", "instruction", "candidate", "wrapper", "test"}

    # A new test revision: the approval goes stale and the old run no longer covers the sample.
    add_revision(sample, "test", TEST.replace("256", "4096"), author=annotator)
    review.refresh_from_db()
    sample.refresh_from_db()
    assert review.stale and sample.status == SampleStatus.IN_REVIEW
    assert Run.objects.filter(sample=sample).count() == 1
