//! The human-readable `coalesce explain` output.

use std::fmt::Write as _;

use super::emulate::analyse::{Direction, Memory, SiteStats};
use super::emulate::model::Model;
use super::report::{ExplainReport, KernelReport};
use crate::columns::{Layout, columns};
use crate::experiment::Problem;
use crate::units::format_bytes;

/// `[256, 1, 1]` -> `256`; `[32, 8, 1]` -> `32 x 8`.
fn dims(d: [u32; 3]) -> String {
    let used = if d[2] > 1 {
        3
    } else if d[1] > 1 {
        2
    } else {
        1
    };
    d[..used]
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(" x ")
}

/// A number with up to `decimals` decimals, trailing zeros dropped (`4`, `4.5`, `3.33`).
fn num(x: f64, decimals: usize) -> String {
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// `kernels/src/copy.rs` -> `copy.rs`; the kernels crate is the only source.
fn short_file(file: &str) -> &str {
    file.rsplit(['/', '\\']).next().unwrap_or(file)
}

/// The site column: `file:line`, with `:column` where two sites of one kernel would
/// otherwise read the same.
fn site_names(sites: &[SiteStats]) -> Vec<String> {
    sites
        .iter()
        .map(|s| {
            let twin = sites
                .iter()
                .filter(|t| t.file == s.file && t.line == s.line && t.op == s.op && t.space == s.space)
                .count()
                > 1;
            let base = format!("{}:{}", short_file(&s.file), s.line);
            if twin {
                format!("{base}:{}", s.column)
            } else {
                base
            }
        })
        .collect()
}

/// One kernel's header line.
pub fn kernel_header(k: &KernelReport) -> String {
    let emulated = match &k.sampled_blocks {
        None => format!("whole grid emulated ({} blocks)", k.blocks_total),
        Some(b) => format!(
            "{} of {} blocks emulated (evenly spaced, first and last included)",
            b.len(),
            k.blocks_total
        ),
    };
    let size = match k.problem {
        Problem::Elements { .. } => format!(" ({} per array)", format_bytes(k.size_bytes)),
        Problem::Matrix { .. } | Problem::Product { .. } => String::new(),
    };
    let window = match k.dram_window {
        Some(w) => format!(
            "; traffic counted over blocks {}..{} (one wave, as the L2 sees it)",
            w.first,
            w.first + w.blocks - 1
        ),
        None => String::new(),
    };
    format!(
        "{}/{}: {}, {}{size}, grid {} of {} threads; {emulated}{window}",
        k.experiment,
        k.variant,
        k.kernel,
        k.problem,
        dims(k.grid),
        dims(k.block),
    )
}

fn site_rows(k: &KernelReport, model: Model) -> Vec<Vec<String>> {
    let per_req = match model {
        Model::Sm70 => "sectors/req",
        Model::Cc12 | Model::Cc10 => "trans/req",
    };
    let mut rows = vec![
        [
            "site",
            "op",
            "space",
            "array",
            "requests",
            per_req,
            "lines/req",
            "useful/fetched B/req",
            "banks",
            "pattern",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for (s, name) in k.sites.iter().zip(site_names(&k.sites)) {
        let op = s.op_label();
        let useful = s.useful_bytes as f64 / s.requests.max(1) as f64;
        let row = match s.space {
            Memory::Global => {
                let fetched = s.fetched_bytes as f64 / s.requests.max(1) as f64;
                vec![
                    name,
                    op.into(),
                    "global".into(),
                    s.buffer.clone().unwrap_or_else(|| "?".into()),
                    s.requests.to_string(),
                    format!("{:.2}", s.transactions_per_request()),
                    format!("{:.2}", s.lines_per_request()),
                    format!(
                        "{} / {} ({}%)",
                        num(useful, 1),
                        num(fetched, 1),
                        num(s.efficiency_pct(), 1)
                    ),
                    "-".into(),
                    pattern(s),
                ]
            }
            Memory::Shared => {
                let ways = s.ways_per_request();
                let banks = if (ways - s.bank_ways_max as f64).abs() < 1e-9 {
                    format!("{}-way", s.bank_ways_max)
                } else {
                    format!("{}-way (max {})", num(ways, 2), s.bank_ways_max)
                };
                vec![
                    name,
                    op.into(),
                    "shared".into(),
                    "-".into(),
                    s.requests.to_string(),
                    "-".into(),
                    "-".into(),
                    format!("{} / -", num(useful, 1)),
                    banks,
                    pattern(s),
                ]
            }
        };
        rows.push(row);
    }
    rows
}

/// `  predicted on GPU: DRAM 400.0 MiB read (1.00x) + ...; bound: ...; 0.283 ms, 2960 GB/s, 98.7% of copy`,
/// then the residency and every bound's time.
/// `  predicted on ...`: a product's time, rate and bound, and what each unit carries.
pub fn product_line(p: &super::product::ProductPrediction) -> String {
    let resources = match p.resources {
        Some(r) => format!(
            "{} registers, {} B shared per block (ptxas)",
            r.registers, r.shared_bytes
        ),
        None => "threads only".into(),
    };
    let units: Vec<String> = p
        .units
        .iter()
        .map(|u| format!("{} {:.0}%", u.unit.describe(), 100.0 * u.busy))
        .collect();
    let s = &p.step;
    let mut line = format!(
        "  predicted on {}: {}, {:.0} GFLOP/s; bound: {}\n  \
         {:.2} warps per scheduler ({} blocks per SM, limited by {}; {resources}); {} blocks on the busiest SM in {} rounds (the last: {} blocks an SM on {} SMs)\n  \
         a warp's iteration of the hot loop ({}): {:.0} FLOPs, {:.0} instructions ({:.0} FP32, {:.0} mma.sync, {:.0} barriers), \
         {:.1} shared wavefronts, {:.2} load requests ({:.2} lines), {:.0} L2 bytes; delay {:.0} ns\n  busy: {}",
        p.device,
        crate::units::format_ms(p.time_ms),
        p.gflop_per_s,
        p.bound.describe(),
        p.warps_per_scheduler,
        p.residency.blocks,
        p.residency.limit.describe(),
        p.waves.busiest,
        p.waves.rounds,
        p.waves.last_round_blocks,
        p.waves.last_busy_sms,
        p.mix_source,
        s.flops,
        s.instructions,
        s.fp32,
        s.mma_sync,
        s.barriers,
        s.shared_wavefronts,
        s.load_requests,
        s.load_lines,
        s.l2_bytes,
        p.delay_ns,
        units.join(", ")
    );
    if p.epilogue_ns > 0.0 {
        line.push_str(&format!(
            "\n  epilogue: a block's stores of its tile after its loop, {} at the rates' clock, the round's blocks together",
            crate::units::format_ms(p.epilogue_ns * 1e-6)
        ));
    }
    let stored = s.store_lines + s.bulk_store_lines;
    if s.store_lines_beside_mma > 0.0 && stored > 0.0 {
        line.push_str(&format!(
            "\n  stores beside the MMAs: {:.0}% of the tile's store lines are issued while its MMAs run, counted with the loop's L2 bytes",
            100.0 * s.store_lines_beside_mma / stored
        ));
    }
    if p.fixup_ns > 0.0 {
        line.push_str(&format!(
            "\n  split tiles: {} more while owners wait for their contributors' partial tiles, take them and add them",
            crate::units::format_ms(p.fixup_ns * 1e-6)
        ));
    }
    if p.fill_ns > 0.0 {
        line.push_str(&format!(
            "\n  fixed costs: {} of {} rounds' waits for their first tiles",
            crate::units::format_ms(p.fill_ns * 1e-6),
            p.waves.rounds
        ));
        if p.launch_ns > 0.0 {
            line.push_str(&format!(
                ", {} the launch's",
                crate::units::format_ms(p.launch_ns * 1e-6)
            ));
        }
    }
    if p.computed_share > 1.0005 {
        line.push_str(&format!(
            "\n  tiles on the matrix's edge: the blocks compute {:.1}% more than 2 m n k (rows and columns of zeros)",
            100.0 * (p.computed_share - 1.0)
        ));
    }
    if let (Some(w), Some(limit)) = (p.power_w, p.power_limit_w) {
        line.push_str(&format!(
            "\n  power: {w:.0} W at the units' pace against the board's limit of {limit:.0} W; the clock at {:.2} of the rates'",
            p.clock_share
        ));
    }
    for n in &p.not_modelled {
        line.push_str(&format!("\n  not modelled: {n}"));
    }
    line
}

pub fn prediction_line(p: &super::bandwidth::Prediction) -> String {
    let resources = match p.resources {
        Some(r) => format!(
            "{} registers, {} B shared per block (ptxas)",
            r.registers, r.shared_bytes
        ),
        None => "threads only".into(),
    };
    let timed = |b: &super::bandwidth::BoundTime| {
        format!("{} {}", b.bound.describe(), crate::units::format_ms(b.time_ms))
    };
    let parts: Vec<String> = p.l1_parts.iter().map(timed).collect();
    let scattered: Vec<String> = p
        .scattered_parts
        .iter()
        .map(|s| {
            let what = match s.kind {
                Some(crate::profile::RequestKind::Gather) => "gathers",
                Some(crate::profile::RequestKind::Scatter) => "scatters",
                Some(crate::profile::RequestKind::Update) => "updates",
                None => {
                    return format!(
                        "{} other at the ceiling {}",
                        format_bytes(s.dram_bytes as u64),
                        crate::units::format_ms(s.time_ms)
                    );
                }
            };
            // A grid-stride loop's iterations, where it runs more than one.
            let looped = if s.iterations > 1.01 {
                format!(", {:.2} a thread", s.iterations)
            } else {
                String::new()
            };
            format!(
                "{} of {what} {} apart{looped} at {:.0} GB/s {}",
                format_bytes(s.dram_bytes as u64),
                format_bytes(s.pitch_bytes),
                s.dram_gb_per_s,
                crate::units::format_ms(s.time_ms)
            )
        })
        .collect();
    let bounds: Vec<String> = p
        .bounds
        .iter()
        .map(|b| match b.bound {
            super::bandwidth::Bound::L1 => format!("{} ({})", timed(b), parts.join(" + ")),
            super::bandwidth::Bound::Scattered => format!("{} ({})", timed(b), scattered.join(" + ")),
            _ => timed(b),
        })
        .collect();
    let fills = if p.fill_bytes >= 0.5 {
        format!(
            " ({} of each: partial writes' sector fills)",
            format_bytes(p.fill_bytes as u64)
        )
    } else {
        String::new()
    };
    let mut line = format!(
        "  predicted on {}: DRAM {} read + {} written{}; {} blocks per SM ({}; limit: {}), \
         {} threads x {} B in flight per SM, loaded latency {:.0} ns; bound: {}; {}, {:.0} GB/s, {:.1}% of copy\n    bounds: {}",
        p.device,
        format_bytes(p.dram_read_bytes as u64),
        format_bytes(p.dram_write_bytes as u64),
        fills,
        p.residency.blocks,
        resources,
        p.residency.limit.describe(),
        p.resident_threads_per_sm,
        num(
            p.in_flight_bytes_per_sm / f64::from(p.resident_threads_per_sm.max(1)),
            1
        ),
        p.latency_ns,
        p.bound.describe(),
        crate::units::format_ms(p.time_ms),
        p.gb_per_s,
        p.pct_of_copy,
        bounds.join("; ")
    );
    if p.level.from_l2 {
        let _ = write!(
            line,
            "\n    from the L2: the launch's bytes fit in it, so each launch finds them there: its ceiling {:.0} GB/s and latency",
            p.level.ceiling_gb_per_s
        );
    }
    if p.launch_ms > 0.0 {
        let _ = write!(
            line,
            "\n    the launch's fixed cost: {} beside the bound's time",
            crate::units::format_ms(p.launch_ms)
        );
    }
    if let Some(s) = p.spread {
        let _ = write!(
            line,
            "\n    spread (first wave): reads {:.1}x, writes {:.1}x the pages their bytes fill: {:.1}% of the ceiling (the spread sweep)",
            s.read,
            s.write,
            100.0 * p.spread_share
        );
    }
    for caveat in &p.not_modelled {
        let _ = write!(line, "\n    not modelled: {caveat}");
    }
    line
}

fn pattern(s: &SiteStats) -> String {
    if s.pattern_share >= 0.995 {
        s.pattern.to_string()
    } else {
        format!("{} ({:.0}% of requests)", s.pattern, 100.0 * s.pattern_share)
    }
}

/// The whole report.
pub fn render(report: &ExplainReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "coalesce explain: each kernel's source run on the CPU emulator; every warp's accesses per source line"
    );
    let _ = writeln!(out, "model {}: {}", report.model.name(), report.model.about());
    let _ = writeln!(out, "sizes: {}", report.sizes);
    let _ = writeln!(out, "{}", report.calibration);
    let _ = writeln!(
        out,
        "a request = one warp executing one access once; recorded: each thread's first {} executions of each site \
         (shared ones: to the next barrier), every execution counted; shared memory: 32 banks of 4 bytes",
        report.max_occurrences
    );
    for k in &report.kernels {
        let _ = writeln!(out);
        let _ = writeln!(out, "{}", kernel_header(k));
        if k.sites.is_empty() {
            let _ = writeln!(out, "  (no memory accesses in the emulated blocks)");
            continue;
        }
        out.push_str(&columns(
            &site_rows(k, report.model),
            Layout {
                right: &[false, false, false, false, true, true, true, true, false, false],
                indent: "  ",
                rule: false,
            },
        ));
        if k.sites.iter().any(|s| s.bulk) {
            let _ = writeln!(
                out,
                "  tma: the copy engine's; a request is one row of a box, fetched as whole sectors (no warp's addresses)"
            );
        }
        if !k.vectorized.widths.is_empty() {
            let _ = writeln!(out, "{}", vectorized_line(k));
        }
        if let Some(p) = &k.prediction {
            let _ = writeln!(out, "{}", prediction_line(p));
        }
        if let Some(p) = &k.product {
            let _ = writeln!(out, "{}", product_line(p));
        }
        if let Some(why) = &k.product_unpredicted {
            let _ = writeln!(out, "  not predicted: {why}");
        }
    }
    for line in &report.skipped {
        let _ = writeln!(out);
        let _ = writeln!(out, "{line}");
    }
    out
}

/// `  ptxas merges ...`: which scalar shared accesses the GPU makes as vector ones.
fn vectorized_line(k: &KernelReport) -> String {
    let arrays: Vec<String> = k
        .vectorized
        .widths
        .iter()
        .map(|(array, op, bytes)| {
            let op = match op {
                Direction::Load => "loads",
                Direction::Store => "stores",
            };
            format!("{array} {op}, {bytes} bytes")
        })
        .collect();
    format!(
        "  vector accesses ptxas makes of a thread's 4-byte shared accesses in one aligned window (from the PTX): {}; \
         the rows above count them as the GPU issues them ({} recorded accesses folded)",
        arrays.join(", "),
        k.folded
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_dims_read_naturally() {
        assert_eq!(num(4.0, 2), "4");
        assert_eq!(num(12.5, 1), "12.5");
        assert_eq!(num(3.3333, 2), "3.33");
        assert_eq!(dims([256, 1, 1]), "256");
        assert_eq!(dims([32, 8, 1]), "32 x 8");
        assert_eq!(dims([1, 1, 2]), "1 x 1 x 2");
        assert_eq!(short_file("kernels/src/copy.rs"), "copy.rs");
    }
}
