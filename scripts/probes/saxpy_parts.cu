// Probe (evidence for docs/perf-notes.md, not part of the suite): what makes
// saxpy/f32x4-strided slower than `explain` predicts from calibrate's pitch sweep?
//   1. saxpy/f32x4-strided's loop (2^26 floats, a 4096-row column-major walk of float4s,
//      grid-stride over 33792 blocks on 132 SMs) split into its streams: x's gather alone,
//      y's update alone, both loads without the store, and both arrays updated; y placed
//      at several distances from x (a DRAM bank or power-of-two effect would show there).
//   2. The sweep's own walk (lane l of a warp on row r + l, rows one pitch apart) at the
//      sweep's pitch and span, one thread per float4 as calibrate's pitch kernels run it,
//      and as a grid-stride loop of 2, 4 and 16 iterations, and of one wave of blocks.
// Run by `scripts/gpu-run.sh probes`.
#include "probe.h"

enum Saxpy { SAXPY, GATHER_X, UPDATE_Y, LOAD_BOTH, UPDATE_BOTH };
template <Saxpy M>
__global__ void strided(size_t n, float a, float4* x, float4* y, float* sink) {
  size_t n4 = n / 4, cols = (n4 + 4095) / 4096;
  float acc = 0.f;
  for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < 4096 * cols; j += (size_t)gridDim.x * blockDim.x) {
    size_t i = (j % 4096) * cols + j / 4096;
    if (i >= n4) continue;
    if (M == SAXPY) { float4 p = x[i], q = y[i]; y[i] = make_float4(a * p.x + q.x, a * p.y + q.y, a * p.z + q.z, a * p.w + q.w); }
    if (M == GATHER_X) { float4 p = x[i]; acc += p.x + p.w; }
    if (M == UPDATE_Y) { float4 q = y[i]; y[i] = make_float4(a * q.x, q.y, q.z, q.w); }
    if (M == LOAD_BOTH) { float4 p = x[i], q = y[i]; acc += p.x + q.w; }
    if (M == UPDATE_BOTH) { float4 p = x[i], q = y[i]; x[i] = make_float4(a * p.x, p.y, p.z, p.w); y[i] = make_float4(a * q.x, q.y, q.z, q.w); }
  }
  // Never true for the zeros the buffers hold; keeps the loads.
  if (acc == 1234.5f) sink[0] = acc;
}

// The pitch sweep's walk: thread g on float4 (g mod rows, g / rows) of a rows x pitch view.
enum Walk { GATHER_SUM, UPDATE, GATHER };
template <Walk M>
__global__ void walk(int rows_log2, size_t pitch, size_t cols, float4* src, float* out, float* sink) {
  size_t total = cols << rows_log2;
  float acc = 0.f;
  for (size_t g = blockIdx.x * (size_t)blockDim.x + threadIdx.x; g < total; g += (size_t)gridDim.x * blockDim.x) {
    size_t at = (g & ((1ull << rows_log2) - 1)) * pitch + (g >> rows_log2);
    float4 v = src[at];
    if (M == GATHER_SUM) out[g] = v.x + v.y + v.z + v.w;  // calibrate's pitch_read
    if (M == UPDATE) src[at] = make_float4(2 * v.x - 1, 2 * v.y - 1, 2 * v.z - 1, 2 * v.w - 1);  // pitch_update
    if (M == GATHER) acc += v.x + v.w;
  }
  if (acc == 1234.5f) sink[0] = acc;
}

int main(int argc, char** argv) {
  probe_init(argc, argv);
  cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, 0));
  printf("%s: 10 launches after 2, mean time\n", p.name);
  size_t span = (size_t)1 << 30;
  float *a, *b, *sink;
  CK(cudaMalloc(&a, span)); CK(cudaMalloc(&b, span)); CK(cudaMalloc(&sink, 64));
  CK(cudaMemset(a, 0, span)); CK(cudaMemset(b, 0, span));

  size_t n = (size_t)1 << 26;
  int wave = p.multiProcessorCount * (p.maxThreadsPerMultiProcessor / 256);
  int grid = wave * 32;  // saxpy's grid-stride grid: 33792 on 132 SMs
  float memcpy_us = time_us([&] { CK(cudaMemcpyAsync(b, a, n * 4, cudaMemcpyDeviceToDevice)); });
  printf("1. saxpy/f32x4-strided's loop, n = 2^26 floats (256 MiB an array), grid %d; cudaMemcpy of 256 MiB %.1f us\n", grid, memcpy_us);
  for (size_t gap : {(size_t)256 << 20, ((size_t)257 << 20) + 4096, (size_t)512 << 20}) {
    float4* x = (float4*)a;
    float4* y = (float4*)((char*)a + gap);
    float t[5];
    t[0] = time_us([&] { strided<SAXPY><<<grid, 256>>>(n, 1.f, x, y, sink); });
    t[1] = time_us([&] { strided<GATHER_X><<<grid, 256>>>(n, 1.f, x, y, sink); });
    t[2] = time_us([&] { strided<UPDATE_Y><<<grid, 256>>>(n, 1.f, x, y, sink); });
    t[3] = time_us([&] { strided<LOAD_BOTH><<<grid, 256>>>(n, 1.f, x, y, sink); });
    t[4] = time_us([&] { strided<UPDATE_BOTH><<<grid, 256>>>(n, 1.f, x, y, sink); });
    printf("   y - x = %4zu MiB + %4zu B: saxpy %7.1f us (%4.1f%% of copy); x's gather %6.1f + y's update %6.1f = %6.1f (saxpy / sum %.3f); both loads %6.1f; both updated %6.1f\n",
           gap >> 20, gap & ((1 << 20) - 1), t[0], 100.0 * 1.5 * memcpy_us / t[0], t[1], t[2], t[1] + t[2], t[0] / (t[1] + t[2]), t[3], t[4]);
  }
  printf("2. the sweep's walk, time (and against one thread per float4)\n");
  for (size_t pitch_b : {(size_t)16384, (size_t)65536}) {
    for (size_t span_b : {(size_t)256 << 20, (size_t)1 << 30}) {
      size_t pitch = pitch_b / 16, rows = span_b / pitch_b;
      int rows_log2 = 0;
      while (((size_t)1 << rows_log2) < rows) rows_log2++;
      size_t cols = pitch;
      int one = (int)((cols * rows) / 256);
      for (Walk m : {GATHER_SUM, UPDATE, GATHER}) {
        printf("   pitch %2zu KiB, span %4zu MiB, %-20s", pitch_b >> 10, span_b >> 20,
               m == GATHER_SUM ? "gather, sum stored" : m == UPDATE ? "update" : "gather, nothing stored");
        float t1 = 0;
        for (int iters : {1, 2, 4, 16, 0}) {
          int g = iters ? one / iters : wave;
          float t = time_us([&] {
            if (m == GATHER_SUM) walk<GATHER_SUM><<<g, 256>>>(rows_log2, pitch, cols, (float4*)a, b, sink);
            if (m == UPDATE) walk<UPDATE><<<g, 256>>>(rows_log2, pitch, cols, (float4*)a, b, sink);
            if (m == GATHER) walk<GATHER><<<g, 256>>>(rows_log2, pitch, cols, (float4*)a, b, sink);
          }, 5);
          if (iters == 1) t1 = t;
          printf(" | %s %7.1f us (%.2f)", iters == 1 ? "1 a thread" : iters == 2 ? "2 iterations" : iters == 4 ? "4 iterations" : iters == 16 ? "16 iterations" : "one wave", t, t / t1);
        }
        printf("\n");
      }
    }
  }
  return 0;
}
