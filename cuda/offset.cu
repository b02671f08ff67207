// CUDA C++ twin of kernels/src/offset.rs: the same algorithm, signature and launch,
// compiled at run time by NVRTC and run by `coalesce compare` on the same buffers.

// Shifted read, aligned write; src holds n + o floats.
extern "C" __global__ void offset_read(size_t n, size_t o, const float* src, float* dst) {
    size_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        dst[i] = __ldg(&src[i + o]);
    }
}
