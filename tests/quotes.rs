//! The figures the README and docs/ quote from the sample report are the sample
//! report's. Each quoted figure carries an invisible marker naming where it comes from,
//! right after the figure (and its `%` or `x`):
//!
//! ```text
//! interior reaches 87.7%<!-- q: h100 sgemm/interior cublas --> of cuBLAS
//! ```
//!
//! `q: GPU [SELECTOR] FIELD[:DECIMALS] [AGGREGATE]`. GPU is part of a folder's name
//! under docs/sample-report/ (`h100`, `h200`). Without a selector, FIELD is the run's:
//! `date` (YYYY-MM-DD), `time` (HH:MM, UTC), `peak` (GB/s). With an experiment
//! (`copy`): `baseline` (its cuMemcpyDtoD, GB/s), `baseline-peak` (that copy as % of
//! peak), `cublas-fp32`, `cublas-tf32` (cuBLAS timed alone after the rungs, GFLOP/s).
//! With `experiment/variant`: `copy` (% of copy), `pct-peak`, `gbs`, `us` (median), `gflops`,
//! `tflops`, `x-slowest`, `twin` (Rust over C++), `cpp-gflops`, `cublas` and
//! `cpp-cublas` (% of cuBLAS in the same rounds), `pred` (predicted: % of the profile's
//! copy, or GFLOP/s), `measured` (% of the profile's copy), `dev` (predicted against
//! measured, signed %). Each is rounded as report.md rounds it, or to DECIMALS. A
//! selector with `*` for the experiment or the variant, or the experiment `bandwidth`
//! or `products`, takes an AGGREGATE over the rows it matches: `min`, `max`, `n`,
//! `within:P` (how many have |FIELD| <= P), `atleast:V` (how many have FIELD >= V).
//!
//! This test fails naming the file, line, quoted figure and the sample report's when
//! any differs. `COALESCE_QUOTES=write cargo test --test quotes` (what
//! `scripts/sample-report.sh --quotes` runs) rewrites every marked figure instead.
//! Figures from elsewhere (nvcc anchors, published peers, runs outside the sample
//! report) carry no marker; the text names their source and GPU. No GPU needed.

use std::path::{Path, PathBuf};

use coalesce::compare::cublas::Math;
use coalesce::harness::Row;
use coalesce::report::{self, Results};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The sample report's results, by the folder each GPU's report sits in.
fn sample() -> Vec<(String, Results)> {
    let dir = root().join("docs/sample-report");
    let mut folders: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("results.json").is_file())
        .collect();
    folders.sort();
    folders
        .iter()
        .map(|f| {
            let mut r = report::from_files::load(&f.join("results.json")).unwrap();
            assert_eq!(r.len(), 1, "{} holds one GPU's results", f.display());
            (f.file_name().unwrap().to_string_lossy().into_owned(), r.remove(0))
        })
        .collect()
}

/// The Markdown files that may quote the sample report: the README and docs/*.md.
fn quoting_files() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

const OPEN: &str = "<!-- q:";
const CLOSE: &str = "-->";

/// One marked figure: where it sits in its line, the figure, and the marker's key.
#[derive(Debug)]
struct Quote {
    line: usize,
    /// Byte range of the figure in its line.
    span: std::ops::Range<usize>,
    key: String,
}

/// The marked figures of `text`, or what is wrong with a marker. A marker in a code
/// block or a code span is an example, not a quote.
fn quotes(text: &str) -> Vec<Result<Quote, String>> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if fenced {
            continue;
        }
        let mut from = 0;
        while let Some(at) = line[from..].find(OPEN).map(|a| a + from) {
            let Some(len) = line[at..].find(CLOSE) else {
                out.push(Err(format!("line {}: a marker without {CLOSE}", i + 1)));
                break;
            };
            let key = line[at + OPEN.len()..at + len].trim().to_string();
            from = at + len + CLOSE.len();
            if line[..at].matches('`').count() % 2 == 1 {
                continue;
            }
            let is_date = key.split_whitespace().nth(1) == Some("date");
            match figure_before(&line[..at], is_date) {
                Some(span) => out.push(Ok(Quote {
                    line: i + 1,
                    span,
                    key,
                })),
                None => out.push(Err(format!("line {}: no figure before <!-- q: {key} -->", i + 1))),
            }
        }
    }
    out
}

/// The figure `before` ends with (before a `%` or `x`): digits, `.` and `:`, a date's
/// `-`s, and a sign where one stands apart (`-0.2%`, not the range in `0.98x-1.01x`).
fn figure_before(before: &str, is_date: bool) -> Option<std::ops::Range<usize>> {
    let b = before.as_bytes();
    let mut end = b.len();
    if end > 0 && (b[end - 1] == b'%' || b[end - 1] == b'x') {
        end -= 1;
    }
    let mut start = end;
    while start > 0 {
        let c = b[start - 1];
        let dash_in_date = is_date && c == b'-' && start >= 2 && b[start - 2].is_ascii_digit();
        if c.is_ascii_digit() || c == b'.' || c == b':' || dash_in_date {
            start -= 1;
        } else {
            break;
        }
    }
    if start == end || !b[start].is_ascii_digit() {
        return None;
    }
    if start > 0 && (b[start - 1] == b'+' || b[start - 1] == b'-') {
        // Not after a figure, its unit or its marker (`0.98x-1.01x`, `...-->-1.01`).
        let apart = start == 1 || !(b[start - 2].is_ascii_alphanumeric() || b"%.)>".contains(&b[start - 2]));
        if apart {
            start -= 1;
        }
    }
    Some(start..end)
}

/// The sample report's figure for `key`, rounded as the report rounds it.
fn resolve(gpus: &[(String, Results)], key: &str) -> Result<String, String> {
    let words: Vec<&str> = key.split_whitespace().collect();
    let (gpu, selector, field, aggregate) = match words[..] {
        [g, f] => (g, None, f, None),
        [g, s, f] => (g, Some(s), f, None),
        [g, s, f, a] => (g, Some(s), f, Some(a)),
        _ => return Err("expected `GPU [SELECTOR] FIELD[:DECIMALS] [AGGREGATE]`".into()),
    };
    let matching: Vec<&(String, Results)> = gpus
        .iter()
        .filter(|(folder, _)| folder.to_lowercase().contains(&gpu.to_lowercase()))
        .collect();
    let [(_, results)] = matching[..] else {
        let folders: Vec<&str> = gpus.iter().map(|(f, _)| f.as_str()).collect();
        return Err(format!(
            "`{gpu}` names {} of the sample report's GPUs {folders:?}, not one",
            matching.len()
        ));
    };
    let (field, decimals) = match field.split_once(':') {
        Some((f, d)) => (
            f,
            Some(d.parse::<usize>().map_err(|_| format!("bad decimals `{d}`"))?),
        ),
        None => (field, None),
    };
    let fixed = |v: f64, default: usize| format!("{v:.*}", decimals.unwrap_or(default));
    let Some(selector) = selector else {
        let date = results.run.date.as_deref().ok_or("the results record no date")?;
        return match field {
            "date" => Ok(date.get(..10).ok_or("a short date")?.to_string()),
            "time" => Ok(date.get(11..16).ok_or("a date without a time")?.to_string()),
            "peak" => Ok(fixed(results.run.peak_gb_per_s.ok_or("no peak")?, 0)),
            _ => Err(format!("no run field `{field}` (date, time, peak)")),
        };
    };
    let Some((experiment, variant)) = selector.split_once('/') else {
        return experiment_field(results, selector, field).map(|v| fixed(v, 0));
    };
    let many = experiment == "*" || variant == "*" || experiment == "bandwidth" || experiment == "products";
    let rows: Vec<&Row> = results
        .run
        .rows
        .iter()
        .filter(|r| match experiment {
            "*" => true,
            "bandwidth" => r.flops.is_none(),
            "products" => r.flops.is_some(),
            e => r.experiment == e,
        })
        .filter(|r| variant == "*" || r.variant == variant)
        .collect();
    if rows.is_empty() {
        return Err(format!("no row `{selector}` in the sample report"));
    }
    let signed = field == "dev";
    let format = |v: f64, default: usize| {
        if signed {
            format!("{v:+.*}", decimals.unwrap_or(default))
        } else {
            fixed(v, default)
        }
    };
    if !many {
        if aggregate.is_some() {
            return Err("an aggregate needs a selector with `*`, `bandwidth` or `products`".into());
        }
        let (v, default) = row_field(results, rows[0], field)?
            .ok_or_else(|| format!("`{selector}` has no `{field}` in the sample report"))?;
        return Ok(format(v, default));
    }
    let mut values = Vec::new();
    let mut default = 1;
    for r in rows {
        if let Some((v, d)) = row_field(results, r, field)? {
            values.push(v);
            default = d;
        }
    }
    if values.is_empty() {
        return Err(format!("no row of `{selector}` has `{field}`"));
    }
    let count = |n: usize| n.to_string();
    match aggregate.ok_or("a selector of several rows needs min, max, n, within:P or atleast:V")? {
        "min" => Ok(format(
            values.iter().copied().fold(f64::INFINITY, f64::min),
            default,
        )),
        "max" => Ok(format(
            values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            default,
        )),
        "n" => Ok(count(values.len())),
        a => {
            let (how, bound) = a.split_once(':').ok_or_else(|| format!("no aggregate `{a}`"))?;
            let bound: f64 = bound.parse().map_err(|_| format!("bad bound in `{a}`"))?;
            match how {
                "within" => Ok(count(values.iter().filter(|v| v.abs() <= bound).count())),
                "atleast" => Ok(count(values.iter().filter(|v| **v >= bound).count())),
                _ => Err(format!("no aggregate `{a}`")),
            }
        }
    }
}

/// An experiment's own figure: its copy baseline, or cuBLAS on its matrices.
fn experiment_field(results: &Results, experiment: &str, field: &str) -> Result<f64, String> {
    let baseline = || {
        results
            .run
            .baselines
            .iter()
            .find(|b| b.experiment == experiment)
            .map(|b| b.baseline.gb_per_s)
            .ok_or_else(|| format!("no copy baseline for `{experiment}`"))
    };
    let cublas = |math: Math| {
        results
            .compare
            .as_ref()
            .and_then(|c| {
                c.cublas_rows
                    .iter()
                    .find(|x| x.experiment == experiment && x.math == math)
            })
            .map(|x| x.gflop_per_s)
            .ok_or_else(|| format!("no cuBLAS line for `{experiment}`"))
    };
    match field {
        "baseline" => baseline(),
        "baseline-peak" => Ok(100.0 * baseline()? / results.run.peak_gb_per_s.ok_or("no peak")?),
        "cublas-fp32" => cublas(Math::Fp32),
        "cublas-tf32" => cublas(Math::Tf32),
        _ => Err(format!(
            "no experiment field `{field}` (baseline, baseline-peak, cublas-fp32, cublas-tf32)"
        )),
    }
}

/// A kernel's figure and the decimals report.md gives it; None where the row has none
/// (a bandwidth kernel's % of cuBLAS).
fn row_field(results: &Results, row: &Row, field: &str) -> Result<Option<(f64, usize)>, String> {
    let compared = results.compare.as_ref().and_then(|c| {
        c.rows
            .iter()
            .find(|x| x.experiment == row.experiment && x.variant == row.variant)
    });
    let predicted = report::predicted::of(results, &row.experiment, &row.variant);
    let versus = predicted.and_then(|p| p.versus(row));
    Ok(match field {
        "copy" => Some((row.pct_of_copy, 1)),
        "pct-peak" => row.pct_of_peak.map(|p| (p, 1)),
        "gbs" => Some((row.gb_per_s, 0)),
        "us" => Some((1000.0 * row.timing.median_ms, 1)),
        "gflops" => row.gflop_per_s.map(|g| (g, 0)),
        "tflops" => row.gflop_per_s.map(|g| (g / 1000.0, 1)),
        "x-slowest" => Some((row.speedup_over_slowest, 2)),
        "twin" => compared.and_then(|c| c.rust_over_cpp).map(|t| (t, 3)),
        "cpp-gflops" => compared.and_then(|c| c.cpp.as_ref()?.gflop_per_s).map(|g| (g, 0)),
        "cublas" => compared.and_then(|c| c.rust.pct_of_cublas).map(|p| (p, 1)),
        "cpp-cublas" => compared
            .and_then(|c| c.cpp.as_ref()?.pct_of_cublas)
            .map(|p| (p, 1)),
        "pred" => match predicted.and_then(|p| p.gflop_per_s) {
            Some(g) => Some((g, 0)),
            None => versus.map(|(p, _)| (p, 1)),
        },
        "measured" => versus.map(|(_, m)| (m, 1)),
        "dev" => match (predicted.and_then(|p| p.gflop_per_s), row.gflop_per_s) {
            (Some(p), Some(m)) => Some((100.0 * (p - m) / m, 1)),
            _ => versus.map(|(p, m)| (100.0 * (p - m) / m, 1)),
        },
        _ => {
            return Err(format!(
                "no kernel field `{field}` (copy, pct-peak, gbs, us, gflops, tflops, x-slowest, twin, \
                 cpp-gflops, cublas, cpp-cublas, pred, measured, dev)"
            ));
        }
    })
}

/// What is wrong in `text`, one line each: figures that differ from the sample report
/// (which rewriting fixes) and markers that name nothing (which it does not); and `text`
/// with every marked figure set to the sample report's.
struct Checked {
    differ: Vec<String>,
    broken: Vec<String>,
    rewritten: String,
}

fn check(gpus: &[(String, Results)], name: &str, text: &str) -> Checked {
    let (mut differ, mut broken) = (Vec::new(), Vec::new());
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    // Right to left within a line, so earlier spans stay where they are.
    let mut found = quotes(text);
    found.reverse();
    for q in found {
        let q = match q {
            Ok(q) => q,
            Err(e) => {
                broken.push(format!("{name}: {e}"));
                continue;
            }
        };
        let line = &mut lines[q.line - 1];
        let quoted = line[q.span.clone()].to_string();
        match resolve(gpus, &q.key) {
            Ok(value) if value == quoted => {}
            Ok(value) => {
                differ.push(format!(
                    "{name}:{}: quotes {quoted}, the sample report has {value} (q: {})",
                    q.line, q.key
                ));
                line.replace_range(q.span, &value);
            }
            Err(e) => broken.push(format!("{name}:{}: <!-- q: {} -->: {e}", q.line, q.key)),
        }
    }
    differ.reverse();
    broken.reverse();
    let mut rewritten = lines.join("\n");
    if text.ends_with('\n') {
        rewritten.push('\n');
    }
    Checked {
        differ,
        broken,
        rewritten,
    }
}

/// Every figure the README and docs/ mark is the sample report's; with
/// `COALESCE_QUOTES=write`, each is rewritten to it.
#[test]
fn quoted_figures_are_the_sample_reports() {
    let gpus = sample();
    let write = std::env::var("COALESCE_QUOTES").is_ok_and(|v| v == "write");
    let mut problems = Vec::new();
    let mut marked = 0;
    for path in quoting_files() {
        let name = path.strip_prefix(root()).unwrap().display().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        marked += quotes(&text).len();
        let checked = check(&gpus, &name, &text);
        if write {
            if checked.rewritten != text {
                std::fs::write(&path, &checked.rewritten).unwrap();
            }
            for d in &checked.differ {
                eprintln!("rewrote {d}");
            }
        } else {
            problems.extend(checked.differ);
        }
        problems.extend(checked.broken);
    }
    assert!(marked > 0, "no figure in README.md or docs/*.md is marked");
    assert!(
        problems.is_empty(),
        "{} quoted figure(s) differ from docs/sample-report or name nothing there \
         (scripts/sample-report.sh --quotes rewrites the figures):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// The README, docs/ladder.md and docs/model.md quote through markers.
#[test]
fn the_front_page_ladder_and_model_quote_the_sample_report() {
    for file in ["README.md", "docs/ladder.md", "docs/model.md"] {
        let text = std::fs::read_to_string(root().join(file)).unwrap();
        assert!(quotes(&text).len() >= 5, "{file} marks too few of its figures");
    }
}

/// A figure changed by hand fails, naming the file, the line, both figures and the key;
/// a marker that names nothing fails too; rewriting restores the report's figure.
#[test]
fn a_changed_figure_is_named() {
    let gpus = sample();
    let right = resolve(&gpus, "h100 sgemm/interior cublas").unwrap();
    let text = format!("a\nthe best rung at 1{right}%<!-- q: h100 sgemm/interior cublas --> of cuBLAS\n");
    let checked = check(&gpus, "x.md", &text);
    assert_eq!(
        checked.differ,
        [format!(
            "x.md:2: quotes 1{right}, the sample report has {right} (q: h100 sgemm/interior cublas)"
        )]
    );
    assert!(checked.broken.is_empty());
    assert_eq!(
        checked.rewritten,
        format!("a\nthe best rung at {right}%<!-- q: h100 sgemm/interior cublas --> of cuBLAS\n")
    );
    let again = check(&gpus, "x.md", &checked.rewritten);
    assert!(again.differ.is_empty() && again.broken.is_empty());
    let broken = check(&gpus, "x.md", "1.0<!-- q: h100 sgemm/nothing cublas -->").broken;
    assert_eq!(broken.len(), 1, "{broken:?}");
    assert!(broken[0].contains("no row `sgemm/nothing`"), "{broken:?}");
    let broken = check(&gpus, "x.md", "and <!-- q: h100 date -->").broken;
    assert!(broken[0].contains("no figure before"), "{broken:?}");
    // An example in code is left alone.
    let example = "say `1.0%<!-- q: h100 sgemm/interior cublas -->`\n```\n1.0<!-- q: h100 date -->\n```\n";
    assert!(quotes(example).is_empty());
}

/// Figures as the text writes them: signs that stand apart, ranges, dates, units.
#[test]
fn figures_are_read_as_written() {
    let read = |s: &str, date: bool| figure_before(s, date).map(|r| s[r].to_string());
    assert_eq!(read("at 87.7%", false).as_deref(), Some("87.7"));
    assert_eq!(read("| -0.2%", false).as_deref(), Some("-0.2"));
    assert_eq!(read("(+7.7%", false).as_deref(), Some("+7.7"));
    assert_eq!(read("0.98x-1.01x", false).as_deref(), Some("1.01"));
    assert_eq!(read("0.98x<!-- q: a -->-1.01x", false).as_deref(), Some("1.01"));
    assert_eq!(read("on 2026-11-28", true).as_deref(), Some("2026-11-28"));
    assert_eq!(read("at 01:44", false).as_deref(), Some("01:44"));
    assert_eq!(read("**96.9", false).as_deref(), Some("96.9"));
    assert_eq!(read("none", false), None);
}
