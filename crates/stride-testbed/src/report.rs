//! What a run returns: the JSON report, the Markdown tables and the figures as data (drawn by
//! `stride testbed`), and the small helpers the experiments build them with.

use crate::flows::FlowOutcome;
use crate::scenario::Testbed;
use serde_json::{json, Value};

/// One line of a figure: its name (a transport, or a label starting with one, which picks its
/// colour) and a value per x position.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend name.
    pub name: String,
    /// Values per x position (NaN = missing).
    pub ys: Vec<f64>,
}

/// A line chart with points over labelled x positions, to be written as `stem.png` and
/// `stem.svg` in the output directory.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// File name without extension (`fig6-fixed`).
    pub stem: String,
    /// Caption.
    pub title: String,
    /// X-axis description.
    pub x_label: String,
    /// Y-axis description.
    pub y_label: String,
    /// The x positions' labels.
    pub xs: Vec<String>,
    /// The lines.
    pub series: Vec<Series>,
    /// A dashed horizontal reference line (e.g. ratio 1), if any.
    pub ref_line: Option<f64>,
}

impl Figure {
    /// A figure without a reference line.
    pub(crate) fn new(stem: String, title: String, x_label: &str, y_label: &str) -> Figure {
        Figure {
            stem,
            title,
            x_label: x_label.into(),
            y_label: y_label.into(),
            xs: Vec::new(),
            series: Vec::new(),
            ref_line: None,
        }
    }
}

/// The result of [`crate::run`].
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The JSON report (also written to `results.json`).
    pub report: Value,
    /// The tables, Markdown (also written to `tables.md`).
    pub tables: String,
    /// The figures, in the order the experiment made them.
    pub figures: Vec<Figure>,
}

/// One foreground flow's record.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FlowRecord {
    /// Background pattern.
    pub pattern: String,
    /// Transport name.
    pub transport: String,
    /// Block category, 1..=5.
    pub block: u64,
    /// Bytes.
    pub size: u64,
    /// Repetition.
    pub rep: u64,
    /// Packets the bottleneck dropped while this flow ran (back to back: all of them are this
    /// flow's or the background's).
    pub bottleneck_drops: u64,
    /// The flow itself.
    #[serde(flatten)]
    pub outcome: FlowOutcome,
}

/// The bottleneck as reports give it (with STRIDE's codepoint when it has a class of its own).
pub(crate) fn link_json(tb: &Testbed) -> Value {
    let mut j = json!({
        "rate_bps": tb.link.rate_bps,
        "queue_bytes": tb.link.queue_bytes,
        "burst_bytes": tb.link.burst_bytes,
        "qdisc": tb.link.qdisc.name(),
    });
    if let crate::topo::Qdisc::HtbDscp { dscp, borrow } = tb.link.qdisc {
        j["stride_class_dscp"] = json!(dscp);
        j["class_borrow"] = json!(borrow);
    }
    j
}

/// The arithmetic mean; NaN when `v` is empty.
pub(crate) fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        f64::NAN
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// Bytes as `4MiB`, `16KiB` or `1500B`.
pub(crate) fn fmt_size(b: u64) -> String {
    if b >= 1 << 20 && b.is_multiple_of(1 << 20) {
        format!("{}MiB", b >> 20)
    } else if b >= 1024 && b.is_multiple_of(1024) {
        format!("{}KiB", b >> 10)
    } else {
        format!("{b}B")
    }
}
