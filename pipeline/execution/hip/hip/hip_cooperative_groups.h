// HIP -> CUDA compatibility (Kernel Studio).
#pragma once
#include "hip_runtime.h"
#include <cooperative_groups.h>
