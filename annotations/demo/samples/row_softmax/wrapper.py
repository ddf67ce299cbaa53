import torch
import triton


def softmax_wrapper(x: torch.Tensor) -> torch.Tensor:
    """Row-wise softmax of a 2D float32 tensor (rows may be strided); out is contiguous."""
    ext = globals().get("candidate_ext") or globals().get("reference_ext")
    if ext is not None:
        # A HIP/CUDA implementation exports its own launcher; the wrapper only adapts the name.
        return ext.kernel_function(x)
    assert x.dim() == 2, "softmax_wrapper expects a 2D tensor"
    if x.stride(1) != 1:
        x = x.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty((n_rows, n_cols), device=x.device, dtype=x.dtype)
    block = triton.next_power_of_2(n_cols)
    softmax_kernel[(n_rows,)](out, x, x.stride(0), out.stride(0), n_cols, BLOCK_SIZE=block)
    return out
