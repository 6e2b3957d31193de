//! Percentiles of durations per usage group, in bounded memory: exact up
//! to [`EXACT_DURATIONS`] values, then a log-linear histogram (32
//! sub-buckets per power of two: at most 1/32 relative error, 7.5 KiB per
//! group). A group summed elsewhere (a database) gives its exact values
//! when it has at most that many, else its counts per [`duration_bucket`],
//! and gets the same percentiles.

/// Values kept exactly before switching to buckets.
pub const EXACT_DURATIONS: usize = 1024;
const EXACT_MAX: usize = EXACT_DURATIONS;
const SUB_BITS: u32 = 5;
const SUB: u64 = 1 << SUB_BITS;
const BUCKETS: usize = (64 - SUB_BITS as usize + 1) * SUB as usize;

/// A distribution of non-negative integers (microseconds).
#[derive(Debug, Clone)]
pub(crate) enum Distribution {
    Exact(Vec<u64>),
    Buckets(Box<[u32]>, u64),
}

impl Default for Distribution {
    fn default() -> Distribution {
        Distribution::Exact(Vec::new())
    }
}

/// The histogram bucket of a duration: the value itself below 32, else
/// 32 sub-buckets per power of two (`(floor(log2 v) - 4) * 32` plus the
/// five bits after the leading one).
pub fn duration_bucket(v: u64) -> usize {
    bucket(v)
}

fn bucket(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let exp = 63 - v.leading_zeros();
    let mant = (v >> (exp - SUB_BITS)) & (SUB - 1);
    ((exp - SUB_BITS + 1) as usize) * SUB as usize + mant as usize
}

/// The middle of a bucket's range.
fn value(i: usize) -> u64 {
    let sub = SUB as usize;
    if i < sub {
        return i as u64;
    }
    let exp = (i / sub) as u32 + SUB_BITS - 1;
    let mant = (i % sub) as u64;
    let width = 1u64 << (exp - SUB_BITS);
    ((SUB + mant) << (exp - SUB_BITS)) + width / 2
}

impl Distribution {
    pub(crate) fn add(&mut self, v: u64) {
        match self {
            Distribution::Exact(values) if values.len() < EXACT_MAX => values.push(v),
            Distribution::Exact(values) => {
                let mut counts = vec![0u32; BUCKETS].into_boxed_slice();
                for &x in values.iter() {
                    counts[bucket(x)] += 1;
                }
                counts[bucket(v)] += 1;
                *self = Distribution::Buckets(counts, values.len() as u64 + 1);
            }
            Distribution::Buckets(counts, n) => {
                let c = &mut counts[bucket(v)];
                *c = c.saturating_add(1);
                *n += 1;
            }
        }
    }

    /// `count` values in bucket `i` (values beyond the histogram are
    /// ignored): the distribution is bucketed from then on.
    pub(crate) fn add_bucket(&mut self, i: usize, count: u64) {
        if let Distribution::Exact(values) = self {
            let mut counts = vec![0u32; BUCKETS].into_boxed_slice();
            for &x in values.iter() {
                counts[bucket(x)] += 1;
            }
            *self = Distribution::Buckets(counts, values.len() as u64);
        }
        if let Distribution::Buckets(counts, n) = self
            && let Some(c) = counts.get_mut(i)
        {
            *c = c.saturating_add(u32::try_from(count).unwrap_or(u32::MAX));
            *n += count;
        }
    }

    /// The nearest-rank percentile `p` (0 < p ≤ 1); 0 when empty.
    pub(crate) fn percentile(&mut self, p: f64) -> u64 {
        match self {
            Distribution::Exact(values) => {
                if values.is_empty() {
                    return 0;
                }
                values.sort_unstable();
                values[rank(p, values.len() as u64) - 1]
            }
            Distribution::Buckets(counts, n) => {
                let want = rank(p, *n) as u64;
                let mut seen = 0u64;
                for (i, &c) in counts.iter().enumerate() {
                    seen += u64::from(c);
                    if seen >= want {
                        return value(i);
                    }
                }
                0
            }
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
    fn bucketed_percentiles_are_within_one_in_thirty_two() {
        let mut d = Distribution::default();
        for v in 1..=100_000u64 {
            d.add(v * 10);
        }
        assert!(matches!(d, Distribution::Buckets(..)));
        for (p, exact) in [(0.5, 500_000.0), (0.99, 990_000.0)] {
            let got = d.percentile(p) as f64;
            assert!((got - exact).abs() / exact < 1.0 / 32.0, "p{p}: {got} vs {exact}");
        }
        for v in [0, 1, 31, 32, 33, 63, 64, 1000, u64::MAX / 2] {
            let back = value(bucket(v));
            assert!(back.abs_diff(v) <= v / 32 + 1, "{v} -> {back}");
        }
    }
}
