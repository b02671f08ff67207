//! The results of a run: printed as a table for people, saved as JSON for tools.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::columns::{Layout, columns, numbers_from};
use crate::device::DeviceInfo;
use crate::harness::Row;
use crate::ptx::PtxModule;
use crate::timing::Baseline;
use crate::units::{format_bytes, format_ms};

/// The version of the JSON that `run --json`, `compare --json` and `report` write:
/// 2 added this field (files without it are version 1, which reads the same).
pub const SCHEMA: u32 = 2;

/// The version of a file written before versions were.
pub fn schema_1() -> u32 {
    1
}

/// Everything one run measured, with the device it ran on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Run {
    #[serde(default = "schema_1")]
    pub schema: u32,
    pub coalesce_version: String,
    /// When the run finished, `YYYY-MM-DD HH:MM UTC` (None in files written before it
    /// was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    pub device: DeviceInfo,
    pub ptx_arch: String,
    pub peak_gb_per_s: Option<f64>,
    /// The cuMemcpyDtoD baseline each experiment's "% of copy" is relative to.
    pub baselines: Vec<ExperimentBaseline>,
    pub rows: Vec<Row>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExperimentBaseline {
    pub experiment: String,
    pub baseline: Baseline,
}

impl Run {
    pub fn failures(&self) -> usize {
        self.rows.iter().filter(|r| !r.validated).count()
    }

    /// The PTX modules its kernels came from ([`ptx_ran`]).
    pub fn ptx_ran(&self) -> String {
        ptx_ran(&self.ptx_arch, self.rows.iter().map(|r| r.kernel.as_str()))
    }
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The architecture a module's PTX was built for, when the baseline was built for
/// `baseline`: the sm_80 module is built for sm_80 or the baseline, if newer.
fn module_arch(module: PtxModule, baseline: &str) -> String {
    let number = |arch: &str| {
        arch.trim_start_matches("sm_")
            .trim_end_matches('a')
            .parse::<u32>()
            .ok()
    };
    match module {
        PtxModule::Baseline => baseline.to_string(),
        PtxModule::Sm80 if number(baseline).is_some_and(|n| n > 80) => baseline.to_string(),
        PtxModule::Sm80 => "sm_80".into(),
        PtxModule::Sm90a => crate::ptx::SM90A_ARCH.into(),
    }
}

/// The PTX modules a run's kernels came from, for the header's "kernels: PTX for
/// ...": the baseline's architecture (`ptx_arch`, as the results record it), then
/// `sm_80` and `sm_90a` where a kernel that ran is in those modules.
pub fn ptx_ran<'a>(ptx_arch: &str, kernels: impl IntoIterator<Item = &'a str>) -> String {
    let kernels: Vec<&str> = kernels.into_iter().collect();
    let ran = |m: PtxModule| {
        m == PtxModule::Baseline
            || kernels
                .iter()
                .any(|&k| kernels::entry::ALL.iter().any(|e| e.name == k && e.module == m))
    };
    let mut archs: Vec<String> = PtxModule::ALL
        .into_iter()
        .filter(|&m| ran(m))
        .map(|m| module_arch(m, ptx_arch))
        .collect();
    archs.dedup();
    and_list(&archs)
}

/// The PTX modules this build loads on `device`, for the header of a command that
/// names the device before it runs anything.
pub fn ptx_loaded(device: &DeviceInfo) -> String {
    let mut archs: Vec<String> = PtxModule::ALL
        .into_iter()
        .filter(|m| m.loads_on(device.compute_capability))
        .map(crate::ptx::arch)
        .map(str::to_string)
        .collect();
    archs.dedup();
    and_list(&archs)
}

/// One line describing the device, and the PTX its kernels come from (`ptx`, from
/// [`ptx_ran`] or [`ptx_loaded`]).
pub fn device_line(d: &DeviceInfo, ptx: &str) -> String {
    let peak = d
        .peak_gb_per_s()
        .map(|p| format!("{p:.0} GB/s"))
        .unwrap_or_else(|| "unknown".into());
    let pci = d
        .pci_bus_id
        .as_deref()
        .map(|bus| format!(", PCI {bus}"))
        .unwrap_or_default();
    format!(
        "{} (device {}{pci}, sm_{}{}, {} SMs, L2 {}, {} memory, peak {peak}); kernels: PTX for {ptx}",
        d.name,
        d.ordinal,
        d.compute_capability.0,
        d.compute_capability.1,
        d.sm_count,
        format_bytes(d.l2_bytes),
        format_bytes(d.total_memory_bytes),
    )
}

/// `copy       baseline: cuMemcpyDtoD of 400.0 MiB = 2989 GB/s (...)`.
pub fn baseline_line(b: &ExperimentBaseline) -> String {
    format!(
        "{:<10} baseline: cuMemcpyDtoD of {} = {:.0} GB/s (read + write, median of {})",
        b.experiment,
        format_bytes(b.baseline.bytes),
        b.baseline.gb_per_s,
        b.baseline.timing.reps
    )
}

/// A row's shares of the copy and of the DRAM's peak, `-` for a product: its rate is
/// FLOPs, and a share of the copy or of the peak says nothing of it (`compare` sets
/// it beside cuBLAS).
pub fn copy_shares(r: &Row) -> (String, String) {
    match r.gflop_per_s {
        Some(_) => ("-".into(), "-".into()),
        None => (
            format!("{:.1}", r.pct_of_copy),
            r.pct_of_peak.map_or_else(|| "-".into(), |p| format!("{p:.1}")),
        ),
    }
}

/// The human table.
pub fn render(run: &Run) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", device_line(&run.device, &run.ptx_ran()));
    for b in &run.baselines {
        let _ = writeln!(out, "{}", baseline_line(b));
    }
    // Products say what they multiply in; a table of none keeps its columns.
    let with_precision = run.rows.iter().any(|r| r.gflop_per_s.is_some());
    let mut header = vec![
        "experiment",
        "variant",
        "size",
        "precision",
        "median",
        "GB/s",
        "% copy",
        "% peak",
        "x slowest",
        "valid",
    ];
    if !with_precision {
        header.remove(3);
    }
    let mut cells: Vec<Vec<String>> = vec![header.iter().map(|h| h.to_string()).collect()];
    for r in &run.rows {
        let rate = match r.gflop_per_s {
            Some(g) => format!("{g:.0} GFLOP/s"),
            None => format!("{:.1}", r.gb_per_s),
        };
        let (of_copy, of_peak) = copy_shares(r);
        let precision = match r.gflop_per_s {
            Some(_) => r.precision().to_string(),
            None => "-".into(),
        };
        let mut row = vec![
            r.experiment.clone(),
            r.variant.clone(),
            // A matrix's shape where the experiment has one, as `compare` prints it.
            r.size_label.clone().unwrap_or_else(|| format_bytes(r.size_bytes)),
            precision,
            format_ms(r.timing.median_ms),
            rate,
            of_copy,
            of_peak,
            format!("{:.2}", r.speedup_over_slowest),
            if r.validated { "yes".into() } else { "NO".into() },
        ];
        if !with_precision {
            row.remove(3);
        }
        cells.push(row);
    }
    let mut right = numbers_from(2, header.len());
    if with_precision {
        right[3] = false;
    }
    out.push_str(&columns(
        &cells,
        Layout {
            right: &right,
            rule: true,
            ..Layout::default()
        },
    ));
    let mut products: Vec<&str> = run
        .rows
        .iter()
        .filter(|r| r.gflop_per_s.is_some())
        .map(|r| r.experiment.as_str())
        .collect();
    products.dedup();
    if !products.is_empty() {
        let _ = writeln!(
            out,
            "{}: GFLOP/s, not a share of the copy; `coalesce compare` sets them beside cuBLAS in their precision",
            products.join(", ")
        );
    }
    for r in run.rows.iter().filter(|r| !r.validated) {
        let _ = writeln!(
            out,
            "NOT VALIDATED {}/{} ({}): {}",
            r.experiment, r.variant, r.kernel, r.check
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{Problem, Work};
    use crate::harness::row;
    use crate::timing::Timing;
    use crate::validate::Validation;

    fn report() -> Run {
        let device = DeviceInfo {
            name: "Test GPU".into(),
            ..DeviceInfo::h100()
        };
        let t = Timing::from_samples(vec![0.5, 0.4, 0.6]);
        let baseline = Baseline {
            bytes: 256 << 20,
            timing: t,
            gb_per_s: 3000.0,
        };
        let case = crate::harness::Case {
            experiment: "copy".into(),
            variant: "f32".into(),
            kernel: "copy_f32".into(),
            problem: Problem::Elements { n: 64 << 20 },
            work: Work::Bytes(512 << 20),
        };
        let good = row(
            &case,
            t,
            &baseline,
            &device,
            Validation {
                ok: true,
                detail: "exact".into(),
            },
        );
        let bad = Row {
            variant: "f32x4".into(),
            validated: false,
            check: "exact: 1 of 9 differ".into(),
            ..good.clone()
        };
        Run {
            schema: crate::run_table::SCHEMA,
            coalesce_version: "test".into(),
            date: None,
            device,
            ptx_arch: "sm_70".into(),
            peak_gb_per_s: Some(3352.3),
            baselines: vec![ExperimentBaseline {
                experiment: "copy".into(),
                baseline,
            }],
            rows: vec![good, bad],
        }
    }

    #[test]
    fn table_has_a_row_per_result_and_flags_failures() {
        let text = render(&report());
        assert!(text.contains("Test GPU"));
        assert!(text.contains("cuMemcpyDtoD of 256.0 MiB = 3000 GB/s"));
        assert!(
            text.lines()
                .any(|l| l.starts_with("copy") && l.contains("f32 ") && l.ends_with("yes"))
        );
        assert!(
            text.lines()
                .any(|l| l.starts_with("copy") && l.contains("f32x4") && l.ends_with("NO"))
        );
        assert!(text.contains("NOT VALIDATED copy/f32x4 (copy_f32): exact: 1 of 9 differ"));
        assert_eq!(report().failures(), 1);
    }

    /// A product's rate is FLOPs: no share of the copy or of the DRAM's peak.
    #[test]
    fn products_show_no_share_of_the_copy() {
        let mut r = report();
        let mut product = r.rows[0].clone();
        product.experiment = "matmul".into();
        product.variant = "remapped".into();
        product.gflop_per_s = Some(6_000.0);
        product.size_label = Some("4096x4096x4096".into());
        r.rows = vec![product];
        let text = render(&r);
        let row = text.lines().find(|l| l.starts_with("matmul")).unwrap();
        let cells: Vec<&str> = row.split_whitespace().collect();
        // ... rate, % copy, % peak, x slowest, valid
        assert_eq!(
            cells[cells.len() - 5..],
            ["GFLOP/s", "-", "-", "1.00", "yes"],
            "{text}"
        );
        assert!(row.contains("6000 GFLOP/s"), "{row}");
        assert!(
            row.contains(" 4096x4096x4096 ") && !row.contains("MiB"),
            "the shape, not bytes: {row}"
        );
        assert!(
            text.contains(
                "matmul: GFLOP/s, not a share of the copy; `coalesce compare` sets them beside cuBLAS"
            ),
            "{text}"
        );
        // Products name their precision in a column of their own.
        assert!(
            text.lines()
                .any(|l| l.starts_with("experiment") && l.contains(" precision ")),
            "{text}"
        );
        assert_eq!(cells[3], "FP32", "{text}");
        let mut bf16 = r.rows[0].clone();
        (bf16.experiment, bf16.variant, bf16.precision) = ("gemm-bf16".into(), "simt".into(), "BF16".into());
        r.rows.push(bf16);
        let text = render(&r);
        let row = text.lines().find(|l| l.starts_with("gemm-bf16")).unwrap();
        assert_eq!(row.split_whitespace().nth(3), Some("BF16"), "{text}");
        // Bandwidth rows keep theirs, and no note or precision.
        let text = render(&report());
        assert!(!text.contains("GFLOP/s") && !text.contains("precision"), "{text}");
    }

    #[test]
    fn json_round_trips() {
        let dir = std::env::temp_dir().join(format!("coalesce-json-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.json");
        crate::output::write_json(&path, &report()).unwrap();
        let back: Run = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(back, report());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_header_names_every_ptx_module_that_ran() {
        let first_of = |m: PtxModule| {
            kernels::entry::ALL
                .iter()
                .find(|k| k.module == m)
                .map(|k| k.name)
                .unwrap()
        };
        let (base, sm80, sm90a) = (
            first_of(PtxModule::Baseline),
            first_of(PtxModule::Sm80),
            first_of(PtxModule::Sm90a),
        );
        assert_eq!(ptx_ran("sm_70", [base]), "sm_70");
        assert_eq!(ptx_ran("sm_70", [base, sm90a]), "sm_70 and sm_90a");
        assert_eq!(
            ptx_ran("sm_70", [sm80, base, sm90a, sm80]),
            "sm_70, sm_80 and sm_90a"
        );
        // A baseline built newer than sm_80 builds the sm_80 module too; a kernel this
        // build does not know (from an older run's file) is the baseline's.
        assert_eq!(ptx_ran("sm_90", [sm80, "gone_kernel"]), "sm_90");
        let mut r = report();
        r.rows[0].kernel = sm80.into();
        assert!(
            render(&r)
                .lines()
                .next()
                .unwrap()
                .ends_with("; kernels: PTX for sm_70 and sm_80")
        );
        let loaded = ptx_loaded(&DeviceInfo::h100());
        assert!(
            loaded.starts_with(crate::ptx::ARCH) && loaded.ends_with(" and sm_90a"),
            "{loaded}"
        );
        let volta = DeviceInfo {
            compute_capability: (7, 0),
            ..DeviceInfo::h100()
        };
        assert_eq!(ptx_loaded(&volta), crate::ptx::ARCH);
    }
}
