// The Hopper rungs of the sgemm twin (included by sgemm.cu): TMA-fed tiles multiplied
// by warpgroups (wgmma, sm_90a), written as hand-written Hopper GEMMs are: inline PTX.
// As in kernels/src/sgemm_hopper.rs, each block computes C^T tiles: B^T's fragments
// through registers (TF32 wgmma reads shared operands only K-major), A's tile from
// shared memory. Any m; k and n multiples of 4 (the host checks).
#pragma once
#include "hopper.cuh"

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }
template <unsigned R> __device__ __forceinline__ void grow_registers() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(R)); }
template <unsigned R> __device__ __forceinline__ void shrink_registers() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(R)); }

// K-major tile of 128-byte swizzled rows, 8-row groups 1024 bytes apart.
__device__ __forceinline__ unsigned long long k_major_128b(const float* p) {
    unsigned long long a = shared_addr(p);
    return ((a & 0x3ffff) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}

__device__ __forceinline__ void wgmma_tf32_n64(float* d, const unsigned* a, unsigned long long b) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, 1, 1, 1;"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}
__device__ __forceinline__ void wgmma_tf32_n128(float* d, const unsigned* a, unsigned long long b) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, 1, 1, 1;"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}
__device__ __forceinline__ void wgmma_tf32_n192(float* d, const unsigned* a, unsigned long long b) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n192k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, {%96, %97, %98, %99}, %100, 1, 1, 1;"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}
__device__ __forceinline__ void wgmma_tf32_n256(float* d, const unsigned* a, unsigned long long b) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, {%128, %129, %130, %131}, %132, 1, 1, 1;"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

template <int BM> __device__ __forceinline__ void wgmma_tf32(float* d, const unsigned* a, unsigned long long b) {
    if constexpr (BM == 256) wgmma_tf32_n256(d, a, b);
    else if constexpr (BM == 192) wgmma_tf32_n192(d, a, b);
    else if constexpr (BM == 128) wgmma_tf32_n128(d, a, b);
    else {
        static_assert(BM == 64, "the TF32 rungs' tiles are 256, 192, 128 or 64 rows");
        wgmma_tf32_n64(d, a, b);
    }
}

constexpr int HBK = 32, HBN = 128;

template <int BM, int STAGES>
struct Hopper {
    static constexpr int A_FLOATS = BM * HBK, STAGE_FLOATS = A_FLOATS + HBK * HBN;
    static constexpr unsigned STAGE_BYTES = STAGE_FLOATS * 4;
};


// The stages from the 1024-byte boundary of the dynamic segment; barriers after them.
__device__ __forceinline__ float* aligned_stages() {
    extern __shared__ __align__(1024) float smem_raw[];
    return smem_raw + ((1024 - (shared_addr(smem_raw) & 1023)) & 1023) / 4;
}

template <int BM, int STAGES>
__device__ __forceinline__ void load_stage(float* stage, unsigned long long* full, const TensorMap* a,
                                           const TensorMap* b, int m0, int n0, int i) {
    using H = Hopper<BM, STAGES>;
    bar_arrive_expect_tx(full, H::STAGE_BYTES);
    tma_load_2d(stage, a, full, i * HBK, m0);
#pragma unroll
    for (int j = 0; j < HBN / 32; ++j) tma_load_2d(stage + H::A_FLOATS + 1024 * j, b, full, n0 + 32 * j, i * HBK);
}

// A consumer thread: its warp pair's 32-column box of B's tile and its fragment rows.
struct Lane {
    int box, nn, t, lane;
    __device__ __forceinline__ Lane(int c, int tid) {
        int w = tid / 32, g = tid % 32 / 4;
        lane = tid % 32; t = lane % 4; box = 2 * c + w / 2; nn = 4 * (w % 2) + 16 * (g / 4) + g % 4;
    }
    // B^T's fragments of a stage's four k steps, rounded to TF32 (an add before the
    // tensor cores drop the low 13 bits: nearest, ties away).
    template <int BM, int STAGES> __device__ __forceinline__ void fragments(const float* stage, unsigned (&f)[16]) const {
        const float* b = stage + Hopper<BM, STAGES>::A_FLOATS + 1024 * box;
#pragma unroll
        for (int kk = 0; kk < 4; ++kk)
#pragma unroll
            for (int h = 0; h < 2; ++h)
#pragma unroll
                for (int r = 0; r < 2; ++r)
                    f[4 * kk + 2 * h + r] = __float_as_uint(b[swizzled_128(8 * kk + t + 4 * h, nn + 8 * r)]) + 0x1000u;
    }
    template <int BM> __device__ __forceinline__ void store(const float* d, float* __restrict__ C, int m, int n, int m0, int n0) const {
        int col = n0 + 32 * box + nn;
#pragma unroll
        for (int j = 0; j < BM / 8; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    int row = m0 + 8 * j + 2 * t + e, c = col + 8 * h;
                    if (row < m && c < n) C[(size_t)row * n + c] = d[4 * j + 2 * h + e];
                }
    }
    // Rung 4's store of this warpgroup's 64 columns: band after band of 32 rows, each
    // written into one of the warpgroup's two buffers of two swizzled 32 x 32 boxes
    // (`staging`) and stored by its thread 0; `bands` counts its bands so far.
    template <int BM> __device__ __forceinline__ void store_staged(const float* d, float* staging, const TensorMap* cmap, int m0, int n0, int& bands) const {
        int c = box / 2;
        bool leader = threadIdx.x % 128 == 0;
#pragma unroll
        for (int band = 0; band < BM / 32; ++band, ++bands) {
            float* buffer = staging + 2048 * (2 * c + bands % 2);
            if (leader) asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
            sync_warpgroup();
            float* mine = buffer + 1024 * (box % 2);
#pragma unroll
            for (int jj = 0; jj < 4; ++jj)
#pragma unroll
                for (int h = 0; h < 2; ++h)
#pragma unroll
                    for (int e = 0; e < 2; ++e)
                        mine[swizzled_128(8 * jj + 2 * t + e, nn + 8 * h)] = d[4 * (4 * band + jj) + 2 * h + e];
            fence_proxy_async();
            sync_warpgroup();
            if (leader) {
                for (int bx = 0; bx < 2; ++bx) tma_store_2d(cmap, buffer + 1024 * bx, n0 + 64 * c + 32 * bx, m0 + 32 * band);
                tma_commit();
            }
        }
    }
};

template <int BM, int STAGES>
__device__ __forceinline__ void multiply(float* d, const unsigned (&f)[16], const float* stage) {
    unsigned long long b[4];
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) b[kk] = k_major_128b(stage + 8 * kk);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) wgmma_tf32<BM>(d, &f[4 * kk], b[kk]);
    wgmma_commit();
}

// Rung 1: every warpgroup multiplies; thread 0 also copies, STAGES - 1 k-tiles ahead.
template <int BM, int STAGES>
__device__ __forceinline__ void wgmma_plain(int m, int n, int k, const TensorMap* a, const TensorMap* b, float* C) {
    using H = Hopper<BM, STAGES>;
    float* tiles = aligned_stages();
    unsigned long long* full = reinterpret_cast<unsigned long long*>(tiles + STAGES * H::STAGE_FLOATS);
    int m0, n0;
    tile_of(blockIdx.x, m, n, BM, HBN, m0, n0);
    int ktiles = (k + HBK - 1) / HBK, tid = threadIdx.x;
    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) bar_init(&full[s], 1);
        bar_fence_init();
        for (int i = 0; i < STAGES - 1 && i < ktiles; ++i) load_stage<BM, STAGES>(tiles + i * H::STAGE_FLOATS, &full[i], a, b, m0, n0, i);
    }
    __syncthreads();
    Lane me(tid / 128, tid % 128);
    float d[BM / 2];
#pragma unroll
    for (int i = 0; i < BM / 2; ++i) d[i] = 0.0f;
    unsigned f[16];
    for (int i = 0; i < ktiles; ++i) {
        int s = i % STAGES;
        bar_wait(&full[s], (i / STAGES) & 1);
        me.fragments<BM, STAGES>(tiles + s * H::STAGE_FLOATS, f);
        multiply<BM, STAGES>(d, f, tiles + s * H::STAGE_FLOATS);
        wgmma_wait0();
        __syncthreads();
        int next = i + STAGES - 1;
        if (tid == 0 && next < ktiles) {
            int sn = next % STAGES;
            load_stage<BM, STAGES>(tiles + sn * H::STAGE_FLOATS, &full[sn], a, b, m0, n0, next);
        }
    }
    me.store<BM>(d, C, m, n, m0, n0);
}

// The consumers' loop of rungs 2 to 4: k-tile i's wgmmas while i + 1's fragments load.
// `base`: the k-tiles the ring has passed before this tile's (rung 4 runs on from tile
// to tile).
template <int BM, int STAGES, bool CLUSTER>
__device__ __forceinline__ void consume(float* tiles, unsigned long long* full, unsigned long long* empty, int ktiles,
                                        const Lane& me, float* d, unsigned rank, int base = 0) {
    using H = Hopper<BM, STAGES>;
    unsigned f0[16], f1[16];
    bar_wait(&full[base % STAGES], (base / STAGES) & 1);
    me.fragments<BM, STAGES>(tiles + (base % STAGES) * H::STAGE_FLOATS, f0);
    auto step = [&](int i, const unsigned (&cur)[16], unsigned (&next)[16]) {
        int s = (base + i) % STAGES;
        multiply<BM, STAGES>(d, cur, tiles + s * H::STAGE_FLOATS);
        if (i + 1 < ktiles) {
            int j = base + i + 1, s1 = j % STAGES;
            bar_wait(&full[s1], (j / STAGES) & 1);
            me.fragments<BM, STAGES>(tiles + s1 * H::STAGE_FLOATS, next);
        }
        wgmma_wait0();
        if (me.lane == 0) {
            bar_arrive(&empty[s]);
            if (CLUSTER) bar_arrive_cluster(&empty[s], rank ^ 1);
        }
    };
    for (int i = 0; i < ktiles; i += 2) {
        step(i, f0, f1);
        if (i + 1 < ktiles) step(i + 1, f1, f0);
    }
}

// Rungs 2 and 3: a producer warpgroup copies, two consumer warpgroups multiply;
// CLUSTER: two blocks on the same rows of A each copy half of A's tile to both.
template <int BM, int STAGES, bool CLUSTER>
__device__ __forceinline__ void wgmma_ws(int m, int n, int k, const TensorMap* a, const TensorMap* b, float* C) {
    using H = Hopper<BM, STAGES>;
    float* tiles = aligned_stages();
    unsigned long long* full = reinterpret_cast<unsigned long long*>(tiles + STAGES * H::STAGE_FLOATS);
    unsigned long long* empty = full + STAGES;
    unsigned rank = CLUSTER ? cluster_rank() : 0;
    int m0, n0;
    if (CLUSTER) {
        tile_of(blockIdx.x / 2, m, n, BM, 2 * HBN, m0, n0);
        n0 += rank * HBN;
    } else {
        tile_of(blockIdx.x, m, n, BM, HBN, m0, n0);
    }
    int ktiles = (k + HBK - 1) / HBK, tid = threadIdx.x;
    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            bar_init(&full[s], 1);
            bar_init(&empty[s], CLUSTER ? 16 : 8);
        }
        bar_fence_init();
    }
    if (CLUSTER) cluster_sync(); else __syncthreads();
    if (tid < 128) {
        shrink_registers<40>();
        if (tid == 0) {
            for (int i = 0; i < ktiles; ++i) {
                int s = i % STAGES;
                if (i >= STAGES) bar_wait(&empty[s], ((i / STAGES) & 1) ^ 1);
                float* stage = tiles + s * H::STAGE_FLOATS;
                if (CLUSTER) {
                    bar_arrive_expect_tx(&full[s], H::STAGE_BYTES);
                    tma_load_2d_multicast(stage + rank * (H::A_FLOATS / 2), a, &full[s], i * HBK, m0 + rank * (BM / 2), 0x3);
#pragma unroll
                    for (int j = 0; j < HBN / 32; ++j) tma_load_2d(stage + H::A_FLOATS + 1024 * j, b, &full[s], n0 + 32 * j, i * HBK);
                } else {
                    load_stage<BM, STAGES>(stage, &full[s], a, b, m0, n0, i);
                }
            }
        }
    } else {
        grow_registers<232>();
        Lane me(tid / 128 - 1, tid % 128);
        float d[BM / 2];
#pragma unroll
        for (int i = 0; i < BM / 2; ++i) d[i] = 0.0f;
        consume<BM, STAGES, CLUSTER>(tiles, full, empty, ktiles, me, d, rank);
        me.store<BM>(d, C, m, n, m0, n0);
    }
    if (CLUSTER) cluster_sync();
}

// Rung 4: rung 2 with one block an SM walking the tiles, the ring running on from tile
// to tile, and C staged for the copy engine: each consumer warpgroup writes its 64
// columns in bands of 32 rows into one of its two buffers of two swizzled 32 x 32 boxes,
// and its thread 0 stores them (a warpgroup barrier before and after the writes).
template <int BM, int STAGES>
__device__ __forceinline__ void wgmma_tma_store(int m, int n, int k, const TensorMap* a, const TensorMap* b, const TensorMap* cmap) {
    using H = Hopper<BM, STAGES>;
    float* tiles = aligned_stages();
    float* staging = tiles + STAGES * H::STAGE_FLOATS;
    unsigned long long* full = reinterpret_cast<unsigned long long*>(staging + 8 * 1024);
    unsigned long long* empty = full + STAGES;
    int ntiles = (m + BM - 1) / BM * ((n + HBN - 1) / HBN), ktiles = (k + HBK - 1) / HBK, tid = threadIdx.x;
    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            bar_init(&full[s], 1);
            bar_init(&empty[s], 8);
        }
        bar_fence_init();
    }
    __syncthreads();
    if (tid < 128) {
        shrink_registers<40>();
        if (tid == 0) {
            for (int tile = blockIdx.x, i = 0; tile < ntiles; tile += gridDim.x) {
                int m0, n0;
                tile_of(tile, m, n, BM, HBN, m0, n0);
                for (int kt = 0; kt < ktiles; ++kt, ++i) {
                    int s = i % STAGES;
                    if (i >= STAGES) bar_wait(&empty[s], ((i / STAGES) & 1) ^ 1);
                    load_stage<BM, STAGES>(tiles + s * H::STAGE_FLOATS, &full[s], a, b, m0, n0, kt);
                }
            }
        }
    } else {
        grow_registers<232>();
        Lane me(tid / 128 - 1, tid % 128);
        for (int tile = blockIdx.x, base = 0, bands = 0; tile < ntiles; tile += gridDim.x, base += ktiles) {
            int m0, n0;
            tile_of(tile, m, n, BM, HBN, m0, n0);
            float d[BM / 2];
#pragma unroll
            for (int i = 0; i < BM / 2; ++i) d[i] = 0.0f;
            consume<BM, STAGES, false>(tiles, full, empty, ktiles, me, d, 0, base);
            me.store_staged<BM>(d, staging, cmap, m0, n0, bands);
        }
        if (tid % 128 == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
}

#endif
