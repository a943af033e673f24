//! Capacity as users meet it. **Sustained capacity** is the highest offered rate of the scenario's own arrival
//! process — Poisson, constant, gamma, on/off (both rates scaled), a trace (its timing scaled) — at which a run
//! is stable: over its steady window (with sessions, up to the last session's start) it sheds at most 0.5 % of
//! what arrived, its waiting queue has no upward trend, and at least 500 requests completed
//! (`metrics::steady`, `SteadySummary::stable`). Each seed's rate is found by bracketing and
//! bisection (`search::Search`), and the seeds give a mean with its 95 % interval.
//!
//! The figure it replaces is kept under its own name, the **drain rate**: every request at t = 0, completions
//! over the time the last one took. A queue drained from full forms batches unlike a server fed by its arrivals
//! (its prefills arrive together, its batch drains to nothing at the end), and on the benchmark scenario it reads
//! 8–11 % under what Poisson arrivals are served at; it is only the search's first guess here.

pub mod length;
pub mod search;

pub use crate::metrics::Capacity;
use crate::metrics::mean_ci_nonnegative;
use crate::scenario::{self, ArrivalSpec, ScenarioError, Spec};
use search::Search;

/// How a sustained-capacity search runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    /// Seeds (the scenario's seed + k), each searched on its own: the interval is over them.
    pub seeds: u32,
    /// A seed's search stops when its bracket [stable, unstable] is narrower than this share of its stable end.
    pub precision: f64,
    /// Most rates a seed's search runs.
    pub max_tries: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options { seeds: 5, precision: 0.01, max_tries: 24 }
    }
}

/// A first guess this close brackets by 1.25 rather than doubling.
const CLOSE_GUESS_FACTOR: f64 = 1.25;

/// `base` (whose mean arrival rate is `base_rps`) offered `rate` instead, on `seed`: the arrival kind keeps its
/// shape (an on/off process both its rates, a trace its timing scaled). A closed loop and a burst have no rate
/// and are returned as they are (the searches refuse them).
pub fn at_rate(base: &Spec, base_rps: f64, rate: f64, seed: u64) -> Spec {
    let f = rate / base_rps;
    let mut s = Spec { seed, ..base.clone() };
    s.workload.arrival = match s.workload.arrival.clone() {
        ArrivalSpec::Poisson { .. } => ArrivalSpec::Poisson { rate_rps: rate },
        ArrivalSpec::Constant { .. } => ArrivalSpec::Constant { rate_rps: rate },
        ArrivalSpec::Gamma { cv, .. } => ArrivalSpec::Gamma { rate_rps: rate, cv },
        ArrivalSpec::OnOff { rate_on_rps, rate_off_rps, mean_on_s, mean_off_s } => {
            ArrivalSpec::OnOff { rate_on_rps: rate_on_rps * f, rate_off_rps: rate_off_rps * f, mean_on_s, mean_off_s }
        }
        ArrivalSpec::Trace { path, data, format, time_scale, reuse_hash_ids, hash_block_tokens } => {
            ArrivalSpec::Trace { path, data, format, time_scale: time_scale / f, reuse_hash_ids, hash_block_tokens }
        }
        closed @ (ArrivalSpec::ClosedLoop { .. } | ArrivalSpec::Burst {}) => closed,
    };
    s
}

/// The drain rate of a spec (requests/s): `requests` of its requests all at t = 0, completions over the time
/// the last one took. Not its capacity (see the module's note); the sustained search's first guess.
pub fn drain_rps(spec: &Spec, requests: u64) -> f64 {
    let mut s = spec.clone();
    s.workload.arrival = ArrivalSpec::Poisson { rate_rps: 1e7 };
    s.workload.requests = Some(requests);
    s.workload.duration_s = None;
    s.engine.horizon_s = None;
    match scenario::validate(&s) {
        Ok(sc) => crate::simulate(&sc).summary.throughput_rps,
        Err(_) => f64::NAN,
    }
}

/// The search for sustained capacity, one `Search` per seed, as a state machine: `jobs` hands out each
/// unfinished seed's next rate, `feed` takes whether each run was stable, in the same order. The studies run
/// it through their jobs; `sustained` runs it here.
#[derive(Clone, Debug)]
pub struct Sustained {
    base: Spec,
    base_rps: f64,
    searches: Vec<Search>,
    /// The seeds of the jobs handed out last, by index.
    pending: Vec<usize>,
    runs: u32,
    precision: f64,
}

impl Sustained {
    /// A search of `base`'s sustained capacity from `start_rps` (a close guess: the drain rate, or a rate found
    /// by another search), in the arrival process's unit. Refused for a closed loop or a burst (no rate to
    /// scale). A scenario sized by duration runs the requests its duration holds at its own rate, at every
    /// rate, so that every run of the search is the same size.
    pub fn new(base: &Spec, start_rps: f64, o: &Options) -> Result<Sustained, ScenarioError> {
        let sc = scenario::validate(base)?;
        if matches!(base.workload.arrival, ArrivalSpec::ClosedLoop { .. } | ArrivalSpec::Burst {}) {
            return Err(ScenarioError::one(
                "workload.arrival.kind",
                "sustained capacity scales an arrival rate, and a closed loop's or a burst's load has none: give the scenario an open-loop arrival kind",
            ));
        }
        let base_rps = 1e9 / sc.workload.mean_gap_ns();
        let mut base = base.clone();
        if let (None, Some(d)) = (base.workload.requests, base.workload.duration_s) {
            base.workload.requests = Some((base_rps * d).ceil().max(1.0) as u64);
            base.workload.duration_s = None;
        }
        // Below this rate the run's requests would span more than half the simulated clock.
        let min_rps = base.workload.requests.map_or(0.0, |n| n as f64 / 5e8);
        let start = if start_rps.is_finite() && start_rps > 0.0 { start_rps } else { base_rps };
        let search = Search::rate(start, o.precision, min_rps, o.max_tries).bracketing_by(CLOSE_GUESS_FACTOR);
        let searches = vec![search; o.seeds.max(1) as usize];
        Ok(Sustained { base, base_rps, searches, pending: Vec::new(), runs: 0, precision: o.precision })
    }

    /// Seed k's seed.
    fn seed(&self, k: usize) -> u64 {
        self.base.seed.wrapping_add(k as u64)
    }

    /// The next runs, one per unfinished seed: (label, scenario). Empty when every seed's search is done.
    pub fn jobs(&mut self) -> Vec<(String, Spec)> {
        self.pending = (0..self.searches.len()).filter(|&k| self.searches[k].next.is_some()).collect();
        (self.pending.iter())
            .map(|&k| {
                let x = self.searches[k].next.expect("a pending search has a point");
                let label = format!("sustained capacity: {x:.4} offered, seed {}", self.seed(k));
                (label, at_rate(&self.base, self.base_rps, x, self.seed(k)))
            })
            .collect()
    }

    /// Whether each of the last jobs' runs was stable, in their order.
    pub fn feed(&mut self, stable: &[bool]) {
        for (&k, &ok) in self.pending.iter().zip(stable) {
            let x = self.searches[k].next.expect("a pending search has a point");
            self.searches[k].record(x, ok);
            self.runs += 1;
        }
        self.pending.clear();
    }

    pub fn done(&self) -> bool {
        self.searches.iter().all(|s| s.next.is_none())
    }

    /// Runs done and an estimate of all (about 8 rates a seed from a close guess).
    pub fn progress(&self) -> (usize, usize) {
        let done = self.runs as usize;
        (done, (self.searches.len() * 8).max(done + usize::from(!self.done())))
    }

    /// The estimate so far (final once `done`).
    pub fn result(&self) -> Capacity {
        let per_seed: Vec<f64> = self.searches.iter().map(|s| s.boundary().unwrap_or(0.0)).collect();
        let (mean, lo, hi) = mean_ci_nonnegative(&per_seed);
        let converged =
            |s: &Search| matches!((s.found(), s.failed()), (Some(p), Some(f)) if (f - p) / p <= self.precision);
        Capacity {
            mean_rps: mean,
            lo_rps: lo,
            hi_rps: hi,
            per_seed_rps: per_seed,
            runs: self.runs,
            unconverged: self.searches.iter().filter(|s| !converged(s)).count() as u32,
        }
    }
}

/// How `of_run` names its runs to the progress it reports ("sustained capacity, run k of about n"): a front end
/// tells them from the advice's tested changes by it.
pub const PROGRESS_WORDS: &str = "sustained capacity";

/// A run's sustained capacity: this many requests a run (sessions: a tenth as many; a trace: at most its rows),
/// whatever the run's own size — capacity is the configuration's, and a run of a few hundred requests could not
/// resolve it — so that measuring it costs a bounded multiple of one such run.
pub const RUN_REQUESTS: u64 = 20_000;
/// ... and at least this many (turns, with sessions): fewer cannot keep 500 completions in a window at every
/// rate, and a trace shorter than that has no capacity measured.
pub const MIN_RUN_REQUESTS: f64 = 5_000.0;
/// ... on this many seeds (the run's and the next), each bracketed to this precision.
pub const RUN_SEEDS: u32 = 3;
pub const RUN_PRECISION: f64 = 0.02;

/// The sustained capacity the diagnosis of the run `report` (of `spec`, validated as `sc`) sets its ρ against:
/// `RUN_SEEDS` seeds of `RUN_REQUESTS` requests, from the drain rate, each run held to
/// `budget`. None for a closed loop or a burst (no rate), or when a run of the search is refused by the budget.
/// `progress` hears each run (its words and progress) and may cancel.
pub fn of_run(
    spec: &Spec,
    sc: &crate::Scenario,
    report: &crate::Report,
    budget: &scenario::Budget,
    progress: &mut dyn FnMut(&str, crate::Progress) -> bool,
) -> Result<Option<Capacity>, crate::RunError> {
    let mut s = spec.clone();
    let most = if sc.workload.sessions.is_some() { RUN_REQUESTS / 10 } else { RUN_REQUESTS };
    let trace = matches!(spec.workload.arrival, ArrivalSpec::Trace { .. });
    s.workload.requests = Some(if trace { sc.workload.max_requests.min(most) } else { most });
    s.workload.duration_s = None;
    // A trace too short to hold a judged window at every rate: its "capacity" would be where the warm-up
    // leaves fewer than 500 completions, not where the queue grows (a 1,000-row trace read ρ = 2.07 on a
    // healthy run).
    let Ok(sized) = scenario::validate(&s) else { return Ok(None) };
    if sized.estimate().requests < MIN_RUN_REQUESTS {
        return Ok(None);
    }
    // The first guess: the drain rate (one burst), close to capacity whatever the rate the run was offered —
    // from an offered rate far below capacity, bracketing by 1.25 would spend every try climbing. If the
    // burst is refused (the budget), the rate the run served.
    let served = 1e9 / sc.workload.mean_gap_ns() / report.diagnosis.load_factor.max(1.0);
    let drain = match sized.check_budget(budget, 1) {
        Ok(()) => drain_rps(&s, s.workload.requests.unwrap_or(RUN_REQUESTS)),
        Err(_) => f64::NAN,
    };
    let start = if drain.is_finite() && drain > 0.0 { drain } else { served };
    let o = Options { seeds: RUN_SEEDS, precision: RUN_PRECISION, ..Options::default() };
    let Ok(mut search) = Sustained::new(&s, start, &o) else { return Ok(None) };
    loop {
        let jobs = search.jobs();
        if jobs.is_empty() {
            return Ok(Some(search.result()));
        }
        let mut stable = Vec::with_capacity(jobs.len());
        for (_, job) in &jobs {
            let Ok(v) = scenario::validate_within(job, budget) else {
                return Ok(None);
            };
            let (done, all) = search.progress();
            let words = format!("{PROGRESS_WORDS}, run {} of about {all}", done + stable.len() + 1);
            stable.push(crate::simulate_with_progress(&v, &mut |p| progress(&words, p))?.steady.stable);
        }
        search.feed(&stable);
    }
}

/// Sustained capacity of `spec`, every run here, one after another: the drain rate of its first seed is the
/// first guess. A rate whose scenario does not validate counts as unstable.
pub fn sustained(spec: &Spec, o: &Options) -> Result<Capacity, ScenarioError> {
    let requests = scenario::validate(spec)?.workload.max_requests.min(100_000);
    let mut search = Sustained::new(spec, drain_rps(spec, requests), o)?;
    loop {
        let jobs = search.jobs();
        if jobs.is_empty() {
            return Ok(search.result());
        }
        let stable: Vec<bool> = (jobs.iter())
            .map(|(_, s)| scenario::validate(s).is_ok_and(|sc| crate::simulate(&sc).steady.stable))
            .collect();
        search.feed(&stable);
    }
}
