//! Output lengths of a run saved without its per-request lists (`vllm bench serve` without
//! `--save-detailed`): only the mean is in the file (its token total ÷ completed), yet the E2E percentiles carry
//! the spread. A request of n output tokens ends at about TTFT + (n − 1) · TPOT, so each E2E quantile gives the
//! output length of the request at that quantile; a lognormal with the file's mean is fitted to those lengths
//! (the ShareGPT outputs vLLM benchmarks with are right-skewed; its sampler's filters bound them). Fixing every
//! length at the mean instead puts the E2E median at the mean's: 35–51 % off on such files.

use super::{LatencyMs, Measured};

/// Without TTFT's and TPOT's quantiles, a lognormal's coefficient of variation below this is a fixed length
/// (the `random` dataset's with `--ignore-eos`): E2E quantiles within a few percent of each other.
const FIXED_CV: f64 = 0.1;
/// A run is of one length when E2E, TTFT and TPOT at one quantile give the mean within this fraction.
const FIXED_SPREAD: f64 = 0.10;
/// The largest CV fitted: beyond it a lognormal's mean rests on a tail no run of a few thousand requests shows.
pub const MAX_CV: f64 = 5.0;

/// vLLM's ShareGPT sampler keeps a conversation only when its prompt has at least 4 and at most 1,024 tokens,
/// its output at least 4, and the two at most 2,048 (`is_valid_sequence` in vllm/benchmarks/datasets.py,
/// the filters `sample_sharegpt_requests` had in benchmark_serving.py).
const SHAREGPT_MAX_TOTAL_TOKENS: f64 = 2048.0;
const SHAREGPT_MIN_TOKENS: f64 = 4.0;

/// What the percentiles say about the output lengths: a lognormal's CV and the longest output (None: fixed at
/// the mean), and the note saying how it was read.
#[derive(Clone, Debug, PartialEq)]
pub struct Inferred {
    pub cv: Option<f64>,
    pub max_tokens: Option<u32>,
    pub note: String,
}

/// The output lengths of a run with mean `mean_tokens` output tokens and these latencies, drawn from
/// `dataset` (its name as the file gives it) with prompts of `mean_input_tokens`. None when the file lacks
/// what it takes: an E2E quantile besides the mean, TTFT's and TPOT's medians (or means).
pub fn infer_output(
    m: &Measured,
    mean_tokens: f64,
    mean_input_tokens: Option<f64>,
    dataset: Option<&str>,
) -> Option<Inferred> {
    let mid = |l: &LatencyMs| l.median.or(l.mean).filter(|x| x.is_finite() && *x > 0.0);
    let (ttft, tpot) = (mid(&m.ttft_ms)?, mid(&m.tpot_ms)?);
    // The request at an E2E quantile: its TTFT and TPOT taken at their medians (their tails belong to other
    // requests: a p99 TTFT is a request that queued, not the one that generated longest).
    let at = |e2e: Option<f64>| e2e.filter(|x| x.is_finite()).map(|e| (1.0 + (e - ttft) / tpot).max(1.0));
    let e = &m.e2e_ms;
    let points: Vec<(f64, f64)> = [(0.0, e.median), (1.281_551_6, e.p90), (1.644_853_6, e.p95), (2.326_347_9, e.p99)]
        .into_iter()
        .filter_map(|(z, q)| Some((z, at(q)?)))
        .collect();
    if points.is_empty() || !(mean_tokens.is_finite() && mean_tokens >= 1.0) {
        return None;
    }
    let sigma = fit_sigma(&points, mean_tokens);
    let cv = libm::sqrt(libm::expm1(sigma * sigma)).min(MAX_CV);
    let said: Vec<String> = points.iter().map(|(z, n)| format!("{} {n:.0}", quantile_name(*z))).collect();
    let read = format!(
        "output lengths read from the E2E percentiles (n ≈ 1 + (E2E − TTFT median) ÷ TPOT median: {}; mean {mean_tokens:.1} from the token total)",
        said.join(", ")
    );
    // One length for every request (the `random` dataset with EOS ignored): then each quantile's E2E is its
    // TTFT's and TPOT's quantile's, so E2E, TTFT and TPOT taken at one quantile give the mean back — while with
    // lengths that differ the E2E tail is the longest outputs' and stands well above.
    let same_quantile: Vec<f64> = [
        (e.median, m.ttft_ms.median, m.tpot_ms.median),
        (e.p90, m.ttft_ms.p90, m.tpot_ms.p90),
        (e.p95, m.ttft_ms.p95, m.tpot_ms.p95),
        (e.p99, m.ttft_ms.p99, m.tpot_ms.p99),
    ]
    .into_iter()
    .filter_map(|(e2e, ttft, tpot)| Some(1.0 + (e2e? - ttft?) / tpot.filter(|t| *t > 0.0)?))
    .collect();
    let one_length = if same_quantile.is_empty() {
        cv < FIXED_CV
    } else {
        same_quantile.iter().all(|n| (n / mean_tokens - 1.0).abs() <= FIXED_SPREAD)
    };
    if one_length {
        return Some(Inferred {
            cv: None,
            max_tokens: None,
            note: format!(
                "{read}; at each quantile, E2E ≈ TTFT + (n − 1) · TPOT gives the mean within 10 %: one length, fixed at the mean"
            ),
        });
    }
    let sharegpt = dataset.is_some_and(|d| d.to_ascii_lowercase().contains("sharegpt"));
    let max_tokens = sharegpt.then(|| {
        let prompt = mean_input_tokens.unwrap_or(SHAREGPT_MIN_TOKENS).max(SHAREGPT_MIN_TOKENS);
        (SHAREGPT_MAX_TOTAL_TOKENS - prompt).max(SHAREGPT_MIN_TOKENS) as u32
    });
    let bound = match max_tokens {
        Some(t) => format!(", at most {t} (vLLM's ShareGPT sampler keeps prompt + output ≤ 2,048 tokens)"),
        None => String::new(),
    };
    Some(Inferred {
        cv: Some(cv),
        max_tokens,
        note: format!("{read}: lognormal with that mean, CV {cv:.2}{bound}, not every request at the mean"),
    })
}

fn quantile_name(z: f64) -> &'static str {
    if z < 0.5 {
        "median"
    } else if z < 1.5 {
        "p90"
    } else if z < 2.0 {
        "p95"
    } else {
        "p99"
    }
}

/// The lognormal σ whose quantiles, with the mean held at `mean`, come closest in log to the `points`
/// (z, length): ln n_z = ln mean − σ²/2 + z·σ. A grid of σ by thousandths: the fit is one-dimensional and
/// bounded, and a grid needs no starting point.
fn fit_sigma(points: &[(f64, f64)], mean: f64) -> f64 {
    let ln_mean = libm::log(mean);
    let err = |s: f64| -> f64 {
        points.iter().map(|(z, n)| libm::log(*n) - (ln_mean - s * s / 2.0 + z * s)).map(|d| d * d).sum()
    };
    let max_sigma = libm::sqrt(libm::log1p(MAX_CV * MAX_CV));
    let steps = (max_sigma * 1000.0) as u32;
    (0..=steps)
        .map(|k| k as f64 / 1000.0)
        .fold((0.0, f64::INFINITY), |best, s| {
            let e = err(s);
            if e < best.1 { (s, e) } else { best }
        })
        .0
}
