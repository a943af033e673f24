//! `affinity-slack`: bounded affinity's slack swept.

use super::*;
use crate::scenario::at;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AffinitySlackParams {
    /// Slacks to try, ms.
    pub slack_ms: Vec<f64>,
}

impl Default for AffinitySlackParams {
    fn default() -> Self {
        AffinitySlackParams { slack_ms: vec![0.0, 10.0, 25.0, 50.0, 100.0, 250.0, 1000.0, 10_000.0] }
    }
}

pub struct AffinitySlackStudy {
    base: Spec,
    slacks: Vec<f64>,
    batch: OneBatch,
}

impl StudyDef for AffinitySlackStudy {
    const ABOUT: About = About {
        name: "affinity-slack",
        title: "Affinity slack",
        question: "how much imbalance should a turn accept to stay where its KV is?",
    };
    type Options = AffinitySlackParams;

    fn new(spec: &Spec, p: &AffinitySlackParams) -> Result<Self, ScenarioError> {
        check_base(spec, Self::at())?;
        let mut e = Errors::default();
        e.int(&at!(Self::at(), p.slack_ms), p.slack_ms.len() as u64, 1, 64);
        for (i, s) in p.slack_ms.iter().enumerate() {
            e.range(&format!("{}[{i}]", at!(Self::at(), p.slack_ms)), *s, 0.0, 1e9);
        }
        e.finish()?;
        // A stateless scenario keeps nothing to be affine to: sweep it with retention.
        let retention = match spec.workload.sessions.as_ref().map(|s| s.retention) {
            Some(RetentionSpec::Stateless) | None => RetentionSpec::Retain,
            Some(r) => r,
        };
        let host = spec.engine.host_kv.is_some();
        let jobs: Vec<Job> = (p.slack_ms.iter())
            .map(|&s| Job {
                label: format!("slack {}", crate::export::secs(s / 1e3)),
                spec: variant(
                    spec,
                    &policy("", retention, Some(RouterSpec::BoundedAffinity { slack_ms: s }), host),
                    &default_host(),
                    spec.engine.retention_budget_blocks,
                ),
            })
            .collect();
        check_jobs(&jobs)?;
        Ok(AffinitySlackStudy { base: spec.clone(), slacks: p.slack_ms.clone(), batch: OneBatch::new(jobs) })
    }
}

impl OneBatchStudy for AffinitySlackStudy {
    fn batch(&self) -> &OneBatch {
        &self.batch
    }
    fn batch_mut(&mut self) -> &mut OneBatch {
        &mut self.batch
    }
    fn build_report(&self, r: &[RunSummary]) -> StudyReport {
        let mut rep = report_head(
            Kind::AffinitySlack,
            &self.base,
            "how much load imbalance should a session's turn accept to stay where its KV is?".into(),
        );
        rep.columns = vec![
            col("Affinity slack", "s", Format::Seconds),
            col("p95 turn TTFT", "s", Format::Seconds),
            col("p95 session E2E", "s", Format::Seconds),
            col("Route locality", "", Format::Percent),
            col("Cache hit", "of later turns", Format::Percent),
            col("Recomputed", "tokens", Format::Int),
            col("Session SLO", "", Format::Percent),
            col("Pressure evictions", "", Format::Int),
            col("Diagnosis", "", Format::Text),
        ];
        rep.rows = (r.iter().zip(&self.slacks))
            .map(|(x, &slack)| {
                let s = sess(x);
                vec![
                    Cell::from(slack / 1e3),
                    s.turn_ttft_p95_s.into(),
                    s.session_e2e_p95_s.into(),
                    s.route_locality.into(),
                    cache_hit(s).into(),
                    s.recomputed_history_tokens.into(),
                    s.slo_attainment.into(),
                    s.pressure_evictions.into(),
                    session_brief(x).into(),
                ]
            })
            .collect();
        rep.best_row = fastest(r);
        if let Some(b) = rep.best_row {
            let s = sess(&r[b]);
            rep.answer = format!(
                "A slack of {} gives the lowest p95 turn TTFT, {}, with {:.1} % of later turns staying on their worker and {:.1} % hitting their cache.",
                crate::export::secs(self.slacks[b] / 1e3),
                crate::export::secs(s.turn_ttft_p95_s),
                s.route_locality * 100.0,
                cache_hit(s) * 100.0
            );
        }
        // Slacks span decades: one bar slot each, named by its slack, reads better than a linear axis.
        let bar_series = |name: &str, f: fn(&SessionRun) -> f64| ChartSeries {
            name: name.into(),
            points: r.iter().enumerate().map(|(i, x)| (i as f64, f(sess(x)))).collect(),
            band: vec![],
            labels: vec![],
            line: false,
        };
        let chart = |title: &str, y_label: &str, series: Vec<ChartSeries>| Chart {
            kind: "bars".into(),
            title: title.into(),
            x_label: "affinity slack".into(),
            y_label: y_label.into(),
            categories: self
                .slacks
                .iter()
                .map(|&s| {
                    if s == 0.0 {
                        "slack 0 (balance)".into()
                    } else {
                        format!("slack {}", crate::export::secs(s / 1e3))
                    }
                })
                .collect(),
            series,
            target: None,
        };
        rep.charts = vec![
            chart(
                "p95 turn TTFT by affinity slack",
                "p95 turn TTFT (s)",
                vec![bar_series("p95 turn TTFT", |s| s.turn_ttft_p95_s)],
            ),
            chart(
                "Route locality and cache hit by affinity slack",
                "share of later turns",
                vec![bar_series("route locality", |s| s.route_locality), bar_series("cache hit", cache_hit)],
            ),
        ];
        rep.notes = vec![
            program_note(&self.base),
            "Bounded affinity: a later turn stays on its previous worker unless that worker's outstanding requests × the mean prompt's prefill time exceed the least-loaded worker's by more than the slack. 0 is load balancing (ties stay); a large slack is sticky.".into(),
        ];
        rep.runs = r.to_vec();
        rep
    }
}

// ---------------------------------------------------------------------------------------------------------
// tiered-kv
