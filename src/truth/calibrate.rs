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

/// What calibration fitted: the prefill and decode multipliers always, and each extra knob it was asked to
/// fit (absent otherwise).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
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
}

/// A knob calibration may fit besides the prefill and decode multipliers (`--fit`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extra {
    StepOverhead,
    RequestOverhead,
    TpComm,
}

impl Extra {
    pub const ALL: [Extra; 3] = [Extra::StepOverhead, Extra::RequestOverhead, Extra::TpComm];

    pub fn name(self) -> &'static str {
        match self {
            Extra::StepOverhead => "step_overhead",
            Extra::RequestOverhead => "request_overhead",
            Extra::TpComm => "tp_comm",
        }
    }

    pub fn parse(name: &str) -> Option<Extra> {
        Extra::ALL.into_iter().find(|x| x.name() == name)
    }

    /// The search's coordinate for this knob: (lower bound, upper bound, its unit per pattern step of 1).
    /// Overheads search in ms from 0; the all-reduce factor in log2, like the multipliers.
    fn range(self) -> (f64, f64, f64) {
        match self {
            Extra::StepOverhead => (0.0, 50.0, 8.0),
            Extra::RequestOverhead => (0.0, 2000.0, 80.0),
            Extra::TpComm => (-3.0, 3.0, 1.0),
        }
    }

    /// The coordinates the first grid tries for this knob (a coarse net: an overhead can stand in for a
    /// larger prefill scale, so each must be tried with the other from the start).
    fn grid(self) -> &'static [f64] {
        match self {
            Extra::StepOverhead => &[0.0, 2.0, 8.0],
            Extra::RequestOverhead => &[0.0, 20.0, 80.0, 320.0],
            Extra::TpComm => &[-1.0, 0.0, 1.0],
        }
    }
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
        parts.join(", ")
    }

    const ONE: Multipliers =
        Multipliers { prefill: 1.0, decode: 1.0, step_overhead_ms: None, request_overhead_ms: None, tp_comm: None };

    /// The knobs at search point `x`: log2 prefill and decode, then each extra's coordinate.
    fn at(x: &[f64], extras: &[Extra]) -> Multipliers {
        let mut m = Multipliers { prefill: libm::exp2(x[0]), decode: libm::exp2(x[1]), ..Multipliers::ONE };
        for (k, e) in extras.iter().enumerate() {
            let v = x[2 + k];
            match e {
                Extra::StepOverhead => m.step_overhead_ms = Some(v),
                Extra::RequestOverhead => m.request_overhead_ms = Some(v),
                Extra::TpComm => m.tp_comm = Some(libm::exp2(v)),
            }
        }
        m
    }
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
    let class = s
        .workload
        .classes
        .first()
        .cloned()
        .unwrap_or_else(|| serde_json::from_str::<ClassSpec>("{}").expect("a default class"));
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
                let overhead_ns = m.step_overhead_ms.unwrap_or(0.0) * 1e6;
                p.cost = p
                    .cost
                    .clone()
                    .scaled(prefill * m.prefill, decode * m.decode)
                    .adjusted(overhead_ns, m.tp_comm.unwrap_or(1.0));
                p.engine.request_overhead_ns += libm::round(m.request_overhead_ms.unwrap_or(0.0) * 1e6) as u64;
            }
            let r = crate::simulate(&sc);
            tick.tick();
            METRICS.map(|(_, measured, predicted)| measured(c).map(|_| predicted(&r)))
        })
        .collect()
}

/// The objective: over the metrics, the sum of a trimmed mean over cases of |ln(pred / measured)| — the mean
/// of the smallest three quarters (all of them below four cases). Each metric counts (one mean over every
/// figure at once would let two metrics right hide a third wrong); the worst quarter of the cases cannot pull
/// the fit, yet every case counts when there are few (a median of three ignores one, and left the search
/// stranded where two cases fit and the third is far off).
fn objective(cases: &[&Case], preds: &[[Option<f64>; 3]]) -> f64 {
    let trimmed_mean = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let keep = v.len() - v.len() / 4;
        if keep == 0 { 0.0 } else { v[..keep].iter().sum::<f64>() / keep as f64 }
    };
    (0..METRICS.len())
        .map(|k| {
            let errs = (cases.iter().zip(preds)).filter_map(|(c, p)| match ((METRICS[k].1)(c), p[k]) {
                (Some(m), Some(x)) if m > 0.0 => Some(if x > 0.0 { libm::fabs(libm::log(x / m)) } else { 10.0 }),
                _ => None,
            });
            trimmed_mean(errs.collect())
        })
        .sum()
}

/// Minimise the training objective: a 9 × 9 log grid over the two multipliers, times a coarse net for each
/// extra, then a pattern search over every knob, halving its step.
fn fit(scenarios: &[Scenario], cases: &[&Case], extras: &[Extra], tick: &mut Ticker<'_>) -> (Multipliers, f64) {
    let mut eval = |x: &[f64]| objective(cases, &predict(scenarios, cases, Multipliers::at(x, extras), tick));
    let (mut best, mut best_err) = (vec![0.0; 2 + extras.len()], f64::INFINITY);
    for x in grid(extras) {
        let e = eval(&x);
        if e < best_err {
            (best, best_err) = (x, e);
        }
    }
    if !extras.is_empty() {
        // An overhead and a scale can stand in for each other: a simplex follows the valley they make, which
        // moves along the axes (below) cross only slowly.
        (best, best_err) = nelder_mead(&mut eval, best, best_err, extras);
    }
    let mut step = 0.25;
    while step > 1.0 / 512.0 {
        let mut moved = false;
        for d in moves(step, extras) {
            let x: Vec<f64> = best.iter().zip(&d).map(|(a, b)| a + b).collect();
            if !in_bounds(&x, extras) {
                continue;
            }
            let e = eval(&x);
            if e < best_err {
                (best, best_err, moved) = (x, e, true);
            }
        }
        if !moved {
            step /= 2.0;
        }
    }
    (Multipliers::at(&best, extras), best_err)
}

/// Nelder–Mead from `x0` (objective `f0`) in the search's coordinates, points clamped to the bounds; a fixed
/// budget of evaluations, so it always ends. The best point and its objective.
fn nelder_mead(eval: &mut impl FnMut(&[f64]) -> f64, x0: Vec<f64>, f0: f64, extras: &[Extra]) -> (Vec<f64>, f64) {
    let n = x0.len();
    let clamp = |mut x: Vec<f64>| {
        for (i, v) in x.iter_mut().enumerate() {
            let (lo, hi) = bounds(i, extras);
            *v = v.clamp(lo, hi);
        }
        x
    };
    let unit = |i: usize| if i < 2 { 0.25 } else { 0.25 * extras[i - 2].range().2 };
    let mut simplex: Vec<(Vec<f64>, f64)> = vec![(x0.clone(), f0)];
    for i in 0..n {
        let mut x = x0.clone();
        x[i] += unit(i);
        let x = clamp(x);
        let f = eval(&x);
        simplex.push((x, f));
    }
    let towards = |a: &[f64], b: &[f64], t: f64| a.iter().zip(b).map(|(p, q)| p + t * (q - p)).collect::<Vec<f64>>();
    for _ in 0..NM_ROUNDS * n {
        simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
        let centroid: Vec<f64> = (0..n).map(|j| simplex[..n].iter().map(|p| p.0[j]).sum::<f64>() / n as f64).collect();
        let worst = simplex[n].clone();
        let reflected = clamp(towards(&centroid, &worst.0, -1.0));
        let fr = eval(&reflected);
        if fr < simplex[0].1 {
            let expanded = clamp(towards(&centroid, &worst.0, -2.0));
            let fe = eval(&expanded);
            simplex[n] = if fe < fr { (expanded, fe) } else { (reflected, fr) };
        } else if fr < simplex[n - 1].1 {
            simplex[n] = (reflected, fr);
        } else {
            let contracted = clamp(towards(&centroid, &worst.0, 0.5));
            let fc = eval(&contracted);
            if fc < worst.1 {
                simplex[n] = (contracted, fc);
            } else {
                let best = simplex[0].0.clone();
                for p in simplex.iter_mut().skip(1) {
                    let x = clamp(towards(&best, &p.0, 0.5));
                    *p = (x.clone(), eval(&x));
                }
            }
        }
    }
    simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
    simplex.swap_remove(0)
}

/// Rounds of the simplex per dimension.
const NM_ROUNDS: usize = 40;

/// The first grid: log2 prefill and decode in −2 … 2 by halves, times each extra's coarse net.
fn grid(extras: &[Extra]) -> Vec<Vec<f64>> {
    let mut points: Vec<Vec<f64>> = Vec::new();
    for i in -4..=4 {
        for j in -4..=4 {
            points.push(vec![i as f64 * 0.5, j as f64 * 0.5]);
        }
    }
    for e in extras {
        points = points
            .into_iter()
            .flat_map(|p| e.grid().iter().map(move |v| p.iter().copied().chain([*v]).collect()))
            .collect();
    }
    points
}

/// The pattern search's moves at `step`: each multiplier alone and both together (in the order the two-knob
/// fit always used), then each extra up and down in its own unit, alone and traded against each multiplier
/// (an overhead up with a scale down: the valley an overhead and a scale make together).
fn moves(step: f64, extras: &[Extra]) -> Vec<Vec<f64>> {
    let n = 2 + extras.len();
    let mut out = Vec::new();
    for (dp, dd) in [
        (step, 0.0),
        (-step, 0.0),
        (0.0, step),
        (0.0, -step),
        (step, step),
        (-step, -step),
        (step, -step),
        (-step, step),
    ] {
        let mut d = vec![0.0; n];
        (d[0], d[1]) = (dp, dd);
        out.push(d);
    }
    for (k, e) in extras.iter().enumerate() {
        for sign in [1.0, -1.0] {
            for with in [None, Some(0), Some(1)] {
                let mut d = vec![0.0; n];
                d[2 + k] = sign * step * e.range().2;
                if let Some(m) = with {
                    d[m] = -sign * step;
                }
                out.push(d);
            }
        }
    }
    out
}

fn in_bounds(x: &[f64], extras: &[Extra]) -> bool {
    x.iter().enumerate().all(|(i, v)| {
        let (lo, hi) = bounds(i, extras);
        (lo..=hi).contains(v)
    })
}

/// The search's bounds on coordinate `i`: log2 of the multipliers within ±2 (¼ … 4), then each extra's range.
fn bounds(i: usize, extras: &[Extra]) -> (f64, f64) {
    match i {
        0 | 1 => (-2.0, 2.0),
        _ => {
            let (lo, hi, _) = extras[i - 2].range();
            (lo, hi)
        }
    }
}

/// Pattern-search levels of [`fit`]: a fit runs at least its grid's points and `LEVELS` rounds of moves.
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
    calibrate_with_progress(base, all_cases, train, &[], &mut |_, _| {})
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
    let one = Multipliers::ONE;
    let n_train = train_cases.len() as u64;
    let (grid_n, moves_n) = (grid(extras).len() as u64, moves(1.0, extras).len() as u64);
    let mut tick =
        Ticker { done: 0, expected: n_train * (1 + grid_n + moves_n * LEVELS) + 2 * all.len() as u64, progress };
    let train_base = objective(&train_cases, &predict(&train_scenarios, &train_cases, one, &mut tick));
    let (fitted, train_fit) = fit(&train_scenarios, &train_cases, extras, &mut tick);
    let before = predict(&scenarios, &all, one, &mut tick);
    let after = predict(&scenarios, &all, fitted, &mut tick);
    let rows = rows(cases, &is_train, &before, &after);
    Ok(Calibration {
        objective: "Σ over TTFT, TPOT and E2E medians of the mean over training cases of |ln(predicted / measured)|, the worst quarter of cases left out",
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
                out.push(Row {
                    case: c.id.clone(),
                    training: is_train[i],
                    metric: name,
                    measured_ms: m,
                    baseline_ms: b,
                    calibrated_ms: a,
                    baseline_ape: ape(b, m),
                    calibrated_ape: ape(a, m),
                });
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
            let mean = |f: fn(&Row) -> f64| {
                (!held.is_empty()).then(|| held.iter().map(|r| f(r)).sum::<f64>() / held.len() as f64)
            };
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
        .map(|(c, _)| {
            format!(
                "{}: its load ({}) is outside the training cases' ({lo} … {hi}): its error is an extrapolation's",
                c.id,
                load(c)
            )
        })
        .collect()
}
