//! `ttl-sweep`: the TTL swept for the latency / memory-residency frontier.

use super::*;
use crate::scenario::at;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TtlSweepParams {
    /// TTLs to try, s; null: no expiry (∞).
    pub ttl_s: Vec<Option<f64>>,
}

impl Default for TtlSweepParams {
    fn default() -> Self {
        TtlSweepParams {
            ttl_s: vec![
                Some(0.0),
                Some(0.5),
                Some(1.0),
                Some(2.0),
                Some(5.0),
                Some(10.0),
                Some(30.0),
                Some(60.0),
                None,
            ],
        }
    }
}

fn ttl_label(t: Option<f64>) -> String {
    match t {
        None => "∞ (no expiry)".into(),
        Some(0.0) => "0 (at once)".into(),
        Some(t) => crate::export::secs(t),
    }
}

pub struct TtlSweepStudy {
    base: Spec,
    ttls: Vec<Option<f64>>,
    batch: OneBatch,
}

impl StudyDef for TtlSweepStudy {
    const ABOUT: About = About {
        name: "ttl-sweep",
        title: "TTL sweep",
        question: "how long should a session's KV stay in HBM after a turn?",
    };
    type Options = TtlSweepParams;

    fn new(spec: &Spec, p: &TtlSweepParams) -> Result<Self, ScenarioError> {
        check_base(spec, Self::at())?;
        let mut e = Errors::default();
        e.int(&at!(Self::at(), p.ttl_s), p.ttl_s.len() as u64, 1, 64);
        for (i, t) in p.ttl_s.iter().enumerate() {
            if let Some(t) = t {
                e.range(&format!("{}[{i}]", at!(Self::at(), p.ttl_s)), *t, 0.0, 1e7);
            }
        }
        e.finish()?;
        let host = spec.engine.host_kv.is_some();
        let jobs: Vec<Job> = (p.ttl_s.iter())
            .map(|&t| Job {
                label: format!("TTL {}", ttl_label(t)),
                spec: variant(
                    spec,
                    &policy("", RetentionSpec::Ttl { ttl_s: t }, None, host),
                    &default_host(),
                    spec.engine.retention_budget_blocks,
                ),
            })
            .collect();
        check_jobs(&jobs)?;
        Ok(TtlSweepStudy { base: spec.clone(), ttls: p.ttl_s.clone(), batch: OneBatch::new(jobs) })
    }
}

impl OneBatchStudy for TtlSweepStudy {
    fn batch(&self) -> &OneBatch {
        &self.batch
    }
    fn batch_mut(&mut self) -> &mut OneBatch {
        &mut self.batch
    }
    fn build_report(&self, r: &[RunSummary]) -> StudyReport {
        let mut rep = report_head(Kind::TtlSweep, &self.base, "how long should a session's KV stay in HBM after a turn: what does each TTL buy in latency, and cost in memory?".into());
        rep.columns = vec![
            col("TTL", "", Format::Text),
            col("Pareto", "", Format::Bool),
            col("p95 turn TTFT", "s", Format::Seconds),
            col("p95 session E2E", "s", Format::Seconds),
            col("Cache hit", "of later turns", Format::Percent),
            col("Recomputed history", "tokens", Format::Int),
            col("Mean KV", "GB, HBM", Format::Num),
            col("HBM GB·s", "GB·s", Format::Num),
            col("TTL evictions", "", Format::Int),
            col("Pressure evictions", "", Format::Int),
            col("Diagnosis", "", Format::Text),
        ];
        let front = pareto(&r.iter().map(|x| (-sess(x).turn_ttft_p95_s, sess(x).hbm_mean_gb)).collect::<Vec<_>>());
        rep.rows = (r.iter().zip(&self.ttls).enumerate())
            .map(|(i, (x, &t))| {
                let s = sess(x);
                vec![
                    Cell::from(ttl_label(t)),
                    front[i].into(),
                    s.turn_ttft_p95_s.into(),
                    s.session_e2e_p95_s.into(),
                    cache_hit(s).into(),
                    s.recomputed_history_tokens.into(),
                    s.hbm_mean_gb.into(),
                    s.hbm_gb_s.into(),
                    s.ttl_evictions.into(),
                    s.pressure_evictions.into(),
                    session_brief(x).into(),
                ]
            })
            .collect();
        // The knee: the least HBM whose p95 turn TTFT is within 10 % of the best.
        let best_ttft = r.iter().map(|x| sess(x).turn_ttft_p95_s).fold(f64::INFINITY, f64::min);
        rep.best_row = (0..r.len())
            .filter(|&i| front[i] && sess(&r[i]).turn_ttft_p95_s <= best_ttft * 1.1)
            .reduce(|a, b| if sess(&r[b]).hbm_mean_gb < sess(&r[a]).hbm_mean_gb { b } else { a });
        if let Some(b) = rep.best_row {
            let s = sess(&r[b]);
            rep.answer = format!(
                "TTL {} is the knee: p95 turn TTFT {} (within 10 % of the best, {}) holding {:.2} GB of HBM on average; {} of {} TTLs are on the latency / memory frontier.",
                ttl_label(self.ttls[b]),
                crate::export::secs(s.turn_ttft_p95_s),
                crate::export::secs(best_ttft),
                s.hbm_mean_gb,
                front.iter().filter(|f| **f).count(),
                r.len()
            );
        }
        let mut f: Vec<(f64, f64)> = (0..r.len())
            .filter(|&i| front[i])
            .map(|i| (sess(&r[i]).hbm_mean_gb, sess(&r[i]).turn_ttft_p95_s))
            .collect();
        f.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
        rep.charts = vec![Chart {
            kind: "scatter".into(),
            title: "p95 turn TTFT vs mean HBM held, per TTL".into(),
            x_label: "mean retained KV in HBM (GB)".into(),
            y_label: "p95 turn TTFT (s)".into(),
            categories: vec![],
            series: vec![
                ChartSeries {
                    name: "TTLs".into(),
                    points: r.iter().map(|x| (sess(x).hbm_mean_gb, sess(x).turn_ttft_p95_s)).collect(),
                    band: vec![],
                    labels: self.ttls.iter().map(|&t| ttl_label(t)).collect(),
                    line: false,
                },
                line("frontier", f),
            ],
            target: None,
        }];
        rep.notes = vec![
            program_note(&self.base),
            format!(
                "The scenario's router and host tier are kept{}; TTL 0 frees (or offloads) at once, ∞ keeps until the session ends or pressure evicts.",
                if self.base.engine.host_kv.is_some() {
                    " (an expired history moves to host memory)"
                } else {
                    " (no host tier: an expired history is freed)"
                }
            ),
            "Pareto: no other TTL has at most the p95 turn TTFT and at most the mean HBM held, better on one.".into(),
        ];
        rep.runs = r.to_vec();
        rep
    }
}

// ---------------------------------------------------------------------------------------------------------
// affinity-slack
