//! Studies: many runs of the same requests (common random numbers), turned into a decision.
//!
//! A study is a small state machine ([`Study`]): it hands out batches of independent runs ([`Job`]), takes
//! back their [`RunSummary`]s *in job order*, and finally builds a [`StudyReport`] — a table, a chart and
//! notes. Who runs the jobs, and on how many threads or Web Workers, is the front end's business; results
//! are fed back in job order, so the report is byte-identical whatever the parallelism.
//!
//! ```text
//! Spec + params ─▶ Study::next() ─▶ [Job…] ─▶ run anywhere ─▶ [RunSummary…] ─▶ Study::feed() ─┐
//!                        ▲                                                                     │
//!                        └──────────────────────── until next() is empty ◀─────────────────────┘
//!                                                  then Study::report() ─▶ StudyReport (JSON, CSV, Markdown)
//! ```

pub mod agents;
pub mod capacity;
pub mod explorer;
pub mod fleet;
pub mod option;
pub mod paired;
pub mod pd;
pub mod ranking;
pub mod repeated;
pub mod sensitivity;
pub mod shard;
mod summary;
pub mod sweep;

use serde::{Deserialize, Serialize};

pub use crate::metrics::{mean_ci, mean_ci_nonnegative, t95};
use crate::scenario::{self, ScenarioError, Spec};
pub use summary::{RunSummary, SessionClassRun, SessionRun, TieringRun};

/// One run a study needs: a label for the table and the full scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    pub label: String,
    pub spec: Spec,
}

/// Run one job: validate its scenario and simulate it. The only place a study touches the engine.
pub fn run_job(job: &Job) -> Result<RunSummary, ScenarioError> {
    let sc = scenario::validate(&job.spec).map_err(|e| prefixed(e, &job.label))?;
    Ok(RunSummary::from_report(&job.label, &crate::simulate(&sc)))
}

/// Run one job if its scenario fits `budget`: validated once, for the check
/// and the run both; `progress(done, expected)` hears how far the run's requests are (a study of one long run
/// shows it).
pub fn run_job_within(
    job: &Job,
    budget: &scenario::Budget,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<RunSummary, ScenarioError> {
    let sc = scenario::validate(&job.spec).map_err(|e| prefixed(e, &job.label))?;
    sc.check_budget(budget, 1)?;
    let report = crate::simulate_with_progress(&sc, &mut |p| {
        progress(p.done, p.expected);
        true
    })
    .expect("a run that is never cancelled cannot fail");
    Ok(RunSummary::from_report(&job.label, &report))
}

/// A job's scenario error, naming the job.
fn prefixed(e: ScenarioError, label: &str) -> ScenarioError {
    refused_in(e, label, |_| None)
}

/// A refusal of the scenario a study option makes, said at the option (`what`): the option is what the user
/// typed, and the scenario field it set is named in the message.
pub(crate) fn at_option(e: ScenarioError, what: &str) -> ScenarioError {
    refused_in(e, "", |_| Some(what.to_string()))
}

/// A refusal of a study's run (`label`), each field said where the user mends it: at the option that set it
/// (`option` maps a scenario path to the option the user gave, naming the field it set), or else in the run.
pub(crate) fn refused_in(e: ScenarioError, label: &str, option: impl Fn(&str) -> Option<String>) -> ScenarioError {
    let errors = e
        .errors
        .into_iter()
        .map(|f| match option(&f.path) {
            Some(at) => scenario::FieldError { message: format!("it sets {}: {}", f.path, f.message), path: at },
            None => scenario::FieldError { message: format!("{} (in the study's run \"{label}\")", f.message), ..f },
        })
        .collect();
    ScenarioError { errors }
}

/// A study in progress.
pub trait Study {
    /// The next batch of independent runs; empty when the study is finished.
    fn next(&mut self) -> Vec<Job>;
    /// The results of the last batch, in its order.
    fn feed(&mut self, results: Vec<RunSummary>);
    /// Runs so far and the best estimate of all runs, for progress.
    fn progress(&self) -> (usize, usize);
    /// The finished study.
    fn report(&self) -> StudyReport;
    /// The lane of each job of the batch `next` just gave: a lane's later jobs depend only on its own results,
    /// and once a batch has none of a lane's jobs the lane is finished — so shards may split the lanes
    /// ([`shard`]). Default: every job its own lane (a study of one batch).
    fn lanes(&self, jobs: &[Job]) -> Vec<u64> {
        (0..jobs.len() as u64).collect()
    }
}

/// The runs of a study that knows them all up front (every study but the capacity planner).
pub struct OneBatch {
    jobs: Vec<Job>,
    results: Vec<RunSummary>,
    handed_out: bool,
}

impl OneBatch {
    pub fn new(jobs: Vec<Job>) -> Self {
        OneBatch { jobs, results: Vec::new(), handed_out: false }
    }
}

/// A study of one batch of runs: it only says how to read their results.
pub trait OneBatchStudy {
    fn batch(&self) -> &OneBatch;
    fn batch_mut(&mut self) -> &mut OneBatch;
    /// The report from the runs' summaries, in job order.
    fn build_report(&self, results: &[RunSummary]) -> StudyReport;
}

impl<T: OneBatchStudy> Study for T {
    fn next(&mut self) -> Vec<Job> {
        let b = self.batch_mut();
        if std::mem::replace(&mut b.handed_out, true) { Vec::new() } else { b.jobs.clone() }
    }
    fn feed(&mut self, results: Vec<RunSummary>) {
        self.batch_mut().results = results;
    }
    fn progress(&self) -> (usize, usize) {
        (self.batch().results.len(), self.batch().jobs.len())
    }
    fn report(&self) -> StudyReport {
        self.build_report(&self.batch().results)
    }
}

/// How a column's numbers read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    Text,
    Int,
    /// A number with its unit.
    Num,
    /// Seconds, shown in ms or s.
    Seconds,
    /// A fraction, shown as a percentage.
    Percent,
    Bool,
    /// A column of figures in mixed units: as `Num`, but a whole number (a count) shows as the integer.
    Figure,
    /// A value the study set (a threshold, a decay, a budget): as written, `0.25`, `0.5`, `1`.
    Setting,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Column {
    pub label: String,
    pub unit: String,
    pub format: Format,
    /// A column the answer is read from (attainment, P(met), status, versus the best): a table wider than
    /// the page keeps it in view. Absent when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub decisive: bool,
}

/// A table column declared whole: its header, unit and format beside how a row's cell is read, so the header
/// and the cells cannot drift apart.
pub struct ColumnDef<R> {
    pub label: &'static str,
    pub unit: &'static str,
    pub format: Format,
    pub cell: fn(&R) -> Cell,
    /// See [`Column::decisive`]; set by declaring it with [`decisive`] instead of [`column`].
    pub decisive: bool,
}

impl<R> ColumnDef<R> {
    fn column(&self) -> Column {
        Column { label: self.label.into(), unit: self.unit.into(), format: self.format, decisive: self.decisive }
    }
}

/// "p95 TTFT ≤ 1000 ms", "p99 E2E of batch ≤ 60.0 s": a percentile objective as the studies' answers, notes and
/// headers write it.
pub fn objective_words(o: &crate::scenario::PercentileObjectiveSpec) -> String {
    let of = o.class.as_ref().map(|c| format!(" of {c}")).unwrap_or_default();
    format!("p{} {}{of} ≤ {}", o.percentile, o.metric.label(), crate::metrics::secs(o.max_ms / 1e3))
}

/// The mean of `f` over runs (0 for none).
fn mean_of(runs: &[RunSummary], f: impl Fn(&RunSummary) -> f64) -> f64 {
    runs.iter().map(f).sum::<f64>() / runs.len().max(1) as f64
}

/// `ColumnDef { label, unit, format, cell }`, in one line (not decisive).
pub const fn column<R>(label: &'static str, unit: &'static str, format: Format, cell: fn(&R) -> Cell) -> ColumnDef<R> {
    ColumnDef { label, unit, format, cell, decisive: false }
}

/// [`column`], marked as one the answer is read from ([`Column::decisive`]).
pub const fn decisive<R>(
    label: &'static str,
    unit: &'static str,
    format: Format,
    cell: fn(&R) -> Cell,
) -> ColumnDef<R> {
    ColumnDef { decisive: true, ..column(label, unit, format, cell) }
}

/// A report's header row and cells from declared columns.
pub fn table<R>(defs: &[ColumnDef<R>], rows: &[R]) -> (Vec<Column>, Vec<Vec<Cell>>) {
    let columns = defs.iter().map(ColumnDef::column).collect();
    (columns, rows.iter().map(|r| defs.iter().map(|d| (d.cell)(r)).collect()).collect())
}

/// A column whose header is known only at run time (one per percentile objective of the scenario), declared
/// whole like a `ColumnDef`.
pub struct DynColumn<'a, R> {
    pub label: String,
    pub unit: &'static str,
    pub format: Format,
    pub cell: Box<dyn Fn(&R) -> Cell + 'a>,
}

/// `table`, then the columns made at run time.
pub fn table_with<R>(defs: &[ColumnDef<R>], more: &[DynColumn<R>], rows: &[R]) -> (Vec<Column>, Vec<Vec<Cell>>) {
    let (mut columns, mut cells) = table(defs, rows);
    columns.extend(more.iter().map(|d| Column {
        label: d.label.clone(),
        unit: d.unit.into(),
        format: d.format,
        decisive: false,
    }));
    for (row, r) in cells.iter_mut().zip(rows) {
        row.extend(more.iter().map(|d| (d.cell)(r)));
    }
    (columns, cells)
}

/// One table cell. Serialised plainly: a number, a string, a boolean or null.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Cell {
    Bool(bool),
    Num(f64),
    Text(String),
    /// A figure over repetitions: its mean and 95 % interval (`repetitions`).
    Interval {
        mean: f64,
        lo: f64,
        hi: f64,
    },
    Empty,
}

/// A value the study set (a threshold, a decay, a budget) as labels, answers and tables write it: the shortest
/// form that reads back as the value, an exponent where the decimal would be long (1e-300, not 300 zeros).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Set(pub f64);

impl std::fmt::Display for Set {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let x = self.0;
        if x == 0.0 || (1e-4..1e15).contains(&x.abs()) { write!(f, "{x}") } else { write!(f, "{x:e}") }
    }
}

/// A cell as the lab and the Markdown show it.
pub fn show(c: &Cell, f: Format) -> String {
    match (c, f) {
        (Cell::Empty, _) => "–".into(),
        (Cell::Text(t), _) => t.clone(),
        (Cell::Bool(b), _) => if *b { "yes" } else { "no" }.into(),
        // The mean ± the interval's half-width, both as the column shows a number.
        (Cell::Interval { mean, lo, hi }, f) => {
            format!("{} ± {}", show(&Cell::Num(*mean), f), show(&Cell::Num((hi - lo) / 2.0), f))
        }
        (Cell::Num(x), Format::Percent) => format!("{:.1} %", x * 100.0),
        // The reports' rule: ms below 10 s, s above; the cell carries its unit.
        (Cell::Num(x), Format::Seconds) => crate::metrics::secs(*x),
        (Cell::Num(x), Format::Int) => format!("{x:.0}"),
        (Cell::Num(x), Format::Figure) if x.fract() == 0.0 && x.abs() < 1e15 => format!("{x:.0}"),
        (Cell::Num(x), Format::Setting) => Set(*x).to_string(),
        (Cell::Num(x), _) => {
            if x.abs() >= 100.0 {
                format!("{x:.0}")
            } else if x.abs() >= 1.0 {
                format!("{x:.2}")
            } else {
                format!("{x:.3}")
            }
        }
    }
}

impl From<f64> for Cell {
    fn from(x: f64) -> Self {
        Cell::Num(x)
    }
}
impl From<u64> for Cell {
    fn from(x: u64) -> Self {
        Cell::Num(x as f64)
    }
}
impl From<u32> for Cell {
    fn from(x: u32) -> Self {
        Cell::Num(x as f64)
    }
}
impl From<&str> for Cell {
    fn from(x: &str) -> Self {
        Cell::Text(x.into())
    }
}
impl From<String> for Cell {
    fn from(x: String) -> Self {
        Cell::Text(x)
    }
}
impl From<bool> for Cell {
    fn from(x: bool) -> Self {
        Cell::Bool(x)
    }
}
impl<T: Into<Cell>> From<Option<T>> for Cell {
    fn from(x: Option<T>) -> Self {
        x.map_or(Cell::Empty, Into::into)
    }
}

/// A chart of a study: bars (one per category), points, or lines with an optional min–max band.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Chart {
    /// `bars`, `scatter` or `lines`.
    pub kind: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// Bars: the category of each point (x is its index).
    pub categories: Vec<String>,
    pub series: Vec<ChartSeries>,
    /// A horizontal target line (e.g. the SLO attainment target).
    pub target: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChartSeries {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Per point (low, high), when the series has a band.
    pub band: Vec<(f64, f64)>,
    /// Per point label (scatter: the candidate's name).
    pub labels: Vec<String>,
    /// Joined by a line (a frontier, a curve) rather than drawn as separate points or bars.
    pub line: bool,
}

/// A finished study: everything the table, the chart and the exports show.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StudyReport {
    pub inferscale_version: String,
    pub study: String,
    pub scenario: String,
    pub seed: u64,
    /// The question the study answers, in a sentence.
    pub question: String,
    /// The answer, in a sentence, with its number.
    pub answer: String,
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<Cell>>,
    /// Index of the row the answer points at (highlighted).
    pub best_row: Option<usize>,
    /// Rows that are bounds, not contenders (a clairvoyant or hindsight oracle): never the best row, never
    /// called close to it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bounds: Vec<usize>,
    pub charts: Vec<Chart>,
    pub notes: Vec<String>,
    /// The runs behind the table, in job order.
    pub runs: Vec<RunSummary>,
    /// Further tables after the first (the same runs from another side).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tables: Vec<Table>,
}

/// A table after a report's first: its title, columns and rows (cells as the first table's).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Table {
    pub title: String,
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<Cell>>,
}

/// Why a study stopped early.
#[derive(Debug, PartialEq)]
pub enum StudyError {
    /// A run's scenario was refused (the error names the run).
    Invalid(ScenarioError),
    Cancelled,
}

/// Runs a batch of jobs, returning their summaries in job order.
pub type BatchRunner<'a> = dyn FnMut(&[Job]) -> Result<Vec<RunSummary>, StudyError> + 'a;

/// Drive a study to the end with `run_batch` running each batch (in any order or parallelism, returning
/// results in job order). `progress(done, total)` may cancel by returning false.
pub fn drive(
    study: &mut dyn Study,
    run_batch: &mut BatchRunner<'_>,
    progress: &mut dyn FnMut(usize, usize) -> bool,
) -> Result<StudyReport, StudyError> {
    loop {
        let jobs = study.next();
        if jobs.is_empty() {
            return Ok(study.report());
        }
        let (done, total) = study.progress();
        if !progress(done, total) {
            return Err(StudyError::Cancelled);
        }
        let results = run_batch(&jobs)?;
        study.feed(results);
    }
}

/// Run a batch on up to `threads` threads; results in job order whatever the thread count.
#[cfg(not(target_arch = "wasm32"))]
pub fn run_parallel(jobs: &[Job], threads: usize) -> Result<Vec<RunSummary>, StudyError> {
    let threads = threads.clamp(1, jobs.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut slots: Vec<Option<Result<RunSummary, ScenarioError>>> = vec![None; jobs.len()];
    let results = std::sync::Mutex::new(&mut slots);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= jobs.len() {
                        return;
                    }
                    let r = run_job(&jobs[i]);
                    results.lock().expect("no thread panics holding the lock")[i] = Some(r);
                }
            });
        }
    });
    slots.into_iter().map(|r| r.expect("every job ran").map_err(StudyError::Invalid)).collect()
}

/// Run a study natively on `threads` threads.
#[cfg(not(target_arch = "wasm32"))]
pub fn run_native(
    study: &mut dyn Study,
    threads: usize,
    progress: &mut dyn FnMut(usize, usize) -> bool,
) -> Result<StudyReport, StudyError> {
    drive(study, &mut |jobs| run_parallel(jobs, threads), progress)
}

/// A study, written once in its file: what it is called and answers ([`About`]), its options (a serde struct
/// with its defaults), and how it is built from a scenario. The registry below lists it once.
pub trait StudyDef: Study + Sized + 'static {
    const ABOUT: About;
    type Options: serde::de::DeserializeOwned + Serialize + Default + option::Described;
    /// The study on `spec`; its options' errors are at `study.NAME.option` ([`StudyDef::at`]).
    fn new(spec: &Spec, options: &Self::Options) -> Result<Self, ScenarioError>;
    /// `study.NAME`, where its errors are; with `scenario::at!`, an option's path from the option itself.
    fn at() -> String {
        format!("study.{}", Self::ABOUT.name)
    }
}

/// What a study is called and what it answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct About {
    /// The name the CLI takes and reports carry.
    pub name: &'static str,
    /// The lab's panel title.
    pub title: &'static str,
    /// The question it answers, in one line: the CLI's help, the lab panel's lead and (unless the run makes it
    /// more precise) the report's question.
    pub question: &'static str,
    /// How it answers: the lab panel's sentence after the question.
    pub how: &'static str,
    /// Its group in the lab's sidebar.
    pub group: Group,
    /// The column its best row is chosen by, and which way is better: what `repetitions` ranks the rows by.
    pub rank: Rank,
    /// The option by which the study repeats itself (`repetitions`, or research-summary's `seeds`); `None`: the
    /// `repetitions` option runs the whole study R times on seeds apart (`repeated`).
    pub repeats_by: Option<&'static str>,
}

/// How a study chooses its best row, by a column of its table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rank {
    /// The least in this column is best (a latency, memory held, a rank).
    Least(&'static str),
    /// The most in this column is best (goodput, a share predicted right).
    Most(&'static str),
    /// The row the study points at is not chosen by one figure (a nominal row, a bracket), or it has none.
    Unranked,
}

/// What a study is for, as the lab's sidebar groups them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// Choose a configuration or a size.
    Decide,
    /// Show that a difference is real.
    Prove,
    /// Agent sessions.
    Agents,
}

impl Group {
    pub fn name(self) -> &'static str {
        match self {
            Group::Decide => "Decide",
            Group::Prove => "Prove",
            Group::Agents => "Agents",
        }
    }
}

/// The registry: one line per study, `Variant => its StudyDef type` (a sweep: `sweep::Sweep<its Knob>`), in the order the CLI's help and the lab's
/// sidebar list them. It makes [`Kind`], `Kind::ALL` (which cannot miss a variant) and every match over them;
/// the CLI's study names and help, the lab's sidebar and panels, and every report's `study` field come from
/// here. `tests/it/architecture.rs` fails when a `StudyDef` is not listed.
macro_rules! registry {
    ($($kind:ident => $ty:ty),* $(,)?) => {
        /// The studies (see [`registry!`]).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Kind { $($kind),* }

        impl Kind {
            /// Every study, in the order the CLI's help and the lab's sidebar list them.
            pub const ALL: &'static [Kind] = &[$(Kind::$kind),*];

            pub const fn about(self) -> About {
                match self { $(Kind::$kind => <$ty as StudyDef>::ABOUT),* }
            }

            /// The study on `spec` with its options (JSON object; `{}` for the defaults). Unknown options are
            /// refused, naming the field.
            /// With `repetitions` R ≥ 2 (a study that does not repeat by itself), R of it on seeds apart
            /// (`repeated`).
            pub fn build(self, spec: &Spec, params: &serde_json::Value) -> Result<Box<dyn Study>, ScenarioError> {
                repeated::build(self, spec, params, |spec, params| match self {
                    $(Kind::$kind => boxed::<$ty>(spec, params)),*
                })
            }

            /// The options a study takes when given none, as JSON (options without a default are absent).
            pub fn default_options(self) -> serde_json::Value {
                match self { $(Kind::$kind => defaults::<$ty>()),* }
            }

            /// The study's options as its panel shows them (`option::described!`), then `repetitions` when the
            /// study does not repeat by itself.
            pub fn options(self) -> Vec<option::OptionDef> {
                let mut out = match self {
                    $(Kind::$kind => <<$ty as StudyDef>::Options as option::Described>::described()),*
                };
                if self.about().repeats_by.is_none() {
                    out.push(option::REPETITIONS);
                }
                out
            }

            /// Every option the study's options struct takes, by name.
            pub fn option_names(self) -> Vec<String> {
                match self { $(Kind::$kind => option_names::<<$ty as StudyDef>::Options>()),* }
            }
        }
    };
}

registry! {
    Ranking => ranking::RankingStudy,
    Capacity => capacity::CapacityStudy,
    Fleet => fleet::FleetStudy,
    Pd => pd::PdStudy,
    Explorer => explorer::ExplorerStudy,
    Paired => paired::PairedStudy,
    Sensitivity => sensitivity::SensitivityStudy,
    ResearchSummary => agents::ResearchStudy,
    AgentSessions => agents::SessionsStudy,
    AgentPolicies => agents::AgentPoliciesStudy,
    TtlSweep => sweep::Sweep<agents::Ttl>,
    TieredKv => agents::TieredKvStudy,
    AffinitySlack => sweep::Sweep<agents::Slack>,
    AdaptiveTiering => agents::AdaptiveTieringStudy,
    ExecLearning => agents::ExecLearningStudy,
    PrefetchThreshold => sweep::Sweep<agents::Threshold>,
    TransitionDecay => sweep::Sweep<agents::Decay>,
    Forecast => agents::ForecastStudy,
    ForecastHorizon => sweep::Sweep<agents::Horizon>,
    PrefixBudget => sweep::Sweep<agents::Budget>,
}

impl Kind {
    pub fn name(self) -> &'static str {
        self.about().name
    }

    /// The study called `name`; the error lists the names.
    pub fn from_name(name: &str) -> Result<Kind, ScenarioError> {
        Kind::ALL.iter().copied().find(|k| k.name() == name).ok_or_else(|| {
            let names: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
            ScenarioError::one("study", format!("unknown study `{name}` (one of: {})", names.join(", ")))
        })
    }
}

fn boxed<T: StudyDef>(spec: &Spec, params: &serde_json::Value) -> Result<Box<dyn Study>, ScenarioError> {
    Ok(Box::new(T::new(spec, &options(T::ABOUT.name, params)?)?))
}

fn defaults<T: StudyDef>() -> serde_json::Value {
    serde_json::to_value(T::Options::default()).expect("options serialise")
}

/// The options struct's fields by name, from its refusal of an unknown option.
fn option_names<T: serde::de::DeserializeOwned>() -> Vec<String> {
    scenario::names_in_refusal::<T>(serde_json::json!({ "\u{1}": 0 }))
}

/// A study's options from JSON, errors under `study.NAME` in the words the scenario's use ("expected a number,
/// got the text \"x\"", "did you mean `seeds`?").
fn options<T: serde::de::DeserializeOwned>(name: &str, v: &serde_json::Value) -> Result<T, ScenarioError> {
    // serde reads a struct from a list by position too ([false, 7, 3] ran): options are named.
    if !v.is_object() {
        let got = scenario::json_kind(v);
        return Err(ScenarioError::one(
            format!("study.{name}"),
            format!(
                "options are a JSON object of named options ({{\"option\": value, …}}; {{}} for the defaults), got {got}"
            ),
        ));
    }
    serde_path_to_error::deserialize(v.clone()).map_err(|e| {
        let path = match e.path().to_string() {
            p if p == "." || p.is_empty() => format!("study.{name}"),
            p => format!("study.{name}.{p}"),
        };
        ScenarioError::one(path, crate::scenario::with_suggestion(&e.inner().to_string()))
    })
}

/// The study called `name` on `spec` (see [`Kind::build`]).
pub fn build(name: &str, spec: &Spec, params: &serde_json::Value) -> Result<Box<dyn Study>, ScenarioError> {
    Kind::from_name(name)?.build(spec, params)
}

/// The header every study report starts with.
fn report_head(study: About, spec: &Spec, question: String) -> StudyReport {
    StudyReport {
        inferscale_version: env!("CARGO_PKG_VERSION").to_string(),
        study: study.name.to_string(),
        scenario: spec.name.clone(),
        seed: spec.seed,
        question,
        answer: String::new(),
        columns: Vec::new(),
        rows: Vec::new(),
        best_row: None,
        bounds: Vec::new(),
        charts: Vec::new(),
        notes: Vec::new(),
        runs: Vec::new(),
        tables: Vec::new(),
    }
}

/// The deepest JSON pointer a study may set (the deepest scenario field is 6 levels down).
const MAX_POINTER_DEPTH: usize = 12;

/// `spec` with the JSON values of `patch` (JSON pointer → value) written in. Errors name the pointer.
pub fn patched(
    spec: &Spec,
    patch: &serde_json::Map<String, serde_json::Value>,
    what: &str,
) -> Result<Spec, ScenarioError> {
    // A trace's text (megabytes, and a study may derive a thousand specs) is shared by the derived spec, not
    // copied through JSON — unless the patch replaces it.
    let mut bare = spec.clone();
    let trace = match &mut bare.workload.arrival {
        scenario::ArrivalSpec::Trace { data, .. } => data.take(),
        _ => None,
    };
    let session_trace = bare.workload.sessions.as_mut().and_then(|s| s.trace.as_mut()).and_then(|t| t.data.take());
    let mut v = serde_json::to_value(&bare).expect("a spec serialises");
    for (ptr, x) in patch {
        if !ptr.starts_with('/') {
            return Err(ScenarioError::one(
                what,
                format!("`{ptr}` is not a JSON pointer (e.g. \"/engine/max_num_seqs\")"),
            ));
        }
        // No scenario field lies deeper than a few levels; a pointer thousands deep would build (and then
        // drop, recursively) a value that overflows the stack.
        let depth = ptr.matches('/').count();
        if depth > MAX_POINTER_DEPTH {
            let shown: String = ptr.chars().take(40).collect();
            return Err(ScenarioError::one(
                what,
                format!(
                    "`{shown}…` is {depth} levels deep; a scenario field is at most {MAX_POINTER_DEPTH} (e.g. \"/workload/classes/0/slo/ttft_ms\")"
                ),
            ));
        }
        set_pointer(&mut v, ptr, x.clone());
    }
    let text = v.to_string();
    let mut out = scenario::parse(&text)
        .map_err(|e| ScenarioError::one(what, format!("the change makes an invalid scenario: {e}")))?;
    if let scenario::ArrivalSpec::Trace { data: data @ None, .. } = &mut out.workload.arrival {
        *data = trace;
    }
    if let Some(t) = out.workload.sessions.as_mut().and_then(|s| s.trace.as_mut())
        && t.data.is_none()
    {
        t.data = session_trace;
    }
    Ok(out)
}

/// Remove the field at a JSON pointer (an optional field left empty); nothing when it is not there.
pub fn remove_pointer(v: &mut serde_json::Value, ptr: &str) {
    let (parent, key) = ptr.rsplit_once('/').unwrap_or(("", ptr));
    if let Some(o) = v.pointer_mut(parent).and_then(serde_json::Value::as_object_mut) {
        o.remove(key);
    }
}

/// Set the value at a JSON pointer, creating objects on the way; array elements are indexed, never replaced.
/// A missing list on the way is a scenario list left at its default — one entry with every field at its
/// default, which is what `{}` means — so that is what it becomes. (The lab's editors use this too.)
pub fn set_pointer(v: &mut serde_json::Value, ptr: &str, new: serde_json::Value) {
    use serde_json::{Value, json};
    let mut cur = v;
    let parts: Vec<&str> = ptr.trim_start_matches('/').split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        if let (Value::Array(a), Ok(idx)) = (&*cur, part.parse::<usize>())
            && idx < a.len()
        {
            let Value::Array(a) = cur else { unreachable!() };
            if last {
                a[idx] = new;
                return;
            }
            cur = &mut a[idx];
            continue;
        }
        if !cur.is_object() {
            *cur = json!({});
        }
        let o = cur.as_object_mut().expect("made an object");
        if last {
            o.insert(part.to_string(), new);
            return;
        }
        let next_is_index = parts[i + 1].parse::<usize>().is_ok();
        cur = o.entry(part.to_string()).or_insert_with(|| if next_is_index { json!([{}]) } else { json!({}) });
    }
}

/// The treatment scenario of a paired or sensitivity study: `spec` with `treatment` written in, valid.
fn treated(
    spec: &Spec,
    treatment: &serde_json::Map<String, serde_json::Value>,
    study: &str,
) -> Result<Spec, ScenarioError> {
    let what = format!("study.{study}.treatment");
    if treatment.is_empty() {
        return Err(ScenarioError::one(
            what,
            "the treatment changes nothing: give at least one field, e.g. {\"/scheduler\": {\"kind\": \"sjf\"}}",
        ));
    }
    let s = patched(spec, treatment, &what)?;
    scenario::validate(&s).map_err(|e| at_option(e, &what))?;
    Ok(s)
}

/// `spec` on another seed.
pub fn reseeded(spec: &Spec, seed: u64) -> Spec {
    Spec { seed, ..spec.clone() }
}

/// One data-driven sentence for a row: the run's verdict, first clause, with its numbers.
pub fn brief(r: &RunSummary) -> String {
    let first = r.diagnosis_verdict.split(". ").next().unwrap_or("").trim_end_matches('.');
    let lost = if r.rejected + r.unfinished > 0 {
        format!("; {} rejected, {} unfinished", r.rejected, r.unfinished)
    } else {
        String::new()
    };
    format!("{}: {first}{lost}", r.diagnosis_kind)
}

/// The non-dominated points of (maximise `a`, minimise `b`): a point is dominated when another is at least as
/// good on both and better on one. Equal points do not dominate each other, so duplicates are all kept.
pub fn pareto(points: &[(f64, f64)]) -> Vec<bool> {
    points.iter().map(|&(a, b)| !points.iter().any(|&(a2, b2)| a2 >= a && b2 <= b && (a2 > a || b2 < b))).collect()
}

/// The Wilson score 95 % interval of a share `p` of `n` trials (it stays inside [0, 1], and is not a point at
/// 0 or n of n, as the normal one is).
pub fn wilson95(p: f64, n: usize) -> Option<(f64, f64)> {
    if n == 0 {
        return None;
    }
    let (z, n) = (1.959_964, n as f64);
    let d = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / d;
    let half = z * libm::sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n)) / d;
    Some(((centre - half).max(0.0), (centre + half).min(1.0)))
}

/// The expanded percentile-bootstrap 95 % interval of the mean of `x` (Hesterberg, "What teachers should
/// know about the bootstrap", 2015): the percentile interval at the level whose normal quantile is
/// √(n/(n−1)) · t(0.975, n−1). The plain percentile interval is too narrow for a few values — at n = 10 it
/// covers a normal mean 90 % of the time, the expanded one 95 % (tested). No bootstrap interval reaches past
/// the values' range, so below about 8 values none can hold 95 %.
pub fn bootstrap_ci_expanded(x: &[f64], b: usize, seed: u64) -> (f64, f64) {
    let n = x.len();
    if n < 2 {
        return bootstrap_ci(x, b, 0.95, seed);
    }
    let z = libm::sqrt(n as f64 / (n - 1) as f64) * t95(n - 1);
    bootstrap_ci(x, b, 1.0 - libm::erfc(z / std::f64::consts::SQRT_2), seed)
}

/// Percentile-bootstrap confidence interval of the mean of `x` at level `level` (e.g. 0.95), from `b`
/// resamples drawn from the seeded study stream. Deterministic for a seed.
pub fn bootstrap_ci(x: &[f64], b: usize, level: f64, seed: u64) -> (f64, f64) {
    let n = x.len();
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let mut rng = crate::rng::stream(seed, crate::rng::Stream::Study, 1);
    let mut means: Vec<f64> =
        (0..b.max(1)).map(|_| (0..n).map(|_| x[rng.below(n as u64) as usize]).sum::<f64>() / n as f64).collect();
    means.sort_by(f64::total_cmp);
    let alpha = (1.0 - level) / 2.0;
    (crate::metrics::percentile(&means, alpha * 100.0), crate::metrics::percentile(&means, (1.0 - alpha) * 100.0))
}
