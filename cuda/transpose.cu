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
