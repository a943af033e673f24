//! Calibration: fit the cost model's global multipliers (`cost_scale.prefill`, `cost_scale.decode`, and the
//! extra knobs asked for) on some measured runs, and show — before the fit is used — whether it predicts
//! better than the uncalibrated model on runs it did not see.
//!
//! Each case's scenario is the base scenario (model, GPUs, engine settings) with the case's workload: its rate
//! (or closed loop, or burst), its request count and its lengths — the measured (input, output) pairs replayed
//! in order when the file has them. The objective, over the training cases, sums over TTFT, TPOT, ITL and E2E
//! (median and mean) a trimmed mean of |ln(predicted / measured)|; a case past saturation (the measurement's
//! or the model's) counts by its throughput only. Calibration corrects a global scale; it cannot fix a
//! scheduler the model lacks, and the verdict says when the fit does not beat the uncalibrated model.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;

use super::fit;
pub use super::fit::Extra;
use super::{Case, LatencyMs, Rate, checks};
use crate::scenario::{self, ArrivalSpec, Budget, ClassSpec, LengthSpec, PrefixSpec, Scenario, Spec};

/// Requests a case's run simulates when its file does not say how many it sent.
const DEFAULT_REQUESTS: u64 = 500;
/// The most steps one case's run may take (its upper bound, `Scenario::estimate`): a few seconds natively;
/// a calibration runs each case a few hundred times. A case past it simulates fewer requests, and says so.
pub const CASE_STEPS: f64 = 2e7;

/// The gate's default: a calibrated answer passes when its median error on runs it did not see is at most 20 %
/// (the field's onboarding tools gate a calibration at a tolerance of this order).
pub const DEFAULT_TOLERANCE: f64 = 0.20;
/// The gate's tolerance the user may give, in percent.
pub const TOLERANCE_PCT: (f64, f64) = (0.1, 1000.0);
/// `--fit auto`: choose the knobs by leave-one-out on the training cases.
pub const AUTO: &str = "auto";
/// A knob chosen by leave-one-out must lower its median error by more than this (half a point) over fitting
/// the two multipliers alone: a knob that does not earn its place is not added.
const KNOB_MARGIN: f64 = 0.005;
/// Held out at heavy load, a fit worse than the uncalibrated model by more than this (a point of median APE)
/// is not recommended; within it, the two are the same.
const HEAVY_WORSE: f64 = 0.01;
/// A metric "much worse" after calibration: its error at least 1.5 times and 10 points above the uncalibrated.
const MUCH_WORSE: (f64, f64) = (1.5, 0.10);

/// How a calibration chooses its knobs and judges its answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// The knobs fitted besides the two multipliers; with `choose`, the candidates (none named: `Extra::AUTO`).
    pub extras: Vec<Extra>,
    /// Choose the knobs by leave-one-out on the training cases — never by the held-out cases: the two
    /// multipliers alone, or with one candidate knob.
    pub choose: bool,
    /// The gate: the recommended model's median error on runs it did not see, at most this fraction.
    pub tolerance: f64,
    /// What each case's run (cut to [`CASE_STEPS`]) may use, with `runs_at_once` calibrations side by side: a
    /// case over it refuses the calibration before anything runs, naming the case.
    pub budget: Budget,
    pub runs_at_once: u32,
}

impl Default for Options {
    fn default() -> Options {
        Options { extras: vec![], choose: false, tolerance: DEFAULT_TOLERANCE, budget: Budget::NATIVE, runs_at_once: 1 }
    }
}

impl Options {
    /// From `--fit`'s names (`auto` among them: choose) and the gate's tolerance in percent. The error names
    /// its field (`fit`, `tolerance_pct`) and the allowed values.
    pub fn parse(fit: &[String], tolerance_pct: Option<f64>) -> Result<Options, (&'static str, String)> {
        let mut o = Options::default();
        for f in fit {
            match Extra::parse(f) {
                _ if f == AUTO => o.choose = true,
                Some(x) if !o.extras.contains(&x) => o.extras.push(x),
                Some(_) => {}
                None => {
                    let known = Extra::ALL.map(|x| x.name()).join(", ");
                    return Err(("fit", format!("`{f}` is not a knob (one of: {AUTO}, {known})")));
                }
            }
        }
        // The search's coordinates in one order, however they were named.
        o.extras.sort_by_key(|x| Extra::ALL.iter().position(|y| y == x));
        if let Some(t) = tolerance_pct {
            let (lo, hi) = TOLERANCE_PCT;
            if !(t.is_finite() && (lo..=hi).contains(&t)) {
                let shown =
                    if t.abs() >= 1e6 || (t != 0.0 && t.abs() < 1e-3) { format!("{t:e}") } else { format!("{t}") };
                return Err(("tolerance_pct", format!("{shown} is outside {lo} … {hi} (percent)")));
            }
            o.tolerance = t / 100.0;
        }
        Ok(o)
    }

    /// The knob sets to fit: the one asked for, or (choosing) none and each candidate alone — the all-reduce
    /// only when some case runs at TP above 1, one training case (nothing to leave out) none.
    fn candidates(&self, scen: &[&Scenario], n_train: usize) -> Vec<Vec<Extra>> {
        if !self.choose {
            return vec![self.extras.clone()];
        }
        if n_train < 2 {
            return vec![vec![]];
        }
        let tp = scen.iter().any(|s| s.pools.iter().any(|p| p.hardware.tp > 1));
        let pool = if self.extras.is_empty() { Extra::AUTO.to_vec() } else { self.extras.clone() };
        let singles = pool.into_iter().filter(|x| tp || *x != Extra::TpComm).map(|x| vec![x]);
        std::iter::once(vec![]).chain(singles).collect()
    }
}

/// The compared figures: (name, the case's measurement in ms, the report's prediction in ms).
type Metric = (&'static str, fn(&Case) -> Option<f64>, fn(&crate::Report) -> f64);
const METRICS: [Metric; 8] = [
    ("TTFT median", |c| c.measured.ttft_ms.median, |r| r.summary.ttft_s.p50 * 1e3),
    ("TTFT mean", |c| c.measured.ttft_ms.mean, |r| r.summary.ttft_s.mean * 1e3),
    ("TPOT median", |c| c.measured.tpot_ms.median, |r| r.summary.tpot_s.p50 * 1e3),
    ("TPOT mean", |c| c.measured.tpot_ms.mean, |r| r.summary.tpot_s.mean * 1e3),
    ("ITL median", |c| itl(c)?.median, |r| r.summary.itl_s.p50 * 1e3),
    ("ITL mean", |c| itl(c)?.mean, |r| r.summary.itl_s.mean * 1e3),
    ("E2E median", |c| c.measured.e2e_ms.median, |r| r.summary.e2e_s.p50 * 1e3),
    ("E2E mean", |c| c.measured.e2e_ms.mean, |r| r.summary.e2e_s.mean * 1e3),
];
const N: usize = METRICS.len();

/// The tails: predicted and reported beside [`METRICS`], never fitted nor counted in any error (a fit to p99s
/// would chase the few slowest requests of a run).
const TAILS: [Metric; 7] = [
    ("TTFT p90", |c| c.measured.ttft_ms.p90, |r| r.summary.ttft_s.p90 * 1e3),
    ("TTFT p99", |c| c.measured.ttft_ms.p99, |r| r.summary.ttft_s.p99 * 1e3),
    ("TPOT p90", |c| c.measured.tpot_ms.p90, |r| r.summary.tpot_s.p90 * 1e3),
    ("TPOT p99", |c| c.measured.tpot_ms.p99, |r| r.summary.tpot_s.p99 * 1e3),
    ("ITL p99", |c| itl(c)?.p99, |r| r.summary.itl_s.p99 * 1e3),
    ("E2E p90", |c| c.measured.e2e_ms.p90, |r| r.summary.e2e_s.p90 * 1e3),
    ("E2E p99", |c| c.measured.e2e_ms.p99, |r| r.summary.e2e_s.p99 * 1e3),
];
const T: usize = TAILS.len();

/// A case's ITL, unless it was measured per streamed chunk of several tokens (mean ITL over twice the mean
/// TPOT): the model's ITL is per token.
fn itl(c: &Case) -> Option<&LatencyMs> {
    let m = &c.measured;
    let chunked = matches!((m.itl_ms.mean, m.tpot_ms.mean), (Some(i), Some(t)) if i > 2.0 * t);
    (!chunked).then_some(&m.itl_ms)
}

/// The result: the fit, whether to use it, the table of every case and metric, and what was flagged.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Calibration {
    pub objective: &'static str,
    pub fitted: Multipliers,
    /// The model to use: `calibrated` only when the fit predicts the training cases left out one at a time
    /// better than the uncalibrated model, the held-out cases (if any) no worse, overall and at heavy load, and
    /// no metric much worse in either; with one training case (nothing to leave out) the held-out cases
    /// decide. `uncalibrated` otherwise.
    pub recommended: &'static str,
    /// Why, in words: the knobs' choice, the leave-one-out and held-out errors, the gate, what was flagged.
    pub verdict: String,
    /// The recommended model's median error on runs it did not see against the tolerance.
    pub gate: Gate,
    /// With `--fit auto`: each knob set tried and its leave-one-out error, the chosen one first among equals.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub knob_choice: Vec<KnobTrial>,
    /// Median APE over every held-out latency figure (cases past saturation left out), before and after.
    pub held_out: Headline,
    /// Median APE over the training cases' latency figures: uncalibrated, and each case predicted by a fit
    /// on the other training cases.
    pub leave_one_out: Headline,
    /// [`held_out`](Self::held_out) at heavy load: the held-out cases above every training case's load
    /// ([`heavy_load`]), their latency medians.
    pub heavy_load: Headline,
    /// Repeated runs of one configuration in the bundle: how far they differ from their own mean.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub noise_floor: Option<NoiseFloor>,
    pub train_error_baseline: f64,
    pub train_error_calibrated: f64,
    pub rows: Vec<Row>,
    /// The tails (p90, p99) of every case, uncalibrated and calibrated: reported, never fitted nor counted in
    /// an error above.
    pub tail_rows: Vec<Row>,
    /// Per metric: held-out MAPE before and after (None when no held-out case has the metric).
    pub held_out_mape: Vec<MetricError>,
    /// Per metric: the training cases' MAPE uncalibrated and left out one at a time.
    pub leave_one_out_mape: Vec<MetricError>,
    /// Cases past saturation: counted by their throughput only.
    pub saturated: Vec<Saturated>,
    /// Knobs asked for that the cases cannot identify (the objective does not move with them): left at their
    /// neutral value and not reported as fitted.
    pub unidentified: Vec<&'static str>,
    pub warnings: Vec<String>,
    pub notes: Vec<String>,
}

/// A median absolute percentage error over `figures` figures, before and after calibration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Headline {
    pub figures: usize,
    pub baseline: Option<f64>,
    pub calibrated: Option<f64>,
}

/// The pass/fail gate: the recommended model's median error `over` the held-out cases (else the training
/// cases left out one at a time) against `tolerance`; `pass` None when there is no such error.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Gate {
    pub tolerance: f64,
    pub over: &'static str,
    pub model: &'static str,
    pub error: Option<f64>,
    pub pass: Option<bool>,
}

/// One knob set `--fit auto` tried: its knobs ("none": the two multipliers alone), the leave-one-out median
/// error of its fit, which chooses, whether its fit left a knob idle (then it cannot be chosen) and whether it
/// was chosen; then, shown and never consulted, its fit's held-out median error and that at heavy load
/// ([`heavy_load`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KnobTrial {
    pub knobs: String,
    pub leave_one_out: Option<f64>,
    pub idle: bool,
    pub chosen: bool,
    pub held_out: Option<f64>,
    pub heavy: Option<f64>,
}

impl KnobTrial {
    /// The trial's "chosen" cell: yes, or why it could not be (a knob its fit left idle), else empty.
    pub fn chosen_word(&self) -> &'static str {
        if self.chosen {
            "yes"
        } else if self.idle {
            "no: a knob left idle"
        } else {
            ""
        }
    }
}

/// The spread of repeated runs: over `groups` configurations measured more than once (`runs` in all), the
/// median over their latency figures of the largest |run − the runs' mean| ÷ their mean.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct NoiseFloor {
    pub groups: usize,
    pub runs: usize,
    pub spread: f64,
}

/// A case past saturation, and its throughput: measured, and predicted before and after.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Saturated {
    pub case: String,
    pub training: bool,
    pub why: String,
    pub offered_rps: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured_rps: Option<f64>,
    pub baseline_rps: f64,
    pub calibrated_rps: f64,
}

/// What calibration fitted: the prefill and decode multipliers always, and each extra knob it was asked to
/// fit (absent otherwise).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Multipliers {
    pub prefill: f64,
    pub decode: f64,
    /// Added to every step, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step_overhead_ms: Option<f64>,
    /// Added to every request before it queues (`engine.request_overhead_ms`), ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_overhead_ms: Option<f64>,
    /// Multiplies the tensor-parallel all-reduce time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tp_comm: Option<f64>,
    /// The serving front end's time per request, ms (its per-token time is the base scenario's, or 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frontend_ms: Option<f64>,
    /// Added to the host work per running sequence per step (`engine.step_cpu.per_seq_us`), µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq_overhead_us: Option<f64>,
}

impl Multipliers {
    /// "prefill × 1.016, decode × 0.692" and each extra fitted: "step overhead + 1.20 ms", "TP all-reduce × 1.40".
    pub fn sentence(&self) -> String {
        let mut parts = vec![format!("prefill × {:.3}", self.prefill), format!("decode × {:.3}", self.decode)];
        if let Some(ms) = self.step_overhead_ms {
            parts.push(format!("step overhead + {ms:.2} ms"));
        }
        if let Some(ms) = self.request_overhead_ms {
            parts.push(format!("request overhead + {ms:.1} ms"));
        }
        if let Some(f) = self.tp_comm {
            parts.push(format!("TP all-reduce × {f:.3}"));
        }
        if let Some(ms) = self.frontend_ms {
            parts.push(format!("front end {ms:.2} ms a request"));
        }
        if let Some(us) = self.seq_overhead_us {
            parts.push(format!("per-sequence step time + {us:.1} µs"));
        }
        parts.join(", ")
    }

    /// The extra knobs fitted (present), in [`Extra::ALL`]'s order.
    pub fn extras(&self) -> Vec<Extra> {
        let fitted = |x: &Extra| match x {
            Extra::StepOverhead => self.step_overhead_ms.is_some(),
            Extra::RequestOverhead => self.request_overhead_ms.is_some(),
            Extra::TpComm => self.tp_comm.is_some(),
            Extra::Frontend => self.frontend_ms.is_some(),
            Extra::SeqOverhead => self.seq_overhead_us.is_some(),
        };
        Extra::ALL.into_iter().filter(fitted).collect()
    }

    /// Forget coordinate `i`'s knob (the cases cannot identify it): a multiplier back to 1, an extra absent.
    fn forget(&mut self, i: usize, extras: &[Extra]) {
        match i {
            0 => self.prefill = 1.0,
            1 => self.decode = 1.0,
            _ => match extras[i - 2] {
                Extra::StepOverhead => self.step_overhead_ms = None,
                Extra::RequestOverhead => self.request_overhead_ms = None,
                Extra::TpComm => self.tp_comm = None,
                Extra::Frontend => self.frontend_ms = None,
                Extra::SeqOverhead => self.seq_overhead_us = None,
            },
        }
    }

    /// Coordinate `i`'s value as said: "prefill × 0.251", "request overhead + 2000.0 ms".
    fn said(&self, i: usize, extras: &[Extra]) -> String {
        match i {
            0 => format!("prefill × {:.3}", self.prefill),
            1 => format!("decode × {:.3}", self.decode),
            _ => match extras[i - 2] {
                Extra::StepOverhead => format!("step overhead + {:.2} ms", self.step_overhead_ms.unwrap_or(0.0)),
                Extra::RequestOverhead => {
                    format!("request overhead + {:.1} ms", self.request_overhead_ms.unwrap_or(0.0))
                }
                Extra::TpComm => format!("TP all-reduce × {:.3}", self.tp_comm.unwrap_or(1.0)),
                Extra::Frontend => format!("front end {:.2} ms a request", self.frontend_ms.unwrap_or(0.0)),
                Extra::SeqOverhead => {
                    format!("per-sequence step time + {:.1} µs", self.seq_overhead_us.unwrap_or(0.0))
                }
            },
        }
    }

    /// What a run at these knobs depends on, bit for bit: a knob at its neutral value is the knob absent
    /// (except the front end, which replaces the base scenario's).
    fn key(&self) -> [u64; 7] {
        let ms = |v: Option<f64>| if v == Some(0.0) { 0 } else { v.unwrap_or(0.0).to_bits() };
        [
            self.prefill.to_bits(),
            self.decode.to_bits(),
            ms(self.step_overhead_ms),
            ms(self.request_overhead_ms),
            self.tp_comm.unwrap_or(1.0).to_bits(),
            self.frontend_ms.map_or(u64::MAX, f64::to_bits),
            ms(self.seq_overhead_us),
        ]
    }

    /// Nothing fitted: both multipliers 1, no extra knob.
    pub const ONE: Multipliers = Multipliers {
        prefill: 1.0,
        decode: 1.0,
        step_overhead_ms: None,
        request_overhead_ms: None,
        tp_comm: None,
        frontend_ms: None,
        seq_overhead_us: None,
    };

    /// The knobs at search point `x`: log2 prefill and decode, then each extra's coordinate.
    fn at(x: &[f64], extras: &[Extra]) -> Multipliers {
        let mut m = Multipliers { prefill: libm::exp2(x[0]), decode: libm::exp2(x[1]), ..Multipliers::ONE };
        for (k, e) in extras.iter().enumerate() {
            let v = x[2 + k];
            match e {
                Extra::StepOverhead => m.step_overhead_ms = Some(v),
                Extra::RequestOverhead => m.request_overhead_ms = Some(v),
                Extra::TpComm => m.tp_comm = Some(libm::exp2(v)),
                Extra::Frontend => m.frontend_ms = Some(v),
                Extra::SeqOverhead => m.seq_overhead_us = Some(v),
            }
        }
        m
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    pub case: String,
    pub training: bool,
    /// The case is past saturation: its latencies are shown, not fitted nor counted in the errors.
    pub saturated: bool,
    pub metric: &'static str,
    pub measured_ms: f64,
    pub baseline_ms: f64,
    pub calibrated_ms: f64,
    pub baseline_ape: f64,
    pub calibrated_ape: f64,
    /// A training case's prediction by the fit on the other training cases.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leave_one_out_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leave_one_out_ape: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetricError {
    pub metric: &'static str,
    pub baseline: Option<f64>,
    pub calibrated: Option<f64>,
}

/// A case's validated scenario with its run cut to the budget: (scenario, requests measured, requests
/// simulated).
pub fn case_run(base: &Spec, case: &Case) -> Result<(Scenario, u64, u64), String> {
    let spec = scenario_of(base, case)?;
    let check = |s: &Spec| scenario::validate(s).map_err(|e| format!("{}: {e}", case.id));
    let sc = check(&spec)?;
    let asked = spec.workload.requests.unwrap_or(DEFAULT_REQUESTS);
    let steps = sc.estimate().steps;
    if steps <= CASE_STEPS {
        return Ok((sc, asked, asked));
    }
    // The estimate is not quite proportional to the requests (a Poisson run's allowance): cut until it fits.
    let (mut spec, mut sc, mut cut, mut steps) = (spec, sc, asked, steps);
    while steps > CASE_STEPS && cut > 1 {
        cut = ((cut as f64 * 0.95 * CASE_STEPS / steps) as u64).max(1);
        spec.workload.requests = Some(cut);
        sc = check(&spec)?;
        steps = sc.estimate().steps;
    }
    Ok((sc, asked, cut))
}

/// The scenario of `case`: `base` with the case's workload. The error names what the case lacks.
pub fn scenario_of(base: &Spec, case: &Case) -> Result<Spec, String> {
    let w = &case.workload;
    let mut s = base.clone();
    s.name = case.id.clone();
    s.workload.duration_s = None;
    s.workload.arrival = match (w.request_rate, w.max_concurrency) {
        (Some(Rate::Infinite), Some(n)) => ArrivalSpec::ClosedLoop { clients: n.min(1_000_000) as u32, think_s: 0.0 },
        (Some(Rate::Infinite), None) => ArrivalSpec::Burst {},
        (Some(Rate::PerSecond(r)), _) => match w.burstiness {
            Some(b) if b > 0.0 && (b - 1.0).abs() > 1e-9 => ArrivalSpec::Gamma { rate_rps: r, cv: 1.0 / b.sqrt() },
            _ => ArrivalSpec::Poisson { rate_rps: r },
        },
        (None, _) => return Err(format!("{}: no request rate (nor `inf`): the load to simulate is unknown", case.id)),
    };
    let pairs = !w.input_lens.is_empty() && w.input_lens.len() == w.output_lens.len();
    let sent = if pairs {
        w.input_lens.len() as u64
    } else {
        w.num_prompts.or(case.measured.completed).unwrap_or(DEFAULT_REQUESTS)
    };
    s.workload.requests = Some(sent.clamp(1, crate::spec::MAX_REQUESTS));
    let length = |lens: &[u32], range: Option<[u32; 2]>, mean: Option<f64>, what: &str| -> Result<LengthSpec, String> {
        let spread = if what == "output" { w.output_cv } else { None };
        match (pairs, range, mean, spread) {
            (true, ..) => Ok(LengthSpec::Sequence { values: lens.to_vec() }),
            (false, Some([min, max]), ..) => Ok(LengthSpec::Uniform { min, max }),
            // Read from the latency percentiles by the import (`lengths::infer_output`), said in the notes.
            (false, None, Some(m), Some(cv)) if m >= 1.0 => Ok(LengthSpec::Lognormal {
                mean: m,
                cv,
                max: w.output_max_tokens.unwrap_or(16_384).max(m.ceil() as u32),
            }),
            (false, None, Some(m), _) if m >= 1.0 => Ok(LengthSpec::Fixed { tokens: m.round() as u32 }),
            _ => Err(format!("{}: no {what} lengths (neither per-request lists nor token totals)", case.id)),
        }
    };
    let class = s
        .workload
        .classes
        .first()
        .cloned()
        .unwrap_or_else(|| serde_json::from_str::<ClassSpec>("{}").expect("a default class"));
    s.workload.classes = vec![ClassSpec {
        prompt_tokens: length(&w.input_lens, w.input_range, w.mean_input_tokens, "input")?,
        output_tokens: length(&w.output_lens, w.output_range, w.mean_output_tokens, "output")?,
        weight: 1.0,
        ..class
    }];
    if let (Some(n), LengthSpec::Fixed { tokens }) = (w.distinct_prompts, &s.workload.classes[0].prompt_tokens) {
        s.prefix = Some(repeated_prompts(n, *tokens, s.engine.block_size_tokens));
    }
    Ok(s)
}

/// `n` distinct prompts of `tokens` each, sent in turn: a repeat reuses every whole block of its prompt but
/// the last token's (vLLM recomputes at least one token of a fully cached prompt).
fn repeated_prompts(n: u64, tokens: u32, block_tokens: u32) -> PrefixSpec {
    let block = block_tokens.max(1);
    PrefixSpec {
        prefix_tokens: tokens.saturating_sub(1) / block * block,
        reuse_fraction: 1.0,
        groups: n.clamp(1, 1_000_000) as u32,
        zipf_s: 0.0,
        caching: true,
    }
}

/// What one case's run predicts: each metric in ms (None where the case has no measurement), what it served,
/// and whether its queue grew.
#[derive(Clone, Copy, Debug)]
struct Pred {
    ms: [Option<f64>; N],
    tails: [Option<f64>; T],
    served_rps: f64,
    overloaded: bool,
}

/// Each case's prediction at `m`: its validated scenario with every pool's cost scaled by `m` — what
/// validating `cost_scale` × `m` gives, without validating each case again at every point of the search. A
/// case already run at the same knobs (the knob sets share their points with a knob at neutral, a search
/// comes back to where it was) is not run again.
fn predict(scenarios: &[&Scenario], cases: &[&Case], m: Multipliers, runs: &mut Runs<'_>) -> Vec<Pred> {
    (scenarios.iter().zip(cases))
        .map(|(sc, c)| {
            let key = (c.id.clone(), m.key());
            if let Some(&p) = runs.seen.get(&key) {
                runs.remembered();
                return p;
            }
            let mut sc = (*sc).clone();
            for p in &mut sc.pools {
                let (prefill, decode) = p.cost.scales();
                let overhead_ns = m.step_overhead_ms.unwrap_or(0.0) * 1e6;
                p.cost = p.cost.clone().scaled(prefill * m.prefill, decode * m.decode).adjusted(
                    overhead_ns,
                    m.tp_comm.unwrap_or(1.0),
                    m.seq_overhead_us.unwrap_or(0.0) * 1e3,
                );
                p.engine.request_overhead_ns += libm::round(m.request_overhead_ms.unwrap_or(0.0) * 1e6) as u64;
                if let Some(ms) = m.frontend_ms {
                    let per_token_ns = p.engine.frontend.map_or(0.0, |f| f.1);
                    p.engine.frontend = Some((ms * 1e6, per_token_ns));
                }
            }
            let r = crate::simulate(&sc);
            runs.ran();
            let pred = Pred {
                ms: METRICS.map(|(_, measured, predicted)| measured(c).map(|_| predicted(&r))),
                tails: TAILS.map(|(_, measured, predicted)| measured(c).map(|_| predicted(&r))),
                served_rps: r.summary.throughput_rps,
                overloaded: r.steady.overloaded,
            };
            runs.seen.insert(key, pred);
            pred
        })
        .collect()
}

/// The objective: over the metrics, the sum of a trimmed mean over cases not past saturation of
/// |ln(pred / measured)| — the mean of the smallest three quarters (all of them below four cases); cases past
/// saturation add the same of their throughput. Each metric counts (one mean over every figure at once would
/// let two metrics right hide a third wrong); the worst quarter cannot pull the fit, yet every case counts
/// when there are few.
fn objective(cases: &[&Case], saturated: &[bool], preds: &[Pred]) -> f64 {
    let trimmed_mean = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let keep = v.len() - v.len() / 4;
        if keep == 0 { 0.0 } else { v[..keep].iter().sum::<f64>() / keep as f64 }
    };
    let err = |m: f64, x: f64| if x > 0.0 { libm::fabs(libm::log(x / m)) } else { 10.0 };
    let within = |k: usize| {
        (cases.iter().zip(preds).zip(saturated))
            .filter(|(_, s)| !**s)
            .filter_map(move |((c, p), _)| Some(err((METRICS[k].1)(c).filter(|m| *m > 0.0)?, p.ms[k]?)))
    };
    let latency: f64 = (0..N).map(|k| trimmed_mean(within(k).collect())).sum();
    let served = (cases.iter().zip(preds).zip(saturated))
        .filter(|(_, s)| **s)
        .filter_map(|((c, p), _)| Some(err(c.measured.request_throughput_rps?, p.served_rps)));
    latency + trimmed_mean(served.collect())
}

/// The simulations a calibration runs: each case's prediction at each point it was run (see [`predict`]), and
/// their count for a progress bar: (done, expected so far).
struct Runs<'a> {
    seen: HashMap<(String, [u64; 7]), Pred>,
    done: u64,
    expected: u64,
    progress: &'a mut dyn FnMut(u64, u64),
}

impl<'a> Runs<'a> {
    fn new(expected: u64, progress: &'a mut dyn FnMut(u64, u64)) -> Runs<'a> {
        Runs { seen: HashMap::new(), done: 0, expected, progress }
    }

    fn ran(&mut self) {
        self.done += 1;
        // The pattern search may move more often than its minimum: the estimate grows, never past done.
        self.expected = self.expected.max(self.done);
        (self.progress)(self.done, self.expected);
    }

    /// Runs the estimate did not count, now known to come.
    fn expect_more(&mut self, n: u64) {
        self.expected += n;
    }

    /// A run the estimate counted that was remembered instead.
    fn remembered(&mut self) {
        self.expected = self.expected.saturating_sub(1).max(self.done);
    }
}

/// Calibrate on the `train` cases (by id; empty: [`default_training`] over the bundle) and report every case.
pub fn calibrate(base: &Spec, all_cases: &[Case], train: &[String]) -> Result<Calibration, String> {
    calibrate_with_progress(base, all_cases, train, &[], &mut |_, _| {})
}

/// The cases calibration can use, each with its validated scenario and whether it trains; the warnings of
/// those left out, cut to the budget, or measured elsewhere than the base scenario: what [`prepare`] checked,
/// for [`calibrate_prepared`] to run without checking again.
pub struct Prepared {
    cases: Vec<Case>,
    scenarios: Vec<Scenario>,
    is_train: Vec<bool>,
    warnings: Vec<String>,
}

/// What [`calibrate_with`] refuses before it simulates anything: no case, unknown or duplicate ids, no case
/// that can be simulated, no training case, a case's run over `opts.budget`. A front end prepares every series
/// before it runs any.
pub fn prepare(base: &Spec, all_cases: &[Case], train: &[String], opts: &Options) -> Result<Prepared, String> {
    if all_cases.is_empty() {
        return Err("the bundle has no case".into());
    }
    if let Some(t) = train.iter().find(|t| !all_cases.iter().any(|c| &c.id == *t)) {
        return Err(format!("--train names `{t}`, which is not a case of the bundle"));
    }
    if let Some((i, c)) = all_cases.iter().enumerate().find(|(i, c)| all_cases[..*i].iter().any(|d| d.id == c.id)) {
        return Err(format!(
            "the bundle has case `{}` twice (cases {} and {i}): ids must be unique",
            c.id,
            all_cases.iter().position(|d| d.id == c.id).unwrap_or(0)
        ));
    }
    // The split is made over the whole bundle (so it does not depend on the base scenario, and a page can show
    // it before anything runs); a case whose workload cannot be simulated is then left out, and said.
    let split = training_split(all_cases, train);
    let mut p = Prepared { cases: vec![], scenarios: vec![], is_train: vec![], warnings: vec![] };
    for (c, t) in all_cases.iter().zip(split) {
        match checks::figures(c).map_err(|e| format!("{}: {e}", c.id)).and_then(|_| case_run(base, c)) {
            Ok((sc, asked, simulated)) => {
                sc.check_budget(&opts.budget, opts.runs_at_once).map_err(|e| format!("case {}: {e}", c.id))?;
                if simulated < asked {
                    p.warnings.push(format!("{}: {simulated} of the {asked} requests measured are simulated: the run budget ({CASE_STEPS:e} steps a case) bites, and past saturation the figures grow with a run's length", c.id));
                }
                if let Some(n) = c.workload.max_concurrency.filter(|&n| n > 1_000_000) {
                    p.warnings.push(format!("{}: max_concurrency {n} is simulated as 1,000,000 clients", c.id));
                }
                p.warnings.extend(checks::mismatch(base, c));
                p.cases.push(c.clone());
                p.scenarios.push(sc);
                p.is_train.push(t);
            }
            Err(why) => p.warnings.push(format!("left out: {why}")),
        }
    }
    if p.cases.is_empty() {
        return Err(format!("no case can be simulated ({})", p.warnings.join("; ")));
    }
    if !p.is_train.contains(&true) {
        return Err("no training case: name some with --train, or import at least two runs".into());
    }
    Ok(p)
}

/// [`calibrate`], calling `progress(simulations done, simulations expected)` after each simulation (the
/// expected count is the search's minimum, raised as it goes past it).
/// `extras`: the knobs to fit besides the two multipliers.
pub fn calibrate_with_progress(
    base: &Spec,
    all_cases: &[Case],
    train: &[String],
    extras: &[Extra],
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Calibration, String> {
    let opts = Options { extras: extras.to_vec(), ..Options::default() };
    calibrate_with(base, all_cases, train, &opts, progress)
}

/// [`calibrate_with_progress`] with its knobs chosen, or given, and gated as `opts` says.
pub fn calibrate_with(
    base: &Spec,
    all_cases: &[Case],
    train: &[String],
    opts: &Options,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Calibration, String> {
    calibrate_prepared(prepare(base, all_cases, train, opts)?, opts, progress)
}

/// [`calibrate_with`] on cases [`prepare`] checked with the same `opts`.
pub fn calibrate_prepared(
    p: Prepared,
    opts: &Options,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Calibration, String> {
    let all: Vec<&Case> = p.cases.iter().collect();
    let scen: Vec<&Scenario> = p.scenarios.iter().collect();
    let train: Vec<usize> = (0..all.len()).filter(|&i| p.is_train[i]).collect();
    let candidates = opts.candidates(&scen, train.len());
    let n = train.len() as u64;
    let starts_n = |x: &[Extra]| forward_knob(opts.choose, x).map_or_else(|| fit::grid(x).len(), fit::widened_len);
    let expected =
        candidates.iter().map(|x| expected_runs(n, all.len() as u64, x, starts_n(x))).sum::<u64>() + all.len() as u64;
    let mut tick = Runs::new(expected, progress);
    let before = predict(&scen, &all, Multipliers::ONE, &mut tick);
    let g = Ground { all: &all, scen: &scen, is_train: &p.is_train, before: &before, train: &train };
    let mut outcomes: Vec<Outcome> = Vec::new();
    for x in &candidates {
        let starts = forward_starts(opts.choose, outcomes.first(), x);
        outcomes.push(outcome(&g, x, starts.as_deref(), &mut tick));
    }
    if opts.choose {
        let more = second_knobs(&g, &outcomes, &mut tick);
        outcomes.extend(more);
    }
    let knob_choice = choose(&outcomes, opts.choose, &all, &p.is_train);
    let o = outcomes.swap_remove(knob_choice.iter().position(|t| t.chosen).unwrap_or(0));
    let mut warnings = p.warnings;
    if opts.choose && candidates.len() == 1 {
        warnings.push("--fit auto: one training case leaves nothing to leave out, so no knob can be chosen; the two multipliers alone are fitted".into());
    }
    let extras = &o.extras[..];
    warnings.extend(bound_warnings(&o.fitted_x.point, o.fitted, extras));
    warnings.extend(load_range_warnings(&all, &p.is_train));
    let pick = |v: &[bool]| train.iter().map(|&i| v[i]).collect::<Vec<_>>();
    let train_cases: Vec<&Case> = train.iter().map(|&i| all[i]).collect();
    let train_base = objective(&train_cases, &pick(&o.flags), &train.iter().map(|&i| before[i]).collect::<Vec<_>>());
    let held_out = headline(&o.rows, |r| !r.training, |r| Some(r.calibrated_ape));
    let evidence = Evidence {
        held: held_out,
        heavy: heavy_load(&o.rows, &all, &p.is_train),
        loo: o.leave_one_out,
        held_mape: held_out_mape(&o.rows),
        loo_mape: leave_one_out_mape(&o.rows),
        noise: noise_floor(&all),
        tolerance: opts.tolerance,
    };
    let (recommended, verdict, gate) = verdict(&evidence, &knob_choice, &warnings);
    Ok(Calibration {
        objective: "Σ over TTFT, TPOT, ITL and E2E (median and mean) of the mean over training cases of |ln(predicted / measured)|, the worst quarter of cases left out; a case past saturation counts by its throughput",
        fitted: o.fitted,
        recommended,
        verdict,
        gate,
        knob_choice,
        held_out,
        leave_one_out: o.leave_one_out,
        heavy_load: evidence.heavy,
        noise_floor: evidence.noise,
        train_error_baseline: train_base,
        train_error_calibrated: o.fitted_x.objective,
        held_out_mape: evidence.held_mape,
        leave_one_out_mape: evidence.loo_mape,
        saturated: saturated_list(&all, &p.is_train, &o.saturated, &before, &o.after),
        unidentified: o.fitted_x.unidentified.iter().map(|&i| fit::names(extras)[i]).collect(),
        rows: o.rows,
        tail_rows: tail_rows(&all, &p.is_train, &o.flags, &before, &o.after),
        warnings,
        notes: vec!["Calibration corrects a global scale of prefill and decode time (and the knobs asked for); it cannot fix a scheduler or a cost the model does not have (a held-out error that stays high after calibration points to one).".into()],
    })
}

/// The simulations one knob set's fit is expected to run at least: the grid and the pattern's levels on the
/// training cases, every case after, and the leave-one-out searches.
fn expected_runs(n_train: u64, cases: u64, extras: &[Extra], grid_n: usize) -> u64 {
    let (grid_n, moves_n) = (grid_n as u64, fit::moves(1.0, extras).len() as u64);
    n_train * (grid_n + moves_n * fit::LEVELS) + cases + n_train * n_train * moves_n * 4
}

/// One knob set's fit: the knobs, the fit, every case's prediction there, which cases are past saturation
/// (and why), the table's rows and the leave-one-out headline.
struct Outcome {
    extras: Vec<Extra>,
    fitted_x: Fitted,
    fitted: Multipliers,
    after: Vec<Pred>,
    saturated: Vec<Option<String>>,
    flags: Vec<bool>,
    rows: Vec<Row>,
    leave_one_out: Headline,
}

/// What every knob set's fit of one calibration shares: the cases, their scenarios, which train (and their
/// indices), and the uncalibrated predictions.
struct Ground<'a> {
    all: &'a [&'a Case],
    scen: &'a [&'a Scenario],
    is_train: &'a [bool],
    before: &'a [Pred],
    train: &'a [usize],
}

/// The fit with knobs `extras` on the training cases (begun from `starts`, else the grid), its predictions and
/// its leave-one-out.
fn outcome(g: &Ground<'_>, extras: &[Extra], starts: Option<&[Vec<f64>]>, tick: &mut Runs<'_>) -> Outcome {
    let Ground { all, scen, is_train, before, train } = *g;
    // A training case the model cannot keep up with is judged first by the uncalibrated model, then by the
    // fit: when the fit changes which cases it cannot keep up with, it is made again once with those.
    let mut saturated = saturation(all, is_train, before, "uncalibrated");
    let mut flags: Vec<bool> = saturated.iter().map(Option::is_some).collect();
    let (mut fitted_x, mut fitted, mut after) = fit_with(all, scen, &flags, extras, train, starts, tick);
    let again = saturation(all, is_train, &after, "calibrated");
    if again.iter().map(Option::is_some).ne(flags.iter().copied()) {
        (saturated, flags) = (again.clone(), again.iter().map(Option::is_some).collect());
        (fitted_x, fitted, after) = fit_with(all, scen, &flags, extras, train, starts, tick);
    }
    let mut fitting = Fitting { all, scen, flags: &flags, extras, tick };
    let loo = fitting.leave_one_out(train, &fitted_x.point);
    let rows = rows(all, is_train, &flags, before, &after, &loo);
    let leave_one_out = headline(&rows, |r| r.training, |r| r.leave_one_out_ape);
    Outcome { extras: extras.to_vec(), fitted_x, fitted, after, saturated, flags, rows, leave_one_out }
}

/// `--fit auto`'s single knob `x` begins where the two multipliers' fit (`none`) ended, as a pair begins where
/// its single's did ([`second_knobs`]); a knob set asked for, or the multipliers alone, from the whole grid.
/// (Each single searched its whole grid until December 2026: a third of a heavy series' runs.)
fn forward_starts(choosing: bool, none: Option<&Outcome>, x: &[Extra]) -> Option<Vec<Vec<f64>>> {
    let none = none.filter(|o| o.extras.is_empty())?;
    forward_knob(choosing, x).map(|added| fit::widened(&none.fitted_x.point, &none.extras, added, x))
}

/// The knob a set adds to the two multipliers' fit when `--fit auto` begins it there (a single knob, choosing):
/// where [`forward_starts`] begins it, and what the run estimate counts.
fn forward_knob(choosing: bool, x: &[Extra]) -> Option<Extra> {
    match x {
        [added] if choosing => Some(*added),
        _ => None,
    }
}

/// The most knobs `--fit auto` fits besides the two multipliers.
pub const MOST_KNOBS: usize = 2;

/// `--fit auto`'s second knob: when a single knob was chosen, a fit of it with each other candidate, begun
/// where its own fit ended (forward selection: a pair is tried only beside the single that earned its place).
fn second_knobs(g: &Ground<'_>, singles: &[Outcome], tick: &mut Runs<'_>) -> Vec<Outcome> {
    let best = &singles[chosen(singles)];
    let [first] = best.extras[..] else { return vec![] };
    let others: Vec<Extra> = singles.iter().filter_map(|o| o.extras.first().copied()).filter(|&x| x != first).collect();
    let (n, cases) = (g.train.len() as u64, g.all.len() as u64);
    tick.expect_more(others.iter().map(|&x| expected_runs(n, cases, &[first, x], fit::widened_len(x))).sum());
    (others.into_iter())
        .map(|x| {
            let mut extras = vec![first, x];
            extras.sort_by_key(|e| Extra::ALL.iter().position(|y| y == e));
            let starts = fit::widened(&best.fitted_x.point, &best.extras, x, &extras);
            outcome(g, &extras, Some(&starts), tick)
        })
        .collect()
}

/// Whether the fit left one of its knobs idle: at its neutral value (within an eighth of its unit) or
/// unidentified. Such a knob adds nothing to the model, only freedom to the leave-one-out searches, whose
/// error it can then lower by chance: a set with one is never chosen.
fn idle(o: &Outcome) -> bool {
    let x = &o.fitted_x;
    (2..x.point.len()).any(|i| x.unidentified.contains(&i) || x.point[i].abs() < fit::unit(i, &o.extras) / 8.0)
}

/// The outcome `--fit auto` chooses (the first fits the two multipliers alone): forward, one knob at a time,
/// the set of each size with the lowest leave-one-out error and no knob [`idle`], kept only when it beats the
/// set chosen with one knob fewer by more than [`KNOB_MARGIN`].
fn chosen(outcomes: &[Outcome]) -> usize {
    let loo = |o: &Outcome| o.leave_one_out.calibrated.filter(|_| !idle(o));
    let mut best = (0, outcomes.first().and_then(loo).unwrap_or(f64::INFINITY));
    for size in 1..=MOST_KNOBS {
        let mut next = best;
        for (k, o) in outcomes.iter().enumerate().filter(|(_, o)| o.extras.len() == size) {
            if let Some(e) = loo(o).filter(|&e| e < next.1 && e < best.1 - KNOB_MARGIN) {
                next = (k, e);
            }
        }
        if next.0 == best.0 {
            break;
        }
        best = next;
    }
    best.0
}

/// `--fit auto`'s trials, the chosen one marked. Empty when nothing was chosen.
fn choose(outcomes: &[Outcome], choosing: bool, all: &[&Case], is_train: &[bool]) -> Vec<KnobTrial> {
    if !choosing {
        return vec![];
    }
    let pick = chosen(outcomes);
    (outcomes.iter().enumerate())
        .map(|(k, o)| KnobTrial {
            knobs: if o.extras.is_empty() { "none".into() } else { fit::names(&o.extras)[2..].join(", ") },
            leave_one_out: o.leave_one_out.calibrated,
            idle: idle(o),
            chosen: k == pick,
            held_out: headline(&o.rows, |r| !r.training, |r| Some(r.calibrated_ape)).calibrated,
            heavy: heavy_load(&o.rows, all, is_train).calibrated,
        })
        .collect()
}

/// The medians the heavy-load figure is over.
pub const HEAVY_HEADLINE: [&str; 4] = ["TTFT median", "TPOT median", "ITL median", "E2E median"];

/// Which cases are held out at heavy load: a load (rate, or clients of a closed loop) above every training
/// case's.
pub fn heavy_cases(cases: &[&Case], is_train: &[bool]) -> Vec<bool> {
    let (_, top) = training_load_range(cases, is_train);
    cases.iter().zip(is_train).map(|(c, t)| !t && load(c) > top).collect()
}

/// The median APE, uncalibrated and calibrated, over the heavy held-out cases' TTFT, TPOT, ITL and E2E medians
/// (past saturation left out): where a capacity is decided, and the figure docs/validation.md's 10 % target is
/// about. No figures without heavy cases.
pub fn heavy_load(rows: &[Row], cases: &[&Case], is_train: &[bool]) -> Headline {
    let heavy = heavy_cases(cases, is_train);
    let is_heavy = |id: &str| cases.iter().zip(&heavy).any(|(c, h)| *h && c.id == id);
    headline(
        rows,
        |r| !r.training && HEAVY_HEADLINE.contains(&r.metric) && is_heavy(&r.case),
        |r| Some(r.calibrated_ape),
    )
}

/// The uncalibrated model's error on the cases a calibration on `train` would hold out, without fitting
/// anything: the held-out headline and per-metric errors `calibrate` reports as its baseline (the same cases,
/// the same saturation rule), at the cost of one simulation a case.
pub fn uncalibrated_held_out(
    base: &Spec,
    all_cases: &[Case],
    train: &[String],
) -> Result<(Headline, Vec<MetricError>), String> {
    let p = prepare(base, all_cases, train, &Options::default())?;
    let all: Vec<&Case> = p.cases.iter().collect();
    let scen: Vec<&Scenario> = p.scenarios.iter().collect();
    let mut progress = |_, _| {};
    let mut tick = Runs::new(all.len() as u64, &mut progress);
    let before = predict(&scen, &all, Multipliers::ONE, &mut tick);
    let flags: Vec<bool> = saturation(&all, &p.is_train, &before, "uncalibrated").iter().map(Option::is_some).collect();
    let rows = rows(&all, &p.is_train, &flags, &before, &before, &vec![None; all.len()]);
    Ok((headline(&rows, |r| !r.training, |r| Some(r.baseline_ape)), held_out_mape(&rows)))
}

/// Fit on the cases `train` with these saturation flags: the fit, its knobs, and every case's prediction there.
fn fit_with(
    all: &[&Case],
    scen: &[&Scenario],
    flags: &[bool],
    extras: &[Extra],
    train: &[usize],
    starts: Option<&[Vec<f64>]>,
    tick: &mut Runs<'_>,
) -> (Fitted, Multipliers, Vec<Pred>) {
    let fitted_x = Fitting { all, scen, flags, extras, tick: &mut *tick }.fit(train, starts);
    let mut fitted = Multipliers::at(&fitted_x.point, extras);
    for &i in &fitted_x.unidentified {
        fitted.forget(i, extras);
    }
    let after = predict(scen, all, fitted, tick);
    (fitted_x, fitted, after)
}

/// Why each case is past saturation: its measurement (any case), or the `model` predicting `preds` falling
/// behind (a training case only: a held-out case the model cannot keep up with is an error of the model, and
/// counts).
fn saturation(cases: &[&Case], is_train: &[bool], preds: &[Pred], model: &str) -> Vec<Option<String>> {
    (cases.iter().zip(preds).zip(is_train))
        .map(|((c, p), train)| {
            checks::measured_saturation(c)
                .or_else(|| checks::model_saturation(c, p.served_rps, p.overloaded, model).filter(|_| *train))
        })
        .collect()
}

/// The fit's end: its point, its objective, and the coordinates the cases cannot identify (set neutral).
struct Fitted {
    point: Vec<f64>,
    objective: f64,
    unidentified: Vec<usize>,
}

/// What every fit of one calibration shares: the cases, their scenarios and saturation flags, the knobs.
struct Fitting<'a, 't> {
    all: &'a [&'a Case],
    scen: &'a [&'a Scenario],
    flags: &'a [bool],
    extras: &'a [Extra],
    tick: &'a mut Runs<'t>,
}

impl Fitting<'_, '_> {
    fn flags_of(&self, idx: &[usize]) -> Vec<bool> {
        idx.iter().map(|&i| self.flags[i]).collect()
    }

    /// The objective of the cases `idx` at search point `x`.
    fn eval(&mut self, idx: &[usize], x: &[f64]) -> f64 {
        let cases: Vec<&Case> = idx.iter().map(|&i| self.all[i]).collect();
        let scen: Vec<&Scenario> = idx.iter().map(|&i| self.scen[i]).collect();
        let preds = predict(&scen, &cases, Multipliers::at(x, self.extras), self.tick);
        objective(&cases, &self.flags_of(idx), &preds)
    }

    /// The full search on the cases `idx`, then the knobs it cannot identify set neutral.
    fn fit(&mut self, idx: &[usize], starts: Option<&[Vec<f64>]>) -> Fitted {
        let extras = self.extras;
        let starts = starts.map_or_else(|| fit::grid(extras), <[Vec<f64>]>::to_vec);
        let (mut point, objective) = fit::search_from(&mut |x| self.eval(idx, x), starts, extras);
        let unidentified = fit::flat(&mut |x| self.eval(idx, x), &point, objective, extras);
        for &i in &unidentified {
            point[i] = 0.0;
        }
        Fitted { point, objective, unidentified }
    }

    /// Each training case predicted by a fit on the others (a pattern search from the whole fit's point);
    /// None for the others, and when one case trains.
    fn leave_one_out(&mut self, train: &[usize], from: &[f64]) -> Vec<Option<Pred>> {
        let mut out = vec![None; self.all.len()];
        if train.len() < 2 {
            return out;
        }
        for &i in train {
            let rest: Vec<usize> = train.iter().copied().filter(|&j| j != i).collect();
            let f0 = self.eval(&rest, from);
            let extras = self.extras;
            let (x, _) = fit::pattern(&mut |x| self.eval(&rest, x), from.to_vec(), f0, extras, 0.125, 1.0 / 128.0);
            out[i] = predict(&[self.scen[i]], &[self.all[i]], Multipliers::at(&x, extras), self.tick).pop();
        }
        out
    }
}

/// The documented default split of `cases`: every other case in order of offered load (the first, third, …)
/// trains, the others are held out.
pub fn default_training(cases: &[Case]) -> Vec<bool> {
    training_split(cases, &[])
}

/// The training cases: those named, or every other case in order of offered load (the first, third, …).
fn training_split(cases: &[Case], train: &[String]) -> Vec<bool> {
    if !train.is_empty() {
        return cases.iter().map(|c| train.contains(&c.id)).collect();
    }
    let mut order: Vec<usize> = (0..cases.len()).collect();
    order.sort_by(|&a, &b| load(&cases[a]).total_cmp(&load(&cases[b])).then(a.cmp(&b)));
    let mut is_train = vec![false; cases.len()];
    for (k, &i) in order.iter().enumerate() {
        is_train[i] = k.is_multiple_of(2);
    }
    is_train
}

/// The lowest and highest load of the training cases: a held-out case outside it is an extrapolation, above it
/// a heavier load than any the fit saw.
pub fn training_load_range(cases: &[&Case], is_train: &[bool]) -> (f64, f64) {
    let train = cases.iter().zip(is_train).filter(|(_, t)| **t).map(|(c, _)| load(c));
    train.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| (a.min(x), b.max(x)))
}

/// A case's offered load for ordering: its rate, or its clients (closed loop), or its size (burst).
pub fn load(c: &Case) -> f64 {
    match (c.workload.request_rate, c.workload.max_concurrency) {
        (Some(Rate::PerSecond(r)), _) => r,
        (Some(Rate::Infinite), Some(n)) => n as f64,
        _ => c.workload.num_prompts.unwrap_or(0) as f64,
    }
}

fn rows(
    cases: &[&Case],
    is_train: &[bool],
    saturated: &[bool],
    before: &[Pred],
    after: &[Pred],
    loo: &[Option<Pred>],
) -> Vec<Row> {
    rows_of(&METRICS, |p, k| p.ms[k], cases, is_train, saturated, (before, after, loo))
}

/// The tails' rows: [`rows`] over [`TAILS`], without leave-one-out.
fn tail_rows(cases: &[&Case], is_train: &[bool], saturated: &[bool], before: &[Pred], after: &[Pred]) -> Vec<Row> {
    let none = vec![None; cases.len()];
    rows_of(&TAILS, |p, k| p.tails[k], cases, is_train, saturated, (before, after, &none))
}

/// A row per case and metric of `table` that the case measured; `value` reads a prediction's figure `k`.
fn rows_of(
    table: &[Metric],
    value: fn(&Pred, usize) -> Option<f64>,
    cases: &[&Case],
    is_train: &[bool],
    saturated: &[bool],
    (before, after, loo): (&[Pred], &[Pred], &[Option<Pred>]),
) -> Vec<Row> {
    let ape = |p: f64, m: f64| (p - m).abs() / m;
    let mut out = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        for (k, (name, measured, _)) in table.iter().enumerate() {
            if let (Some(m), Some(b), Some(a)) = (measured(c), value(&before[i], k), value(&after[i], k))
                && m > 0.0
            {
                let l = loo[i].and_then(|p| value(&p, k));
                out.push(Row {
                    case: c.id.clone(),
                    training: is_train[i],
                    saturated: saturated[i],
                    metric: name,
                    measured_ms: m,
                    baseline_ms: b,
                    calibrated_ms: a,
                    baseline_ape: ape(b, m),
                    calibrated_ape: ape(a, m),
                    leave_one_out_ms: l,
                    leave_one_out_ape: l.map(|l| ape(l, m)),
                });
            }
        }
    }
    out
}

/// The median APE, before and after (`after` of a row), over the rows `which` keeps that are not past
/// saturation and have an `after`.
fn headline(rows: &[Row], which: impl Fn(&Row) -> bool, after: impl Fn(&Row) -> Option<f64>) -> Headline {
    let kept: Vec<&Row> = rows.iter().filter(|r| which(r) && !r.saturated && after(r).is_some()).collect();
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (!v.is_empty()).then(|| crate::metrics::percentile(&v, 50.0))
    };
    Headline {
        figures: kept.len(),
        baseline: median(kept.iter().map(|r| r.baseline_ape).collect()),
        calibrated: median(kept.iter().filter_map(|r| after(r)).collect()),
    }
}

/// Per metric, the mean APE before and after (`after` of a row) over the rows `which` keeps that are not past
/// saturation and have an `after` — [`headline`]'s rows, as a mean per metric.
fn metric_errors(rows: &[Row], which: impl Fn(&Row) -> bool, after: impl Fn(&Row) -> Option<f64>) -> Vec<MetricError> {
    METRICS
        .iter()
        .map(|(name, _, _)| {
            let kept: Vec<(f64, f64)> = (rows.iter())
                .filter(|r| which(r) && !r.saturated && r.metric == *name)
                .filter_map(|r| Some((r.baseline_ape, after(r)?)))
                .collect();
            let mean = |f: fn(&(f64, f64)) -> f64| {
                (!kept.is_empty()).then(|| kept.iter().map(f).sum::<f64>() / kept.len() as f64)
            };
            MetricError { metric: name, baseline: mean(|r| r.0), calibrated: mean(|r| r.1) }
        })
        .collect()
}

/// Per metric: the held-out cases' MAPE uncalibrated and calibrated.
fn held_out_mape(rows: &[Row]) -> Vec<MetricError> {
    metric_errors(rows, |r| !r.training, |r| Some(r.calibrated_ape))
}

/// Per metric: the training cases' MAPE uncalibrated and left out one at a time (rows without a leave-one-out
/// prediction left out).
fn leave_one_out_mape(rows: &[Row]) -> Vec<MetricError> {
    metric_errors(rows, |r| r.training, |r| r.leave_one_out_ape)
}

fn saturated_list(
    cases: &[&Case],
    is_train: &[bool],
    why: &[Option<String>],
    before: &[Pred],
    after: &[Pred],
) -> Vec<Saturated> {
    (0..cases.len())
        .filter_map(|i| {
            let (Some(why), Some(Rate::PerSecond(offered))) = (&why[i], cases[i].workload.request_rate) else {
                return None;
            };
            Some(Saturated {
                case: cases[i].id.clone(),
                training: is_train[i],
                why: why.clone(),
                offered_rps: offered,
                measured_rps: cases[i].measured.request_throughput_rps,
                baseline_rps: before[i].served_rps,
                calibrated_rps: after[i].served_rps,
            })
        })
        .collect()
}

/// A knob that ended on its search bound: no value inside the bounds fits, which a scale cannot mend.
fn bound_warnings(x: &[f64], m: Multipliers, extras: &[Extra]) -> Vec<String> {
    fit::at_bound(x, extras)
        .into_iter()
        .map(|i| {
            format!(
                "{} ends on its search bound: no value within the bounds fits these cases — check the base scenario's model, device, TP and engine profile before using the fit",
                m.said(i, extras)
            )
        })
        .collect()
}

/// A held-out case outside the training cases' load range is an extrapolation: said, per case.
fn load_range_warnings(cases: &[&Case], is_train: &[bool]) -> Vec<String> {
    let (lo, hi) = training_load_range(cases, is_train);
    (cases.iter().zip(is_train))
        .filter(|(c, t)| !**t && (load(c) < lo || load(c) > hi))
        .map(|(c, _)| {
            format!(
                "{}: its load ({}) is outside the training cases' ({lo} … {hi}): its error is an extrapolation's",
                c.id,
                load(c)
            )
        })
        .collect()
}

/// Repeated runs: cases of one configuration (engine, model, load, prompts, dataset, generator and mean
/// lengths within 5 %), and over their latency figures the median of the largest relative deviation from the
/// runs' mean. None without a configuration measured twice.
fn noise_floor(cases: &[&Case]) -> Option<NoiseFloor> {
    let key = |c: &Case| {
        let w = &c.workload;
        let bucket = |m: Option<f64>| m.map(|m| libm::round(libm::log(m) / libm::log(1.05)) as i64);
        format!(
            "{}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}",
            c.engine,
            c.model_id,
            w.request_rate,
            w.max_concurrency,
            w.num_prompts,
            w.dataset,
            w.input_range,
            w.output_range,
            bucket(w.mean_input_tokens),
            bucket(w.mean_output_tokens)
        )
    };
    let mut groups: Vec<(String, Vec<&Case>)> = Vec::new();
    for c in cases {
        match groups.iter_mut().find(|(k, _)| *k == key(c)) {
            Some((_, g)) => g.push(c),
            None => groups.push((key(c), vec![c])),
        }
    }
    groups.retain(|(_, g)| g.len() > 1);
    let mut spreads = Vec::new();
    for (_, g) in &groups {
        for (_, measured, _) in METRICS {
            let v: Vec<f64> = g.iter().filter_map(|c| measured(c)).collect();
            if v.len() == g.len() {
                let mean = v.iter().sum::<f64>() / v.len() as f64;
                spreads.push(v.iter().map(|x| (x - mean).abs() / mean).fold(0.0, f64::max));
            }
        }
    }
    spreads.sort_by(f64::total_cmp);
    (!spreads.is_empty()).then(|| NoiseFloor {
        groups: groups.len(),
        runs: groups.iter().map(|(_, g)| g.len()).sum(),
        spread: crate::metrics::percentile(&spreads, 50.0),
    })
}

/// What the verdict weighs: the headline errors held out and left out, per metric, the repeated runs' spread,
/// and the gate's tolerance.
struct Evidence {
    held: Headline,
    heavy: Headline,
    loo: Headline,
    held_mape: Vec<MetricError>,
    loo_mape: Vec<MetricError>,
    noise: Option<NoiseFloor>,
    tolerance: f64,
}

/// Which model to use, why, and its gate. Leave-one-out on the training cases decides; the held-out cases can
/// only veto (a fit they show worse, overall or at heavy load, is not recommended), and decide alone only when
/// one case trains. A fit that makes one metric much worse, held out or left out, is not recommended either,
/// and the metric is named.
fn verdict(e: &Evidence, trials: &[KnobTrial], warnings: &[String]) -> (&'static str, String, Gate) {
    let said = |h: &Headline, what: &str| match (h.baseline, h.calibrated) {
        (Some(b), Some(a)) => Some((
            b,
            a,
            format!("{what} ({} figures): median APE {} uncalibrated → {} calibrated.", h.figures, pct(b), pct(a)),
        )),
        _ => None,
    };
    let loo = said(&e.loo, "Leave-one-out on the training cases");
    let held = said(&e.held, "Held out");
    let mut parts: Vec<String> = Vec::new();
    if let Some(chosen) = trials.iter().find(|t| t.chosen) {
        let tried: Vec<String> = (trials.iter())
            .map(|t| {
                format!(
                    "{} {}{}",
                    t.knobs,
                    t.leave_one_out.map_or("—".into(), pct),
                    if t.idle { " (a knob left idle)" } else { "" }
                )
            })
            .collect();
        parts.push(format!(
            "Knobs chosen by leave-one-out on the training cases, never by the held-out ones: {} (tried: {}).",
            chosen.knobs,
            tried.join("; ")
        ));
    }
    parts.extend(loo.iter().chain(&held).map(|x| x.2.clone()));
    let (heavy, heavier) = heavy_said(&e.heavy);
    parts.extend(heavy);
    // Whether the fit predicts runs it did not see better, and if not, why not in words.
    let (better, why) = match (&loo, &held) {
        (Some((b, a, _)), Some((hb, ha, _))) if a < b && ha > hb => {
            (false, "Left out one at a time the calibrated model is better, but held out it is worse.")
        }
        (Some((b, a, _)), _) => {
            (a < b, "Left out one at a time, the calibrated model is not better than the uncalibrated one.")
        }
        (None, Some((b, a, _))) => {
            parts.push("With one training case nothing can be left out: the held-out cases decide.".into());
            (a < b, "Held out, the calibrated model is not better than the uncalibrated one.")
        }
        (None, None) => (
            false,
            "Every case trains and none can be left out one at a time: nothing shows the fit predicts runs it did not see.",
        ),
    };
    let worse: Vec<String> = [("left out", &e.loo_mape), ("held out", &e.held_mape)]
        .iter()
        .flat_map(|(set, mape)| mape.iter().map(move |m| (set, m)))
        .filter_map(|(set, m)| {
            let (b, a) = (m.baseline?, m.calibrated?);
            (a >= MUCH_WORSE.0 * b && a - b >= MUCH_WORSE.1)
                .then(|| format!("{} {set} {} → {}", m.metric, pct(b), pct(a)))
        })
        .collect();
    let use_it = better && worse.is_empty() && !heavier;
    if !better {
        parts.push(why.into());
    }
    if heavier {
        parts.push(
            "At heavy load, where a capacity is decided, the fit extrapolates worse than the uncalibrated model."
                .into(),
        );
    }
    if !worse.is_empty() {
        parts.push(format!(
            "Calibration makes {} much worse (MAPE, at least 1.5 times and 10 points above the uncalibrated): {}.",
            if worse.len() == 1 { "one figure" } else { "figures" },
            worse.join("; ")
        ));
    }
    parts.push(if use_it {
        "The calibrated model predicts better: use it.".into()
    } else {
        "Keep the uncalibrated model (the fit is shown, not recommended).".into()
    });
    let gate = gate(e, use_it);
    parts.push(gate_sentence(&gate));
    if let Some(n) = e.noise {
        parts.push(format!("Repeated runs in the bundle differ by {} (median over {} configuration(s)): an error below that is not a claim.", pct(n.spread), n.groups));
    }
    if warnings.iter().any(|w| w.contains("search bound")) {
        parts.push("A knob ended on its search bound (see the warnings).".into());
    }
    (if use_it { "calibrated" } else { "uncalibrated" }, parts.join(" "), gate)
}

/// The heavy-load sentence (held-out cases above every training case's load), when there are such cases, and
/// whether the calibrated model is worse there (by more than [`HEAVY_WORSE`]): a fit that extrapolates upward
/// worse is not recommended, for heavy load is where the product's answers (capacity, headroom) are decided.
fn heavy_said(h: &Headline) -> (Option<String>, bool) {
    match (h.baseline, h.calibrated) {
        (Some(b), Some(a)) => (
            Some(format!(
                "Held out at heavy load, above every training case's load ({} figures, latency medians): median APE {} uncalibrated → {} calibrated.",
                h.figures,
                pct(b),
                pct(a)
            )),
            a > b + HEAVY_WORSE,
        ),
        _ => (None, false),
    }
}

fn pct(x: f64) -> String {
    format!("{:.1} %", x * 100.0)
}

/// The recommended model's median error on runs it did not see — the held-out cases, else the training cases
/// left out one at a time (the uncalibrated model's error on them is its own) — against the tolerance.
fn gate(e: &Evidence, calibrated: bool) -> Gate {
    let (over, h) = if e.held.figures > 0 { ("held out", e.held) } else { ("left out one at a time", e.loo) };
    let error = if calibrated { h.calibrated } else { h.baseline };
    Gate {
        tolerance: e.tolerance,
        over,
        model: if calibrated { "calibrated" } else { "uncalibrated" },
        error,
        pass: error.map(|x| x <= e.tolerance),
    }
}

/// "Gate (20 % held out): the calibrated model's median error is 7.3 %: pass."
pub fn gate_sentence(g: &Gate) -> String {
    // The tolerance as the user gave it: "20 %", "0.1 %".
    let tolerance = format!("{:.1}", g.tolerance * 100.0);
    let tolerance = format!("{} %", tolerance.strip_suffix(".0").unwrap_or(&tolerance));
    match (g.error, g.pass) {
        (Some(x), Some(pass)) => format!(
            "Gate ({tolerance} {}): the {} model's median error is {}: {}.",
            g.over,
            g.model,
            pct(x),
            if pass { "pass" } else { "fail — do not rely on it for decisions at this tolerance" }
        ),
        _ => format!("Gate ({tolerance}): no case the fit did not see, so no pass or fail."),
    }
}
