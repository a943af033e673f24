//! `repetitions` on every study: R copies of a study on seeds apart, run together, their tables merged into
//! one whose figures carry their 95 % interval. A study that repeats by itself (its options take
//! `repetitions`: ranking, capacity, paired) keeps its own.

use serde_json::Value;

use super::{Cell, Column, Format, Job, Kind, RunSummary, Study, StudyReport, reseeded};
use crate::scenario::{ScenarioError, Spec};

/// The most repetitions a study takes.
pub const MOST: u64 = 20;
/// Repetition k runs on the scenario's seed + k × this, clear of the seeds a study draws itself (seed + k).
pub const SEED_STRIDE: u64 = 1_000_000;

/// The study `kind` on `spec`; with `repetitions` R ≥ 2 in `params` (and a study without its own), R copies
/// of it made by `one`.
pub(super) fn build(
    kind: Kind,
    spec: &Spec,
    params: &Value,
    one: impl Fn(&Spec, &Value) -> Result<Box<dyn Study>, ScenarioError>,
) -> Result<Box<dyn Study>, ScenarioError> {
    let own = kind.option_names().iter().any(|o| o == "repetitions");
    let Some(r) = params.get("repetitions").filter(|_| !own) else { return one(spec, params) };
    let r = match r.as_u64() {
        Some(r @ 1..=MOST) => r,
        _ => {
            return Err(ScenarioError::one(
                format!("study.{}.repetitions", kind.name()),
                format!(
                    "must be an integer from 1 to {MOST} (got {})",
                    if r.is_number() { r.to_string() } else { crate::scenario::json_kind(r).to_string() }
                ),
            ));
        }
    };
    let mut rest = params.clone();
    rest.as_object_mut().expect("an object: it has a key").remove("repetitions");
    if r == 1 {
        return one(spec, &rest);
    }
    let studies = (0..r)
        .map(|k| one(&reseeded(spec, spec.seed.wrapping_add(k.wrapping_mul(SEED_STRIDE))), &rest))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Box::new(Repeated { studies, handed: Vec::new() }))
}

/// R copies of a study, driven in step: each batch holds every copy's next jobs.
struct Repeated {
    studies: Vec<Box<dyn Study>>,
    /// How many jobs of the last batch were each copy's.
    handed: Vec<usize>,
}

impl Study for Repeated {
    fn next(&mut self) -> Vec<Job> {
        let mut jobs = Vec::new();
        self.handed.clear();
        // A run keeps its label (a table's rows are named by them); the seed tells the repetitions apart.
        for st in &mut self.studies {
            let mine = st.next();
            self.handed.push(mine.len());
            jobs.extend(mine);
        }
        jobs
    }

    fn feed(&mut self, results: Vec<RunSummary>) {
        let mut rest = results.into_iter();
        for (st, &n) in self.studies.iter_mut().zip(&self.handed) {
            st.feed(rest.by_ref().take(n).collect());
        }
    }

    fn progress(&self) -> (usize, usize) {
        self.studies.iter().map(|s| s.progress()).fold((0, 0), |(a, b), (x, y)| (a + x, b + y))
    }

    fn report(&self) -> StudyReport {
        merge(self.studies.iter().map(|s| s.report()).collect())
    }
}

/// One report of R: the first's, each figure the mean of the R with its 95 % interval (Student t); the best
/// row and its ties as [`best_row`] and [`verdict`] find them.
pub fn merge(reports: Vec<StudyReport>) -> StudyReport {
    let mut out = reports[0].clone();
    let r = reports.len();
    let shaped = |rows: &[Vec<Cell>], other: &[Vec<Cell>]| {
        rows.len() == other.len() && rows.iter().zip(other).all(|(a, b)| a.len() == b.len())
    };
    let same = reports.iter().all(|x| x.columns == out.columns && shaped(&x.rows, &out.rows));
    if same {
        out.rows = cells(&out.columns, &reports.iter().map(|x| &x.rows[..]).collect::<Vec<_>>());
        for (t, table) in out.tables.iter_mut().enumerate() {
            let all: Option<Vec<&[Vec<Cell>]>> = reports.iter().map(|x| x.tables.get(t).map(|t| &t.rows[..])).collect();
            if let Some(all) = all.filter(|a| a.iter().all(|rows| shaped(rows, &table.rows))) {
                table.rows = cells(&table.columns, &all);
            }
        }
        out.best_row = best_row(&out, &reports);
    }
    let first = if out.answer.is_empty() { String::new() } else { format!(" In the first repetition: {}", out.answer) };
    out.answer = format!("{}{first}", verdict(&out, &reports, same));
    out.notes.push(format!(
        "Repetitions: {r}, on seeds {} + k × {SEED_STRIDE} (k < {r}), each the whole study. A figure is the mean of the repetitions ± the half-width of its 95 % interval (Student t); the CSV gives the interval's ends. The best row: of the rows a repetition called best, the least mean of the first time column (the latency the study ranks by); rows whose interval of that column overlaps its are ties. Text, charts and the diagnosis are the first repetition's; the runs are all of them, repetition by repetition.",
        out.seed
    ));
    out.runs = reports.into_iter().flat_map(|x| x.runs).collect();
    out
}

/// The cells of R tables of one shape: figures → their mean and interval, anything else (a value the study
/// set, a text) the first's.
fn cells(columns: &[Column], tables: &[&[Vec<Cell>]]) -> Vec<Vec<Cell>> {
    let figure = |j: usize| columns.get(j).is_some_and(|c| c.format != Format::Setting);
    (0..tables[0].len())
        .map(|i| {
            (0..tables[0][i].len())
                .map(|j| {
                    let xs: Option<Vec<f64>> = (tables.iter())
                        .map(|t| match t[i][j] {
                            Cell::Num(x) if x.is_finite() => Some(x),
                            _ => None,
                        })
                        .collect();
                    match xs.filter(|_| figure(j)) {
                        Some(xs) => {
                            let (mean, lo, hi) = super::mean_ci(&xs);
                            Cell::Interval { mean, lo, hi }
                        }
                        None => tables[0][i][j].clone(),
                    }
                })
                .collect()
        })
        .collect()
}

/// The first time column, the latency the studies rank by.
fn key(out: &StudyReport) -> Option<usize> {
    out.columns.iter().position(|c| c.format == Format::Seconds)
}

/// Of the rows some repetition called best (a study leaves its bounds out), the one of the least mean in the
/// key column; without one, the one best most often (ties: the first).
fn best_row(out: &StudyReport, reports: &[StudyReport]) -> Option<usize> {
    let picked: Vec<usize> = reports.iter().filter_map(|x| x.best_row).collect();
    let count = |v: usize| picked.iter().filter(|x| **x == v).count();
    let mean = |i: usize| match key(out).and_then(|j| out.rows[i].get(j)) {
        Some(Cell::Interval { mean, .. }) => *mean,
        _ => f64::INFINITY,
    };
    let better = |a: usize, b: usize| (mean(b), std::cmp::Reverse(count(b))) < (mean(a), std::cmp::Reverse(count(a)));
    picked.iter().copied().reduce(|a, b| if better(a, b) { b } else { a })
}

/// What the repetitions say of the best row: how often it was best, and which rows no interval tells apart.
fn verdict(out: &StudyReport, reports: &[StudyReport], same: bool) -> String {
    let r = reports.len();
    if !same {
        return format!(
            "Over {r} repetitions the table's rows differ (the study searches), so this is the first repetition's table."
        );
    }
    let Some(b) = out.best_row else { return format!("Over {r} repetitions.") };
    let times = reports.iter().filter(|x| x.best_row == Some(b)).count();
    let name = |i: usize| match (out.rows[i].first(), out.columns.first()) {
        (Some(Cell::Text(t)), _) => format!("“{t}”"),
        (Some(Cell::Num(x)), Some(col)) => format!("{} {x}", col.label),
        _ => format!("row {}", i + 1),
    };
    // A study without a time column is judged by every figure.
    let (what, only) = match key(out) {
        Some(j) => (out.columns[j].label.clone(), Some(j)),
        None => ("every figure".to_string(), None),
    };
    let tied = |i: usize| i != b && overlaps(&out.rows[i], &out.rows[b], only);
    let ties: Vec<String> = (0..out.rows.len()).filter(|&i| tied(i)).map(name).collect();
    let ties = match ties.as_slice() {
        [] => format!("its 95 % interval of {what} overlaps no other row's"),
        t => format!("tied with it (the 95 % intervals of {what} overlap): {}", t.join(", ")),
    };
    format!("Over {r} repetitions, {} is the best row (best in {times} of {r}); {ties}.", name(b))
}

/// Whether two rows' intervals overlap in column `only`, else in every figure both carry (and there is one).
fn overlaps(a: &[Cell], b: &[Cell], only: Option<usize>) -> bool {
    let pairs: Vec<((f64, f64), (f64, f64))> = (a.iter().zip(b).enumerate())
        .filter(|(j, _)| only.is_none_or(|k| k == *j))
        .filter_map(|(_, (x, y))| match (x, y) {
            (Cell::Interval { lo: l1, hi: h1, .. }, Cell::Interval { lo: l2, hi: h2, .. }) => {
                Some(((*l1, *h1), (*l2, *h2)))
            }
            _ => None,
        })
        .collect();
    !pairs.is_empty() && pairs.iter().all(|((l1, h1), (l2, h2))| l1 <= h2 && l2 <= h1)
}
