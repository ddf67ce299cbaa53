#include <hip/hip_runtime.h>
#include <torch/extension.h>

__global__ void relu_scale_kernel(const float* __restrict__ x, float* __restrict__ out, float scale,
                                  int64_t n) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) {
        const float v = x[i];
        // Same predicate as the reference: negative values and -0.0 become +0.0.
        out[i] = (v > 0.0f ? v : 0.0f) * scale;
    }
}

torch::Tensor kernel_function(torch::Tensor x, double scale) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "relu_scale expects float32 input");
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    const int64_t n = xc.numel();
    if (n == 0) {
        return out;
    }
    const int threads = 256;
    const int64_t blocks = (n + threads - 1) / threads;
    hipLaunchKernelGGL(relu_scale_kernel, dim3(static_cast<unsigned int>(blocks)), dim3(threads), 0, 0,
                       xc.data_ptr<float>(), out.data_ptr<float>(), static_cast<float>(scale), n);
    TORCH_CHECK(hipGetLastError() == hipSuccess, "relu_scale_kernel launch failed");
    return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("kernel_function", &kernel_function, "out = relu(x) * scale, fused");
}
