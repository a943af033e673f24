//! The report of one run: summary, per-class and per-tenant blocks, engine figures, audits and time series.
//! Built once from the recorder after the run; serialised as-is by `export`.

use serde::Serialize;

use super::session_report::{SessionsSummary, sessions_summary};
use super::steady::{Miss, ObjectivesReport, SteadySummary, meets};
use super::summary::*;
use super::{Limiter, Outcome, Recorder, RequestRecord, Stats};
use crate::scenario::{BatchFormationSpec, Scenario};
use crate::sched::admission::Reject;

/// Everything a run reports. Field names carry units.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub inferscale_version: &'static str,
    pub scenario: String,
    pub seed: u64,
    pub gpus: u32,
    /// What was run: model, device, tensor parallelism and workers of each pool.
    pub setup: Setup,
    pub summary: Summary,
    pub classes: Vec<GroupSummary>,
    pub tenants: Vec<GroupSummary>,
    pub replicas: Vec<ReplicaSummary>,
    pub engine: EngineSummary,
    pub audits: Audits,
    /// The steady-state window: warm-up and drain left out, so a short and a long run agree.
    pub steady: SteadySummary,
    /// The attainment target and the percentile objectives, and whether they were met.
    pub objectives: ObjectivesReport,
    /// Capacity or queueing? The plain-language verdict with the numbers behind it.
    pub diagnosis: super::Diagnosis,
    /// The configuration's sustained capacity, which the diagnosis's ρ is set against (the CLI's and the lab's
    /// run, `crate::simulate_tested`; absent from a study's runs and from closed loops and bursts).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<super::Capacity>,
    pub series: Series,
    /// Disaggregated only: each pool's workers, GPUs and use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pools: Option<Vec<PoolSummary>>,
    /// Disaggregated only: the KV transfers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transfer: Option<TransferSummary>,
    /// Shared prefixes only: the cache's effect.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix: Option<PrefixSummary>,
    /// Multi-turn sessions only: turns, sessions and how they ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sessions: Option<SessionsSummary>,
    /// Per-request rows (CSV export); not part of the JSON report.
    #[serde(skip)]
    pub requests: Vec<RequestRecord>,
    /// The TTFT, TPOT and E2E CDFs of completed requests, for the lab's charts (`export::latency_cdfs`);
    /// not part of the JSON report.
    #[serde(skip)]
    pub latency_cdfs: super::LatencyCdfs,
}

/// What was run, in the words a user would say it ("Llama-3-70B on 8 H100 SXM, TP4 × 2").
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Setup {
    pub model: String,
    pub pools: Vec<PoolSetup>,
    /// A load that is not an arrival rate: "a closed loop of 16 clients", "a burst at t = 0" (absent for open
    /// loops, whose offered rate says it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load: Option<String>,
    /// Length distributions whose `max` cuts the mean they ask for (by more than 1 %), said as sentences:
    /// the requests are shorter than the field reads.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub truncated_lengths: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PoolSetup {
    /// `colocated`, `prefill` or `decode`.
    pub role: &'static str,
    pub device: String,
    pub tp: u32,
    pub replicas: u32,
    pub gpus: u32,
    /// `sglang` or `sglang_mixed` (absent for vLLM's, the default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch_formation: Option<&'static str>,
}

impl Setup {
    fn of(sc: &Scenario) -> Setup {
        let pools = sc
            .pools
            .iter()
            .map(|p| PoolSetup {
                role: p.role.name(),
                device: p.hardware.name.clone(),
                tp: p.hardware.tp,
                replicas: p.replicas,
                gpus: p.replicas * p.hardware.tp,
                batch_formation: match p.engine.formation {
                    BatchFormationSpec::Vllm => None,
                    BatchFormationSpec::Sglang => Some("sglang"),
                    BatchFormationSpec::SglangMixed => Some("sglang_mixed"),
                },
            })
            .collect();
        let load = match sc.workload.arrival {
            crate::workload::Arrival::ClosedLoop { clients, think_ns } if think_ns > 0.0 => {
                Some(format!("a closed loop of {clients} clients (think time {} s)", think_ns / 1e9))
            }
            crate::workload::Arrival::ClosedLoop { clients, .. } => Some(format!("a closed loop of {clients} clients")),
            crate::workload::Arrival::Burst => Some("a burst at t = 0".to_string()),
            _ => None,
        };
        let truncated_lengths = sc.workload.truncations().iter().map(|t| t.sentence()).collect();
        Setup { model: sc.model.name.clone(), pools, load, truncated_lengths }
    }

    /// "llama-3-70b on 8 × h100-sxm (TP 4 × 2 replicas)"; P/D: each pool.
    pub fn sentence(&self) -> String {
        let pools: Vec<String> = self
            .pools
            .iter()
            .map(|p| {
                let role = if p.role == "colocated" { String::new() } else { format!("{} pool: ", p.role) };
                let reps = if p.replicas == 1 { "1 replica".to_string() } else { format!("{} replicas", p.replicas) };
                let batches = match p.batch_formation {
                    Some("sglang") => ", SGLang prefill-first batches",
                    Some(_) => ", SGLang mixed-chunk batches",
                    None => "",
                };
                format!("{role}{} × {} (TP {} × {reps}{batches})", p.gpus, p.device, p.tp)
            })
            .collect();
        match &self.load {
            Some(l) => format!("{} on {}, {l}", self.model, pools.join(", ")),
            None => format!("{} on {}", self.model, pools.join(", ")),
        }
    }
}

/// Latency samples of completed requests, ns.
struct Samples {
    ttft: Vec<u64>,
    tpot: Vec<f64>,
    e2e: Vec<u64>,
    queue: Vec<u64>,
    norm: Vec<f64>,
}

impl Samples {
    /// `overhead_ns`: the serving overhead before a request can queue (`engine.request_overhead_ms`), which its
    /// queue delay leaves out — it is not waiting for the engine.
    fn collect<'a>(it: impl Iterator<Item = &'a RequestRecord>, overhead_ns: u64) -> Self {
        let mut s = Samples { ttft: vec![], tpot: vec![], e2e: vec![], queue: vec![], norm: vec![] };
        let it = it.filter(|r| r.outcome == Outcome::Completed);
        for r in it {
            let e2e = r.done_ns - r.arrival_ns;
            let ttft = r.first_token_ns - r.arrival_ns;
            s.ttft.push(ttft);
            s.e2e.push(e2e);
            s.queue.push(r.first_scheduled_ns - r.arrival_ns - overhead_ns);
            if r.output_tokens > 1 {
                s.tpot.push(super::steady::tpot_s(r));
            }
            s.norm.push(e2e as f64 / r.output_tokens as f64 / 1e9);
        }
        s
    }
}

/// Summary of the requests `pick` selects. One pass over the records; samples are freed on return.
fn group(
    name: &str,
    reqs: &[RequestRecord],
    pick: impl Fn(&RequestRecord) -> bool,
    sc: &Scenario,
    duration_s: f64,
) -> (GroupSummary, Samples) {
    let (mut n, mut completed, mut rejected, mut failed, mut unfinished, mut met) =
        (0u64, 0u64, 0u64, 0u64, 0u64, 0u64);
    for r in reqs.iter().filter(|r| pick(r)) {
        n += 1;
        match r.outcome {
            Outcome::Completed => completed += 1,
            Outcome::Rejected(_) => rejected += 1,
            Outcome::Failed => failed += 1,
            Outcome::Unfinished | Outcome::InFlight => unfinished += 1,
        }
        met += meets(r, &sc.workload.classes[r.class as usize].slo) as u64;
    }
    let mut s = Samples::collect(reqs.iter().filter(|r| pick(r)), sc.front_pool().engine.request_overhead_ns);
    let g = GroupSummary {
        name: name.to_string(),
        requests: n,
        completed,
        rejected,
        failed,
        unfinished,
        slo_attainment: if n == 0 { 0.0 } else { met as f64 / n as f64 },
        goodput_rps: if duration_s > 0.0 { met as f64 / duration_s } else { 0.0 },
        ttft_s: Stats::from_ns(&mut s.ttft),
        tpot_s: Stats::from_f64(&mut s.tpot),
        e2e_s: Stats::from_ns(&mut s.e2e),
    };
    (g, s)
}

/// What several sections read: the run's span and the workers' KV and busy time.
struct Span {
    end: u64,
    duration_ns: u64,
    duration_s: f64,
    /// KV blocks of each worker (pools may differ), and of all together.
    worker_blocks: Vec<u64>,
    all_blocks: u64,
    total_busy: u64,
    /// Busy time within the run: the steps in flight at its end count only up to it.
    busy_in_run: u64,
    /// Steps, at least 1 (a divisor).
    steps: f64,
}

impl Span {
    fn of(sc: &Scenario, rec: &Recorder) -> Span {
        let end = rec.end_ns;
        let first = rec.requests.first().map_or(0, |r| r.arrival_ns);
        let duration_ns = end.saturating_sub(first);
        let worker_blocks: Vec<u64> =
            sc.pools.iter().flat_map(|p| std::iter::repeat_n(p.engine.kv_total_blocks, p.replicas as usize)).collect();
        Span {
            end,
            duration_ns,
            duration_s: duration_ns as f64 / 1e9,
            all_blocks: worker_blocks.iter().sum(),
            worker_blocks,
            total_busy: rec.replicas.iter().map(|r| r.busy_ns).sum(),
            busy_in_run: rec.replicas.iter().map(|r| r.busy_in_run_ns()).sum(),
            steps: rec.steps.max(1) as f64,
        }
    }

    fn per_s(&self, x: f64) -> f64 {
        if self.duration_s > 0.0 { x / self.duration_s } else { 0.0 }
    }

    /// A busy time as a fraction of the run (0 for an empty run).
    fn fraction(&self, busy_ns: u64, workers: f64) -> f64 {
        if self.end > 0 { busy_ns as f64 / (workers * self.end as f64) } else { 0.0 }
    }
}

impl Report {
    /// Build the report of a finished run, section by section.
    pub fn build(sc: &Scenario, mut rec: Recorder) -> Report {
        let span = Span::of(sc, &rec);
        let reqs = &rec.requests;
        let (overall, mut s) = group("all", reqs, |_| true, sc, span.duration_s);
        // `group` sorted the overall latencies for the percentiles.
        let latency_cdfs = super::LatencyCdfs {
            ttft: super::stats::cdf_of_sorted_ns(&s.ttft),
            tpot: super::stats::cdf_of_sorted_s(&s.tpot),
            e2e: super::stats::cdf_of_sorted_ns(&s.e2e),
        };
        let itl_s = Stats::from_packed_ns(
            &std::mem::take(&mut rec.itl_packed),
            &std::mem::take(&mut rec.itl_short),
            super::ITL_COUNT_BITS,
        );
        let reqs = &rec.requests;
        let mut audits = audits(&rec, &overall);
        let sessions = sessions_summary(sc, &rec, &overall);
        audits.ok &= sessions.as_ref().is_none_or(|s| s.audit.ok && s.conservation_ok);
        // A lone class or tenant holds every request: its summary is the overall one, under its name (sorting
        // the same 100k latencies twice more was a tenth of a run's time).
        let groups = |names: Vec<&str>, key: fn(&RequestRecord) -> usize| match names.as_slice() {
            [name] => vec![GroupSummary { name: name.to_string(), ..overall.clone() }],
            _ => (names.iter().enumerate())
                .map(|(i, name)| group(name, reqs, |r| key(r) == i, sc, span.duration_s).0)
                .collect(),
        };
        let classes = groups(sc.workload.classes.iter().map(|c| c.name.as_str()).collect(), |r| r.class as usize);
        let tenants = groups(sc.workload.tenants.iter().map(|t| t.name.as_str()).collect(), |r| r.tenant as usize);
        let summary = summary(sc, &rec, &span, &overall, &mut s, itl_s, audits.little.relative_error);
        let engine = engine_summary(sc, &rec, &span);
        let (pools, transfer, prefix) =
            (pool_summaries(sc, &rec, &span), transfer_summary(sc, &rec, &span), prefix_summary(sc, &rec));
        let series = series(&rec, &span);
        let mut steady = super::steady::steady(sc, reqs, span.end, &series);
        if rec.itl_coarsened {
            steady.warnings.push(format!("inter-token latencies: the run recorded more than {} distinct gaps, so they are kept to 11 significant bits (within 0.05 %); every other figure is exact", super::ITL_CAP));
        }
        if rec.clock_ended {
            steady.warnings.push("the simulated clock reached its end (4e18 ns, about 127 years): what would have happened later did not, and the requests it would have finished are unfinished".into());
        }
        let objectives = super::steady::objectives(sc, reqs, summary.slo_attainment);
        let missed: Vec<Miss> = super::steady::misses(sc, reqs, &classes);
        let diagnosis = super::diagnose(
            &super::diagnose::Inputs {
                summary: &summary,
                engine: &engine,
                steady: &steady,
                objectives: &objectives,
                pools: pools.as_deref(),
                transfer: transfer.as_ref(),
                prefix: prefix.as_ref(),
                sessions: sessions.as_ref(),
                unloaded_ttft_s: super::steady::unloaded_ttft_s(sc, reqs),
                replicas: sc.pools.iter().map(|p| p.replicas).max().unwrap_or(1),
                chunked_prefill: sc.front_pool().engine.chunked_prefill,
            },
            missed,
        );
        Report {
            inferscale_version: env!("CARGO_PKG_VERSION"),
            scenario: sc.name.clone(),
            seed: sc.seed,
            gpus: sc.gpu_count(),
            setup: Setup::of(sc),
            summary,
            classes,
            tenants,
            replicas: replica_summaries(&rec, &span),
            engine,
            audits,
            steady,
            objectives,
            diagnosis,
            capacity: None,
            series,
            pools,
            transfer,
            prefix,
            sessions,
            requests: rec.requests,
            latency_cdfs,
        }
    }
}

/// Conservation, the KV audit and Little's law over [0, end] — admitted requests only (a rejected request
/// spends no time inside).
fn audits(rec: &Recorder, overall: &GroupSummary) -> Audits {
    let (reqs, end) = (&rec.requests, rec.end_ns);
    let admitted = reqs.iter().filter(|r| !matches!(r.outcome, Outcome::Rejected(_)));
    let (n_admitted, time_in_system_ns) =
        admitted.fold((0u64, 0u128), |(n, t), r| (n + 1, t + (r.done_ns.min(end) - r.arrival_ns) as u128));
    let t = end.max(1) as f64;
    let l = rec.area[3] as f64 / t;
    let lambda = n_admitted as f64 / t;
    let w = if n_admitted == 0 { 0.0 } else { time_in_system_ns as f64 / n_admitted as f64 };
    let little_err = if lambda * w > 0.0 { (l - lambda * w).abs() / (lambda * w) } else { l };
    let conservation = Conservation {
        arrived: reqs.len() as u64,
        completed: overall.completed,
        rejected: overall.rejected,
        failed: overall.failed,
        unfinished: overall.unfinished,
        ok: overall.completed + overall.rejected + overall.failed + overall.unfinished == reqs.len() as u64,
    };
    let kv = KvAudit { checks: rec.kv_checks, violations: rec.kv_violations, ok: rec.kv_violations == 0 };
    let little = LittleAudit {
        time_avg_in_system: l,
        arrival_rate_rps: lambda * 1e9,
        mean_time_in_system_s: w / 1e9,
        relative_error: little_err,
    };
    Audits { ok: conservation.ok && kv.ok && little_err <= LITTLE_TOLERANCE, little, conservation, kv }
}

/// The headline figures.
fn summary(
    sc: &Scenario,
    rec: &Recorder,
    span: &Span,
    overall: &GroupSummary,
    s: &mut Samples,
    itl_s: Stats,
    little_err: f64,
) -> Summary {
    let reqs = &rec.requests;
    let completed = || reqs.iter().filter(|r| r.outcome == Outcome::Completed);
    let output_tokens: u64 = completed().map(|r| r.output_tokens as u64).sum();
    let prompt_tokens: u64 = completed().map(|r| r.prompt_tokens as u64).sum();
    let met = (overall.slo_attainment * reqs.len() as f64).round();
    let t = rec.end_ns.max(1) as f64;
    Summary {
        requests: reqs.len() as u64,
        completed: overall.completed,
        rejected: overall.rejected,
        rejected_too_long: reqs.iter().filter(|r| r.outcome == Outcome::Rejected(Reject::TooLong)).count() as u64,
        failed: overall.failed,
        unfinished: overall.unfinished,
        duration_s: span.duration_s,
        offered_rate_rps: super::steady::offered_rate_rps(reqs),
        throughput_rps: span.per_s(overall.completed as f64),
        output_tokens_per_s: span.per_s(output_tokens as f64),
        total_tokens_per_s: span.per_s((output_tokens + prompt_tokens) as f64),
        goodput_rps: span.per_s(met),
        slo_attainment: overall.slo_attainment,
        goodput_per_gpu_rps: span.per_s(met) / sc.gpu_count() as f64,
        kv_peak_fraction: (rec.replicas.iter().zip(&span.worker_blocks))
            .map(|(r, b)| r.kv_peak_blocks as f64 / *b as f64)
            .fold(0.0, f64::max),
        kv_mean_fraction: rec.area[2] as f64 / t / span.all_blocks as f64,
        mean_batch_size: if span.total_busy > 0 { rec.batch_area as f64 / span.total_busy as f64 } else { 0.0 },
        preemptions: rec.preemptions,
        little_relative_error: little_err,
        ttft_s: overall.ttft_s,
        tpot_s: overall.tpot_s,
        itl_s,
        e2e_s: overall.e2e_s,
        queue_delay_s: Stats::from_ns(&mut s.queue),
        normalized_latency_s_per_token: Stats::from_f64(&mut s.norm),
    }
}

/// What the engine did: steps, tokens, what limited the batches, where step time went.
fn engine_summary(sc: &Scenario, rec: &Recorder, span: &Span) -> EngineSummary {
    let main_pool = sc.pools.last().expect("a pool");
    let steps = span.steps;
    let share = |l: Limiter| rec.limiter_steps[Limiter::ALL.iter().position(|x| *x == l).unwrap()] as f64 / steps;
    let [pc, dc, wt, kr, cm, oh] = rec.cost_parts_ns.map(|x| x / 1e9);
    EngineSummary {
        steps: rec.steps,
        kv_capacity_tokens: main_pool.engine.kv_capacity_tokens,
        kv_blocks: main_pool.engine.kv_total_blocks,
        busy_fraction: if span.duration_ns > 0 {
            span.busy_in_run as f64 / (sc.worker_count() as u64 as f64 * span.end as f64)
        } else {
            0.0
        },
        prefill_tokens: rec.prefill_tokens,
        decode_tokens: rec.decode_tokens,
        compute_bound_step_fraction: rec.compute_bound_steps as f64 / steps,
        limiter: LimiterShares {
            queue_empty: share(Limiter::QueueEmpty),
            max_seqs: share(Limiter::MaxSeqs),
            token_budget: share(Limiter::TokenBudget),
            kv_reservation: share(Limiter::KvReservation),
            kv_free: share(Limiter::KvFree),
            preemption: share(Limiter::Preemption),
        },
        cost_breakdown_s: CostBreakdown {
            prefill_compute: pc,
            decode_compute: dc,
            weights: wt,
            kv_read: kr,
            comm: cm,
            overhead: oh,
        },
        mean_step_ms: span.total_busy as f64 / steps / 1e6,
        frontend_busy_max_fraction: rec.frontend_busy,
    }
}

/// The gauges over time, one point per window.
fn series(rec: &Recorder, span: &Span) -> Series {
    let sr = &rec.series;
    let win_s = sr.window_ns as f64 / 1e9;
    let cap = span.all_blocks as f64;
    Series {
        window_s: win_s,
        t_s: sr.points.iter().map(|p| p.0 as f64 / 1e9).collect(),
        waiting: sr.points.iter().map(|p| p.1).collect(),
        running: sr.points.iter().map(|p| p.2).collect(),
        kv_used_fraction: sr.points.iter().map(|p| p.3 / cap).collect(),
        in_system: sr.points.iter().map(|p| p.4).collect(),
        throughput_rps: sr.points.iter().map(|p| p.5 as f64 / win_s).collect(),
        output_tokens_per_s: sr.points.iter().map(|p| p.6 as f64 / win_s).collect(),
    }
}

fn replica_summaries(rec: &Recorder, span: &Span) -> Vec<ReplicaSummary> {
    let end = span.end;
    (rec.replicas.iter().enumerate())
        .map(|(i, r)| ReplicaSummary {
            replica: i as u32,
            steps: r.steps,
            busy_fraction: if end > 0 { r.busy_in_run_ns() as f64 / end as f64 } else { 0.0 },
            kv_peak_fraction: r.kv_peak_blocks as f64 / span.worker_blocks[i] as f64,
        })
        .collect()
}

/// Disaggregated: each pool's workers together.
fn pool_summaries(sc: &Scenario, rec: &Recorder, span: &Span) -> Option<Vec<PoolSummary>> {
    let pool = |p: &crate::scenario::Pool| {
        let workers = &rec.replicas[p.first as usize..(p.first + p.replicas) as usize];
        let busy: u64 = workers.iter().map(|w| w.busy_in_run_ns()).sum();
        PoolSummary {
            role: p.role.name(),
            workers: p.replicas,
            device: p.hardware.name.clone(),
            tp: p.hardware.tp,
            gpus: p.replicas * p.hardware.tp,
            kv_blocks_per_worker: p.engine.kv_total_blocks,
            steps: workers.iter().map(|w| w.steps).sum(),
            busy_fraction: span.fraction(busy, p.replicas as f64),
            kv_peak_fraction: workers.iter().map(|w| w.kv_peak_blocks).max().unwrap_or(0) as f64
                / p.engine.kv_total_blocks as f64,
        }
    };
    sc.is_disaggregated().then(|| sc.pools.iter().map(pool).collect())
}

/// Disaggregated: the KV transfers and the links.
fn transfer_summary(sc: &Scenario, rec: &Recorder, span: &Span) -> Option<TransferSummary> {
    let reqs = &rec.requests;
    sc.is_disaggregated().then(|| {
        let mut lat: Vec<u64> = reqs
            .iter()
            .filter(|r| r.handoff_ns != u64::MAX && r.first_token_ns != u64::MAX && r.first_token_ns >= r.handoff_ns)
            .map(|r| r.first_token_ns - r.handoff_ns)
            .collect();
        let links = rec.link_busy_ns.len().max(1) as f64;
        TransferSummary {
            transfers: lat.len() as u64,
            bytes: rec.transfer_bytes,
            links: rec.link_busy_ns.len() as u64,
            latency_s: Stats::from_ns(&mut lat),
            link_busy_fraction: span.fraction(rec.link_busy_ns.iter().sum::<u64>(), 1.0) / links,
            link_busy_max_fraction: span.fraction(rec.link_busy_ns.iter().copied().max().unwrap_or(0), 1.0),
        }
    })
}

/// Shared prefixes: how many requests carried one and what the cache saved — prefix groups' or, for a trace's
/// block hashes, per hashed block with the share of prompt tokens not prefilled.
fn prefix_summary(sc: &Scenario, rec: &Recorder) -> Option<PrefixSummary> {
    let reqs = &rec.requests;
    let (shared_tokens, caching, with_prefix, source, prompt_token_hit_rate) = match (&sc.workload.chains, &sc.prefix) {
        (Some(c), _) => {
            let prompt_tokens: u64 =
                reqs.iter().filter(|r| r.first_scheduled_ns != u64::MAX).map(|r| r.prompt_tokens as u64).sum();
            let with = reqs.iter().filter(|r| !c.full_blocks(r.id, r.prompt_tokens).is_empty()).count();
            let rate = if prompt_tokens == 0 { 0.0 } else { rec.prefix_saved_tokens as f64 / prompt_tokens as f64 };
            (c.block_tokens, true, with, Some("trace hash_ids"), Some(rate))
        }
        (None, Some(p)) => (
            p.shared_tokens,
            p.caching,
            reqs.iter().filter(|r| r.prefix_group != crate::workload::NO_PREFIX).count(),
            None,
            None,
        ),
        (None, None) => return None,
    };
    Some(PrefixSummary {
        shared_tokens,
        caching,
        requests_with_prefix: with_prefix as u64,
        hit_rate: if reqs.is_empty() { 0.0 } else { rec.prefix_hits as f64 / reqs.len() as f64 },
        lookups: rec.prefix_lookups,
        hits: rec.prefix_hits,
        prefill_tokens_saved: rec.prefix_saved_tokens,
        shared_kv_peak_blocks: rec.prefix_peak_blocks,
        evictions: rec.prefix_evictions,
        source,
        prompt_token_hit_rate,
    })
}
