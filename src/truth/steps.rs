//! Fitting the roofline to measured step times: a table of steps (decode batches, prefill chunks) with their
//! measured durations gives the efficiency factors — MFU, the weight- and KV-read bandwidth efficiencies and
//! the per-step overhead — fitted on every other row, with the error on the rows held out.
//!
//! The table is CSV with columns `phase` (`decode` or `prefill`), `batch_size`, `new_tokens_per_req` (prefill
//! chunk per request; 1 for decode), `kv_context` (tokens already in KV per request) and the measured step in
//! ms: `step_ms`, or `step_ms_raw_profile_vidur_formula` falling back to `vidur_rf_step_ms` (the shape of
//! `tests/data/measured-step-times-llama3-8b-a100.csv`).

use serde::Serialize;

use crate::cost::{Hardware, Model, Roofline, StepWork};

/// One measured step.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepRow {
    pub line: usize,
    pub decode: bool,
    pub batch: u32,
    pub new_tokens: u32,
    pub kv_context: u64,
    pub measured_ms: f64,
}

impl StepRow {
    fn work(&self) -> StepWork {
        let (b, n, k) = (self.batch, self.new_tokens, self.kv_context);
        if self.decode {
            StepWork { decode_seqs: b, decode_context_tokens: k * b as u64, ..Default::default() }
        } else {
            let pairs = (n as u64 * k + n as u64 * (n as u64 + 1) / 2) * b as u64;
            StepWork {
                prefill_seqs: b,
                prefill_tokens: n * b,
                prefill_attention_pairs: pairs,
                prefill_context_tokens: k * b as u64,
                ..Default::default()
            }
        }
    }
}

/// The factors fitted.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Efficiencies {
    pub mfu: f64,
    pub weight_bw_efficiency: f64,
    pub kv_bw_efficiency: f64,
    pub step_overhead_ms: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepFitRow {
    #[serde(flatten)]
    pub row: StepRow,
    pub training: bool,
    pub baseline_ms: f64,
    pub fitted_ms: f64,
    pub baseline_ape: f64,
    pub fitted_ape: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepFit {
    pub objective: &'static str,
    pub baseline: Efficiencies,
    pub fitted: Efficiencies,
    pub rows: Vec<StepFitRow>,
    pub held_out_mape_baseline: f64,
    pub held_out_mape_fitted: f64,
}

/// The most rows a step table may have: a fit evaluates every row a few thousand times.
pub const MAX_ROWS: usize = 100_000;
/// The most tokens one step may carry (batch × new tokens per request): well past any engine's token budget,
/// and within the step's 32-bit token count.
const MAX_STEP_TOKENS: f64 = 1e7;

/// The rows of a step table; the error names the line and the column.
pub fn parse_steps(text: &str) -> Result<Vec<StepRow>, String> {
    let mut rd = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .flexible(true)
        .from_reader(text.trim_start_matches('\u{feff}').as_bytes());
    let header: Vec<String> = rd.headers().map_err(|e| format!("line 1: {e}"))?.iter().map(str::to_string).collect();
    let col = |n: &str| header.iter().position(|h| h == n);
    let need =
        |n: &str| col(n).ok_or_else(|| format!("line 1: missing column `{n}` (header has: {})", header.join(", ")));
    let (phase, batch, tokens, ctx) =
        (need("phase")?, need("batch_size")?, need("new_tokens_per_req")?, need("kv_context")?);
    let measured: Vec<usize> =
        ["step_ms", "step_ms_raw_profile_vidur_formula", "vidur_rf_step_ms"].iter().filter_map(|n| col(n)).collect();
    if measured.is_empty() {
        return Err(
            "line 1: no measured column (`step_ms`, or `step_ms_raw_profile_vidur_formula` / `vidur_rf_step_ms`)"
                .into(),
        );
    }
    let names = ["step_ms", "step_ms_raw_profile_vidur_formula", "vidur_rf_step_ms"];
    let mut rows = Vec::new();
    for rec in rd.records() {
        let rec = rec.map_err(|e| format!("line {}: {e}", e.position().map_or(0, |p| p.line())))?;
        let line = rec.position().map_or(0, |p| p.line() as usize);
        if rows.len() == MAX_ROWS {
            return Err(format!("line {line}: a step table has at most {MAX_ROWS} rows"));
        }
        // A whole number within its bounds, named with its column.
        let whole = |i: usize, what: &str, lo: f64, hi: f64| {
            let raw = rec.get(i).unwrap_or("");
            raw.parse::<f64>().ok().filter(|v| v.fract() == 0.0 && (lo..=hi).contains(v)).ok_or_else(|| {
                let hi = if hi < 1e6 { format!("{hi:.0}") } else { format!("{hi:e}") };
                format!("line {line}: `{what}` must be a whole number from {lo} to {hi} (got {raw:?})")
            })
        };
        let decode = match rec.get(phase) {
            Some("decode") => true,
            Some("prefill") => false,
            other => {
                return Err(format!("line {line}: `phase` must be decode or prefill (got {:?})", other.unwrap_or("")));
            }
        };
        // The first measured column with a value is the step; one that is not a step time is named.
        let (at, raw) = (measured.iter())
            .find_map(|&i| rec.get(i).filter(|s| !s.is_empty()).map(|s| (i, s)))
            .ok_or_else(|| format!("line {line}: no measured step time (columns {})", names.join(", ")))?;
        // A step of the simulated clock's resolution lasts 1e-6 ms; none lasts a day.
        let ms = raw.parse::<f64>().ok().filter(|v| (1e-3..=1e8).contains(v)).ok_or_else(|| {
            format!("line {line}: `{}` must be a step time from 0.001 to 10^8 ms (got {raw:?})", header[at])
        })?;
        let (b, n) = (whole(batch, "batch_size", 1.0, 65_536.0)?, whole(tokens, "new_tokens_per_req", 1.0, 1e6)?);
        if b * n > MAX_STEP_TOKENS {
            return Err(format!(
                "line {line}: `batch_size` × `new_tokens_per_req` is {:e} tokens in one step; at most {MAX_STEP_TOKENS:e}",
                b * n
            ));
        }
        let k = whole(ctx, "kv_context", 0.0, 1e7)?;
        rows.push(StepRow {
            line,
            decode,
            batch: b as u32,
            new_tokens: n as u32,
            kv_context: k as u64,
            measured_ms: ms,
        });
    }
    if rows.len() < 2 {
        return Err("the table needs at least two rows (one to fit, one to check)".into());
    }
    Ok(rows)
}

/// The roofline of `m` on `h` with the efficiencies `e`.
fn roofline(m: &Model, h: &Hardware, e: Efficiencies) -> Roofline {
    let h = Hardware {
        mfu: e.mfu,
        weight_bw_efficiency: e.weight_bw_efficiency,
        kv_bw_efficiency: e.kv_bw_efficiency,
        step_overhead_ns: e.step_overhead_ms * 1e6,
        ..h.clone()
    };
    Roofline::new(m, &h)
}

fn step_ms(roof: &Roofline, row: &StepRow) -> f64 {
    roof.step(&row.work()).total_ns as f64 / 1e6
}

/// Fit on every other row (the first, third, …) by a deterministic pattern search over the three efficiencies
/// (in log space, within [0.01, 1]) and the overhead (0 … 20 ms); the objective is the mean |ln(pred/measured)|.
pub fn fit_steps(m: &Model, h: &Hardware, rows: &[StepRow]) -> StepFit {
    let training = |i: usize| i.is_multiple_of(2);
    let err = |e: Efficiencies| {
        let roof = roofline(m, h, e);
        let t: Vec<f64> = rows
            .iter()
            .enumerate()
            .filter(|(i, _)| training(*i))
            .map(|(_, r)| libm::fabs(libm::log(step_ms(&roof, r) / r.measured_ms)))
            .collect();
        t.iter().sum::<f64>() / t.len() as f64
    };
    let baseline = Efficiencies {
        mfu: h.mfu,
        weight_bw_efficiency: h.weight_bw_efficiency,
        kv_bw_efficiency: h.kv_bw_efficiency,
        step_overhead_ms: h.step_overhead_ns / 1e6,
    };
    let clamp = |e: Efficiencies| Efficiencies {
        mfu: e.mfu.clamp(0.01, 1.0),
        weight_bw_efficiency: e.weight_bw_efficiency.clamp(0.01, 1.0),
        kv_bw_efficiency: e.kv_bw_efficiency.clamp(0.01, 1.0),
        step_overhead_ms: e.step_overhead_ms.clamp(0.0, 20.0),
    };
    let (mut best, mut best_err) = (baseline, err(baseline));
    let mut step = 0.5;
    while step > 1.0 / 1024.0 {
        let f = libm::exp2(step);
        let moves = [
            Efficiencies { mfu: best.mfu * f, ..best },
            Efficiencies { mfu: best.mfu / f, ..best },
            Efficiencies { weight_bw_efficiency: best.weight_bw_efficiency * f, ..best },
            Efficiencies { weight_bw_efficiency: best.weight_bw_efficiency / f, ..best },
            Efficiencies { kv_bw_efficiency: best.kv_bw_efficiency * f, ..best },
            Efficiencies { kv_bw_efficiency: best.kv_bw_efficiency / f, ..best },
            Efficiencies { step_overhead_ms: best.step_overhead_ms + step, ..best },
            Efficiencies { step_overhead_ms: best.step_overhead_ms - step, ..best },
            // The weight read and the overhead both cost about the same every step: along that ridge only
            // moves of both at once make progress.
            Efficiencies {
                weight_bw_efficiency: best.weight_bw_efficiency * f,
                step_overhead_ms: best.step_overhead_ms + step,
                ..best
            },
            Efficiencies {
                weight_bw_efficiency: best.weight_bw_efficiency / f,
                step_overhead_ms: best.step_overhead_ms - step,
                ..best
            },
            Efficiencies {
                weight_bw_efficiency: best.weight_bw_efficiency * f,
                step_overhead_ms: best.step_overhead_ms - step,
                ..best
            },
            Efficiencies {
                weight_bw_efficiency: best.weight_bw_efficiency / f,
                step_overhead_ms: best.step_overhead_ms + step,
                ..best
            },
        ];
        let mut moved = false;
        for c in moves.map(clamp) {
            let e = err(c);
            if e < best_err {
                (best, best_err, moved) = (c, e, true);
            }
        }
        if !moved {
            step /= 2.0;
        }
    }
    let ape = |p: f64, r: &StepRow| (p - r.measured_ms).abs() / r.measured_ms;
    let (before, after) = (roofline(m, h, baseline), roofline(m, h, best));
    let out: Vec<StepFitRow> = (rows.iter().enumerate())
        .map(|(i, r)| {
            let (b, f) = (step_ms(&before, r), step_ms(&after, r));
            StepFitRow {
                row: r.clone(),
                training: training(i),
                baseline_ms: b,
                fitted_ms: f,
                baseline_ape: ape(b, r),
                fitted_ape: ape(f, r),
            }
        })
        .collect();
    let held: Vec<&StepFitRow> = out.iter().filter(|r| !r.training).collect();
    let mape = |f: fn(&StepFitRow) -> f64| held.iter().map(|r| f(r)).sum::<f64>() / held.len().max(1) as f64;
    StepFit {
        objective: "mean over the training rows (every other row) of |ln(predicted / measured)|",
        baseline,
        fitted: best,
        held_out_mape_baseline: mape(|r| r.baseline_ape),
        held_out_mape_fitted: mape(|r| r.fitted_ape),
        rows: out,
    }
}
