// CUDA C++ twins of kernels/src/matmul.rs: the same algorithm, signature and launch,
// compiled at run time by NVRTC and run by `coalesce compare` on the same buffers.
// C (M x N) = A (M x K) B (K x N), row-major, one thread per element of C.

// Written as a CUDA programmer writes it: int dimensions and indices, const
// __restrict__ inputs (which lets the compiler use the read-only data path, as the
// Rust kernels' Global<f32> reads do). The host keeps every index below 2^31.
constexpr int TILE = 32;

// C[row][col] = sum over kk of A[row][kk] B[kk][col], one fused multiply-add per term.
__device__ __forceinline__ void dot_into(int M, int N, int K, const float* __restrict__ A,
                                         const float* __restrict__ B, float* __restrict__ C, int row,
                                         int col) {
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int kk = 0; kk < K; ++kk) {
            acc = fmaf(A[row * K + kk], B[kk * N + col], acc);
        }
        C[row * N + col] = acc;
    }
}

// Naive: threadIdx.x on rows (strided A reads and C writes).
extern "C" __global__ void matmul_naive(int M, int N, int K, const float* __restrict__ A,
                                        const float* __restrict__ B, float* __restrict__ C) {
    int row = blockIdx.y * TILE + threadIdx.x;
    int col = blockIdx.x * TILE + threadIdx.y;
    dot_into(M, N, K, A, B, C, row, col);
}

// Accidental: threadIdx.x on columns (coalesced B reads and C writes).
extern "C" __global__ void matmul_accidental(int M, int N, int K, const float* __restrict__ A,
                                             const float* __restrict__ B, float* __restrict__ C) {
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    dot_into(M, N, K, A, B, C, row, col);
}

// Remapped: 1D blocks of 1024 with col = tid % 32, row = tid / 32.
extern "C" __global__ void matmul_remapped(int M, int N, int K, const float* __restrict__ A,
                                           const float* __restrict__ B, float* __restrict__ C) {
    int tid = threadIdx.x;
    int row = blockIdx.y * TILE + tid / TILE;
    int col = blockIdx.x * TILE + tid % TILE;
    dot_into(M, N, K, A, B, C, row, col);
}
