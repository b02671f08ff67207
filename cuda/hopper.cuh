// Hopper's asynchronous machinery for the CUDA C++ twins (sm_90; wgmma and setmaxnreg
// sm_90a), as hand-written Hopper kernels write it: inline PTX. The counterpart of the
// Rust kernel std's barrier, tma, wgmma and cluster modules; included by the twins that
// use it (NVRTC gets it as a header).
#pragma once

// A tensor map (CUtensorMap), made by the host and read from global memory. Declared
// for every architecture, as the kernels' signatures name it.
struct alignas(64) TensorMap {
    unsigned long long words[16];
};

#if __CUDA_ARCH__ >= 900

__device__ __forceinline__ unsigned shared_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// ---- transaction barriers (mbarrier)
__device__ __forceinline__ void bar_init(unsigned long long* bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(shared_addr(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void bar_fence_init() {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void bar_arrive(unsigned long long* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(shared_addr(bar)) : "memory");
}
__device__ __forceinline__ void bar_arrive_expect_tx(unsigned long long* bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_addr(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bar_arrive_cluster(unsigned long long* bar, unsigned rank) {
    asm volatile("{ .reg .b32 r; mapa.shared::cluster.u32 r, %0, %1; mbarrier.arrive.shared::cluster.b64 _, [r]; }"
                 ::"r"(shared_addr(bar)), "r"(rank) : "memory");
}
__device__ __forceinline__ void bar_wait(unsigned long long* bar, unsigned parity) {
    unsigned done;
    do {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done) : "r"(shared_addr(bar)), "r"(parity) : "memory");
    } while (!done);
}

// ---- the copy engine (TMA)
__device__ __forceinline__ void tma_load_1d(void* dst, const TensorMap* map, unsigned long long* bar, int c0) {
    asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3}], [%2];"
                 ::"r"(shared_addr(dst)), "l"(map), "r"(shared_addr(bar)), "r"(c0) : "memory");
}
__device__ __forceinline__ void tma_load_2d(void* dst, const TensorMap* map, unsigned long long* bar, int c0, int c1) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
                 ::"r"(shared_addr(dst)), "l"(map), "r"(shared_addr(bar)), "r"(c0), "r"(c1) : "memory");
}
__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const TensorMap* map, unsigned long long* bar, int c0,
                                                      int c1, unsigned short ctas) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%3, %4}], [%2], %5;"
        ::"r"(shared_addr(dst)), "l"(map), "r"(shared_addr(bar)), "r"(c0), "r"(c1), "h"(ctas) : "memory");
}
__device__ __forceinline__ void tma_store_1d(const TensorMap* map, const void* src, int c0) {
    asm volatile("cp.async.bulk.tensor.1d.global.shared::cta.bulk_group [%0, {%2}], [%1];"
                 ::"l"(map), "r"(shared_addr(src)), "r"(c0) : "memory");
}
__device__ __forceinline__ void tma_store_2d(const TensorMap* map, const void* src, int c0, int c1) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];"
                 ::"l"(map), "r"(shared_addr(src)), "r"(c0), "r"(c1) : "memory");
}
__device__ __forceinline__ void tma_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
__device__ __forceinline__ void tma_wait_read0() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
// The 128 threads of this thread's warpgroup meet (named barrier 1 + w; 0 is the block's).
__device__ __forceinline__ void sync_warpgroup() { asm volatile("bar.sync %0, 128;" ::"r"(1 + threadIdx.x / 128) : "memory"); }

// Blocks of one band of m tiles run together (tile_of).
constexpr int GROUP_M = 8;

// Block b's tile of C: bands of GROUP_M m tiles (twice that for tiles wider than tall),
// column tile by column tile.
__device__ __forceinline__ void tile_of(int b, int m, int n, int bm, int bn, int& m0, int& n0) {
    int group = bn > bm ? 2 * GROUP_M : GROUP_M;
    int tiles_m = (m + bm - 1) / bm, tiles_n = (n + bn - 1) / bn, per_band = group * tiles_n;
    int first = b / per_band * group, rows = min(tiles_m - first, group), within = b % per_band;
    m0 = (first + within % rows) * bm;
    n0 = within / rows * bn;
}

// Element (row, col) of a box of 32-float rows landed with the 128-byte swizzle.
__device__ __forceinline__ int swizzled_128(int row, int col) {
    return row * 32 + ((((col >> 2) ^ row) & 7) << 2) + (col & 3);
}

// ---- clusters
__device__ __forceinline__ unsigned cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

#endif
