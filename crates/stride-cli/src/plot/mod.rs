//! The plots of `stride sim` and `stride testbed`, drawn with plotters in PNG and SVG: of a
//! simulation run, the improvement factor per size category (the paper's Fig. 9a for the
//! average, 9b for the 99th percentile), the queue occupancy of the watched switch ports and
//! the traces; of a testbed run, the figures it returns ([`draw_figure`]). Every transport has
//! one colour and marker in all of them ([`style`]).
//!
//! Text needs a TrueType font, read at run time (nothing is bundled): `$STRIDE_FONT`, else
//! DejaVu Sans or Liberation Sans from the usual system paths (`scripts/setup.sh` installs
//! `fonts-dejavu-core`). Without one, plotting fails with an error that says so.
use anyhow::{anyhow, bail, Context};
use plotters::prelude::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const FONT_PATHS: [&str; 5] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation2/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
];

/// Registers a system font as "sans-serif" once per process.
pub fn ensure_font() -> anyhow::Result<()> {
    static DONE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let r = DONE.get_or_init(|| {
        let candidates: Vec<PathBuf> = std::env::var_os("STRIDE_FONT")
            .map(PathBuf::from)
            .into_iter()
            .chain(FONT_PATHS.iter().map(PathBuf::from))
            .collect();
        for p in &candidates {
            if let Ok(bytes) = std::fs::read(p) {
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                    return Ok(p.clone());
                }
            }
        }
        Err(format!(
            "no TrueType font for the plots: set STRIDE_FONT=/path/to/font.ttf or install \
             fonts-dejavu-core (tried {})",
            FONT_PATHS.join(", ")
        ))
    });
    r.as_ref().map(|_| ()).map_err(|e| anyhow!("{e}"))
}

mod style;

pub use style::{marker_points, series_style, style};

const CATS: [&str; 5] = ["I", "II", "III", "IV", "all"];
/// Flow sizes of each category (spec §8.5 #9).
const CAT_RANGES: [&str; 5] = ["< 10 KB", "10-100 KB", "100 KB-1 MB", "> 1 MB", "all sizes"];

/// Grouped bars: for each category, one bar per compared transport, height = other FCT /
/// STRIDE FCT for `stat` ("avg" or "p99"), with a reference line at 1.
fn improvement_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    summary: &Value,
    stat: &str,
    title: &str,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let imp = summary["improvement"]
        .as_object()
        .ok_or_else(|| anyhow!("no improvement factors (was stride in the run?)"))?;
    let others: Vec<&String> = imp.keys().collect();
    if others.is_empty() {
        bail!("improvement factors need STRIDE and at least one other transport");
    }
    // Log scale, bars from the reference line at 1: factors of 0.5 and 2 look equally far.
    let (mut ymin, mut ymax): (f64, f64) = (1.0, 1.0);
    for o in &others {
        for c in CATS {
            if let Some(v) = imp[*o][c][stat].as_f64().filter(|v| *v > 0.0) {
                ymin = ymin.min(v);
                ymax = ymax.max(v);
            }
        }
    }
    let (ymin, ymax) = (ymin / 1.5, ymax * 1.5);
    area.fill(&WHITE)?;
    let n = others.len() as f64;
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..CATS.len() as f64, (ymin..ymax).log_scale())?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(CATS.len() * 2 + 1)
        .x_label_formatter(&|x| {
            let i = (*x - 0.5).round();
            if (*x - 0.5 - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < CATS.len() {
                format!(
                    "{}: {} ({} flows)",
                    CATS[i as usize],
                    CAT_RANGES[i as usize],
                    flows_in(summary, CATS[i as usize])
                )
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|y| format!("{y:.2}"))
        .y_desc(format!(
            "{stat} FCT of other / of STRIDE (log; > 1: STRIDE faster)"
        ))
        .label_style(("sans-serif", 14))
        .draw()?;
    let width = 0.8 / n;
    for (k, o) in others.iter().enumerate() {
        let (color, m) = style(o);
        let vals: Vec<(f64, f64)> = CATS
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let v = imp[*o][*c][stat].as_f64().filter(|v| *v > 0.0)?;
                Some((i as f64 + 0.1 + k as f64 * width, v))
            })
            .collect();
        chart
            .draw_series(vals.iter().map(|&(x0, v)| {
                Rectangle::new([(x0, 1.0), (x0 + width * 0.9, v)], color.filled())
            }))?
            .label(o.to_string())
            .legend(move |(x, y)| {
                EmptyElement::at((x + 6, y)) + Polygon::new(marker_points(m, 5), color.filled())
            });
        // The marker on each bar's end too, so bars read without colour.
        chart.draw_series(vals.iter().map(|&(x0, v)| {
            EmptyElement::at((x0 + width * 0.45, v))
                + Polygon::new(marker_points(m, 4), WHITE.filled())
                + Polygon::new(marker_points(m, 3), color.filled())
        }))?;
        chart.draw_series(vals.iter().map(|&(x0, v)| {
            let y = if v >= 1.0 { v * 1.08 } else { v / 1.02 };
            Text::new(format!("{v:.2}"), (x0, y), ("sans-serif", 12))
        }))?;
    }
    chart.draw_series(LineSeries::new(
        [(0.0, 1.0), (CATS.len() as f64, 1.0)],
        BLACK.stroke_width(1),
    ))?;
    legend(&mut chart)?;
    area.present()?;
    Ok(())
}

/// The legend box both charts use.
fn legend<'a, DB, CT>(chart: &mut ChartContext<'a, DB, CT>) -> anyhow::Result<()>
where
    DB: DrawingBackend + 'a,
    DB::ErrorType: 'static,
    CT: plotters::coord::CoordTranslate,
{
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()?;
    Ok(())
}

fn flows_in(summary: &Value, cat: &str) -> u64 {
    summary["transports"]
        .as_object()
        .and_then(|t| t.values().next())
        .and_then(|t| t["categories"][cat]["flows"].as_u64())
        .unwrap_or(0)
}

/// The end of the activity: the last sample time at which any series is above 2 % of the
/// largest queue, plus 5 % (so a long empty tail of one transport does not squeeze the rest).
pub fn active_until(series: &[(String, Vec<(f64, f64)>)]) -> f64 {
    let peak = series
        .iter()
        .flat_map(|(_, v)| v.iter().map(|p| p.1))
        .fold(0.0f64, f64::max);
    let last = series
        .iter()
        .flat_map(|(_, v)| v.iter().filter(|p| p.1 > 0.02 * peak).map(|p| p.0))
        .fold(0.0f64, f64::max);
    let end = series
        .iter()
        .flat_map(|(_, v)| v.iter().map(|p| p.0))
        .fold(0.0f64, f64::max);
    (last * 1.05).min(end).max(1e-3)
}

/// Small multiples: one panel per transport (its colour and marker), one shared time axis cut
/// to the activity, each panel the largest queue over the watched ports at each sample, KB.
fn queue_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    series: &[(String, Vec<(f64, f64)>)],
    title: &str,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let xmax = active_until(series);
    let ymax = series
        .iter()
        .flat_map(|(_, v)| v.iter().filter(|p| p.0 <= xmax).map(|p| p.1))
        .fold(0.0f64, f64::max)
        .max(1.0)
        * 1.1;
    area.fill(&WHITE)?;
    let area = area.titled(title, ("sans-serif", 22))?;
    let panels = area.split_evenly((series.len().max(1), 1));
    for (k, ((name, pts), panel)) in series.iter().zip(&panels).enumerate() {
        let last = k + 1 == series.len();
        let (color, m) = style(name);
        let mut chart = ChartBuilder::on(panel)
            .margin(6)
            .x_label_area_size(if last { 40 } else { 0 })
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..xmax, 0.0..ymax)?;
        let mut mesh = chart.configure_mesh();
        mesh.y_desc("queue (KB)")
            .y_labels(4)
            .label_style(("sans-serif", 13));
        if last {
            mesh.x_desc("simulated time (ms)");
        } else {
            mesh.x_labels(0);
        }
        mesh.draw()?;
        let shown: Vec<(f64, f64)> = pts.iter().copied().filter(|p| p.0 <= xmax).collect();
        chart
            .draw_series(LineSeries::new(
                shown.iter().copied(),
                color.stroke_width(1),
            ))?
            .label(name.clone())
            .legend(move |(x, y)| {
                EmptyElement::at((x + 6, y)) + Polygon::new(marker_points(m, 5), color.filled())
            });
        // A dozen markers along the line.
        let step = (shown.len() / 12).max(1);
        chart.draw_series(
            shown
                .iter()
                .step_by(step)
                .map(|&p| EmptyElement::at(p) + Polygon::new(marker_points(m, 4), color.filled())),
        )?;
        legend(&mut chart)?;
    }
    area.present()?;
    Ok(())
}

/// One line per series against simulated time (ms), each in the colour and marker of the
/// transport its name starts with (`"dctcp flow 3"` is drawn as dctcp), the x-axis cut to the
/// activity.
fn line_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    series: &[(String, Vec<(f64, f64)>)],
    title: &str,
    y_desc: &str,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let xmax = active_until(series);
    let ymax = series
        .iter()
        .flat_map(|(_, v)| v.iter().filter(|p| p.0 <= xmax).map(|p| p.1))
        .fold(0.0f64, f64::max)
        .max(1e-9)
        * 1.1;
    area.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..xmax, 0.0..ymax)?;
    chart
        .configure_mesh()
        .x_desc("simulated time (ms)")
        .y_desc(y_desc)
        .label_style(("sans-serif", 14))
        .draw()?;
    for (name, pts) in series {
        let (color, m) = series_style(name);
        let shown: Vec<(f64, f64)> = pts.iter().copied().filter(|p| p.0 <= xmax).collect();
        chart
            .draw_series(LineSeries::new(
                shown.iter().copied(),
                color.stroke_width(1),
            ))?
            .label(name.clone())
            .legend(move |(x, y)| {
                EmptyElement::at((x + 6, y)) + Polygon::new(marker_points(m, 5), color.filled())
            });
    }
    legend(&mut chart)?;
    area.present()?;
    Ok(())
}

/// Collapses `t_ns,port,from,to,bytes` samples to the largest queue per sample time.
pub fn queue_series(queue_csv: &str) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::new();
    for line in queue_csv.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let (Some(t), Some(b)) = (f.first(), f.get(4)) else {
            continue;
        };
        let (Ok(t), Ok(b)) = (t.parse::<u64>(), b.parse::<u64>()) else {
            continue;
        };
        let (t, kb) = (t as f64 / 1e6, b as f64 / 1e3);
        match out.last_mut() {
            Some(last) if last.0 == t => last.1 = last.1.max(kb),
            _ => out.push((t, kb)),
        }
    }
    out
}

/// Draws one chart into `<stem>.png` and `<stem>.svg` (the chart functions are generic over
/// the backend, so a function taking a closure would need two of them) and records both paths.
macro_rules! png_and_svg {
    ($dir:expr, $stem:expr, $size:expr, $written:expr, |$area:ident| $draw:expr) => {{
        let stem = $stem;
        let png = $dir.join(format!("{stem}.png"));
        let svg = $dir.join(format!("{stem}.svg"));
        {
            let $area = BitMapBackend::new(&png, $size).into_drawing_area();
            $draw.with_context(|| format!("drawing {}", png.display()))?;
        }
        {
            let $area = SVGBackend::new(&svg, $size).into_drawing_area();
            $draw.with_context(|| format!("drawing {}", svg.display()))?;
        }
        $written.push(png);
        $written.push(svg);
    }};
}

// After the macro, which it uses.
mod category;

pub use category::draw_figure;

/// Writes fct-avg (Fig. 9a), fct-p99 (Fig. 9b) and, with queue samples, queue plots, each as
/// PNG and SVG; returns the files written.
pub fn write_plots(
    dir: &Path,
    summary: &Value,
    queues: &[(String, Vec<(f64, f64)>)],
) -> anyhow::Result<Vec<PathBuf>> {
    ensure_font()?;
    let name = summary["scenario"].as_str().unwrap_or("scenario");
    let mut written = Vec::new();
    let has_imp = summary["improvement"]
        .as_object()
        .is_some_and(|m| !m.is_empty());
    if has_imp {
        for (stat, fig) in [("avg", "9a"), ("p99", "9b")] {
            let title = format!("{name}: {stat} FCT improvement of STRIDE (cf. paper Fig. {fig})");
            png_and_svg!(dir, format!("fct-{stat}"), (900, 520), written, |area| {
                improvement_chart(&area, summary, stat, &title)
            });
        }
    }
    if queues.iter().any(|(_, v)| !v.is_empty()) {
        let title = format!("{name}: queue occupancy at the watched switches");
        let height = 120 + 150 * queues.len() as u32;
        png_and_svg!(dir, "queue", (900, height), written, |area| {
            queue_chart(&area, queues, &title)
        });
    }
    Ok(written)
}

/// One transport's `[trace]` output.
pub struct TraceSeries {
    /// Transport.
    pub name: String,
    /// `trace-<cc>.csv` contents.
    pub trace_csv: String,
    /// `jain-<cc>.csv` contents.
    pub jain_csv: String,
}

/// (time ms, value) of column `col` of a CSV with a header, for rows whose column 1 is `flow`
/// (or every row when `flow` is None); empty cells are skipped.
fn column(csv: &str, col: &str, flow: Option<&str>) -> Vec<(f64, f64)> {
    let mut lines = csv.lines();
    let Some(head) = lines.next() else {
        return Vec::new();
    };
    let Some(c) = head.split(',').position(|h| h == col) else {
        return Vec::new();
    };
    lines
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            if flow.is_some_and(|fl| f.get(1) != Some(&fl)) {
                return None;
            }
            let t = f.first()?.parse::<f64>().ok()? / 1e6;
            Some((t, f.get(c)?.parse::<f64>().ok()?))
        })
        .collect()
}

/// With `[trace]`: `trace-cwnd`, `trace-rate` (rate-based senders), `trace-alpha` (DCTCP) and `trace-queueing` per traced flow
/// (at most 6 flows per transport), and `jain` over time per transport, each PNG and SVG.
pub fn write_trace_plots(
    dir: &Path,
    summary: &Value,
    traces: &[TraceSeries],
) -> anyhow::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    if traces
        .iter()
        .all(|t| t.trace_csv.lines().count() <= 1 && t.jain_csv.lines().count() <= 1)
    {
        return Ok(written);
    }
    ensure_font()?;
    let name = summary["scenario"].as_str().unwrap_or("scenario");
    for (col, stem, y) in [
        ("cwnd_bytes", "trace-cwnd", "congestion window (bytes)"),
        ("rate_gbps", "trace-rate", "sending rate (Gbit/s)"),
        ("alpha", "trace-alpha", "DCTCP alpha"),
        ("queueing_ns", "trace-queueing", "queueing delay (ns)"),
    ] {
        let mut series = Vec::new();
        for t in traces {
            let mut flows: Vec<&str> = t
                .trace_csv
                .lines()
                .skip(1)
                .filter_map(|l| l.split(',').nth(1))
                .collect();
            flows.sort_unstable();
            flows.dedup();
            for f in flows.into_iter().take(6) {
                let pts = column(&t.trace_csv, col, Some(f));
                if !pts.is_empty() {
                    series.push((format!("{} flow {f}", t.name), pts));
                }
            }
        }
        if series.is_empty() {
            continue;
        }
        let title = format!("{name}: {y} of traced flows");
        png_and_svg!(dir, stem, (900, 420), written, |area| {
            line_chart(&area, &series, &title, y)
        });
    }
    let jain: Vec<(String, Vec<(f64, f64)>)> = traces
        .iter()
        .map(|t| (t.name.clone(), column(&t.jain_csv, "jain", None)))
        .filter(|(_, v)| !v.is_empty())
        .collect();
    if !jain.is_empty() {
        let title = format!("{name}: Jain's fairness index of running flows");
        png_and_svg!(dir, "jain", (900, 420), written, |area| {
            line_chart(&area, &jain, &title, "Jain's index")
        });
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queue_axis_ends_with_the_activity_not_the_longest_tail() {
        let busy = (
            "stride".to_string(),
            vec![(0.0, 50.0), (1.0, 40.0), (2.0, 0.0)],
        );
        let tail = (
            "newreno".to_string(),
            vec![(0.0, 10.0), (1.0, 0.0), (50.0, 0.0)],
        );
        let x = active_until(&[busy, tail]);
        assert!((1.0..2.0).contains(&x), "{x}");
    }

    #[test]
    fn queue_series_keeps_the_largest_port_per_instant() {
        let s = "t_ns,port,from,to,bytes\n1000,0,a,b,3000\n1000,1,a,c,9000\n2000,0,a,b,0\nbad\n";
        assert_eq!(queue_series(s), vec![(0.001, 9.0), (0.002, 0.0)]);
    }
}
