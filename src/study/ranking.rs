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
    About, Chart, ChartSeries, ColumnDef, Format, Group, Job, OneBatch, OneBatchStudy, Rank, RunSummary, StudyDef,
    StudyReport, brief, column, decisive, mean_ci, mean_of, report_head, table,
};
use crate::scenario::{self, AdmissionSpec, ScenarioError, SchedulerSpec, Spec};
use crate::study::option::{Text, described};

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

described!(RankingParams {
    admission: Text {
        label: "Rank admission policies too",
        unit: "",
        help: "Also rank FCFS with a queue cap and with deadline admission",
        bound: None,
    };
    drr_quantum_tokens: Text {
        label: "DRR quantum",
        unit: "tokens",
        help: "Deficit round robin's quantum per tenant turn",
        bound: None,
    };
    repetitions: Text {
        label: "Repetitions",
        unit: "seeds per policy",
        help: "Every policy runs on these seeds; the table shows 95 % intervals over them",
        bound: None,
    };
});

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

/// One policy over its repetitions.
struct Policy<'a> {
    label: &'a str,
    runs: &'a [RunSummary],
    slo: (f64, f64, f64),
    goodput: (f64, f64, f64),
    ttft: (f64, f64, f64),
}

/// A metric the ranking orders by: its words, how a run reads it, and whether more is better.
struct Metric {
    name: String,
    value: Box<dyn Fn(&RunSummary) -> f64>,
    higher_is_better: bool,
}

/// What the ranking orders by, in order: the scenario's percentile objectives (each as measured ÷ bound),
/// SLO attainment, goodput, then p95 TTFT and p95 TPOT (the latencies users feel).
fn metrics(spec: &Spec) -> Vec<Metric> {
    let mut m: Vec<Metric> = (spec.objectives.percentiles.iter().enumerate())
        .map(|(i, o)| {
            let max_s = o.max_ms / 1e3;
            Metric {
                name: super::objective_words(o),
                value: Box::new(move |r: &RunSummary| r.objective_values_s.get(i).map_or(0.0, |v| v / max_s)),
                higher_is_better: false,
            }
        })
        .collect();
    let plain = |name: &str, f: fn(&RunSummary) -> f64, higher_is_better| Metric {
        name: name.into(),
        value: Box::new(f),
        higher_is_better,
    };
    m.push(plain("SLO attainment", |r| r.slo_attainment, true));
    m.push(plain("goodput", |r| r.goodput_rps, true));
    m.push(plain("p95 TTFT", |r| r.ttft_p95_s, false));
    m.push(plain("p95 TPOT", |r| r.tpot_p95_s, false));
    m
}

/// Is `a` better, worse or not distinguishable from `b`, and on which metric? The first metric, in order,
/// whose 95 % interval of the paired differences (repetition k against repetition k) excludes 0 decides; with
/// one repetition, the first that differs. Equal: a tie on every metric.
fn compare(a: &[RunSummary], b: &[RunSummary], metrics: &[Metric]) -> (std::cmp::Ordering, Option<usize>) {
    for (k, m) in metrics.iter().enumerate() {
        let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| (m.value)(x) - (m.value)(y)).collect();
        let (mean, lo, hi) = mean_ci(&d);
        if (lo <= 0.0 && 0.0 <= hi) || mean == 0.0 {
            continue;
        }
        let better = (mean > 0.0) == m.higher_is_better;
        return (if better { std::cmp::Ordering::Less } else { std::cmp::Ordering::Greater }, Some(k));
    }
    (std::cmp::Ordering::Equal, None)
}

/// The policies in rank order: an insertion sort by `compare` (a pairwise test need not be transitive, which a
/// library sort may refuse; eight policies make the quadratic cost nothing). Ties keep the earlier policy first.
fn rank(policies: &[Policy], metrics: &[Metric]) -> Vec<usize> {
    let mut order: Vec<usize> = Vec::with_capacity(policies.len());
    for i in 0..policies.len() {
        let at = (order.iter())
            .position(|&j| compare(policies[i].runs, policies[j].runs, metrics).0 == std::cmp::Ordering::Less)
            .unwrap_or(order.len());
        order.insert(at, i);
    }
    order
}

impl StudyDef for RankingStudy {
    const ABOUT: About = About {
        name: "ranking",
        title: "Scheduler ranking",
        question: "which queue or admission policy serves these requests best?",
        how: "Every queue policy (and the admission policies that apply) on the same requests over several seeds, ranked by SLO attainment, then goodput, with 95 % intervals: a miss a policy can fix stands apart from policies that tie.",
        group: Group::Decide,
        rank: Rank::Least("Rank"),
        repeats_by: Some("repetitions"),
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
        let metrics = metrics(&self.base);
        let order = rank(&policies, &metrics);
        // Each policy against the best: not distinguishable on any ranked metric is a tie.
        let best = order.first().map(|&i| &policies[i]);
        let tied: Vec<bool> = (policies.iter())
            .map(|p| best.is_some_and(|b| compare(p.runs, b.runs, &metrics).0 == std::cmp::Ordering::Equal))
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
            let second = order.get(1).map(|&j| &policies[j]);
            let decided = second.and_then(|s| compare(policies[first].runs, s.runs, &metrics).1);
            rep.answer = answer(&policies[first], &policies[worst], &ties, reps);
            if let (Some(s), Some(k)) = (second, decided) {
                rep.answer.push_str(&format!(" It is ahead of {} on {}.", s.label, metrics[k].name));
            }
        }
        rep.notes = self.notes(same_sentence.then(|| briefs.first()).flatten(), &metrics);
        if let Some(note) = identical_note(&policies) {
            rep.notes.push(note);
        }
        rep.charts = vec![chart(&policies, &order, &tied)];
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
                    ttft: mean_ci(&runs.iter().map(|x| x.ttft_p95_s).collect::<Vec<_>>()),
                }
            })
            .collect()
    }

    fn notes(&self, shared_diagnosis: Option<&String>, metrics: &[Metric]) -> Vec<String> {
        let names: Vec<&str> = metrics.iter().map(|m| m.name.as_str()).collect();
        let mut notes = vec![format!(
            "Every policy runs the same requests (same arrivals, lengths and predictions) on each of {} seeds (seed {} + k); only the order and admission differ. Ranked by {}, in that order: the first metric on which the 95 % interval of the paired differences (repetition against repetition) excludes 0 decides; \"not distinguishable\": it includes 0 on every one. 95 % intervals of the means: mean ± t · s/√R over the repetitions.",
            self.repetitions,
            self.base.seed,
            names.join(", then ")
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

/// A latency's 95 % interval in the reports' seconds format, clipped to ≥ 0.
fn ci_s(c: (f64, f64, f64)) -> String {
    format!("{} – {}", crate::metrics::secs(c.1.max(0.0)), crate::metrics::secs(c.2.max(0.0)))
}

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
fn columns<'a>() -> [ColumnDef<Row<'a>>; 14] {
    [
        column("Rank", "", Format::Int, |r| ((r.rank + 1) as u64).into()),
        column("Scheduler", "", Format::Text, |r| r.p.label.into()),
        column("Goodput", "req/s, mean", Format::Num, |r| r.p.goodput.0.into()),
        column("Goodput 95 % CI", "req/s", Format::Text, |r| ci(r.p.goodput, false).into()),
        decisive("SLO attainment", "mean", Format::Percent, |r| r.p.slo.0.into()),
        decisive("SLO 95 % CI", "", Format::Text, |r| ci(r.p.slo, true).into()),
        column("p95 TTFT", "s, mean", Format::Seconds, |r| r.p.ttft.0.into()),
        column("p95 TTFT 95 % CI", "", Format::Text, |r| ci_s(r.p.ttft).into()),
        column("p95 TPOT", "s, mean", Format::Seconds, |r| mean_of(r.p.runs, |x| x.tpot_p95_s).into()),
        column("p95 E2E", "s, mean", Format::Seconds, |r| mean_of(r.p.runs, |x| x.e2e_p95_s).into()),
        column("KV peak", "mean", Format::Percent, |r| mean_of(r.p.runs, |x| x.kv_peak_fraction).into()),
        column("Unfinished", "requests, all repetitions", Format::Int, |r| {
            r.p.runs.iter().map(|x| x.unfinished + x.rejected).sum::<u64>().into()
        }),
        decisive("Versus the best", "", Format::Text, |r| versus(r).into()),
        column("Diagnosis", "first repetition", Format::Text, |r| r.brief.into()),
    ]
}

/// Policies whose every repetition gave the same figures: said once, since no ranking separates them.
fn identical_note(policies: &[Policy]) -> Option<String> {
    let key = |p: &Policy| -> Vec<u64> {
        (p.runs.iter())
            .flat_map(|r| [r.slo_attainment, r.goodput_rps, r.ttft_p95_s, r.tpot_p95_s, r.e2e_p95_s])
            .map(f64::to_bits)
            .collect()
    };
    let first = key(policies.first()?);
    let same: Vec<&str> = policies.iter().filter(|p| key(p) == first).map(|p| p.label).collect();
    if same.len() < 2 {
        return None;
    }
    let wait = mean_of(policies[0].runs, |r| r.queue_delay_mean_s);
    let ttft = mean_of(policies[0].runs, |r| r.ttft_p50_s);
    // Arrival order, shortest output and shortest prompt first differ whenever two requests wait at once; if
    // two of them agree on every repetition, the queue never held a choice.
    let orders = ["FCFS", "SJF (predicted output)", "SPF (shortest prompt)"];
    let why = if same.iter().filter(|l| orders.contains(l)).count() >= 2 {
        "little queue forms, and a queue's order only matters to requests that wait: the policies cannot differ"
    } else {
        "they order this workload's queue alike (DRR with one tenant serves in arrival order, priorities with one class too, a queue cap that never fills admits everyone)"
    };
    Some(format!(
        "{} of {} policies give identical results on every repetition ({}): the mean queueing delay is {} (median TTFT {}); {why}.",
        same.len(),
        policies.len(),
        same.join(", "),
        crate::metrics::secs(wait),
        crate::metrics::secs(ttft)
    ))
}

fn answer(first: &Policy, worst: &Policy, ties: &[&str], reps: usize) -> String {
    let tie_text = match ties.len() {
        0 => String::new(),
        _ if reps == 1 => format!(" With one repetition there is no interval: {} tie it exactly.", ties.join(", ")),
        _ => format!(" Not distinguishable from it at 95 % over {reps} paired repetitions: {}.", ties.join(", ")),
    };
    format!(
        "{} ranks first: SLO attainment {:.1} % ({}), goodput {:.2} req/s, p95 TTFT {} (last: {} at {:.1} %, p95 TTFT {}).{tie_text}",
        first.label,
        first.slo.0 * 100.0,
        ci(first.slo, true),
        first.goodput.0,
        crate::metrics::secs(first.ttft.0),
        worst.label,
        worst.slo.0 * 100.0,
        crate::metrics::secs(worst.ttft.0)
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
