#include <hip/hip_runtime.h>
#include <torch/extension.h>

#include <cfloat>

constexpr int kThreads = 256;

// Tree reduction in shared memory: correct for any warp/wavefront size (32 on NVIDIA, 64 on AMD).
template <bool IsMax>
__device__ float block_reduce(float v, float* scratch) {
    scratch[threadIdx.x] = v;
    __syncthreads();
    for (int offset = blockDim.x / 2; offset > 0; offset >>= 1) {
        if (threadIdx.x < offset) {
            const float other = scratch[threadIdx.x + offset];
            scratch[threadIdx.x] = IsMax ? fmaxf(scratch[threadIdx.x], other) : scratch[threadIdx.x] + other;
        }
        __syncthreads();
    }
    const float result = scratch[0];
    __syncthreads();  // scratch is reused by the next reduction
    return result;
}

__global__ void softmax_kernel(float* __restrict__ out, const float* __restrict__ in, int64_t in_row_stride,
                               int64_t out_row_stride, int n_cols) {
    __shared__ float scratch[kThreads];
    const float* row_in = in + blockIdx.x * in_row_stride;
    float* row_out = out + blockIdx.x * out_row_stride;

    float local_max = -FLT_MAX;
    for (int c = threadIdx.x; c < n_cols; c += blockDim.x) {
        local_max = fmaxf(local_max, row_in[c]);
    }
    const float row_max = block_reduce<true>(local_max, scratch);

    float local_sum = 0.0f;
    for (int c = threadIdx.x; c < n_cols; c += blockDim.x) {
        local_sum += expf(row_in[c] - row_max);
    }
    const float row_sum = block_reduce<false>(local_sum, scratch);

    for (int c = threadIdx.x; c < n_cols; c += blockDim.x) {
        row_out[c] = expf(row_in[c] - row_max) / row_sum;
    }
}

torch::Tensor kernel_function(torch::Tensor x) {
    TORCH_CHECK(x.dim() == 2, "softmax expects a 2D tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "softmax expects float32 input");
    TORCH_CHECK(x.size(1) >= 1 && x.size(1) <= 8192, "softmax expects 1 <= N <= 8192 columns");
    // Rows may be strided; columns must be unit-stride.
    auto xc = x.stride(1) == 1 ? x : x.contiguous();
    auto out = torch::empty({xc.size(0), xc.size(1)}, xc.options());
    if (xc.size(0) == 0) {
        return out;
    }
    hipLaunchKernelGGL(softmax_kernel, dim3(static_cast<unsigned int>(xc.size(0))), dim3(kThreads), 0, 0,
                       out.data_ptr<float>(), xc.data_ptr<float>(), xc.stride(0), out.stride(0),
                       static_cast<int>(xc.size(1)));
    TORCH_CHECK(hipGetLastError() == hipSuccess, "softmax_kernel launch failed");
    return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("kernel_function", &kernel_function, "row-wise softmax of a 2D float32 tensor");
}
