//! `coalesce report --from` with a results file per size of one GPU: the report sets
//! each kernel's measurement at each size beside what the model predicts at that size.
//! tests/data/h200-transpose-*.json are two kernels of two runs of `coalesce run
//! transpose --shape S --json` on an H200.

mod common;

use std::path::{Path, PathBuf};

use common::{coalesce, fails, fresh_dir};

const SHAPES: [&str; 2] = ["1024x1024", "2048x2048"];
const VARIANTS: [&str; 2] = ["naive-read", "tiled-padded"];

fn data(shape: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../tests/data/h200-transpose-{shape}.json"))
}

/// What a results file measured for `variant`, in GB/s.
fn measured(shape: &str, variant: &str) -> f64 {
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(data(shape)).unwrap()).unwrap();
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["variant"] == variant)
        .and_then(|r| r["gb_per_s"].as_f64())
        .unwrap()
}

/// What `explain --profile H200` predicts for `variant` at `shape`, in GB/s.
fn explained(shape: &str, variant: &str) -> f64 {
    let out = coalesce()
        .args([
            "explain",
            "--quiet",
            "--profile",
            "H200",
            "--shape",
            shape,
            "--json",
            "-",
        ])
        .arg(format!("transpose/{variant}"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["kernels"][0]["prediction"]["gb_per_s"].as_f64().unwrap()
}

fn report(out: &Path, extra: &[&str]) {
    let mut cmd = coalesce();
    cmd.arg("report").arg("--quiet");
    for s in SHAPES {
        cmd.arg("--from").arg(data(s));
    }
    cmd.args(extra).arg("--out").arg(out).assert().success();
}

/// The report.md section of the sweep, up to the next section.
fn sweep_section(md: &str) -> &str {
    let at = md
        .find("## Predicted beside measured at each size")
        .unwrap_or_else(|| panic!("no sweep section: {md}"));
    let rest = &md[at..];
    &rest[..rest[3..].find("\n## ").map_or(rest.len(), |e| e + 3)]
}

/// Two runs of one GPU at two shapes give each kernel a row with a cell per shape:
/// the run's GB/s beside `explain --profile`'s at that shape, and each shape's count
/// within 10%; the report's results.json holds both runs and renders the same again.
#[test]
fn a_run_per_shape_gives_each_kernel_its_prediction_at_each_shape() {
    let dir = fresh_dir("report-sweep");
    let out = dir.join("report");
    report(&out, &["--profile", "H200"]);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let section = sweep_section(&md);
    // (shape, variant, predicted, measured), each predicted once.
    let points: Vec<(&str, &str, f64, f64)> = SHAPES
        .iter()
        .flat_map(|s| VARIANTS.iter().map(move |v| (*s, *v)))
        .map(|(s, v)| (s, v, explained(s, v), measured(s, v)))
        .collect();
    let at = |shape: &str, variant: &str| {
        let p = points.iter().find(|p| p.0 == shape && p.1 == variant).unwrap();
        (p.2, p.3)
    };
    for s in SHAPES {
        let errors: Vec<f64> = VARIANTS
            .iter()
            .map(|v| at(s, v))
            .map(|(p, m)| (p - m) / m)
            .collect();
        let within = errors.iter().filter(|e| e.abs() <= 0.10).count();
        let mean = 100.0 * errors.iter().map(|e| e.abs()).sum::<f64>() / 2.0;
        let line = format!("| {s} | 2 | {within} | {mean:.1}% |");
        assert!(section.contains(&line), "no {line} in {section}");
    }
    for v in VARIANTS {
        let cells: Vec<String> = SHAPES
            .iter()
            .map(|s| {
                let (p, m) = at(s, v);
                let e = format!("{:+.1}%", 100.0 * (p - m) / m);
                let e = if ((p - m) / m).abs() <= 0.10 {
                    e
                } else {
                    format!("**{e}**")
                };
                format!("{m:.0} / {p:.0} ({e})")
            })
            .collect();
        let row = format!("| {v} | {} |", cells.join(" | "));
        assert!(section.contains(&row), "no {row} in {section}");
    }
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("<section id=\"sweep\">"), "no sweep on the page");
    assert_eq!(html.matches("data-sweep-kernel=").count(), VARIANTS.len());
    assert_eq!(html.matches("data-error=").count(), VARIANTS.len() * SHAPES.len());

    // The report's results.json holds both runs and their predictions: rendered
    // again with no profile, the section is the same.
    let again = dir.join("again");
    coalesce()
        .args(["report", "--quiet", "--from"])
        .arg(out.join("results.json"))
        .arg("--out")
        .arg(&again)
        .assert()
        .success();
    let md2 = std::fs::read_to_string(again.join("report.md")).unwrap();
    assert_eq!(sweep_section(&md2), section);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Without a profile the section shows what was measured and says how to predict.
#[test]
fn without_a_profile_the_sweep_shows_the_measurements_and_says_so() {
    let dir = fresh_dir("report-sweep-bare");
    let out = dir.join("report");
    report(&out, &[]);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let section = sweep_section(&md);
    assert!(
        section.contains("No predictions: render the report with `--profile`"),
        "{section}"
    );
    let row = format!(
        "| naive-read | {:.0} / - | {:.0} / - |",
        measured(SHAPES[0], "naive-read"),
        measured(SHAPES[1], "naive-read")
    );
    assert!(section.contains(&row), "no {row} in {section}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// One size given twice (which would be shown?): one line, exit 2, nothing written.
#[test]
fn a_kernel_at_one_size_in_two_files_is_refused() {
    let dir = fresh_dir("report-sweep-twice");
    let out = dir.join("not-made");
    let (a, b) = (data(SHAPES[0]), dir.join("copy.json"));
    std::fs::copy(&a, &b).unwrap();
    let err = fails(
        &[
            "report",
            "--from",
            a.to_str().unwrap(),
            "--from",
            data(SHAPES[1]).to_str().unwrap(),
            "--from",
            b.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        2,
    );
    assert!(
        err.contains(&format!(
            "{}: measures transpose/naive-read at 1024x1024 on NVIDIA H200, as {} does",
            b.display(),
            a.display()
        )),
        "{err}"
    );
    assert!(!out.exists());
    let _ = std::fs::remove_dir_all(&dir);
}
