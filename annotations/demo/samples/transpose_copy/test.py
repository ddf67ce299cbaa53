import torch


def test_transpose_copy_kernel():
    results = {}
    # Neither dimension a multiple of the 32x32 tile.
    x = torch.randn(33, 65, device='cuda')
    out = transpose_wrapper(x)
    assert out.shape == (65, 33) and out.is_contiguous()
    assert torch.equal(out, x.T)
    results['test_case_1'] = out
    # A strided view: every other row, columns from 1 (row stride 2*70, column stride 1, offset 1).
    big = torch.randn(80, 70, device='cuda')
    x = big[::2, 1:]
    out = transpose_wrapper(x)
    assert torch.equal(out, x.T)
    results['test_case_2'] = out
    # The input is itself a transposed view (column stride != 1): transposing it back is a plain copy.
    base = torch.arange(48 * 20, device='cuda', dtype=torch.int32).reshape(48, 20)
    x = base.T
    out = transpose_wrapper(x)
    assert torch.equal(out, base)
    results['test_case_3'] = out
    # float16 square tile and 1x1 edge.
    x = torch.randn(64, 64, device='cuda', dtype=torch.float16)
    results['test_case_4'] = transpose_wrapper(x)
    results['test_case_5'] = transpose_wrapper(torch.tensor([[7.0]], device='cuda'))
    # One row becomes one column.
    results['test_case_6'] = transpose_wrapper(torch.randn(1, 100, device='cuda'))
    return results


result_gold = test_transpose_copy_kernel()
