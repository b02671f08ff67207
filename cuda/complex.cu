// CUDA C++ twins of kernels/src/complex.rs: the same algorithm, signature and launch,
// compiled at run time by NVRTC and run by `coalesce compare` on the same buffers.

// Interleaved [re, im] pairs: lane i reads float 2i (the stride-2 trap).
extern "C" __global__ void complex_real_interleaved(size_t n, const float* src, float* dst) {
    size_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        dst[i] = __ldg(&src[2 * i]);
    }
}

// Split arrays: the real parts are read at consecutive addresses.
extern "C" __global__ void complex_real_split(size_t n, const float* re, float* dst) {
    size_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        dst[i] = __ldg(&re[i]);
    }
}

// Split, tuned: float4 loads and stores, grid-stride over a grid sized to the GPU;
// the last n % 4 values one each by the first threads.
extern "C" __global__ void complex_real_split_f32x4(size_t n, const float* __restrict__ re,
                                                    float* __restrict__ dst) {
    size_t n4 = n / 4;
    const float4* re4 = reinterpret_cast<const float4*>(re);
    float4* dst4 = reinterpret_cast<float4*>(dst);
    size_t i = blockIdx.x * blockDim.x + threadIdx.x;
    while (i < n4) {
        dst4[i] = __ldg(&re4[i]);
        i += gridDim.x * blockDim.x;
    }
    size_t tail = n4 * 4 + (blockIdx.x * blockDim.x + threadIdx.x);
    if (tail < n) {
        dst[tail] = __ldg(&re[tail]);
    }
}
