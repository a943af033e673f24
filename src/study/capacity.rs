//! Capacity planner. Two questions, each answered by simulation, never derived:
//! - **rate**: the highest offered rate at which this cluster meets the objectives in every one of R
//!   repetitions (seeds). Bracket by doubling or halving, then bisect to the stated precision. Then each
//!   repetition's seed searches its sustained capacity (`crate::capacity`: the highest rate served stably,
//!   objectives aside), set beside the textbook estimate (peak decode throughput ÷ mean output).
//! - **replicas** (`target_rps` set): the fewest replicas that meet the objectives at that rate, each count
//!   simulated with the scenario's router (not the per-replica figure multiplied). Bracket by doubling or
//!   halving the replica count, then bisect the integers.
//!
//! "Meets the objectives" (per run): SLO attainment ≥ the target (default: the scenario's
//! `objectives.attainment_target`) and every percentile objective met — or, with `max_mean_wait_ms`, the mean
//! queueing delay at most that — and in both cases the run is not `steady.overloaded` (a waiting queue that grows
//! is not sustained, however well a short run's requests did).

use crate::scenario::at;
use serde::{Deserialize, Serialize};

use super::{
    About, Chart, ChartSeries, ColumnDef, DynColumn, Format, Group, Job, Rank, RunSummary, Study, StudyDef,
    StudyReport, column, mean_of, objective_words, report_head, table_with,
};
use crate::capacity::search::Search;
use crate::capacity::{self, Sustained, at_rate};
use crate::scenario::{self, ArrivalSpec, Errors, ScenarioError, Spec};
use crate::spec::Bound;
use crate::study::option::{Bounded, Text, described};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CapacityParams {
    /// SLO attainment every repetition must reach, (0, 1]; absent: the scenario's attainment target.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<f64>,
    /// Repetitions (seeds) per rate, ≥ 1.
    pub repetitions: u32,
    /// Stop when the bracket [pass, fail] is narrower than this fraction of the passing rate.
    pub precision: f64,
    /// Instead of SLO attainment: pass when the mean queueing delay (arrival → first scheduled) is at most
    /// this many ms in every repetition.
    pub max_mean_wait_ms: Option<f64>,
    /// First rate tried, req/s (sessions/s on a session scenario; default: the scenario's).
    pub start_rps: Option<f64>,
    /// Most rates (or replica counts) evaluated.
    pub max_rates: u32,
    /// Search the fewest replicas that meet the objectives at this offered rate, req/s (sessions/s on a session
    /// scenario; colocated scenarios).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_rps: Option<f64>,
    /// Most replicas the replica search tries.
    pub max_replicas: u32,
}

described!(CapacityParams {
    target: Text {
        label: "SLO attainment target",
        unit: "fraction (empty: the scenario's objectives)",
        help: "Every repetition must reach this attainment (and every percentile objective of the scenario)",
        bound: Some(Bound::OpenLo(0.0, 1.0)),
    };
    target_rps: Text {
        label: "Or: fewest replicas for",
        unit: "req/s; sessions/s with sessions (empty: find the highest rate)",
        help: "Search the fewest replicas that meet the objectives at this offered rate, each simulated with the router",
        bound: Some(Bound::OpenLo(0.0, 1e6)),
    };
    max_replicas: Text {
        label: "Most replicas",
        unit: "",
        help: "The replica search stops here",
        bound: Some(Bound::Int(1, 4096)),
    };
    repetitions: Text {
        label: "Repetitions",
        unit: "seeds per rate",
        help: "Repetitions (seeds) per rate; all must pass",
        bound: Some(Bound::Int(1, 1000)),
    };
    precision: Text {
        label: "Precision",
        unit: "fraction of the rate",
        help: "Stop when the pass/fail bracket is this narrow",
        bound: Some(Bound::OpenLo(0.0, 1.0)),
    };
    max_mean_wait_ms: Text {
        label: "Or: mean wait at most",
        unit: "ms (empty: use the SLOs)",
        help: "Pass on mean queueing delay instead of SLO attainment",
        bound: None,
    };
    start_rps: Text {
        label: "First rate",
        unit: "req/s; sessions/s with sessions (empty: the scenario's)",
        help: "Where the search starts",
        bound: Some(Bound::OpenLo(0.0, 1e6)),
    };
    max_rates: Text {
        label: "Most rates",
        unit: "",
        help: "Most rates evaluated before the search stops",
        bound: Some(Bound::Int(3, 200)),
    };
});

impl Default for CapacityParams {
    fn default() -> Self {
        CapacityParams {
            target: None,
            repetitions: 5,
            precision: 0.02,
            max_mean_wait_ms: None,
            start_rps: None,
            max_rates: 30,
            target_rps: None,
            max_replicas: 256,
        }
    }
}

/// A table row: an evaluation (a rate, or a replica count) with its criterion's mean, worst repetition and
/// target.
struct Row<'a> {
    e: &'a Eval,
    mean: f64,
    worst: f64,
    target: f64,
}

/// A criterion's columns: (its mean's label, unit, format).
type CriterionColumns = (&'static str, &'static str, Format);

/// The rate search's table; `rate` and `served` are the units of offered and served load. Throughput and
/// goodput are both the steady window's (like with like).
fn rate_columns<'a>(rate: &'static str, served: &'static str, c: CriterionColumns) -> [ColumnDef<Row<'a>>; 11] {
    [
        column("Rate", rate, Format::Num, |r| r.e.rate.into()),
        column("Pass", "", Format::Bool, |r| r.e.pass.into()),
        column(c.0, c.1, c.2, |r| r.mean.into()),
        column("Worst repetition", c.1, c.2, |r| r.worst.into()),
        column("Target", c.1, c.2, |r| r.target.into()),
        column("SLO range", "min – max", Format::Text, |r| slo_range(&r.e.runs).into()),
        column("Steady throughput", served, Format::Num, |r| mean_of(&r.e.runs, |x| x.steady_throughput_rps).into()),
        column("Steady goodput", served, Format::Num, |r| mean_of(&r.e.runs, |x| x.steady_goodput_rps).into()),
        column("p95 TTFT", "s", Format::Seconds, |r| mean_of(&r.e.runs, |x| x.ttft_p95_s).into()),
        column("p95 TPOT", "s", Format::Seconds, |r| mean_of(&r.e.runs, |x| x.tpot_p95_s).into()),
        column("p95 E2E", "s", Format::Seconds, |r| mean_of(&r.e.runs, |x| x.e2e_p95_s).into()),
    ]
}

/// The replica search's table.
fn replica_columns<'a>(served: &'static str, c: CriterionColumns) -> [ColumnDef<Row<'a>>; 11] {
    [
        column("Replicas", "", Format::Int, |r| (r.e.rate as u64).into()),
        column("GPUs", "", Format::Int, |r| (r.e.runs.first().map_or(0, |x| x.gpus) as u64).into()),
        column("Pass", "", Format::Bool, |r| r.e.pass.into()),
        column(c.0, c.1, c.2, |r| r.mean.into()),
        column("Worst repetition", c.1, c.2, |r| r.worst.into()),
        column("Steady throughput", served, Format::Num, |r| mean_of(&r.e.runs, |x| x.steady_throughput_rps).into()),
        column("Steady goodput", served, Format::Num, |r| mean_of(&r.e.runs, |x| x.steady_goodput_rps).into()),
        column("p95 TTFT", "s", Format::Seconds, |r| mean_of(&r.e.runs, |x| x.ttft_p95_s).into()),
        column("p95 TPOT", "s", Format::Seconds, |r| mean_of(&r.e.runs, |x| x.tpot_p95_s).into()),
        column("p95 E2E", "s", Format::Seconds, |r| mean_of(&r.e.runs, |x| x.e2e_p95_s).into()),
        column("Overloaded", "repetitions", Format::Int, |r| {
            (r.e.runs.iter().filter(|x| x.overloaded).count() as u64).into()
        }),
    ]
}

/// One column per percentile objective: its value in the worst repetition (the criterion holds in every one).
fn objective_columns<'a>(spec: &Spec) -> Vec<DynColumn<'a, Row<'a>>> {
    (spec.objectives.percentiles.iter().enumerate())
        .map(|(i, o)| DynColumn {
            label: format!("{}, worst repetition", objective_words(o)),
            unit: "s",
            format: Format::Seconds,
            cell: Box::new(move |r: &Row| {
                r.e.runs.iter().filter_map(|x| x.objective_values_s.get(i).copied()).fold(0.0, f64::max).into()
            }),
        })
        .collect()
}

/// "chat: TTFT ≤ 1000 ms, TPOT ≤ 50 ms; batch: E2E ≤ 120000 ms" — every class's SLO ("no class SLO": every
/// completed request meets it).
fn class_slos(spec: &Spec) -> String {
    let classes: Vec<String> = (spec.workload.classes.iter())
        .filter_map(|c| {
            let parts: Vec<String> = [("TTFT", c.slo.ttft_ms), ("TPOT", c.slo.tpot_ms), ("E2E", c.slo.e2e_ms)]
                .iter()
                .filter_map(|(m, v)| v.map(|v| format!("{m} ≤ {}", crate::metrics::secs(v / 1e3))))
                .collect();
            (!parts.is_empty()).then(|| format!("{}: {}", c.name, parts.join(", ")))
        })
        .collect();
    if classes.is_empty() { "no class SLO: every completed request meets it".into() } else { classes.join("; ") }
}

/// The lowest and highest SLO attainment over the repetitions.
fn slo_range(runs: &[RunSummary]) -> String {
    let slos = runs.iter().map(|r| r.slo_attainment);
    let (lo, hi) = slos.fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(x), hi.max(x)));
    format!("{:.1} – {:.1} %", lo * 100.0, hi * 100.0)
}

/// One point of the search: a rate (req/s) or a replica count, with its repetitions.
struct Eval {
    rate: f64,
    runs: Vec<RunSummary>,
    pass: bool,
}

/// What a run must do to pass (the capacity planner's and the fleet planner's rule, written once): not
/// `steady.overloaded`, and either a mean queueing delay within `max_mean_wait_ms` or SLO attainment ≥ `target`
/// with every percentile objective met.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Criterion {
    pub target: f64,
    pub max_mean_wait_ms: Option<f64>,
}

impl Criterion {
    pub(crate) fn passes(&self, r: &RunSummary) -> bool {
        !r.overloaded
            && match self.max_mean_wait_ms {
                Some(w) => r.queue_delay_mean_s * 1e3 <= w,
                None => r.slo_attainment >= self.target && r.percentiles_met,
            }
    }
}

pub struct CapacityStudy {
    base: Spec,
    p: CapacityParams,
    /// The scenario's mean arrival rate, req/s.
    base_rps: f64,
    /// The attainment target in force (the option, or the scenario's).
    target: f64,
    evals: Vec<Eval>,
    /// The search over rates, or over replica counts (its `next`: the point being evaluated; None: the
    /// sustained-capacity search or nothing).
    search: Search,
    /// After the rate search: sustained capacity on the repetitions' seeds, and its runs.
    sustained: Option<Sustained>,
    sustained_runs: Vec<RunSummary>,
    textbook_rps: Option<f64>,
    /// A session scenario: its arrivals start sessions, so the rate is sessions/s; the mean turns per session
    /// converts a run's turns/s.
    turns_per_session: Option<f64>,
    done: bool,
}

impl StudyDef for CapacityStudy {
    const ABOUT: About = About {
        name: "capacity",
        title: "Capacity planner",
        question: "what load does the cluster sustain at its objectives, or how many replicas does a load need?",
        how: "Measured by bracketing and bisection in every repetition, never derived.",
        group: Group::Decide,
        rank: Rank::Unranked,
        repeats_by: Some("repetitions"),
    };
    type Options = CapacityParams;

    fn new(spec: &Spec, p: &CapacityParams) -> Result<Self, ScenarioError> {
        let sc = scenario::validate(spec)?;
        let mut e = Errors::default();
        p.check_bounds(&Self::at(), &mut e);
        if p.target_rps.is_some() && sc.is_disaggregated() {
            e.push(at!(Self::at(), p.target_rps), "the replica search sizes a colocated cluster; this scenario is disaggregated (size its pools in the P/D panel)");
        }
        if let Some(w) = p.max_mean_wait_ms
            && !(w.is_finite() && w > 0.0)
        {
            e.push(at!(Self::at(), p.max_mean_wait_ms), format!("must be > 0 (got {w})"));
        }
        if matches!(spec.workload.arrival, ArrivalSpec::ClosedLoop { .. } | ArrivalSpec::Burst {}) {
            e.push("workload.arrival.kind", "the capacity planner searches an arrival rate, and a closed loop's or a burst's load has none (it is its clients, or its size): give the scenario an open-loop arrival kind");
        }
        e.finish()?;
        let base_rps = 1e9 / sc.workload.mean_gap_ns();
        let textbook_rps = crate::bench::textbook_rps_of(&sc);
        let mut st = CapacityStudy {
            base: spec.clone(),
            p: p.clone(),
            base_rps,
            target: p.target.unwrap_or(sc.objectives.attainment_target),
            evals: Vec::new(),
            search: Search::rate(1.0, p.precision, 0.0, p.max_rates),
            sustained: None,
            sustained_runs: Vec::new(),
            textbook_rps,
            turns_per_session: sc.workload.sessions.as_ref().map(|x| x.mean_of(|c| c.turns.mean())),
            done: false,
        };
        // The first point must make a valid scenario; a start rate the user gave is refused at its own name.
        let first = if p.target_rps.is_some() {
            spec.cluster.replicas.min(p.max_replicas) as f64
        } else {
            p.start_rps.unwrap_or(base_rps)
        };
        scenario::validate(&st.job_spec(first, 0)).map_err(|e| match p.start_rps {
            Some(_) if p.target_rps.is_none() => super::at_option(e, &at!(Self::at(), p.start_rps)),
            _ => super::prefixed(e, "first rate"),
        })?;
        st.search = match p.target_rps {
            Some(_) => Search::replicas(first as u32, p.max_replicas, p.max_rates),
            None => Search::rate(first, p.precision, 0.0, p.max_rates),
        };
        Ok(st)
    }
}

impl CapacityStudy {
    fn replica_search(&self) -> bool {
        self.p.target_rps.is_some()
    }

    /// What the searched rate counts: requests, or the sessions a session scenario's arrivals start.
    /// How the criterion's columns read: (its mean's label, unit, format).
    fn criterion_column(&self) -> CriterionColumns {
        if self.p.max_mean_wait_ms.is_some() {
            ("Mean wait", "s", Format::Seconds)
        } else {
            ("Mean SLO", "", Format::Percent)
        }
    }

    fn rate_unit(&self) -> &'static str {
        if self.turns_per_session.is_some() { "sessions/s" } else { "req/s" }
    }

    /// What a run's throughput and goodput count: requests, or a session's turns.
    fn served_unit(&self) -> &'static str {
        if self.turns_per_session.is_some() { "turns/s" } else { "req/s" }
    }

    /// The scenario of search point `x` (a rate, or a replica count at the target rate) on repetition `k`.
    fn job_spec(&self, x: f64, k: u32) -> Spec {
        match self.p.target_rps {
            Some(rate) => {
                let mut s = self.at_rate(rate, k);
                s.cluster.replicas = x as u32;
                s
            }
            None => self.at_rate(x, k),
        }
    }

    /// The scenario at `rate` req/s on repetition `k`'s seed.
    fn at_rate(&self, rate: f64, k: u32) -> Spec {
        at_rate(&self.base, self.base_rps, rate, self.base.seed.wrapping_add(k as u64))
    }

    fn passes(&self, r: &RunSummary) -> bool {
        Criterion { target: self.target, max_mean_wait_ms: self.p.max_mean_wait_ms }.passes(r)
    }

    /// The criterion's value for a run (SLO attainment, or mean wait in s).
    fn value(&self, r: &RunSummary) -> f64 {
        if self.p.max_mean_wait_ms.is_some() { r.queue_delay_mean_s } else { r.slo_attainment }
    }

    /// Rate search: the highest passing rate so far. Replica search: the most replicas that failed.
    fn lo(&self) -> Option<f64> {
        if self.replica_search() { self.search.failed() } else { self.search.found() }
    }

    /// Rate search: the lowest failing rate so far. Replica search: the fewest replicas that passed.
    fn hi(&self) -> Option<f64> {
        if self.replica_search() { self.search.found() } else { self.search.failed() }
    }

    /// The search ran out of points (`max_rates`) before its bracket closed.
    fn stopped_early(&self) -> bool {
        self.search.exhausted()
    }
}

impl Study for CapacityStudy {
    fn next(&mut self) -> Vec<Job> {
        if self.done {
            return Vec::new();
        }
        if let Some(x) = self.search.next {
            let what =
                if self.replica_search() { format!("{x} replicas") } else { format!("{x:.4} {}", self.rate_unit()) };
            return (0..self.p.repetitions)
                .map(|k| Job { label: format!("{what}, repetition {}", k + 1), spec: self.job_spec(x, k) })
                .collect();
        }
        if !self.replica_search() {
            if self.sustained.is_none() {
                // From the rate the objectives allow: sustained capacity is at or above it.
                let start = self.lo().or(self.hi()).unwrap_or(self.base_rps);
                let o = capacity::Options { seeds: self.p.repetitions, ..Default::default() };
                self.sustained = Sustained::new(&self.base, start, &o).ok();
            }
            let jobs = self.sustained.as_mut().map(Sustained::jobs).unwrap_or_default();
            if !jobs.is_empty() {
                return jobs.into_iter().map(|(label, spec)| Job { label, spec }).collect();
            }
        }
        self.done = true;
        Vec::new()
    }

    fn feed(&mut self, results: Vec<RunSummary>) {
        match self.search.next {
            Some(rate) => {
                let pass = results.iter().all(|r| self.passes(r));
                self.evals.push(Eval { rate, runs: results, pass });
                self.search.record(rate, pass);
            }
            None => {
                if let Some(c) = self.sustained.as_mut() {
                    c.feed(&results.iter().map(|r| r.stable).collect::<Vec<_>>());
                }
                self.sustained_runs.extend(results);
            }
        }
    }

    /// One lane: every rate's repetitions must all pass before the search moves on.
    fn lanes(&self, jobs: &[Job]) -> Vec<u64> {
        vec![0; jobs.len()]
    }

    fn progress(&self) -> (usize, usize) {
        let r = self.p.repetitions as usize;
        // Doubling to a bracket then bisecting from a factor 2 to the precision; then sustained capacity.
        let (c_done, c_all) = match &self.sustained {
            Some(c) => c.progress(),
            None if self.replica_search() => (0, 0),
            None => (0, r * 8),
        };
        let done = self.evals.len() * r + c_done;
        let bisect = (1.0 / self.p.precision).log2().ceil().max(1.0) as usize;
        let expected = (self.evals.len().max(2) + bisect) * r + c_all;
        (done, expected.max(done + usize::from(!self.done)))
    }

    fn report(&self) -> StudyReport {
        if self.replica_search() {
            return self.report_replicas();
        }
        let mut rep = report_head(
            CapacityStudy::ABOUT,
            &self.base,
            format!(
                "what is the highest rate that meets {} in all {} repetitions?",
                self.criterion_short(),
                self.p.repetitions
            ),
        );
        let evals = self.sorted_evals();
        let target = self.p.max_mean_wait_ms.map_or(self.target, |w| w / 1e3);
        let (mut pts, mut band, mut rows) = (Vec::new(), Vec::new(), Vec::new());
        for &e in &evals {
            let (mean, worst, range) = self.criterion_stats(e);
            rows.push(Row { e, mean, worst, target });
            pts.push((e.rate, mean));
            band.push(range);
        }
        let defs = rate_columns(self.rate_unit(), self.served_unit(), self.criterion_column());
        (rep.columns, rep.rows) = table_with(&defs, &objective_columns(&self.base), &rows);
        rep.best_row = self.lo().and_then(|l| evals.iter().position(|e| e.rate == l));
        let found = self.lo().unwrap_or(0.0);
        let u = self.rate_unit();
        let failed = |h: f64| evals.iter().find(|e| e.rate == h).map_or(String::new(), |e| self.why_failed(e));
        rep.answer = match (self.lo(), self.hi()) {
            (Some(l), Some(h)) => format!(
                "{l:.3} {u} is the highest rate at which {} in every one of {} repetitions; {h:.3} {u} failed ({}; bracket ±{:.1} %).",
                self.criterion_text(),
                self.p.repetitions,
                failed(h),
                (h - l) / l * 100.0 / 2.0
            ),
            (Some(l), None) => format!("every rate tried passed, up to {l:.3} {u} (the search stopped there)."),
            (None, _) => "no rate tried passed: even the lowest misses the target (a capacity or configuration problem, not load).".into(),
        };
        self.capacity_notes(&mut rep, found);
        if self.stopped_early() {
            rep.notes.push(format!(
                "The search stopped at {} rates (study option max_rates) before reaching the precision.",
                self.p.max_rates
            ));
        }
        rep.notes.push(format!(
            "Repetition k runs on seed {} + k; every rate sees the same seeds (common random numbers).",
            self.base.seed
        ));
        rep.notes.push(self.criterion_note());
        let x_label = format!("offered rate ({})", self.rate_unit());
        rep.charts = vec![self.criterion_chart("offered rate", &x_label, pts, band)];
        rep.runs =
            evals.iter().flat_map(|e| e.runs.iter().cloned()).chain(self.sustained_runs.iter().cloned()).collect();
        rep
    }
}

impl CapacityStudy {
    /// Sustained capacity beside the textbook estimate, in the rate's unit, and the warning when the found
    /// capacity exceeds it.
    fn capacity_notes(&self, rep: &mut StudyReport, found: f64) {
        let (u, Some(c)) = (self.rate_unit(), self.sustained.as_ref().map(Sustained::result)) else { return };
        if c.mean_rps <= 0.0 {
            rep.notes.push(format!(
                "Sustained capacity: no rate tried was stable on any of {} seeds — the runs are too short to judge (fewer than 500 completions in their steady window: docs/metrics.md, \"Stability\"); raise workload.requests.",
                c.per_seed_rps.len()
            ));
            return;
        }
        let gap = self.textbook_rps.map(|t| (t / c.mean_rps - 1.0) * 100.0);
        rep.notes.push(format!(
            "Sustained capacity (the highest rate of this scenario's arrivals served stably, objectives aside: docs/metrics.md, \"Stability\"): {}. Textbook estimate (peak decode throughput ÷ {}): {}{}.",
            c.words(u),
            if self.turns_per_session.is_some() { "a session's mean output tokens" } else { "mean output length" },
            self.textbook_rps.map_or("n/a".into(), |t| format!("{t:.3} {u}")),
            gap.map_or(String::new(), |g| format!(", {g:+.0} % from sustained: prefill, queueing and memory are not free"))
        ));
        rep.answer.push_str(&format!(
            " Sustained capacity: {:.3} {u}; the found capacity is {:.0} % of it.",
            c.mean_rps,
            found / c.mean_rps.max(1e-12) * 100.0
        ));
        if found > c.hi_rps * 1.02 {
            rep.notes.insert(0, format!(
                "Warning: the found capacity ({found:.3} {u}) exceeds the sustained capacity ({:.3} {u}, the top of its interval): the runs are too short for the load to show; raise workload.requests.",
                c.hi_rps
            ));
        }
    }

    /// The rate found (highest passing), for tests.
    pub fn found_rps(&self) -> Option<f64> {
        if self.replica_search() { None } else { self.lo() }
    }

    /// The fewest replicas found to pass at `target_rps`, for tests.
    pub fn found_replicas(&self) -> Option<u32> {
        if self.replica_search() { self.hi().map(|h| h as u32) } else { None }
    }

    /// The criterion over one evaluation's repetitions: its mean, its worst (the highest wait, or the lowest
    /// attainment), and its (min, max) band.
    fn criterion_stats(&self, e: &Eval) -> (f64, f64, (f64, f64)) {
        let vals: Vec<f64> = e.runs.iter().map(|r| self.value(r)).collect();
        let (lo, hi) = (vals.iter().copied().fold(f64::MAX, f64::min), vals.iter().copied().fold(f64::MIN, f64::max));
        let worst = if self.p.max_mean_wait_ms.is_some() { hi } else { lo };
        (mean_of(&e.runs, |r| self.value(r)), worst, (lo, hi))
    }

    /// The evaluations in the order of their point (rate or replica count).
    fn sorted_evals(&self) -> Vec<&Eval> {
        let mut evals: Vec<&Eval> = self.evals.iter().collect();
        evals.sort_by(|a, b| a.rate.total_cmp(&b.rate));
        evals
    }

    /// The criterion in full: "≥ 99.0 % of requests meet their class's SLO (chat: TTFT ≤ 1000 ms, TPOT ≤ 50 ms),
    /// p95 TTFT ≤ 800 ms holds, and the waiting queue does not grow" — or the mean wait's.
    fn criterion_text(&self) -> String {
        let objectives: String = self.percentile_clause().iter().map(|p| format!(", {p} holds")).collect();
        match self.p.max_mean_wait_ms {
            Some(w) => format!("the mean queueing delay stays at or under {w} ms and the waiting queue does not grow"),
            None => format!(
                "≥ {:.1} % of requests meet their class's SLO ({}){objectives}, and the waiting queue does not grow",
                self.target * 100.0,
                class_slos(&self.base)
            ),
        }
    }

    /// "the objectives" or "a mean wait ≤ 200 ms", for the question (the answer states the criterion in full).
    fn criterion_short(&self) -> String {
        match self.p.max_mean_wait_ms {
            Some(w) => format!("a mean queueing delay ≤ {w} ms"),
            None => "the objectives".into(),
        }
    }

    /// The note that says the criteria are separate and all must hold.
    fn criterion_note(&self) -> String {
        match self.p.max_mean_wait_ms {
            Some(_) => "A run passes when its mean queueing delay is within the bound and its waiting queue does not grow (steady.overloaded); a point passes when every repetition does.".into(),
            None => format!(
                "A run passes when all of these hold, each a separate criterion: the share of requests meeting their class's SLO reaches the attainment target ({:.1} %){}; and its waiting queue does not grow (steady.overloaded). A point passes when every repetition does; the objective columns show the worst repetition.",
                self.target * 100.0,
                if self.base.objectives.percentiles.is_empty() { String::new() } else { format!("; each percentile objective holds ({})", self.percentile_clause().join(", ")) }
            ),
        }
    }

    /// Why an evaluation failed, from its worst repetitions: "attainment 98.7 % < 99.0 %; p95 TTFT 1.2 s >
    /// 1000 ms in 3 of 5; the queue grew in 2 of 5".
    fn why_failed(&self, e: &Eval) -> String {
        let n = e.runs.len();
        let of = |k: usize| if n > 1 { format!(" in {k} of {n}") } else { String::new() };
        let mut why = Vec::new();
        let grew = e.runs.iter().filter(|r| r.overloaded).count();
        if grew > 0 {
            why.push(format!("the waiting queue grew{}", of(grew)));
        }
        match self.p.max_mean_wait_ms {
            Some(w) => {
                let worst = e.runs.iter().map(|r| r.queue_delay_mean_s).fold(0.0, f64::max);
                if worst * 1e3 > w {
                    why.push(format!("mean wait {} over {w} ms", crate::metrics::secs(worst)));
                }
            }
            None => {
                let low = e.runs.iter().map(|r| r.slo_attainment).fold(f64::MAX, f64::min);
                if low < self.target {
                    why.push(format!("attainment {:.1} % under {:.1} %", low * 100.0, self.target * 100.0));
                }
                for (i, o) in self.base.objectives.percentiles.iter().enumerate() {
                    let over: Vec<f64> = e
                        .runs
                        .iter()
                        .filter_map(|r| r.objective_values_s.get(i).copied())
                        .filter(|v| *v * 1e3 > o.max_ms)
                        .collect();
                    if let Some(worst) = over.iter().copied().reduce(f64::max) {
                        let words = objective_words(o);
                        let (head, bound) = words.split_once(" ≤ ").unwrap_or((&words, ""));
                        why.push(format!("{head} {} over {bound}{}", crate::metrics::secs(worst), of(over.len())));
                    }
                }
            }
        }
        if why.is_empty() { "a criterion missed".into() } else { why.join("; ") }
    }

    /// The chart of the criterion against the search's x (rate or replicas), with its band and target.
    fn criterion_chart(&self, x: &str, x_label: &str, pts: Vec<(f64, f64)>, band: Vec<(f64, f64)>) -> Chart {
        let wait = self.p.max_mean_wait_ms.is_some();
        Chart {
            kind: "lines".into(),
            title: if wait { format!("Mean queueing delay vs {x}") } else { format!("SLO attainment vs {x}") },
            x_label: x_label.into(),
            y_label: if wait {
                "seconds (mean, min–max over repetitions)".into()
            } else {
                "SLO attainment (mean, min–max)".into()
            },
            categories: vec![],
            series: vec![ChartSeries {
                name: if wait { "mean wait".into() } else { "SLO attainment".into() },
                points: pts,
                band,
                labels: vec![],
                line: true,
            }],
            target: Some(self.p.max_mean_wait_ms.map_or(self.target, |w| w / 1e3)),
        }
    }

    /// "p95 TTFT ≤ 1000 ms" for each of the scenario's percentile objectives.
    fn percentile_clause(&self) -> Vec<String> {
        self.base.objectives.percentiles.iter().map(objective_words).collect()
    }

    fn report_replicas(&self) -> StudyReport {
        let rate = self.p.target_rps.unwrap_or(0.0);
        let u = self.rate_unit();
        let mut rep = report_head(
            CapacityStudy::ABOUT,
            &self.base,
            format!(
                "what is the fewest replicas that meet {} at {rate} {u} in all {} repetitions?",
                self.criterion_short(),
                self.p.repetitions
            ),
        );
        let evals = self.sorted_evals();
        let (mut pts, mut band, mut rows) = (Vec::new(), Vec::new(), Vec::new());
        for &e in &evals {
            let (mean, worst, range) = self.criterion_stats(e);
            rows.push(Row { e, mean, worst, target: 0.0 });
            pts.push((e.rate, mean));
            band.push(range);
        }
        let defs = replica_columns(self.served_unit(), self.criterion_column());
        (rep.columns, rep.rows) = table_with(&defs, &objective_columns(&self.base), &rows);
        rep.best_row = self.hi().and_then(|h| evals.iter().position(|e| e.rate == h));
        let gpus_of = |n: f64| evals.iter().find(|e| e.rate == n).and_then(|e| e.runs.first()).map_or(0, |r| r.gpus);
        rep.answer = match (self.lo(), self.hi()) {
            (Some(l), Some(h)) => format!(
                "{h} replicas ({} GPUs) carry {rate} {u}: the fewest at which {} in every one of {} repetitions; {l} replica{} failed ({}).",
                gpus_of(h),
                self.criterion_text(),
                self.p.repetitions,
                if l == 1.0 { "" } else { "s" },
                evals.iter().find(|e| e.rate == l).map_or(String::new(), |e| self.why_failed(e))
            ),
            (None, Some(h)) => format!("{h} replica ({} GPUs) already passes at {rate} {u}.", gpus_of(h)),
            // The search ran out of evaluations before any count passed: say so, not that replicas cannot help.
            (Some(l), None) if self.stopped_early() => format!(
                "no replica count tried passes at {rate} {u}: the search stopped after {} counts (study option max_rates), the highest tried, {l}, failed; raise max_rates.",
                self.p.max_rates
            ),
            (Some(l), None) => format!(
                "no replica count up to {l} passes at {rate} {u} (study option max_replicas): the objectives are not met by adding replicas — look at service time or memory."
            ),
            (None, None) => "nothing was evaluated.".into(),
        };
        if self.stopped_early() {
            rep.notes
                .push(format!("The search stopped at {} replica counts (study option max_rates).", self.p.max_rates));
        }
        rep.notes.push(format!(
            "Every replica count is simulated with the scenario's router ({}) on the same requests (repetition k on seed {} + k), so routing and queueing across replicas are in the answer.",
            crate::catalog::kind_of(&self.base.cluster.router),
            self.base.seed
        ));
        rep.notes.push(self.criterion_note());
        rep.charts = vec![self.criterion_chart("replicas", "replicas", pts, band)];
        rep.runs = evals.iter().flat_map(|e| e.runs.iter().cloned()).collect();
        rep
    }
}
