//! `repetitions` on every study: R copies of a study on seeds apart, run together, their tables merged into
//! one whose figures carry their 95 % interval. A study that repeats by itself (`About::repeats_by`: ranking,
//! capacity, paired by their `repetitions`, research-summary by its `seeds`) keeps its own.

use serde_json::Value;

use super::{Cell, Column, Format, Job, Kind, Rank, RunSummary, Study, StudyReport, reseeded, show};
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
    let Some(r) = params.get("repetitions") else { return once(kind, spec, params, one) };
    let at = format!("study.{}.repetitions", kind.name());
    match kind.about().repeats_by {
        Some("repetitions") => return one(spec, params),
        // Its rows are sorted by what the runs gave, so R tables cannot be merged row by row.
        Some(own) => {
            let why = format!("{} repeats over its own `{own}`: set `{own}` instead", kind.name());
            return Err(ScenarioError::one(at, why));
        }
        None => {}
    }
    let r = match r.as_u64() {
        Some(r @ 1..=MOST) => r,
        _ => {
            let got = if r.is_number() { r.to_string() } else { crate::scenario::json_kind(r).to_string() };
            return Err(ScenarioError::one(at, format!("must be an integer from 1 to {MOST} (got {got})")));
        }
    };
    let mut rest = params.clone();
    rest.as_object_mut().expect("an object: it has a key").remove("repetitions");
    if r == 1 {
        return once(kind, spec, &rest, one);
    }
    let studies = (0..r)
        .map(|k| one(&reseeded(spec, spec.seed.wrapping_add(k.wrapping_mul(SEED_STRIDE))), &rest))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Box::new(Repeated { studies, handed: Vec::new(), rank: kind.about().rank }))
}

/// The study run once; a ranked one's answer says when a row comes within [`CLOSE`] of the best.
fn once(
    kind: Kind,
    spec: &Spec,
    params: &Value,
    one: impl Fn(&Spec, &Value) -> Result<Box<dyn Study>, ScenarioError>,
) -> Result<Box<dyn Study>, ScenarioError> {
    let study = one(spec, params)?;
    // A study that repeats by itself states its own intervals.
    Ok(match (kind.about().rank, kind.about().repeats_by) {
        (Rank::Unranked, _) | (_, Some(_)) => study,
        (rank, None) => Box::new(Once { study, rank }),
    })
}

/// How near the best a row must come, relative, for a single run's answer to call it close (repetitions of
/// the workflow studies' p95 TTFT spread ±3–15 % from seed to seed).
pub const CLOSE: f64 = 0.05;

/// A study run once, its answer told when one seed may not separate the best row from the next.
struct Once {
    study: Box<dyn Study>,
    rank: Rank,
}

impl Study for Once {
    fn next(&mut self) -> Vec<Job> {
        self.study.next()
    }
    fn feed(&mut self, results: Vec<RunSummary>) {
        self.study.feed(results)
    }
    fn progress(&self) -> (usize, usize) {
        self.study.progress()
    }
    fn lanes(&self, jobs: &[Job]) -> Vec<u64> {
        self.study.lanes(jobs)
    }
    fn report(&self) -> StudyReport {
        let mut out = self.study.report();
        if let Some(s) = close_call(&out, self.rank) {
            out.answer = format!("{} {s}", out.answer);
        }
        out
    }
}

/// "On this one seed “X” is within 1.2 % of it (…)": the contender nearest the best on the worse side of the
/// rank column, when it is within [`CLOSE`] and the best row is that column's best among the contenders (a
/// study that picks by more than the column — a frontier, a knee — is not second-guessed; bounds are not
/// contenders).
fn close_call(out: &StudyReport, rank: Rank) -> Option<String> {
    let (j, most) = key(out, rank)?;
    let b = out.best_row?;
    // A single run's table holds plain numbers.
    let value = |i: usize| match out.rows[i].get(j) {
        Some(c @ Cell::Num(x)) if x.is_finite() => signed(c, most),
        _ => None,
    };
    let best = value(b)?;
    let contender = |i: usize| i != b && !out.bounds.contains(&i);
    let others: Vec<(usize, f64)> =
        (0..out.rows.len()).filter(|&i| contender(i)).filter_map(|i| Some((i, value(i)?))).collect();
    if others.iter().any(|&(_, v)| v < best) {
        return None;
    }
    let (i, v) = others.into_iter().min_by(|x, y| x.1.total_cmp(&y.1))?;
    let gap = v - best;
    // An exact tie is the same figure from the same requests, not a close call; the study says so itself.
    if gap == 0.0 || gap > CLOSE * best.abs() {
        return None;
    }
    let col = &out.columns[j];
    let pct = 100.0 * gap / best.abs();
    let d = match col.format {
        Format::Percent => format!("{:.1} points", gap * 100.0),
        Format::Seconds => show(&Cell::Num(gap), col.format),
        f => format!("{} {}", show(&Cell::Num(gap), f), col.unit).trim_end().to_string(),
    };
    Some(format!(
        "On this one seed {} is within {pct:.1} % of it ({d} in {}); set Repetitions to see whether the order holds.",
        row_name(out, i),
        col.label
    ))
}

/// R copies of a study, driven in step: each batch holds every copy's next jobs.
struct Repeated {
    studies: Vec<Box<dyn Study>>,
    /// How many jobs of the last batch were each copy's.
    handed: Vec<usize>,
    /// How the study chooses its best row.
    rank: Rank,
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

    /// Copy k's lane l is lane l × R + k: the copies are independent of each other.
    fn lanes(&self, jobs: &[Job]) -> Vec<u64> {
        let r = self.studies.len() as u64;
        let mut out = Vec::with_capacity(jobs.len());
        let mut rest = jobs;
        for (k, (st, &n)) in self.studies.iter().zip(&self.handed).enumerate() {
            let (mine, more) = rest.split_at(n);
            out.extend(st.lanes(mine).into_iter().map(|l| l.wrapping_mul(r).wrapping_add(k as u64)));
            rest = more;
        }
        out
    }

    fn report(&self) -> StudyReport {
        merge(self.studies.iter().map(|s| s.report()).collect(), self.rank)
    }
}

/// One report of R: the first's, each figure the mean of the R with its 95 % interval (Student t); the best
/// row and its ties by the study's `rank`, as [`best_row`] and [`verdict`] find them. Tables whose rows are not
/// the same rows in every repetition (a study that searches) stay the first repetition's.
pub fn merge(reports: Vec<StudyReport>, rank: Rank) -> StudyReport {
    let mut out = reports[0].clone();
    let r = reports.len();
    let same = |cols: &[Column], all: &[&[Vec<Cell>]]| all.iter().all(|rows| same_rows(cols, rows, all[0]));
    let firsts: Vec<&[Vec<Cell>]> = reports.iter().map(|x| &x.rows[..]).collect();
    let merged = reports.iter().all(|x| x.columns == out.columns) && same(&out.columns, &firsts);
    if merged {
        out.rows = cells(&out.columns, &firsts);
        for (t, table) in out.tables.iter_mut().enumerate() {
            let all: Option<Vec<&[Vec<Cell>]>> = reports.iter().map(|x| x.tables.get(t).map(|t| &t.rows[..])).collect();
            if let Some(all) = all.filter(|a| same(&table.columns, a)) {
                table.rows = cells(&table.columns, &all);
            }
        }
        out.best_row = best_row(&out, &reports, rank);
    }
    let first = if out.answer.is_empty() { String::new() } else { format!(" In the first repetition: {}", out.answer) };
    out.answer = format!("{}{first}", verdict(&out, &reports, merged, rank));
    let by = match key(&out, rank) {
        Some((j, most)) => format!(
            "of the rows a repetition called best, the {} mean {}; rows whose interval of it overlaps its are ties",
            if most { "most" } else { "least" },
            out.columns[j].label
        ),
        None => "the row the repetitions point at most often".into(),
    };
    out.notes.push(format!(
        "Repetitions: {r}, on seeds {} + k × {SEED_STRIDE} (k < {r}), each the whole study. A figure is the mean of the repetitions ± the half-width of its 95 % interval (Student t); the CSV gives the interval's ends. The best row: {by}. Text, charts and the diagnosis are the first repetition's; the runs are all of them, repetition by repetition.",
        out.seed
    ));
    out.runs = reports.into_iter().flat_map(|x| x.runs).collect();
    out
}

/// Whether two tables hold the same rows in the same order: the same shape, and the same cells where a row
/// is named (its first column, and the values the study set).
fn same_rows(columns: &[Column], a: &[Vec<Cell>], b: &[Vec<Cell>]) -> bool {
    let names = |j: usize| j == 0 || columns.get(j).is_some_and(|c| c.format == Format::Setting);
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| x.len() == y.len() && (0..x.len()).filter(|&j| names(j)).all(|j| x[j] == y[j]))
}

/// The cells of R tables of one shape: figures → their mean and interval; a column the same in every
/// repetition (a value the study set, a figure that never varies) and anything else (a text) the first's.
fn cells(columns: &[Column], tables: &[&[Vec<Cell>]]) -> Vec<Vec<Cell>> {
    let fixed = |j: usize| tables.iter().all(|t| t.iter().zip(tables[0]).all(|(x, y)| x.get(j) == y.get(j)));
    let figure: Vec<bool> =
        (columns.iter().enumerate()).map(|(j, c)| c.format != Format::Setting && !fixed(j)).collect();
    let figure = |j: usize| figure.get(j).copied().unwrap_or(false);
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

/// The column the study ranks by, and whether the most is best.
fn key(out: &StudyReport, rank: Rank) -> Option<(usize, bool)> {
    let (label, most) = match rank {
        Rank::Least(l) => (l, false),
        Rank::Most(l) => (l, true),
        Rank::Unranked => return None,
    };
    out.columns.iter().position(|c| c.label == label).map(|j| (j, most))
}

/// A figure of the rank column as "less is better": negated where the most is best (an interval's mean).
fn signed(c: &Cell, most: bool) -> Option<f64> {
    let x = match c {
        Cell::Num(x) | Cell::Interval { mean: x, .. } => *x,
        _ => return None,
    };
    Some(if most { -x } else { x })
}

/// Of the rows some repetition called best (a study leaves its bounds out), the best mean in the rank column;
/// without one, the one best most often (ties: the first).
fn best_row(out: &StudyReport, reports: &[StudyReport], rank: Rank) -> Option<usize> {
    let picked: Vec<usize> = reports.iter().filter_map(|x| x.best_row).collect();
    let count = |v: usize| picked.iter().filter(|x| **x == v).count();
    let score = |i: usize| {
        let k = key(out, rank);
        k.and_then(|(j, most)| signed(out.rows[i].get(j)?, most)).unwrap_or(f64::INFINITY)
    };
    let better = |a: usize, b: usize| (score(b), std::cmp::Reverse(count(b))) < (score(a), std::cmp::Reverse(count(a)));
    picked.iter().copied().reduce(|a, b| if better(a, b) { b } else { a })
}

/// What the repetitions say of the best row: how often it was best, and which rows no interval of the rank
/// column tells apart.
fn verdict(out: &StudyReport, reports: &[StudyReport], merged: bool, rank: Rank) -> String {
    let r = reports.len();
    if !merged {
        return format!(
            "Over {r} repetitions the table's rows differ (the study searches), so this is the first repetition's table."
        );
    }
    let Some(b) = out.best_row else { return format!("Over {r} repetitions.") };
    let times = reports.iter().filter(|x| x.best_row == Some(b)).count();
    let name = |i: usize| row_name(out, i);
    let Some((j, _)) = key(out, rank) else {
        return format!("Over {r} repetitions, {} is the row the study points at ({times} of {r}).", name(b));
    };
    let what = &out.columns[j].label;
    let close: Vec<usize> =
        (0..out.rows.len()).filter(|&i| i != b && overlaps(&out.rows[i][j], &out.rows[b][j])).collect();
    // A row as good on the rank column but whose SLO attainment lies wholly below the best's is not tied with
    // it: it reaches the figure by missing more objectives.
    let attainment = out.columns.iter().position(|c| c.label == "SLO attainment");
    let lower = |i: usize| attainment.is_some_and(|a| wholly_below(&out.rows[i][a], &out.rows[b][a]));
    let (worse, ties): (Vec<usize>, Vec<usize>) = close.into_iter().partition(|&i| lower(i));
    let ties: Vec<String> = ties.into_iter().map(name).collect();
    let ties = match ties.as_slice() {
        [] => format!("its 95 % interval of {what} overlaps no other row's"),
        t => format!("tied with it (the 95 % intervals of {what} overlap): {}", t.join("; ")),
    };
    let worse = match worse.as_slice() {
        [] => String::new(),
        w => format!(
            "; not tied, though their intervals of {what} overlap, since their SLO attainment lies wholly below its: {}",
            w.iter().map(|&i| name(i)).collect::<Vec<_>>().join("; ")
        ),
    };
    format!("Over {r} repetitions, {} is the best row (best in {times} of {r}); {ties}{worse}.", name(b))
}

/// A row as the answer names it: its first cell as the table shows it, and the policy beside a set value
/// (prefix-budget's “utility …” at Budget 0.5).
fn row_name(out: &StudyReport, i: usize) -> String {
    let cell = |j: usize| match (out.rows[i].get(j), out.columns.get(j)) {
        (Some(Cell::Text(t)), _) => Some(format!("“{t}”")),
        (Some(c), Some(col)) => Some(format!("{} {}", col.label, show(c, col.format))),
        _ => None,
    };
    let text = |j: usize| out.columns.get(j).is_some_and(|c| c.format == Format::Text);
    match (cell(0), (!text(0) && text(1)).then(|| cell(1)).flatten()) {
        (Some(first), Some(policy)) => format!("{policy} at {first}"),
        (Some(first), None) => first,
        _ => format!("row {}", i + 1),
    }
}

/// Whether `a`'s 95 % interval lies wholly below `b`'s (a figure the same in every repetition is its own).
fn wholly_below(a: &Cell, b: &Cell) -> bool {
    matches!((span(a), span(b)), (Some((_, a_hi)), Some((b_lo, _))) if a_hi < b_lo)
}

/// Whether two cells' intervals overlap (a figure the same in every repetition is its own interval).
fn overlaps(a: &Cell, b: &Cell) -> bool {
    matches!((span(a), span(b)), (Some((l1, h1)), Some((l2, h2))) if l1 <= h2 && l2 <= h1)
}

/// A cell's 95 % interval (a figure the same in every repetition is its own interval).
fn span(c: &Cell) -> Option<(f64, f64)> {
    match c {
        Cell::Interval { lo, hi, .. } => Some((*lo, *hi)),
        Cell::Num(x) => Some((*x, *x)),
        _ => None,
    }
}
