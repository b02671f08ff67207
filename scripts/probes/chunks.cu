// Probe (evidence for docs/perf-notes.md, not part of the suite): the tiled
// transposes lose 7% of copy on the H100 where a wave's writes spread over the whole
// matrix, and not through the length of the runs they come in (perf-notes, "the tiled
// transposes' gap is not a wave's runs"). Is it how far the runs spread (the 2 MiB
// pages a wave's writes touch)? A coalesced copy of 256 MiB, 16 bytes in flight a
// thread, whose output is cut into chunks placed P chunks apart: consecutive input
// chunks land P apart (the chunks taken as a transposed (n / P) x P grid). A wave of
// 1056 blocks of 4 KiB then writes runs of one chunk spread over P x 4.1 MiB: the run
// and the spread vary apart.
// Run by `scripts/gpu-run.sh probes`.
#include "probe.h"

// Float i of the input goes to float `placed(i)` of the output. Every size is a power of
// two, given as its log2, so the placement is shifts and masks (no division to slow the
// copy: the in-order row is the control).
__device__ __forceinline__ size_t placed(size_t i, int chunk, int group, int m) {
  size_t c = i >> chunk, o = i & ((size_t(1) << chunk) - 1);
  size_t g = c >> group, k = c & ((size_t(1) << group) - 1);
  size_t k2 = ((k & ((size_t(1) << m) - 1)) << (group - m)) + (k >> m);
  return (((g << group) + k2) << chunk) + o;
}

// Each block copies 4 runs of 256 consecutive floats (all loads before any store), as
// the suite's 16-byte copies do; a warp's 32 floats stay inside one chunk (>= 32 floats).
__global__ void copy_placed(const float* __restrict__ s, float* __restrict__ d, int chunk, int group, int m) {
  size_t base = (size_t)blockIdx.x * 1024 + threadIdx.x;
  float v[4];
#pragma unroll
  for (int k = 0; k < 4; k++) v[k] = s[base + k * 256];
#pragma unroll
  for (int k = 0; k < 4; k++) d[placed(base + k * 256, chunk, group, m)] = v[k];
}

int main(int argc, char** argv) {
  probe_init(argc, argv);
  cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, 0));
  printf("%s: copies of 256 MiB whose output chunks are placed in another order, against cudaMemcpy\n", p.name);
  size_t n = (size_t)64 << 20;
  float *a, *b;
  CK(cudaMalloc(&a, n * 4)); CK(cudaMalloc(&b, n * 4));
  CK(cudaMemset(a, 0, n * 4)); CK(cudaMemset(b, 0, n * 4));
  float memcpy_us = time_us([&] { CK(cudaMemcpyAsync(b, a, n * 4, cudaMemcpyDeviceToDevice)); });
  printf("%-58s %8.1f us %6.1f%% of memcpy\n", "cudaMemcpy", memcpy_us, 100.0);
  // (chunk bytes, P), powers of two; P x the wave's chunks stays within the array, so
  // no two chunks of a wave land side by side.
  struct Case { size_t chunk, apart; const char* what; };
  auto lg = [](size_t x) { int k = 0; while ((size_t(1) << k) < x) k++; return k; };
  const Case cases[] = {
      {1 << 28, 1, "in order"},
      {512, 2, "512 B runs, 2 apart: a wave over 8 MiB"},
      {512, 4, "512 B runs, 4 apart: a wave over 16 MiB"},
      {512, 32, "512 B runs, 32 apart: a wave over 132 MiB"},
      {4096, 2, "4 KiB runs, 2 apart: a wave over 8 MiB"},
      {4096, 32, "4 KiB runs, 32 apart: a wave over 132 MiB"},
      {64 << 10, 2, "64 KiB runs, 2 apart: a wave over 8 MiB"},
      {64 << 10, 32, "64 KiB runs, 32 apart: a wave over 132 MiB"},
  };
  for (const Case& c : cases) {
    int chunk = lg(c.chunk / 4), group = lg(n * 4 / c.chunk), m = group - lg(c.apart);
    float us = time_us([&] { copy_placed<<<n / 1024, 256>>>(a, b, chunk, group, m); });
    printf("%-58s %8.1f us %6.1f%% of memcpy\n", c.what, us, 100.0 * memcpy_us / us);
  }
  return 0;
}
