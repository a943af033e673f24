//! `research-summary`: the workflow policies on matched seeds — which winner survives another seed, and how far
//! each is from the best fixed parameters in hindsight.

use super::exec_learning::{Steps, bounds, check_workflow, wf};
use super::*;
use crate::metrics::secs;
use crate::scenario::at;
use crate::study::option::{Text, described};
use crate::study::sweep::check_list;
use crate::study::{ColumnDef, column, table};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ResearchParams {
    /// Matched seeds: every policy runs on seed + k for k below this (ten: the interval holds its 95 %).
    pub seeds: u32,
    /// The deployable policies' decay and threshold, and the multi-step horizon.
    pub decay: f64,
    pub threshold: f64,
    pub horizon: u32,
    /// The oracle's grid: the next-step threshold plan at each decay × threshold, and the utility plan at each
    /// decay.
    pub grid_decays: Vec<f64>,
    pub grid_thresholds: Vec<f64>,
}

described!(ResearchParams {
    seeds: Text {
        label: "Seeds",
        unit: "2 … 64 (seed + k)",
        help: "Every policy runs on each seed; ten give the interval its 95 %",
        bound: None,
    };
    decay: DECAY;
    threshold: THRESHOLD;
    horizon: MULTI_STEP_HORIZON;
    grid_decays: Text {
        label: "Oracle grid: decays",
        unit: "JSON list, 0 < d ≤ 1",
        help: "The oracle searches the next-step threshold plan at each decay × threshold, and the utility plan at each decay",
        bound: None,
    };
    grid_thresholds: Text {
        label: "Oracle grid: thresholds",
        unit: "JSON list, 0 … 1",
        help: "The thresholds of the oracle's grid",
        bound: None,
    };
});

impl Default for ResearchParams {
    fn default() -> Self {
        ResearchParams {
            seeds: 10,
            decay: 0.9,
            threshold: 0.3,
            horizon: super::ThreeSteps::STEPS,
            grid_decays: vec![1.0, 0.8],
            grid_thresholds: vec![0.1, 0.3, 0.5],
        }
    }
}

/// Bootstrap resamples of a confidence interval.
const RESAMPLES: usize = 2000;

pub struct ResearchStudy {
    base: Spec,
    seeds: usize,
    /// The deployable policies, then the oracle's grid: each seed runs them all, in this order.
    deployable: Vec<Planner>,
    grid: Vec<Planner>,
    batch: OneBatch,
}

impl StudyDef for ResearchStudy {
    const ABOUT: About = About {
        name: "research-summary",
        title: "Research summary",
        question: "which workflow policy wins on p95 TTFT, and does it still win on another seed?",
        how: "Four deployable policies (no prefetch, the one-step and multi-step threshold plans, the utility plan) on matched seeds, each seed also searched for the best fixed parameters in hindsight over a stated grid (the oracle): medians, bootstrap intervals, wins, Pareto stability and regret.",
        group: Group::Prove,
        rank: Rank::Least("Rank"),
        repeats_by: Some("seeds"),
    };
    type Options = ResearchParams;

    fn new(spec: &Spec, p: &ResearchParams) -> Result<Self, ScenarioError> {
        check_workflow(spec, Self::at())?;
        check_research(p, &Self::at())?;
        let l = Learner { threshold: p.threshold, decay: p.decay };
        let deployable = vec![
            Planner::NONE,
            Planner::threshold(l, 1),
            Planner::threshold(l, p.horizon),
            Planner::utility(p.decay, p.horizon),
        ];
        let grid: Vec<Planner> = (p.grid_decays.iter())
            .flat_map(|&decay| {
                let plans =
                    p.grid_thresholds.iter().map(move |&threshold| Planner::threshold(Learner { threshold, decay }, 1));
                plans.chain(std::iter::once(Planner::utility(decay, p.horizon)))
            })
            .collect();
        let jobs: Vec<Job> = (0..p.seeds as u64)
            .flat_map(|k| deployable.iter().chain(&grid).map(move |x| (k, *x)))
            .map(|(k, x)| {
                let seeded = crate::study::reseeded(spec, spec.seed.wrapping_add(k));
                Job { label: format!("{}, seed {}", x.label(), seeded.seed), spec: x.apply(&seeded, &default_host()) }
            })
            .collect();
        check_jobs(&jobs[..deployable.len() + grid.len()])?;
        Ok(ResearchStudy { base: spec.clone(), seeds: p.seeds as usize, deployable, grid, batch: OneBatch::new(jobs) })
    }
}

fn check_research(p: &ResearchParams, at: &str) -> Result<(), ScenarioError> {
    let (b, mut e) = (bounds(), Errors::default());
    e.int(&at!(at, p.seeds), p.seeds as u64, 2, 64);
    b.decay.check(&at!(at, p.decay), &p.decay, &mut e);
    b.threshold.check(&at!(at, p.threshold), &p.threshold, &mut e);
    super::forecast::check_multi_step(&at!(at, p.horizon), p.horizon, &mut e);
    e.finish()?;
    check_list(&at!(at, p.grid_decays), &p.grid_decays, 8, |at, d, e| {
        b.decay.check(at, d, e);
    })?;
    check_list(&at!(at, p.grid_thresholds), &p.grid_thresholds, 8, |at, t, e| {
        b.threshold.check(at, t, e);
    })
}

/// One policy over the seeds (the oracle: each seed's fastest run).
struct Summary {
    label: String,
    /// p95 TTFT on each seed.
    ttft: Vec<f64>,
    median: f64,
    ci: (f64, f64),
    /// Seeds on which it is the fastest deployable policy (ties: each), and whether it is on the frontier of
    /// p95 TTFT against mean prefix HBM on every seed; none for the oracle.
    wins: Option<usize>,
    pareto_stable: Option<bool>,
    /// Mean over the seeds of its p95 TTFT less the oracle's.
    regret: f64,
    unused: f64,
    hbm: f64,
    /// One more than the policies whose interval lies wholly below its own: overlapping intervals tie.
    rank: Option<usize>,
}

fn ttft(r: &RunSummary) -> f64 {
    sess(r).turn_ttft_p95_s
}

fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len().max(1) as f64
}

fn median(x: &[f64]) -> f64 {
    let mut s = x.to_vec();
    s.sort_by(f64::total_cmp);
    if s.is_empty() { f64::NAN } else { crate::metrics::percentile(&s, 50.0) }
}

impl ResearchStudy {
    fn per_seed(&self) -> usize {
        self.deployable.len() + self.grid.len()
    }

    /// Each seed's runs, in the policies' order (complete seeds only).
    fn seeds<'r>(&self, r: &'r [RunSummary]) -> Vec<&'r [RunSummary]> {
        r.chunks_exact(self.per_seed()).collect()
    }

    /// Each seed's oracle: the index of its fastest run (the first among equals).
    fn oracle(&self, r: &[RunSummary]) -> Vec<usize> {
        (self.seeds(r).iter())
            .map(|s| (0..s.len()).reduce(|a, b| if ttft(&s[b]) < ttft(&s[a]) { b } else { a }).unwrap_or(0))
            .collect()
    }

    /// The deployable policies, ranked, then the oracle (`oracle`: each seed's).
    fn summaries(&self, r: &[RunSummary], oracle: &[usize]) -> Vec<Summary> {
        let seeds = self.seeds(r);
        let n = self.deployable.len();
        let best: Vec<f64> = seeds.iter().zip(oracle).map(|(s, &o)| ttft(&s[o])).collect();
        let fronts: Vec<Vec<bool>> = (seeds.iter())
            .map(|s| super::super::pareto(&s[..n].iter().map(|x| (-ttft(x), wf_hbm(x))).collect::<Vec<_>>()))
            .collect();
        let mut out: Vec<Summary> = (0..n)
            .map(|i| {
                let runs: Vec<&RunSummary> = seeds.iter().map(|s| &s[i]).collect();
                let wins = seeds.iter().filter(|s| s[..n].iter().all(|x| ttft(&s[i]) <= ttft(x))).count();
                let mut x = self.summary(self.deployable[i].label(), &runs, &best);
                (x.wins, x.pareto_stable) = (Some(wins), Some(fronts.iter().all(|f| f[i])));
                x
            })
            .collect();
        let ranks: Vec<usize> = (out.iter()).map(|x| 1 + out.iter().filter(|y| y.ci.1 < x.ci.0).count()).collect();
        out.iter_mut().zip(ranks).for_each(|(x, k)| x.rank = Some(k));
        out.sort_by(|a, b| (a.rank, a.median).partial_cmp(&(b.rank, b.median)).unwrap_or(std::cmp::Ordering::Equal));
        let picks: Vec<&RunSummary> = seeds.iter().zip(oracle).map(|(s, &o)| &s[o]).collect();
        out.push(self.summary("oracle: the best of the grid in hindsight, per seed (bound)".into(), &picks, &best));
        out
    }

    fn summary(&self, label: String, runs: &[&RunSummary], best: &[f64]) -> Summary {
        let t: Vec<f64> = runs.iter().map(|x| ttft(x)).collect();
        Summary {
            label,
            median: median(&t),
            ci: crate::study::bootstrap_ci_expanded(&t, RESAMPLES, self.base.seed),
            wins: None,
            pareto_stable: None,
            regret: mean(&t.iter().zip(best).map(|(a, b)| a - b).collect::<Vec<_>>()),
            unused: mean(&runs.iter().map(|x| wf(x).map_or(0.0, |w| w.unused as f64)).collect::<Vec<_>>()),
            hbm: mean(&runs.iter().map(|x| wf_hbm(x)).collect::<Vec<_>>()),
            rank: None,
            ttft: t,
        }
    }
}

fn wf_hbm(r: &RunSummary) -> f64 {
    wf(r).map_or(0.0, |w| w.mean_prefix_hbm_gb)
}

fn research_columns() -> [ColumnDef<Summary>; 10] {
    [
        column("Rank", "ties share one", Format::Int, |x| x.rank.map(|k| k as f64).into()),
        column("Policy", "", Format::Text, |x| x.label.as_str().into()),
        column("Median TTFT", "s, of the seeds' p95", Format::Seconds, |x| x.median.into()),
        column("95 % CI of mean", "bootstrap", Format::Text, |x| format!("{} – {}", secs(x.ci.0), secs(x.ci.1)).into()),
        column("TTFT wins", "seeds", Format::Int, |x| x.wins.map(|w| w as f64).into()),
        column("Pareto stable", "TTFT vs HBM, every seed", Format::Bool, |x| x.pareto_stable.into()),
        column("Oracle regret", "s, mean", Format::Seconds, |x| x.regret.into()),
        column("Worst seed", "s, p95", Format::Seconds, |x| x.ttft.iter().cloned().fold(f64::NAN, f64::max).into()),
        column("Unused prefetch", "transfers per seed", Format::Figure, |x| x.unused.into()),
        column("Mean HBM", "GB, prefixes", Format::Num, |x| x.hbm.into()),
    ]
}

impl OneBatchStudy for ResearchStudy {
    fn batch(&self) -> &OneBatch {
        &self.batch
    }
    fn batch_mut(&mut self) -> &mut OneBatch {
        &mut self.batch
    }
    fn build_report(&self, r: &[RunSummary]) -> StudyReport {
        let mut rep = report_head(Self::ABOUT, &self.base, Self::ABOUT.question.into());
        let oracle = self.oracle(r);
        let rows = self.summaries(r, &oracle);
        (rep.columns, rep.rows) = table(&research_columns(), &rows);
        if !self.seeds(r).is_empty() {
            rep.best_row = Some(0);
            rep.bounds = vec![rows.len() - 1];
            rep.answer = research_answer(&rows, &self.oracle_picks(&oracle));
            rep.charts = vec![seed_chart(&rows)];
        }
        rep.notes = self.notes();
        rep.runs = r.to_vec();
        rep
    }
}

impl ResearchStudy {
    /// The policy of each seed's oracle run, with how many seeds picked it (most first).
    fn oracle_picks(&self, oracle: &[usize]) -> Vec<(String, usize)> {
        let plans: Vec<Planner> = self.deployable.iter().chain(&self.grid).copied().collect();
        let mut picks: Vec<(String, usize)> = Vec::new();
        for &o in oracle {
            let label = plans[o].label();
            match picks.iter_mut().find(|(l, _)| *l == label) {
                Some((_, n)) => *n += 1,
                None => picks.push((label, 1)),
            }
        }
        picks.sort_by_key(|p| std::cmp::Reverse(p.1));
        picks
    }

    fn notes(&self) -> Vec<String> {
        let grid: Vec<String> = self.grid.iter().map(|x| x.label()).collect();
        vec![
            format!(
                "Seed k (k < {}) draws its own workflows from seed {} + k; on a seed every policy replays the same ones, so the rows differ only by policy there, and the seeds show how much of a difference another draw undoes.",
                self.seeds, self.base.seed
            ),
            format!(
                "Median TTFT: the median over the seeds of each run's p95 TTFT. 95 % CI of mean: the expanded percentile bootstrap of their mean ({RESAMPLES} resamples of the seeds, seeded; Hesterberg 2015: the percentile interval widened to the level a t interval on n − 1 degrees of freedom needs — the plain one covers 90 % at ten seeds; at fewer than about eight no bootstrap interval can cover 95 %, as it never reaches past the seeds' range). Rank: one more than the policies whose interval lies wholly below the row's, so overlapping intervals tie. TTFT wins: the seeds on which the row is the fastest deployable policy (a tie wins for each). Pareto stable: on every seed, no other deployable policy is at least as fast with no more mean prefix HBM and better on one."
            ),
            format!(
                "The oracle takes each seed's fastest run of the four policies and the grid ({}): the best fixed parameters in hindsight, a bound no deployable policy can run. Oracle regret: the mean over the seeds of the row's p95 TTFT less the oracle's — never negative.",
                grid.join("; ")
            ),
        ]
    }
}

fn research_answer(rows: &[Summary], picks: &[(String, usize)]) -> String {
    let (b, seeds) = (&rows[0], rows[0].ttft.len());
    let tied: Vec<String> =
        (rows[1..rows.len() - 1].iter()).filter(|x| x.rank == b.rank).map(|x| format!("“{}”", x.label)).collect();
    let ties = match tied.as_slice() {
        [] => "Its interval lies below every other policy's.".to_string(),
        t => format!(
            "Tied with {} (the intervals overlap): more seeds, or a larger gap, would separate them.",
            t.join(" and ")
        ),
    };
    let picks: Vec<String> = picks.iter().map(|(l, n)| format!("“{l}” on {n}")).collect();
    format!(
        "“{}” ranks first: median p95 TTFT {} over {seeds} seeds (95 % CI of the mean {} – {}), the fastest on {} of them, {} behind the best parameters in hindsight on average. {ties} The oracle picked {}.",
        b.label,
        secs(b.median),
        secs(b.ci.0),
        secs(b.ci.1),
        b.wins.unwrap_or(0),
        secs(b.regret),
        picks.join(", ")
    )
}

/// Each row's p95 TTFT, seed by seed.
fn seed_chart(rows: &[Summary]) -> Chart {
    let series = rows.iter().map(|x| line(&x.label, x.ttft.iter().enumerate().map(|(k, &t)| (k as f64, t)).collect()));
    lines("p95 TTFT on each seed", "seed (seed + k)", "p95 TTFT, s", series.collect())
}
