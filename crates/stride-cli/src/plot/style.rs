//! One fixed colour and marker per transport name, the same in every plot (simulator and
//! testbed) whatever else is in it.
//!
//! The names are the simulator's transport registry ([`stride_sim::transport::names`]) followed
//! by the kernel congestion controls the testbed can run
//! ([`stride_testbed::scenario::KNOWN_KERNEL_CCS`]) that the simulator does not also name; a
//! name's style is [`PALETTE`]'s entry at its position there, and past the palette a colour of
//! its own generated from the position. So a newly registered transport gets a style without an
//! edit here. A name in neither list is grey.

use plotters::style::RGBColor;
use std::sync::OnceLock;

/// A transport's marker shape in every plot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker {
    /// Filled circle.
    Circle,
    /// Filled square.
    Square,
    /// Filled triangle.
    Triangle,
    /// Cross.
    Cross,
}

use Marker::*;

/// The styles of the first registered names, in registry order: a strong colour each first,
/// then the lighter and darker shades of the same family of colours.
const PALETTE: [(RGBColor, Marker); 20] = [
    (RGBColor(31, 119, 180), Circle),
    (RGBColor(23, 190, 207), Square),
    (RGBColor(255, 127, 14), Square),
    (RGBColor(44, 160, 44), Triangle),
    (RGBColor(214, 39, 40), Triangle),
    (RGBColor(188, 189, 34), Cross),
    (RGBColor(148, 103, 189), Circle),
    (RGBColor(197, 176, 213), Triangle),
    (RGBColor(152, 223, 138), Square),
    (RGBColor(255, 187, 120), Circle),
    (RGBColor(0, 0, 0), Cross),
    (RGBColor(140, 86, 75), Cross),
    (RGBColor(227, 119, 194), Circle),
    (RGBColor(255, 152, 150), Triangle),
    (RGBColor(158, 218, 229), Square),
    (RGBColor(196, 156, 148), Circle),
    (RGBColor(247, 182, 210), Square),
    (RGBColor(219, 219, 141), Triangle),
    (RGBColor(57, 59, 121), Cross),
    (RGBColor(99, 121, 57), Circle),
];

/// The style of a name in neither registry.
const UNKNOWN: (RGBColor, Marker) = (RGBColor(127, 127, 127), Cross);

/// Every name that has a style of its own, in the order that assigns them.
pub fn registered_names() -> &'static [&'static str] {
    static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
    NAMES.get_or_init(|| {
        let mut names = stride_sim::transport::names();
        for cc in stride_testbed::scenario::KNOWN_KERNEL_CCS {
            if !names.contains(cc) {
                names.push(cc);
            }
        }
        names
    })
}

/// The style of the `i`-th registered name: the palette's, then hues a golden angle apart
/// (never grey, never the same colour twice for the registry sizes this project has).
fn nth_style(i: usize) -> (RGBColor, Marker) {
    if let Some(s) = PALETTE.get(i) {
        return *s;
    }
    let k = i - PALETTE.len();
    let hue = (k as f64 * 137.507_764 + 15.0) % 360.0;
    let lightness = [0.42, 0.6][k % 2];
    let marker = [Circle, Square, Triangle, Cross][k % 4];
    (hsl(hue, 0.7, lightness), marker)
}

/// An HSL colour (hue in degrees, saturation and lightness in 0..=1) as RGB.
fn hsl(h: f64, s: f64, l: f64) -> RGBColor {
    let c = (1.0 - (2.0 * l - 1.0).abs()) * s;
    let x = c * (1.0 - ((h / 60.0) % 2.0 - 1.0).abs());
    let (r, g, b) = match (h / 60.0) as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let m = l - c / 2.0;
    let u = |v: f64| ((v + m) * 255.0).round() as u8;
    RGBColor(u(r), u(g), u(b))
}

/// The fixed colour and marker of transport `name`; grey for a name in neither registry.
pub fn style(name: &str) -> (RGBColor, Marker) {
    registered_names()
        .iter()
        .position(|n| *n == name)
        .map_or(UNKNOWN, nth_style)
}

/// The style of a series label: that of the transport it starts with (`"dctcp flow 3"` and
/// `"stride / fixed"` are drawn as dctcp and stride).
pub fn series_style(label: &str) -> (RGBColor, Marker) {
    let first = label.split_whitespace().next().unwrap_or(label);
    style(first.split('/').next().unwrap_or(first))
}

/// The outline of `m` around (0, 0), `s` pixels from the centre: every marker is one polygon,
/// so legends and series take the same element type whatever the marker.
pub fn marker_points(m: Marker, s: i32) -> Vec<(i32, i32)> {
    let t = (s / 3).max(1);
    match m {
        Circle => (0..12)
            .map(|k| {
                let a = f64::from(k) * std::f64::consts::PI / 6.0;
                (
                    (f64::from(s) * a.cos()).round() as i32,
                    (f64::from(s) * a.sin()).round() as i32,
                )
            })
            .collect(),
        Square => vec![(-s, -s), (s, -s), (s, s), (-s, s)],
        Triangle => vec![(0, -s - 1), (s + 1, s), (-s - 1, s)],
        Cross => vec![
            (-t, -s),
            (t, -s),
            (t, -t),
            (s, -t),
            (s, t),
            (t, t),
            (t, s),
            (-t, s),
            (-t, t),
            (-s, t),
            (-s, -t),
            (-t, -t),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_name_of_both_registries_has_its_own_colour() {
        let names: Vec<&str> = stride_sim::transport::names()
            .into_iter()
            .chain(stride_testbed::scenario::KNOWN_KERNEL_CCS.iter().copied())
            .collect();
        for (i, a) in names.iter().enumerate() {
            assert_ne!(style(a).0, UNKNOWN.0, "{a} falls back to grey");
            for b in &names[i + 1..] {
                if a != b {
                    assert_ne!(style(a).0, style(b).0, "{a} and {b} share a colour");
                }
            }
        }
        // Fixed: a transport's look does not depend on what else is plotted.
        assert_eq!(style("dctcp"), style("dctcp"));
        assert_eq!(style("no-such-transport"), UNKNOWN);
    }

    #[test]
    fn names_past_the_palette_still_get_colours_of_their_own() {
        let styles: Vec<RGBColor> = (0..64).map(|i| nth_style(i).0).collect();
        for (i, a) in styles.iter().enumerate() {
            assert_ne!(*a, UNKNOWN.0, "{i} is grey");
            for (j, b) in styles.iter().enumerate().skip(i + 1) {
                assert_ne!(a, b, "{i} and {j} share a colour");
            }
        }
    }

    #[test]
    fn series_take_the_style_of_the_transport_they_start_with() {
        assert_eq!(series_style("dctcp flow 3"), style("dctcp"));
        assert_eq!(series_style("stride / fixed"), style("stride"));
        assert_eq!(series_style("cubic"), style("cubic"));
        assert_eq!(series_style("probe: tx"), UNKNOWN);
    }
}
