//! Figures that do not depend on run length: the offered rate, the steady-state window (warm-up and drain
//! left out), and the run's objectives (attainment target, percentile objectives) with what was missed.
//!
//! Why a window: throughput over the whole run divides completions by a duration that includes the drain
//! after the last arrival, so a short run understates what the cluster sustains (2,000 requests read 15.9
//! req/s where 20,000 read 19.5). Completions between the end of the warm-up and the last arrival, divided by
//! that window, read the same for both (docs/metrics.md, "Steady state").

use serde::Serialize;

use super::{Outcome, RequestRecord};
use crate::scenario::{LatencyMetric, Scenario, Slo};
use crate::sched::admission::Reject;

/// Fewer completions than this in the window make its figures noisy (a warning says so).
pub const MIN_STEADY_COMPLETIONS: u64 = 500;
/// The warm-up lasts at least this many median in-batch times (first admission to last token): until then
/// the first admitted requests have not finished, so completions undercount what the cluster sustains.
pub const WARMUP_SERVICE_MULTIPLE: f64 = 3.0;
/// The stability test's tolerance: over the steady window, the waiting queue's trend may not add more than this
/// share of the window's arrivals, and no more than this share of them may be shed. In overload the queue grows
/// at the offered rate less the served, so sustained capacity (`crate::capacity`, the highest rate that passes)
/// lands within 0.5 % above a queue's capacity on long runs: its closed forms (M/D/1, M/M/1, M/M/c) hold within
/// 1 % (docs/metrics.md, "Stability"). Completions ÷ arrivals itself is no test: it moves with what happens to
/// be in the system at the window's two ends — by several percent when the window ends in a burst.
pub const STABLE_TOLERANCE: f64 = 0.005;
/// ... and a trend of fewer than this many requests never fails it (a few waiting requests come and go in any
/// busy system).
pub const MIN_BACKLOG_GROWTH: u64 = 10;

/// The steady-state window: from the end of the warm-up to the last arrival.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SteadySummary {
    pub warmup_fraction: f64,
    /// The median in-batch time (first admission to last token) of completed requests; the warm-up lasts at
    /// least 3 of them.
    pub median_service_s: f64,
    /// The warm-up left out: the larger of `warmup_fraction` of the arrival span and 3 median in-batch times
    /// (only the former when the run is shorter than the latter).
    pub warmup_s: f64,
    /// Seconds from time 0.
    pub start_s: f64,
    pub end_s: f64,
    pub window_s: f64,
    pub arrivals: u64,
    pub completions: u64,
    /// Arrivals in the window ÷ its length.
    pub offered_rate_rps: f64,
    /// Completions in the window ÷ its length: what the cluster sustains (the offered rate when it keeps up,
    /// its capacity when it does not).
    pub throughput_rps: f64,
    /// Completions meeting every SLO of their class in the window ÷ its length.
    pub goodput_rps: f64,
    pub output_tokens_per_s: f64,
    /// Of the requests that arrived in the window: the share meeting every SLO of their class.
    pub slo_attainment: f64,
    /// Requests in the system (queued or running) at the window's start and end.
    pub in_system_start: u64,
    pub in_system_end: u64,
    /// Requests waiting for their first admission at the window's start and end.
    pub waiting_start: u64,
    pub waiting_end: u64,
    /// The waiting queue's trend across the window (with sessions, the window up to the last session's start,
    /// after a warm-up by the same rule over that span), requests/s:
    /// the rise of its floor — the least of the time series' waiting queue over the window's last quarter less
    /// the least over its first, ÷ the 3/4 of the window between them (with fewer than 8 points in the window:
    /// the queue at its end less `waiting_start`, ÷ its length). A queue that grows means the load is not
    /// sustained. (The number in system also grows while a stable system fills its batches, so it is not the test.)
    pub backlog_growth_rps: f64,
    /// Completions ÷ arrivals in the window (served ÷ offered; 0 without arrivals).
    pub served_share: f64,
    /// The admitted load is not served: the waiting queue's trend (`backlog_growth_rps`) adds more than
    /// `STABLE_TOLERANCE` of the window's arrivals (and at least 10 requests) over the window.
    pub overloaded: bool,
    /// The offered load is sustained: at least 500 completions in the window (fewer judge nothing), not
    /// overloaded, and at most `STABLE_TOLERANCE` of the window's arrivals shed (rejected, or failed past their
    /// preemptions; a request longer than `max_model_len`, refused at any load, is neither arrival nor shed) —
    /// served ÷ offered within that share once what is still in the system is counted as being served, which
    /// the trend bounds. Sustained capacity is the highest rate at which a run is stable.
    pub stable: bool,
    /// Why these figures may not be steady (empty: none found).
    pub warnings: Vec<String>,
}

/// Whether request `r` met every per-request SLO of its class.
pub fn meets(r: &RequestRecord, slo: &Slo) -> bool {
    missed(r, slo) == Missed::NONE
}

/// Which per-request objectives of its class a request missed: a request not completed missed them all;
/// a completed one each of TTFT, TPOT (more than one output token) and E2E over its bound. The one rule the
/// attainment, the per-request CSV's `missed` column and the lab's "missed" filter read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Missed(u8);

impl Missed {
    pub const NONE: Missed = Missed(0);
    const TTFT: u8 = 1;
    const TPOT: u8 = 2;
    const E2E: u8 = 4;
    const NOT_COMPLETED: u8 = 8;

    /// As the CSV writes it: empty (met), `not_completed`, or the missed metrics joined by `+` (`ttft+e2e`).
    pub fn name(self) -> &'static str {
        const NAMES: [&str; 8] = ["", "ttft", "tpot", "ttft+tpot", "e2e", "ttft+e2e", "tpot+e2e", "ttft+tpot+e2e"];
        if self.0 & Self::NOT_COMPLETED != 0 { "not_completed" } else { NAMES[self.0 as usize] }
    }
}

/// What request `r` missed of its class's per-request SLOs.
pub fn missed(r: &RequestRecord, slo: &Slo) -> Missed {
    if r.outcome != Outcome::Completed {
        return Missed(Missed::NOT_COMPLETED);
    }
    let ttft = r.first_token_ns - r.arrival_ns;
    let e2e = r.done_ns - r.arrival_ns;
    let mut m = 0;
    if slo.ttft_ns.is_some_and(|b| ttft > b) {
        m |= Missed::TTFT;
    }
    if r.output_tokens > 1 && slo.tpot_ns.is_some_and(|b| tpot_ns(r) > b as f64) {
        m |= Missed::TPOT;
    }
    if slo.e2e_ns.is_some_and(|b| e2e > b) {
        m |= Missed::E2E;
    }
    Missed(m)
}

/// Time per output token after the first, ns: (done − first token) ÷ (output tokens − 1); output > 1.
pub(super) fn tpot_ns(r: &RequestRecord) -> f64 {
    (r.done_ns - r.first_token_ns) as f64 / (r.output_tokens - 1) as f64
}

pub(super) fn tpot_s(r: &RequestRecord) -> f64 {
    tpot_ns(r) / 1e9
}

/// Realised arrival rate over the whole run: (n − 1) ÷ (last arrival − first arrival); 0 when every
/// request arrives at one instant.
pub fn offered_rate_rps(reqs: &[RequestRecord]) -> f64 {
    let (lo, hi) = arrival_span(reqs);
    if reqs.len() < 2 || hi == lo { 0.0 } else { (reqs.len() - 1) as f64 / ((hi - lo) as f64 / 1e9) }
}

fn arrival_span(reqs: &[RequestRecord]) -> (u64, u64) {
    reqs.iter().fold((u64::MAX, 0), |(lo, hi), r| (lo.min(r.arrival_ns), hi.max(r.arrival_ns)))
}

/// The rise of `y`'s floor across [lo, hi], per second: the least of its points (`t` their times) in the
/// last quarter less the least in the first, over the 3/4 of the span between the quarters' middles. A queue
/// that swings with bursts but is bounded keeps returning to its floor, while one that grows lifts it; its
/// floor is also far steadier than its value at two instants. None with fewer than 8 points in the span.
fn floor_rise_per_s(t_s: &[f64], y: &[f64], lo_s: f64, hi_s: f64) -> Option<f64> {
    let q = (hi_s - lo_s) / 4.0;
    let pts = || t_s.iter().zip(y).filter(|(t, _)| **t >= lo_s && **t <= hi_s);
    let least = |from: f64, to: f64| pts().filter(|(t, _)| **t >= from && **t <= to).map(|(_, y)| *y).reduce(f64::min);
    if pts().count() < 8 || q <= 0.0 {
        return None;
    }
    Some((least(hi_s - q, hi_s)? - least(lo_s, lo_s + q)?) / (3.0 * q))
}

/// The stability test's outcome (docs/metrics.md, "Stability").
struct Stability {
    growth_rps: f64,
    overloaded: bool,
    stable: bool,
}

/// What the stability test counts over its window, [start, `end`]: the steady window, or with sessions only up to
/// the last session's start — after it the finite set of sessions drains as a closed loop, whose queue never
/// grows however high the rate (1,000 agent sessions read stable at 214 sessions/s, 116 × their textbook
/// ceiling, over the whole window). Counted in `steady`'s own passes over the records.
#[derive(Default)]
struct OpenWindow {
    /// Its own warm-up's end: the same rule as the steady window's over the span up to `end` — with sessions
    /// the steady window's warm-up, a share of every turn's arrivals, can pass the last session's start (1,000
    /// agent sessions at 3 sessions/s, 4× capacity: the sessions start over 333 s, the warm-up ended at 413 s,
    /// and the empty window read neither stable nor overloaded, so the run read under capacity).
    start: u64,
    end: u64,
    arrivals: u64,
    completions: u64,
    shed: u64,
    /// Requests waiting at `start` and `end`.
    waiting_start: u64,
    waiting_end: u64,
}

/// The stability test over `w`. Where the series has too few points inside it, the waiting queue's growth is
/// read between `w`'s ends (with sessions at a high rate the window up to the last session's start is short:
/// read as no growth, 2,000 agent sessions at 2 sessions/s, about 3× capacity, read stable).
fn stability(w: &OpenWindow, series: &super::summary::Series) -> Stability {
    let window_s = w.end.saturating_sub(w.start) as f64 / 1e9;
    let endpoints = if window_s > 0.0 { (w.waiting_end as f64 - w.waiting_start as f64) / window_s } else { 0.0 };
    // The series' points are windows (their start times): those wholly inside the window count.
    let (lo_s, hi_s) = (w.start as f64 / 1e9, w.end as f64 / 1e9 - series.window_s);
    let growth_rps = floor_rise_per_s(&series.t_s, &series.waiting, lo_s, hi_s).unwrap_or(endpoints);
    let allowed = (STABLE_TOLERANCE * w.arrivals as f64).max(MIN_BACKLOG_GROWTH as f64);
    let overloaded = window_s > 0.0 && growth_rps * window_s > allowed;
    // A window too short to be steady judges nothing.
    let stable = window_s > 0.0
        && w.completions >= MIN_STEADY_COMPLETIONS
        && !overloaded
        && w.shed as f64 <= STABLE_TOLERANCE * w.arrivals as f64;
    Stability { growth_rps, overloaded, stable }
}

/// The steady window of a run whose time series is `series` (its waiting queue gives the trend).
pub fn steady(sc: &Scenario, reqs: &[RequestRecord], end_ns: u64, series: &super::summary::Series) -> SteadySummary {
    // Two passes over the records: the span and the in-batch times first (the window depends on them),
    // then every count the window needs.
    let (mut first, mut last) = (u64::MAX, 0);
    let mut open = OpenWindow::default();
    let mut service: Vec<u64> = Vec::with_capacity(reqs.len());
    for r in reqs {
        (first, last) = (first.min(r.arrival_ns), last.max(r.arrival_ns));
        if r.session == crate::workload::NO_SESSION || r.turn <= 1 {
            open.end = open.end.max(r.arrival_ns);
        }
        if r.outcome == Outcome::Completed {
            service.push(r.done_ns - r.first_scheduled_ns);
        }
    }
    let first = first.min(last);
    let mid = service.len() / 2;
    let median_service_ns = if service.is_empty() { 0 } else { *service.select_nth_unstable(mid).1 };
    drop(service);
    let by_service = (median_service_ns as f64 * WARMUP_SERVICE_MULTIPLE).round() as u64;
    // A run shorter than its warm-up keeps the fraction's window, and a warning says it is too short.
    let warmup = |span: u64| {
        let by_fraction = (span as f64 * sc.warmup_fraction).round() as u64;
        if by_service >= span { by_fraction } else { by_fraction.max(by_service) }
    };
    let short = by_service >= last - first;
    let start = first + warmup(last - first);
    open.start = first + warmup(open.end.saturating_sub(first));
    let window_ns = last.saturating_sub(start);
    let window_s = window_ns as f64 / 1e9;
    let per_s = |x: u64| if window_ns > 0 { x as f64 / window_s } else { 0.0 };
    let inside = |t: u64| t >= start && t <= last;
    let slo = |r: &RequestRecord| &sc.workload.classes[r.class as usize].slo;
    let (mut arrivals, mut arrived_met, mut completions, mut met, mut tokens) = (0u64, 0u64, 0u64, 0u64, 0u64);
    // In system (admitted, arrived by t, not done by t) and waiting (queued by t — past its serving overhead,
    // which is latency, not a backlog — and not yet in a batch), at start and at last.
    let overhead_ns = sc.front_pool().engine.request_overhead_ns;
    let (mut n0, mut n1, mut q0, mut q1) = (0u64, 0u64, 0u64, 0u64);
    let opened = |t: u64| t >= open.start && t <= open.end;
    for r in reqs {
        let ok = meets(r, slo(r));
        // A request longer than max_model_len is refused at any load: not offered load, and not shed.
        if opened(r.arrival_ns) && r.outcome != Outcome::Rejected(Reject::TooLong) {
            open.arrivals += 1;
            open.shed += matches!(r.outcome, Outcome::Rejected(_) | Outcome::Failed) as u64;
        }
        open.completions += (r.outcome == Outcome::Completed && opened(r.done_ns)) as u64;
        if inside(r.arrival_ns) {
            arrivals += 1;
            arrived_met += ok as u64;
        }
        if r.outcome == Outcome::Completed && inside(r.done_ns) {
            completions += 1;
            met += ok as u64;
            tokens += r.output_tokens as u64;
        }
        if !matches!(r.outcome, Outcome::Rejected(_)) {
            let done = r.done_ns.min(end_ns);
            let waits = |t: u64| r.arrival_ns.saturating_add(overhead_ns) <= t && r.first_scheduled_ns > t;
            for (t, n, q) in [(start, &mut n0, &mut q0), (last, &mut n1, &mut q1)] {
                if r.arrival_ns <= t {
                    *n += (done > t) as u64;
                    *q += waits(t) as u64;
                }
            }
            // ... and waiting at the open window's ends (with sessions, before `last`).
            open.waiting_start += waits(open.start) as u64;
            open.waiting_end += waits(open.end) as u64;
        }
    }
    let st = stability(&open, series);
    let offered = per_s(arrivals);
    let served_share = if arrivals > 0 { completions as f64 / arrivals as f64 } else { 0.0 };
    let mut s = SteadySummary {
        warmup_fraction: sc.warmup_fraction,
        median_service_s: median_service_ns as f64 / 1e9,
        warmup_s: (start - first) as f64 / 1e9,
        start_s: start as f64 / 1e9,
        end_s: last as f64 / 1e9,
        window_s,
        arrivals,
        completions,
        offered_rate_rps: offered,
        throughput_rps: per_s(completions),
        goodput_rps: per_s(met),
        output_tokens_per_s: per_s(tokens),
        slo_attainment: if arrivals > 0 { arrived_met as f64 / arrivals as f64 } else { 0.0 },
        in_system_start: n0,
        in_system_end: n1,
        waiting_start: q0,
        waiting_end: q1,
        backlog_growth_rps: st.growth_rps,
        served_share,
        overloaded: st.overloaded,
        stable: st.stable,
        warnings: vec![],
    };
    s.warnings = steady_warnings(&s, reqs.len(), short);
    s
}

fn steady_warnings(s: &SteadySummary, requests: usize, short: bool) -> Vec<String> {
    let mut w = Vec::new();
    if s.window_s <= 0.0 {
        // The window ends at the last arrival and its warm-up is at most 90 % of the arrival span, so it is
        // empty only when that span is.
        w.push(
            "no steady-state window: every request arrived at one instant (a burst), so only whole-run figures apply"
                .to_string(),
        );
        return w;
    }
    if short {
        w.push(format!(
            "too short to be steady: the arrivals span {:.1} s, less than the warm-up of {WARMUP_SERVICE_MULTIPLE} × the median in-batch time ({:.1} s); the window starts after {:.0} % of the span instead",
            s.end_s - s.start_s + s.warmup_s,
            s.median_service_s,
            s.warmup_fraction * 100.0
        ));
    }
    if s.completions < MIN_STEADY_COMPLETIONS {
        w.push(format!(
            "too short to be steady: {} requests completed in the measurement window (fewer than {MIN_STEADY_COMPLETIONS}); run more requests than {requests} for figures that do not depend on run length",
            s.completions
        ));
    }
    if s.overloaded {
        w.push(format!(
            "overloaded: the waiting queue grew from {} to {} over the window (trend {:+.2} req/s) and {:.1} % of the {:.2} req/s offered were served, so latencies and attainment grow with run length; the steady throughput is what the cluster serves under overload (above its capacity for the whole mix when the order serves cheap requests first)",
            s.waiting_start,
            s.waiting_end,
            s.backlog_growth_rps,
            s.served_share * 100.0,
            s.offered_rate_rps
        ));
    }
    w
}

/// One percentile objective, as measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PercentileResult {
    /// `ttft`, `tpot`, `e2e` or `queue_delay`.
    pub metric: LatencyMetric,
    pub percentile: f64,
    /// The class it bounds; absent: all completed requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    pub max_s: f64,
    /// The measured percentile (0 with no sample).
    pub value_s: f64,
    /// Completed requests it was measured over.
    pub samples: u64,
    /// value ≤ max over at least one sample.
    pub met: bool,
}

/// The run's objectives and whether it met them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ObjectivesReport {
    pub attainment_target: f64,
    /// Share of all requests meeting every per-request SLO of their class (`summary.slo_attainment`).
    pub attainment: f64,
    pub attainment_met: bool,
    pub percentiles: Vec<PercentileResult>,
    /// The attainment target and every percentile objective met.
    pub met: bool,
}

/// The samples of `metric` (seconds) of completed requests of `class` (None: all), sorted.
pub fn samples_s(reqs: &[RequestRecord], metric: LatencyMetric, class: Option<u32>, overhead_ns: u64) -> Vec<f64> {
    let mut v: Vec<f64> = reqs
        .iter()
        .filter(|r| r.outcome == Outcome::Completed && class.is_none_or(|c| r.class as u32 == c))
        .filter_map(|r| match metric {
            LatencyMetric::Ttft => Some((r.first_token_ns - r.arrival_ns) as f64 / 1e9),
            LatencyMetric::E2e => Some((r.done_ns - r.arrival_ns) as f64 / 1e9),
            LatencyMetric::QueueDelay => Some((r.first_scheduled_ns - r.arrival_ns - overhead_ns) as f64 / 1e9),
            LatencyMetric::Tpot => (r.output_tokens > 1).then(|| tpot_s(r)),
        })
        .collect();
    v.sort_unstable_by(f64::total_cmp);
    v
}

pub fn objectives(sc: &Scenario, reqs: &[RequestRecord], attainment: f64) -> ObjectivesReport {
    let o = &sc.objectives;
    let percentiles: Vec<PercentileResult> = o
        .percentiles
        .iter()
        .map(|p| {
            let v = samples_s(reqs, p.metric, p.class, sc.front_pool().engine.request_overhead_ns);
            let value_s = super::percentile(&v, p.percentile);
            let max_s = p.max_ns as f64 / 1e9;
            PercentileResult {
                metric: p.metric,
                percentile: p.percentile,
                class: p.class.map(|c| sc.workload.classes[c as usize].name.clone()),
                max_s,
                value_s,
                samples: v.len() as u64,
                met: !v.is_empty() && value_s <= max_s,
            }
        })
        .collect();
    let attainment_met = attainment >= o.attainment_target;
    let met = attainment_met && percentiles.iter().all(|p| p.met);
    ObjectivesReport { attainment_target: o.attainment_target, attainment, attainment_met, percentiles, met }
}

/// A per-request objective of one class and the share of that class's requests that missed it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Miss {
    pub class: String,
    /// `ttft`, `tpot`, `e2e`, or `served` (rejected, failed or unfinished: missed every objective).
    pub objective: &'static str,
    /// The bound, seconds (0 for `served`).
    pub max_s: f64,
    /// Share of the class's requests that missed this objective.
    pub missed_fraction: f64,
    /// The class's p95 of that metric, seconds (0 for `served`).
    pub p95_s: f64,
}

/// For every class with per-request SLOs: which objective its requests missed, and how often. `classes` are
/// the report's class summaries (their p95s are quoted, not sorted again).
pub fn misses(sc: &Scenario, reqs: &[RequestRecord], classes: &[super::GroupSummary]) -> Vec<Miss> {
    // One pass: per class, requests, and those over each bound or not served.
    let mut count = vec![[0u64; 5]; sc.workload.classes.len()];
    for r in reqs {
        let c = &mut count[r.class as usize];
        let slo = &sc.workload.classes[r.class as usize].slo;
        c[0] += 1;
        if r.outcome != Outcome::Completed {
            c[4] += 1;
            continue;
        }
        c[1] += slo.ttft_ns.is_some_and(|t| r.first_token_ns - r.arrival_ns > t) as u64;
        c[2] += (r.output_tokens > 1 && slo.tpot_ns.is_some_and(|t| tpot_ns(r) > t as f64)) as u64;
        c[3] += slo.e2e_ns.is_some_and(|t| r.done_ns - r.arrival_ns > t) as u64;
    }
    let mut out = Vec::new();
    for (k, c) in sc.workload.classes.iter().enumerate() {
        let [n, ttft, tpot, e2e, unserved] = count[k];
        if n == 0 {
            continue;
        }
        let g = &classes[k];
        let checks = [
            ("ttft", c.slo.ttft_ns, ttft, g.ttft_s.p95),
            ("tpot", c.slo.tpot_ns, tpot, g.tpot_s.p95),
            ("e2e", c.slo.e2e_ns, e2e, g.e2e_s.p95),
        ];
        for (name, bound, over, p95_s) in checks {
            if let (Some(max_ns), true) = (bound, over > 0) {
                out.push(Miss {
                    class: c.name.clone(),
                    objective: name,
                    max_s: max_ns as f64 / 1e9,
                    missed_fraction: over as f64 / n as f64,
                    p95_s,
                });
            }
        }
        let has_slo = c.slo.ttft_ns.is_some() || c.slo.tpot_ns.is_some() || c.slo.e2e_ns.is_some();
        if unserved > 0 && has_slo {
            out.push(Miss {
                class: c.name.clone(),
                objective: "served",
                max_s: 0.0,
                missed_fraction: unserved as f64 / n as f64,
                p95_s: 0.0,
            });
        }
    }
    out
}

/// At most this many completed requests (evenly strided) are priced alone by `unloaded_ttft_s`.
const UNLOADED_SAMPLE: usize = 4096;

/// The mean TTFT the completed requests would have had alone: the request overhead plus their prompt
/// prefilled in chunks on an idle worker of the pool they entered (no queue, no batch-mates). What TTFT
/// takes beyond it is waiting — in the queue, or for the budget in a shared batch. It overstates the
/// service of prompts found cached (prefixes, retained history), so it understates their waiting.
pub fn unloaded_ttft_s(sc: &Scenario, reqs: &[RequestRecord]) -> f64 {
    let pool = sc.front_pool();
    let e = &pool.engine;
    let chunk = if e.chunked_prefill { e.prefill_chunk_tokens.min(e.max_num_batched_tokens) } else { u32::MAX }.max(1);
    let done: Vec<&RequestRecord> = reqs.iter().filter(|r| r.outcome == Outcome::Completed).collect();
    let stride = done.len().div_ceil(UNLOADED_SAMPLE).max(1);
    let (mut sum_ns, mut n) = (0.0, 0u32);
    for r in done.iter().step_by(stride) {
        let (mut ctx, mut ns) = (0u64, e.request_overhead_ns as f64);
        while ctx < r.prompt_tokens as u64 {
            let c = (r.prompt_tokens as u64 - ctx).min(chunk as u64);
            let work = crate::cost::StepWork {
                prefill_seqs: 1,
                prefill_tokens: c as u32,
                prefill_attention_pairs: c * ctx + c * (c + 1) / 2,
                prefill_context_tokens: ctx,
                ..Default::default()
            };
            ns += pool.cost.step(&work).total_ns as f64;
            ctx += c;
        }
        sum_ns += ns;
        n += 1;
    }
    if n == 0 { 0.0 } else { sum_ns / n as f64 / 1e9 }
}
