//! index.html: the report as a page a learner reads in a browser. Every kernel's
//! Rust source with what the emulator recorded beside each line that touches memory
//! (requests, sectors per request, useful bytes, wavefronts and bank conflicts),
//! coloured by waste; what each GPU measured and what the model predicted; the CUDA
//! C++ twin and the PTX folded; each variant and rung as a side-by-side diff from
//! the one before it; compact charts of every GPU. One self-contained file: no
//! network, and everything but the filters reads without JavaScript.
//!
//! `coalesce explain --html` writes the same annotated view from an emulation alone.

mod annotate;
mod cards;
mod charts;
mod diff;
mod escape;
mod page;
mod source;
mod sweep;

use std::fmt::Write as _;

use cards::{Card, Figures};
use escape::{attr, text};

use super::Results;
use super::from_files::labels;
use crate::explain::ExplainReport;

/// The legend of the palette, with what each colour means in words.
fn palette_legend() -> String {
    "<p class=\"muted\">Beside each line, one chip per memory access the emulator recorded there: a request is one warp \
     executing it once (the copy engine's, <code>tma</code>: one row of a box), a sector 32 bytes; <code>req</code>: the requests recorded. Its colour says how much of what it moves is more than its bytes need \
     (global: sectors beyond the fewest that hold the bytes its lanes asked for; shared: passes through the banks beyond the \
     first); its words give the figures.</p>\
     <div class=\"legend\"><span class=\"swatch w0\">under 10% more</span><span class=\"swatch w1\">10 to 50%</span>\
     <span class=\"swatch w2\">50 to 75%</span><span class=\"swatch w3\">75% or more</span></div>\n"
        .into()
}

/// The search box and, where kernels of several precisions ran, its filter (shown
/// only where the script runs, which is what makes them work).
fn filters(precisions: &[String]) -> String {
    let mut out = String::from(
        "<div class=\"filters\"><label>Find a kernel <input id=\"find\" type=\"search\" placeholder=\"transpose, sgemm/tf32...\"></label>",
    );
    if precisions.len() > 1 {
        out.push_str("<span>Precision:</span><button type=\"button\" data-filter=\"all\" aria-pressed=\"true\">all</button>");
        for p in precisions {
            let _ = write!(
                out,
                "<button type=\"button\" data-filter=\"{}\" aria-pressed=\"false\">{}</button>",
                attr(p),
                text(&p.to_uppercase())
            );
        }
    }
    out.push_str("</div>\n");
    out
}

/// The contents: each experiment with a link to each of its kernels.
fn toc(cards: &[Card]) -> String {
    let mut out = String::from("<nav class=\"toc\">");
    let mut current: Option<&str> = None;
    for c in cards {
        if current != Some(c.experiment.as_str()) {
            if current.is_some() {
                out.push_str("</div>");
            }
            let _ = write!(
                out,
                "<div><b><a href=\"#{}\">{}</a></b>",
                escape::id("e", &c.experiment),
                text(&c.experiment)
            );
            current = Some(&c.experiment);
        }
        let _ = write!(out, "<a href=\"#{}\">{}</a> ", c.anchor(), text(&c.variant));
    }
    if current.is_some() {
        out.push_str("</div>");
    }
    out.push_str("</nav>\n");
    out
}

/// Every card, each experiment under its heading, each step of a ladder with its diff
/// from the rung it builds on ([`cards::step_before`]).
fn sections(cards: &[Card]) -> String {
    let mut out = String::new();
    for (i, c) in cards.iter().enumerate() {
        if i == 0 || cards[i - 1].experiment != c.experiment {
            let about = crate::experiments::named(&c.experiment).map_or("", |e| e.about);
            let _ = writeln!(
                out,
                "<section id=\"{}\"><h2>{}</h2><p class=\"about\">{}</p></section>",
                escape::id("e", &c.experiment),
                text(&c.experiment),
                text(about)
            );
        }
        out.push_str(&c.render(cards::step_before(cards, i)));
    }
    out
}

/// The page of a report: one results file or several (one per GPU). Saved results
/// render the same wherever they are rendered: no tools, so no SASS.
pub fn render(all: &[Results]) -> String {
    render_with(all, &|_| None)
}

/// The page of a report just run: each kernel's SASS for the first GPU's architecture
/// too, where ptxas and nvdisasm run here.
pub fn render_live(all: &[Results]) -> String {
    let sm = all
        .first()
        .map(|r| {
            format!(
                "sm_{}{}",
                r.run.device.compute_capability.0, r.run.device.compute_capability.1
            )
        })
        .unwrap_or_else(|| "sm_90".into());
    render_with(all, &|kernel| {
        crate::explain::product::mix::sass_of(kernel, &sm).ok()
    })
}

fn render_with(all: &[Results], sass: &dyn Fn(&str) -> Option<(String, String)>) -> String {
    let gpus = labels(all);
    let cards = cards::of_results(all, &gpus, sass);
    let mut body = String::from("<header class=\"top\">");
    let title = if all.len() > 1 {
        format!("coalesce report: {} GPUs", all.len())
    } else {
        "coalesce report".to_string()
    };
    let _ = writeln!(body, "<h1>{}</h1>", text(&title));
    for (r, name) in all.iter().zip(&gpus) {
        let _ = writeln!(
            body,
            "<p class=\"muted\">{}: measured {}, coalesce {}, {} kernels</p>",
            text(name),
            text(r.date()),
            text(&r.run.coalesce_version),
            r.run.rows.len()
        );
    }
    body.push_str(
        "<p>Each kernel's Rust source with what the CPU emulator recorded beside every line that touches memory, \
         what each GPU measured and what the model predicted from the source; each variant as a diff from the one \
         it builds on. The full tables are in report.md beside this page.</p>\n",
    );
    let precisions = cards::precisions(&cards);
    body.push_str(&palette_legend());
    body.push_str(&filters(&precisions));
    let anchors: Vec<String> = cards.iter().map(Card::anchor).collect();
    let sweep = sweep::section(all, &gpus, &anchors);
    if !sweep.is_empty() {
        body.push_str(
            "<p><a href=\"#sweep\">Predicted beside measured at each size</a> the results hold.</p>\n",
        );
    }
    body.push_str(&toc(&cards));
    body.push_str("</header>\n<main>\n");
    let charts = charts_of(all, &gpus, &cards);
    if !charts.is_empty() {
        body.push_str("<section id=\"charts\"><h2>Every kernel on every GPU</h2>\n");
        body.push_str(&charts);
        body.push_str("</section>\n");
    }
    body.push_str(&sweep);
    body.push_str(&sections(&cards));
    body.push_str("</main>\n");
    page::page(&title, &body)
}

/// The charts: one per experiment, and the matmul ladder one per precision.
fn charts_of(all: &[Results], gpus: &[String], cards: &[Card]) -> String {
    let figures = Figures { all };
    let mut out = String::new();
    let mut any_prediction = false;
    let mut figs = String::new();
    for chart in figures.charts(cards) {
        any_prediction |= chart
            .rows
            .iter()
            .flat_map(|r| r.bars.iter().flatten())
            .any(|b| b.predicted.is_some());
        figs.push_str(&charts::figure(&chart, gpus));
    }
    if figs.is_empty() {
        return out;
    }
    out.push_str(&charts::legend(gpus, any_prediction));
    let _ = writeln!(out, "<div class=\"charts\">{figs}</div>");
    out
}

/// The page of `coalesce explain --html`: the same annotated view of each kernel
/// explained, from the emulation alone, with each kernel's SASS for `sm` (`sm_90`)
/// where ptxas and nvdisasm run.
pub fn render_explain(report: &ExplainReport, sm: &str) -> String {
    let no_sass = std::cell::RefCell::new(None);
    let cards = cards::of_explain(report, |kernel| {
        crate::explain::product::mix::sass_of(kernel, sm)
            .map_err(|why| no_sass.borrow_mut().get_or_insert(why).clone())
            .ok()
    });
    let mut body = String::from("<header class=\"top\"><h1>coalesce explain</h1>\n");
    let mut lines = vec![
        format!("model {}: {}", report.model.name(), report.model_about),
        format!("sizes: {}", report.sizes),
        report.calibration.clone(),
    ];
    if let Some(why) = no_sass.into_inner() {
        lines.push(format!("SASS: not shown ({why})"));
    }
    for line in lines {
        let _ = writeln!(body, "<p class=\"muted\">{}</p>", text(&line));
    }
    body.push_str(&palette_legend());
    body.push_str(&filters(&cards::precisions(&cards)));
    body.push_str(&toc(&cards));
    body.push_str("</header>\n<main>\n");
    body.push_str(&sections(&cards));
    for line in &report.skipped {
        let _ = writeln!(body, "<p class=\"muted\">{}</p>", text(line));
    }
    body.push_str("</main>\n");
    page::page("coalesce explain", &body)
}
