//! The testbed's figures ([`stride_testbed::Figure`]): lines with points over labelled x
//! positions (block sizes, ACK intervals, seconds).

use super::{ensure_font, marker_points, series_style};
use anyhow::{anyhow, Context};
use plotters::prelude::*;
use std::path::{Path, PathBuf};
use stride_testbed::Figure;

/// Draws `f` into `dir` as `<stem>.png` and `<stem>.svg`; returns the files written.
pub fn draw_figure(dir: &Path, f: &Figure) -> anyhow::Result<Vec<PathBuf>> {
    ensure_font()?;
    let mut written = Vec::new();
    png_and_svg!(dir, &f.stem, (900, 540), written, |area| draw(&area, f));
    Ok(written)
}

/// The y range: every finite value and the reference line, padded by 8 %, from 0 when the
/// values are all at or above 0 and the padding would cross it.
fn y_range(f: &Figure) -> (f64, f64) {
    let vals = f
        .series
        .iter()
        .flat_map(|s| s.ys.iter().copied())
        .chain(f.ref_line)
        .filter(|v| v.is_finite());
    let (mut lo, mut hi) = vals.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
        (a.min(v), b.max(v))
    });
    if !lo.is_finite() {
        lo = 0.0;
        hi = 1.0;
    }
    let pad = ((hi - lo) * 0.08).max(hi.abs() * 1e-4).max(1e-9);
    let y0 = if lo >= 0.0 && lo - pad < 0.0 {
        0.0
    } else {
        lo - pad
    };
    (y0, hi + pad)
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    f: &Figure,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
    let n = f.xs.len().max(1);
    let (y0, y1) = y_range(f);
    let mut chart = ChartBuilder::on(root)
        .caption(&f.title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(75)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), y0..y1)
        .map_err(|e| anyhow!("{e}"))?;
    let labels = &f.xs;
    chart
        .configure_mesh()
        .x_desc(&f.x_label)
        .y_desc(&f.y_label)
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
    if let Some(r) = f.ref_line {
        chart
            .draw_series(DashedLineSeries::new(
                [(-0.5, r), (n as f64 - 0.5, r)],
                6,
                4,
                BLACK.stroke_width(1),
            ))
            .map_err(|e| anyhow!("{e}"))?;
    }
    for s in &f.series {
        let (c, m) = series_style(&s.name);
        let pts: Vec<(f64, f64)> =
            s.ys.iter()
                .enumerate()
                .filter(|(_, y)| y.is_finite())
                .map(|(i, y)| (i as f64, *y))
                .collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
            .map_err(|e| anyhow!("{e}"))?
            .label(s.name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(3)));
        // Markers on short series only (a time series of hundreds of points is a line).
        if pts.len() <= 40 {
            chart
                .draw_series(
                    pts.iter().map(|&p| {
                        EmptyElement::at(p) + Polygon::new(marker_points(m, 4), c.filled())
                    }),
                )
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

#[cfg(test)]
mod tests {
    use super::*;
    use stride_testbed::Series;

    #[test]
    fn a_figure_is_drawn_as_png_and_svg() {
        let dir = std::env::temp_dir().join(format!("stride-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = Figure {
            stem: "fig-test".into(),
            title: "a test figure".into(),
            x_label: "block size (KiB)".into(),
            y_label: "median FCT per KiB (us)".into(),
            xs: vec!["<10K".into(), "10-128K".into(), "128-256K".into()],
            series: vec![
                Series {
                    name: "stride".into(),
                    ys: vec![1.0, 2.0, f64::NAN],
                },
                Series {
                    name: "cubic".into(),
                    ys: vec![3.0, 1.5, 0.5],
                },
            ],
            ref_line: Some(1.0),
        };
        let written = draw_figure(&dir, &f).unwrap();
        assert_eq!(
            written,
            vec![dir.join("fig-test.png"), dir.join("fig-test.svg")]
        );
        let png = std::fs::read(&written[0]).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        let svg = std::fs::read_to_string(&written[1]).unwrap();
        assert!(svg.contains("a test figure") && svg.contains("cubic") && svg.contains("10-128K"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
