"""Small, real kernel sources shared by the export tests (plain strings)."""

TRITON_REFERENCE = """import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def add_wrapper(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n_elements = out.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)
    add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=1024)
    return out
"""

TRITON_TEST = """def test_add_kernel():
    result = {}
    for n in (1, 1024, 1000):
        x = torch.rand(n)
        y = torch.rand(n)
        result[f"n={n}"] = add_wrapper(x, y)
    return result


result_gold = test_add_kernel()
"""

HIP_CANDIDATE = """#include <hip/hip_runtime.h>
#include <torch/extension.h>

__global__ void add_kernel(const float* __restrict__ x, const float* __restrict__ y,
                           float* __restrict__ out, int64_t n) {
    int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}

torch::Tensor add_wrapper(torch::Tensor x, torch::Tensor y) {
    auto out = torch::empty_like(x);
    const int64_t n = x.numel();
    const int threads = 256;
    const int blocks = static_cast<int>((n + threads - 1) / threads);
    hipLaunchKernelGGL(add_kernel, dim3(blocks), dim3(threads), 0, 0,
                       x.data_ptr<float>(), y.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("add_wrapper", &add_wrapper, "x + y"); }
"""

INSTRUCTION = """Add two float32 tensors element-wise on the GPU and return the sum in a new tensor.

Parameters:
x (torch.Tensor): float32, contiguous, on the GPU.
y (torch.Tensor): float32, same shape and device as x.

Returns:
torch.Tensor: a new tensor with x + y, same shape and dtype as x.

Constraints:
- No device checks such as TORCH_CHECK(x.is_cuda()).
- Expose the wrapper with PYBIND11_MODULE.

Raises:
RuntimeError: if the kernel launch fails.

Example:
>>> add_wrapper(torch.ones(4, device="cuda"), torch.ones(4, device="cuda"))
tensor([2., 2., 2., 2.], device='cuda:0')
"""
