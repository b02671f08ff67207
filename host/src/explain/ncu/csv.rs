//! Reading what Nsight Compute counted: `scripts/gpu-run.sh ncu` profiles `coalesce run
//! EXPERIMENT/VARIANT` once per variant with `ncu --csv --print-units base --metrics`
//! [`METRICS`] and saves the output as `EXPERIMENT.VARIANT.csv` in one folder;
//! [`read_dir`] reads that folder back, one [`KernelCounts`] per kernel and variant.

use std::collections::BTreeMap;
use std::path::Path;

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
pub(super) const GLD_SECTORS: &str = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum";
pub(super) const DRAM_READ: &str = "dram__bytes_read.sum";
pub(super) const DRAM_WRITE: &str = "dram__bytes_write.sum";
pub(super) const GLD_REQUESTS: &str = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum";
pub(super) const GST_SECTORS: &str = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum";
pub(super) const GST_REQUESTS: &str = "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum";
pub(super) const SLD_WAVEFRONTS: &str = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum";
pub(super) const SLD_INSTRUCTIONS: &str = "smsp__inst_executed_op_shared_ld.sum";
pub(super) const SST_WAVEFRONTS: &str = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum";
pub(super) const SST_INSTRUCTIONS: &str = "smsp__inst_executed_op_shared_st.sum";
pub(super) const SLD_WAVEFRONTS_SASS: &str = "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum";
pub(super) const SLD_INSTRUCTIONS_ON: &str = "smsp__inst_executed_op_shared_ld_pred_on_any.sum";
pub(super) const SST_WAVEFRONTS_SASS: &str = "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_st.sum";
pub(super) const SST_INSTRUCTIONS_ON: &str = "smsp__inst_executed_op_shared_st_pred_on_any.sum";
pub(super) const LDGSTS_WAVEFRONTS_SASS: &str =
    "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum";
pub(super) const LDGSTS_WAVEFRONTS: &str = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum";
pub(super) const LDGSTS_INSTRUCTIONS: &str = "smsp__inst_executed_op_ldgsts.sum";

/// What ncu measured for one kernel in one variant's run, summed over its launches.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelCounts {
    /// `EXPERIMENT/VARIANT`.
    pub variant: String,
    pub kernel: String,
    pub launches: usize,
    pub metrics: BTreeMap<String, f64>,
    /// The first launch's own values (the CSV's lowest ID of this kernel).
    pub first: BTreeMap<String, f64>,
}

impl KernelCounts {
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
pub fn parse_csv(variant: &str, text: &str) -> std::result::Result<Vec<KernelCounts>, String> {
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
        .map(|(kernel, (ids, metrics, first))| KernelCounts {
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
    pub kernels: Vec<KernelCounts>,
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
        kernels: Vec::new(),
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
            Ok(m) => found.kernels.extend(m),
            Err(why) => found.skipped.push(format!("{name}: {why}")),
        }
    }
    if found.kernels.is_empty() {
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
pub fn variants(measured: &[KernelCounts]) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for m in measured {
        if !v.contains(&m.variant) {
            v.push(m.variant.clone());
        }
    }
    v
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
        let script = include_str!("../../../../scripts/gpu-run.sh");
        for m in METRICS.iter().chain(&OPTIONAL_METRICS) {
            assert!(script.contains(m), "scripts/gpu-run.sh does not collect {m}");
        }
        // DRAM bytes in the steady state `KernelCounts::steady_per_launch` reads: no flush,
        // and launches that follow a launch of the same kernel.
        assert!(script.contains("--cache-control none --metrics dram__bytes_read.sum,dram__bytes_write.sum"));
        assert!(script.contains("--reps 1 --warmup 1"));
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
