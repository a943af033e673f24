//! What calibration checks before it trusts a case: its figures are measurements (finite, positive, at most a
//! day), it was measured on the base scenario's model, TP and device, and neither the measured run nor the
//! model was past saturation.

use super::{Case, Rate};
use crate::cost::presets;
use crate::scenario::Spec;

/// A latency figure's largest value, ms (a day).
const MAX_MS: f64 = 86_400_000.0;
/// Served below this share of the offered rate: the run was past saturation.
const SERVED_SHARE: f64 = 0.85;

/// The first figure of `c` that is not a measurement, named: latencies in (0, a day] ms, throughputs and
/// rates finite and > 0, token means ≥ 1.
pub fn figures(c: &Case) -> Result<(), String> {
    let m = &c.measured;
    let lat = [("ttft_ms", &m.ttft_ms), ("tpot_ms", &m.tpot_ms), ("itl_ms", &m.itl_ms), ("e2e_ms", &m.e2e_ms)];
    for (name, l) in lat {
        for (stat, v) in [("mean", l.mean), ("median", l.median), ("p90", l.p90), ("p95", l.p95), ("p99", l.p99)] {
            if let Some(v) = v.filter(|v| !(v.is_finite() && *v > 0.0 && *v <= MAX_MS)) {
                return Err(format!("`measured.{name}.{stat}` is {v}: a latency is from 0 to 86,400,000 ms (a day)"));
            }
        }
    }
    let w = &c.workload;
    let positive = [
        ("measured.request_throughput_rps", m.request_throughput_rps),
        (
            "workload.request_rate.per_second",
            if let Some(Rate::PerSecond(r)) = w.request_rate { Some(r) } else { None },
        ),
        ("workload.duration_s", w.duration_s),
        ("workload.burstiness", w.burstiness),
    ];
    for (name, v) in positive {
        if let Some(v) = v.filter(|v| !(v.is_finite() && *v > 0.0)) {
            return Err(format!("`{name}` is {v}: it must be a finite number > 0"));
        }
    }
    let max_tokens = w.output_max_tokens.map(f64::from);
    for (name, v) in [
        ("mean_input_tokens", w.mean_input_tokens),
        ("mean_output_tokens", w.mean_output_tokens),
        ("output_max_tokens", max_tokens),
    ] {
        if let Some(v) = v.filter(|v| !(v.is_finite() && (1.0..=1e7).contains(v))) {
            return Err(format!("`workload.{name}` is {v}: it must be from 1 to 10,000,000 tokens"));
        }
    }
    let max_cv = super::lengths::MAX_CV;
    if let Some(v) = w.output_cv.filter(|v| !(v.is_finite() && *v > 0.0 && *v <= max_cv)) {
        return Err(format!("`workload.output_cv` is {v}: a coefficient of variation above 0 and at most {max_cv}"));
    }
    Ok(())
}

/// Why `c` is past saturation by its measurement: a rate it did not serve. A run of n requests offered at λ
/// lasts at least (n − 1) ÷ λ plus the last one's decode (its output × the median TPOT: queueing, which grows
/// past saturation, shows in TTFT, not there), so even a server that keeps up serves only n ÷ that; the served
/// rate is held to that figure (for a long run, λ), not to λ — a 4-request run served 40 % of its offered rate
/// while keeping up.
pub fn measured_saturation(c: &Case) -> Option<String> {
    let (Some(Rate::PerSecond(offered)), Some(served)) = (c.workload.request_rate, c.measured.request_throughput_rps)
    else {
        return None;
    };
    let n = c.workload.num_prompts.or(c.measured.completed).unwrap_or(0) as f64;
    let tpot_ms = c.measured.tpot_ms.median.or(c.measured.tpot_ms.mean).unwrap_or(0.0);
    let last_s = tpot_ms * c.workload.mean_output_tokens.unwrap_or(0.0) / 1e3;
    let keeps_up = if n > 1.0 { (n / ((n - 1.0) / offered + last_s)).min(offered) } else { offered };
    let size = if keeps_up < offered {
        format!(" (a run of its size that keeps up serves {keeps_up:.2})")
    } else {
        String::new()
    };
    (served < SERVED_SHARE * keeps_up).then(|| {
        format!("the measured run served {served:.2} of the {offered} req/s offered{size}: it was past saturation")
    })
}

/// Why `c` is past the `model`'s saturation, given what it served and whether its queue grew.
pub fn model_saturation(c: &Case, served_rps: f64, overloaded: bool, model: &str) -> Option<String> {
    let Some(Rate::PerSecond(offered)) = c.workload.request_rate else { return None };
    (overloaded || served_rps < SERVED_SHARE * offered)
        .then(|| format!("the {model} model serves {served_rps:.2} of the {offered} req/s offered: its queue grows"))
}

/// What differs between where `c` was measured and the base scenario: the model's size (from the case's
/// `model_id`, with the preset that matches it), its TP, its device.
pub fn mismatch(base: &Spec, c: &Case) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(id) = &c.model_id
        && let (Some(size), Some(base_size)) = (size_b(id), base_params_b(base))
        && (size / base_size).max(base_size / size) > 1.25
    {
        let hint = matching_preset(id).map_or(String::new(), |p| format!(": set `model.preset` to `{p}`"));
        out.push(format!(
            "{} was measured on {id} (~{size} B parameters), the base scenario's model has {base_size} B{hint}",
            c.id
        ));
    }
    if let Some(tp) = c.tp
        && tp != base.hardware.tp
    {
        out.push(format!("{} ran at TP {tp}, the base scenario at TP {}", c.id, base.hardware.tp));
    }
    if let (Some(gpu), Some(device)) = (&c.gpu, &base.hardware.device) {
        let gpu = gpu.to_ascii_lowercase().replace(['-', '_', ' '], "");
        let family = |d: &str| d.split('-').next().unwrap_or(d).to_string();
        let named = presets::DEVICES
            .iter()
            .map(|d| family(d.name))
            .filter(|f| gpu.contains(f.as_str()))
            .max_by_key(String::len);
        if let Some(named) = named.filter(|n| *n != family(device)) {
            out.push(format!(
                "{} ran on {} ({named}), the base scenario on `{device}`",
                c.id,
                c.gpu.as_deref().unwrap_or("")
            ));
        }
    }
    out
}

/// Billions of parameters a model id names ("meta-llama/Meta-Llama-3-70B-Instruct": 70).
fn size_b(id: &str) -> Option<f64> {
    tokens(id).iter().find_map(|t| t.strip_suffix('b')?.parse::<f64>().ok().filter(|v| *v > 0.0))
}

fn tokens(id: &str) -> Vec<String> {
    id.to_ascii_lowercase().split(['/', '-', '_', ' ']).map(str::to_string).collect()
}

/// The base scenario's model size: its `params_b`, else its preset's.
fn base_params_b(base: &Spec) -> Option<f64> {
    base.model.params_b.or_else(|| presets::model(base.model.preset.as_deref()?).map(|m| m.params_b))
}

/// The model preset every part of whose name the id has ("Llama-3.1-70B" has llama, 3.1 and 70b), the most
/// specific first.
pub fn matching_preset(id: &str) -> Option<&'static str> {
    let have = tokens(id);
    (presets::MODELS.iter())
        .filter(|m| m.name.split('-').all(|part| have.iter().any(|t| t == part)))
        .max_by_key(|m| m.name.len())
        .map(|m| m.name)
}
