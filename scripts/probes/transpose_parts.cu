// Probe (evidence for docs/perf-notes.md, not part of the suite): what makes a
// tiled transpose slower than a copy with the same bytes in flight per thread? Each part
// of transpose/tiled-padded alone, in CUDA C++ as nvcc compiles it, timed with events
// against cudaMemcpy at the same size:
//   - the tile's round trip (shared stores, a barrier, shared loads) on a plain copy;
//   - the tiles' placement: each 32 x 32 tile copied unchanged to the transposed tile's
//     place, through registers only (no shared memory, no barrier);
//   - which stream is cut into short runs: the writes (blocks walk the input by rows, as
//     the suite's transposes do), or the reads;
//   - whether it is the power-of-two row pitch: the same kernels with rows 32 floats
//     longer than N (so a wave's pieces of many rows do not start at addresses that
//     share their low bits), and the tiles taken in the diagonal order of NVIDIA's
//     transpose sample (its remedy for partition camping).
// Run by `scripts/gpu-run.sh probes`.
#include "probe.h"

// A coalesced copy, K floats per thread, all loaded before any is stored, 256 threads a
// block. TRIP: through shared memory and a barrier, each thread its own words.
template <int K, bool TRIP>
__global__ void copy_k(const float* __restrict__ s, float* __restrict__ d, size_t n) {
  __shared__ float t[TRIP ? K * 256 : 1];
  size_t base = (size_t)blockIdx.x * 256 * K + threadIdx.x;
  float v[K];
#pragma unroll
  for (int k = 0; k < K; k++) { size_t i = base + k * 256; v[k] = i < n ? s[i] : 0.f; }
  if (TRIP) {
#pragma unroll
    for (int k = 0; k < K; k++) t[k * 256 + threadIdx.x] = v[k];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < K; k++) v[k] = t[k * 256 + threadIdx.x];
  }
#pragma unroll
  for (int k = 0; k < K; k++) { size_t i = base + k * 256; if (i < n) d[i] = v[k]; }
}

// 32 x 32 tiles of an N x N matrix whose rows lie P floats apart (P = N, or more), 32 x 8
// threads, 4 rows a thread. Block (bx, by) reads tile (by, bx) (row, column) and writes:
enum Tile {
  SAME,        // tile (by, bx): a 2-D copy
  SWAP,        // tile (bx, by), unchanged inside: a transpose's placement, registers only
  SWAP_TRIP,   // the same through a padded shared tile and a barrier, unchanged inside
  TRANSPOSE,   // transpose/tiled-padded: through the padded tile, transposed inside
  SWAP_BY,     // SWAP with blockIdx.x walking tile rows: the reads come in short runs
  SWAP_DIAG,   // SWAP with the blocks in diagonal order: tile column (x + y) mod width
};
template <Tile T>
__global__ void tile(const float* __restrict__ s, float* __restrict__ d, int N, int P) {
  __shared__ float t[32][33];
  int bx = T == SWAP_BY ? blockIdx.y : blockIdx.x, by = T == SWAP_BY ? blockIdx.x : blockIdx.y;
  if (T == SWAP_DIAG) bx = (blockIdx.x + blockIdx.y) % gridDim.x;
  int tx = threadIdx.x, ty = threadIdx.y;
  float v[4];
#pragma unroll
  for (int j = 0; j < 4; j++) v[j] = s[(size_t)(by * 32 + ty + 8 * j) * P + bx * 32 + tx];
  if (T == SWAP_TRIP || T == TRANSPOSE) {
#pragma unroll
    for (int j = 0; j < 4; j++) t[ty + 8 * j][tx] = v[j];
    __syncthreads();
#pragma unroll
    for (int j = 0; j < 4; j++) v[j] = T == TRANSPOSE ? t[tx][ty + 8 * j] : t[ty + 8 * j][tx];
  }
  int ox = T == SAME ? bx : by, oy = T == SAME ? by : bx;
#pragma unroll
  for (int j = 0; j < 4; j++) d[(size_t)(oy * 32 + ty + 8 * j) * P + ox * 32 + tx] = v[j];
}

int main(int argc, char** argv) {
  probe_init(argc, argv);
  cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, 0));
  printf("%s: each kernel against cudaMemcpy of the same bytes, 10 launches after 2\n", p.name);
  size_t most = (size_t)16384 * (16384 + 32);
  float *a, *b;
  CK(cudaMalloc(&a, most * 4)); CK(cudaMalloc(&b, most * 4));
  CK(cudaMemset(a, 0, most * 4)); CK(cudaMemset(b, 0, most * 4));
  for (int N : {4096, 8192, 16384}) {
    size_t n = (size_t)N * N;
    float memcpy_us = time_us([&] { CK(cudaMemcpyAsync(b, a, n * 4, cudaMemcpyDeviceToDevice)); });
    auto row = [&](const char* what, float us) {
      printf("%5d^2  %-40s %8.1f us %7.1f GB/s %6.1f%% of memcpy\n", N, what, us, 8.0 * n / us / 1e3, 100.0 * memcpy_us / us);
    };
    row("cudaMemcpy", memcpy_us);
    row("copy, 4 B a thread", time_us([&] { copy_k<1, false><<<n / 256, 256>>>(a, b, n); }));
    row("copy, 4 B a thread, round trip", time_us([&] { copy_k<1, true><<<n / 256, 256>>>(a, b, n); }));
    row("copy, 16 B a thread", time_us([&] { copy_k<4, false><<<n / 1024, 256>>>(a, b, n); }));
    row("copy, 16 B a thread, round trip", time_us([&] { copy_k<4, true><<<n / 1024, 256>>>(a, b, n); }));
    row("copy, 32 B a thread", time_us([&] { copy_k<8, false><<<n / 2048, 256>>>(a, b, n); }));
    row("copy, 32 B a thread, round trip", time_us([&] { copy_k<8, true><<<n / 2048, 256>>>(a, b, n); }));
    dim3 g(N / 32, N / 32), t(32, 8);
    int P = N + 32;
    row("tiles in place (2-D copy)", time_us([&] { tile<SAME><<<g, t>>>(a, b, N, N); }));
    row("tiles swapped, registers", time_us([&] { tile<SWAP><<<g, t>>>(a, b, N, N); }));
    row("tiles swapped, round trip", time_us([&] { tile<SWAP_TRIP><<<g, t>>>(a, b, N, N); }));
    row("tiled-padded transpose", time_us([&] { tile<TRANSPOSE><<<g, t>>>(a, b, N, N); }));
    row("tiles swapped, registers, reads short", time_us([&] { tile<SWAP_BY><<<g, t>>>(a, b, N, N); }));
    row("tiles swapped, diagonal order", time_us([&] { tile<SWAP_DIAG><<<g, t>>>(a, b, N, N); }));
    row("tiles in place, rows N + 32 apart", time_us([&] { tile<SAME><<<g, t>>>(a, b, N, P); }));
    row("tiles swapped, rows N + 32 apart", time_us([&] { tile<SWAP><<<g, t>>>(a, b, N, P); }));
    row("tiled-padded, rows N + 32 apart", time_us([&] { tile<TRANSPOSE><<<g, t>>>(a, b, N, P); }));
  }
  return 0;
}
