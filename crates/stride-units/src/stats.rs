//! Small statistics the reports and benchmarks share.

/// The median of `v` (sorted in place): the middle value, or the mean of the two middle values
/// of an even count; NaN when `v` is empty. NaNs in `v` make the order (and so the result)
/// unspecified.
///
/// ```
/// use stride_units::stats::median;
/// assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
/// assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
/// assert!(median(&mut []).is_nan());
/// ```
pub fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_even_and_empty() {
        assert_eq!(median(&mut [5.0]), 5.0);
        assert_eq!(median(&mut [9.0, 1.0, 5.0, 3.0, 7.0]), 5.0);
        assert_eq!(median(&mut [1.0, 10.0]), 5.5);
        assert!(median(&mut []).is_nan());
    }
}
