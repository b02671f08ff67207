// CUDA C++ twins of kernels/src/copy.rs: the same algorithm, signature and launch,
// compiled at run time by NVRTC and run by `coalesce compare` on the same buffers.
// Indices are computed as the Rust ones are: 32-bit blockIdx.x * blockDim.x +
// threadIdx.x, widened to size_t.

// One float per thread: a warp touches 128 consecutive bytes per access.
extern "C" __global__ void copy_f32(size_t n, const float* src, float* dst) {
    size_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        dst[i] = __ldg(&src[i]);
    }
}

// 16 bytes per access, grid-stride; the last n % 4 floats one each by the first threads.
extern "C" __global__ void copy_f32x4(size_t n, const float* src, float* dst) {
    size_t n4 = n / 4;
    const float4* src4 = reinterpret_cast<const float4*>(src);
    float4* dst4 = reinterpret_cast<float4*>(dst);
    size_t i = blockIdx.x * blockDim.x + threadIdx.x;
    while (i < n4) {
        dst4[i] = __ldg(&src4[i]);
        i += gridDim.x * blockDim.x;
    }
    size_t tail = n4 * 4 + (blockIdx.x * blockDim.x + threadIdx.x);
    if (tail < n) {
        dst[tail] = __ldg(&src[tail]);
    }
}

#include "hopper.cuh"

// tma: one thread names 16 boxes of 256 floats of a 1D tensor map; the copy engine
// loads them into shared memory and stores them back out.
constexpr int TMA_BOX = 256, TMA_BOXES = 16;
extern "C" __global__ void copy_tma(const TensorMap* src, const TensorMap* dst) {
#if __CUDA_ARCH__ >= 900
    extern __shared__ __align__(128) float tile[];
    unsigned long long* bar = reinterpret_cast<unsigned long long*>(tile + TMA_BOX * TMA_BOXES);
    if (threadIdx.x != 0) return;
    bar_init(bar, 1);
    bar_fence_init();
    int first = blockIdx.x * TMA_BOX * TMA_BOXES;
    bar_arrive_expect_tx(bar, TMA_BOX * TMA_BOXES * 4);
    for (int b = 0; b < TMA_BOXES; ++b) tma_load_1d(tile + b * TMA_BOX, src, bar, first + b * TMA_BOX);
    bar_wait(bar, 0);
    for (int b = 0; b < TMA_BOXES; ++b) tma_store_1d(dst, tile + b * TMA_BOX, first + b * TMA_BOX);
    tma_commit();
    tma_wait_read0();
#endif
}
