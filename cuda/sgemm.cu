// CUDA C++ twins of kernels/src/sgemm/: the matmul chapter continued, one rung per
// kernel, written as a CUDA programmer writes siboehm-style SGEMM kernels: int
// dimensions, const __restrict__ inputs, float4 reinterpret loads, #pragma unroll,
// tile sizes as template parameters, each tuning an extern "C" entry point with the
// Rust kernel's name, parameters and launch. C (M x N) = A (M x K) B (K x N),
// row-major; any M, N, K (zero-filled partial tiles, guarded stores; float4 global
// accesses only when K % 4 == 0 (A) or N % 4 == 0 (B, C)).

// Element (r, c) of a rows x cols row-major matrix, 0 outside it.
__device__ __forceinline__ float at(const float* __restrict__ X, int rows, int cols, int r, int c) {
    return (r < rows && c < cols) ? X[r * cols + c] : 0.0f;
}

// Elements (r, c..c+3): one float4 load when vector (cols % 4 == 0), whole or nothing.
__device__ __forceinline__ float4 at4(const float* __restrict__ X, int rows, int cols, int r, int c,
                                      bool vector) {
    if (vector) {
        if (r < rows && c < cols) return *reinterpret_cast<const float4*>(&X[r * cols + c]);
        return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    return make_float4(at(X, rows, cols, r, c), at(X, rows, cols, r, c + 1), at(X, rows, cols, r, c + 2),
                       at(X, rows, cols, r, c + 3));
}

// Four outputs (r, col..col+3) of C: a float4 store when N % 4 == 0, else guarded scalars.
__device__ __forceinline__ void store4(float* __restrict__ C, int M, int N, int r, int col, float4 v,
                                       bool vector) {
    if (r >= M) return;
    if (vector && col < N) {
        *reinterpret_cast<float4*>(&C[r * N + col]) = v;
    } else {
        if (col < N) C[r * N + col] = v.x;
        if (col + 1 < N) C[r * N + col + 1] = v.y;
        if (col + 2 < N) C[r * N + col + 2] = v.z;
        if (col + 3 < N) C[r * N + col + 3] = v.w;
    }
}

// 1. smem: T x T tiles of A and B in shared memory, one thread per element of C.
template <int T>
__device__ __forceinline__ void smem(int M, int N, int K, const float* __restrict__ A,
                                     const float* __restrict__ B, float* __restrict__ C) {
    __shared__ float As[T * T];
    __shared__ float Bs[T * T];
    const int tr = threadIdx.x / T, tc = threadIdx.x % T;
    const int row = blockIdx.y * T + tr, col = blockIdx.x * T + tc;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += T) {
        As[tr * T + tc] = at(A, M, K, row, k0 + tc);
        Bs[tr * T + tc] = at(B, K, N, k0 + tr, col);
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < T; ++kk) acc = fmaf(As[tr * T + kk], Bs[kk * T + tc], acc);
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}

extern "C" __global__ void sgemm_smem(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
    smem<32>(M, N, K, A, B, C);
}

// Scalar tile loads: A's BM x BK tile (pitch BK) and B's BK x BN tile (pitch BN).
template <int BM, int BN, int BK, int NT>
__device__ __forceinline__ void load_tiles_scalar(int M, int N, int K, const float* __restrict__ A,
                                                  const float* __restrict__ B, float* As, float* Bs, int row0,
                                                  int col0, int k0) {
    const int tid = threadIdx.x;
#pragma unroll
    for (int i = 0; i < BM * BK / NT; ++i) {
        const int r = tid / BK + i * (NT / BK), c = tid % BK;
        As[r * BK + c] = at(A, M, K, row0 + r, k0 + c);
    }
#pragma unroll
    for (int i = 0; i < BK * BN / NT; ++i) {
        const int r = tid / BN + i * (NT / BN), c = tid % BN;
        Bs[r * BN + c] = at(B, K, N, k0 + r, col0 + c);
    }
}

// 2. tile-1d: TM outputs of a column per thread.
template <int BM, int BN, int BK, int TM>
__device__ __forceinline__ void tile_1d(int M, int N, int K, const float* __restrict__ A,
                                        const float* __restrict__ B, float* __restrict__ C) {
    constexpr int NT = BM * BN / TM;
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int thread_row = threadIdx.x / BN, thread_col = threadIdx.x % BN;
    float acc[TM] = {0.0f};
    for (int k0 = 0; k0 < K; k0 += BK) {
        load_tiles_scalar<BM, BN, BK, NT>(M, N, K, A, B, As, Bs, row0, col0, k0);
        __syncthreads();
#pragma unroll
        for (int dot = 0; dot < BK; ++dot) {
            const float b = Bs[dot * BN + thread_col];
#pragma unroll
            for (int i = 0; i < TM; ++i) acc[i] = fmaf(As[(thread_row * TM + i) * BK + dot], b, acc[i]);
        }
        __syncthreads();
    }
    const int col = col0 + thread_col;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = row0 + thread_row * TM + i;
        if (row < M && col < N) C[row * N + col] = acc[i];
    }
}

extern "C" __global__ void sgemm_tile_1d(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
    tile_1d<64, 64, 8, 8>(M, N, K, A, B, C);
}

// 3. tile-2d: TM x TN outputs per thread as outer products.
template <int BM, int BN, int BK, int TM, int TN>
__device__ __forceinline__ void tile_2d(int M, int N, int K, const float* __restrict__ A,
                                        const float* __restrict__ B, float* __restrict__ C) {
    constexpr int NT = BM * BN / (TM * TN);
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int thread_row = threadIdx.x / (BN / TN), thread_col = threadIdx.x % (BN / TN);
    float acc[TM][TN] = {{0.0f}};
    float reg_m[TM], reg_n[TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
        load_tiles_scalar<BM, BN, BK, NT>(M, N, K, A, B, As, Bs, row0, col0, k0);
        __syncthreads();
#pragma unroll
        for (int dot = 0; dot < BK; ++dot) {
#pragma unroll
            for (int i = 0; i < TM; ++i) reg_m[i] = As[(thread_row * TM + i) * BK + dot];
#pragma unroll
            for (int j = 0; j < TN; ++j) reg_n[j] = Bs[dot * BN + thread_col * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(reg_m[i], reg_n[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = row0 + thread_row * TM + i;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int col = col0 + thread_col * TN + j;
            if (row < M && col < N) C[row * N + col] = acc[i][j];
        }
    }
}

extern "C" __global__ void sgemm_tile_2d(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
    tile_2d<128, 128, 8, 8, 8>(M, N, K, A, B, C);
}

// Float4 tile loads into registers (A's first, then B's) and their stores: A
// transposed (element (r, c) at c * PITCH + r), B as float4s (pitch BN).
template <int BM, int BN, int BK, int NT>
struct Fetched {
    float4 a[BM * BK / 4 / NT];
    float4 b[BK * BN / 4 / NT];
};

// WHOLE: the block's tiles lie inside A and B, K % BK == 0 and N % 4 == 0 (the
// caller checked): plain float4 loads.
template <int BM, int BN, int BK, int NT, bool WHOLE = false>
__device__ __forceinline__ Fetched<BM, BN, BK, NT> fetch_tiles(int M, int N, int K, const float* __restrict__ A,
                                                               const float* __restrict__ B, int row0, int col0,
                                                               int k0, bool a_vector, bool b_vector) {
    Fetched<BM, BN, BK, NT> f;
    const int tid = threadIdx.x;
#pragma unroll
    for (int i = 0; i < BM * BK / 4 / NT; ++i) {
        const int r = tid / (BK / 4) + i * (NT / (BK / 4)), c = tid % (BK / 4) * 4;
        f.a[i] = WHOLE ? *reinterpret_cast<const float4*>(&A[(row0 + r) * K + k0 + c])
                       : at4(A, M, K, row0 + r, k0 + c, a_vector);
    }
#pragma unroll
    for (int i = 0; i < BK * BN / 4 / NT; ++i) {
        const int r = tid / (BN / 4) + i * (NT / (BN / 4)), c = tid % (BN / 4) * 4;
        f.b[i] = WHOLE ? *reinterpret_cast<const float4*>(&B[(k0 + r) * N + col0 + c])
                       : at4(B, K, N, k0 + r, col0 + c, b_vector);
    }
    return f;
}

template <int BM, int BN, int BK, int NT, int PITCH>
__device__ __forceinline__ void store_tiles(const Fetched<BM, BN, BK, NT>& f, float* As, float* Bs) {
    const int tid = threadIdx.x;
#pragma unroll
    for (int i = 0; i < BM * BK / 4 / NT; ++i) {
        const int r = tid / (BK / 4) + i * (NT / (BK / 4)), c = tid % (BK / 4) * 4;
        As[(c + 0) * PITCH + r] = f.a[i].x;
        As[(c + 1) * PITCH + r] = f.a[i].y;
        As[(c + 2) * PITCH + r] = f.a[i].z;
        As[(c + 3) * PITCH + r] = f.a[i].w;
    }
#pragma unroll
    for (int i = 0; i < BK * BN / 4 / NT; ++i) {
        const int r = tid / (BN / 4) + i * (NT / (BN / 4)), c = tid % (BN / 4) * 4;
        *reinterpret_cast<float4*>(&Bs[r * BN + c]) = f.b[i];
    }
}

// 4. vec4 and 5. banks: float4 loads, A transposed; SPLIT_B spreads a thread's TN
// columns as TN/4 float4s BN/(TN/4) apart (no bank conflicts), PITCH = BM + 4 pads A.
template <int BM, int BN, int BK, int TM, int TN, int PITCH, bool SPLIT_B>
__device__ __forceinline__ void vec4(int M, int N, int K, const float* __restrict__ A,
                                     const float* __restrict__ B, float* __restrict__ C) {
    constexpr int NT = BM * BN / (TM * TN);
    __shared__ __align__(16) float As[BK * PITCH];
    __shared__ __align__(16) float Bs[BK * BN];
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int thread_row = threadIdx.x / (BN / TN), thread_col = threadIdx.x % (BN / TN);
    const bool a_vector = K % 4 == 0, b_vector = N % 4 == 0;
    auto b_col = [&](int g) { return SPLIT_B ? g * (BN / (TN / 4)) + thread_col * 4 : thread_col * TN + g * 4; };
    float acc[TM][TN] = {{0.0f}};
    float reg_m[TM], reg_n[TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
        store_tiles<BM, BN, BK, NT, PITCH>(
            fetch_tiles<BM, BN, BK, NT>(M, N, K, A, B, row0, col0, k0, a_vector, b_vector), As, Bs);
        __syncthreads();
#pragma unroll
        for (int dot = 0; dot < BK; ++dot) {
#pragma unroll
            for (int i = 0; i < TM; i += 4)
                *reinterpret_cast<float4*>(&reg_m[i]) =
                    *reinterpret_cast<const float4*>(&As[dot * PITCH + thread_row * TM + i]);
#pragma unroll
            for (int g = 0; g < TN / 4; ++g)
                *reinterpret_cast<float4*>(&reg_n[4 * g]) = *reinterpret_cast<const float4*>(&Bs[dot * BN + b_col(g)]);
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(reg_m[i], reg_n[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = row0 + thread_row * TM + i;
#pragma unroll
        for (int g = 0; g < TN / 4; ++g)
            store4(C, M, N, row, col0 + b_col(g),
                   make_float4(acc[i][4 * g], acc[i][4 * g + 1], acc[i][4 * g + 2], acc[i][4 * g + 3]), b_vector);
    }
}

extern "C" __global__ void sgemm_vec4(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
    vec4<128, 128, 8, 8, 8, 128, false>(M, N, K, A, B, C);
}

extern "C" __global__ void sgemm_banks(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
    vec4<128, 128, 8, 8, 8, 128 + 4, true>(M, N, K, A, B, C);
}

// 6. warptile and 7. pipeline: warp w owns a WM x WN tile walked as WMITER x WNITER
// sub-tiles of TM x TN per thread; STAGES = 2 double-buffers shared memory with the
// next tile's loads in flight in registers during the compute.
template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int NT, int STAGES, bool WHOLE = false>
__device__ __forceinline__ void warptile(int M, int N, int K, const float* __restrict__ A,
                                         const float* __restrict__ B, float* __restrict__ C) {
    constexpr int PITCH = BM + 4;
    constexpr int WMITER = (WM * WN) / (32 * TM * TN * WNITER);
    constexpr int WSUBM = WM / WMITER, WSUBN = WN / WNITER;
    __shared__ __align__(16) float As[STAGES * BK * PITCH];
    __shared__ __align__(16) float Bs[STAGES * BK * BN];
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int warp_row = warp / (BN / WN), warp_col = warp % (BN / WN);
    const int lane_row = lane / (WSUBN / TN), lane_col = lane % (WSUBN / TN);
    const int a_base = warp_row * WM + lane_row * TM, b_base = warp_col * WN + lane_col * TN;
    const bool a_vector = K % 4 == 0, b_vector = N % 4 == 0;
    float acc[WMITER][WNITER][TM][TN] = {{{{0.0f}}}};
    float reg_m[WMITER][TM], reg_n[WNITER][TN];
    int stage = 0;
    if (STAGES == 2 && K > 0) {
        store_tiles<BM, BN, BK, NT, PITCH>(fetch_tiles<BM, BN, BK, NT, WHOLE>(M, N, K, A, B, row0, col0, 0, a_vector, b_vector),
                                           As, Bs);
        __syncthreads();
    }
    for (int k0 = 0; k0 < K; k0 += BK) {
        Fetched<BM, BN, BK, NT> next;
        const bool more = STAGES == 2 && k0 + BK < K;
        if (more) next = fetch_tiles<BM, BN, BK, NT, WHOLE>(M, N, K, A, B, row0, col0, k0 + BK, a_vector, b_vector);
        if (STAGES == 1) {
            store_tiles<BM, BN, BK, NT, PITCH>(
                fetch_tiles<BM, BN, BK, NT, WHOLE>(M, N, K, A, B, row0, col0, k0, a_vector, b_vector), As, Bs);
            __syncthreads();
        }
        const float* as = As + stage * BK * PITCH;
        const float* bs = Bs + stage * BK * BN;
#pragma unroll
        for (int dot = 0; dot < BK; ++dot) {
#pragma unroll
            for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
                for (int i = 0; i < TM; i += 4)
                    *reinterpret_cast<float4*>(&reg_m[wm][i]) =
                        *reinterpret_cast<const float4*>(&as[dot * PITCH + a_base + wm * WSUBM + i]);
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
                for (int j = 0; j < TN; j += 4)
                    *reinterpret_cast<float4*>(&reg_n[wn][j]) =
                        *reinterpret_cast<const float4*>(&bs[dot * BN + b_base + wn * WSUBN + j]);
#pragma unroll
            for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
                for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
                    for (int i = 0; i < TM; ++i)
#pragma unroll
                        for (int j = 0; j < TN; ++j)
                            acc[wm][wn][i][j] = fmaf(reg_m[wm][i], reg_n[wn][j], acc[wm][wn][i][j]);
        }
        if (more) {
            stage ^= 1;
            store_tiles<BM, BN, BK, NT, PITCH>(next, As + stage * BK * PITCH, Bs + stage * BK * BN);
        }
        __syncthreads();
    }
#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
        for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
            for (int i = 0; i < TM; ++i) {
                const int row = row0 + a_base + wm * WSUBM + i;
#pragma unroll
                for (int j = 0; j < TN; j += 4)
                    store4(C, M, N, row, col0 + b_base + wn * WSUBN + j,
                           make_float4(acc[wm][wn][i][j], acc[wm][wn][i][j + 1], acc[wm][wn][i][j + 2],
                                       acc[wm][wn][i][j + 3]),
                           b_vector);
            }
}

extern "C" __global__ void sgemm_warptile(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
    warptile<128, 128, 16, 64, 64, 4, 8, 4, 128, 1>(M, N, K, A, B, C);
}

extern "C" __global__ void sgemm_pipeline_128x128x16(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
    warptile<128, 128, 16, 64, 64, 4, 8, 4, 128, 2>(M, N, K, A, B, C);
}

extern "C" __global__ void sgemm_pipeline_128x128x8(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
    warptile<128, 128, 8, 64, 32, 2, 8, 4, 256, 2>(M, N, K, A, B, C);
}

// Two blocks of 256 per SM, as the Rust kernel's 127 registers allow (ptxas 12.8
// takes 129 without the bound, and one block).
extern "C" __global__ void __launch_bounds__(256, 2) sgemm_pipeline_128x128x8_4x8(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
    warptile<128, 128, 8, 64, 32, 1, 4, 8, 256, 2>(M, N, K, A, B, C);
}

// interior: blocks wholly inside C with every K tile full take an unguarded copy of
// the loop.
extern "C" __global__ void __launch_bounds__(256, 2) sgemm_interior(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
    const bool whole = (blockIdx.y + 1) * 128 <= M && (blockIdx.x + 1) * 128 <= N && K % 8 == 0 && N % 4 == 0;
    if (whole)
        warptile<128, 128, 8, 64, 32, 1, 4, 8, 256, 2, true>(M, N, K, A, B, C);
    else
        warptile<128, 128, 8, 64, 32, 1, 4, 8, 256, 2>(M, N, K, A, B, C);
}

extern "C" __global__ void sgemm_pipeline_128x64x16(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
    warptile<128, 64, 16, 64, 32, 2, 8, 4, 128, 2>(M, N, K, A, B, C);
}

// One stage's BK k steps of a warp-tiled block: each thread's fragments of the
// transposed A tile (as) and of B's (bs) as float4 shared loads, then the outer
// products of every sub-tile pair (as warptile's loop body).
template <int BN, int BK, int WMITER, int WNITER, int TM, int TN, int PITCH>
__device__ __forceinline__ void compute_stage(float (&acc)[WMITER][WNITER][TM][TN], const float* as, const float* bs,
                                              int a_base, int b_base, int WSUBM, int WSUBN) {
    float reg_m[WMITER][TM], reg_n[WNITER][TN];
#pragma unroll
    for (int dot = 0; dot < BK; ++dot) {
#pragma unroll
        for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
            for (int i = 0; i < TM; i += 4)
                *reinterpret_cast<float4*>(&reg_m[wm][i]) =
                    *reinterpret_cast<const float4*>(&as[dot * PITCH + a_base + wm * WSUBM + i]);
#pragma unroll
        for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
            for (int j = 0; j < TN; j += 4)
                *reinterpret_cast<float4*>(&reg_n[wn][j]) =
                    *reinterpret_cast<const float4*>(&bs[dot * BN + b_base + wn * WSUBN + j]);
#pragma unroll
        for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
                for (int i = 0; i < TM; ++i)
#pragma unroll
                    for (int j = 0; j < TN; ++j)
                        acc[wm][wn][i][j] = fmaf(reg_m[wm][i], reg_n[wn][j], acc[wm][wn][i][j]);
    }
}

// A warp-tiled thread's outputs to C, from its first row and column (sub-tile 0, 0).
template <int WMITER, int WNITER, int TM, int TN>
__device__ __forceinline__ void store_c(float* __restrict__ C, int M, int N, const float (&acc)[WMITER][WNITER][TM][TN],
                                        int row, int col, int WSUBM, int WSUBN, bool vector) {
#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
        for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; j += 4)
                    store4(C, M, N, row + wm * WSUBM + i, col + wn * WSUBN + j,
                           make_float4(acc[wm][wn][i][j], acc[wm][wn][i][j + 1], acc[wm][wn][i][j + 2],
                                       acc[wm][wn][i][j + 3]),
                           vector);
}

// 8. async: STAGES shared stages filled by cp.async (sm_80 and later), written as CUDA
// programmers write it, inline PTX as in CUTLASS's cp_async_zfill: a source size of 0
// zero-fills an element outside the matrix. Compiled for an older architecture (the
// baseline twins) the copies trap; the host compiles this file again for compute_80
// for these kernels, as it builds their Rust side as a second module for sm_80.
__device__ __forceinline__ void cp_async4(float* smem, const float* gmem, bool valid) {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(static_cast<unsigned>(__cvta_generic_to_shared(smem))),
                 "l"(gmem), "r"(valid ? 4 : 0));
#else
    __trap();
#endif
}

__device__ __forceinline__ void cp_async16(float* smem, const float* gmem, bool valid) {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(static_cast<unsigned>(__cvta_generic_to_shared(smem))),
                 "l"(gmem), "r"(valid ? 16 : 0));
#else
    __trap();
#endif
}

__device__ __forceinline__ void cp_async_commit() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}

template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

// Tiles 0..STAGES-2 are issued up front, one commit group each; at tile t, wait until
// at most STAGES - 2 groups are in flight, then one barrier (tile t visible to all,
// tile t - 1's stage free), issue tile t + STAGES - 1 into that stage, compute tile t.
template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int NT, int STAGES>
__device__ __forceinline__ void async_warptile(int M, int N, int K, const float* __restrict__ A,
                                               const float* __restrict__ B, float* __restrict__ C) {
    constexpr int PITCH = BM + 4;
    constexpr int WMITER = (WM * WN) / (32 * TM * TN * WNITER);
    constexpr int WSUBM = WM / WMITER, WSUBN = WN / WNITER;
    __shared__ __align__(16) float As[STAGES * BK * PITCH];
    __shared__ __align__(16) float Bs[STAGES * BK * BN];
    const int tid = threadIdx.x;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int warp = tid / 32, lane = tid % 32;
    const int warp_row = warp / (BN / WN), warp_col = warp % (BN / WN);
    const int lane_row = lane / (WSUBN / TN), lane_col = lane % (WSUBN / TN);
    const int a_base = warp_row * WM + lane_row * TM, b_base = warp_col * WN + lane_col * TN;
    const bool b_vector = N % 4 == 0;
    float acc[WMITER][WNITER][TM][TN] = {{{{0.0f}}}};
    auto issue = [&](int s, int k0) {
        float* as = As + s * BK * PITCH;
        float* bs = Bs + s * BK * BN;
#pragma unroll
        for (int i = 0; i < BM * BK / NT; ++i) {
            const int r = tid / BK + i * (NT / BK), c = tid % BK;
            const int row = row0 + r, col = k0 + c;
            const bool valid = row < M && col < K;
            cp_async4(&as[c * PITCH + r], valid ? &A[row * K + col] : A, valid);
        }
#pragma unroll
        for (int i = 0; i < BK * BN / 4 / NT; ++i) {
            const int r = tid / (BN / 4) + i * (NT / (BN / 4)), c = tid % (BN / 4) * 4;
            const int row = k0 + r, col = col0 + c;
            float* dst = &bs[r * BN + c];
            if (b_vector) {
                const bool valid = row < K && col < N;
                cp_async16(dst, valid ? &B[row * N + col] : B, valid);
            } else {
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    const bool valid = row < K && col + q < N;
                    cp_async4(dst + q, valid ? &B[row * N + col + q] : B, valid);
                }
            }
        }
    };
    const int tiles = (K + BK - 1) / BK;
#pragma unroll
    for (int t = 0; t < STAGES - 1; ++t) {
        if (t < tiles) issue(t, t * BK);
        cp_async_commit();
    }
    int read = 0, write = STAGES - 1;
    for (int t = 0; t < tiles; ++t) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        if (t + STAGES - 1 < tiles) issue(write, (t + STAGES - 1) * BK);
        cp_async_commit();
        compute_stage<BN, BK, WMITER, WNITER, TM, TN, PITCH>(acc, As + read * BK * PITCH, Bs + read * BK * BN, a_base,
                                                             b_base, WSUBM, WSUBN);
        read = read + 1 == STAGES ? 0 : read + 1;
        write = write + 1 == STAGES ? 0 : write + 1;
    }
    store_c<WMITER, WNITER, TM, TN>(C, M, N, acc, row0 + a_base, col0 + b_base, WSUBM, WSUBN, b_vector);
}

// Two blocks of 256 per SM, as the Rust kernel's 128 registers allow: without the
// bound NVRTC takes 157 registers and one block.
extern "C" __global__ void __launch_bounds__(256, 2) sgemm_async_128x128x8(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
    async_warptile<128, 128, 8, 64, 32, 2, 8, 4, 256, 3>(M, N, K, A, B, C);
}

extern "C" __global__ void sgemm_async_128x256x8(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
    async_warptile<128, 256, 8, 64, 64, 2, 4, 8, 256, 3>(M, N, K, A, B, C);
}
// 9. tf32: TF32 tensor cores (sm_80 and later) over the async rung's cp.async stages,
// inline PTX mma.sync and ldmatrix as CUDA programmers write them without CUTLASS. A
// warp owns 64 x 64 of C: 4 x 8 mma tiles of 16 x 8, 128 accumulators per lane. A's
// tile is row-major, rows padded to BK + 4 floats (ldmatrix rows spread over the
// banks); B's is k x n, rows padded to BN + 8, and each float4 a lane reads serves
// four mma tiles: tile q of a group of four takes columns q, q + 4, ... of 32, so a
// lane's outputs of a row are 8 consecutive columns (two float4 stores). Inputs are
// rounded to TF32 by adding half a TF32 ulp to the bits (the tensor cores drop the 13
// low bits): cvt.rna.tf32.f32 for every finite input, in one add that can write
// straight into mma's B register pairs. The stages (> 48 KiB) are dynamic shared
// memory; the host opts each kernel in before launching it.
__device__ __forceinline__ unsigned to_tf32(float x) { return __float_as_uint(x) + 0x1000u; }

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const float* smem) {
#if __CUDA_ARCH__ >= 800
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(static_cast<unsigned>(__cvta_generic_to_shared(smem))));
#else
    __trap();
#endif
}

__device__ __forceinline__ void mma_tf32(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
#if __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    __trap();
#endif
}

// VECTOR: tiles copied by 16-byte cp.async (K % 4 == 0 and N % 4 == 0), else by 4-byte
// ones; a template parameter, so each version's loop holds one kind of copy.
template <int BM, int BN, int BK, int WM, int WN, int STAGES, int NT, int COPY_STEPS, bool VECTOR>
__device__ __forceinline__ void tf32_gemm(int M, int N, int K, const float* __restrict__ A,
                                          const float* __restrict__ B, float* __restrict__ C) {
    constexpr int AP = BK + 4, BP = BN + 8, MT = WM / 16, NG = WN / 32, KSTEPS = BK / 8;
    constexpr int A_STAGE = BM * AP, B_STAGE = BK * BP;
    static_assert(KSTEPS % 2 == 0, "the fragments' double buffer alternates within a tile");
    extern __shared__ __align__(16) float smem[];
    float* As = smem;
    float* Bs = smem + STAGES * A_STAGE;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int warp_row = warp / (BN / WN) * WM, warp_col = warp % (BN / WN) * WN;
    // ldmatrix: matrix j = lane / 8 is rows 8 (j % 2).. and columns 4 (j / 2).. of a 16 x 8 tile.
    const int a_lane = (warp_row + lane % 8 + 8 * (lane / 8 % 2)) * AP + 4 * (lane / 16);
    const int b_lane = t * BP + warp_col + 4 * g;
    float acc[MT][NG][4][4] = {};
    // Part `part` of `parts` of the copies of the tile at k0 into stage s (chunk i of
    // a thread's n in part i * parts / n).
    auto issue = [&](int s, int k0, int part, int parts) {
        float* as = As + s * A_STAGE;
        float* bs = Bs + s * B_STAGE;
#pragma unroll
        for (int i = 0; i < BM * BK / 4 / NT; ++i) {
            if (i * parts / (BM * BK / 4 / NT) != part) continue;
            const int id = tid + i * NT, r = id / (BK / 4), c = id % (BK / 4) * 4;
            const int row = row0 + r, col = k0 + c;
            if constexpr (VECTOR) {
                const bool valid = row < M && col < K;
                cp_async16(&as[r * AP + c], valid ? &A[row * K + col] : A, valid);
            } else {
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    const bool valid = row < M && col + q < K;
                    cp_async4(&as[r * AP + c + q], valid ? &A[row * K + col + q] : A, valid);
                }
            }
        }
#pragma unroll
        for (int i = 0; i < BK * BN / 4 / NT; ++i) {
            if (i * parts / (BK * BN / 4 / NT) != part) continue;
            const int id = tid + i * NT, r = id / (BN / 4), c = id % (BN / 4) * 4;
            const int row = k0 + r, col = col0 + c;
            if constexpr (VECTOR) {
                const bool valid = row < K && col < N;
                cp_async16(&bs[r * BP + c], valid ? &B[row * N + col] : B, valid);
            } else {
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    const bool valid = row < K && col + q < N;
                    cp_async4(&bs[r * BP + c + q], valid ? &B[row * N + col + q] : B, valid);
                }
            }
        }
    };
    // One k step's fragments of stage s, rounded to TF32.
    auto load = [&](unsigned (&fa)[MT][4], unsigned (&fb)[NG][4][2], int s, int step) {
        const float* as = As + s * A_STAGE + a_lane + 8 * step;
        const float* bs = Bs + s * B_STAGE + b_lane + 8 * step * BP;
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
            ldmatrix_x4(fa[mt], as + 16 * mt * AP);
#pragma unroll
            for (int i = 0; i < 4; ++i) fa[mt][i] += 0x1000u;  // to_tf32 of the bits ldmatrix loaded
        }
#pragma unroll
        for (int grp = 0; grp < NG; ++grp) {
            const float4 lo = *reinterpret_cast<const float4*>(bs + 32 * grp);
            const float4 hi = *reinterpret_cast<const float4*>(bs + 32 * grp + 4 * BP);
            fb[grp][0][0] = to_tf32(lo.x), fb[grp][0][1] = to_tf32(hi.x);
            fb[grp][1][0] = to_tf32(lo.y), fb[grp][1][1] = to_tf32(hi.y);
            fb[grp][2][0] = to_tf32(lo.z), fb[grp][2][1] = to_tf32(hi.z);
            fb[grp][3][0] = to_tf32(lo.w), fb[grp][3][1] = to_tf32(hi.w);
        }
    };
    const int tiles = (K + BK - 1) / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < tiles) issue(s, s * BK, 0, 1);
        cp_async_commit();
    }
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    unsigned fa[2][MT][4], fb[2][NG][4][2];
    load(fa[0], fb[0], 0, 0);
    // The stage being read, and the one being filled (free since the last barrier):
    // the tile STAGES - 1 ahead, a share of its copies at each of COPY_STEPS k steps.
    int read = 0, fill = STAGES - 1;
    for (int tile = 0; tile < tiles; ++tile) {
#pragma unroll
        for (int step = 0; step < KSTEPS; ++step) {
            const int cur = step % 2, next = (step + 1) % 2;
            // Past the last tile the copies zero-fill (their sources lie outside A and B).
            constexpr int EVERY = KSTEPS / COPY_STEPS;
            if (step % EVERY == 0) issue(fill, (tile + STAGES - 1) * BK, step / EVERY, COPY_STEPS);
            if (step + 1 < KSTEPS) {
                load(fa[next], fb[next], read, step + 1);
            } else {
                // This tile is all in registers: wait for the next one, then free its stage.
                cp_async_commit();
                cp_async_wait<STAGES - 2>();
                __syncthreads();
                fill = read;
                read = read + 1 == STAGES ? 0 : read + 1;
                load(fa[next], fb[next], read, 0);
            }
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                for (int grp = 0; grp < NG; ++grp)
#pragma unroll
                    for (int q = 0; q < 4; ++q) mma_tf32(acc[mt][grp][q], fa[cur][mt], fb[cur][grp][q]);
        }
    }
    // Lane (g, t): rows g and g + 8 of each 16-row tile, columns 8t.. of each 32.
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const int row = row0 + warp_row + 16 * mt + 8 * half + g;
#pragma unroll
            for (int grp = 0; grp < NG; ++grp) {
                const int col = col0 + warp_col + 32 * grp + 8 * t;
                const float(&d)[4][4] = acc[mt][grp];
                const int lo = 2 * half, hi = 2 * half + 1;
                store4(C, M, N, row, col, make_float4(d[0][lo], d[1][lo], d[2][lo], d[3][lo]), N % 4 == 0);
                store4(C, M, N, row, col + 4, make_float4(d[0][hi], d[1][hi], d[2][hi], d[3][hi]), N % 4 == 0);
            }
        }
}

extern "C" __global__ void __launch_bounds__(128) sgemm_tf32_128x128x32(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
    if (K % 4 == 0 && N % 4 == 0) tf32_gemm<128, 128, 32, 64, 64, 3, 128, 2, true>(M, N, K, A, B, C);
    else tf32_gemm<128, 128, 32, 64, 64, 3, 128, 2, false>(M, N, K, A, B, C);
}

extern "C" __global__ void __launch_bounds__(256) sgemm_tf32_128x256x32(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
    if (K % 4 == 0 && N % 4 == 0) tf32_gemm<128, 256, 32, 64, 64, 3, 256, 4, true>(M, N, K, A, B, C);
    else tf32_gemm<128, 256, 32, 64, 64, 3, 256, 4, false>(M, N, K, A, B, C);
}

// 11. wgmma (sm_90a): the Hopper rungs, their bodies in sgemm_hopper.cuh.
#include "sgemm_hopper.cuh"

extern "C" __global__ void __launch_bounds__(256, 1) sgemm_wgmma(int m, int n, int k, const TensorMap* a, const TensorMap* b, float* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    wgmma_plain<256, 4>(m, n, k, a, b, c);
#endif
}

extern "C" __global__ void __launch_bounds__(384, 1) sgemm_wgmma_ws(int m, int n, int k, const TensorMap* a, const TensorMap* b, float* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    wgmma_ws<256, 4, false>(m, n, k, a, b, c);
#endif
}

extern "C" __global__ void __launch_bounds__(384, 1) sgemm_wgmma_ws_192(int m, int n, int k, const TensorMap* a, const TensorMap* b, float* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    wgmma_ws<192, 5, false>(m, n, k, a, b, c);
#endif
}

extern "C" __global__ void __launch_bounds__(384, 1) sgemm_wgmma_ws_128(int m, int n, int k, const TensorMap* a, const TensorMap* b, float* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    wgmma_ws<128, 6, false>(m, n, k, a, b, c);
#endif
}

extern "C" __global__ void __launch_bounds__(384, 1) sgemm_wgmma_ws_64(int m, int n, int k, const TensorMap* a, const TensorMap* b, float* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    wgmma_ws<64, 8, false>(m, n, k, a, b, c);
#endif
}

extern "C" __global__ void __launch_bounds__(384, 1) sgemm_wgmma_cluster(int m, int n, int k, const TensorMap* a, const TensorMap* b, float* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    wgmma_ws<256, 4, true>(m, n, k, a, b, c);
#endif
}

extern "C" __global__ void __launch_bounds__(384, 1) sgemm_wgmma_tma_store(int m, int n, int k, const TensorMap* a, const TensorMap* b, const TensorMap* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    wgmma_tma_store<256, 4>(m, n, k, a, b, c);
#endif
}
