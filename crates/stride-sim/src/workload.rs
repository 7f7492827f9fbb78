//! Workloads: empirical flow-size CDFs, Poisson arrivals at a target load, permutation, incast.

use crate::engine::Flow;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// An empirical flow-size distribution: points (bytes, cumulative percent), linear between.
#[derive(Clone, Debug)]
pub struct Cdf {
    pts: Vec<(f64, f64)>,
}

impl Cdf {
    /// Parses `<bytes> <cumulative percent>` lines (first `0 0`, last at 100).
    pub fn parse(text: &str) -> Result<Cdf, String> {
        let mut pts = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut it = line.split_whitespace();
            let (Some(a), Some(b), None) = (it.next(), it.next(), it.next()) else {
                return Err(format!(
                    "line {}: expected `<bytes> <cumulative percent>`",
                    i + 1
                ));
            };
            let s: f64 = a
                .parse()
                .map_err(|_| format!("line {}: bad size {a:?}", i + 1))?;
            let p: f64 = b
                .parse()
                .map_err(|_| format!("line {}: bad percent {b:?}", i + 1))?;
            if let Some(&(ps, pp)) = pts.last() {
                if s < ps || p < pp {
                    return Err(format!(
                        "line {}: sizes and percents must not decrease",
                        i + 1
                    ));
                }
            }
            pts.push((s, p));
        }
        match (pts.first(), pts.last()) {
            (Some(_), Some(&(_, last))) if (last - 100.0).abs() < 1e-9 && pts.len() >= 2 => {
                Ok(Cdf { pts })
            }
            _ => Err("the distribution must have at least two points and end at 100".into()),
        }
    }

    /// Draws a size: u uniform in [0, 100), linear interpolation between the surrounding points.
    pub fn sample(&self, rng: &mut impl Rng) -> u64 {
        let u: f64 = rng.gen_range(0.0..100.0);
        for w in self.pts.windows(2) {
            let ((s0, p0), (s1, p1)) = (w[0], w[1]);
            if u < p1 {
                let f = if p1 > p0 { (u - p0) / (p1 - p0) } else { 0.0 };
                return (s0 + f * (s1 - s0)).round().max(1.0) as u64;
            }
        }
        self.pts.last().map_or(1, |&(s, _)| s as u64)
    }

    /// Mean size, bytes (exact for the piecewise-linear distribution).
    pub fn mean(&self) -> f64 {
        self.pts
            .windows(2)
            .map(|w| (w[1].1 - w[0].1) / 100.0 * (w[0].0 + w[1].0) / 2.0)
            .sum()
    }
}

/// Poisson arrivals at `load` (fraction of the hosts' total NIC bandwidth), random distinct
/// source and destination, sizes from `cdf`, `n` flows.
pub fn poisson(cdf: &Cdf, hosts: u32, host_bps: u64, load: f64, n: usize, seed: u64) -> Vec<Flow> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let lambda = load * f64::from(hosts) * host_bps as f64 / (8.0 * cdf.mean()); // flows per s
    let mut t = 0.0f64;
    (0..n)
        .map(|_| {
            let u: f64 = rng.gen_range(f64::MIN_POSITIVE..1.0);
            t += -u.ln() / lambda * 1e9;
            let src = rng.gen_range(0..hosts);
            let mut dst = rng.gen_range(0..hosts - 1);
            if dst >= src {
                dst += 1;
            }
            Flow {
                src,
                dst,
                bytes: cdf.sample(&mut rng),
                start: t as u64,
            }
        })
        .collect()
}

/// Every host sends one flow of `bytes` to a distinct host (a random derangement).
pub fn permutation(hosts: u32, bytes: u64, seed: u64) -> Vec<Flow> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut perm: Vec<u32> = (0..hosts).collect();
    loop {
        for i in (1..perm.len()).rev() {
            let j = rng.gen_range(0..=i);
            perm.swap(i, j);
        }
        if perm.iter().enumerate().all(|(i, &p)| i as u32 != p) {
            break;
        }
    }
    perm.iter()
        .enumerate()
        .map(|(i, &d)| Flow {
            src: i as u32,
            dst: d,
            bytes,
            start: 0,
        })
        .collect()
}

/// `senders` hosts (1..=senders) each send `bytes` to host 0 at the same time.
pub fn incast(senders: u32, bytes: u64) -> Vec<Flow> {
    (1..=senders)
        .map(|s| Flow {
            src: s,
            dst: 0,
            bytes,
            start: 0,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdf_sampling_follows_the_distribution() {
        let c = Cdf::parse("0 0\n100 50\n1000 100\n").unwrap();
        assert!((c.mean() - (0.5 * 50.0 + 0.5 * 550.0)).abs() < 1e-9);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let n = 100_000;
        let below: usize = (0..n).filter(|_| c.sample(&mut rng) <= 100).count();
        assert!((below as f64 / n as f64 - 0.5).abs() < 0.01);
        assert!(Cdf::parse("0 0\n5 50\n").is_err());
        assert!(Cdf::parse("0 0\n5 60\n4 100\n").is_err());
        assert!(Cdf::parse("0 0\nx 100\n").unwrap_err().contains("line 2"));
    }

    #[test]
    fn poisson_offers_the_requested_load() {
        let c = Cdf::parse("0 0\n10000 100\n").unwrap();
        let f = poisson(&c, 16, 10_000_000_000, 0.5, 20_000, 3);
        let bytes: u64 = f.iter().map(|x| x.bytes).sum();
        let span = f.last().unwrap().start as f64 / 1e9;
        let load = bytes as f64 * 8.0 / span / (16.0 * 1e10);
        assert!((load - 0.5).abs() < 0.03, "offered load {load}");
        assert!(f.iter().all(|x| x.src != x.dst && x.src < 16 && x.dst < 16));
    }

    #[test]
    fn permutation_is_a_derangement() {
        let f = permutation(50, 1000, 9);
        let mut d: Vec<u32> = f.iter().map(|x| x.dst).collect();
        d.sort_unstable();
        assert_eq!(d, (0..50).collect::<Vec<_>>());
        assert!(f.iter().all(|x| x.src != x.dst));
    }
}
