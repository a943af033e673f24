//! The calibration search, in its own coordinates: log2 of the prefill and decode multipliers, then each extra
//! knob's (an overhead in ms, the all-reduce factor in log2). Deterministic: a grid, a Nelder–Mead simplex when
//! there are extras, then a pattern search that doubles its step while it moves and halves it when it does
//! not; every point is clamped to the bounds, and every stage has a fixed budget, so a search always ends.

/// A knob calibration may fit besides the prefill and decode multipliers (`--fit`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extra {
    StepOverhead,
    RequestOverhead,
    TpComm,
    /// The serving front end's per-request time (`engine.frontend.per_request_ms`).
    Frontend,
    /// Host time per running sequence per step (`engine.step_cpu.per_seq_us`): a step that grows with the
    /// batch beyond what the roofline predicts.
    SeqOverhead,
}

impl Extra {
    pub const ALL: [Extra; 5] =
        [Extra::StepOverhead, Extra::RequestOverhead, Extra::TpComm, Extra::Frontend, Extra::SeqOverhead];
    /// The knobs `--fit auto` tries when none is named beside it: all but the per-sequence step time, which
    /// is tried only when named (`--fit auto,seq_overhead,…`): on every public series of docs/validation.md
    /// its fit left it idle (at 0 µs), at a fifth more runs a series.
    pub const AUTO: [Extra; 4] = [Extra::StepOverhead, Extra::RequestOverhead, Extra::TpComm, Extra::Frontend];

    pub fn name(self) -> &'static str {
        match self {
            Extra::StepOverhead => "step_overhead",
            Extra::RequestOverhead => "request_overhead",
            Extra::TpComm => "tp_comm",
            Extra::Frontend => "frontend",
            Extra::SeqOverhead => "seq_overhead",
        }
    }

    /// The knob in words, as a table names it: "step overhead".
    pub fn words(self) -> &'static str {
        match self {
            Extra::StepOverhead => "step overhead",
            Extra::RequestOverhead => "request overhead",
            Extra::TpComm => "TP all-reduce",
            Extra::Frontend => "front end",
            Extra::SeqOverhead => "per-sequence step time",
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
            Extra::Frontend => (0.0, 100.0, 2.0),
            // µs a sequence: vLLM's update_from_output alone is ~1.1 µs (docs/model.md); a batch-dependent
            // error of the step as large as 2 ms a sequence is allowed, the search says when it is on its bound.
            Extra::SeqOverhead => (0.0, 2000.0, 50.0),
        }
    }

    /// The coordinates the first grid tries for this knob (a coarse net: an overhead can stand in for a
    /// larger prefill scale, so each must be tried with the other from the start).
    pub fn grid(self) -> &'static [f64] {
        match self {
            Extra::StepOverhead => &[0.0, 2.0, 8.0],
            Extra::RequestOverhead => &[0.0, 20.0, 80.0, 320.0],
            Extra::TpComm => &[-1.0, 0.0, 1.0],
            Extra::Frontend => &[0.0, 2.0, 8.0],
            Extra::SeqOverhead => &[0.0, 50.0, 200.0],
        }
    }

    /// The values a second knob is tried at beside the first's fit ([`widened`]): wider than [`Extra::grid`]
    /// (the search from there cannot cross far along a valley the two knobs and a multiplier make), a
    /// doubling apart.
    fn second_grid(self) -> &'static [f64] {
        match self {
            Extra::StepOverhead => &[0.0, 2.0, 4.0, 8.0, 16.0, 32.0],
            Extra::RequestOverhead => &[0.0, 20.0, 40.0, 80.0, 160.0, 320.0, 640.0],
            Extra::TpComm => &[-2.0, -1.0, 0.0, 1.0, 2.0],
            Extra::Frontend => &[0.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0],
            Extra::SeqOverhead => &[0.0, 25.0, 50.0, 100.0, 200.0, 400.0, 800.0],
        }
    }
}

/// The names of the search's coordinates, in order.
pub fn names(extras: &[Extra]) -> Vec<&'static str> {
    ["prefill", "decode"].into_iter().chain(extras.iter().map(|e| e.name())).collect()
}

/// Coordinate `i`'s unit: a quarter of a doubling for the multipliers, the extra's own otherwise.
pub fn unit(i: usize, extras: &[Extra]) -> f64 {
    if i < 2 { 1.0 } else { extras[i - 2].range().2 }
}

/// The search's bounds on coordinate `i`: log2 of the multipliers within ±2 (¼ … 4), then each extra's range.
pub fn bounds(i: usize, extras: &[Extra]) -> (f64, f64) {
    match i {
        0 | 1 => (-2.0, 2.0),
        _ => {
            let (lo, hi, _) = extras[i - 2].range();
            (lo, hi)
        }
    }
}

/// Rounds of the simplex per dimension.
const NM_ROUNDS: usize = 40;
/// Rounds per dimension without a better vertex after which the simplex stops: it has converged (on the
/// InferenceX series the best vertex stopped moving after a third to two thirds of the budget, and the rounds
/// after were a third of a calibration's runs), though a small simplex still moving along a valley goes on.
const NM_STALL: usize = 5;
/// Pattern-search levels of a full fit: it runs at least its grid's points and this many rounds of moves.
pub const LEVELS: u64 = 7;

/// Minimise `eval`: the best of `starts` (from scratch, [`grid`]; a fit with one knob more, begun where the fit
/// without it ended: [`widened`]), the simplex (with extras), then the pattern search from a step of ¼ down to
/// 1/512. The best point and its objective.
pub fn search_from(eval: &mut impl FnMut(&[f64]) -> f64, starts: Vec<Vec<f64>>, extras: &[Extra]) -> (Vec<f64>, f64) {
    let (mut best, mut best_err) = (vec![0.0; 2 + extras.len()], f64::INFINITY);
    for x in starts {
        let e = eval(&x);
        if e < best_err {
            (best, best_err) = (x, e);
        }
    }
    if !extras.is_empty() {
        // An overhead and a scale can stand in for each other: a simplex follows the valley they make, which
        // moves along the axes (below) cross only slowly.
        (best, best_err) = nelder_mead(eval, best, best_err, extras);
    }
    pattern(eval, best, best_err, extras, 0.25, 1.0 / 512.0)
}

/// The pattern search's largest step, in units: a search that keeps moving doubles its step up to this.
const PATTERN_MAX_STEP: f64 = 1.0;
/// The pattern search's rounds (each tries every move once) at most: its budget.
const PATTERN_ROUNDS: usize = 200;

/// A pattern search from `x0` (objective `f0`): the moves at `step`, doubling it (up to
/// [`PATTERN_MAX_STEP`], or the first step if larger) after a round that improves and halving it after one
/// that does not, until it is below `until` or [`PATTERN_ROUNDS`] rounds are spent. The doubling crosses a long
/// slope in a few rounds: at a fixed step, a front end fitted 20 ms away from its start took 80 rounds.
pub fn pattern(
    eval: &mut impl FnMut(&[f64]) -> f64,
    x0: Vec<f64>,
    f0: f64,
    extras: &[Extra],
    mut step: f64,
    until: f64,
) -> (Vec<f64>, f64) {
    let (mut best, mut best_err) = (x0, f0);
    let largest = step.max(PATTERN_MAX_STEP);
    for _ in 0..PATTERN_ROUNDS {
        if step <= until {
            break;
        }
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
        step = if moved { (step * 2.0).min(largest) } else { step / 2.0 };
    }
    (best, best_err)
}

/// Nelder–Mead from `x0` (objective `f0`), points clamped to the bounds; a fixed budget of evaluations, ended
/// early when the best vertex has not improved for [`NM_STALL`] rounds per dimension.
fn nelder_mead(eval: &mut impl FnMut(&[f64]) -> f64, x0: Vec<f64>, f0: f64, extras: &[Extra]) -> (Vec<f64>, f64) {
    let n = x0.len();
    let clamp = |x: Vec<f64>| clamped(x, extras);
    let mut simplex: Vec<(Vec<f64>, f64)> = vec![(x0.clone(), f0)];
    for i in 0..n {
        let mut x = x0.clone();
        x[i] += 0.25 * unit(i, extras);
        let x = clamp(x);
        let f = eval(&x);
        simplex.push((x, f));
    }
    let towards = |a: &[f64], b: &[f64], t: f64| a.iter().zip(b).map(|(p, q)| p + t * (q - p)).collect::<Vec<f64>>();
    let (mut best_f, mut since) = (f0, 0);
    for _ in 0..NM_ROUNDS * n {
        simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
        if simplex[0].1 < best_f {
            (best_f, since) = (simplex[0].1, 0);
        } else {
            since += 1;
            if since >= NM_STALL * n {
                break;
            }
        }
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

/// `x` with every coordinate moved into its bounds.
pub fn clamped(mut x: Vec<f64>, extras: &[Extra]) -> Vec<f64> {
    for (i, v) in x.iter_mut().enumerate() {
        let (lo, hi) = bounds(i, extras);
        *v = v.clamp(lo, hi);
    }
    x
}

/// How many starts [`widened`] gives when `added` is the knob added.
pub fn widened_len(added: Extra) -> usize {
    12 * added.second_grid().len()
}

/// The starts of a fit with knobs `extras` begun from `from`, the point of a fit with every knob but `added`
/// (its coordinates in `without`'s order): the other knobs kept where that fit put them, the two multipliers
/// at `from`'s values, at each of their eight neighbours half a doubling away (the first grid's spacing) and
/// back at 1 (each alone, and both), each beside every value of `added`'s second net — an overhead trades
/// against a multiplier, so the new knob must be tried with the multipliers moved, not only at the old point.
/// (The whole first net beside it, tried until December 2026, cost seven times the runs; the simplex and the
/// pattern search follow the valley from the best start.)
pub fn widened(from: &[f64], without: &[Extra], added: Extra, extras: &[Extra]) -> Vec<Vec<f64>> {
    let kept = |e: &Extra| without.iter().position(|w| w == e).map_or(0.0, |k| from[2 + k]);
    let near = [0.0, 0.5, -0.5];
    let around = near.iter().flat_map(|dp| near.iter().map(move |dd| [from[0] + dp, from[1] + dd]));
    // And each multiplier back at 1, alone and both: a knob more may explain what a multiplier stood in for.
    let reset = [[from[0], 0.0], [0.0, from[1]], [0.0, 0.0]];
    let nets = around.map(|[p, d]| [p.clamp(-2.0, 2.0), d.clamp(-2.0, 2.0)]).chain(reset);
    nets.flat_map(|[p, d]| {
        added.second_grid().iter().map(move |&v| {
            let rest = extras.iter().map(|e| if *e == added { v } else { kept(e) });
            [p, d].into_iter().chain(rest).collect()
        })
    })
    .collect()
}

/// The first grid: log2 prefill and decode in −2 … 2 by halves, times each extra's coarse net.
pub fn grid(extras: &[Extra]) -> Vec<Vec<f64>> {
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

/// The pattern search's moves at `step`: each multiplier alone and both together, then each extra up and down
/// in its own unit, alone and traded against each multiplier (an overhead up with a scale down: the valley an
/// overhead and a scale make together).
pub fn moves(step: f64, extras: &[Extra]) -> Vec<Vec<f64>> {
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

/// The coordinates the objective does not depend on near `x` (`f(x)` = `fx`): moved a unit up and down (within
/// the bounds), the objective stays exactly the same — a knob the cases cannot identify.
pub fn flat(eval: &mut impl FnMut(&[f64]) -> f64, x: &[f64], fx: f64, extras: &[Extra]) -> Vec<usize> {
    (0..x.len())
        .filter(|&i| {
            [1.0, -1.0].iter().all(|s| {
                let mut y = x.to_vec();
                y[i] += s * 0.5 * unit(i, extras);
                let y = clamped(y, extras);
                y[i] == x[i] || eval(&y) == fx
            })
        })
        .collect()
}

/// The coordinates within 1/64 of a unit of a bound: where the search stopped because it could go no further.
pub fn at_bound(x: &[f64], extras: &[Extra]) -> Vec<usize> {
    (0..x.len())
        .filter(|&i| {
            let (lo, hi) = bounds(i, extras);
            let tol = unit(i, extras) / 64.0;
            x[i] - lo < tol || hi - x[i] < tol
        })
        .collect()
}
