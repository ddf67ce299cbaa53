import torch
import triton


def add_wrapper(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """out = x + y for two tensors of the same shape and dtype; out is contiguous."""
    ext = globals().get("candidate_ext") or globals().get("reference_ext")
    if ext is not None:
        # A HIP/CUDA implementation exports its own launcher; the wrapper only adapts the name.
        return ext.kernel_function(x, y)
    x = x.contiguous()
    y = y.contiguous()
    out = torch.empty_like(x)
    n_elements = out.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)  # noqa: E731
    add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=1024)
    return out
