// CUDA C++ twins of kernels/src/inflight.rs: the same algorithm, signature and launch,
// compiled at run time by NVRTC and run by `coalesce compare` on the same buffers.

// Each block copies K consecutive chunks of blockDim.x elements: every load of a
// thread is issued before its first store.
template <typename T, int K>
__device__ __forceinline__ void copy_k(size_t n, const T* __restrict__ src, T* __restrict__ dst) {
    size_t base = (size_t)blockIdx.x * blockDim.x * K + threadIdx.x;
    T v[K];
#pragma unroll
    for (int k = 0; k < K; k++) {
        size_t i = base + (size_t)k * blockDim.x;
        if (i < n) v[k] = __ldg(&src[i]);
    }
#pragma unroll
    for (int k = 0; k < K; k++) {
        size_t i = base + (size_t)k * blockDim.x;
        if (i < n) dst[i] = v[k];
    }
}

// n / 4 float4s, then the last n % 4 floats one each by the first threads.
template <int K>
__device__ __forceinline__ void copy_v4(size_t n, const float* __restrict__ src, float* __restrict__ dst) {
    copy_k<float4, K>(n / 4, reinterpret_cast<const float4*>(src), reinterpret_cast<float4*>(dst));
    size_t tail = n / 4 * 4 + (blockIdx.x * blockDim.x + threadIdx.x);
    if (tail < n) dst[tail] = __ldg(&src[tail]);
}

extern "C" __global__ void inflight_f32_1(size_t n, const float* __restrict__ src, float* __restrict__ dst) { copy_k<float, 1>(n, src, dst); }
extern "C" __global__ void inflight_f32_2(size_t n, const float* __restrict__ src, float* __restrict__ dst) { copy_k<float, 2>(n, src, dst); }
extern "C" __global__ void inflight_f32_4(size_t n, const float* __restrict__ src, float* __restrict__ dst) { copy_k<float, 4>(n, src, dst); }
extern "C" __global__ void inflight_f32_8(size_t n, const float* __restrict__ src, float* __restrict__ dst) { copy_k<float, 8>(n, src, dst); }
extern "C" __global__ void inflight_f32x4_1(size_t n, const float* __restrict__ src, float* __restrict__ dst) { copy_v4<1>(n, src, dst); }
extern "C" __global__ void inflight_f32x4_2(size_t n, const float* __restrict__ src, float* __restrict__ dst) { copy_v4<2>(n, src, dst); }
extern "C" __global__ void inflight_f32x4_4(size_t n, const float* __restrict__ src, float* __restrict__ dst) { copy_v4<4>(n, src, dst); }
extern "C" __global__ void inflight_f32x4_8(size_t n, const float* __restrict__ src, float* __restrict__ dst) { copy_v4<8>(n, src, dst); }
