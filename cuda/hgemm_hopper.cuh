// The 16-bit Hopper rungs of the hgemm twin (included by hgemm.cu): C = A B, row-major,
// A, B and C of one 16-bit type (__nv_bfloat16 or half), f32 accumulation; TMA-fed
// tiles multiplied by warpgroups from shared memory (wgmma, sm_90a), written as
// hand-written Hopper GEMMs are: inline PTX. As in kernels/src/hgemm/wgmma.rs: A lands
// K-major, B MN-major (the instruction transposes it); a block's tile is 64 rows a
// consumer warpgroup by BN columns. Any m; k and n multiples of 8 (the host checks).
#pragma once
#include "hopper.cuh"

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

__device__ __forceinline__ void hwgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void hwgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
// Starts fetching a tensor map into the copy engine's descriptor cache.
__device__ __forceinline__ void hprefetch_map(const TensorMap* m) { asm volatile("prefetch.tensormap [%0];" ::"l"(m) : "memory"); }
template <int N> __device__ __forceinline__ void hwgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory"); }
template <unsigned R> __device__ __forceinline__ void hgrow_registers() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(R)); }
template <unsigned R> __device__ __forceinline__ void hshrink_registers() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(R)); }

// A 128-byte-swizzled tile: start, leading offset (MN-major: the bytes between 64-wide
// atoms; unused K-major), 1024 bytes between 8-row groups.
__device__ __forceinline__ unsigned long long desc_128b(const void* p, unsigned leading) {
    unsigned long long a = shared_addr(p);
    return ((a & 0x3ffff) >> 4) | ((unsigned long long)(leading >> 4) << 16) | (64ull << 32) | (1ull << 62);
}

__device__ __forceinline__ void wgmma_bf16_n256(float* d, unsigned long long a, unsigned long long b) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, 1, 1, 1, 0, 1;"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                 : "l"(a), "l"(b));
}
__device__ __forceinline__ void wgmma_f16_n256(float* d, unsigned long long a, unsigned long long b) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, 1, 1, 1, 0, 1;"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                 : "l"(a), "l"(b));
}
__device__ __forceinline__ void wgmma_bf16_n128(float* d, unsigned long long a, unsigned long long b) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, 1, 1, 1, 0, 1;"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(a), "l"(b));
}
__device__ __forceinline__ void wgmma_f16_n128(float* d, unsigned long long a, unsigned long long b) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, 1, 1, 1, 0, 1;"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(a), "l"(b));
}

template <typename T, int N> __device__ __forceinline__ void wgmma_k16(float* d, unsigned long long a, unsigned long long b) {
    if constexpr (N == 256) {
        if constexpr (IS_BF16<T>) wgmma_bf16_n256(d, a, b); else wgmma_f16_n256(d, a, b);
    } else {
        if constexpr (IS_BF16<T>) wgmma_bf16_n128(d, a, b); else wgmma_f16_n128(d, a, b);
    }
}

// lo and hi rounded to nearest even and packed into one word, lo in the low half.
__device__ __forceinline__ unsigned pack2(__nv_bfloat16*, float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<unsigned*>(&v);
}
__device__ __forceinline__ unsigned pack2(half*, float lo, float hi) {
    half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<unsigned*>(&v);
}

constexpr int H_BK = 64, H_BOX = 64, H_STAGES = 4;
constexpr unsigned H_ATOM_BYTES = H_BK * H_BOX * 2;
// The staged epilogue: bands of 16 rows by 128 columns, one for each consumer warp.
constexpr int H_STAGED_ROWS = 16, H_STAGED_COLS = 2 * H_BOX, H_STAGED_BOX = H_BOX * H_STAGED_ROWS;

// A block's tile: 64 rows a consumer warpgroup by BN columns, and one stage of it
// (hgemm_ws takes how many stages; H_STAGES unless the rung says otherwise).
template <int CONSUMERS, int BN> struct HTile {
    static constexpr int BM = 64 * CONSUMERS, A_LEN = BM * H_BK, STAGE_LEN = A_LEN + H_BK * BN;
    static constexpr unsigned STAGE_BYTES = STAGE_LEN * 2;
    static constexpr int STAGING = 4 * CONSUMERS * H_STAGED_ROWS * H_STAGED_COLS;
};


template <typename T> __device__ __forceinline__ T* haligned_stages() {
    extern __shared__ __align__(1024) unsigned char hsmem_raw[];
    return reinterpret_cast<T*>(hsmem_raw + ((1024 - (shared_addr(hsmem_raw) & 1023)) & 1023));
}

// The copies of k-tile i into a stage: A's box, B's (in a cluster of two, this block's
// half of B's boxes into both blocks).
template <typename T, typename TILE, int BN, bool CLUSTER>
__device__ __forceinline__ void hload_stage(T* stage, unsigned long long* full, const TensorMap* a, const TensorMap* b,
                                            int m0, int n0, int i, unsigned rank) {
    constexpr int BOXES = BN / H_BOX;
    bar_arrive_expect_tx(full, TILE::STAGE_BYTES);
    tma_load_2d(stage, a, full, i * H_BK, m0);
    if (CLUSTER) {
#pragma unroll
        for (int j = rank * BOXES / 2; j < (rank + 1) * BOXES / 2; ++j)
            tma_load_2d_multicast(stage + TILE::A_LEN + H_BK * H_BOX * j, b, full, n0 + H_BOX * j, i * H_BK, 0x3);
    } else {
#pragma unroll
        for (int j = 0; j < BOXES; ++j) tma_load_2d(stage + TILE::A_LEN + H_BK * H_BOX * j, b, full, n0 + H_BOX * j, i * H_BK);
    }
}

// One k-tile's four m64nBNk16 for consumer warpgroup c, one group.
template <typename T, typename TILE, int BN> __device__ __forceinline__ void hmultiply(float* d, const T* stage, int c) {
    hwgmma_fence();
#pragma unroll
    for (int kk = 0; kk < H_BK / 16; ++kk)
        wgmma_k16<T, BN>(d, desc_128b(stage + 64 * H_BK * c + 16 * kk, 16), desc_128b(stage + TILE::A_LEN + 16 * H_BOX * kk, H_ATOM_BYTES));
    hwgmma_commit();
}

// d[4 j + 2 h + e] is C[64 c + 16 w + g + 8 h][8 j + 2 t + e]: neighbours packed in one
// store where n is even, one by one where it is odd (a pair may straddle a row's end).
template <typename T, int BN> __device__ __forceinline__ void hstore(const float* d, T* C, int m, int n, int m0, int n0, int c, int tid) {
    int w = tid / 32, g = tid % 32 / 4, t = tid % 4;
    unsigned* pairs = reinterpret_cast<unsigned*>(C);
    bool even = n % 2 == 0;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            int row = m0 + 64 * c + 16 * w + g + 8 * h, col = n0 + 8 * j + 2 * t;
            if (row < m && col < n) {
                unsigned word = pack2(C, d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
                if (even) {
                    pairs[((size_t)row * n + col) / 2] = word;
                } else {
                    unsigned short* halves = reinterpret_cast<unsigned short*>(C);
                    halves[(size_t)row * n + col] = (unsigned short)word;
                    if (col + 1 < n) halves[(size_t)row * n + col + 1] = (unsigned short)(word >> 16);
                }
            }
        }
}

// Rung 1: every warpgroup multiplies; thread 0 also copies, H_STAGES - 1 k-tiles ahead.
template <typename T> __device__ __forceinline__ void hgemm_plain(int m, int n, int k, const TensorMap* a, const TensorMap* b, T* C) {
    using TILE = HTile<2, 256>;
    T* tiles = haligned_stages<T>();
    unsigned long long* full = reinterpret_cast<unsigned long long*>(tiles + H_STAGES * TILE::STAGE_LEN);
    int m0, n0;
    tile_of(blockIdx.x, m, n, TILE::BM, 256, m0, n0);
    int ktiles = (k + H_BK - 1) / H_BK, tid = threadIdx.x;
    if (tid == 0) {
        for (int s = 0; s < H_STAGES; ++s) bar_init(&full[s], 1);
        bar_fence_init();
    }
    __syncthreads();
    if (tid == 0)
        for (int i = 0; i < H_STAGES - 1 && i < ktiles; ++i) hload_stage<T, TILE, 256, false>(tiles + i * TILE::STAGE_LEN, &full[i], a, b, m0, n0, i, 0);
    float d[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) d[i] = 0.0f;
    for (int i = 0; i < ktiles; ++i) {
        int s = i % H_STAGES;
        bar_wait(&full[s], (i / H_STAGES) & 1);
        hmultiply<T, TILE, 256>(d, tiles + s * TILE::STAGE_LEN, tid / 128);
        hwgmma_wait<0>();
        __syncthreads();
        int next = i + H_STAGES - 1;
        if (tid == 0 && next < ktiles) {
            int sn = next % H_STAGES;
            hload_stage<T, TILE, 256, false>(tiles + sn * TILE::STAGE_LEN, &full[sn], a, b, m0, n0, next, 0);
        }
    }
    hstore<T, 256>(d, C, m, n, m0, n0, tid / 128, tid % 128);
}

// Band `band` (columns 128 band..) of rung 5's epilogue from its 64 accumulators a
// thread: the warp's 16 rows written into its staging tile (two 64 x 16 boxes, 128-byte
// swizzle) and stored by lane 0 through the copy engine, once the copy engine has read
// the band before.
template <typename T>
__device__ __forceinline__ void hstore_band(const float* d, T* staging, const TensorMap* cmap, int m0, int n0, int c, int tid, int band) {
    int w = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    T* mine = staging + (4 * c + w) * H_STAGED_ROWS * H_STAGED_COLS;
    unsigned* words = reinterpret_cast<unsigned*>(mine);
    int row = m0 + 64 * c + H_STAGED_ROWS * w;
    if (lane == 0) tma_wait_read0();
    __syncwarp();
#pragma unroll
    for (int j = 0; j < 16; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h)
            words[(j / 8) * H_STAGED_BOX / 2 + (g + 8 * h) * 32 + (((j % 8) ^ g) * 4) + t] = pack2(mine, d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
    fence_proxy_async();
    __syncwarp();
    if (lane == 0) {
#pragma unroll
        for (int bx = 0; bx < 2; ++bx) tma_store_2d(cmap, mine + H_STAGED_BOX * bx, n0 + H_STAGED_COLS * band + H_BOX * bx, row);
        tma_commit();
    }
}

// Rung 5's epilogue: a consumer warp's 16 rows in bands of 128 columns.
template <typename T, int BN>
__device__ __forceinline__ void hstore_staged(const float* d, T* staging, const TensorMap* cmap, int m0, int n0, int c, int tid) {
#pragma unroll
    for (int band = 0; band < BN / H_STAGED_COLS; ++band) hstore_band<T>(d + 64 * band, staging, cmap, m0, n0, c, tid, band);
}

// Rungs 2 to 6, 8 and 9: a producer warpgroup copies, CONSUMERS warpgroups multiply,
// each keeping one group in flight and freeing a stage once the next group is issued.
// CLUSTER: pairs of blocks on the same columns share B's tile; PERSISTENT: the blocks
// (at most one an SM; clusters, if CLUSTER) walk the tiles; STAGED: C through shared
// memory and the copy engine.
template <typename T, int CONSUMERS, int BN, bool CLUSTER, bool PERSISTENT, bool STAGED, int STAGES = H_STAGES>
__device__ __forceinline__ void hgemm_ws(int m, int n, int k, const TensorMap* a, const TensorMap* b, T* C, const TensorMap* cmap) {
    using TILE = HTile<CONSUMERS, BN>;
    constexpr int BM = TILE::BM;
    T* tiles = haligned_stages<T>();
    T* staging = tiles + STAGES * TILE::STAGE_LEN;
    unsigned long long* full = reinterpret_cast<unsigned long long*>(staging + (STAGED ? TILE::STAGING : 0));
    unsigned long long* empty = full + STAGES;
    unsigned rank = CLUSTER ? cluster_rank() : 0;
    int blocks = CLUSTER ? 2 : 1;
    int first = blockIdx.x / blocks, step = PERSISTENT ? gridDim.x / blocks : 1;
    int count = PERSISTENT ? ((m + blocks * BM - 1) / (blocks * BM)) * ((n + BN - 1) / BN) : first + 1;
    int ktiles = (k + H_BK - 1) / H_BK, tid = threadIdx.x;
    if (tid == 0) {
        hprefetch_map(a);
        hprefetch_map(b);
        if (STAGED) hprefetch_map(cmap);
        for (int s = 0; s < STAGES; ++s) {
            bar_init(&full[s], 1);
            bar_init(&empty[s], 4 * CONSUMERS * blocks);
        }
        bar_fence_init();
    }
    if (CLUSTER) cluster_sync(); else __syncthreads();
    if (tid < 128) {
        if (CONSUMERS == 2) hshrink_registers<40>();
        if (tid == 0) {
            int it = 0;
            for (int tile = first; tile < count; tile += step) {
                int m0, n0;
                tile_of(tile, m, n, blocks * BM, BN, m0, n0);
                m0 += rank * BM;
                for (int i = 0; i < ktiles; ++i, ++it) {
                    int s = it % STAGES;
                    bar_wait(&empty[s], ((it / STAGES) & 1) ^ 1);
                    hload_stage<T, TILE, BN, CLUSTER>(tiles + s * TILE::STAGE_LEN, &full[s], a, b, m0, n0, i, rank);
                }
            }
        }
    } else {
        if (CONSUMERS == 2) hgrow_registers<232>();
        int c = tid / 128 - 1, me = tid % 128, it = 0;
        for (int tile = first; tile < count; tile += step) {
            int m0, n0;
            tile_of(tile, m, n, blocks * BM, BN, m0, n0);
            m0 += rank * BM;
            float d[BN / 2];
#pragma unroll
            for (int i = 0; i < BN / 2; ++i) d[i] = 0.0f;
            int pending = -1;
            for (int i = 0; i < ktiles; ++i, ++it) {
                int s = it % STAGES;
                bar_wait(&full[s], (it / STAGES) & 1);
                hmultiply<T, TILE, BN>(d, tiles + s * TILE::STAGE_LEN, c);
                hwgmma_wait<1>();
                if (pending >= 0 && me % 32 == 0) {
                    bar_arrive(&empty[pending]);
                    if (CLUSTER) bar_arrive_cluster(&empty[pending], rank ^ 1);
                }
                pending = s;
            }
            hwgmma_wait<0>();
            if (pending >= 0 && me % 32 == 0) {
                bar_arrive(&empty[pending]);
                if (CLUSTER) bar_arrive_cluster(&empty[pending], rank ^ 1);
            }
            if (STAGED) hstore_staged<T, BN>(d, staging, cmap, m0, n0, c, me);
            else hstore<T, BN>(d, C, m, n, m0, n0, c, me);
        }
        // The copy engine has read the staging tiles and written C before the block goes.
        if (STAGED && me % 32 == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
    if (CLUSTER) cluster_sync();
}

// Rung 10, overlap (kernels/src/hgemm/overlap.rs): tma-store with each consumer's
// 64 x 256 accumulators as two m64n128 halves, each its own chain of groups; the left
// half is stored while the right's last MMAs run, the right while the next tile's
// first left MMAs run.
template <typename T>
__device__ __forceinline__ void hmultiply_half(float* d, const T* stage, int c, int half) {
    using TILE = HTile<2, 256>;
#pragma unroll
    for (int kk = 0; kk < H_BK / 16; ++kk)
        wgmma_k16<T, 128>(d, desc_128b(stage + 64 * H_BK * c + 16 * kk, 16),
                          desc_128b(stage + TILE::A_LEN + 2 * half * H_BK * H_BOX + 16 * H_BOX * kk, H_ATOM_BYTES));
    hwgmma_commit();
}

template <typename T>
__device__ __forceinline__ void hgemm_overlap(int m, int n, int k, const TensorMap* a, const TensorMap* b, const TensorMap* cmap) {
    using TILE = HTile<2, 256>;
    constexpr int BM = TILE::BM, BN = 256;
    T* tiles = haligned_stages<T>();
    T* staging = tiles + H_STAGES * TILE::STAGE_LEN;
    unsigned long long* full = reinterpret_cast<unsigned long long*>(staging + TILE::STAGING);
    unsigned long long* empty = full + H_STAGES;
    int first = blockIdx.x, step = gridDim.x, count = ((m + BM - 1) / BM) * ((n + BN - 1) / BN);
    int ktiles = (k + H_BK - 1) / H_BK, tid = threadIdx.x;
    if (tid == 0) {
        hprefetch_map(a);
        hprefetch_map(b);
        hprefetch_map(cmap);
        for (int s = 0; s < H_STAGES; ++s) {
            bar_init(&full[s], 1);
            bar_init(&empty[s], 8);
        }
        bar_fence_init();
    }
    __syncthreads();
    if (tid < 128) {
        hshrink_registers<40>();
        if (tid == 0) {
            int it = 0;
            for (int tile = first; tile < count; tile += step) {
                int m0, n0;
                tile_of(tile, m, n, BM, BN, m0, n0);
                for (int i = 0; i < ktiles; ++i, ++it) {
                    int s = it % H_STAGES;
                    bar_wait(&empty[s], ((it / H_STAGES) & 1) ^ 1);
                    hload_stage<T, TILE, BN, false>(tiles + s * TILE::STAGE_LEN, &full[s], a, b, m0, n0, i, 0);
                }
            }
        }
    } else {
        hgrow_registers<232>();
        int c = tid / 128 - 1, me = tid % 128, it = 0, pending = -1;
        bool lead = me % 32 == 0, started = false;
        float left[64], right[64];
#pragma unroll
        for (int i = 0; i < 64; ++i) left[i] = right[i] = 0.0f;
        for (int tile = first; tile < count;) {
            int m0, n0;
            tile_of(tile, m, n, BM, BN, m0, n0);
            for (int i = started ? 1 : 0; i < ktiles; ++i, ++it) {
                int s = it % H_STAGES;
                bar_wait(&full[s], (it / H_STAGES) & 1);
                hwgmma_fence();
                hmultiply_half<T>(left, tiles + s * TILE::STAGE_LEN, c, 0);
                hmultiply_half<T>(right, tiles + s * TILE::STAGE_LEN, c, 1);
                hwgmma_wait<2>();
                if (pending >= 0 && lead) bar_arrive(&empty[pending]);
                pending = s;
            }
            hwgmma_wait<1>();
            hstore_band<T>(left, staging, cmap, m0, n0, c, me, 0);
            tile += step;
            started = tile < count;
            if (started) {
                int s = it % H_STAGES;
                bar_wait(&full[s], (it / H_STAGES) & 1);
#pragma unroll
                for (int i = 0; i < 64; ++i) left[i] = 0.0f;
                hwgmma_fence();
                hmultiply_half<T>(left, tiles + s * TILE::STAGE_LEN, c, 0);
                hwgmma_wait<1>();
                if (lead) bar_arrive(&empty[pending]);
                hstore_band<T>(right, staging, cmap, m0, n0, c, me, 1);
#pragma unroll
                for (int i = 0; i < 64; ++i) right[i] = 0.0f;
                hwgmma_fence();
                hmultiply_half<T>(right, tiles + s * TILE::STAGE_LEN, c, 1);
                pending = s;
                ++it;
            } else {
                hwgmma_wait<0>();
                if (lead) bar_arrive(&empty[pending]);
                hstore_band<T>(right, staging, cmap, m0, n0, c, me, 1);
            }
        }
        if (lead) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
}

// Rung 7, stream-k (kernels/src/hgemm/stream_k.rs): the tma-store rung with each
// cluster given a contiguous range of the product's iterations (a pair tile's k-block)
// instead of whole tiles. Hybrid: all but the last full round of tiles go whole, the
// rest is split. Ranges are dealt from the last cluster back, so a split tile's owner
// (the cluster holding its k-block 0) waits only on lower-numbered clusters. The
// tuning (hybrid or not, the tile's width) is the Rust rung's: HYBRID and STREAM_K.
constexpr bool H_SK_HYBRID = true;

struct HDeal {
    int tiles, ktiles, clusters, dp;
    __device__ HDeal(int tiles_, int ktiles_, int clusters_, bool hybrid) : tiles(tiles_), ktiles(ktiles_), clusters(clusters_) {
        int rounds = tiles / clusters, left = tiles % clusters;
        int split = !hybrid ? tiles : left == 0 ? 0 : rounds == 0 ? tiles : left + clusters;
        dp = tiles - split;
    }
    // Where range j starts among the split tiles' iterations.
    __device__ int start(int j) const {
        int total = (tiles - dp) * ktiles, each = total / clusters, extra = total % clusters;
        return j * each + min(j, extra);
    }
};

// Cluster c's units (k-blocks k0..k1 of a tile), in order: its whole tiles, then its
// range of split iterations. One loop in the kernel, so its body (and the
// accumulators) stay one.
struct HWalk {
    HDeal deal;
    int tile, it, end;
    __device__ HWalk(HDeal d, int c) : deal(d), tile(c), it(d.start(d.clusters - 1 - c)), end(d.start(d.clusters - c)) {}
    __device__ __forceinline__ bool next(int& t, int& k0, int& k1) {
        if (tile < deal.dp) {
            t = tile, k0 = 0, k1 = deal.ktiles;
            tile += deal.clusters;
            return true;
        }
        if (it >= end) return false;
        t = deal.dp + it / deal.ktiles, k0 = it % deal.ktiles, k1 = min(deal.ktiles, k0 + end - it);
        it += k1 - k0;
        return true;
    }
};

// A flag of the stream-k fixup: set with release semantics after the warp's partials
// (their stores ordered before it by __syncwarp), waited for with acquire semantics,
// both at GPU scope: the two blocks are on different SMs.
__device__ __forceinline__ void flag_release(unsigned* flag) {
    asm volatile("st.release.gpu.u32 [%0], %1;" ::"l"(flag), "r"(1u) : "memory");
}
__device__ __forceinline__ void flag_wait(unsigned* flag) {
    unsigned v;
    do {
        asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
    } while (v == 0);
}

// The workspace: a slot of partial accumulators a block, then a flag a consumer warp.
__device__ __forceinline__ unsigned* hflag(float* work, int slot, int i) {
    return reinterpret_cast<unsigned*>(work + (size_t)gridDim.x * slot) + i;
}

template <typename T, int BN>
__device__ __forceinline__ void hgemm_stream_k(int m, int n, int k, const TensorMap* a, const TensorMap* b, const TensorMap* cmap, float* work) {
    using TILE = HTile<2, BN>;
    constexpr int BM = TILE::BM, WARPS = 8, SLOT = BM * BN;
    T* tiles = haligned_stages<T>();
    T* staging = tiles + H_STAGES * TILE::STAGE_LEN;
    unsigned long long* full = reinterpret_cast<unsigned long long*>(staging + TILE::STAGING);
    unsigned long long* empty = full + H_STAGES;
    unsigned rank = cluster_rank();
    int cluster = blockIdx.x / 2;
    int count = ((m + 2 * BM - 1) / (2 * BM)) * ((n + BN - 1) / BN);
    int ktiles = (k + H_BK - 1) / H_BK, tid = threadIdx.x;
    HDeal deal(count, ktiles, gridDim.x / 2, H_SK_HYBRID);
    if (tid == 0) {
        for (int s = 0; s < H_STAGES; ++s) {
            bar_init(&full[s], 1);
            bar_init(&empty[s], 4 * 2 * 2);
        }
        bar_fence_init();
    }
    cluster_sync();
    if (tid < 128) {
        hshrink_registers<40>();
        if (tid == 0) {
            int it = 0, tile, k0, k1;
            for (HWalk walk(deal, cluster); walk.next(tile, k0, k1);) {
                int m0, n0;
                tile_of(tile, m, n, 2 * BM, BN, m0, n0);
                m0 += rank * BM;
                for (int i = k0; i < k1; ++i, ++it) {
                    int s = it % H_STAGES;
                    bar_wait(&empty[s], ((it / H_STAGES) & 1) ^ 1);
                    hload_stage<T, TILE, BN, true>(tiles + s * TILE::STAGE_LEN, &full[s], a, b, m0, n0, i, rank);
                }
            }
        }
    } else {
        hgrow_registers<232>();
        int c = tid / 128 - 1, me = tid % 128, warp = 4 * c + me / 32, lane = me % 32, it = 0, tile, k0, k1;
        for (HWalk walk(deal, cluster); walk.next(tile, k0, k1);) {
            int m0, n0;
            tile_of(tile, m, n, 2 * BM, BN, m0, n0);
            m0 += rank * BM;
            float d[BN / 2];
#pragma unroll
            for (int i = 0; i < BN / 2; ++i) d[i] = 0.0f;
            int pending = -1;
            for (int i = k0; i < k1; ++i, ++it) {
                int s = it % H_STAGES;
                bar_wait(&full[s], (it / H_STAGES) & 1);
                hmultiply<T, TILE, BN>(d, tiles + s * TILE::STAGE_LEN, c);
                hwgmma_wait<1>();
                if (pending >= 0 && lane == 0) {
                    bar_arrive(&empty[pending]);
                    bar_arrive_cluster(&empty[pending], rank ^ 1);
                }
                pending = s;
            }
            hwgmma_wait<0>();
            if (pending >= 0 && lane == 0) {
                bar_arrive(&empty[pending]);
                bar_arrive_cluster(&empty[pending], rank ^ 1);
            }
            if (k0 != 0) {
                // A later part of a tile another cluster owns: publish the partials.
                float4* slot = reinterpret_cast<float4*>(work + (size_t)blockIdx.x * SLOT + warp * 32 * (BN / 2));
#pragma unroll
                for (int i = 0; i < BN / 8; ++i) slot[32 * i + lane] = make_float4(d[4 * i], d[4 * i + 1], d[4 * i + 2], d[4 * i + 3]);
                __syncwarp();
                if (lane == 0) flag_release(hflag(work, SLOT, blockIdx.x * WARPS + warp));
                continue;
            }
            if (k1 != ktiles) {
                // This cluster owns a split tile: add the later clusters' partials.
                int end = (tile - deal.dp + 1) * ktiles;
                for (int j = deal.clusters - cluster; j < deal.clusters && deal.start(j) < end; ++j) {
                    int from = 2 * (deal.clusters - 1 - j) + rank;
                    unsigned* flag = hflag(work, SLOT, from * WARPS + warp);
                    if (lane == 0) {
                        flag_wait(flag);
                        *flag = 0;
                    }
                    __syncwarp();
                    const float4* part = reinterpret_cast<const float4*>(work + (size_t)from * SLOT + warp * 32 * (BN / 2));
#pragma unroll
                    for (int i = 0; i < BN / 8; ++i) {
                        float4 q = part[32 * i + lane];
                        d[4 * i] += q.x;
                        d[4 * i + 1] += q.y;
                        d[4 * i + 2] += q.z;
                        d[4 * i + 3] += q.w;
                    }
                }
            }
            hstore_staged<T, BN>(d, staging, cmap, m0, n0, c, me);
        }
        // The copy engine has read the staging tiles and written C before the block goes.
        if (lane == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
    cluster_sync();
}

#endif
