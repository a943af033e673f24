//! The model and the device a cost model describes, validated: each built from its part of the scenario
//! spec (a preset's figures, each overridable) with the errors it finds, as rand's distributions own their
//! constructors. `scenario::validate` assembles them.

use super::{CostModel, Linear, Roofline, presets};
use crate::spec::at;
use crate::spec::field::Checked;
use crate::spec::{CostSpec, Errors, HardwareSpec, ModelSpec, MoeSpec, NS_PER_MS, suggest};

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
    /// Large messages' line (an all-reduce takes the faster of the two).
    pub allreduce_large_latency_ns: f64,
    pub allreduce_large_bw_efficiency: f64,
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
        let base =
            lookup(m.preset.as_deref(), presets::MODELS, |p| p.name, &at!("model", m.preset), "model", e).ok()?;
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
        // Every figure as it will run (the preset's where not given), within its bound.
        let resolved = ModelSpec {
            params_b: Some(params_b),
            layers: Some(layers),
            hidden: Some(hidden),
            heads: Some(heads),
            kv_heads: Some(kv_heads),
            head_dim: Some(head_dim),
            bytes_per_param: Some(bpp),
            kv_bytes_per_elem: Some(kvb),
            ..ModelSpec::default()
        };
        let mut ok = resolved.check_fields("model", e);
        if ok && kv_heads > heads {
            e.push(at!("model", resolved.kv_heads), format!("must be ≤ heads ({heads}) (got {kv_heads})"));
            ok = false;
        }
        let moe = match (m.moe, base.and_then(|b| b.moe)) {
            (Some(s), _) => Moe::build(s.experts, s.experts_per_token, s.expert_params_b, params_b, e),
            (None, Some((experts, k, p))) => Moe::build(experts, k, p, params_b, e),
            (None, None) => Ok(None),
        };
        let Ok(moe) = moe else { return None };
        let context_tokens = m.context_tokens.or(base.map(|b| b.context_tokens));
        ok &= ModelSpec { context_tokens, ..ModelSpec::default() }.check_fields("model", e);
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
        let at = at!("model", ModelSpec::moe);
        let mut ok = e.int(&at!(at, MoeSpec::experts), experts as u64, 2, 1024);
        ok &= e.int(&at!(at, MoeSpec::experts_per_token), per_token as u64, 1, experts.max(1) as u64);
        ok &= e.within(
            &at!(at, MoeSpec::expert_params_b),
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
        let base =
            lookup(h.device.as_deref(), presets::DEVICES, |d| d.name, &at!("hardware", h.device), "device", e).ok()?;
        macro_rules! field {
            ($f:ident) => {
                from_preset!(e, h, base, "hardware", "required when hardware.device is not given", $f)
            };
        }
        let (peak, bw, mem, link) =
            (field!(peak_tflops), field!(hbm_bandwidth_gbps), field!(hbm_gb), field!(interconnect_gbps));
        let (peak, bw, mem, link) = (peak?, bw?, mem?, link?);
        // One-byte weights (FP8, or INT8 W8A8) run their matrix products on the device's 8-bit tensor cores —
        // vLLM's and SGLang's FP8 checkpoints use FP8 GEMMs where the device has them — at twice the BF16 rate
        // on H100, H200, B200 and MI300X. A peak_tflops given is the user's and stands.
        let eight_bit = model.is_some_and(|m| m.bytes_per_param == 1.0);
        let peak = match (h.peak_tflops, base.and_then(|d| d.fp8_tflops)) {
            (None, Some(fp8)) if eight_bit => fp8,
            _ => peak,
        };
        let mfu = h.mfu.unwrap_or(presets::DEFAULT_MFU);
        let wbe = h.weight_bw_efficiency.unwrap_or(presets::DEFAULT_WEIGHT_BW_EFFICIENCY);
        let kbe = h.kv_bw_efficiency.unwrap_or(presets::DEFAULT_KV_BW_EFFICIENCY);
        let olp = h.overlap_penalty.unwrap_or(presets::DEFAULT_OVERLAP_PENALTY);
        let ovh = h.step_overhead_ms.unwrap_or(presets::DEFAULT_STEP_OVERHEAD_MS);
        let arl = h.allreduce_latency_us.unwrap_or_else(|| presets::default_allreduce_latency_us(h.tp));
        let are = h.allreduce_bw_efficiency.unwrap_or(presets::DEFAULT_ALLREDUCE_BW_EFFICIENCY);
        let arll = h.allreduce_large_latency_us.unwrap_or(presets::DEFAULT_ALLREDUCE_LARGE_LATENCY_US);
        let arle = h.allreduce_large_bw_efficiency.unwrap_or(presets::DEFAULT_ALLREDUCE_LARGE_BW_EFFICIENCY);
        // Every figure as it will run (a preset's or the default where not given), within its bound.
        let resolved = HardwareSpec {
            device: None,
            tp: h.tp,
            peak_tflops: Some(peak),
            hbm_bandwidth_gbps: Some(bw),
            hbm_gb: Some(mem),
            interconnect_gbps: Some(link),
            mfu: Some(mfu),
            weight_bw_efficiency: Some(wbe),
            kv_bw_efficiency: Some(kbe),
            overlap_penalty: Some(olp),
            step_overhead_ms: Some(ovh),
            allreduce_latency_us: Some(arl),
            allreduce_bw_efficiency: Some(are),
            allreduce_large_latency_us: Some(arll),
            allreduce_large_bw_efficiency: Some(arle),
        };
        let mut ok = resolved.check_fields("hardware", e);
        if (1..=64).contains(&h.tp) && !h.tp.is_power_of_two() {
            e.push(at!("hardware", resolved.tp), format!("must be a power of two (1, 2, 4, 8, …) (got {})", h.tp));
            ok = false;
        } else if let Some(m) = model
            && (1..=64).contains(&h.tp)
            && m.heads % h.tp != 0
        {
            e.push(
                at!("hardware", resolved.tp),
                format!("must divide the model's attention heads ({}) (got {})", m.heads, h.tp),
            );
            ok = false;
        }
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
            allreduce_large_latency_ns: arll * 1e3,
            allreduce_large_bw_efficiency: arle,
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
