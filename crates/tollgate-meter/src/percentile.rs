//! Percentiles of durations per usage group, in bounded memory: exact up
//! to [`EXACT_DURATIONS`] values, then an HDR histogram (`hdrhistogram`,
//! two significant figures: within 1 % of the true figure, about 27 KiB
//! a group for durations up to an hour). A group summed elsewhere (a
//! database) gives its exact values when it has at most that many, else
//! its counts per [`duration_bucket`], and gets the same percentiles: a
//! bucket is the lowest value the histogram counts a duration with.

use std::sync::LazyLock;

use hdrhistogram::Histogram;

/// Values kept exactly before switching to the histogram.
pub const EXACT_DURATIONS: usize = 1024;

/// Significant figures the histogram keeps.
const SIGNIFICANT_FIGURES: u8 = 2;

/// An empty histogram of the shape every group's has: what decides which
/// durations are counted together.
static SHAPE: LazyLock<Option<Histogram<u64>>> = LazyLock::new(histogram);

/// A histogram growing to whatever durations it is given.
fn histogram() -> Option<Histogram<u64>> {
    Histogram::new(SIGNIFICANT_FIGURES).ok()
}

/// The histogram bucket of a duration: the lowest duration the histogram
/// counts with it (the duration itself below 256 µs, then 128 buckets
/// per power of two).
pub fn duration_bucket(v: u64) -> u64 {
    SHAPE.as_ref().map_or(v, |h| h.lowest_equivalent(v))
}

/// A distribution of non-negative integers (microseconds).
#[derive(Debug, Clone)]
pub(crate) enum Distribution {
    Exact(Vec<u64>),
    Histogram(Box<Histogram<u64>>),
}

impl Default for Distribution {
    fn default() -> Distribution {
        Distribution::Exact(Vec::new())
    }
}

impl Distribution {
    pub(crate) fn add(&mut self, v: u64) {
        self.add_n(v, 1);
    }

    /// `count` values in the bucket starting at `bucket`
    /// ([`duration_bucket`]): the distribution is a histogram from then on.
    pub(crate) fn add_bucket(&mut self, bucket: u64, count: u64) {
        self.switch_to_histogram();
        self.add_n(bucket, count);
    }

    fn add_n(&mut self, v: u64, count: u64) {
        match self {
            Distribution::Exact(values) => {
                values.extend(std::iter::repeat_n(v, usize::try_from(count).unwrap_or(usize::MAX)));
                if values.len() > EXACT_DURATIONS {
                    self.switch_to_histogram();
                }
            }
            Distribution::Histogram(h) => {
                // Auto-resizing: only a count past u64 fails.
                let _ = h.record_n(v, count);
            }
        }
    }

    /// Count the exact values into a histogram (no-op when it is one, or
    /// when no histogram can be made: then values stay exact).
    fn switch_to_histogram(&mut self) {
        if let Distribution::Exact(values) = self
            && let Some(mut h) = histogram()
        {
            for &v in values.iter() {
                let _ = h.record(v);
            }
            *self = Distribution::Histogram(Box::new(h));
        }
    }

    /// The nearest-rank percentile `p` (0 < p ≤ 1) of exact values, the
    /// histogram's quantile (the highest value of its bucket) otherwise; 0
    /// when empty.
    pub(crate) fn percentile(&mut self, p: f64) -> u64 {
        match self {
            Distribution::Exact(values) => {
                if values.is_empty() {
                    return 0;
                }
                values.sort_unstable();
                values[rank(p, values.len() as u64) - 1]
            }
            Distribution::Histogram(h) if h.is_empty() => 0,
            Distribution::Histogram(h) => h.value_at_quantile(p),
        }
    }
}

#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss
)]
fn rank(p: f64, n: u64) -> usize {
    ((p * n as f64).ceil() as usize).clamp(1, n as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_percentiles_use_the_nearest_rank() {
        let mut d = Distribution::default();
        assert_eq!(d.percentile(0.5), 0);
        for v in 1..=100 {
            d.add(v);
        }
        assert_eq!(d.percentile(0.5), 50);
        assert_eq!(d.percentile(0.99), 99);
        assert_eq!(d.percentile(1.0), 100);
    }

    #[test]
    fn histogram_percentiles_are_within_one_percent() {
        let mut d = Distribution::default();
        for v in 1..=100_000u64 {
            d.add(v * 10);
        }
        assert!(matches!(d, Distribution::Histogram(..)));
        for (p, exact) in [(0.5, 500_000.0), (0.99, 990_000.0)] {
            let got = d.percentile(p) as f64;
            assert!((got - exact).abs() / exact < 0.01, "p{p}: {got} vs {exact}");
        }
    }

    #[test]
    fn buckets_are_the_histograms_own_and_give_the_same_percentiles() {
        for v in [0, 1, 255, 256, 257, 1000, 123_456_789, u64::MAX / 4] {
            let b = duration_bucket(v);
            assert!(b <= v && v - b <= v / 128, "{v} -> {b}");
            assert_eq!(duration_bucket(b), b, "a bucket is its own bucket");
        }
        let (mut raw, mut counted) = (Distribution::default(), Distribution::default());
        let mut buckets = std::collections::BTreeMap::new();
        for i in 0..5000u64 {
            let v = 300 + (i * 7919) % 50_000;
            raw.add(v);
            *buckets.entry(duration_bucket(v)).or_insert(0) += 1;
        }
        for (b, n) in buckets {
            counted.add_bucket(b, n);
        }
        for p in [0.5, 0.9, 0.99, 1.0] {
            assert_eq!(raw.percentile(p), counted.percentile(p), "p{p}");
        }
    }
}
