from __future__ import annotations

import pytest

from annotations.models import Sample, User
from tests.factories import TRITON_ADD, make_sample
from tests.llm.conftest import endpoint, fake_llm, llm_settings, no_llm  # noqa: F401 - shared fixtures

CANDIDATE = """#include <hip/hip_runtime.h>
__global__ void add_kernel(const float* x, const float* y, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = x[i] + y[i];
}
"""


@pytest.fixture
def sample(annotator: User) -> Sample:
    return make_sample("demo/add", kinds={"reference": TRITON_ADD,
                                          "instruction": "Add two vectors of n floats.",
                                          "candidate": CANDIDATE})
