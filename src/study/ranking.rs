//! Scheduler ranking: every colocated queue policy (and the admission policies that apply) on the same
//! requests, ranked by SLO attainment, then goodput.

use serde::{Deserialize, Serialize};

use super::{brief, col, report_head, Cell, Chart, ChartSeries, Format, Job, RunSummary, OneBatch, OneBatchStudy, StudyReport};
use crate::scenario::{self, AdmissionSpec, ScenarioError, SchedulerSpec, Spec};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RankingParams {
    /// Also rank admission policies (with FCFS order): queue cap, and deadline when every class has an
    /// end-to-end SLO.
    pub admission: bool,
    /// DRR's quantum, tokens.
    pub drr_quantum_tokens: u32,
}

impl Default for RankingParams {
    fn default() -> Self {
        RankingParams { admission: true, drr_quantum_tokens: 2048 }
    }
}

pub struct RankingStudy {
    base: Spec,
    batch: OneBatch,
}

impl RankingStudy {
    pub fn new(spec: &Spec, p: &RankingParams) -> Result<Self, ScenarioError> {
        let sc = scenario::validate(spec)?;
        if p.drr_quantum_tokens == 0 {
            return Err(ScenarioError::one("study.ranking.drr_quantum_tokens", "must be at least 1 token (got 0)"));
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
            .map(|(label, order)| Job { label: label.into(), spec: Spec { scheduler: order, admission: AdmissionSpec::None, ..spec.clone() } })
            .collect();
        if p.admission {
            // A queue a few batches deep per replica: beyond it, waiting only adds latency.
            let cap = (sc.engine.max_num_seqs.min(256) * 2 * sc.worker_count()).max(8);
            jobs.push(Job {
                label: format!("FCFS + queue cap {cap}"),
                spec: Spec { scheduler: SchedulerSpec::Fcfs, admission: AdmissionSpec::QueueCap { max_waiting: cap }, ..spec.clone() },
            });
            if sc.workload.classes.iter().all(|c| c.slo.e2e_ns.is_some()) {
                jobs.push(Job {
                    label: "FCFS + deadline admission".into(),
                    spec: Spec { scheduler: SchedulerSpec::Fcfs, admission: AdmissionSpec::Deadline { slack: 1.0 }, ..spec.clone() },
                });
            }
        }
        for j in &jobs {
            scenario::validate(&j.spec).map_err(|e| super::prefixed(e, &j.label))?;
        }
        Ok(RankingStudy { base: spec.clone(), batch: OneBatch::new(jobs) })
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
        let mut rep = report_head("ranking", &self.base, "which queue policy (or admission policy) serves these requests best?".into());
        rep.columns = vec![
            col("Rank", "", Format::Int),
            col("Scheduler", "", Format::Text),
            col("Goodput", "req/s", Format::Num),
            col("SLO attainment", "", Format::Percent),
            col("p95 TTFT", "s", Format::Seconds),
            col("p95 E2E", "s", Format::Seconds),
            col("KV peak", "", Format::Percent),
            col("Unfinished", "requests", Format::Int),
            col("Diagnosis", "", Format::Text),
        ];
        // Rank: SLO attainment, then goodput; the earlier policy on a full tie.
        let r = results;
        let mut order: Vec<usize> = (0..r.len()).collect();
        order.sort_by(|&a, &b| r[b].slo_attainment.total_cmp(&r[a].slo_attainment).then(r[b].goodput_rps.total_cmp(&r[a].goodput_rps)).then(a.cmp(&b)));
        rep.rows = order
            .iter()
            .enumerate()
            .map(|(rank, &i)| {
                let x = &r[i];
                vec![
                    Cell::from((rank + 1) as u64),
                    x.label.as_str().into(),
                    x.goodput_rps.into(),
                    x.slo_attainment.into(),
                    x.ttft_p95_s.into(),
                    x.e2e_p95_s.into(),
                    x.kv_peak_fraction.into(),
                    (x.unfinished + x.rejected).into(),
                    brief(x).into(),
                ]
            })
            .collect();
        if let (Some(&best), Some(&worst)) = (order.first(), order.last()) {
            rep.best_row = Some(0);
            rep.answer = format!(
                "{} ranks first: SLO attainment {:.1} %, goodput {:.2} req/s (last: {} at {:.1} %).",
                r[best].label,
                r[best].slo_attainment * 100.0,
                r[best].goodput_rps,
                r[worst].label,
                r[worst].slo_attainment * 100.0
            );
        }
        rep.charts = vec![Chart {
            kind: "bars".into(),
            title: "SLO attainment by policy (ranked)".into(),
            x_label: "policy".into(),
            y_label: "fraction of requests meeting every SLO".into(),
            categories: order.iter().map(|&i| r[i].label.clone()).collect(),
            series: vec![ChartSeries { name: "SLO attainment".into(), points: order.iter().enumerate().map(|(k, &i)| (k as f64, r[i].slo_attainment)).collect(), band: vec![], labels: vec![], line: false }],
            target: None,
        }];
        rep.notes = vec!["Every policy runs the same requests (same arrivals, lengths and predictions); only the order and admission differ.".into()];
        if self.batch.jobs.len() == 6 {
            rep.notes.push("Admission policies were not ranked (study option admission = false).".into());
        } else if !self.batch.jobs.iter().any(|j| j.label.contains("deadline")) {
            rep.notes.push("Deadline admission was not ranked: it needs an e2e SLO on every class.".into());
        }
        rep.runs = r.to_vec();
        rep
    }
}
