// CUDA C++ twins of kernels/src/matmul.rs: the same algorithm, signature and launch,
// compiled at run time by NVRTC and run by `coalesce compare` on the same buffers.
// C (m x n) = A (m x k) B (k x n), row-major, one thread per element of C.

// size_t, as Rust's usize: row and column are computed in 64 bits, as there.
constexpr size_t TILE = 32;

// C[row][col] = sum over kk of A[row][kk] B[kk][col], one fused multiply-add per term.
__device__ __forceinline__ void dot_into(size_t m, size_t n, size_t k, const float* a, const float* b,
                                         float* c, size_t row, size_t col) {
    if (row < m && col < n) {
        float acc = 0.0f;
        for (size_t kk = 0; kk < k; ++kk) {
            acc = fmaf(__ldg(&a[row * k + kk]), __ldg(&b[kk * n + col]), acc);
        }
        c[row * n + col] = acc;
    }
}

// Naive: threadIdx.x on rows (strided A reads and C writes).
extern "C" __global__ void matmul_naive(size_t m, size_t n, size_t k, const float* a, const float* b, float* c) {
    size_t row = blockIdx.y * TILE + threadIdx.x;
    size_t col = blockIdx.x * TILE + threadIdx.y;
    dot_into(m, n, k, a, b, c, row, col);
}

// Accidental: threadIdx.x on columns (coalesced B reads and C writes).
extern "C" __global__ void matmul_accidental(size_t m, size_t n, size_t k, const float* a, const float* b, float* c) {
    size_t row = blockIdx.y * TILE + threadIdx.y;
    size_t col = blockIdx.x * TILE + threadIdx.x;
    dot_into(m, n, k, a, b, c, row, col);
}

// Remapped: 1D blocks of 1024 with col = tid % 32, row = tid / 32.
extern "C" __global__ void matmul_remapped(size_t m, size_t n, size_t k, const float* a, const float* b, float* c) {
    size_t tid = threadIdx.x;
    size_t row = blockIdx.y * TILE + tid / TILE;
    size_t col = blockIdx.x * TILE + tid % TILE;
    dot_into(m, n, k, a, b, c, row, col);
}
