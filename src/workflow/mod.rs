//! Multi-agent workflows: the validated roles and their Markov chain (`Workflow`), what the engine learns of
//! the chain (`RoleModel`, fed only transitions it has seen), the forecast of a workflow's coming roles
//! (`Forecast`), the prefetch plan made from it, and the expected calibration error of the forecasts.
//!
//! ```text
//!  step ends ─▶ forecast (learned matrix rolled forward, or the clairvoyant's known roles)
//!            ─▶ plan: roles to have in HBM (threshold, or utility: prefill saved vs transfer + eviction)
//!            ─▶ the engine fetches those not there over the host link
//!  next step arrives ─▶ its role is seen: the forecast is scored, the model learns the transition
//! ```

use crate::spec::{Errors, PrefetchSpec, RolePredictorSpec, WorkflowSpec, at, field::Checked, s_to_ns};
use std::collections::BTreeMap;

const P: &str = "workload.sessions.workflow";

/// A workflow (validated `WorkflowSpec`).
#[derive(Clone, Debug, PartialEq)]
pub struct Workflow {
    pub roles: Vec<String>,
    /// Each role's prompt prefix, tokens.
    pub prefix_tokens: u32,
    pub first: u16,
    /// Cumulative transition weights per role, before and (`shift`) after the shift.
    pub cdf: Vec<Vec<f64>>,
    pub shift: Option<(u64, Vec<Vec<f64>>)>,
    pub prefix_budget: f64,
    pub predictor: RolePredictorSpec,
    pub prefetch: PrefetchSpec,
    pub recall_k: u32,
}

type Rows = BTreeMap<String, BTreeMap<String, f64>>;

impl Workflow {
    /// The workflow of `w`; errors under `workload.sessions.workflow`.
    pub(crate) fn build(w: &WorkflowSpec, e: &mut Errors) -> Option<Workflow> {
        let n0 = e.0.len();
        w.check_fields(P, e);
        w.predictor.check_fields(&at!(P, w.predictor), e);
        w.prefetch.check_fields(&at!(P, w.prefetch), e);
        check_names(&w.roles, e);
        let first = match &w.first {
            None => Some(0),
            Some(f) => role_index(&w.roles, f, &at!(P, w.first), e),
        };
        let rows = matrix(&w.roles, &w.transitions, &at!(P, w.transitions), None, e);
        let shift = w.shift.as_ref().and_then(|s| {
            let at = at!(P, w.shift);
            s.check_fields(&at, e);
            let rows = matrix(&w.roles, &s.transitions, &format!("{at}.transitions"), Some(&w.transitions), e)?;
            Some((s_to_ns(s.at_s), rows))
        });
        if e.0.len() > n0 {
            return None;
        }
        Some(Workflow {
            roles: w.roles.clone(),
            prefix_tokens: w.prefix_tokens,
            first: first? as u16,
            cdf: rows?,
            shift,
            prefix_budget: w.prefix_budget,
            predictor: w.predictor,
            prefetch: w.prefetch,
            recall_k: w.recall_k,
        })
    }

    /// The forecast's horizon, steps.
    pub fn horizon(&self) -> u32 {
        match self.prefetch {
            PrefetchSpec::Threshold { horizon, .. } | PrefetchSpec::Utility { horizon } => horizon,
        }
    }

    /// The cumulative transition weights a workflow starting at `start_ns` follows, and whether they are the
    /// shifted ones.
    pub fn rows_at(&self, start_ns: u64) -> (&[Vec<f64>], bool) {
        match &self.shift {
            Some((at, rows)) if start_ns >= *at => (rows, true),
            _ => (&self.cdf, false),
        }
    }
}

fn check_names(roles: &[String], e: &mut Errors) {
    if roles.is_empty() {
        e.push(at!(P, WorkflowSpec::roles), "at least one role");
    }
    for (i, r) in roles.iter().enumerate() {
        if r.trim().is_empty() {
            e.push(format!("{}[{i}]", at!(P, WorkflowSpec::roles)), "a role needs a name");
        } else if roles[..i].contains(r) {
            e.push(
                format!("{}[{i}]", at!(P, WorkflowSpec::roles)),
                format!("the name {r:?} is taken by an earlier role"),
            );
        }
    }
}

fn role_index(roles: &[String], name: &str, at: &str, e: &mut Errors) -> Option<usize> {
    let i = roles.iter().position(|r| r == name);
    if i.is_none() {
        e.push(at, format!("no role is named {name:?}: the roles are {}", roles.join(", ")));
    }
    i
}

/// The transition rows of `given` as cumulative weights in role order; a role missing from `given` takes its
/// row from `base` (a shift's), or is an error.
fn matrix(roles: &[String], given: &Rows, at: &str, base: Option<&Rows>, e: &mut Errors) -> Option<Vec<Vec<f64>>> {
    let n0 = e.0.len();
    for from in given.keys() {
        role_index(roles, from, &format!("{at}.{from}"), e);
    }
    let mut out = Vec::with_capacity(roles.len());
    // A row a shift takes from the base chain was checked there: its errors are said once, at the base's path.
    let mut inherited_errors = Errors::default();
    for from in roles {
        let (row, e) = match (given.get(from), base.and_then(|b| b.get(from))) {
            (Some(row), _) => (row, &mut *e),
            (None, Some(row)) => (row, &mut inherited_errors),
            (None, None) => {
                // A shift's row missing from the base chain too was refused there.
                let e = if base.is_some() { &mut inherited_errors } else { &mut *e };
                e.push(format!("{at}.{from}"), "every role needs the weights of the roles that may follow it");
                continue;
            }
        };
        let mut w = vec![0.0; roles.len()];
        for (to, &x) in row {
            let p = format!("{at}.{from}.{to}");
            if let Some(j) = role_index(roles, to, &p, e) {
                w[j] = x;
            }
            if !(x.is_finite() && (0.0..=1e9).contains(&x)) {
                e.push(p, format!("must be a weight from 0 to 1e9 (got {x})"));
            }
        }
        let total: f64 = w.iter().sum();
        if total <= 0.0 {
            e.push(format!("{at}.{from}"), "the weights must not all be 0");
            continue;
        }
        let mut acc = 0.0;
        out.push(w.iter().map(|x| (acc += x / total, acc).1).collect());
    }
    (e.0.len() == n0 && inherited_errors.0.is_empty()).then_some(out)
}

/// Transition counts learned from the role sequence seen so far, each row decayed by `decay` whenever a
/// transition out of its role is seen (1: cumulative counts).
#[derive(Clone, Debug, PartialEq)]
pub struct RoleModel {
    n: usize,
    decay: f64,
    counts: Vec<f64>,
}

impl RoleModel {
    pub fn new(roles: usize, decay: f64) -> Self {
        RoleModel { n: roles, decay, counts: vec![0.0; roles * roles] }
    }

    /// The roles it learns over.
    pub fn roles(&self) -> usize {
        self.n
    }

    /// A step of role `to` followed one of role `from`.
    pub fn observe(&mut self, from: u16, to: u16) {
        let row = &mut self.counts[from as usize * self.n..][..self.n];
        row.iter_mut().for_each(|c| *c *= self.decay);
        row[to as usize] += 1.0;
    }

    /// The learned probabilities of the role after `from` (None: no transition out of it seen yet).
    pub fn next(&self, from: u16) -> Option<Vec<f64>> {
        let row = &self.counts[from as usize * self.n..][..self.n];
        let total: f64 = row.iter().sum();
        (total > 0.0).then(|| row.iter().map(|c| c / total).collect())
    }

    /// For each role, the probability that one of the next `h` steps after a step of role `from` is of that
    /// role, by the learned chain (a row not seen yet leads nowhere).
    pub fn within(&self, from: u16, h: u32) -> Option<Vec<f64>> {
        let first = self.next(from)?;
        let rows: Vec<Option<Vec<f64>>> = (0..self.n as u16).map(|r| self.next(r)).collect();
        let out = (0..self.n)
            .map(|target| {
                // The chain with `target` absorbing: the mass that reaches it within h steps.
                let (mut q, mut hit) = (first.clone(), 0.0);
                for step in 0..h {
                    hit += std::mem::take(&mut q[target]);
                    if step + 1 == h {
                        break;
                    }
                    let mut next = vec![0.0; self.n];
                    for (i, &m) in q.iter().enumerate().filter(|(_, m)| **m > 0.0) {
                        if let Some(row) = &rows[i] {
                            next.iter_mut().zip(row).for_each(|(x, p)| *x += m * p);
                        }
                    }
                    q = next;
                }
                hit
            })
            .collect();
        Some(out)
    }

    /// The learned rows, normalised (a row not seen yet: all 0).
    pub fn rows(&self) -> Vec<Vec<f64>> {
        (0..self.n as u16).map(|r| self.next(r).unwrap_or_else(|| vec![0.0; self.n])).collect()
    }
}

/// What a step's end forecasts of its workflow's coming roles: each role's probability of being the next,
/// and of being among the next `horizon`.
#[derive(Clone, Debug, PartialEq)]
pub struct Forecast {
    pub next: Vec<f64>,
    pub within: Vec<f64>,
}

impl Forecast {
    /// The clairvoyant's: certain of the coming roles `future` (the next first).
    pub fn known(roles: usize, future: &[u16]) -> Forecast {
        let mut f = Forecast { next: vec![0.0; roles], within: vec![0.0; roles] };
        if let Some(&n) = future.first() {
            f.next[n as usize] = 1.0;
        }
        future.iter().for_each(|&r| f.within[r as usize] = 1.0);
        f
    }

    /// The learned model's, after a step of role `from` (None: nothing seen out of it).
    pub fn learned(m: &RoleModel, from: u16, horizon: u32) -> Option<Forecast> {
        Some(Forecast { next: m.next(from)?, within: m.within(from, horizon)? })
    }

    /// The most probable next role (the lowest index among equals).
    pub fn top1(&self) -> u16 {
        let best = self.next.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        self.next.iter().position(|&p| p == best).unwrap_or(0) as u16
    }
}

/// What a prefetch decision knows of the worker: which roles' prefixes it holds or has in flight, the idle
/// ones in eviction order (least recently used first), and how many more prefixes its budget holds before
/// one must go.
pub struct Holding {
    pub present: u64,
    pub idle_lru: Vec<u16>,
    pub room: u64,
}

/// The plan of a step's end: the roles wanted in HBM for the coming steps (a bit per role), and of those, the
/// ones to fetch now (not held), most probable first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    pub wanted: u64,
    pub fetch: Vec<u16>,
}

/// The prefetch plan for forecast `f` on a worker holding `h`. `prefill_ns` is a prefix's prefill time alone,
/// `transfer_ns` its trip over the host link.
pub fn plan(spec: PrefetchSpec, f: &Forecast, h: &Holding, prefill_ns: f64, transfer_ns: f64) -> Plan {
    let mut order: Vec<u16> = (0..f.within.len() as u16).filter(|&r| f.within[r as usize] > 0.0).collect();
    order.sort_by(|a, b| f.within[*b as usize].total_cmp(&f.within[*a as usize]).then(a.cmp(b)));
    let mut out = Plan::default();
    let mut room = h.room;
    let mut lru = h.idle_lru.iter().copied().peekable();
    for r in order {
        let p = f.within[r as usize];
        let wanted = match spec {
            PrefetchSpec::Threshold { threshold, .. } => p >= threshold,
            PrefetchSpec::Utility { .. } => p * prefill_ns > transfer_ns,
        };
        if !wanted {
            continue;
        }
        out.wanted |= 1 << r;
        if h.present & (1 << r) != 0 {
            continue;
        }
        if let PrefetchSpec::Utility { .. } = spec
            && room == 0
        {
            // The prefix it evicts (the least recently used idle one) is the price of the room.
            while lru.next_if(|v| out.wanted & (1 << v) != 0).is_some() {}
            let Some(v) = lru.next() else { continue };
            if p * prefill_ns - transfer_ns <= f.within[v as usize] * prefill_ns {
                continue;
            }
        }
        room = room.saturating_sub(1);
        out.fetch.push(r);
    }
    out
}

/// Expected calibration error of probabilistic forecasts, from the sums of its ten equal-width bins (each:
/// forecasts, Σ probability, Σ outcome): Σ over bins of |mean probability − frequency| × the bin's share.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Calibration {
    bins: [(u64, f64, f64); 10],
}

impl Calibration {
    /// A forecast of probability `p` for an event that did (`happened`) or did not happen.
    pub fn add(&mut self, p: f64, happened: bool) {
        let b = ((p * 10.0) as usize).min(9);
        let bin = &mut self.bins[b];
        bin.0 += 1;
        bin.1 += p;
        bin.2 += happened as u8 as f64;
    }

    /// The error (None: no forecast).
    pub fn ece(&self) -> Option<f64> {
        let n: u64 = self.bins.iter().map(|b| b.0).sum();
        (n > 0).then(|| self.bins.iter().map(|&(_, p, y)| (p - y).abs() / n as f64).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decayed_counts_match_a_hand_computation() {
        // 0→1, 0→1, 0→2 with decay 0.5: row 0 = ((1·0.5 + 1)·0.5, 0.5·0 + 1) = (0.75, 1) over roles 1, 2.
        let mut m = RoleModel::new(3, 0.5);
        assert_eq!(m.next(0), None);
        m.observe(0, 1);
        m.observe(0, 1);
        m.observe(0, 2);
        let p = m.next(0).unwrap();
        assert!((p[1] - 0.75 / 1.75).abs() < 1e-12 && (p[2] - 1.0 / 1.75).abs() < 1e-12, "{p:?}");
        // Cumulative counts: 2 of 3.
        let mut c = RoleModel::new(3, 1.0);
        [(0, 1), (0, 1), (0, 2)].iter().for_each(|&(a, b)| c.observe(a, b));
        assert_eq!(c.next(0).unwrap(), vec![0.0, 2.0 / 3.0, 1.0 / 3.0]);
    }

    #[test]
    fn within_h_steps_rolls_the_learned_chain_forward() {
        // 0 → 1 always; 1 → 0 or 2 evenly. Within 2 steps of 0: role 1 surely, role 2 with 0.5, role 0 0.5.
        let mut m = RoleModel::new(3, 1.0);
        [(0, 1), (1, 0), (1, 2)].iter().for_each(|&(a, b)| m.observe(a, b));
        assert_eq!(m.within(0, 1).unwrap(), vec![0.0, 1.0, 0.0]);
        assert_eq!(m.within(0, 2).unwrap(), vec![0.5, 1.0, 0.5]);
        // A first hit is counted once: within 3 steps role 1 is still 1.
        assert_eq!(m.within(0, 3).unwrap()[1], 1.0);
    }

    #[test]
    fn a_perfectly_calibrated_forecaster_has_zero_ece() {
        let mut c = Calibration::default();
        // In each bin the events happen exactly as often as forecast: 1 of 4 at 0.25, 3 of 4 at 0.75.
        for k in 0..4 {
            c.add(0.25, k == 0);
            c.add(0.75, k != 0);
        }
        assert_eq!(c.ece(), Some(0.0));
        // The clairvoyant's certainty: 1 for what happens, 0 for the rest.
        let mut k = Calibration::default();
        let f = Forecast::known(4, &[2, 3]);
        f.next.iter().enumerate().for_each(|(r, &p)| k.add(p, r == 2));
        assert_eq!(k.ece(), Some(0.0));
        // Overconfidence costs: 0.9 for events that happen half the time.
        let mut o = Calibration::default();
        (0..10).for_each(|i| o.add(0.9, i % 2 == 0));
        assert!((o.ece().unwrap() - 0.4).abs() < 1e-12);
        assert_eq!(Calibration::default().ece(), None);
    }

    #[test]
    fn the_threshold_plan_fetches_what_is_likely_and_absent() {
        let f = Forecast { next: vec![0.6, 0.3, 0.1], within: vec![0.6, 0.3, 0.1] };
        let h = Holding { present: 0b001, idle_lru: vec![0], room: 2 };
        let p = plan(PrefetchSpec::Threshold { threshold: 0.25, horizon: 1 }, &f, &h, 1e6, 1e5);
        assert_eq!(p, Plan { wanted: 0b011, fetch: vec![1] });
    }

    #[test]
    fn the_utility_plan_weighs_the_transfer_and_the_prefix_it_evicts() {
        // Prefill 10 ms, transfer 2 ms: role 1 (p 0.3) saves 3 ms − 2 ms; role 2 (p 0.1) not worth its trip.
        let f = Forecast { next: vec![0.0, 0.3, 0.1], within: vec![0.05, 0.3, 0.1] };
        let free = Holding { present: 0, idle_lru: vec![], room: 3 };
        let u = PrefetchSpec::Utility { horizon: 1 };
        assert_eq!(plan(u, &f, &free, 1e7, 2e6).fetch, vec![1]);
        // Full: fetching 1 evicts 0 (p 0.05: 0.5 ms of expected prefill) — worth it; evicting a prefix as
        // likely as the gain (p 0.2: 2 ms ≥ 1 ms) is not.
        let full = Holding { present: 0b001, idle_lru: vec![0], room: 0 };
        assert_eq!(plan(u, &f, &full, 1e7, 2e6).fetch, vec![1]);
        let f2 = Forecast { next: vec![0.2, 0.3, 0.0], within: vec![0.2, 0.3, 0.0] };
        assert_eq!(plan(u, &f2, &full, 1e7, 2e6).fetch, Vec::<u16>::new());
    }
}
