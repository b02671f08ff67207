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
