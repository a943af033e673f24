//! The bottleneck explanation, decided in order: first the regime (is the offered load above what this
//! configuration serves?), then what limits the service rate, and only below saturation queueing, memory,
//! interference or service time. It names the changes worth testing (`Change`); `crate::advice` runs them on
//! the same requests and writes what each measured into `tested` and the advice.

use serde::Serialize;

use super::session_report::SessionsSummary;
use super::steady::{Miss, ObjectivesReport, SteadySummary};
use super::summary::{EngineSummary, PoolSummary, PrefixSummary, Summary, TransferSummary};

/// One number behind the verdict.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    pub label: String,
    /// `fraction` (0–1), `s` (seconds) or `number`, as `unit` says.
    pub value: f64,
    pub unit: &'static str,
}

/// A change the diagnosis proposes, relative to the scenario (`crate::advice` makes it concrete and runs it).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Change {
    /// Every pool's workers × factor (rounded up, at least one more).
    Replicas { factor: f64 },
    /// One replica fewer (colocated, more than one).
    FewerReplicas,
    /// KV capacity per worker × factor.
    Kv { factor: f64 },
    /// `engine.max_num_seqs` × factor.
    MaxSeqs { factor: f64 },
    /// `engine.max_num_batched_tokens` × factor (chunked prefill turned on when it shrinks).
    TokenBudget { factor: f64 },
    /// Prefill chunks a quarter of their size (at least 256 tokens), chunked prefill on.
    SmallerChunks,
    /// `cluster.router` least outstanding.
    LoadAwareRouter,
    /// `scheduler` shortest predicted job first.
    ShortestFirst,
    /// The prefill/decode link's bandwidth × factor.
    LinkBandwidth { factor: f64 },
    /// The host tier's bandwidth × factor.
    HostBandwidth { factor: f64 },
    /// The prefill pool's workers × factor.
    PrefillWorkers { factor: f64 },
    /// Tensor parallelism × 2.
    MoreTp,
    /// The front end's time a request (`engine.frontend`) ÷ factor.
    FasterFrontend { factor: f64 },
}

/// A proposed change as run on the same requests (same seed): what it measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Tested {
    /// The change in words, with its figures ("10 replicas (from 3)").
    pub change: String,
    /// False when it could not be run (`note` says why); its figures are then 0.
    pub measured: bool,
    /// Steady throughput, req/s.
    pub served_rps: f64,
    pub slo_attainment: f64,
    pub p95_ttft_s: f64,
    pub p95_tpot_s: f64,
    /// The objectives met and the load sustained (not overloaded).
    pub objectives_met: bool,
    pub overloaded: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The diagnosis of a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Diagnosis {
    /// `capacity`, `overload_rejections`, `healthy`, `transfer`, `memory`, `queueing`, `interference` or
    /// `service_time` (docs/metrics.md defines each by its thresholds).
    pub kind: &'static str,
    /// `overloaded` (the waiting queue grows: offered > served), `shedding` (a fifth or more turned away) or
    /// `under_capacity`.
    pub regime: &'static str,
    /// Offered ÷ served over the steady window (1 when the load is carried or no window exists).
    pub load_factor: f64,
    /// The offered rate ÷ the configuration's sustained capacity (`Report::capacity`; absent where it was not
    /// measured: a study's runs, closed loops and bursts).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rho: Option<f64>,
    /// What limits the service rate: `kv_memory`, `batch_cap`, `token_budget`, `compute`,
    /// `memory_bandwidth`, `kv_link`, `host_link` or `prefill_pool`.
    pub limit: &'static str,
    /// One or two plain sentences with the numbers.
    pub verdict: String,
    /// The change most likely to help; once tested, what the tested changes measured comes first.
    pub advice: String,
    pub findings: Vec<Finding>,
    /// Which per-request objective each class missed, and how often (empty when none was missed).
    pub missed: Vec<Miss>,
    /// The proposed changes, each run on the same requests (absent when not tested: studies' runs).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tested: Vec<Tested>,
    /// Whether the run was long enough to decide the verdict (`capacity::length`; absent when its regime and ρ
    /// agree, or where no capacity was measured).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub length: Option<LengthCheck>,
    /// The changes worth testing, in order (`crate::advice` runs the first two that apply).
    #[serde(skip)]
    pub candidates: Vec<Change>,
}

/// The same scenario run at doubling lengths, and the length that decides its verdict.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LengthCheck {
    /// The run's own length, in requests.
    pub requests: u64,
    /// The verdict's kind at each length run: the run's own first, then each twice the one before.
    pub readings: Vec<Reading>,
    /// The shortest length whose reading the run twice as long repeats; absent when none did (the lengths
    /// disagreed up to the longest, or no longer run could be made: `unchecked` says why).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unchecked: Option<&'static str>,
}

/// A verdict's kind at one run length.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Reading {
    pub requests: u64,
    pub kind: &'static str,
}

/// "memory at 2000 requests, capacity at 4000 requests".
fn readings_words(r: &[Reading]) -> String {
    let each: Vec<String> =
        r.iter().map(|x| format!("{} at {} requests", x.kind.replace('_', " "), x.requests)).collect();
    each.join(", ")
}

impl Diagnosis {
    /// Set the load against `c`, the configuration's sustained capacity, `offered` being the scenario's rate in
    /// the same unit and `shed` the share of the run's requests rejected or failed: ρ, a sentence in the verdict,
    /// and — over capacity — the replicas proposed scaled by ρ, the measured shortfall (offered ÷ served under
    /// overload only bounds it from below).
    pub fn set_capacity(&mut self, c: &super::Capacity, offered: f64, unit: &str, shed: f64) {
        if !(c.mean_rps > 0.0 && offered > 0.0) {
            return;
        }
        let rho = offered / c.mean_rps;
        self.rho = Some(rho);
        // A seed whose search did not close has a bound, not an estimate: said.
        let open = if c.unconverged > 0 {
            format!("; on {} of its seeds the search did not close, so read it as a bound", c.unconverged)
        } else {
            String::new()
        };
        self.verdict.push_str(&format!(
            " Offered {offered:.2} {unit} is ρ = {rho:.2} of this configuration's sustained capacity, {} (the highest rate it serves stably: docs/metrics.md, \"Stability\"{open}).",
            c.words(unit)
        ));
        if self.regime == "under_capacity" && rho > 1.0 && shed > 0.005 {
            // Past sustained capacity without a growing queue by turning arrivals away (a queue that did not
            // grow for want of time is `capacity::length`'s to decide).
            self.verdict.push_str(&format!(" Past it, this run keeps its queue bounded only by turning away {:.1} % of its arrivals, which a stable run does not do beyond 0.5 %.", shed * 100.0));
        }
        if self.regime != "under_capacity" && rho > 1.0 {
            for change in &mut self.candidates {
                if let Change::Replicas { factor } = change {
                    *factor = factor.max(rho * t::MARGIN);
                }
            }
        }
    }

    /// Say what the length check found (`capacity::length::check`): this run's verdict stands, or — `self`
    /// being then the deciding run's diagnosis — that this run (which read `own`) was too short to decide.
    pub fn set_length(&mut self, check: LengthCheck, own: &'static str) {
        let n = check.requests;
        let own = own.replace('_', " ");
        let longest = check.readings.last().map_or(n, |r| r.requests);
        self.verdict = match (check.decided_at, check.unchecked) {
            (Some(at), _) if at == n => format!(
                "{} A run twice as long ({longest} requests) reads {} too, so this run is long enough to decide it.",
                self.verdict, own
            ),
            (Some(at), _) => format!(
                "This run of {n} requests is too short to decide: it reads {own}, while the same scenario (its first {n} requests the same) reads {}. A run of {at} requests decides it, and this diagnosis is that run's: {}",
                readings_words(&check.readings[1..]),
                self.verdict
            ),
            (None, Some(why)) => format!(
                "{} Its regime and its ρ disagree or lie within the capacity's interval, and a longer run, which would decide between them, could not be made ({why}): read this verdict as a guess.",
                self.verdict
            ),
            (None, None) => format!(
                "{} No two successive lengths up to {longest} requests read alike ({}): the offered rate is at this configuration's capacity, where the verdict turns on how long the load lasts, so read it as a guess.",
                self.verdict,
                readings_words(&check.readings)
            ),
        };
        self.length = Some(check);
    }
}

fn pct1(x: f64) -> String {
    format!("{:.1} %", x * 100.0)
}

use super::{pct, secs};

/// The thresholds each verdict is decided on (docs/metrics.md's "Diagnosis" table states them).
pub mod threshold {
    /// Rejected + failed requests ÷ requests at or above which the system is shedding load.
    pub const SHEDDING: f64 = 0.2;
    /// A limiter (KV, batch cap, token budget) that stopped admission on this share of steps limits the rate.
    pub const LIMITED: f64 = 0.2;
    /// Preemptions per request above which KV memory is the limit whatever the limiters say.
    pub const PREEMPTING: f64 = 0.1;
    /// Waiting's share of mean TTFT (beyond the prefill alone) above which waiting dominates.
    pub const QUEUE_DOMINATES: f64 = 0.5;
    /// Device time-busy above which a queue under capacity is that of a nearly saturated server.
    pub const NEAR_SATURATION: f64 = 0.85;
    /// Prefill's share of step time above which prefill interferes with decodes.
    pub const PREFILL_HEAVY: f64 = 0.4;
    /// Enough prefill in the steps for its stalls to be what a TPOT objective the median gap meets misses.
    pub const PREFILL_SOME: f64 = 0.05;
    /// Compute-bound steps' share above which compute (not memory bandwidth) sets the step time.
    pub const COMPUTE_BOUND: f64 = 0.5;
    /// The busiest KV link's busy share, or transfer's share of p95 TTFT, above which the link limits.
    pub const LINK_BUSY: f64 = 0.8;
    pub const TRANSFER_SHARE: f64 = 0.5;
    /// The busiest front end's busy share above which the API server, serving one request at a time, is what
    /// limits the rate (`engine.frontend`).
    pub const FRONTEND_BUSY: f64 = 0.9;
    /// The prefill pool's busy share above which it is the bottleneck of a disaggregated run.
    pub const PREFILL_POOL_BUSY: f64 = 0.9;
    /// The decode pool's KV peak above which its memory is full.
    pub const DECODE_KV_FULL: f64 = 0.95;
    /// p95 restore wait ÷ p95 turn TTFT above which restores from host memory limit the turns.
    pub const RESTORE_SHARE: f64 = 0.5;
    /// Replicas proposed for an overload: replicas × load factor × this margin (a queue at ρ ≈ 1 is long).
    pub const MARGIN: f64 = 1.1;
}
use threshold as t;

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

/// What a diagnosis reads: the report's sections.
pub struct Inputs<'a> {
    pub summary: &'a Summary,
    pub engine: &'a EngineSummary,
    pub steady: &'a SteadySummary,
    pub objectives: &'a ObjectivesReport,
    pub pools: Option<&'a [PoolSummary]>,
    pub transfer: Option<&'a TransferSummary>,
    pub prefix: Option<&'a PrefixSummary>,
    pub sessions: Option<&'a SessionsSummary>,
    /// The mean TTFT of the completed requests alone on an idle worker (`steady::unloaded_ttft_s`).
    pub unloaded_ttft_s: f64,
    /// The most workers a pool has: with one, no router has a choice to make.
    pub replicas: u32,
    /// Whether the front pool chunks prompts (advice on chunk sizes says when it switches chunking on).
    pub chunked_prefill: bool,
}

/// The figures a verdict is decided on.
#[derive(Clone, Copy)]
struct Evidence {
    queue_share: f64,
    /// Of mean TTFT, what it takes beyond the prefill alone: waiting in the queue or for room in a batch.
    wait_share: f64,
    busy: f64,
    kv_limited: f64,
    preempt_per_req: f64,
    prefill_share: f64,
    turned_away: f64,
    /// Offered ÷ served over the steady window.
    load_factor: f64,
    /// Disaggregated: the link's busy share, transfer's share of p95 TTFT, the pools' busy shares, decode KV.
    link_busy: f64,
    transfer_share: f64,
    prefill_pool_busy: f64,
    decode_pool_busy: f64,
    decode_kv_peak: f64,
    /// Sessions: p95 restore wait ÷ p95 turn TTFT.
    restore_share: f64,
    /// The busiest front end's busy share (0 without one).
    frontend_busy: f64,
}

fn share(part: f64, whole: f64) -> f64 {
    if whole > 0.0 { (part / whole).min(1.0) } else { 0.0 }
}

impl Evidence {
    fn of(i: &Inputs) -> Evidence {
        let (s, e, st) = (i.summary, i.engine, i.steady);
        let c = &e.cost_breakdown_s;
        let step_total = (c.prefill_compute + c.decode_compute + c.weights + c.kv_read).max(1e-12);
        let per_request = |n: u64| if s.requests > 0 { n as f64 / s.requests as f64 } else { 0.0 };
        let pool = |role: &str| i.pools.and_then(|p| p.iter().find(|p| p.role == role));
        let restore_share =
            i.sessions.filter(|x| x.kv.restores > 0).map_or(0.0, |x| share(x.kv.restore_s.p95, x.turn_ttft_s.p95));
        Evidence {
            queue_share: share(s.queue_delay_s.mean, s.ttft_s.mean),
            wait_share: share((s.ttft_s.mean - i.unloaded_ttft_s).max(0.0), s.ttft_s.mean),
            busy: e.busy_fraction,
            kv_limited: e.limiter.kv_free + e.limiter.kv_reservation + e.limiter.preemption,
            preempt_per_req: per_request(s.preemptions),
            prefill_share: c.prefill_compute / step_total,
            turned_away: s.turned_away_share(),
            load_factor: if st.window_s > 0.0 && st.throughput_rps > 0.0 {
                st.offered_rate_rps / st.throughput_rps
            } else {
                1.0
            },
            link_busy: i.transfer.map_or(0.0, |x| x.link_busy_max_fraction),
            transfer_share: i.transfer.map_or(0.0, |x| share(x.latency_s.p95, s.ttft_s.p95)),
            prefill_pool_busy: pool("prefill").map_or(0.0, |p| p.busy_fraction),
            decode_pool_busy: pool("decode").map_or(0.0, |p| p.busy_fraction),
            decode_kv_peak: pool("decode").map_or(0.0, |p| p.kv_peak_fraction),
            restore_share,
            frontend_busy: e.frontend_busy_max_fraction.unwrap_or(0.0),
        }
    }

    fn link_bound(&self) -> bool {
        self.link_busy > t::LINK_BUSY || self.transfer_share > t::TRANSFER_SHARE
    }

    /// What limits the service rate: the front end, then a link or a pool (they cap the rate whatever a
    /// worker's limiters say: requests reach the scheduler no faster than the API server lets them), then
    /// preemptions, then the limiter that stopped admission most often, else the step itself (compute- or
    /// bandwidth-bound).
    fn limit(&self, e: &EngineSummary) -> &'static str {
        if self.frontend_busy > t::FRONTEND_BUSY {
            return "frontend";
        }
        if self.link_bound() {
            return "kv_link";
        }
        if self.restore_share > t::RESTORE_SHARE {
            return "host_link";
        }
        if self.prefill_pool_busy > t::PREFILL_POOL_BUSY {
            return "prefill_pool";
        }
        if self.preempt_per_req > t::PREEMPTING || self.decode_kv_peak > t::DECODE_KV_FULL {
            return "kv_memory";
        }
        let limiters = [
            ("kv_memory", self.kv_limited),
            ("batch_cap", e.limiter.max_seqs),
            ("token_budget", e.limiter.token_budget),
        ];
        let (name, most) = limiters.iter().fold(("", 0.0), |a, &(n, v)| if v > a.1 { (n, v) } else { a });
        if most >= t::LIMITED {
            name
        } else if e.compute_bound_step_fraction >= t::COMPUTE_BOUND {
            "compute"
        } else {
            "memory_bandwidth"
        }
    }

    /// The limit in words, with the figure that shows it.
    fn limit_words(&self, limit: &str, e: &EngineSummary) -> String {
        match limit {
            "frontend" => format!(
                "the front end (the API server, which serves one request at a time: the busiest worker's is busy {})",
                pct(self.frontend_busy)
            ),
            "kv_link" => format!(
                "the KV-transfer link (busiest link busy {}, transfer {} of p95 TTFT)",
                pct(self.link_busy),
                pct(self.transfer_share)
            ),
            "host_link" => {
                format!("restores from host memory (p95 restore {} of p95 turn TTFT)", pct(self.restore_share))
            }
            "prefill_pool" => format!(
                "the prefill pool (busy {}; decode pool {})",
                pct(self.prefill_pool_busy),
                pct(self.decode_pool_busy)
            ),
            "kv_memory" => format!(
                "KV memory ({} of steps held back by KV, {:.2} preemptions per request)",
                pct(self.kv_limited),
                self.preempt_per_req
            ),
            "batch_cap" => format!("the batch cap (max_num_seqs reached on {} of steps)", pct(e.limiter.max_seqs)),
            "token_budget" => {
                format!("the token budget (max_num_batched_tokens spent on {} of steps)", pct(e.limiter.token_budget))
            }
            "compute" => format!("compute ({} of steps compute-bound)", pct(e.compute_bound_step_fraction)),
            _ => format!(
                "memory bandwidth (reading weights and KV; {} of steps compute-bound)",
                pct(e.compute_bound_step_fraction)
            ),
        }
    }

    fn findings(&self, i: &Inputs) -> Vec<Finding> {
        let (s, e) = (i.summary, i.engine);
        let f = |label: &str, value: f64, unit: &'static str| Finding { label: label.into(), value, unit };
        let mut v = vec![
            f("SLO attainment", s.slo_attainment, "fraction"),
            f("offered ÷ served, steady window (load factor)", self.load_factor, "number"),
            f("device time-busy (share of time stepping, not of capacity)", self.busy, "fraction"),
            f("queueing share of mean TTFT (arrival to admission)", self.queue_share, "fraction"),
            f("waiting share of mean TTFT (beyond its prefill alone)", self.wait_share, "fraction"),
            f("mean TTFT alone on an idle worker", i.unloaded_ttft_s, "s"),
            f("steps limited by KV memory", self.kv_limited, "fraction"),
            f("steps limited by the batch cap", e.limiter.max_seqs, "fraction"),
            f("steps limited by the token budget", e.limiter.token_budget, "fraction"),
            f("preemptions per request", self.preempt_per_req, "number"),
            f("prefill share of compute+memory time", self.prefill_share, "fraction"),
            f("requests rejected or failed", self.turned_away, "fraction"),
        ];
        if let Some(p) = i.prefix {
            v.push(f("prefix cache hit rate", p.hit_rate, "fraction"));
        }
        if e.frontend_busy_max_fraction.is_some() {
            v.push(f("busiest front end busy", self.frontend_busy, "fraction"));
        }
        if i.transfer.is_some() {
            v.push(f("prefill pool busy", self.prefill_pool_busy, "fraction"));
            v.push(f("decode pool busy", self.decode_pool_busy, "fraction"));
            v.push(f("busiest transfer link busy", self.link_busy, "fraction"));
            v.push(f("KV transfer share of p95 TTFT", self.transfer_share, "fraction"));
        }
        if i.sessions.is_some_and(|x| x.kv.restores > 0) {
            v.push(f("p95 restore wait ÷ p95 turn TTFT", self.restore_share, "fraction"));
        }
        v
    }
}

/// The change that raises a limit.
fn raise(limit: &str) -> Change {
    match limit {
        "kv_link" => Change::LinkBandwidth { factor: 2.0 },
        "host_link" => Change::HostBandwidth { factor: 2.0 },
        "prefill_pool" => Change::PrefillWorkers { factor: 1.5 },
        "kv_memory" => Change::Kv { factor: 2.0 },
        "batch_cap" => Change::MaxSeqs { factor: 2.0 },
        "token_budget" => Change::TokenBudget { factor: 2.0 },
        "frontend" => Change::FasterFrontend { factor: 2.0 },
        _ => Change::MoreTp,
    }
}

/// A verdict: the kind, its sentences and the changes worth testing.
struct Verdict {
    kind: &'static str,
    regime: &'static str,
    verdict: String,
    advice: String,
    candidates: Vec<Change>,
}

/// Diagnose a run from its report's sections.
pub fn diagnose(i: &Inputs, missed: Vec<Miss>) -> Diagnosis {
    let ev = Evidence::of(i);
    let limit = ev.limit(i.engine);
    let v = if i.steady.overloaded || ev.turned_away >= t::SHEDDING {
        over_capacity(&ev, i, limit)
    } else if i.objectives.met {
        healthy(&ev, i)
    } else {
        // A TPOT objective the median inter-token gap meets, missed by the requests' TPOT: the gaps a
        // prefill step stretched are what misses it.
        let stalled = missed.iter().find(|m| m.objective == "tpot" && i.summary.itl_s.p50 <= m.max_s);
        under_capacity(&ev, i, limit, stalled.map(|m| m.max_s))
    };
    let o = i.objectives;
    let verdict = if o.met { v.verdict } else { format!("{}{}", v.verdict, missed_sentence(o, &missed)) };
    Diagnosis {
        kind: v.kind,
        regime: v.regime,
        load_factor: ev.load_factor,
        rho: None,
        limit,
        verdict,
        advice: v.advice,
        findings: ev.findings(i),
        missed,
        tested: Vec::new(),
        length: None,
        candidates: v.candidates,
    }
}

/// The load is above what this configuration serves: the waiting queue grows, or a fifth is turned away.
fn over_capacity(ev: &Evidence, i: &Inputs, limit: &'static str) -> Verdict {
    let (st, e) = (i.steady, i.engine);
    let limited = format!("The service rate is limited by {}.", ev.limit_words(limit, e));
    if !st.overloaded {
        let factor = 1.0 / (1.0 - ev.turned_away).max(0.01);
        return Verdict {
            kind: "overload_rejections",
            regime: "shedding",
            verdict: format!(
                "A capacity problem: {} of requests were rejected or failed. The cluster serves about 1/{:.1} of what is offered (device time-busy {}). {limited}",
                pct1(ev.turned_away),
                factor,
                pct(ev.busy)
            ),
            advice:
                "The system sheds load: add capacity, or relax the admission policy if the rejections are premature."
                    .into(),
            candidates: capacity_changes(Change::Replicas { factor: factor * t::MARGIN }, limit),
        };
    }
    let met =
        if i.objectives.met { " The objectives are met over this run, but a longer run would miss them." } else { "" };
    Verdict {
        kind: "capacity",
        regime: "overloaded",
        verdict: format!(
            "A capacity problem: {:.2} req/s offered, {:.2} req/s served over the steady window. The load is at least {:.2}× what this configuration carries (served rates under overload favour cheap requests); the waiting queue grew from {} to {} (device time-busy {}). {limited}{met}",
            st.offered_rate_rps, st.throughput_rps, ev.load_factor, st.waiting_start, st.waiting_end, pct(ev.busy)
        ),
        advice: "Add capacity (replicas or faster GPUs) or reduce the load, or raise the limit if it is what caps the rate; the capacity planner searches the count. A scheduler or router only reshuffles who waits.".into(),
        candidates: capacity_changes(Change::Replicas { factor: ev.load_factor * t::MARGIN }, limit),
    }
}

/// More replicas first, then the limit raised; a link first when it is the limit (more workers do not
/// widen a shared link or a host's).
fn capacity_changes(more: Change, limit: &str) -> Vec<Change> {
    if limit == "kv_link" || limit == "host_link" { vec![raise(limit), more] } else { vec![more, raise(limit)] }
}

fn healthy(ev: &Evidence, i: &Inputs) -> Verdict {
    let (s, o) = (i.summary, i.objectives);
    // Time-busy is no headroom test under continuous batching (a worker steps whenever anything runs), so
    // the headroom is measured: one replica fewer, on the same requests.
    Verdict {
        kind: "healthy",
        regime: "under_capacity",
        verdict: format!(
            "The objectives are met ({} of requests meet their SLOs, target {}), and the load is carried. The device is time-busy {}; queueing is {} of mean TTFT.",
            pct1(s.slo_attainment),
            pct1(o.attainment_target),
            pct(ev.busy),
            pct(ev.queue_share)
        ),
        advice:
            "Keep a margin and watch p99 as load grows; the capacity planner measures the rate this cluster sustains."
                .into(),
        candidates: vec![Change::FewerReplicas],
    }
}

fn under(kind: &'static str, verdict: String, advice: &str, candidates: Vec<Change>) -> Verdict {
    Verdict { kind, regime: "under_capacity", verdict, advice: advice.into(), candidates }
}

/// Under capacity, a link or the prefill pool as the limit: their own verdicts.
fn link_or_pool(ev: &Evidence, i: &Inputs, limit: &'static str) -> Option<Verdict> {
    let words = match limit {
        "kv_link" => format!(
            "The KV-transfer link limits the run: the busiest link is busy {}, and transfer is {} of p95 TTFT (p95 transfer {}).",
            pct(ev.link_busy),
            pct(ev.transfer_share),
            secs(i.transfer.map_or(0.0, |x| x.latency_s.p95))
        ),
        "host_link" => format!(
            "Restores from host memory limit the turns: the p95 restore wait is {} of the p95 turn TTFT.",
            pct(ev.restore_share)
        ),
        "prefill_pool" => {
            return Some(under(
                "queueing",
                format!(
                    "The prefill pool is the bottleneck: busy {} while the decode pool is busy {}; TTFT is prefill queueing.",
                    pct(ev.prefill_pool_busy),
                    pct(ev.decode_pool_busy)
                ),
                "Move workers from decode to prefill (or add prefill workers), or cache shared prefixes to cut prefill work.",
                vec![Change::PrefillWorkers { factor: 1.5 }],
            ));
        }
        _ => return None,
    };
    let change =
        if limit == "kv_link" { Change::LinkBandwidth { factor: 4.0 } } else { Change::HostBandwidth { factor: 4.0 } };
    Some(under(
        "transfer",
        words,
        "A faster link, fewer KV bytes per token (FP8 KV), or keeping more in HBM (prefix caching, a longer retention).",
        vec![change],
    ))
}

/// What bounds decode stalls: chunked prefill (switched on, when it is off), or a second replica to halve each
/// one's prefill, or disaggregation.
fn interference_advice(i: &Inputs) -> &'static str {
    if i.chunked_prefill {
        "Use smaller prefill chunks or a smaller token budget to bound decode stalls, spread the prompts over more replicas, or separate prefill from decode (disaggregation)."
    } else {
        "Switch chunked prefill on so a long prompt shares its steps with decodes instead of stalling them, spread the prompts over more replicas, or separate prefill from decode (disaggregation)."
    }
}

/// The changes interference tests: chunking (switched on, or smaller chunks), then a second replica — each
/// replica then carries half the prompts and so half the stalls.
fn interference_changes() -> Vec<Change> {
    vec![Change::SmallerChunks, Change::Replicas { factor: 2.0 }]
}

/// The load is carried but an objective is missed: a link, memory, queueing, interference or the service
/// time itself, in that order.
fn under_capacity(ev: &Evidence, i: &Inputs, limit: &'static str, stalled_tpot_s: Option<f64>) -> Verdict {
    let v = under;
    if let Some(verdict) = link_or_pool(ev, i, limit) {
        return verdict;
    }
    if ev.preempt_per_req > t::PREEMPTING
        || ev.decode_kv_peak > t::DECODE_KV_FULL
        || (ev.kv_limited > t::LIMITED && ev.wait_share > t::QUEUE_DOMINATES)
    {
        // Reserving closer to the true length avoids preemptions only where there were some.
        let reserve = if ev.preempt_per_req > 0.0 {
            " or reserve KV closer to the true output length to avoid preemptions"
        } else {
            ""
        };
        return v(
            "memory",
            format!(
                "The load is carried, but KV memory binds: {} of steps were held back by KV, {:.2} preemptions per request, KV peak {}.",
                pct(ev.kv_limited),
                ev.preempt_per_req,
                pct(i.summary.kv_peak_fraction)
            ),
            &format!("Add KV memory (more GPUs per replica, FP8 KV, higher gpu_memory_utilization){reserve}."),
            vec![Change::Kv { factor: 2.0 }],
        );
    }
    if ev.wait_share > t::QUEUE_DOMINATES {
        return queueing(ev, i);
    }
    if let Some(objective) = stalled_tpot_s.filter(|_| ev.prefill_share > t::PREFILL_SOME) {
        return v(
            "interference",
            format!(
                "Prefill interference: decodes meet the TPOT objective between prefills (median gap between tokens {} ≤ {}), yet requests miss it — the steps that carry a prefill ({} of step time) stretch their gaps.",
                secs(i.summary.itl_s.p50),
                secs(objective),
                pct(ev.prefill_share)
            ),
            interference_advice(i),
            interference_changes(),
        );
    }
    if ev.prefill_share > t::PREFILL_HEAVY {
        return v(
            "interference",
            format!(
                "Prefill interference: prefill takes {} of step time and shares steps with decodes, so TPOT suffers while the device is {} time-busy.",
                pct(ev.prefill_share),
                pct(ev.busy)
            ),
            interference_advice(i),
            interference_changes(),
        );
    }
    v(
        "service_time",
        format!(
            "The service time itself misses the objectives: the load is carried, the device is {} time-busy and waiting is only {} of mean TTFT (a prompt alone takes {} on average).",
            pct(ev.busy),
            pct(ev.wait_share),
            secs(i.unloaded_ttft_s)
        ),
        "A faster GPU, more tensor parallelism, or a looser objective: no queue to remove.",
        vec![Change::MoreTp],
    )
}

/// Under capacity, waiting dominates TTFT: the queue of a nearly saturated server (a front end, or the device),
/// or one that bursts or uneven routing build.
fn queueing(ev: &Evidence, i: &Inputs) -> Verdict {
    // A front end near saturation is where the queue builds (its wait counts as queueing): a device
    // time-busy all along may still have room for many times the load (decodes keep it stepping).
    let front = ev.frontend_busy > t::NEAR_SATURATION;
    let near = front || ev.busy > t::NEAR_SATURATION;
    // A router has nothing to choose between on one worker.
    let routed = i.replicas > 1;
    let mut c = if routed { vec![Change::LoadAwareRouter, Change::ShortestFirst] } else { vec![Change::ShortestFirst] };
    c.insert(if near { 0 } else { c.len() }, Change::Replicas { factor: 1.25 });
    if front {
        c.insert(0, Change::FasterFrontend { factor: 2.0 });
    }
    let why = if front {
        format!("the front end is {} busy, so the queue is that of a nearly saturated front end", pct(ev.frontend_busy))
    } else if near {
        format!("the device is {} time-busy, so the queue is that of a nearly saturated server", pct(ev.busy))
    } else {
        format!("the device is only {} time-busy, so bursts or uneven routing build the queues", pct(ev.busy))
    };
    under(
        "queueing",
        format!(
            "A queueing problem under capacity: {} of mean TTFT is spent waiting ({} in the queue, the rest for room in a batch) while the load is carried; {why}.",
            pct(ev.wait_share),
            pct(ev.queue_share)
        ),
        if front {
            "A front end near saturation queues every request before the device sees it: a faster front end (more API-server processes, tokenization off the request path) shortens the queue most, and each added replica brings its own."
        } else if routed {
            "Smooth the queues before buying capacity: a load-aware router (least outstanding, power of two) or a central queue, and a shortest-job-first order; near saturation a little more capacity shortens the queue most."
        } else {
            "On one replica a burst waits for the one server: a shortest-job-first order shortens the wait of the short requests, and a second replica absorbs the bursts themselves; near saturation a little more capacity shortens the queue most."
        },
        c,
    )
}
