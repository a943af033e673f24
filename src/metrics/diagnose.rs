//! The bottleneck explanation: a short diagnosis computed from a run's report, with the numbers behind it,
//! ending with the one change most likely to help. It answers "capacity problem or queueing problem?".

use serde::Serialize;

use super::report::{EngineSummary, PoolSummary, PrefixSummary, Summary, TransferSummary};

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
}

fn pct(x: f64) -> String {
    format!("{:.0} %", x * 100.0)
}

/// Diagnose from the summary and engine figures.
pub fn diagnose(s: &Summary, e: &EngineSummary) -> Diagnosis {
    let queue_share = if s.ttft_s.mean > 0.0 { (s.queue_delay_s.mean / s.ttft_s.mean).min(1.0) } else { 0.0 };
    let busy = e.busy_fraction;
    let kv_limited = e.limiter.kv_free + e.limiter.kv_reservation + e.limiter.preemption;
    let preempt_per_req = if s.requests > 0 { s.preemptions as f64 / s.requests as f64 } else { 0.0 };
    let step_total: f64 = [e.cost_breakdown_s.prefill_compute, e.cost_breakdown_s.decode_compute, e.cost_breakdown_s.weights, e.cost_breakdown_s.kv_read]
        .iter()
        .sum::<f64>()
        .max(1e-12);
    let prefill_share = e.cost_breakdown_s.prefill_compute / step_total;
    let turned_away = if s.requests > 0 { (s.rejected + s.failed) as f64 / s.requests as f64 } else { 0.0 };
    let findings = vec![
        Finding { label: "SLO attainment".into(), value: s.slo_attainment, unit: "fraction" },
        Finding { label: "device busy".into(), value: busy, unit: "fraction" },
        Finding { label: "queueing share of mean TTFT".into(), value: queue_share, unit: "fraction" },
        Finding { label: "steps limited by KV memory".into(), value: kv_limited, unit: "fraction" },
        Finding { label: "steps limited by the batch cap".into(), value: e.limiter.max_seqs, unit: "fraction" },
        Finding { label: "steps limited by the token budget".into(), value: e.limiter.token_budget, unit: "fraction" },
        Finding { label: "preemptions per request".into(), value: preempt_per_req, unit: "number" },
        Finding { label: "prefill share of compute+memory time".into(), value: prefill_share, unit: "fraction" },
        Finding { label: "requests rejected or failed".into(), value: turned_away, unit: "fraction" },
    ];
    let (kind, verdict, advice) = if s.slo_attainment >= 0.99 {
        (
            "healthy",
            format!("SLOs are met ({} of requests). The device is busy {}; queueing is {} of mean TTFT.", pct(s.slo_attainment), pct(busy), pct(queue_share)),
            if busy < 0.5 { "There is headroom: fewer GPUs or a higher load would still meet the SLOs; measure it with the capacity planner.".into() } else { "Keep a margin: the device is well used; watch p99 as load grows.".into() },
        )
    } else if turned_away > 0.2 {
        (
            "overload_rejections",
            format!("{} of requests were rejected or failed; SLO attainment is {}.", pct(turned_away), pct(s.slo_attainment)),
            "The system sheds load: add capacity, or relax the admission policy if the rejections are premature.".into(),
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
            format!("A capacity problem: the device is busy {} and requests spend {} of their TTFT waiting in the queue.", pct(busy), pct(queue_share)),
            "Add capacity (replicas or faster GPUs) or reduce the load; a different scheduler only reshuffles who waits.".into(),
        )
    } else if queue_share > 0.5 {
        // Not saturated (busy ≤ 90 %), yet waiting dominates.
        (
            "queueing",
            format!("A queueing problem: the device is only {} busy, yet {} of TTFT is spent waiting — bursts or uneven routing build queues.", pct(busy), pct(queue_share)),
            "Smooth the queues before buying capacity: a load-aware router (least outstanding, power of two) or a central queue, and a shortest-job-first order.".into(),
        )
    } else if prefill_share > 0.4 {
        (
            "interference",
            format!("Prefill interference: prefill takes {} of step time and shares steps with decodes, so TPOT suffers while the device is {} busy.", pct(prefill_share), pct(busy)),
            "Use smaller prefill chunks or a smaller token budget to bound decode stalls, or separate prefill from decode (disaggregation).".into(),
        )
    } else {
        (
            "capacity",
            format!("SLO attainment is {} with the device {} busy and {} of TTFT queueing: service itself is too slow for the SLOs.", pct(s.slo_attainment), pct(busy), pct(queue_share)),
            "The per-request service time misses the SLO even without queueing: a faster GPU, more tensor parallelism, or a looser SLO.".into(),
        )
    };
    Diagnosis { kind, verdict, advice, findings }
}

/// Disaggregated and prefix-sharing runs: add their evidence, and when the link or a pool is what limits the
/// run, say so instead of the colocated verdict. Colocated runs are left as they are.
pub fn diagnose_pools(d: &mut Diagnosis, s: &Summary, pools: Option<&[PoolSummary]>, transfer: Option<&TransferSummary>, prefix: Option<&PrefixSummary>) {
    if let Some(p) = prefix {
        d.findings.push(Finding { label: "prefix cache hit rate".into(), value: p.hit_rate, unit: "fraction" });
    }
    let (Some(pools), Some(t)) = (pools, transfer) else { return };
    let busy = |role: &str| pools.iter().find(|p| p.role == role).map_or(0.0, |p| p.busy_fraction);
    let kv_peak = |role: &str| pools.iter().find(|p| p.role == role).map_or(0.0, |p| p.kv_peak_fraction);
    let transfer_share = if s.ttft_s.p95 > 0.0 { (t.latency_s.p95 / s.ttft_s.p95).min(1.0) } else { 0.0 };
    d.findings.push(Finding { label: "prefill pool busy".into(), value: busy("prefill"), unit: "fraction" });
    d.findings.push(Finding { label: "decode pool busy".into(), value: busy("decode"), unit: "fraction" });
    d.findings.push(Finding { label: "busiest transfer link busy".into(), value: t.link_busy_max_fraction, unit: "fraction" });
    d.findings.push(Finding { label: "KV transfer share of p95 TTFT".into(), value: transfer_share, unit: "fraction" });
    if s.slo_attainment >= 0.99 {
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
        d.verdict = format!("The prefill pool is the bottleneck: busy {} while the decode pool is busy {}; TTFT is prefill queueing.", pct(busy("prefill")), pct(busy("decode")));
        d.advice = "Move workers from decode to prefill (or add prefill workers), or cache shared prefixes to cut prefill work.".into();
    } else if kv_peak("decode") > 0.95 {
        d.kind = "memory";
        d.verdict = format!("Decode KV is full (peak {}): transferred prompts wait for decode memory.", pct(kv_peak("decode")));
        d.advice = "More decode workers or decode memory (TP, FP8 KV), or reserve KV closer to the true output length.".into();
    }
}
