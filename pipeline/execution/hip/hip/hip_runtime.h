// HIP -> CUDA compatibility header, written for Kernel Studio.
//
// Lets HIP sources written for AMD ROCm build with nvcc on NVIDIA hosts, so a HIP
// candidate can be verified on an NVIDIA GPU. Results obtained this way are marked
// "emulated": the semantics that differ between the platforms are NOT hidden:
//   * warpSize is 32 here, 64 (a wavefront) on CDNA GPUs. Code that hard-codes 64
//     lanes, 64-bit ballot masks or __shfl widths of 64 behaves differently.
//   * __shfl*/__ballot/__any/__all map to the *_sync variants with a full mask:
//     HIP has no independent thread scheduling, CUDA does since Volta.
//   * __ballot returns a 64-bit value in HIP; here the 32-bit mask widened to 64.
// Only the runtime API a kernel sample needs is mapped: memory, streams, events,
// devices, errors, launches. Anything unmapped fails to compile with the HIP name
// in the error message, which is the honest outcome.
#pragma once
#ifndef KS_HIP_RUNTIME_COMPAT_H
#define KS_HIP_RUNTIME_COMPAT_H

#ifndef __HIP_PLATFORM_NVIDIA__
#define __HIP_PLATFORM_NVIDIA__ 1
#endif
#define __HIP_PLATFORM_NVCC__ 1
#define KS_HIP_EMULATED_ON_CUDA 1
#define HIP_VERSION_MAJOR 6
#define HIP_VERSION_MINOR 0
#define HIP_VERSION (HIP_VERSION_MAJOR * 10000000 + HIP_VERSION_MINOR * 100000)

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <stdint.h>

// ---- types -------------------------------------------------------------------
typedef cudaError_t hipError_t;
typedef cudaStream_t hipStream_t;
typedef cudaEvent_t hipEvent_t;
typedef cudaDeviceProp hipDeviceProp_t;
typedef cudaMemcpyKind hipMemcpyKind;
typedef cudaFuncAttributes hipFuncAttributes;
typedef cudaFuncCache hipFuncCache_t;
typedef cudaSharedMemConfig hipSharedMemConfig;
typedef cudaPointerAttributes hipPointerAttribute_t;
typedef cudaDeviceAttr hipDeviceAttribute_t;
typedef void* hipDeviceptr_t;
typedef __half hip_half_t;

// ---- error codes -------------------------------------------------------------
#define hipSuccess cudaSuccess
#define hipErrorInvalidValue cudaErrorInvalidValue
#define hipErrorOutOfMemory cudaErrorMemoryAllocation
#define hipErrorMemoryAllocation cudaErrorMemoryAllocation
#define hipErrorNotInitialized cudaErrorInitializationError
#define hipErrorInitializationError cudaErrorInitializationError
#define hipErrorInvalidDevice cudaErrorInvalidDevice
#define hipErrorInvalidDevicePointer cudaErrorInvalidDevicePointer
#define hipErrorInvalidConfiguration cudaErrorInvalidConfiguration
#define hipErrorInvalidMemcpyDirection cudaErrorInvalidMemcpyDirection
#define hipErrorInvalidResourceHandle cudaErrorInvalidResourceHandle
#define hipErrorNotReady cudaErrorNotReady
#define hipErrorNoDevice cudaErrorNoDevice
#define hipErrorLaunchFailure cudaErrorLaunchFailure
#define hipErrorLaunchOutOfResources cudaErrorLaunchOutOfResources
#define hipErrorLaunchTimeOut cudaErrorLaunchTimeout
#define hipErrorIllegalAddress cudaErrorIllegalAddress
#define hipErrorInvalidKernelFile cudaErrorInvalidPtx
#define hipErrorNotSupported cudaErrorNotSupported
#define hipErrorUnknown cudaErrorUnknown

// ---- enums and flags ---------------------------------------------------------
#define hipMemcpyHostToHost cudaMemcpyHostToHost
#define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define hipMemcpyDefault cudaMemcpyDefault
#define hipStreamDefault cudaStreamDefault
#define hipStreamNonBlocking cudaStreamNonBlocking
#define hipEventDefault cudaEventDefault
#define hipEventBlockingSync cudaEventBlockingSync
#define hipEventDisableTiming cudaEventDisableTiming
#define hipHostMallocDefault cudaHostAllocDefault
#define hipHostMallocPortable cudaHostAllocPortable
#define hipHostMallocMapped cudaHostAllocMapped
#define hipHostMallocWriteCombined cudaHostAllocWriteCombined
#define hipMemAttachGlobal cudaMemAttachGlobal
#define hipFuncCachePreferNone cudaFuncCachePreferNone
#define hipFuncCachePreferShared cudaFuncCachePreferShared
#define hipFuncCachePreferL1 cudaFuncCachePreferL1
#define hipFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize
#define hipDeviceAttributeMultiprocessorCount cudaDevAttrMultiProcessorCount
#define hipDeviceAttributeMaxThreadsPerBlock cudaDevAttrMaxThreadsPerBlock
#define hipDeviceAttributeWarpSize cudaDevAttrWarpSize
#define hipDeviceAttributeMaxSharedMemoryPerBlock cudaDevAttrMaxSharedMemoryPerBlock
#define hipStreamPerThread cudaStreamPerThread

// ---- errors ------------------------------------------------------------------
#define hipGetLastError cudaGetLastError
#define hipPeekAtLastError cudaPeekAtLastError
#define hipGetErrorString cudaGetErrorString
#define hipGetErrorName cudaGetErrorName

// ---- devices -----------------------------------------------------------------
#define hipGetDeviceCount cudaGetDeviceCount
#define hipGetDevice cudaGetDevice
#define hipSetDevice cudaSetDevice
#define hipGetDeviceProperties cudaGetDeviceProperties
#define hipDeviceGetAttribute cudaDeviceGetAttribute
#define hipDeviceSynchronize cudaDeviceSynchronize
#define hipDeviceReset cudaDeviceReset
#define hipDeviceSetCacheConfig cudaDeviceSetCacheConfig
#define hipFuncSetAttribute(f, a, v) cudaFuncSetAttribute((const void*)(f), a, v)
#define hipFuncGetAttributes(attr, f) cudaFuncGetAttributes(attr, (const void*)(f))
#define hipDriverGetVersion cudaDriverGetVersion
#define hipRuntimeGetVersion cudaRuntimeGetVersion

// ---- memory ------------------------------------------------------------------
#define hipMalloc cudaMalloc
#define hipMallocManaged cudaMallocManaged
#define hipFree cudaFree
#define hipHostMalloc(p, s, f) cudaHostAlloc(p, s, f)
#define hipHostFree cudaFreeHost
#define hipMallocHost cudaMallocHost
#define hipFreeHost cudaFreeHost
#define hipMemcpy cudaMemcpy
#define hipMemcpyAsync cudaMemcpyAsync
#define hipMemcpy2D cudaMemcpy2D
#define hipMemcpy2DAsync cudaMemcpy2DAsync
#define hipMemcpyToSymbol cudaMemcpyToSymbol
#define hipMemcpyToSymbolAsync cudaMemcpyToSymbolAsync
#define hipMemcpyFromSymbol cudaMemcpyFromSymbol
#define hipMemset cudaMemset
#define hipMemsetAsync cudaMemsetAsync
#define hipMemGetInfo cudaMemGetInfo
#define hipPointerGetAttributes cudaPointerGetAttributes
#define hipMemcpyHtoD(dst, src, n) cudaMemcpy((void*)(dst), (const void*)(src), n, cudaMemcpyHostToDevice)
#define hipMemcpyDtoH(dst, src, n) cudaMemcpy((void*)(dst), (const void*)(src), n, cudaMemcpyDeviceToHost)
#define hipMemcpyDtoD(dst, src, n) cudaMemcpy((void*)(dst), (const void*)(src), n, cudaMemcpyDeviceToDevice)

// ---- streams and events ------------------------------------------------------
#define hipStreamCreate cudaStreamCreate
#define hipStreamCreateWithFlags cudaStreamCreateWithFlags
#define hipStreamDestroy cudaStreamDestroy
#define hipStreamSynchronize cudaStreamSynchronize
#define hipStreamWaitEvent cudaStreamWaitEvent
#define hipStreamQuery cudaStreamQuery
#define hipEventCreate cudaEventCreate
#define hipEventCreateWithFlags cudaEventCreateWithFlags
#define hipEventRecord cudaEventRecord
#define hipEventSynchronize cudaEventSynchronize
#define hipEventElapsedTime cudaEventElapsedTime
#define hipEventDestroy cudaEventDestroy
#define hipEventQuery cudaEventQuery

// ---- occupancy -----------------------------------------------------------------
#define hipOccupancyMaxActiveBlocksPerMultiprocessor cudaOccupancyMaxActiveBlocksPerMultiprocessor
#define hipOccupancyMaxPotentialBlockSize cudaOccupancyMaxPotentialBlockSize

// ---- launches ------------------------------------------------------------------
// hipLaunchKernelGGL(kernel, grid, block, sharedBytes, stream, args...)
#define hipLaunchKernelGGL(kernel, grid, block, shmem, stream, ...) \
    kernel<<<(grid), (block), (shmem), (stream)>>>(__VA_ARGS__)
#define hipLaunchKernel(f, grid, block, args, shmem, stream) \
    cudaLaunchKernel((const void*)(f), grid, block, args, shmem, stream)
#define HIP_KERNEL_NAME(...) __VA_ARGS__
#define HIP_SYMBOL(x) x
#define HIP_DYNAMIC_SHARED(type, var) extern __shared__ type var[];
#define HIP_DYNAMIC_SHARED_ATTRIBUTE

// Old-style HIP index macros.
#define hipThreadIdx_x threadIdx.x
#define hipThreadIdx_y threadIdx.y
#define hipThreadIdx_z threadIdx.z
#define hipBlockIdx_x blockIdx.x
#define hipBlockIdx_y blockIdx.y
#define hipBlockIdx_z blockIdx.z
#define hipBlockDim_x blockDim.x
#define hipBlockDim_y blockDim.y
#define hipBlockDim_z blockDim.z
#define hipGridDim_x gridDim.x
#define hipGridDim_y gridDim.y
#define hipGridDim_z gridDim.z

// ---- warp (wavefront) intrinsics ---------------------------------------------
#ifdef __CUDACC__
// libcu++ declares a function named __any( ... ): pull it in before our macros exist.
#if __has_include(<cuda/std/functional>)
#include <cuda/std/functional>
#endif
#define KS_FULL_MASK 0xffffffffu
template <typename T>
__device__ __forceinline__ T __shfl(T var, int src, int width = warpSize) {
    return __shfl_sync(KS_FULL_MASK, var, src, width);
}
template <typename T>
__device__ __forceinline__ T __shfl_up(T var, unsigned int delta, int width = warpSize) {
    return __shfl_up_sync(KS_FULL_MASK, var, delta, width);
}
template <typename T>
__device__ __forceinline__ T __shfl_down(T var, unsigned int delta, int width = warpSize) {
    return __shfl_down_sync(KS_FULL_MASK, var, delta, width);
}
template <typename T>
__device__ __forceinline__ T __shfl_xor(T var, int mask, int width = warpSize) {
    return __shfl_xor_sync(KS_FULL_MASK, var, mask, width);
}
// CUDA still declares deprecated __ballot/__any/__all with other signatures: use macros.
__device__ __forceinline__ unsigned long long ks_hip_ballot(int pred) {
    return (unsigned long long)__ballot_sync(KS_FULL_MASK, pred);
}
#define __ballot(pred) ks_hip_ballot(pred)
#define __any(pred) __any_sync(KS_FULL_MASK, (pred))
#define __all(pred) __all_sync(KS_FULL_MASK, (pred))
__device__ __forceinline__ unsigned int __lane_id() { return threadIdx.x & (warpSize - 1); }
__device__ __forceinline__ unsigned long long __activemask64() { return (unsigned long long)__activemask(); }
#endif

// Host-side check helper many HIP samples define themselves; guarded so theirs wins.
#ifndef HIP_CHECK
#define HIP_CHECK(expr)                                                                   \
    do {                                                                                  \
        hipError_t ks_err_ = (expr);                                                      \
        if (ks_err_ != hipSuccess) {                                                      \
            fprintf(stderr, "HIP error %s at %s:%d\n", hipGetErrorString(ks_err_), __FILE__, \
                    __LINE__);                                                            \
            abort();                                                                      \
        }                                                                                 \
    } while (0)
#endif

#include <stdio.h>
#include <stdlib.h>

#endif  // KS_HIP_RUNTIME_COMPAT_H
