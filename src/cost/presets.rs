//! Published model and device figures. Sources are in docs/model.md; the efficiency defaults were fitted to the
//! measured Llama-3-8B / A100 step times in tests/data/measured-step-times-llama3-8b-a100.csv.

/// A transformer's shape, as the cost model needs it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelPreset {
    pub name: &'static str,
    pub params_b: f64,
    pub layers: u32,
    pub hidden: u32,
    pub heads: u32,
    pub kv_heads: u32,
    pub head_dim: u32,
    pub bytes_per_param: f64,
    pub kv_bytes_per_elem: f64,
    /// Mixture of experts: (experts, experts per token, parameters in all experts, billions).
    pub moe: Option<(u32, u32, f64)>,
    /// The longest sequence the model takes (its `max_position_embeddings`), tokens.
    pub context_tokens: u32,
}

/// A dense BF16 model with grouped-query attention, as most presets are; `shape` is (layers, hidden, heads,
/// KV heads, head dim).
const fn dense(
    name: &'static str,
    params_b: f64,
    shape: (u32, u32, u32, u32, u32),
    context_tokens: u32,
) -> ModelPreset {
    let (layers, hidden, heads, kv_heads, head_dim) = shape;
    ModelPreset {
        name,
        params_b,
        layers,
        hidden,
        heads,
        kv_heads,
        head_dim,
        bytes_per_param: 2.0,
        kv_bytes_per_elem: 2.0,
        moe: None,
        context_tokens,
    }
}

/// Sources for every figure: docs/model.md, "Presets".
pub const MODELS: &[ModelPreset] = &[
    dense("llama-3-8b", 8.03, (32, 4096, 32, 8, 128), 8192),
    dense("llama-3-70b", 70.6, (80, 8192, 64, 8, 128), 8192),
    dense("llama-3.1-8b", 8.03, (32, 4096, 32, 8, 128), 131_072),
    dense("llama-3.1-70b", 70.6, (80, 8192, 64, 8, 128), 131_072),
    dense("llama-3.2-1b", 1.24, (16, 2048, 32, 8, 64), 131_072),
    dense("llama-3.2-3b", 3.21, (28, 3072, 24, 8, 128), 131_072),
    dense("qwen2.5-7b", 7.62, (28, 3584, 28, 4, 128), 32_768),
    dense("qwen2.5-72b", 72.7, (80, 8192, 64, 8, 128), 32_768),
    dense("mistral-7b", 7.25, (32, 4096, 32, 8, 128), 32_768),
    // Mixtral 8x7B (Jiang et al. 2024, arXiv:2401.04088: 46.7B parameters, 12.9B active; the config of
    // mistralai/Mixtral-8x7B-v0.1: 32 layers, hidden 4096, 32 heads, 8 KV heads, 8 experts, top 2, FFN 14336):
    // each expert is 3 × 4096 × 14336 weights a layer, 45.1B in all.
    ModelPreset { moe: Some((8, 2, 45.1)), ..dense("mixtral-8x7b", 46.7, (32, 4096, 32, 8, 128), 32_768) },
    // DeepSeek-V3 (arXiv:2412.19437; config of deepseek-ai/DeepSeek-V3): 671B parameters, 37B active, FP8
    // weights as released; 61 layers, hidden 7168, 128 heads; 256 routed experts, 8 per token, in 58 MoE layers
    // (the first 3 are dense), each expert 3 × 7168 × 2048 weights: 653.9B in the routed experts. Multi-head
    // latent attention caches one 576-element latent (kv_lora_rank 512 + rope 64) per token and layer, shared
    // by every head and held whole on every tensor-parallel rank: written as 1 KV head of dimension 288 (K and V
    // make the 576).
    ModelPreset {
        name: "deepseek-v3",
        params_b: 671.0,
        layers: 61,
        hidden: 7168,
        heads: 128,
        kv_heads: 1,
        head_dim: 288,
        bytes_per_param: 1.0,
        kv_bytes_per_elem: 2.0,
        moe: Some((256, 8, 653.9)),
        context_tokens: 163_840,
    },
];

/// A device's published figures (dense BF16, no sparsity).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DevicePreset {
    pub name: &'static str,
    pub peak_tflops: f64,
    /// Dense FP8 tensor-core rate, TFLOP/s: what a model with one-byte weights runs its matrix products at;
    /// None on a device without FP8 matrix units (A100: FP8 checkpoints run as weight-only W8A16 at the BF16 rate).
    pub fp8_tflops: Option<f64>,
    pub hbm_bandwidth_gbps: f64,
    pub hbm_gb: f64,
    pub interconnect_gbps: f64,
    /// List price of one GPU for an hour, US dollars ([`PRICE_SOURCE`]); None where that list has none.
    pub usd_per_gpu_hour: Option<f64>,
}

/// Where the shipped prices come from: one provider's list, read on one date, so the fleet planner's costs are
/// comparable with each other (public 2026 on-demand prices for one device differ about 2.5× between
/// providers, so a blend would match no bill). Every price is editable in the study's options.
pub const PRICE_SOURCE: &str =
    "RunPod Serverless, active (always-on) workers: per-second price × 3600 (docs.runpod.io/serverless/pricing)";
pub const PRICE_READ_ON: &str = "2026-12-04";

/// Sources for every figure: docs/model.md, "Presets". The interconnect is the per-direction bandwidth a GPU
/// has to its tensor-parallel peers (NVLink, Infinity Fabric, RoCE, or PCIe).
pub const DEVICES: &[DevicePreset] = &[
    DevicePreset {
        name: "a100-80g",
        peak_tflops: 312.0,
        fp8_tflops: None,
        hbm_bandwidth_gbps: 2039.0,
        hbm_gb: 80.0,
        interconnect_gbps: 300.0,
        usd_per_gpu_hour: Some(2.16),
    },
    DevicePreset {
        name: "a100-40g",
        peak_tflops: 312.0,
        fp8_tflops: None,
        hbm_bandwidth_gbps: 1555.0,
        hbm_gb: 40.0,
        interconnect_gbps: 300.0,
        usd_per_gpu_hour: None,
    },
    DevicePreset {
        name: "h100-sxm",
        peak_tflops: 989.5,
        fp8_tflops: Some(1979.0),
        hbm_bandwidth_gbps: 3350.0,
        hbm_gb: 80.0,
        interconnect_gbps: 450.0,
        usd_per_gpu_hour: Some(3.348),
    },
    DevicePreset {
        name: "h100-pcie",
        peak_tflops: 756.0,
        fp8_tflops: Some(1513.0),
        hbm_bandwidth_gbps: 2000.0,
        hbm_gb: 80.0,
        interconnect_gbps: 64.0,
        usd_per_gpu_hour: None,
    },
    DevicePreset {
        name: "h200",
        peak_tflops: 989.5,
        fp8_tflops: Some(1979.0),
        hbm_bandwidth_gbps: 4800.0,
        hbm_gb: 141.0,
        interconnect_gbps: 450.0,
        usd_per_gpu_hour: Some(4.464),
    },
    DevicePreset {
        name: "h20",
        peak_tflops: 148.0,
        fp8_tflops: Some(296.0),
        hbm_bandwidth_gbps: 4000.0,
        hbm_gb: 96.0,
        interconnect_gbps: 450.0,
        usd_per_gpu_hour: None,
    },
    DevicePreset {
        name: "b200",
        peak_tflops: 2250.0,
        fp8_tflops: Some(4500.0),
        hbm_bandwidth_gbps: 8000.0,
        hbm_gb: 180.0,
        interconnect_gbps: 900.0,
        usd_per_gpu_hour: Some(6.84),
    },
    // Blackwell Ultra: the B200's dense BF16 and FP8 rates and bandwidth in the HGX part, 12-high HBM3E.
    DevicePreset {
        name: "b300",
        peak_tflops: 2250.0,
        fp8_tflops: Some(4500.0),
        hbm_bandwidth_gbps: 8000.0,
        hbm_gb: 288.0,
        interconnect_gbps: 900.0,
        usd_per_gpu_hour: None,
    },
    DevicePreset {
        name: "mi300x",
        peak_tflops: 1307.4,
        fp8_tflops: Some(2614.9),
        hbm_bandwidth_gbps: 5300.0,
        hbm_gb: 192.0,
        interconnect_gbps: 448.0,
        usd_per_gpu_hour: None,
    },
    // CDNA 3 as the MI300X, with HBM3E.
    DevicePreset {
        name: "mi325x",
        peak_tflops: 1307.4,
        fp8_tflops: Some(2614.9),
        hbm_bandwidth_gbps: 6000.0,
        hbm_gb: 256.0,
        interconnect_gbps: 448.0,
        usd_per_gpu_hour: None,
    },
    // CDNA 4: 256 CUs × 8,192 FP8 FLOP a clock × 2.4 GHz (AMD at ISSCC 2026) = 5,033 TFLOP/s FP8 dense, BF16 half.
    DevicePreset {
        name: "mi355x",
        peak_tflops: 2516.6,
        fp8_tflops: Some(5033.2),
        hbm_bandwidth_gbps: 8000.0,
        hbm_gb: 288.0,
        interconnect_gbps: 537.6,
        usd_per_gpu_hour: None,
    },
    DevicePreset {
        name: "gaudi3",
        peak_tflops: 1835.0,
        fp8_tflops: Some(1835.0),
        hbm_bandwidth_gbps: 3700.0,
        hbm_gb: 128.0,
        interconnect_gbps: 525.0,
        usd_per_gpu_hour: None,
    },
    DevicePreset {
        name: "l40s",
        peak_tflops: 362.0,
        fp8_tflops: Some(733.0),
        hbm_bandwidth_gbps: 864.0,
        hbm_gb: 48.0,
        interconnect_gbps: 32.0,
        usd_per_gpu_hour: Some(1.332),
    },
    DevicePreset {
        name: "l4",
        peak_tflops: 121.0,
        fp8_tflops: Some(242.5),
        hbm_bandwidth_gbps: 300.0,
        hbm_gb: 24.0,
        interconnect_gbps: 32.0,
        usd_per_gpu_hour: Some(0.468),
    },
];

/// Efficiency defaults, fitted to the measured A100 step times (every row within 9 %; see docs/model.md).
pub const DEFAULT_MFU: f64 = 0.64;
pub const DEFAULT_WEIGHT_BW_EFFICIENCY: f64 = 0.68;
pub const DEFAULT_KV_BW_EFFICIENCY: f64 = 0.82;
pub const DEFAULT_OVERLAP_PENALTY: f64 = 0.25;
pub const DEFAULT_STEP_OVERHEAD_MS: f64 = 0.0;
/// One all-reduce of n bytes at TP t takes `latency(t) + n · 2(t − 1)/t / (interconnect × efficiency)`, with
/// latency(t) = 2.6 + 1.1 · log2(t) µs: fitted to SGLang's custom all-reduce on H100 (sgl-project/sglang PR
/// #2904: 3.7 / 4.8 / 5.9 µs at 512 B, 19.9 / 31.1 / 33.8 µs at 1 MiB, TP 2 / 4 / 8), every one of its nine
/// points within 21 % (tests/it/roofline.rs). Messages up to about 1 MiB are latency bound: they reach about
/// 14 % of NVLink's per-direction bandwidth.
pub const DEFAULT_ALLREDUCE_LATENCY_BASE_US: f64 = 2.6;
pub const DEFAULT_ALLREDUCE_LATENCY_PER_DOUBLING_US: f64 = 1.1;
pub const DEFAULT_ALLREDUCE_BW_EFFICIENCY: f64 = 0.138;

/// Large messages take NCCL's line: `latency + n · 2(t − 1)/t / (interconnect × efficiency)` with 29 µs and
/// 0.79 (355 GB/s of bus bandwidth on NVLink's 450), fitted to NCCL's times on an 8 × H100 DGX at TP 2, 4 and 8
/// for 2–64 MiB messages (microsoft/vidur `data/profiling/network/h100_dgx/all_reduce.csv`, medians, no CUDA
/// graph). With the small-message line above (an all-reduce takes the faster), all 27 points lie within 20 %.
pub const DEFAULT_ALLREDUCE_LARGE_LATENCY_US: f64 = 29.0;
pub const DEFAULT_ALLREDUCE_LARGE_BW_EFFICIENCY: f64 = 0.79;

/// The default latency of one all-reduce at TP `tp`, µs.
pub fn default_allreduce_latency_us(tp: u32) -> f64 {
    DEFAULT_ALLREDUCE_LATENCY_BASE_US + DEFAULT_ALLREDUCE_LATENCY_PER_DOUBLING_US * tp.max(1).ilog2() as f64
}

pub fn model(name: &str) -> Option<&'static ModelPreset> {
    MODELS.iter().find(|m| m.name == name)
}

pub fn device(name: &str) -> Option<&'static DevicePreset> {
    DEVICES.iter().find(|d| d.name == name)
}
