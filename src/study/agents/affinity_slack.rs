//! `affinity-slack`: bounded affinity's slack swept.

use super::*;
use crate::scenario::at;
use crate::study::option::{Text, described};
use crate::study::sweep::{Knob, SweepRow, check_list};
use crate::study::{ColumnDef, column};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AffinitySlackParams {
    /// Slacks to try, ms.
    pub slack_ms: Vec<f64>,
}

described!(AffinitySlackParams {
    slack_ms: Text {
        label: "Slacks",
        unit: "JSON list of ms",
        help: "The slacks to try, e.g. [0, 50, 250, 1000]",
        bound: None,
    };
});

impl Default for AffinitySlackParams {
    fn default() -> Self {
        AffinitySlackParams { slack_ms: vec![0.0, 10.0, 25.0, 50.0, 100.0, 250.0, 1000.0, 10_000.0] }
    }
}

/// Bounded affinity's slack, ms: `affinity-slack`.
pub struct Slack;

impl Knob for Slack {
    const ABOUT: About = About {
        name: "affinity-slack",
        title: "Affinity slack",
        question: "how much imbalance should a turn accept to stay where its KV is?",
        how: "Bounded affinity's slack swept from load balancing to sticky.",
        group: Group::Agents,
        rank: Rank::Least("p95 turn TTFT"),
        repeats_by: None,
    };
    type Options = AffinitySlackParams;
    type Value = f64;

    fn values(spec: &Spec, p: &AffinitySlackParams, at: &str) -> Result<Vec<f64>, ScenarioError> {
        check_base(spec, at.to_string())?;
        check_list(&at!(at, p.slack_ms), &p.slack_ms, 64, |at, s, e| {
            e.range(at, *s, 0.0, 1e9);
        })?;
        Ok(p.slack_ms.clone())
    }

    fn label(s: f64) -> String {
        format!("slack {}", crate::metrics::secs(s / 1e3))
    }

    fn apply(spec: &Spec, s: f64) -> Spec {
        // A stateless scenario keeps nothing to be affine to: sweep it with retention.
        let retention = match spec.workload.sessions.as_ref().map(|s| s.retention) {
            Some(RetentionSpec::Stateless) | None => RetentionSpec::Retain,
            Some(r) => r,
        };
        let host = spec.engine.host_kv.is_some();
        let p = policy("", retention, Some(RouterSpec::BoundedAffinity { slack_ms: s }), host);
        variant(spec, &p, &default_host(), spec.engine.retention_budget_blocks)
    }

    fn columns<'a>() -> Vec<ColumnDef<SweepRow<'a, f64>>> {
        vec![
            column("Affinity slack", "s", Format::Seconds, |x| (x.value / 1e3).into()),
            column("p95 turn TTFT", "s", Format::Seconds, |x| sess(x.run).turn_ttft_p95_s.into()),
            column("p95 session E2E", "s", Format::Seconds, |x| sess(x.run).session_e2e_p95_s.into()),
            column("Route locality", "", Format::Percent, |x| sess(x.run).route_locality.into()),
            column("Cache hit", "of later turns", Format::Percent, |x| cache_hit(sess(x.run)).into()),
            column("Recomputed", "tokens", Format::Int, |x| sess(x.run).recomputed_history_tokens.into()),
            column("Session SLO", "", Format::Percent, |x| sess(x.run).slo_attainment.into()),
            column("Pressure evictions", "", Format::Int, |x| sess(x.run).pressure_evictions.into()),
            column("Diagnosis", "", Format::Text, |x| session_brief(x.run).into()),
        ]
    }

    fn conclude(base: &Spec, rows: &[SweepRow<'_, f64>], r: &[RunSummary], rep: &mut StudyReport) {
        let slacks: Vec<f64> = rows.iter().map(|x| x.value).collect();
        rep.best_row = fastest(r);
        if let Some(b) = rep.best_row {
            let s = sess(&r[b]);
            rep.answer = format!(
                "A slack of {} gives the lowest p95 turn TTFT, {}, with {:.1} % of later turns staying on their worker and {:.1} % hitting their cache.",
                crate::metrics::secs(slacks[b] / 1e3),
                crate::metrics::secs(s.turn_ttft_p95_s),
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
            categories: slacks
                .iter()
                .map(|&s| {
                    if s == 0.0 {
                        "slack 0 (balance)".into()
                    } else {
                        format!("slack {}", crate::metrics::secs(s / 1e3))
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
                program_note(base),
                "Bounded affinity: a later turn stays on its previous worker unless that worker's outstanding requests × the mean prompt's prefill time exceed the least-loaded worker's by more than the slack. 0 is load balancing (ties stay); a large slack is sticky.".into(),
            ];
    }
}
