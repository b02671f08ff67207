// CUDA C++ twins of kernels/src/hgemm/: the same algorithm, signature and launch,
// compiled at run time by NVRTC and run by `coalesce compare` on the same buffers.
// C (M x N) = A (M x K) B (K x N), row-major, all of one 16-bit type (BF16 or FP16),
// products accumulated in float and rounded to the 16-bit type once.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

// Which wgmma a tile of T takes (.bf16 or .f16).
template <typename T> constexpr bool IS_BF16 = false;
template <> constexpr bool IS_BF16<__nv_bfloat16> = true;

__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_float(half x) { return __half2float(x); }

// Round to nearest even, as the Rust kernels' from_f32 does.
template <typename T> __device__ __forceinline__ T from_float(float x);
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
template <> __device__ __forceinline__ half from_float<half>(float x) { return __float2half_rn(x); }

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

extern "C" __global__ void hgemm_simt_bf16(int M, int N, int K, const __nv_bfloat16* __restrict__ A,
                                           const __nv_bfloat16* __restrict__ B, __nv_bfloat16* __restrict__ C) {
    simt(M, N, K, A, B, C);
}

extern "C" __global__ void hgemm_simt_f16(int M, int N, int K, const half* __restrict__ A,
                                          const half* __restrict__ B, half* __restrict__ C) {
    simt(M, N, K, A, B, C);
}

// The Hopper rungs (sm_90a): TMA-fed tiles multiplied from shared memory by warpgroups,
// their bodies in hgemm_hopper.cuh.
#include "hgemm_hopper.cuh"

extern "C" __global__ void __launch_bounds__(256, 1) hgemm_wgmma_bf16(int m, int n, int k, const TensorMap* a, const TensorMap* b, __nv_bfloat16* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_plain<__nv_bfloat16>(m, n, k, a, b, c);
#endif
}
extern "C" __global__ void __launch_bounds__(256, 1) hgemm_wgmma_f16(int m, int n, int k, const TensorMap* a, const TensorMap* b, half* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_plain<half>(m, n, k, a, b, c);
#endif
}
extern "C" __global__ void __launch_bounds__(384, 1) hgemm_wgmma_ws_bf16(int m, int n, int k, const TensorMap* a, const TensorMap* b, __nv_bfloat16* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_ws<__nv_bfloat16, 2, 256, false, false, false>(m, n, k, a, b, c, nullptr);
#endif
}
extern "C" __global__ void __launch_bounds__(384, 1) hgemm_wgmma_ws_f16(int m, int n, int k, const TensorMap* a, const TensorMap* b, half* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_ws<half, 2, 256, false, false, false>(m, n, k, a, b, c, nullptr);
#endif
}
extern "C" __global__ void __launch_bounds__(384, 1) hgemm_wgmma_cluster_bf16(int m, int n, int k, const TensorMap* a, const TensorMap* b, __nv_bfloat16* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_ws<__nv_bfloat16, 2, 256, true, false, false>(m, n, k, a, b, c, nullptr);
#endif
}
extern "C" __global__ void __launch_bounds__(384, 1) hgemm_wgmma_cluster_f16(int m, int n, int k, const TensorMap* a, const TensorMap* b, half* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_ws<half, 2, 256, true, false, false>(m, n, k, a, b, c, nullptr);
#endif
}
extern "C" __global__ void __launch_bounds__(384, 1) hgemm_persistent_bf16(int m, int n, int k, const TensorMap* a, const TensorMap* b, __nv_bfloat16* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_ws<__nv_bfloat16, 2, 256, false, true, false>(m, n, k, a, b, c, nullptr);
#endif
}
extern "C" __global__ void __launch_bounds__(384, 1) hgemm_persistent_f16(int m, int n, int k, const TensorMap* a, const TensorMap* b, half* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_ws<half, 2, 256, false, true, false>(m, n, k, a, b, c, nullptr);
#endif
}

extern "C" __global__ void __launch_bounds__(384, 1) hgemm_tma_store_bf16(int m, int n, int k, const TensorMap* a, const TensorMap* b, const TensorMap* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_ws<__nv_bfloat16, 2, 256, false, true, true>(m, n, k, a, b, nullptr, c);
#endif
}

extern "C" __global__ void __launch_bounds__(384, 1) hgemm_tma_store_f16(int m, int n, int k, const TensorMap* a, const TensorMap* b, const TensorMap* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_ws<half, 2, 256, false, true, true>(m, n, k, a, b, nullptr, c);
#endif
}

extern "C" __global__ void __launch_bounds__(256, 1) hgemm_small_bf16(int m, int n, int k, const TensorMap* a, const TensorMap* b, const TensorMap* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_ws<__nv_bfloat16, 1, 128, true, true, true, 8>(m, n, k, a, b, nullptr, c);
#endif
}

extern "C" __global__ void __launch_bounds__(256, 1) hgemm_small_f16(int m, int n, int k, const TensorMap* a, const TensorMap* b, const TensorMap* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_ws<half, 1, 128, true, true, true, 8>(m, n, k, a, b, nullptr, c);
#endif
}

extern "C" __global__ void __launch_bounds__(384, 1) hgemm_stream_k_bf16(int m, int n, int k, const TensorMap* a, const TensorMap* b, const TensorMap* c, float* work) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_stream_k<__nv_bfloat16, 256>(m, n, k, a, b, c, work);
#endif
}

extern "C" __global__ void __launch_bounds__(384, 1) hgemm_stream_k_f16(int m, int n, int k, const TensorMap* a, const TensorMap* b, const TensorMap* c, float* work) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_stream_k<half, 256>(m, n, k, a, b, c, work);
#endif
}

extern "C" __global__ void __launch_bounds__(512, 1) hgemm_tma_store_192_bf16(int m, int n, int k, const TensorMap* a, const TensorMap* b, const TensorMap* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_ws<__nv_bfloat16, 3, 128, false, true, true>(m, n, k, a, b, nullptr, c);
#endif
}

extern "C" __global__ void __launch_bounds__(512, 1) hgemm_tma_store_192_f16(int m, int n, int k, const TensorMap* a, const TensorMap* b, const TensorMap* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_ws<half, 3, 128, false, true, true>(m, n, k, a, b, nullptr, c);
#endif
}

extern "C" __global__ void __launch_bounds__(384, 1) hgemm_tma_store_128_bf16(int m, int n, int k, const TensorMap* a, const TensorMap* b, const TensorMap* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_ws<__nv_bfloat16, 2, 128, false, true, true, 6>(m, n, k, a, b, nullptr, c);
#endif
}

extern "C" __global__ void __launch_bounds__(384, 1) hgemm_tma_store_128_f16(int m, int n, int k, const TensorMap* a, const TensorMap* b, const TensorMap* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_ws<half, 2, 128, false, true, true, 6>(m, n, k, a, b, nullptr, c);
#endif
}

extern "C" __global__ void __launch_bounds__(384, 1) hgemm_overlap_bf16(int m, int n, int k, const TensorMap* a, const TensorMap* b, const TensorMap* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_overlap<__nv_bfloat16>(m, n, k, a, b, c);
#endif
}

extern "C" __global__ void __launch_bounds__(384, 1) hgemm_overlap_f16(int m, int n, int k, const TensorMap* a, const TensorMap* b, const TensorMap* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_overlap<half>(m, n, k, a, b, c);
#endif
}
