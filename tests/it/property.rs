//! Random valid scenarios (seeded, reproducible): no panic, every audit holds.

use inferscale::rng::{self, Stream};
use inferscale::scenario::{self, *};

pub(super) fn random_spec(i: u64) -> Spec {
    let mut r = rng::stream(0xC0FFEE, Stream::Study, i);
    let mut pick = |n: u64| r.below(n) as usize;
    let mut s = super::small();
    s.seed = i;
    s.workload.requests = Some(50 + pick(250) as u64);
    let rate = [0.5, 5.0, 20.0, 80.0, 300.0][pick(5)];
    s.workload.arrival = match pick(4) {
        0 => ArrivalSpec::Poisson { rate_rps: rate },
        1 => ArrivalSpec::Constant { rate_rps: rate },
        2 => ArrivalSpec::Gamma { rate_rps: rate, cv: [0.3, 1.0, 3.0][pick(3)] },
        _ => ArrivalSpec::OnOff {
            rate_on_rps: rate * 3.0,
            rate_off_rps: [0.0, rate / 4.0][pick(2)],
            mean_on_s: 2.0,
            mean_off_s: 4.0,
        },
    };
    let len = |k: usize, m: f64| match k {
        0 => LengthSpec::Fixed { tokens: m as u32 },
        1 => LengthSpec::Uniform { min: 1, max: (2.0 * m) as u32 },
        2 => LengthSpec::Lognormal { mean: m, cv: 1.5, max: (8.0 * m) as u32 },
        3 => LengthSpec::Geometric { mean: m, max: (8.0 * m) as u32 },
        _ => LengthSpec::Empirical { values: vec![1, m as u32, (3.0 * m) as u32] },
    };
    let n_classes = 1 + pick(3);
    s.workload.classes = (0..n_classes)
        .map(|c| ClassSpec {
            name: format!("c{c}"),
            weight: 1.0 + c as f64,
            priority: c as u32,
            prompt_tokens: len(pick(5), [16.0, 300.0, 1500.0][pick(3)]),
            output_tokens: len(pick(5), [1.0, 50.0, 400.0][pick(3)]),
            slo: SloSpec { ttft_ms: Some(500.0), tpot_ms: Some(50.0), e2e_ms: Some(30_000.0) },
        })
        .collect();
    s.workload.tenants =
        (0..1 + pick(3)).map(|t| TenantSpec { name: format!("t{t}"), ..TenantSpec::default() }).collect();
    let e = &mut s.engine;
    e.max_num_seqs = [1, 4, 32, 256][pick(4)];
    e.max_num_batched_tokens = [512, 2048, 8192][pick(3)];
    e.chunked_prefill = pick(4) != 0;
    e.prefill_chunk_tokens = Some([64, 256, 512][pick(3)]);
    e.block_size_tokens = [1, 16, 32][pick(3)];
    // Tight memory half the time, to exercise preemption.
    e.kv_capacity_tokens = [None, Some(16_000), Some(40_000)][pick(3)];
    e.kv_oversubscription = [0.5, 1.0, 3.0][pick(3)];
    e.preemption = PreemptionSpec {
        victim: [VictimSpec::Newest, VictimSpec::LeastProgress, VictimSpec::LowestPriority][pick(3)],
        backoff_ms: [0.0, 5.0][pick(2)],
        max_preemptions: [0, 2, 16][pick(3)],
        // Off on every fifth, from the index rather than a draw: the corpus's other choices stay what they were.
        reuse_freed_blocks: !i.is_multiple_of(5),
    };
    e.horizon_s = [None, None, Some(30.0)][pick(3)];
    if !e.chunked_prefill {
        e.max_num_batched_tokens = 65_536;
    }
    let pred = |k: usize| {
        [PredictorSpec::Oracle, PredictorSpec::ClassMean, PredictorSpec::Zero, PredictorSpec::Lognormal { sigma: 1.0 }]
            [k]
            .clone()
    };
    s.estimator = EstimatorSpec { order: pred(pick(4)), reserve: pred(pick(4)) };
    s.scheduler = [
        SchedulerSpec::Fcfs,
        SchedulerSpec::Sjf,
        SchedulerSpec::Spf,
        SchedulerSpec::Edf,
        SchedulerSpec::Priority,
        SchedulerSpec::Drr { quantum_tokens: 256 },
    ][pick(6)]
    .clone();
    s.admission = [
        AdmissionSpec::None,
        AdmissionSpec::QueueCap { max_waiting: 20 },
        AdmissionSpec::Deadline { slack: 1.0 },
        AdmissionSpec::RandomDrop { probability: 0.2 },
        AdmissionSpec::TokenBucket { rate_tokens_per_s: 20_000.0, burst_tokens: 50_000.0 },
    ][pick(5)]
    .clone();
    s.cluster = ClusterSpec {
        replicas: 1 + pick(4) as u32,
        router: [
            RouterSpec::RoundRobin,
            RouterSpec::Random,
            RouterSpec::LeastOutstanding,
            RouterSpec::LeastKv,
            RouterSpec::PowerOfTwo,
            RouterSpec::CentralQueue,
        ][pick(6)]
        .clone(),
        disaggregation: None,
    };
    s.hardware.device = Some(["a100-80g", "h100-sxm", "h200", "l40s"][pick(4)].into());
    if pick(3) == 0 {
        s.cost =
            CostSpec::Linear { base_ms: 5.0, per_seq_ms: 0.1, per_prefill_token_ms: 0.02, per_kv_token_ms: 0.0001 };
    }
    // Drawn last, so the choices above are those of the colocated-only generator.
    let mut router = || {
        [
            RouterSpec::RoundRobin,
            RouterSpec::Random,
            RouterSpec::LeastOutstanding,
            RouterSpec::LeastKv,
            RouterSpec::PowerOfTwo,
        ][pick(5)]
        .clone()
    };
    let (rp, rd) = (router(), router());
    if pick(3) == 0 {
        s.cluster.disaggregation = Some(DisaggSpec {
            prefill: PoolSpec { replicas: 1 + pick(3) as u32, device: None, tp: None, router: rp },
            decode: PoolSpec {
                replicas: 1 + pick(3) as u32,
                device: [None, Some("h100-sxm".to_string())][pick(2)].clone(),
                tp: None,
                router: rd,
            },
            link: LinkSpec {
                bandwidth_gbps: [0.5, 10.0, 400.0][pick(3)],
                latency_ms: [0.0, 2.0][pick(2)],
                topology: [LinkTopology::PerPair, LinkTopology::Shared][pick(2)],
            },
        });
    }
    if pick(2) == 0 {
        s.prefix = Some(PrefixSpec {
            prefix_tokens: [16, 64, 200][pick(3)],
            reuse_fraction: [0.3, 0.9][pick(2)],
            groups: [1, 5, 50][pick(3)],
            zipf_s: 1.0,
            caching: pick(4) != 0,
        });
    }
    s
}

#[test]
fn random_valid_scenarios_run_and_pass_audits() {
    let (mut ran, mut preempted, mut failed, mut rejected, mut unfinished) = (0, 0, 0, 0, 0);
    let (mut pd, mut hits, mut evicted) = (0, 0, 0);
    for i in 0..300 {
        let spec = random_spec(i);
        // Some random combinations are invalid (e.g. a request larger than a small KV cache): the validator
        // must say so, never panic; the others must run.
        let sc = match std::panic::catch_unwind(|| scenario::validate(&spec)) {
            Ok(Ok(sc)) => sc,
            Ok(Err(e)) => {
                assert!(!e.errors.is_empty());
                continue;
            }
            Err(_) => panic!("scenario {i}: validation panicked"),
        };
        let r = std::panic::catch_unwind(|| inferscale::simulate(&sc))
            .unwrap_or_else(|_| panic!("scenario {i} panicked: {spec:#?}"));
        let a = &r.audits;
        assert!(a.conservation.ok, "scenario {i}: {:?}", a.conservation);
        assert_eq!(a.kv.violations, 0, "scenario {i}: KV invariant");
        assert!(a.little.relative_error <= 0.01, "scenario {i}: Little {}", a.little.relative_error);
        assert!(r.summary.slo_attainment >= 0.0 && r.summary.slo_attainment <= 1.0);
        assert!(r.summary.kv_peak_fraction <= 1.0 + 1e-12);
        ran += 1;
        preempted += (r.summary.preemptions > 0) as u32;
        failed += (r.summary.failed > 0) as u32;
        rejected += (r.summary.rejected > 0) as u32;
        unfinished += (r.summary.unfinished > 0) as u32;
        pd += r.transfer.is_some() as u32;
        hits += r.prefix.as_ref().is_some_and(|p| p.hits > 0) as u32;
        evicted += r.prefix.as_ref().is_some_and(|p| p.evictions > 0) as u32;
    }
    println!("disaggregated {pd}; with prefix hits {hits}, with prefix evictions {evicted}");
    assert!(pd > 30 && hits > 30, "the generator must reach disaggregation and prefix sharing");
    println!(
        "ran {ran}; with preemptions {preempted}, failures {failed}, rejections {rejected}, unfinished {unfinished}"
    );
    assert!(ran >= 200, "too few valid random scenarios ({ran})");
    assert!(preempted > 5 && failed > 0 && rejected > 10 && unfinished > 5, "the generator must reach the rare paths");
}

/// The step end leaves steady decoders lazy (`engine::Lazy`) instead of touching each one every step, and
/// when every running request is lazy it skips the pass over the batch (it coasts); it must make exactly the
/// plan the general path makes. The same random scenarios, ten times longer ones (more steady stretches, more
/// block boundaries), ones whose token budget binds every step, and the shipped scenarios give byte-identical
/// reports both ways.
#[test]
fn lazy_step_ends_equal_the_general_path() {
    let (mut compared, mut lazy_heavy, mut coasting) = (0, 0, 0);
    let (mut steps, mut coasted) = (0, 0);
    // The third set has a token budget far smaller than the batch slots, so most steps are budget-bound.
    for (scale, n, tight_budget) in [(1, 300, false), (10, 100, false), (3, 100, true)] {
        for i in 0..n {
            let mut spec = random_spec(i);
            spec.workload.requests = spec.workload.requests.map(|r| r * scale);
            if tight_budget {
                let e = &mut spec.engine;
                (e.max_num_seqs, e.max_num_batched_tokens, e.chunked_prefill, e.prefill_chunk_tokens) =
                    (256, 48, true, Some(32));
            }
            let Ok(sc) = scenario::validate(&spec) else { continue };
            let rec = inferscale::engine::run(&sc);
            (steps, coasted, coasting) =
                (steps + rec.steps, coasted + rec.coasted_steps, coasting + usize::from(rec.coasted_steps > 0));
            let lazy = inferscale::export::json(&inferscale::Report::build(&sc, rec));
            let eager = inferscale::export::json(&inferscale::Report::build(&sc, inferscale::engine::run_eager(&sc)));
            assert!(lazy == eager, "scenario {i} ×{scale}: the lazy step end changed the report");
            compared += 1;
            lazy_heavy += usize::from(sc.front_pool().engine.max_num_seqs >= 32);
        }
    }
    println!(
        "{compared} compared, {lazy_heavy} with batches of 32 or more, {coasting} coasting; {coasted} of {steps} step ends coasted"
    );
    assert!(compared > 400 && lazy_heavy > 150, "{compared} compared, {lazy_heavy} with batches of 32 or more");
    assert!(coasting > 200 && coasted * 4 > steps, "{coasting} scenarios coasting, {coasted} of {steps} step ends");
    // And every shipped scenario (P/D with shared prefixes, KV pressure, bursts, a trace, 70B on TP 4).
    for name in super::shipped_names() {
        let sc = scenario::validate(&super::shipped(&name)).unwrap();
        let lazy = inferscale::export::json(&inferscale::simulate(&sc));
        let eager = inferscale::export::json(&inferscale::Report::build(&sc, inferscale::engine::run_eager(&sc)));
        assert!(lazy == eager, "{name}: the lazy step end changed the report");
    }
}

/// Random session scenarios (the property generator's engines, routers, memory and policies, with sessions of
/// random turns, lengths and heavy-tailed tools): no panic, every audit holds, sessions are conserved, and the
/// lazy step end equals the general path.
#[test]
fn random_session_scenarios_pass_the_audits() {
    let (mut ran, mut context_ends, mut multi, mut hosted, mut pressed, mut classed, mut prefixed) =
        (0, 0, 0, 0, 0, 0, 0);
    for i in 0..150 {
        let mut spec = random_spec(i);
        if !matches!(
            spec.workload.arrival,
            ArrivalSpec::Poisson { .. }
                | ArrivalSpec::Gamma { .. }
                | ArrivalSpec::OnOff { .. }
                | ArrivalSpec::Constant { .. }
        ) {
            continue;
        }
        (spec.prefix, spec.cluster.disaggregation) = (None, None);
        spec.workload.requests = spec.workload.requests.map(|n| n / 5 + 1);
        let k = i as u32;
        spec.workload.sessions = Some(SessionsSpec {
            turns: Some(
                [
                    LengthSpec::Fixed { tokens: 1 },
                    LengthSpec::Uniform { min: 1, max: 8 },
                    LengthSpec::Geometric { mean: 5.0, max: 40 },
                ][((k + k / 6) % 3) as usize]
                    .clone(),
            ),
            first_tokens: Some(LengthSpec::Lognormal { mean: 400.0, cv: 1.0, max: 3000 }),
            new_tokens: Some(LengthSpec::Uniform { min: 1, max: 300 }),
            output_tokens: Some(LengthSpec::Geometric { mean: 40.0, max: 400 }),
            tools: vec![
                ToolSpec { name: "read".into(), weight: 3.0, mean_s: 0.1, cv: 1.0 },
                ToolSpec { name: "test".into(), weight: 1.0, mean_s: 3.0, cv: 4.0 },
            ],
            // Most scenarios keep their KV between turns somehow (under each one's memory pressure).
            retention: match i % 8 {
                0 => RetentionSpec::Retain,
                1 => RetentionSpec::Stateless,
                2 => RetentionSpec::Ttl { ttl_s: Some([0.0, 0.05, 1.0, 30.0][(k / 8 % 4) as usize]) },
                3 => RetentionSpec::HostOffload,
                4 => RetentionSpec::GapOracle,
                5 => RetentionSpec::Adaptive { alpha: 0.3 },
                6 => RetentionSpec::AdaptivePerTool { alpha: 0.1 },
                _ => RetentionSpec::Retain,
            },
            // Every third scenario's slow tool slows further part-way through.
            shift: (i % 3 == 0).then(|| ToolShiftSpec { tool: "test".into(), at_s: 0.5, factor: 4.0 }),
            slo: SessionSloSpec { turn_ttft_ms: Some(500.0), session_s: None },
            trace: None,
            classes: Vec::new(),
            workflow: None,
        });
        // Session classes on a quarter: quick ones without tools, and long ones with their own objective.
        if k % 4 == 1 {
            spec.workload.sessions.as_mut().unwrap().classes = serde_json::from_value(serde_json::json!([
                {"name": "quick", "weight": 3, "turns": {"kind": "uniform", "min": 1, "max": 3}, "tools": []},
                {"name": "long", "first_tokens": {"kind": "fixed", "tokens": 1500}, "slo": {"session_s": 60}}
            ]))
            .unwrap();
        }
        // A host tier (small enough to fill) for host offload and a third of the rest; a retention budget on
        // a fifth; affinity routers on a third.
        if spec.cluster.router != RouterSpec::CentralQueue && (i % 6 == 3 || k.is_multiple_of(3)) {
            spec.engine.host_kv = Some(HostKvSpec {
                capacity_gb: [0.05, 0.5, 20.0][(k % 3) as usize],
                bandwidth_gbps: [2.0, 25.0, 400.0][(k / 3 % 3) as usize],
                latency_ms: 0.01,
            });
        }
        if k % 5 == 1 {
            spec.engine.retention_budget_blocks = Some([0, 64, 2000][(k / 5 % 3) as usize]);
        }
        if k % 3 == 1 && spec.cluster.router != RouterSpec::CentralQueue {
            spec.cluster.router = [
                RouterSpec::Sticky,
                RouterSpec::BoundedAffinity { slack_ms: 0.0 },
                RouterSpec::BoundedAffinity { slack_ms: 50.0 },
            ][(k / 3 % 3) as usize]
                .clone();
        }
        if k.is_multiple_of(4) {
            // A first turn (≤ 3000 + 400 tokens) fits it; a session that grows its history reaches it.
            spec.model.context_tokens = Some(3500);
        }
        if k % 4 == 2 {
            spec.engine.kv_capacity_tokens = Some(16_384); // tight: retained history yields to running turns
        }
        // A shared system prompt on a fifth (cached or not).
        if k % 5 == 3 {
            spec.prefix = Some(scenario::PrefixSpec {
                prefix_tokens: 256,
                reuse_fraction: 0.8,
                groups: 1 + k % 3,
                zipf_s: 1.0,
                caching: k % 10 != 8,
            });
        }
        // The stateless ones are workflows (three roles, a shift) on every other draw: each predictor and
        // planner, under a prefix budget from none to all, prefetching when there is a host tier.
        if i % 8 == 1 && k.is_multiple_of(2) {
            spec.prefix = None;
            spec.workload.sessions.as_mut().unwrap().workflow = Some(workflow_of(k, spec.engine.host_kv.is_some()));
        }
        let Ok(sc) = scenario::validate(&spec) else { continue };
        let r = inferscale::simulate(&sc);
        let s = r.sessions.as_ref().unwrap();
        assert!(
            r.audits.conservation.ok && r.audits.kv.violations == 0 && r.audits.little.relative_error <= 0.01,
            "scenario {i}: {:?}",
            r.audits
        );
        assert!(
            s.conservation_ok && s.sessions == s.completed + s.ended_by_context + s.ended_by_failure + s.unfinished,
            "scenario {i}: {s:?}"
        );
        assert!(s.recomputed_history_tokens <= s.history_tokens);
        assert!(s.audit.ok && r.audits.ok, "scenario {i}: {:?}", s.audit);
        if let Some(h) = &spec.engine.host_kv {
            assert!(
                s.kv.host_peak_gb <= h.capacity_gb * sc.front_pool().replicas as f64 + 1e-9,
                "scenario {i}: host over capacity"
            );
            hosted += (s.kv.restores > 0) as u32;
        }
        if let Some(b) = spec.engine.retention_budget_blocks {
            let block_gb = sc.kv_block_bytes() / 1e9;
            assert!(
                s.kv.hbm_peak_gb <= (b * sc.front_pool().replicas as u64) as f64 * block_gb + 1e-9,
                "scenario {i}: over the retention budget"
            );
        }
        if !s.classes.is_empty() {
            let sum = |f: fn(&inferscale::metrics::SessionClassSummary) -> u64| s.classes.iter().map(f).sum::<u64>();
            assert!(
                sum(|c| c.sessions) == s.sessions && sum(|c| c.turns) == s.turns && sum(|c| c.completed) <= s.sessions,
                "scenario {i}: classes do not add up"
            );
            assert!(
                sum(|c| c.recomputed_history_tokens) >= s.recomputed_history_tokens
                    && sum(|c| c.history_tokens) == s.history_tokens,
                "scenario {i}: class history {} vs {}",
                sum(|c| c.history_tokens),
                s.history_tokens
            );
            classed += 1;
        }
        prefixed += r.prefix.as_ref().is_some_and(|p| p.hits > 0) as u32;
        let eager = inferscale::Report::build(&sc, inferscale::engine::run_eager(&sc));
        assert!(
            inferscale::export::json(&r) == inferscale::export::json(&eager),
            "scenario {i}: lazy and eager differ"
        );
        ran += 1;
        context_ends += (s.ended_by_context > 0) as u32;
        multi += (s.mean_turns_per_session > 2.0) as u32;
        pressed += (s.kv.pressure_evictions > 0) as u32;
    }
    println!(
        "session scenarios: {ran} ran; {context_ends} with context ends, {multi} with > 2 turns a session, {hosted} restoring from host memory, {pressed} evicting under pressure, {classed} with session classes, {prefixed} sharing a prefix"
    );
    assert!(
        ran > 60 && context_ends > 3 && multi > 20 && hosted > 8 && pressed > 8 && classed > 15 && prefixed > 10,
        "{ran} ran, {context_ends} context ends, {multi} multi-turn, {hosted} hosted, {pressed} pressed, {classed} classed, {prefixed} prefixed"
    );
}

/// A workflow of three roles for the random scenarios, varied by `k`.
fn workflow_of(k: u32, host: bool) -> scenario::WorkflowSpec {
    let predictor = match (host, k / 2 % 4) {
        (false, _) | (_, 0) => serde_json::json!({"kind": "none"}),
        (_, 1) => serde_json::json!({"kind": "counts"}),
        (_, 2) => serde_json::json!({"kind": "decayed", "decay": 0.8}),
        _ => serde_json::json!({"kind": "clairvoyant"}),
    };
    let prefetch = match k / 8 % 3 {
        0 => serde_json::json!({"kind": "threshold", "threshold": 0.3, "horizon": 1}),
        1 => serde_json::json!({"kind": "threshold", "threshold": 0.1, "horizon": 3}),
        _ => serde_json::json!({"kind": "utility", "horizon": 2}),
    };
    let (prefix_tokens, budget) = ([64, 500, 2000][(k / 3 % 3) as usize], [0.0, 0.34, 0.67, 1.0][(k / 4 % 4) as usize]);
    serde_json::from_value(serde_json::json!({
        "roles": ["a", "b", "c"],
        "prefix_tokens": prefix_tokens,
        "transitions": {"a": {"b": 3, "c": 1}, "b": {"a": 1, "c": 1, "b": 1}, "c": {"a": 1}},
        "shift": {"at_s": 0.5, "transitions": {"a": {"c": 1}}},
        "prefix_budget": budget,
        "predictor": predictor,
        "prefetch": prefetch,
    }))
    .unwrap()
}
