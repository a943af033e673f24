//! One knob swept over a list of values: a run of the scenario per value, a row per run. A sweep is a `Knob`
//! (its options, how a value changes the scenario, its columns, and what the report concludes); `Sweep<K>` is
//! the study — its jobs, its table and its registration are written once, here. `ttl-sweep` and
//! `affinity-slack` are knobs.

use super::{About, ColumnDef, Job, OneBatch, OneBatchStudy, RunSummary, StudyDef, StudyReport, report_head, table};
use crate::scenario::{self, Errors, ScenarioError, Spec};

/// One row of a sweep: the knob's value, its run, and whether the run is on the knob's frontier.
pub struct SweepRow<'a, V> {
    pub value: V,
    pub run: &'a RunSummary,
    pub on_front: bool,
}

/// A knob a sweep turns.
pub trait Knob: 'static {
    const ABOUT: About;
    type Options: serde::de::DeserializeOwned + serde::Serialize + Default + super::option::Described;
    type Value: Copy;
    /// The values the options list, each within its bound (errors at `at`, the study's path); the scenario
    /// checked for what the knob needs.
    fn values(spec: &Spec, options: &Self::Options, at: &str) -> Result<Vec<Self::Value>, ScenarioError>;
    /// A run's label for `v`.
    fn label(v: Self::Value) -> String;
    /// The scenario with the knob at `v`.
    fn apply(spec: &Spec, v: Self::Value) -> Spec;
    /// Two figures to minimise whose non-dominated runs are the frontier (none: no frontier).
    fn frontier(_: &RunSummary) -> Option<(f64, f64)> {
        None
    }
    fn columns<'a>() -> Vec<ColumnDef<SweepRow<'a, Self::Value>>>;
    /// The best row, answer, charts and notes.
    /// `runs` are the rows' runs, in order.
    fn conclude(base: &Spec, rows: &[SweepRow<'_, Self::Value>], runs: &[RunSummary], report: &mut StudyReport);
}

/// A list's length within 1 … `most` at `at`, then each entry checked.
pub(crate) fn check_list<T>(
    at: &str,
    list: &[T],
    most: u64,
    each: impl Fn(&str, &T, &mut Errors),
) -> Result<(), ScenarioError> {
    let mut e = Errors::default();
    e.int(at, list.len() as u64, 1, most);
    for (i, x) in list.iter().enumerate() {
        each(&format!("{at}[{i}]"), x, &mut e);
    }
    e.finish()
}

/// The study that sweeps `K`.
pub struct Sweep<K: Knob> {
    base: Spec,
    values: Vec<K::Value>,
    batch: OneBatch,
}

impl<K: Knob> StudyDef for Sweep<K> {
    const ABOUT: About = K::ABOUT;
    type Options = K::Options;

    fn new(spec: &Spec, options: &K::Options) -> Result<Self, ScenarioError> {
        let values = K::values(spec, options, &Self::at())?;
        let jobs: Vec<Job> = values.iter().map(|&v| Job { label: K::label(v), spec: K::apply(spec, v) }).collect();
        for j in &jobs {
            scenario::validate(&j.spec).map_err(|e| super::prefixed(e, &j.label))?;
        }
        Ok(Sweep { base: spec.clone(), values, batch: OneBatch::new(jobs) })
    }
}

impl<K: Knob> OneBatchStudy for Sweep<K> {
    fn batch(&self) -> &OneBatch {
        &self.batch
    }
    fn batch_mut(&mut self) -> &mut OneBatch {
        &mut self.batch
    }
    fn build_report(&self, r: &[RunSummary]) -> StudyReport {
        let mut rep = report_head(K::ABOUT, &self.base, K::ABOUT.question.into());
        let figures: Vec<Option<(f64, f64)>> = r.iter().map(K::frontier).collect();
        let front = super::pareto(&figures.iter().map(|f| f.map_or((0.0, 0.0), |(a, b)| (-a, b))).collect::<Vec<_>>());
        let rows: Vec<SweepRow<'_, K::Value>> = (r.iter().zip(&self.values).enumerate())
            .map(|(i, (run, &value))| SweepRow { value, run, on_front: figures[i].is_some() && front[i] })
            .collect();
        (rep.columns, rep.rows) = table(&K::columns(), &rows);
        K::conclude(&self.base, &rows, r, &mut rep);
        rep.runs = r.to_vec();
        rep
    }
}
