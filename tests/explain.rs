//! `coalesce explain` on the CPU: the lessons' numbers come out of the kernels' own
//! source. (The model rules themselves are unit-tested in `explain::emulate::model`.)

use coalesce::experiments::select;
use coalesce::explain::emulate::analyse::{Direction, Memory, Pattern, SiteStats};
use coalesce::explain::emulate::model::Model;
use coalesce::explain::{ExplainEvent, KernelReport, Options, explain};

/// Explains `EXPERIMENT/VARIANT` at `size` bytes per array (None: the default).
fn explain_at(word: &str, size: Option<u64>, shape: Option<Vec<usize>>, model: Model) -> KernelReport {
    let selection = select(&[word.to_string()]).unwrap();
    let opts = Options {
        size,
        shape,
        model,
        blocks: 8,
        profile: None,
        memory_limit: coalesce::explain::EMULATION_BYTES,
    };
    let mut report = explain(&selection, &opts, |_| {}).unwrap();
    assert_eq!(report.kernels.len(), 1, "{word}");
    report.kernels.remove(0)
}

fn explain_one(word: &str, size: u64, model: Model) -> KernelReport {
    explain_at(word, Some(size), None, model)
}

fn site(k: &KernelReport, space: Memory, op: Direction) -> &SiteStats {
    let mut matching = k.sites.iter().filter(|s| s.space == space && s.op == op);
    let s = matching
        .next()
        .unwrap_or_else(|| panic!("{}: no {space:?} {op:?} site", k.kernel));
    assert!(
        matching.next().is_none(),
        "{}: one {space:?} {op:?} site",
        k.kernel
    );
    s
}

const DEFAULT: u64 = 256 << 20;

#[test]
fn stride_s_costs_min_4s_32_sectors_per_request() {
    for s in kernels::stride::STRIDES {
        let k = explain_one(&format!("stride/{s}"), DEFAULT, Model::Sm70);
        assert!(k.sampled_blocks.is_some(), "the default size is sampled");
        let load = site(&k, Memory::Global, Direction::Load);
        assert_eq!(load.sectors_per_request(), (4 * s).min(32) as f64, "stride {s}");
        assert!(load.file.ends_with("stride.rs"), "{}", load.file);
        let store = site(&k, Memory::Global, Direction::Store);
        assert_eq!(store.sectors_per_request(), 4.0, "the write stays coalesced");
        assert_eq!(store.pattern, Pattern::Coalesced);
        let want = if s == 1 {
            Pattern::Coalesced
        } else if s < 8 {
            Pattern::Strided
        } else {
            Pattern::Scattered
        };
        assert_eq!(load.pattern, want, "stride {s}");
        assert_eq!(load.efficiency_pct(), 100.0 / (s.min(8) as f64), "stride {s}");
    }
}

#[test]
fn small_sizes_emulate_the_whole_grid_and_count_the_partial_warp() {
    // 1000 elements: 4 blocks of 256, the last warp has 8 active lanes.
    let k = explain_one("copy/f32", 4000, Model::Sm70);
    assert_eq!(k.sampled_blocks, None);
    assert_eq!(k.blocks_emulated(), 4);
    let load = site(&k, Memory::Global, Direction::Load);
    assert_eq!(load.requests, 1000_u64.div_ceil(32));
    assert_eq!(load.lanes, 1000);
    assert_eq!(load.useful_bytes, 4000);
    assert_eq!(load.sectors, 1000 / 8);
}

#[test]
fn vector_copies_move_16_sectors_per_request() {
    let k = explain_one("copy/f32x4", DEFAULT, Model::Sm70);
    for op in [Direction::Load, Direction::Store] {
        let s = site(&k, Memory::Global, op);
        assert_eq!(s.sectors_per_request(), 16.0);
        assert_eq!(s.efficiency_pct(), 100.0);
    }
}

#[test]
fn a_misaligned_read_costs_one_extra_sector() {
    for (o, sectors, pattern) in [
        (0, 4.0, Pattern::Coalesced),
        (1, 5.0, Pattern::Misaligned),
        (8, 4.0, Pattern::Coalesced),
        (32, 4.0, Pattern::Coalesced),
    ] {
        let k = explain_one(&format!("offset/{o}"), DEFAULT, Model::Sm70);
        let load = site(&k, Memory::Global, Direction::Load);
        assert_eq!(
            (load.sectors_per_request(), load.pattern),
            (sectors, pattern),
            "offset {o}"
        );
    }
}

#[test]
fn the_compute_capability_1x_models_punish_misalignment() {
    let load = |word: &str, model| {
        let k = explain_one(word, 1 << 20, model);
        let s = site(&k, Memory::Global, Direction::Load);
        (
            s.transactions_per_request(),
            s.fetched_bytes as f64 / s.requests as f64,
        )
    };
    // In sequence: one 64-byte segment per half-warp on both.
    assert_eq!(load("offset/0", Model::Cc10), (2.0, 128.0));
    assert_eq!(load("offset/0", Model::Cc12), (2.0, 128.0));
    // Shifted one word: cc1.0 falls back to one transaction per thread; cc1.2 serves
    // the first half-warp with a 128-byte segment, the second with 64 + 32 bytes.
    assert_eq!(load("offset/1", Model::Cc10), (32.0, 32.0 * 32.0));
    assert_eq!(load("offset/1", Model::Cc12), (3.0, 128.0 + 64.0 + 32.0));
    // The sector counts do not depend on the model.
    let k = explain_one("offset/1", 1 << 20, Model::Cc10);
    assert_eq!(
        site(&k, Memory::Global, Direction::Load).sectors_per_request(),
        5.0
    );
}

/// The one global site of `k` that accesses `buffer` with `op`.
fn on<'k>(k: &'k KernelReport, buffer: &str, op: Direction) -> &'k SiteStats {
    let mut matching = k
        .sites
        .iter()
        .filter(|s| s.space == Memory::Global && s.op == op && s.buffer.as_deref() == Some(buffer));
    let s = matching
        .next()
        .unwrap_or_else(|| panic!("{}: no {op:?} of {buffer}", k.kernel));
    assert!(matching.next().is_none(), "{}: one {op:?} of {buffer}", k.kernel);
    s
}

#[test]
fn the_naive_transposes_scatter_the_side_that_walks_down_a_column() {
    let w = explain_at("transpose/naive-write", None, None, Model::Sm70);
    assert_eq!(on(&w, "src", Direction::Load).sectors_per_request(), 4.0);
    assert_eq!(on(&w, "dst", Direction::Store).sectors_per_request(), 32.0);
    let r = explain_at("transpose/naive-read", None, None, Model::Sm70);
    assert_eq!(on(&r, "src", Direction::Load).sectors_per_request(), 32.0);
    assert_eq!(on(&r, "dst", Direction::Store).sectors_per_request(), 4.0);
}

#[test]
fn padding_the_tile_turns_a_32_way_column_read_into_a_1_way_one() {
    for (variant, ways) in [("tiled", 32), ("tiled-padded", 1)] {
        // A non-square shape: the tile logic, not the matrix, sets the conflicts.
        let k = explain_at(
            &format!("transpose/{variant}"),
            None,
            Some(vec![1024, 3072]),
            Model::Sm70,
        );
        let read = site(&k, Memory::Shared, Direction::Load);
        assert_eq!(
            (read.ways_per_request(), read.bank_ways_max),
            (ways as f64, ways),
            "{variant}"
        );
        let write = site(&k, Memory::Shared, Direction::Store);
        assert_eq!(
            write.bank_ways_max, 1,
            "{variant}: the row write is conflict-free"
        );
        assert_eq!(on(&k, "src", Direction::Load).sectors_per_request(), 4.0);
        assert_eq!(on(&k, "dst", Direction::Store).sectors_per_request(), 4.0);
    }
}

#[test]
fn matmul_naive_scatters_a_and_the_remap_coalesces_it_behind_a_broadcast() {
    // m x n x k = 256 x 320 x 64: not square, sampled, every warp full.
    let shape = Some(vec![256, 320, 64]);
    let naive = explain_at("matmul/naive", None, shape.clone(), Model::Sm70);
    assert!(naive.sampled_blocks.is_some());
    let a = on(&naive, "a", Direction::Load);
    assert_eq!((a.sectors_per_request(), a.pattern), (32.0, Pattern::Scattered));
    assert_eq!(on(&naive, "b", Direction::Load).pattern, Pattern::Broadcast);
    assert_eq!(on(&naive, "c", Direction::Store).sectors_per_request(), 32.0);
    for variant in ["accidental", "remapped"] {
        let k = explain_at(&format!("matmul/{variant}"), None, shape.clone(), Model::Sm70);
        let a = on(&k, "a", Direction::Load);
        assert_eq!(
            (a.sectors_per_request(), a.pattern),
            (1.0, Pattern::Broadcast),
            "{variant}"
        );
        let b = on(&k, "b", Direction::Load);
        assert_eq!(
            (b.sectors_per_request(), b.pattern),
            (4.0, Pattern::Coalesced),
            "{variant}"
        );
        assert_eq!(
            on(&k, "c", Direction::Store).sectors_per_request(),
            4.0,
            "{variant}"
        );
    }
}

#[test]
fn float4_saxpy_stays_coalesced_and_its_strided_walk_does_not() {
    let f32 = explain_at("saxpy/f32", None, None, Model::Sm70);
    assert_eq!(on(&f32, "x", Direction::Load).sectors_per_request(), 4.0);
    let v = explain_at("saxpy/f32x4", None, None, Model::Sm70);
    for (buffer, op) in [
        ("x", Direction::Load),
        ("y", Direction::Load),
        ("y", Direction::Store),
    ] {
        let s = on(&v, buffer, op);
        assert_eq!(
            (s.sectors_per_request(), s.efficiency_pct()),
            (16.0, 100.0),
            "{buffer} {op:?}"
        );
    }
    let strided = explain_at("saxpy/f32x4-strided", None, None, Model::Sm70);
    let x = on(&strided, "x", Direction::Load);
    assert_eq!((x.sectors_per_request(), x.efficiency_pct()), (32.0, 50.0));
}

#[test]
fn aos_field_loads_touch_24_sectors_and_soa_loads_4() {
    let aos = explain_at("particles/aos", None, None, Model::Sm70);
    let (load, store) = (
        on(&aos, "particles", Direction::Load),
        on(&aos, "particles", Direction::Store),
    );
    // The 24-byte struct read is six 4-byte loads, each spanning 32 x 24 bytes.
    assert_eq!(load.sectors_per_request(), 24.0);
    assert_eq!(
        load.requests,
        2 * store.requests,
        "six loads, three stores per particle"
    );
    let soa = explain_at("particles/soa", None, None, Model::Sm70);
    assert!(soa.sites.len() == 9 && soa.sites.iter().all(|s| s.sectors_per_request() == 4.0));
}

#[test]
fn interleaved_complex_reads_are_the_stride_2_trap() {
    let k = explain_at("complex/interleaved", None, None, Model::Sm70);
    let s = on(&k, "src", Direction::Load);
    assert_eq!((s.sectors_per_request(), s.efficiency_pct()), (8.0, 50.0));
    let k = explain_at("complex/split", None, None, Model::Sm70);
    assert_eq!(on(&k, "src", Direction::Load).sectors_per_request(), 4.0);
}

/// With a schema-3 profile, residency comes from ptxas's registers and shared bytes
/// for the profile's architecture (where ptxas is installed; CI requires it), and the
/// blocks per SM are the formula's on them; without ptxas, explain says it counts
/// threads only.
#[test]
fn residency_comes_from_ptxas_for_the_profiles_gpu() {
    use coalesce::explain::residency::{Limit, residency};
    use coalesce::profile::{Profile, SmLimits};
    let shipped = Profile::shipped("H100").unwrap().unwrap();
    let profile = Profile {
        schema: coalesce::profile::PROFILE_SCHEMA,
        sm: Some(SmLimits {
            compute_capability: [9, 0],
            registers_per_sm: 65536,
            register_allocation_unit: 256,
            shared_bytes_per_sm: 233472,
            reserved_shared_bytes_per_block: 1024,
            max_blocks_per_sm: 32,
        }),
        // Rates for the arithmetic only (not measured): large enough never to bind.
        load_lines_per_ns_per_sm: Some(1e6),
        store_lines_per_ns_per_sm: Some(1e6),
        shared_wavefronts_per_ns_per_sm: Some(1e6),
        // A launch's fixed cost and its gap, for the arithmetic only: the profile
        // leaves nothing out.
        launch_ns: Some(1.0),
        launch_gap_ns: Some(1.0),
        ..shipped
    };
    let opts = Options {
        size: None,
        shape: None,
        model: Model::Sm70,
        blocks: 2,
        profile: Some(profile.clone()),
        memory_limit: coalesce::explain::EMULATION_BYTES,
    };
    let selection = select(&["transpose/tiled-padded".to_string(), "copy/f32".to_string()]).unwrap();
    let report = explain(&selection, &opts, |_| {}).unwrap();
    for k in &report.kernels {
        let p = k.prediction.as_ref().unwrap();
        let threads = k.block.iter().product::<u32>();
        match p.resources {
            Some(r) => {
                assert!(r.registers > 0, "{}: {r:?}", k.kernel);
                let want = residency(
                    threads,
                    0,
                    profile.max_threads_per_sm,
                    profile.sm.as_ref(),
                    Some(r),
                );
                assert_eq!(p.residency, want, "{}", k.kernel);
                assert!(p.not_modelled.is_empty(), "{}: {:?}", k.kernel, p.not_modelled);
            }
            None => {
                assert!(
                    std::env::var_os("COALESCE_REQUIRE_PTXAS").is_none(),
                    "COALESCE_REQUIRE_PTXAS is set but explain found no ptxas: {:?}",
                    p.not_modelled
                );
                assert_eq!(p.residency.limit, Limit::Threads);
                assert!(
                    p.not_modelled
                        .iter()
                        .any(|l| l.starts_with("residency counts threads only")),
                    "{:?}",
                    p.not_modelled
                );
            }
        }
    }
    // The tiled transpose's tile is in its static shared bytes: 32 x 33 floats.
    let tiled = report
        .kernels
        .iter()
        .find(|k| k.variant == "tiled-padded")
        .unwrap();
    if let Some(r) = tiled.prediction.as_ref().unwrap().resources {
        assert!(r.shared_bytes >= 32 * 33 * 4, "{r:?}");
    }
}

/// Sites executed more often weigh more: the warp-tiled rungs load B's fragment
/// (four float4s per k step, four wavefronts each) twice as often as A's (two float4s,
/// two wavefronts: lanes pair up on one address), 10/3 per request as Nsight Compute
/// counted on the H100 (docs/explain.md). The cp.async rung's global reads show why
/// the weights matter: each thread's first 16 executions of each site are recorded,
/// alike for the copies of A (four per tile) and of B (one).
#[test]
fn per_request_averages_weigh_each_site_by_its_executions() {
    let k = explain_at("sgemm/warptile", None, Some(vec![256, 256, 64]), Model::Sm70);
    let loads: Vec<&SiteStats> = k
        .sites
        .iter()
        .filter(|s| s.space == Memory::Shared && s.op == Direction::Load)
        .collect();
    assert_eq!(loads.len(), 2, "the A and B fragment loads");
    let (a, b) = (loads[0], loads[1]);
    assert_eq!(
        (a.wavefronts_per_request(), b.wavefronts_per_request()),
        (2.0, 4.0)
    );
    assert!(
        a.requests < a.executions && b.requests < b.executions,
        "recording is capped"
    );
    assert_eq!(2 * a.executions, b.executions);
    let w = k.wavefronts_per_request(Direction::Load).unwrap();
    assert!((w - 10.0 / 3.0).abs() < 1e-12, "{w}");
    // The cp.async rung copies A as four 4-byte copies per thread per tile (4 sectors
    // each: 8 lanes per row of 32 bytes) and B as one 16-byte copy (16 sectors): 32
    // sectors over 5 requests, where the recorded requests alone give (4 + 16) / 2.
    let k = explain_at(
        "sgemm/async-128x128x8",
        None,
        Some(vec![256, 256, 64]),
        Model::Sm70,
    );
    let g = k.sectors_per_request(Direction::Load).unwrap();
    assert!((g - 32.0 / 5.0).abs() < 1e-12, "{g}");
}

/// `cp.async` is one `LDGSTS` instruction on the GPU: its global read counts with the
/// global loads (as Nsight Compute counts it), its shared write is not a shared store
/// but a class of its own.
#[test]
fn async_copies_are_ldgsts_not_shared_stores() {
    let k = explain_at(
        "sgemm/async-128x128x8",
        None,
        Some(vec![256, 256, 64]),
        Model::Sm70,
    );
    let copies: Vec<&SiteStats> = k.sites.iter().filter(|s| s.async_copy).collect();
    assert_eq!(copies.len(), 4, "A and B, each a global read and a shared write");
    assert!(
        copies
            .iter()
            .all(|s| (s.space == Memory::Global) == (s.op == Direction::Load))
    );
    assert!(
        k.sites
            .iter()
            .filter(|s| s.space == Memory::Shared && s.op == Direction::Store)
            .all(|s| s.async_copy)
    );
    assert_eq!(k.wavefronts_per_request(Direction::Store), None);
    // A's transposed 4-byte copies (rows 132 floats apart, 8 lanes per row) hit 32
    // banks once, 1 bank wavefront, but read 4 global lines (4 rows of 32 bytes, 256
    // bytes apart at k = 64): 4; B's 16-byte copies are 512 contiguous bytes, 4 lines
    // and 4 bank wavefronts: 4.
    let w = k.async_copy_wavefronts_per_request().unwrap();
    assert!((w - 4.0).abs() < 1e-12, "{w}");
    // The TF32 rungs' 16-byte copies take a wavefront per global line and 128-byte
    // shared row it lands in. A: copies of four 128-byte rows 144 bytes apart, 7 where
    // the first row is aligned (every other copy), else 8: 7.5. B: 512-byte rows 544
    // apart, 4 where the row is aligned (one in four), else 8: 7. 32 A copies per tile
    // beside 32 B copies (128 x 128) or 64 (128 x 256). Nsight Compute (H100): 7.00
    // and 7.01.
    for (word, want) in [
        ("sgemm/tf32-128x128x32", 7.25),
        ("sgemm/tf32-128x256x32", (32.0 * 7.5 + 64.0 * 7.0) / 96.0),
    ] {
        let k = explain_at(word, None, Some(vec![256, 256, 64]), Model::Sm70);
        let w = k.async_copy_wavefronts_per_request().unwrap();
        assert!((w - want).abs() < 1e-9, "{word}: {w}");
    }
    // A kernel without cp.async has none.
    let k = explain_at(
        "sgemm/pipeline-128x128x8",
        None,
        Some(vec![256, 256, 64]),
        Model::Sm70,
    );
    assert_eq!(k.async_copy_wavefronts_per_request(), None);
    assert!(k.wavefronts_per_request(Direction::Store).is_some());
}

/// Nsight Compute's global load sectors of a 16-byte `cp.async` (`cp.async.cg`,
/// `LDGSTS.BYPASS`) are the 32-byte sectors of shared memory it writes; a 4-byte one's
/// (`cp.async.ca`) the global sectors it reads. The TF32 rung's A tile has rows of 128
/// bytes, 144 apart in shared memory: a copy's four rows read 16 sectors and write 18
/// (the two odd rows start 16 bytes into a sector), B's 512 contiguous bytes 16 each,
/// as many A copies as B: 17 per request, as the H100 counted (docs/explain.md).
#[test]
fn a_16_byte_cp_async_counts_the_shared_sectors_it_writes() {
    let k = explain_at(
        "sgemm/tf32-128x128x32",
        None,
        Some(vec![256, 256, 64]),
        Model::Sm70,
    );
    let copies: Vec<&SiteStats> = k.sites.iter().filter(|s| s.async_copy).collect();
    assert!(copies.iter().all(|s| s.lane_bytes == 16), "cp.async.cg only");
    assert_eq!(k.sectors_per_request(Direction::Load), Some(16.0));
    assert_eq!(k.ncu_sectors_per_request(Direction::Load), Some(17.0));
    // The FP32 rung's 4-byte copies of A (transposed: 8 shared sectors, 4 global)
    // count their global sectors: 32 over 5 requests either way.
    let k = explain_at(
        "sgemm/async-128x128x8",
        None,
        Some(vec![256, 256, 64]),
        Model::Sm70,
    );
    let a = k
        .sites
        .iter()
        .find(|s| s.async_copy && s.space == Memory::Shared && s.lane_bytes == 4)
        .unwrap();
    assert_eq!(a.sectors_per_request(), 8.0);
    let g = k.ncu_sectors_per_request(Direction::Load).unwrap();
    assert!((g - 32.0 / 5.0).abs() < 1e-12, "{g}");
}

/// The scalar rungs' shared loads as the GPU makes them: ptxas loads a thread's
/// 4-byte reads of one aligned 16-byte window with one `LDS.128` (explain::emulate::vectorize,
/// checked against the SASS in tests/ptx.rs), and a warp-wide broadcast of one float4
/// takes 2 wavefronts.
#[test]
fn the_scalar_rungs_shared_loads_are_what_ptxas_makes_of_them() {
    // 256 x 256 x 64: whole tiles, and quicker to emulate than ncu's 1024³.
    let shape = || Some(vec![256, 256, 64]);
    let wavefronts = |word: &str| {
        let k = explain_at(word, None, shape(), Model::Sm70);
        assert!(k.folded > 0, "{word}: nothing merged");
        k.wavefronts_per_request(Direction::Load).unwrap()
    };
    // smem, per k tile: A's row, 32 words every lane reads alike, is 8 LDS.128 of 2
    // wavefronts; B's column 32 conflict-free LDS of 1: 48 over 40.
    let w = wavefronts("sgemm/smem");
    assert!((w - 48.0 / 40.0).abs() < 1e-12, "{w}");
    // tile-1d: 8 rows x 8 k steps of A (2 LDS.128 each, broadcast) and 8 LDS of B: 40 / 24.
    let w = wavefronts("sgemm/tile-1d");
    assert!((w - 40.0 / 24.0).abs() < 1e-12, "{w}");
    // tile-2d, per k step: A's 8 reads stay scalar (a k loop LLVM left rolled: 32 bytes
    // apart in one iteration), 2-way (two rows per warp): 16; B's 8 words are 2
    // LDS.128 whose quarter-warps put lanes 0 and 4 on one bank: 2 x 8. 32 over 10.
    let w = wavefronts("sgemm/tile-2d");
    assert!((w - 32.0 / 10.0).abs() < 1e-12, "{w}");
    // The vector rungs have nothing to merge.
    let k = explain_at("sgemm/vec4", None, shape(), Model::Sm70);
    assert_eq!((k.folded, k.vectorized.widths.len()), (0, 0));
}

/// Variants are emulated side by side, and the report keeps the order they were asked
/// for in; every one is heard of once.
#[test]
fn variants_explained_at_once_come_back_in_the_order_asked() {
    let words: Vec<String> = ["transpose/tiled", "copy", "stride/64", "offset/1"]
        .iter()
        .map(|w| w.to_string())
        .collect();
    let selection = select(&words).unwrap();
    let opts = Options {
        size: Some(1 << 20),
        shape: Some(vec![256, 256]),
        model: Model::Sm70,
        blocks: 8,
        profile: None,
        memory_limit: coalesce::explain::EMULATION_BYTES,
    };
    let mut heard = Vec::new();
    let report = explain(&selection, &opts, |event| {
        if let ExplainEvent::Explained(v) = event {
            heard.push(v.to_string())
        }
    })
    .unwrap();
    let names: Vec<String> = report
        .kernels
        .iter()
        .map(|k| format!("{}/{}", k.experiment, k.variant))
        .collect();
    let wanted: Vec<String> = selection
        .iter()
        .flat_map(|s| {
            s.experiment
                .variants
                .iter()
                .filter(|v| s.includes(v.name))
                .map(|v| format!("{}/{}", s.experiment.name, v.name))
        })
        .collect();
    assert_eq!(names, wanted);
    heard.sort();
    let mut sorted = wanted.clone();
    sorted.sort();
    assert_eq!(heard, sorted);
}

/// An emulation that would hold more than its limit is refused, in one line that names
/// the limit and what to pass instead, as a bad command line (exit 2), whether its
/// counts outgrow it block after block or one block's log alone would.
#[test]
fn an_emulation_past_its_memory_limit_is_refused_naming_the_limit() {
    let selection = select(&["copy/f32".to_string()]).unwrap();
    // 4096 blocks spread over a 64 MiB copy, each touching sectors of its own.
    let opts = Options {
        size: Some(64 << 20),
        blocks: 4096,
        memory_limit: 256 << 10,
        ..Options::default()
    };
    let e = explain(&selection, &opts, |_| {}).unwrap_err();
    let text = e.to_string();
    assert!(!text.contains('\n'), "{text}");
    assert!(text.contains("copy/f32 (copy_f32)"), "{text}");
    assert!(text.contains("may hold 256.0 KiB"), "{text}");
    assert!(text.contains("of 4096 blocks"), "{text}");
    assert!(text.contains("pass a smaller --blocks"), "{text}");
    assert_eq!(e.exit_code(), 2);
    // One block of 256 threads logs more than 2 KiB.
    let opts = Options {
        memory_limit: 4 << 10,
        ..opts
    };
    let text = explain(&selection, &opts, |_| {}).unwrap_err().to_string();
    assert!(text.contains("one block records more than 2.0 KiB"), "{text}");
    assert!(text.contains("may hold 4.0 KiB"), "{text}");
    // The default limit takes the same window whole.
    let opts = Options {
        memory_limit: Options::default().memory_limit,
        ..opts
    };
    let k = &explain(&selection, &opts, |_| {}).unwrap().kernels[0];
    assert_eq!(k.blocks_emulated(), 4096);
}

/// Each variant's emulation is heard of block by block, its last block included, and
/// then as explained.
#[test]
fn progress_follows_the_blocks_of_each_emulation() {
    let selection = select(&["transpose/tiled".to_string(), "stride/64".to_string()]).unwrap();
    let opts = Options {
        size: Some(1 << 20),
        shape: Some(vec![256, 256]),
        blocks: 5,
        ..Options::default()
    };
    let mut heard: Vec<(String, usize, usize)> = Vec::new();
    let mut explained = Vec::new();
    explain(&selection, &opts, |event| match event {
        ExplainEvent::Blocks {
            variant, done, of, ..
        } => heard.push((variant.to_string(), done, of)),
        ExplainEvent::Explained(v) => explained.push(v.to_string()),
    })
    .unwrap();
    assert_eq!(explained.len(), 2);
    for v in &explained {
        let mine: Vec<_> = heard.iter().filter(|h| &h.0 == v).collect();
        assert!(mine.iter().all(|h| 1 <= h.1 && h.1 <= h.2), "{mine:?}");
        assert!(mine.iter().any(|h| h.1 == 5 && h.2 == 5), "{v}: {mine:?}");
    }
}

/// The prediction for `EXPERIMENT/VARIANT` at its default size with the shipped H100
/// profile.
fn predicted_on_the_h100(word: &str) -> coalesce::explain::bandwidth::Prediction {
    let profile = coalesce::profile::Profile::shipped("H100").unwrap().unwrap();
    let selection = select(&[word.to_string()]).unwrap();
    let opts = Options {
        size: None,
        shape: None,
        model: Model::Sm70,
        blocks: 8,
        profile: Some(profile),
        memory_limit: coalesce::explain::EMULATION_BYTES,
    };
    let mut report = explain(&selection, &opts, |_| {}).unwrap();
    report.kernels.remove(0).prediction.expect("a prediction")
}

/// Every row of a copy engine's box is logged, past the log's cap of executions per
/// site: the TMA transpose's first wave, in column order as padded-64-cols', spreads its
/// reads as far (a tile's 128 box rows, not its first 16) and writes whole output rows.
#[test]
fn a_tma_transposes_wave_spreads_as_far_as_the_simt_one_in_the_same_order() {
    let spread = |word: &str| predicted_on_the_h100(word).spread.expect("a spread");
    let (tma, simt) = (spread("transpose/tma"), spread("transpose/padded-64-cols"));
    assert_eq!(tma.write, 1.0, "{tma:?}");
    assert!(tma.read < 1.5 * simt.read, "tma {tma:?}, padded-64-cols {simt:?}");
}

/// Little's law counts every resident thread: a copy engine's block has one thread
/// loading for all, so an SM keeps its blocks' boxes in flight, not a box per thread.
#[test]
fn a_copy_engines_blocks_keep_their_boxes_in_flight_not_a_box_per_thread() {
    let p = predicted_on_the_h100("copy/tma");
    let blocks = f64::from(p.residency.blocks);
    let block_bytes = (kernels::copy::TMA_BLOCK_ELEMENTS * 4) as f64;
    assert_eq!(p.in_flight_bytes_per_sm, blocks * block_bytes, "{p:?}");
}
