//! Scheduler ranking: every colocated queue policy (and the admission policies that apply) on the same
//! requests, over R repetitions (seeds seed + k, common to every policy), ranked by mean SLO attainment, then
//! mean goodput. Each figure carries its 95 % confidence interval (Student t over the repetitions). Because
//! every policy runs the same seeds, a policy is compared with the best one pair by pair: when the 95 %
//! interval of the paired differences includes 0 for attainment and for goodput, it is "not distinguishable"
//! from the best — a tie is a tie, not a ranking. (Overlap of the rows' own intervals would call far more ties:
//! it ignores that seed-to-seed variation is shared.)

use crate::scenario::at;
use serde::{Deserialize, Serialize};

use super::{
    About, Chart, ChartSeries, ColumnDef, Format, Group, Job, OneBatch, OneBatchStudy, RunSummary, StudyDef,
    StudyReport, brief, column, mean_of, report_head, table,
};
use crate::scenario::{self, AdmissionSpec, ScenarioError, SchedulerSpec, Spec};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RankingParams {
    /// Also rank admission policies (with FCFS order): queue cap, and deadline when every class has an
    /// end-to-end SLO.
    pub admission: bool,
    /// DRR's quantum, tokens.
    pub drr_quantum_tokens: u32,
    /// Repetitions (seeds seed + k) per policy, 1 … 100.
    pub repetitions: u32,
}

impl Default for RankingParams {
    fn default() -> Self {
        RankingParams { admission: true, drr_quantum_tokens: 2048, repetitions: 5 }
    }
}

pub struct RankingStudy {
    base: Spec,
    batch: OneBatch,
    /// The policies, in the order their jobs were made (repetitions are consecutive).
    policies: Vec<String>,
    repetitions: usize,
}

/// Two-sided 95 % Student t quantile for `df` degrees of freedom (1.96 beyond 30).
fn t95(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    if df == 0 { f64::INFINITY } else { T.get(df - 1).copied().unwrap_or(1.96) }
}

/// Mean and 95 % confidence interval of `x` (a point when there is one value).
pub fn mean_ci(x: &[f64]) -> (f64, f64, f64) {
    let n = x.len();
    let mean = x.iter().sum::<f64>() / n.max(1) as f64;
    if n < 2 {
        return (mean, mean, mean);
    }
    let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1) as f64;
    let half = t95(n - 1) * (var / n as f64).sqrt();
    (mean, mean - half, mean + half)
}

/// One policy over its repetitions.
struct Policy<'a> {
    label: &'a str,
    runs: &'a [RunSummary],
    slo: (f64, f64, f64),
    goodput: (f64, f64, f64),
}

/// Is the 95 % interval of the paired differences `f(a_k) − f(b_k)` one that includes 0?
fn paired_tie(a: &[RunSummary], b: &[RunSummary], f: fn(&RunSummary) -> f64) -> bool {
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| f(x) - f(y)).collect();
    let (_, lo, hi) = mean_ci(&d);
    lo <= 0.0 && 0.0 <= hi
}

impl StudyDef for RankingStudy {
    const ABOUT: About = About {
        name: "ranking",
        title: "Scheduler ranking",
        question: "which queue or admission policy serves these requests best?",
        how: "Every queue policy (and the admission policies that apply) on the same requests over several seeds, ranked by SLO attainment, then goodput, with 95 % intervals: a miss a policy can fix stands apart from policies that tie.",
        group: Group::Decide,
    };
    type Options = RankingParams;

    fn new(spec: &Spec, p: &RankingParams) -> Result<Self, ScenarioError> {
        let sc = scenario::validate(spec)?;
        if p.drr_quantum_tokens == 0 {
            return Err(ScenarioError::one(at!(Self::at(), p.drr_quantum_tokens), "must be at least 1 token (got 0)"));
        }
        if !(1..=100).contains(&p.repetitions) {
            return Err(ScenarioError::one(
                at!(Self::at(), p.repetitions),
                format!("must be an integer from 1 to 100 (got {})", p.repetitions),
            ));
        }
        let orders = [
            ("FCFS", SchedulerSpec::Fcfs),
            ("SJF (predicted output)", SchedulerSpec::Sjf),
            ("SPF (shortest prompt)", SchedulerSpec::Spf),
            ("EDF (earliest deadline)", SchedulerSpec::Edf),
            ("Priority (class)", SchedulerSpec::Priority),
            ("DRR (tenants)", SchedulerSpec::Drr { quantum_tokens: p.drr_quantum_tokens }),
        ];
        let mut jobs: Vec<Job> = orders
            .into_iter()
            .map(|(label, order)| Job {
                label: label.into(),
                spec: Spec { scheduler: order, admission: AdmissionSpec::None, ..spec.clone() },
            })
            .collect();
        if p.admission {
            // A queue a few batches deep per replica: beyond it, waiting only adds latency.
            let cap = (sc.front_pool().engine.max_num_seqs.min(256) * 2 * sc.worker_count()).max(8);
            jobs.push(Job {
                label: format!("FCFS + queue cap {cap}"),
                spec: Spec {
                    scheduler: SchedulerSpec::Fcfs,
                    admission: AdmissionSpec::QueueCap { max_waiting: cap },
                    ..spec.clone()
                },
            });
            if sc.workload.classes.iter().all(|c| c.slo.e2e_ns.is_some()) {
                jobs.push(Job {
                    label: "FCFS + deadline admission".into(),
                    spec: Spec {
                        scheduler: SchedulerSpec::Fcfs,
                        admission: AdmissionSpec::Deadline { slack: 1.0 },
                        ..spec.clone()
                    },
                });
            }
        }
        for j in &jobs {
            scenario::validate(&j.spec).map_err(|e| super::prefixed(e, &j.label))?;
        }
        let policies: Vec<String> = jobs.iter().map(|j| j.label.clone()).collect();
        // Repetition k of every policy runs on seed + k: the policies see the same requests each time.
        let r = p.repetitions as usize;
        let jobs = jobs
            .into_iter()
            .flat_map(|j| {
                (0..r).map(move |k| Job {
                    label: if r == 1 { j.label.clone() } else { format!("{}, repetition {}", j.label, k + 1) },
                    spec: super::reseeded(&j.spec, j.spec.seed.wrapping_add(k as u64)),
                })
            })
            .collect();
        Ok(RankingStudy { base: spec.clone(), batch: OneBatch::new(jobs), policies, repetitions: r })
    }
}

impl OneBatchStudy for RankingStudy {
    fn batch(&self) -> &OneBatch {
        &self.batch
    }
    fn batch_mut(&mut self) -> &mut OneBatch {
        &mut self.batch
    }
    fn build_report(&self, results: &[RunSummary]) -> StudyReport {
        let reps = self.repetitions;
        let mut rep = report_head(
            RankingStudy::ABOUT,
            &self.base,
            format!(
                "which queue policy (or admission policy) serves these requests best, over {reps} repetition{}?",
                if reps == 1 { "" } else { "s" }
            ),
        );
        let policies = self.policies(results);
        // Rank: mean SLO attainment, then mean goodput; the earlier policy on a full tie.
        let mut order: Vec<usize> = (0..policies.len()).collect();
        order.sort_by(|&a, &b| {
            policies[b]
                .slo
                .0
                .total_cmp(&policies[a].slo.0)
                .then(policies[b].goodput.0.total_cmp(&policies[a].goodput.0))
                .then(a.cmp(&b))
        });
        // Each policy: not distinguishable from the best at 95 % (paired differences), on both criteria.
        let best = order.first().map(|&i| &policies[i]);
        let tied: Vec<bool> = policies
            .iter()
            .map(|p| {
                best.is_some_and(|b| {
                    paired_tie(p.runs, b.runs, |x| x.slo_attainment) && paired_tie(p.runs, b.runs, |x| x.goodput_rps)
                })
            })
            .collect();
        let briefs: Vec<String> = policies.iter().map(|p| brief(&p.runs[0])).collect();
        let same_sentence = briefs.windows(2).all(|w| w[0] == w[1]);
        // A diagnosis that differs per row gets a column; one shared by every row is said once, in the notes.
        let rows: Vec<Row> = (order.iter().enumerate())
            .map(|(rank, &i)| Row { rank, p: &policies[i], tied: tied[i], brief: &briefs[i] })
            .collect();
        let all = columns();
        let shown = if same_sentence { &all[..all.len() - 1] } else { &all[..] };
        (rep.columns, rep.rows) = table(shown, &rows);
        if let (Some(&first), Some(&worst)) = (order.first(), order.last()) {
            rep.best_row = Some(0);
            let ties: Vec<&str> = order.iter().skip(1).filter(|&&i| tied[i]).map(|&i| policies[i].label).collect();
            rep.answer = answer(&policies[first], &policies[worst], &ties, reps);
        }
        rep.charts = vec![chart(&policies, &order, &tied)];
        rep.notes = self.notes(same_sentence.then(|| briefs.first()).flatten());
        rep.runs = results.to_vec();
        rep
    }
}

impl RankingStudy {
    /// Each policy's runs (its repetitions are consecutive jobs) with the means and intervals it ranks by.
    fn policies<'a>(&'a self, results: &'a [RunSummary]) -> Vec<Policy<'a>> {
        let reps = self.repetitions;
        (self.policies.iter().enumerate())
            .map(|(i, label)| {
                let runs = &results[i * reps..(i + 1) * reps];
                Policy {
                    label,
                    runs,
                    slo: mean_ci(&runs.iter().map(|x| x.slo_attainment).collect::<Vec<_>>()),
                    goodput: mean_ci(&runs.iter().map(|x| x.goodput_rps).collect::<Vec<_>>()),
                }
            })
            .collect()
    }

    fn notes(&self, shared_diagnosis: Option<&String>) -> Vec<String> {
        let mut notes = vec![format!(
            "Every policy runs the same requests (same arrivals, lengths and predictions) on each of {} seeds (seed {} + k); only the order and admission differ. 95 % intervals: mean ± t · s/√R over the repetitions; \"not distinguishable\": the interval of the paired differences from the best includes 0 for attainment and for goodput.",
            self.repetitions, self.base.seed
        )];
        if let Some(b) = shared_diagnosis {
            notes.push(format!("Every policy's diagnosis (first repetition): {b}"));
        }
        if self.policies.len() == 6 {
            notes.push("Admission policies were not ranked (study option admission = false).".into());
        } else if !self.policies.iter().any(|l| l.contains("deadline")) {
            notes.push("Deadline admission was not ranked: it needs an e2e SLO on every class.".into());
        }
        notes
    }
}

/// A mean's 95 % interval as text: a share's clipped to [0, 100 %], a rate's to ≥ 0.
fn ci(c: (f64, f64, f64), pct: bool) -> String {
    if pct {
        format!("{:.1} – {:.1} %", c.1.clamp(0.0, 1.0) * 100.0, c.2.clamp(0.0, 1.0) * 100.0)
    } else {
        format!("{:.3} – {:.3}", c.1.max(0.0), c.2.max(0.0))
    }
}

/// The table row of the policy ranked `rank` (0: the best).
/// A row of the table: a policy in its rank, whether it ties the best, its first repetition's diagnosis.
struct Row<'a> {
    rank: usize,
    p: &'a Policy<'a>,
    tied: bool,
    brief: &'a str,
}

fn versus(r: &Row) -> &'static str {
    match (r.rank, r.tied) {
        (0, _) => "best",
        (_, true) => "not distinguishable from the best",
        _ => "worse",
    }
}

/// The table; its last column (the diagnosis) is left out when every row's is the same (the notes say it).
fn columns<'a>() -> [ColumnDef<Row<'a>>; 12] {
    [
        column("Rank", "", Format::Int, |r| ((r.rank + 1) as u64).into()),
        column("Scheduler", "", Format::Text, |r| r.p.label.into()),
        column("Goodput", "req/s, mean", Format::Num, |r| r.p.goodput.0.into()),
        column("Goodput 95 % CI", "req/s", Format::Text, |r| ci(r.p.goodput, false).into()),
        column("SLO attainment", "mean", Format::Percent, |r| r.p.slo.0.into()),
        column("SLO 95 % CI", "", Format::Text, |r| ci(r.p.slo, true).into()),
        column("p95 TTFT", "s, mean", Format::Seconds, |r| mean_of(r.p.runs, |x| x.ttft_p95_s).into()),
        column("p95 E2E", "s, mean", Format::Seconds, |r| mean_of(r.p.runs, |x| x.e2e_p95_s).into()),
        column("KV peak", "mean", Format::Percent, |r| mean_of(r.p.runs, |x| x.kv_peak_fraction).into()),
        column("Unfinished", "requests, all repetitions", Format::Int, |r| {
            r.p.runs.iter().map(|x| x.unfinished + x.rejected).sum::<u64>().into()
        }),
        column("Versus the best", "", Format::Text, |r| versus(r).into()),
        column("Diagnosis", "first repetition", Format::Text, |r| r.brief.into()),
    ]
}

fn answer(first: &Policy, worst: &Policy, ties: &[&str], reps: usize) -> String {
    let tie_text = match ties.len() {
        0 => String::new(),
        _ if reps == 1 => format!(" With one repetition there is no interval: {} tie it exactly.", ties.join(", ")),
        _ => format!(" Not distinguishable from it at 95 % over {reps} paired repetitions: {}.", ties.join(", ")),
    };
    format!(
        "{} ranks first: SLO attainment {:.1} % ({}), goodput {:.2} req/s (last: {} at {:.1} %).{tie_text}",
        first.label,
        first.slo.0 * 100.0,
        ci(first.slo, true),
        first.goodput.0,
        worst.label,
        worst.slo.0 * 100.0
    )
}

/// SLO attainment by policy, ranked. Colour says whether a row is distinguishable from the best: tied rows
/// (and the best) in one series, worse rows in another.
fn chart(r: &[Policy], order: &[usize], tied: &[bool]) -> Chart {
    Chart {
        kind: "bars".into(),
        title: "SLO attainment by policy (ranked, mean over repetitions)".into(),
        x_label: "policy".into(),
        y_label: "fraction of requests meeting every SLO".into(),
        categories: order.iter().map(|&i| r[i].label.to_string()).collect(),
        series: [("best or not distinguishable", true), ("worse", false)]
            .into_iter()
            .map(|(name, tie)| ChartSeries {
                name: name.into(),
                points: order
                    .iter()
                    .enumerate()
                    .map(|(k, &i)| (k as f64, if (k == 0 || tied[i]) == tie { r[i].slo.0 } else { 0.0 }))
                    .collect(),
                band: vec![],
                labels: vec![],
                line: false,
            })
            .collect(),
        target: None,
    }
}
