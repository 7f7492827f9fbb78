//! The testbed's plots (PNG and SVG), one fixed colour per transport.
//!
//! Text needs a TrueType font read at run time: `$STRIDE_FONT`, else DejaVu Sans or Liberation
//! Sans from the usual paths (`scripts/setup.sh` installs `fonts-dejavu-core`).

use anyhow::anyhow;
use plotters::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const FONT_PATHS: [&str; 4] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
];

fn ensure_font() -> anyhow::Result<()> {
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| {
        let cands: Vec<PathBuf> = std::env::var_os("STRIDE_FONT")
            .map(PathBuf::from)
            .into_iter()
            .chain(FONT_PATHS.iter().map(PathBuf::from))
            .collect();
        for p in &cands {
            if let Ok(bytes) = std::fs::read(p) {
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                    return Ok(());
                }
            }
        }
        Err("no TrueType font for the plots: set STRIDE_FONT or install fonts-dejavu-core".into())
    })
    .clone()
    .map_err(|e| anyhow!("{e}"))
}

/// The fixed colour of a transport (or series) name.
pub fn color_of(name: &str) -> RGBColor {
    let base = name.split_whitespace().next().unwrap_or(name);
    let base = base.split('/').next().unwrap_or(base);
    match base {
        "stride" | "STRIDE" => RGBColor(31, 119, 180),
        "cubic" => RGBColor(255, 127, 14),
        "bbr" => RGBColor(44, 160, 44),
        "reno" => RGBColor(214, 39, 40),
        "queue" => RGBColor(127, 127, 127),
        _ => RGBColor(148, 103, 189),
    }
}

/// One series: name (its colour follows [`color_of`]) and a y value per x position.
pub struct Series {
    /// Legend name.
    pub name: String,
    /// Values per x position (NaN = missing).
    pub ys: Vec<f64>,
}

/// A line chart with points over categorical (labelled) or numeric x positions, written as
/// `stem.png` and `stem.svg`. `ref_line` draws a dashed horizontal line (e.g. ratio 1).
pub fn line_chart(
    stem: &Path,
    title: &str,
    xlabel: &str,
    ylabel: &str,
    xs: &[String],
    series: &[Series],
    ref_line: Option<f64>,
) -> anyhow::Result<()> {
    ensure_font()?;
    let png = stem.with_extension("png");
    let svg = stem.with_extension("svg");
    {
        let root = BitMapBackend::new(&png, (900, 540)).into_drawing_area();
        draw(root, title, xlabel, ylabel, xs, series, ref_line)?;
    }
    {
        let root = SVGBackend::new(&svg, (900, 540)).into_drawing_area();
        draw(root, title, xlabel, ylabel, xs, series, ref_line)?;
    }
    Ok(())
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    xlabel: &str,
    ylabel: &str,
    xs: &[String],
    series: &[Series],
    ref_line: Option<f64>,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
    let n = xs.len().max(1);
    let vals = series
        .iter()
        .flat_map(|s| s.ys.iter().copied())
        .chain(ref_line)
        .filter(|v| v.is_finite());
    let (mut lo, mut hi) = vals.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
        (a.min(v), b.max(v))
    });
    if !lo.is_finite() {
        lo = 0.0;
        hi = 1.0;
    }
    let pad = ((hi - lo) * 0.08).max(hi.abs() * 1e-4).max(1e-9);
    let (y0, y1) = (
        if lo >= 0.0 && lo - pad < 0.0 {
            0.0
        } else {
            lo - pad
        },
        hi + pad,
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(75)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), y0..y1)
        .map_err(|e| anyhow!("{e}"))?;
    let labels: Vec<String> = xs.to_vec();
    chart
        .configure_mesh()
        .x_desc(xlabel)
        .y_desc(ylabel)
        .x_labels(n.min(13))
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < labels.len() {
                labels[i as usize].clone()
            } else {
                String::new()
            }
        })
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    if let Some(r) = ref_line {
        chart
            .draw_series(DashedLineSeries::new(
                [(-0.5, r), (n as f64 - 0.5, r)],
                6,
                4,
                BLACK.stroke_width(1),
            ))
            .map_err(|e| anyhow!("{e}"))?;
    }
    for s in series {
        let c = color_of(&s.name);
        let pts: Vec<(f64, f64)> =
            s.ys.iter()
                .enumerate()
                .filter(|(_, y)| y.is_finite())
                .map(|(i, y)| (i as f64, *y))
                .collect();
        let dots = pts.len() <= 40;
        chart
            .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
            .map_err(|e| anyhow!("{e}"))?
            .label(s.name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(3)));
        if dots {
            chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 4, c.filled())))
                .map_err(|e| anyhow!("{e}"))?;
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    root.present().map_err(|e| anyhow!("{e}"))?;
    Ok(())
}
