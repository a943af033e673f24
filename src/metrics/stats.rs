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
        let n = v.len();
        if n == 0 {
            return Stats::default();
        }
        let sum: u128 = v.iter().map(|&x| x as u128).sum();
        let at = |i: u64| v[i as usize] as f64 / 1e9;
        Self::of(n as u64, mean_s(sum, n as u64), at, v[n - 1])
    }

    /// From f64 values (already in the output unit). Sorts `v`.
    pub fn from_f64(v: &mut [f64]) -> Self {
        sort_f64(v);
        let n = v.len();
        if n == 0 {
            return Stats::default();
        }
        let mean = v.iter().sum::<f64>() / n as f64;
        let p = |q: f64| interpolate(n as u64, q, |i| v[i as usize]);
        Stats { count: n as u64, mean, p50: p(50.0), p90: p(90.0), p95: p(95.0), p99: p(99.0), max: v[n - 1] }
    }

    /// The figures of `n` values from their mean and the value at each rank of their ascending order.
    fn of(n: u64, mean: f64, at: impl Fn(u64) -> f64, max_ns: u64) -> Self {
        let p = |q: f64| interpolate(n, q, &at);
        Stats { count: n, mean, p50: p(50.0), p90: p(90.0), p95: p(95.0), p99: p(99.0), max: max_ns as f64 / 1e9 }
    }

    /// From packed `ns << bits | count` words: a weighted sample, expanded logically. A run's inter-token
    /// latencies are one word per step — millions — so the percentiles come from a selection, not a sort
    /// (which was a fifth of an agent run's time): [`Weighted`] finds the buckets the percentiles' ranks fall
    /// in, and only those buckets' words are sorted. The order statistics are a full sort's exactly.
    pub fn from_packed_ns(v: &[u64], short: &[u32], bits: u32) -> Self {
        let w = Weighted::new(v, short, bits);
        if w.n == 0 {
            return Stats::default();
        }
        let ranks = [50.0, 90.0, 95.0, 99.0].map(|q| rank_pair(w.n, q));
        let picked = w.pick(ranks.iter().flat_map(|&(lo, hi)| [lo, hi]));
        Self::of(w.n, mean_s(w.sum_ns, w.n), |i| picked.at(i) as f64 / 1e9, w.max_ns)
    }
}

/// A mean in seconds from an exact sum of ns: one rounding, so it does not depend on the order values were
/// added in (the selection above visits them unsorted).
fn mean_s(sum_ns: u128, n: u64) -> f64 {
    sum_ns as f64 / n as f64 / 1e9
}

/// Buckets a value keeps to 11 significant bits: exact below 2^11, then 1024 per power of two. Monotone, so
/// a bucket's values are a contiguous run of the sorted order; 35,840 cover every 44-bit ITL.
const BUCKETS: usize = 34 * 1024 + 1024;

#[inline(always)]
fn bucket_of(ns: u64) -> usize {
    let bits = 64 - ns.leading_zeros();
    if bits <= 11 {
        ns as usize
    } else {
        let shift = bits - 11;
        shift as usize * 1024 + (ns >> shift) as usize
    }
}

/// A weighted sample's histogram: the count at or below each bucket, and the exact sum and max. The sample
/// is packed words and short ones (`metrics::widen_itl`).
struct Weighted<'a> {
    words: &'a [u64],
    short: &'a [u32],
    bits: u32,
    cum: Vec<u64>,
    n: u64,
    sum_ns: u128,
    max_ns: u64,
}

impl<'a> Weighted<'a> {
    fn new(words: &'a [u64], short: &'a [u32], bits: u32) -> Self {
        let mask = (1u64 << bits) - 1;
        let mut cum = vec![0u64; BUCKETS];
        let (mut sum_ns, mut max_ns) = (0u128, 0u64);
        each_word(words, short, bits, |x| {
            let (ns, count) = (x >> bits, x & mask);
            cum[bucket_of(ns)] += count;
            sum_ns += (ns as u128) * count as u128;
            max_ns = max_ns.max(ns);
        });
        let mut n = 0;
        for c in cum.iter_mut() {
            n += *c;
            *c = n;
        }
        Weighted { words, short, bits, cum, n, sum_ns, max_ns }
    }

    /// The bucket holding rank `i` (0-based, in the expanded ascending order).
    fn bucket_of_rank(&self, i: u64) -> usize {
        self.cum.partition_point(|&c| c <= i)
    }

    /// The words of the buckets holding `ranks`, sorted, with where each such bucket starts in rank.
    fn pick(&self, ranks: impl Iterator<Item = u64>) -> Picked {
        let mut wanted = vec![false; BUCKETS];
        for i in ranks {
            wanted[self.bucket_of_rank(i)] = true;
        }
        let mut words: Vec<u64> = Vec::new();
        each_word(self.words, self.short, self.bits, |x| {
            if wanted[bucket_of(x >> self.bits)] {
                words.push(x);
            }
        });
        words.sort_unstable();
        let mut runs: Vec<(u64, u64)> = Vec::new(); // (first rank of the word's run, ns), ascending
        let (mut last_bucket, mut at) = (usize::MAX, 0);
        let mask = (1u64 << self.bits) - 1;
        for x in words {
            let (ns, count) = (x >> self.bits, x & mask);
            let b = bucket_of(ns);
            if b != last_bucket {
                (last_bucket, at) = (b, if b == 0 { 0 } else { self.cum[b - 1] });
            }
            if count > 0 {
                runs.push((at, ns));
                at += count;
            }
        }
        Picked { runs }
    }
}

/// Every word of a sample of packed words and short ones, the short ones widened to `bits` count bits.
#[inline(always)]
fn each_word(words: &[u64], short: &[u32], bits: u32, mut f: impl FnMut(u64)) {
    for &x in words {
        f(x);
    }
    for &s in short {
        f(super::widen_itl(s, bits));
    }
}

/// The sorted runs of the picked buckets: each run's first rank and value.
struct Picked {
    runs: Vec<(u64, u64)>,
}

impl Picked {
    /// The value at rank `i`, which lies in a picked bucket.
    fn at(&self, i: u64) -> u64 {
        self.runs[self.runs.partition_point(|r| r.0 <= i) - 1].1
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

/// Sort `v` in `f64::total_cmp` order: through [`sort_u64`] on each value's total-order key (sign bit set
/// for positives, every bit flipped for negatives), then back. The keys' order is total_cmp's and the map is
/// one to one, so the result is the comparison sort's bit for bit — a run's TPOTs, 100k of them, sorted by
/// comparisons were the report's slowest sort.
pub(crate) fn sort_f64(v: &mut [f64]) {
    const SIGN: u64 = 1 << 63;
    let key = |x: f64| {
        let b = x.to_bits();
        if b & SIGN == 0 { b | SIGN } else { !b }
    };
    let mut keys: Vec<u64> = v.iter().map(|&x| key(x)).collect();
    sort_u64(&mut keys);
    for (x, k) in v.iter_mut().zip(keys) {
        *x = f64::from_bits(if k & SIGN != 0 { k & !SIGN } else { !k });
    }
}

/// The two ranks percentile `q` of `n` values interpolates between.
fn rank_pair(n: u64, q: f64) -> (u64, u64) {
    let lo = (q / 100.0 * (n - 1) as f64).floor() as u64;
    (lo, (lo + 1).min(n - 1))
}

fn interpolate(n: u64, q: f64, at: impl Fn(u64) -> f64) -> f64 {
    let rank = q / 100.0 * (n - 1) as f64;
    let (lo, hi) = rank_pair(n, q);
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

/// Two-sided 95 % Student t quantile for `df` degrees of freedom (1.96 beyond 30).
pub fn t95(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    if df == 0 { f64::INFINITY } else { T.get(df - 1).copied().unwrap_or(1.96) }
}

/// Mean and 95 % confidence interval of `x` (a point when there is one value).
pub fn mean_ci(x: &[f64]) -> (f64, f64, f64) {
    let n = x.len();
    let mean = x.iter().sum::<f64>() / n.max(1) as f64;
    if n < 2 {
        return (mean, mean, mean);
    }
    let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1) as f64;
    let half = t95(n - 1) * (var / n as f64).sqrt();
    (mean, mean - half, mean + half)
}

/// [`mean_ci`] of a quantity that cannot be negative (a rate, a count): the interval's low end at 0 at least
/// (a t interval over a few spread seeds may reach below it).
pub fn mean_ci_nonnegative(x: &[f64]) -> (f64, f64, f64) {
    let (mean, lo, hi) = mean_ci(x);
    (mean, lo.max(0.0), hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three seeds' capacities 0.6, 0.7 and 9.9 req/s: the t interval (t = 4.303) reaches below zero; the
    /// nonnegative one stops at 0 with the same mean and top, and one above zero is left as it is.
    #[test]
    fn a_rates_interval_stops_at_zero() {
        let x = [0.6, 0.7, 9.9];
        let (m, lo, hi) = mean_ci(&x);
        assert!((m - 11.2 / 3.0).abs() < 1e-12 && lo < 0.0, "{lo}");
        assert_eq!(mean_ci_nonnegative(&x), (m, 0.0, hi));
        assert_eq!(mean_ci_nonnegative(&[5.0, 6.0, 7.0]), mean_ci(&[5.0, 6.0, 7.0]), "above zero: unchanged");
    }

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

    /// The f64 sort is total_cmp's comparison sort bit for bit: signs, zeros of both signs, infinities,
    /// NaNs, subnormals, ties, every size class.
    #[test]
    fn f64_sort_equals_the_total_order_sort() {
        let mut r = crate::rng::stream(4, crate::rng::Stream::Study, 0);
        let specials = [
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            -f64::NAN,
            5e-324,
            -5e-324,
            f64::MAX,
            f64::MIN,
            1.0,
            1.0,
        ];
        for n in [0usize, 1, 12, 5000, 70_000, 300_000] {
            let mut v: Vec<f64> = (0..n)
                .map(|i| {
                    if i % 97 < specials.len() {
                        specials[i % 97]
                    } else {
                        (r.uniform() - 0.3) * 10f64.powi((i % 40) as i32 - 20)
                    }
                })
                .collect();
            let mut w = v.clone();
            sort_f64(&mut v);
            w.sort_unstable_by(|a, b| a.total_cmp(b));
            assert_eq!(
                v.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                w.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                "{n} values"
            );
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
        let packed: Vec<u64> = pairs.iter().map(|(v, c)| v << 20 | c).collect();
        let mut flat: Vec<u64> = pairs.iter().flat_map(|(v, c)| std::iter::repeat_n(*v, *c as usize)).collect();
        assert_eq!(Stats::from_packed_ns(&packed, &[], 20), Stats::from_ns(&mut flat));
    }

    /// The reference for the selection: sort every word, then read ranks off the running counts.
    fn packed_by_sorting(v: &[u64], bits: u32) -> Stats {
        let mut v = v.to_vec();
        v.sort_unstable();
        let mask = (1u64 << bits) - 1;
        let n: u64 = v.iter().map(|x| x & mask).sum();
        if n == 0 {
            return Stats::default();
        }
        let sum: u128 = v.iter().map(|x| (x >> bits) as u128 * (x & mask) as u128).sum();
        let cum: Vec<u64> = v
            .iter()
            .scan(0, |acc, x| {
                *acc += x & mask;
                Some(*acc)
            })
            .collect();
        let at = |i: u64| (v[cum.partition_point(|c| *c <= i)] >> bits) as f64 / 1e9;
        let max = v.iter().map(|x| x >> bits).max().unwrap_or(0);
        Stats::of(n, mean_s(sum, n), at, max)
    }

    /// The selection's figures are the full sort's, bit for bit: narrow and wide gaps, heavy ties, every
    /// bucket class (exact small values, 44-bit saturated ones), one word, all words in one bucket, zero
    /// counts.
    #[test]
    fn selected_percentiles_equal_sorted_ones() {
        let mut r = crate::rng::stream(5, crate::rng::Stream::Study, 0);
        let cases: [(usize, u32, u64); 8] = [
            (1, 30, 3),
            (7, 10, 1),
            (5000, 44, 256),
            (100_000, 24, 8),
            (100_000, 12, 1),
            (300_000, 44, 1),
            (50_000, 3, 1000),
            (20_000, 40, 0),
        ];
        for (n, width, max_count) in cases {
            let v: Vec<u64> = (0..n)
                .map(|_| {
                    let ns = r.below(u64::MAX) >> (64 - width);
                    let count = if max_count == 0 { r.below(3) } else { 1 + r.below(max_count) };
                    ns << ITL_BITS | count
                })
                .collect();
            let expected = packed_by_sorting(&v, ITL_BITS);
            assert_eq!(Stats::from_packed_ns(&v, &[], ITL_BITS), expected, "{n} words of {width} bits");
            // The same sample with the words that fit in half a word stored that way (as the recorder does).
            let (mut long, mut short) = (Vec::new(), Vec::new());
            for &x in &v {
                match crate::metrics::short_itl(x >> ITL_BITS, x & ((1 << ITL_BITS) - 1)) {
                    Some(s) => short.push(s),
                    None => long.push(x),
                }
            }
            assert_eq!(
                Stats::from_packed_ns(&long, &short, ITL_BITS),
                expected,
                "{n} words of {width} bits, {} short",
                short.len()
            );
        }
        let same = vec![(7_000_123u64 << ITL_BITS) | 5; 1000];
        assert_eq!(Stats::from_packed_ns(&same, &[], ITL_BITS), packed_by_sorting(&same, ITL_BITS));
        assert_eq!(Stats::from_packed_ns(&[], &[], ITL_BITS), Stats::default());
    }

    const ITL_BITS: u32 = crate::metrics::ITL_COUNT_BITS;
}
