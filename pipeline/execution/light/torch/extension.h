// Kernel Studio's light <torch/extension.h> (put first on the include path of builds).
//
// The real header includes torch/all.h: the whole C++ frontend (nn, optim, data,
// jit, serialize, ...) that a kernel extension never uses, and parsing it twice
// (nvcc's device and host passes) is most of a build's time. This keeps what
// extension code uses: the tensor API (torch::Tensor, torch::empty_like, dtypes,
// TORCH_CHECK, AT_DISPATCH_*) and pybind11 with PyTorch's tensor casters.
// If a source needs more, the build is retried with the real header (build.py).
#pragma once
#include <torch/types.h>
#include <ATen/Dispatch.h>
#include <torch/csrc/utils/pybind.h>
