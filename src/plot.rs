//! SVG line plots (plotters, SVG backend only: text is written as SVG
//! `<text>` elements, so no font files are read and no system library is
//! needed). Shared by `bmrm demo` and the benchmark programs; part of the
//! library only with the `cli` feature (the C library does not plot).

use std::path::Path;

use plotters::prelude::*;

/// One named line.
pub struct Series {
    /// The legend's text.
    pub name: String,
    /// `(x, y)` points, in drawing order. Points with a non-finite or (on a
    /// log axis) non-positive coordinate are skipped.
    pub points: Vec<(f64, f64)>,
}

/// One chart of a figure.
pub struct Panel {
    /// The chart's title.
    pub title: String,
    /// The x axis's label.
    pub x_label: String,
    /// The y axis's label.
    pub y_label: String,
    /// A logarithmic x axis.
    pub log_x: bool,
    /// A logarithmic y axis.
    pub log_y: bool,
    /// The lines, each in its own colour.
    pub series: Vec<Series>,
}

/// Distinct colours (Okabe-Ito, readable by colour-blind readers).
const COLOURS: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
    RGBColor(240, 228, 66),
];

fn usable(p: &(f64, f64), log_x: bool, log_y: bool) -> bool {
    p.0.is_finite() && p.1.is_finite() && (!log_x || p.0 > 0.0) && (!log_y || p.1 > 0.0)
}

/// The range of `values` padded for drawing (multiplicatively on a log axis).
fn range(values: impl Iterator<Item = f64>, log: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return if log { (0.1, 10.0) } else { (0.0, 1.0) };
    }
    if log {
        if hi <= lo * 1.0001 {
            (lo / 2.0, hi * 2.0)
        } else {
            (lo / 1.3, hi * 1.3)
        }
    } else if hi <= lo {
        (lo - 1.0, hi + 1.0)
    } else {
        let pad = 0.03 * (hi - lo);
        (lo - pad, hi + pad)
    }
}

/// Writes the panels side by side, `width` pixels each, as one SVG file.
pub fn write_svg(
    path: &Path,
    title: &str,
    panels: &[Panel],
    width: u32,
    height: u32,
) -> Result<(), String> {
    let n = panels.len().max(1) as u32;
    let root = SVGBackend::new(path, (width * n, height)).into_drawing_area();
    draw(&root, title, panels).map_err(|e| format!("plot {}: {e}", path.display()))?;
    root.present()
        .map_err(|e| format!("plot {}: {e}", path.display()))
}

type DrawResult<T> = Result<T, Box<dyn std::error::Error>>;

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    panels: &[Panel],
) -> DrawResult<()>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    let root = root.titled(title, ("sans-serif", 22))?;
    let areas = root.split_evenly((1, panels.len().max(1)));
    for (area, panel) in areas.iter().zip(panels) {
        draw_panel(area, panel)?;
    }
    Ok(())
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    p: &Panel,
) -> DrawResult<()>
where
    DB::ErrorType: 'static,
{
    let pts = || {
        p.series
            .iter()
            .flat_map(|s| s.points.iter())
            .filter(|q| usable(q, p.log_x, p.log_y))
    };
    let (x0, x1) = range(pts().map(|q| q.0), p.log_x);
    let (y0, y1) = range(pts().map(|q| q.1), p.log_y);
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(&p.title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(42)
        .y_label_area_size(70);
    // The four combinations of linear and log axes are four chart types.
    macro_rules! body {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_desc(p.x_label.as_str())
                .y_desc(p.y_label.as_str())
                .x_label_formatter(&|v| short(*v))
                .y_label_formatter(&|v| short(*v))
                .light_line_style(RGBColor(235, 235, 235))
                .draw()?;
            for (k, s) in p.series.iter().enumerate() {
                let colour = COLOURS[k % COLOURS.len()];
                let points: Vec<(f64, f64)> = s
                    .points
                    .iter()
                    .copied()
                    .filter(|q| usable(q, p.log_x, p.log_y))
                    .collect();
                chart
                    .draw_series(LineSeries::new(points, colour.stroke_width(2)))?
                    .label(s.name.as_str())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
                    });
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .draw()?;
        }};
    }
    match (p.log_x, p.log_y) {
        (false, false) => body!(builder.build_cartesian_2d(x0..x1, y0..y1)?),
        (false, true) => body!(builder.build_cartesian_2d(x0..x1, (y0..y1).log_scale())?),
        (true, false) => body!(builder.build_cartesian_2d((x0..x1).log_scale(), y0..y1)?),
        (true, true) => {
            body!(builder.build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())?)
        }
    }
    Ok(())
}

/// A short tick label: `1e-3`, `0.25`, `1000`, `2e5`.
fn short(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if (1e-2..1e5).contains(&a) {
        let s = format!("{v:.3}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        s.to_string()
    } else {
        let s = format!("{v:.1e}");
        s.replace(".0e", "e")
    }
}
