// What every probe of scripts/probes shares: an error check and event timing.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <string>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("error: %s at line %d\n", cudaGetErrorString(e), __LINE__); exit(1); } } while (0)

// `PROBE once` (for Nsight Compute): each kernel launched twice, timed once; otherwise
// the mean of `reps` launches after two.
static bool once = false;
static cudaEvent_t e0, e1;

static void probe_init(int argc, char** argv) {
  once = argc > 1 && std::string(argv[1]) == "once";
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
}

template <class F> float time_us(F f, int reps = 10) {
  if (once) reps = 1;
  f();
  if (!once) f();
  CK(cudaDeviceSynchronize());
  CK(cudaEventRecord(e0));
  for (int r = 0; r < reps; r++) f();
  CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1)); CK(cudaGetLastError());
  float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
  return ms / reps * 1000.f;
}
