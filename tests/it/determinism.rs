//! Determinism and common random numbers.

use inferscale::export;
use inferscale::scenario::{RouterSpec, SchedulerSpec};

#[test]
fn same_seed_gives_identical_bytes_and_seeds_differ() {
    let spec = super::shipped("default.json");
    let a = export::json(&inferscale::simulate(&super::valid(&spec)));
    let b = export::json(&inferscale::simulate(&super::valid(&spec)));
    assert_eq!(a, b);
    let mut other = spec.clone();
    other.seed += 1;
    let c = export::json(&inferscale::simulate(&super::valid(&other)));
    assert_ne!(a, c);
}

#[test]
fn golden_values_pin_the_default_scenario() {
    // Pinned so that an unintended change to any random stream or the engine shows up. Update deliberately.
    let r = inferscale::simulate(&super::valid(&super::shipped("default.json")));
    let first = &r.requests[0];
    let last = r.requests.last().unwrap();
    println!("first {first:?}\nlast {last:?}\nsummary p95 ttft {}", r.summary.ttft_s.p95);
    assert_eq!(r.summary.requests, 2000);
    assert_eq!((first.prompt_tokens, first.output_tokens), GOLDEN_FIRST);
    assert_eq!(last.arrival_ns, GOLDEN_LAST_ARRIVAL_NS);
}

const GOLDEN_FIRST: (u32, u32) = (564, 29);
const GOLDEN_LAST_ARRIVAL_NS: u64 = 505_662_706_899;

#[test]
fn policies_see_the_same_requests() {
    let base = super::shipped("chat-70b-h100-tp4.json");
    let mut variants = vec![base.clone()];
    for sched in
        [SchedulerSpec::Fcfs, SchedulerSpec::Sjf, SchedulerSpec::Edf, SchedulerSpec::Drr { quantum_tokens: 512 }]
    {
        let mut s = base.clone();
        s.scheduler = sched;
        variants.push(s);
    }
    for router in [
        RouterSpec::RoundRobin,
        RouterSpec::Random,
        RouterSpec::PowerOfTwo,
        RouterSpec::LeastKv,
        RouterSpec::CentralQueue,
    ] {
        let mut s = base.clone();
        s.cluster.router = router;
        variants.push(s);
    }
    let key = |s: &inferscale::Spec| -> Vec<(u64, u32, u32, u16, u16, u32, u32)> {
        let r = inferscale::simulate(&super::valid(s));
        r.requests
            .iter()
            .map(|q| {
                (
                    q.arrival_ns,
                    q.prompt_tokens,
                    q.output_tokens,
                    q.class,
                    q.tenant,
                    q.pred_order_tokens,
                    q.pred_reserve_tokens,
                )
            })
            .collect()
    };
    let reference = key(&variants[0]);
    assert_eq!(reference.len(), 6000);
    let mut outcomes = std::collections::BTreeSet::new();
    for v in &variants[1..] {
        assert_eq!(key(v), reference, "{:?} / {:?} changed the requests", v.scheduler, v.cluster.router);
        outcomes.insert(inferscale::export::json(&inferscale::simulate(&super::valid(v))));
    }
    assert!(outcomes.len() > 5, "the policies should change the outcome");
}

/// The lab's latency CDFs (computed by the report while its latencies are sorted) are those of the completed
/// requests' records: a point at fraction k/n sits at the k-th smallest latency, and the last is at 1.
#[test]
fn latency_cdfs_are_those_of_the_completed_requests() {
    use inferscale::metrics::Outcome;
    fn check(what: &str, cdf: &[(f64, f64)], mut v: Vec<f64>) {
        v.sort_unstable_by(f64::total_cmp);
        let n = v.len();
        assert_eq!(cdf.is_empty(), n == 0, "{what}");
        assert!(cdf.len() <= inferscale::export::CDF_POINTS + 1, "{what}");
        for &(x, f) in cdf {
            let k = (f * n as f64).round() as usize;
            assert!((1..=n).contains(&k) && k as f64 / n as f64 == f, "{what}: fraction {f}");
            assert_eq!(x, v[k - 1], "{what}: point {k} of {n}");
        }
        assert!(n == 0 || cdf.last().unwrap().1 == 1.0, "{what}");
    }
    for name in super::shipped_names() {
        let sc = inferscale::scenario::validate(&super::shipped(&name)).unwrap();
        let r = inferscale::simulate(&sc);
        let done = || r.requests.iter().filter(|q| q.outcome == Outcome::Completed);
        let c = inferscale::export::latency_cdfs(&r);
        let s = |ns: u64| ns as f64 / 1e9;
        check(&format!("{name} TTFT"), &c.ttft, done().map(|q| s(q.first_token_ns - q.arrival_ns)).collect());
        check(&format!("{name} E2E"), &c.e2e, done().map(|q| s(q.done_ns - q.arrival_ns)).collect());
        let tpot = done()
            .filter(|q| q.output_tokens > 1)
            .map(|q| (q.done_ns - q.first_token_ns) as f64 / (q.output_tokens - 1) as f64 / 1e9);
        check(&format!("{name} TPOT"), &c.tpot, tpot.collect());
    }
}
