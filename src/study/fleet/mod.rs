//! Fleet planner: which devices × TP × layout × replicas carry a target rate at the objectives for the least
//! money, and how sure that answer is.
//!
//! Every candidate of the search space ([`space`]) is one *lane*, searched on its own ([`lane`]): on each of R
//! seeds, the highest rate one replica (one P/D unit) sustains, then the fewest replicas that carry the target
//! rate with its headroom — every count simulated whole, with the scenario's router, so routing losses are in
//! the answer. The fleet is sized at the most any seed needed, and then run at the target rate on R seeds the
//! search never saw: attainment, the probability the objectives are met, p95 latencies. Lanes are independent,
//! so a batch holds every lane's next runs, and shards split the lanes.
//!
//! Costs ([`cost`]) are the candidate's GPUs at their list prices (`cost::presets::PRICE_SOURCE`, editable),
//! per hour and per million tokens of each kind.

pub mod cost;
mod lane;
mod report;
pub mod space;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use super::capacity::Criterion;
use super::{About, Group, Job, Rank, RunSummary, Study, StudyDef, StudyReport};
use crate::scenario::{self, ArrivalSpec, BatchFormationSpec, Errors, ScenarioError, SchedulerSpec, Spec};
use crate::spec::Bound;
use crate::study::option::{Bounded, Text, described};
use lane::{Lane, Sizing};
pub use space::{Candidate, Layout};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FleetParams {
    /// The offered rate the fleet must carry, req/s; absent: the scenario's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_rps: Option<f64>,
    /// Burst headroom: replicas are sized for `target_rps × (1 + headroom)`, [0, 10].
    pub headroom: f64,
    /// Seeds per candidate: each searches its own capacity and replica count; as many more, unseen by the
    /// search, run the chosen fleet. 1 … 20.
    pub repetitions: u32,
    /// Device presets to try (empty: the scenario's device).
    pub devices: Vec<String>,
    /// US dollars per GPU-hour by device, over the shipped list prices (a device without a list price needs
    /// one here).
    pub prices: BTreeMap<String, f64>,
    /// Tensor-parallel degrees to try (empty: the scenario's).
    pub tp: Vec<u32>,
    /// Layouts to try (empty: colocated).
    pub layouts: Vec<Layout>,
    /// Batch caps (`engine.max_num_seqs`) to try (empty: the scenario's).
    pub max_num_seqs: Vec<u32>,
    /// Token budgets (`engine.max_num_batched_tokens`) to try (empty: the scenario's).
    pub max_num_batched_tokens: Vec<u32>,
    /// Batch formations to try (empty: the scenario's).
    pub batch_formations: Vec<BatchFormationSpec>,
    /// Schedulers to try (empty: the scenario's).
    pub schedulers: Vec<SchedulerSpec>,
    /// SLO attainment a run must reach, (0, 1]; absent: the scenario's attainment target.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<f64>,
    /// Instead of SLO attainment: a run passes when its mean queueing delay is at most this many ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_mean_wait_ms: Option<f64>,
    /// Most replicas (P/D units) a candidate may use, 1 … 4096.
    pub max_replicas: u32,
    /// The rate search stops when its bracket is narrower than this share of the passing rate, (0, 1).
    pub precision: f64,
    /// The calibrated model's held-out error (the Calibration panel's median APE), [0, 0.9]: it widens the
    /// replica interval as a capacity off by that share would.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_error: Option<f64>,
}

described!(FleetParams {
    target_rps: Text {
        label: "Target rate",
        unit: "req/s (empty: the scenario's)",
        help: "The offered rate the fleet must carry",
        bound: Some(Bound::OpenLo(0.0, 1e6)),
    };
    headroom: Text {
        label: "Burst headroom",
        unit: "fraction over the target",
        help: "Replicas are sized for the target × (1 + headroom)",
        bound: Some(Bound::Range(0.0, 10.0)),
    };
    repetitions: Text {
        label: "Repetitions",
        unit: "seeds per candidate",
        help: "Each seed searches its own capacity and replica count; as many unseen seeds run the chosen fleet",
        bound: Some(Bound::Int(1, 20)),
    };
    devices: Text {
        label: "Devices",
        unit: "JSON list of presets, e.g. [\"h100-sxm\", \"l40s\"] ([]: the scenario's)",
        help: "Device presets to try",
        bound: None,
    };
    prices: Text {
        label: "Prices",
        unit: "JSON {device: USD per GPU-hour}, over the shipped list",
        help: "A device without a list price needs one here",
        bound: None,
    };
    tp: Text {
        label: "TP degrees",
        unit: "JSON list, e.g. [1, 2] ([]: the scenario's)",
        help: "Tensor-parallel degrees to try",
        bound: None,
    };
    layouts: Text {
        label: "Layouts",
        unit: "JSON list: {\"kind\": \"colocated\"} or {\"kind\": \"pd\", \"prefill\": 1, \"decode\": 2, \"decode_device\": \"l40s\"}",
        help: "Colocated or P/D units, each pool on its own device when given",
        bound: None,
    };
    max_num_seqs: Text {
        label: "Batch caps",
        unit: "JSON list of max_num_seqs ([]: the scenario's)",
        help: "Batch caps to try",
        bound: None,
    };
    max_num_batched_tokens: Text {
        label: "Token budgets",
        unit: "JSON list of max_num_batched_tokens ([]: the scenario's)",
        help: "Token budgets to try",
        bound: None,
    };
    batch_formations: Text {
        label: "Batch formations",
        unit: "JSON list, e.g. [\"vllm\", \"sglang\"] ([]: the scenario's)",
        help: "Batch formations to try",
        bound: None,
    };
    schedulers: Text {
        label: "Schedulers",
        unit: "JSON list, e.g. [{\"kind\": \"fcfs\"}, {\"kind\": \"sjf\"}] ([]: the scenario's)",
        help: "Schedulers to try",
        bound: None,
    };
    target: Text {
        label: "SLO attainment target",
        unit: "fraction (empty: the scenario's objectives)",
        help: "A run passes at this attainment with every percentile objective met",
        bound: Some(Bound::OpenLo(0.0, 1.0)),
    };
    max_mean_wait_ms: Text {
        label: "Or: mean wait at most",
        unit: "ms (empty: use the SLOs)",
        help: "Pass on mean queueing delay instead of SLO attainment",
        bound: Some(Bound::OpenLo(0.0, 1e9)),
    };
    max_replicas: Text {
        label: "Most replicas",
        unit: "per candidate",
        help: "A candidate that needs more does not pass; its ceiling below the rate prunes it",
        bound: Some(scenario::REPLICAS),
    };
    precision: Text {
        label: "Precision",
        unit: "fraction of the rate",
        help: "The capacity search stops when its bracket is this narrow",
        bound: Some(Bound::OpenLo(0.0, 0.99)),
    };
    model_error: Text {
        label: "Model error",
        unit: "fraction (empty: none; the Calibration panel's held-out median APE)",
        help: "Widens the replica interval as a capacity off by this share would",
        bound: Some(Bound::Range(0.0, 0.9)),
    };
});

impl Default for FleetParams {
    fn default() -> Self {
        FleetParams {
            target_rps: None,
            headroom: 0.2,
            repetitions: 3,
            devices: Vec::new(),
            prices: BTreeMap::new(),
            tp: Vec::new(),
            layouts: Vec::new(),
            max_num_seqs: Vec::new(),
            max_num_batched_tokens: Vec::new(),
            batch_formations: Vec::new(),
            schedulers: Vec::new(),
            target: None,
            max_mean_wait_ms: None,
            max_replicas: 64,
            precision: 0.05,
            model_error: None,
        }
    }
}

/// Most candidates one search takes (the product of the option lists).
pub const MOST_CANDIDATES: usize = 1024;
/// Most runs a rate search or a replica search makes on one seed.
const MOST_TRIES: u32 = 24;
/// Validation run k of a candidate runs on seed + this + k: seeds no search saw.
pub const VALIDATION_SEED_OFFSET: u64 = 500_000;

pub struct FleetStudy {
    base: Spec,
    p: FleetParams,
    target_rps: f64,
    criterion: Criterion,
    lanes: Vec<Lane>,
    /// The lane of each job of the last batch.
    handed: Vec<usize>,
}

impl StudyDef for FleetStudy {
    const ABOUT: About = About {
        name: "fleet",
        title: "Fleet planner",
        question: "which devices, TP, layout and replicas carry a target rate at the objectives for the least money?",
        how: "Each candidate's capacity and replica count searched on several seeds, the fleet run whole at the target rate on seeds the search never saw; costs at dated list prices.",
        group: Group::Decide,
        rank: Rank::Least("$/h"),
        repeats_by: Some("repetitions"),
    };
    type Options = FleetParams;

    fn new(spec: &Spec, p: &FleetParams) -> Result<Self, ScenarioError> {
        let sc = scenario::validate(spec)?;
        check_options(spec, &sc, p)?;
        let candidates = space::candidates(spec, p)?;
        // The rates every candidate runs at must make a valid scenario: said at the option that sets them.
        let base_rps = 1e9 / sc.workload.mean_gap_ns();
        let target_rps = p.target_rps.unwrap_or(base_rps);
        let needed_rps = target_rps * (1.0 + p.headroom);
        for (rate, what) in [(target_rps, "target_rps"), (needed_rps, "headroom")] {
            let at_rate = crate::capacity::at_rate(spec, base_rps, rate, spec.seed);
            scenario::validate(&at_rate).map_err(|e| super::at_option(e, &format!("{}.{what}", Self::at())))?;
        }
        let criterion = Criterion {
            target: p.target.unwrap_or(sc.objectives.attainment_target),
            max_mean_wait_ms: p.max_mean_wait_ms,
        };
        let z = Sizing {
            base_rps,
            per_worker_rps: base_rps / sc.pools.last().map_or(1, |p| p.replicas).max(1) as f64,
            min_rps: spec.workload.requests.map_or(0.0, |n| n as f64 / 5e8),
            needed_rps,
            target_rps,
            seeds: p.repetitions,
            max_replicas: p.max_replicas,
            precision: p.precision,
        };
        let lanes = candidates.into_iter().map(|c| Lane::new(c, z)).collect();
        Ok(FleetStudy { base: spec.clone(), p: p.clone(), target_rps, criterion, lanes, handed: Vec::new() })
    }
}

/// The options' own bounds, each at its field.
fn check_options(spec: &Spec, sc: &scenario::Scenario, p: &FleetParams) -> Result<(), ScenarioError> {
    let at = FleetStudy::at();
    let mut e = Errors::default();
    p.check_bounds(&at, &mut e);
    for (name, usd) in &p.prices {
        e.range_open_lo(&format!("{at}.prices.{name}"), *usd, 0.0, 1e4);
    }
    if matches!(spec.workload.arrival, ArrivalSpec::ClosedLoop { .. } | ArrivalSpec::Burst {}) {
        e.push("workload.arrival.kind", "the fleet planner offers a rate, and a closed loop's or a burst's load has none: give the scenario an open-loop arrival kind");
    }
    if sc.workload.sessions.is_some() {
        e.push("workload.sessions", "the fleet planner sizes request traffic; agent sessions are sized by the capacity planner (sessions/s) for now");
    }
    e.finish()
}

impl Study for FleetStudy {
    fn next(&mut self) -> Vec<Job> {
        self.handed.clear();
        let mut jobs = Vec::new();
        for (i, lane) in self.lanes.iter_mut().enumerate() {
            let mine = lane.next();
            self.handed.extend(std::iter::repeat_n(i, mine.len()));
            jobs.extend(mine);
        }
        jobs
    }

    fn feed(&mut self, results: Vec<RunSummary>) {
        let mut by_lane: Vec<Vec<RunSummary>> = vec![Vec::new(); self.lanes.len()];
        for (r, &i) in results.into_iter().zip(&self.handed) {
            by_lane[i].push(r);
        }
        for (lane, rs) in self.lanes.iter_mut().zip(by_lane) {
            if !rs.is_empty() {
                lane.feed(rs, &self.criterion);
            }
        }
    }

    fn progress(&self) -> (usize, usize) {
        self.lanes.iter().map(Lane::progress).fold((0, 0), |(a, b), (x, y)| (a + x, b + y))
    }

    fn report(&self) -> StudyReport {
        report::report(self)
    }

    fn lanes(&self, _jobs: &[Job]) -> Vec<u64> {
        self.handed.iter().map(|&i| i as u64).collect()
    }
}
