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
