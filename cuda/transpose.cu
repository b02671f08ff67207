// CUDA C++ twins of kernels/src/transpose.rs: the same algorithm, signature and
// launch, compiled at run time by NVRTC and run by `coalesce compare` on the same
// buffers. out (cols x rows) = in (rows x cols)^T, row-major; blocks of 32 x 8
// threads, each thread handling 4 rows of a 32 x 32 tile.

// size_t, as Rust's usize: tile coordinates are computed in 64 bits, as there.
constexpr size_t TILE = 32;
constexpr size_t BLOCK_ROWS = 8;

// Naive, strided write: coalesced read of an input row, written down an output column.
extern "C" __global__ void transpose_naive_write(size_t rows, size_t cols, const float* src, float* dst) {
    size_t x = blockIdx.x * TILE + threadIdx.x;
    size_t y = blockIdx.y * TILE + threadIdx.y;
    for (size_t k = 0; k < TILE / BLOCK_ROWS; ++k) {
        size_t yk = y + k * BLOCK_ROWS;
        if (x < cols && yk < rows) {
            dst[x * rows + yk] = __ldg(&src[yk * cols + x]);
        }
    }
}

// Naive, strided read: coalesced write of an output row, read down an input column.
extern "C" __global__ void transpose_naive_read(size_t rows, size_t cols, const float* src, float* dst) {
    size_t x = blockIdx.x * TILE + threadIdx.x;
    size_t y = blockIdx.y * TILE + threadIdx.y;
    for (size_t k = 0; k < TILE / BLOCK_ROWS; ++k) {
        size_t yk = y + k * BLOCK_ROWS;
        if (x < rows && yk < cols) {
            dst[yk * rows + x] = __ldg(&src[x * cols + yk]);
        }
    }
}

// Both global accesses coalesced through a shared tile of PITCH floats per row.
template <size_t PITCH>
__device__ __forceinline__ void through_tile(float (*tile)[PITCH], size_t rows, size_t cols,
                                             const float* src, float* dst) {
    size_t tx = threadIdx.x, ty = threadIdx.y;
    size_t bx = blockIdx.x * TILE, by = blockIdx.y * TILE;
    for (size_t k = 0; k < TILE / BLOCK_ROWS; ++k) {
        size_t j = ty + k * BLOCK_ROWS;
        size_t x = bx + tx, y = by + j;
        if (x < cols && y < rows) {
            tile[j][tx] = __ldg(&src[y * cols + x]);
        }
    }
    __syncthreads();
    for (size_t k = 0; k < TILE / BLOCK_ROWS; ++k) {
        size_t j = ty + k * BLOCK_ROWS;
        size_t x = by + tx, y = bx + j;
        if (x < rows && y < cols) {
            dst[y * rows + x] = tile[tx][j];
        }
    }
}

// Tiled: the column read of the 32 x 32 tile is a 32-way bank conflict.
extern "C" __global__ void transpose_tiled(size_t rows, size_t cols, const float* src, float* dst) {
    __shared__ float tile[TILE][TILE];
    through_tile<TILE>(tile, rows, cols, src, dst);
}

// Tiled and padded: rows of 33 floats spread a tile column over all 32 banks.
extern "C" __global__ void transpose_tiled_padded(size_t rows, size_t cols, const float* src, float* dst) {
    __shared__ float tile[TILE][TILE + 1];
    through_tile<TILE + 1>(tile, rows, cols, src, dst);
}

// Tuned for the copy ceiling: the padded tile with more bytes in flight.

constexpr size_t TILE64 = 64;

// The padded 64 x 64 tile with input corner (by, bx), 32 x 8 threads: 16 elements per
// thread, all loaded first.
__device__ __forceinline__ void padded_64(float (*tile)[TILE64 + 1], size_t bx, size_t by, size_t rows,
                                          size_t cols, const float* __restrict__ src, float* __restrict__ dst) {
    constexpr size_t K = TILE64 / BLOCK_ROWS, C = TILE64 / TILE;
    size_t tx = threadIdx.x, ty = threadIdx.y;
    float v[K][C];
    for (size_t k = 0; k < K; ++k) {
        for (size_t c = 0; c < C; ++c) {
            size_t x = bx + tx + c * TILE, y = by + ty + k * BLOCK_ROWS;
            v[k][c] = (x < cols && y < rows) ? __ldg(&src[y * cols + x]) : 0.0f;
        }
    }
    for (size_t k = 0; k < K; ++k) {
        for (size_t c = 0; c < C; ++c) {
            tile[ty + k * BLOCK_ROWS][tx + c * TILE] = v[k][c];
        }
    }
    __syncthreads();
    for (size_t k = 0; k < K; ++k) {
        for (size_t c = 0; c < C; ++c) {
            size_t i = tx + c * TILE, j = ty + k * BLOCK_ROWS;
            size_t x = by + i, y = bx + j;
            if (x < rows && y < cols) {
                dst[y * rows + x] = tile[i][j];
            }
        }
    }
}

// Blocks in row order: x along the input's columns of tiles.
extern "C" __global__ void transpose_padded_64(size_t rows, size_t cols, const float* __restrict__ src,
                                               float* __restrict__ dst) {
    __shared__ float tile[TILE64][TILE64 + 1];
    padded_64(tile, blockIdx.x * TILE64, blockIdx.y * TILE64, rows, cols, src, dst);
}

// Blocks in column order: x along the input's rows of tiles, so the resident blocks
// write whole output rows in order.
extern "C" __global__ void transpose_padded_64_cols(size_t rows, size_t cols, const float* __restrict__ src,
                                                    float* __restrict__ dst) {
    __shared__ float tile[TILE64][TILE64 + 1];
    padded_64(tile, blockIdx.y * TILE64, blockIdx.x * TILE64, rows, cols, src, dst);
}

constexpr size_t VEC_THREADS_X = 8, VEC_THREADS_Y = 32;

// Padded 64 x 64 tile, 8 x 32 threads, float4 global accesses (4 loads and 4 stores
// per thread) where rows are 16-byte aligned, four floats otherwise.
extern "C" __global__ void transpose_padded_64_f32x4(size_t rows, size_t cols, const float* __restrict__ src,
                                                     float* __restrict__ dst) {
    constexpr size_t ROW4 = TILE64 / 4;
    constexpr size_t PASSES = TILE64 * ROW4 / (VEC_THREADS_X * VEC_THREADS_Y);
    __shared__ float tile[TILE64][TILE64 + 1];
    size_t tx = threadIdx.x, ty = threadIdx.y;
    size_t bx = blockIdx.x * TILE64, by = blockIdx.y * TILE64;
    const float4* src4 = reinterpret_cast<const float4*>(src);
    float4* dst4 = reinterpret_cast<float4*>(dst);
    // Pass p covers tile rows (p / 2) * 32 + ty, float4 columns (p % 2) * 8 + tx.
    float4 v[PASSES];
    for (size_t p = 0; p < PASSES; ++p) {
        size_t j = (p / 2) * VEC_THREADS_Y + ty, c = (p % 2) * VEC_THREADS_X + tx;
        size_t x = bx + 4 * c, y = by + j;
        v[p] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (y < rows && x < cols) {
            if (cols % 4 == 0) {
                v[p] = __ldg(&src4[(y * cols + x) / 4]);
            } else {
                const float* row = &src[y * cols];
                v[p] = make_float4(__ldg(&row[x]), x + 1 < cols ? __ldg(&row[x + 1]) : 0.0f,
                                   x + 2 < cols ? __ldg(&row[x + 2]) : 0.0f, x + 3 < cols ? __ldg(&row[x + 3]) : 0.0f);
            }
        }
    }
    for (size_t p = 0; p < PASSES; ++p) {
        size_t j = (p / 2) * VEC_THREADS_Y + ty, c = (p % 2) * VEC_THREADS_X + tx;
        tile[j][4 * c] = v[p].x;
        tile[j][4 * c + 1] = v[p].y;
        tile[j][4 * c + 2] = v[p].z;
        tile[j][4 * c + 3] = v[p].w;
    }
    __syncthreads();
    // Pass p: output row r (input column bx + r), float4 c of it (input rows by + 4c ..).
    for (size_t p = 0; p < PASSES; ++p) {
        size_t r = (p / 2) * VEC_THREADS_Y + ty, c = (p % 2) * VEC_THREADS_X + tx;
        size_t x = by + 4 * c, y = bx + r;
        if (y < cols && x < rows) {
            if (rows % 4 == 0) {
                dst4[(y * rows + x) / 4] =
                    make_float4(tile[4 * c][r], tile[4 * c + 1][r], tile[4 * c + 2][r], tile[4 * c + 3][r]);
            } else {
                for (size_t q = 0; q < 4; ++q) {
                    if (x + q < rows) {
                        dst[y * rows + x + q] = tile[4 * c + q][r];
                    }
                }
            }
        }
    }
}

#include "hopper.cuh"

// tma: a 64 x 64 tile a block, loaded and stored by the copy engine as four 32 x 32
// boxes landed with the 128-byte swizzle; warp w transposes box (w / 2, w % 2) into box
// (w % 2, w / 2) with no bank conflict. Blocks go down the columns of tiles.
extern "C" __global__ void __launch_bounds__(128) transpose_tma(size_t rows, const TensorMap* src, const TensorMap* dst) {
#if __CUDA_ARCH__ >= 900
    extern __shared__ __align__(1024) float smem_raw[];
    // The swizzle's 1024-byte boundary.
    float* tiles = smem_raw + ((1024 - (shared_addr(smem_raw) & 1023)) & 1023) / 4;
    unsigned long long* bar = reinterpret_cast<unsigned long long*>(tiles + 2 * 64 * 64);
    size_t tile_rows = (rows + 63) / 64, t = blockIdx.x;
    int r0 = (int)(t % tile_rows * 64), c0 = (int)(t / tile_rows * 64);
    int tid = threadIdx.x;
    if (tid == 0) {
        bar_init(bar, 1);
        bar_fence_init();
        bar_arrive_expect_tx(bar, 64 * 64 * 4);
        for (int b = 0; b < 4; ++b) tma_load_2d(tiles + 1024 * b, src, bar, c0 + 32 * (b % 2), r0 + 32 * (b / 2));
    }
    __syncthreads();
    bar_wait(bar, 0);
    int w = tid / 32, lane = tid % 32;
    const float* from = tiles + 1024 * w;
    float* to = tiles + 64 * 64 + 1024 * (2 * (w % 2) + w / 2);
#pragma unroll
    for (int q = 0; q < 8; ++q) {
        float4 v = *reinterpret_cast<const float4*>(from + swizzled_128(lane, 4 * q));
        to[swizzled_128(4 * q, lane)] = v.x;
        to[swizzled_128(4 * q + 1, lane)] = v.y;
        to[swizzled_128(4 * q + 2, lane)] = v.z;
        to[swizzled_128(4 * q + 3, lane)] = v.w;
    }
    fence_proxy_async();
    __syncthreads();
    if (tid == 0) {
        for (int b = 0; b < 4; ++b) tma_store_2d(dst, tiles + 64 * 64 + 1024 * b, r0 + 32 * (b % 2), c0 + 32 * (b / 2));
        tma_commit();
        tma_wait_read0();
    }
#endif
}

// tma-dense: tma with one 64 x 64 box each way and no swizzle (256-byte rows); lane l
// reads row l's float4s in an order rotated by l and writes output row 4c + k at
// column l, so neither side has a bank conflict.
extern "C" __global__ void __launch_bounds__(128) transpose_tma_dense(size_t rows, const TensorMap* src, const TensorMap* dst) {
#if __CUDA_ARCH__ >= 900
    extern __shared__ __align__(1024) float smem_raw[];
    float* tiles = smem_raw + ((1024 - (shared_addr(smem_raw) & 1023)) & 1023) / 4;
    unsigned long long* bar = reinterpret_cast<unsigned long long*>(tiles + 2 * 64 * 64);
    size_t tile_rows = (rows + 63) / 64, t = blockIdx.x;
    int r0 = (int)(t % tile_rows * 64), c0 = (int)(t / tile_rows * 64);
    int tid = threadIdx.x;
    if (tid == 0) {
        bar_init(bar, 1);
        bar_fence_init();
    }
    __syncthreads();
    if (tid == 0) {
        bar_arrive_expect_tx(bar, 64 * 64 * 4);
        tma_load_2d(tiles, src, bar, c0, r0);
    }
    bar_wait(bar, 0);
    int w = tid / 32, lane = tid % 32, r = 32 * (w / 2) + lane;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        int c = (8 * (w % 2) + i + lane) % 16;
        float4 v = *reinterpret_cast<const float4*>(tiles + r * 64 + 4 * c);
        float* to = tiles + 64 * 64 + 4 * c * 64 + r;
        to[0] = v.x;
        to[64] = v.y;
        to[128] = v.z;
        to[192] = v.w;
    }
    fence_proxy_async();
    __syncthreads();
    if (tid == 0) {
        tma_store_2d(dst, tiles + 64 * 64, r0, c0);
        tma_commit();
        tma_wait_read0();
    }
#endif
}
