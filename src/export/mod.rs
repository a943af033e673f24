//! Writers: the only place text is produced from results. JSON is the report as serialised by serde_json
//! (byte-identical across platforms); CSV is one row per request; Markdown is a readable report.

use std::fmt::Write;

use crate::metrics::{Outcome, Report, Stats};
use crate::scenario::Scenario;
use crate::sched::admission::Reject;

/// The full report as pretty JSON (ends with a newline).
pub fn json(r: &Report) -> String {
    let mut s = serde_json::to_string_pretty(r).expect("a report always serialises");
    s.push('\n');
    s
}

fn outcome_name(o: Outcome) -> &'static str {
    match o {
        Outcome::InFlight => "in_flight",
        Outcome::Completed => "completed",
        Outcome::Rejected(Reject::QueueFull) => "rejected_queue_full",
        Outcome::Rejected(Reject::DeadlineInfeasible) => "rejected_deadline",
        Outcome::Rejected(Reject::Dropped) => "rejected_dropped",
        Outcome::Rejected(Reject::RateLimited) => "rejected_rate_limited",
        Outcome::Failed => "failed",
        Outcome::Unfinished => "unfinished",
    }
}

/// One row per request; times in seconds, empty where the event did not happen.
pub fn requests_csv(r: &Report, sc: &Scenario) -> String {
    let mut s = String::with_capacity(r.requests.len() * 120 + 256);
    s.push_str("id,class,tenant,replica,outcome,arrival_s,queue_delay_s,ttft_s,e2e_s,tpot_s,prompt_tokens,output_tokens,generated_tokens,predicted_order_tokens,predicted_reserve_tokens,preemptions\n");
    let t = |x: u64, base: u64| if x == u64::MAX { String::new() } else { format!("{}", (x - base) as f64 / 1e9) };
    for q in &r.requests {
        let tpot = if q.outcome == Outcome::Completed && q.output_tokens > 1 {
            format!("{}", (q.done_ns - q.first_token_ns) as f64 / (q.output_tokens - 1) as f64 / 1e9)
        } else {
            String::new()
        };
        let replica = if q.replica == u16::MAX { String::new() } else { q.replica.to_string() };
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            q.id,
            csv_field(&sc.workload.classes[q.class as usize].name),
            csv_field(&sc.workload.tenants[q.tenant as usize].name),
            replica,
            outcome_name(q.outcome),
            q.arrival_ns as f64 / 1e9,
            t(q.first_scheduled_ns, q.arrival_ns),
            t(q.first_token_ns, q.arrival_ns),
            if q.outcome == Outcome::Completed { t(q.done_ns, q.arrival_ns) } else { String::new() },
            tpot,
            q.prompt_tokens,
            q.output_tokens,
            q.generated,
            q.pred_order_tokens,
            q.pred_reserve_tokens,
            q.preemptions
        );
    }
    s
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_string() }
}

/// The summary as `metric,value` rows.
pub fn summary_csv(r: &Report) -> String {
    let v = serde_json::to_value(&r.summary).expect("a summary always serialises");
    let mut s = String::from("metric,value\n");
    flatten("", &v, &mut s);
    s
}

fn flatten(prefix: &str, v: &serde_json::Value, out: &mut String) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                flatten(&key, x, out);
            }
        }
        x => {
            let _ = writeln!(out, "{prefix},{x}");
        }
    }
}

fn ms(s: f64) -> String {
    if s < 10.0 { format!("{:.1} ms", s * 1e3) } else { format!("{s:.2} s") }
}

fn pct(x: f64) -> String {
    format!("{:.1} %", x * 100.0)
}

fn stats_row(name: &str, st: &Stats) -> String {
    format!("| {name} | {} | {} | {} | {} | {} | {} |\n", ms(st.mean), ms(st.p50), ms(st.p90), ms(st.p95), ms(st.p99), ms(st.max))
}

/// A readable report with tables.
pub fn markdown(r: &Report) -> String {
    let s = &r.summary;
    let mut m = String::new();
    let _ = writeln!(m, "# InferScale report: {}\n", r.scenario);
    let _ = writeln!(m, "Seed {} · {} GPU(s) · InferScale {}\n", r.seed, r.gpus, r.inferscale_version);
    m.push_str("## Summary\n\n| metric | value |\n|---|---|\n");
    for (k, v) in [
        ("requests", s.requests.to_string()),
        ("completed", s.completed.to_string()),
        ("rejected", s.rejected.to_string()),
        ("failed", s.failed.to_string()),
        ("unfinished", s.unfinished.to_string()),
        ("duration", format!("{:.2} s", s.duration_s)),
        ("throughput", format!("{:.3} req/s", s.throughput_rps)),
        ("output tokens/s", format!("{:.1}", s.output_tokens_per_s)),
        ("goodput", format!("{:.3} req/s", s.goodput_rps)),
        ("goodput per GPU", format!("{:.3} req/s", s.goodput_per_gpu_rps)),
        ("SLO attainment", pct(s.slo_attainment)),
        ("KV peak", pct(s.kv_peak_fraction)),
        ("KV mean", pct(s.kv_mean_fraction)),
        ("mean batch size", format!("{:.1}", s.mean_batch_size)),
        ("preemptions", s.preemptions.to_string()),
        ("Little's law relative error", format!("{:.2e}", s.little_relative_error)),
    ] {
        let _ = writeln!(m, "| {k} | {v} |");
    }
    let _ = writeln!(m, "\n## Diagnosis ({})\n\n{}\n\n**Advice:** {}", r.diagnosis.kind, r.diagnosis.verdict, r.diagnosis.advice);
    m.push_str("\n## Latency\n\n| metric | mean | p50 | p90 | p95 | p99 | max |\n|---|---|---|---|---|---|---|\n");
    m.push_str(&stats_row("TTFT", &s.ttft_s));
    m.push_str(&stats_row("TPOT", &s.tpot_s));
    m.push_str(&stats_row("ITL", &s.itl_s));
    m.push_str(&stats_row("E2E", &s.e2e_s));
    m.push_str(&stats_row("queue delay", &s.queue_delay_s));
    for (title, groups) in [("Classes", &r.classes), ("Tenants", &r.tenants)] {
        let _ = writeln!(m, "\n## {title}\n\n| name | requests | completed | rejected | SLO attainment | goodput (req/s) | p95 TTFT | p95 TPOT | p95 E2E |\n|---|---|---|---|---|---|---|---|---|");
        for g in groups.iter() {
            let _ = writeln!(
                m,
                "| {} | {} | {} | {} | {} | {:.3} | {} | {} | {} |",
                g.name, g.requests, g.completed, g.rejected, pct(g.slo_attainment), g.goodput_rps, ms(g.ttft_s.p95), ms(g.tpot_s.p95), ms(g.e2e_s.p95)
            );
        }
    }
    let e = &r.engine;
    let l = &e.limiter;
    m.push_str("\n## Engine\n\n| metric | value |\n|---|---|\n");
    for (k, v) in [
        ("steps", e.steps.to_string()),
        ("mean step", format!("{:.2} ms", e.mean_step_ms)),
        ("busy fraction", pct(e.busy_fraction)),
        ("KV capacity per replica", format!("{} tokens", e.kv_capacity_tokens)),
        ("compute-bound steps", pct(e.compute_bound_step_fraction)),
        ("steps limited by: nothing waiting", pct(l.queue_empty)),
        ("steps limited by: max sequences", pct(l.max_seqs)),
        ("steps limited by: token budget", pct(l.token_budget)),
        ("steps limited by: KV reservation", pct(l.kv_reservation)),
        ("steps limited by: free KV", pct(l.kv_free)),
        ("steps with a preemption", pct(l.preemption)),
    ] {
        let _ = writeln!(m, "| {k} | {v} |");
    }
    let a = &r.audits;
    let _ = writeln!(
        m,
        "\n## Audits\n\n| audit | result |\n|---|---|\n| Little's law: L = {:.4}, λW = {:.4} | relative error {:.2e} |\n| conservation: {} arrived = {} completed + {} rejected + {} failed + {} unfinished | {} |\n| KV free + used = total, {} checks | {} violations |",
        a.little.time_avg_in_system,
        a.little.arrival_rate_rps * a.little.mean_time_in_system_s,
        a.little.relative_error,
        a.conservation.arrived,
        a.conservation.completed,
        a.conservation.rejected,
        a.conservation.failed,
        a.conservation.unfinished,
        if a.conservation.ok { "ok" } else { "VIOLATED" },
        a.kv.checks,
        a.kv.violations
    );
    m
}

/// Points of an empirical CDF the lab draws: at most this many per curve.
pub const CDF_POINTS: usize = 300;

/// An empirical CDF: (seconds, cumulative fraction) points.
pub type Cdf = Vec<(f64, f64)>;

/// The TTFT and E2E CDFs of completed requests, as (seconds, cumulative fraction), thinned to at most
/// `CDF_POINTS` + 1 points (evenly spaced ranks, always the last). Latencies are sorted as integer ns.
pub fn latency_cdfs(r: &Report) -> (Cdf, Cdf) {
    let done = r.requests.iter().filter(|q| q.outcome == Outcome::Completed);
    let mut ttft: Vec<u64> = done.clone().map(|q| q.first_token_ns - q.arrival_ns).collect();
    let mut e2e: Vec<u64> = done.map(|q| q.done_ns - q.arrival_ns).collect();
    (cdf_ns(&mut ttft), cdf_ns(&mut e2e))
}

fn cdf_ns(v: &mut [u64]) -> Cdf {
    v.sort_unstable();
    let n = v.len();
    if n == 0 {
        return vec![];
    }
    let step = n.div_ceil(CDF_POINTS).max(1);
    let mut out: Cdf = (step - 1..n).step_by(step).map(|i| (v[i] as f64 / 1e9, (i + 1) as f64 / n as f64)).collect();
    if out.last().is_none_or(|p| p.1 < 1.0) {
        out.push((v[n - 1] as f64 / 1e9, 1.0));
    }
    out
}
