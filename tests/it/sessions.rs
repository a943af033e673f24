//! Sessions' KV between turns: TTL, the host tier and its link, the gap oracle, the retention budget and
//! affinity routing — exact timings on the linear cost, identities between policies, and the audits.

use super::engine::one_session;
use inferscale::scenario::*;
use inferscale::{Report, simulate};

/// Llama-3-8B's KV: 2 × 32 layers × 8 heads × 128 × 2 bytes per token, 16 tokens a block.
const BLOCK_BYTES: f64 = 131_072.0 * 16.0;

fn with(retention: RetentionSpec) -> Spec {
    let mut s = one_session(3);
    s.workload.sessions.as_mut().unwrap().retention = retention;
    s
}

fn host(spec: &mut Spec, gbps: f64, latency_ms: f64) {
    spec.engine.host_kv = Some(HostKvSpec { capacity_gb: 100.0, bandwidth_gbps: gbps, latency_ms });
}

fn ttfts(r: &Report) -> Vec<f64> {
    r.sessions.as_ref().unwrap().ttft_by_turn.iter().map(|t| t.ttft_p50_s).collect()
}

fn close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() < 1e-9, "{got:?} vs {want:?}");
    }
}

/// A turn's cost in each tier, exactly. HBM hit: prefill only what is new (turn 2: 213 tokens, 12.13 ms). Miss:
/// the whole history (22.05 ms). Host hit: the restore — 62 blocks of 2 MiB at 10 GB/s is 13.0023424 ms, plus
/// 1 ms latency — then the new tokens: 26.1323424 ms; turn 3 restores 75 blocks (16.72864 ms) and prefills 210.
#[test]
fn a_turn_costs_a_restore_then_its_new_tokens_on_a_host_hit() {
    let hbm = simulate(&super::valid(&with(RetentionSpec::Retain)));
    close(&ttfts(&hbm), &[0.020, 0.01213, 0.01210]);
    let mut s = with(RetentionSpec::HostOffload);
    host(&mut s, 10.0, 1.0);
    let r = simulate(&super::valid(&s));
    let restore = [62.0 * BLOCK_BYTES / 10e9 + 0.001, 75.0 * BLOCK_BYTES / 10e9 + 0.001];
    close(&ttfts(&r), &[0.020, restore[0] + 0.01213, restore[1] + 0.01210]);
    let x = r.sessions.as_ref().unwrap();
    assert_eq!((x.kv.restores, x.kv.later_turns), (2, 2));
    assert_eq!((x.kv.host_hit_rate, x.kv.hbm_hit_rate, x.kv.miss_rate, x.kv.route_locality), (1.0, 0.0, 0.0, 1.0));
    assert!(
        (x.kv.restore_s.max - restore[1]).abs() < 1e-9
            && (x.kv.restore_s.mean - (restore[0] + restore[1]) / 2.0).abs() < 1e-9
    );
    assert!((x.kv.restore_gb - 137.0 * BLOCK_BYTES / 1e9).abs() < 1e-9);
    // The history sat in host memory through both tool gaps, never idle in HBM.
    assert_eq!(x.kv.hbm_peak_gb, 0.0);
    assert!((x.kv.host_peak_gb - 75.0 * BLOCK_BYTES / 1e9).abs() < 1e-9);
    assert!(r.audits.ok && x.audit.ok, "{:?} {:?}", r.audits, x.audit);
    assert_eq!(x.recomputed_history_tokens, 2215 - 992 - 1200);
}

/// Two sessions whose second turns are ready 20 ms apart each restore ~130 ms of KV at 1 GB/s: the second
/// waits for the first on the worker's one host link.
#[test]
fn two_restores_on_one_link_serialize() {
    let mut s = with(RetentionSpec::HostOffload);
    host(&mut s, 1.0, 0.0);
    s.workload.requests = Some(2);
    s.workload.arrival = ArrivalSpec::Constant { rate_rps: 1000.0 };
    let sc = super::valid(&s);
    let rec = inferscale::engine::run(&sc);
    let turn2: Vec<u64> = rec.requests.iter().filter(|r| r.turn == 2).map(|r| r.arrival_ns).collect();
    let send = (62.0 * BLOCK_BYTES / 1.0).round() as u64; // ns at 1 byte/ns
    let (a, b) = (turn2[0], turn2[1]);
    assert!(b > a && b - a < send, "the second is ready while the first is on the link: {a} {b}");
    assert_eq!(rec.sess.restore_ns[..2], [send, a + 2 * send - b]);
}

/// TTL 0 is stateless (without a host tier) or host offload (with one); no TTL, or one longer than any gap,
/// is full retention — byte for byte, on a pressured multi-replica scenario. A TTL inside the tool gap
/// expires the history: the next turn misses (or, with a host tier, restores).
#[test]
fn ttl_spans_stateless_to_full_retention() {
    let json = |s: &Spec| inferscale::export::json(&simulate(&super::valid(s)));
    let pressured = |retention: RetentionSpec, host_tier: bool| {
        let mut s = one_session(8);
        s.cost = CostSpec::default();
        s.workload.arrival = ArrivalSpec::Poisson { rate_rps: 6.0 };
        s.workload.requests = Some(80);
        s.engine.kv_capacity_tokens = Some(30_000);
        s.cluster.replicas = 2;
        s.cluster.router = RouterSpec::Sticky;
        let x = s.workload.sessions.as_mut().unwrap();
        x.retention = retention;
        x.turns = Some(LengthSpec::Uniform { min: 2, max: 10 });
        x.output_tokens = Some(LengthSpec::Geometric { mean: 60.0, max: 400 });
        x.tools = vec![ToolSpec { name: "test".into(), weight: 1.0, mean_s: 2.0, cv: 2.0 }];
        if host_tier {
            host(&mut s, 25.0, 0.02);
        }
        s
    };
    let ttl = |t: Option<f64>| RetentionSpec::Ttl { ttl_s: t };
    assert_eq!(json(&pressured(ttl(Some(0.0)), false)), json(&pressured(RetentionSpec::Stateless, false)));
    assert_eq!(json(&pressured(ttl(Some(0.0)), true)), json(&pressured(RetentionSpec::HostOffload, true)));
    let full = json(&pressured(RetentionSpec::Retain, false));
    assert_eq!(json(&pressured(ttl(None), false)), full);
    assert_eq!(json(&pressured(ttl(Some(1e6)), false)), full);
    assert_ne!(json(&pressured(ttl(Some(1.0)), false)), full);
    // One session, tools of exactly 1 s: a TTL of 0.5 s expires both histories, one of 2 s keeps them.
    let short = simulate(&super::valid(&with(ttl(Some(0.5)))));
    close(&ttfts(&short), &[0.020, 0.02205, 0.02410]);
    assert_eq!(short.sessions.as_ref().unwrap().kv.ttl_evictions, 2);
    close(&ttfts(&simulate(&super::valid(&with(ttl(Some(2.0)))))), &[0.020, 0.01213, 0.01210]);
    let mut to_host = with(ttl(Some(0.5)));
    host(&mut to_host, 10.0, 1.0);
    let r = simulate(&super::valid(&to_host));
    close(
        &ttfts(&r),
        &[0.020, 62.0 * BLOCK_BYTES / 10e9 + 0.001 + 0.01213, 75.0 * BLOCK_BYTES / 10e9 + 0.001 + 0.01210],
    );
    let x = r.sessions.unwrap();
    // Each history was idle in HBM for exactly the TTL: 0.5 s × (62 + 75) blocks.
    assert!((x.kv.hbm_gb_s - 0.5 * 137.0 * BLOCK_BYTES / 1e9).abs() < 1e-9, "{}", x.kv.hbm_gb_s);
    assert_eq!((x.kv.ttl_evictions, x.kv.restores), (2, 2));
}

/// The gap oracle keeps a history in HBM when its share of KV × the gap costs less than recomputing it, and
/// otherwise restores it (when that is faster than recomputing) or frees it.
#[test]
fn the_gap_oracle_keeps_what_is_cheaper_to_keep() {
    // A 1 s gap: 62 of 64k blocks for 1 s is 0.95 ms of HBM-seconds, recomputing 992 tokens 9.92 ms: keep.
    close(&ttfts(&simulate(&super::valid(&with(RetentionSpec::GapOracle)))), &[0.020, 0.01213, 0.01210]);
    let mut long = with(RetentionSpec::GapOracle);
    long.workload.sessions.as_mut().unwrap().tools[0].mean_s = 1000.0;
    // A 1000 s gap: keeping costs ~0.95 s: recompute (no host tier).
    close(&ttfts(&simulate(&super::valid(&long))), &[0.020, 0.02205, 0.02410]);
    // With a slow host link (14 ms > 9.92 ms) still recompute; with a fast one (1.4 ms), restore.
    host(&mut long, 10.0, 1.0);
    close(&ttfts(&simulate(&super::valid(&long))), &[0.020, 0.02205, 0.02410]);
    host(&mut long, 100.0, 0.1);
    let r = simulate(&super::valid(&long));
    close(
        &ttfts(&r),
        &[0.020, 62.0 * BLOCK_BYTES / 100e9 + 0.0001 + 0.01213, 75.0 * BLOCK_BYTES / 100e9 + 0.0001 + 0.01210],
    );
}

/// The retention budget caps the history HBM holds per worker: 0 blocks is stateless byte for byte; a small
/// budget keeps the idle history under it, pushing the rest to the host tier, whose use stays within its
/// capacity (dropping the least recently stored).
#[test]
fn the_retention_budget_and_host_capacity_bound_what_is_kept() {
    let many = |budget: Option<u64>, host_gb: Option<f64>| {
        let mut s = one_session(6);
        s.workload.arrival = ArrivalSpec::Poisson { rate_rps: 4.0 };
        s.workload.requests = Some(40);
        s.workload.sessions.as_mut().unwrap().retention = RetentionSpec::Retain;
        s.engine.retention_budget_blocks = budget;
        if let Some(gb) = host_gb {
            s.engine.host_kv = Some(HostKvSpec { capacity_gb: gb, bandwidth_gbps: 25.0, latency_ms: 0.0 });
        }
        simulate(&super::valid(&s))
    };
    let stateless = {
        let mut s = one_session(6);
        s.workload.arrival = ArrivalSpec::Poisson { rate_rps: 4.0 };
        s.workload.requests = Some(40);
        inferscale::export::json(&simulate(&super::valid(&s)))
    };
    // A budget of 0 keeps nothing: the stateless run, but each history it could not keep is a budget eviction.
    let mut zero: serde_json::Value = serde_json::from_str(&inferscale::export::json(&many(Some(0), None))).unwrap();
    let evicted = std::mem::take(&mut zero["sessions"]["kv"]["pressure_evictions"]);
    assert!(evicted.as_u64().unwrap() > 0, "{evicted}");
    zero["sessions"]["kv"]["pressure_evictions"] = 0.into();
    assert_eq!(zero, serde_json::from_str::<serde_json::Value>(&stateless).unwrap());
    let free = many(None, None);
    let capped = many(Some(300), Some(1.0));
    let (f, c) = (free.sessions.as_ref().unwrap(), capped.sessions.as_ref().unwrap());
    assert!(
        f.kv.hbm_peak_gb > 300.0 * BLOCK_BYTES / 1e9,
        "the free run holds more than the budget: {}",
        f.kv.hbm_peak_gb
    );
    assert!(c.kv.hbm_peak_gb <= 300.0 * BLOCK_BYTES / 1e9 + 1e-12, "{}", c.kv.hbm_peak_gb);
    assert!(c.kv.host_peak_gb <= 1.0 + 1e-12 && c.kv.host_peak_gb > 0.0, "{}", c.kv.host_peak_gb);
    assert!(c.kv.pressure_evictions > 0 && c.kv.host_evictions > 0 && c.kv.host_hit_rate > 0.0, "{:?}", c.kv);
    assert!(capped.audits.ok && free.audits.ok);
    assert!(c.reuse < f.reuse && c.reuse > 0.0, "{} vs {}", c.reuse, f.reuse);
}

/// The reference working set is the most idle history one worker held: as a per-worker budget it never binds
/// (the run is unchanged, no eviction), a block less does; it lies between the total peak ÷ workers and the
/// total peak.
#[test]
fn the_largest_idle_history_one_worker_held_is_the_budget_that_never_binds() {
    let run = |budget: Option<u64>| {
        let mut s = one_session(6);
        s.workload.arrival = ArrivalSpec::Poisson { rate_rps: 8.0 };
        s.workload.requests = Some(60);
        s.cluster.replicas = 3;
        s.cluster.router = RouterSpec::Sticky;
        s.workload.sessions.as_mut().unwrap().retention = RetentionSpec::Retain;
        s.engine.retention_budget_blocks = budget;
        simulate(&super::valid(&s)).sessions.unwrap()
    };
    let free = run(None);
    let peak = (free.kv.hbm_worker_peak_gb / (BLOCK_BYTES / 1e9)).round() as u64;
    let total = free.kv.hbm_peak_gb / (BLOCK_BYTES / 1e9);
    assert!(peak as f64 >= total / 3.0 - 1e-9 && peak as f64 <= total + 1e-9, "{peak} vs {total}");
    let at = run(Some(peak));
    assert_eq!((at.kv.pressure_evictions, free.kv.pressure_evictions), (0, 0));
    assert_eq!((at.turn_ttft_s.p95, at.reuse), (free.turn_ttft_s.p95, free.reuse));
    let below = run(Some(peak - 1));
    assert!(below.kv.pressure_evictions > 0 && below.reuse < free.reuse, "{:?}", below.kv);
}

/// Routing: sticky sends every later turn home; bounded affinity with a huge slack is sticky, byte for byte;
/// round robin scatters turns (lower locality, more recomputation). The router sees the same programs.
#[test]
fn affinity_routers_keep_turns_where_their_kv_is() {
    let run = |router: RouterSpec| {
        let mut s = one_session(6);
        s.workload.arrival = ArrivalSpec::Poisson { rate_rps: 8.0 };
        s.workload.requests = Some(60);
        s.cluster.replicas = 3;
        s.cluster.router = router;
        s.workload.sessions.as_mut().unwrap().retention = RetentionSpec::Retain;
        simulate(&super::valid(&s))
    };
    let sticky = run(RouterSpec::Sticky);
    let wide = run(RouterSpec::BoundedAffinity { slack_ms: 1e9 });
    assert_eq!(inferscale::export::json(&sticky), inferscale::export::json(&wide));
    let rr = run(RouterSpec::RoundRobin);
    let tight = run(RouterSpec::BoundedAffinity { slack_ms: 0.0 });
    let (s, r, t) = (sticky.sessions.unwrap(), rr.sessions.unwrap(), tight.sessions.unwrap());
    assert_eq!(s.kv.route_locality, 1.0);
    assert!(r.kv.route_locality < 0.6 && t.kv.route_locality < 1.0, "{} {}", r.kv.route_locality, t.kv.route_locality);
    assert!(s.recomputed_history_tokens < r.recomputed_history_tokens);
    assert_eq!(s.history_tokens, r.history_tokens, "the same programs");
}

/// What the new fields refuse, each at its field.
#[test]
fn session_kv_fields_refuse_bad_input_at_their_field() {
    let paths = |s: &Spec| {
        inferscale::scenario::validate(s)
            .map(|_| vec![])
            .unwrap_or_else(|e| e.errors.into_iter().map(|f| f.path).collect::<Vec<_>>())
    };
    let mut s = with(RetentionSpec::HostOffload);
    assert_eq!(paths(&s), ["workload.sessions.retention"]);
    for (bw, cap, lat, path) in [
        (0.0, 1.0, 0.0, "bandwidth_gbps"),
        (-1.0, 1.0, 0.0, "bandwidth_gbps"),
        (1e308, 1.0, 0.0, "bandwidth_gbps"),
        (1e-300, 1.0, 0.0, "bandwidth_gbps"),
        (1.0, 0.0, 0.0, "capacity_gb"),
        (1.0, f64::NAN, 0.0, "capacity_gb"),
        (1.0, 1.0, -1.0, "latency_ms"),
    ] {
        s.engine.host_kv = Some(HostKvSpec { capacity_gb: cap, bandwidth_gbps: bw, latency_ms: lat });
        assert_eq!(paths(&s), [format!("engine.host_kv.{path}")]);
    }
    for t in [-1.0, 1e300, f64::NAN] {
        assert_eq!(paths(&with(RetentionSpec::Ttl { ttl_s: Some(t) })), ["workload.sessions.retention.ttl_s"]);
    }
    let mut s = with(RetentionSpec::Retain);
    s.cluster.router = RouterSpec::BoundedAffinity { slack_ms: -1.0 };
    assert_eq!(paths(&s), ["cluster.router.slack_ms"]);
    s.cluster.router = RouterSpec::CentralQueue;
    host(&mut s, 10.0, 0.0);
    assert_eq!(paths(&s), ["cluster.router"]);
    let mut plain = super::small();
    plain.engine.retention_budget_blocks = Some(10);
    host(&mut plain, 10.0, 0.0);
    assert_eq!(paths(&plain), ["engine.host_kv", "engine.retention_budget_blocks"]);
    let mut s = with(RetentionSpec::Retain);
    s.engine.retention_budget_blocks = Some(1 << 41);
    assert_eq!(paths(&s), ["engine.retention_budget_blocks"]);
    let mut s = with(RetentionSpec::Retain);
    s.workload.sessions.as_mut().unwrap().slo = SessionSloSpec { turn_ttft_ms: Some(0.0), session_s: Some(-2.0) };
    assert_eq!(paths(&s), ["workload.sessions.slo.turn_ttft_ms", "workload.sessions.slo.session_s"]);
    assert!(inferscale::scenario::parse(r#"{"workload": {"arrival": {"kind": "poisson", "rate_rps": 1}, "requests": 1, "sessions": {"turns": {"kind": "fixed", "tokens": 2}, "first_tokens": {"kind": "fixed", "tokens": 10}, "new_tokens": {"kind": "fixed", "tokens": 10}, "output_tokens": {"kind": "fixed", "tokens": 10}, "retention": {"kind": "ttl", "ttl": 3}}}}"#).unwrap_err().to_string().contains("ttl_s"));
}

/// Session objectives: a turn TTFT objective between the hit and the miss separates retention from stateless.
#[test]
fn session_slo_attainment_counts_sessions_whose_every_turn_met_it() {
    let slo = |retention: RetentionSpec| {
        let mut s = with(retention);
        s.workload.sessions.as_mut().unwrap().slo = SessionSloSpec { turn_ttft_ms: Some(21.0), session_s: Some(10.0) };
        simulate(&super::valid(&s)).sessions.unwrap().slo_attainment
    };
    assert_eq!(slo(RetentionSpec::Retain), Some(1.0));
    assert_eq!(slo(RetentionSpec::Stateless), Some(0.0));
    assert_eq!(simulate(&super::valid(&with(RetentionSpec::Retain))).sessions.unwrap().slo_attainment, None);
}

fn traced(text: &str, format: SessionTraceFormat) -> Spec {
    let mut s = one_session(2);
    let x = s.workload.sessions.as_mut().unwrap();
    (x.turns, x.first_tokens, x.new_tokens, x.output_tokens, x.tools) = (None, None, None, None, vec![]);
    x.trace = Some(SessionTraceSpec { path: None, data: Some(text.into()), format });
    s
}

fn trace_errors(s: &Spec) -> Vec<(String, String)> {
    inferscale::scenario::validate(s)
        .err()
        .map(|e| e.errors.into_iter().map(|f| (f.path, f.message)).collect())
        .unwrap_or_default()
}

/// A synthetic run's sessions written out in our trace shape (arrivals, turns, tools) replay as the same
/// run: every turn's timing, every session figure. (Oracle predictors: a trace's length distribution is its
/// own, so a class-mean guess would differ.)
#[test]
fn a_session_trace_of_a_run_replays_that_run() {
    let mut s = one_session(6);
    s.workload.arrival = ArrivalSpec::Poisson { rate_rps: 3.0 };
    s.workload.requests = Some(30);
    s.estimator = EstimatorSpec { order: PredictorSpec::Oracle, reserve: PredictorSpec::Oracle };
    s.cluster.replicas = 2;
    s.cluster.router = RouterSpec::Sticky;
    let x = s.workload.sessions.as_mut().unwrap();
    x.retention = RetentionSpec::Retain;
    x.turns = Some(LengthSpec::Uniform { min: 1, max: 8 });
    x.output_tokens = Some(LengthSpec::Geometric { mean: 30.0, max: 200 });
    x.tools = vec![
        ToolSpec { name: "read".into(), weight: 3.0, mean_s: 0.2, cv: 1.5 },
        ToolSpec { name: "build".into(), weight: 1.0, mean_s: 2.0, cv: 3.0 },
    ];
    let sc = super::valid(&s);
    let rec = inferscale::engine::run(&sc);
    let first: Vec<u64> = rec.requests.iter().filter(|r| r.turn == 1).map(|r| r.arrival_ns).collect();
    let names = ["read", "build"];
    let mut text = String::new();
    for (p, t0) in rec.programs.iter().zip(&first) {
        let turns: Vec<serde_json::Value> = (0..p.new_tokens.len())
            .map(|k| match p.tools.get(k) {
                Some(&t) => serde_json::json!({"new_tokens": p.new_tokens[k], "output_tokens": p.output_tokens[k], "tool": names[t as usize], "tool_s": p.gaps_ns[k] as f64 / 1e9}),
                None => serde_json::json!({"new_tokens": p.new_tokens[k], "output_tokens": p.output_tokens[k]}),
            })
            .collect();
        text += &format!("{}\n", serde_json::json!({"id": text.len(), "arrival_s": *t0 as f64 / 1e9, "turns": turns}));
    }
    let mut t = traced(&text, SessionTraceFormat::Auto);
    (t.workload.requests, t.estimator, t.cluster) = (s.workload.requests, s.estimator.clone(), s.cluster.clone());
    t.workload.sessions.as_mut().unwrap().retention = RetentionSpec::Retain;
    let tsc = super::valid(&t);
    let (a, b) = (simulate(&sc), simulate(&tsc));
    // Arrivals are relative to the first session's; the synthetic run's first started at `first[0]`.
    let shift = |csv: &str, by: f64| {
        csv.lines()
            .skip(1)
            .map(|l| {
                let f: Vec<&str> = l.split(',').collect();
                (
                    format!("{:.6}", f[5].parse::<f64>().unwrap() - by),
                    f[7].to_string(),
                    f[8].to_string(),
                    f[10].to_string(),
                )
            })
            .collect::<Vec<_>>()
    };
    let (ca, cb) = (inferscale::export::requests_csv(&a, &sc), inferscale::export::requests_csv(&b, &tsc));
    assert_eq!(shift(&ca, first[0] as f64 / 1e9), shift(&cb, 0.0), "every turn's arrival, TTFT, E2E and prompt");
    let (sa, sb) = (a.sessions.unwrap(), b.sessions.unwrap());
    assert_eq!(
        (sa.turns, sa.history_tokens, sa.recomputed_history_tokens, sa.turn_ttft_s),
        (sb.turns, sb.history_tokens, sb.recomputed_history_tokens, sb.turn_ttft_s)
    );
    assert!(b.audits.ok && sb.audit.ok);
}

/// inference-lab's shape, with the quirks of real files (a byte-order mark, CRLF, a blank line, extra keys, a
/// numeric id, no `gap` or `kind`, a zero output, a session without steps), read as that simulator reads it;
/// and its two steps time exactly as our one session of two turns does.
#[test]
fn inference_lab_session_files_replay_with_their_quirks() {
    let text = std::fs::read_to_string(super::root().join("tests/data/sessions/inference-lab.jsonl")).unwrap();
    let mut s = traced(&text, SessionTraceFormat::Auto);
    s.workload.requests = Some(2);
    s.workload.sessions.as_mut().unwrap().retention = RetentionSpec::Retain;
    let rec = inferscale::engine::run(&super::valid(&s));
    assert_eq!(rec.programs.len(), 2, "the session without steps is dropped");
    assert_eq!(rec.programs[0].new_tokens, [1000, 200]);
    assert_eq!(rec.programs[0].gaps_ns, [1_000_000_000]);
    assert_eq!(rec.programs[1].output_tokens, [1, 7], "a zero output counts as one, as inference-lab reads it");
    // Session 17 alone: input 1000 then 1205 after a 1 s gap = our one_session(2) with retention.
    s.workload.requests = Some(1);
    let r = simulate(&super::valid(&s));
    let mut ours = one_session(2);
    ours.workload.sessions.as_mut().unwrap().retention = RetentionSpec::Retain;
    let o = simulate(&super::valid(&ours));
    assert_eq!(ttfts(&r), ttfts(&o));
    close(&ttfts(&r), &[0.020, 0.01213]);
    // A step whose input drops the history (the agent compacted it) finds nothing kept: 700 tokens recomputed.
    let compacted = std::fs::read_to_string(super::root().join("tests/data/sessions/compacted.jsonl")).unwrap();
    let mut c = traced(&compacted, SessionTraceFormat::InferenceLab);
    c.workload.sessions.as_mut().unwrap().retention = RetentionSpec::Retain;
    let r = simulate(&super::valid(&c));
    close(&ttfts(&r), &[0.020, 0.017]);
    let x = r.sessions.unwrap();
    assert_eq!((x.history_tokens, x.recomputed_history_tokens), (500, 500));
}

/// Malformed traces are refused at workload.sessions.trace with the line and the key; distributions given
/// beside a trace are refused at their field.
#[test]
fn malformed_session_traces_name_the_line_and_key() {
    let good = r#"{"id": "a", "turns": [{"new_tokens": 100, "output_tokens": 5, "tool": "t", "tool_s": 1}, {"new_tokens": 10, "output_tokens": 5}]}"#;
    for (text, want) in [
        (format!("{good}\n{{bad\n"), "line 2: not JSON"),
        ("[1, 2]\n".to_string(), "line 1: a session is a JSON object, got a list"),
        (r#"{"id": "a", "rounds": []}"#.to_string(), "line 1: neither `turns`"),
        (r#"{"id": "a", "turns": []}"#.to_string(), "line 1: `turns` is empty"),
        (r#"{"id": "a", "turns": [{"new_token": 100, "output_tokens": 5}]}"#.to_string(), "did you mean `new_tokens`?"),
        (r#"{"id": "a", "turns": [{"new_tokens": -3, "output_tokens": 5}]}"#.to_string(), "line 1: `turns[0]`: `new_tokens` must be a whole number of tokens"),
        (r#"{"id": "a", "turns": [{"new_tokens": 1e300, "output_tokens": 5}]}"#.to_string(), "`new_tokens` must be a whole number"),
        (r#"{"id": "a", "turns": [{"new_tokens": "many", "output_tokens": 5}]}"#.to_string(), "got text"),
        (r#"{"id": "a", "turns": [{"new_tokens": 100}]}"#.to_string(), "`output_tokens` is required"),
        (r#"{"id": "a", "turns": [{"new_tokens": 10, "output_tokens": 5, "tool_s": -1}, {"new_tokens": 1, "output_tokens": 1}]}"#.to_string(), "`tool_s` must be seconds, 0 … 1000000"),
        (format!("{}\n{good}\n", good.replace("{\"id\": \"a\",", "{\"id\": \"a\", \"arrival_s\": 3,")), "session 2 has no `arrival_s`"),
        (format!("{}\n{}\n", good.replace("{\"id\": \"a\",", "{\"id\": \"a\", \"arrival_s\": 3,"), good.replace("{\"id\": \"a\",", "{\"id\": \"b\", \"arrival_s\": 1,")), "goes back in time"),
        (r#"{"id": "a", "steps": [{"input": 10, "output": 1}]}"#.to_string(), "line 1: `steps[0]`: `new` is required"),
        (good.replace("{\"id\": \"a\",", "{\"id\": \"a\", \"arrival_s\": 1e300,"), "`arrival_s` must be seconds, 0 … 100000000"),
        (r#"{"id": "a", "steps": {"input": 10}}"#.to_string(), "`steps` must be a list"),
        (format!("{{\"id\": \"a\", \"turns\": [{}]}}", vec![r#"{"new_tokens": 1, "output_tokens": 1}"#; 10_001].join(",")), "at most 10000 a session"),
        (String::new(), "no session with a turn"),
    ] {
        let errs = trace_errors(&traced(&text, SessionTraceFormat::Auto));
        assert!(errs.iter().any(|(p, m)| p == "workload.sessions.trace" && m.contains(want)), "{want}: {errs:?}");
    }
    // Our shape read as inference-lab's is refused, not misread.
    let errs = trace_errors(&traced(good, SessionTraceFormat::InferenceLab));
    assert!(errs.iter().any(|(_, m)| m.contains("`steps` is required")), "{errs:?}");
    let mut both = traced(good, SessionTraceFormat::Auto);
    both.workload.sessions.as_mut().unwrap().turns = Some(LengthSpec::Fixed { tokens: 3 });
    assert!(
        trace_errors(&both)
            .iter()
            .any(|(p, m)| p == "workload.sessions.turns" && m.contains("comes from the session trace"))
    );
    let mut none = traced(good, SessionTraceFormat::Auto);
    none.workload.sessions.as_mut().unwrap().trace = None;
    assert!(
        trace_errors(&none).iter().any(|(p, m)| p == "workload.sessions.turns" && m.contains("required")),
        "{:?}",
        trace_errors(&none)
    );
    let mut huge =
        traced(r#"{"id": "a", "turns": [{"new_tokens": 90000000, "output_tokens": 5}]}"#, SessionTraceFormat::Auto);
    huge.workload.requests = Some(1);
    assert!(
        trace_errors(&huge)
            .iter()
            .any(|(p, m)| p == "workload.sessions.trace (line 1)" && m.contains("exceeds the KV capacity"))
    );
}

/// The shipped sample session trace runs from its path through the CLI, exit 0, with every audit.
#[test]
fn the_cli_reads_a_session_trace_by_path() {
    let dir = std::env::temp_dir().join(format!("inferscale-sessions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(super::root().join("scenarios/traces/sample-sessions.jsonl"), dir.join("s.jsonl")).unwrap();
    let mut spec = super::shipped("agent-sessions.json");
    let x = spec.workload.sessions.as_mut().unwrap();
    (x.turns, x.first_tokens, x.new_tokens, x.output_tokens, x.tools) = (None, None, None, None, vec![]);
    x.trace = Some(SessionTraceSpec { path: Some("s.jsonl".into()), data: None, format: SessionTraceFormat::Auto });
    spec.workload.requests = Some(1000);
    std::fs::write(dir.join("scenario.json"), serde_json::to_string(&spec).unwrap()).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_inferscale"))
        .args(["run", "scenario.json", "--format", "json"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["sessions"]["sessions"], 24, "every session of the trace, once (it has arrival times)");
    assert_eq!(r["sessions"]["turns"], 215);
    assert_eq!(r["audits"]["ok"], true);
    std::fs::remove_dir_all(&dir).ok();
}

/// Sessions with a shared system prompt (`prefix` groups): every turn of a session starts with its first
/// turn's prefix, shared across sessions in the prefix cache; the session's retained history is what follows
/// it. Exact on the linear cost (a 1000-token first prompt, 512 shared, 200 new and 5 out a turn).
#[test]
fn sessions_share_a_system_prompt_across_sessions() {
    let prefixed = |retention: RetentionSpec, sessions: u64| {
        let mut s = with(retention);
        s.prefix = Some(PrefixSpec { prefix_tokens: 512, reuse_fraction: 1.0, groups: 1, zipf_s: 1.0, caching: true });
        s.workload.requests = Some(sessions);
        s
    };
    // Stateless: turn 1 computes its whole prompt (20 ms); later turns find the prefix and compute the rest,
    // 10 + (1205 − 512) × 0.01 = 16.93 ms and 10 + (1410 − 512) × 0.01 = 18.98 ms.
    let r = simulate(&super::valid(&prefixed(RetentionSpec::Stateless, 1)));
    close(&ttfts(&r), &[0.020, 0.01693, 0.01898]);
    let (x, p) = (r.sessions.as_ref().unwrap(), r.prefix.as_ref().unwrap());
    assert_eq!(
        (x.history_tokens, x.recomputed_history_tokens),
        (2215, 2215 - 2 * 512),
        "the prefix is history a later turn does not recompute"
    );
    assert_eq!((x.kv.miss_rate, x.kv.hbm_hit_rate), (1.0, 0.0), "a hit is history found past the prefix");
    assert_eq!((p.lookups, p.hits, p.prefill_tokens_saved), (3, 2, 1024));
    assert!(r.audits.ok && x.audit.ok);
    assert_eq!(
        (x.kv.hbm_peak_gb, p.shared_kv_peak_blocks),
        (0.0, 32),
        "the idle prefix is the prefix cache's, not retained history"
    );
    // A retention budget of 0 is sessions': the prefix stays cached, so retain times as stateless.
    let mut s = prefixed(RetentionSpec::Retain, 1);
    s.engine.retention_budget_blocks = Some(0);
    close(&ttfts(&simulate(&super::valid(&s))), &[0.020, 0.01693, 0.01898]);
    // Retain: the prefix and the history after it (62 − 32 blocks) are found — the turn times of a session
    // without a prefix.
    let r = simulate(&super::valid(&prefixed(RetentionSpec::Retain, 1)));
    close(&ttfts(&r), &[0.020, 0.01213, 0.01210]);
    let x = r.sessions.as_ref().unwrap();
    assert_eq!((x.kv.hbm_hit_rate, x.recomputed_history_tokens), (1.0, 2215 - 992 - 1200));
    assert_eq!(r.prefix.as_ref().unwrap().prefill_tokens_saved, 1024, "the prefix part of what later turns found");
    assert_eq!(r.prefix.as_ref().unwrap().shared_kv_peak_blocks, 32);
    assert!(
        (x.kv.hbm_peak_gb - 43.0 * BLOCK_BYTES / 1e9).abs() < 1e-12,
        "the history after the prefix: {}",
        x.kv.hbm_peak_gb
    );
    // Host offload: only the history after the prefix crosses the link (30 and 43 blocks, not 62 and 75).
    let mut s = prefixed(RetentionSpec::HostOffload, 1);
    host(&mut s, 10.0, 1.0);
    let r = simulate(&super::valid(&s));
    close(
        &ttfts(&r),
        &[0.020, 30.0 * BLOCK_BYTES / 10e9 + 0.001 + 0.01213, 43.0 * BLOCK_BYTES / 10e9 + 0.001 + 0.01210],
    );
    assert!((r.sessions.as_ref().unwrap().kv.restore_gb - 73.0 * BLOCK_BYTES / 1e9).abs() < 1e-9);
    // Two sessions a second apart: the second's first turn finds the prefix the first one cached,
    // 10 + (1000 − 512) × 0.01 = 14.88 ms.
    let rec = inferscale::engine::run(&super::valid(&prefixed(RetentionSpec::Retain, 2)));
    let first: Vec<u64> =
        rec.requests.iter().filter(|q| q.turn == 1).map(|q| q.first_token_ns - q.arrival_ns).collect();
    assert_eq!(first, [20_000_000, 14_880_000]);
    // Without prefix caching the same requests recompute every prefix: the stateless figures of no prefix.
    let mut off = prefixed(RetentionSpec::Stateless, 1);
    off.prefix.as_mut().unwrap().caching = false;
    close(&ttfts(&simulate(&super::valid(&off))), &[0.020, 0.02205, 0.02410]);
}

/// A turn waiting on a host restore is its replica's load, and the history the restore brings back is that
/// turn's working KV, not idle retention. Session A's second turn waits 130 ms on its worker's 1 GB/s link when
/// session B starts: the router sends B to the other, empty worker. Under host offload no history is ever idle
/// in HBM — not even the restored one waiting in the queue — so the retained HBM is 0 throughout.
#[test]
fn a_turn_waiting_on_its_restore_is_load_and_its_history_is_not_idle() {
    let mut s = with(RetentionSpec::HostOffload);
    host(&mut s, 1.0, 0.0);
    s.workload.requests = Some(2);
    s.workload.arrival = ArrivalSpec::Constant { rate_rps: 1.0 / 1.1 };
    s.cluster.replicas = 2;
    s.cluster.router = RouterSpec::Sticky;
    let sc = super::valid(&s);
    let rec = inferscale::engine::run(&sc);
    let at = |session: u32, turn: u16| rec.requests.iter().find(|r| r.session == session && r.turn == turn).unwrap();
    let (a2, b1) = (at(0, 2), at(1, 1));
    let send = (62.0 * BLOCK_BYTES / 1.0).round() as u64; // ns at 1 byte/ns
    assert!(b1.arrival_ns > a2.arrival_ns && b1.arrival_ns < a2.arrival_ns + send, "B starts during A's restore");
    assert_eq!((at(0, 1).replica, a2.replica, b1.replica), (0, 0, 1));
    let r = simulate(&sc);
    let x = r.sessions.as_ref().unwrap();
    assert_eq!(x.kv.restores, 4);
    assert_eq!((x.kv.hbm_peak_gb, x.kv.hbm_mean_gb), (0.0, 0.0));
    assert!(r.audits.ok && x.audit.ok, "{:?} {:?}", r.audits, x.audit);
}
