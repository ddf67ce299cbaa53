"""Small builders for test data, going through the real services."""

from __future__ import annotations

from annotations.models import Revision, Sample, User
from annotations.services.revisions import revision_create
from annotations.services.samples import sample_create

TRITON_ADD = '''import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)
'''


def make_sample(
    task_id: str = "demo/add",
    *,
    author: User | None = None,
    kinds: dict[str, str] | None = None,
    **fields: object,
) -> Sample:
    sample = sample_create(task_id=task_id, source=fields.pop("source", "test"), kernel_name=fields.pop(
        "kernel_name", "add_kernel"), **fields)  # type: ignore[arg-type]
    contents = kinds if kinds is not None else {"reference": TRITON_ADD, "instruction": "Add two vectors."}
    for kind, content in contents.items():
        add_revision(sample, kind, content, author=author)
    return sample


def add_revision(sample: Sample, kind: str, content: str, *, author: User | None = None, origin: str = "initial") -> Revision:
    return revision_create(
        sample=sample, kind=kind, content=content, author=author,
        author_label="" if author else "import:test", origin=origin,
    )
