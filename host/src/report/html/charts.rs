//! The page's charts: compact horizontal bars, one row per kernel and one bar per
//! GPU, with the prediction marked on each bar where there is one. A few hundred
//! pixels tall each, inline SVG, readable on a laptop screen.

use std::fmt::Write as _;

use super::escape::{attr, text};

/// Okabe and Ito's colours, one per GPU (safe for colour-blind readers).
pub const GPU_COLOURS: [&str; 6] = ["#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00"];

/// One GPU's bar: the measured value, the predicted one, and the figure in words.
#[derive(Clone, Debug)]
pub struct Bar {
    pub value: f64,
    pub predicted: Option<f64>,
    pub text: String,
}

/// One kernel's row: a bar per GPU, `None` where that GPU did not run it.
#[derive(Clone, Debug)]
pub struct Row {
    pub label: String,
    /// The kernel's card on the page.
    pub anchor: String,
    pub bars: Vec<Option<Bar>>,
}

pub struct Chart {
    pub title: String,
    /// What the bars measure (`% of copy in the same run`).
    pub axis: String,
    pub rows: Vec<Row>,
    /// Set on the figure, for the precision filter.
    pub precision: Option<String>,
}

const WIDTH: f64 = 680.0;
const LABEL: f64 = 190.0;
const PLOT: f64 = 320.0;
const BAR: f64 = 9.0;
const ROW_GAP: f64 = 7.0;

/// The figure: its caption and the SVG; empty where no row has a bar.
pub fn figure(c: &Chart, gpus: &[String]) -> String {
    if c.rows.iter().all(|r| r.bars.iter().all(Option::is_none)) {
        return String::new();
    }
    let max = c
        .rows
        .iter()
        .flat_map(|r| r.bars.iter().flatten())
        .flat_map(|b| [b.value, b.predicted.unwrap_or(0.0)])
        .fold(0.0f64, f64::max);
    // Gridlines at round steps: 25 up to 100 (percentages), else a 1-2-5 step.
    let step = nice_step(max / 4.0);
    let top = (max / step).ceil().max(1.0) * step;
    let x = |v: f64| LABEL + PLOT * (v / top).clamp(0.0, 1.0);
    let per_row = BAR * gpus.len() as f64 + ROW_GAP;
    let head = 26.0;
    let height = head + per_row * c.rows.len() as f64 + 26.0;
    let mut svg = String::new();
    let _ = write!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height:.0}\" viewBox=\"0 0 {WIDTH} {height:.0}\" role=\"img\" aria-label=\"{}\" font-family=\"system-ui, sans-serif\" font-size=\"11\">",
        attr(&c.title)
    );
    // Gridlines and their values.
    let mut v = 0.0;
    while v <= top + 1e-9 {
        let _ = write!(
            svg,
            "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{1}\" y2=\"{2:.0}\" stroke=\"#e3e6ec\"/><text x=\"{0:.1}\" y=\"{3:.0}\" text-anchor=\"middle\" fill=\"#5b6474\">{4}</text>",
            x(v),
            head - 4.0,
            height - 22.0,
            height - 8.0,
            short(v)
        );
        v += step;
    }
    let _ = write!(
        svg,
        "<text x=\"{LABEL}\" y=\"14\" fill=\"#5b6474\">{}</text>",
        text(&c.axis)
    );
    for (i, r) in c.rows.iter().enumerate() {
        let y0 = head + per_row * i as f64;
        let _ = write!(
            svg,
            "<a href=\"#{}\"><text x=\"{:.0}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#1d2433\">{}</text></a>",
            attr(&r.anchor),
            LABEL - 8.0,
            y0 + BAR * gpus.len() as f64 / 2.0 + 4.0,
            text(&clip(&r.label, 30))
        );
        for (g, bar) in r.bars.iter().enumerate() {
            let Some(b) = bar else { continue };
            let y = y0 + BAR * g as f64;
            let colour = GPU_COLOURS[g % GPU_COLOURS.len()];
            let gpu = gpus.get(g).map_or("", String::as_str);
            let _ = write!(
                svg,
                "<rect x=\"{LABEL}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{colour}\"><title>{}: {}</title></rect>",
                x(b.value) - LABEL,
                BAR - 1.0,
                text(gpu),
                text(&b.text)
            );
            if let Some(p) = b.predicted {
                let _ = write!(
                    svg,
                    "<path d=\"M{0:.1} {1:.1}l3.5 4-3.5 4-3.5-4z\" fill=\"#1d2433\" stroke=\"#fff\" stroke-width=\"0.8\"><title>{2}: predicted {3}</title></path>",
                    x(p),
                    y - 0.5,
                    text(gpu),
                    short(p)
                );
            }
            let _ = write!(
                svg,
                "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"#1d2433\" font-size=\"9.5\">{}</text>",
                LABEL + PLOT + 8.0,
                y + BAR - 1.5,
                text(&clip(&b.text, 30))
            );
        }
    }
    svg.push_str("</svg>");
    let precision = c
        .precision
        .as_ref()
        .map(|p| format!(" data-precision=\"{}\"", attr(p)))
        .unwrap_or_default();
    format!(
        "<figure{precision}><figcaption>{}</figcaption>{svg}</figure>\n",
        text(&c.title)
    )
}

/// The legend every chart shares: a swatch per GPU, and the prediction's mark.
pub fn legend(gpus: &[String], any_prediction: bool) -> String {
    let mut out = String::from("<div class=\"legend\">");
    for (g, name) in gpus.iter().enumerate() {
        let _ = write!(
            out,
            "<span><svg width=\"14\" height=\"10\" aria-hidden=\"true\"><rect width=\"14\" height=\"10\" fill=\"{}\"/></svg> {}</span>",
            GPU_COLOURS[g % GPU_COLOURS.len()],
            text(name)
        );
    }
    if any_prediction {
        out.push_str(
            "<span><svg width=\"10\" height=\"10\" aria-hidden=\"true\"><path d=\"M5 1l4 4-4 4-4-4z\" fill=\"#1d2433\"/></svg> predicted from the source (the shipped profile of that GPU)</span>",
        );
    }
    out.push_str("</div>\n");
    out
}

/// A round step near `raw`: 1, 2, 2.5 or 5 times a power of ten.
fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * p)
}

/// `12500` -> `12.5k`, `87.5` -> `87.5`.
fn short(v: f64) -> String {
    if v >= 10_000.0 {
        format!("{}k", crate::report::sites::num(v / 1000.0))
    } else {
        crate::report::sites::num((v * 10.0).round() / 10.0)
    }
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut c: String = s.chars().take(n - 1).collect();
        c.push('…');
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_round_and_charts_without_bars_are_left_out() {
        assert_eq!(nice_step(23.0), 25.0);
        assert_eq!(nice_step(3400.0), 5000.0);
        assert_eq!(nice_step(0.0), 1.0);
        assert_eq!(short(12_500.0), "12.5k");
        let empty = Chart {
            title: "t".into(),
            axis: "a".into(),
            rows: vec![Row {
                label: "x".into(),
                anchor: "k-x".into(),
                bars: vec![None],
            }],
            precision: None,
        };
        assert_eq!(figure(&empty, &["GPU".into()]), "");
    }

    #[test]
    fn a_bar_is_drawn_to_scale_with_its_prediction() {
        let c = Chart {
            title: "copy <f32>".into(),
            axis: "% of copy".into(),
            rows: vec![Row {
                label: "copy/f32".into(),
                anchor: "k-copy-f32".into(),
                bars: vec![Some(Bar {
                    value: 50.0,
                    predicted: Some(100.0),
                    text: "50%".into(),
                })],
            }],
            precision: Some("fp32".into()),
        };
        let f = figure(&c, &["H100".into()]);
        assert!(f.contains("copy &lt;f32&gt;"), "{f}");
        assert!(f.contains("data-precision=\"fp32\""));
        // 50 of a 100 top: half the plot's width.
        assert!(f.contains(&format!("width=\"{:.1}\"", PLOT / 2.0)), "{f}");
        assert!(f.contains("predicted 100"));
    }
}
