import torch
import triton


def transpose_wrapper(x: torch.Tensor) -> torch.Tensor:
    """out = x.T copied into a new contiguous (N, M) tensor; x may have any strides."""
    ext = globals().get("candidate_ext") or globals().get("reference_ext")
    if ext is not None:
        # A HIP/CUDA implementation exports its own launcher; the wrapper only adapts the name.
        return ext.kernel_function(x)
    assert x.dim() == 2, "transpose_wrapper expects a 2D tensor"
    M, N = x.shape
    out = torch.empty((N, M), device=x.device, dtype=x.dtype)
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]))  # noqa: E731
    transpose_copy_kernel[grid](x, out, M, N, x.stride(0), x.stride(1), out.stride(0), out.stride(1),
                                BLOCK_M=32, BLOCK_N=32)
    return out
