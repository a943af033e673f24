//! Prefill/decode disaggregation and shared-prefix caching, against exact expectations.

use inferscale::export;
use inferscale::scenario::{self, *};

use super::{small, valid};

/// Llama-3-8B's KV per token: 2 (K, V) × 32 layers × 8 KV heads × 128 dims × 2 bytes.
const KV_BYTES_PER_TOKEN: f64 = 131_072.0;

fn disaggregate(s: &mut Spec, prefill: u32, decode: u32, link: LinkSpec) {
    s.cluster.disaggregation = Some(DisaggSpec {
        prefill: PoolSpec { replicas: prefill, device: None, tp: None, router: RouterSpec::RoundRobin },
        decode: PoolSpec { replicas: decode, device: None, tp: None, router: RouterSpec::RoundRobin },
        link,
    });
}

fn link(bandwidth_gbps: f64, latency_ms: f64, topology: LinkTopology) -> LinkSpec {
    LinkSpec { bandwidth_gbps, latency_ms, topology }
}

/// Requests from a Vidur-shape trace: (arrival s, prompt, output).
fn traced(rows: &[(f64, u32, u32)]) -> Spec {
    let mut s = small();
    let mut data = String::from("arrived_at,num_prefill_tokens,num_decode_tokens\n");
    for (t, p, o) in rows {
        data.push_str(&format!("{t},{p},{o}\n"));
    }
    s.workload.arrival = ArrivalSpec::Trace {
        path: None,
        data: Some(data.into()),
        format: TraceFormat::Auto,
        time_scale: 1.0,
        reuse_hash_ids: true,
        hash_block_tokens: 512,
    };
    s.workload.requests = None;
    s
}

/// (handoff → arrival at decode) of each transferred request, ns, in request order.
fn transfer_ns(r: &inferscale::metrics::Report) -> Vec<u64> {
    r.requests.iter().filter(|q| q.handoff_ns != u64::MAX).map(|q| q.first_token_ns - q.handoff_ns).collect()
}

#[test]
fn an_isolated_transfer_takes_bytes_over_bandwidth_plus_latency() {
    let mut s = traced(&[(0.0, 1000, 10)]);
    disaggregate(&mut s, 1, 1, link(2.5, 0.3, LinkTopology::PerPair));
    let r = inferscale::simulate(&valid(&s));
    let bytes = 1000.0 * KV_BYTES_PER_TOKEN;
    let expected = (bytes / 2.5).round() as u64 + 300_000; // bytes ÷ (bytes/ns) + 0.3 ms
    assert_eq!(expected, 52_728_800);
    assert_eq!(transfer_ns(&r), vec![expected]);
    let t = r.transfer.as_ref().unwrap();
    assert_eq!(t.bytes, bytes as u64);
    assert_eq!(r.summary.completed, 1);
    // The first token reaches the user with the KV: TTFT = prefill end + transfer.
    let q = &r.requests[0];
    assert_eq!(q.first_token_ns, q.handoff_ns + expected);
}

#[test]
fn simultaneous_transfers_serialize_on_one_link_and_not_on_separate_ones() {
    // Two prompts at once: the prefill worker runs them in consecutive steps, and each transfer (0.5 GB/s:
    // 262 ms) outlasts the gap between the handoffs, so they overlap in time.
    let rows = [(0.0, 1000, 10), (0.0, 1000, 10)];
    let send = (1000.0 * KV_BYTES_PER_TOKEN / 0.5).round() as u64;
    let lat = 300_000;
    let handoffs = |r: &inferscale::metrics::Report| (r.requests[0].handoff_ns, r.requests[1].handoff_ns);
    // One shared link: the second transfer waits until the first has left the link.
    let mut s = traced(&rows);
    disaggregate(&mut s, 1, 2, link(0.5, 0.3, LinkTopology::Shared));
    let r = inferscale::simulate(&valid(&s));
    let (h0, h1) = handoffs(&r);
    assert!(h0 < h1 && h1 < h0 + send, "the transfers overlap in time");
    assert_eq!(transfer_ns(&r), vec![send + lat, (h0 + send - h1) + send + lat]);
    // A link per (prefill, decode) pair and round-robin decode routing: side by side.
    let mut s = traced(&rows);
    disaggregate(&mut s, 1, 2, link(0.5, 0.3, LinkTopology::PerPair));
    let r = inferscale::simulate(&valid(&s));
    assert_eq!(handoffs(&r), (h0, h1));
    assert_eq!(transfer_ns(&r), vec![send + lat, send + lat]);
    // Per pair, but one decode worker: a single link again.
    let mut s = traced(&rows);
    disaggregate(&mut s, 1, 1, link(0.5, 0.3, LinkTopology::PerPair));
    let r = inferscale::simulate(&valid(&s));
    assert_eq!(transfer_ns(&r), vec![send + lat, (h0 + send - h1) + send + lat]);
}

#[test]
fn with_a_free_link_pd_ttft_is_prefill_queueing_plus_prefill() {
    // P/D with an effectively infinite, zero-latency link and decode workers with KV to spare…
    let mut pd = small();
    pd.workload.requests = Some(300);
    pd.workload.arrival = ArrivalSpec::Poisson { rate_rps: 3.0 };
    pd.estimator = EstimatorSpec { order: PredictorSpec::Oracle, reserve: PredictorSpec::Oracle };
    for c in &mut pd.workload.classes {
        c.output_tokens = LengthSpec::Fixed { tokens: 40 };
    }
    let mut reference = pd.clone();
    disaggregate(&mut pd, 1, 4, link(1e12, 0.0, LinkTopology::Shared));
    // …against the same prompts served by one colocated worker that stops at the first token: exactly the
    // prefill worker's work (same prompts and arrivals; a fixed output length draws nothing).
    for c in &mut reference.workload.classes {
        c.output_tokens = LengthSpec::Fixed { tokens: 1 };
    }
    let (a, b) = (inferscale::simulate(&valid(&pd)), inferscale::simulate(&valid(&reference)));
    assert!(a.transfer.as_ref().unwrap().latency_s.max == 0.0);
    assert_eq!(a.summary.preemptions, 0);
    let ttft = |r: &inferscale::metrics::Report| {
        r.requests.iter().map(|q| q.first_token_ns - q.arrival_ns).collect::<Vec<_>>()
    };
    assert_eq!(ttft(&a), ttft(&b));
    // And that is queueing (arrival → first scheduled) + prefill (first scheduled → first token).
    for q in &a.requests {
        assert_eq!(
            q.first_token_ns - q.arrival_ns,
            (q.first_scheduled_ns - q.arrival_ns) + (q.first_token_ns - q.first_scheduled_ns)
        );
        assert!(q.first_scheduled_ns >= q.arrival_ns && q.first_token_ns > q.first_scheduled_ns);
    }
    assert!(a.summary.ttft_s.p95 > 0.0);
}

#[test]
fn prefix_reuse_off_is_byte_identical_to_no_prefix_feature() {
    for pd in [false, true] {
        let mut base = small();
        if pd {
            disaggregate(&mut base, 1, 2, link(25.0, 0.1, LinkTopology::PerPair));
        }
        let plain = export::json(&inferscale::simulate(&valid(&base)));
        for (tokens, reuse) in [(512, 0.0), (0, 0.7), (8, 0.7)] {
            let mut s = base.clone();
            s.prefix = Some(PrefixSpec {
                prefix_tokens: tokens,
                reuse_fraction: reuse,
                groups: 3,
                zipf_s: 1.0,
                caching: true,
            });
            assert_eq!(
                export::json(&inferscale::simulate(&valid(&s))),
                plain,
                "pd {pd}, prefix {tokens} tokens at {reuse}"
            );
        }
    }
}

fn prefixed(reuse: f64, groups: u32, n: u64) -> Spec {
    let mut s = small();
    s.workload.requests = Some(n);
    s.workload.arrival = ArrivalSpec::Poisson { rate_rps: 2.0 };
    for c in &mut s.workload.classes {
        c.prompt_tokens = LengthSpec::Uniform { min: 1500, max: 2500 };
    }
    s.prefix = Some(PrefixSpec { prefix_tokens: 1024, reuse_fraction: reuse, groups, zipf_s: 1.0, caching: true });
    s
}

#[test]
fn cache_hit_rate_matches_the_reuse_fraction_and_saves_hits_times_prefix() {
    let n = 4000;
    for (reuse, groups, pd) in [(0.4, 1, false), (0.8, 20, false), (0.5, 4, true)] {
        let mut s = prefixed(reuse, groups, n);
        if pd {
            disaggregate(&mut s, 2, 2, link(25.0, 0.1, LinkTopology::PerPair));
        }
        let workers = if pd { 2 } else { 1 };
        let r = inferscale::simulate(&valid(&s));
        let p = r.prefix.as_ref().expect("a prefix summary");
        // Sampling: the fraction of requests drawn with a prefix is Binomial(n, reuse)/n; 4σ.
        let sigma = (reuse * (1.0 - reuse) / n as f64).sqrt();
        let carried = p.requests_with_prefix as f64 / n as f64;
        assert!((carried - reuse).abs() < 4.0 * sigma, "reuse {reuse}: {carried} carried a prefix");
        // Every carrier hits except the first few of each group on each worker — those that arrive before
        // the first one's prefill is done (nothing is evicted at this light load): hit rate = reuse − cold/n.
        let cold = p.requests_with_prefix - p.hits;
        assert!(cold >= 1 && cold <= 5 * (groups as u64) * workers, "reuse {reuse}: {cold} misses");
        assert!(
            (p.hit_rate - reuse).abs() < 4.0 * sigma + cold as f64 / n as f64,
            "hit rate {} vs {reuse}",
            p.hit_rate
        );
        assert_eq!(p.prefill_tokens_saved, p.hits * 1024, "saved = hits × prefix length");
        assert_eq!(p.evictions, 0);
        assert!(p.shared_kv_peak_blocks >= 64 && p.shared_kv_peak_blocks <= 64 * groups as u64 * workers);
        assert!(r.audits.ok, "{:?}", r.audits);
        // The same requests without caching compute exactly the saved tokens more.
        let mut off = s.clone();
        off.prefix.as_mut().unwrap().caching = false;
        let r_off = inferscale::simulate(&valid(&off));
        assert_eq!(r.summary.preemptions + r_off.summary.preemptions, 0);
        assert_eq!(r_off.engine.prefill_tokens - r.engine.prefill_tokens, p.prefill_tokens_saved);
        assert!(r.summary.ttft_s.mean < r_off.summary.ttft_s.mean, "hits make prefill shorter");
        let r_off_prefix = r_off.prefix.as_ref().unwrap();
        assert_eq!(
            (r_off_prefix.hits, r_off_prefix.requests_with_prefix),
            (0, p.requests_with_prefix),
            "same requests"
        );
    }
}

#[test]
fn cached_prefixes_yield_to_running_requests_under_kv_pressure() {
    // Many prefixes and little KV: the cache must give blocks back rather than preempt or stall.
    let mut s = prefixed(0.9, 400, 1500);
    s.workload.arrival = ArrivalSpec::Poisson { rate_rps: 6.0 };
    s.prefix.as_mut().unwrap().zipf_s = 0.0;
    s.engine.kv_capacity_tokens = Some(60_000);
    let r = inferscale::simulate(&valid(&s));
    let p = r.prefix.as_ref().unwrap();
    assert!(p.evictions > 50, "evictions {}", p.evictions);
    assert!(p.hits > 0);
    assert_eq!(r.audits.kv.violations, 0, "shared blocks counted once: running + cached = used");
    assert!(r.audits.ok);
    assert_eq!(r.summary.completed, 1500);
}

#[test]
fn pd_reports_pools_gpus_and_transfer_pressure() {
    let text = std::fs::read_to_string(super::root().join("scenarios/pd-llama3-8b-h100.json")).unwrap();
    let sc = scenario::load(&text).unwrap();
    let r = inferscale::simulate(&sc);
    let pools = r.pools.as_ref().unwrap();
    assert_eq!(pools.iter().map(|p| p.role).collect::<Vec<_>>(), ["prefill", "decode"]);
    assert_eq!(r.gpus, pools.iter().map(|p| p.gpus).sum::<u32>());
    assert!((r.summary.goodput_per_gpu_rps - r.summary.goodput_rps / r.gpus as f64).abs() < 1e-12);
    let t = r.transfer.as_ref().unwrap();
    assert_eq!(t.transfers, r.summary.completed);
    assert!(t.latency_s.p50 > 0.0 && t.latency_s.p99 >= t.latency_s.p95 && t.link_busy_fraction > 0.0);
    assert!(r.audits.ok);
    // A slow shared link turns into the bottleneck, and the report says so with its busy fraction.
    let mut spec = scenario::parse(&text).unwrap();
    let d = spec.cluster.disaggregation.as_mut().unwrap();
    d.link = link(1.0, 0.05, LinkTopology::Shared);
    let slow = inferscale::simulate(&valid(&spec));
    let ts = slow.transfer.as_ref().unwrap();
    assert!(ts.link_busy_fraction > 0.8, "busy {}", ts.link_busy_fraction);
    assert!(ts.latency_s.p95 > 10.0 * t.latency_s.p95);
    assert!(slow.summary.ttft_s.p95 > r.summary.ttft_s.p95);
    // The run's own diagnosis names the link, with its numbers, and the findings carry the P/D evidence.
    // The link caps the rate below the offered load: a capacity problem whose limit is the link.
    assert_eq!((slow.diagnosis.kind, slow.diagnosis.limit), ("capacity", "kv_link"), "{}", slow.diagnosis.verdict);
    assert!(slow.diagnosis.verdict.contains("limited by the KV-transfer link (busiest link busy 100 %"));
    for label in [
        "prefill pool busy",
        "decode pool busy",
        "busiest transfer link busy",
        "KV transfer share of p95 TTFT",
        "prefix cache hit rate",
    ] {
        assert!(slow.diagnosis.findings.iter().any(|f| f.label == label), "{label}");
    }
}
