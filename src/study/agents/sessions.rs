//! `agent-sessions`: one run of the scenario, read as a session workload.

use super::*;
use crate::spec::Bound;
use crate::study::option::{Bounded, Text, described};
use crate::study::{ColumnDef, column, table};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SessionsParams {
    /// Turn indices the TTFT-by-turn chart shows (1 … 64).
    pub turns_shown: u32,
}

described!(SessionsParams {
    turns_shown: Text {
        label: "Turns on the chart",
        unit: "1 … 64",
        help: "TTFT by turn index shows turns up to this",
        bound: Some(Bound::Int(1, 64)),
    };
});

impl Default for SessionsParams {
    fn default() -> Self {
        SessionsParams { turns_shown: 32 }
    }
}

pub struct SessionsStudy {
    base: Spec,
    turns_shown: u32,
    batch: OneBatch,
}

impl StudyDef for SessionsStudy {
    const ABOUT: About = About {
        name: "agent-sessions",
        title: "Agent sessions",
        question: "what do these agent sessions see, turn by turn, and what holds them back?",
        how: "One run of the session workload — turns that re-send a growing history, tool calls between them, a retention policy, a host tier and a router — on the Serving Lab's model, GPUs and engine: turn latency by turn index, and what retention holds over time.",
        group: Group::Agents,
        rank: Rank::Unranked,
        repeats_by: None,
    };
    type Options = SessionsParams;

    fn new(spec: &Spec, p: &SessionsParams) -> Result<Self, ScenarioError> {
        check_base(spec, Self::at())?;
        let mut e = Errors::default();
        p.check_bounds(&Self::at(), &mut e);
        e.finish()?;
        let jobs = vec![Job { label: spec.name.clone(), spec: spec.clone() }];
        Ok(SessionsStudy { base: spec.clone(), turns_shown: p.turns_shown, batch: OneBatch::new(jobs) })
    }
}

/// The figures of one session run: (name, shown, value in its unit, unit).
fn session_figures(s: &SessionRun) -> Vec<(&'static str, String, f64, &'static str)> {
    let secs = crate::metrics::secs;
    let pct = |x: f64| format!("{:.1} %", x * 100.0);
    let gb = |x: f64| format!("{x:.2} GB");
    let count = |x: u64| (format!("{x}"), x as f64);
    let c = |name, (shown, v): (String, f64), unit| (name, shown, v, unit);
    // The three shares sum to one; rounding must not show a negative miss rate.
    let miss = (1.0 - s.hbm_hit_rate - s.host_hit_rate).max(0.0);
    vec![
        c("Sessions", count(s.sessions), ""),
        c("Turns", count(s.turns), ""),
        ("p50 turn TTFT", secs(s.turn_ttft_p50_s), s.turn_ttft_p50_s, "s"),
        ("p95 turn TTFT", secs(s.turn_ttft_p95_s), s.turn_ttft_p95_s, "s"),
        ("p95 session E2E", secs(s.session_e2e_p95_s), s.session_e2e_p95_s, "s"),
        (
            "Session SLO attainment",
            s.slo_attainment.map_or("– (no session objective)".into(), pct),
            s.slo_attainment.unwrap_or(f64::NAN),
            "fraction",
        ),
        ("History reused", pct(s.reuse), s.reuse, "fraction"),
        ("HBM hits", pct(s.hbm_hit_rate), s.hbm_hit_rate, "of later turns"),
        ("Host hits", pct(s.host_hit_rate), s.host_hit_rate, "of later turns"),
        ("Misses (recomputed)", pct(miss), miss, "of later turns"),
        ("Route locality", pct(s.route_locality), s.route_locality, "of later turns"),
        c("Recomputed history", count(s.recomputed_history_tokens), "tokens"),
        ("Mean retained HBM", gb(s.hbm_mean_gb), s.hbm_mean_gb, "GB"),
        ("Peak retained HBM", gb(s.hbm_peak_gb), s.hbm_peak_gb, "GB"),
        ("HBM held by retention", format!("{:.0} GB·s", s.hbm_gb_s), s.hbm_gb_s, "GB·s"),
        ("Mean host KV", gb(s.host_mean_gb), s.host_mean_gb, "GB"),
        ("Peak host KV", gb(s.host_peak_gb), s.host_peak_gb, "GB"),
        c("TTL evictions", count(s.ttl_evictions), ""),
        c("Pressure evictions", count(s.pressure_evictions), ""),
        c("Host evictions", count(s.host_evictions), ""),
        ("p95 restore wait", secs(s.restore_p95_s), s.restore_p95_s, "s"),
        c("Failed turns", count(s.failed_turns), ""),
        c("Sessions ended by the context", count(s.ended_by_context), ""),
    ]
}

/// A session class's rows: (name, shown, value in its unit, unit).
fn class_figures(c: &crate::study::SessionClassRun) -> Vec<(&'static str, String, f64, &'static str)> {
    let secs = crate::metrics::secs;
    let pct = |x: f64| format!("{:.1} %", x * 100.0);
    vec![
        ("sessions", c.sessions.to_string(), c.sessions as f64, ""),
        ("p95 turn TTFT", secs(c.turn_ttft_p95_s), c.turn_ttft_p95_s, "s"),
        ("p95 session E2E", secs(c.session_e2e_p95_s), c.session_e2e_p95_s, "s"),
        ("history reused", pct(c.reuse), c.reuse, "fraction"),
        (
            "session SLO attainment",
            c.slo_attainment.map_or("– (no session objective)".into(), pct),
            c.slo_attainment.unwrap_or(f64::NAN),
            "fraction",
        ),
    ]
}

/// p95 turn TTFT of each session class, a bar each.
fn class_bars(classes: &[crate::study::SessionClassRun]) -> Chart {
    let points = classes.iter().enumerate().map(|(i, c)| (i as f64, c.turn_ttft_p95_s)).collect();
    Chart {
        kind: "bars".into(),
        title: "p95 turn TTFT by session class".into(),
        x_label: "session class".into(),
        y_label: "p95 turn TTFT (s)".into(),
        categories: classes.iter().map(|c| c.name.clone()).collect(),
        series: vec![ChartSeries { name: "p95 turn TTFT".into(), points, band: vec![], labels: vec![], line: false }],
        target: None,
    }
}

/// A figure's row: its name, how it is shown, its value (NaN: none) and its unit.
type Figure = (String, String, f64, &'static str);

const COLUMNS: [ColumnDef<Figure>; 4] = [
    column("Figure", "", Format::Text, |f| f.0.as_str().into()),
    column("Shown", "", Format::Text, |f| f.1.as_str().into()),
    column("Value", "in its unit", Format::Figure, |f| if f.2.is_nan() { Cell::Empty } else { f.2.into() }),
    column("Unit", "", Format::Text, |f| f.3.into()),
];

impl OneBatchStudy for SessionsStudy {
    fn batch(&self) -> &OneBatch {
        &self.batch
    }
    fn batch_mut(&mut self) -> &mut OneBatch {
        &mut self.batch
    }
    fn build_report(&self, r: &[RunSummary]) -> StudyReport {
        let mut rep = report_head(SessionsStudy::ABOUT, &self.base, Self::ABOUT.question.into());
        let Some(run) = r.first() else { return rep };
        let s = sess(run);
        let mut rows: Vec<Figure> =
            session_figures(s).into_iter().map(|(n, shown, v, u)| (n.into(), shown, v, u)).collect();
        for c in &s.classes {
            rows.extend(class_figures(c).into_iter().map(|(n, shown, v, u)| (format!("{}: {n}", c.name), shown, v, u)));
        }
        (rep.columns, rep.rows) = table(&COLUMNS, &rows);
        rep.answer = format!(
            "p95 turn TTFT {} over {} turns of {} sessions; {}.",
            crate::metrics::secs(s.turn_ttft_p95_s),
            s.turns,
            s.sessions,
            session_brief(run)
        );
        let shown: Vec<&(u32, f64, f64)> = s.ttft_by_turn.iter().filter(|t| t.0 <= self.turns_shown).collect();
        let by_turn = |f: fn(&(u32, f64, f64)) -> f64| shown.iter().map(|t| (t.0 as f64, f(t))).collect::<Vec<_>>();
        rep.charts = vec![
            lines(
                "TTFT by turn index",
                "turn index",
                "TTFT (s)",
                vec![line("p50", by_turn(|t| t.1)), line("p95", by_turn(|t| t.2))],
            ),
            lines(
                "Retained KV over time",
                "time (s)",
                "retained KV (GB)",
                vec![
                    line("HBM (idle history)", s.kv_series.iter().map(|p| (p.0, p.1)).collect()),
                    line("host memory", s.kv_series.iter().map(|p| (p.0, p.2)).collect()),
                ],
            ),
        ];
        if !s.classes.is_empty() {
            rep.charts.push(class_bars(&s.classes));
        }
        rep.notes = vec![
            "One run of the scenario as it stands (its retention, host tier and router); the Agents studies compare policies on the same sessions.".into(),
            "Hits, misses and locality are of turns after a session's first, at their first admission. Retained HBM is idle session history (what retention holds between turns); host KV is history in host memory.".into(),
        ];
        rep.runs = r.to_vec();
        rep
    }
}
