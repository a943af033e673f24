//! The model and the device a cost model describes, validated: each built from its part of the scenario
//! spec (a preset's figures, each overridable) with the errors it finds, as rand's distributions own their
//! constructors. `scenario::validate` assembles them.

use super::{CostModel, Linear, Roofline, presets};
use crate::spec::{CostSpec, Errors, HardwareSpec, ModelSpec, NS_PER_MS, suggest};

/// Model shape with derived byte figures.
#[derive(Clone, Debug, PartialEq)]
pub struct Model {
    pub name: String,
    pub params: f64,
    pub layers: u32,
    pub hidden: u32,
    pub heads: u32,
    pub kv_heads: u32,
    pub head_dim: u32,
    pub bytes_per_param: f64,
    pub kv_bytes_per_elem: f64,
    /// Mixture of experts; None: dense.
    pub moe: Option<Moe>,
    /// The longest sequence it takes, tokens (None: not given for a custom model).
    pub context_tokens: Option<u32>,
}

/// A mixture of experts: `experts` per layer, `per_token` run for each token, `expert_params` weights in all
/// of them together (every expert is resident; a step reads the ones its tokens touch).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Moe {
    pub experts: u32,
    pub per_token: u32,
    pub expert_params: f64,
}

impl Model {
    /// Parameters a token runs through: all of a dense model's; of a mixture, the dense part and its experts.
    pub fn active_params(&self) -> f64 {
        match self.moe {
            // Subtracting the experts not run keeps "every expert active" exactly the dense figure.
            Some(m) => self.params - m.expert_params * (1.0 - m.per_token as f64 / m.experts as f64),
            None => self.params,
        }
    }

    /// KV bytes per token for the whole model (all GPUs of a replica together).
    pub fn kv_bytes_per_token(&self) -> f64 {
        2.0 * self.layers as f64 * self.kv_heads as f64 * self.head_dim as f64 * self.kv_bytes_per_elem
    }
    pub fn weight_bytes(&self) -> f64 {
        self.params * self.bytes_per_param
    }
}

/// Device figures and efficiencies.
#[derive(Clone, Debug, PartialEq)]
pub struct Hardware {
    pub name: String,
    pub tp: u32,
    pub peak_flops: f64,
    pub hbm_bytes_per_s: f64,
    pub hbm_bytes: f64,
    pub interconnect_bytes_per_s: f64,
    pub mfu: f64,
    pub weight_bw_efficiency: f64,
    pub kv_bw_efficiency: f64,
    pub overlap_penalty: f64,
    pub step_overhead_ns: f64,
    pub allreduce_latency_ns: f64,
    pub allreduce_bw_efficiency: f64,
}

/// Look a preset up by name; an unknown name is an error listing the known ones (with a suggestion).
/// Ok(None) when no name was given.
fn lookup<T: Copy>(
    name: Option<&str>,
    all: &[T],
    name_of: fn(&T) -> &'static str,
    path: &str,
    what: &str,
    e: &mut Errors,
) -> Result<Option<T>, ()> {
    let Some(name) = name else { return Ok(None) };
    if let Some(p) = all.iter().find(|p| name_of(p) == name) {
        return Ok(Some(*p));
    }
    let names: Vec<&str> = all.iter().map(name_of).collect();
    let hint = suggest(name, names.iter().copied()).map(|s| format!("; did you mean `{s}`?")).unwrap_or_default();
    e.push(path, format!("unknown {what} `{name}`; known: {}{hint}", names.join(", ")));
    Err(())
}

/// A field given in the spec, else the preset's; an error naming `section.field` when neither exists.
macro_rules! from_preset {
    ($e:expr, $spec:expr, $base:expr, $section:literal, $why:literal, $f:ident) => {
        match ($spec.$f, $base.map(|b| b.$f)) {
            (Some(v), _) | (None, Some(v)) => Some(v),
            (None, None) => {
                $e.push(concat!($section, ".", stringify!($f)), $why);
                None
            }
        }
    };
}

impl Model {
    /// The model of `m`: its preset's figures, each overridable; errors under `model.`.
    pub(crate) fn build(m: &ModelSpec, e: &mut Errors) -> Option<Model> {
        let base = lookup(m.preset.as_deref(), presets::MODELS, |p| p.name, "model.preset", "model", e).ok()?;
        macro_rules! field {
            ($f:ident) => {
                from_preset!(e, m, base, "model", "required when model.preset is not given", $f)
            };
        }
        let (params_b, layers, hidden, heads, kv_heads, head_dim, bpp, kvb) = (
            field!(params_b),
            field!(layers),
            field!(hidden),
            field!(heads),
            field!(kv_heads),
            field!(head_dim),
            field!(bytes_per_param),
            field!(kv_bytes_per_elem),
        );
        let (params_b, layers, hidden, heads, kv_heads, head_dim, bpp, kvb) =
            (params_b?, layers?, hidden?, heads?, kv_heads?, head_dim?, bpp?, kvb?);
        let mut ok = e.range_open_lo("model.params_b", params_b, 0.0, 10_000.0);
        ok &= e.int("model.layers", layers as u64, 1, 1000);
        ok &= e.int("model.hidden", hidden as u64, 1, 1 << 20);
        ok &= e.int("model.heads", heads as u64, 1, 1024);
        ok &= e.int("model.kv_heads", kv_heads as u64, 1, 1024);
        ok &= e.int("model.head_dim", head_dim as u64, 1, 4096);
        ok &= e.range("model.bytes_per_param", bpp, 0.25, 8.0);
        ok &= e.range("model.kv_bytes_per_elem", kvb, 0.25, 8.0);
        if ok && kv_heads > heads {
            e.push("model.kv_heads", format!("must be ≤ heads ({heads}) (got {kv_heads})"));
            ok = false;
        }
        let moe = match (m.moe, base.and_then(|b| b.moe)) {
            (Some(s), _) => Moe::build(s.experts, s.experts_per_token, s.expert_params_b, params_b, e),
            (None, Some((experts, k, p))) => Moe::build(experts, k, p, params_b, e),
            (None, None) => Ok(None),
        };
        let Ok(moe) = moe else { return None };
        let context_tokens = m.context_tokens.or(base.map(|b| b.context_tokens));
        if let Some(c) = context_tokens {
            ok &= e.int("model.context_tokens", c as u64, 1, 100_000_000);
        }
        ok.then(|| Model {
            name: m.preset.clone().unwrap_or_else(|| "custom".into()),
            params: params_b * 1e9,
            layers,
            hidden,
            heads,
            kv_heads,
            head_dim,
            bytes_per_param: bpp,
            kv_bytes_per_elem: kvb,
            moe,
            context_tokens,
        })
    }
}

impl Moe {
    /// Errors under `model.moe.`.
    fn build(
        experts: u32,
        per_token: u32,
        expert_params_b: f64,
        params_b: f64,
        e: &mut Errors,
    ) -> Result<Option<Moe>, ()> {
        let mut ok = e.int("model.moe.experts", experts as u64, 2, 1024);
        ok &= e.int("model.moe.experts_per_token", per_token as u64, 1, experts.max(1) as u64);
        ok &= e.within(
            "model.moe.expert_params_b",
            expert_params_b,
            1e-3,
            params_b,
            "the parameters in all experts, a part of model.params_b",
        );
        if ok { Ok(Some(Moe { experts, per_token, expert_params: expert_params_b * 1e9 })) } else { Err(()) }
    }
}

impl Hardware {
    /// The device of `h` (its preset's figures, each overridable) at its TP, checked against `model`'s
    /// heads; errors under `hardware.`.
    pub(crate) fn build(h: &HardwareSpec, model: Option<&Model>, e: &mut Errors) -> Option<Hardware> {
        let base = lookup(h.device.as_deref(), presets::DEVICES, |d| d.name, "hardware.device", "device", e).ok()?;
        macro_rules! field {
            ($f:ident) => {
                from_preset!(e, h, base, "hardware", "required when hardware.device is not given", $f)
            };
        }
        let (peak, bw, mem, link) =
            (field!(peak_tflops), field!(hbm_bandwidth_gbps), field!(hbm_gb), field!(interconnect_gbps));
        let (peak, bw, mem, link) = (peak?, bw?, mem?, link?);
        let mut ok = e.int("hardware.tp", h.tp as u64, 1, 64);
        if ok && !h.tp.is_power_of_two() {
            e.push("hardware.tp", format!("must be a power of two (1, 2, 4, 8, …) (got {})", h.tp));
            ok = false;
        }
        if let (true, Some(m)) = (ok, model)
            && m.heads % h.tp != 0
        {
            e.push("hardware.tp", format!("must divide the model's attention heads ({}) (got {})", m.heads, h.tp));
            ok = false;
        }
        // Physical bounds: below them a single step would outlast the 584-year nanosecond clock, or the figure
        // describes no device; above them, none that exists.
        ok &= e.within(
            "hardware.peak_tflops",
            peak,
            0.01,
            1e5,
            "dense TFLOPS per GPU; a step's compute time is its FLOPs divided by this",
        );
        ok &= e.within(
            "hardware.hbm_bandwidth_gbps",
            bw,
            1.0,
            1e5,
            "memory bandwidth per GPU; every decode step reads the weights through it",
        );
        ok &= e.within("hardware.hbm_gb", mem, 0.1, 1e4, "memory per GPU for weights and KV");
        ok &= e.within("hardware.interconnect_gbps", link, 0.01, 1e5, "tensor-parallel all-reduce bandwidth per GPU");
        let mfu = h.mfu.unwrap_or(presets::DEFAULT_MFU);
        let wbe = h.weight_bw_efficiency.unwrap_or(presets::DEFAULT_WEIGHT_BW_EFFICIENCY);
        let kbe = h.kv_bw_efficiency.unwrap_or(presets::DEFAULT_KV_BW_EFFICIENCY);
        let olp = h.overlap_penalty.unwrap_or(presets::DEFAULT_OVERLAP_PENALTY);
        let ovh = h.step_overhead_ms.unwrap_or(presets::DEFAULT_STEP_OVERHEAD_MS);
        let arl = h.allreduce_latency_us.unwrap_or_else(|| presets::default_allreduce_latency_us(h.tp));
        let are = h.allreduce_bw_efficiency.unwrap_or(presets::DEFAULT_ALLREDUCE_BW_EFFICIENCY);
        let share = "a share of the datasheet figure; below 1 % the roofline describes no real engine";
        ok &= e.within("hardware.mfu", mfu, 0.01, 1.0, share);
        ok &= e.within("hardware.weight_bw_efficiency", wbe, 0.01, 1.0, share);
        ok &= e.within("hardware.kv_bw_efficiency", kbe, 0.01, 1.0, share);
        ok &= e.range("hardware.overlap_penalty", olp, 0.0, 1.0);
        ok &= e.range("hardware.step_overhead_ms", ovh, 0.0, 10_000.0);
        ok &= e.range("hardware.allreduce_latency_us", arl, 0.0, 1e6);
        ok &= e.within("hardware.allreduce_bw_efficiency", are, 0.001, 1.0, "a share of hardware.interconnect_gbps");
        ok.then(|| Hardware {
            name: h.device.clone().unwrap_or_else(|| "custom".into()),
            tp: h.tp,
            peak_flops: peak * 1e12,
            hbm_bytes_per_s: bw * 1e9,
            hbm_bytes: mem * 1e9,
            interconnect_bytes_per_s: link * 1e9,
            mfu,
            weight_bw_efficiency: wbe,
            kv_bw_efficiency: kbe,
            overlap_penalty: olp,
            step_overhead_ns: ovh * NS_PER_MS,
            allreduce_latency_ns: arl * 1e3,
            allreduce_bw_efficiency: are,
        })
    }
}

impl CostModel {
    /// The step-time model of `spec` (a roofline needs the model and the device); errors under `cost`.
    pub(crate) fn build(
        spec: &CostSpec,
        model: Option<&Model>,
        hardware: Option<&Hardware>,
        e: &mut Errors,
    ) -> Option<CostModel> {
        match (spec, model, hardware) {
            (CostSpec::Linear { base_ms, per_seq_ms, per_prefill_token_ms, per_kv_token_ms }, _, _) => {
                let mut ok = true;
                for (name, v) in [
                    ("base_ms", base_ms),
                    ("per_seq_ms", per_seq_ms),
                    ("per_prefill_token_ms", per_prefill_token_ms),
                    ("per_kv_token_ms", per_kv_token_ms),
                ] {
                    ok &= e.range(&format!("cost.{name}"), *v, 0.0, 1e6);
                }
                if ok && *base_ms + *per_seq_ms + *per_prefill_token_ms <= 0.0 {
                    e.push("cost", "a linear cost model needs base_ms, per_seq_ms or per_prefill_token_ms > 0 (every step must take time)");
                    ok = false;
                }
                ok.then(|| {
                    CostModel::Linear(Linear {
                        base_ns: base_ms * NS_PER_MS,
                        per_seq_ns: per_seq_ms * NS_PER_MS,
                        per_prefill_token_ns: per_prefill_token_ms * NS_PER_MS,
                        per_kv_token_ns: per_kv_token_ms * NS_PER_MS,
                        prefill_scale: 1.0,
                        decode_scale: 1.0,
                    })
                })
            }
            (CostSpec::Roofline, Some(m), Some(h)) => Some(CostModel::Roofline(Roofline::new(m, h))),
            _ => None,
        }
    }
}
