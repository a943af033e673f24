//! One candidate's search, on its own seeds: the sustained capacity of one unit (`crate::capacity`'s test: the
//! highest rate it serves stably), then the fewest units that meet the objectives at the rate with its headroom,
//! then the chosen fleet at the target rate on unseen seeds.

use super::space::Candidate;
use super::{MOST_TRIES, VALIDATION_SEED_OFFSET};
use crate::capacity::at_rate;
use crate::capacity::search::Search;
use crate::scenario::MOST_REPLICAS;
use crate::study::capacity::Criterion;
use crate::study::{Job, RunSummary};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Stage {
    Capacity,
    Replicas,
    Validate,
    Done,
}

/// What every lane sizes for.
#[derive(Clone, Copy, Debug)]
pub(super) struct Sizing {
    /// The scenario's mean rate (a unit's arrivals are scaled from it) and its rate per worker (where a rate
    /// search starts).
    pub base_rps: f64,
    pub per_worker_rps: f64,
    /// The lowest rate a search tries: below it the scenario's requests would span more than half the
    /// simulated clock's limit.
    pub min_rps: f64,
    /// The rate to size for (the target with its headroom), and the target.
    pub needed_rps: f64,
    pub target_rps: f64,
    pub seeds: u32,
    pub max_replicas: u32,
    pub precision: f64,
}

/// A candidate and where its search stands.
pub(super) struct Lane {
    pub cand: Candidate,
    stage: Stage,
    /// The sizing, its most units held to this candidate's pools' bound.
    pub z: Sizing,
    pub capacity: Vec<Search>,
    pub replicas: Vec<Search>,
    /// The units the fleet gets: the most any seed needed.
    pub chosen: Option<u32>,
    pub validation: Vec<RunSummary>,
    /// Runs fed so far.
    runs: usize,
    /// Each pending job's seed index.
    pending: Vec<usize>,
    /// Why the candidate was not searched: its scenario is invalid, or its ceiling cannot reach the rate.
    pub skipped: Option<String>,
}

impl Lane {
    pub fn new(cand: Candidate, z: Sizing) -> Lane {
        // The units a search tries stay within a pool's bound: n units of P/D p:d are pools of n·p and n·d workers
        // (the search passed it and stopped the study at a field the user never wrote).
        let per_pool = cand.pd.map_or(1, |(p, d)| p.max(d)).max(1);
        let z = Sizing { max_replicas: z.max_replicas.min(MOST_REPLICAS / per_pool).max(1), ..z };
        let (skipped, start) = match &cand.validated {
            Err(why) => (Some(format!("refused: {why}")), 1.0),
            Ok(u) => ceiling(u.textbook_rps, &z),
        };
        Lane {
            capacity: (0..z.seeds).map(|_| Search::rate(start, z.precision, z.min_rps, MOST_TRIES)).collect(),
            replicas: Vec::new(),
            stage: if skipped.is_some() { Stage::Done } else { Stage::Capacity },
            cand,
            z,
            chosen: None,
            validation: Vec::new(),
            runs: 0,
            pending: Vec::new(),
            skipped,
        }
    }

    /// The lane's next runs (none when it is done), moving to the next stage when this one has none left.
    pub fn next(&mut self) -> Vec<Job> {
        loop {
            let jobs = match self.stage {
                Stage::Capacity => self.search_jobs(false),
                Stage::Replicas => self.search_jobs(true),
                Stage::Validate if self.validation.is_empty() => self.validation_jobs(),
                Stage::Validate | Stage::Done => Vec::new(),
            };
            if !jobs.is_empty() || self.stage == Stage::Done {
                return jobs;
            }
            self.advance();
        }
    }

    /// The results of the lane's last jobs, in their order.
    pub fn feed(&mut self, results: Vec<RunSummary>, c: &Criterion) {
        self.runs += results.len();
        if self.stage == Stage::Validate {
            self.validation = results;
            self.stage = Stage::Done;
            return;
        }
        // One unit's search is for its sustained capacity (a stable run, objectives aside); the replica
        // search holds the fleet to the objectives.
        let capacity = self.stage == Stage::Capacity;
        let searches = if capacity { &mut self.capacity } else { &mut self.replicas };
        for (r, &k) in results.iter().zip(&self.pending) {
            let x = searches[k].next.expect("a pending search has a point");
            searches[k].record(x, if capacity { r.stable } else { c.passes(r) });
        }
    }

    /// Runs done and expected (a search's expected length: about 8 rates and 4 counts per seed).
    pub fn progress(&self) -> (usize, usize) {
        let expected = match self.stage {
            Stage::Done => self.runs,
            _ => self.runs.max(self.z.seeds as usize * 13),
        };
        (self.runs, expected.max(self.runs))
    }

    fn search_jobs(&mut self, replicas: bool) -> Vec<Job> {
        let searches = if replicas { &self.replicas } else { &self.capacity };
        self.pending = (0..searches.len()).filter(|&k| searches[k].next.is_some()).collect();
        (self.pending.iter())
            .map(|&k| {
                let x = searches[k].next.expect("pending");
                let seed = self.cand.unit.seed.wrapping_add(k as u64);
                if replicas {
                    let label =
                        format!("{}: {x} × unit at {:.4} req/s, seed {seed}", self.cand.name, self.z.needed_rps);
                    Job { label, spec: self.units_at(x as u32, self.z.needed_rps, seed) }
                } else {
                    let label = format!("{}: one unit at {x:.4} req/s, seed {seed}", self.cand.name);
                    Job { label, spec: self.units_at(1, x, seed) }
                }
            })
            .collect()
    }

    fn validation_jobs(&mut self) -> Vec<Job> {
        let Some(n) = self.chosen else { return Vec::new() };
        (0..self.z.seeds as u64)
            .map(|k| {
                let seed = self.cand.unit.seed.wrapping_add(VALIDATION_SEED_OFFSET + k);
                let label = format!("{}: fleet of {n} at {:.4} req/s, seed {seed}", self.cand.name, self.z.target_rps);
                Job { label, spec: self.units_at(n, self.z.target_rps, seed) }
            })
            .collect()
    }

    fn units_at(&self, n: u32, rate: f64, seed: u64) -> crate::scenario::Spec {
        at_rate(&self.cand.with_units(n), self.z.base_rps, rate, seed)
    }

    /// The stage after this one: from each seed's capacity, a replica search starting where it suggests;
    /// from the replica searches, the fleet's size.
    fn advance(&mut self) {
        self.stage = match self.stage {
            Stage::Capacity => {
                // A seed with no stable rate (runs too short to judge, or a unit overloaded at every rate
                // tried) starts its replica search at one unit: the objectives still decide the count.
                let caps: Vec<Option<f64>> = self.capacity.iter().map(Search::boundary).collect();
                let start = |c: Option<f64>| c.map_or(1, |c| (self.z.needed_rps / c).ceil().min(1e9) as u32);
                self.replicas =
                    caps.iter().map(|&c| Search::replicas(start(c), self.z.max_replicas, MOST_TRIES)).collect();
                Stage::Replicas
            }
            Stage::Replicas => {
                let mins: Option<Vec<f64>> = self.replicas.iter().map(Search::found).collect();
                self.chosen = mins.map(|m| m.into_iter().fold(0.0, f64::max) as u32);
                if self.chosen.is_some() { Stage::Validate } else { Stage::Done }
            }
            Stage::Validate | Stage::Done => Stage::Done,
        };
    }
}

/// Exact pruning: a unit's textbook ceiling (a full batch of decodes on every decode worker, no prefill, no
/// queueing) × the most units is an upper bound on what the candidate can carry; below the rate, it is skipped
/// with the figures. Otherwise the rate search starts at the scenario's own rate per replica, or half the
/// ceiling when that is lower.
fn ceiling(textbook_rps: Option<f64>, z: &Sizing) -> (Option<String>, f64) {
    let (needed, most) = (z.needed_rps, z.max_replicas);
    match textbook_rps.filter(|t| t.is_finite() && *t > 0.0) {
        Some(t) if t * (most as f64) < needed => (
            Some(format!(
                "pruned: its ceiling, {t:.3} req/s per unit (a full batch of decodes, nothing else) × {most} units, is under the {needed:.3} req/s it must carry"
            )),
            t,
        ),
        Some(t) => (None, z.per_worker_rps.min(t / 2.0)),
        None => (None, z.per_worker_rps),
    }
}
