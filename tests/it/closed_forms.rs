//! Closed forms in degenerate configurations (batch 1, linear cost, one output token). Tolerances and their
//! justification are in `inferscale::queueing::checks`: 4 seeds × 200,000 requests, 3 % (≥ 7 standard errors).

use inferscale::queueing;

#[test]
fn engine_matches_queueing_closed_forms() {
    let checks = queueing::checks(1.0);
    for c in &checks {
        println!(
            "{:<40} simulated {:>10.5} analytic {:>10.5} rel.err {:.4} (tol {})",
            c.name, c.simulated, c.analytic, c.relative_error, c.tolerance
        );
    }
    let names: Vec<&str> = checks.iter().map(|c| c.name.as_str()).collect();
    for want in [
        "M/D/1 rho=0.5",
        "M/D/1 rho=0.8",
        "M/G/1 (uniform service) rho=0.5",
        "M/G/1 (uniform service) rho=0.8",
        "M/M/2",
        "M/M/4",
        "M/M/8",
    ] {
        assert!(names.iter().any(|n| n.starts_with(want)), "missing check {want}");
    }
    for c in &checks {
        assert!(c.pass, "{} off by {:.2} % (tolerance {} %)", c.name, c.relative_error * 100.0, c.tolerance * 100.0);
        assert_eq!(c.requests, 800_000);
    }
}

#[test]
fn round_robin_is_not_mmc_and_random_is_c_mm1() {
    // Random routing over c servers is c independent M/M/1 queues at the same ρ: Wq = ρ/(μ − λ/c) = 4 s at ρ 0.8.
    let geometric = inferscale::scenario::LengthSpec::Geometric { mean: 1000.0, max: 1_000_000 };
    let mut spec = queueing::queue_spec(3.2, 4, geometric, 100_000, 9);
    spec.cluster.router = inferscale::scenario::RouterSpec::Random;
    let r = inferscale::simulate(&super::valid(&spec));
    let wq = r.summary.queue_delay_s.mean;
    assert!((wq / 3.998 - 1.0).abs() < 0.08, "random routing Wq {wq}, expected ≈ 4 (c × M/M/1)");
    // The central queue (M/M/4) waits far less: 0.7455 s.
    spec.cluster.router = inferscale::scenario::RouterSpec::CentralQueue;
    let central = inferscale::simulate(&super::valid(&spec)).summary.queue_delay_s.mean;
    assert!(central < wq / 3.0, "central {central} vs random {wq}");
}

/// A closed loop of N clients (think time Z, exponential) in front of one server of exponential-like
/// service S: exact mean-value analysis gives the throughput. One request at a time (max_num_seqs 1), every
/// step 1 ms (linear cost), a 1-token prompt and geometric outputs of mean 20 — so S is geometric in ms
/// (CV 0.97, nearly exponential). And at no instant are more than N requests in the system.
#[test]
fn a_closed_loop_matches_mean_value_analysis_and_never_holds_more_than_its_clients() {
    use inferscale::scenario::{ArrivalSpec, CostSpec, LengthSpec};
    let (n_clients, think_ms, service_ms) = (4u32, 50.0, 20.0);
    let mut s = super::shipped("default.json");
    s.workload.arrival = ArrivalSpec::ClosedLoop { clients: n_clients, think_s: think_ms / 1e3 };
    s.workload.requests = Some(20_000);
    s.workload.classes.truncate(1);
    s.workload.classes[0].prompt_tokens = LengthSpec::Fixed { tokens: 1 };
    s.workload.classes[0].output_tokens = LengthSpec::Geometric { mean: service_ms, max: 16384 };
    s.cost = CostSpec::Linear { base_ms: 1.0, per_seq_ms: 0.0, per_prefill_token_ms: 0.0, per_kv_token_ms: 0.0 };
    s.engine.max_num_seqs = 1;
    let sc = super::valid(&s);
    let r = inferscale::simulate(&sc);
    assert_eq!(r.summary.completed, 20_000);
    assert!(r.audits.ok, "{:?}", r.audits);
    // Exact MVA for an FCFS exponential server and an infinite-server think station.
    let mut q = 0.0;
    let mut x = 0.0;
    for n in 1..=n_clients {
        let resp = service_ms * (1.0 + q);
        x = n as f64 / (think_ms + resp);
        q = x * resp;
    }
    let mva_rps = x * 1e3;
    let got = r.summary.throughput_rps;
    assert!((got / mva_rps - 1.0).abs() < 0.03, "throughput {got:.2} req/s, MVA {mva_rps:.2} req/s");
    println!(
        "closed loop of {n_clients}: {got:.2} req/s, MVA {mva_rps:.2} req/s ({:+.2} %)",
        (got / mva_rps - 1.0) * 100.0
    );
    // In system at once: every arrival +1, every end −1, ends first at equal times.
    let mut events: Vec<(u64, i32)> = r.requests.iter().flat_map(|q| [(q.arrival_ns, 1), (q.done_ns, -1)]).collect();
    events.sort();
    let peak = events.iter().scan(0, |n, e| {
        *n += e.1;
        Some(*n)
    });
    assert_eq!(peak.max(), Some(n_clients as i32));
}

/// Think time 0 is vLLM's client at `request_rate inf` under `max_concurrency`: the server never idles while
/// requests remain; a burst sends every request at t = 0; both send the open loop's requests (same lengths, in
/// the same order) on one seed.
#[test]
fn closed_loops_without_think_time_and_bursts_send_the_same_requests() {
    use inferscale::scenario::ArrivalSpec;
    let mut s = super::shipped("default.json");
    s.workload.requests = Some(300);
    let open = inferscale::simulate(&super::valid(&s));
    let lengths_by_id = |r: &inferscale::Report| {
        let mut v: Vec<(u32, u32, u32)> = r.requests.iter().map(|q| (q.id, q.prompt_tokens, q.output_tokens)).collect();
        v.sort();
        v.into_iter().map(|(_, p, o)| (p, o)).collect::<Vec<_>>()
    };
    let want = lengths_by_id(&open);
    s.workload.arrival = ArrivalSpec::ClosedLoop { clients: 8, think_s: 0.0 };
    let closed = inferscale::simulate(&super::valid(&s));
    assert_eq!(lengths_by_id(&closed), want);
    assert_eq!(closed.summary.completed, 300);
    assert_eq!(closed.requests.iter().filter(|q| q.arrival_ns == 0).count(), 8, "one request per client at t = 0");
    s.workload.arrival = ArrivalSpec::Burst {};
    let burst = inferscale::simulate(&super::valid(&s));
    assert_eq!(lengths_by_id(&burst), want);
    assert!(burst.requests.iter().all(|q| q.arrival_ns == 0));
    // A burst without a count is refused at the field.
    s.workload.requests = None;
    s.workload.duration_s = Some(10.0);
    assert_eq!(inferscale::scenario::validate(&s).unwrap_err().errors[0].path, "workload.requests");
}

/// Sustained capacity (`inferscale::capacity`) against the closed forms: a queue's capacity is μ·c, and a
/// batching server on the linear cost model serves at most B ÷ (L × (base + per_seq × B)) — a full batch of B
/// decodes, each request L steps. 4 seeds × 200,000 requests, each seed's bracket closed to 0.25 %: the mean
/// within 1 % of the closed form, every seed within 2 % (the stability test's tolerance puts the boundary up to
/// 0.5 % above it on long runs; docs/metrics.md, "Stability").
#[test]
fn sustained_capacity_matches_the_closed_forms() {
    use inferscale::capacity::{Options, sustained};
    use inferscale::scenario::{CostSpec, LengthSpec};
    let geometric = || LengthSpec::Geometric { mean: 1000.0, max: 1_000_000 };
    let batched = |b: u32, l: u32| {
        let mut s = queueing::queue_spec(5.0, 1, LengthSpec::Fixed { tokens: 1 }, 200_000, 1);
        s.workload.classes[0].output_tokens = LengthSpec::Fixed { tokens: l };
        s.engine.max_num_seqs = b;
        s.cost = CostSpec::Linear { base_ms: 10.0, per_seq_ms: 0.1, per_prefill_token_ms: 0.0, per_kv_token_ms: 0.0 };
        (s, b as f64 / (l as f64 * (10.0 + 0.1 * b as f64) / 1e3))
    };
    let cases = [
        ("M/D/1", (queueing::queue_spec(0.9, 1, LengthSpec::Fixed { tokens: 1000 }, 200_000, 1), 1.0)),
        ("M/M/1", (queueing::queue_spec(0.9, 1, geometric(), 200_000, 1), 1.0)),
        ("M/M/4", (queueing::queue_spec(3.6, 4, geometric(), 200_000, 1), 4.0)),
        ("linear cost, batch 16, 100 tokens", batched(16, 100)),
    ];
    let o = Options { seeds: 4, precision: 0.0025, max_tries: 30 };
    for (name, (spec, analytic)) in cases {
        let c = sustained(&spec, &o).unwrap();
        let err = c.mean_rps / analytic - 1.0;
        println!("{name:<34} sustained {} analytic {analytic:.4} ({:+.2} %)", c.words("req/s"), err * 100.0);
        assert!(err.abs() < 0.01, "{name}: {} against {analytic}", c.mean_rps);
        for x in &c.per_seed_rps {
            assert!((x / analytic - 1.0).abs() < 0.02, "{name}: a seed's {x} against {analytic}");
        }
        assert_eq!(c.unconverged, 0, "{name}: every seed's bracket closed");
        assert!(c.lo_rps <= c.mean_rps && c.mean_rps <= c.hi_rps);
    }
}
