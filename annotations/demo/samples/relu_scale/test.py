import torch


def test_relu_scale_kernel():
    results = {}
    # 3001 elements: not a multiple of the block size.
    x = torch.randn(3001, device='cuda')
    out = relu_scale_wrapper(x, 0.5)
    torch.testing.assert_close(out, torch.relu(x) * 0.5)
    results['test_case_1'] = out
    # 2D input, negative scale flips the sign of the positive part only.
    x = torch.randn(17, 129, device='cuda')
    out = relu_scale_wrapper(x, -2.0)
    assert out.shape == (17, 129)
    torch.testing.assert_close(out, torch.relu(x) * -2.0)
    results['test_case_2'] = out
    # All negative: everything is zero.
    x = -torch.rand(512, device='cuda') - 0.1
    out = relu_scale_wrapper(x, 3.0)
    assert torch.count_nonzero(out).item() == 0
    results['test_case_3'] = out
    # Special values and a single-element tensor.
    x = torch.tensor([float('inf'), -float('inf'), 0.0, -0.0, 1e-30, -1e-30], device='cuda')
    results['test_case_4'] = relu_scale_wrapper(x, 2.0)
    results['test_case_5'] = relu_scale_wrapper(torch.tensor([1.5], device='cuda'), 4.0)
    return results


result_gold = test_relu_scale_kernel()
