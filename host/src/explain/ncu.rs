//! Predicted against measured: reads what Nsight Compute counted on a GPU and sets
//! it beside what the emulator predicts for the same kernels.
//!
//! `scripts/gpu-run.sh ncu` profiles `coalesce run EXPERIMENT/VARIANT` once per variant
//! with `ncu --csv --print-units base --metrics` [`METRICS`] and saves the output as
//! `EXPERIMENT.VARIANT.csv` in one folder; [`read_dir`] reads that folder back.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use super::ExplainReport;
use super::analyse::Direction;
use crate::error::{Error, Result};

/// Global sectors and requests (loads, stores), shared wavefronts, instructions and
/// bank conflicts (loads, stores, `cp.async`): what the comparison reads. The first
/// ones every ncu has; [`OPTIONAL_METRICS`] are read where the CSV has them.
pub const METRICS: [&str; 12] = [
    DRAM_READ,
    DRAM_WRITE,
    GLD_SECTORS,
    GLD_REQUESTS,
    GST_SECTORS,
    GST_REQUESTS,
    SLD_WAVEFRONTS,
    SLD_INSTRUCTIONS,
    SST_WAVEFRONTS,
    SST_INSTRUCTIONS,
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
];
/// Counts the comparison prefers where ncu collects them (`scripts/gpu-run.sh` asks
/// for them where its ncu knows them): shared wavefronts as the SASS-level
/// (instrumented) counters give them, from each instruction's addresses alone (the
/// l1tex hardware counter also counts cycles a shared access lost to other traffic of
/// the L1's data banks, which differ from launch to launch); shared instructions with
/// at least one thread predicated on (ptxas puts never-executed `@!PT LDS RZ, [RZ]`
/// before each group of `LDGSTS`, which the hardware counts as shared loads that
/// access nothing); and the shared writes of `cp.async` (`LDGSTS`), which are not
/// shared stores.
pub const OPTIONAL_METRICS: [&str; 9] = [
    SLD_WAVEFRONTS_SASS,
    SLD_INSTRUCTIONS_ON,
    SST_WAVEFRONTS_SASS,
    SST_INSTRUCTIONS_ON,
    LDGSTS_WAVEFRONTS_SASS,
    LDGSTS_WAVEFRONTS,
    LDGSTS_INSTRUCTIONS,
    "smsp__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "smsp__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
];
const GLD_SECTORS: &str = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum";
const DRAM_READ: &str = "dram__bytes_read.sum";
const DRAM_WRITE: &str = "dram__bytes_write.sum";
/// A predicted DRAM byte count within this fraction of ncu's counts as a match.
pub const DRAM_TOLERANCE: f64 = 0.10;
const GLD_REQUESTS: &str = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum";
const GST_SECTORS: &str = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum";
const GST_REQUESTS: &str = "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum";
const SLD_WAVEFRONTS: &str = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum";
const SLD_INSTRUCTIONS: &str = "smsp__inst_executed_op_shared_ld.sum";
const SST_WAVEFRONTS: &str = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum";
const SST_INSTRUCTIONS: &str = "smsp__inst_executed_op_shared_st.sum";
const SLD_WAVEFRONTS_SASS: &str = "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum";
const SLD_INSTRUCTIONS_ON: &str = "smsp__inst_executed_op_shared_ld_pred_on_any.sum";
const SST_WAVEFRONTS_SASS: &str = "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_st.sum";
const SST_INSTRUCTIONS_ON: &str = "smsp__inst_executed_op_shared_st_pred_on_any.sum";
const LDGSTS_WAVEFRONTS_SASS: &str = "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum";
const LDGSTS_WAVEFRONTS: &str = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum";
const LDGSTS_INSTRUCTIONS: &str = "smsp__inst_executed_op_ldgsts.sum";

/// A prediction within this fraction of the measurement counts as a match.
pub const TOLERANCE: f64 = 0.05;

/// What ncu measured for one kernel in one variant's run, summed over its launches.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// `EXPERIMENT/VARIANT`.
    pub variant: String,
    pub kernel: String,
    pub launches: usize,
    pub metrics: BTreeMap<String, f64>,
    /// The first launch's own values (the CSV's lowest ID of this kernel).
    pub first: BTreeMap<String, f64>,
}

impl Measured {
    /// One launch's count of `metric` in the steady state `coalesce run` times: the
    /// mean over the launches after the first, each of which follows a launch of the
    /// same kernel (the first follows the harness's reset of the buffers instead);
    /// the one launch's count if there is only one. With the launch and the count
    /// it is a mean over.
    pub fn steady_per_launch(&self, metric: &str) -> Option<(f64, usize)> {
        let all = *self.metrics.get(metric)?;
        match self.launches {
            0 | 1 => Some((all, 1)),
            n => Some((
                (all - self.first.get(metric).copied().unwrap_or(0.0)) / (n - 1) as f64,
                n - 1,
            )),
        }
    }
}

/// Splits one CSV line into fields (quoted fields may hold commas and `""`).
fn csv_fields(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => fields.push(std::mem::take(&mut field)),
            (c, _) => field.push(c),
        }
    }
    fields.push(field);
    fields
}

/// Parses ncu's `--csv` output (one row per launch and metric) into per-kernel sums.
/// Lines before the header (`==PROF==` messages, the program's own output) are skipped.
pub fn parse_csv(variant: &str, text: &str) -> std::result::Result<Vec<Measured>, String> {
    let mut lines = text.lines().skip_while(|l| !l.starts_with("\"ID\""));
    let header = csv_fields(lines.next().ok_or("no ncu CSV header (\"ID\",...) found")?);
    let column = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| format!("the CSV header has no {name:?} column"))
    };
    let (id, kernel, metric, value) = (
        column("ID")?,
        column("Kernel Name")?,
        column("Metric Name")?,
        column("Metric Value")?,
    );
    type Sums = (Vec<String>, BTreeMap<String, f64>, BTreeMap<String, f64>);
    let mut by_kernel: BTreeMap<String, Sums> = BTreeMap::new();
    for line in lines.filter(|l| l.starts_with('"')) {
        let f = csv_fields(line);
        let get = |i: usize| f.get(i).map(String::as_str).unwrap_or("");
        // Demangled names may carry a parameter list; ours are plain symbols.
        let name = get(kernel).split('(').next().unwrap_or("").trim().to_string();
        let raw = get(value).replace(',', "");
        // ncu says "n/a" for a metric a kernel has no counter for (an optional one such
        // as LDGSTS wavefronts, in a kernel without cp.async): absent, not an error.
        if raw.trim() == "n/a" && OPTIONAL_METRICS.contains(&get(metric)) {
            continue;
        }
        let v: f64 = raw.trim().parse().map_err(|_| {
            format!(
                "metric {} of {name}: {:?} is not a number",
                get(metric),
                get(value)
            )
        })?;
        let entry = by_kernel.entry(name).or_default();
        if !entry.0.iter().any(|x| x == get(id)) {
            entry.0.push(get(id).to_string());
        }
        // ncu lists launches in order: the first ID seen is the first launch.
        if entry.0[0] == get(id) {
            *entry.2.entry(get(metric).to_string()).or_insert(0.0) += v;
        }
        *entry.1.entry(get(metric).to_string()).or_insert(0.0) += v;
    }
    Ok(by_kernel
        .into_iter()
        .map(|(kernel, (ids, metrics, first))| Measured {
            variant: variant.to_string(),
            kernel,
            launches: ids.len(),
            metrics,
            first,
        })
        .collect())
}

/// What [`read_dir`] found: the measurements, and the files it could not use (one
/// line each: a failed profile should not hide the others).
pub struct Measurements {
    pub measured: Vec<Measured>,
    pub skipped: Vec<String>,
}

/// Reads every `EXPERIMENT.VARIANT.csv` in `dir`, in name order. An error only if
/// the folder cannot be read or no file in it holds ncu results.
pub fn read_dir(dir: &Path) -> Result<Measurements> {
    let read_err = |source| Error::Read {
        path: dir.display().to_string(),
        source,
    };
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(read_err)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "csv"))
        .collect();
    files.sort();
    let mut found = Measurements {
        measured: Vec::new(),
        skipped: Vec::new(),
    };
    for path in files {
        let name = path.display().to_string();
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Some((experiment, variant)) = stem.split_once('.') else {
            found
                .skipped
                .push(format!("{name}: expected a name EXPERIMENT.VARIANT.csv"));
            continue;
        };
        let parsed = std::fs::read_to_string(&path)
            .map_err(|e| e.to_string())
            .and_then(|text| parse_csv(&format!("{experiment}/{variant}"), &text));
        match parsed {
            Ok(m) => found.measured.extend(m),
            Err(why) => found.skipped.push(format!("{name}: {why}")),
        }
    }
    if found.measured.is_empty() {
        return Err(Error::NcuCsv {
            path: dir.display().to_string(),
            why: found
                .skipped
                .first()
                .cloned()
                .unwrap_or_else(|| "no EXPERIMENT.VARIANT.csv files".into()),
        });
    }
    Ok(found)
}

/// The distinct `EXPERIMENT/VARIANT`s measured, in order.
pub fn variants(measured: &[Measured]) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for m in measured {
        if !v.contains(&m.variant) {
            v.push(m.variant.clone());
        }
    }
    v
}

/// One predicted-against-measured line.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    pub variant: String,
    pub kernel: String,
    /// `global load`, `global store`, `shared load`, `shared store`, `cp.async shared`.
    pub access: &'static str,
    /// `sectors/req` (global) or `wavefronts/req` (shared).
    pub unit: &'static str,
    pub predicted: Option<f64>,
    pub measured: Option<f64>,
    /// Requests (global) or instructions (shared) ncu counted, or the launches its
    /// DRAM bytes are averaged over; `None` if the CSV lacks the metric.
    pub measured_requests: Option<f64>,
    /// The ncu metrics `measured` divides, numerator then denominator (the preferred
    /// ones the CSV has).
    pub measured_as: [&'static str; 2],
    /// The deviation that still counts as a match.
    pub tolerance: f64,
}

/// How a prediction fared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Within [`TOLERANCE`].
    Match,
    Miss,
    /// ncu did not report the metrics.
    NotMeasured,
}

impl Comparison {
    /// (predicted - measured) / measured.
    pub fn deviation(&self) -> Option<f64> {
        match (self.predicted, self.measured) {
            (Some(p), Some(m)) if m > 0.0 => Some((p - m) / m),
            _ => None,
        }
    }
    pub fn verdict(&self) -> Verdict {
        match (self.measured_requests, self.deviation()) {
            (None, _) => Verdict::NotMeasured,
            (Some(_), Some(d)) if d.abs() <= self.tolerance => Verdict::Match,
            _ => Verdict::Miss,
        }
    }
}

/// Kernels the harness launches around the measured one (input filling).
const HELPER_KERNELS: [&str; 1] = ["fill_uniform"];

fn prediction<'r>(report: &'r ExplainReport, m: &Measured) -> Option<&'r super::KernelReport> {
    report
        .kernels
        .iter()
        .find(|k| format!("{}/{}", k.experiment, k.variant) == m.variant && k.kernel == m.kernel)
}

/// Measured kernels with no prediction to set beside them (besides the helpers).
pub fn unpaired(report: &ExplainReport, measured: &[Measured]) -> Vec<String> {
    measured
        .iter()
        .filter(|m| !HELPER_KERNELS.contains(&m.kernel.as_str()) && prediction(report, m).is_none())
        .map(|m| format!("{} ({})", m.variant, m.kernel))
        .collect()
}

/// One access class of the comparison: what explain predicts, and the ncu metrics
/// that measure it, each as a list of alternatives in order of preference.
struct Class {
    access: &'static str,
    unit: &'static str,
    predicted: fn(&super::KernelReport) -> Option<f64>,
    numerator: &'static [&'static str],
    denominator: &'static [&'static str],
}

const CLASSES: [Class; 5] = [
    Class {
        access: "global load",
        unit: "sectors/req",
        predicted: |k| k.ncu_sectors_per_request(Direction::Load),
        numerator: &[GLD_SECTORS],
        denominator: &[GLD_REQUESTS],
    },
    Class {
        access: "global store",
        unit: "sectors/req",
        predicted: |k| k.sectors_per_request(Direction::Store),
        numerator: &[GST_SECTORS],
        denominator: &[GST_REQUESTS],
    },
    Class {
        access: "shared load",
        unit: "wavefronts/req",
        predicted: |k| k.wavefronts_per_request(Direction::Load),
        numerator: &[SLD_WAVEFRONTS_SASS, SLD_WAVEFRONTS],
        denominator: &[SLD_INSTRUCTIONS_ON, SLD_INSTRUCTIONS],
    },
    Class {
        access: "shared store",
        unit: "wavefronts/req",
        predicted: |k| k.wavefronts_per_request(Direction::Store),
        numerator: &[SST_WAVEFRONTS_SASS, SST_WAVEFRONTS],
        denominator: &[SST_INSTRUCTIONS_ON, SST_INSTRUCTIONS],
    },
    Class {
        access: "cp.async shared",
        unit: "wavefronts/req",
        predicted: super::KernelReport::async_copy_wavefronts_per_request,
        numerator: &[LDGSTS_WAVEFRONTS_SASS, LDGSTS_WAVEFRONTS],
        denominator: &[LDGSTS_INSTRUCTIONS],
    },
];

/// The first of `names` the measurement has, with its value (the first name and
/// `None` if it has none).
fn first_of(m: &Measured, names: &'static [&'static str]) -> (&'static str, Option<f64>) {
    names
        .iter()
        .find_map(|&n| m.metrics.get(n).map(|&v| (n, Some(v))))
        .unwrap_or((names[0], None))
}

/// What `m` measured for `class`: the ratio, its denominator (requests or
/// instructions) and the two metrics it divides.
fn measure(m: &Measured, class: &Class) -> (Option<f64>, Option<f64>, [&'static str; 2]) {
    let (numerator, count) = first_of(m, class.numerator);
    let (denominator, requests) = first_of(m, class.denominator);
    let ratio = match (count, requests) {
        (Some(n), Some(r)) if r > 0.0 => Some(n / r),
        _ => None,
    };
    (ratio, requests, [numerator, denominator])
}

/// Pairs each measured kernel with its prediction (kernels the report lacks, such as
/// the input-filling `fill_uniform`, are skipped: see [`unpaired`]).
pub fn compare(report: &ExplainReport, measured: &[Measured]) -> Vec<Comparison> {
    let mut out = Vec::new();
    for m in measured {
        let Some(k) = prediction(report, m) else {
            continue;
        };
        for class in &CLASSES {
            let predicted = (class.predicted)(k);
            let (measured, requests, measured_as) = measure(m, class);
            // Nothing predicted and nothing counted: the kernel has no such access.
            if predicted.is_none() && measured.is_none() {
                continue;
            }
            out.push(Comparison {
                variant: m.variant.clone(),
                kernel: m.kernel.clone(),
                access: class.access,
                unit: class.unit,
                predicted,
                measured,
                measured_requests: requests,
                measured_as,
                tolerance: TOLERANCE,
            });
        }
        // DRAM bytes per launch in steady state, where explain predicted them (a
        // profile was given): a launch writes back the previous launch's writes still
        // in L2 and leaves its own last writes there, as `coalesce run`'s timed ones do.
        if let Some(p) = &k.prediction {
            for (access, predicted, metric) in [
                ("DRAM read", p.dram_read_bytes, DRAM_READ),
                ("DRAM write", p.dram_write_bytes, DRAM_WRITE),
            ] {
                let measured = m.steady_per_launch(metric);
                out.push(Comparison {
                    variant: m.variant.clone(),
                    kernel: m.kernel.clone(),
                    access,
                    unit: "MiB/launch",
                    predicted: Some(predicted / f64::from(1 << 20)),
                    measured: measured.map(|(b, _)| b / f64::from(1 << 20)),
                    measured_requests: measured.map(|(_, n)| n as f64),
                    measured_as: [metric, "launches"],
                    tolerance: DRAM_TOLERANCE,
                });
            }
        }
    }
    out
}

/// The comparison table, with a verdict per line and a count of misses.
pub fn render(rows: &[Comparison], report: &ExplainReport, found: &Measurements) -> String {
    let mut table = vec![
        [
            "experiment/variant",
            "kernel",
            "access",
            "unit",
            "predicted",
            "measured",
            "ncu requests",
            "deviation",
            "",
        ]
        .map(String::from)
        .to_vec(),
    ];
    let opt = |x: Option<f64>| x.map(|v| format!("{v:.2}")).unwrap_or_else(|| "-".into());
    for r in rows {
        table.push(vec![
            r.variant.clone(),
            r.kernel.clone(),
            r.access.into(),
            r.unit.into(),
            opt(r.predicted),
            opt(r.measured),
            r.measured_requests
                .map(|n| format!("{n:.0}"))
                .unwrap_or_else(|| "-".into()),
            r.deviation()
                .map(|d| format!("{:+.1}%", 100.0 * d))
                .unwrap_or_else(|| "-".into()),
            match r.verdict() {
                Verdict::Match => "ok",
                Verdict::Miss => "MISS",
                Verdict::NotMeasured => "not measured",
            }
            .into(),
        ]);
    }
    let count = |v: Verdict| rows.iter().filter(|r| r.verdict() == v).count();
    let (matched, misses) = (count(Verdict::Match), count(Verdict::Miss));
    let sampled = report
        .kernels
        .iter()
        .filter(|k| k.sampled_blocks.is_some())
        .count();
    let mut out = format!(
        "predicted (coalesce explain, model sm70, {sampled} of {} kernels from sampled blocks) against measured (Nsight Compute)\n",
        report.kernels.len()
    );
    out.push_str(&crate::columns::columns(
        &table,
        crate::columns::Layout {
            right: &[false, false, false, false, true, true, true, true, false],
            ..Default::default()
        },
    ));
    out.push_str(&format!(
        "{matched} of {} within {:.0}% ({:.0}% for DRAM bytes); {misses} miss(es); {} not measured\n",
        matched + misses,
        100.0 * TOLERANCE,
        100.0 * DRAM_TOLERANCE,
        count(Verdict::NotMeasured)
    ));
    // Which counts each access class was measured with, and for how many kernels.
    let mut used: BTreeMap<&str, BTreeMap<[&str; 2], usize>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.measured_requests.is_some()) {
        *used
            .entry(r.access)
            .or_default()
            .entry(r.measured_as)
            .or_default() += 1;
    }
    for (access, pairs) in &used {
        let pairs: Vec<String> = pairs
            .iter()
            .map(|([n, d], count)| format!("{n} / {d} ({count})"))
            .collect();
        out.push_str(&format!("{access} measured as: {}\n", pairs.join("; ")));
    }
    let lone = unpaired(report, &found.measured);
    if !lone.is_empty() {
        out.push_str(&format!("measured, but no prediction: {}\n", lone.join(", ")));
    }
    for problem in &found.skipped {
        out.push_str(&format!("skipped {problem}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"==PROF== Connected to process 4242 (/gpu-bundle/coalesce)
==PROF== Profiling "fill_uniform" - 0: 0%....50%....100% - 9 passes
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","4242","coalesce","127.0.0.1","fill_uniform","1","7","(256, 1, 1)","(1056, 1, 1)","0","9.0","Command line profiler metrics","l1tex__t_requests_pipe_lsu_mem_global_op_st.sum","","32,768"
"1","4242","coalesce","127.0.0.1","stride_read","1","7","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum","","32768"
"1","4242","coalesce","127.0.0.1","stride_read","1","7","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum","sector","1048576"
"2","4242","coalesce","127.0.0.1","stride_read","1","7","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum","","32768"
"2","4242","coalesce","127.0.0.1","stride_read","1","7","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum","sector","1048576"
"#;

    #[test]
    fn parses_ncu_csv_and_sums_launches() {
        let m = parse_csv("stride/64", SAMPLE).unwrap();
        assert_eq!(m.len(), 2);
        let fill = &m[0];
        assert_eq!((fill.kernel.as_str(), fill.launches), ("fill_uniform", 1));
        assert_eq!(
            fill.metrics[GST_REQUESTS], 32768.0,
            "thousands separators are dropped"
        );
        let s = &m[1];
        assert_eq!((s.kernel.as_str(), s.launches), ("stride_read", 2));
        assert_eq!(s.metrics[GLD_SECTORS] / s.metrics[GLD_REQUESTS], 32.0);
        assert_eq!(s.variant, "stride/64");
        assert_eq!(s.first[GLD_SECTORS], 1048576.0);
    }

    #[test]
    fn dram_bytes_per_launch_are_the_launches_after_the_first() {
        // Three launches: the first wrote back less (ncu's default flush before it,
        // or the harness's reset), the next two follow a launch of their own kernel.
        let csv = |values: [&str; 3]| {
            let head = SAMPLE.lines().take(3).collect::<Vec<_>>().join("\n");
            let rows: Vec<String> = values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    format!(
                        r#""{}","4242","coalesce","127.0.0.1","copy_f32","1","7","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","{DRAM_WRITE}","byte","{v}""#,
                        i + 1
                    )
                })
                .collect();
            format!("{head}\n{}\n", rows.join("\n"))
        };
        let m = &parse_csv("copy/f32", &csv(["230", "256", "258"])).unwrap()[0];
        assert_eq!(m.launches, 3);
        assert_eq!(m.steady_per_launch(DRAM_WRITE), Some((257.0, 2)));
        assert_eq!(m.steady_per_launch(DRAM_READ), None);
        // One launch: its own count.
        let one = &parse_csv(
            "copy/f32",
            &csv(["230", "256", "258"])
                .replace("\"2\",\"4242", "\"1\",\"4242")
                .replace("\"3\",\"4242", "\"1\",\"4242"),
        )
        .unwrap()[0];
        assert_eq!(one.launches, 1);
        assert_eq!(one.steady_per_launch(DRAM_WRITE), Some((744.0, 1)));
    }

    #[test]
    fn rejects_text_without_a_header_or_with_bad_numbers() {
        assert!(parse_csv("x/y", "==PROF== nothing\n").is_err());
        let bad = SAMPLE.replace("\"1048576\"", "\"n/a\"");
        assert!(parse_csv("x/y", &bad).unwrap_err().contains("not a number"));
    }

    #[test]
    fn the_gpu_script_collects_every_metric_the_comparison_reads() {
        let script = include_str!("../../../scripts/gpu-run.sh");
        for m in METRICS.iter().chain(&OPTIONAL_METRICS) {
            assert!(script.contains(m), "scripts/gpu-run.sh does not collect {m}");
        }
        // DRAM bytes in the steady state `Measured::steady_per_launch` reads: no flush,
        // and launches that follow a launch of the same kernel.
        assert!(script.contains("--cache-control none --metrics dram__bytes_read.sum,dram__bytes_write.sum"));
        assert!(script.contains("--reps 1 --warmup 1"));
    }

    #[test]
    fn shared_counts_prefer_the_sass_level_ones_where_the_csv_has_them() {
        // sgemm/async-128x128x8 on the H100 (one launch): the l1tex counter's shared
        // load wavefronts over every issued shared load, 6 per tile of them the
        // never-executed `@!PT LDS RZ, [RZ]` ptxas puts before LDGSTS groups.
        let mut m = Measured {
            variant: "sgemm/async-128x128x8".into(),
            kernel: "sgemm_async_128x128x8".into(),
            launches: 1,
            metrics: BTreeMap::from([
                (SLD_WAVEFRONTS.to_string(), 6_291_456.0),
                (SLD_INSTRUCTIONS.to_string(), 2_490_368.0),
            ]),
            first: BTreeMap::new(),
        };
        let (load, ldgsts) = (&CLASSES[2], &CLASSES[4]);
        let (ratio, requests, with) = measure(&m, load);
        assert_eq!(with, [SLD_WAVEFRONTS, SLD_INSTRUCTIONS]);
        assert_eq!(requests, Some(2_490_368.0));
        assert!((ratio.unwrap() - 2.526).abs() < 1e-3);
        // Without them (2,490,368 less 6 for each of the 65,536 tiles of a warp, counted
        // in the SASS): 3 per LDS.128.
        m.metrics.insert(SLD_INSTRUCTIONS_ON.into(), 2_097_152.0);
        assert_eq!(measure(&m, load).0, Some(3.0));
        m.metrics.insert(SLD_WAVEFRONTS_SASS.into(), 6_291_456.0);
        assert_eq!(measure(&m, load).2, [SLD_WAVEFRONTS_SASS, SLD_INSTRUCTIONS_ON]);
        // The shared writes of cp.async are measured only where ncu counted LDGSTS
        // (here made-up counts: 5 LDGSTS per tile of a warp, 1.6 wavefronts each).
        assert_eq!(measure(&m, ldgsts).0, None);
        m.metrics.insert(LDGSTS_WAVEFRONTS.into(), 524_288.0);
        m.metrics.insert(LDGSTS_INSTRUCTIONS.into(), 327_680.0);
        assert_eq!(
            measure(&m, ldgsts),
            (
                Some(1.6),
                Some(327_680.0),
                [LDGSTS_WAVEFRONTS, LDGSTS_INSTRUCTIONS]
            )
        );
    }

    #[test]
    fn an_optional_metric_ncu_has_no_value_for_is_absent_and_a_required_one_an_error() {
        let head = r#""ID","Kernel Name","Metric Name","Metric Value""#;
        let row = |m: &str, v: &str| format!(r#""0","fill_uniform","{m}","{v}""#);
        let text = format!(
            "{head}\n{}\n{}\n",
            row(OPTIONAL_METRICS[0], "n/a"),
            row(GLD_SECTORS, "8")
        );
        let m = parse_csv("copy/f32", &text).unwrap();
        assert_eq!(m[0].metrics.get(GLD_SECTORS), Some(&8.0));
        assert!(!m[0].metrics.contains_key(OPTIONAL_METRICS[0]));
        let bad = format!("{head}\n{}\n", row(GLD_SECTORS, "n/a"));
        assert!(parse_csv("copy/f32", &bad).is_err());
    }

    #[test]
    fn csv_fields_handle_quotes_and_commas() {
        assert_eq!(csv_fields(r#""a","b,c","d""e",f"#), ["a", "b,c", "d\"e", "f"]);
    }
}
