// CUDA C++ twins of kernels/src/saxpy.rs: the same algorithm, signature and launch,
// compiled at run time by NVRTC and run by `coalesce compare` on the same buffers.
// y = a x + y with one fused multiply-add per element, as the Rust kernels.

// One float per thread.
extern "C" __global__ void saxpy_f32(size_t n, float a, const float* x, float* y) {
    size_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = fmaf(a, __ldg(&x[i]), y[i]);
    }
}

// The elements past the last whole float4, one per thread of the first few.
__device__ __forceinline__ void scalar_tail(size_t n, float a, const float* x, float* y) {
    size_t i = n / 4 * 4 + (blockIdx.x * blockDim.x + threadIdx.x);
    if (i < n) {
        y[i] = fmaf(a, __ldg(&x[i]), y[i]);
    }
}

// a * x + y lane by lane, as Rust's Float4::axpy.
__device__ __forceinline__ float4 axpy(float4 x, float a, float4 y) {
    return make_float4(fmaf(a, x.x, y.x), fmaf(a, x.y, y.y), fmaf(a, x.z, y.z), fmaf(a, x.w, y.w));
}

// float4, grid-stride: coalesced 16-byte accesses.
extern "C" __global__ void saxpy_f32x4(size_t n, float a, const float* x, float* y) {
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    size_t i = blockIdx.x * blockDim.x + threadIdx.x;
    while (i < n / 4) {
        y4[i] = axpy(__ldg(&x4[i]), a, y4[i]);
        i += gridDim.x * blockDim.x;
    }
    scalar_tail(n, a, x, y);
}

// Rows of the strided variant's column-major view (kernels::saxpy::STRIDED_ROWS).
constexpr size_t STRIDED_ROWS = 4096;

// float4, strided: saxpy_f32x4's grid-stride loop, but logical index j walks the
// n/4 float4s as a 4096-row matrix stored column by column.
extern "C" __global__ void saxpy_f32x4_strided(size_t n, float a, const float* x, float* y) {
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    size_t n4 = n / 4;
    size_t cols = n4 / STRIDED_ROWS + (n4 % STRIDED_ROWS != 0);
    size_t j = blockIdx.x * blockDim.x + threadIdx.x;
    while (j < STRIDED_ROWS * cols) {
        size_t i = (j % STRIDED_ROWS) * cols + j / STRIDED_ROWS;
        if (i < n4) {
            y4[i] = axpy(__ldg(&x4[i]), a, y4[i]);
        }
        j += gridDim.x * blockDim.x;
    }
    scalar_tail(n, a, x, y);
}
