//! `coalesce report`: a run's results written as a directory a person would rather
//! look at than read: report.md (device, date, the full table, Rust against CUDA
//! C++, published claims beside this GPU's numbers), index.html (each kernel's source
//! annotated per line, in a browser: [`html`]), results.json, and SVG plots.

pub mod claims;
pub mod from_files;
pub mod html;
pub mod ladder;
pub mod markdown;
pub mod markdown_table;
pub mod plots;
pub mod predicted;
pub mod sites;
pub mod sweep;
pub mod variant_of;
pub mod versus;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::compare::CompareReport;
use crate::error::Result;
use crate::output::{prepare_dir, write_file, write_json};
use crate::run_table::Run;

/// What results.json holds: the run (the same fields `coalesce run --json` writes,
/// its date among them) with how long it took, and the comparison with the C++
/// twins and cuBLAS (what `coalesce compare --json` writes) where it ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// Wall-clock seconds the whole run took (0 where the file does not say).
    #[serde(default)]
    pub elapsed_s: f64,
    #[serde(flatten)]
    pub run: Run,
    /// None with `--rust-only`; its `rows[].rust` are the numbers in `run`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compare: Option<CompareReport>,
    /// `report --profile`: what the model predicts for these kernels on this GPU.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub predicted: Vec<predicted::Predicted>,
    /// A live report on a GPU with no profile: each kernel's emulated sites, for the
    /// page (with a profile, each prediction keeps its own).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub emulated: Vec<predicted::Emulated>,
    /// Runs of the same GPU at other sizes (`report --from` with several files of
    /// one GPU), each with the model's predictions at its size where a profile was
    /// given: the page and report.md set them beside each other ([`sweep`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_sizes: Vec<sweep::AtSize>,
}

impl Results {
    /// A report of a comparison: its Rust side is the run.
    pub fn of_comparison(elapsed_s: f64, compare: CompareReport) -> Results {
        Results {
            elapsed_s,
            run: compare.rust_run(),
            compare: Some(compare),
            predicted: Vec::new(),
            emulated: Vec::new(),
            other_sizes: Vec::new(),
        }
    }

    /// When the run finished, or that the file does not say (one written by `run
    /// --json` or `compare --json` before they recorded it).
    pub fn date(&self) -> &str {
        self.run.date.as_deref().unwrap_or(from_files::NOT_RECORDED)
    }

    /// Kernels (and cuBLAS lines, and broken twins) that failed validation.
    pub fn failures(&self) -> usize {
        match &self.compare {
            Some(c) => c.failures(),
            None => self.run.failures(),
        }
    }
}

/// Writes report.md, results.json, index.html and every plot the results allow into
/// `dir`; returns the files written, report.md first.
pub fn write(dir: &Path, results: &Results) -> Result<Vec<PathBuf>> {
    write_dir(dir, results, Page::Saved)
}

/// Whether a folder gets index.html, and of what: results rendered from files (the
/// same bytes on every machine), or a run just made (with SASS where the tools run).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Page {
    None,
    Saved,
    Live,
}

/// The line report.md gains where index.html sits beside it.
pub const PAGE_LINE: &str = "- Page: [index.html](index.html), each kernel's source annotated line by line \
     with what the emulator counted and the GPU measured, each variant as a diff from the one it builds on, \
     and the charts (one file; open it in a browser, offline)";

/// [`write`], with index.html or without (a GPU's folder in a report of several,
/// whose page covers them all).
fn write_dir(dir: &Path, results: &Results, page: Page) -> Result<Vec<PathBuf>> {
    prepare_dir(dir)?;
    let plots = plots::all(results)?;
    let mut markdown = markdown::render(results, &plots);
    let html = (page != Page::None).then(|| {
        markdown = markdown.replacen("\n\n", &format!("\n\n{PAGE_LINE}\n"), 1);
        let one = std::slice::from_ref(results);
        if page == Page::Live {
            html::render_live(one)
        } else {
            html::render(one)
        }
    });
    let mut files = vec![dir.join("report.md"), dir.join("results.json")];
    if let Some(html) = &html {
        let path = dir.join("index.html");
        write_file(&path, html)?;
        files.push(path);
    }
    for p in &plots {
        let path = dir.join(p.file);
        write_file(&path, &p.svg)?;
        files.push(path);
    }
    write_json(&files[1], results)?;
    write_file(&files[0], &markdown)?;
    Ok(files)
}

/// Renders saved results without a GPU: one file gives its report as `coalesce
/// report` wrote it; several (one per GPU) give an across-GPU report.md with a picture
/// and index.html, and each GPU's own report in a folder named after it. Returns the
/// files written.
pub fn write_from(dir: &Path, all: &[Results]) -> Result<Vec<PathBuf>> {
    write_all(dir, all, Page::Saved)
}

/// [`write_from`] for results a `coalesce report` has just run: the page gains each
/// kernel's SASS where ptxas and nvdisasm run on this machine.
pub fn write_live(dir: &Path, all: &[Results]) -> Result<Vec<PathBuf>> {
    write_all(dir, all, Page::Live)
}

fn write_all(dir: &Path, all: &[Results], page: Page) -> Result<Vec<PathBuf>> {
    if let [one] = all {
        return write_dir(dir, one, page);
    }
    prepare_dir(dir)?;
    let plot = plots::summary::plot(all)?;
    let html = if page == Page::Live {
        html::render_live(all)
    } else {
        html::render(all)
    };
    let mut files = vec![dir.join("report.md"), dir.join("index.html")];
    if let Some(p) = &plot {
        let path = dir.join(p.file);
        write_file(&path, &p.svg)?;
        files.push(path);
    }
    for (r, folder) in all.iter().zip(from_files::folders(all)) {
        files.extend(write_dir(&dir.join(folder), r, Page::None)?);
    }
    write_file(&files[1], &html)?;
    write_file(&files[0], &from_files::render(all, plot.as_ref()))?;
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unwritable_out_dir_fails_first() {
        let e = prepare_dir(Path::new("/proc/coalesce-report")).unwrap_err();
        assert!(
            e.to_string().starts_with("cannot write /proc/coalesce-report"),
            "{e}"
        );
    }
}
