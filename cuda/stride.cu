// CUDA C++ twin of kernels/src/stride.rs: the same algorithm, signature and launch,
// compiled at run time by NVRTC and run by `coalesce compare` on the same buffers.

// Strided read, coalesced write; src holds at least (n - 1) s + 1 floats.
extern "C" __global__ void stride_read(size_t n, size_t s, const float* src, float* dst) {
    size_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        dst[i] = __ldg(&src[i * s]);
    }
}

// Tuned: four outputs per thread stored as one float4, grid-stride over a grid sized
// to the GPU; at s = 1 the four inputs are one float4 load, otherwise four gathers.
// The last n % 4 outputs one each by the first threads.
extern "C" __global__ void stride_read_f32x4(size_t n, size_t s, const float* __restrict__ src,
                                             float* __restrict__ dst) {
    size_t n4 = n / 4;
    const float4* src4 = reinterpret_cast<const float4*>(src);
    float4* dst4 = reinterpret_cast<float4*>(dst);
    size_t i = blockIdx.x * blockDim.x + threadIdx.x;
    while (i < n4) {
        size_t j = 4 * i * s;
        float4 v;
        if (s == 1) {
            v = __ldg(&src4[i]);
        } else {
            v = make_float4(__ldg(&src[j]), __ldg(&src[j + s]), __ldg(&src[j + 2 * s]), __ldg(&src[j + 3 * s]));
        }
        dst4[i] = v;
        i += gridDim.x * blockDim.x;
    }
    size_t tail = n4 * 4 + (blockIdx.x * blockDim.x + threadIdx.x);
    if (tail < n) {
        dst[tail] = __ldg(&src[tail * s]);
    }
}
