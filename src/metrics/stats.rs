//! Exact summary statistics. Percentiles interpolate linearly between order statistics, as numpy's default
//! (and therefore vLLM's benchmark) does: rank = p/100 · (n − 1).

use serde::Serialize;

/// Mean, percentiles and max of a sample, in the unit the field name gives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Stats {
    pub count: u64,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
}

impl Stats {
    /// From values in ns, reported in seconds. Sorts `v`.
    pub fn from_ns(v: &mut [u64]) -> Self {
        sort_u64(v);
        Self::from_sorted(v.len(), |i| v[i] as f64 / 1e9)
    }

    /// From f64 values (already in the output unit). Sorts `v`.
    pub fn from_f64(v: &mut [f64]) -> Self {
        v.sort_unstable_by(|a, b| a.total_cmp(b));
        Self::from_sorted(v.len(), |i| v[i])
    }

    fn from_sorted(n: usize, at: impl Fn(usize) -> f64) -> Self {
        if n == 0 {
            return Stats::default();
        }
        let mean = (0..n).map(&at).sum::<f64>() / n as f64;
        let p = |q: f64| interpolate(n as u64, q, |i| at(i as usize));
        Stats { count: n as u64, mean, p50: p(50.0), p90: p(90.0), p95: p(95.0), p99: p(99.0), max: at(n - 1) }
    }

    /// From packed `ns << bits | count` words: a weighted sample, expanded logically. Sorts `v`.
    pub fn from_packed_ns(v: &mut [u64], bits: u32) -> Self {
        sort_u64(v);
        let mask = (1u64 << bits) - 1;
        let (val, cnt) = (|x: u64| x >> bits, |x: u64| x & mask);
        let n: u64 = v.iter().map(|x| cnt(*x)).sum();
        if n == 0 {
            return Stats::default();
        }
        let sum: f64 = v.iter().map(|x| val(*x) as f64 * cnt(*x) as f64).sum();
        let cum: Vec<u64> = v.iter().scan(0u64, |acc, x| {
            *acc += cnt(*x);
            Some(*acc)
        }).collect();
        let at = |i: u64| val(v[cum.partition_point(|c| *c <= i)]) as f64 / 1e9;
        let p = |q: f64| interpolate(n, q, at);
        Stats { count: n, mean: sum / n as f64 / 1e9, p50: p(50.0), p90: p(90.0), p95: p(95.0), p99: p(99.0), max: val(v[v.len() - 1]) as f64 / 1e9 }
    }
}

/// Sort `v` ascending: an LSD radix sort on 11-bit digits (skipping digits every key shares) for the large
/// samples a report sorts — a run's inter-token latencies are one entry per step — and the standard sort
/// for small or huge ones (the radix sort's scratch is as large as `v`). The order of u64 keys is unique, so
/// the result is the standard sort's exactly.
pub(crate) fn sort_u64(v: &mut [u64]) {
    const BITS: u32 = 11;
    const MASK: u64 = (1 << BITS) - 1;
    if v.len() < 1 << 12 || v.len() > 1 << 22 {
        v.sort_unstable();
        return;
    }
    let mut scratch = vec![0u64; v.len()];
    let (mut src, mut dst): (&mut [u64], &mut [u64]) = (v, &mut scratch);
    let mut in_scratch = false;
    let mut count = [0usize; 1 << BITS];
    for shift in (0..64).step_by(BITS as usize) {
        count.fill(0);
        for &x in src.iter() {
            count[((x >> shift) & MASK) as usize] += 1;
        }
        if count.contains(&src.len()) {
            continue; // every key has this digit: the pass would not move anything
        }
        let mut at = 0;
        for c in count.iter_mut() {
            (*c, at) = (at, at + *c);
        }
        for &x in src.iter() {
            let d = ((x >> shift) & MASK) as usize;
            dst[count[d]] = x;
            count[d] += 1;
        }
        std::mem::swap(&mut src, &mut dst);
        in_scratch = !in_scratch;
    }
    if in_scratch {
        dst.copy_from_slice(src);
    }
}

fn interpolate(n: u64, q: f64, at: impl Fn(u64) -> f64) -> f64 {
    let rank = q / 100.0 * (n - 1) as f64;
    let lo = rank.floor() as u64;
    let hi = (lo + 1).min(n - 1);
    let frac = rank - lo as f64;
    let (a, b) = (at(lo), at(hi));
    a + (b - a) * frac
}

/// Points of an empirical CDF the lab draws: at most this many per curve (plus the last).
pub const CDF_POINTS: usize = 300;

/// An empirical CDF: (seconds, cumulative fraction) points.
pub type Cdf = Vec<(f64, f64)>;

/// The CDF of sorted ns values, in seconds, thinned to at most `CDF_POINTS` + 1 points (evenly spaced
/// ranks, always the last).
pub fn cdf_of_sorted_ns(v: &[u64]) -> Cdf {
    debug_assert!(v.is_sorted());
    cdf_of_sorted(v.len(), |i| v[i] as f64 / 1e9)
}

/// The CDF of sorted values already in seconds, thinned the same way.
pub fn cdf_of_sorted_s(v: &[f64]) -> Cdf {
    debug_assert!(v.is_sorted());
    cdf_of_sorted(v.len(), |i| v[i])
}

fn cdf_of_sorted(n: usize, at: impl Fn(usize) -> f64) -> Cdf {
    if n == 0 {
        return vec![];
    }
    let step = n.div_ceil(CDF_POINTS).max(1);
    let mut out: Cdf = (step - 1..n).step_by(step).map(|i| (at(i), (i + 1) as f64 / n as f64)).collect();
    if out.last().is_none_or(|p| p.1 < 1.0) {
        out.push((at(n - 1), 1.0));
    }
    out
}

/// The lab's latency CDFs, of completed requests: TTFT, TPOT (requests with more than one output token) and
/// E2E.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LatencyCdfs {
    pub ttft: Cdf,
    pub tpot: Cdf,
    pub e2e: Cdf,
}

/// Percentile of a sorted slice (linear interpolation).
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    interpolate(sorted.len() as u64, q, |i| sorted[i as usize])
}


#[cfg(test)]
mod tests {
    use super::*;

    /// The radix sort is the standard sort: wide and narrow keys, duplicates, every size class.
    #[test]
    fn radix_sort_equals_the_standard_sort() {
        let mut r = crate::rng::stream(3, crate::rng::Stream::Study, 0);
        for (n, bits) in [(10, 64), (5000, 64), (70_000, 20), (70_000, 64), (300_000, 44), (20_000, 3)] {
            let v: Vec<u64> = (0..n).map(|_| r.below(u64::MAX) >> (64 - bits)).collect();
            let (mut a, mut b) = (v.clone(), v);
            sort_u64(&mut a);
            b.sort_unstable();
            assert_eq!(a, b, "{n} keys of {bits} bits");
        }
    }

    #[test]
    fn matches_numpy_linear() {
        // numpy.percentile([1,2,3,4,10], [50, 90, 99]) = [3.0, 7.6, 9.76]
        let mut v = vec![10.0, 1.0, 3.0, 2.0, 4.0];
        let s = Stats::from_f64(&mut v);
        assert_eq!(s.p50, 3.0);
        assert!((s.p90 - 7.6).abs() < 1e-12);
        assert!((s.p99 - 9.76).abs() < 1e-12);
        assert_eq!(s.max, 10.0);
        assert_eq!(s.mean, 4.0);
    }

    #[test]
    fn weighted_equals_expanded() {
        let pairs = [(5_000_000_000u64, 3u64), (1_000_000_000, 2), (2_000_000_000, 1)];
        let mut packed: Vec<u64> = pairs.iter().map(|(v, c)| v << 20 | c).collect();
        let mut flat: Vec<u64> = pairs.iter().flat_map(|(v, c)| std::iter::repeat_n(*v, *c as usize)).collect();
        assert_eq!(Stats::from_packed_ns(&mut packed, 20), Stats::from_ns(&mut flat));
    }
}
