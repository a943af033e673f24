//! What every experiment shares: the report's run size, the shipped scenarios compiled in, a scenario on a
//! seed, its excerpt, and a run whose Little's-law error is kept for experiment 12.

use super::Excerpt;
use crate::scenario::{self, Spec};

/// How big the report's runs are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Seeds per figure (seed, seed + 1, …): every headline figure is their mean with its 95 % interval.
    pub repetitions: u64,
    /// Requests per run.
    pub requests: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config { repetitions: 5, requests: 10000 }
    }
}

/// A shipped scenario: its path in the repository and its text, compiled in (the core reads no files).
#[derive(Clone, Copy)]
pub(super) struct Shipped {
    pub file: &'static str,
    pub text: &'static str,
}

macro_rules! shipped_scenario {
    ($file:literal) => {
        Shipped { file: $file, text: include_str!(concat!("../../", $file)) }
    };
}
pub(super) use shipped_scenario;

/// The shipped scenarios the experiments run.
pub(super) const PEER: Shipped = shipped_scenario!("scenarios/peer-llama3-8b-h100.json");
pub(super) const KV_PRESSURE: Shipped = shipped_scenario!("scenarios/kv-pressure.json");
pub(super) const TENANTS: Shipped = shipped_scenario!("scenarios/bursty-multitenant.json");

fn parse(sc: Shipped) -> Spec {
    scenario::parse(sc.text).expect("a shipped scenario parses")
}

/// A shipped scenario on its seed + k, with the report's requests per run.
pub(super) fn shipped(sc: Shipped, cfg: Config, k: u64) -> Spec {
    let mut s = parse(sc);
    s.seed = s.seed.wrapping_add(k);
    s.workload.requests = Some(cfg.requests);
    s
}

/// The excerpt of `sc` each arm runs (on the first seed).
pub(super) fn excerpt(sc: Shipped, arms: Vec<(String, Spec)>) -> Option<Excerpt> {
    Some(Excerpt::of(sc.file, &parse(sc), &arms))
}

/// Run `s`, its Little's-law error kept for experiment 8 (every run of the report but the saturation bursts).
pub(super) fn run(s: &Spec, littles: &mut Vec<f64>) -> crate::Report {
    let r = crate::simulate(&scenario::validate(s).expect("a shipped scenario with the report's changes is valid"));
    littles.push(r.audits.little.relative_error);
    r
}
