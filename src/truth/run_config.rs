//! inference-perf's resolved run settings (`config.yaml`, written beside its stage reports): what its reports
//! leave out and a prediction needs — the server and model, the arrival process, whether the server was told
//! to ignore EOS, and the prompts its `shared_prefix` generator cycles through. Applied to the stage reports
//! of the same directory (in the lab: of the same upload).

use super::Case;
use super::formats::{INFERENCE_PERF_NOTE, MOST_REQUESTS};
use crate::spec::MAX_TOKENS;
use serde::Deserialize;

/// The settings a prediction needs; every other key of the file is ignored.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct RunConfig {
    pub data: Data,
    pub load: Load,
    pub server: Server,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct Data {
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub shared_prefix: Option<SharedPrefix>,
}

/// `shared_prefix`: `num_groups` system prompts, each followed by `num_prompts_per_group` questions; the
/// generator sends prompt `i mod (groups × per group)` as request `i`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct SharedPrefix {
    pub num_groups: Option<u64>,
    pub num_prompts_per_group: Option<u64>,
    pub system_prompt_len: Option<u64>,
    pub question_len: Option<u64>,
    pub output_len: Option<u64>,
    /// A spread around `output_len` (newer versions): the output length is then not one number.
    pub output_len_std: Option<f64>,
    pub output_len_min: Option<u64>,
    pub output_len_max: Option<u64>,
    /// Each user's turns carry its history: prompts grow, and are not a fixed set.
    pub enable_multi_turn_chat: Option<bool>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct Load {
    #[serde(rename = "type")]
    pub kind: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct Server {
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub model_name: Option<String>,
    pub ignore_eos: Option<bool>,
}

/// Whether a file is a run configuration (YAML), by its name.
pub fn is_config(file: &str) -> bool {
    let f = file.to_ascii_lowercase();
    f.ends_with(".yaml") || f.ends_with(".yml")
}

/// Read `config.yaml`; the error is the line (where the parser says) and the reason.
pub fn parse(text: &str) -> Result<RunConfig, (usize, String)> {
    let cfg: RunConfig = serde_norway::from_str(text.trim_start_matches('\u{feff}')).map_err(|e| {
        let line = e.location().map_or(1, |l| l.line());
        (line, format!("not an inference-perf config.yaml: {e}"))
    })?;
    if cfg == RunConfig::default() {
        return Err((1, "not an inference-perf config.yaml: it has no `data`, `load` or `server` settings".into()));
    }
    if let Some(sp) = &cfg.data.shared_prefix {
        sp.check().map_err(|why| (1, why))?;
    }
    Ok(cfg)
}

impl SharedPrefix {
    /// Lengths within a request's (0 … `MAX_TOKENS`), and as many distinct prompts as a run may have: a length
    /// of 2^64 − 1 or a product of counts that saturates is no run's setting.
    fn check(&self) -> Result<(), String> {
        let at = "data.shared_prefix";
        let most = u64::from(MAX_TOKENS);
        let lengths = [
            ("system_prompt_len", self.system_prompt_len),
            ("question_len", self.question_len),
            ("output_len", self.output_len),
            ("output_len_min", self.output_len_min),
            ("output_len_max", self.output_len_max),
        ];
        for (k, v) in lengths {
            if let Some(v) = v.filter(|&v| v > most) {
                return Err(format!("{at}.{k}: must be from 0 to {most} tokens (got {v})"));
            }
        }
        if let Some(v) = self.output_len_std.filter(|v| !(v.is_finite() && (0.0..=most as f64).contains(v))) {
            return Err(format!("{at}.output_len_std: must be from 0 to {most} tokens (got {v})"));
        }
        let prompts = self.num_groups.unwrap_or(1).checked_mul(self.num_prompts_per_group.unwrap_or(1));
        if prompts.is_none_or(|n| n > MOST_REQUESTS) {
            let (g, p) = (self.num_groups.unwrap_or(1), self.num_prompts_per_group.unwrap_or(1));
            return Err(format!(
                "{at}: num_groups × num_prompts_per_group must be at most {MOST_REQUESTS} prompts (got {g} × {p})"
            ));
        }
        Ok(())
    }
}

/// The directory part of a file name as given (`a/b/stage_0.json` → `a/b`; a bare name → ``).
pub fn dir_of(file: &str) -> &str {
    file.rfind(['/', '\\']).map_or("", |i| &file[..i])
}

/// Whether `case` is an inference-perf stage report still without its settings.
pub fn wants_config(case: &Case) -> bool {
    case.notes.iter().any(|n| n == INFERENCE_PERF_NOTE)
}

/// Apply `cfg` (read from `file`) to an inference-perf stage report: the server and model it names, the
/// configured output length when the server ignored EOS, the set of distinct prompts of `shared_prefix`, and
/// notes saying what was taken and why.
pub fn apply(case: &mut Case, file: &str, cfg: &RunConfig) {
    case.notes.retain(|n| n != INFERENCE_PERF_NOTE);
    let mut notes = vec![format!("settings from {file}")];
    if let Some(engine) = cfg.server.kind.as_deref().filter(|k| ["vllm", "sglang", "tgi"].contains(k)) {
        case.engine = engine.to_string();
    }
    if case.model_id.is_none() {
        case.model_id = cfg.server.model_name.clone();
    }
    notes.push(arrivals(cfg.load.kind.as_deref()));
    if let Some(sp) = cfg.data.shared_prefix.as_ref().filter(|_| cfg.data.kind.as_deref() == Some("shared_prefix")) {
        notes.extend(shared_prefix(case, sp, cfg.server.ignore_eos == Some(true)));
    }
    case.notes.extend(notes);
}

/// What `load.type` means for the simulated arrivals (always Poisson at the requested rate).
fn arrivals(kind: Option<&str>) -> String {
    match kind {
        Some("constant") => "load.type constant: inference-perf draws exponential gaps and scales them to fill the stage, so arrivals are Poisson given their count: simulated as Poisson at the requested rate".into(),
        Some("poisson") => "load.type poisson: a Poisson count each second, spread over it as exponential gaps: simulated as Poisson at the requested rate".into(),
        Some(other) => format!("load.type {other}: not modelled; Poisson arrivals at the requested rate are assumed"),
        None => "no load.type: Poisson arrivals at the requested rate are assumed".into(),
    }
}

/// The prompts and outputs of a `shared_prefix` run.
fn shared_prefix(case: &mut Case, sp: &SharedPrefix, ignore_eos: bool) -> Vec<String> {
    let mut notes = Vec::new();
    let fixed_output = sp.output_len.filter(|_| {
        sp.output_len_std.unwrap_or(0.0) == 0.0 && sp.output_len_min.is_none_or(|m| Some(m) == sp.output_len)
    });
    match fixed_output.filter(|n| ignore_eos && *n > 0) {
        Some(n) => {
            let measured = case.workload.mean_output_tokens.map_or("—".into(), |m| format!("{m:.1}"));
            notes.push(format!("the server generated shared_prefix.output_len = {n} tokens for every request (ignore_eos, max_tokens); the report's output_len (mean {measured}) re-tokenises the streamed text, so the configured length is used, and responses whose text decoded empty still count"));
            case.workload.mean_output_tokens = Some(n as f64);
            case.notes.retain(|n| !n.starts_with(super::formats::EMPTY_RESPONSES_NOTE));
        }
        None => notes.push("output lengths as the report measured them (the server was not told to ignore EOS, or the configured length has a spread)".into()),
    }
    let groups = sp.num_groups.zip(sp.num_prompts_per_group).map(|(g, p)| g.saturating_mul(p));
    match (sp.enable_multi_turn_chat == Some(true), groups) {
        (true, _) => notes.push("multi-turn chat: each turn carries its user's history, which is not modelled; prompts are independent, with the report's mean length".into()),
        (false, Some(n)) if n > 0 => {
            case.workload.distinct_prompts = Some(n);
            notes.push(format!("{n} distinct prompts ({} groups × {} prompts, system prompt {} tokens), sent in turn: a repeat finds its prompt in the server's prefix cache", sp.num_groups.unwrap_or(0), sp.num_prompts_per_group.unwrap_or(0), sp.system_prompt_len.unwrap_or(0)));
        }
        _ => notes.push("shared_prefix without num_groups × num_prompts_per_group: prompts are independent".into()),
    }
    notes
}
