//! Writers: the only place text is produced from results. JSON is the report as serialised by serde_json
//! (byte-identical across platforms); CSV is one row per request; Markdown is a readable report.

mod bundle;
mod study;

pub use crate::study::show;
pub use study::display_unit;

pub use bundle::{bundle_csv, bundle_markdown, calibration_csv, calibration_json, calibration_markdown};

pub use crate::markdown::{md_cell, md_text};
use std::fmt::Write;

pub use crate::metrics::secs;
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
        Outcome::Rejected(Reject::TooLong) => "rejected_too_long",
        Outcome::Failed => "failed",
        Outcome::Unfinished => "unfinished",
    }
}

/// One row per request; times in seconds, empty where the event did not happen.
pub fn requests_csv(r: &Report, sc: &Scenario) -> String {
    let mut s = String::with_capacity(r.requests.len() * 120 + 256);
    s.push_str("id,class,tenant,replica,outcome,arrival_s,queue_delay_s,ttft_s,e2e_s,tpot_s,prompt_tokens,output_tokens,generated_tokens,predicted_order_tokens,predicted_reserve_tokens,preemptions,missed\n");
    // Every field is written straight into `s`, integers through itoa and times by `push_secs`: with
    // `format!` and a String per field, 100k rows took over a third as long as simulating them.
    let classes: Vec<String> = sc.workload.classes.iter().map(|c| csv_field(&c.name)).collect();
    let tenants: Vec<String> = sc.workload.tenants.iter().map(|t| csv_field(&t.name)).collect();
    let since = |s: &mut String, x: u64, base: u64| {
        if x != u64::MAX {
            push_secs(s, x - base);
        }
    };
    let mut int = itoa::Buffer::new();
    for q in &r.requests {
        s.push_str(int.format(q.id));
        s.push(',');
        s.push_str(&classes[q.class as usize]);
        s.push(',');
        s.push_str(&tenants[q.tenant as usize]);
        s.push(',');
        if q.replica != u16::MAX {
            s.push_str(int.format(q.replica));
        }
        s.push(',');
        s.push_str(outcome_name(q.outcome));
        s.push(',');
        push_secs(&mut s, q.arrival_ns);
        s.push(',');
        // Queue delay leaves out the serving overhead before the request could queue.
        since(&mut s, q.first_scheduled_ns, q.arrival_ns + sc.front_pool().engine.request_overhead_ns);
        s.push(',');
        since(&mut s, q.first_token_ns, q.arrival_ns);
        s.push(',');
        if q.outcome == Outcome::Completed {
            since(&mut s, q.done_ns, q.arrival_ns);
        }
        s.push(',');
        if q.outcome == Outcome::Completed && q.output_tokens > 1 {
            let _ = write!(s, "{}", (q.done_ns - q.first_token_ns) as f64 / (q.output_tokens - 1) as f64 / 1e9);
        }
        for v in [
            q.prompt_tokens,
            q.output_tokens,
            q.generated,
            q.pred_order_tokens,
            q.pred_reserve_tokens,
            q.preemptions as u32,
        ] {
            s.push(',');
            s.push_str(int.format(v));
        }
        s.push(',');
        s.push_str(crate::metrics::steady::missed(q, &sc.workload.classes[q.class as usize].slo).name());
        s.push('\n');
    }
    s
}

/// Write `ns` nanoseconds in seconds exactly as `format!("{}", ns as f64 / 1e9)` does, without formatting a
/// float. `{}` writes the shortest decimal that reads back as the same f64; below 10^15 ns the exact decimal
/// has at most 15 significant digits, and two such decimals never read back as the same f64 (an f64 holds
/// 15 decimal digits), so the shortest one is the exact decimal itself.
fn push_secs(s: &mut String, ns: u64) {
    const GIGA: u64 = 1_000_000_000;
    if ns >= 1_000_000_000_000_000 {
        let _ = write!(s, "{}", ns as f64 / 1e9);
        return;
    }
    s.push_str(itoa::Buffer::new().format(ns / GIGA));
    let frac = ns % GIGA;
    if frac > 0 {
        // Nine digits, zero-padded, without the trailing zeros.
        let mut digits = [b'0'; 9];
        let mut f = frac;
        for d in digits.iter_mut().rev() {
            *d = b'0' + (f % 10) as u8;
            f /= 10;
        }
        let mut end = 9;
        while digits[end - 1] == b'0' {
            end -= 1;
        }
        s.push('.');
        s.push_str(std::str::from_utf8(&digits[..end]).expect("ASCII digits"));
    }
}

/// A user's text (a class or tenant name) as one CSV cell: quoted when it holds a separator, a quote or a line
/// break, and — so that a spreadsheet never runs it as a formula — prefixed with `'` when it starts with
/// `=`, `+`, `-`, `@`, a tab or a carriage return (OWASP's CSV-injection rule).
pub fn csv_field(s: &str) -> String {
    let s = if s.starts_with(['=', '+', '-', '@', '\t', '\r']) { format!("'{s}") } else { s.to_string() };
    if s.contains([',', '"', '\n', '\r']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s }
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
    secs(s)
}

/// The sessions section: how sessions ended, their turns, and TTFT by turn index.
fn sessions_markdown(m: &mut String, x: &crate::metrics::SessionsSummary) {
    let _ = writeln!(
        m,
        "\n## Sessions\n\n{} sessions: {} completed every turn, {} ended at the context limit, {} after a refused or failed turn, {} unfinished. {} turns ({:.2} a session), {} completed. Session E2E p50 {}, p95 {}; turn TTFT p50 {}, p95 {}. History re-sent: {} tokens, {} of them prefilled again.\n\n| turn | completed | TTFT p50 | TTFT p95 |\n|---|---|---|---|",
        x.sessions,
        x.completed,
        x.ended_by_context,
        x.ended_by_failure,
        x.unfinished,
        x.turns,
        x.mean_turns_per_session,
        x.turns_completed,
        secs(x.session_e2e_s.p50),
        secs(x.session_e2e_s.p95),
        secs(x.turn_ttft_s.p50),
        secs(x.turn_ttft_s.p95),
        x.history_tokens,
        x.recomputed_history_tokens
    );
    for t in &x.ttft_by_turn {
        let _ = writeln!(m, "| {} | {} | {} | {} |", t.turn, t.count, secs(t.ttft_p50_s), secs(t.ttft_p95_s));
    }
    if x.classes.is_empty() {
        return;
    }
    m.push_str("\n| session class | sessions | completed | turns a session | turn TTFT p95 | session E2E p95 | reuse | session SLO |\n|---|---|---|---|---|---|---|---|\n");
    for c in &x.classes {
        let slo = c.slo_attainment.map_or("–".to_string(), pct);
        let _ = writeln!(
            m,
            "| {} | {} | {} | {:.2} | {} | {} | {} | {slo} |",
            md_cell(&c.name),
            c.sessions,
            c.completed,
            c.mean_turns_per_session,
            secs(c.turn_ttft_s.p95),
            secs(c.session_e2e_s.p95),
            pct(c.reuse)
        );
    }
}

fn pct(x: f64) -> String {
    format!("{:.1} %", x * 100.0)
}

fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "**no**" }
}

fn stats_row(name: &str, st: &Stats) -> String {
    format!(
        "| {name} | {} | {} | {} | {} | {} | {} |\n",
        ms(st.mean),
        ms(st.p50),
        ms(st.p90),
        ms(st.p95),
        ms(st.p99),
        ms(st.max)
    )
}

/// The rejected count, with how many were longer than the engine's `max_model_len`.
fn rejected_cell(s: &crate::metrics::Summary) -> String {
    match s.rejected_too_long {
        0 => s.rejected.to_string(),
        n => format!("{} ({n} longer than engine.max_model_len)", s.rejected),
    }
}

/// A readable report with tables.
pub fn markdown(r: &Report) -> String {
    let s = &r.summary;
    let mut m = String::new();
    let _ = writeln!(m, "# InferScale report: {}\n", md_cell(&r.scenario));
    let _ = writeln!(m, "Seed {} · {} GPU(s) · InferScale {}\n", r.seed, r.gpus, r.inferscale_version);
    let _ = writeln!(m, "**Setup:** {}; offered {:.3} req/s.\n", md_text(&r.setup.sentence()), s.offered_rate_rps);
    for t in &r.setup.truncated_lengths {
        let _ = writeln!(m, "**Lengths:** {}.\n", md_text(t));
    }
    m.push_str("## Summary\n\n| metric | value |\n|---|---|\n");
    let st = &r.steady;
    for (k, v) in [
        ("requests", s.requests.to_string()),
        ("offered rate", format!("{:.3} req/s", s.offered_rate_rps)),
        ("steady throughput (achieved)", format!("{:.3} req/s", st.throughput_rps)),
        ("steady goodput", format!("{:.3} req/s", st.goodput_rps)),
        ("completed", s.completed.to_string()),
        ("rejected", rejected_cell(s)),
        ("failed", s.failed.to_string()),
        ("unfinished", s.unfinished.to_string()),
        ("duration", format!("{:.2} s", s.duration_s)),
        ("throughput (whole run, drain included)", format!("{:.3} req/s", s.throughput_rps)),
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
    steady_markdown(&mut m, st);
    objectives_markdown(&mut m, &r.objectives);
    diagnosis_markdown(&mut m, &r.diagnosis);
    m.push_str("\n## Latency\n\n| metric | mean | p50 | p90 | p95 | p99 | max |\n|---|---|---|---|---|---|---|\n");
    m.push_str(&stats_row("TTFT", &s.ttft_s));
    m.push_str(&stats_row("TPOT", &s.tpot_s));
    m.push_str(&stats_row("ITL", &s.itl_s));
    m.push_str(&stats_row("E2E", &s.e2e_s));
    m.push_str(&stats_row("queue delay", &s.queue_delay_s));
    groups_markdown(&mut m, r);
    if let Some(x) = &r.sessions {
        sessions_markdown(&mut m, x);
    }
    engine_markdown(&mut m, &r.engine);
    audits_markdown(&mut m, &r.audits);
    m
}

/// The verdict, its regime and limit, the advice, and the changes tested on the same requests.
fn diagnosis_markdown(m: &mut String, d: &crate::metrics::Diagnosis) {
    let _ = writeln!(
        m,
        "\n## Diagnosis ({})\n\nRegime: {} (offered ÷ served {:.2}{}); limit: {}.\n\n{}\n\n**Advice:** {}",
        d.kind,
        d.regime.replace('_', " "),
        d.load_factor,
        d.rho.map_or(String::new(), |r| format!("; ρ = {r:.2} of sustained capacity")),
        d.limit.replace('_', " "),
        md_text(&d.verdict),
        md_text(&d.advice)
    );
    if d.tested.is_empty() {
        return;
    }
    m.push_str("\nTested on the same requests (measured, same seed):\n\n| change | outcome | served (req/s) | within SLO (%) | p95 TTFT | p95 TPOT |\n|---|---|---|---|---|---|\n");
    for t in &d.tested {
        let outcome = match (t.measured, t.objectives_met, t.overloaded) {
            (false, _, _) => t.note.clone().unwrap_or_default(),
            (true, true, _) => "objectives met".into(),
            (true, false, true) => "still overloaded".into(),
            (true, false, false) => "still missed".into(),
        };
        let _ = writeln!(
            m,
            "| {} | {} | {:.2} | {:.1} | {} | {} |",
            md_cell(&t.change),
            md_cell(&outcome),
            t.served_rps,
            t.slo_attainment * 100.0,
            crate::metrics::secs(t.p95_ttft_s),
            crate::metrics::secs(t.p95_tpot_s)
        );
    }
}

/// The steady-state window and its warnings.
fn steady_markdown(m: &mut String, st: &crate::metrics::steady::SteadySummary) {
    let _ = writeln!(
        m,
        "\n## Steady state\n\nWindow {:.2}–{:.2} s ({:.0} % warm-up left out, the drain after the last arrival too): {} arrivals, {} completions; in system {} → {}; waiting queue trend {:+.3} req/s. {}",
        st.start_s,
        st.end_s,
        st.warmup_fraction * 100.0,
        st.arrivals,
        st.completions,
        st.in_system_start,
        st.in_system_end,
        st.backlog_growth_rps,
        if st.stable {
            "Stable: the load is sustained (docs/metrics.md, \"Stability\")."
        } else if st.overloaded {
            "Not stable: the waiting queue grows."
        } else {
            "Not stable: more than 0.5 % of the arrivals were shed, or there is no window."
        }
    );
    for w in &st.warnings {
        let _ = writeln!(m, "\n> Warning: {}", md_text(w));
    }
}

/// Each objective, measured and met.
fn objectives_markdown(m: &mut String, o: &crate::metrics::steady::ObjectivesReport) {
    let _ = writeln!(m, "\n## Objectives\n\n| objective | measured | met |\n|---|---|---|");
    let _ = writeln!(
        m,
        "| SLO attainment ≥ {} | {} | {} |",
        pct(o.attainment_target),
        pct(o.attainment),
        yes(o.attainment_met)
    );
    for p in &o.percentiles {
        let of = p.class.as_ref().map(|c| format!(" ({})", md_cell(c))).unwrap_or_default();
        let _ = writeln!(
            m,
            "| p{} {}{of} ≤ {} | {} | {} |",
            p.percentile,
            p.metric.label(),
            ms(p.max_s),
            ms(p.value_s),
            yes(p.met)
        );
    }
}

/// The classes' and the tenants' tables.
fn groups_markdown(m: &mut String, r: &Report) {
    for (title, groups) in [("Classes", &r.classes), ("Tenants", &r.tenants)] {
        let _ = writeln!(
            m,
            "\n## {title}\n\n| name | requests | completed | rejected | SLO attainment | goodput (req/s) | p95 TTFT | p95 TPOT | p95 E2E |\n|---|---|---|---|---|---|---|---|---|"
        );
        for g in groups.iter() {
            let _ = writeln!(
                m,
                "| {} | {} | {} | {} | {} | {:.3} | {} | {} | {} |",
                md_cell(&g.name),
                g.requests,
                g.completed,
                g.rejected,
                pct(g.slo_attainment),
                g.goodput_rps,
                ms(g.ttft_s.p95),
                ms(g.tpot_s.p95),
                ms(g.e2e_s.p95)
            );
        }
    }
}

/// The engine's steps and what limited them.
fn engine_markdown(m: &mut String, e: &crate::metrics::EngineSummary) {
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
}

fn audits_markdown(m: &mut String, a: &crate::metrics::Audits) {
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
}

pub use crate::metrics::{CDF_POINTS, Cdf, LatencyCdfs};

/// The TTFT, TPOT and E2E CDFs of completed requests, as (seconds, cumulative fraction), thinned to at most
/// `CDF_POINTS` + 1 points (evenly spaced ranks, always the last). The report computes them while its
/// latencies are sorted for the percentiles.
pub fn latency_cdfs(r: &Report) -> LatencyCdfs {
    r.latency_cdfs.clone()
}

#[cfg(test)]
mod tests {
    use super::push_secs;

    #[test]
    fn seconds_are_written_as_float_display_would() {
        let mut r = crate::rng::stream(7, crate::rng::Stream::Study, 0);
        let edges = [
            0,
            1,
            9,
            10,
            100,
            999_999_999,
            1_000_000_000,
            1_000_000_001,
            1_500_000_000,
            123_456_789_012,
            999_999_999_999_999,
            1_000_000_000_000_000,
            1_234_567_890_123_456_789,
            u64::MAX - 1,
        ];
        // Random magnitudes from 1 ns to ~10^18 ns, so both branches and every digit count are hit.
        let random = (0..200_000).map(|_| {
            let digits = 1 + r.below(18) as u32;
            r.below(10u64.pow(digits))
        });
        for ns in edges.into_iter().chain(random) {
            let mut s = String::new();
            push_secs(&mut s, ns);
            assert_eq!(s, format!("{}", ns as f64 / 1e9), "{ns} ns");
        }
    }
}
