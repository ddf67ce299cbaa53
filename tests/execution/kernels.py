"""Tiny samples for the execution tests (small shapes: the cpu backend runs Triton's interpreter)."""

ADD_REFERENCE = '''
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def add_wrapper(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[(triton.cdiv(n, 128),)](x, y, out, n, BLOCK=128)
    return out
'''

# The same kernel with an off-by-one store: element 7 of every block gets x + 2y.
ADD_WRONG = ADD_REFERENCE.replace(
    "tl.store(out_ptr + offs, x + y, mask=mask)",
    "tl.store(out_ptr + offs, tl.where((offs % 128) == 7, x + 2 * y, x + y), mask=mask)",
)

# TritonBench gold style, written for device='cuda'.
ADD_TEST = '''
def test_add_kernel():
    results = {}
    x = torch.rand(1025, device='cuda')
    y = torch.rand(1025, device='cuda')
    results['test_case_1'] = add_wrapper(x, y)
    x = torch.rand(1, device='cuda').cuda()
    results['test_case_2'] = add_wrapper(x, x)
    x = torch.rand(256, device=torch.device('cuda')).to('cuda')
    results['test_case_3'] = add_wrapper(x, x)
    torch.cuda.synchronize()
    return results


result_gold = test_add_kernel()
'''

ADD_PYTEST = '''
import pytest

result_gold = {}


@pytest.mark.parametrize("n", [1, 128, 1000])
def test_add(n, request):
    x = torch.randn(n, device='cuda')
    out = add_wrapper(x, x)
    result_gold[request.node.name] = out.cpu()
    torch.testing.assert_close(out, x + x)
'''

# TritonBench gold file: reference code, 146 '#', the test (split by the engine).
ADD_GOLD_FILE = ADD_REFERENCE + "\n" + "#" * 146 + "\n" + ADD_TEST


def candidate_with(prelude: str) -> str:
    """The correct kernel with some module-level code before it (crashes, loops, floods)."""
    return prelude + "\n" + ADD_REFERENCE
