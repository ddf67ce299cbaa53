// HIP -> CUDA compatibility (Kernel Studio): bfloat16 comes from CUDA.
#pragma once
#include "hip_runtime.h"
#include <cuda_bf16.h>
typedef __nv_bfloat16 hip_bfloat16;
