#include <hip/hip_runtime.h>
#include <torch/extension.h>

constexpr int kThreads = 256;

template <typename scalar_t>
__global__ void row_sum_kernel(const scalar_t* __restrict__ x, float* __restrict__ out, int64_t n_cols,
                               int64_t stride_row) {
    __shared__ float partial[kThreads];
    const scalar_t* row = x + blockIdx.x * stride_row;
    // float32 accumulation whatever scalar_t is.
    float acc = 0.0f;
    for (int64_t c = threadIdx.x; c < n_cols; c += blockDim.x) {
        acc += static_cast<float>(row[c]);
    }
    partial[threadIdx.x] = acc;
    __syncthreads();
    // Shared-memory tree: correct for 32-wide warps and 64-wide wavefronts alike.
    for (int offset = blockDim.x / 2; offset > 0; offset >>= 1) {
        if (threadIdx.x < offset) {
            partial[threadIdx.x] += partial[threadIdx.x + offset];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        out[blockIdx.x] = partial[0];
    }
}

torch::Tensor kernel_function(torch::Tensor x) {
    TORCH_CHECK(x.dim() == 2, "row_sum expects a 2D tensor");
    TORCH_CHECK(x.size(1) >= 1, "row_sum expects at least one column");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 || x.scalar_type() == torch::kHalf,
                "row_sum expects float32 or float16 input");
    auto xc = x.stride(1) == 1 ? x : x.contiguous();
    auto out = torch::empty({xc.size(0)}, xc.options().dtype(torch::kFloat32));
    if (xc.size(0) == 0) {
        return out;
    }
    AT_DISPATCH_FLOATING_TYPES_AND_HALF(xc.scalar_type(), "row_sum_kernel", [&] {
        hipLaunchKernelGGL(row_sum_kernel<scalar_t>, dim3(static_cast<unsigned int>(xc.size(0))), dim3(kThreads),
                           0, 0, xc.data_ptr<scalar_t>(), out.data_ptr<float>(), xc.size(1), xc.stride(0));
    });
    TORCH_CHECK(hipGetLastError() == hipSuccess, "row_sum_kernel launch failed");
    return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("kernel_function", &kernel_function, "sum of each row, accumulated in float32");
}
