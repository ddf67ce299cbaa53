#include <hip/hip_runtime.h>
#include <torch/extension.h>

#include <algorithm>

template <typename scalar_t>
__global__ void add_kernel(const scalar_t* __restrict__ x, const scalar_t* __restrict__ y,
                           scalar_t* __restrict__ out, int64_t n) {
    // Grid-stride loop: a capped grid still covers any n.
    const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = x[i] + y[i];
    }
}

torch::Tensor kernel_function(torch::Tensor x, torch::Tensor y) {
    TORCH_CHECK(x.sizes() == y.sizes(), "x and y must have the same shape");
    TORCH_CHECK(x.scalar_type() == y.scalar_type(), "x and y must have the same dtype");
    auto xc = x.contiguous();
    auto yc = y.contiguous();
    auto out = torch::empty_like(xc);
    const int64_t n = xc.numel();
    if (n == 0) {
        return out;
    }
    const int threads = 256;
    const int blocks = static_cast<int>(std::min<int64_t>((n + threads - 1) / threads, 65535));
    AT_DISPATCH_FLOATING_TYPES_AND_HALF(xc.scalar_type(), "add_kernel", [&] {
        hipLaunchKernelGGL(add_kernel<scalar_t>, dim3(blocks), dim3(threads), 0, 0,
                           xc.data_ptr<scalar_t>(), yc.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), n);
    });
    TORCH_CHECK(hipGetLastError() == hipSuccess, "add_kernel launch failed");
    return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("kernel_function", &kernel_function, "out = x + y (element-wise)");
}
