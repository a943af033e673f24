//! Closed forms in degenerate configurations (batch 1, linear cost, one output token). Tolerances and their
//! justification are in `inferscale::queueing::checks`: 4 seeds × 200,000 requests, 3 % (≥ 7 standard errors).

use inferscale::queueing;

#[test]
fn engine_matches_queueing_closed_forms() {
    let checks = queueing::checks(1.0);
    for c in &checks {
        println!("{:<40} simulated {:>10.5} analytic {:>10.5} rel.err {:.4} (tol {})", c.name, c.simulated, c.analytic, c.relative_error, c.tolerance);
    }
    let names: Vec<&str> = checks.iter().map(|c| c.name.as_str()).collect();
    for want in ["M/D/1 rho=0.5", "M/D/1 rho=0.8", "M/G/1 (uniform service) rho=0.5", "M/G/1 (uniform service) rho=0.8", "M/M/2", "M/M/4", "M/M/8"] {
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
