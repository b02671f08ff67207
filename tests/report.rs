//! The report writer on a fixed set of results (no GPU): report.md's tables, the
//! JSON round trip, and each SVG plot, with and without the comparison with the
//! C++ twins. The numbers are fixtures, not measurements. The last run's output
//! stays in target/tmp/report-fixture/ (and report-compare/) for a look.

mod common;

use common::temp_path;

use std::path::Path;

use coalesce::compare::cublas::Math;
use coalesce::compare::layout::Layout;
use coalesce::compare::{CompareReport, CompareRow, CublasRate, CublasRow};
use coalesce::device::DeviceInfo;
use coalesce::experiment::{Problem, Work};
use coalesce::harness::{Case, Row, fill_speedups, row};
use coalesce::report::{self, Results, claims};
use coalesce::run_table::{ExperimentBaseline, Run};
use coalesce::timing::{Baseline, Timing};
use coalesce::validate::Validation;

const DEVICE: &str = "Fixture GPU 80GB";
const COPY_GB_S: f64 = 3000.0;
const ELEMENTS: u64 = 64 << 20;

/// (experiment, variant, kernel, % of copy) for bandwidth rows.
const BANDWIDTH: &[(&str, &str, &str, f64)] = &[
    ("copy", "f32", "copy_f32", 79.1),
    ("copy", "f32x4", "copy_f32x4", 93.0),
    ("stride", "1", "stride_read", 79.7),
    ("stride", "2", "stride_read", 62.6),
    ("stride", "4", "stride_read", 41.5),
    ("stride", "8", "stride_read", 23.0),
    ("stride", "16", "stride_read", 12.0),
    ("stride", "32", "stride_read", 11.0),
    ("stride", "64", "stride_read", 8.8),
    ("offset", "0", "offset_read", 78.9),
    ("offset", "1", "offset_read", 77.2),
    ("offset", "2", "offset_read", 77.4),
    ("offset", "4", "offset_read", 77.6),
    ("offset", "8", "offset_read", 78.1),
    ("offset", "16", "offset_read", 78.4),
    ("offset", "32", "offset_read", 78.8),
    ("transpose", "naive-write", "transpose_naive_write", 14.2),
    ("transpose", "naive-read", "transpose_naive_read", 61.3),
    ("transpose", "tiled", "transpose_tiled", 57.4),
    ("transpose", "tiled-padded", "transpose_tiled_padded", 92.5),
    ("particles", "aos", "particles_aos", 75.5),
    ("particles", "soa", "particles_soa", 94.5),
    ("saxpy", "f32", "saxpy_f32", 92.1),
    ("saxpy", "f32x4", "saxpy_f32x4", 91.3),
    ("saxpy", "f32x4-strided", "saxpy_f32x4_strided", 39.4),
    ("complex", "interleaved", "complex_real_interleaved", 51.7),
    ("complex", "split", "complex_real_split", 93.6),
];

/// (variant, kernel, GFLOP/s) for the matmul rows, M = N = K = 4096.
const MATMUL: &[(&str, &str, f64)] = &[
    ("naive", "matmul_naive", 480.0),
    ("accidental", "matmul_accidental", 2950.0),
    ("remapped", "matmul_remapped", 6100.0),
];

fn device() -> DeviceInfo {
    DeviceInfo {
        name: DEVICE.into(),
        ..DeviceInfo::h100()
    }
}

fn baseline() -> Baseline {
    let bytes = ELEMENTS * 4;
    Baseline {
        bytes,
        timing: Timing::from_samples(vec![2.0 * bytes as f64 / COPY_GB_S / 1e6]),
        gb_per_s: COPY_GB_S,
    }
}

/// The work of an n³ product of 16-bit matrices: 2 n³ FLOPs, A, B and C once.
fn half_product(n: u64) -> Work {
    Work::Flops {
        flops: 2 * n * n * n,
        bytes: 2 * 3 * n * n,
    }
}

/// The page's card of `name` (`transpose/tiled`): its `<article>`, up to its end.
fn card_of(page: &str, name: &str) -> String {
    let at = page.find(&format!("data-kernel=\"{name}\"")).unwrap();
    let rest = &page[at..];
    rest[..rest.find("</article>").unwrap()].to_string()
}

fn make_row(experiment: &str, variant: &str, kernel: &'static str, work: Work, ms: f64) -> Row {
    let case = Case {
        experiment: experiment.into(),
        variant: variant.into(),
        kernel: kernel.into(),
        problem: Problem::Elements { n: ELEMENTS as usize },
        work,
    };
    let t = Timing {
        median_ms: ms,
        min_ms: ms * 0.98,
        max_ms: ms * 1.05,
        reps: 20,
    };
    let ok = Validation {
        ok: true,
        detail: "exact".into(),
    };
    row(&case, t, &baseline(), &device(), ok)
}

/// Results of the experiments named in `only` (all when empty).
fn fixture(only: &[&str]) -> Results {
    let wanted = |e: &str| only.is_empty() || only.contains(&e);
    let mut rows: Vec<Row> = BANDWIDTH
        .iter()
        .filter(|b| wanted(b.0))
        .map(|&(e, v, k, pct)| {
            let bytes = 2 * 4 * ELEMENTS;
            let ms = bytes as f64 / (pct / 100.0 * COPY_GB_S * 1e9) * 1e3;
            make_row(e, v, k, Work::Bytes(bytes), ms)
        })
        .collect();
    if wanted("matmul") {
        let n = 4096u64;
        let work = Work::Flops {
            flops: 2 * n * n * n,
            bytes: 4 * 3 * n * n,
        };
        for &(v, k, g) in MATMUL {
            let ms = work.flops().unwrap() as f64 / (g * 1e9) * 1e3;
            rows.push(make_row("matmul", v, k, work, ms));
        }
    }
    for r in &mut rows {
        r.size_label = match r.experiment.as_str() {
            "transpose" => Some("8192x8192".into()),
            "matmul" => Some("4096x4096x4096".into()),
            _ => None,
        };
    }
    fill_speedups(&mut rows);
    let mut experiments: Vec<String> = rows.iter().map(|r| r.experiment.clone()).collect();
    experiments.dedup();
    Results {
        elapsed_s: 312.4,
        run: Run {
            schema: coalesce::run_table::SCHEMA,
            coalesce_version: "0.1.0".into(),
            date: Some("2026-11-23 04:12 UTC".into()),
            device: device(),
            ptx_arch: "sm_70".into(),
            peak_gb_per_s: device().peak_gb_per_s(),
            baselines: experiments
                .into_iter()
                .map(|experiment| ExperimentBaseline {
                    experiment,
                    baseline: baseline(),
                })
                .collect(),
            rows,
        },
        compare: None,
        predicted: Vec::new(),
        emulated: Vec::new(),
        other_sizes: Vec::new(),
    }
}

/// Rust's speed over its C++ twin's, per kernel; 1.0 for those not named.
const RATIOS: &[(&str, &str, f64)] = &[
    ("copy", "f32x4", 1.02),
    ("transpose", "tiled-padded", 0.80),
    ("matmul", "remapped", 0.95),
];

/// cuBLAS SGEMM on the matmul matrices: (math, GFLOP/s).
const SGEMM: &[(Math, f64)] = &[(Math::Fp32, 48_000.0), (Math::Tf32, 150_000.0)];

fn ratio(r: &Row) -> f64 {
    RATIOS
        .iter()
        .find(|x| x.0 == r.experiment && x.1 == r.variant)
        .map_or(1.0, |x| x.2)
}

/// The Rust row as its C++ twin would have measured it, `over` times slower.
fn twin(r: &Row, over: f64) -> Row {
    let t = r.timing;
    Row {
        timing: Timing {
            median_ms: t.median_ms * over,
            min_ms: t.min_ms * over,
            max_ms: t.max_ms * over,
            reps: t.reps,
        },
        gb_per_s: r.gb_per_s / over,
        gflop_per_s: r.gflop_per_s.map(|g| g / over),
        pct_of_copy: r.pct_of_copy / over,
        pct_of_peak: r.pct_of_peak.map(|p| p / over),
        ..r.clone()
    }
}

/// The comparison of `results`' kernels with C++ twins `RATIOS` slower or faster,
/// and cuBLAS where matmul ran; `twins: false` is a machine without NVRTC.
fn comparison(results: &Results, twins: bool) -> CompareReport {
    let run = &results.run;
    let matmul = run.rows.iter().any(|r| r.experiment == "matmul");
    CompareReport {
        schema: coalesce::run_table::SCHEMA,
        coalesce_version: run.coalesce_version.clone(),
        date: run.date.clone(),
        device: run.device.clone(),
        rust_ptx_arch: run.ptx_arch.clone(),
        cpp: if twins {
            "C++ twins: NVRTC 13.0 (/usr/local/cuda/lib64/libnvrtc.so.13), PTX for compute_90".into()
        } else {
            UNAVAILABLE.into()
        },
        cpp_available: twins,
        cpp_broken: false,
        cublas: matmul.then(|| "cuBLAS 13.0.0 (/usr/local/cuda/lib64/libcublas.so.13)".into()),
        baselines: run.baselines.clone(),
        cublas_rows: SGEMM
            .iter()
            .filter(|_| matmul)
            .map(|&(math, g)| {
                let n = 4096usize;
                CublasRow {
                    experiment: "matmul".into(),
                    math,
                    m: n,
                    n,
                    k: n,
                    timing: Timing::from_samples(vec![2.0 * (n as f64).powi(3) / (g * 1e9) * 1e3]),
                    gflop_per_s: g,
                    validated: true,
                    check: "within 1e-4".into(),
                    layout: None,
                }
            })
            .collect(),
        rows: run
            .rows
            .iter()
            .map(|r| {
                let fp32 = matmul
                    .then_some(CublasRate::Interleaved(SGEMM[0].1))
                    .filter(|_| r.flops.is_some());
                CompareRow::new(r, twins.then(|| twin(r, ratio(r))).as_ref(), fp32)
            })
            .collect(),
    }
}

const UNAVAILABLE: &str = "C++ twins: unavailable, Rust only: NVRTC (libnvrtc.so.13, .so.12) not found on \
                           the loader path or in /usr/local/cuda/lib64; set LD_LIBRARY_PATH or CUDA_HOME";

/// `fixture(only)` as `coalesce report` makes it: through the comparison.
fn compared(only: &[&str], twins: bool) -> Results {
    let plain = fixture(only);
    let c = comparison(&plain, twins);
    Results::of_comparison(plain.elapsed_s, c)
}

/// The lines of report.md's section headed `title`, up to the next section.
fn section<'a>(md: &'a str, title: &str) -> &'a str {
    let start = md
        .find(&format!("\n## {title}\n"))
        .unwrap_or_else(|| panic!("no section {title:?} in\n{md}"));
    let rest = &md[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |e| e + 4);
    &rest[..end]
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The Markdown table row that starts with these cells.
fn md_row<'a>(md: &'a str, first: &[&str]) -> Option<&'a str> {
    let prefix = format!("| {} |", first.join(" | "));
    md.lines().find(|l| l.starts_with(&prefix))
}

#[test]
fn writes_every_file_of_the_full_suite() {
    let dir = temp_path("report-fixture");
    let results = fixture(&[]);
    let files = report::write(&dir, &results).unwrap();
    let names: Vec<String> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "report.md",
            "results.json",
            "index.html",
            "stride.svg",
            "offset.svg",
            "good-vs-bad.svg",
            "transpose.svg",
            "matmul.svg"
        ]
    );
    for f in &files {
        assert!(
            std::fs::metadata(f).unwrap().len() > 500,
            "{} is nearly empty",
            f.display()
        );
    }
}

#[test]
fn markdown_has_the_device_date_and_one_row_per_result() {
    let dir = temp_path("report-md");
    let results = fixture(&[]);
    report::write(&dir, &results).unwrap();
    let md = read(&dir.join("report.md"));
    assert!(md.starts_with("# coalesce report\n"), "{md}");
    assert!(
        md.contains(&format!("- Device: {DEVICE} (device 0, sm_90")),
        "{md}"
    );
    assert!(md.contains("- Date: 2026-11-23 04:12 UTC"));
    assert!(md.contains("took 312 s"));
    assert!(md.contains("\n- Rust against CUDA C++: not measured (`--rust-only`)\n"));
    assert!(!md.contains("## Rust against CUDA C++"));
    assert!(md.contains("| experiment | variant | kernel | size | median |"));
    for r in &results.run.rows {
        let line = md_row(&md, &[&r.experiment, &r.variant])
            .unwrap_or_else(|| panic!("no row for {}/{}", r.experiment, r.variant));
        // A product's rate is FLOPs: no GB/s, no share of the copy or of the peak.
        let of_copy = match r.gflop_per_s {
            Some(g) => format!("| - | {g:.1} | - | - |"),
            None => format!("| {:.1} |", r.pct_of_copy),
        };
        assert!(line.contains(&of_copy), "{of_copy} not in {line}");
        assert!(line.ends_with("| yes |"), "{line}");
    }
    let transpose = md_row(&md, &["transpose", "naive-write"]).unwrap();
    assert!(transpose.contains("`transpose_naive_write`") && transpose.contains("| 8192x8192 |"));
    assert!(md_row(&md, &["copy", "f32"]).unwrap().contains("| 256.0 MiB |"));
    let matmul = md_row(&md, &["matmul", "remapped"]).unwrap();
    assert!(matmul.contains("| 6100.0 |"), "GFLOP/s column: {matmul}");
    // A table row per result, per claim, per matmul rung, plus headers and separators.
    let table_lines = md.lines().filter(|l| l.starts_with('|')).count();
    let rungs = results
        .run
        .rows
        .iter()
        .filter(|r| r.gflop_per_s.is_some())
        .count();
    assert_eq!(
        table_lines,
        results.run.rows.len() + 2 + claims::CLAIMS.len() + 2 + rungs + 2
    );
    for p in [
        "stride.svg",
        "offset.svg",
        "good-vs-bad.svg",
        "transpose.svg",
        "matmul.svg",
    ] {
        assert!(md.contains(&format!("]({p})")), "report.md links {p}");
    }
}

#[test]
fn claims_sit_beside_the_measurements() {
    let md = coalesce::report::markdown::render(&fixture(&[]), &[]);
    let claim = |text: &str| md_row(&md, &[text]).unwrap_or_else(|| panic!("no claim row {text:?} in\n{md}"));
    // Each claim says who made it and on which GPU its figure was measured.
    assert!(
        md.contains("| claim | said by | measured on | they say | this GPU |"),
        "{md}"
    );
    for c in claims::CLAIMS {
        assert!(!c.source.said_by.is_empty() && !c.source.measured_on.is_empty());
        assert!(claim(c.claim).contains(c.source.measured_on));
    }
    assert!(claim("matmul naive, % of cuBLAS SGEMM").contains("| RTX A6000 | 1.3% |"));
    // stride 2 ran at 62.6% of copy, stride 1 at 79.7%: 78.5% of stride 1.
    let s2 = claim("stride 2: a warp uses half of every line it fetches");
    assert!(
        s2.contains("| 50% of useful bytes |") && s2.contains("78.5% of stride 1 (62.6% of copy)"),
        "{s2}"
    );
    assert!(claim("stride 32: one useful f32 per 128-byte line").contains("13.8% of stride 1"));
    let soa = claim("particles: SoA coalesces where AoS does not");
    assert!(soa.contains("1.25x (soa"), "{soa}");
    let f4 = claim("saxpy float4, coalesced grid-stride walk");
    assert!(
        f4.contains("| GeForce RTX 4070 | 91% |") && f4.contains("91.3% of copy") && f4.contains("% of peak"),
        "{f4}"
    );
    assert!(
        claim("saxpy float4, strided walk: vector loads do not fix a bad pattern").contains("39.4% of copy")
    );
    // cuBLAS comes from the comparison, which `--rust-only` skips; the speed-up is
    // measured here.
    assert!(claim("matmul naive, % of cuBLAS SGEMM").contains(&format!("| {} |", claims::NO_COMPARISON)));
    let remap = claim("matmul: the two-line remap over naive");
    assert!(
        remap.contains("| 6.4x |") && remap.contains("12.71x (remapped 6100 against naive 480 GFLOP/s)"),
        "{remap}"
    );
}

#[test]
fn claims_of_experiments_not_run_say_so() {
    let md = coalesce::report::markdown::render(&fixture(&["copy", "stride"]), &[]);
    let not_run = md
        .lines()
        .filter(|l| l.starts_with('|') && l.ends_with("| not run |"))
        .count();
    // Everything but the three stride claims.
    assert_eq!(not_run, claims::CLAIMS.len() - 3, "{md}");
}

#[test]
fn a_failed_check_is_flagged_in_the_report() {
    let mut results = fixture(&["copy"]);
    results.run.rows[1].validated = false;
    results.run.rows[1].check = "exact: 3 of 67108864 differ".into();
    let md = coalesce::report::markdown::render(&results, &[]);
    assert_flagged(
        &md,
        &["copy", "f32x4"],
        "| **NO** |",
        "- copy/f32x4 (`copy_f32x4`): exact: 3 of 67108864 differ",
    );
}

/// Asserts that the row of `md` starting with `cells` ends with `ending` (the
/// failed side's **NO**) and that the failure is `listed` under the table.
fn assert_flagged(md: &str, cells: &[&str], ending: &str, listed: &str) {
    let row = md_row(md, cells).unwrap_or_else(|| panic!("no row {cells:?} in\n{md}"));
    assert!(row.ends_with(ending), "{row}");
    assert!(md.contains(listed), "{listed:?} not listed in\n{md}");
}

/// Writes `results` into `dir`, reads results.json back as the same results and
/// as a run (the same fields as `coalesce run --json`, so tools read either file);
/// returns its text.
fn round_trip(dir: &str, results: &Results) -> String {
    let dir = temp_path(dir);
    report::write(&dir, results).unwrap();
    let text = read(&dir.join("results.json"));
    let back: Results = serde_json::from_str(&text).unwrap();
    assert_eq!(&back, results);
    let run: Run = serde_json::from_str(&text).unwrap();
    assert_eq!(run, results.run);
    text
}

#[test]
fn results_json_round_trips_and_reads_as_a_run() {
    let text = round_trip("report-json", &fixture(&[]));
    // A report made with --rust-only has no "compare" key.
    assert!(!text.contains("\"compare\""));
}

/// `<circle` elements: plotters draws one per measured point (legends use lines).
fn circles(svg: &str) -> usize {
    svg.matches("<circle").count()
}

/// The text of every `<text>` element, trimmed (plotters puts it on its own line).
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let body = &t[t.find('>')? + 1..];
            Some(body[..body.find("</text>")?].trim().to_string())
        })
        .collect()
}

fn has_text(svg: &str, text: &str) -> bool {
    texts(svg).iter().any(|t| t == text)
}

/// The x of the `<text>` element holding `text`.
fn text_x(svg: &str, text: &str) -> Option<f64> {
    svg.split("<text").skip(1).find_map(|t| {
        let body = &t[t.find('>')? + 1..];
        if body[..body.find("</text>")?].trim() != text {
            return None;
        }
        let x = &t[t.find("x=\"")? + 3..];
        x[..x.find('"')?].parse().ok()
    })
}

#[test]
fn each_plot_has_its_title_device_and_one_mark_per_result() {
    let dir = temp_path("report-svg");
    let results = fixture(&[]);
    report::write(&dir, &results).unwrap();
    let rows = &results.run.rows;
    let count = |e: &str| rows.iter().filter(|r| r.experiment == e).count();
    let svg = |f: &str| {
        let s = read(&dir.join(f));
        assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"), "{f}");
        assert!(s.contains(DEVICE), "{f} names the device");
        assert!(
            s.contains("% of cuMemcpyDtoD") || s.contains("GFLOP/s"),
            "{f} has a unit"
        );
        s
    };

    let stride = svg("stride.svg");
    assert!(has_text(
        &stride,
        "Strided reads: effective bandwidth against stride"
    ));
    assert_eq!(circles(&stride), count("stride"));
    assert!(has_text(
        &stride,
        "128-byte-line model: 1/s down to 1/32, scaled to measured stride 1 = 79.7%"
    ));
    assert!(stride.contains("32-byte-sector model: 1/s down to 1/8"));
    assert!(stride.contains("log2 scale"));
    for v in ["79.7", "62.6", "41.5", "23.0", "12.0", "11.0", "8.8"] {
        assert!(has_text(&stride, v), "stride point {v} labelled");
    }

    let offset = svg("offset.svg");
    assert!(offset.contains("Misaligned reads: effective bandwidth against offset"));
    assert_eq!(circles(&offset), count("offset"));

    let bars = svg("good-vs-bad.svg");
    assert!(bars.contains("Good against bad access patterns"));
    for (label, value) in [
        ("transpose tiled-padded", "92.5%"),
        ("transpose naive-write", "14.2%"),
        ("particles soa", "94.5%"),
        ("particles aos", "75.5%"),
        ("stride 32", "11.0%"),
        ("complex interleaved", "51.7%"),
        ("saxpy f32x4-strided", "39.4%"),
    ] {
        assert!(has_text(&bars, label), "bar {label}");
        assert!(has_text(&bars, value), "bar value {value}");
    }
    assert!(
        !texts(&bars).iter().any(|t| t.starts_with("matmul")),
        "matmul is not a bandwidth contrast"
    );

    let transpose = svg("transpose.svg");
    assert!(transpose.contains("Transpose ladder"));
    for r in rows.iter().filter(|r| r.experiment == "transpose") {
        assert!(has_text(&transpose, &r.variant));
        assert!(has_text(
            &transpose,
            &format!("{:.1}% ({:.0} GB/s)", r.pct_of_copy, r.gb_per_s)
        ));
    }

    let matmul = svg("matmul.svg");
    assert!(matmul.contains("Matrix multiply: GFLOP/s per variant"));
    for (v, text) in [
        ("naive", "480 GFLOP/s (1.0x naive)"),
        ("accidental", "2950 GFLOP/s (6.1x naive)"),
        ("remapped", "6100 GFLOP/s (12.7x naive)"),
    ] {
        assert!(has_text(&matmul, v) && has_text(&matmul, text), "{v}");
    }
}

#[test]
fn plots_of_experiments_not_run_are_left_out() {
    let dir = temp_path("report-partial");
    let files = report::write(&dir, &fixture(&["stride"])).unwrap();
    let names: Vec<_> = files.iter().map(|f| f.file_name().unwrap().to_owned()).collect();
    assert_eq!(
        names,
        [
            "report.md",
            "results.json",
            "index.html",
            "stride.svg",
            "good-vs-bad.svg"
        ]
    );
    assert!(!dir.join("matmul.svg").exists());
}

#[test]
fn the_rust_side_of_a_comparison_is_the_results_table() {
    assert_eq!(compared(&[], true).run, fixture(&[]).run);
}

#[test]
fn a_comparison_adds_its_table_and_cublas_lines() {
    let results = compared(&[], true);
    let md = coalesce::report::markdown::render(&results, &[]);
    let cpp = section(&md, "Rust against CUDA C++");
    assert!(
        cpp.contains(
            "\n- C++ twins: NVRTC 13.0 (/usr/local/cuda/lib64/libnvrtc.so.13), PTX for compute_90\n"
        ),
        "{cpp}"
    );
    assert!(
        cpp.contains(
            "\n- matmul: cuBLAS SGEMM FP32 4096x4096x4096 = 48000 GFLOP/s (median of 1), validated\n"
        )
    );
    assert!(cpp.contains("\n- matmul: cuBLAS SGEMM TF32 4096x4096x4096 = 150000 GFLOP/s"));
    assert!(cpp.contains(
        "| experiment | variant | kernel | Rust | C++ | Rust/C++ | Rust % of copy | C++ % of copy | Rust % of cuBLAS | C++ % of cuBLAS | Rust valid | C++ valid |"
    ));
    let rows = &results.run.rows;
    assert_eq!(
        cpp.lines().filter(|l| l.starts_with('|')).count(),
        rows.len() + 2,
        "one row per kernel"
    );
    let copy = rows.iter().find(|r| r.kernel == "copy_f32x4").unwrap();
    let want = format!(
        "| copy | f32x4 | `copy_f32x4` | {:.1} GB/s | {:.1} GB/s | 1.020 | 93.0 | {:.1} | - | - | yes | yes |",
        copy.gb_per_s,
        copy.gb_per_s / 1.02,
        93.0 / 1.02
    );
    assert!(cpp.lines().any(|l| l == want), "{want}\nnot in\n{cpp}");
    let transpose = md_row(cpp, &["transpose", "tiled-padded"]).unwrap();
    assert!(transpose.contains("| 0.800 | 92.5 | 115.6 |"), "{transpose}");
    // A product's share is of cuBLAS, as `coalesce compare` prints it, not of the copy.
    let matmul = md_row(cpp, &["matmul", "remapped"]).unwrap();
    let row = results
        .compare
        .as_ref()
        .unwrap()
        .rows
        .iter()
        .find(|r| r.kernel == "matmul_remapped")
        .unwrap();
    let (rust, cpp_side) = (
        row.rust.pct_of_cublas.unwrap(),
        row.cpp.as_ref().unwrap().pct_of_cublas.unwrap(),
    );
    let want =
        format!("| 6100 GFLOP/s | 6421 GFLOP/s | 0.950 | - | - | {rust:.1} | {cpp_side:.1} | yes | yes |");
    assert!(matmul.ends_with(&want), "{want}\nnot at the end of\n{matmul}");
    let n = rows.len();
    assert!(
        cpp.contains(&format!("{} of {n} kernels at 0.98x or better", n - 2)),
        "{cpp}"
    );
    assert!(
        cpp.contains(
            "\n% of cuBLAS: of cuBLAS on the same matrices, its launches interleaved with the row's"
        ),
        "{cpp}"
    );
}

#[test]
fn a_failed_twin_is_flagged_in_the_comparison() {
    let mut results = compared(&["copy"], true);
    let twin = results.compare.as_mut().unwrap().rows[0].cpp.as_mut().unwrap();
    twin.validated = false;
    twin.check = "exact: 5 of 67108864 differ".into();
    assert_eq!(results.failures(), 1);
    let md = coalesce::report::markdown::render(&results, &[]);
    assert_flagged(
        section(&md, "Rust against CUDA C++"),
        &["copy", "f32"],
        "| yes | **NO** |",
        "- copy/f32 (`copy_f32`): exact: 5 of 67108864 differ",
    );
}

#[test]
fn cublas_claims_are_filled_from_the_measured_baseline() {
    let md = coalesce::report::markdown::render(&compared(&[], true), &[]);
    let claims = section(&md, "Published claims beside this GPU");
    let naive = md_row(claims, &["matmul naive, % of cuBLAS SGEMM"]).unwrap();
    assert!(
        naive.ends_with(
            "| 1.3% | 1.0% of cuBLAS SGEMM FP32 (480 of 48000 GFLOP/s, timed in the same rounds) |"
        ),
        "{naive}"
    );
    let remapped = md_row(claims, &["matmul remapped, % of cuBLAS SGEMM"]).unwrap();
    assert!(
        remapped.ends_with(
            "| 8.5% | 12.7% of cuBLAS SGEMM FP32 (6100 of 48000 GFLOP/s, timed in the same rounds) |"
        ),
        "{remapped}"
    );
    // The claim's share is the comparison row's (cuBLAS in the same rounds: the ladder's
    // figure), not one over the cuBLAS line; older results divide by the line.
    let mut results = compared(&[], true);
    let row = results
        .compare
        .as_mut()
        .unwrap()
        .rows
        .iter_mut()
        .find(|r| r.kernel == "matmul_remapped")
        .unwrap();
    row.rust.pct_of_cublas = Some(10.0);
    let md = coalesce::report::markdown::render(&results, &[]);
    let remapped = md_row(&md, &["matmul remapped, % of cuBLAS SGEMM"]).unwrap();
    assert!(
        remapped
            .ends_with("| 10.0% of cuBLAS SGEMM FP32 (6100 of 61000 GFLOP/s, timed in the same rounds) |"),
        "{remapped}"
    );
    for r in &mut results.compare.as_mut().unwrap().rows {
        r.cublas_interleaved = false;
    }
    let md = coalesce::report::markdown::render(&results, &[]);
    let remapped = md_row(&md, &["matmul remapped, % of cuBLAS SGEMM"]).unwrap();
    assert!(
        remapped.ends_with("| 12.7% of cuBLAS SGEMM FP32 (6100 of 48000 GFLOP/s) |"),
        "{remapped}"
    );
    // Where cuBLAS could not be loaded, the claims say why.
    let mut results = compared(&[], true);
    let c = results.compare.as_mut().unwrap();
    c.cublas_rows.clear();
    c.cublas = Some("cuBLAS: unavailable: libcublas.so.13 not found".into());
    // Then no row was timed beside it either.
    for r in &mut c.rows {
        r.rust.pct_of_cublas = None;
        r.cublas_interleaved = false;
    }
    let md = coalesce::report::markdown::render(&results, &[]);
    let naive = md_row(&md, &["matmul naive, % of cuBLAS SGEMM"]).unwrap();
    assert!(
        naive.ends_with("| no cuBLAS SGEMM: cuBLAS: unavailable: libcublas.so.13 not found |"),
        "{naive}"
    );
}

#[test]
fn without_nvrtc_the_report_says_so_in_one_line() {
    let dir = temp_path("report-no-nvrtc");
    let results = compared(&["copy", "stride"], false);
    let files = report::write(&dir, &results).unwrap();
    let md = read(&dir.join("report.md"));
    let cpp = section(&md, "Rust against CUDA C++");
    assert_eq!(cpp.trim(), format!("## Rust against CUDA C++\n\n- {UNAVAILABLE}"));
    assert_eq!(md.matches("unavailable").count(), 1, "{md}");
    // The Rust side is all there.
    for r in &results.run.rows {
        assert!(md_row(&md, &[&r.experiment, &r.variant]).is_some());
    }
    assert!(!files.iter().any(|f| f.ends_with("rust-vs-cpp.svg")));
}

#[test]
fn the_comparison_plot_has_one_bar_per_kernel_around_one() {
    const TITLE: &str = "Rust against CUDA C++: speed of each kernel over its C++ twin";
    let dir = temp_path("report-compare");
    let results = compared(&[], true);
    let files = report::write(&dir, &results).unwrap();
    assert_eq!(files.last().unwrap().file_name().unwrap(), "rust-vs-cpp.svg");
    let md = read(&dir.join("report.md"));
    assert!(md.contains(&format!("![{TITLE}](rust-vs-cpp.svg)")));
    let svg = read(&dir.join("rust-vs-cpp.svg"));
    assert!(has_text(&svg, TITLE));
    assert!(has_text(&svg, DEVICE));
    assert!(svg.contains("Rust / C++ (ratio of GB/s, GFLOP/s for matmul"));
    assert!(has_text(&svg, "0.98x"));
    let rows = &results.run.rows;
    let width: f64 = 1100.0;
    for r in rows {
        let label = format!("{} {}", r.experiment, r.variant);
        let x = text_x(&svg, &label).unwrap_or_else(|| panic!("no label {label}"));
        assert!(
            x > 100.0 && x < width / 2.0,
            "{label} at x = {x}: left of the bars, on the canvas"
        );
    }
    assert!(has_text(&svg, "0.800x") && has_text(&svg, "1.020x") && has_text(&svg, "0.950x"));
    assert_eq!(
        texts(&svg).iter().filter(|t| *t == "1.000x").count(),
        rows.len() - 3
    );
    // One filled bar per kernel (green at 0.98x or above, red under), plus the
    // legend's two swatches.
    let green = svg.matches("fill=\"#228B22\"").count();
    let red = svg.matches("fill=\"#C81E1E\"").count();
    assert_eq!((green, red), (rows.len() - 2 + 1, 2 + 1));
}

#[test]
fn results_json_holds_the_comparison_and_round_trips() {
    let results = compared(&[], true);
    let text = round_trip("report-compare-json", &results);
    // `compare --json`'s fields under "compare".
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let c: CompareReport = serde_json::from_value(value["compare"].clone()).unwrap();
    assert_eq!(Some(&c), results.compare.as_ref());
    assert_eq!(c.cublas_rows[0].gflop_per_s, 48_000.0);
}

/// The claims and plots name their variants through the declarations (a renamed
/// variant does not compile); each must also be in its experiment's list, or it would
/// silently read "not run".
#[test]
fn claims_and_contrasts_name_declared_variants() {
    use coalesce::report::claims::{CLAIMS, Figure};
    use coalesce::report::plots::CONTRASTS;
    let mut named = Vec::new();
    for c in CLAIMS {
        match c.figure {
            Figure::PctOf { row, of } => named.extend([row, of]),
            Figure::PctOfCublas { row } | Figure::PctOfCopy { row } => named.push(row),
            Figure::Speedup { fast, slow } => named.extend([fast, slow]),
        }
    }
    for &(good, bad) in CONTRASTS {
        assert_eq!(
            good.experiment.name, bad.experiment.name,
            "{good:?} against {bad:?}"
        );
        named.extend([good, bad]);
    }
    named.extend(coalesce::report::plots::NAMED_VARIANTS);
    for l in coalesce::report::plots::summary::LINES {
        if let coalesce::report::plots::summary::Pick::Kernel(v) = l.pick {
            named.push(v);
        }
    }
    for e in coalesce::report::ladder::EXPERIMENTS {
        assert!(
            coalesce::experiments::named(e).is_some(),
            "the ladder names {e}, which is not declared"
        );
    }
    for v in named {
        assert!(
            v.is_declared(),
            "{v:?} is named by the report but not in its experiment's list"
        );
        assert!(
            coalesce::experiments::ALL
                .iter()
                .any(|e| std::ptr::eq(*e, v.experiment)),
            "{v:?}: its experiment is not registered"
        );
    }
}

#[test]
fn the_ladder_sets_every_matmul_beside_its_twin_and_cublas() {
    let dir = temp_path("report-ladder");
    let results = compared(&[], true);
    let files = report::write(&dir, &results).unwrap();
    let md = read(&dir.join("report.md"));
    let ladder = section(&md, "The matmul ladder");
    for r in results.run.rows.iter().filter(|r| r.experiment == "matmul") {
        assert!(ladder.contains(&format!("| matmul/{} |", r.variant)), "{ladder}");
    }
    assert!(ladder.contains("naive 1.3% of cuBLAS, remapped 8.5%"), "{ladder}");
    assert!(ladder.contains("Best Rust rung: matmul/"), "{ladder}");
    if results
        .compare
        .as_ref()
        .is_some_and(|c| !c.cublas_rows.is_empty())
    {
        assert!(
            ladder.contains("cuBLAS SGEMM FP32 on the same matrices, timed alone after the rungs: ")
                && ladder.contains("divides by cuBLAS timed in the same rounds as the rung"),
            "{ladder}"
        );
        assert!(files.iter().any(|f| f.ends_with("ladder.svg")));
    }
    // A results file from before cuBLAS was interleaved has no such field: its rows
    // divide by the line above, and the ladder says so.
    let mut old = results.clone();
    for r in &mut old.compare.as_mut().unwrap().rows {
        let mut json = serde_json::to_value(&*r).unwrap();
        json.as_object_mut().unwrap().remove("cublas_interleaved");
        *r = serde_json::from_value(json).unwrap();
        assert!(!r.cublas_interleaved);
    }
    let md = coalesce::report::markdown::render(&old, &[]);
    let ladder = section(&md, "The matmul ladder");
    assert!(
        ladder.contains("GFLOP/s; each rung's % of cuBLAS divides by it.") && !ladder.contains("same rounds"),
        "{ladder}"
    );
    let cpp = section(&md, "Rust against CUDA C++");
    assert!(
        cpp.contains("\n% of cuBLAS: of the cuBLAS lines above (timed alone, after the variants).\n"),
        "{cpp}"
    );
}

/// What a prediction leaves out (residency from threads only where ptxas was not
/// found, ...) is said under the predictions' table, once, with its kernels.
#[test]
fn what_predictions_leave_out_is_said_under_their_table() {
    use coalesce::report::predicted::Predicted;
    let mut results = fixture(&["copy"]);
    const CAVEAT: &str = "residency counts threads only: ptxas not found (ptxas: no such file; set PTXAS)";
    results.predicted = results
        .run
        .rows
        .iter()
        .map(|r| Predicted {
            experiment: r.experiment.clone(),
            variant: r.variant.clone(),
            pct_of_copy: 90.0,
            bound: "DRAM bytes at the copy ceiling".into(),
            gb_per_s: Some(0.9 * r.gb_per_s),
            ceiling_gb_per_s: Some(3000.0),
            gflop_per_s: None,
            not_modelled: vec![CAVEAT.into()],
            sites: Vec::new(),
        })
        .collect();
    let md = coalesce::report::markdown::render(&results, &[]);
    let section = section(&md, "Predicted beside measured");
    assert!(
        section.contains(&format!(
            "Not counted in these predictions:\n\n- {CAVEAT} (every kernel)\n"
        )),
        "{section}"
    );
    results.predicted[0].not_modelled.clear();
    let md = coalesce::report::markdown::render(&results, &[]);
    let kernels: Vec<String> = results.predicted[1..]
        .iter()
        .map(|p| format!("{}/{}", p.experiment, p.variant))
        .collect();
    assert!(
        md.contains(&format!("- {CAVEAT} ({})\n", kernels.join(", "))),
        "{md}"
    );
}

/// index.html holds one card per kernel of the results, each with its figures. Where
/// the results keep a kernel's emulation (the predict stage does), its chips sit on
/// its source lines: transpose/naive-write's line that reads a row and writes it down
/// a column, 4 sectors per request for the load and 32 for the store; so do the sites
/// a report with no profile keeps apart (transpose/tiled's 32-way column read). Where
/// they keep none, the card says how to add it. The kernels' source is escaped (`Global<f32>`).
#[test]
fn the_page_shows_every_kernel_with_the_emulation_its_results_keep() {
    use coalesce::explain::{Options, explain};
    use coalesce::report::predicted::Predicted;
    use coalesce::report::sites::SiteNote;
    let mut results = fixture(&["transpose"]);
    let selection =
        coalesce::experiments::select(&["transpose/naive-write".into(), "transpose/tiled".into()]).unwrap();
    let opts = Options {
        shape: Some(vec![256, 256]),
        ..Options::default()
    };
    let mut kernels = explain(&selection, &opts, |_| {}).unwrap().kernels;
    let (k, tiled) = (kernels.remove(0), kernels.remove(0));
    // transpose/tiled's sites kept as a live report on a GPU with no profile keeps them.
    results.emulated = vec![coalesce::report::predicted::Emulated {
        experiment: "transpose".into(),
        variant: "tiled".into(),
        sites: SiteNote::of_kernel(&tiled),
    }];
    results.predicted = vec![Predicted {
        experiment: "transpose".into(),
        variant: "naive-write".into(),
        pct_of_copy: 20.0,
        bound: "DRAM bytes at the copy ceiling".into(),
        gb_per_s: Some(600.0),
        ceiling_gb_per_s: Some(3000.0),
        gflop_per_s: None,
        not_modelled: Vec::new(),
        sites: SiteNote::of_kernel(&k),
    }];
    let dir = temp_path("report-page");
    report::write(&dir, &results).unwrap();
    let page = read(&dir.join("index.html"));
    assert_eq!(
        page.matches("<article class=\"kernel\"").count(),
        results.run.rows.len()
    );
    let card = |name: &str| card_of(&page, name);
    let naive = card("transpose/naive-write");
    let line = naive.split("<tr ").find(|r| r.contains("dst.write(")).unwrap();
    assert!(
        line.contains("data-op=\"load\" data-space=\"global\"")
            && line.contains("data-sectors-per-request=\"4\""),
        "{line}"
    );
    assert!(
        line.contains("data-op=\"store\" data-space=\"global\"")
            && line.contains("data-sectors-per-request=\"32\""),
        "{line}"
    );
    assert!(naive.contains("Global&lt;f32&gt;"), "the source is escaped");
    assert!(!naive.contains("Global<f32>"));
    assert!(card("transpose/tiled").contains("data-bank-ways=\"32\""));
    assert!(card("transpose/naive-read").contains("hold no emulation"));
    // The next variant is shown as a diff from it.
    assert!(card("transpose/naive-read").contains("What changed from transpose/naive-write"));
    // report.md points at the page.
    assert!(read(&dir.join("report.md")).contains("[index.html](index.html)"));
}

/// A 16-bit product in a report: its row, its twin and cuBLAS GEMM BF16 in the same
/// precision; the comparison names the precision of each 16-bit row, and the whole
/// report (Markdown, JSON, plots, page) is written.
#[test]
fn a_16_bit_product_is_reported_with_its_precision() {
    let work = half_product(4096);
    let mut plain = fixture(&["copy"]);
    let mut bf16 = make_row("gemm-bf16", "simt", "hgemm_simt_bf16", work, 60.0);
    bf16.size_label = Some("4096x4096x4096".into());
    assert_eq!(bf16.precision, "BF16");
    plain.run.rows.push(bf16.clone());
    let mut c = comparison(&plain, true);
    let g = bf16.gflop_per_s.unwrap();
    c.rows.pop();
    let mut row = CompareRow::new(
        &bf16,
        Some(&twin(&bf16, 1.1)),
        Some(CublasRate::Interleaved(g * 20.0)),
    );
    row.cublas_layout = Some(Layout::TN);
    c.rows.push(row);
    c.cublas = Some("cuBLAS 13.0.0 (/usr/local/cuda/lib64/libcublas.so.13)".into());
    c.cublas_rows.push(CublasRow {
        experiment: "gemm-bf16".into(),
        math: Math::Bf16,
        m: 4096,
        n: 4096,
        k: 4096,
        timing: Timing::from_samples(vec![0.2]),
        gflop_per_s: g * 20.0,
        validated: true,
        check: "within the bound".into(),
        layout: Some(Layout::NT),
    });
    let results = Results::of_comparison(plain.elapsed_s, c);
    let md = coalesce::report::markdown::render(&results, &[]);
    let cpp = section(&md, "Rust against CUDA C++");
    assert!(
        cpp.contains("- gemm-bf16: cuBLAS GEMM BF16 4096x4096x4096 = "),
        "{cpp}"
    );
    // The layout each figure of cuBLAS is of: the line's, and the row's in its column.
    assert!(cpp.contains("GFLOP/s, layout NT, the fastest of 4"), "{cpp}");
    let header = cpp.lines().find(|l| l.starts_with("| experiment")).unwrap();
    assert!(
        header.contains("| C++ % of cuBLAS | cuBLAS layout | Rust valid |"),
        "{cpp}"
    );
    let bf16_row = cpp.lines().find(|l| l.starts_with("| gemm-bf16")).unwrap();
    assert!(bf16_row.contains("| TN |"), "{cpp}");
    assert!(cpp.contains("cuBLAS layout: how A and B were stored"), "{cpp}");
    assert!(
        cpp.contains(
            "\nPrecision: BF16: gemm-bf16/simt; each % of cuBLAS is of cuBLAS in the row's precision.\n"
        ),
        "{cpp}"
    );
    let json = serde_json::to_string(&results).unwrap();
    assert!(json.contains("\"precision\":\"BF16\""), "{json}");
    let out = temp_path("report-bf16");
    let written = report::write(&out, &results).unwrap();
    assert!(written.iter().any(|p| p.ends_with("report.md")), "{written:?}");
}

/// A rung that builds on one other than the rung declared before it is shown as a diff
/// from that one: overlap (after tma-store-128 in the list) changes tma-store.
#[test]
fn a_rungs_diff_is_from_the_rung_it_builds_on() {
    let work = half_product(4096);
    let mut results = fixture(&["copy"]);
    for (v, k) in [
        ("tma-store", "hgemm_tma_store_bf16"),
        ("tma-store-128", "hgemm_tma_store_128_bf16"),
        ("overlap", "hgemm_overlap_bf16"),
    ] {
        results.run.rows.push(make_row("gemm-bf16", v, k, work, 0.2));
    }
    let dir = temp_path("report-builds-on");
    report::write(&dir, &results).unwrap();
    let page = read(&dir.join("index.html"));
    let card = |name: &str| card_of(&page, name);
    let overlap = card("gemm-bf16/overlap");
    assert!(
        overlap.contains("What changed from gemm-bf16/tma-store:"),
        "{overlap}"
    );
    assert!(!overlap.contains("What changed from gemm-bf16/tma-store-128"));
    // The rung declared before it still steps from the one before that.
    assert!(card("gemm-bf16/tma-store-128").contains("What changed from gemm-bf16/tma-store:"));
    // Without its base in the results, a rung shows no diff rather than a wrong one.
    results.run.rows.retain(|r| r.variant != "tma-store");
    let dir = temp_path("report-builds-on-alone");
    report::write(&dir, &results).unwrap();
    let page = read(&dir.join("index.html"));
    let at = page.find("data-kernel=\"gemm-bf16/overlap\"").unwrap();
    assert!(!page[at..].contains("What changed from"));
}

/// A report just run folds each kernel's SASS into its card where ptxas and nvdisasm
/// run here; the same results rendered from a file never do (the committed sample page
/// is the same on every machine).
#[test]
fn a_live_reports_page_has_sass_where_the_tools_run_and_a_saved_one_none() {
    let results = fixture(&["copy"]);
    let (live, saved) = (temp_path("live-page"), temp_path("saved-page"));
    report::write_live(&live, std::slice::from_ref(&results)).unwrap();
    report::write_from(&saved, std::slice::from_ref(&results)).unwrap();
    let (live, saved) = (read(&live.join("index.html")), read(&saved.join("index.html")));
    assert!(!saved.contains("Its SASS for"), "a saved report's page has SASS");
    if common::ptxas().is_some() && common::nvdisasm().is_some() {
        assert!(live.contains("Its SASS for sm_90"), "no SASS on the live page");
        assert!(live.contains("LDG.E"), "the SASS has no global load");
    } else {
        assert_eq!(live, saved, "without the tools the live page is the saved one");
    }
}
