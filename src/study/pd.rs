//! P/D comparison: colocated vs prefill/decode disaggregated serving, each with and without prefix reuse,
//! on the same requests.

use serde::{Deserialize, Serialize};

use super::{
    About, Chart, ChartSeries, ColumnDef, Format, Group, Job, OneBatch, OneBatchStudy, Rank, RunSummary, StudyDef,
    StudyReport, column, decisive, report_head, table,
};
use crate::metrics::pct;
use crate::scenario::{
    self, DisaggSpec, Errors, LinkSpec, LinkTopology, PoolSpec, PrefixSpec, Scenario, ScenarioError, Spec, at,
};
use crate::spec::{PREFIX_TOKENS, REUSE_FRACTION};
use crate::study::option::described;

/// Options; each is used only when the scenario does not say.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PdParams {
    /// Shared prefix length when the scenario has no `prefix` block.
    pub prefix_tokens: Option<u32>,
    /// Reuse fraction when the scenario has no `prefix` block.
    pub reuse_fraction: Option<f64>,
}

described!(PdParams {});

pub struct PdStudy {
    base: Spec,
    batch: OneBatch,
    notes: Vec<String>,
}

const LABELS: [&str; 4] = ["colocated", "colocated + prefix cache", "P/D", "P/D + prefix cache"];

impl StudyDef for PdStudy {
    const ABOUT: About = About {
        name: "pd",
        title: "P/D comparison",
        question: "colocated or disaggregated prefill/decode, with or without prefix reuse?",
        how: "Colocated serving against prefill/decode disaggregation, each with and without prefix reuse, on the same requests: the goodput per GPU of each layout, and what limits it.",
        group: Group::Decide,
        rank: Rank::Most("Goodput/GPU"),
        repeats_by: None,
    };
    type Options = PdParams;

    fn new(spec: &Spec, p: &PdParams) -> Result<Self, ScenarioError> {
        // Options first, at their own names: a bad one would otherwise be refused at the prefix it sets.
        let mut e = Errors::default();
        PREFIX_TOKENS.check(&at!(Self::at(), p.prefix_tokens), &p.prefix_tokens, &mut e);
        REUSE_FRACTION.check(&at!(Self::at(), p.reuse_fraction), &p.reuse_fraction, &mut e);
        if spec.workload.sessions.is_some() {
            // Said at the scenario's own block: the P/D rows would be refused at a block it does not have.
            e.push(
                "workload.sessions",
                "the P/D study runs disaggregated prefill and decode, which agent sessions are not modelled on: compare session layouts in the agent panels",
            );
        }
        e.finish()?;
        let sc = scenario::validate(spec)?;
        let mut notes = Vec::new();
        let disagg = match &spec.cluster.disaggregation {
            Some(d) => d.clone(),
            None => {
                let d = default_disaggregation(spec);
                notes.push(format!(
                    "The scenario has no cluster.disaggregation: P/D uses {} prefill + {} decode workers (the colocated {}, split a third to prefill) and 50 GB/s links per pair with 0.05 ms latency.",
                    d.prefill.replicas, d.decode.replicas, spec.cluster.replicas
                ));
                d
            }
        };
        let prefix = match &spec.prefix {
            Some(x) => x.clone(),
            None => {
                let x = default_prefix(&sc, p);
                if x.prefix_tokens == 0 {
                    let longest = sc.workload.classes.iter().map(|c| c.prompt.max()).max().unwrap_or(0);
                    notes.push(format!(
                        "The scenario has no prefix block, and its prompts (at most {longest} tokens) are too short to share a whole KV block ({} tokens) below their length: the prefix-cache rows equal the plain ones.",
                        sc.front_pool().engine.block_size_tokens
                    ));
                } else {
                    notes.push(format!(
                        "The scenario has no prefix block: {:.0} % of requests (those with prompts longer than {tokens} tokens) share one of 4 prefixes of {tokens} tokens (Zipf 1.0).",
                        x.reuse_fraction * 100.0,
                        tokens = x.prefix_tokens
                    ));
                }
                x
            }
        };
        let jobs = LABELS
            .iter()
            .enumerate()
            .map(|(i, label)| {
                let mut s = spec.clone();
                s.cluster.disaggregation = (i >= 2).then(|| disagg.clone());
                s.prefix = Some(PrefixSpec { caching: i % 2 == 1, ..prefix.clone() });
                Job { label: label.to_string(), spec: s }
            })
            .collect::<Vec<_>>();
        // Every variant must be valid before anything runs; where an option the user gave made its prefix, a
        // refusal of the prefix is said at the option.
        let made = spec.prefix.is_none();
        let option = |path: &str| match path {
            "prefix.prefix_tokens" if made && p.prefix_tokens.is_some() => Some(at!(Self::at(), p.prefix_tokens)),
            "prefix.reuse_fraction" if made && p.reuse_fraction.is_some() => Some(at!(Self::at(), p.reuse_fraction)),
            _ => None,
        };
        for j in &jobs {
            scenario::validate(&j.spec).map_err(|e| super::refused_in(e, &j.label, option))?;
        }
        notes.push(
            "Without prefix reuse the requests are the same (same prefixes drawn); only the cache is off.".into(),
        );
        Ok(PdStudy { base: spec.clone(), batch: OneBatch::new(jobs), notes })
    }
}

/// The link a study assumes when the scenario has none: 50 GB/s per prefill→decode pair, 0.05 ms latency.
pub fn default_link() -> LinkSpec {
    LinkSpec { bandwidth_gbps: 50.0, latency_ms: 0.05, topology: LinkTopology::PerPair }
}

/// The P/D layout assumed when the scenario has none: a third of the colocated workers prefill (at least
/// one), the rest decode (at least one), both with the scenario's router, over `default_link`s.
pub fn default_disaggregation(spec: &Spec) -> DisaggSpec {
    let n = spec.cluster.replicas;
    let prefill = (n / 3).max(1);
    let decode = n.saturating_sub(prefill).max(1);
    let pool = |replicas| PoolSpec { replicas, device: None, tp: None, router: spec.cluster.router.clone() };
    DisaggSpec { prefill: pool(prefill), decode: pool(decode), link: default_link() }
}

/// The shared prefix assumed when the scenario has none: `prefix_tokens` (default 1024, at most half the
/// longest prompt, in whole blocks) shared by `reuse_fraction` (default 0.5) of requests, 4 prefixes, Zipf 1.
pub fn default_prefix(sc: &Scenario, p: &PdParams) -> PrefixSpec {
    let longest = sc.workload.classes.iter().map(|c| c.prompt.max()).max().unwrap_or(1);
    let block = sc.front_pool().engine.block_size_tokens;
    // A whole block shorter than the longest prompt, or none at all when even one block is not (the prefix
    // rows then equal the plain ones, and the report says why).
    let fits = (1024.min(longest / 2) / block * block).max(block);
    let tokens = p.prefix_tokens.unwrap_or(if fits < longest { fits } else { 0 });
    PrefixSpec {
        prefix_tokens: tokens,
        reuse_fraction: p.reuse_fraction.unwrap_or(0.5),
        groups: 4,
        zipf_s: 1.0,
        caching: true,
    }
}

fn ms(x: f64) -> String {
    if x < 1.0 { format!("{:.0} ms", x * 1e3) } else { format!("{x:.2} s") }
}

/// One sentence from a row's numbers: the dominant cause first.
pub fn sentence(r: &RunSummary) -> String {
    let slo = format!("SLO {:.1} %", r.slo_attainment * 100.0);
    if let (Some(link), Some(t95)) = (r.link_busy_max_fraction, r.transfer_p95_s) {
        if link > 0.8 {
            return format!(
                "transfer link busy {}: TTFT dominated by KV transfer (the link backs up into prefill; p95 transfer {}, p95 TTFT {})",
                pct(link),
                ms(t95),
                ms(r.ttft_p95_s)
            );
        }
        if r.ttft_p95_s > 0.0 && t95 > 0.5 * r.ttft_p95_s {
            return format!(
                "KV transfer is {} of p95 TTFT ({}): a faster link helps most",
                pct(t95 / r.ttft_p95_s),
                ms(t95)
            );
        }
    }
    if let Some(pb) = r.prefill_busy_fraction
        && pb > 0.9
    {
        return format!("prefill pool busy {}: TTFT is prefill queueing; add prefill workers ({slo})", pct(pb));
    }
    if let Some(dk) = r.decode_kv_peak_fraction
        && dk > 0.95
    {
        return format!("decode KV full ({}): requests wait for decode memory after the transfer ({slo})", pct(dk));
    }
    if let (Some(h), Some(saved)) = (r.prefix_hit_rate, r.prefill_saved_fraction)
        && h > 0.0
    {
        return format!(
            "cache hits on {} of requests skip {} of prompt tokens; {slo}, busy {}",
            pct(h),
            pct(saved),
            pct(r.busy_fraction)
        );
    }
    let first = r.diagnosis_verdict.split(". ").next().unwrap_or("").trim_end_matches('.');
    format!("{}: {first}", r.diagnosis_kind)
}

/// The comparison's table: a row per layout. Cache figures only on the rows that cache.
const COLUMNS: [ColumnDef<RunSummary>; 11] = [
    column("Scenario", "", Format::Text, |x| x.label.as_str().into()),
    column("GPU instances", "", Format::Int, |x| x.gpus.into()),
    column("Goodput", "req/s", Format::Num, |x| x.goodput_rps.into()),
    decisive("Goodput/GPU", "req/s", Format::Num, |x| x.goodput_per_gpu_rps.into()),
    decisive("SLO attainment", "", Format::Percent, |x| x.slo_attainment.into()),
    column("p95 TTFT", "s", Format::Seconds, |x| x.ttft_p95_s.into()),
    column("p95 E2E", "s", Format::Seconds, |x| x.e2e_p95_s.into()),
    column("p95 KV transfer", "s", Format::Seconds, |x| x.transfer_p95_s.into()),
    column("Cache hit", "", Format::Percent, |x| x.prefix_hit_rate.filter(|_| x.label.contains("cache")).into()),
    column("Prefill saved", "of prompt tokens", Format::Percent, |x| {
        x.prefill_saved_fraction.filter(|_| x.label.contains("cache")).into()
    }),
    column("Diagnosis", "", Format::Text, |x| sentence(x).into()),
];

impl OneBatchStudy for PdStudy {
    fn batch(&self) -> &OneBatch {
        &self.batch
    }
    fn batch_mut(&mut self) -> &mut OneBatch {
        &mut self.batch
    }
    fn build_report(&self, results: &[RunSummary]) -> StudyReport {
        let mut rep = report_head(PdStudy::ABOUT, &self.base, Self::ABOUT.question.into());
        let r = results;
        (rep.columns, rep.rows) = table(&COLUMNS, r);
        // Best: most goodput per GPU; ties by SLO attainment, then the simpler layout (earlier row).
        rep.best_row = (0..r.len()).reduce(|a, b| {
            let key = |i: usize| (r[i].goodput_per_gpu_rps, r[i].slo_attainment);
            if key(b) > key(a) { b } else { a }
        });
        if let Some(b) = rep.best_row {
            let best = &r[b];
            let colo = r.first().map_or(0.0, |c| c.goodput_per_gpu_rps);
            let vs = if b > 0 && colo > 0.0 {
                format!(", {:+.1} % against plain colocated serving", (best.goodput_per_gpu_rps / colo - 1.0) * 100.0)
            } else {
                String::new()
            };
            rep.answer = format!(
                "{} gives the most goodput per GPU: {:.3} req/s per GPU ({:.2} req/s on {} GPUs, SLO attainment {:.1} %){vs}.",
                best.label,
                best.goodput_per_gpu_rps,
                best.goodput_rps,
                best.gpus,
                best.slo_attainment * 100.0
            );
        }
        let cats: Vec<String> = r.iter().map(|x| x.label.clone()).collect();
        let bars = |name: &str, f: &dyn Fn(&RunSummary) -> f64| ChartSeries {
            name: name.into(),
            points: r.iter().enumerate().map(|(i, x)| (i as f64, f(x))).collect(),
            band: Vec::new(),
            labels: Vec::new(),
            line: false,
        };
        rep.charts = vec![
            Chart {
                kind: "bars".into(),
                title: "Goodput per GPU".into(),
                x_label: "layout".into(),
                y_label: "req/s per GPU meeting every SLO".into(),
                categories: cats.clone(),
                series: vec![bars("goodput/GPU", &|x| x.goodput_per_gpu_rps)],
                target: None,
            },
            Chart {
                kind: "bars".into(),
                title: "p95 TTFT".into(),
                x_label: "layout".into(),
                y_label: "seconds".into(),
                categories: cats,
                series: vec![bars("p95 TTFT", &|x| x.ttft_p95_s)],
                target: None,
            },
        ];
        rep.notes = self.notes.clone();
        rep.runs = results.to_vec();
        rep
    }
}
