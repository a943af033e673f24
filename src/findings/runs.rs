//! What every experiment shares: the report's run size, the shipped scenarios compiled in, a scenario on a
//! seed, its excerpt, and a run whose Little's-law error is kept for experiment 14.

use super::Excerpt;
use crate::scenario::{self, Spec};

/// How big the report's runs are, and what they run on.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Seeds per figure (seed, seed + 1, …): every headline figure is their mean with its 95 % interval.
    pub repetitions: u64,
    /// Requests per run.
    pub requests: u64,
    /// Run every experiment on this scenario in place of its shipped one (the lab's "rerun on the Serving
    /// Lab's scenario"); absent: the shipped scenarios.
    pub base: Option<Spec>,
    /// Run only this experiment (its id); absent: all of them.
    pub only: Option<String>,
    /// Change every scenario so before the experiment's arms change it (a robustness rerun's setup).
    pub setup: Option<super::Setup>,
    /// Refuse a run past this budget (the CLI's `--budget-gb`, the lab's): on a base the user gave, the
    /// variants the experiments make of it (ten thousand sessions of its two) are runs like any.
    pub budget: Option<scenario::Budget>,
}

impl Default for Config {
    fn default() -> Self {
        Config { repetitions: 5, requests: 10000, base: None, only: None, setup: None, budget: None }
    }
}

/// Every run's Little's-law error, kept for experiment 14, and the runs a scenario refused (on a base other
/// than the shipped scenarios a variant an experiment makes can be invalid: the report is then refused, naming
/// the experiment, the run and the field).
#[derive(Default, serde::Serialize, serde::Deserialize)]
pub struct Runs {
    pub littles: Vec<f64>,
    pub refused: Vec<String>,
    /// The experiment running, to name it in a refusal.
    #[serde(skip)]
    pub experiment: &'static str,
    /// What a run may use ([`Config::budget`]).
    #[serde(skip)]
    pub budget: Option<scenario::Budget>,
}

impl Runs {
    /// Take in another part's runs and refusals.
    pub fn absorb(&mut self, other: Runs) {
        self.littles.extend(other.littles);
        self.refused.extend(other.refused);
    }

    /// The experiment cannot run on this scenario, and why.
    pub fn refuse(&mut self, why: &str) {
        self.refused.push(format!("experiment `{}`: {why}", self.experiment));
    }

    /// A run of the experiment was refused: the first refusal of each kind is kept.
    /// `s` validated and within the budget; None, the refusal recorded, when not. A rate that is not a number
    /// was derived from a run already refused (its capacity): refused without a second, misleading refusal.
    fn admitted(&mut self, s: &Spec) -> Option<scenario::Scenario> {
        use crate::scenario::ArrivalSpec::{Gamma, Poisson};
        if matches!(s.workload.arrival, Poisson { rate_rps } | Gamma { rate_rps, .. } if rate_rps.is_nan())
            && !self.refused.is_empty()
        {
            return None;
        }
        let checked = scenario::validate(s).and_then(|sc| match &self.budget {
            Some(b) => sc.check_budget(b, 1).map(|_| sc),
            None => Ok(sc),
        });
        checked.map_err(|e| self.refuse_run(s, &e.to_string())).ok()
    }

    fn refuse_run(&mut self, s: &Spec, why: &str) {
        let line = format!("experiment `{}`: a run on seed {} is refused: {why}", self.experiment, s.seed);
        let kind = |l: &str| l.split_once(": ").map(|x| x.1.split_once(": ").map_or("", |y| y.1).to_string());
        if self.refused.len() < 10 && !self.refused.iter().any(|r| kind(r) == kind(&line)) {
            self.refused.push(line);
        }
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

/// A shipped scenario (or the configured base in its place) on its seed + k, with the report's requests per
/// run.
pub(super) fn shipped(sc: Shipped, cfg: &Config, k: u64) -> Spec {
    let mut s = cfg.base.clone().unwrap_or_else(|| parse(sc));
    if let Some(setup) = cfg.setup {
        (setup.apply)(&mut s);
    }
    s.seed = s.seed.wrapping_add(k);
    s.workload.requests = Some(cfg.requests);
    s
}

/// The excerpt of `sc` (or of the configured base) each arm runs (on the first seed).
pub(super) fn excerpt(sc: Shipped, cfg: &Config, arms: Vec<(String, Spec)>) -> Option<Excerpt> {
    Some(match &cfg.base {
        Some(b) => Excerpt::of(&format!("the Serving Lab's scenario “{}” (in place of {})", b.name, sc.file), b, &arms),
        None => Excerpt::of(sc.file, &parse(sc), &arms),
    })
}

/// `s` offered `rate`: Poisson, or gamma gaps of the same CV when a setup made the arrivals gamma.
pub(super) fn offer(s: &mut Spec, rate: f64) {
    s.workload.arrival = match s.workload.arrival {
        crate::scenario::ArrivalSpec::Gamma { cv, .. } => crate::scenario::ArrivalSpec::Gamma { rate_rps: rate, cv },
        _ => crate::scenario::ArrivalSpec::Poisson { rate_rps: rate },
    };
}

/// The mean of `x` (0 for none): the point estimate every seed-averaged choice of the report uses.
pub(super) fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len().max(1) as f64
}

/// `s`'s sustained capacity on its own seed (`crate::capacity`: the highest rate of its arrival process served
/// stably, its bracket closed to 1 %, from its drain rate), or NaN when `s` is refused (recorded in `runs`).
pub(super) fn capacity(s: &Spec, runs: &mut Runs) -> f64 {
    if runs.admitted(s).is_none() {
        return f64::NAN;
    }
    let one_seed = crate::capacity::Options { seeds: 1, ..Default::default() };
    match crate::capacity::sustained(s, &one_seed) {
        Ok(c) => c.mean_rps,
        Err(e) => {
            runs.refuse_run(s, &e.to_string());
            f64::NAN
        }
    }
}

/// `s`'s drain rate (every request at once), or NaN when `s` is refused (recorded in `runs`).
pub(super) fn drain(s: &Spec, cfg: &Config, runs: &mut Runs) -> f64 {
    match runs.admitted(s) {
        Some(_) => crate::capacity::drain_rps(s, cfg.requests),
        None => f64::NAN,
    }
}

/// Run `s`, its Little's-law error kept for experiment 14. A refused scenario is recorded and stands in as a
/// one-request run of the benchmark scenario, so the experiment finishes without a panic and the report is
/// then refused.
pub(super) fn run(s: &Spec, runs: &mut Runs) -> crate::Report {
    match runs.admitted(s) {
        Some(sc) => {
            let r = crate::simulate(&sc);
            runs.littles.push(r.audits.little.relative_error);
            r
        }
        None => {
            let mut stand_in = parse(PEER);
            stand_in.workload.requests = Some(1);
            crate::simulate(&scenario::validate(&stand_in).expect("the benchmark scenario is valid"))
        }
    }
}
