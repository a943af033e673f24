//! Design explorer: candidate deployments (engine knobs, TP, replicas, scheduler, P/D layouts, prefix cache) on
//! the same requests; the non-dominated frontier on goodput vs p95 TTFT (performance) and on goodput per GPU vs
//! p95 TTFT (efficiency), so a layout that simply uses more GPUs does not look better for free.

use crate::scenario::at;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{
    About, Chart, ChartSeries, ColumnDef, Format, Group, Job, OneBatch, OneBatchStudy, Rank, RunSummary, StudyDef,
    StudyReport, brief, column, decisive, pareto, patched, report_head, table,
};
use crate::scenario::{self, Errors, Scenario, ScenarioError, Spec};
use crate::spec::Bound;
use crate::study::option::{Bounded, Text, described};

/// A candidate: a name and the scenario fields it changes (JSON pointer → value).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Candidate {
    pub name: String,
    #[serde(default)]
    pub set: Map<String, Value>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ExplorerParams {
    /// The candidates (default: `default_candidates` of the scenario).
    pub candidates: Option<Vec<Candidate>>,
    /// SLO attainment a candidate must reach to pass, (0, 1]; absent: the scenario's attainment target.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<f64>,
}

described!(ExplorerParams {
    target: Text {
        label: "SLO pass at",
        unit: "fraction (empty: the scenario's target)",
        help: "A candidate passes at this SLO attainment",
        bound: Some(Bound::OpenLo(0.0, 1.0)),
    };
    candidates: Text {
        label: "Candidates",
        unit: "JSON: [{name, set: {JSON pointer: value}}]",
        help: "Each candidate changes these scenario fields",
        bound: None,
    };
});

/// Ten colocated variations of the scenario and up to six P/D / prefix-cache layouts. Layouts that change how
/// the GPUs are arranged keep the baseline's GPU count: TP ×2 halves the replicas (when they are even), and the
/// P/D layouts split the baseline's replicas into prefill and decode workers (about 1:1, 1:2 and 1:3, the
/// distinct splits there are). Only "replicas +1" adds GPUs on purpose, and a one-replica baseline's P/D
/// layouts (which need two workers); `gpu_note` says which.
pub fn default_candidates(spec: &Spec, sc: &Scenario) -> Vec<Candidate> {
    let e = &spec.engine;
    let c = |name: &str, set: Value| Candidate { name: name.into(), set: set.as_object().cloned().unwrap_or_default() };
    let budget_half = (e.max_num_batched_tokens / 2).max(1);
    let chunk = e.prefill_chunk_tokens.unwrap_or(e.max_num_batched_tokens);
    // The P/D comparison's defaults: the scenario's prefix, or the one that study assumes.
    let prefix = match &spec.prefix {
        Some(p) => p.clone(),
        None => super::pd::default_prefix(sc, &Default::default()),
    };
    let prefix = serde_json::to_value(prefix).expect("serialises");
    let with_cache = |on: bool| {
        let mut p = prefix.clone();
        p["caching"] = json!(on);
        p
    };
    let link = serde_json::to_value(super::pd::default_link()).expect("serialises");
    let pd = |p: u32, d: u32| json!({"prefill": {"replicas": p}, "decode": {"replicas": d}, "link": link});
    let r = spec.cluster.replicas;
    let tp2 = if r.is_multiple_of(2) {
        c("TP ×2, replicas ×½", json!({"/hardware/tp": spec.hardware.tp * 2, "/cluster/replicas": r / 2}))
    } else {
        c("TP ×2", json!({"/hardware/tp": spec.hardware.tp * 2}))
    };
    let mut v = vec![
        c("baseline", json!({})),
        c("batch cap ×½", json!({"/engine/max_num_seqs": (e.max_num_seqs / 2).max(1)})),
        c("batch cap ×2", json!({"/engine/max_num_seqs": e.max_num_seqs.saturating_mul(2).min(65_536)})),
        c(
            "token budget ×½",
            json!({"/engine/max_num_batched_tokens": budget_half, "/engine/prefill_chunk_tokens": chunk.min(budget_half)}),
        ),
        c("token budget ×2", json!({"/engine/max_num_batched_tokens": e.max_num_batched_tokens.saturating_mul(2)})),
        c(
            "chunk 512",
            json!({"/engine/prefill_chunk_tokens": 512u32.min(e.max_num_batched_tokens), "/engine/chunked_prefill": true}),
        ),
        tp2,
        c("replicas +1", json!({"/cluster/replicas": spec.cluster.replicas + 1})),
        c("SJF scheduler", json!({"/scheduler": {"kind": "sjf"}})),
        c("priority scheduler", json!({"/scheduler": {"kind": "priority"}})),
    ];
    for (p, d) in pd_splits(r) {
        v.push(c(&format!("P/D {p}:{d}"), json!({"/cluster/disaggregation": pd(p, d), "/prefix": with_cache(false)})));
        v.push(c(
            &format!("P/D {p}:{d} + prefix cache"),
            json!({"/cluster/disaggregation": pd(p, d), "/prefix": with_cache(true)}),
        ));
    }
    v
}

/// Prefill : decode workers from `replicas` workers, about 1:1, 1:2 and 1:3, each split once; one replica
/// cannot be split, so then 1:1, 1:2 and 1:3 workers (more GPUs than the baseline).
fn pd_splits(replicas: u32) -> Vec<(u32, u32)> {
    if replicas < 2 {
        return vec![(1, 1), (1, 2), (1, 3)];
    }
    let mut out: Vec<(u32, u32)> = Vec::new();
    for d in [1, 2, 3] {
        let p = ((replicas as f64 / (d as f64 + 1.0)).round() as u32).clamp(1, replicas - 1);
        if !out.contains(&(p, replicas - p)) {
            out.push((p, replicas - p));
        }
    }
    out
}

/// Which default candidates use another GPU count than the baseline's, said once in the report.
fn gpu_note(spec: &Spec) -> String {
    let (r, tp) = (spec.cluster.replicas, spec.hardware.tp);
    let gpus = r * tp;
    if r < 2 {
        return format!(
            "GPU counts: the baseline has {gpus} GPU{}, one replica, which cannot be halved or split, so TP ×2 ({} GPUs), replicas +1 ({} GPUs) and the P/D layouts ({}, {} and {} GPUs) use more; compare them on goodput per GPU (the efficiency frontier).",
            if gpus == 1 { "" } else { "s" },
            2 * gpus,
            gpus + tp,
            2 * tp,
            3 * tp,
            4 * tp
        );
    }
    let mut more = vec![format!("replicas +1 ({} GPUs)", gpus + tp)];
    if !r.is_multiple_of(2) {
        more.push(format!("TP ×2 ({} GPUs: {r} replicas cannot be halved)", 2 * gpus));
    }
    format!(
        "GPU counts: every candidate uses the baseline's {gpus} GPUs (TP ×2 with half the replicas, P/D layouts split its {r} replicas) but {}; compare those on goodput per GPU (the efficiency frontier).",
        more.join(", ")
    )
}

pub struct ExplorerStudy {
    base: Spec,
    target: f64,
    batch: OneBatch,
    notes: Vec<String>,
}

impl StudyDef for ExplorerStudy {
    const ABOUT: About = About {
        name: "explorer",
        title: "Design explorer",
        question: "which candidate deployments are on the goodput / p95 TTFT frontier?",
        how: "Candidate deployments on the same requests, with the non-dominated frontier of goodput against p95 TTFT — in total (performance) and per GPU (efficiency), so more GPUs do not look better for free.",
        group: Group::Decide,
        rank: Rank::Most("Goodput/GPU"),
        repeats_by: None,
    };
    type Options = ExplorerParams;

    fn new(spec: &Spec, p: &ExplorerParams) -> Result<Self, ScenarioError> {
        let sc = scenario::validate(spec)?;
        let mut e = Errors::default();
        p.check_bounds(&Self::at(), &mut e);
        e.finish()?;
        let mut notes = Vec::new();
        let (candidates, given) = match &p.candidates {
            Some(c) if c.is_empty() => {
                return Err(ScenarioError::one(
                    at!(Self::at(), p.candidates),
                    "the candidate list is empty: give at least one",
                ));
            }
            Some(c) => (c.clone(), true),
            None => (default_candidates(spec, &sc), false),
        };
        let mut jobs = Vec::new();
        for (i, c) in candidates.iter().enumerate() {
            let what = format!("{}[{i}]", at!(Self::at(), p.candidates));
            if c.name.trim().is_empty() {
                return Err(ScenarioError::one(format!("{what}.name"), "a candidate needs a name"));
            }
            let s = patched(spec, &c.set, &what)?;
            match scenario::validate(&s) {
                Ok(_) => jobs.push(Job { label: c.name.clone(), spec: s }),
                // A default candidate the scenario cannot take (e.g. TP beyond the model's heads) is skipped.
                Err(e) if !given => {
                    notes.push(format!("Candidate \"{}\" was skipped: {}", c.name, e.errors[0].message))
                }
                Err(e) => return Err(super::at_option(e, &format!("{what}.set"))),
            }
        }
        if !given {
            notes.push("Candidates: ten variations of the scenario and P/D layouts with and without prefix caching (edit them in the study options).".into());
            notes.push(gpu_note(spec));
        }
        let target = p.target.unwrap_or(sc.objectives.attainment_target);
        Ok(ExplorerStudy { base: spec.clone(), target, batch: OneBatch::new(jobs), notes })
    }
}

impl OneBatchStudy for ExplorerStudy {
    fn batch(&self) -> &OneBatch {
        &self.batch
    }
    fn batch_mut(&mut self) -> &mut OneBatch {
        &mut self.batch
    }
    fn build_report(&self, results: &[RunSummary]) -> StudyReport {
        let mut rep = report_head(ExplorerStudy::ABOUT, &self.base, Self::ABOUT.question.into());
        let r = results;
        let perf = pareto(&r.iter().map(|x| (x.goodput_rps, x.ttft_p95_s)).collect::<Vec<_>>());
        let eff = pareto(&r.iter().map(|x| (x.goodput_per_gpu_rps, x.ttft_p95_s)).collect::<Vec<_>>());
        let pass: Vec<bool> = r.iter().map(|x| x.slo_attainment >= self.target).collect();
        let rows: Vec<Row> =
            (r.iter().enumerate()).map(|(i, run)| Row { run, perf: perf[i], eff: eff[i], pass: pass[i] }).collect();
        (rep.columns, rep.rows) = table(&columns(), &rows);
        // The recommendation: on the efficiency frontier and passing, the most goodput per GPU.
        let pick = |ok: &dyn Fn(usize) -> bool| {
            (0..r.len())
                .filter(|&i| ok(i))
                .reduce(|a, b| if r[b].goodput_per_gpu_rps > r[a].goodput_per_gpu_rps { b } else { a })
        };
        rep.best_row = pick(&|i| eff[i] && pass[i]).or_else(|| pick(&|i| eff[i]));
        if let Some(b) = rep.best_row {
            let x = &r[b];
            rep.answer = format!(
                "{} is the most efficient{} candidate on the frontier: {:.3} req/s per GPU ({:.2} req/s on {} GPUs), p95 TTFT {:.3} s, SLO attainment {:.1} %. {} of {} candidates are on the performance frontier, {} on the efficiency frontier.",
                x.label,
                if pass[b] { " passing" } else { " (none passes the target)" },
                x.goodput_per_gpu_rps,
                x.goodput_rps,
                x.gpus,
                x.ttft_p95_s,
                x.slo_attainment * 100.0,
                perf.iter().filter(|p| **p).count(),
                r.len(),
                eff.iter().filter(|p| **p).count()
            );
        }
        rep.charts = vec![
            frontier_scatter(
                r,
                "Performance: goodput vs p95 TTFT",
                "goodput (req/s)",
                |x| x.goodput_rps,
                &perf,
                "performance frontier",
            ),
            frontier_scatter(
                r,
                "Efficiency: goodput per GPU vs p95 TTFT",
                "goodput per GPU (req/s)",
                |x| x.goodput_per_gpu_rps,
                &eff,
                "efficiency frontier",
            ),
        ];
        rep.notes = self.notes.clone();
        rep.notes.push(format!("SLO pass: attainment ≥ {:.1} %. Frontiers: no other candidate has at least as much goodput (per GPU) and at most the p95 TTFT, better on one.", self.target * 100.0));
        rep.runs = r.to_vec();
        rep
    }
}

/// A candidate's row: its run and where it stands.
struct Row<'a> {
    run: &'a RunSummary,
    perf: bool,
    eff: bool,
    pass: bool,
}

fn columns<'a>() -> [ColumnDef<Row<'a>>; 11] {
    [
        column("Candidate", "", Format::Text, |r| r.run.label.as_str().into()),
        column("Perf Pareto", "", Format::Bool, |r| r.perf.into()),
        column("Efficiency Pareto", "", Format::Bool, |r| r.eff.into()),
        decisive("SLO pass", "", Format::Bool, |r| r.pass.into()),
        column("GPU instances", "", Format::Int, |r| r.run.gpus.into()),
        column("Goodput", "req/s", Format::Num, |r| r.run.goodput_rps.into()),
        decisive("Goodput/GPU", "req/s", Format::Num, |r| r.run.goodput_per_gpu_rps.into()),
        column("p95 TTFT", "s", Format::Seconds, |r| r.run.ttft_p95_s.into()),
        column("p95 E2E", "s", Format::Seconds, |r| r.run.e2e_p95_s.into()),
        column("KV peak", "", Format::Percent, |r| r.run.kv_peak_fraction.into()),
        column("Diagnosis", "", Format::Text, |r| brief(r.run).into()),
    ]
}

/// A scatter of every candidate's p95 TTFT against `y`, with the frontier `front` as a line.
fn frontier_scatter(
    r: &[RunSummary],
    title: &str,
    y_label: &str,
    y: fn(&RunSummary) -> f64,
    front: &[bool],
    front_name: &str,
) -> Chart {
    let mut f: Vec<(f64, f64)> = (0..r.len()).filter(|&i| front[i]).map(|i| (r[i].ttft_p95_s, y(&r[i]))).collect();
    f.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    Chart {
        kind: "scatter".into(),
        title: title.into(),
        x_label: "p95 TTFT (s)".into(),
        y_label: y_label.into(),
        categories: vec![],
        series: vec![
            ChartSeries {
                name: "candidates".into(),
                points: r.iter().map(|x| (x.ttft_p95_s, y(x))).collect(),
                band: vec![],
                labels: r.iter().map(|x| x.label.clone()).collect(),
                line: false,
            },
            ChartSeries { name: front_name.into(), points: f, band: vec![], labels: vec![], line: true },
        ],
        target: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_keep_the_baselines_gpus_where_they_can() {
        assert_eq!(pd_splits(9), vec![(5, 4), (3, 6), (2, 7)]);
        assert_eq!(pd_splits(2), vec![(1, 1)]);
        assert_eq!(pd_splits(3), vec![(2, 1), (1, 2)]);
        assert_eq!(pd_splits(1), vec![(1, 1), (1, 2), (1, 3)], "one replica cannot be split");
    }
}
