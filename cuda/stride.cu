// CUDA C++ twin of kernels/src/stride.rs: the same algorithm, signature and launch,
// compiled at run time by NVRTC and run by `coalesce compare` on the same buffers.

// Strided read, coalesced write; src holds at least (n - 1) s + 1 floats.
extern "C" __global__ void stride_read(size_t n, size_t s, const float* src, float* dst) {
    size_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        dst[i] = __ldg(&src[i * s]);
    }
}
