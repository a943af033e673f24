//! `ttl-sweep`: the TTL swept for the latency / memory-residency frontier.

use super::*;
use crate::scenario::at;
use crate::spec::TTL_S;
use crate::study::option::{Text, described};
use crate::study::sweep::{Knob, SweepRow, check_list};
use crate::study::{ColumnDef, column};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TtlSweepParams {
    /// TTLs to try, s; null: no expiry (∞).
    pub ttl_s: Vec<Option<f64>>,
}

described!(TtlSweepParams {
    ttl_s: Text {
        label: "TTLs",
        unit: "JSON list of s; null = ∞ (no expiry)",
        help: "The TTLs to try, e.g. [0, 1, 5, 30, null]",
        bound: None,
    };
});

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
        Some(t) => crate::metrics::secs(t),
    }
}

/// The TTL a session's KV stays in HBM after a turn: `ttl-sweep`.
pub struct Ttl;

impl Knob for Ttl {
    const ABOUT: About = About {
        name: "ttl-sweep",
        title: "TTL sweep",
        question: "how long should a session's KV stay in HBM after a turn?",
        how: "Each TTL's p95 turn TTFT against the HBM it holds, with the Pareto frontier of the two.",
        group: Group::Agents,
        rank: Rank::Least("Mean KV"),
        repeats_by: None,
    };
    type Options = TtlSweepParams;
    type Value = Option<f64>;

    fn values(spec: &Spec, p: &TtlSweepParams, at: &str) -> Result<Vec<Option<f64>>, ScenarioError> {
        check_base(spec, at.to_string())?;
        check_list(&at!(at, p.ttl_s), &p.ttl_s, 64, |at, t, e| {
            TTL_S.check(at, t, e);
        })?;
        Ok(p.ttl_s.clone())
    }

    fn label(t: Option<f64>) -> String {
        format!("TTL {}", ttl_label(t))
    }

    fn apply(spec: &Spec, t: Option<f64>) -> Spec {
        let host = spec.engine.host_kv.is_some();
        let p = policy("", RetentionSpec::Ttl { ttl_s: t }, None, host);
        variant(spec, &p, &default_host(), spec.engine.retention_budget_blocks)
    }

    fn frontier(r: &RunSummary) -> Option<(f64, f64)> {
        Some((sess(r).turn_ttft_p95_s, sess(r).hbm_mean_gb))
    }

    fn columns<'a>() -> Vec<ColumnDef<SweepRow<'a, Option<f64>>>> {
        vec![
            column("TTL", "", Format::Text, |x| ttl_label(x.value).into()),
            column("Pareto", "", Format::Bool, |x| x.on_front.into()),
            column("p95 turn TTFT", "s", Format::Seconds, |x| sess(x.run).turn_ttft_p95_s.into()),
            column("p95 session E2E", "s", Format::Seconds, |x| sess(x.run).session_e2e_p95_s.into()),
            column("Cache hit", "of later turns", Format::Percent, |x| cache_hit(sess(x.run)).into()),
            column("Recomputed history", "tokens", Format::Int, |x| sess(x.run).recomputed_history_tokens.into()),
            column("Mean KV", "GB, HBM", Format::Num, |x| sess(x.run).hbm_mean_gb.into()),
            column("HBM held", "GB·s", Format::Num, |x| sess(x.run).hbm_gb_s.into()),
            column("TTL evictions", "", Format::Int, |x| sess(x.run).ttl_evictions.into()),
            column("Pressure evictions", "", Format::Int, |x| sess(x.run).pressure_evictions.into()),
            column("Diagnosis", "", Format::Text, |x| session_brief(x.run).into()),
        ]
    }

    fn conclude(base: &Spec, rows: &[SweepRow<'_, Option<f64>>], r: &[RunSummary], rep: &mut StudyReport) {
        let ttls: Vec<Option<f64>> = rows.iter().map(|x| x.value).collect();
        let front: Vec<bool> = rows.iter().map(|x| x.on_front).collect();
        // The knee: the least HBM whose p95 turn TTFT is within 10 % of the best.
        let best_ttft = r.iter().map(|x| sess(x).turn_ttft_p95_s).fold(f64::INFINITY, f64::min);
        rep.best_row = (0..r.len())
            .filter(|&i| front[i] && sess(&r[i]).turn_ttft_p95_s <= best_ttft * 1.1)
            .reduce(|a, b| if sess(&r[b]).hbm_mean_gb < sess(&r[a]).hbm_mean_gb { b } else { a });
        if let Some(b) = rep.best_row {
            let s = sess(&r[b]);
            rep.answer = format!(
                "TTL {} is the knee: p95 turn TTFT {} (within 10 % of the best, {}) holding {:.2} GB of HBM on average; {} of {} TTLs are on the latency / memory frontier.",
                ttl_label(ttls[b]),
                crate::metrics::secs(s.turn_ttft_p95_s),
                crate::metrics::secs(best_ttft),
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
                    labels: ttls.iter().map(|&t| ttl_label(t)).collect(),
                    line: false,
                },
                line("frontier", f),
            ],
            target: None,
        }];
        rep.notes = vec![
            program_note(base),
            format!(
                "The scenario's router and host tier are kept{}; TTL 0 frees (or offloads) at once, ∞ keeps until the session ends or pressure evicts.",
                if base.engine.host_kv.is_some() {
                    " (an expired history moves to host memory)"
                } else {
                    " (no host tier: an expired history is freed)"
                }
            ),
            "Pareto: no other TTL has at most the p95 turn TTFT and at most the mean HBM held, better on one.".into(),
        ];
    }
}
