//! What the recorder observes of workflows: each transition as the engine saw it (the forecast its step's end
//! made, scored against the role that came), the prefetch decisions, and the transfers.

use crate::workflow::{Calibration, Forecast};

/// A transition seen when a step arrived, with what the previous step's end planned for it.
pub struct RoleSeen<'a> {
    pub to: u16,
    /// The workflow's roles followed the shifted transitions.
    pub shifted: bool,
    /// The forecast (None: the model had seen nothing out of the previous role).
    pub forecast: Option<&'a Forecast>,
    /// The roles the plan wanted in HBM, those it fetched, and the distinct roles of the workflow's next K
    /// steps (a bit per role).
    pub wanted: u64,
    pub fetched: u64,
    pub future_k: u64,
}

/// A prefetch decision: when, for which session, what it wanted and what it fetched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub at_ns: u64,
    pub session: u32,
    pub wanted: u64,
    pub fetched: u64,
}

#[derive(Clone, Debug, Default)]
pub struct WorkflowMetrics {
    /// Transitions scored (those with a forecast), before and after the shift, and their top-1 hits.
    pub transitions: [u64; 2],
    pub forecasts: [u64; 2],
    pub top1: [u64; 2],
    /// Σ |wanted|, Σ [next role wanted], Σ |future K|, Σ |wanted ∩ future K|.
    pub wanted: u64,
    pub covered: u64,
    pub future: u64,
    pub future_hit: u64,
    /// Fetched roles that were not the next role.
    pub wrong: u64,
    pub calibration: Calibration,
    pub decisions: Vec<Decision>,
    /// Transfers started, their bytes, those that landed into the cache, and those that found it there.
    pub prefetches: u64,
    pub prefetch_bytes: u64,
    pub landed: u64,
    pub redundant: u64,
    /// From the engine at the end: idle prefixes evicted to keep the budget, landed copies a step shared and
    /// those evicted unshared, and the learned transitions (normalised rows).
    pub budget_evictions: u64,
    pub used: u64,
    pub unused: u64,
    pub learned: Vec<Vec<f64>>,
}

impl WorkflowMetrics {
    pub fn on_role_seen(&mut self, s: &RoleSeen) {
        let k = s.shifted as usize;
        self.transitions[k] += 1;
        let bit = 1u64 << s.to;
        self.wanted += s.wanted.count_ones() as u64;
        self.covered += (s.wanted & bit != 0) as u64;
        self.future += s.future_k.count_ones() as u64;
        self.future_hit += (s.wanted & s.future_k).count_ones() as u64;
        self.wrong += (s.fetched & !bit).count_ones() as u64;
        if let Some(f) = s.forecast {
            self.forecasts[k] += 1;
            self.top1[k] += (f.top1() == s.to) as u64;
            for (r, &p) in f.next.iter().enumerate() {
                self.calibration.add(p, r == s.to as usize);
            }
        }
    }
}
