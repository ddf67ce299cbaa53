// HIP -> CUDA compatibility (Kernel Studio): the runtime API lives in hip_runtime.h.
#pragma once
#include "hip_runtime.h"
