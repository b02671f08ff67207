//! gemm-bf16 and gemm-f16: the 16-bit GEMM chapter. C = A B, row-major, with A, B and
//! C all BF16 (or all FP16), products accumulated in f32 and C rounded once; reported
//! in GFLOP/s, validated against an f64 reference within a bound that allows for C's
//! rounding ([`crate::validate::ProductBound`]), and compared with cuBLAS
//! (`cublasGemmEx`) in the same precision on the same buffers.
//!
//! Both experiments are made from one list of rungs ([`rungs!`]): each rung names its
//! BF16 and FP16 kernels (one generic kernel body, instantiated twice), its arguments
//! and its launch, and appears in both.

use kernels::entry;
use kernels::gpu::tma::Swizzle;
use kernels::hgemm::simt::TILE;
use kernels::hgemm::stream_k::scratch_bytes;
use kernels::hgemm::tiling::{B_BOX, BK, HalfTiling, PLAIN, SMALL, SPECIALISED, STAGED, STAGED_128, STAGED_192, STAGED_ROWS, STREAM_K};

use super::matmul;
use crate::device::DeviceInfo;
use crate::elem::Elem;
use crate::error::Result;
use crate::experiment::{Arg, Buffer, DefaultSize, Dim, Experiment, Kind, Problem, Reference, Variant, Work};
use crate::launch::Launch;
use crate::tensor_map::MapSpec;
use crate::twin;

/// `(m, n, k, a, b, c)`, as every matmul kernel takes them.
const ARGS: &[Arg] = matmul::ARGS;

/// One thread per element of C in 32 x 32 blocks.
fn simt(p: &Problem, _: &DeviceInfo) -> Result<Launch> {
    matmul::tiles(p, (TILE, TILE), (TILE as u32, TILE as u32, 1))
}

/// The copy engine's view of a Hopper rung of tiling `t`: A in boxes of the tile's
/// rows of 64 k (128 bytes, swizzled), B in boxes of 64 k rows of 64 n; C written by
/// the threads, or (`staged`) by the copy engine in boxes of 16 rows of 64. A and B
/// are padded to whole 16-byte rows where their width needs it, so any shape runs on
/// the rungs that store C from registers.
const fn hopper_args(t: HalfTiling) -> [Arg; 6] {
    let c = if t.staged {
        // C unpadded: on an H200 the copy engine's stores wrote zeros into a padded C's
        // row tails (the emulator clips them), so at an n that is not a whole 16 bytes
        // these rungs are left out in one line and the rungs storing C from registers run.
        Arg::Map(MapSpec::matrix(2, (Dim::M, Dim::N), [STAGED_ROWS as u32, B_BOX as u32], Swizzle::B128))
    } else {
        Arg::Buffer(2)
    };
    [
        Arg::Dim(Dim::M),
        Arg::Dim(Dim::N),
        Arg::Dim(Dim::K),
        Arg::Map(MapSpec::matrix(0, (Dim::M, Dim::K), [t.bm() as u32, BK as u32], Swizzle::B128).padded()),
        Arg::Map(MapSpec::matrix(1, (Dim::K, Dim::N), [BK as u32, B_BOX as u32], Swizzle::B128).padded()),
        c,
    ]
}
const HOPPER_ARGS: &[Arg] = &hopper_args(SPECIALISED);
const STORE_ARGS: &[Arg] = &hopper_args(STAGED);
const SMALL_ARGS: &[Arg] = &hopper_args(SMALL);
const STORE_192_ARGS: &[Arg] = &hopper_args(STAGED_192);
const STORE_128_ARGS: &[Arg] = &hopper_args(STAGED_128);

/// tma-store's arguments and the scratch that holds split tiles' partial sums and
/// their flags.
const fn stream_k_args(t: HalfTiling) -> [Arg; 7] {
    let a = hopper_args(t);
    [a[0], a[1], a[2], a[3], a[4], a[5], Arg::Scratch]
}
const STREAM_K_ARGS: &[Arg] = &stream_k_args(STREAM_K);

/// One block per tile of C (the kernel orders them), in whole clusters of `cluster`
/// blocks along m, with the tiling's stages as dynamic shared memory.
fn hopper(p: &Problem, t: HalfTiling, cluster: u64) -> Result<Launch> {
    let (m, n) = (p.dim(Dim::M) as u64, p.dim(Dim::N) as u64);
    let blocks = m.div_ceil(t.bm() as u64).div_ceil(cluster) * cluster * n.div_ceil(t.bn as u64);
    grid(p, t, blocks)
}

/// One block an SM, in the tiling's clusters (at most one cluster a tile, a cluster's
/// row tiles on the same columns counting as one), each walking its share of the
/// tiles; without SMs to count (the emulator), one cluster, which walks them all.
fn persistent(p: &Problem, info: &DeviceInfo, t: HalfTiling) -> Result<Launch> {
    let (tiles, c) = (t.cluster_tiles(p.dim(Dim::M) as u64, p.dim(Dim::N) as u64), t.cluster as u64);
    let clusters = (u64::from(info.sm_count) / c).clamp(1, tiles.max(1));
    grid(p, t, c * clusters)
}

/// One cluster of two blocks per two SMs, at most one per iteration (a pair tile's
/// k-block of 64), each taking its share of the iterations; one cluster on the
/// emulator unless `info` counts SMs.
fn stream_k(p: &Problem, info: &DeviceInfo) -> Result<Launch> {
    let t = STREAM_K;
    let (m, n, k) = (p.dim(Dim::M) as u64, p.dim(Dim::N) as u64, p.dim(Dim::K) as u64);
    let iterations = t.cluster_tiles(m, n) * k.div_ceil(BK as u64);
    let clusters = (u64::from(info.sm_count) / 2).clamp(1, iterations.max(1));
    grid(p, t, 2 * clusters)
}

/// The stream-k rung's workspace and flags: a slot and a flag a consumer warp for
/// every block of its launch.
fn stream_k_scratch(_: &Problem, l: &Launch) -> u64 {
    scratch_bytes(STREAM_K, l.grid.0 as usize * l.grid.1 as usize * l.grid.2 as usize) as u64
}

fn grid(p: &Problem, t: HalfTiling, blocks: u64) -> Result<Launch> {
    matmul::blocks_1d(p, blocks, t.threads(), t.shared_bytes())
}

/// Declares the rungs once: `NAME => (BF16 KERNEL, FP16 KERNEL), ARGS, LAUNCH;` (and
/// `, scratch SCRATCH` before the `;` for a rung that takes one, `, on RUNG` for a rung
/// that changes one other than the rung before it) makes the variant lists
/// [`BF16_RUNGS`] and [`F16_RUNGS`], in order.
macro_rules! rungs {
    ($($name:literal => ($bf16:ident, $f16:ident), $args:expr, $launch:expr $(, scratch $scratch:expr)? $(, on $on:literal)?;)*) => {
        /// The BF16 rungs, in table order.
        pub const BF16_RUNGS: &[Variant] = &[$(Variant::new($name, &entry::$bf16, $args, $launch)
            .bf16()$(.with_scratch($scratch))?$(.builds_on($on))?),*];
        /// The FP16 rungs, the same in FP16.
        pub const F16_RUNGS: &[Variant] = &[$(Variant::new($name, &entry::$f16, $args, $launch)
            .f16()$(.with_scratch($scratch))?$(.builds_on($on))?),*];
    };
}

rungs! {
    "simt" => (hgemm_simt_bf16, hgemm_simt_f16), ARGS, simt;
    "wgmma" => (hgemm_wgmma_bf16, hgemm_wgmma_f16), HOPPER_ARGS, |p, _| hopper(p, PLAIN, 1);
    "wgmma-ws" => (hgemm_wgmma_ws_bf16, hgemm_wgmma_ws_f16), HOPPER_ARGS, |p, _| hopper(p, SPECIALISED, 1);
    "wgmma-cluster" => (hgemm_wgmma_cluster_bf16, hgemm_wgmma_cluster_f16), HOPPER_ARGS, |p, _| {
        hopper(p, SPECIALISED, 2)
    };
    "persistent" => (hgemm_persistent_bf16, hgemm_persistent_f16), HOPPER_ARGS, |p, info| {
        persistent(p, info, SPECIALISED)
    }, on "wgmma-ws";
    "tma-store" => (hgemm_tma_store_bf16, hgemm_tma_store_f16), STORE_ARGS, |p, info| persistent(p, info, STAGED);
    "small" => (hgemm_small_bf16, hgemm_small_f16), SMALL_ARGS, |p, info| persistent(p, info, SMALL);
    "stream-k" => (hgemm_stream_k_bf16, hgemm_stream_k_f16), STREAM_K_ARGS, stream_k, scratch stream_k_scratch,
        on "tma-store";
    "tma-store-192" => (hgemm_tma_store_192_bf16, hgemm_tma_store_192_f16), STORE_192_ARGS, |p, info| {
        persistent(p, info, STAGED_192)
    }, on "tma-store";
    "tma-store-128" => (hgemm_tma_store_128_bf16, hgemm_tma_store_128_f16), STORE_128_ARGS, |p, info| {
        persistent(p, info, STAGED_128)
    }, on "tma-store";
    "overlap" => (hgemm_overlap_bf16, hgemm_overlap_f16), STORE_ARGS, |p, info| persistent(p, info, STAGED),
        on "tma-store";
}

/// A, B and C of a product, of `elem` elements.
fn buffers(p: &Problem, elem: Elem) -> Option<Vec<Buffer>> {
    Some(matmul::buffers(p)?.into_iter().map(|b| b.of(elem)).collect())
}

fn bf16_buffers(p: &Problem) -> Option<Vec<Buffer>> {
    buffers(p, Elem::Bf16)
}

fn f16_buffers(p: &Problem) -> Option<Vec<Buffer>> {
    buffers(p, Elem::F16)
}

/// 2 m n k FLOPs, and A and B read and C written once, 2 bytes an element.
fn work(p: &Problem) -> Work {
    let (m, n, k) = (p.dim(Dim::M) as u64, p.dim(Dim::N) as u64, p.dim(Dim::K) as u64);
    Work::Flops {
        flops: 2 * m * n * k,
        bytes: 2 * (m * k + k * n + m * n),
    }
}

/// One of the two experiments.
const fn gemm(
    name: &'static str,
    about: &'static str,
    variants: &'static [Variant],
    buffers: fn(&Problem) -> Option<Vec<Buffer>>,
) -> Experiment {
    Experiment {
        name,
        about,
        kind: Kind::Product,
        // 4096 x 4096 x 4096 (2-byte elements).
        default_size: DefaultSize::Bytes(4096 * 4096 * 2),
        variants,
        buffers,
        work,
        reference: Reference::Product { a: 0, b: 1, c: 2 },
        twin: twin!("hgemm.cu"),
    }
}

pub static BF16: Experiment = gemm(
    "gemm-bf16",
    "C = A B in BF16 (f32 accumulation, BF16 out): the 16-bit GEMM, rung by rung, beside cuBLAS BF16",
    BF16_RUNGS,
    bf16_buffers,
);

pub static F16: Experiment = gemm(
    "gemm-f16",
    "C = A B in FP16 (f32 accumulation, FP16 out): the 16-bit GEMM, rung by rung, beside cuBLAS FP16",
    F16_RUNGS,
    f16_buffers,
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::Arithmetic;
    use crate::explain::emulate::{EmuLaunch, validate};

    fn info() -> DeviceInfo {
        DeviceInfo {
            sm_count: 0,
            ..DeviceInfo::h100()
        }
    }

    #[test]
    fn both_types_have_the_same_rungs_in_their_own_precision() {
        assert_eq!(BF16.variant_names(), F16.variant_names());
        assert!(BF16.variants.iter().all(|v| v.arithmetic == Arithmetic::Bf16));
        assert!(F16.variants.iter().all(|v| v.arithmetic == Arithmetic::F16));
        assert_eq!((BF16.elem(), F16.elem()), (Elem::Bf16, Elem::F16));
        assert_eq!(BF16.variants[0].precision(), "BF16");
        assert_eq!(F16.variants[0].precision(), "FP16");
        // Twins named as the Rust kernels are.
        assert_eq!(BF16.twins()[..2], ["hgemm_simt_bf16", "hgemm_wgmma_bf16"]);
        assert_eq!(F16.twins()[4], "hgemm_persistent_f16");
        assert_eq!(F16.twins()[5], "hgemm_tma_store_f16");
        assert_eq!(BF16.twins()[6], "hgemm_small_bf16");
        assert_eq!(F16.twins()[7], "hgemm_stream_k_f16");
        assert_eq!(BF16.twins()[8], "hgemm_tma_store_192_bf16");
        assert_eq!(BF16.twins()[9], "hgemm_tma_store_128_bf16");
        assert_eq!(F16.twins()[10], "hgemm_overlap_f16");
        // Only stream-k keeps a scratch buffer, and it passes it.
        for v in BF16.variants.iter().chain(F16.variants) {
            let passes = v.args.contains(&Arg::Scratch);
            assert_eq!(passes, v.scratch.is_some(), "{}", v.name);
            assert_eq!(passes, v.name == "stream-k");
        }
    }

    #[test]
    fn sizes_count_2_byte_elements() {
        let p = Problem::Product { m: 33, n: 65, k: 17 };
        let bytes = 2 * (33 * 17 + 17 * 65 + 33 * 65);
        assert_eq!((F16.work)(&p).bytes(), bytes);
        // Memory holds the copy engine's padded rows of A and B: k and n to whole 8
        // elements (C dense: see hopper_args).
        assert_eq!(BF16.device_bytes(&p), Some(2 * (33 * 24 + 17 * 72 + 33 * 65)));
        // The default: 4096^3, as sgemm's.
        let (p, chosen) = BF16.requested_problem(None, None, &DeviceInfo::h100()).unwrap();
        assert_eq!((p, chosen), (Problem::Product { m: 4096, n: 4096, k: 4096 }, false));
        // --size 8M: 2048 x 2048 matrices of 2 bytes each.
        let (p, _) = F16.requested_problem(Some(8 << 20), None, &DeviceInfo::h100()).unwrap();
        assert_eq!(p, Problem::Product { m: 2048, n: 2048, k: 2048 });
        let l = BF16.launches(&Problem::Product { m: 33, n: 65, k: 17 }, &DeviceInfo::h100()).unwrap();
        assert_eq!(l[0].unwrap().grid, (3, 2, 1));
        assert_eq!(l[0].unwrap().block, (32, 32, 1));
    }

    /// Both simt kernels on the emulator at shapes that are multiples of nothing
    /// (and one of every awkward product): every entry within the 16-bit bound.
    #[test]
    fn simt_matches_the_reference_at_awkward_shapes() {
        for e in [&BF16, &F16] {
            let v = e.variant("simt").unwrap();
            let mut shapes = vec![Problem::Product { m: 70, n: 45, k: 37 }];
            shapes.extend(Kind::Product.awkward().into_iter().filter(Problem::emulated));
            for p in shapes {
                let check = validate(&EmuLaunch::new(e, v, p, &info()).unwrap(), 3).unwrap();
                assert!(check.ok, "{}/{} at {p}: {}", e.name, v.name, check.detail);
                assert!(check.detail.contains(e.elem().label()), "{}", check.detail);
            }
        }
    }

    /// The Hopper rungs' grids: one block per 128 x 256 tile, whole clusters along m,
    /// and the persistent rungs one block an SM.
    #[test]
    fn hopper_grids_cover_c() {
        let at = |p: Problem, info: &DeviceInfo, v: &str| {
            let l = BF16.launches(&p, info).unwrap();
            l[BF16.variants.iter().position(|x| x.name == v).unwrap()].unwrap()
        };
        let big = Problem::Product { m: 4096, n: 4096, k: 4096 };
        let h100 = DeviceInfo::h100();
        assert_eq!(at(big, &h100, "wgmma").grid, (32 * 16, 1, 1));
        assert_eq!(at(big, &h100, "wgmma").block, (256, 1, 1));
        assert_eq!(at(big, &h100, "wgmma-ws").block, (384, 1, 1));
        assert_eq!(at(big, &h100, "persistent").grid, (h100.sm_count, 1, 1));
        let odd = Problem::Product { m: 300, n: 520, k: 64 };
        assert_eq!(at(odd, &h100, "wgmma-cluster").grid, (2 * 2 * 3, 1, 1), "3 row tiles in 2 pairs, 3 columns");
        assert_eq!(at(odd, &h100, "persistent").grid, (3 * 3, 1, 1), "no more blocks than tiles");
        assert_eq!(at(odd, &info(), "persistent").grid, (1, 1, 1), "one block on the emulator");
        assert!(at(big, &h100, "wgmma").shared_bytes > 192 * 1024);
        assert!(at(big, &h100, "tma-store").shared_bytes <= 227 * 1024, "the most a block may have");
        let small = Problem::Product { m: 1024, n: 1024, k: 1024 };
        assert_eq!(at(small, &h100, "small").grid, (128, 1, 1), "128 tiles of 64 x 128, a cluster a pair");
        assert_eq!(at(small, &h100, "small").block, (256, 1, 1));
        // tma-store-192: 1536^3 is 8 x 12 tiles of 192 x 128, a block each.
        let mid = Problem::Product { m: 1536, n: 1536, k: 1536 };
        assert_eq!(at(mid, &h100, "tma-store-192").grid, (96, 1, 1));
        assert_eq!(at(mid, &h100, "tma-store-192").block, (512, 1, 1));
        assert!(at(mid, &h100, "tma-store-192").shared_bytes <= 227 * 1024);
        // tma-store-128: 1280^3 is 10 x 10 tiles of 128 x 128, a block each.
        let round = Problem::Product { m: 1280, n: 1280, k: 1280 };
        assert_eq!(at(round, &h100, "tma-store-128").grid, (100, 1, 1));
        assert_eq!(at(round, &h100, "tma-store-128").block, (384, 1, 1));
        assert!(at(round, &h100, "tma-store-128").shared_bytes <= 227 * 1024);
        // overlap: tma-store's tiles and launch.
        assert_eq!(at(big, &h100, "overlap"), at(big, &h100, "tma-store"));
        assert_eq!(at(odd, &h100, "overlap").grid, (3 * 3, 1, 1), "no more blocks than tiles");
        // stream-k: every SM, however few tiles; no more clusters than iterations.
        assert_eq!(at(small, &h100, "stream-k").grid, (h100.sm_count / 2 * 2, 1, 1));
        let one = Problem::Product { m: 8, n: 8, k: 128 };
        assert_eq!(at(one, &h100, "stream-k").grid, (2 * 2, 1, 1), "1 pair tile of 2 k-blocks");
        assert_eq!(at(odd, &info(), "stream-k").grid, (2, 1, 1), "one cluster on the emulator");
        // A slot of the tile's f32s (128 x 256 as tuned) and 8 flags a block.
        let v = BF16.variant("stream-k").unwrap();
        let l = at(big, &h100, "stream-k");
        let tile = (STREAM_K.bm() * STREAM_K.bn) as u64;
        assert_eq!(v.scratch_bytes(&big, &l), u64::from(h100.sm_count / 2 * 2) * (tile * 4 + 8 * 4));
    }

    /// The stream-k twin is tuned as the Rust rung is: its tile's width and whether
    /// it deals the hybrid (constants on both sides, which a tuning changes together).
    #[test]
    fn the_stream_k_twin_has_the_rungs_tuning() {
        let header = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../cuda/hgemm_hopper.cuh"));
        let hybrid = format!("constexpr bool H_SK_HYBRID = {};", kernels::hgemm::stream_k::HYBRID);
        assert!(header.contains(&hybrid), "cuda/hgemm_hopper.cuh: {hybrid}");
        for ty in ["__nv_bfloat16", "half"] {
            let call = format!("hgemm_stream_k<{ty}, {}>(", STREAM_K.bn);
            assert!(BF16.twin.source.contains(&call), "cuda/hgemm.cu: {call}");
        }
        assert_eq!((STREAM_K.consumers, STREAM_K.stages), (2, 4), "the twin's HTile<2, BN> and H_STAGES");
    }

    /// The rungs that walk tiles are declared in their tilings' clusters, and their
    /// twins instantiated with the same tilings: clusters, consumers, tile width and
    /// stages.
    #[test]
    fn the_walking_rungs_and_twins_have_their_tilings() {
        let rungs = [
            ("persistent", SPECIALISED),
            ("tma-store", STAGED),
            ("small", SMALL),
            ("tma-store-192", STAGED_192),
            ("tma-store-128", STAGED_128),
        ];
        for (rung, t) in rungs {
            for e in [&BF16, &F16] {
                let v = e.variant(rung).unwrap();
                assert_eq!(v.kernel.cluster as usize, t.cluster, "{}/{rung}", e.name);
            }
            let stages = if t.stages == 4 { String::new() } else { format!(", {}", t.stages) };
            let clustered = t.cluster == 2;
            for ty in ["__nv_bfloat16", "half"] {
                let call = format!(
                    "hgemm_ws<{ty}, {}, {}, {clustered}, true, {}{stages}>(",
                    t.consumers, t.bn, t.staged
                );
                assert!(BF16.twin.source.contains(&call), "cuda/hgemm.cu, {rung}: {call}");
            }
        }
        // overlap: tma-store's tiling (128 x 256, 4 stages) in both, without clusters.
        for e in [&BF16, &F16] {
            assert_eq!(e.variant("overlap").unwrap().kernel.cluster, 1, "{}/overlap", e.name);
        }
        let header = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../cuda/hgemm_hopper.cuh"));
        assert!(header.contains("using TILE = HTile<2, 256>;\n    constexpr int BM = TILE::BM, BN = 256;"));
        assert_eq!((STAGED.consumers, STAGED.bn, STAGED.stages, STAGED.cluster), (2, 256, 4, 1));
    }

    /// stream-k on the emulator with four clusters (a GPU of 8 SMs), so tiles are
    /// split between clusters and fixed up through the workspace: at 136 x 264 x 320
    /// (5 k-blocks: 2 pair tiles of 128 x 256, or 3 of 128 x 128, in 4 ranges, which
    /// split them) and 300 x 520 x 64 (one k-block: nothing to split); in a block's
    /// threads' reverse order too. After each launch every flag is clear again, as
    /// the next launch needs, and a second launch on the same scratch gives the same C.
    #[test]
    fn stream_k_fixes_up_split_tiles_and_clears_its_flags_on_the_emulator() {
        use crate::experiment::Inputs;
        use crate::explain::emulate::{run_whole_on, validate_with};
        use kernels::gpu::emu::Schedule;
        use kernels::hgemm::stream_k::{Deal, HYBRID, slot_words};
        let eight = DeviceInfo {
            sm_count: 8,
            ..DeviceInfo::h100()
        };
        let t = STREAM_K;
        for e in [&BF16, &F16] {
            let v = e.variant("stream-k").unwrap();
            for (m, n, k) in [(136u32, 264u32, 320u32), (300, 520, 64)] {
                let p = Problem::Product {
                    m: m as usize,
                    n: n as usize,
                    k: k as usize,
                };
                let run = EmuLaunch::new(e, v, p, &eight).unwrap();
                assert_eq!(run.grid.x, 8, "four clusters");
                let pairs = m.div_ceil(2 * t.bm() as u32) * n.div_ceil(t.bn as u32);
                let deal = Deal::new(pairs, k.div_ceil(BK as u32), 4, HYBRID);
                let splits = (0..4).any(|c| deal.walk(c).any(|u| u.k1 - u.k0 < deal.ktiles));
                assert_eq!(splits, k > 64, "the first shape splits tiles, the second cannot");
                for schedule in [Schedule::Concurrent, Schedule::Reverse] {
                    let check = validate_with(&run, 13, schedule).unwrap();
                    assert!(check.ok, "{}/stream-k at {p}, {schedule:?}: {}", e.name, check.detail);
                }
                let inputs = Inputs { seed: 14 };
                let mut scratch = vec![0u8; run.scratch];
                let first = run_whole_on(&run, &inputs, Schedule::Concurrent, &mut scratch).unwrap();
                let flags = &scratch[scratch_bytes(t, 8) - 8 * 8 * 4..];
                assert!(flags.iter().all(|&b| b == 0), "{}: flags left set at {p}: {flags:?}", e.name);
                let written = scratch[..4 * slot_words(t) * 8].iter().any(|&b| b != 0);
                assert_eq!(written, splits, "{}: partials in the workspace at {p}", e.name);
                let second = run_whole_on(&run, &inputs, Schedule::Concurrent, &mut scratch).unwrap();
                assert_eq!(first[2].len(), second[2].len());
                assert!(first[2].iter().zip(&second[2]).all(|(a, b)| a.to_bits() == b.to_bits()));
            }
        }
    }

    /// stream-k at 512³ as an H100 launches it: (128 x 256 tiles) 4 pair tiles of 8
    /// k-blocks for 32 clusters (no more than the iterations), a k-block each, so
    /// every tile's owner adds the partials of 7 contributors.
    #[test]
    fn stream_k_sums_a_tile_split_many_ways_on_the_emulator() {
        let p = Problem::Product { m: 512, n: 512, k: 512 };
        let run = EmuLaunch::new(&BF16, BF16.variant("stream-k").unwrap(), p, &DeviceInfo::h100()).unwrap();
        let pairs = 512u32.div_ceil(2 * STREAM_K.bm() as u32) * 512u32.div_ceil(STREAM_K.bn as u32);
        assert!(run.grid.x / 2 >= 4 * pairs, "at least 4 clusters a tile: {:?}", run.grid);
        let check = validate(&run, 21).unwrap();
        assert!(check.ok, "gemm-bf16/stream-k at {p}: {}", check.detail);
    }

    /// The Hopper rungs on the emulator, whose copy engine lands a stage only at the
    /// wait that completes its barrier phase and whose MMAs compute only at the
    /// `wait_group` that retires them: partial tiles in m, n and k, more k-tiles than
    /// stages, a cluster's two blocks on the same columns, and the persistent rungs'
    /// one block walking several tiles; in a block's threads' reverse order too.
    #[test]
    fn hopper_rungs_match_the_reference_on_the_emulator() {
        use crate::explain::emulate::validate_with;
        use kernels::gpu::emu::Schedule;
        for e in [&BF16, &F16] {
            for v in e.variants.iter().filter(|v| v.kernel.module == kernels::handle::PtxModule::Sm90a) {
                for (m, n, k) in [(136, 264, 264), (300, 8, 16)] {
                    let p = Problem::Product { m, n, k };
                    let run = EmuLaunch::new(e, v, p, &info()).unwrap();
                    let check = validate(&run, 11).unwrap();
                    assert!(check.ok, "{}/{} at {p}: {}", e.name, v.name, check.detail);
                    if m == 300 {
                        let check = validate_with(&run, 12, Schedule::Reverse).unwrap();
                        assert!(check.ok, "{}/{} at {p}, reverse: {}", e.name, v.name, check.detail);
                    }
                }
            }
        }
    }

    /// The same results judged with no room for C's rounding (an f32 C's bound) fail:
    /// the emulated kernels really store 16-bit values, and C's rounding in the bound
    /// is what lets them pass.
    #[test]
    fn the_16_bit_results_fail_an_f32_bound() {
        use crate::experiment::Inputs;
        use crate::explain::emulate::run_whole;
        use crate::validate::{ProductBound, check_product_bound};
        for e in [&BF16, &F16] {
            let (m, n, k) = (40, 33, 29);
            let p = Problem::Product { m, n, k };
            let launch = EmuLaunch::new(e, e.variant("simt").unwrap(), p, &info()).unwrap();
            let inputs = Inputs { seed: 5 };
            let out = run_whole(&launch, &inputs, Default::default()).unwrap();
            let elem = e.elem();
            let all: Vec<usize> = (0..m * n).collect();
            let check = |output| {
                let bound = ProductBound { input: 0.0, output };
                let (a, b) = (|i| inputs.value(0, elem, i), |i| inputs.value(1, elem, i));
                check_product_bound(&out[2], (m, n, k), a, b, &all, bound)
            };
            assert!(check(elem).ok, "{}: {}", e.name, check(elem).detail);
            assert!(!check(Elem::F32).ok, "{}: passed with no room for C's rounding", e.name);
            // Every value C holds is one of its type.
            assert!(out[2].iter().all(|&x| elem.round(x) == x));
        }
    }
}
