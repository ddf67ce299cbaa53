// Kernel Studio parse stub for CUDA's math_constants.h (the constants used most).
#pragma once
#include "ks_prelude.h"
#define CUDART_INF_F __builtin_huge_valf()
#define CUDART_NAN_F __builtin_nanf("")
#define CUDART_PI_F 3.141592654f
#define CUDART_PI 3.1415926535897931e+0
#define CUDART_INF __builtin_huge_val()
#define CUDART_NAN __builtin_nan("")
