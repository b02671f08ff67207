//! `coalesce report`: a run's results written as a directory a person would rather
//! look at than read: report.md (device, date, the full table, Rust against CUDA
//! C++, published claims beside this GPU's numbers), results.json, and SVG plots.

pub mod claims;
pub mod gpus;
pub mod ladder;
pub mod markdown;
pub mod markdown_table;
pub mod named;
pub mod plots;
pub mod predicted;
pub mod versus;

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::compare::CompareReport;
use crate::error::Result;
use crate::output::{prepare_dir, write_file, write_json};
use crate::table::Report;

/// What results.json holds: the run (the same fields `coalesce run --json` writes,
/// its date among them) with how long it took, and the comparison with the C++
/// twins and cuBLAS (what `coalesce compare --json` writes) where it ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// Wall-clock seconds the whole run took (0 where the file does not say).
    #[serde(default)]
    pub elapsed_s: f64,
    #[serde(flatten)]
    pub run: Report,
    /// None with `--rust-only`; its `rows[].rust` are the numbers in `run`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compare: Option<CompareReport>,
    /// `report --profile`: what the model predicts for these kernels on this GPU.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub predicted: Vec<predicted::Predicted>,
}

impl Results {
    /// A report of a comparison: its Rust side is the run.
    pub fn of_comparison(elapsed_s: f64, compare: CompareReport) -> Results {
        Results {
            elapsed_s,
            run: compare.rust_run(),
            compare: Some(compare),
            predicted: Vec::new(),
        }
    }

    /// When the run finished, or that the file does not say (one written by `run
    /// --json` or `compare --json` before they recorded it).
    pub fn date(&self) -> &str {
        self.run.date.as_deref().unwrap_or(gpus::NOT_RECORDED)
    }

    /// Kernels (and cuBLAS lines, and broken twins) that failed validation.
    pub fn failures(&self) -> usize {
        match &self.compare {
            Some(c) => c.failures(),
            None => self.run.failures(),
        }
    }
}

/// Year, month, day of a count of days since 1970-01-01 (proleptic Gregorian).
fn civil_date(days: i64) -> (i64, u32, u32) {
    // Shift to a calendar that starts on 0000-03-01, so the leap day ends each
    // 4/100/400-year cycle; 719468 days separate that origin from 1970-01-01.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_from_march + 2) / 5 + 1) as u32;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// `time` as `YYYY-MM-DD HH:MM UTC`.
pub fn utc_date(time: SystemTime) -> String {
    let secs = match time.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    };
    let (y, m, d) = civil_date(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02} UTC", s / 3600, s / 60 % 60)
}

/// Writes report.md, results.json and every plot the results allow into `dir`;
/// returns the files written, report.md first.
pub fn write(dir: &Path, results: &Results) -> Result<Vec<PathBuf>> {
    prepare_dir(dir)?;
    let plots = plots::all(results)?;
    let mut files = vec![dir.join("report.md"), dir.join("results.json")];
    for p in &plots {
        let path = dir.join(p.file);
        write_file(&path, &p.svg)?;
        files.push(path);
    }
    write_json(&files[1], results)?;
    write_file(&files[0], &markdown::render(results, &plots))?;
    Ok(files)
}

/// Renders saved results without a GPU: one file gives its report as `coalesce
/// report` wrote it; several (one per GPU) give an across-GPU report.md with a picture,
/// and each GPU's own report in a folder named after it. Returns the files written.
pub fn write_from(dir: &Path, all: &[Results]) -> Result<Vec<PathBuf>> {
    if let [one] = all {
        return write(dir, one);
    }
    prepare_dir(dir)?;
    let plot = plots::summary::plot(all)?;
    let mut files = vec![dir.join("report.md")];
    if let Some(p) = &plot {
        let path = dir.join(p.file);
        write_file(&path, &p.svg)?;
        files.push(path);
    }
    for (r, folder) in all.iter().zip(gpus::folders(all)) {
        files.extend(write(&dir.join(folder), r)?);
    }
    write_file(&files[0], &gpus::render(all, plot.as_ref()))?;
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_date(0), (1970, 1, 1));
        assert_eq!(civil_date(11_016), (2000, 2, 29));
        assert_eq!(civil_date(19_723), (2024, 1, 1));
        assert_eq!(civil_date(-1), (1969, 12, 31));
        assert_eq!(civil_date(20_513), (2026, 3, 1));
    }

    #[test]
    fn utc_date_has_minutes() {
        let t = UNIX_EPOCH + Duration::from_secs(19_723 * 86_400 + 13 * 3600 + 7 * 60 + 59);
        assert_eq!(utc_date(t), "2024-01-01 13:07 UTC");
    }

    #[test]
    fn an_unwritable_out_dir_fails_first() {
        let e = prepare_dir(Path::new("/proc/coalesce-report")).unwrap_err();
        assert!(
            e.to_string().starts_with("cannot write /proc/coalesce-report"),
            "{e}"
        );
    }
}
