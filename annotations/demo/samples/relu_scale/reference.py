import triton
import triton.language as tl


@triton.jit
def relu_scale_kernel(x_ptr, out_ptr, scale, n_elements, BLOCK_SIZE: tl.constexpr):
    # Fused: one read and one write instead of relu() followed by a separate multiply.
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    # where(x > 0, x, 0): -0.0 and negative inputs both give +0.0 before scaling.
    y = tl.where(x > 0, x, 0.0) * scale
    tl.store(out_ptr + offsets, y, mask=mask)
