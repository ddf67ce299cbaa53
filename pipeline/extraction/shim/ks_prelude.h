// Kernel Studio parse prelude: just enough CUDA, HIP and ATen for libclang to
// build a faithful AST of CUDA/HIP sources on a machine with no toolkit.
// It is only ever *parsed* (never compiled into units): the extractor uses it
// with `-x cuda --cuda-host-only -nocudainc -nocudalib`. Everything here is a
// declaration, so clang resolves names and types exactly as the real headers
// would, and the AST names the kernel's real dependencies.
#ifndef KS_PRELUDE_H
#define KS_PRELUDE_H

#define __KS_PARSE_SHIM__ 1
#ifndef __CUDACC__
#define __CUDACC__ 1
#endif
#ifndef __NVCC__
#define __NVCC__ 1
#endif
#ifndef CUDA_VERSION
#define CUDA_VERSION 12000
#endif
#ifndef __CUDA_ARCH__
// Host-side parse: leave __CUDA_ARCH__ undefined, as nvcc's host pass does.
#endif

/* ---- execution-space attributes (what CUDA's host_defines.h does) ---- */
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __managed__ __attribute__((managed))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __align__(n) __attribute__((aligned(n)))
#define __builtin_align__(a) __align__(a)
#define __inline_hint__
#define __grid_constant__

// stddef/stdint are tiny and every real CUDA TU has them via cuda_runtime.h.
#include <stddef.h>
#include <stdint.h>
typedef size_t __ks_size_t;

/* ---- vector types ---- */
#define __KS_VEC(T, N)                                                        \
  struct N##1 { T x; };                                                       \
  struct N##2 { T x, y; };                                                    \
  struct N##3 { T x, y, z; };                                                 \
  struct N##4 { T x, y, z, w; };                                              \
  __host__ __device__ N##1 make_##N##1(T x);                                  \
  __host__ __device__ N##2 make_##N##2(T x, T y);                             \
  __host__ __device__ N##3 make_##N##3(T x, T y, T z);                        \
  __host__ __device__ N##4 make_##N##4(T x, T y, T z, T w);
__KS_VEC(char, char)
__KS_VEC(unsigned char, uchar)
__KS_VEC(short, short)
__KS_VEC(unsigned short, ushort)
__KS_VEC(int, int)
__KS_VEC(unsigned int, uint)
__KS_VEC(long, long)
__KS_VEC(unsigned long, ulong)
__KS_VEC(long long, longlong)
__KS_VEC(unsigned long long, ulonglong)
__KS_VEC(float, float)
__KS_VEC(double, double)
#undef __KS_VEC

struct dim3 {
  unsigned int x, y, z;
  __host__ __device__ dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  __host__ __device__ dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  __host__ __device__ operator uint3() const { return uint3{x, y, z}; }
};

extern const __device__ uint3 threadIdx;
extern const __device__ uint3 blockIdx;
extern const __device__ dim3 blockDim;
extern const __device__ dim3 gridDim;
extern const __device__ int warpSize;

/* ---- runtime API (host side) ---- */
typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;
typedef enum cudaError { cudaSuccess = 0, cudaErrorInvalidValue = 1 } cudaError_t;
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0, cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2, cudaMemcpyDeviceToDevice = 3, cudaMemcpyDefault = 4
};
// Needed by clang for the <<<grid, block, shmem, stream>>> syntax.
extern "C" int cudaConfigureCall(dim3 grid, dim3 block, __ks_size_t shmem = 0, cudaStream_t stream = 0);
extern "C" unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, __ks_size_t shmem = 0, cudaStream_t stream = 0);
extern "C" cudaError_t cudaGetLastError(void);
extern "C" cudaError_t cudaPeekAtLastError(void);
extern "C" const char* cudaGetErrorString(cudaError_t);
extern "C" cudaError_t cudaDeviceSynchronize(void);
extern "C" cudaError_t cudaStreamSynchronize(cudaStream_t);
extern "C" cudaError_t cudaMalloc(void** p, __ks_size_t n);
extern "C" cudaError_t cudaFree(void* p);
extern "C" cudaError_t cudaMemset(void* p, int v, __ks_size_t n);
extern "C" cudaError_t cudaMemsetAsync(void* p, int v, __ks_size_t n, cudaStream_t s = 0);
extern "C" cudaError_t cudaMemcpy(void* d, const void* s, __ks_size_t n, cudaMemcpyKind k);
extern "C" cudaError_t cudaMemcpyAsync(void* d, const void* s, __ks_size_t n, cudaMemcpyKind k, cudaStream_t st = 0);
template <class T> cudaError_t cudaMalloc(T** p, __ks_size_t n);
template <class T> cudaError_t cudaMemcpyToSymbol(const T& symbol, const void* src, __ks_size_t n,
                                                 __ks_size_t offset = 0, cudaMemcpyKind k = cudaMemcpyHostToDevice);

/* ---- device builtins ---- */
__device__ void __syncthreads(void);
__device__ int __syncthreads_count(int);
__device__ int __syncthreads_and(int);
__device__ int __syncthreads_or(int);
__device__ void __syncwarp(unsigned mask = 0xffffffffu);
__device__ void __threadfence(void);
__device__ void __threadfence_block(void);
__device__ unsigned __ballot_sync(unsigned mask, int pred);
__device__ int __any_sync(unsigned mask, int pred);
__device__ int __all_sync(unsigned mask, int pred);
__device__ unsigned __activemask(void);
__device__ int __popc(unsigned);
__device__ int __popcll(unsigned long long);
__device__ int __clz(int);
__device__ int __ffs(int);
__device__ int __ffsll(long long);
__device__ unsigned __brev(unsigned);
template <class T> __device__ T __shfl_sync(unsigned mask, T v, int src, int width = 32);
template <class T> __device__ T __shfl_up_sync(unsigned mask, T v, unsigned d, int width = 32);
template <class T> __device__ T __shfl_down_sync(unsigned mask, T v, unsigned d, int width = 32);
template <class T> __device__ T __shfl_xor_sync(unsigned mask, T v, int lane, int width = 32);
template <class T> __device__ T __shfl(T v, int src, int width = 64);
template <class T> __device__ T __shfl_up(T v, unsigned d, int width = 64);
template <class T> __device__ T __shfl_down(T v, unsigned d, int width = 64);
template <class T> __device__ T __shfl_xor(T v, int lane, int width = 64);
template <class T> __device__ T __ldg(const T* p);
template <class T> __device__ T __ldcg(const T* p);
__device__ long long clock64(void);
__device__ int clock(void);

#define __KS_ATOMIC(T)                                                        \
  __device__ T atomicAdd(T* a, T v);                                          \
  __device__ T atomicSub(T* a, T v);                                          \
  __device__ T atomicExch(T* a, T v);                                         \
  __device__ T atomicMax(T* a, T v);                                          \
  __device__ T atomicMin(T* a, T v);
__KS_ATOMIC(int)
__KS_ATOMIC(unsigned int)
__KS_ATOMIC(unsigned long long)
__KS_ATOMIC(long long)
__KS_ATOMIC(float)
__KS_ATOMIC(double)
#undef __KS_ATOMIC
__device__ int atomicCAS(int* a, int c, int v);
__device__ unsigned atomicCAS(unsigned* a, unsigned c, unsigned v);
__device__ unsigned long long atomicCAS(unsigned long long* a, unsigned long long c, unsigned long long v);
__device__ unsigned short atomicCAS(unsigned short* a, unsigned short c, unsigned short v);
__device__ int atomicAnd(int* a, int v);
__device__ int atomicOr(int* a, int v);
__device__ int atomicXor(int* a, int v);
__device__ unsigned atomicInc(unsigned* a, unsigned v);
__device__ unsigned atomicDec(unsigned* a, unsigned v);

/* ---- device math: overloads next to the host library, as clang's own
   CUDA wrappers declare them, so calls from __device__ code resolve. ---- */
#define __KS_F1(name) __host__ __device__ float name##f(float); __host__ __device__ double name(double);
#define __KS_F2(name) __host__ __device__ float name##f(float, float); __host__ __device__ double name(double, double);
namespace __ks_math {
__KS_F1(sqrt) __KS_F1(rsqrt) __KS_F1(cbrt) __KS_F1(exp) __KS_F1(exp2) __KS_F1(expm1)
__KS_F1(log) __KS_F1(log2) __KS_F1(log10) __KS_F1(log1p) __KS_F1(sin) __KS_F1(cos)
__KS_F1(tan) __KS_F1(asin) __KS_F1(acos) __KS_F1(atan) __KS_F1(sinh) __KS_F1(cosh)
__KS_F1(tanh) __KS_F1(fabs) __KS_F1(floor) __KS_F1(ceil) __KS_F1(round) __KS_F1(trunc)
__KS_F1(rint) __KS_F1(erf) __KS_F1(erfc) __KS_F1(lgamma) __KS_F1(tgamma)
__KS_F2(pow) __KS_F2(fmax) __KS_F2(fmin) __KS_F2(fmod) __KS_F2(atan2) __KS_F2(hypot)
__KS_F2(copysign) __KS_F2(remainder)
__host__ __device__ float fmaf(float, float, float);
__host__ __device__ double fma(double, double, double);
__host__ __device__ int isnan(double);
__host__ __device__ int isinf(double);
__host__ __device__ int isfinite(double);
__host__ __device__ int signbit(double);
__host__ __device__ long lroundf(float);
__host__ __device__ int abs(int);
__host__ __device__ long long llabs(long long);
__host__ __device__ int min(int, int);
__host__ __device__ unsigned min(unsigned, unsigned);
__host__ __device__ long long min(long long, long long);
__host__ __device__ float min(float, float);
__host__ __device__ double min(double, double);
__host__ __device__ int max(int, int);
__host__ __device__ unsigned max(unsigned, unsigned);
__host__ __device__ long long max(long long, long long);
__host__ __device__ float max(float, float);
__host__ __device__ double max(double, double);
__device__ float __expf(float);
__device__ float __logf(float);
__device__ float __powf(float, float);
__device__ float __sinf(float);
__device__ float __cosf(float);
__device__ float __fdividef(float, float);
__device__ float __saturatef(float);
__device__ float __fmaf_rn(float, float, float);
__device__ int __float2int_rn(float);
__device__ int __float2int_rd(float);
__device__ int __float2int_rz(float);
__device__ float __int2float_rn(int);
__device__ unsigned __float_as_uint(float);
__device__ float __uint_as_float(unsigned);
__device__ int __float_as_int(float);
__device__ float __int_as_float(int);
__device__ long long __double_as_longlong(double);
__device__ double __longlong_as_double(long long);
}  // namespace __ks_math
using namespace __ks_math;
#undef __KS_F1
#undef __KS_F2

/* ---- half and bfloat16 ---- */
struct __half {
  unsigned short __x;
  __host__ __device__ __half();
  __host__ __device__ __half(float);
  __host__ __device__ __half(double);
  __host__ __device__ __half(int);
  __host__ __device__ operator float() const;
};
struct __half2 { __half x, y; };
typedef __half half;
typedef __half2 half2;
struct __nv_bfloat16 {
  unsigned short __x;
  __host__ __device__ __nv_bfloat16();
  __host__ __device__ __nv_bfloat16(float);
  __host__ __device__ operator float() const;
};
typedef __nv_bfloat16 hip_bfloat16;
__host__ __device__ __half __float2half(float);
__host__ __device__ float __half2float(__half);
__host__ __device__ __nv_bfloat16 __float2bfloat16(float);
__host__ __device__ float __bfloat162float(__nv_bfloat16);
__device__ __half __hadd(__half, __half);
__device__ __half __hmul(__half, __half);
__device__ __half atomicAdd(__half* a, __half v);
__device__ __nv_bfloat16 atomicAdd(__nv_bfloat16* a, __nv_bfloat16 v);

/* ---- HIP ---- */
#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__ 1
#endif
typedef cudaStream_t hipStream_t;
typedef cudaEvent_t hipEvent_t;
typedef cudaError_t hipError_t;
#define hipSuccess cudaSuccess
#define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
extern "C" hipError_t hipMalloc(void** p, __ks_size_t n);
template <class T> hipError_t hipMalloc(T** p, __ks_size_t n);
extern "C" hipError_t hipFree(void* p);
extern "C" hipError_t hipMemcpy(void* d, const void* s, __ks_size_t n, cudaMemcpyKind k);
extern "C" hipError_t hipMemset(void* p, int v, __ks_size_t n);
extern "C" hipError_t hipDeviceSynchronize(void);
extern "C" hipError_t hipGetLastError(void);
extern "C" const char* hipGetErrorString(hipError_t);
// Same shape as HIP's own definition for clang: a real triple-chevron launch,
// so the AST shows the kernel, its grid and its block.
#define hipLaunchKernelGGL(kernel, grid, block, shmem, stream, ...) \
  kernel<<<(grid), (block), (shmem), (stream)>>>(__VA_ARGS__)
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
#define HIP_DYNAMIC_SHARED(type, var) extern __shared__ type var[];

/* ---- minimal ATen / torch ---- */
typedef int64_t __ks_int64;
namespace c10 {
enum class ScalarType { Byte, Char, Short, Int, Long, Half, Float, Double, Bool, BFloat16 };
struct Half {
  unsigned short x;
  __host__ __device__ Half();
  __host__ __device__ Half(float);
  __host__ __device__ operator float() const;
};
struct BFloat16 {
  unsigned short x;
  __host__ __device__ BFloat16();
  __host__ __device__ BFloat16(float);
  __host__ __device__ operator float() const;
};
// Arithmetic as c10 defines it: Half op Half -> Half, mixed with float or
// double -> float/double, with int -> Half; comparisons go through float.
#define __KS_REDUCED_OPS(H)                                                              \
  __host__ __device__ H operator+(const H&, const H&);                                   \
  __host__ __device__ H operator-(const H&, const H&);                                   \
  __host__ __device__ H operator*(const H&, const H&);                                   \
  __host__ __device__ H operator/(const H&, const H&);                                   \
  __host__ __device__ H operator-(const H&);                                             \
  __host__ __device__ H& operator+=(H&, const H&);                                       \
  __host__ __device__ H& operator-=(H&, const H&);                                       \
  __host__ __device__ H& operator*=(H&, const H&);                                       \
  __host__ __device__ H& operator/=(H&, const H&);                                       \
  __KS_REDUCED_MIXED(H, float, float) __KS_REDUCED_MIXED(H, double, double)              \
  __KS_REDUCED_MIXED(H, int, H) __KS_REDUCED_MIXED(H, int64_t, H)                        \
  __host__ __device__ float& operator+=(float&, const H&);                               \
  __host__ __device__ float& operator-=(float&, const H&);                               \
  __host__ __device__ float& operator*=(float&, const H&);                               \
  __host__ __device__ float& operator/=(float&, const H&);
#define __KS_REDUCED_MIXED(H, O, R)                                                      \
  __host__ __device__ R operator+(H, O); __host__ __device__ R operator+(O, H);          \
  __host__ __device__ R operator-(H, O); __host__ __device__ R operator-(O, H);          \
  __host__ __device__ R operator*(H, O); __host__ __device__ R operator*(O, H);          \
  __host__ __device__ R operator/(H, O); __host__ __device__ R operator/(O, H);
__KS_REDUCED_OPS(Half)
__KS_REDUCED_OPS(BFloat16)
struct Device { int index() const; bool is_cuda() const; };
struct TensorOptions { TensorOptions dtype(ScalarType) const; };
template <class T> struct ArrayRef { const T* data() const; __ks_size_t size() const; T operator[](__ks_size_t) const; };
typedef ArrayRef<__ks_int64> IntArrayRef;
namespace cuda {
struct CUDAGuard { explicit CUDAGuard(Device); explicit CUDAGuard(int); };
struct OptionalCUDAGuard { explicit OptionalCUDAGuard(Device); };
struct CUDAStream { cudaStream_t stream() const; operator cudaStream_t() const; };
CUDAStream getCurrentCUDAStream(int device = -1);
}  // namespace cuda
}  // namespace c10

namespace __ks {
template <c10::ScalarType S> struct scalar_of;
template <> struct scalar_of<c10::ScalarType::Byte> { typedef unsigned char type; };
template <> struct scalar_of<c10::ScalarType::Char> { typedef signed char type; };
template <> struct scalar_of<c10::ScalarType::Short> { typedef short type; };
template <> struct scalar_of<c10::ScalarType::Int> { typedef int type; };
template <> struct scalar_of<c10::ScalarType::Long> { typedef __ks_int64 type; };
template <> struct scalar_of<c10::ScalarType::Half> { typedef c10::Half type; };
template <> struct scalar_of<c10::ScalarType::Float> { typedef float type; };
template <> struct scalar_of<c10::ScalarType::Double> { typedef double type; };
template <> struct scalar_of<c10::ScalarType::Bool> { typedef bool type; };
template <> struct scalar_of<c10::ScalarType::BFloat16> { typedef c10::BFloat16 type; };
}  // namespace __ks

__device__ c10::Half atomicAdd(c10::Half* a, c10::Half v);
__device__ c10::BFloat16 atomicAdd(c10::BFloat16* a, c10::BFloat16 v);
template <class T> __device__ T gpuAtomicAdd(T* a, T v);
template <class T> __device__ void fastAtomicAdd(T* a, int64_t i, int64_t n, T v, bool fast);

namespace at {
using c10::Half;
using c10::BFloat16;
using c10::ScalarType;
using c10::Device;
using c10::TensorOptions;
using c10::IntArrayRef;
const ScalarType kFloat = ScalarType::Float, kDouble = ScalarType::Double,
                 kHalf = ScalarType::Half, kBFloat16 = ScalarType::BFloat16,
                 kInt = ScalarType::Int, kLong = ScalarType::Long, kByte = ScalarType::Byte,
                 kBool = ScalarType::Bool;
class Tensor {
 public:
  template <class T> T* data_ptr() const;
  void* data_ptr() const;
  template <class T> T* data() const;
  __ks_int64 numel() const;
  __ks_int64 size(__ks_int64 dim) const;
  __ks_int64 stride(__ks_int64 dim) const;
  __ks_int64 dim() const;
  IntArrayRef sizes() const;
  IntArrayRef strides() const;
  ScalarType scalar_type() const;
  ScalarType type() const;
  TensorOptions options() const;
  Device device() const;
  bool is_cuda() const;
  bool is_contiguous() const;
  bool defined() const;
  Tensor contiguous() const;
  Tensor view(IntArrayRef) const;
  Tensor to(ScalarType) const;
  Tensor zero_() const;
  Tensor& fill_(double) ;
  Tensor operator[](__ks_int64) const;
  template <class T> T item() const;
};
Tensor zeros(IntArrayRef, TensorOptions = {});
Tensor zeros_like(const Tensor&);
Tensor empty(IntArrayRef, TensorOptions = {});
Tensor empty_like(const Tensor&);
Tensor ones_like(const Tensor&);
namespace cuda {
using c10::cuda::CUDAGuard;
using c10::cuda::OptionalCUDAGuard;
using c10::cuda::CUDAStream;
using c10::cuda::getCurrentCUDAStream;
template <class T> __host__ __device__ T ATenCeilDiv(T a, T b);
struct DeviceProp { int multiProcessorCount; int maxThreadsPerBlock; };
DeviceProp* getCurrentDeviceProperties();
}  // namespace cuda
}  // namespace at
namespace torch {
using at::Tensor;
using at::zeros;
using at::empty;
using at::Half;
}
template <class T> __host__ __device__ T THCCeilDiv(T a, T b);
#define TORCH_CHECK(cond, ...) ((void)(cond))
#define AT_ASSERTM(cond, ...) ((void)(cond))
#define AT_ASSERT(cond, ...) ((void)(cond))
#define TORCH_INTERNAL_ASSERT(cond, ...) ((void)(cond))
#define AT_CUDA_CHECK(expr) ((void)(expr))
#define C10_CUDA_CHECK(expr) ((void)(expr))
#define C10_CUDA_KERNEL_LAUNCH_CHECK() ((void)0)
#define AT_ERROR(...) ((void)0)
#define C10_WARP_SIZE 32
#define TORCH_EXTENSION_NAME ks_extension
struct __ks_pybind_module {
  template <class... A> __ks_pybind_module& def(const char*, A...);
};
#define PYBIND11_MODULE(name, m) void __ks_pybind_##name(__ks_pybind_module& m)

// AT_DISPATCH_*: each listed type becomes one copy of the lambda with
// `scalar_t` bound to it, as in ATen, so a launch inside the lambda is a call
// to a concrete specialization (kernel<float>, kernel<c10::Half>, ...) and the
// AST itself says which types a launcher instantiates.
#define __KS_CASE(T, ...) { using scalar_t = T; (void)sizeof(scalar_t); __VA_ARGS__(); }
#define AT_DISPATCH_FLOATING_TYPES(TYPE, NAME, ...) \
  [&] { __KS_CASE(double, __VA_ARGS__) __KS_CASE(float, __VA_ARGS__) }()
#define AT_DISPATCH_FLOATING_TYPES_AND_HALF(TYPE, NAME, ...) \
  [&] { __KS_CASE(double, __VA_ARGS__) __KS_CASE(float, __VA_ARGS__) __KS_CASE(c10::Half, __VA_ARGS__) }()
#define AT_DISPATCH_FLOATING_TYPES_AND(S1, TYPE, NAME, ...) \
  [&] { __KS_CASE(double, __VA_ARGS__) __KS_CASE(float, __VA_ARGS__) \
        __KS_CASE(typename __ks::scalar_of<S1>::type, __VA_ARGS__) }()
#define AT_DISPATCH_FLOATING_TYPES_AND2(S1, S2, TYPE, NAME, ...) \
  [&] { __KS_CASE(double, __VA_ARGS__) __KS_CASE(float, __VA_ARGS__) \
        __KS_CASE(typename __ks::scalar_of<S1>::type, __VA_ARGS__) \
        __KS_CASE(typename __ks::scalar_of<S2>::type, __VA_ARGS__) }()
#define AT_DISPATCH_INTEGRAL_TYPES(TYPE, NAME, ...) \
  [&] { __KS_CASE(unsigned char, __VA_ARGS__) __KS_CASE(signed char, __VA_ARGS__) \
        __KS_CASE(short, __VA_ARGS__) __KS_CASE(int, __VA_ARGS__) __KS_CASE(__ks_int64, __VA_ARGS__) }()
#define AT_DISPATCH_ALL_TYPES(TYPE, NAME, ...) \
  [&] { __KS_CASE(unsigned char, __VA_ARGS__) __KS_CASE(signed char, __VA_ARGS__) \
        __KS_CASE(short, __VA_ARGS__) __KS_CASE(int, __VA_ARGS__) __KS_CASE(__ks_int64, __VA_ARGS__) \
        __KS_CASE(float, __VA_ARGS__) __KS_CASE(double, __VA_ARGS__) }()
#define AT_DISPATCH_ALL_TYPES_AND_HALF(TYPE, NAME, ...) \
  [&] { __KS_CASE(unsigned char, __VA_ARGS__) __KS_CASE(signed char, __VA_ARGS__) \
        __KS_CASE(short, __VA_ARGS__) __KS_CASE(int, __VA_ARGS__) __KS_CASE(__ks_int64, __VA_ARGS__) \
        __KS_CASE(float, __VA_ARGS__) __KS_CASE(double, __VA_ARGS__) __KS_CASE(c10::Half, __VA_ARGS__) }()
#define AT_DISPATCH_REDUCED_FLOATING_TYPES(TYPE, NAME, ...) \
  [&] { __KS_CASE(c10::Half, __VA_ARGS__) __KS_CASE(c10::BFloat16, __VA_ARGS__) }()

#endif  // KS_PRELUDE_H
