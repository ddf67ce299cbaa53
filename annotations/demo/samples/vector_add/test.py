import torch


def test_add_kernel():
    results = {}
    # 4097: not a multiple of the block size, so the masked tail runs.
    x = torch.rand(4097, device='cuda')
    y = torch.rand(4097, device='cuda')
    out = add_wrapper(x, y)
    torch.testing.assert_close(out, x + y)
    results['test_case_1'] = out
    # Exactly one block; x + (-x) must be exactly zero.
    x = torch.randn(1024, device='cuda')
    out = add_wrapper(x, -x)
    assert torch.count_nonzero(out).item() == 0
    results['test_case_2'] = out
    # A single element.
    x = torch.randn(1, device='cuda')
    results['test_case_3'] = add_wrapper(x, x)
    # float16, and a 2D shape that is flattened by the kernel.
    x = torch.randn(3, 1000, device='cuda', dtype=torch.float16)
    y = torch.randn(3, 1000, device='cuda', dtype=torch.float16)
    out = add_wrapper(x, y)
    assert out.shape == x.shape and out.dtype == torch.float16
    torch.testing.assert_close(out, x + y)
    results['test_case_4'] = out
    # Special values: infinities propagate, -0.0 + -0.0 stays -0.0, 1e30 + 1e30 does not overflow float32.
    x = torch.tensor([float('inf'), -float('inf'), 0.0, -0.0, 1e30], device='cuda')
    y = torch.tensor([1.0, 1.0, -0.0, -0.0, 1e30], device='cuda')
    results['test_case_5'] = add_wrapper(x, y)
    return results


result_gold = test_add_kernel()
