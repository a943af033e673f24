//! Findings: experiments written as a living report with registered predictions (`inferscale report`,
//! docs/results.md). Each experiment registers its prediction ([`Findings::expect`]) before it runs, answers it
//! ([`Findings::found`]) with a verdict its interval decides, and writes every number through
//! [`Findings::figure`], so the text holds no number that was typed in and the JSON holds every number the
//! text shows. Rendering refuses a prediction left unanswered and an answer without a prediction.

mod central;
mod claims;
mod diagnosis;
mod formation;
mod layouts;
mod memory;
mod overload;
mod queueing;
mod robustness;
mod runs;
mod trust;

use serde::{Deserialize, Serialize};

pub use claims::{Line, SEED_BAND, Test};
pub use diagnosis::{Case, corpus};
pub use robustness::{Robustness, Setup};
pub use runs::Config;
use runs::Runs;
pub use trust::missing_files;

/// The report: every experiment from fixed seeds.
pub fn report(cfg: Config) -> Findings {
    match report_with(&cfg, &mut |_, _| {}) {
        Ok(f) => f,
        // The shipped scenarios are valid with every change an experiment makes (the report's test runs them).
        Err(e) => Findings::new("InferScale findings: refused", e.join("; ")),
    }
}

/// An experiment: its id, how it runs (on the configuration, the benchmark scenario's sustained capacity that
/// experiment 1 measured, and the runs so far), whether it reads that capacity, and the setups its verdicts
/// are rerun on ([`robustness`]).
struct Experiment {
    id: &'static str,
    run: fn(&mut Findings, &Config, f64, &mut Runs),
    reads_capacity: bool,
    setups: &'static [Setup],
}

use robustness::{
    BURSTY_ARRIVALS, HEAVIER_LOAD, LONGER_RUNS, LOOSE_OBJECTIVES, MODEL_ERROR, QUANTUM_512, QUANTUM_8192, ROUND_ROBIN,
    SHORTER_RUNS, TIGHT_OBJECTIVES, TPOT_20_MS, TPOT_30_MS, VARIABLE_LENGTHS,
};

/// An entry of [`EXPERIMENTS`], one line each.
const fn experiment(
    id: &'static str,
    run: fn(&mut Findings, &Config, f64, &mut Runs),
    reads_capacity: bool,
    setups: &'static [Setup],
) -> Experiment {
    Experiment { id, run, reads_capacity, setups }
}

/// The experiments with predictions, in order; experiments 14 (Little's law over every run above) and 15 (the
/// model's error on measured runs) close the report.
const EXPERIMENTS: [Experiment; 14] = [
    experiment(
        "textbook",
        |f, c, _, r| _ = queueing::textbook_vs_capacity(f, c, r),
        false,
        &[VARIABLE_LENGTHS, BURSTY_ARRIVALS, MODEL_ERROR],
    ),
    experiment("tail", queueing::tail_against_load, true, &[VARIABLE_LENGTHS, BURSTY_ARRIVALS]),
    experiment(
        "channels",
        |f, c, _, r| queueing::prediction_channels(f, c, r),
        false,
        &[TIGHT_OBJECTIVES, LOOSE_OBJECTIVES],
    ),
    experiment("drr", |f, c, _, r| queueing::fair_queueing(f, c, r), false, &[QUANTUM_512, QUANTUM_8192]),
    experiment("fleet", overload::fleet_or_shed, true, &[VARIABLE_LENGTHS, TIGHT_OBJECTIVES]),
    experiment("deadline", overload::deadline_or_random, true, &[VARIABLE_LENGTHS, TIGHT_OBJECTIVES]),
    experiment("oversub", |f, c, _, r| memory::oversubscription(f, c, r), false, &[TIGHT_OBJECTIVES, LOOSE_OBJECTIVES]),
    experiment("pd", |f, c, _, r| layouts::disaggregation(f, c, r), false, &[TPOT_30_MS, TPOT_20_MS, MODEL_ERROR]),
    experiment(
        "prefix",
        |f, c, _, r| layouts::prefix_reuse(f, c, r),
        false,
        &[BURSTY_ARRIVALS, ROUND_ROBIN, MODEL_ERROR],
    ),
    experiment(
        "retention",
        |f, c, _, r| memory::retention(f, c, r),
        false,
        &[BURSTY_ARRIVALS, HEAVIER_LOAD, MODEL_ERROR],
    ),
    experiment("formation", formation::formation, false, &[VARIABLE_LENGTHS, BURSTY_ARRIVALS, MODEL_ERROR]),
    experiment(
        "central",
        |f, c, _, r| central::central_question(f, c, r),
        false,
        &[TIGHT_OBJECTIVES, LOOSE_OBJECTIVES],
    ),
    experiment("diagnosis", |f, c, _, r| diagnosis::planted_causes(f, c, r), false, &[SHORTER_RUNS, LONGER_RUNS]),
    // Runs beside the others; Little's law, over every run, is written before it.
    experiment("trust", |f, _, _, _| trust::trust(f), false, &[]),
];

/// Little's law over every run of the report: written once every other experiment has run, before the last.
const LITTLE: &str = "little";

/// The experiments' ids in the report's order.
pub fn experiment_ids() -> Vec<&'static str> {
    let mut ids: Vec<&str> = EXPERIMENTS.iter().map(|e| e.id).collect();
    ids.insert(ids.len() - 1, LITTLE);
    ids
}

/// One run of an experiment: as the report runs it, or on one of its setups.
struct Job {
    experiment: usize,
    setup: Option<Setup>,
}

/// What a job wrote and ran: the unit a report is assembled from, and what crosses from one of the browser's
/// workers to another (hence serialisable, with the findings' unanswered ids, which the report's JSON leaves
/// out but its assembly must see).
#[derive(Serialize, Deserialize)]
pub struct Part {
    findings: Findings,
    orphans: Vec<String>,
    runs: Runs,
}

impl Part {
    fn of(mut findings: Findings, runs: Runs) -> Part {
        let orphans = std::mem::take(&mut findings.orphans);
        Part { findings, orphans, runs }
    }

    fn split(self) -> (Findings, Runs) {
        (Findings { orphans: self.orphans, ..self.findings }, self.runs)
    }
}

/// The first part of a report: experiment 1 as run, and the sustained capacity of the benchmark scenario it
/// measured (not a number when no chosen experiment reads it), which the jobs that read it are given.
#[derive(Serialize, Deserialize)]
pub struct First {
    pub part: Part,
    pub capacity: f64,
}

/// A report as runs that share nothing: [`Plan::first`], then every [`Plan::job`] in any order and on any
/// thread or worker, then [`Plan::assemble`] — the same report whatever the split ([`report_with`] is the
/// three in one).
pub struct Plan {
    cfg: Config,
    chosen: Vec<usize>,
    jobs: Vec<Job>,
}

/// The plan of the report as `cfg` asks (all experiments or one, on the shipped scenarios or on `cfg.base`),
/// or why not: an unknown experiment, a base refused or past the budget.
pub fn plan(cfg: &Config) -> Result<Plan, Vec<String>> {
    if let Some(o) = &cfg.only
        && !experiment_ids().contains(&o.as_str())
    {
        return Err(vec![format!("no experiment `{o}` (one of: {})", experiment_ids().join(", "))]);
    }
    if let Some(b) = &cfg.base {
        let sc = crate::scenario::validate(b).map_err(|e| vec![format!("the scenario: {e}")])?;
        if let Some(budget) = &cfg.budget {
            sc.check_budget(budget, 1).map_err(|e| vec![format!("the scenario: {e}")])?;
        }
    }
    let chosen: Vec<usize> = (0..EXPERIMENTS.len()).filter(|i| wants(cfg, EXPERIMENTS[*i].id)).collect();
    let mut jobs: Vec<Job> = Vec::new();
    for &i in &chosen {
        // Experiment 1 as run is the first part: it measures the capacity the others' ρ is measured against.
        if i > 0 {
            jobs.push(Job { experiment: i, setup: None });
        }
        jobs.extend(EXPERIMENTS[i].setups.iter().map(|s| Job { experiment: i, setup: Some(*s) }));
    }
    Ok(Plan { cfg: cfg.clone(), chosen, jobs })
}

/// Whether the report as `cfg` asks runs experiment `id` (all of them, or the one named).
fn wants(cfg: &Config, id: &str) -> bool {
    cfg.only.as_deref().is_none_or(|o| o == id)
}

impl Plan {
    /// How many jobs the report runs after its first part.
    pub fn jobs(&self) -> usize {
        self.jobs.len()
    }

    /// Whether job `k` reads the capacity the first part measures (an experiment as run that reads it; on a
    /// setup it measures its own).
    pub fn needs_capacity(&self, k: usize) -> bool {
        self.jobs.get(k).is_some_and(|j| j.setup.is_none() && EXPERIMENTS[j.experiment].reads_capacity)
    }

    /// Experiment 1 as run and the capacity it measures; when experiment 1 is not chosen, the capacity
    /// measured for the first chosen experiment that reads it (a refused run names that experiment).
    pub fn first(&self) -> First {
        let cfg = &self.cfg;
        let mut runs = Runs { experiment: "textbook", budget: cfg.budget, ..Runs::default() };
        let mut findings = Findings::default();
        let capacity = if wants(&self.cfg, "textbook") {
            queueing::textbook_vs_capacity(&mut findings, cfg, &mut runs)
        } else if let Some(&i) = self.chosen.iter().find(|i| EXPERIMENTS[**i].reads_capacity) {
            runs.experiment = EXPERIMENTS[i].id;
            queueing::sustained_capacity(cfg, &mut runs)
        } else {
            f64::NAN
        };
        First { part: Part::of(findings, runs), capacity }
    }

    /// Job `k` (below [`Plan::jobs`]), given the first part's capacity when it [`needs`](Plan::needs_capacity) it.
    pub fn job(&self, k: usize, capacity: f64) -> Part {
        let job = &self.jobs[k];
        let e = &EXPERIMENTS[job.experiment];
        let mut runs = Runs { experiment: e.id, budget: self.cfg.budget, ..Runs::default() };
        let mut findings = Findings::default();
        let cfg = match job.setup {
            None => self.cfg.clone(),
            Some(setup) => Config {
                repetitions: self.cfg.repetitions.min(robustness::SETUP_SEEDS),
                setup: Some(setup),
                ..self.cfg.clone()
            },
        };
        // A setup may change the benchmark scenario: its capacity is measured again on it.
        let capacity = if job.setup.is_some() && e.reads_capacity {
            queueing::sustained_capacity(&cfg, &mut runs)
        } else {
            capacity
        };
        (e.run)(&mut findings, &cfg, capacity, &mut runs);
        Part::of(findings, runs)
    }

    /// The report from its first part and every job's, in the jobs' order; refused, with every refusal,
    /// when a run's scenario is (or when the parts are not this plan's).
    pub fn assemble(&self, first: First, parts: Vec<Part>) -> Result<Findings, Vec<String>> {
        if parts.len() != self.jobs.len() {
            return Err(vec![format!("{} parts for a report of {} jobs", parts.len(), self.jobs.len())]);
        }
        let cfg = &self.cfg;
        let mut f = Findings::new("InferScale findings", intro(cfg));
        let mut runs = Runs { experiment: "textbook", budget: cfg.budget, ..Runs::default() };
        let mut first = Some(first.part);
        let mut parts = parts.into_iter();
        let mut little = wants(&self.cfg, LITTLE).then_some(());
        if let Some(p) = first.take_if(|_| !wants(&self.cfg, "textbook")) {
            // The capacity measured for another experiment: its runs and refusals, no section.
            runs.absorb(p.split().1);
        }
        for &i in &self.chosen {
            let e = &EXPERIMENTS[i];
            if i == EXPERIMENTS.len() - 1 && little.take().is_some() {
                queueing::littles_law(&mut f, &runs.littles);
            }
            let main = if i == 0 { first.take().expect("experiment 1's part") } else { parts.next().expect("counted") };
            let (findings, main_runs) = main.split();
            runs.absorb(main_runs);
            f.absorb(findings);
            let reruns: Vec<(Setup, Result<Findings, String>)> = (e.setups.iter())
                .map(|setup| {
                    let (findings, part_runs) = parts.next().expect("counted").split();
                    let refused = part_runs.refused.join("; ");
                    runs.littles.extend(part_runs.littles);
                    (*setup, if refused.is_empty() { Ok(findings) } else { Err(refused) })
                })
                .collect();
            if !e.setups.is_empty() && f.sections.iter().any(|s| s.id == e.id) {
                let table = robustness::table(&mut f, e.id, "as run above", &reruns);
                let section = f.sections.iter_mut().find(|s| s.id == e.id).expect("just found");
                section.robustness = Some(table);
            }
        }
        if little.is_some() {
            queueing::littles_law(&mut f, &runs.littles);
        }
        if cfg.base.is_none() && cfg.only.is_none() {
            f.revision = revision(&f);
        }
        f.multiplicity = multiplicity(&f);
        if runs.refused.is_empty() { Ok(f) } else { Err(runs.refused) }
    }
}

/// Every job of `plan`, in order: on native targets on as many threads as the machine has (each job owns its
/// state, so the result is the same whatever the count); in the browser's worker one after another (the lab
/// shares the jobs among its workers itself), `progress` told.
fn run_jobs(plan: &Plan, capacity: f64, progress: &mut dyn FnMut(usize)) -> Vec<Part> {
    let n = plan.jobs();
    #[cfg(not(target_arch = "wasm32"))]
    {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, n.max(1));
        let next = std::sync::atomic::AtomicUsize::new(0);
        let slots = std::sync::Mutex::new((0..n).map(|_| None).collect::<Vec<Option<Part>>>());
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| {
                    loop {
                        // The last first: the later experiments' runs are the longest, and the short ones left
                        // at the end keep both threads busy.
                        let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(i) = n.checked_sub(k + 1) else { return };
                        let part = plan.job(i, capacity);
                        slots.lock().expect("no thread panics holding the lock")[i] = Some(part);
                    }
                });
            }
        });
        progress(n);
        let slots = slots.into_inner().expect("no thread panicked");
        slots.into_iter().map(|p| p.expect("every job ran")).collect()
    }
    #[cfg(target_arch = "wasm32")]
    {
        (0..n)
            .map(|i| {
                let part = plan.job(i, capacity);
                progress(i + 1);
                part
            })
            .collect()
    }
}

/// The report as `cfg` asks (all experiments or one, on the shipped scenarios or on `cfg.base`), calling
/// `progress(done, total)` as the runs finish; refused, with every refusal, when a run's scenario is.
pub fn report_with(cfg: &Config, progress: &mut dyn FnMut(usize, usize)) -> Result<Findings, Vec<String>> {
    let plan = plan(cfg)?;
    let total = plan.jobs() + 1;
    let first = plan.first();
    progress(1, total);
    let parts = run_jobs(&plan, first.capacity, &mut |done| progress(done + 1, total));
    let f = plan.assemble(first, parts);
    progress(total, total);
    f
}

fn intro(cfg: &Config) -> String {
    let on = match &cfg.base {
        Some(b) => format!(
            "This run replaces every experiment's shipped scenario with the Serving Lab's, “{}”: the setup text describes the shipped scenario, the excerpt shows what ran.",
            b.name
        ),
        None => "Each runs a shipped scenario (`scenarios/`), named with the fields it changes,".into(),
    };
    format!(
        "Each experiment registers its prediction before it runs, then answers it from the simulation. Every number below is computed when `inferscale report` runs (a test holds docs/results.md to its output byte for byte), and every headline figure is a mean over {} seeds with its 95 % interval (Student t; cut at 0 for a rate, a time or a count, and at 0 and 100 % for a share) — or, where a latency's seeds split too far for a mean (one at least 10× another: past saturation on some seeds only), each seed and their median: a verdict is \"held\" or \"contradicted\" only when the interval says so, else \"inconclusive\". Experiments 1–7 and 14 re-measure the eight findings of the gateway study this report follows (the seed), and where the seed gave a figure the figure is the prediction, reproduced within one band for every claim: {SEED_BAND}. Those claims were rewritten to the seed's figures after this report's own figures had been published, which is why the band is one rule, not chosen claim by claim. The seed measured them on its own workload — four request classes from two tenants — whose definition is not available to this report; the experiments run the shipped scenarios instead (several a single class of fixed lengths), so a seed's figure is predicted on another workload, a reason beside the model's error for a verdict to differ from the seed's, and the reason variable lengths and bursty arrivals are among the setups below. Experiments 8–13 are new (12 asks the question the product exists for — a scheduling fix, a replica or admission, below and above capacity —, 13 checks the diagnosis every run prints on cases whose cause was planted), and 15 sets the model's own error on real measured runs beside all of them. {on} at a load stated as ρ against the sustained capacity measured on that scenario — the highest rate of its own arrivals it serves stably (docs/metrics.md, \"Stability\"), never derived. A run is {} requests (agent sessions: a tenth as many sessions, of about ten turns each). Each experiment with a counted claim is then rerun whole on setups a practitioner would choose instead — variable lengths for fixed ones, bursty arrivals, other objectives or policy settings, and for those that set prefill against decode the cost model off by its held-out error — and its robustness table says whether each verdict holds on all of them or depends on one, and where it flips.",
        cfg.repetitions, cfg.requests
    )
}

/// What became of a registered prediction, as its 95 % interval says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Held,
    Contradicted,
    /// The interval straddles the line the prediction drew.
    Inconclusive,
}

impl Verdict {
    /// The verdict on "the figure is above `line`" (`above`) or below it, from its interval: held when the
    /// whole interval is on the predicted side, contradicted when the whole is on the other, else inconclusive.
    pub fn of(lo: f64, hi: f64, line: f64, above: bool) -> Verdict {
        let (yes, no) = if above { (lo > line, hi < line) } else { (hi < line, lo > line) };
        match (yes, no) {
            (true, _) => Verdict::Held,
            (_, true) => Verdict::Contradicted,
            _ => Verdict::Inconclusive,
        }
    }

    /// Both predictions must hold; one contradicted contradicts.
    pub fn and(self, other: Verdict) -> Verdict {
        match (self, other) {
            (Verdict::Contradicted, _) | (_, Verdict::Contradicted) => Verdict::Contradicted,
            (Verdict::Held, Verdict::Held) => Verdict::Held,
            _ => Verdict::Inconclusive,
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            Verdict::Held => "held",
            Verdict::Contradicted => "contradicted",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

/// How a figure is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Requests per second, two decimals.
    Rps,
    /// Seconds: ms below 10 s, as every report.
    Seconds,
    /// A fraction shown as a percentage, one decimal.
    Percent,
    /// A share of requests (within 0 and 1), shown as a percentage. Its interval is cut at 0 and 100 %, which
    /// a t interval of shares near either end would cross; so is every interval of a figure that cannot be
    /// negative (rates, times, counts, ratios) cut at 0.
    Share,
    /// A ratio, "×", two decimals.
    Times,
    /// A count.
    Count,
    /// A small relative error, in scientific notation (3.1e-9).
    Relative,
    /// A difference of two fractions, in percentage points, one decimal.
    Points,
}

impl Unit {
    pub fn show(self, x: f64) -> String {
        match self {
            Unit::Rps => format!("{x:.2} req/s"),
            // A bound cut at 0 reads as a plain zero, not "0.000 ms".
            Unit::Seconds if x == 0.0 => "0 ms".into(),
            Unit::Seconds => crate::metrics::secs(x),
            Unit::Percent | Unit::Share => format!("{:.1} %", no_minus_zero(x * 100.0, 0.05)),
            Unit::Times => format!("{x:.2}×"),
            Unit::Count => format!("{x:.0}"),
            Unit::Relative => format!("{x:.1e}"),
            Unit::Points => format!("{:.1} points", no_minus_zero(x * 100.0, 0.05)),
        }
    }
}

/// `x`, or 0 where it would show as "-0.0" (a rounding's sign is not a finding).
fn no_minus_zero(x: f64, half_step: f64) -> f64 {
    if x.abs() < half_step { 0.0 } else { x }
}

/// A number of the report: its value (a mean over repetitions, with its 95 % interval when there were
/// several) and how the text shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    pub id: String,
    pub value: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<(f64, f64)>,
    pub unit: Unit,
    /// Exactly as the text shows it.
    pub shown: String,
    /// Each seed's value, when the seeds split too far for a mean (`Findings::per_seed`): the figure is then
    /// their median and its interval the lowest and highest seed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seeds: Option<Vec<f64>>,
}

/// What a registered claim is: a prediction that could fail, counted in the tally, or an audit — an identity
/// the engine must satisfy, or a claim whose answer was known before it was registered — reported with its
/// verdict and never counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Prediction,
    Audit,
}

/// A claim registered before its experiment ran, its tolerance, and its answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    pub id: String,
    /// The experiment it belongs to: its id up to the first dot (`drr.throughput` is `drr`'s).
    pub section: String,
    pub kind: Kind,
    pub hypothesis: String,
    /// A prediction: the lines its 95 % interval must clear, stated when it is registered. An audit: why it
    /// is not counted.
    pub tolerance: String,
    /// The figures the verdict rests on and their lines, when the claim states them as data: then the
    /// tolerance is their text and the verdict theirs ([`Findings::decide`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tests: Vec<Test>,
    pub outcome: Option<String>,
    pub verdict: Option<Verdict>,
}

/// One experiment's section.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Section {
    pub id: String,
    pub title: String,
    pub question: String,
    /// The scenario and what was varied, in a paragraph.
    pub setup: String,
    /// The load regime, measured (ρ against measured capacity).
    pub regime: String,
    /// The shipped scenario the experiment runs and, per arm, the fields it changes ([`Excerpt`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scenario: Option<Excerpt>,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// The lab's chart of the experiment ([`Findings::chart`]); not in the Markdown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chart: Option<crate::study::Chart>,
    /// Its counted claims' verdicts rerun over other setups ([`robustness`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub robustness: Option<Robustness>,
}

/// A scenario excerpt: the shipped file an experiment starts from and, for each arm, only the fields it
/// changes (on the first seed), computed from the two specs — so the excerpt cannot drift from the runs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Excerpt {
    pub file: String,
    pub arms: Vec<(String, serde_json::Value)>,
}

impl Excerpt {
    /// `file` as shipped (`shipped`), and each arm's spec.
    pub fn of(file: &str, shipped: &crate::scenario::Spec, arms: &[(String, crate::scenario::Spec)]) -> Excerpt {
        let base = serde_json::to_value(shipped).unwrap_or_default();
        let arms = (arms.iter())
            .map(|(label, s)| (label.clone(), changes(&base, &serde_json::to_value(s).unwrap_or_default())))
            .collect();
        Excerpt { file: file.into(), arms }
    }
}

/// The part of `to` that differs from `from`: objects key by key (a key `to` drops is null) unless their
/// `kind` differs (a tagged variant is shown whole), arrays of one length element by element (`{}` for an
/// element unchanged), anything else whole.
fn changes(from: &serde_json::Value, to: &serde_json::Value) -> serde_json::Value {
    use serde_json::{Map, Value};
    match (from, to) {
        (Value::Object(a), Value::Object(b)) if a.get("kind") == b.get("kind") => {
            let mut out = Map::new();
            for (k, v) in b {
                match a.get(k) {
                    Some(old) if old == v => {}
                    Some(old) => _ = out.insert(k.clone(), changes(old, v)),
                    None => _ = out.insert(k.clone(), v.clone()),
                }
            }
            for k in a.keys().filter(|k| !b.contains_key(*k)) {
                out.insert(k.clone(), Value::Null);
            }
            Value::Object(out)
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => Value::Array(
            a.iter().zip(b).map(|(x, y)| if x == y { Value::Object(Map::new()) } else { changes(x, y) }).collect(),
        ),
        _ => to.clone(),
    }
}

/// A figure as a chart shows it: its value and interval in the unit's scale.
type Scaled = (f64, Option<(f64, f64)>);

/// Why a report cannot be rendered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FindingsError {
    /// A prediction was registered and never answered.
    Unanswered(String),
    /// An answer names no registered prediction.
    NoPrediction(String),
    /// A prediction was registered without the tolerance that decides it.
    NoTolerance(String),
    /// A claim's verdict is not the one its tests give.
    NotItsTests(String),
    /// An experiment with a counted prediction has no robustness table, or one of fewer than three setups.
    NoRobustness(String),
}

impl std::fmt::Display for FindingsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FindingsError::Unanswered(id) => write!(f, "prediction `{id}` was registered but never answered"),
            FindingsError::NoPrediction(id) => write!(f, "an answer to `{id}`, which no prediction registered"),
            FindingsError::NoTolerance(id) => write!(f, "prediction `{id}` was registered without its tolerance"),
            FindingsError::NotItsTests(id) => write!(f, "claim `{id}`'s verdict is not the one its tests give"),
            FindingsError::NoRobustness(id) => {
                write!(
                    f,
                    "experiment `{id}` has a counted prediction and no robustness table over three setups or more"
                )
            }
        }
    }
}

/// The report being written: its sections, predictions, answers and figures, in the order they came.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Findings {
    pub title: String,
    pub intro: String,
    pub sections: Vec<Section>,
    pub predictions: Vec<Prediction>,
    /// Answers to ids no prediction registered (an error when rendered).
    #[serde(skip)]
    orphans: Vec<String>,
    pub figures: Vec<Figure>,
    /// What a change of method did to the verdicts (the tally's last paragraph; empty on a partial report or
    /// another scenario, where there is nothing to compare).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub revision: String,
    /// How many 95 % intervals the report shows and what so many mean together (the tally's; every report).
    pub multiplicity: String,
}

/// Each prediction's verdict when every ρ was measured against the drain rate (every request at once):
/// docs/results.md at dcac674, before sustained capacity — for the claims still registered as they were then
/// (those of experiments 1–7 were rewritten to the seed's figures since). The tally says which verdicts the new
/// definition moved.
const ON_THE_DRAIN_RATE: [(&str, Verdict); 6] = [
    ("pd", Verdict::Contradicted),
    ("prefix", Verdict::Held),
    ("retention", Verdict::Inconclusive),
    ("formation", Verdict::Contradicted),
    ("little", Verdict::Held),
    ("trust", Verdict::Contradicted),
];

/// Whether seeds split too far for a mean: positive values, one at least 10× another (runs past saturation on
/// some seeds and not on others: experiment 10 at a tenth of its budget reads 607 ms to 46.7 s).
pub(crate) fn split(xs: &[f64]) -> bool {
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(0.0, f64::max);
    xs.len() > 1 && lo > 0.0 && hi >= 10.0 * lo
}

/// The tally's sentence on precision: the intervals shown, the figures every seed gave alike (deterministic: no
/// interval to show), and how many intervals would miss their true mean by chance alone.
fn multiplicity(f: &Findings) -> String {
    let intervals: Vec<(f64, f64)> =
        f.figures.iter().filter(|x| x.seeds.is_none()).filter_map(|x| x.interval).collect();
    let alike = intervals.iter().filter(|(lo, hi)| lo == hi).count();
    let n = intervals.len() - alike;
    let split = f.figures.iter().filter(|x| x.seeds.is_some()).count();
    let split = match split {
        0 => String::new(),
        k => format!(
            " {k} figures whose seeds split too far for a mean (one seed at least 10× another: some runs past saturation, some not) are shown seed by seed with their median, a verdict on them decided by the lowest and the highest seed — the interval the order statistics give a median, which covers it with probability 1 − 2^(1−n): 94 % on 5 seeds, 75 % on 3."
        ),
    };
    format!(
        "This report shows {n} 95 % intervals, and {alike} figures that every seed gave alike (deterministic: no interval).{split} Each interval misses its true mean one time in twenty, so about {:.0} of them may miss by chance alone; the verdicts are not corrected for that, and one that rests on an interval near its line is weak evidence.",
        n as f64 / 20.0
    )
}

/// The tally's paragraph on the change from the drain rate to sustained capacity: which verdicts moved.
fn revision(f: &Findings) -> String {
    let moved: Vec<String> = (f.predictions.iter())
        .filter_map(|p| {
            let before = ON_THE_DRAIN_RATE.iter().find(|(id, _)| *id == p.id)?.1;
            let now = p.verdict?;
            (now != before).then(|| format!("`{}` {} → {}", p.id, before.word(), now.word()))
        })
        .collect();
    format!(
        "Every ρ above is measured against sustained capacity (docs/metrics.md, \"Stability\"). Until issue 43 it was measured against the drain rate — every request at once — which experiment 1 sets beside it. Of the claims registered then and unchanged since (those of experiments 1–7 now state the seed's figures): {}",
        if moved.is_empty() {
            "no verdict changed with the definition.".to_string()
        } else {
            format!("these verdicts changed with the definition: {}.", moved.join("; "))
        }
    )
}

impl Findings {
    pub fn new(title: &str, intro: String) -> Findings {
        Findings { title: title.into(), intro, ..Findings::default() }
    }

    /// Append what another part of the report wrote (an experiment run on its own).
    fn absorb(&mut self, other: Findings) {
        self.sections.extend(other.sections);
        self.predictions.extend(other.predictions);
        self.orphans.extend(other.orphans);
        self.figures.extend(other.figures);
    }

    /// Start experiment `id`'s section.
    pub fn section(&mut self, id: &str, title: &str, question: &str) -> &mut Section {
        self.sections.push(Section {
            id: id.into(),
            title: title.into(),
            question: question.into(),
            ..Default::default()
        });
        self.sections.last_mut().expect("just pushed")
    }

    /// Register a prediction before its experiment runs, with the lines its interval must clear.
    pub fn expect(&mut self, id: &str, hypothesis: &str, tolerance: &str) {
        self.register(id, Kind::Prediction, hypothesis, tolerance);
    }

    /// Register an audit: a claim reported with its verdict and never counted, and why.
    pub fn audit(&mut self, id: &str, claim: &str, why_not_counted: &str) {
        self.register(id, Kind::Audit, claim, why_not_counted);
    }

    /// Register a prediction resting on `tests`: its tolerance is their text, its verdict theirs.
    pub fn expect_on(&mut self, id: &str, hypothesis: &str, tests: Vec<Test>) {
        self.register(id, Kind::Prediction, hypothesis, &claims::tolerance(&tests));
        self.predictions.last_mut().expect("just pushed").tests = tests;
    }

    /// Register an audit resting on `tests`, and why it is not counted.
    pub fn audit_on(&mut self, id: &str, claim: &str, why_not_counted: &str, tests: Vec<Test>) {
        self.register(id, Kind::Audit, claim, why_not_counted);
        self.predictions.last_mut().expect("just pushed").tests = tests;
    }

    fn register(&mut self, id: &str, kind: Kind, hypothesis: &str, tolerance: &str) {
        self.predictions.push(Prediction {
            id: id.into(),
            section: id.split('.').next().unwrap_or(id).into(),
            kind,
            hypothesis: hypothesis.into(),
            tolerance: tolerance.into(),
            tests: vec![],
            outcome: None,
            verdict: None,
        });
    }

    /// The verdict claim `id`'s tests give on the figures written so far: each figure's interval (its value,
    /// when it has none) against its line, all of them together ([`Verdict::and`]); inconclusive for a claim
    /// without tests or a figure not written.
    pub fn decide(&self, id: &str) -> Verdict {
        let Some(p) = self.predictions.iter().find(|p| p.id == id) else { return Verdict::Inconclusive };
        p.tests.iter().map(|t| self.verdict_of(t)).reduce(Verdict::and).unwrap_or(Verdict::Inconclusive)
    }

    /// The verdict of claim `id`'s test on `figure` alone (inconclusive when it has none), for text that says
    /// which part of a claim held.
    pub fn decide_on(&self, id: &str, figure: &str) -> Verdict {
        let test =
            self.predictions.iter().find(|p| p.id == id).and_then(|p| p.tests.iter().find(|t| t.figure == figure));
        test.map_or(Verdict::Inconclusive, |t| self.verdict_of(t))
    }

    fn verdict_of(&self, t: &Test) -> Verdict {
        self.figure_named(&t.figure).map_or(Verdict::Inconclusive, |f| {
            let (lo, hi) = f.interval.unwrap_or((f.value, f.value));
            t.line.verdict(lo, hi)
        })
    }

    /// The band claim `id`'s test on `figure` must lie within (a seed figure's, [`Test::seed`]), for text that
    /// says on which side of it a figure fell without restating the rule.
    pub fn band_of(&self, id: &str, figure: &str) -> Option<(f64, f64)> {
        let p = self.predictions.iter().find(|p| p.id == id)?;
        match p.tests.iter().find(|t| t.figure == figure)?.line {
            Line::Within(a, b) => Some((a, b)),
            _ => None,
        }
    }

    /// Figure `id`, the last written under that id.
    pub fn figure_named(&self, id: &str) -> Option<&Figure> {
        self.figures.iter().rev().find(|f| f.id == id)
    }

    /// Answer prediction `id`: what was found, and the verdict.
    pub fn found(&mut self, id: &str, outcome: String, verdict: Verdict) {
        match self.predictions.iter_mut().find(|p| p.id == id) {
            Some(p) => (p.outcome, p.verdict) = (Some(outcome), Some(verdict)),
            None => self.orphans.push(id.into()),
        }
    }

    /// Figure `id` as the text shows it (the last written under that id; empty when none was).
    pub fn shown(&self, id: &str) -> String {
        self.figure_named(id).map(|x| x.shown.clone()).unwrap_or_default()
    }

    /// A figure of the report, as the text shows it.
    pub fn figure(&mut self, id: &str, value: f64, unit: Unit) -> String {
        self.add(id, value, None, unit, unit.show(value))
    }

    /// A share of `k` in `n` with its Wilson 95 % interval, as "share (k of n; 95 % Wilson interval lo – hi)".
    pub fn proportion(&mut self, id: &str, k: usize, n: usize) -> String {
        let p = k as f64 / n.max(1) as f64;
        let interval = crate::study::wilson95(p, n);
        let shown = match interval {
            Some((lo, hi)) => format!(
                "{} ({k} of {n}; 95 % Wilson interval {} – {})",
                Unit::Share.show(p),
                Unit::Share.show(lo),
                Unit::Share.show(hi)
            ),
            None => format!("{} (of none)", Unit::Share.show(p)),
        };
        self.add(id, p, interval, Unit::Share, shown)
    }

    /// A mean over repetitions with its 95 % interval (Student t), as "mean (lo – hi)" — or, when a latency's
    /// seeds split (one at least 10× another: runs past saturation on some seeds only), `per_seed`: a
    /// t-interval on such values is wide and centred where no seed lies. (Shares and percentages near zero
    /// differ tenfold without splitting, so only latencies are judged so.)
    pub fn mean_ci(&mut self, id: &str, xs: &[f64], unit: Unit) -> (String, (f64, f64, f64)) {
        if unit == Unit::Seconds && split(xs) {
            let shown = self.per_seed(id, xs, unit);
            let f = self.figure_named(id).expect("just written");
            let (lo, hi) = f.interval.expect("per_seed writes an interval");
            return (shown, (f.value, lo, hi));
        }
        let (m, mut lo, mut hi) = crate::study::mean_ci(xs);
        match unit {
            Unit::Share => (lo, hi) = (lo.max(0.0), hi.min(1.0)),
            Unit::Count | Unit::Rps | Unit::Seconds | Unit::Times => lo = lo.max(0.0),
            _ => {}
        }
        let shown = match xs.len() {
            0 | 1 => unit.show(m),
            // Every seed gave the same figure (a burst of fixed lengths draws nothing that matters).
            n if xs.iter().all(|x| *x == xs[0]) => format!("{} (the same on all {n} seeds)", unit.show(m)),
            _ => format!("{} (95 % CI {} – {})", unit.show(m), unit.show(lo), unit.show(hi)),
        };
        (self.add(id, m, (xs.len() > 1).then_some((lo, hi)), unit, shown), (m, lo, hi))
    }

    /// Each seed's value and their median, its interval the lowest and the highest seed: the interval the
    /// order statistics give the median, whatever the distribution, covering it with probability 1 − 2^(1−n)
    /// (94 % on 5 seeds, 75 % on 3). For outcomes that split — runs past saturation on some seeds and not on
    /// others — where a mean and its t-interval describe no seed.
    pub fn per_seed(&mut self, id: &str, xs: &[f64], unit: Unit) -> String {
        let mut sorted = xs.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        if n < 2 {
            return self.figure(id, sorted.first().copied().unwrap_or(f64::NAN), unit);
        }
        let median = (sorted[(n - 1) / 2] + sorted[n / 2]) / 2.0;
        let each: Vec<String> = xs.iter().map(|x| unit.show(*x)).collect();
        let shown = format!("{} (median of {n} seeds that split: {})", unit.show(median), each.join(", "));
        self.figures.push(Figure {
            id: id.into(),
            value: median,
            interval: Some((sorted[0], sorted[n - 1])),
            unit,
            shown: shown.clone(),
            seeds: Some(xs.to_vec()),
        });
        shown
    }

    fn add(&mut self, id: &str, value: f64, interval: Option<(f64, f64)>, unit: Unit, shown: String) -> String {
        self.figures.push(Figure { id: id.into(), value, interval, unit, shown: shown.clone(), seeds: None });
        shown
    }

    /// A chart of figures already written: `kind` as a study chart's (`bars` over `categories`, or `lines`),
    /// each series a name and its points (x, figure id), a figure's interval its band. Values are shown in
    /// their unit's scale: fractions in percent (or points), seconds in ms.
    pub fn chart(
        &self,
        kind: &str,
        title: &str,
        (x_label, y_label): (&str, &str),
        categories: Vec<String>,
        series: Vec<(String, Vec<(f64, String)>)>,
    ) -> crate::study::Chart {
        let scaled = |id: &str| -> Option<Scaled> {
            let f = self.figure_named(id)?;
            let k = match f.unit {
                Unit::Percent | Unit::Share | Unit::Points => 100.0,
                Unit::Seconds => 1e3,
                _ => 1.0,
            };
            Some((f.value * k, f.interval.map(|(lo, hi)| (lo * k, hi * k))))
        };
        let series = (series.into_iter())
            .map(|(name, points)| {
                let got: Vec<(f64, Scaled)> = points.iter().filter_map(|(x, id)| Some((*x, scaled(id)?))).collect();
                let band = if got.iter().all(|(_, (_, b))| b.is_some()) {
                    got.iter().filter_map(|(_, (_, b))| *b).collect()
                } else {
                    vec![]
                };
                crate::study::ChartSeries {
                    name,
                    points: got.iter().map(|(x, (y, _))| (*x, *y)).collect(),
                    band,
                    labels: vec![],
                    line: kind == "lines",
                }
            })
            .collect();
        crate::study::Chart {
            kind: kind.into(),
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            categories,
            series,
            target: None,
        }
    }

    /// A bar chart of one figure per category: (category, figure id).
    pub fn bars(&self, title: &str, y_label: &str, items: Vec<(String, String)>) -> crate::study::Chart {
        let (categories, ids): (Vec<String>, Vec<String>) = items.into_iter().unzip();
        let points = ids.into_iter().enumerate().map(|(i, id)| (i as f64, id)).collect();
        self.chart("bars", title, ("", y_label), categories, vec![(y_label.to_string(), points)])
    }

    /// Every prediction answered and every answer predicted.
    pub fn check(&self) -> Result<(), FindingsError> {
        if let Some(p) = self.predictions.iter().find(|p| p.verdict.is_none()) {
            return Err(FindingsError::Unanswered(p.id.clone()));
        }
        if let Some(p) = self.predictions.iter().find(|p| p.tolerance.trim().is_empty()) {
            return Err(FindingsError::NoTolerance(p.id.clone()));
        }
        if let Some(p) = self.predictions.iter().find(|p| !p.tests.is_empty() && p.verdict != Some(self.decide(&p.id)))
        {
            return Err(FindingsError::NotItsTests(p.id.clone()));
        }
        let counted = |s: &Section| self.predictions.iter().any(|p| p.section == s.id && p.kind == Kind::Prediction);
        if let Some(s) =
            self.sections.iter().find(|s| counted(s) && s.robustness.as_ref().is_none_or(|r| r.rows.len() < 3))
        {
            return Err(FindingsError::NoRobustness(s.id.clone()));
        }
        match self.orphans.first() {
            Some(id) => Err(FindingsError::NoPrediction(id.clone())),
            None => Ok(()),
        }
    }

    /// The report as JSON: its sections, predictions with their verdicts, and every figure.
    pub fn json(&self) -> Result<String, FindingsError> {
        self.check()?;
        Ok(serde_json::to_string_pretty(self).expect("findings serialise") + "\n")
    }

    /// The report as Markdown (docs/results.md).
    pub fn markdown(&self) -> Result<String, FindingsError> {
        self.check()?;
        let mut out = format!("# {}\n\n{}\n", self.title, self.intro);
        for s in &self.sections {
            let claims: Vec<&Prediction> = self.predictions.iter().filter(|p| p.section == s.id).collect();
            out.push_str(&section_md(s, &claims));
        }
        out.push_str(&self.tally());
        Ok(out)
    }

    /// How many predictions held, were contradicted, or stayed open, and what the misses say; the audits
    /// apart, never counted.
    fn tally(&self) -> String {
        let counted: Vec<&Prediction> = self.predictions.iter().filter(|p| p.kind == Kind::Prediction).collect();
        let count = |v: Verdict| counted.iter().filter(|p| p.verdict == Some(v)).count();
        let mut out = format!(
            "\n## Tally\n\nRegistered predictions: {}. Held: {}. Contradicted: {}. Inconclusive (the interval straddles the line): {}.\n",
            counted.len(),
            count(Verdict::Held),
            count(Verdict::Contradicted),
            count(Verdict::Inconclusive)
        );
        for p in counted.iter().filter(|p| p.verdict != Some(Verdict::Held)) {
            let verdict = p.verdict.map_or("", Verdict::word);
            out.push_str(&format!("\n- `{}` ({verdict}): {}", p.id, p.outcome.as_deref().unwrap_or("")));
        }
        if counted.iter().any(|p| p.verdict != Some(Verdict::Held)) {
            out.push('\n');
        }
        let audits: Vec<String> = (self.predictions.iter().filter(|p| p.kind == Kind::Audit))
            .map(|p| format!("`{}` ({}; {})", p.id, p.verdict.map_or("", Verdict::word), p.tolerance))
            .collect();
        if !audits.is_empty() {
            out.push_str(&format!("\nAudits, reported and not counted: {}.\n", audits.join("; ")));
        }
        if !self.multiplicity.is_empty() {
            out.push_str(&format!("\n{}\n", self.multiplicity));
        }
        if !self.revision.is_empty() {
            out.push_str(&format!("\n{}\n", self.revision));
        }
        out
    }
}

/// One experiment's section with its claims: each registered before the setup, each answered after the table.
/// A section's only claim is named by its id alone; several are each named on their outcome and verdict.
fn section_md(s: &Section, claims: &[&Prediction]) -> String {
    let mut out = format!("\n## {}\n\n**Question.** {}\n", s.title, s.question);
    for p in claims {
        let (what, tolerance) = match p.kind {
            Kind::Prediction => ("Registered prediction", "Decided by"),
            Kind::Audit => ("Audit", "Not counted"),
        };
        let stop = if p.tolerance.ends_with('.') { "" } else { "." };
        out.push_str(&format!("\n**{what}** (`{}`). {} {tolerance}: {}{stop}\n", p.id, p.hypothesis, p.tolerance));
    }
    out.push_str(&format!("\n**Setup.** {}\n", s.setup));
    if let Some(x) = &s.scenario {
        out.push_str(&format!("\n**Scenario.** `{}`, with these changes:\n\n", x.file));
        for (label, v) in &x.arms {
            out.push_str(&format!("- {label}: `{v}`\n"));
        }
    }
    out.push_str(&format!("\n**Regime.** {}\n", s.regime));
    if !s.columns.is_empty() {
        out.push_str(&format!("\n| {} |\n|{}\n", s.columns.join(" | "), "---|".repeat(s.columns.len())));
        for r in &s.rows {
            out.push_str(&format!("| {} |\n", r.join(" | ")));
        }
    }
    for p in claims {
        let verdict = p.verdict.map_or("", Verdict::word);
        let outcome = p.outcome.as_deref().unwrap_or("");
        out.push_str(&match claims.len() {
            1 => format!("\n**Outcome.** {outcome}\n\n**Verdict: {verdict}.**\n"),
            _ => format!("\n**Outcome** (`{}`). {outcome}\n\n**Verdict (`{}`): {verdict}.**\n", p.id, p.id),
        });
    }
    if let Some(r) = &s.robustness {
        out.push_str(&format!(
            "\n**Robustness.** {}\n\n| {} |\n|{}\n",
            r.about,
            r.columns.join(" | "),
            "---|".repeat(r.columns.len())
        ));
        for row in &r.rows {
            out.push_str(&format!("| {} |\n", row.join(" | ")));
        }
        out.push_str(&format!("\n{}\n", r.summary));
    }
    out
}
