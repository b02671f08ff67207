//! The sample report's page (docs/sample-report/index.html) in a real browser:
//! headless Chromium (Debian's `chromium`) loads it from disk with no network, runs
//! its script, and shows every kernel with the figures the emulator recorded beside
//! its lines. Where Chromium is not installed the tests say so and pass, unless
//! `COALESCE_REQUIRE_CHROMIUM` is set (CI sets it, and installs it), when they fail.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn sample_page() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/sample-report/index.html")
}

/// Chromium: `$CHROMIUM`, else Debian's /usr/bin/chromium; None where it does not run.
fn chromium() -> Option<String> {
    let exe = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let runs = Command::new(&exe)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if runs {
        return Some(exe);
    }
    assert!(
        std::env::var_os("COALESCE_REQUIRE_CHROMIUM").is_none(),
        "COALESCE_REQUIRE_CHROMIUM is set but {exe} does not run (apt-get install chromium)"
    );
    eprintln!("chromium not found (apt-get install chromium, or set CHROMIUM): skipped");
    None
}

/// Runs headless Chromium on `page` with `args`, in a profile of its own (`name`),
/// with nothing that reaches the network; its console messages go to stderr.
fn browse(exe: &str, name: &str, page: &Path, args: &[&str]) -> Output {
    let profile = common::fresh_dir(&format!("chromium-{name}"));
    let url = format!("file://{}", page.canonicalize().unwrap().display());
    let out = Command::new(exe)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(url)
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The page as the browser holds it once its script ran, and the console messages
/// it wrote (Chromium logs each as a `CONSOLE` line, whatever its level: an
/// uncaught error, `console.error`, a warning). The page writes none.
fn rendered(exe: &str, name: &str, page: &Path) -> (String, Vec<String>) {
    let out = browse(exe, name, page, &["--virtual-time-budget=5000", "--dump-dom"]);
    let console = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect();
    (String::from_utf8_lossy(&out.stdout).into_owned(), console)
}

/// The way the console is read catches an error: a page whose script throws logs it.
#[test]
fn a_script_error_shows_in_the_console_lines() {
    let Some(exe) = chromium() else { return };
    let page = common::temp_path("broken-page.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><body><p>x</p><script>undefinedFunction();</script></body></html>",
    )
    .unwrap();
    let (dom, console) = rendered(&exe, "broken", &page);
    assert!(dom.contains("<p>x</p>"), "{dom}");
    assert!(
        console.iter().any(|l| l.contains("undefinedFunction")),
        "no console line for the error: {console:?}"
    );
}

/// Every (experiment, variant) of the sample report's results files.
fn sample_kernels() -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/sample-report");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path().join("results.json"))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    let all = coalesce::report::from_files::load_all(&files).unwrap();
    let mut kernels: Vec<(String, String)> = all
        .iter()
        .flat_map(|r| &r.run.rows)
        .map(|r| (r.experiment.clone(), r.variant.clone()))
        .collect();
    kernels.sort();
    kernels.dedup();
    kernels.len()
}

/// The card of `kernel` (`transpose/naive-write`) in `html`, up to its diff.
fn card<'a>(html: &'a str, kernel: &str) -> &'a str {
    let at = html
        .find(&format!("data-kernel=\"{kernel}\""))
        .unwrap_or_else(|| panic!("no card for {kernel}"));
    let rest = &html[at..];
    let end = rest.find("</article>").unwrap();
    let card = &rest[..end];
    // The annotated source, not the diff below it (which shows the kernel before too).
    card.split("<details class=\"step\"").next().unwrap()
}

/// Each source row of a card that carries a site chip: the row's markup.
fn rows_with_sites(card: &str) -> Vec<&str> {
    card.split("<tr ")
        .filter(|r| r.contains("class=\"site "))
        .map(|r| r.split("</tr>").next().unwrap())
        .collect()
}

/// The value of `name="..."` in the first tag of `tag` that has it.
fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let at = tag.find(&key)? + key.len();
    tag[at..].split('"').next()
}

/// Each chip's opening tag in `row`.
fn chips(row: &str) -> Vec<&str> {
    row.split("<span class=\"site ")
        .skip(1)
        .map(|c| c.split('>').next().unwrap())
        .collect()
}

/// In a real browser, the sample page loads with its script run and nothing on the
/// console, shows one card per kernel of its results, and on transpose/naive-write's
/// line that reads a row and writes it down a column, the coalesced load's 4 sectors
/// per request beside the strided store's 32.
#[test]
fn the_sample_page_loads_clean_and_shows_each_kernels_sectors() {
    let Some(exe) = chromium() else { return };
    let (dom, console) = rendered(&exe, "sample", &sample_page());
    assert!(console.is_empty(), "the page wrote to the console: {console:?}");
    assert!(
        dom.contains("<html lang=\"en\" class=\"js\">"),
        "its script did not run"
    );
    let cards = dom.matches("<article class=\"kernel\"").count();
    assert_eq!(cards, sample_kernels(), "one card per kernel of the results");

    let naive = card(&dom, "transpose/naive-write");
    let rows = rows_with_sites(naive);
    let line = rows
        .iter()
        .find(|r| r.contains("dst.write("))
        .expect("the line that writes dst carries its sites");
    let sectors = |op: &str| {
        chips(line)
            .into_iter()
            .find(|c| attr(c, "data-op") == Some(op) && attr(c, "data-space") == Some("global"))
            .and_then(|c| attr(c, "data-sectors-per-request"))
            .unwrap_or_else(|| panic!("no global {op} on {line}"))
            .to_string()
    };
    assert_eq!(sectors("store"), "32", "{line}");
    assert_eq!(sectors("load"), "4", "{line}");
    // And the page says so in words, not only in colour.
    assert!(line.contains("32 sectors/req"), "{line}");
}

/// The page is one file: nothing it shows is fetched (no `src`, stylesheet link or
/// `url(...)`), so it opens offline; and it stays small enough to mail.
#[test]
fn the_sample_page_is_self_contained_and_small() {
    let html = std::fs::read_to_string(sample_page()).unwrap();
    for fetch in [" src=", "<link", "url(", "@import"] {
        assert!(!html.contains(fetch), "the page fetches something: {fetch}");
    }
    let mb = html.len() as f64 / 1e6;
    assert!(mb < 4.0, "the page is {mb:.1} MB");
    // Without its script the content is all there: the cards, their chips, the charts.
    assert_eq!(
        html.matches("<article class=\"kernel\"").count(),
        sample_kernels()
    );
    assert!(html.contains("<figure"), "no chart");
}

/// A screenshot of the page is not blank: more than a handful of colours.
#[test]
fn the_sample_pages_screenshot_is_not_blank() {
    let Some(exe) = chromium() else { return };
    let png = common::temp_path("sample-page.png");
    browse(
        &exe,
        "screenshot",
        &sample_page(),
        &[
            "--virtual-time-budget=5000",
            "--window-size=1280,900",
            &format!("--screenshot={}", png.display()),
        ],
    );
    let file = std::io::BufReader::new(std::fs::File::open(&png).expect("chromium wrote the screenshot"));
    let mut reader = png::Decoder::new(file).read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (1280, 900));
    let pixel = info.color_type.samples();
    let mut colours: Vec<&[u8]> = buf[..info.buffer_size()].chunks(pixel).collect();
    colours.sort();
    colours.dedup();
    assert!(colours.len() > 16, "{} colours: a blank page", colours.len());
}

/// A report of one GPU at two shapes (two of tests/data's H200 runs) in a real
/// browser: the page loads clean, and its sweep section holds the summary of each
/// shape, a cell per kernel and shape marked within 10% or not, and a dot for each.
#[test]
fn a_report_of_two_shapes_shows_predicted_beside_measured_at_each() {
    let Some(exe) = chromium() else { return };
    let dir = common::fresh_dir("sweep-page");
    let data = |shape: &str| {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../tests/data/h200-transpose-{shape}.json"))
    };
    let out = dir.join("report");
    common::coalesce()
        .args(["report", "--quiet", "--profile", "H200", "--from"])
        .arg(data("1024x1024"))
        .arg("--from")
        .arg(data("2048x2048"))
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    let (dom, console) = rendered(&exe, "sweep", &out.join("index.html"));
    assert!(console.is_empty(), "the page wrote to the console: {console:?}");
    let at = dom.find("<section id=\"sweep\">").expect("a sweep section");
    let section = &dom[at..at + dom[at..].find("</section>").unwrap()];
    for size in ["1024x1024", "2048x2048", "every size"] {
        assert!(
            section.contains(&format!("<td>{size}</td>")),
            "no {size}: {section}"
        );
    }
    let cells = section.matches("<td class=\"near\"").count() + section.matches("<td class=\"far\"").count();
    assert_eq!(cells, 4, "two kernels at two shapes: {section}");
    assert_eq!(section.matches("<circle").count(), 4, "{section}");
    let _ = std::fs::remove_dir_all(&dir);
}
