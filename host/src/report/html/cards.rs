//! One card per kernel: its figures on each GPU, its annotated source, its twin and
//! PTX folded, and its diff from the kernel it builds on; and the charts' rows, drawn
//! from the same results.

use std::fmt::Write as _;

use super::annotate;
use super::charts::{Bar, Chart, Row};
use super::diff;
use super::escape::{attr, id, text};
use super::source;
use crate::explain::ExplainReport;
use crate::harness;
use crate::report::sites::SiteNote;
use crate::report::{Results, ladder, predicted};

/// The most lines of a kernel's PTX or SASS the page holds.
const PTX_LINES: usize = 400;

/// One kernel as the page shows it.
pub struct Card {
    pub experiment: String,
    pub variant: String,
    /// The PTX entry point (the Rust function's name).
    pub entry: String,
    /// A product's arithmetic (`fp32`, `tf32`), for the precision filter.
    pub precision: Option<String>,
    /// What the emulator recorded; `None` where these results hold no emulation.
    pub notes: Option<Vec<SiteNote>>,
    /// Where the notes come from (or why there are none), one sentence.
    pub notes_about: String,
    /// Its SASS and the architecture it is for, where `explain --html` could make it.
    pub sass: Option<(String, String)>,
    /// The figures' table: its header, then a row per GPU (a cell is `(text, bad)`).
    pub head: Vec<&'static str>,
    pub rows: Vec<Vec<(String, bool)>>,
}

impl Card {
    pub fn name(&self) -> String {
        format!("{}/{}", self.experiment, self.variant)
    }

    pub fn anchor(&self) -> String {
        id("k", &self.name())
    }

    fn lines(&self) -> (Vec<annotate::Line<'_>>, Vec<&SiteNote>) {
        let notes = self.notes.as_deref().unwrap_or_default();
        let at: Vec<(String, u32)> = notes.iter().map(|n| (n.file.clone(), n.line)).collect();
        let sections = source::kernel_sections(&self.entry, &at);
        annotate::lines(&sections, notes)
    }

    /// The card's markup; `before`: the kernel whose diff to this one it shows.
    pub fn render(&self, before: Option<&Card>) -> String {
        let mut out = String::new();
        let precision = self
            .precision
            .as_ref()
            .map(|p| format!(" data-precision=\"{}\"", attr(p)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "<article class=\"kernel\" id=\"{}\" data-kernel=\"{}\" data-entry=\"{}\"{precision}>",
            self.anchor(),
            attr(&self.name()),
            attr(&self.entry)
        );
        let _ = writeln!(
            out,
            "<h3>{}<code>{}</code></h3>",
            text(&self.name()),
            text(&self.entry)
        );
        if !self.rows.is_empty() {
            out.push_str("<table class=\"figs\"><thead><tr>");
            for h in &self.head {
                let _ = write!(out, "<th>{}</th>", text(h));
            }
            out.push_str("</tr></thead><tbody>");
            for r in &self.rows {
                out.push_str("<tr>");
                for (cell, bad) in r {
                    let class = if *bad { " class=\"bad\"" } else { "" };
                    let _ = write!(out, "<td{class}>{}</td>", text(cell));
                }
                out.push_str("</tr>");
            }
            out.push_str("</tbody></table>\n");
        }
        let _ = writeln!(out, "<p class=\"muted\">{}</p>", text(&self.notes_about));
        let (lines, unplaced) = self.lines();
        if lines.is_empty() {
            out.push_str("<p class=\"muted\">Its source is not among the kernels crate's files this coalesce carries.</p>\n");
        } else {
            out.push_str(&annotate::table(&lines, &unplaced));
        }
        out.push_str(&self.folded());
        if let Some(b) = before {
            let (old, _) = b.lines();
            let _ = writeln!(
                out,
                "<details class=\"step\" open><summary>What changed from {}: the changed lines, and the lines whose numbers changed</summary>",
                text(&b.name())
            );
            out.push_str(&diff::side_by_side(&b.name(), &old, &self.name(), &lines));
            out.push_str("</details>\n");
        }
        out.push_str("</article>\n");
        out
    }

    /// The CUDA C++ twin's entry and the PTX entry, each folded.
    fn folded(&self) -> String {
        let mut out = String::new();
        let declared =
            crate::experiments::named(&self.experiment).and_then(|e| Some((e, e.variant(&self.variant)?)));
        let Some((e, v)) = declared else { return out };
        if let Some(twin) = source::twin_entry(e.twin.source, v.twin) {
            let _ = writeln!(
                out,
                "<details><summary>Its CUDA C++ twin: <code>{}</code> in cuda/{}</summary><pre><code>{}</code></pre></details>",
                text(v.twin),
                text(e.twin.file),
                text(&twin)
            );
        }
        let module = v.kernel.module;
        if let Some(ptx) = source::ptx_entry(crate::ptx::text(module), v.kernel.name) {
            // An unrolled product runs to thousands of lines: its start shows the
            // loads and the loop, and keeps the page small.
            let (shown, lines) = head(&ptx);
            let _ = writeln!(
                out,
                "<details><summary>Its PTX: <code>.entry {}</code> for {}, {lines} (what ptxas turns into SASS)</summary><pre><code>{}</code></pre></details>",
                text(v.kernel.name),
                text(crate::ptx::arch(module)),
                text(&shown)
            );
        }
        if let Some((arch, sass)) = &self.sass {
            let (shown, lines) = head(sass);
            let _ = writeln!(
                out,
                "<details><summary>Its SASS for {}, {lines} (what the GPU runs, from ptxas and nvdisasm)</summary><pre><code>{}</code></pre></details>",
                text(arch),
                text(&shown)
            );
        }
        out
    }
}

/// The first [`PTX_LINES`] lines of a listing, and how many it shows of how many.
fn head(listing: &str) -> (String, String) {
    let count = listing.lines().count();
    if count > PTX_LINES {
        let first: Vec<&str> = listing.lines().take(PTX_LINES).collect();
        (
            first.join("\n"),
            format!("the first {PTX_LINES} of its {count} lines"),
        )
    } else {
        (listing.to_string(), format!("{count} lines"))
    }
}

/// The card whose diff to `cards[i]` the page shows: the variant it declares it builds
/// on ([`crate::experiment::Variant::builds_on`]), where the results hold that one;
/// else the card before it, where that is the next variant of one experiment or the
/// next rung of the FP32 ladder from matmul into sgemm (the 16-bit chapters step
/// within themselves).
pub fn step_before(cards: &[Card], i: usize) -> Option<&Card> {
    let c = &cards[i];
    let declared = crate::experiments::named(&c.experiment)
        .and_then(|e| e.variant(&c.variant))
        .and_then(|v| v.builds_on);
    if let Some(base) = declared {
        return cards[..i]
            .iter()
            .find(|b| b.experiment == c.experiment && b.variant == base);
    }
    let b = &cards[i.checked_sub(1)?];
    let chain = |x: &Card| ["matmul", "sgemm"].contains(&x.experiment.as_str());
    (b.experiment == c.experiment || (chain(b) && chain(c))).then_some(b)
}

/// The precisions of the products among `cards`, in the order they appear.
pub fn precisions(cards: &[Card]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in cards.iter().filter_map(|c| c.precision.clone()) {
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// A product's arithmetic as the filter names it (`fp32`, `tf32`).
fn precision_of(experiment: &str, variant: &str) -> String {
    crate::experiments::arithmetic(experiment, variant)
        .label()
        .to_lowercase()
}

/// Every (experiment, variant) of any results, with its kernel: each experiment
/// where it first appears, its variants in their declared order (a variant one GPU
/// ran and another did not sits with its experiment).
fn kernels(all: &[Results]) -> Vec<(String, String, String)> {
    let mut seen: Vec<(String, String, String)> = Vec::new();
    for r in all.iter().flat_map(|x| &x.run.rows) {
        if !seen.iter().any(|(e, v, _)| *e == r.experiment && *v == r.variant) {
            seen.push((r.experiment.clone(), r.variant.clone(), r.kernel.clone()));
        }
    }
    let mut experiments: Vec<&str> = Vec::new();
    for (e, _, _) in &seen {
        if !experiments.contains(&e.as_str()) {
            experiments.push(e);
        }
    }
    let place = |(e, v, _): &(String, String, String)| {
        let exp = experiments.iter().position(|x| x == e).unwrap_or(usize::MAX);
        let declared = crate::experiments::named(e)
            .and_then(|d| d.variants.iter().position(|x| x.name == v))
            .unwrap_or(usize::MAX);
        (exp, declared)
    };
    let mut out = seen.clone();
    // A stable sort: variants no declaration names keep the order they appeared in.
    out.sort_by_key(|k| place(k));
    out
}

fn row_of<'a>(r: &'a Results, e: &str, v: &str) -> Option<&'a harness::Row> {
    r.run.rows.iter().find(|x| x.experiment == e && x.variant == v)
}

/// The cards of a report: each kernel that ran, with a row of figures per GPU, and its
/// SASS where `sass` makes it (a live report's tools; none for saved results).
pub fn of_results(
    all: &[Results],
    gpus: &[String],
    sass: &dyn Fn(&str) -> Option<(String, String)>,
) -> Vec<Card> {
    kernels(all)
        .into_iter()
        .map(|(e, v, entry)| {
            let product = all.iter().filter_map(|r| row_of(r, &e, &v)).any(|x| x.flops.is_some());
            let sass_of_entry = sass(&entry);
            let emulated = all.iter().zip(gpus).find_map(|(r, gpu)| {
                let sites = match predicted::of(r, &e, &v).filter(|p| !p.sites.is_empty()) {
                    Some(p) => &p.sites,
                    None => &r.emulated.iter().find(|x| x.experiment == e && x.variant == v)?.sites,
                };
                Some((sites.clone(), gpu))
            });
            let notes_about = match &emulated {
                Some((_, gpu)) => format!(
                    "Beside each line: what the emulator recorded there at the size the run on {gpu} used \
                     (a sample of blocks; per warp request)."
                ),
                None if crate::experiments::named(&e).and_then(|x| x.variant(&v)).is_none() => format!(
                    "This coalesce declares no {e}/{v} (results from an older one): nothing to emulate, \
                     its kernel's source as it is now."
                ),
                None => format!(
                    "These results hold no emulation of this kernel: a report with its GPU's profile keeps it \
                     (`coalesce report --from FILE --profile GPU`; `coalesce calibrate` measures one), and \
                     `coalesce explain {e}/{v} --html FILE` shows it alone."
                ),
            };
            let mut rows = Vec::new();
            for (r, gpu) in all.iter().zip(gpus) {
                if let Some(row) = row_of(r, &e, &v) {
                    rows.push(figures_row(r, row, gpu));
                }
            }
            Card {
                precision: product.then(|| precision_of(&e, &v)),
                experiment: e,
                variant: v,
                entry,
                notes: emulated.map(|(n, _)| n),
                notes_about,
                sass: sass_of_entry,
                head: vec!["GPU", "measured", "share", "CUDA C++ twin", "predicted", "bound"],
                rows,
            }
        })
        .collect()
}

/// One GPU's figures of a kernel: measured, its share of the copy or of cuBLAS, the
/// twin, and the prediction with its bound.
fn figures_row(r: &Results, row: &harness::Row, gpu: &str) -> Vec<(String, bool)> {
    let compared = r.compare.as_ref().and_then(|c| {
        c.rows
            .iter()
            .find(|x| x.experiment == row.experiment && x.variant == row.variant)
    });
    let pred = predicted::of(r, &row.experiment, &row.variant);
    let dash = || ("-".to_string(), false);
    let (measured, share, twin, predicted) = match row.gflop_per_s {
        Some(g) => {
            let arith = precision_of(&row.experiment, &row.variant).to_uppercase();
            let share = compared
                .and_then(|c| c.rust.pct_of_cublas)
                .map_or_else(dash, |p| (format!("{p:.1}% of cuBLAS {arith}"), false));
            let twin = compared
                .and_then(|c| c.cpp.as_ref())
                .and_then(|s| s.gflop_per_s)
                .map_or_else(dash, |g| (format!("{g:.0} GFLOP/s"), false));
            let predicted = pred
                .and_then(|p| p.gflop_per_s)
                .map_or_else(dash, |p| (format!("{p:.0} GFLOP/s"), false));
            ((format!("{g:.0} GFLOP/s"), false), share, twin, predicted)
        }
        None => {
            let twin = compared.and_then(|c| c.cpp.as_ref()).map_or_else(dash, |s| {
                (
                    format!("{:.1} GB/s ({:.1}% of copy)", s.gb_per_s, s.pct_of_copy),
                    false,
                )
            });
            let predicted = pred
                .and_then(|p| Some((p.on_run_scale(row)?, p.gb_per_s?)))
                .map_or_else(dash, |(pct, gb)| {
                    (format!("{pct:.1}% of copy ({gb:.0} GB/s)"), false)
                });
            (
                (format!("{:.1} GB/s", row.gb_per_s), false),
                (format!("{:.1}% of copy", row.pct_of_copy), false),
                twin,
                predicted,
            )
        }
    };
    let measured = if row.validated {
        measured
    } else {
        (format!("NOT VALIDATED ({})", row.check), true)
    };
    let bound = pred.map_or_else(dash, |p| (p.bound.clone(), false));
    vec![(gpu.to_string(), false), measured, share, twin, predicted, bound]
}

/// The cards of `explain --html`: each kernel explained, with its prediction where a
/// profile gave one, and its SASS where `sass` makes it.
pub fn of_explain(report: &ExplainReport, sass: impl Fn(&str) -> Option<(String, String)>) -> Vec<Card> {
    report
        .kernels
        .iter()
        .map(|k| {
            let product = k.product.is_some()
                || crate::experiments::named(&k.experiment)
                    .is_some_and(|e| matches!((e.work)(&k.problem), crate::experiment::Work::Flops { .. }));
            let mut rows = Vec::new();
            if let Some(p) = &k.prediction {
                rows.push(vec![
                    (p.device.clone(), false),
                    (
                        format!("{:.0} GB/s, {:.1}% of copy", p.gb_per_s, p.pct_of_copy),
                        false,
                    ),
                    (p.bound.describe().to_string(), false),
                ]);
            }
            if let Some(p) = &k.product {
                rows.push(vec![
                    (p.device.clone(), false),
                    (format!("{:.0} GFLOP/s", p.gflop_per_s), false),
                    (p.bound.describe(), false),
                ]);
            }
            Card {
                precision: product.then(|| precision_of(&k.experiment, &k.variant)),
                experiment: k.experiment.clone(),
                variant: k.variant.clone(),
                entry: k.kernel.clone(),
                notes: Some(SiteNote::of_kernel(k)),
                notes_about: crate::explain::render::kernel_header(k),
                sass: sass(&k.kernel),
                head: vec!["predicted on", "rate", "bound"],
                rows,
            }
        })
        .collect()
}

/// The charts' rows, from the results every card came from.
pub struct Figures<'a> {
    pub all: &'a [Results],
}

impl Figures<'_> {
    /// One chart per experiment that is not of the ladder; the ladder's rungs, one
    /// chart per precision.
    pub fn charts(&self, cards: &[Card]) -> Vec<Chart> {
        let mut out = Vec::new();
        let mut experiments: Vec<&str> = Vec::new();
        for c in cards {
            if !experiments.contains(&c.experiment.as_str())
                && !ladder::EXPERIMENTS.contains(&c.experiment.as_str())
            {
                experiments.push(&c.experiment);
            }
        }
        for e in experiments {
            let of: Vec<&Card> = cards.iter().filter(|c| c.experiment == e).collect();
            let product = of.iter().any(|c| c.precision.is_some());
            let rows = of.iter().map(|c| self.bandwidth_row(c, product)).collect();
            out.push(Chart {
                title: e.to_string(),
                axis: if product {
                    "GFLOP/s".into()
                } else {
                    "% of the copy (cuMemcpyDtoD) timed in the same run".into()
                },
                rows,
                precision: None,
            });
        }
        for p in precisions(cards) {
            let rungs: Vec<&Card> = cards
                .iter()
                .filter(|c| {
                    ladder::EXPERIMENTS.contains(&c.experiment.as_str())
                        && c.precision.as_deref() == Some(p.as_str())
                })
                .collect();
            if rungs.is_empty() {
                continue;
            }
            let shares = rungs.iter().any(|c| self.rung_share(c, 0).is_some());
            let title = format!("The matmul ladder, {}", p.to_uppercase());
            let axis = if shares {
                format!("% of cuBLAS {} on the same matrices", p.to_uppercase())
            } else {
                "GFLOP/s".into()
            };
            let rows = rungs
                .iter()
                .map(|c| Row {
                    label: c.name(),
                    anchor: c.anchor(),
                    bars: (0..self.all.len())
                        .map(|g| {
                            if shares {
                                self.rung_share(c, g)
                            } else {
                                self.gflops_bar(c, g)
                            }
                        })
                        .collect(),
                })
                .collect();
            out.push(Chart {
                title,
                axis,
                rows,
                precision: Some(p),
            });
        }
        out
    }

    fn bandwidth_row(&self, c: &Card, product: bool) -> Row {
        let bars = (0..self.all.len())
            .map(|g| {
                if product {
                    return self.gflops_bar(c, g);
                }
                let r = &self.all[g];
                let row = row_of(r, &c.experiment, &c.variant)?;
                let pred = predicted::of(r, &c.experiment, &c.variant).and_then(|p| p.on_run_scale(row));
                Some(Bar {
                    value: row.pct_of_copy,
                    predicted: pred,
                    text: format!("{:.1}% ({:.0} GB/s)", row.pct_of_copy, row.gb_per_s),
                })
            })
            .collect();
        Row {
            label: c.variant.clone(),
            anchor: c.anchor(),
            bars,
        }
    }

    fn gflops_bar(&self, c: &Card, g: usize) -> Option<Bar> {
        let r = &self.all[g];
        let row = row_of(r, &c.experiment, &c.variant)?;
        let value = row.gflop_per_s?;
        Some(Bar {
            value,
            predicted: predicted::of(r, &c.experiment, &c.variant).and_then(|p| p.gflop_per_s),
            text: format!("{value:.0} GFLOP/s"),
        })
    }

    /// A rung's % of cuBLAS on GPU `g`, its prediction on the same scale.
    fn rung_share(&self, c: &Card, g: usize) -> Option<Bar> {
        let r = &self.all[g];
        let l = ladder::ladder(r)?;
        let rung = l
            .rungs
            .iter()
            .find(|x| x.experiment == c.experiment && x.variant == c.variant)?;
        let pct = rung.rust_pct_of_cublas?;
        let pred = predicted::of(r, &c.experiment, &c.variant)
            .and_then(|p| p.gflop_per_s)
            .filter(|_| rung.rust_gflop_per_s > 0.0)
            .map(|p| pct * p / rung.rust_gflop_per_s);
        Some(Bar {
            value: pct,
            predicted: pred,
            text: format!("{pct:.1}% ({:.0} GFLOP/s)", rung.rust_gflop_per_s),
        })
    }
}
