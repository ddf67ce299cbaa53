import torch


def test_row_sum_kernel():
    results = {}
    # Rows longer than one block (5000 > 1024) and not a multiple of it.
    x = torch.rand(6, 5000, device='cuda')
    out = row_sum_wrapper(x)
    assert out.shape == (6,) and out.dtype == torch.float32
    torch.testing.assert_close(out, x.sum(dim=1), rtol=1e-5, atol=1e-3)
    results['test_case_1'] = out
    # Exactly one block per row.
    x = torch.randn(3, 1024, device='cuda')
    results['test_case_2'] = row_sum_wrapper(x)
    # float16 input, float32 accumulation: a float16 accumulator would drift far from this.
    x = torch.rand(4, 3001, device='cuda', dtype=torch.float16)
    out = row_sum_wrapper(x)
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, x.float().sum(dim=1), rtol=1e-5, atol=1e-2)
    results['test_case_3'] = out
    # A column slice (row stride 40, 33 columns) and a single element.
    wide = torch.randn(7, 40, device='cuda')
    x = wide[:, 5:38]
    torch.testing.assert_close(row_sum_wrapper(x), x.sum(dim=1), rtol=1e-5, atol=1e-5)
    results['test_case_4'] = row_sum_wrapper(x)
    results['test_case_5'] = row_sum_wrapper(torch.tensor([[2.5]], device='cuda'))
    return results


result_gold = test_row_sum_kernel()
