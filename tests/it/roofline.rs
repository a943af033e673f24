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
    (sc.model.clone(), sc.front_pool().hardware.clone())
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
    let text =
        std::fs::read_to_string(super::root().join("tests/data/measured-step-times-llama3-8b-a100.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
    let (phase, batch, new_tokens, ctx, raw, rf) = (
        col("phase"),
        col("batch_size"),
        col("new_tokens_per_req"),
        col("kv_context"),
        col("step_ms_raw_profile_vidur_formula"),
        col("vidur_rf_step_ms"),
    );
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
            StepWork {
                prefill_seqs: b,
                prefill_tokens: n * b,
                prefill_attention_pairs: (n as u64 * (n as u64 + 1) / 2) * b as u64,
                ..Default::default()
            }
        };
        let sim = cost.step(&work).total_ns as f64 / 1e6;
        let err = sim / measured - 1.0;
        println!(
            "{:<8} batch {:>4} tokens {:>5} ctx {:>5}: measured {:>8.2} ms, model {:>8.2} ms, error {:+6.1} %",
            f[phase],
            b,
            n,
            k,
            measured,
            sim,
            err * 100.0
        );
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
    let c = r.step(&StepWork {
        decode_seqs: 32,
        decode_context_tokens: 32 * 2000,
        prefill_seqs: 1,
        prefill_tokens: 512,
        prefill_attention_pairs: 512 * 513 / 2,
        prefill_context_tokens: 0,
    });
    let compute = c.prefill_compute_ns + c.decode_compute_ns;
    let memory = c.weights_ns + c.kv_read_ns;
    let core = compute.max(memory) + h.overlap_penalty * compute.min(memory);
    assert!(((core + c.comm_ns + c.overhead_ns) - c.total_ns as f64).abs() <= 1.0);
    assert!(c.comm_ns > 0.0, "tp 4 pays for all-reduce");
    assert!(c.prefill_compute_ns > c.decode_compute_ns);
    // TP divides the per-GPU work: tp 4 is faster than tp 1 for the same step.
    let (m1, h1) = model_hw("h100-sxm", 1, false);
    let c1 = Roofline::new(&m1, &h1).step(&StepWork {
        decode_seqs: 32,
        decode_context_tokens: 32 * 2000,
        ..Default::default()
    });
    let c4 = r.step(&StepWork { decode_seqs: 32, decode_context_tokens: 32 * 2000, ..Default::default() });
    assert!(c4.total_ns < c1.total_ns);
}

/// Fewer KV heads than GPUs: every GPU holds a whole head's copy and reads it (vLLM's and SGLang's attention
/// layers replicate `max(1, kv_heads / tp)` heads a rank; DeepSeek's latent is one head, whole on every rank),
/// so the replica's KV read and write are tp / kv_heads times the model's bytes — by hand, with every efficiency 1.
#[test]
fn kv_heads_fewer_than_gpus_are_read_on_every_gpu() {
    let (mut m, h) = model_hw("h100-sxm", 8, true);
    let work = StepWork { decode_seqs: 64, decode_context_tokens: 64 * 4096, ..Default::default() };
    // Llama-3-8B: 8 KV heads, one a GPU at tp 8: nothing replicated.
    assert_eq!((m.kv_heads, m.layers, m.head_dim), (8, 32, 128));
    let bytes = 2.0 * 32.0 * 128.0 * 2.0; // per token and KV head
    let per_gpu_bw = 3.35e12;
    let split = Roofline::new(&m, &h).step(&work);
    let read = |heads_per_gpu: f64| 64.0 * 4096.0 * bytes * heads_per_gpu / per_gpu_bw * 1e9;
    assert!((split.kv_read_ns / read(1.0) - 1.0).abs() < 1e-12, "{} vs {}", split.kv_read_ns, read(1.0));
    // Two KV heads at tp 8: each GPU reads one head's copy, the same time as eight split heads.
    m.kv_heads = 2;
    let two = Roofline::new(&m, &h).step(&work);
    assert!((two.kv_read_ns / read(1.0) - 1.0).abs() < 1e-12, "{} vs {}", two.kv_read_ns, read(1.0));
    // Sixteen KV heads at tp 8: two a GPU, twice the time.
    m.kv_heads = 16;
    assert!((Roofline::new(&m, &h).step(&work).kv_read_ns / read(2.0) - 1.0).abs() < 1e-12);
    // One head at tp 1 and at tp 8: the same per-GPU read, so the same time (it was 8x shorter at tp 8).
    m.kv_heads = 1;
    let (_, h1) = model_hw("h100-sxm", 1, true);
    let one_gpu = Roofline::new(&m, &h1).step(&work).kv_read_ns;
    let eight = Roofline::new(&m, &h).step(&work).kv_read_ns;
    assert!((eight / one_gpu - 1.0).abs() < 1e-12 && (eight / read(1.0) - 1.0).abs() < 1e-12, "{eight} {one_gpu}");
    // The writes too: a decode step of 64 tokens writes 64 tokens' KV on every GPU, beside the weights.
    let weights_only = 8.03e9 * 2.0 / (8.0 * per_gpu_bw) * 1e9;
    let c = Roofline::new(&m, &h).step(&work);
    let writes = 64.0 * bytes / per_gpu_bw * 1e9;
    assert!(
        (c.weights_ns - (weights_only + writes)).abs() < 1e-6 * c.weights_ns,
        "{} vs {}",
        c.weights_ns,
        weights_only + writes
    );
}

#[test]
fn kv_capacity_follows_memory_minus_weights() {
    let sc = super::valid(&super::small());
    // A100-80GB × 0.9 = 72 GB; weights 16.06 GB; 128 KiB per token → ≈ 426,788 tokens.
    let expected = ((80e9 * 0.9 - 8.03e9 * 2.0) / 131_072.0) as u64;
    assert_eq!(sc.front_pool().engine.kv_capacity_tokens, expected);
    assert_eq!(sc.front_pool().engine.kv_total_blocks, expected / 16);
}

/// A model written out with a preset's figures is the preset: the same report byte for byte, but for the
/// model's name in the setup ("custom") — for every model preset, each on a device it fits.
#[test]
fn a_custom_model_with_a_presets_figures_reports_as_the_preset() {
    use inferscale::cost::presets;
    for p in presets::MODELS {
        let mut preset = super::small();
        preset.workload.requests = Some(100);
        preset.model.preset = Some(p.name.into());
        (preset.hardware.device, preset.hardware.tp) = fitting_device(p);
        let mut custom = preset.clone();
        custom.model = super::custom_model(p);
        let a = inferscale::export::json(&inferscale::simulate(&super::valid(&preset)));
        let b = inferscale::export::json(&inferscale::simulate(&super::valid(&custom)));
        assert_eq!(a.replace(&format!("\"model\": \"{}\"", p.name), "\"model\": \"custom\""), b, "{}", p.name);
    }
}

/// A device and TP the model's weights fit with room for KV: H100 up to 70B at TP 4, H200 × 8 for more.
fn fitting_device(p: &inferscale::cost::presets::ModelPreset) -> (Option<String>, u32) {
    let gb = p.params_b * p.bytes_per_param;
    match gb {
        g if g < 40.0 => (Some("h100-sxm".into()), 1),
        g if g < 200.0 => (Some("h100-sxm".into()), 4),
        _ => (Some("h200".into()), 8),
    }
}

/// Every model preset runs on every device preset it fits (weights under the 90 % of memory the engine may use, at the
/// smallest power-of-two TP that holds them, up to 8), with every audit holding; a device too small says so at
/// its field; the KV bytes per token follow from each preset's shape (DeepSeek-V3's latent: 576 elements a
/// layer, whole on every rank).
#[test]
fn every_preset_model_runs_on_every_preset_device_it_fits() {
    use inferscale::cost::presets;
    let (mut ran, mut refused) = (0, 0);
    for m in presets::MODELS {
        for d in presets::DEVICES {
            let Some(tp) = [1u32, 2, 4, 8]
                .into_iter()
                .find(|&tp| m.params_b * 1e9 * m.bytes_per_param / (tp as f64) < 0.9 * d.hbm_gb * 1e9)
            else {
                let mut s = super::small();
                (s.model.preset, s.hardware.device, s.hardware.tp) = (Some(m.name.into()), Some(d.name.into()), 8);
                let e = inferscale::scenario::validate(&s).unwrap_err();
                assert!(
                    e.errors
                        .iter()
                        .any(|f| f.path == "engine.gpu_memory_utilization" && f.message.contains("do not fit")),
                    "{} on {}: {e}",
                    m.name,
                    d.name
                );
                refused += 1;
                continue;
            };
            let mut s = super::small();
            s.workload.requests = Some(60);
            (s.model.preset, s.hardware.device, s.hardware.tp) = (Some(m.name.into()), Some(d.name.into()), tp);
            let sc = match inferscale::scenario::validate(&s) {
                Ok(sc) => sc,
                // A small device's KV may be too small for the class's longest request: said, not a panic.
                Err(e) => {
                    assert!(
                        e.errors.iter().all(|f| f.message.contains("KV capacity")),
                        "{} on {} × {tp}: {e}",
                        m.name,
                        d.name
                    );
                    refused += 1;
                    continue;
                }
            };
            let r = inferscale::simulate(&sc);
            assert!(r.audits.ok, "{} on {} × {tp}", m.name, d.name);
            assert!(r.summary.completed > 0);
            ran += 1;
        }
    }
    println!("presets: {ran} model × device pairs ran, {refused} refused");
    assert!(ran >= 80, "{ran} pairs ran");
    let kv = |name: &str| {
        super::valid(&{
            let mut s = super::small();
            let tp = if name == "deepseek-v3" { 8 } else { 1 };
            (s.model.preset, s.hardware.device, s.hardware.tp) = (Some(name.into()), Some("h200".into()), tp);
            s
        })
        .model
        .kv_bytes_per_token()
    };
    assert_eq!(kv("deepseek-v3"), 61.0 * 576.0 * 2.0, "MLA: one 576-element BF16 latent per layer");
    assert_eq!(kv("llama-3.2-1b"), 2.0 * 16.0 * 8.0 * 64.0 * 2.0);
    assert_eq!(kv("qwen2.5-7b"), 2.0 * 28.0 * 4.0 * 128.0 * 2.0);
}

/// A mixture of experts with every expert active is the dense model of its shape, byte for byte; with k of
/// E active, a batch of one reads the dense part and k/E of the experts, a large batch nearly all of them,
/// and each token computes with the active parameters only.
#[test]
fn a_mixture_of_experts_reads_the_experts_its_tokens_touch() {
    use inferscale::cost::StepWork;
    use inferscale::scenario::MoeSpec;
    let mut dense = super::small();
    dense.model.preset = Some("mixtral-8x7b".into());
    dense.hardware.device = Some("h100-sxm".into());
    dense.hardware.tp = 2;
    // The dense model of Mixtral's shape, every figure written out, and the same with all 8 of 8 experts active.
    let mut plain = dense.clone();
    plain.model = inferscale::scenario::ModelSpec {
        preset: None,
        params_b: Some(46.7),
        layers: Some(32),
        hidden: Some(4096),
        heads: Some(32),
        kv_heads: Some(8),
        head_dim: Some(128),
        bytes_per_param: Some(2.0),
        kv_bytes_per_elem: Some(2.0),
        moe: None,
        context_tokens: Some(32_768),
    };
    let mut all_active = dense.clone();
    all_active.model = inferscale::scenario::ModelSpec {
        moe: Some(MoeSpec { experts: 8, experts_per_token: 8, expert_params_b: 45.1 }),
        ..plain.model.clone()
    };
    let json = |s: &inferscale::scenario::Spec| inferscale::export::json(&inferscale::simulate(&super::valid(s)));
    assert_eq!(json(&all_active), json(&plain), "every expert active: the dense model");
    // Top 2 of 8: one decode token reads the dense part and a quarter of the experts.
    let sc = super::valid(&dense);
    let cost = &sc.front_pool().cost;
    let full = inferscale::cost::Roofline::new(&super::valid(&plain).model, &sc.front_pool().hardware);
    let one = StepWork { decode_seqs: 1, decode_context_tokens: 100, ..Default::default() };
    let many = StepWork { decode_seqs: 256, decode_context_tokens: 25_600, ..Default::default() };
    let (w1, wn, dense_w) = (cost.step(&one).weights_ns, cost.step(&many).weights_ns, full.step(&one).weights_ns);
    let kv_write = full.step(&one).weights_ns
        - (46.7e9 * 2.0) / (2.0 * 3350e9 * sc.front_pool().hardware.weight_bw_efficiency / 1e9);
    let expect1 = ((46.7e9 - 45.1e9) + 45.1e9 * 0.25) * 2.0
        / (2.0 * 3350e9 * sc.front_pool().hardware.weight_bw_efficiency / 1e9)
        + kv_write;
    assert!((w1 / expect1 - 1.0).abs() < 1e-9, "batch of one: {w1} ns, expected {expect1}");
    assert!(
        wn > 0.999 * dense_w && wn <= full.step(&many).weights_ns,
        "a batch of 256 touches every expert: {wn} vs {dense_w}"
    );
    let c1 = cost
        .step(&StepWork { prefill_seqs: 1, prefill_tokens: 1000, prefill_attention_pairs: 0, ..Default::default() })
        .prefill_compute_ns;
    let c_dense = full
        .step(&StepWork { prefill_seqs: 1, prefill_tokens: 1000, prefill_attention_pairs: 0, ..Default::default() })
        .prefill_compute_ns;
    assert!(
        (c1 / c_dense - (46.7 - 45.1 * 0.75) / 46.7).abs() < 1e-9,
        "compute with the active parameters (12.9 B of 46.7 B)"
    );
}

/// The tensor-parallel all-reduce against two published H100 measurements, from 512 B to 64 MiB. Small
/// messages: SGLang's custom all-reduce (sgl-project/sglang PR #2904, µs, no CUDA graph) at 512 B, 256 KiB and
/// 1 MiB for TP 2, 4 and 8. Large: NCCL on an 8 × H100 DGX (microsoft/vidur
/// `data/profiling/network/h100_dgx/all_reduce.csv` at 7d47513, median µs) at 2 to 64 MiB. The two default
/// lines (latency bound: 2.6 + 1.1 · log2 tp µs at 13.8 % of NVLink's 450 GB/s; large: 29 µs at 79 %, the
/// faster taken) put all 27 points within 21 % and the mean |ln(model / measured)| under 8 %. The single line
/// before (the small one alone) was 5.9× too slow at 64 MiB, TP 8; `calibrate --fit tp_comm` scales both.
#[test]
fn tensor_parallel_all_reduce_matches_published_h100_measurements() {
    use inferscale::cost::StepWork;
    const MEASURED: [(u32, u32, f64); 27] = [
        (2, 512, 3.7),
        (4, 512, 4.8),
        (8, 512, 5.9),
        (2, 262_144, 7.9),
        (4, 262_144, 13.9),
        (8, 262_144, 16.7),
        (2, 1_048_576, 19.9),
        (4, 1_048_576, 31.1),
        (8, 1_048_576, 33.8),
        (2, 2_097_152, 39.0),
        (2, 4_194_304, 43.0),
        (2, 8_388_608, 46.0),
        (2, 16_777_216, 74.0),
        (2, 33_554_432, 136.0),
        (2, 67_108_864, 245.0),
        (4, 2_097_152, 34.0),
        (4, 4_194_304, 47.0),
        (4, 8_388_608, 62.0),
        (4, 16_777_216, 94.0),
        (4, 33_554_432, 167.0),
        (4, 67_108_864, 318.0),
        (8, 2_097_152, 39.0),
        (8, 4_194_304, 51.0),
        (8, 8_388_608, 74.0),
        (8, 16_777_216, 115.0),
        (8, 33_554_432, 196.0),
        (8, 67_108_864, 322.0),
    ];
    let mut log_err = 0.0;
    for (tp, bytes, us) in MEASURED {
        // A model whose hidden size makes one token's activations 512 B: a step of n tokens all-reduces n × 512 B.
        let mut s = super::small();
        s.model = inferscale::scenario::ModelSpec {
            preset: None,
            params_b: Some(1.0),
            layers: Some(10),
            hidden: Some(256),
            heads: Some(8),
            kv_heads: Some(8),
            head_dim: Some(32),
            bytes_per_param: Some(2.0),
            kv_bytes_per_elem: Some(2.0),
            moe: None,
            context_tokens: None,
        };
        (s.hardware.device, s.hardware.tp) = (Some("h100-sxm".into()), tp);
        let sc = super::valid(&s);
        let tokens = bytes / 512;
        let work = StepWork { decode_seqs: tokens, decode_context_tokens: tokens as u64, ..Default::default() };
        let cost = &sc.front_pool().cost;
        let step = cost.step(&work);
        // Two all-reduces a layer.
        let model_us = step.comm_ns / (2.0 * 10.0) / 1e3;
        let rel = model_us / us - 1.0;
        assert!(
            rel.abs() < 0.21,
            "TP {tp}, {bytes} B: model {model_us:.2} µs vs measured {us} µs ({:+.1} %)",
            rel * 100.0
        );
        log_err += (model_us / us).ln().abs() / MEASURED.len() as f64;
        // Calibration's tp_comm knob scales the whole curve.
        let doubled = cost.clone().adjusted(0.0, 2.0, 0.0).step(&work).comm_ns;
        assert!((doubled / step.comm_ns - 2.0).abs() < 1e-12, "TP {tp}, {bytes} B: × {}", doubled / step.comm_ns);
    }
    assert!(log_err < 0.08, "mean |ln(model / measured)| {log_err:.3}");
}

/// One-byte weights run their matrix products at the device's FP8 rate: a Llama-3-70B FP8 checkpoint's prefill
/// compute on H100 takes exactly half the BF16 checkpoint's (1979 ÷ 989.5 TFLOP/s, the same FLOPs), while its
/// weight read halves with its bytes; on A100, which has no FP8 tensor cores, compute stays at the BF16 rate; a
/// `peak_tflops` the user gives stands; four-bit weights (weight-only, dequantised to BF16) keep the BF16 rate.
#[test]
fn fp8_weights_run_their_matrix_products_at_the_fp8_rate() {
    let step = |device: &str, bytes: f64, peak: Option<f64>| {
        let mut spec: Spec = super::small();
        spec.model =
            ModelSpec { preset: Some("llama-3-70b".into()), bytes_per_param: Some(bytes), ..ModelSpec::default() };
        let memory = if device == "a100-80g" { 8 } else { 4 };
        spec.hardware =
            HardwareSpec { device: Some(device.into()), tp: memory, peak_tflops: peak, ..HardwareSpec::default() };
        let sc = super::valid(&spec);
        let h = sc.front_pool().hardware.clone();
        let work = StepWork {
            prefill_seqs: 1,
            prefill_tokens: 2048,
            prefill_attention_pairs: 2048 * 2049 / 2,
            ..Default::default()
        };
        (h.peak_flops / 1e12, Roofline::new(&sc.model, &h).step(&work))
    };
    let (bf16_peak, bf16) = step("h100-sxm", 2.0, None);
    let (fp8_peak, fp8) = step("h100-sxm", 1.0, None);
    assert_eq!((bf16_peak, fp8_peak), (989.5, 1979.0));
    assert_eq!(fp8.prefill_compute_ns, bf16.prefill_compute_ns * 989.5 / 1979.0, "the same FLOPs at twice the rate");
    // The weight read halves with the bytes (the step's KV write, also counted there, does not).
    let read = fp8.weights_ns / bf16.weights_ns;
    assert!((0.5..0.55).contains(&read), "half the weight bytes to read: {read}");
    assert!(fp8.total_ns < bf16.total_ns * 6 / 10, "a compute-bound prefill: {} vs {} ns", fp8.total_ns, bf16.total_ns);
    let ((a_bf16, a16), (a_fp8, a8)) = (step("a100-80g", 2.0, None), step("a100-80g", 1.0, None));
    assert_eq!((a_bf16, a_fp8), (312.0, 312.0), "no FP8 tensor cores on A100");
    assert_eq!(a8.prefill_compute_ns, a16.prefill_compute_ns);
    assert_eq!(step("h100-sxm", 1.0, Some(1200.0)).0, 1200.0, "the user's peak stands");
    assert_eq!(step("h100-sxm", 0.5, None).0, 989.5, "4-bit weight-only runs its GEMMs in BF16");
    for (device, fp8) in [("h200", 1979.0), ("b200", 4500.0), ("b300", 4500.0), ("mi300x", 2614.9), ("l40s", 733.0)] {
        assert_eq!(step(device, 1.0, None).0, fp8, "{device}");
    }
}
