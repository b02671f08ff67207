//! The page's sweep section: each GPU's kernels at every size its results hold,
//! measured beside predicted ([`crate::report::sweep`]), with a summary per size and,
//! per experiment, a small plot of each kernel's error at each size against the 10%
//! band.

use std::fmt::Write as _;

use super::charts::GPU_COLOURS;
use super::escape::{attr, id, text};
use crate::report::Results;
use crate::report::sweep::{
    Kernel, Point, SUMMARY_HEADER, Sweep, WITHIN, measured, signed_pct, size_of, summary_cells,
};

/// The section, or nothing where no GPU's results hold more than one size; a kernel
/// links to its card where the page has one (`anchors`).
pub fn section(all: &[Results], gpus: &[String], anchors: &[String]) -> String {
    let swept: Vec<(&String, Sweep)> = all
        .iter()
        .zip(gpus)
        .filter_map(|(r, g)| Sweep::of(r).map(|s| (g, s)))
        .collect();
    if swept.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<section id=\"sweep\"><h2>Predicted beside measured at each size</h2>\n\
         <p>Each kernel measured at each size the results hold (one run per size) beside what the model \
         predicts at that size from the source and the GPU's profile: GB/s for bandwidth kernels, GFLOP/s for \
         matrix products. The error is (predicted - measured) / measured.</p>\n\
         <div class=\"legend\"><span class=\"swatch w0\">within 10%</span><span class=\"swatch w3\">further than 10%</span></div>\n",
    );
    for (gpu, sweep) in &swept {
        if swept.len() > 1 {
            let _ = writeln!(out, "<h3>{}</h3>", text(gpu));
        }
        out.push_str(&summary(sweep));
        for (experiment, kernels) in sweep.experiments() {
            out.push_str(&experiment_table(gpu, experiment, &kernels, anchors));
        }
    }
    out.push_str("</section>\n");
    out
}

/// The summary: each size's count within 10% and mean error, then all sizes.
fn summary(sweep: &Sweep) -> String {
    let overall = sweep.overall();
    if overall.errors.is_empty() {
        return "<p class=\"muted\">No predictions: render the report with <code>--profile</code> (this GPU's \
                profile) to set them beside the measurements.</p>\n"
            .into();
    }
    let mut out = String::from("<table class=\"figs sweep-summary\"><tr>");
    for h in SUMMARY_HEADER {
        let _ = write!(out, "<th>{}</th>", text(h));
    }
    out.push_str("</tr>");
    for s in sweep.by_size().iter().chain([&overall]) {
        out.push_str("<tr>");
        for c in summary_cells(s) {
            let _ = write!(out, "<td>{}</td>", text(&c));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>\n");
    out
}

/// One experiment: a row per kernel, a column per size, each cell measured /
/// predicted and the error, coloured by whether it is within 10%.
fn experiment_table(gpu: &str, experiment: &str, kernels: &[&Kernel], anchors: &[String]) -> String {
    let sizes = Sweep::sizes(kernels);
    let unit = kernels[0].1[0].unit();
    let mut out = format!(
        "<h3 id=\"{}\">{}: {unit} measured / predicted</h3>\n",
        attr(&id("sweep", &format!("{gpu}-{experiment}"))),
        text(experiment)
    );
    out.push_str(&plot(experiment, kernels, &sizes));
    out.push_str("<div class=\"scroll\"><table class=\"figs sweep\"><tr><th>variant</th>");
    for s in &sizes {
        let _ = write!(out, "<th>{}</th>", text(s));
    }
    out.push_str("</tr>\n");
    for ((_, variant), points) in kernels.iter().copied() {
        let kernel = format!("{experiment}/{variant}");
        let anchor = id("k", &kernel);
        let name = if anchors.contains(&anchor) {
            format!("<a href=\"#{anchor}\">{}</a>", text(variant))
        } else {
            text(variant)
        };
        let _ = write!(out, "<tr data-sweep-kernel=\"{}\"><td>{name}</td>", attr(&kernel));
        for s in &sizes {
            match points.iter().find(|p| size_of(p.row) == *s) {
                None => out.push_str("<td class=\"muted\">not run</td>"),
                Some(p) => out.push_str(&cell(p, unit)),
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table></div>\n");
    out
}

fn cell(p: &Point, unit: &str) -> String {
    if !p.row.validated {
        return "<td class=\"bad\">not validated</td>".into();
    }
    let Some((predicted, measured)) = p.rates() else {
        return format!("<td>{:.0} / -</td>", measured(p.row));
    };
    let e = (predicted - measured) / measured;
    let class = if e.abs() <= WITHIN { "near" } else { "far" };
    format!(
        "<td class=\"{class}\" data-error=\"{e:.4}\" title=\"measured {measured:.0} {unit}, predicted {predicted:.0} {unit}\">\
         {measured:.0} / {predicted:.0} <b>{}</b></td>",
        text(&signed_pct(e))
    )
}

const W: f64 = 680.0;
const H: f64 = 150.0;
const LEFT: f64 = 48.0;
const RIGHT: f64 = 12.0;
const TOP: f64 = 10.0;
const BOTTOM: f64 = 30.0;

/// Each kernel's error at each size, a dot per kernel and size on a column per size,
/// with the band of 10% shaded: where the model holds shows at a glance.
fn plot(experiment: &str, kernels: &[&Kernel], sizes: &[String]) -> String {
    let errors: Vec<(usize, usize, &str, f64)> = kernels
        .iter()
        .enumerate()
        .flat_map(|(k, ((_, variant), points))| {
            points.iter().filter_map(move |p| {
                let column = sizes.iter().position(|s| *s == size_of(p.row))?;
                Some((k, column, *variant, p.error()?))
            })
        })
        .collect();
    if errors.is_empty() {
        return String::new();
    }
    // The scale: at least the band and a margin, symmetric about zero.
    let reach = errors.iter().map(|e| e.3.abs()).fold(0.2f64, f64::max).min(1.0);
    let reach = (reach * 10.0).ceil() / 10.0;
    let plot_h = H - TOP - BOTTOM;
    let y = |e: f64| TOP + plot_h * (1.0 - (e.clamp(-reach, reach) + reach) / (2.0 * reach));
    let col_w = (W - LEFT - RIGHT) / sizes.len() as f64;
    let x = |c: usize| LEFT + col_w * (c as f64 + 0.5);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" role=\"img\" \
         aria-label=\"{}\" font-family=\"system-ui, sans-serif\" font-size=\"11\">",
        attr(&format!("{experiment}: each kernel's error at each size"))
    );
    let _ = write!(
        svg,
        "<rect x=\"{LEFT}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#d4e8f7\"><title>within 10%</title></rect>",
        y(WITHIN),
        W - LEFT - RIGHT,
        y(-WITHIN) - y(WITHIN)
    );
    for e in [-reach, -WITHIN, 0.0, WITHIN, reach] {
        let (right, at, label_x) = (W - RIGHT, y(e), LEFT - 4.0);
        let stroke = if e == 0.0 { "#8a92a1" } else { "#e3e6ec" };
        let _ = write!(
            svg,
            "<line x1=\"{LEFT}\" x2=\"{right:.1}\" y1=\"{at:.1}\" y2=\"{at:.1}\" stroke=\"{stroke}\"/>\
             <text x=\"{label_x:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#5b6474\">{:+.0}%</text>",
            at + 4.0,
            100.0 * e
        );
    }
    // Many sizes' names alternate between two lines, so that neighbours do not meet.
    let stagger = sizes.len() > 6;
    for (c, s) in sizes.iter().enumerate() {
        let line = if stagger && c % 2 == 1 { H - 4.0 } else { H - 16.0 };
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{line:.1}\" text-anchor=\"middle\" fill=\"#5b6474\" font-size=\"{}\">{}</text>",
            x(c),
            if stagger { 9.0 } else { 10.0 },
            text(s)
        );
    }
    // Kernels spread a little across their column so that equal errors stay apart.
    let spread = (col_w * 0.6) / kernels.len().max(1) as f64;
    for (k, c, variant, e) in errors {
        let cx = x(c) - col_w * 0.3 + spread * (k as f64 + 0.5);
        let colour = if e.abs() <= WITHIN {
            GPU_COLOURS[0]
        } else {
            GPU_COLOURS[5]
        };
        let _ = write!(
            svg,
            "<circle cx=\"{cx:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{colour}\"><title>{}: {} at {}</title></circle>",
            y(e),
            text(variant),
            text(&signed_pct(e)),
            text(&sizes[c])
        );
    }
    svg.push_str("</svg>");
    format!("<figure class=\"sweep-plot\">{svg}</figure>\n")
}
