// HIP -> CUDA compatibility (Kernel Studio): half precision types come from CUDA.
#pragma once
#include "hip_runtime.h"
#include <cuda_fp16.h>
