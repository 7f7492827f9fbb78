//! Deterministic pseudo-random numbers for test stimulus, simulated impairments and vectors.
//!
//! Not for anything an attacker must not guess: connection identifiers and initial sequence
//! numbers come from a keyed PRF in [`crate::endpoint`].

/// A tiny deterministic generator (SplitMix64): reproducible, and predictable from one output.
#[derive(Clone, Debug)]
pub struct SplitMix(u64);

impl SplitMix {
    /// Seeded generator.
    pub fn new(seed: u64) -> Self {
        SplitMix(seed)
    }
    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0), slightly biased, fine for test stimulus.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}
