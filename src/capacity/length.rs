//! Whether a run is long enough to decide its verdict. Near sustained capacity a queue grows slowly: a run of a
//! few thousand requests offered ρ = 1.09 can end before its queue shows the overload, and read "memory" where
//! the same scenario run five times longer reads "capacity". So when the run's regime and its ρ disagree, or
//! the capacity's interval holds the offered rate, the same scenario is run again at twice, four times, … its
//! length (the first requests the same: they are drawn at creation), until two successive lengths read the
//! same kind. The shorter of the two decides; when it is not the run's own, its diagnosis replaces the run's,
//! saying so, and the advice is tested at that length.

use super::{Capacity, RUN_REQUESTS};
use crate::metrics::{LengthCheck, Reading, Report};
use crate::scenario::{self, ArrivalSpec, Budget, Scenario, Spec};
use crate::{Progress, RunError};

/// How `check` names its runs to the progress it reports ("the same scenario, longer: 8,000 requests").
pub const PROGRESS_WORDS: &str = "the same scenario, longer";

/// Lengths are doubled up to this many requests (at least once): twice the capacity search's runs, whose
/// verdict on stability the check is set against.
pub const LONGEST_REQUESTS: u64 = 2 * RUN_REQUESTS;

/// Whether the run at `offered` (the capacity's unit) needs its length checked: its regime says the queue
/// grew while the offered rate is under sustained capacity, or the reverse, or the capacity's interval holds
/// the offered rate (either reading is then fair, and only a longer run tells which this one is).
pub fn needed(report: &Report, c: &Capacity, offered: f64) -> bool {
    let d = &report.diagnosis;
    let straddles = c.lo_rps <= offered && offered <= c.hi_rps;
    let disagrees = match d.regime {
        "overloaded" => offered < c.mean_rps,
        "under_capacity" => offered > c.mean_rps,
        _ => false,
    };
    straddles || disagrees
}

/// The run's length in requests, and `spec` with that count made explicit (a duration turned into the
/// requests it holds at the scenario's rate); Err says why a length cannot be doubled: a trace's rows are
/// what they are, and sessions are counted in sessions.
fn sized(spec: &Spec, sc: &Scenario) -> Result<(u64, Spec), &'static str> {
    if matches!(spec.workload.arrival, ArrivalSpec::Trace { .. }) {
        return Err("a trace replays its own rows");
    }
    if sc.workload.sessions.is_some() {
        return Err("sessions are not lengthened here");
    }
    let in_duration = spec.workload.duration_s.map(|d| libm::ceil(d * 1e9 / sc.workload.mean_gap_ns()) as u64);
    let n = match (spec.workload.requests, in_duration) {
        (Some(r), Some(d)) => r.min(d),
        (r, d) => r.or(d).unwrap_or(sc.workload.max_requests),
    }
    .max(1);
    let mut s = spec.clone();
    (s.workload.requests, s.workload.duration_s) = (Some(n), None);
    Ok((n, s))
}

/// `base` (of `n` requests) run at `length` requests: its horizon, if any, scaled with it.
fn at_length(base: &Spec, n: u64, length: u64) -> Spec {
    let mut s = base.clone();
    s.workload.requests = Some(length);
    s.engine.horizon_s = s.engine.horizon_s.map(|h| h * length as f64 / n as f64);
    s
}

/// What the check found: the run's verdict stands (its own length decides, or none could be run), or a longer
/// run decides, whose scenario and report are handed back (the advice is tested at its length).
pub enum Outcome {
    Stands,
    Longer(Box<(Spec, Scenario)>),
}

/// Check the length of `report`'s run (of `spec`, validated as `sc`) against `c`, its sustained capacity
/// (`offered` in its unit), when `needed`; the diagnosis gets the readings (`Diagnosis::length`) and, when a
/// longer run decides, that run's diagnosis. Every run is held to `budget` (a length refused ends the check).
pub fn check(
    spec: &Spec,
    sc: &Scenario,
    report: &mut Report,
    c: &Capacity,
    offered: f64,
    budget: &Budget,
    progress: &mut dyn FnMut(&str, Progress) -> bool,
) -> Result<Outcome, RunError> {
    if !needed(report, c, offered) {
        return Ok(Outcome::Stands);
    }
    let own = report.diagnosis.kind;
    let (n, base) = match sized(spec, sc) {
        Ok(sized) => sized,
        Err(why) => {
            let requests = report.summary.requests;
            let readings = vec![Reading { requests, kind: own }];
            let check = LengthCheck { requests, readings, decided_at: None, unchecked: Some(why) };
            report.diagnosis.set_length(check, own);
            return Ok(Outcome::Stands);
        }
    };
    let mut readings = vec![Reading { requests: n, kind: own }];
    // The latest run's scenario and report, and the one before it (the candidate that decides).
    let mut last: Option<(Spec, Scenario, Report)> = None;
    let mut length = n.saturating_mul(2);
    let mut decided = None;
    let mut refused = false;
    while length <= LONGEST_REQUESTS.max(n.saturating_mul(2)) {
        let s = at_length(&base, n, length);
        let Ok(v) = scenario::validate_within(&s, budget) else {
            // Refused at any length: the lengths did not run out, the budget did (said as such).
            refused = true;
            break;
        };
        let words = format!("{PROGRESS_WORDS}: {length} requests");
        let mut r = crate::simulate_with_progress(&v, &mut |p| progress(&words, p))?;
        r.diagnosis.set_capacity(c, offered, "req/s", r.summary.turned_away_share());
        let kind = r.diagnosis.kind;
        let before = readings.last().expect("the run's own reading").clone();
        readings.push(Reading { requests: length, kind });
        if before.kind == kind {
            decided = Some(before.requests);
            break;
        }
        last = Some((s, v, r));
        length = length.saturating_mul(2);
    }
    let unchecked = refused.then_some("the budget refuses a run twice as long");
    let check = LengthCheck { requests: n, readings, decided_at: decided, unchecked };
    match (decided, last) {
        (Some(at), Some((s, v, r))) if at > n => {
            report.diagnosis = r.diagnosis;
            report.diagnosis.set_length(check, own);
            Ok(Outcome::Longer(Box::new((s, v))))
        }
        _ => {
            report.diagnosis.set_length(check, own);
            Ok(Outcome::Stands)
        }
    }
}
