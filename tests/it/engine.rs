//! Targeted engine behaviours.

use inferscale::scenario::*;
use inferscale::simulate;

/// A linear-cost scenario with one request class, for exact timing checks.
fn linear(prompt: u32, output: u32, requests: u64, rate: f64) -> Spec {
    let mut s = super::small();
    s.workload.arrival = ArrivalSpec::Constant { rate_rps: rate };
    s.workload.requests = Some(requests);
    s.workload.classes = vec![ClassSpec {
        prompt_tokens: LengthSpec::Fixed { tokens: prompt },
        output_tokens: LengthSpec::Fixed { tokens: output },
        ..ClassSpec::default()
    }];
    s.cost = CostSpec::Linear { base_ms: 10.0, per_seq_ms: 0.0, per_prefill_token_ms: 0.01, per_kv_token_ms: 0.0 };
    s
}

#[test]
fn a_lone_request_takes_prefill_then_one_step_per_token() {
    let mut s = linear(1000, 5, 1, 1.0);
    s.engine.prefill_chunk_tokens = Some(8192);
    let r = simulate(&super::valid(&s));
    // Prefill: 10 ms + 1000 × 0.01 ms = 20 ms and it emits the first token; then 4 decode steps of 10 ms.
    assert!((r.summary.ttft_s.mean - 0.020).abs() < 1e-9, "{}", r.summary.ttft_s.mean);
    assert!((r.summary.e2e_s.mean - 0.060).abs() < 1e-9, "{}", r.summary.e2e_s.mean);
    assert!((r.summary.tpot_s.mean - 0.010).abs() < 1e-9);
    assert_eq!(r.summary.itl_s.count, 4);
    assert!((r.summary.itl_s.p99 - 0.010).abs() < 1e-9);
    assert_eq!(r.engine.steps, 5);
}

#[test]
fn chunked_prefill_splits_long_prompts_and_bounds_decode_stalls() {
    let mut s = linear(4096, 3, 1, 1.0);
    s.engine.prefill_chunk_tokens = Some(512);
    let r = simulate(&super::valid(&s));
    assert_eq!(r.engine.steps, 8 + 2, "4096 / 512 prefill steps, then 2 decode steps");
    // With long prompts arriving while others decode, a small token budget with chunking caps the longest
    // inter-token gap; without chunking a whole 6000-token prompt stalls every decode behind it.
    let mut busy = super::small();
    busy.workload.arrival = ArrivalSpec::Poisson { rate_rps: 1.0 };
    busy.workload.classes = vec![ClassSpec {
        prompt_tokens: LengthSpec::Fixed { tokens: 6000 },
        output_tokens: LengthSpec::Fixed { tokens: 200 },
        ..ClassSpec::default()
    }];
    let mut whole = busy.clone();
    whole.engine.chunked_prefill = false;
    busy.engine.max_num_batched_tokens = 1024;
    busy.engine.prefill_chunk_tokens = Some(512);
    let chunked = simulate(&super::valid(&busy)).summary.itl_s.max;
    let unchunked = simulate(&super::valid(&whole)).summary.itl_s.max;
    assert!(chunked < unchunked / 3.0, "max ITL chunked {chunked} vs whole-prompt {unchunked}");
}

#[test]
fn batching_is_bounded_by_max_num_seqs_and_nearly_free() {
    let mut s = super::shipped("peer-llama3-8b-h100.json");
    s.workload.requests = Some(3000);
    s.workload.arrival = ArrivalSpec::Poisson { rate_rps: 1e6 };
    s.engine.max_num_seqs = 64;
    let r = simulate(&super::valid(&s));
    assert!(r.summary.mean_batch_size <= 64.0 + 1e-9, "{}", r.summary.mean_batch_size);
    assert!(r.engine.limiter.max_seqs > 0.5, "a burst is limited by the batch cap: {:?}", r.engine.limiter);
    // Throughput grows almost linearly with the batch cap: decode is memory bound.
    s.engine.max_num_seqs = 16;
    let small = simulate(&super::valid(&s)).summary.output_tokens_per_s;
    assert!(
        r.summary.output_tokens_per_s > 1.8 * small,
        "4x the batch cap, {} vs {small}",
        r.summary.output_tokens_per_s
    );
}

#[test]
fn kv_pressure_preempts_and_the_retry_cap_fails_requests() {
    let s = super::shipped("kv-pressure.json");
    let r = simulate(&super::valid(&s));
    assert!(r.summary.preemptions > 100, "{}", r.summary.preemptions);
    assert!(r.summary.kv_peak_fraction > 0.95);
    let mut strict = s.clone();
    strict.engine.preemption.max_preemptions = 0;
    let r = simulate(&super::valid(&strict));
    assert!(r.summary.failed > 0);
    assert!(r.audits.conservation.ok);
    // Reserving the full true output (oracle) never needs to preempt.
    let mut safe = s.clone();
    safe.estimator.reserve = PredictorSpec::Oracle;
    safe.engine.kv_oversubscription = 1.0;
    let r = simulate(&super::valid(&safe));
    assert_eq!(r.summary.preemptions, 0);
    assert!(r.engine.limiter.kv_reservation > 0.0, "admission waited on the reservation instead");
}

/// vLLM's preemption with prefix caching on (its default): the victim's blocks are freed with their hashes
/// kept, allocations take them oldest freed first and a request's tail first, and the readmission finds what
/// is left as a cached prefix. By hand: two requests of 256 prompt and 600 output tokens, 16-token blocks, 64
/// blocks of KV, reserving the prompt only, the second arriving 0.1 µs after the first (one step behind it). When the first needs its
/// 33rd block both hold 32 (the second 511 tokens: 31 full blocks), so the second is preempted and keeps 31;
/// the first then grows to 54 blocks (855 tokens) — one block from the free pool and 21 from the kept ones,
/// tail first — and the second comes back to find 10 blocks: it recomputes 160 tokens fewer than without.
#[test]
fn a_preempted_request_recomputes_only_what_allocations_took_of_its_freed_blocks() {
    let mut s = linear(256, 600, 2, 1e7);
    s.engine.block_size_tokens = 16;
    s.engine.kv_capacity_tokens = Some(64 * 16);
    s.engine.kv_oversubscription = 100.0;
    s.engine.prefill_chunk_tokens = Some(8192);
    s.estimator.reserve = PredictorSpec::Zero;
    let on = simulate(&super::valid(&s));
    let mut off = s.clone();
    off.engine.preemption.reuse_freed_blocks = false;
    let off = simulate(&super::valid(&off));
    assert_eq!((on.summary.preemptions, off.summary.preemptions), (1, 1));
    assert_eq!(off.engine.prefill_tokens - on.engine.prefill_tokens, 160);
    // The second's readmission prefills 160 tokens fewer: 1.6 ms sooner at 0.01 ms a token.
    let e2e = |r: &inferscale::Report| r.requests.iter().map(|q| q.done_ns).max().unwrap();
    assert_eq!(e2e(&off) - e2e(&on), 1_600_000);
    assert!(on.audits.ok && off.audits.ok);
    // Nothing is kept with prefix caching off (vLLM keeps no hash to find them by), nor with a central queue
    // (the readmission may be on any worker): the option does nothing there.
    let same_either_way = |s: &Spec| {
        let mut off = s.clone();
        off.engine.preemption.reuse_freed_blocks = false;
        let (on, off) = (simulate(&super::valid(s)), simulate(&super::valid(&off)));
        assert_eq!((on.summary.preemptions, off.summary.preemptions), (1, 1));
        inferscale::export::json(&on) == inferscale::export::json(&off)
    };
    let mut uncached = s.clone();
    uncached.prefix =
        Some(PrefixSpec { prefix_tokens: 16, reuse_fraction: 1.0, groups: 1, zipf_s: 1.0, caching: false });
    let mut central = s.clone();
    central.cluster.router = RouterSpec::CentralQueue;
    assert!(same_either_way(&uncached) && same_either_way(&central));
    uncached.prefix.as_mut().unwrap().caching = true;
    assert!(!same_either_way(&uncached), "with caching on, the kept blocks count");
    // SGLang's formations retract and recompute: the option does nothing there.
    s.engine.batch_formation = BatchFormationSpec::Sglang;
    (s.engine.kv_oversubscription, s.estimator.reserve) = (1.0, PredictorSpec::Oracle);
    let mut sg_off = s.clone();
    sg_off.engine.preemption.reuse_freed_blocks = false;
    assert_eq!(
        inferscale::export::json(&simulate(&super::valid(&s))),
        inferscale::export::json(&simulate(&super::valid(&sg_off)))
    );
}

#[test]
fn admission_policies_turn_work_away() {
    let mut s = super::small();
    s.workload.arrival = ArrivalSpec::Poisson { rate_rps: 50.0 };
    s.admission = AdmissionSpec::QueueCap { max_waiting: 5 };
    let r = simulate(&super::valid(&s));
    assert!(r.summary.rejected > 50, "{}", r.summary.rejected);
    s.admission = AdmissionSpec::RandomDrop { probability: 0.25 };
    let r = simulate(&super::valid(&s));
    let frac = r.summary.rejected as f64 / r.summary.requests as f64;
    assert!((frac - 0.25).abs() < 0.06, "{frac}");
    s.admission = AdmissionSpec::TokenBucket { rate_tokens_per_s: 5000.0, burst_tokens: 20000.0 };
    let r = simulate(&super::valid(&s));
    assert!(r.summary.rejected > 0);
    // Admitted token rate cannot exceed the bucket's rate + burst over the run.
    let admitted: u64 = r
        .requests
        .iter()
        .filter(|q| !matches!(q.outcome, inferscale::metrics::Outcome::Rejected(_)))
        .map(|q| (q.prompt_tokens + q.pred_reserve_tokens) as u64)
        .sum();
    let arrivals_span = r.requests.last().unwrap().arrival_ns as f64 / 1e9;
    assert!(admitted as f64 <= 5000.0 * arrivals_span + 20000.0 + 1.0);
}

#[test]
fn deadline_admission_rejects_hopeless_requests() {
    let mut s = super::small();
    s.workload.arrival = ArrivalSpec::Poisson { rate_rps: 30.0 };
    for c in &mut s.workload.classes {
        c.slo.e2e_ms = Some(15_000.0);
    }
    let open = simulate(&super::valid(&s));
    s.admission = AdmissionSpec::Deadline { slack: 1.0 };
    let guarded = simulate(&super::valid(&s));
    assert!(guarded.summary.rejected > 0);
    assert!(guarded.summary.e2e_s.p95 < open.summary.e2e_s.p95);
}

/// Past capacity (the benchmark scenario at 1.5× its sustained capacity), deadline admission's prefill-rate
/// estimate admits requests that finish past the deadline it checked; the feasibility check, which drains
/// the queue at the measured completion rate and checks TTFT too, admits almost none such, and keeps more
/// requests within their objectives.
#[test]
fn feasibility_admission_admits_what_can_finish_in_time() {
    let mut s = super::shipped("peer-llama3-8b-h100.json");
    s.workload.requests = Some(3000);
    s.workload.arrival = ArrivalSpec::Poisson { rate_rps: 34.8 };
    for c in &mut s.workload.classes {
        c.slo.e2e_ms = Some(15_000.0);
    }
    // The share of the served past their e2e deadline and past their TTFT objective.
    let late = |r: &inferscale::Report| {
        let served: Vec<_> =
            r.requests.iter().filter(|q| q.outcome == inferscale::metrics::Outcome::Completed).collect();
        let share = |past: &dyn Fn(&&inferscale::metrics::RequestRecord) -> bool| {
            served.iter().filter(|q| past(q)).count() as f64 / served.len() as f64
        };
        (
            share(&|q| q.done_ns - q.arrival_ns > 15_000_000_000),
            share(&|q| q.first_token_ns - q.arrival_ns > 2_000_000_000),
        )
    };
    s.admission = AdmissionSpec::Deadline { slack: 1.0 };
    let prefill_rate = simulate(&super::valid(&s));
    s.admission = AdmissionSpec::Feasible { slack: 1.0 };
    let measured = simulate(&super::valid(&s));
    assert!(measured.summary.rejected > 0);
    let ((e2e_a, ttft_a), (e2e_b, ttft_b)) = (late(&prefill_rate), late(&measured));
    assert!(e2e_a > 0.5 && e2e_b < 0.05, "served past the e2e deadline: {e2e_a} (prefill rate), {e2e_b} (measured)");
    assert!(ttft_b < 0.3 && ttft_b < ttft_a / 2.0, "past the TTFT objective: {ttft_a}, {ttft_b}");
    assert!(measured.summary.slo_attainment > prefill_rate.summary.slo_attainment + 0.2);
}

#[test]
fn routers_spread_load() {
    let mut s = super::shipped("chat-70b-h100-tp4.json");
    s.workload.requests = Some(2000);
    s.cluster.router = RouterSpec::RoundRobin;
    let r = simulate(&super::valid(&s));
    let per: Vec<u64> = (0..4).map(|i| r.requests.iter().filter(|q| q.replica == i).count() as u64).collect();
    assert_eq!(per, vec![500; 4]);
    let mut p95 = vec![];
    for router in [RouterSpec::Random, RouterSpec::LeastOutstanding, RouterSpec::PowerOfTwo, RouterSpec::LeastKv] {
        s.cluster.router = router.clone();
        let r = simulate(&super::valid(&s));
        assert!(r.replicas.iter().all(|x| x.steps > 0), "{router:?} left a replica idle");
        p95.push(r.summary.ttft_s.p95);
    }
    assert!(p95[1] <= p95[0] && p95[2] <= p95[0], "load-aware routing beats random at p95 TTFT: {p95:?}");
}

#[test]
fn sjf_cuts_mean_latency_and_priority_serves_urgent_classes() {
    let mut s = super::small();
    s.workload.requests = Some(1500);
    s.workload.arrival = ArrivalSpec::Poisson { rate_rps: 5.0 };
    s.engine.max_num_seqs = 16;
    s.estimator.order = PredictorSpec::Oracle;
    let fcfs = simulate(&super::valid(&s));
    s.scheduler = SchedulerSpec::Sjf;
    let sjf = simulate(&super::valid(&s));
    assert!(
        sjf.summary.e2e_s.mean < fcfs.summary.e2e_s.mean,
        "SJF {} vs FCFS {}",
        sjf.summary.e2e_s.mean,
        fcfs.summary.e2e_s.mean
    );
    s.scheduler = SchedulerSpec::Priority;
    let pr = simulate(&super::valid(&s));
    assert!(pr.classes[0].ttft_s.mean < pr.classes[1].ttft_s.mean, "class 0 (priority 0) first");
    assert!(pr.classes[0].ttft_s.mean < fcfs.classes[0].ttft_s.mean);
}

#[test]
fn trace_replay_keeps_arrivals_and_lengths() {
    let s = super::shipped("trace-replay.json");
    let r = simulate(&super::valid(&s));
    let text = std::fs::read_to_string(super::root().join("scenarios/traces/sample-vidur.csv")).unwrap();
    let rows = inferscale::workload::trace::parse(&text, TraceFormat::Auto).unwrap();
    assert_eq!(r.requests.len(), rows.len());
    for (q, t) in r.requests.iter().zip(&rows) {
        assert_eq!((q.arrival_ns, q.prompt_tokens, q.output_tokens), (t.arrival_ns, t.prompt_tokens, t.output_tokens));
    }
    let mut faster = s.clone();
    if let ArrivalSpec::Trace { time_scale, .. } = &mut faster.workload.arrival {
        *time_scale = 0.5;
    }
    let f = simulate(&super::valid(&faster));
    assert_eq!(f.requests.last().unwrap().arrival_ns, (rows.last().unwrap().arrival_ns as f64 * 0.5).round() as u64);
}

#[test]
fn drr_protects_light_tenants() {
    let s = super::shipped("bursty-multitenant.json");
    let mut fcfs = s.clone();
    fcfs.scheduler = SchedulerSpec::Fcfs;
    fcfs.admission = AdmissionSpec::None;
    let mut drr = s.clone();
    drr.admission = AdmissionSpec::None;
    let a = simulate(&super::valid(&fcfs));
    let b = simulate(&super::valid(&drr));
    // The steady tenants (1 and 2) wait less under DRR than under FCFS.
    assert!(
        b.tenants[1].ttft_s.p95 < a.tenants[1].ttft_s.p95,
        "{} vs {}",
        b.tenants[1].ttft_s.p95,
        a.tenants[1].ttft_s.p95
    );
    let r = simulate(&super::valid(&s));
    assert!(r.tenants[0].rejected > 0 && r.tenants[1].rejected == 0, "the bucket limits only the noisy tenant");
}

#[test]
fn series_cover_the_run() {
    let r = simulate(&super::valid(&super::shipped("default.json")));
    let s = &r.series;
    assert!(s.t_s.len() >= 100 && s.t_s.len() <= 800, "{}", s.t_s.len());
    for v in [&s.waiting, &s.running, &s.kv_used_fraction, &s.in_system, &s.throughput_rps, &s.output_tokens_per_s] {
        assert_eq!(v.len(), s.t_s.len());
    }
    let done: f64 = s.throughput_rps.iter().map(|x| x * s.window_s).sum();
    // The last window may be partial, so completions sum to within one window of the total.
    assert!((done - r.summary.completed as f64).abs() <= r.summary.completed as f64 * 0.01 + 1.0, "{done}");
    assert!(s.kv_used_fraction.iter().all(|x| (0.0..=1.0).contains(x)));
}

#[test]
fn progress_is_reported_and_cancel_stops_the_run() {
    let mut s = super::shipped("peer-llama3-8b-h100.json");
    // Progress comes every 8192 events (~100 Hz at engine speed): 60k requests give dozens of reports.
    s.workload.requests = Some(60_000);
    let sc = super::valid(&s);
    let mut seen = vec![];
    let r = inferscale::simulate_with_progress(&sc, &mut |p| {
        seen.push(p.fraction());
        true
    })
    .unwrap();
    assert!(seen.len() > 10, "{}", seen.len());
    assert!(seen.windows(2).all(|w| w[1] >= w[0]), "progress never goes back");
    assert_eq!(*seen.last().unwrap(), 1.0);
    // A completed run with progress equals one without.
    assert_eq!(inferscale::export::json(&r), inferscale::export::json(&simulate(&sc)));
    let mut calls = 0;
    let cancelled = inferscale::simulate_with_progress(&sc, &mut |_| {
        calls += 1;
        calls < 3
    });
    assert_eq!(cancelled.unwrap_err(), inferscale::RunError::Cancelled);
    assert_eq!(calls, 3);
}

/// The follow-up mechanism (what closed-loop clients and session turns will use): inert, it changes nothing;
/// echoing each completion twice, a second after it, every request makes a chain of three, each arriving a
/// second after its predecessor's last token with its lengths, the open-loop requests are the ones drawn
/// without follow-ups (their random values are keyed apart), and every audit holds.
#[test]
fn follow_up_requests_answer_completions_and_leave_open_loop_requests_alone() {
    use inferscale::workload::FollowUps;
    let mut s = super::small();
    s.workload.requests = Some(200);
    let sc = super::valid(&s);
    let plain = inferscale::simulate(&sc);
    let inert = inferscale::Report::build(&sc, inferscale::engine::run_with_follow_ups(&sc, FollowUps::None));
    assert_eq!(inferscale::export::json(&inert), inferscale::export::json(&plain), "no follow-ups: the same report");
    let echo = inferscale::Report::build(
        &sc,
        inferscale::engine::run_with_follow_ups(&sc, FollowUps::Echo { delay_ns: 1_000_000_000, turns: 3 }),
    );
    let (a, b) = (&plain.requests, &echo.requests);
    assert_eq!(b.len(), 3 * a.len(), "every request completed and was followed twice");
    assert!(echo.audits.ok, "{:?}", echo.audits);
    // The open-loop requests: same arrivals and lengths (ids are arrival order, so compare as sets).
    let key = |r: &inferscale::metrics::RequestRecord| (r.arrival_ns, r.prompt_tokens, r.output_tokens);
    let open: std::collections::BTreeSet<_> = a.iter().map(key).collect();
    assert_eq!(b.iter().map(key).filter(|k| open.contains(k)).count(), a.len());
    // Each follow-up arrives a second after some completion with the same lengths.
    let done_at: std::collections::BTreeSet<(u64, u32, u32)> =
        b.iter().map(|r| (r.done_ns + 1_000_000_000, r.prompt_tokens, r.output_tokens)).collect();
    let follow_ups = b.iter().filter(|r| !open.contains(&key(r))).collect::<Vec<_>>();
    assert_eq!(follow_ups.len(), 2 * a.len());
    assert!(follow_ups.iter().all(|r| done_at.contains(&key(r))), "a follow-up that answers no completion");
}

/// A: 16-token prompt, 101 output tokens, at t = 0. B: a 4000-token prompt in 1000-token chunks, at 0.5 s.
/// Linear cost: a step is 10 ms + 0.01 ms per prefill token, so A's prefill ends at 10.16 ms and its decodes
/// every 10 ms after; B arrives during A's 49th decode step, which ends at 500.16 ms.
fn decode_meets_a_long_prompt(formation: BatchFormationSpec) -> inferscale::Report {
    let mut s = linear(16, 101, 2, 1.0);
    s.workload.arrival = vidur("arrived_at,num_prefill_tokens,num_decode_tokens\n0,16,101\n0.5,4000,2\n");
    s.workload.requests = None;
    s.engine.prefill_chunk_tokens = Some(1000);
    s.engine.batch_formation = formation;
    simulate(&super::valid(&s))
}

#[test]
fn vllm_mixes_a_prompts_chunks_with_decodes_and_sglang_pauses_decode_for_them() {
    // vLLM V1: each of B's four chunk steps (20 ms) carries A's decode token too; A's 100 decodes end at
    // 10.16 + 96 × 10 + 4 × 20 = 1050.16 ms, and no gap exceeds a chunk step.
    let v = decode_meets_a_long_prompt(BatchFormationSpec::Vllm);
    assert!((v.summary.e2e_s.max - 1.05016).abs() < 1e-9, "{}", v.summary.e2e_s.max);
    assert!((v.summary.itl_s.max - 0.020).abs() < 1e-9, "{}", v.summary.itl_s.max);
    // SGLang: B's chunks run alone, A waits 80 ms then decodes: 10.16 + 100 × 10 + 80 = 1090.16 ms, and A's
    // longest gap is the four prefill steps and its own (90 ms). B's first token is the same 80.16 ms after
    // its arrival either way (its first chunk waits out A's step in flight).
    let g = decode_meets_a_long_prompt(BatchFormationSpec::Sglang);
    assert!((g.summary.e2e_s.max - 1.09016).abs() < 1e-9, "{}", g.summary.e2e_s.max);
    assert!((g.summary.itl_s.max - 0.090).abs() < 1e-9, "{}", g.summary.itl_s.max);
    assert!((g.summary.ttft_s.max - 0.08016).abs() < 1e-9 && (v.summary.ttft_s.max - 0.08016).abs() < 1e-9);
    // SGLang's mixed chunk: A decodes and B's chunks take the rest of the budget — vLLM's steps here.
    let m = decode_meets_a_long_prompt(BatchFormationSpec::SglangMixed);
    assert!(m.summary == v.summary && m.engine == v.engine && m.series == v.series);
    assert_eq!(m.setup.pools[0].batch_formation, Some("sglang_mixed"), "the report says which formation ran");
    assert_eq!(v.setup.pools[0].batch_formation, None);
    for r in [&v, &g, &m] {
        assert!(r.audits.conservation.ok && r.audits.kv.violations == 0);
    }
}

/// Under load prefill-first trades inter-token latency for time to first token, the trade measured SGLang
/// runs show: on the shipped 70B scenario the median TTFT falls and the p99 gap between tokens more than
/// doubles.
#[test]
fn prefill_first_lowers_ttft_and_stretches_the_inter_token_tail_under_load() {
    let base = super::shipped("chat-70b-h100-tp4.json");
    let mut sglang = base.clone();
    sglang.engine.batch_formation = BatchFormationSpec::Sglang;
    let v = simulate(&super::valid(&base)).summary;
    let g = simulate(&super::valid(&sglang)).summary;
    assert!(g.ttft_s.p50 < v.ttft_s.p50, "TTFT p50 {} vs {}", g.ttft_s.p50, v.ttft_s.p50);
    assert!(g.itl_s.p99 > 2.0 * v.itl_s.p99, "ITL p99 {} vs {}", g.itl_s.p99, v.itl_s.p99);
    assert!(g.tpot_s.mean > v.tpot_s.mean);
}

/// Every batch formation on the random scenarios: no panic, every audit holds, and the lazy step end (vLLM's
/// always; SGLang's when its next step can only decode) changes nothing. A decode pool forms vLLM batches
/// whatever the setting.
#[test]
fn every_batch_formation_passes_the_audits_on_random_scenarios() {
    let (mut ran, mut differ_sglang, mut differ_mixed) = (0, 0, 0);
    let (mut sglang_coasting, mut sglang_coasted, mut sglang_steps) = (0, 0, 0);
    // The setup names the formation: compare what the requests saw.
    let seen = |r: &inferscale::Report| format!("{:?}", r.summary);
    for i in 0..200 {
        let base = super::property::random_spec(i);
        let Ok(sc) = inferscale::scenario::validate(&base) else { continue };
        let vllm = seen(&simulate(&sc));
        for formation in [BatchFormationSpec::Sglang, BatchFormationSpec::SglangMixed] {
            let mut spec = base.clone();
            spec.engine.batch_formation = formation;
            // vLLM's reservation limit and victim choice are refused beside SGLang's formations.
            spec.engine.kv_oversubscription = 1.0;
            spec.engine.preemption.victim = VictimSpec::default();
            let sc = super::valid(&spec);
            if let Some(d) = sc.pools.iter().find(|p| p.role == Role::Decode) {
                assert_eq!(d.engine.formation, BatchFormationSpec::Vllm);
            }
            let rec = inferscale::engine::run(&sc);
            (sglang_coasting, sglang_coasted, sglang_steps) = (
                sglang_coasting + u32::from(rec.coasted_steps > 0),
                sglang_coasted + rec.coasted_steps,
                sglang_steps + rec.steps,
            );
            let r = inferscale::Report::build(&sc, rec);
            let a = &r.audits;
            assert!(
                a.conservation.ok && a.kv.violations == 0 && a.little.relative_error <= 0.01,
                "scenario {i} {formation:?}: {a:?}"
            );
            let eager = inferscale::Report::build(&sc, inferscale::engine::run_eager(&sc));
            let json = inferscale::export::json(&r);
            assert!(json == inferscale::export::json(&eager), "scenario {i} {formation:?}: lazy and eager differ");
            let differs = seen(&r) != vllm;
            match formation {
                BatchFormationSpec::Sglang => differ_sglang += differs as u32,
                _ => differ_mixed += differs as u32,
            }
        }
        ran += 1;
    }
    println!(
        "batch formations: {ran} scenarios; sglang differs from vllm in {differ_sglang}, sglang_mixed in {differ_mixed}; SGLang's lazy step end in {sglang_coasting} runs, {sglang_coasted} of {sglang_steps} step ends coasted"
    );
    // The comparison above has teeth: SGLang's runs take the lazy path often.
    assert!(sglang_coasting > ran && sglang_coasted * 10 > sglang_steps, "{sglang_coasting} runs coasting");
    // Many random scenarios are light (a prompt rarely meets a decode): there the formations agree. Mixed
    // chunking differs from vLLM only when the budget runs out before a decoder's turn (vLLM's skips the
    // step; SGLang's never does) or a chunked prompt comes before decoders in the batch order.
    assert!(
        ran > 120 && differ_sglang > ran / 4 && differ_mixed > 0,
        "{ran} ran, {differ_sglang} and {differ_mixed} differ"
    );
}

/// `engine.max_model_len` refuses at arrival every request whose prompt + output exceeds it, as vLLM answers
/// such a request with an error, and touches no other; the summary and the Markdown report count them apart;
/// it may not exceed the model's context.
/// Lengths that can pass `max_model_len` are said before the run, at the field that draws them: a class's
/// prompt whose max with the largest output passes it, a trace by how many of its rows do; `inferscale check`
/// prints them as notes.
#[test]
fn lengths_past_max_model_len_are_said_before_the_run() {
    let mut s = super::small();
    assert_eq!(super::valid(&s).past_max_model_len(), vec![], "the shipped lengths fit the context");
    s.workload.classes[1].prompt_tokens = inferscale::scenario::LengthSpec::Fixed { tokens: 16_000 };
    let past = super::valid(&s).past_max_model_len();
    assert_eq!(past.len(), 1);
    assert_eq!(past[0].path, "workload.classes[1].prompt_tokens");
    assert_eq!(
        past[0].what,
        "max 16000 + output up to 1024 passes engine.max_model_len 8192 (the model's context): requests drawn past \
         it are refused at arrival"
    );
    s.engine.max_model_len = Some(4096);
    let both = super::valid(&s).past_max_model_len();
    assert_eq!(both.len(), 2, "chat's 4096 + 2048 passes 4096 too: {both:?}");
    assert!(both[0].what.ends_with("passes engine.max_model_len 4096: requests drawn past it are refused at arrival"));
    // A trace: how many of the rows that run pass it — the one the run refuses.
    let trace = super::valid(&super::shipped("trace-replay.json"));
    let r = simulate(&trace);
    let past = trace.past_max_model_len();
    assert_eq!(past[0].path, "workload.arrival.data");
    let n = r.summary.rejected_too_long;
    assert!(n > 0);
    assert!(
        past[0].what.starts_with(&format!(
            "{n} of its 600 requests is longer (prompt + output) than engine.max_model_len 8192"
        )),
        "{past:?}"
    );
    // The CLI's check says them.
    let dir = std::env::temp_dir().join(format!("inferscale-past-limit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("long.json");
    std::fs::write(&path, serde_json::to_string(&s).unwrap()).unwrap();
    let out = super::cli::bin().args(["check", path.to_str().unwrap()]).output().unwrap();
    std::fs::remove_dir_all(&dir).ok();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("note: workload.classes[1].prompt_tokens: max 16000 + output up to 1024 passes engine.max_model_len 4096"), "{text}");
}

#[test]
fn max_model_len_refuses_requests_past_it_and_no_others() {
    // The requests refused as too long for `limit`, each checked against its lengths.
    let refused_past = |spec: &inferscale::Spec, limit: u64| -> u64 {
        let sc = super::valid(spec);
        let r = simulate(&sc);
        let csv = inferscale::export::requests_csv(&r, &sc);
        let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        let col = |name: &str| head.iter().position(|h| *h == name).unwrap();
        let (p, o, outcome) = (col("prompt_tokens"), col("output_tokens"), col("outcome"));
        let mut too_long = 0;
        for line in csv.lines().skip(1) {
            let f: Vec<&str> = line.split(',').collect();
            let long = f[p].parse::<u64>().unwrap() + f[o].parse::<u64>().unwrap() > limit;
            assert_eq!(f[outcome] == "rejected_too_long", long, "{line}");
            too_long += long as u64;
        }
        assert_eq!((r.summary.rejected, r.summary.rejected_too_long), (too_long, too_long));
        assert!(r.audits.ok);
        let md = inferscale::export::markdown(&r);
        let row = format!("| rejected | {too_long} ({too_long} longer than engine.max_model_len) |");
        assert_eq!(md.contains(&row), too_long > 0, "{row}");
        too_long
    };
    let base = super::small();
    let mut capped = base.clone();
    capped.engine.max_model_len = Some(2048);
    let too_long = refused_past(&capped, 2048);
    assert!(too_long > 20, "{too_long} of 400 refused");
    // Unset, the limit is the model's context, as vLLM's default (Llama-3-8B: 8192): the shipped scenario's
    // lengths fit it, a summarisation prompt of 12,000 tokens does not, and a context raised past it serves it.
    assert_eq!((base.engine.max_model_len, refused_past(&base, 8192)), (None, 0));
    let mut long = base.clone();
    long.workload.classes[1].prompt_tokens = inferscale::scenario::LengthSpec::Fixed { tokens: 12_000 };
    let summaries = refused_past(&long, 8192);
    assert!(summaries > 60 && summaries < 180, "{summaries} of 400 refused (30 % are summaries)");
    long.model.context_tokens = Some(32_768);
    assert_eq!(refused_past(&long, 32_768), 0);
    let llama = inferscale::cost::presets::model("llama-3-8b").unwrap();
    long.model = inferscale::scenario::ModelSpec { context_tokens: None, ..super::custom_model(llama) };
    assert_eq!(refused_past(&long, u64::MAX), 0, "a custom model without a context has no limit");
    // The same requests (common random numbers): every one under the limit has an outcome other than refused.
    assert_eq!(simulate(&super::valid(&capped)).summary.requests, simulate(&super::valid(&base)).summary.requests);
    // Past the model's context (Llama-3-8B: 8192) it is refused at its field, naming the context.
    capped.engine.max_model_len = Some(9000);
    let e = inferscale::scenario::validate(&capped).unwrap_err();
    assert_eq!(e.errors[0].path, "engine.max_model_len");
    assert!(e.errors[0].message.contains("from 1 to 8192 (model.context_tokens)"), "{e}");
    capped.engine.max_model_len = Some(0);
    assert!(inferscale::scenario::validate(&capped).is_err());
    // Numbers serde refuses (below 0, past u32, a fraction) are told the same range, at the field.
    let mut text = serde_json::to_value(&capped).unwrap();
    for bad in [serde_json::json!(-1), serde_json::json!(1e308), serde_json::json!(2.5)] {
        text["engine"]["max_model_len"] = bad.clone();
        let e = inferscale::scenario::load(&text.to_string()).unwrap_err();
        assert_eq!(e.errors[0].path, "engine.max_model_len", "{bad}");
        let said = &e.errors[0].message;
        assert!(said.starts_with("must be a whole number from 1 to 8192 (model.context_tokens)"), "{bad}: {said}");
    }
}

/// A request longer than `max_model_len` is refused at any load: it is neither offered load nor shed. A
/// light load whose long requests (6 % here) are refused is stable and under capacity, not "shedding": before,
/// a `max_model_len` under a workload's longest requests made it unstable at any rate (sustained capacity 0).
#[test]
fn requests_too_long_for_the_model_are_not_load_shed() {
    let mut spec = super::shipped("default.json");
    spec.engine.max_model_len = Some(2048);
    let r = simulate(&super::valid(&spec));
    let share = r.summary.rejected_too_long as f64 / r.summary.requests as f64;
    assert!(share > 0.03 && r.summary.rejected == r.summary.rejected_too_long, "{share}");
    assert!(r.steady.stable, "{:?}", r.steady);
    assert_eq!(r.diagnosis.regime, "under_capacity");
    assert_eq!(r.summary.turned_away_share(), 0.0);
}

/// `engine.request_overhead_ms` (HTTP, tokenising) delays a request's arrival at the scheduler: its TTFT and
/// E2E grow by exactly the overhead, its queue delay does not, and the audits hold (it is in the system all
/// along) — with per-replica queues and with the central queue.
#[test]
fn the_request_overhead_adds_to_ttft_and_e2e_but_not_to_queueing() {
    for router in [RouterSpec::RoundRobin, RouterSpec::CentralQueue] {
        let mut s = linear(1000, 5, 1, 1.0);
        s.engine.prefill_chunk_tokens = Some(8192);
        s.cluster.router = router.clone();
        s.engine.request_overhead_ms = 3.0;
        let sc = super::valid(&s);
        let r = simulate(&sc);
        assert!((r.summary.ttft_s.mean - 0.023).abs() < 1e-9, "{router:?}: {}", r.summary.ttft_s.mean);
        assert!((r.summary.e2e_s.mean - 0.063).abs() < 1e-9);
        assert!(r.summary.queue_delay_s.max.abs() < 1e-12, "no queueing: {}", r.summary.queue_delay_s.max);
        assert!(r.audits.ok, "{:?}", r.audits);
        let csv = inferscale::export::requests_csv(&r, &sc);
        let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
        assert_eq!(row[6], "0", "CSV queue delay: {csv}");
    }
    // Under load every request pays it once; the report's mean TTFT moves by it and Little's law still holds.
    let mut busy = super::small();
    let before = simulate(&super::valid(&busy)).summary;
    busy.engine.request_overhead_ms = 2.0;
    let after = simulate(&super::valid(&busy));
    assert!(after.audits.little.relative_error <= 0.01 && after.audits.ok);
    assert!(
        after.summary.ttft_s.mean > before.ttft_s.mean + 0.0015,
        "{} vs {}",
        after.summary.ttft_s.mean,
        before.ttft_s.mean
    );
    for bad in [-1.0, f64::NAN, 2e6] {
        busy.engine.request_overhead_ms = bad;
        let e = inferscale::scenario::validate(&busy).unwrap_err();
        assert_eq!(e.errors[0].path, "engine.request_overhead_ms", "{bad}");
    }
}

/// A Mooncake trace's rows as JSONL: (arrival ms, prompt tokens, output tokens, hash_ids).
fn mooncake(rows: &[(f64, u32, u32, &[u64])]) -> String {
    rows.iter()
        .map(|(t, p, o, h)| {
            format!("{{\"timestamp\": {t}, \"input_length\": {p}, \"output_length\": {o}, \"hash_ids\": {h:?}}}\n")
        })
        .collect()
}

/// A Vidur-format trace of `text` (header included), replayed as it is.
fn vidur(text: impl Into<std::sync::Arc<str>>) -> ArrivalSpec {
    ArrivalSpec::Trace {
        path: None,
        data: Some(text.into()),
        format: TraceFormat::Vidur,
        time_scale: 1.0,
        reuse_hash_ids: true,
        hash_block_tokens: 512,
    }
}

fn trace_spec(text: String, reuse: bool) -> Spec {
    let mut s = linear(16, 2, 1, 1.0);
    s.workload.arrival = ArrivalSpec::Trace {
        path: None,
        data: Some(text.into()),
        format: TraceFormat::Mooncake,
        time_scale: 1.0,
        reuse_hash_ids: reuse,
        hash_block_tokens: 512,
    };
    s.workload.requests = None;
    s.engine.prefill_chunk_tokens = Some(8192);
    s
}

/// Mooncake's `hash_ids` drive the prefix cache: B shares A's leading run of three 512-token blocks (its fourth
/// differs), so it prefills 2148 − 1536 = 612 tokens: 10 + 6.12 ms instead of 10 + 21.48 ms on the linear cost.
/// C repeats A's four blocks exactly and reuses three — a whole hashed block is left to compute so the step
/// has a token to emit. Without reuse every prompt is prefilled whole and the report has no prefix section.
#[test]
fn a_traces_hash_ids_share_the_longest_cached_leading_run_of_blocks() {
    let text = mooncake(&[
        (0.0, 2048, 2, &[1, 2, 3, 4]),
        (1000.0, 2148, 2, &[1, 2, 3, 9, 10]),
        (2000.0, 2048, 2, &[1, 2, 3, 4]),
    ]);
    let r = simulate(&super::valid(&trace_spec(text.clone(), true)));
    let ttft: Vec<f64> = {
        let sc = super::valid(&trace_spec(text.clone(), true));
        let csv = inferscale::export::requests_csv(&r, &sc);
        csv.lines().skip(1).map(|l| l.split(',').nth(7).unwrap().parse().unwrap()).collect()
    };
    assert!((ttft[0] - 0.03048).abs() < 1e-9, "A prefills 2048 tokens: {ttft:?}");
    assert!((ttft[1] - 0.01612).abs() < 1e-9, "B prefills 612 tokens: {ttft:?}");
    assert!((ttft[2] - 0.01512).abs() < 1e-9, "C prefills its last 512-token block: {ttft:?}");
    let p = r.prefix.as_ref().expect("a prefix section");
    assert_eq!(
        (p.source, p.shared_tokens, p.lookups, p.hits, p.prefill_tokens_saved),
        (Some("trace hash_ids"), 512, 3, 2, 3072)
    );
    assert!((p.prompt_token_hit_rate.unwrap() - 3072.0 / 6244.0).abs() < 1e-12);
    assert!(r.audits.ok);
    let plain = simulate(&super::valid(&trace_spec(text, false)));
    assert!(plain.prefix.is_none());
    assert!((plain.summary.ttft_s.max - 0.03148).abs() < 1e-9, "B whole: {}", plain.summary.ttft_s.max);
}

/// A trace with heavy sharing under KV pressure: entries are evicted and requests preempted, and every audit
/// holds (KV `free + used == total` with the cached blocks), the lazy step end equals the general path, and
/// reuse beats no reuse.
#[test]
fn hash_id_reuse_under_kv_pressure_keeps_every_audit() {
    let mut rows = Vec::new();
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let chains: Vec<Vec<u64>> = (0..600)
        .map(|i| {
            // 20 conversations; each request repeats its conversation's first blocks, then new ones.
            let conv = next() % 20;
            let shared = 1 + next() % 6;
            (0..shared).map(|b| conv * 100 + b).chain((0..1 + next() % 4).map(|b| 1_000_000 + i * 10 + b)).collect()
        })
        .collect();
    for (i, c) in chains.iter().enumerate() {
        rows.push((
            i as f64 * 10.0,
            c.len() as u32 * 512 - (next() % 300) as u32,
            100 + (next() % 400) as u32,
            c.as_slice(),
        ));
    }
    let mut s = trace_spec(mooncake(&rows), true);
    s.cost = CostSpec::default();
    s.engine.kv_capacity_tokens = Some(24_000);
    s.engine.kv_oversubscription = 3.0;
    s.engine.max_num_seqs = 64;
    s.engine.prefill_chunk_tokens = Some(2048);
    let sc = super::valid(&s);
    let r = simulate(&sc);
    let p = r.prefix.as_ref().unwrap();
    assert!(r.audits.ok, "{:?}", r.audits);
    assert!(
        p.hits > 100 && p.evictions > 0 && r.summary.preemptions > 0,
        "hits {}, evictions {}, preemptions {}",
        p.hits,
        p.evictions,
        r.summary.preemptions
    );
    let eager = inferscale::Report::build(&sc, inferscale::engine::run_eager(&sc));
    assert_eq!(inferscale::export::json(&r), inferscale::export::json(&eager));
    let none = simulate(&super::valid(&{
        let mut n = s.clone();
        if let ArrivalSpec::Trace { reuse_hash_ids, .. } = &mut n.workload.arrival {
            *reuse_hash_ids = false;
        }
        n
    }));
    assert!(
        r.summary.ttft_s.mean < none.summary.ttft_s.mean,
        "{} vs {}",
        r.summary.ttft_s.mean,
        none.summary.ttft_s.mean
    );
}

/// What hash reuse cannot take is refused at its field; bad `hash_ids` name their line.
#[test]
fn hash_id_reuse_refuses_what_it_cannot_model() {
    let text = mooncake(&[(0.0, 1024, 2, &[1, 2]), (5.0, 1024, 2, &[1, 3])]);
    let field = |s: &Spec| {
        inferscale::scenario::validate(s).unwrap_err().errors.into_iter().map(|f| f.path).collect::<Vec<_>>()
    };
    let mut s = trace_spec(text.clone(), true);
    s.engine.block_size_tokens = 24;
    assert!(field(&s).contains(&"engine.block_size_tokens".to_string()));
    let mut s = trace_spec(text.clone(), true);
    s.prefix = Some(PrefixSpec { prefix_tokens: 64, reuse_fraction: 0.5, groups: 2, zipf_s: 1.0, caching: true });
    assert!(field(&s).contains(&"prefix".to_string()));
    let mut s = trace_spec(text.clone(), true);
    s.cluster.disaggregation = super::shipped("pd-llama3-8b-h100.json").cluster.disaggregation;
    assert!(field(&s).contains(&"cluster.disaggregation".to_string()));
    for (bad, why) in
        [("[1, -2]", "whole numbers"), ("\"abc\"", "whole numbers"), ("[9007199254740992]", "whole numbers")]
    {
        let t = format!("{{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 2, \"hash_ids\": {bad}}}\n");
        let e = inferscale::scenario::validate(&trace_spec(t, true)).unwrap_err();
        assert!(e.errors[0].message.contains("line 1: `hash_ids`") && e.errors[0].message.contains(why), "{bad}: {e}");
    }
    let many = format!(
        "{{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 2, \"hash_ids\": {:?}}}\n",
        vec![1u64; 100_001]
    );
    assert!(
        inferscale::scenario::validate(&trace_spec(many, true)).unwrap_err().to_string().contains("at most 100,000")
    );
}

/// One session of three turns on the linear cost: a 1000-token first prompt, 200 new tokens a turn, 5 output
/// tokens, a tool of exactly 1 s between turns.
pub(super) fn one_session(turns: u32) -> Spec {
    let mut s = linear(16, 2, 1, 1.0);
    s.engine.prefill_chunk_tokens = Some(8192);
    s.workload.sessions = Some(SessionsSpec {
        turns: Some(LengthSpec::Fixed { tokens: turns }),
        first_tokens: Some(LengthSpec::Fixed { tokens: 1000 }),
        new_tokens: Some(LengthSpec::Fixed { tokens: 200 }),
        output_tokens: Some(LengthSpec::Fixed { tokens: 5 }),
        tools: vec![ToolSpec { name: "run_tests".into(), weight: 1.0, mean_s: 1.0, cv: 0.0 }],
        retention: RetentionSpec::Stateless,
        slo: Default::default(),
        trace: None,
        classes: Vec::new(),
        shift: None,
        workflow: None,
    });
    s
}

/// A stateless session re-sends its whole history each turn: turn 2's prompt is 1000 + 5 + 200 = 1205 tokens
/// (TTFT 10 + 12.05 ms), turn 3's 1410 (24.10 ms); each turn arrives 1 s after the previous one ends, so the
/// session spans 60 + 1000 + 62.05 + 1000 + 64.10 ms. Every count and audit adds up.
#[test]
fn a_stateless_session_resends_its_history_every_turn() {
    let sc = super::valid(&one_session(3));
    let r = simulate(&sc);
    let s = r.sessions.as_ref().expect("a sessions section");
    assert_eq!(
        (s.sessions, s.completed, s.turns, s.turns_completed, s.ended_by_context, s.unfinished),
        (1, 1, 3, 3, 0, 0)
    );
    assert!(s.conservation_ok && r.audits.ok);
    let ttft: Vec<f64> = s.ttft_by_turn.iter().map(|t| t.ttft_p50_s).collect();
    assert_eq!(ttft.len(), 3);
    for (got, want) in ttft.iter().zip([0.020, 0.02205, 0.02410]) {
        assert!((got - want).abs() < 1e-9, "{ttft:?}");
    }
    assert!((s.session_e2e_s.max - 2.18615).abs() < 1e-9, "{}", s.session_e2e_s.max);
    assert_eq!((s.history_tokens, s.recomputed_history_tokens), (1005 + 1210, 1005 + 1210));
    // Without sessions the report has no sessions section (and every other report is unchanged).
    assert!(simulate(&super::valid(&super::small())).sessions.is_none());
}

/// Stateless sessions are their turns replayed as independent requests: the same arrival times and lengths,
/// as a trace, give the same per-request latencies.
#[test]
fn stateless_sessions_equal_their_turns_replayed_as_a_trace() {
    let mut s = one_session(4);
    s.workload.arrival = ArrivalSpec::Poisson { rate_rps: 3.0 };
    s.workload.requests = Some(40);
    if let Some(x) = &mut s.workload.sessions {
        x.turns = Some(LengthSpec::Uniform { min: 1, max: 6 });
        x.output_tokens = Some(LengthSpec::Geometric { mean: 30.0, max: 200 });
        x.tools = vec![
            ToolSpec { name: "read".into(), weight: 3.0, mean_s: 0.2, cv: 1.5 },
            ToolSpec { name: "build".into(), weight: 1.0, mean_s: 2.0, cv: 3.0 },
        ];
    }
    let sc = super::valid(&s);
    let r = simulate(&sc);
    let csv = inferscale::export::requests_csv(&r, &sc);
    let rows: Vec<Vec<String>> = csv.lines().skip(1).map(|l| l.split(',').map(str::to_string).collect()).collect();
    let mut trace = String::from("arrived_at,num_prefill_tokens,num_decode_tokens\n");
    for f in &rows {
        trace += &format!("{},{},{}\n", f[5], f[10], f[11]);
    }
    let mut t = linear(16, 2, 1, 1.0);
    t.engine.prefill_chunk_tokens = Some(8192);
    t.workload.arrival = vidur(trace);
    t.workload.requests = None;
    let tsc = super::valid(&t);
    let tr = simulate(&tsc);
    let tcsv = inferscale::export::requests_csv(&tr, &tsc);
    let latencies = |csv: &str| -> Vec<(String, String)> {
        csv.lines()
            .skip(1)
            .map(|l| {
                let f: Vec<&str> = l.split(',').collect();
                (f[7].to_string(), f[8].to_string())
            })
            .collect()
    };
    let (a, b) = (latencies(&csv), latencies(&tcsv));
    assert!(a.len() > 80, "{} turns", a.len());
    let mut a_sorted = a.clone();
    let mut b_sorted = b.clone();
    a_sorted.sort();
    b_sorted.sort();
    assert_eq!(a_sorted, b_sorted, "the same TTFT and E2E, turn for turn");
    assert_eq!(r.summary.ttft_s, tr.summary.ttft_s);
}

/// Common random numbers: every policy sees the same programs (turns, lengths, tools, gaps), drawn when each
/// session starts; the context limit ends a session early, counted; what sessions cannot take is refused.
#[test]
fn sessions_draw_their_programs_up_front_and_end_at_the_context() {
    let mut s = one_session(5);
    s.workload.arrival = ArrivalSpec::Poisson { rate_rps: 8.0 };
    s.workload.requests = Some(60);
    if let Some(x) = &mut s.workload.sessions {
        x.turns = Some(LengthSpec::Geometric { mean: 4.0, max: 30 });
        x.tools = vec![ToolSpec { name: "read".into(), weight: 1.0, mean_s: 0.3, cv: 2.0 }];
    }
    let programs = |spec: &Spec| inferscale::engine::run(&super::valid(spec)).programs;
    let mut sjf = s.clone();
    sjf.scheduler = SchedulerSpec::Sjf;
    sjf.engine.max_num_seqs = 2;
    assert_eq!(programs(&s), programs(&sjf), "the same program trace under another policy");
    // A context of 1400 tokens: turn 3 (1410 + 5) does not fit, so each session ends after turn 2.
    let mut short = one_session(3);
    short.model = ModelSpec { preset: Some("llama-3-8b".into()), context_tokens: Some(1400), ..ModelSpec::default() };
    let r = simulate(&super::valid(&short));
    let x = r.sessions.unwrap();
    assert_eq!((x.turns, x.ended_by_context, x.completed), (2, 1, 0));
    assert!(x.conservation_ok);
    let field = |s: &Spec| {
        inferscale::scenario::validate(s).unwrap_err().errors.into_iter().map(|f| f.path).collect::<Vec<_>>()
    };
    let mut bad = one_session(3);
    bad.workload.sessions.as_mut().unwrap().tools[0].mean_s = -1.0;
    assert!(field(&bad).contains(&"workload.sessions.tools[0].mean_s".to_string()));
    let mut bad = one_session(3);
    bad.workload.sessions.as_mut().unwrap().turns = Some(LengthSpec::Fixed { tokens: 0 });
    assert!(field(&bad).iter().any(|p| p.starts_with("workload.sessions.turns")), "{:?}", field(&bad));
    let mut bad = one_session(3);
    bad.cluster.disaggregation = super::shipped("pd-llama3-8b-h100.json").cluster.disaggregation;
    assert!(field(&bad).contains(&"cluster.disaggregation".to_string()));
    let mut bad = one_session(3);
    bad.workload.arrival = ArrivalSpec::ClosedLoop { clients: 2, think_s: 0.0 };
    assert!(field(&bad).contains(&"workload.sessions".to_string()));
    assert!(inferscale::scenario::parse(r#"{"workload": {"arrival": {"kind": "poisson", "rate_rps": 1}, "requests": 1, "sessions": {"turns": {"kind": "fixed", "tokens": 2}, "first_tokens": {"kind": "fixed", "tokens": 10}, "new_tokens": {"kind": "fixed", "tokens": 10}, "output_tokens": {"kind": "fixed", "tokens": 10}, "tolls": []}}}"#).unwrap_err().to_string().contains("did you mean `tools`"));
    // The run budget counts turns, not sessions: 10^7 sessions of 10,000 turns are refused before they start.
    let mut huge = one_session(10_000);
    huge.workload.requests = Some(10_000_000);
    huge.workload.arrival = ArrivalSpec::Poisson { rate_rps: 1000.0 };
    let sc = super::valid(&huge);
    assert!(sc.estimate().requests >= 1e11, "{:?}", sc.estimate());
    let e = sc.check_budget(&inferscale::scenario::Budget::NATIVE, 1).unwrap_err();
    assert!(e.errors.iter().all(|f| f.path == "workload.requests"), "{e}");
    assert!(super::valid(&one_session(3)).check_budget(&inferscale::scenario::Budget::NATIVE, 1).is_ok());
}

/// `retain` keeps a session's history on its worker between turns: turn 1 leaves 1004 tokens of KV (its last
/// output token is never written), 62 whole blocks (992 tokens), so turn 2 prefills 1205 − 992 = 213 tokens
/// (TTFT 12.13 ms instead of 22.05) and turn 3, finding 75 blocks (1200 tokens) of turn 2's 1209, prefills 210
/// (12.10 ms). The entry is freed when the session ends; every audit holds.
#[test]
fn retained_sessions_prefill_only_what_is_new() {
    let mut s = one_session(3);
    s.workload.sessions.as_mut().unwrap().retention = RetentionSpec::Retain;
    let r = simulate(&super::valid(&s));
    let x = r.sessions.as_ref().unwrap();
    let ttft: Vec<f64> = x.ttft_by_turn.iter().map(|t| t.ttft_p50_s).collect();
    for (got, want) in ttft.iter().zip([0.020, 0.01213, 0.01210]) {
        assert!((got - want).abs() < 1e-9, "{ttft:?}");
    }
    assert_eq!((x.history_tokens, x.recomputed_history_tokens), (2215, 2215 - 992 - 1200));
    assert!(r.audits.ok && x.conservation_ok);
    // Stateless is the same program with every history recomputed.
    let stateless = simulate(&super::valid(&one_session(3)));
    assert!(stateless.sessions.unwrap().turn_ttft_s.mean > x.turn_ttft_s.mean);
}

/// Retention under KV pressure: idle session entries are evicted (least recently used first) to make room for
/// running requests, a turn whose history was evicted recomputes it, and every audit holds — with a lazy step
/// end equal to the general path — on one replica and on several behind any router.
#[test]
fn retained_sessions_yield_to_pressure_and_keep_every_audit() {
    for (replicas, router) in [(1, RouterSpec::RoundRobin), (3, RouterSpec::LeastKv), (2, RouterSpec::CentralQueue)] {
        let mut s = one_session(8);
        s.cost = CostSpec::default();
        s.workload.arrival = ArrivalSpec::Poisson { rate_rps: 6.0 };
        s.workload.requests = Some(120);
        s.engine.kv_capacity_tokens = Some(30_000);
        s.cluster.replicas = replicas;
        s.cluster.router = router.clone();
        let x = s.workload.sessions.as_mut().unwrap();
        x.retention = RetentionSpec::Retain;
        x.turns = Some(LengthSpec::Uniform { min: 2, max: 10 });
        x.output_tokens = Some(LengthSpec::Geometric { mean: 60.0, max: 400 });
        x.tools = vec![ToolSpec { name: "test".into(), weight: 1.0, mean_s: 2.0, cv: 2.0 }];
        let sc = super::valid(&s);
        let r = simulate(&sc);
        let ss = r.sessions.as_ref().unwrap();
        assert!(r.audits.ok, "{router:?}: {:?}", r.audits);
        assert!(ss.recomputed_history_tokens < ss.history_tokens, "{router:?}: some history was reused");
        let eager = inferscale::Report::build(&sc, inferscale::engine::run_eager(&sc));
        assert_eq!(inferscale::export::json(&r), inferscale::export::json(&eager), "{router:?}");
        if replicas == 1 {
            assert!(ss.recomputed_history_tokens > 0, "pressure evicted some history: {ss:?}");
        }
    }
}

/// A `max` that cuts the mean a class asks for is said in the report's setup, and the closed form is what the
/// requests measure (lognormal mean 2000, CV 1, max 4096: 18xx tokens, not 2000).
#[test]
fn a_max_that_cuts_the_asked_mean_is_said_in_the_setup_with_the_mean_the_requests_have() {
    let mut s = linear(2000, 10, 4000, 1.0);
    s.workload.classes[0].prompt_tokens = LengthSpec::Lognormal { mean: 2000.0, cv: 1.0, max: 4096 };
    let r = simulate(&super::valid(&s));
    let said = &r.setup.truncated_lengths;
    assert_eq!(said.len(), 1, "{said:?}");
    let sampled: f64 = said[0].split(" to ").nth(1).and_then(|t| t.split(' ').next()).unwrap().parse().unwrap();
    assert!(
        said[0].starts_with("workload.classes[0].prompt_tokens: max 4096 cuts the mean of 2000 to "),
        "{}",
        said[0]
    );
    let measured = r.requests.iter().map(|q| q.prompt_tokens as f64).sum::<f64>() / r.requests.len() as f64;
    assert!((measured - sampled).abs() / sampled < 0.03, "report says {sampled}, requests average {measured}");
    assert!(sampled < 1900.0);
}

/// The serving front end (`engine.frontend`): a FIFO server per replica ahead of the scheduler. A burst of
/// four 1,000-token prompts (one output token each), each taking 2 ms + 1 µs × 1,000 = 3 ms there, reaches the
/// scheduler at 3, 6, 9 and 12 ms. On the linear cost (a step: 10 ms + 0.01 ms a prompt token) request 1
/// prefills alone 3 → 23 ms; requests 2 to 4, queued meanwhile (at 6, 9, 12 ms), together 23 → 63 ms.
/// Without it the first arrival starts a step alone (0 → 20 ms) and the other three share the next (20 → 60 ms):
/// the front end moves the first token by 3 ms a request ahead. Audits hold; a bad value is named at its field.
#[test]
fn the_front_end_serves_a_burst_one_request_at_a_time() {
    let mut s = linear(1000, 1, 4, 1.0);
    s.workload.arrival = ArrivalSpec::Burst {};
    s.engine.prefill_chunk_tokens = Some(8192);
    s.engine.frontend = Some(FrontendSpec { per_request_ms: 2.0, per_prompt_token_us: 1.0 });
    let ttfts = |s: &Spec| {
        let sc = super::valid(s);
        let r = simulate(&sc);
        assert!(r.audits.ok, "{:?}", r.audits);
        let csv = inferscale::export::requests_csv(&r, &sc);
        let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        let at = header.iter().position(|h| h.starts_with("ttft")).unwrap();
        let ms = |l: &str| (l.split(',').nth(at).unwrap().parse::<f64>().unwrap() * 1e6).round() / 1e3;
        csv.lines().skip(1).map(ms).collect::<Vec<f64>>()
    };
    assert_eq!(ttfts(&s), [23.0, 63.0, 63.0, 63.0]);
    let mut plain = s.clone();
    plain.engine.frontend = None;
    assert_eq!(ttfts(&plain), [20.0, 60.0, 60.0, 60.0]);
    for bad in [-1.0, f64::NAN, 2e4] {
        s.engine.frontend = Some(FrontendSpec { per_request_ms: bad, per_prompt_token_us: 0.0 });
        let e = inferscale::scenario::validate(&s).unwrap_err();
        assert_eq!(e.errors[0].path, "engine.frontend.per_request_ms", "{bad}");
    }
}

/// A step's host work (`engine.step_cpu`) on the roofline, by hand: a burst of four 100-token prompts of three
/// output tokens each on Llama-3.2-1B (a GPU step of a few ms) is four steps — the first arrival prefills alone
/// (1 sequence), the other three prefill beside its decode (4), then two decodes (4, then 3 once the first is
/// done). Overlapped with 100 ms + 1 ms a sequence of host work, every step is the host's: 101, 104, 104 and
/// 103 ms, so the TTFTs are 101 and 3 × 205 ms (mean 179 ms) and the E2Es 309 and 3 × 412 ms (mean 386.25 ms).
/// Overlapped with 1 µs, the host hides behind the GPU and the run is the run without it; added (not
/// overlapped) at 1 ms + 0.5 ms a sequence, the steps are 1.5, 3, 3 and 2.5 ms longer: the last TTFT 4.5 ms and
/// the last E2E 10 ms later. Audits hold throughout; bad values and the linear cost are named.
#[test]
fn a_steps_host_work_adds_or_hides_behind_the_gpu_step_by_hand() {
    let mut s = linear(100, 3, 4, 1.0);
    s.workload.arrival = ArrivalSpec::Burst {};
    s.cost = CostSpec::Roofline;
    s.model = serde_json::from_str(r#"{"preset": "llama-3.2-1b"}"#).unwrap();
    s.hardware = serde_json::from_str(r#"{"device": "h100-sxm", "tp": 1}"#).unwrap();
    let run = |cpu: Option<inferscale::spec::StepCpuSpec>| {
        let mut s = s.clone();
        s.engine.step_cpu = cpu;
        let r = simulate(&super::valid(&s));
        assert!(r.audits.ok, "{:?}", r.audits);
        assert_eq!(r.engine.steps, 4);
        (r.summary.ttft_s.max, r.summary.e2e_s.max, r.summary.ttft_s.mean, r.summary.e2e_s.mean)
    };
    let cpu = |per_step_us: f64, per_seq_us: f64, overlapped: bool| {
        Some(inferscale::spec::StepCpuSpec { per_step_us, per_seq_us, overlapped })
    };
    let (ttft0, e2e0, ..) = run(None);
    assert!(e2e0 < 0.03, "the GPU steps are a few ms: {e2e0}");
    let (ttft, e2e, ttft_mean, e2e_mean) = run(cpu(100_000.0, 1_000.0, true));
    assert_eq!((ttft, e2e), (0.205, 0.412));
    assert!((ttft_mean - 0.179).abs() < 1e-12 && (e2e_mean - 0.38625).abs() < 1e-12, "{ttft_mean} {e2e_mean}");
    assert_eq!(run(cpu(1.0, 0.0, true)), run(None), "hidden behind the GPU step");
    let (ttft, e2e, ..) = run(cpu(1_000.0, 500.0, false));
    assert!((ttft - ttft0 - 0.0045).abs() < 3e-9 && (e2e - e2e0 - 0.010).abs() < 5e-9, "{ttft} {e2e}");
    for (bad, field) in [(-1.0, "per_step_us"), (f64::NAN, "per_step_us"), (2e6, "per_step_us")] {
        s.engine.step_cpu = cpu(bad, 0.0, false);
        let e = inferscale::scenario::validate(&s).unwrap_err();
        assert_eq!(e.errors[0].path, format!("engine.step_cpu.{field}"), "{bad}");
    }
    s.engine.step_cpu = cpu(0.0, 1e300, false);
    assert_eq!(inferscale::scenario::validate(&s).unwrap_err().errors[0].path, "engine.step_cpu.per_seq_us");
    s.engine.step_cpu = cpu(10.0, 1.0, false);
    s.cost = CostSpec::Linear { base_ms: 10.0, per_seq_ms: 0.0, per_prefill_token_ms: 0.01, per_kv_token_ms: 0.0 };
    let e = inferscale::scenario::validate(&s).unwrap_err();
    assert_eq!(e.errors[0].path, "engine.step_cpu");
    assert!(e.errors[0].message.contains("roofline"), "{}", e.errors[0].message);
}

/// SGLang's reservation and retraction on the linear cost (10 ms a step + 0.01 ms a prompt token), 1,100 KV
/// tokens in 1-token blocks, outputs predicted exactly. A (100 + 500 tokens) arrives at 0, B (100 + 500) at
/// 5 ms, C (300 + 300) at 1 s.
/// - 0 → 11 ms: A prefills alone. At 11 ms B fits because A reserves only 0.7 × its 499 tokens to come:
///   100 + 500 < 1,000 free − 349.3 (a whole reservation, 1,100 − 100 − 499 = 501, would refuse it). B
///   prefills alone, decode paused, 11 → 22 ms: B's TTFT 17 ms.
/// - Both decode from 22 ms, 2 tokens a step; C never fits (600 tokens against at most ~222 left). The
///   decode at 4,522 ms (after 450 steps) finds the KV full: B, tied with A at 451 tokens, is the newer and
///   is retracted to the back of the queue, behind C. The ratio becomes (451 + 20)/501 = 0.940.
/// - A ends at 5,012 ms (11 + 11 + 499 × 10). C is admitted first and prefills 5,012 → 5,025 ms (TTFT
///   4,025 ms), and ends 2,990 ms later (E2E 7,015 ms); B still does not fit beside it (600 against at most
///   542).
/// - B recomputes its 100 + 451 tokens 8,015 → 8,030.51 ms and decodes its last 48: E2E 8,505.51 ms.
#[test]
fn sglang_reserves_a_share_of_the_output_and_retracts_to_the_back() {
    let mut s = linear(100, 500, 3, 1.0);
    s.workload.arrival =
        vidur("arrived_at,num_prefill_tokens,num_decode_tokens\n0,100,500\n0.005,100,500\n1,300,300\n");
    s.workload.requests = None;
    s.engine.kv_capacity_tokens = Some(1100);
    s.engine.block_size_tokens = 1;
    s.engine.prefill_chunk_tokens = Some(8192);
    s.engine.batch_formation = BatchFormationSpec::Sglang;
    s.estimator.reserve = inferscale::spec::PredictorSpec::Oracle;
    let sc = super::valid(&s);
    let r = simulate(&sc);
    assert!(r.audits.ok, "{:?}", r.audits);
    let csv = inferscale::export::requests_csv(&r, &sc);
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| h.starts_with(name)).unwrap();
    let ms = |l: &str, at: usize| (l.split(',').nth(at).unwrap().parse::<f64>().unwrap() * 1e8).round() / 1e5;
    let (ttft, e2e) = (col("ttft"), col("e2e"));
    let rows: Vec<(f64, f64)> = csv.lines().skip(1).map(|l| (ms(l, ttft), ms(l, e2e))).collect();
    assert_eq!(rows, [(11.0, 5012.0), (17.0, 8505.51), (4025.0, 7015.0)]);
    assert_eq!(r.summary.preemptions, 1, "one retraction");
    // Refused beside SGLang's formations: the knobs of vLLM's.
    s.engine.kv_oversubscription = 0.9;
    let e = inferscale::scenario::validate(&s).unwrap_err();
    assert_eq!(e.errors[0].path, "engine.kv_oversubscription");
}

/// SGLang's retraction order and ratio: the fewest generated tokens first (older or not), then the longest
/// prompt, then the newest; a lone decoder is kept. The ratio falls from 0.7 to its floor 0.098 in 600 decode
/// steps and no further, and a retraction re-estimates it from the requests kept, at most 1.
#[test]
fn sglang_retracts_the_least_progressed_and_its_ratio_decays_to_a_floor() {
    use inferscale::sched::sglang::{NewTokenRatio, retraction_victim};
    let pick = |d: &[(u32, u32)]| retraction_victim(d.iter().enumerate().map(|(j, &(g, p))| (j, g, p)));
    assert_eq!(pick(&[(3, 100), (9, 100)]), Some(0), "the older one, with fewer tokens");
    assert_eq!(pick(&[(5, 100), (5, 300), (5, 200)]), Some(1), "a tie: the longest prompt");
    assert_eq!(pick(&[(5, 100), (5, 100)]), Some(1), "a full tie: the newest");
    assert_eq!(pick(&[(5, 100)]), None, "one decoder is always kept");
    let mut r = NewTokenRatio::default();
    for _ in 0..300 {
        r.decay();
    }
    assert!((r.0 - (0.7 + 0.098) / 2.0).abs() < 1e-12, "{}", r.0);
    for _ in 0..400 {
        r.decay();
    }
    assert!((r.0 - 0.098).abs() < 1e-12, "{}", r.0);
    r.after_retraction(451, 500, 1);
    assert!((r.0 - 471.0 / 501.0).abs() < 1e-15);
    r.after_retraction(5000, 500, 1);
    assert_eq!(r.0, 1.0);
    r.reset();
    assert_eq!(r.0, 0.7);
}

/// SGLang's formation on a closed loop of long outputs (InferenceX's H200 1k/8k sweep at 16 clients, the
/// validation's costliest kind of run): nearly every step end coasts — a step end costs O(1), not a pass over
/// the batch and a formation from scratch — and the report is the general path's byte for byte.
#[test]
fn sglang_decoding_a_closed_loop_coasts_and_equals_the_general_path() {
    use inferscale::truth::{Bundle, calibrate};
    let dir = super::root().join("tests/data/public/inferencex");
    let base: inferscale::spec::Spec =
        inferscale::scenario::parse(&std::fs::read_to_string(dir.join("dsr1-fp8-h200.json")).unwrap()).unwrap();
    let bundle = Bundle::parse(&std::fs::read_to_string(dir.join("h200.bundle.json")).unwrap()).unwrap();
    let case = bundle.cases.iter().find(|c| c.id == "h200-1k8k-c16.json").unwrap();
    let mut spec = calibrate::scenario_of(&base, case).unwrap();
    spec.workload.requests = Some(48); // three rounds of the 16 clients: the loop's shape, a tenth of its runs
    let sc = super::valid(&spec);
    assert_eq!(sc.front_pool().engine.formation, BatchFormationSpec::Sglang);
    let rec = inferscale::engine::run(&sc);
    let (steps, coasted) = (rec.steps, rec.coasted_steps);
    let lazy = inferscale::export::json(&inferscale::Report::build(&sc, rec));
    let eager = inferscale::export::json(&inferscale::Report::build(&sc, inferscale::engine::run_eager(&sc)));
    assert!(lazy == eager, "the lazy step end changed the report");
    assert!(coasted * 100 > steps * 95, "{coasted} of {steps} step ends coasted");
}
