//! `coalesce explain` on the CPU: the lessons' numbers come out of the kernels' own
//! source. (The model rules themselves are unit-tested in `explain::model`.)

use coalesce::experiments::select;
use coalesce::explain::analyse::{Direction, Memory, Pattern, SiteStats};
use coalesce::explain::model::Model;
use coalesce::explain::{KernelReport, Options, explain};

/// Explains `EXPERIMENT/VARIANT` at `size` bytes per array.
fn explain_one(word: &str, size: u64, model: Model) -> KernelReport {
    let selection = select(&[word.to_string()]).unwrap();
    let opts = Options {
        size,
        model,
        blocks: 8,
    };
    let mut report = explain(&selection, &opts, |_| {}).unwrap();
    assert_eq!(report.kernels.len(), 1, "{word}");
    report.kernels.remove(0)
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
