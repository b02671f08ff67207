//! The committed sample report (docs/sample-report/) is what this coalesce renders
//! from its own results files with the shipped profiles: every file, byte for byte.
//! No GPU needed. When the report's code or a shipped profile changes, regenerate it
//! with `scripts/sample-report.sh` and commit the result.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use coalesce::profile::Profile;
use coalesce::report::{self, Results};

const REGENERATE: &str = "the committed sample report is not what this coalesce renders: \
                          run scripts/sample-report.sh (--page where only the kernels' source or \
                          PTX changed) and commit docs/sample-report/";

fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/sample-report")
}

/// The results files the sample report was made from: one per GPU folder.
fn results_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(sample())
        .unwrap()
        .map(|e| e.unwrap().path().join("results.json"))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// Every file under `dir`, by its path inside it.
fn files_under(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let bytes = std::fs::read(&p).unwrap();
                out.insert(p.strip_prefix(dir).unwrap().to_path_buf(), bytes);
            }
        }
    }
    out
}

/// The results, as `report --from` reads them.
fn loaded() -> Vec<Results> {
    let files = results_files();
    assert!(files.len() >= 2, "docs/sample-report has {files:?}");
    report::from_files::load_all(&files).unwrap()
}

/// Rendered again from its results files, the sample report is the committed one:
/// the same files, the same bytes (report code that changes what it writes shows
/// here first).
#[test]
fn the_sample_report_is_what_its_results_render() {
    let out = common::temp_path("sample-report");
    report::write_from(&out, &loaded()).unwrap();
    let (made, committed) = (files_under(&out), files_under(&sample()));
    let names = |m: &BTreeMap<PathBuf, Vec<u8>>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(&made), names(&committed), "{REGENERATE}");
    for (path, bytes) in &made {
        assert!(
            committed[path] == *bytes,
            "{} differs ({} under {}): {REGENERATE}",
            path.display(),
            out.join(path).display(),
            sample().display()
        );
    }
}

/// ptxas, which the predictions' residency needs (without it they count threads
/// only, and differ): `$PTXAS`, else `ptxas` on the PATH.
fn have_ptxas() -> bool {
    let exe = std::env::var("PTXAS").unwrap_or_else(|_| "ptxas".into());
    let found = std::process::Command::new(exe).arg("--version").output().is_ok();
    assert!(
        found || std::env::var_os("COALESCE_REQUIRE_PTXAS").is_none(),
        "COALESCE_REQUIRE_PTXAS is set but ptxas was not found"
    );
    found
}

/// The predictions saved in the sample report's results files are what the shipped
/// profiles predict now: a change to the model or a profile shows here. Emulating
/// every bandwidth kernel for two GPUs takes minutes in a debug build, so this runs
/// in release builds (`cargo test --release --test sample_report`); CI checks the
/// same with `scripts/sample-report.sh --check` on its release binary.
#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "minutes in a debug build: cargo test --release --test sample_report, or scripts/sample-report.sh --check"
)]
fn the_sample_reports_predictions_come_from_the_shipped_profiles() {
    if !have_ptxas() {
        eprintln!("ptxas not found (set PTXAS): the predictions' residency needs it; skipped");
        return;
    }
    let all = loaded();
    let threads: Vec<_> = all
        .into_iter()
        .map(|r| {
            std::thread::spawn(move || {
                let name = r.run.device.name.clone();
                let profile = Profile::shipped(&name)
                    .unwrap_or_else(|| panic!("no shipped profile for {name}"))
                    .unwrap();
                let now = report::predicted::predict(&r, profile, "the shipped profile", |_| {}).unwrap();
                (name, r.predicted, now)
            })
        })
        .collect();
    for t in threads {
        let (name, saved, now) = t.join().unwrap();
        assert!(!saved.is_empty(), "{name}: the sample report has no predictions");
        assert!(saved == now, "{name}: {REGENERATE}");
    }
}

/// Every text of every chart lies inside its canvas (its width estimated from its
/// length and font size): an axis description too long for the chart is cut off.
#[test]
fn the_sample_reports_charts_keep_their_text_on_the_canvas() {
    let mut checked = 0;
    for (path, bytes) in files_under(&sample()) {
        if path.extension().is_none_or(|e| e != "svg") {
            continue;
        }
        let svg = String::from_utf8(bytes).unwrap();
        let (width, height): (f64, f64) = (attr(&svg, "width").unwrap(), attr(&svg, "height").unwrap());
        for (tag, text) in texts(&svg) {
            let (Some(x), Some(y), Some(size)) = (attr(tag, "x"), attr(tag, "y"), attr(tag, "font-size"))
            else {
                continue;
            };
            // Sans-serif glyphs average about 0.55 em; a rotated text (the y axis's
            // description) runs up the canvas instead of across it.
            let w = 0.55 * size * text.chars().count() as f64;
            let (at, room) = if tag.contains("rotate(") {
                (y, height)
            } else {
                (x, width)
            };
            let (start, end) = match anchor(tag) {
                "middle" => (at - w / 2.0, at + w / 2.0),
                "end" => (at - w, at),
                _ => (at, at + w),
            };
            assert!(
                start >= 0.0 && end <= room,
                "{}: {text:?} spans {start:.0}..{end:.0} px of a {room} px canvas",
                path.display()
            );
            checked += 1;
        }
    }
    assert!(checked > 100, "only {checked} texts checked");
}

/// The value of `name="..."` in `tag` (the first one: the `<svg` element's own for
/// the whole document).
fn attr(tag: &str, name: &str) -> Option<f64> {
    let key = format!(" {name}=\"");
    let at = tag.find(&key)? + key.len();
    tag[at..].split('"').next()?.parse().ok()
}

fn anchor(tag: &str) -> &str {
    let key = " text-anchor=\"";
    tag.find(key)
        .and_then(|at| tag[at + key.len()..].split('"').next())
        .unwrap_or("start")
}

/// Each `<text ...>` opening tag with its text.
fn texts(svg: &str) -> Vec<(&str, String)> {
    let mut out = Vec::new();
    let mut rest = svg;
    while let Some(at) = rest.find("<text") {
        let after = &rest[at..];
        let open_end = after.find('>').unwrap();
        let close = after.find("</text>").unwrap();
        let text = after[open_end + 1..close]
            .trim()
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&")
            .replace("&quot;", "\"")
            .replace("&apos;", "'");
        out.push((&after[..open_end], text));
        rest = &after[close..];
    }
    out
}
