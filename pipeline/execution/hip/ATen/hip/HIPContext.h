// HIP -> CUDA compatibility (Kernel Studio): the names hipified PyTorch extensions use
// for the current stream, mapped onto the CUDA build of PyTorch.
#pragma once
#include <hip/hip_runtime.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
namespace at { namespace hip {
inline cudaStream_t getCurrentHIPStream(c10::DeviceIndex d = -1) { return at::cuda::getCurrentCUDAStream(d).stream(); }
inline c10::cuda::CUDAStream getCurrentHIPStreamMasqueradingAsCUDA(c10::DeviceIndex d = -1) {
    return at::cuda::getCurrentCUDAStream(d);
}
using HIPGuardMasqueradingAsCUDA = c10::cuda::CUDAGuard;
}}  // namespace at::hip
