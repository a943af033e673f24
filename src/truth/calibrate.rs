//! Calibration: fit the cost model's global multipliers (`cost_scale.prefill`, `cost_scale.decode`) on some
//! measured runs and show the error on the others.
//!
//! Each case's scenario is the base scenario (model, GPUs, engine settings) with the case's workload: its rate
//! (or closed loop, or burst), its request count and its lengths. The objective, over the training cases, is
//! the sum over the TTFT, TPOT and E2E medians of the median over cases of |ln(predicted / measured)|. The search is
//! deterministic: a log-spaced grid over [1/4, 4] for both multipliers, then a pattern search halving its step
//! around the best point. Calibration corrects a global scale; it cannot fix a scheduler the model lacks.

use serde::Serialize;

use super::{Case, Rate};
use crate::scenario::{self, ArrivalSpec, ClassSpec, LengthSpec, Scenario, Spec};

/// Requests a case's run simulates when its file does not say how many it sent.
const DEFAULT_REQUESTS: u64 = 500;
/// Requests a case's run simulates at most (a measured run of 10^5 prompts is matched in its medians).
const MAX_REQUESTS: u64 = 2000;

/// The compared figures: (name, the case's measured median in ms, the report's prediction in ms).
type Metric = (&'static str, fn(&Case) -> Option<f64>, fn(&crate::Report) -> f64);
const METRICS: [Metric; 3] = [
    ("TTFT median", |c| c.measured.ttft_ms.median, |r| r.summary.ttft_s.p50 * 1e3),
    ("TPOT median", |c| c.measured.tpot_ms.median, |r| r.summary.tpot_s.p50 * 1e3),
    ("E2E median", |c| c.measured.e2e_ms.median, |r| r.summary.e2e_s.p50 * 1e3),
];

/// The result: fitted multipliers, the table of every case and metric, held-out errors and warnings.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Calibration {
    pub objective: &'static str,
    pub fitted: Multipliers,
    pub train_error_baseline: f64,
    pub train_error_calibrated: f64,
    pub rows: Vec<Row>,
    /// Per metric: held-out MAPE before and after (None when no held-out case has the metric).
    pub held_out_mape: Vec<MetricError>,
    pub warnings: Vec<String>,
    pub notes: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Multipliers {
    pub prefill: f64,
    pub decode: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    pub case: String,
    pub training: bool,
    pub metric: &'static str,
    pub measured_ms: f64,
    pub baseline_ms: f64,
    pub calibrated_ms: f64,
    pub baseline_ape: f64,
    pub calibrated_ape: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetricError {
    pub metric: &'static str,
    pub baseline: Option<f64>,
    pub calibrated: Option<f64>,
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
    let sent = w.num_prompts.or(case.measured.completed).unwrap_or(DEFAULT_REQUESTS).clamp(1, MAX_REQUESTS);
    s.workload.requests = Some(sent);
    let length = |lens: &[u32], mean: Option<f64>, what: &str| -> Result<LengthSpec, String> {
        let nonzero: Vec<u32> = lens.iter().copied().filter(|&x| x > 0).collect();
        match (nonzero.is_empty(), mean) {
            (false, _) => Ok(LengthSpec::Empirical { values: nonzero }),
            (true, Some(m)) if m >= 1.0 => Ok(LengthSpec::Fixed { tokens: m.round() as u32 }),
            _ => Err(format!("{}: no {what} lengths (neither per-request lists nor token totals)", case.id)),
        }
    };
    let class = s.workload.classes.first().cloned().unwrap_or_else(|| serde_json::from_str::<ClassSpec>("{}").expect("a default class"));
    s.workload.classes = vec![ClassSpec {
        prompt_tokens: length(&w.input_lens, w.mean_input_tokens, "input")?,
        output_tokens: length(&w.output_lens, w.mean_output_tokens, "output")?,
        weight: 1.0,
        ..class
    }];
    Ok(s)
}

/// Each case's predictions (ms, in `METRICS` order; None where the case has no measurement) at `m`: its
/// validated scenario with every pool's prefill and decode multipliers scaled by `m` — what validating
/// `cost_scale` × `m` gives, without validating each case again at every point of the search.
fn predict(scenarios: &[Scenario], cases: &[&Case], m: Multipliers, tick: &mut Ticker<'_>) -> Vec<[Option<f64>; 3]> {
    (scenarios.iter().zip(cases))
        .map(|(sc, c)| {
            let mut sc = sc.clone();
            for p in &mut sc.pools {
                let (prefill, decode) = p.cost.scales();
                p.cost = p.cost.clone().scaled(prefill * m.prefill, decode * m.decode);
            }
            let r = crate::simulate(&sc);
            tick.tick();
            METRICS.map(|(_, measured, predicted)| measured(c).map(|_| predicted(&r)))
        })
        .collect()
}

/// The objective: over the metrics, the sum of the median over cases of |ln(pred / measured)| — each metric
/// counts (a median over every figure at once would let two metrics right hide a third wrong), and one odd case
/// cannot pull the fit.
fn objective(cases: &[&Case], preds: &[[Option<f64>; 3]]) -> f64 {
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        match v.len() {
            0 => 0.0,
            n if n % 2 == 1 => v[n / 2],
            n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
        }
    };
    (0..METRICS.len())
        .map(|k| {
            let errs = (cases.iter().zip(preds)).filter_map(|(c, p)| match ((METRICS[k].1)(c), p[k]) {
                (Some(m), Some(x)) if m > 0.0 => Some(if x > 0.0 { libm::fabs(libm::log(x / m)) } else { 10.0 }),
                _ => None,
            });
            median(errs.collect())
        })
        .sum()
}

/// Minimise the training objective over the two multipliers: a 9 × 9 log grid, then a pattern search.
fn fit(scenarios: &[Scenario], cases: &[&Case], tick: &mut Ticker<'_>) -> (Multipliers, f64) {
    let mut eval = |m: Multipliers| objective(cases, &predict(scenarios, cases, m, tick));
    let at = |lp: f64, ld: f64| Multipliers { prefill: libm::exp2(lp), decode: libm::exp2(ld) };
    let (mut best, mut best_err) = ((0.0, 0.0), f64::INFINITY);
    for i in -4..=4 {
        for j in -4..=4 {
            let (lp, ld) = (i as f64 * 0.5, j as f64 * 0.5);
            let e = eval(at(lp, ld));
            if e < best_err {
                (best, best_err) = ((lp, ld), e);
            }
        }
    }
    let mut step = 0.25;
    while step > 1.0 / 512.0 {
        let mut moved = false;
        for (dp, dd) in [(step, 0.0), (-step, 0.0), (0.0, step), (0.0, -step), (step, step), (-step, -step), (step, -step), (-step, step)] {
            let (lp, ld) = (best.0 + dp, best.1 + dd);
            if lp.abs() > 2.0 || ld.abs() > 2.0 {
                continue;
            }
            let e = eval(at(lp, ld));
            if e < best_err {
                (best, best_err, moved) = ((lp, ld), e, true);
            }
        }
        if !moved {
            step /= 2.0;
        }
    }
    (at(best.0, best.1), best_err)
}

/// Grid points and pattern-search levels of [`fit`]: a fit runs at least `GRID + 8 × LEVELS` evaluations.
const GRID: u64 = 81;
const LEVELS: u64 = 7;

/// Counts the simulations a calibration runs, for a progress bar: (done, expected so far).
struct Ticker<'a> {
    done: u64,
    expected: u64,
    progress: &'a mut dyn FnMut(u64, u64),
}

impl Ticker<'_> {
    fn tick(&mut self) {
        self.done += 1;
        // The pattern search may move more often than its minimum: the estimate grows, never past done.
        self.expected = self.expected.max(self.done);
        (self.progress)(self.done, self.expected);
    }
}

/// Calibrate on the `train` cases (by id; empty: [`default_training`] over the bundle) and report every case.
pub fn calibrate(base: &Spec, all_cases: &[Case], train: &[String]) -> Result<Calibration, String> {
    calibrate_with_progress(base, all_cases, train, &mut |_, _| {})
}

/// [`calibrate`], calling `progress(simulations done, simulations expected)` after each simulation (the
/// expected count is the search's minimum, raised as it goes past it).
pub fn calibrate_with_progress(base: &Spec, all_cases: &[Case], train: &[String], progress: &mut dyn FnMut(u64, u64)) -> Result<Calibration, String> {
    if let Some(t) = train.iter().find(|t| !all_cases.iter().any(|c| &c.id == *t)) {
        return Err(format!("--train names `{t}`, which is not a case of the bundle"));
    }
    // The split is made over the whole bundle (so it does not depend on the base scenario, and a page can show
    // it before anything runs); a case whose workload cannot be simulated is then left out, and said.
    let bundle_split = training_split(all_cases, train);
    let (mut cases, mut scenarios, mut is_train, mut skipped) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (c, t) in all_cases.iter().zip(bundle_split) {
        match scenario_of(base, c).and_then(|s| scenario::validate(&s).map_err(|e| format!("{}: {e}", c.id))) {
            Ok(sc) => {
                cases.push(c.clone());
                scenarios.push(sc);
                is_train.push(t);
            }
            Err(why) => skipped.push(format!("left out: {why}")),
        }
    }
    if all_cases.is_empty() {
        return Err("the bundle has no case".into());
    }
    if cases.is_empty() {
        return Err(format!("no case can be simulated ({})", skipped.join("; ")));
    }
    let cases = &cases[..];
    let pick = |want: bool| -> (Vec<Scenario>, Vec<&Case>) {
        let idx: Vec<usize> = (0..cases.len()).filter(|&i| is_train[i] == want).collect();
        (idx.iter().map(|&i| scenarios[i].clone()).collect(), idx.iter().map(|&i| &cases[i]).collect())
    };
    let (train_scenarios, train_cases) = pick(true);
    if train_cases.is_empty() {
        return Err("no training case: name some with --train, or import at least two runs".into());
    }
    let all: Vec<&Case> = cases.iter().collect();
    let one = Multipliers { prefill: 1.0, decode: 1.0 };
    let n_train = train_cases.len() as u64;
    let mut tick = Ticker { done: 0, expected: n_train * (1 + GRID + 8 * LEVELS) + 2 * all.len() as u64, progress };
    let train_base = objective(&train_cases, &predict(&train_scenarios, &train_cases, one, &mut tick));
    let (fitted, train_fit) = fit(&train_scenarios, &train_cases, &mut tick);
    let before = predict(&scenarios, &all, one, &mut tick);
    let after = predict(&scenarios, &all, fitted, &mut tick);
    let rows = rows(cases, &is_train, &before, &after);
    Ok(Calibration {
        objective: "Σ over TTFT, TPOT and E2E medians of the median over training cases of |ln(predicted / measured)|",
        fitted,
        train_error_baseline: train_base,
        train_error_calibrated: train_fit,
        held_out_mape: held_out_mape(&rows),
        warnings: skipped.into_iter().chain(load_range_warnings(cases, &is_train)).collect(),
        notes: vec!["Calibration corrects a global scale of prefill and decode time; it cannot fix a scheduler or a cost the model does not have (a held-out error that stays high after calibration points to one).".into()],
        rows,
    })
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
        is_train[i] = k % 2 == 0;
    }
    is_train
}

/// A case's offered load for ordering: its rate, or its clients (closed loop), or its size (burst).
fn load(c: &Case) -> f64 {
    match (c.workload.request_rate, c.workload.max_concurrency) {
        (Some(Rate::PerSecond(r)), _) => r,
        (Some(Rate::Infinite), Some(n)) => n as f64,
        _ => c.workload.num_prompts.unwrap_or(0) as f64,
    }
}

fn rows(cases: &[Case], is_train: &[bool], before: &[[Option<f64>; 3]], after: &[[Option<f64>; 3]]) -> Vec<Row> {
    let ape = |p: f64, m: f64| (p - m).abs() / m;
    let mut out = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        for (k, (name, measured, _)) in METRICS.iter().enumerate() {
            if let (Some(m), Some(b), Some(a)) = (measured(c), before[i][k], after[i][k])
                && m > 0.0
            {
                out.push(Row { case: c.id.clone(), training: is_train[i], metric: name, measured_ms: m, baseline_ms: b, calibrated_ms: a, baseline_ape: ape(b, m), calibrated_ape: ape(a, m) });
            }
        }
    }
    out
}

fn held_out_mape(rows: &[Row]) -> Vec<MetricError> {
    METRICS
        .iter()
        .map(|(name, _, _)| {
            let held: Vec<&Row> = rows.iter().filter(|r| !r.training && r.metric == *name).collect();
            let mean = |f: fn(&Row) -> f64| (!held.is_empty()).then(|| held.iter().map(|r| f(r)).sum::<f64>() / held.len() as f64);
            MetricError { metric: name, baseline: mean(|r| r.baseline_ape), calibrated: mean(|r| r.calibrated_ape) }
        })
        .collect()
}

/// A held-out case outside the training cases' load range is an extrapolation: said, per case.
fn load_range_warnings(cases: &[Case], is_train: &[bool]) -> Vec<String> {
    let train: Vec<f64> = cases.iter().zip(is_train).filter(|(_, t)| **t).map(|(c, _)| load(c)).collect();
    let (lo, hi) = train.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)));
    (cases.iter().zip(is_train))
        .filter(|(c, t)| !**t && (load(c) < lo || load(c) > hi))
        .map(|(c, _)| format!("{}: its load ({}) is outside the training cases' ({lo} … {hi}): its error is an extrapolation's", c.id, load(c)))
        .collect()
}
