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
}

pub const MODELS: &[ModelPreset] = &[
    ModelPreset {
        name: "llama-3-8b",
        params_b: 8.03,
        layers: 32,
        hidden: 4096,
        heads: 32,
        kv_heads: 8,
        head_dim: 128,
        bytes_per_param: 2.0,
        kv_bytes_per_elem: 2.0,
        moe: None,
    },
    ModelPreset {
        name: "llama-3-70b",
        params_b: 70.6,
        layers: 80,
        hidden: 8192,
        heads: 64,
        kv_heads: 8,
        head_dim: 128,
        bytes_per_param: 2.0,
        kv_bytes_per_elem: 2.0,
        moe: None,
    },
    // Mixtral 8x7B (Jiang et al. 2024, arXiv:2401.04088: 46.7B parameters, 12.9B active; the config of
    // mistralai/Mixtral-8x7B-v0.1: 32 layers, hidden 4096, 32 heads, 8 KV heads, 8 experts, top 2, FFN 14336):
    // each expert is 3 × 4096 × 14336 weights a layer, 45.1B in all.
    ModelPreset {
        name: "mixtral-8x7b",
        params_b: 46.7,
        layers: 32,
        hidden: 4096,
        heads: 32,
        kv_heads: 8,
        head_dim: 128,
        bytes_per_param: 2.0,
        kv_bytes_per_elem: 2.0,
        moe: Some((8, 2, 45.1)),
    },
];

/// A device's published figures (dense BF16, no sparsity).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DevicePreset {
    pub name: &'static str,
    pub peak_tflops: f64,
    pub hbm_bandwidth_gbps: f64,
    pub hbm_gb: f64,
    pub interconnect_gbps: f64,
}

pub const DEVICES: &[DevicePreset] = &[
    DevicePreset { name: "a100-80g", peak_tflops: 312.0, hbm_bandwidth_gbps: 2039.0, hbm_gb: 80.0, interconnect_gbps: 300.0 },
    DevicePreset { name: "a100-40g", peak_tflops: 312.0, hbm_bandwidth_gbps: 1555.0, hbm_gb: 40.0, interconnect_gbps: 300.0 },
    DevicePreset { name: "h100-sxm", peak_tflops: 989.5, hbm_bandwidth_gbps: 3350.0, hbm_gb: 80.0, interconnect_gbps: 450.0 },
    DevicePreset { name: "h200", peak_tflops: 989.5, hbm_bandwidth_gbps: 4800.0, hbm_gb: 141.0, interconnect_gbps: 450.0 },
    DevicePreset { name: "l40s", peak_tflops: 362.0, hbm_bandwidth_gbps: 864.0, hbm_gb: 48.0, interconnect_gbps: 32.0 },
];

/// Efficiency defaults, fitted to the measured A100 step times (every row within 9 %; see docs/model.md).
pub const DEFAULT_MFU: f64 = 0.64;
pub const DEFAULT_WEIGHT_BW_EFFICIENCY: f64 = 0.68;
pub const DEFAULT_KV_BW_EFFICIENCY: f64 = 0.82;
pub const DEFAULT_OVERLAP_PENALTY: f64 = 0.25;
pub const DEFAULT_STEP_OVERHEAD_MS: f64 = 0.0;
pub const DEFAULT_ALLREDUCE_LATENCY_US: f64 = 5.0;

pub fn model(name: &str) -> Option<&'static ModelPreset> {
    MODELS.iter().find(|m| m.name == name)
}

pub fn device(name: &str) -> Option<&'static DevicePreset> {
    DEVICES.iter().find(|d| d.name == name)
}
