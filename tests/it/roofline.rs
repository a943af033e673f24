//! The roofline cost model: floors and the fit to measured step times.

use inferscale::cost::{CostModel, Roofline, StepWork};
use inferscale::scenario::{self, HardwareSpec, ModelSpec, Spec};

fn model_hw(device: &str, tp: u32, efficiency_one: bool) -> (scenario::Model, scenario::Hardware) {
    let mut spec: Spec = super::small();
    spec.model = ModelSpec::default();
    spec.hardware = HardwareSpec { device: Some(device.into()), tp, ..HardwareSpec::default() };
    if efficiency_one {
        let h = &mut spec.hardware;
        h.mfu = Some(1.0);
        h.weight_bw_efficiency = Some(1.0);
        h.kv_bw_efficiency = Some(1.0);
        h.overlap_penalty = Some(0.0);
        h.step_overhead_ms = Some(0.0);
    }
    let sc = super::valid(&spec);
    (sc.model, sc.pools[0].hardware.clone())
}

#[test]
fn h100_decode_never_beats_the_weight_read_floor() {
    let (m, h) = model_hw("h100-sxm", 1, true);
    let r = Roofline::new(&m, &h);
    // 8.03e9 params × 2 B / 3.35e12 B/s = 4.794 ms.
    let floor_ns: f64 = 8.03e9 * 2.0 / 3.35e12 * 1e9;
    assert!((floor_ns / 1e6 - 4.79).abs() < 0.01);
    for b in [1u32, 2, 8, 64, 256] {
        for ctx in [0u64, 1, 1024, 8192] {
            let c = r.step(&StepWork { decode_seqs: b, decode_context_tokens: ctx * b as u64, ..Default::default() });
            assert!(c.total_ns as f64 >= floor_ns, "batch {b} ctx {ctx}: {} ns < floor {floor_ns}", c.total_ns);
        }
    }
    // Batch 1 at tiny context is essentially the floor: decode is memory bound.
    let c = r.step(&StepWork { decode_seqs: 1, decode_context_tokens: 1, ..Default::default() });
    assert!((c.total_ns as f64 / floor_ns - 1.0) < 0.01);
    assert!(!c.compute_bound);
}

#[test]
fn defaults_reproduce_measured_a100_step_times() {
    let (m, h) = model_hw("a100-80g", 1, false);
    let cost = CostModel::Roofline(Roofline::new(&m, &h));
    let text = std::fs::read_to_string(super::root().join("tests/data/measured-step-times-llama3-8b-a100.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
    let (phase, batch, new_tokens, ctx, raw, rf) =
        (col("phase"), col("batch_size"), col("new_tokens_per_req"), col("kv_context"), col("step_ms_raw_profile_vidur_formula"), col("vidur_rf_step_ms"));
    let mut rows = 0;
    let mut worst: f64 = 0.0;
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        let b: u32 = f[batch].parse().unwrap();
        let n: u32 = f[new_tokens].parse().unwrap();
        let k: u64 = f[ctx].parse().unwrap();
        // The raw profile where it exists, else Vidur's prediction (the 4096-token row).
        let measured: f64 = f[raw].parse().or_else(|_| f[rf].parse()).unwrap();
        let work = if f[phase] == "decode" {
            StepWork { decode_seqs: b, decode_context_tokens: k * b as u64, ..Default::default() }
        } else {
            StepWork { prefill_seqs: b, prefill_tokens: n * b, prefill_attention_pairs: (n as u64 * (n as u64 + 1) / 2) * b as u64, ..Default::default() }
        };
        let sim = cost.step(&work).total_ns as f64 / 1e6;
        let err = sim / measured - 1.0;
        println!("{:<8} batch {:>4} tokens {:>5} ctx {:>5}: measured {:>8.2} ms, model {:>8.2} ms, error {:+6.1} %", f[phase], b, n, k, measured, sim, err * 100.0);
        worst = worst.max(err.abs());
        rows += 1;
    }
    assert_eq!(rows, 10, "5 decode + 5 prefill rows");
    assert!(worst <= 0.15, "worst row off by {:.1} %", worst * 100.0);
}

#[test]
fn breakdown_parts_are_consistent() {
    let (m, h) = model_hw("h100-sxm", 4, false);
    let r = Roofline::new(&m, &h);
    let c = r.step(&StepWork { decode_seqs: 32, decode_context_tokens: 32 * 2000, prefill_seqs: 1, prefill_tokens: 512, prefill_attention_pairs: 512 * 513 / 2, prefill_context_tokens: 0 });
    let compute = c.prefill_compute_ns + c.decode_compute_ns;
    let memory = c.weights_ns + c.kv_read_ns;
    let core = compute.max(memory) + h.overlap_penalty * compute.min(memory);
    assert!(((core + c.comm_ns + c.overhead_ns) - c.total_ns as f64).abs() <= 1.0);
    assert!(c.comm_ns > 0.0, "tp 4 pays for all-reduce");
    assert!(c.prefill_compute_ns > c.decode_compute_ns);
    // TP divides the per-GPU work: tp 4 is faster than tp 1 for the same step.
    let (m1, h1) = model_hw("h100-sxm", 1, false);
    let c1 = Roofline::new(&m1, &h1).step(&StepWork { decode_seqs: 32, decode_context_tokens: 32 * 2000, ..Default::default() });
    let c4 = r.step(&StepWork { decode_seqs: 32, decode_context_tokens: 32 * 2000, ..Default::default() });
    assert!(c4.total_ns < c1.total_ns);
}

#[test]
fn kv_capacity_follows_memory_minus_weights() {
    let sc = super::valid(&super::small());
    // A100-80GB × 0.9 = 72 GB; weights 16.06 GB; 128 KiB per token → ≈ 426,788 tokens.
    let expected = ((80e9 * 0.9 - 8.03e9 * 2.0) / 131_072.0) as u64;
    assert_eq!(sc.pools[0].engine.kv_capacity_tokens, expected);
    assert_eq!(sc.pools[0].engine.kv_total_blocks, expected / 16);
}
