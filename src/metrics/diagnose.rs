//! The bottleneck explanation: a short diagnosis computed from a run's report, with the numbers behind it,
//! ending with the one change most likely to help. It answers "capacity problem or queueing problem?".

use serde::Serialize;

use super::steady::{Miss, ObjectivesReport, SteadySummary};
use super::summary::{EngineSummary, PoolSummary, PrefixSummary, Summary, TransferSummary};

/// One number behind the verdict.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    pub label: String,
    /// Fraction (0–1) or a plain number, as `unit` says.
    pub value: f64,
    pub unit: &'static str,
}

/// The diagnosis of a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Diagnosis {
    /// `healthy`, `capacity`, `queueing`, `memory`, `interference`, `overload_rejections`, or (disaggregated)
    /// `transfer`.
    pub kind: &'static str,
    /// One or two plain sentences with the numbers.
    pub verdict: String,
    /// The change most likely to help.
    pub advice: String,
    pub findings: Vec<Finding>,
    /// Which per-request objective each class missed, and how often (empty when none was missed).
    pub missed: Vec<Miss>,
}

fn pct(x: f64) -> String {
    format!("{:.0} %", x * 100.0)
}

use super::secs;

/// "Missed: TTFT ≤ 1000 ms for chat (38.2 % of its requests; p95 2.3 s); p95 TTFT ≤ 1000 ms (measured 2.3 s,
/// +131 %)." — empty when every objective was met.
fn missed_sentence(o: &ObjectivesReport, missed: &[Miss]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for m in missed {
        parts.push(match m.objective {
            "served" => format!("{} of {} requests were not served", pct1(m.missed_fraction), m.class),
            obj => format!(
                "{} ≤ {} for {} ({} of its requests over; p95 {})",
                obj.to_uppercase(),
                secs(m.max_s),
                m.class,
                pct1(m.missed_fraction),
                secs(m.p95_s)
            ),
        });
    }
    for p in o.percentiles.iter().filter(|p| !p.met) {
        let of = p.class.as_ref().map(|c| format!(" of {c}")).unwrap_or_default();
        let by = if p.max_s > 0.0 { format!(", {:+.0} %", (p.value_s / p.max_s - 1.0) * 100.0) } else { String::new() };
        parts.push(if p.samples == 0 {
            format!("p{} {}{of} ≤ {} (no request completed)", p.percentile, p.metric.label(), secs(p.max_s))
        } else {
            format!("p{} {}{of} ≤ {} (measured {}{by})", p.percentile, p.metric.label(), secs(p.max_s), secs(p.value_s))
        });
    }
    if parts.is_empty() && !o.attainment_met {
        parts.push(format!("the attainment target {} (measured {})", pct1(o.attainment_target), pct1(o.attainment)));
    }
    if parts.is_empty() { String::new() } else { format!(" Missed: {}.", parts.join("; ")) }
}

fn pct1(x: f64) -> String {
    format!("{:.1} %", x * 100.0)
}

/// The figures a verdict is decided on.
#[derive(Clone, Copy)]
struct Evidence {
    queue_share: f64,
    busy: f64,
    kv_limited: f64,
    preempt_per_req: f64,
    prefill_share: f64,
    turned_away: f64,
}

impl Evidence {
    fn of(s: &Summary, e: &EngineSummary) -> Evidence {
        let queue_share = if s.ttft_s.mean > 0.0 { (s.queue_delay_s.mean / s.ttft_s.mean).min(1.0) } else { 0.0 };
        let busy = e.busy_fraction;
        let kv_limited = e.limiter.kv_free + e.limiter.kv_reservation + e.limiter.preemption;
        let preempt_per_req = if s.requests > 0 { s.preemptions as f64 / s.requests as f64 } else { 0.0 };
        let step_total: f64 = [
            e.cost_breakdown_s.prefill_compute,
            e.cost_breakdown_s.decode_compute,
            e.cost_breakdown_s.weights,
            e.cost_breakdown_s.kv_read,
        ]
        .iter()
        .sum::<f64>()
        .max(1e-12);
        let prefill_share = e.cost_breakdown_s.prefill_compute / step_total;
        let turned_away = if s.requests > 0 { (s.rejected + s.failed) as f64 / s.requests as f64 } else { 0.0 };
        Evidence { queue_share, busy, kv_limited, preempt_per_req, prefill_share, turned_away }
    }

    fn findings(&self, s: &Summary, e: &EngineSummary) -> Vec<Finding> {
        let Evidence { queue_share, busy, kv_limited, preempt_per_req, prefill_share, turned_away } = *self;
        vec![
            Finding { label: "SLO attainment".into(), value: s.slo_attainment, unit: "fraction" },
            Finding {
                label: "device time-busy (share of time stepping, not of capacity)".into(),
                value: busy,
                unit: "fraction",
            },
            Finding { label: "queueing share of mean TTFT".into(), value: queue_share, unit: "fraction" },
            Finding { label: "steps limited by KV memory".into(), value: kv_limited, unit: "fraction" },
            Finding { label: "steps limited by the batch cap".into(), value: e.limiter.max_seqs, unit: "fraction" },
            Finding {
                label: "steps limited by the token budget".into(),
                value: e.limiter.token_budget,
                unit: "fraction",
            },
            Finding { label: "preemptions per request".into(), value: preempt_per_req, unit: "number" },
            Finding { label: "prefill share of compute+memory time".into(), value: prefill_share, unit: "fraction" },
            Finding { label: "requests rejected or failed".into(), value: turned_away, unit: "fraction" },
        ]
    }
}

/// Diagnose from the summary, engine figures, the steady window and the objectives.
pub fn diagnose(
    s: &Summary,
    e: &EngineSummary,
    st: &SteadySummary,
    o: &ObjectivesReport,
    missed: Vec<Miss>,
) -> Diagnosis {
    let ev = Evidence::of(s, e);
    let findings = ev.findings(s, e);
    let (kind, verdict, advice) = verdict(&ev, s, st, o);
    let verdict = if o.met { verdict } else { format!("{verdict}{}", missed_sentence(o, &missed)) };
    Diagnosis { kind, verdict, advice, findings, missed }
}

/// The kind, the verdict and the advice, from the first rule that applies.
fn verdict(ev: &Evidence, s: &Summary, st: &SteadySummary, o: &ObjectivesReport) -> (&'static str, String, String) {
    let Evidence { queue_share, busy, kv_limited, preempt_per_req, prefill_share, turned_away } = *ev;
    if o.met && st.overloaded {
        (
            "capacity",
            format!(
                "The objectives are met over this run, but the cluster does not keep up: the number in system grew from {} to {} while {:.2} req/s were offered and {:.2} req/s served (device time-busy {}). A longer run would miss them.",
                st.in_system_start, st.in_system_end, st.offered_rate_rps, st.throughput_rps, pct(busy)
            ),
            "Add capacity (replicas or faster GPUs) or reduce the load; the capacity planner finds the rate this cluster sustains.".into(),
        )
    } else if o.met {
        (
            "healthy",
            format!(
                "The objectives are met ({} of requests meet their SLOs, target {}). The device is time-busy {}; queueing is {} of mean TTFT.",
                pct1(s.slo_attainment),
                pct1(o.attainment_target),
                pct(busy),
                pct(queue_share)
            ),
            if busy < 0.5 {
                "There is headroom: fewer GPUs or a higher load would still meet the SLOs; measure it with the capacity planner.".into()
            } else {
                "Keep a margin: the device is well used; watch p99 as load grows.".into()
            },
        )
    } else if turned_away > 0.2 {
        (
            "overload_rejections",
            format!(
                "{} of requests were rejected or failed; SLO attainment is {}.",
                pct1(turned_away),
                pct1(s.slo_attainment)
            ),
            "The system sheds load: add capacity, or relax the admission policy if the rejections are premature."
                .into(),
        )
    } else if kv_limited > 0.2 || preempt_per_req > 0.1 {
        (
            "memory",
            format!("KV memory is the binding limit: {} of steps were held back by KV, {:.2} preemptions per request, KV peak {}.", pct(kv_limited), preempt_per_req, pct(s.kv_peak_fraction)),
            "Add KV memory (more GPUs per replica, FP8 KV, higher gpu_memory_utilization) or reserve KV closer to the true output length to avoid preemptions.".into(),
        )
    } else if busy > 0.9 && queue_share > 0.5 {
        // Under continuous batching the device steps whenever anything is present, so "busy" alone is not
        // saturation; busy *and* queues dominating TTFT is.
        (
            "capacity",
            format!("A capacity problem: the device is time-busy {} and requests spend {} of their TTFT waiting in the queue.", pct(busy), pct(queue_share)),
            "Add capacity (replicas or faster GPUs) or reduce the load; a different scheduler only reshuffles who waits.".into(),
        )
    } else if queue_share > 0.5 {
        // Not saturated (busy ≤ 90 %), yet waiting dominates.
        (
            "queueing",
            format!("A queueing problem: the device is only {} time-busy, yet {} of TTFT is spent waiting — bursts or uneven routing build queues.", pct(busy), pct(queue_share)),
            "Smooth the queues before buying capacity: a load-aware router (least outstanding, power of two) or a central queue, and a shortest-job-first order.".into(),
        )
    } else if prefill_share > 0.4 {
        (
            "interference",
            format!("Prefill interference: prefill takes {} of step time and shares steps with decodes, so TPOT suffers while the device is {} time-busy.", pct(prefill_share), pct(busy)),
            "Use smaller prefill chunks or a smaller token budget to bound decode stalls, or separate prefill from decode (disaggregation).".into(),
        )
    } else {
        (
            "capacity",
            format!("SLO attainment is {} with the device {} time-busy and {} of TTFT queueing: service itself is too slow for the SLOs.", pct1(s.slo_attainment), pct(busy), pct(queue_share)),
            "The per-request service time misses the SLO even without queueing: a faster GPU, more tensor parallelism, or a looser SLO.".into(),
        )
    }
}

/// Disaggregated and prefix-sharing runs: add their evidence, and when the link or a pool is what limits the
/// run, say so instead of the colocated verdict. Colocated runs are left as they are.
pub fn diagnose_pools(
    d: &mut Diagnosis,
    s: &Summary,
    o: &ObjectivesReport,
    pools: Option<&[PoolSummary]>,
    transfer: Option<&TransferSummary>,
    prefix: Option<&PrefixSummary>,
) {
    if let Some(p) = prefix {
        d.findings.push(Finding { label: "prefix cache hit rate".into(), value: p.hit_rate, unit: "fraction" });
    }
    let (Some(pools), Some(t)) = (pools, transfer) else { return };
    let busy = |role: &str| pools.iter().find(|p| p.role == role).map_or(0.0, |p| p.busy_fraction);
    let kv_peak = |role: &str| pools.iter().find(|p| p.role == role).map_or(0.0, |p| p.kv_peak_fraction);
    let transfer_share = if s.ttft_s.p95 > 0.0 { (t.latency_s.p95 / s.ttft_s.p95).min(1.0) } else { 0.0 };
    d.findings.push(Finding { label: "prefill pool busy".into(), value: busy("prefill"), unit: "fraction" });
    d.findings.push(Finding { label: "decode pool busy".into(), value: busy("decode"), unit: "fraction" });
    d.findings.push(Finding {
        label: "busiest transfer link busy".into(),
        value: t.link_busy_max_fraction,
        unit: "fraction",
    });
    d.findings.push(Finding { label: "KV transfer share of p95 TTFT".into(), value: transfer_share, unit: "fraction" });
    if o.met {
        return;
    }
    if t.link_busy_max_fraction > 0.8 || transfer_share > 0.5 {
        d.kind = "transfer";
        d.verdict = format!(
            "The KV-transfer link limits the run: the busiest link is busy {}, and transfer is {} of p95 TTFT (p95 transfer {:.0} ms).",
            pct(t.link_busy_max_fraction),
            pct(transfer_share),
            t.latency_s.p95 * 1e3
        );
        d.advice = "A faster interconnect, a link per prefill/decode pair, fewer KV bytes per token (FP8 KV), or prefix caching on the prefill side.".into();
    } else if busy("prefill") > 0.9 && d.kind != "memory" {
        d.kind = "capacity";
        d.verdict = format!(
            "The prefill pool is the bottleneck: busy {} while the decode pool is busy {}; TTFT is prefill queueing.",
            pct(busy("prefill")),
            pct(busy("decode"))
        );
        d.advice = "Move workers from decode to prefill (or add prefill workers), or cache shared prefixes to cut prefill work.".into();
    } else if kv_peak("decode") > 0.95 {
        d.kind = "memory";
        d.verdict =
            format!("Decode KV is full (peak {}): transferred prompts wait for decode memory.", pct(kv_peak("decode")));
        d.advice =
            "More decode workers or decode memory (TP, FP8 KV), or reserve KV closer to the true output length.".into();
    } else {
        return; // the colocated verdict stands, with its sentence on what was missed
    }
    d.verdict.push_str(&missed_sentence(o, &d.missed));
}
