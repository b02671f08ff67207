//! `coalesce calibrate`'s summary: each parameter on one line, with what it was
//! measured from, then the pitch and spread sweeps as tables.

use super::on_chip::store_windows;
use super::pitch::pitch_table;
use super::spread::spread_table;
use super::{BELOW_CEILING, ComputeRun, Notes};
use crate::profile::power::Energy;
use crate::profile::{ComputeRates, PowerRates, Profile, SweepPoint};
use crate::units::format_bytes;

/// The human summary: each parameter on one line, with what it was measured from.
pub fn summary(p: &Profile, n: &Notes) -> String {
    let strides = |sweep: &[SweepPoint]| match (sweep.first(), sweep.last()) {
        (Some(a), Some(b)) => format!("{}..{}", a.x, b.x),
        _ => "none".into(),
    };
    let reps = format!("median of {}", n.reps.timed);
    let lines = [
        (
            "copy_gb_per_s",
            format!("{:.1} GB/s", p.copy_gb_per_s),
            format!(
                "cuMemcpyDtoD of {} (read + written), {reps}, faster of a copy before and after the sweeps",
                format_bytes(n.copy_bytes)
            ),
        ),
        ("sm_count", p.sm_count.to_string(), "device attribute".into()),
        (
            "max_threads_per_sm",
            p.max_threads_per_sm.to_string(),
            "device attribute MAX_THREADS_PER_MULTIPROCESSOR".into(),
        ),
        (
            "dram_read_granularity",
            format!("{} B", p.dram_read_granularity),
            format!(
                "stride_read at strides {} on {} per array: 8 x copy / rate - 4 = {:.1} B per read at stride {}",
                strides(&p.stride_sweep),
                format_bytes(n.stride_bytes),
                n.granularity.per_element,
                n.granularity.stride
            ),
        ),
        (
            "idle_latency_ns",
            format!("{:.0} ns", p.idle_latency_ns),
            format!(
                "one thread, {} dependent loads per launch through a random {} cycle",
                n.chase_steps,
                format_bytes(n.chase_bytes)
            ),
        ),
        (
            "loaded_latency_ns",
            format!("{:.0} ns", p.loaded_latency_ns),
            if n.latency.upper_bound {
                format!(
                    "an upper bound: none of the {} inflight copies on {} was latency-bound; 2 x bytes in flight / rate of the fewest bytes",
                    p.inflight_sweep.len(),
                    format_bytes(n.inflight_bytes),
                )
            } else if n.latency.used < 2 || p.queueing_latency_ns == 0.0 {
                format!(
                    "Little's law, 2 x bytes in flight / rate, median of the {} latency-bound inflight copies of {} on {} (under {:.0}% of copy, rate rising with bytes in flight); constant",
                    n.latency.used,
                    p.inflight_sweep.len(),
                    format_bytes(n.inflight_bytes),
                    100.0 * BELOW_CEILING
                )
            } else {
                format!(
                    "L = L0 + Lq x rho / (1 - rho): the line through the Little's-law latencies (2 x bytes in flight / rate) of the {} latency-bound inflight copies of {} on {} (under {:.0}% of copy, rate rising with bytes in flight)",
                    n.latency.used,
                    p.inflight_sweep.len(),
                    format_bytes(n.inflight_bytes),
                    100.0 * BELOW_CEILING
                )
            },
        ),
        (
            "queueing_latency_ns",
            format!("{:.1} ns", p.queueing_latency_ns),
            "Lq of the same line: the latency at 50% of copy is L0 + Lq, at 90% L0 + 9 Lq".into(),
        ),
    ];
    let mut lines = lines.to_vec();
    if let Some(launch) = p.launch_ns {
        lines.push((
            "launch_ns",
            format!("{launch:.0} ns"),
            "one thread, one word: the interval of launch after launch".into(),
        ));
        lines.push((
            "launch_gap_ns",
            p.launch_gap_ns.map_or("none".into(), |g| format!("{g:.0} ns")),
            "what a long kernel pays a launch: the intercept of one thread's chases of 2^10 to 2^16 hops"
                .into(),
        ));
    }
    if let Some(r) = &p.l2_resident {
        lines.push((
            "l2_resident copy",
            format!("{:.0} GB/s", r.copy_gb_per_s),
            format!(
                "cuMemcpyDtoD of {} per array, inside the L2, less launch_ns",
                format_bytes(r.bytes_per_array)
            ),
        ));
        let used = crate::profile::fit::latency_points(&r.inflight_sweep, p.sm_count, r.copy_gb_per_s).len();
        lines.push((
            "l2_resident latency",
            format!(
                "{:.0} + {:.1} x rho / (1 - rho) ns",
                r.loaded_latency_ns, r.queueing_latency_ns
            ),
            format!(
                "the line through the {used} latency-bound of the {} inflight copies inside the L2",
                r.inflight_sweep.len()
            ),
        ));
    }
    if let Some(sm) = &p.sm {
        let attribute = |name: &str| format!("device attribute {name}");
        lines.extend([
            (
                "compute_capability",
                format!("{}.{}", sm.compute_capability[0], sm.compute_capability[1]),
                attribute("COMPUTE_CAPABILITY_MAJOR/MINOR (explain's ptxas -arch)"),
            ),
            ("registers_per_sm", sm.registers_per_sm.to_string(), attribute("MAX_REGISTERS_PER_MULTIPROCESSOR")),
            (
                "register_allocation_unit",
                sm.register_allocation_unit.to_string(),
                format!(
                    "registers per warp are allocated in multiples of it: the residency formula agrees with cuOccupancyMaxActiveBlocksPerMultiprocessor for {} of {} kernel x block sizes",
                    n.occupancy_agreeing, n.occupancy_samples
                ),
            ),
            (
                "shared_bytes_per_sm",
                sm.shared_bytes_per_sm.to_string(),
                attribute("MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"),
            ),
            (
                "reserved_shared_bytes_per_block",
                sm.reserved_shared_bytes_per_block.to_string(),
                attribute("RESERVED_SHARED_MEMORY_PER_BLOCK"),
            ),
            ("max_blocks_per_sm", sm.max_blocks_per_sm.to_string(), attribute("MAX_BLOCKS_PER_MULTIPROCESSOR")),
        ]);
    }
    let on_chip = |kernel: &str, what: &str| {
        format!(
            "{kernel}: {what}; {} blocks of 256 threads, {} rounds, {reps}; units / time / SMs",
            n.on_chip_blocks, n.on_chip_rounds
        )
    };
    for (name, rate, from) in [
        (
            "load_lines_per_ns_per_sm",
            p.load_lines_per_ns_per_sm,
            on_chip("lines_load", "32 lines per warp load, L1 hits"),
        ),
        (
            "store_lines_per_ns_per_sm",
            p.store_lines_per_ns_per_sm,
            on_chip("lines_store", &store_windows(n.on_chip_blocks, p.l2_bytes)),
        ),
        (
            "shared_wavefronts_per_ns_per_sm",
            p.shared_wavefronts_per_ns_per_sm,
            on_chip(
                "bank_conflicts",
                "32-way bank conflicts, 32 wavefronts per warp load",
            ),
        ),
    ] {
        if let Some(rate) = rate {
            lines.push((name, format!("{rate:.3}"), from));
        }
    }
    if let Some(c) = &p.compute {
        lines.extend(compute_lines(c, n));
    }
    match (&p.power, &n.no_power) {
        (Some(power), _) => lines.extend(power_lines(power)),
        (None, Some(why)) => lines.push(("power", "null".into(), format!("not measured: {why}"))),
        (None, None) => {}
    }
    let mut text: String = lines
        .iter()
        .map(|(name, value, from)| format!("{name:<36} {value:>11}  {from}\n"))
        .collect();
    text.push_str(&pitch_table(
        p.pitch_sweep.as_deref().unwrap_or_default(),
        p.copy_gb_per_s,
    ));
    text.push_str(&spread_table(
        p.spread_sweep.as_deref().unwrap_or_default(),
        p.copy_gb_per_s,
    ));
    text
}

/// One line per compute rate: its value with its unit, and its kernel's launch (or why
/// it was skipped on this GPU).
fn compute_lines(c: &ComputeRates, n: &Notes) -> Vec<(&'static str, String, String)> {
    let units = [
        "warp FFMA/ns/SM",
        "warp instr/ns/SM",
        "warp mma/ns/SM",
        "FLOP/ns/SM",
        "FLOP/ns/SM",
        "FLOP/ns/SM",
        "GB/s",
        "ns",
        "ns",
        "warp requests/ns/SM",
        "GB/s",
        "GB/s",
    ];
    let what = [
        "8 independent FFMA chains a thread, full residency; FFMAs / time / SMs",
        "2 FFMA : 1 LOP3, independent chains, full residency; instructions / time / SMs",
        "mma.sync.m16n8k8 TF32, 4 independent accumulators a warp, full residency; MMAs / time / SMs",
        "wgmma m64n256k8 TF32, both operands in shared memory, as many warpgroups as fit; FLOPs / time / SMs",
        "wgmma m64n256k16 BF16 (taken for FP16 too), as the TF32 one; FLOPs / time / SMs",
        "wgmma m64n128k16 BF16 (taken for FP16 too), as the N = 256 one with half of B's tile; FLOPs / time / SMs",
        "float4 loads from a quarter of the L2, each round at another offset (L1 misses); bytes / time",
        "one warp, one dependent FFMA chain; time / FFMAs",
        "one warp, a dependent chain of shared loads; time / loads",
        "warp loads of one line each, all L1 hits, full residency; requests / time / SMs",
        "1D TMA boxes from a quarter of the L2, one thread a block keeping 32 KiB in flight; bytes / time",
        "l2_bulk_read with each chunk read by 8 blocks at once (lines many SMs share); bytes / time",
    ];
    let mut out = Vec::new();
    for (i, (name, rate)) in c.named().into_iter().enumerate() {
        let run = n.compute_runs.get(i);
        let how = match run {
            Some(ComputeRun {
                skipped: Some(why), ..
            }) => format!("{}: skipped, {why}", run.map_or("", |r| r.kernel)),
            Some(r) => format!(
                "{}: {}; {} blocks of {} threads, {} rounds, median of {}",
                r.kernel, what[i], r.blocks, r.threads, r.rounds, n.reps.timed
            ),
            None => what[i].to_string(),
        };
        let value = rate.map_or("null".to_string(), |v| format!("{v:.3} {}", units[i]));
        out.push((name, value, how));
    }
    out
}

/// One line per power parameter: its value, and the run it comes from.
fn power_lines(p: &PowerRates) -> Vec<(&'static str, String, String)> {
    let run = |e: Energy| {
        let k = e.run();
        p.runs.iter().find(|r| r.kernel == k).map_or(String::new(), |r| {
            format!("{k}: {:.0} W over {:.2} s", r.watts, r.seconds)
        })
    };
    let above = |e: Energy, per: &str| format!("{}; (W - base_w) / {per} a second", run(e));
    let pj = |v: Option<f64>, unit: &str| v.map_or("null".to_string(), |v| format!("{v:.3} {unit}"));
    vec![
        (
            "limit_w",
            format!("{:.0} W", p.limit_w),
            "the board's enforced power limit (NVML)".into(),
        ),
        (
            "base_w",
            format!("{:.1} W", p.base_w),
            format!("{}, one warp an SM", run(Energy::Base)),
        ),
        (
            "ffma_pj",
            pj(Some(p.ffma_pj), "pJ"),
            above(Energy::Ffma, "warp FFMAs"),
        ),
        (
            "mma_tf32_pj",
            pj(p.mma_tf32_pj, "pJ"),
            above(Energy::MmaTf32, "warp mma.syncs"),
        ),
        (
            "wgmma_tf32_pj_per_flop",
            pj(p.wgmma_tf32_pj_per_flop, "pJ"),
            above(Energy::WgmmaTf32, "FLOPs"),
        ),
        (
            "wgmma_16bit_pj_per_flop",
            pj(p.wgmma_16bit_pj_per_flop, "pJ"),
            above(Energy::Wgmma16Bit, "FLOPs"),
        ),
        (
            "l2_pj_per_byte",
            pj(Some(p.l2_pj_per_byte), "pJ"),
            above(Energy::L2, "bytes"),
        ),
        (
            "l2_bulk_pj_per_byte",
            pj(p.l2_bulk_pj_per_byte, "pJ"),
            above(Energy::L2Bulk, "bytes"),
        ),
        (
            "dram_pj_per_byte",
            pj(Some(p.dram_pj_per_byte), "pJ"),
            format!(
                "{}, over 8 x the L2; less its bytes' L2 energy",
                above(Energy::Dram, "bytes")
            ),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::{Granularity, LatencyFit};
    use crate::timing::Reps;

    fn point(x: f64, gb_per_s: f64) -> SweepPoint {
        SweepPoint { x, gb_per_s }
    }

    #[test]
    fn the_summary_has_one_line_per_parameter() {
        let mut p = crate::profile::tests::sample();
        p.queueing_latency_ns = 50.0;
        p.stride_sweep = vec![point(1.0, 2800.0), point(64.0, 190.0)];
        p.inflight_sweep = vec![point(8192.0, 2000.0); 8];
        let notes = Notes {
            copy_bytes: 400 << 20,
            reps: Reps::default(),
            stride_bytes: 400 << 20,
            granularity: Granularity {
                bytes: 64,
                per_element: 70.2,
                stride: 16,
            },
            inflight_bytes: 400 << 20,
            latency: LatencyFit {
                base_ns: 700.0,
                queue_ns: 50.0,
                used: 2,
                upper_bound: false,
            },
            chase_bytes: 400 << 20,
            chase_steps: 200_000,
            occupancy_samples: 120,
            occupancy_agreeing: 118,
            on_chip_blocks: 1056,
            on_chip_rounds: 2048,
            compute_runs: crate::calibrate::COMPUTE
                .iter()
                .map(|b| ComputeRun {
                    kernel: b.kernel().name,
                    blocks: 1056,
                    threads: 256,
                    rounds: 2048,
                    skipped: (b.kernel() == kernels::entry::wgmma_tf32_throughput.info())
                        .then(|| "needs sm_90a (this GPU is 8.0)".into()),
                })
                .collect(),
            no_power: None,
        };
        let text = summary(&p, &notes);
        // 16 parameters, 12 compute rates and 9 of power, then each sweep: a blank line, its title, its header and one
        // line per point.
        assert_eq!(text.lines().count(), 16 + 12 + 9 + 3 + 1 + 3 + 1, "{text}");
        assert!(text.contains("\npitch sweep (32 lanes one pitch apart"), "{text}");
        assert!(text.contains("\nspread sweep (a copy"), "{text}");
        for field in [
            "copy_gb_per_s",
            "sm_count",
            "max_threads_per_sm",
            "dram_read_granularity",
            "idle_latency_ns",
            "loaded_latency_ns",
            "queueing_latency_ns",
            "compute_capability",
            "registers_per_sm",
            "register_allocation_unit",
            "shared_bytes_per_sm",
            "reserved_shared_bytes_per_block",
            "max_blocks_per_sm",
            "load_lines_per_ns_per_sm",
            "store_lines_per_ns_per_sm",
            "shared_wavefronts_per_ns_per_sm",
            "fma_per_ns_per_sm",
            "issue_per_ns_per_sm",
            "mma_tf32_per_ns_per_sm",
            "wgmma_tf32_flops_per_ns_per_sm",
            "wgmma_16bit_flops_per_ns_per_sm",
            "wgmma_16bit_n128_flops_per_ns_per_sm",
            "l2_read_gb_per_s",
            "fma_latency_ns",
            "shared_latency_ns",
            "l1_requests_per_ns_per_sm",
            "l2_bulk_read_gb_per_s",
            "l2_bulk_shared_gb_per_s",
            "limit_w",
            "base_w",
            "wgmma_tf32_pj_per_flop",
            "wgmma_16bit_pj_per_flop",
            "dram_pj_per_byte",
        ] {
            assert!(text.lines().any(|l| l.starts_with(field)), "{field}: {text}");
        }
        assert!(text.contains("70.2 B per read at stride 16"), "{text}");
        // With the L2 as a copy's memory: its ceiling and its latency's line.
        assert!(p.l2_resident.is_none());
        let l2 = Profile {
            l2_resident: Some(crate::profile::l2::tests::sample()),
            ..p.clone()
        };
        let text = summary(&l2, &notes);
        let line = text
            .lines()
            .find(|l| l.starts_with("l2_resident latency"))
            .unwrap();
        assert!(line.contains("400 + 20.0 x rho / (1 - rho) ns"), "{line}");
        assert!(
            line.contains("the 0 latency-bound of the 0 inflight copies"),
            "{line}"
        );
        assert!(
            text.contains("7.000 warp FFMA/ns/SM  fma_throughput: 8 independent"),
            "{text}"
        );
        assert!(
            text.contains("wgmma_tf32_throughput: skipped, needs sm_90a"),
            "{text}"
        );
        assert!(text.contains("17.000 ns  shared_chase: one warp"), "{text}");
        assert!(
            text.contains("6000.000 FLOP/ns/SM  wgmma_bf16_n128_throughput: wgmma m64n128k16"),
            "{text}"
        );
        assert!(text.contains("for 118 of 120 kernel x block sizes"), "{text}");
        // A schema-2 profile has none of schema 3's lines.
        let old = summary(&crate::profile::tests::schema_2(), &notes);
        assert_eq!(old.lines().count(), 7, "{old}");
        assert!(text.contains("strides 1..64"), "{text}");
        assert!(
            text.contains("the line through the Little's-law latencies"),
            "{text}"
        );
        assert!(
            text.contains("of the 2 latency-bound inflight copies of 8"),
            "{text}"
        );
        let bound = summary(
            &p,
            &Notes {
                latency: LatencyFit {
                    upper_bound: true,
                    ..notes.latency
                },
                ..notes.clone()
            },
        );
        assert!(bound.contains("an upper bound"), "{bound}");
        // The DRAM's energy: 50 pJ a byte in the sample, from its own run.
        assert!(
            text.contains("50.000 pJ  l2_read_dram: 425 W over 1.50 s"),
            "{text}"
        );
        // Without NVML: one line that says why.
        let unpowered = Profile {
            power: None,
            ..p.clone()
        };
        let why = summary(
            &unpowered,
            &Notes {
                no_power: Some("NVML (libnvidia-ml.so.1) did not load".into()),
                ..notes.clone()
            },
        );
        assert!(
            why.lines()
                .any(|l| l.starts_with("power") && l.contains("not measured: NVML")),
            "{why}"
        );
    }
}
