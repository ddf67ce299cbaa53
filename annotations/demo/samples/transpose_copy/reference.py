import triton
import triton.language as tl


@triton.jit
def transpose_copy_kernel(in_ptr, out_ptr, M, N, stride_im, stride_in, stride_om, stride_on,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # Copies AND transposes: out[n, m] = in[m, n]. Strides are explicit, so any input layout works.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tile = tl.load(in_ptr + offs_m[:, None] * stride_im + offs_n[None, :] * stride_in, mask=mask)
    tl.store(out_ptr + offs_n[None, :] * stride_om + offs_m[:, None] * stride_on, tile, mask=mask)
