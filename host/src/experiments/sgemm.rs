//! sgemm: the matmul chapter continued, rung by rung from the coalesced kernel toward
//! cuBLAS (shared-memory tiles, 1D and 2D register blocking, float4 loads, bank
//! conflicts, warp tiling, double buffering, `cp.async` stages), the last rungs in
//! several tunings so the best can be picked per GPU. The `async` rungs need sm_80:
//! their kernels are in the second PTX module, and a GPU without it skips them in one
//! line. C = A B, f32, row-major, any m, n, k; reported in
//! GFLOP/s and validated against an f64 reference ([`Reference::Product`]), with
//! cuBLAS SGEMM on the same buffers.
//!
//! The `tf32` rungs (sm_80 too) multiply on TF32 tensor cores ([`Arithmetic::Tf32`]):
//! their bound allows for the inputs' rounding, and they are compared with cuBLAS in
//! TF32 mode. Their shared stages exceed 48 KiB: dynamic shared memory, opted in at
//! launch.
//!
//! The `wgmma` rungs (sm_90a, the third module; an H100 or H200) take A and B as
//! tensor maps for the copy engine ([`MapSpec`]), whose rows must start on 16-byte
//! boundaries: where k or n is not a multiple of 4, the harness lays that matrix out
//! with its rows padded to the next 16 bytes ([`MapSpec::padded`]), so any m, n, k
//! runs. One operand is truncated to TF32 where the tensor cores read it from shared
//! memory.

use kernels::entry;
use kernels::sgemm::WarpTiling;
use kernels::sgemm::cp_async::{ASYNC_128X128X8, ASYNC_128X256X8};
use kernels::sgemm::pipeline::{PIPE_128X64X16, PIPE_128X128X8, PIPE_128X128X8_4X8, PIPE_128X128X16};
use kernels::sgemm::smem::SMEM_TILE;
use kernels::sgemm::tf32::{TF32_128X128X32, TF32_128X256X32, Tf32Tiling};
use kernels::sgemm::tile_1d::{T1_BM, T1_BN, T1_THREADS};
use kernels::sgemm::tile_2d::{T2_BM, T2_BN, T2_THREADS};
use kernels::sgemm::warptile::WARPTILE;
use kernels::sgemm::wgmma::{
    BK, BN, WGMMA, WGMMA_CLUSTER, WGMMA_TMA_STORE, WGMMA_WS, WGMMA_WS_64, WGMMA_WS_128, WGMMA_WS_192, WgmmaTiling,
};
use kernels::gpu::tma::Swizzle;

use super::matmul;
use crate::device::DeviceInfo;
use crate::error::Result;
#[cfg(doc)]
use crate::experiment::Arithmetic;
use crate::experiment::{Arg, DefaultSize, Dim, Experiment, Kind, Problem, Reference, Variant};
use crate::launch::Launch;
use crate::tensor_map::MapSpec;
use crate::twin;

const ARGS: &[Arg] = matmul::ARGS;

/// A grid of `bm` x `bn` tiles of C, one 1D block of `threads` each.
fn tiles(p: &Problem, bm: usize, bn: usize, threads: usize) -> Result<Launch> {
    matmul::tiles(p, (bm, bn), (threads as u32, 1, 1))
}

fn smem(p: &Problem, _: &DeviceInfo) -> Result<Launch> {
    tiles(p, SMEM_TILE, SMEM_TILE, SMEM_TILE * SMEM_TILE)
}

fn tile_1d(p: &Problem, _: &DeviceInfo) -> Result<Launch> {
    tiles(p, T1_BM, T1_BN, T1_THREADS)
}

fn tile_2d(p: &Problem, _: &DeviceInfo) -> Result<Launch> {
    tiles(p, T2_BM, T2_BN, T2_THREADS)
}

fn warp(p: &Problem, t: WarpTiling) -> Result<Launch> {
    tiles(p, t.bm, t.bn, t.threads)
}

/// The copy engine's view of a Hopper rung: A in boxes of `rows` x 32 (k), B in 32 x
/// 32, both landing with the 128-byte swizzle, each padded to whole 16-byte rows
/// where k or n needs it; C written by the threads.
const fn hopper_args(rows: u32) -> [Arg; 6] {
    [
        Arg::Dim(Dim::M),
        Arg::Dim(Dim::N),
        Arg::Dim(Dim::K),
        Arg::Map(MapSpec::matrix(0, (Dim::M, Dim::K), [rows, BK as u32], Swizzle::B128).padded()),
        Arg::Map(MapSpec::matrix(1, (Dim::K, Dim::N), [BK as u32, 32], Swizzle::B128).padded()),
        Arg::Buffer(2),
    ]
}
const WGMMA_ARGS: &[Arg] = &hopper_args(WGMMA.bm as u32);
const WGMMA_192_ARGS: &[Arg] = &hopper_args(WGMMA_WS_192.bm as u32);
const WGMMA_128_ARGS: &[Arg] = &hopper_args(WGMMA_WS_128.bm as u32);
const WGMMA_64_ARGS: &[Arg] = &hopper_args(WGMMA_WS_64.bm as u32);
/// Clusters: each block copies half of A's tile.
const CLUSTER_ARGS: &[Arg] = &hopper_args(WGMMA_CLUSTER.bm as u32 / 2);
/// wgmma-tma-store: C too is a map, stored by the copy engine in boxes of 32 x 32. C is
/// not padded (as hgemm's tma-store, whose padded C's row tails an H200's copy engine
/// wrote zeros into): at an n that is not a multiple of 4 the rung is left out in one
/// line.
const TMA_STORE_ARGS: &[Arg] = &{
    let a = hopper_args(WGMMA_TMA_STORE.bm as u32);
    let c = Arg::Map(MapSpec::matrix(2, (Dim::M, Dim::N), [32, 32], Swizzle::B128));
    [a[0], a[1], a[2], a[3], a[4], c]
};

/// A Hopper tuning's tiles, one block each (the kernel orders them), with its stages
/// as dynamic shared memory; `cluster` blocks a cluster, the grid rounded up to whole
/// clusters (the extra block of a last odd pair computes nothing outside C).
fn hopper(p: &Problem, t: WgmmaTiling, cluster: usize) -> Result<Launch> {
    let one = tiles(p, t.bm, BN, t.threads())?;
    let (tiles_m, tiles_n) = (one.grid.1 as u64, one.grid.0 as u64);
    let blocks = tiles_m * tiles_n.div_ceil(cluster as u64) * cluster as u64;
    matmul::blocks_1d(p, blocks, t.threads(), t.shared_bytes())
}

/// One block an SM (at most one a tile), each walking its share of the tiles; one
/// block on the emulator unless `info` counts SMs.
fn persistent(p: &Problem, info: &DeviceInfo, t: WgmmaTiling) -> Result<Launch> {
    let one = tiles(p, t.bm, BN, t.threads())?;
    let tiles = u64::from(one.grid.0) * u64::from(one.grid.1);
    let blocks = u64::from(info.sm_count).clamp(1, tiles.max(1));
    matmul::blocks_1d(p, blocks, t.threads(), t.shared_bytes())
}

/// A tensor-core tuning's tiles, with its shared stages as dynamic shared memory.
fn tf32(p: &Problem, t: Tf32Tiling) -> Result<Launch> {
    Ok(Launch {
        shared_bytes: t.shared_bytes() as u32,
        ..tiles(p, t.bm, t.bn, t.threads)?
    })
}

pub static EXPERIMENT: Experiment = Experiment {
    name: "sgemm",
    about: "the matmul chapter continued: shared tiles, register blocking, float4, banks, warp tiles, double buffering, cp.async, TF32 tensor cores",
    kind: Kind::Product,
    // 4096 x 4096 x 4096.
    default_size: DefaultSize::Bytes(4096 * 4096 * 4),
    variants: &[
        Variant::new("smem", &entry::sgemm_smem, ARGS, smem),
        Variant::new("tile-1d", &entry::sgemm_tile_1d, ARGS, tile_1d),
        Variant::new("tile-2d", &entry::sgemm_tile_2d, ARGS, tile_2d),
        Variant::new("vec4", &entry::sgemm_vec4, ARGS, tile_2d),
        Variant::new("banks", &entry::sgemm_banks, ARGS, tile_2d),
        Variant::new("warptile", &entry::sgemm_warptile, ARGS, |p, _| warp(p, WARPTILE)),
        Variant::new("pipeline-128x128x16", &entry::sgemm_pipeline_128x128x16, ARGS, |p, _| {
            warp(p, PIPE_128X128X16)
        }),
        Variant::new("pipeline-128x128x8", &entry::sgemm_pipeline_128x128x8, ARGS, |p, _| {
            warp(p, PIPE_128X128X8)
        }),
        Variant::new("pipeline-128x128x8-4x8", &entry::sgemm_pipeline_128x128x8_4x8, ARGS, |p, _| {
            warp(p, PIPE_128X128X8_4X8)
        }),
        Variant::new("interior", &entry::sgemm_interior, ARGS, |p, _| warp(p, PIPE_128X128X8_4X8)),
        Variant::new("pipeline-128x64x16", &entry::sgemm_pipeline_128x64x16, ARGS, |p, _| {
            warp(p, PIPE_128X64X16)
        })
        .builds_on("pipeline-128x128x8"),
        Variant::new("async-128x128x8", &entry::sgemm_async_128x128x8, ARGS, |p, _| {
            warp(p, ASYNC_128X128X8)
        })
        .builds_on("pipeline-128x128x8"),
        Variant::new("async-128x256x8", &entry::sgemm_async_128x256x8, ARGS, |p, _| {
            warp(p, ASYNC_128X256X8)
        }),
        Variant::new("tf32-128x128x32", &entry::sgemm_tf32_128x128x32, ARGS, |p, _| {
            tf32(p, TF32_128X128X32)
        })
        .tf32()
        .builds_on("async-128x128x8"),
        Variant::new("tf32-128x256x32", &entry::sgemm_tf32_128x256x32, ARGS, |p, _| {
            tf32(p, TF32_128X256X32)
        })
        .tf32(),
        Variant::new("wgmma", &entry::sgemm_wgmma, WGMMA_ARGS, |p, _| hopper(p, WGMMA, 1)).tf32_truncating(),
        Variant::new("wgmma-ws", &entry::sgemm_wgmma_ws, WGMMA_ARGS, |p, _| hopper(p, WGMMA_WS, 1)).tf32_truncating(),
        Variant::new("wgmma-ws-192", &entry::sgemm_wgmma_ws_192, WGMMA_192_ARGS, |p, _| {
            hopper(p, WGMMA_WS_192, 1)
        })
        .tf32_truncating()
        .builds_on("wgmma-ws"),
        Variant::new("wgmma-ws-128", &entry::sgemm_wgmma_ws_128, WGMMA_128_ARGS, |p, _| {
            hopper(p, WGMMA_WS_128, 1)
        })
        .tf32_truncating()
        .builds_on("wgmma-ws"),
        Variant::new("wgmma-ws-64", &entry::sgemm_wgmma_ws_64, WGMMA_64_ARGS, |p, _| {
            hopper(p, WGMMA_WS_64, 1)
        })
        .tf32_truncating()
        .builds_on("wgmma-ws"),
        Variant::new("wgmma-cluster", &entry::sgemm_wgmma_cluster, CLUSTER_ARGS, |p, _| {
            hopper(p, WGMMA_CLUSTER, 2)
        })
        .tf32_truncating()
        .builds_on("wgmma-ws"),
        Variant::new("wgmma-tma-store", &entry::sgemm_wgmma_tma_store, TMA_STORE_ARGS, |p, info| {
            persistent(p, info, WGMMA_TMA_STORE)
        })
        .tf32_truncating()
        .builds_on("wgmma-ws"),
    ],
    buffers: matmul::buffers,
    work: matmul::work,
    reference: Reference::Product { a: 0, b: 1, c: 2 },
    twin: twin!("sgemm.cu"),
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_cover_c_with_each_rungs_tiles() {
        let p = Problem::Product { m: 1000, n: 17, k: 33 };
        let l = EXPERIMENT.launches(&p, &DeviceInfo::h100()).unwrap();
        let by_name = |v: &str| l[EXPERIMENT.variants.iter().position(|x| x.name == v).unwrap()].unwrap();
        assert_eq!(by_name("smem").grid, (1, 32, 1));
        assert_eq!(by_name("smem").block, (1024, 1, 1));
        assert_eq!(by_name("tile-1d").grid, (1, 16, 1));
        assert_eq!(by_name("tile-1d").block, (512, 1, 1));
        assert_eq!(by_name("banks").grid, (1, 8, 1));
        assert_eq!(by_name("banks").block, (256, 1, 1));
        assert_eq!(by_name("warptile").block, (128, 1, 1));
        assert_eq!(by_name("pipeline-128x128x8").block, (256, 1, 1));
        assert_eq!(by_name("pipeline-128x128x8-4x8").grid, (1, 8, 1));
        assert_eq!(by_name("pipeline-128x64x16").grid, (1, 8, 1));
        assert_eq!(by_name("async-128x128x8").block, (256, 1, 1));
        assert_eq!(by_name("async-128x256x8").grid, (1, 8, 1));
        let t = by_name("tf32-128x256x32");
        assert_eq!((t.grid, t.block, t.shared_bytes), ((1, 8, 1), (256, 1, 1), 156_672));
        assert_eq!(by_name("tf32-128x128x32").shared_bytes, 107_520);
        let big = Problem::Product { m: 4096, n: 4096, k: 4096 };
        let l = EXPERIMENT.launches(&big, &DeviceInfo::h100()).unwrap();
        // Every rung but the persistent one has a thread for every 128 elements of C.
        let per_tile = EXPERIMENT.variants.iter().zip(&l).filter(|(v, _)| v.name != "wgmma-tma-store");
        assert!(per_tile.flat_map(|(_, l)| l).all(|l| l.grid.0 * l.grid.1 * l.block.0 >= 4096 * 4096 / 128));
        // The Hopper rungs: one block per 256 x 128 tile (192, 128 or 64 x 128), whole clusters.
        let hopper = |v: &str| l[EXPERIMENT.variants.iter().position(|x| x.name == v).unwrap()].unwrap();
        assert_eq!(hopper("wgmma").grid, (16 * 32, 1, 1));
        assert_eq!(hopper("wgmma").block, (256, 1, 1));
        assert_eq!(hopper("wgmma-ws").block, (384, 1, 1));
        assert_eq!(hopper("wgmma-ws-192").grid, (22 * 32, 1, 1));
        assert_eq!(hopper("wgmma-ws-128").grid, (32 * 32, 1, 1));
        let small = hopper("wgmma-ws-64");
        assert_eq!((small.grid, small.shared_bytes), ((64 * 32, 1, 1), 8 * 24 * 1024 + 8 * 16 + 1024));
        assert_eq!(hopper("wgmma-cluster").grid, (16 * 32, 1, 1));
        let store = hopper("wgmma-tma-store");
        assert_eq!((store.grid, store.block), ((132, 1, 1), (384, 1, 1)), "one block an SM");
        assert_eq!(store.shared_bytes, 4 * 48 * 1024 + 32 * 1024 + 4 * 16 + 1024);
        let odd = Problem::Product { m: 300, n: 400, k: 64 };
        let l = EXPERIMENT.launches(&odd, &DeviceInfo::h100()).unwrap();
        let at = |v: &str| l[EXPERIMENT.variants.iter().position(|x| x.name == v).unwrap()].unwrap();
        assert_eq!(at("wgmma-cluster").grid, (2 * 2 * 2, 1, 1), "4 column tiles in 2 pairs, 2 row tiles");
        assert_eq!(at("wgmma-tma-store").grid, (2 * 4, 1, 1), "no more blocks than tiles");
    }

    /// The tensor-core rungs on the emulator at a shape that is a multiple of nothing
    /// (not of a tile, a warp's 64 or an mma's 16 x 8 x 8, nor of 4: the 4-byte copy
    /// paths): every entry within the TF32 bound, and, since the emulated tensor cores
    /// really see TF32 inputs, not within the FP32 bound.
    #[test]
    fn tf32_rungs_match_the_reference_at_an_awkward_shape() {
        use crate::experiment::Arithmetic;
        use crate::explain::emulate::{EmuLaunch, validate};
        let info = DeviceInfo {
            sm_count: 0,
            ..DeviceInfo::h100()
        };
        let p = Problem::Product { m: 70, n: 45, k: 37 };
        let tf32: Vec<&Variant> = EXPERIMENT
            .variants
            .iter()
            .filter(|v| v.arithmetic == Arithmetic::Tf32 && v.rounding.is_none())
            .collect();
        assert_eq!(tf32.len(), 2);
        for v in tf32 {
            let check = validate(&EmuLaunch::new(&EXPERIMENT, v, p, &info).unwrap(), 3).unwrap();
            assert!(check.ok, "{} at {p}: {}", v.name, check.detail);
            // The same kernel judged as an FP32 one.
            let fp32: &'static Variant = Box::leak(Box::new(Variant { arithmetic: Arithmetic::Fp32, ..*v }));
            let strict = validate(&EmuLaunch::new(&EXPERIMENT, fp32, p, &info).unwrap(), 3).unwrap();
            assert!(!strict.ok, "{} passed the FP32 bound: {}", v.name, strict.detail);
        }
    }

    #[test]
    fn products_beyond_32_bit_indices_are_refused() {
        let p = Problem::Product { m: 1 << 16, n: 1 << 16, k: 1 };
        let e = EXPERIMENT.launches(&p, &DeviceInfo::h100()).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("32-bit indices"), "{e}");
    }

    /// The awkward sizes never have n % 4 == 0, so the float4 paths for B and C (and,
    /// with k % 4 == 0, for A) are run here: partial tiles in m, n and k, vector loads.
    /// Every rung also runs with a block's threads one at a time in reverse order,
    /// which shows a missing barrier deterministically (in a shared tile, a double
    /// buffer or a `cp.async` stage); the emulator lands a `cp.async` only at the wait
    /// that covers it, so a stage read before its wait reads poison. k = 44: 6 tiles of
    /// 8 (more than the 3 stages), the last one partial.
    #[test]
    fn vector_paths_and_double_buffers_match_the_reference_on_the_emulator() {
        use crate::explain::emulate::{EmuLaunch, validate, validate_with};
        use kernels::gpu::emu::Schedule;
        let info = DeviceInfo {
            sm_count: 0,
            ..DeviceInfo::h100()
        };
        let p = Problem::Product { m: 130, n: 136, k: 44 };
        for v in EXPERIMENT.variants.iter().filter(|v| v.kernel.module != kernels::handle::PtxModule::Sm90a) {
            let run = EmuLaunch::new(&EXPERIMENT, v, p, &info).unwrap();
            let check = validate(&run, 11).unwrap();
            assert!(check.ok, "{} at {p}: {}", v.name, check.detail);
            let check = validate_with(&run, 12, Schedule::Reverse).unwrap();
            assert!(check.ok, "{} at {p}, reverse schedule: {}", v.name, check.detail);
        }
    }

    /// The Hopper rungs on the emulator, whose copy engine lands a stage only at the
    /// wait that completes its barrier phase and whose warpgroup MMAs compute only at
    /// the `wait_group` that retires them (the cluster rung's two blocks together, each
    /// landing the other's multicast half of A): partial tiles in m, n and k (the copy
    /// engine's zero fill), one and several k-tiles, more k-tiles than stages.
    #[test]
    fn hopper_rungs_match_the_reference_on_the_emulator() {
        use crate::explain::emulate::{EmuLaunch, validate, validate_with};
        use kernels::gpu::emu::Schedule;
        let info = DeviceInfo {
            sm_count: 0,
            ..DeviceInfo::h100()
        };
        let hopper = EXPERIMENT
            .variants
            .iter()
            .filter(|v| v.kernel.module == kernels::handle::PtxModule::Sm90a);
        for v in hopper {
            for (m, n, k) in [(130, 136, 44), (260, 132, 200), (7, 4, 4)] {
                let p = Problem::Product { m, n, k };
                let run = EmuLaunch::new(&EXPERIMENT, v, p, &info).unwrap();
                let check = validate(&run, 11).unwrap();
                assert!(check.ok, "{} at {p}: {}", v.name, check.detail);
                let check = validate_with(&run, 12, Schedule::Reverse).unwrap();
                assert!(check.ok, "{} at {p}, reverse schedule: {}", v.name, check.detail);
            }
        }
    }
}
