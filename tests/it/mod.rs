mod architecture;
mod audits;
mod bad_input;
mod capacity;
mod cli;
mod closed_forms;
mod deploy;
mod determinism;
mod diagnosis;
mod engine;
mod fields;
mod findings;
mod fleet;
mod fuzz;
mod held;
mod objectives;
mod pd;
mod property;
mod references;
mod roofline;
mod session_classes;
mod sessions;
mod shard;
mod study;
mod tiering;
mod truth;
mod workflow;

use inferscale::scenario::{self, Scenario, Spec};
use std::path::PathBuf;

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Load a shipped scenario, resolving its trace file like the CLI does.
pub fn shipped(name: &str) -> Spec {
    let path = root().join("scenarios").join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut spec = scenario::parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    if let scenario::ArrivalSpec::Trace { path: Some(p), data, .. } = &mut spec.workload.arrival {
        *data = Some(std::fs::read_to_string(root().join("scenarios").join(p)).unwrap().into());
    }
    spec
}

pub fn shipped_names() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(root().join("scenarios"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    v.sort();
    v
}

pub fn valid(spec: &Spec) -> Scenario {
    scenario::validate(spec).unwrap_or_else(|e| panic!("{}: {e}", spec.name))
}

/// A small fast scenario to vary in tests.
/// A preset's model written out field by field (no preset named), its context included.
pub fn custom_model(p: &inferscale::cost::presets::ModelPreset) -> inferscale::scenario::ModelSpec {
    inferscale::scenario::ModelSpec {
        preset: None,
        params_b: Some(p.params_b),
        layers: Some(p.layers),
        hidden: Some(p.hidden),
        heads: Some(p.heads),
        kv_heads: Some(p.kv_heads),
        head_dim: Some(p.head_dim),
        bytes_per_param: Some(p.bytes_per_param),
        kv_bytes_per_elem: Some(p.kv_bytes_per_elem),
        moe: p.moe.map(|(experts, experts_per_token, expert_params_b)| inferscale::scenario::MoeSpec {
            experts,
            experts_per_token,
            expert_params_b,
        }),
        context_tokens: Some(p.context_tokens),
    }
}

pub fn small() -> Spec {
    let mut s = shipped("default.json");
    s.workload.requests = Some(400);
    s
}
