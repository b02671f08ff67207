//! `coalesce report --from FILE...`: reports rendered from saved results, with no GPU;
//! with files from several GPUs, the same kernels side by side on each; with several
//! files of one GPU, its runs at several sizes ([`super::sweep`]).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::Results;
use super::markdown_table::table;
use super::plots::Plot;
use super::sweep::{self, AtSize};
use crate::compare::CompareReport;
use crate::error::{Error, Result};
use crate::run_table::SCHEMA;

/// The date of results from a `run --json` or `compare --json` of a coalesce that
/// recorded none.
pub const NOT_RECORDED: &str = "not recorded in the results file";

/// Reads a results file: `report`'s results.json, or what `run --json` or
/// `compare --json` wrote (for several devices, each of them). Anything else, or a
/// file from a newer coalesce, is a one-line error.
pub fn load(path: &Path) -> Result<Vec<Results>> {
    let shown = path.display().to_string();
    let bad = |why: String| Error::BadResults {
        path: shown.clone(),
        why,
    };
    let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
        path: shown.clone(),
        source,
    })?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(format!("not coalesce results (not JSON: {e})")))?;
    let Some(fields) = value.as_object().filter(|o| o.contains_key("coalesce_version")) else {
        return Err(bad(
            "not coalesce results (no coalesce_version; write them with `coalesce report`, `run --json` or `compare --json`)".into(),
        ));
    };
    if fields.contains_key("dram_read_granularity") {
        return Err(bad(
            "a GPU's profile (from `coalesce calibrate`), not the results of a run: give it with --profile"
                .into(),
        ));
    }
    let schema = fields.get("schema").and_then(|s| s.as_u64()).unwrap_or(1);
    if schema > u64::from(SCHEMA) {
        return Err(bad(format!(
            "written by a newer coalesce (schema {schema}; this one reads up to {SCHEMA}): upgrade coalesce to read it"
        )));
    }
    let each = |value: serde_json::Value| -> serde_json::Result<Results> {
        let is = |key: &str| value.get(key).is_some();
        if is("rust_ptx_arch") {
            serde_json::from_value::<CompareReport>(value).map(|c| Results::of_comparison(0.0, c))
        } else {
            // A results.json, or a run (`run --json`): its fields, and no more.
            serde_json::from_value::<Results>(value)
        }
    };
    let many = ["runs", "comparisons"]
        .into_iter()
        .find_map(|k| fields.get(k).and_then(|v| v.as_array()).cloned());
    let parsed = match many {
        Some(list) => list.into_iter().map(each).collect(),
        None => each(value).map(|r| vec![r]),
    };
    parsed.map_err(|e| bad(format!("not coalesce results ({e})")))
}

/// Loads every file. Files of one GPU make one report: the first given is its own
/// run, and each other adds its run at other sizes ([`super::sweep`]); a kernel
/// measured at one size in two files is refused (which would be shown?).
pub fn load_all(paths: &[PathBuf]) -> Result<Vec<Results>> {
    let mut all: Vec<Results> = Vec::new();
    // Every (experiment, variant, size) of each GPU, with the file that measured it.
    let mut measured: Vec<Vec<(String, String, String, PathBuf)>> = Vec::new();
    for p in paths {
        for r in load(p)? {
            let (gpu, first) = match all.iter().position(|x| same_device(x, &r)) {
                Some(gpu) => (gpu, false),
                None => {
                    all.push(Results {
                        other_sizes: Vec::new(),
                        ..r.clone()
                    });
                    measured.push(Vec::new());
                    (all.len() - 1, true)
                }
            };
            let runs = std::iter::once(&r.run).chain(r.other_sizes.iter().map(|s| &s.run));
            for row in runs.flat_map(|run| &run.rows) {
                let size = sweep::size_of(row);
                if let Some((.., earlier)) = measured[gpu]
                    .iter()
                    .find(|(e, v, s, _)| *e == row.experiment && *v == row.variant && *s == size)
                {
                    return Err(Error::BadResults {
                        path: p.display().to_string(),
                        why: format!(
                            "measures {}/{} at {size} on {}, as {} does: give each size of a GPU once",
                            row.experiment,
                            row.variant,
                            r.run.device.name,
                            earlier.display()
                        ),
                    });
                }
                measured[gpu].push((row.experiment.clone(), row.variant.clone(), size, p.clone()));
            }
            if !first {
                all[gpu].other_sizes.push(AtSize {
                    run: r.run,
                    predicted: r.predicted,
                });
            }
            all[gpu].other_sizes.extend(r.other_sizes);
        }
    }
    Ok(all)
}

fn same_device(a: &Results, b: &Results) -> bool {
    let (a, b) = (&a.run.device, &b.run.device);
    a.name == b.name
        && a.ordinal == b.ordinal
        && a.total_memory_bytes == b.total_memory_bytes
        && a.pci_bus_id == b.pci_bus_id
}

/// Each GPU's name in a report of several: the driver's name, and where GPUs of one
/// model meet, its ordinal and PCI address too (`NVIDIA H100 80GB HBM3 (GPU 1, PCI
/// 0000:2a:00.0)`), so their columns, legends and folders stay apart.
pub fn labels(all: &[Results]) -> Vec<String> {
    all.iter()
        .map(|r| {
            let d = &r.run.device;
            if all.iter().filter(|o| o.run.device.name == d.name).count() < 2 {
                return d.name.clone();
            }
            match &d.pci_bus_id {
                Some(bus) => format!("{} (GPU {}, PCI {bus})", d.name, d.ordinal),
                None => format!("{} (GPU {})", d.name, d.ordinal),
            }
        })
        .collect()
}

/// The folder of each GPU's own report: its label as a file name
/// (`nvidia-h100-80gb-hbm3`, `nvidia-h100-80gb-hbm3-gpu-1-pci-0000-2a-00-0`).
pub fn folders(all: &[Results]) -> Vec<String> {
    labels(all).iter().map(|l| crate::device::slug(l)).collect()
}

/// Every (experiment, variant) of any file, in the order they first appear.
fn kernels(all: &[Results]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for r in all.iter().flat_map(|x| &x.run.rows) {
        let k = (r.experiment.clone(), r.variant.clone());
        if !out.contains(&k) {
            out.push(k);
        }
    }
    out
}

/// The across-GPU report.md: links to each GPU's own report, the picture, then each
/// kernel as % of copy (GFLOP/s for products) on each GPU.
pub fn render(all: &[Results], plot: Option<&Plot>) -> String {
    let mut out = String::new();
    let names = labels(all);
    let _ = writeln!(out, "# coalesce report: {} GPUs\n", all.len());
    for ((r, name), folder) in all.iter().zip(&names).zip(folders(all)) {
        let _ = writeln!(
            out,
            "- {name}: measured {}, coalesce {}; [its full report]({folder}/report.md)",
            r.date(),
            r.run.coalesce_version,
        );
    }
    let _ = writeln!(out, "{}", super::PAGE_LINE);
    if let Some(p) = plot {
        let _ = writeln!(out, "\n![{}]({})", p.title, p.file);
    }
    let _ = writeln!(
        out,
        "\nEach kernel's effective bandwidth as % of cuMemcpyDtoD measured in the same run \
         on the same GPU (matrix products: GFLOP/s), so the columns compare how close each \
         GPU gets to its own ceiling.\n"
    );
    let mut header = vec!["experiment".to_string(), "variant".to_string()];
    header.extend(names.iter().map(|n| format!("{n}: % of copy")));
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let rows = kernels(all).into_iter().map(|(e, v)| {
        let mut cells = vec![e.clone(), v.clone()];
        for r in all {
            let cell = match r.run.rows.iter().find(|x| x.experiment == e && x.variant == v) {
                None => "not run".into(),
                Some(x) if !x.validated => "NOT VALIDATED".into(),
                Some(x) => match x.gflop_per_s {
                    Some(g) => format!("{g:.0} GFLOP/s"),
                    None => format!("{:.1} ({:.0} GB/s)", x.pct_of_copy, x.gb_per_s),
                },
            };
            cells.push(cell);
        }
        cells
    });
    table(&mut out, &header, rows);
    out
}
