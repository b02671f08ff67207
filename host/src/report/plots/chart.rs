//! The two chart shapes the report draws, with plotters' SVG backend: a line chart
//! (measured points beside model curves) and a horizontal bar chart (long labels fit
//! on the left). Text is plain SVG `<text>` in the viewer's sans-serif font, so
//! drawing needs no system font and no font files.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::error::{Error, Result};

const FONT: &str = "sans-serif";
const WIDTH: u32 = 1100;

pub const BLUE: RGBColor = RGBColor(31, 119, 180);
pub const ORANGE: RGBColor = RGBColor(230, 115, 0);
pub const GREEN: RGBColor = RGBColor(34, 139, 34);
pub const RED: RGBColor = RGBColor(200, 30, 30);
pub const GREY: RGBColor = RGBColor(110, 110, 110);

fn plot_error<E: std::fmt::Display>(e: E) -> Error {
    Error::Plot(e.to_string())
}

/// How the x axis maps values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    Linear,
    /// Drawn at log2(x) and labelled 1, 2, 4, ...
    Log2,
}

/// One curve: measured points are drawn as dots joined by a line, models as dashed lines.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub color: RGBColor,
    pub measured: bool,
    /// Line width in pixels: a wider model drawn first stays visible where a
    /// narrower one drawn over it coincides.
    pub width: u32,
    /// Write each point's value beside it.
    pub values: bool,
}

pub struct LineChart<'a> {
    pub title: &'a str,
    pub device: &'a str,
    pub x_desc: &'a str,
    pub y_desc: &'a str,
    pub x_scale: Scale,
    pub series: Vec<Series>,
}

/// One horizontal bar.
pub struct Bar {
    /// Left of the bar.
    pub label: String,
    pub value: f64,
    /// Right of the bar's end.
    pub text: String,
    pub color: RGBColor,
    /// Extra space above this bar: the start of a new group.
    pub gap_before: bool,
}

pub struct BarChart<'a> {
    pub title: &'a str,
    pub device: &'a str,
    /// Description of the value axis (with its unit).
    pub x_desc: &'a str,
    /// Where bars start: 0, or e.g. 1.0 for ratios, whose bars then go left or right.
    pub origin: f64,
    pub bars: Vec<Bar>,
    /// Colour key, drawn under the title.
    pub legend: Vec<(String, RGBColor)>,
    /// A dashed vertical line at this value, with its label.
    pub reference: Option<(f64, String)>,
    /// Pixels per bar: [`ROW_PX`], or less for a chart that must stay short.
    pub row_px: u32,
}

/// The usual height of one bar's row, in pixels.
pub const ROW_PX: u32 = 42;

/// Title and device name at the top of the canvas; returns the area below them.
fn header<'a>(
    root: &DrawingArea<SVGBackend<'a>, Shift>,
    title: &str,
    device: &str,
) -> Result<DrawingArea<SVGBackend<'a>, Shift>> {
    let (w, _) = root.dim_in_pixel();
    let centre = Pos::new(HPos::Center, VPos::Top);
    let title_style = TextStyle::from((FONT, 26).into_font().style(FontStyle::Bold)).pos(centre);
    root.draw(&Text::new(title.to_string(), (w as i32 / 2, 12), title_style))
        .map_err(plot_error)?;
    let device_style = TextStyle::from((FONT, 18).into_font()).color(&GREY).pos(centre);
    root.draw(&Text::new(device.to_string(), (w as i32 / 2, 44), device_style))
        .map_err(plot_error)?;
    Ok(root.split_vertically(72).1)
}

fn x_of(scale: Scale, x: f64) -> f64 {
    match scale {
        Scale::Linear => x,
        Scale::Log2 => x.log2(),
    }
}

/// Axis range covering `values` with some room on both sides.
fn padded(values: impl Iterator<Item = f64>, pad: f64) -> (f64, f64) {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if lo.is_finite() && hi.is_finite() {
        let room = ((hi - lo) * pad).max(0.5);
        (lo - room, hi + room)
    } else {
        (0.0, 1.0)
    }
}

/// Draws a line chart and returns the SVG document.
pub fn line_chart(c: &LineChart) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 640)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        let area = header(&root, c.title, c.device)?;
        let scale = c.x_scale;
        let xs = c
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| x_of(scale, p.0)));
        let (x0, x1) = padded(xs, 0.04);
        let y_max = c
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .fold(100.0f64, f64::max)
            * 1.12;
        let mut chart = ChartBuilder::on(&area)
            .margin_left(20)
            .margin_right(40)
            .margin_bottom(16)
            .x_label_area_size(60)
            .y_label_area_size(80)
            .build_cartesian_2d(x0..x1, 0.0..y_max)
            .map_err(plot_error)?;
        let label_x = |x: &f64| match scale {
            Scale::Linear => format!("{x}"),
            // Only whole powers of two get a label on the log axis.
            Scale::Log2 if (x - x.round()).abs() < 1e-6 => format!("{}", 2f64.powf(x.round())),
            Scale::Log2 => String::new(),
        };
        let ticks = match scale {
            Scale::Linear => 12,
            Scale::Log2 => (x1 - x0).floor() as usize + 1,
        };
        chart
            .configure_mesh()
            .x_desc(c.x_desc)
            .y_desc(c.y_desc)
            .x_labels(ticks)
            .y_labels(12)
            .x_label_formatter(&label_x)
            .y_label_formatter(&|y| format!("{y:.0}"))
            .axis_desc_style((FONT, 20))
            .label_style((FONT, 17))
            .light_line_style(WHITE.mix(0.0))
            .bold_line_style(BLACK.mix(0.12))
            .draw()
            .map_err(plot_error)?;
        for s in &c.series {
            let pts: Vec<(f64, f64)> = s.points.iter().map(|&(x, y)| (x_of(scale, x), y)).collect();
            let color = s.color;
            let anno = if s.measured {
                chart
                    .draw_series(LineSeries::new(pts.clone(), color.stroke_width(s.width)))
                    .map_err(plot_error)?
            } else {
                chart
                    .draw_series(DashedLineSeries::new(
                        pts.clone(),
                        8,
                        6,
                        color.stroke_width(s.width),
                    ))
                    .map_err(plot_error)?
            };
            anno.label(s.name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(3)));
            if s.measured {
                chart
                    .draw_series(pts.iter().map(|&p| Circle::new(p, 5, color.filled())))
                    .map_err(plot_error)?;
            }
            if s.values {
                let style = TextStyle::from((FONT, 15).into_font())
                    .color(&color)
                    .pos(Pos::new(HPos::Center, VPos::Bottom));
                chart
                    .draw_series(pts.iter().map(|&(x, y)| {
                        EmptyElement::at((x, y)) + Text::new(format!("{y:.1}"), (0, -9), style.clone())
                    }))
                    .map_err(plot_error)?;
            }
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .label_font((FONT, 16))
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK.mix(0.4))
            .draw()
            .map_err(plot_error)?;
        root.present().map_err(plot_error)?;
    }
    Ok(svg)
}

/// Draws a horizontal bar chart (first bar at the top) and returns the SVG document.
pub fn bar_chart(c: &BarChart) -> Result<String> {
    const ROW: f64 = 1.0;
    const GAP: f64 = 0.6;
    // Space above the first bar for the reference line's label.
    const TOP: f64 = -0.6;
    // Rows from the top: each bar's slot centre, in data units.
    let mut centres = Vec::with_capacity(c.bars.len());
    let mut y = 0.0;
    for (i, b) in c.bars.iter().enumerate() {
        if b.gap_before && i > 0 {
            y += GAP;
        }
        centres.push(y + ROW / 2.0);
        y += ROW;
    }
    let rows = y.max(1.0);
    let legend_h = if c.legend.is_empty() { 0 } else { 34 };
    let height = 72 + legend_h + 110 + ((rows - TOP) * f64::from(c.row_px)) as u32;
    let label_chars = c.bars.iter().map(|b| b.label.chars().count()).max().unwrap_or(0);
    let label_w = 30 + 10 * label_chars as u32;
    // The chart's margins (10 + 40) and the label area leave this much for bars.
    let plot_w = f64::from(WIDTH.saturating_sub(50 + label_w).max(100));
    let origin = c.origin;
    let (x_min, x_max, inside) = bar_layout(&c.bars, origin, c.reference.as_ref().map(|r| r.0), plot_w);
    // Enough decimals on the value axis for its ten ticks to differ.
    let decimals = (-((x_max - x_min) / 10.0).log10().floor()).max(0.0) as usize;

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        let mut area = header(&root, c.title, c.device)?;
        if !c.legend.is_empty() {
            let (key, rest) = area.split_vertically(legend_h);
            let mut x = label_w as i32 + 20;
            for (name, color) in &c.legend {
                key.draw(&Rectangle::new([(x, 6), (x + 22, 24)], color.filled()))
                    .map_err(plot_error)?;
                let style = TextStyle::from((FONT, 18).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
                key.draw(&Text::new(name.clone(), (x + 30, 15), style))
                    .map_err(plot_error)?;
                x += 60 + 11 * name.chars().count() as i32;
            }
            area = rest;
        }
        let mut chart = ChartBuilder::on(&area)
            .margin_left(10)
            .margin_right(40)
            .margin_bottom(16)
            .x_label_area_size(60)
            .y_label_area_size(label_w)
            .build_cartesian_2d(x_min..x_max, rows..TOP)
            .map_err(plot_error)?;
        chart
            .configure_mesh()
            .x_desc(c.x_desc)
            .x_labels(10)
            .y_labels(0)
            .disable_y_mesh()
            .x_label_formatter(&|x| format!("{x:.decimals$}"))
            .axis_desc_style((FONT, 20))
            .label_style((FONT, 17))
            .light_line_style(WHITE.mix(0.0))
            .bold_line_style(BLACK.mix(0.12))
            .draw()
            .map_err(plot_error)?;
        if let Some((at, name)) = &c.reference {
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(*at, TOP), (*at, rows)],
                    6,
                    5,
                    GREY.stroke_width(2),
                ))
                .map_err(plot_error)?;
            let style = TextStyle::from((FONT, 16).into_font())
                .color(&GREY)
                .pos(Pos::new(HPos::Right, VPos::Top));
            chart
                .draw_series(std::iter::once(
                    EmptyElement::at((*at, TOP)) + Text::new(name.clone(), (-6, 4), style),
                ))
                .map_err(plot_error)?;
        }
        if origin > x_min {
            // Bars leave a line inside the chart: draw it.
            chart
                .draw_series(LineSeries::new(
                    vec![(origin, TOP), (origin, rows)],
                    BLACK.stroke_width(1),
                ))
                .map_err(plot_error)?;
        }
        let half = 0.36 * ROW;
        chart
            .draw_series(c.bars.iter().zip(&centres).map(|(b, &yc)| {
                let (left, right) = (origin.min(b.value), origin.max(b.value));
                Rectangle::new([(left, yc - half), (right, yc + half)], b.color.filled())
            }))
            .map_err(plot_error)?;
        // Each value inside its bar's end where it fits (white), else just beyond it,
        // on the side the bar grows towards.
        let text = |anchor, color: &'static RGBColor| {
            TextStyle::from((FONT, 17).into_font())
                .color(color)
                .pos(Pos::new(anchor, VPos::Center))
        };
        chart
            .draw_series(
                c.bars
                    .iter()
                    .zip(&centres)
                    .zip(&inside)
                    .map(|((b, &yc), &inside)| {
                        let right = b.value >= origin;
                        let (dx, style) = match (inside, right) {
                            (true, true) => (-8, text(HPos::Right, &WHITE)),
                            (true, false) => (8, text(HPos::Left, &WHITE)),
                            (false, true) => (8, text(HPos::Left, &BLACK)),
                            (false, false) => (-8, text(HPos::Right, &BLACK)),
                        };
                        EmptyElement::at((b.value, yc)) + Text::new(b.text.clone(), (dx, 0), style)
                    }),
            )
            .map_err(plot_error)?;
        // Row labels left of the axis, placed through the chart's own coordinate map.
        let label_style = TextStyle::from((FONT, 18).into_font()).pos(Pos::new(HPos::Right, VPos::Center));
        for (b, &yc) in c.bars.iter().zip(&centres) {
            let (px, py) = chart.plotting_area().map_coordinate(&(x_min, yc));
            root.draw(&Text::new(b.label.clone(), (px - 10, py), label_style.clone()))
                .map_err(plot_error)?;
        }
        root.present().map_err(plot_error)?;
    }
    Ok(svg)
}

/// Rough width of `text` at the value font (13.7 px sans-serif), in pixels.
fn text_px(text: &str) -> f64 {
    8.5 * text.chars().count() as f64 + 16.0
}

/// The value axis's ends and, per bar, whether its text goes inside the bar: inside
/// where the bar is wide enough, otherwise beyond its end, with room made for it.
/// The axis covers the origin, the bars and the reference, padded on each side
/// that a bar or the reference reaches past the origin.
fn bar_layout(bars: &[Bar], origin: f64, reference: Option<f64>, plot_w: f64) -> (f64, f64, Vec<bool>) {
    let values = || bars.iter().map(|b| b.value).chain(reference).chain([origin]);
    let lo = values().fold(f64::INFINITY, f64::min);
    let hi = values().fold(f64::NEG_INFINITY, f64::max);
    if hi <= lo {
        return (origin, origin + 1.0, vec![false; bars.len()]);
    }
    let pad = 0.06 * (hi - lo);
    let mut lo = if lo < origin { lo - pad } else { lo };
    let mut hi = if hi > origin { hi + pad } else { hi };
    let mut inside = vec![false; bars.len()];
    // Widening the axis can push a text out of its bar, which may widen it again.
    for _ in 0..4 {
        let (mut need_lo, mut need_hi) = (lo, hi);
        for (b, inside) in bars.iter().zip(inside.iter_mut()) {
            let w = text_px(&b.text);
            *inside = (b.value - origin).abs() / (hi - lo) * plot_w >= w;
            if !*inside && w < plot_w {
                // The end's distance from the far edge, stretched so `w` fits beyond it.
                let grow = plot_w / (plot_w - w);
                if b.value >= origin {
                    need_hi = need_hi.max(lo + (b.value - lo) * grow);
                } else {
                    need_lo = need_lo.min(hi - (hi - b.value) * grow);
                }
            }
        }
        if need_lo >= lo && need_hi <= hi {
            break;
        }
        (lo, hi) = (need_lo, need_hi);
    }
    (lo, hi, inside)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(value: f64, text: &str) -> Bar {
        Bar {
            label: String::new(),
            value,
            text: text.into(),
            color: BLUE,
            gap_before: false,
        }
    }

    #[test]
    fn long_bars_hold_their_text_and_short_ones_get_room() {
        let bars = [bar(95.0, "95.0%"), bar(3.0, "3.0% (90 GB/s)")];
        let (x_min, x_max, inside) = bar_layout(&bars, 0.0, Some(100.0), 800.0);
        assert_eq!(inside, [true, false]);
        assert_eq!(x_min, 0.0);
        assert!((x_max - 106.0).abs() < 1e-9, "{x_max}");
        // A long text beyond the longest bar widens the axis until it fits.
        let bars = [bar(100.0, &"x".repeat(90))];
        let (_, x_max, inside) = bar_layout(&bars, 0.0, None, 800.0);
        assert_eq!(inside, [false]);
        assert!(100.0 / x_max * 800.0 + text_px(&bars[0].text) <= 800.0 + 1e-6);
    }

    #[test]
    fn bars_from_an_origin_go_both_ways_with_room_for_their_text() {
        let bars = [bar(0.8, "0.800x"), bar(1.01, "1.010x")];
        let (lo, hi, inside) = bar_layout(&bars, 1.0, Some(0.98), 800.0);
        assert!(lo < 0.8 && hi > 1.01, "{lo}..{hi}");
        // The short bar's text sits right of its end, inside the axis.
        assert_eq!(inside, [true, false]);
        assert!((1.01 - lo) / (hi - lo) * 800.0 + text_px("1.010x") <= 800.0 + 1e-6);
        // Every bar at or above the origin: the reference below it is still covered.
        let (lo, _, _) = bar_layout(&[bar(1.01, "")], 1.0, Some(0.98), 800.0);
        assert!(lo < 0.98, "{lo}");
    }

    #[test]
    fn padding_covers_the_values() {
        let (lo, hi) = padded([0.0, 6.0].into_iter(), 0.05);
        assert!(lo < 0.0 && hi > 6.0);
        assert_eq!(padded(std::iter::empty(), 0.05), (0.0, 1.0));
    }

    #[test]
    fn a_line_chart_holds_its_text_and_points() {
        let svg = line_chart(&LineChart {
            title: "T<itle>",
            device: "Dev",
            x_desc: "x (units)",
            y_desc: "y (units)",
            x_scale: Scale::Log2,
            series: vec![Series {
                name: "measured".into(),
                points: vec![(1.0, 80.0), (2.0, 60.0), (4.0, 40.0)],
                color: BLUE,
                measured: true,
                width: 2,
                values: true,
            }],
        })
        .unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..100]);
        // plotters escapes text for XML.
        assert!(svg.contains("T&lt;itle&gt;") && svg.contains("Dev"));
        assert_eq!(svg.matches("<circle").count(), 3);
        assert!(svg.contains("\n60.0\n") && svg.contains("\nx (units)\n"));
    }
}
