//! Tested advice: the diagnosis's proposed changes (`metrics::Change`), each made concrete on a copy of the
//! scenario's spec and run on the same requests (the same seed: common random numbers), so the advice says
//! what each change measured instead of what it might do.

use crate::catalog::kind_of;
use crate::metrics::diagnose::threshold::MARGIN;
use crate::metrics::{Change, Report, Tested};
use crate::scenario::{Budget, RouterSpec, Scenario, SchedulerSpec, Spec};
use crate::{Progress, RunError};

/// At most this many changes are run after a run.
pub const MAX_TESTED: usize = 2;

/// The most replicas (or pool workers) a change proposes: `cluster.replicas`' declared bound (a pool's is the
/// same).
fn max_replicas() -> u32 {
    let fields = <crate::scenario::ClusterSpec as crate::spec::Declared>::FIELDS;
    fields.iter().find(|f| f.name == "replicas").map_or(1, |f| f.bound.limits().1 as u32)
}

/// `n × factor`, rounded up, at least one more than `n`, at most the bound (None when already there).
fn scaled(n: u32, factor: f64) -> Option<u32> {
    let m = (libm::ceil(n as f64 * factor) as u32).max(n + 1).min(max_replicas());
    (m > n).then_some(m)
}

/// The change made concrete: its words and the changed spec; None when it does not apply to this scenario
/// (a router change with one replica, a link without disaggregation, a policy already in place).
pub fn apply(change: Change, spec: &Spec, sc: &Scenario) -> Option<(String, Spec)> {
    apply_from(change, spec, spec, sc)
}

/// `apply` to `spec`, a step of a search that started from `first` (whose counts the words give as "from").
fn apply_from(change: Change, spec: &Spec, first: &Spec, sc: &Scenario) -> Option<(String, Spec)> {
    let mut s = spec.clone();
    let words = match change {
        Change::Replicas { factor } => match s.cluster.disaggregation.as_mut() {
            Some(d) => {
                let f = first.cluster.disaggregation.as_ref()?;
                let (p, q) = (f.prefill.replicas, f.decode.replicas);
                d.prefill.replicas = scaled(d.prefill.replicas, factor)?;
                d.decode.replicas = scaled(d.decode.replicas, factor)?;
                format!("{} prefill + {} decode workers (from {p} + {q})", d.prefill.replicas, d.decode.replicas)
            }
            None => {
                let n = first.cluster.replicas;
                s.cluster.replicas = scaled(s.cluster.replicas, factor)?;
                format!("{} replicas (from {n})", s.cluster.replicas)
            }
        },
        Change::FewerReplicas => {
            let n = s.cluster.replicas;
            if s.cluster.disaggregation.is_some() || n < 2 {
                return None;
            }
            s.cluster.replicas = n - 1;
            format!("{} replicas (from {n})", n - 1)
        }
        Change::Kv { factor } => {
            let now = sc.pools.iter().map(|p| p.engine.kv_capacity_tokens).max()?;
            let tokens = libm::round(now as f64 * factor) as u64;
            s.engine.kv_capacity_tokens = Some(tokens);
            format!("{factor}× KV memory ({tokens} tokens per worker, from {now})")
        }
        Change::MaxSeqs { factor } => {
            let n = s.engine.max_num_seqs;
            s.engine.max_num_seqs = (libm::round(n as f64 * factor) as u32).max(1);
            format!("max_num_seqs {} (from {n})", s.engine.max_num_seqs)
        }
        Change::TokenBudget { factor } => token_budget(&mut s, factor)?,
        Change::SmallerChunks => {
            let e = &mut s.engine;
            let from = sc.front_pool().engine.prefill_chunk_tokens.min(e.max_num_batched_tokens);
            let to = (from / 4).max(256);
            if to >= from {
                return None;
            }
            let was_on = e.chunked_prefill;
            (e.chunked_prefill, e.prefill_chunk_tokens) = (true, Some(to));
            if was_on {
                format!("prefill chunks of {to} tokens (from {from})")
            } else {
                format!("chunked prefill on, in chunks of {to} tokens (it was off)")
            }
        }
        Change::LoadAwareRouter | Change::ShortestFirst => policy(change, &mut s)?,
        Change::LinkBandwidth { factor } => {
            let l = &mut s.cluster.disaggregation.as_mut()?.link;
            let from = l.bandwidth_gbps;
            l.bandwidth_gbps = from * factor;
            format!("KV link {} GB/s (from {from})", l.bandwidth_gbps)
        }
        Change::HostBandwidth { factor } => {
            let h = s.engine.host_kv.as_mut()?;
            let from = h.bandwidth_gbps;
            h.bandwidth_gbps = from * factor;
            format!("host link {} GB/s (from {from})", h.bandwidth_gbps)
        }
        Change::PrefillWorkers { factor } => {
            let p = &mut s.cluster.disaggregation.as_mut()?.prefill;
            let from = p.replicas;
            p.replicas = scaled(from, factor)?;
            format!("{} prefill workers (from {from})", p.replicas)
        }
        Change::FasterFrontend { factor } => {
            let f = s.engine.frontend.as_mut()?;
            let from = f.per_request_ms;
            (f.per_request_ms, f.per_prompt_token_us) = (from / factor, f.per_prompt_token_us / factor);
            format!("a front end {factor}× faster ({} ms a request, from {from})", f.per_request_ms)
        }
        Change::MoreTp => {
            if s.cluster.disaggregation.is_some() {
                return None;
            }
            let tp = s.hardware.tp;
            s.hardware.tp = tp * 2;
            format!("TP {} (from {tp}; {} GPUs)", tp * 2, tp * 2 * s.cluster.replicas)
        }
    };
    Some((words, s))
}

/// A policy change: a load-aware router, or shortest-job-first (None when already in place or when it cannot
/// matter: one replica, or pools that have their own routers).
fn policy(change: Change, s: &mut Spec) -> Option<String> {
    Some(match change {
        Change::LoadAwareRouter => {
            use RouterSpec as R;
            let load_aware = matches!(
                s.cluster.router,
                R::LeastOutstanding | R::PowerOfTwo | R::CentralQueue | R::Sticky | R::BoundedAffinity { .. }
            );
            if s.cluster.disaggregation.is_some() || s.cluster.replicas < 2 || load_aware {
                return None;
            }
            let from = kind_of(&s.cluster.router);
            s.cluster.router = R::LeastOutstanding;
            format!("least-outstanding router (from {from})")
        }
        Change::ShortestFirst => {
            if s.scheduler == SchedulerSpec::Sjf {
                return None;
            }
            let from = kind_of(&s.scheduler);
            s.scheduler = SchedulerSpec::Sjf;
            format!("shortest-job-first order (from {from})")
        }
        _ => return None,
    })
}

/// A token budget × factor; a smaller one turns chunked prefill on (with chunks no larger than it), since
/// without chunks the longest prompt must fit the budget.
fn token_budget(s: &mut Spec, factor: f64) -> Option<String> {
    let e = &mut s.engine;
    let from = e.max_num_batched_tokens;
    let to = (libm::round(from as f64 * factor) as u32).max(64);
    if to == from {
        return None;
    }
    e.max_num_batched_tokens = to;
    if to < from {
        e.chunked_prefill = true;
        e.prefill_chunk_tokens = e.prefill_chunk_tokens.map(|c| c.min(to));
    }
    Some(format!("token budget {to} (from {from})"))
}

impl Tested {
    fn of(change: String, r: &Report) -> Tested {
        Tested {
            change,
            measured: true,
            served_rps: r.steady.throughput_rps,
            slo_attainment: r.summary.slo_attainment,
            p95_ttft_s: r.summary.ttft_s.p95,
            p95_tpot_s: r.summary.tpot_s.p95,
            objectives_met: r.objectives.met && !r.steady.overloaded,
            overloaded: r.steady.overloaded,
            note: None,
        }
    }

    fn not_run(change: String, why: String) -> Tested {
        let z = 0.0;
        Tested {
            change,
            measured: false,
            served_rps: z,
            slo_attainment: z,
            p95_ttft_s: z,
            p95_tpot_s: z,
            objectives_met: false,
            overloaded: false,
            note: Some(why),
        }
    }

    /// "10 replicas (from 3): 19.9 req/s served, 99.6 % within SLO, p95 TTFT 412 ms, p95 TPOT 31.0 ms".
    fn sentence(&self) -> String {
        if !self.measured {
            return format!("{}: {}", self.change, self.note.as_deref().unwrap_or("not run"));
        }
        let s = crate::metrics::secs;
        let outcome = if self.objectives_met {
            "objectives met"
        } else if self.overloaded {
            "still overloaded"
        } else {
            "still missed"
        };
        format!(
            "{}: {outcome} ({:.2} req/s served, {:.1} % within SLO, p95 TTFT {}, p95 TPOT {})",
            self.change,
            self.served_rps,
            self.slo_attainment * 100.0,
            s(self.p95_ttft_s),
            s(self.p95_tpot_s)
        )
    }
}

/// Replicas are searched in at most this many runs: each overloaded one scales by its own measured load
/// factor (served rates under overload understate what is missing: the cheap requests are served first).
pub const MAX_REPLICA_STEPS: usize = 3;

/// Run the first `MAX_TESTED` of the report's proposed changes that apply, each validated and held to
/// `budget`, and write what they measured into the diagnosis (`tested`, and the advice's first sentence).
/// `progress` hears each run's progress (the index of the run, from 0, and the change it runs, as the table
/// words it) and may cancel.
pub fn test(
    spec: &Spec,
    sc: &Scenario,
    report: &mut Report,
    budget: &Budget,
    progress: &mut dyn FnMut(usize, &str, Progress) -> bool,
) -> Result<(), RunError> {
    // Each change that applies, made concrete once: its first step.
    let first_steps: Vec<(Change, String, Spec)> = (report.diagnosis.candidates.iter())
        .filter_map(|&c| apply(c, spec, sc).map(|(words, s)| (c, words, s)))
        .take(MAX_TESTED)
        .collect();
    let mut tested = Vec::new();
    for (change, mut words, mut next) in first_steps {
        for _ in 0..MAX_REPLICA_STEPS {
            let k = tested.len();
            let (t, load_factor) = run_one(words, &next, budget, &mut |w, p| progress(k, w, p))?;
            let again = matches!(change, Change::Replicas { .. }) && t.measured && !t.objectives_met;
            // Overloaded: scale by what this run still missed; carried but missed: a quarter more.
            let factor = if t.overloaded { load_factor * MARGIN } else { 1.25 };
            tested.push(t);
            let Some(step) = again.then(|| apply_from(Change::Replicas { factor }, &next, spec, sc)).flatten() else {
                break;
            };
            (words, next) = step;
        }
    }
    write_advice(report, tested);
    Ok(())
}

/// One changed spec, validated, held to the budget and run: what it measured and its load factor.
fn run_one(
    words: String,
    s: &Spec,
    budget: &Budget,
    progress: &mut dyn FnMut(&str, Progress) -> bool,
) -> Result<(Tested, f64), RunError> {
    match crate::scenario::validate_within(s, budget) {
        Ok(v) => {
            let r = crate::simulate_with_progress(&v, &mut |p| progress(&words, p))?;
            Ok((Tested::of(words, &r), r.diagnosis.load_factor))
        }
        Err(e) => {
            let first = e.errors.first().map_or(String::new(), |f| format!("{}: {}", f.path, f.message));
            Ok((Tested::not_run(words, format!("not run ({first})")), 1.0))
        }
    }
}

/// The advice leads with what was measured: the first change that met the objectives, or that none did.
fn write_advice(report: &mut Report, tested: Vec<Tested>) {
    let d = &mut report.diagnosis;
    let measured: Vec<&Tested> = tested.iter().filter(|t| t.measured).collect();
    // Tested at the length that decides the verdict when the run was too short (`capacity::length`).
    let on = match d.length.as_ref().and_then(|l| l.decided_at.filter(|&at| at > l.requests).map(|at| (at, l))) {
        Some((at, l)) => format!(
            "Measured at the length that decides, {at} requests (this run's {} and {} more)",
            l.requests,
            at - l.requests
        ),
        None => "Measured on the same requests".to_string(),
    };
    let lead = if d.kind == "healthy" {
        measured.first().map(|t| {
            if t.objectives_met {
                format!("{on}: {}, so there is headroom.", t.sentence())
            } else {
                format!("{on}: {}, so keep the current size.", t.sentence())
            }
        })
    } else if let Some(best) = measured.iter().find(|t| t.objectives_met) {
        let others: Vec<String> = measured.iter().filter(|t| t.change != best.change).map(|t| t.sentence()).collect();
        let also = if others.is_empty() { String::new() } else { format!(" Also measured: {}.", others.join("; ")) };
        Some(format!("{on}: {}.{also}", best.sentence()))
    } else if !measured.is_empty() {
        let all: Vec<String> = measured.iter().map(|t| t.sentence()).collect();
        Some(format!("{on}, no tested change meets the objectives: {}.", all.join("; ")))
    } else {
        None
    };
    // A change measured to meet the objectives is the advice: the general words after it would propose again
    // what the same runs measured worse, or what this scenario cannot use.
    let met = d.kind != "healthy" && measured.iter().any(|t| t.objectives_met);
    match lead {
        Some(lead) if met => d.advice = lead,
        Some(lead) => d.advice = format!("{lead} {}", d.advice),
        None => {}
    }
    d.tested = tested;
}
