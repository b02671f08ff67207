// CUDA C++ twins of kernels/src/hgemm/: the same algorithm, signature and launch,
// compiled at run time by NVRTC and run by `coalesce compare` on the same buffers.
// C (M x N) = A (M x K) B (K x N), row-major, all of one 16-bit type (BF16 or FP16),
// products accumulated in float and rounded to the 16-bit type once.

// The 16-bit types as cuda_bf16.h and cuda_fp16.h store them (__nv_bfloat16 and half:
// two bytes, 2-byte aligned), with the conversions the kernels use as the PTX
// instructions those headers emit. Declared here because NVRTC without a toolkit's
// include directory has neither header; the buffers and the PTX are the same.
struct __align__(2) bf16 {
    unsigned short bits;
    static constexpr bool IS_BF16 = true;
};
struct __align__(2) fp16 {
    unsigned short bits;
    static constexpr bool IS_BF16 = false;
};

// Exact: a bfloat16 is the upper half of a float.
__device__ __forceinline__ float to_float(bf16 x) { return __uint_as_float((unsigned)x.bits << 16); }
__device__ __forceinline__ float to_float(fp16 x) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x.bits));
    return f;
}

// Round to nearest even, as the Rust kernels' from_f32 does (and __float2bfloat16_rn,
// __float2half_rn).
template <typename T> __device__ __forceinline__ T from_float(float x);
template <> __device__ __forceinline__ bf16 from_float<bf16>(float x) {
    bf16 r;
#if __CUDA_ARCH__ >= 800
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r.bits) : "f"(x));
#else
    unsigned u = __float_as_uint(x);
    r.bits = (x != x) ? (unsigned short)((u >> 16) | 0x40) : (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
#endif
    return r;
}
template <> __device__ __forceinline__ fp16 from_float<fp16>(float x) {
    fp16 r;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r.bits) : "f"(x));
    return r;
}

constexpr int TILE = 32;

// SIMT: one thread per element of C in 32 x 32 blocks, threadIdx.x on columns (a
// warp reads one A element and 32 consecutive B elements per step).
template <typename T>
__device__ __forceinline__ void simt(int M, int N, int K, const T* __restrict__ A, const T* __restrict__ B,
                                     T* __restrict__ C) {
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int kk = 0; kk < K; ++kk) {
            acc = fmaf(to_float(A[row * K + kk]), to_float(B[kk * N + col]), acc);
        }
        C[row * N + col] = from_float<T>(acc);
    }
}

extern "C" __global__ void hgemm_simt_bf16(int M, int N, int K, const bf16* __restrict__ A,
                                           const bf16* __restrict__ B, bf16* __restrict__ C) {
    simt(M, N, K, A, B, C);
}

extern "C" __global__ void hgemm_simt_f16(int M, int N, int K, const fp16* __restrict__ A,
                                          const fp16* __restrict__ B, fp16* __restrict__ C) {
    simt(M, N, K, A, B, C);
}

// The Hopper rungs (sm_90a): TMA-fed tiles multiplied from shared memory by warpgroups,
// their bodies in hgemm_hopper.cuh.
#include "hgemm_hopper.cuh"

extern "C" __global__ void __launch_bounds__(256, 1) hgemm_wgmma_bf16(int m, int n, int k, const TensorMap* a, const TensorMap* b, bf16* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_plain<bf16>(m, n, k, a, b, c);
#endif
}
extern "C" __global__ void __launch_bounds__(256, 1) hgemm_wgmma_f16(int m, int n, int k, const TensorMap* a, const TensorMap* b, fp16* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_plain<fp16>(m, n, k, a, b, c);
#endif
}
extern "C" __global__ void __launch_bounds__(384, 1) hgemm_wgmma_ws_bf16(int m, int n, int k, const TensorMap* a, const TensorMap* b, bf16* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_ws<bf16, 2, 256, false, false, false>(m, n, k, a, b, c, nullptr);
#endif
}
extern "C" __global__ void __launch_bounds__(384, 1) hgemm_wgmma_ws_f16(int m, int n, int k, const TensorMap* a, const TensorMap* b, fp16* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_ws<fp16, 2, 256, false, false, false>(m, n, k, a, b, c, nullptr);
#endif
}
extern "C" __global__ void __launch_bounds__(384, 1) hgemm_wgmma_cluster_bf16(int m, int n, int k, const TensorMap* a, const TensorMap* b, bf16* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_ws<bf16, 2, 256, true, false, false>(m, n, k, a, b, c, nullptr);
#endif
}
extern "C" __global__ void __launch_bounds__(384, 1) hgemm_wgmma_cluster_f16(int m, int n, int k, const TensorMap* a, const TensorMap* b, fp16* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_ws<fp16, 2, 256, true, false, false>(m, n, k, a, b, c, nullptr);
#endif
}
extern "C" __global__ void __launch_bounds__(384, 1) hgemm_persistent_bf16(int m, int n, int k, const TensorMap* a, const TensorMap* b, bf16* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_ws<bf16, 2, 256, true, true, false>(m, n, k, a, b, c, nullptr);
#endif
}
extern "C" __global__ void __launch_bounds__(384, 1) hgemm_persistent_f16(int m, int n, int k, const TensorMap* a, const TensorMap* b, fp16* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_ws<fp16, 2, 256, true, true, false>(m, n, k, a, b, c, nullptr);
#endif
}

extern "C" __global__ void __launch_bounds__(384, 1) hgemm_tma_store_bf16(int m, int n, int k, const TensorMap* a, const TensorMap* b, const TensorMap* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_ws<bf16, 2, 256, true, true, true>(m, n, k, a, b, nullptr, c);
#endif
}

extern "C" __global__ void __launch_bounds__(384, 1) hgemm_tma_store_f16(int m, int n, int k, const TensorMap* a, const TensorMap* b, const TensorMap* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_ws<fp16, 2, 256, true, true, true>(m, n, k, a, b, nullptr, c);
#endif
}

extern "C" __global__ void __launch_bounds__(256, 1) hgemm_small_bf16(int m, int n, int k, const TensorMap* a, const TensorMap* b, const TensorMap* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_ws<bf16, 1, 128, true, true, true>(m, n, k, a, b, nullptr, c);
#endif
}

extern "C" __global__ void __launch_bounds__(256, 1) hgemm_small_f16(int m, int n, int k, const TensorMap* a, const TensorMap* b, const TensorMap* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_ws<fp16, 1, 128, true, true, true>(m, n, k, a, b, nullptr, c);
#endif
}

extern "C" __global__ void __launch_bounds__(384, 1) hgemm_stream_k_bf16(int m, int n, int k, const TensorMap* a, const TensorMap* b, const TensorMap* c, float* work) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_stream_k<bf16, 256>(m, n, k, a, b, c, work);
#endif
}

extern "C" __global__ void __launch_bounds__(384, 1) hgemm_stream_k_f16(int m, int n, int k, const TensorMap* a, const TensorMap* b, const TensorMap* c, float* work) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_stream_k<fp16, 256>(m, n, k, a, b, c, work);
#endif
}
