//! Ground truth: measured benchmark runs, read from the files users have (`vllm bench serve --save-result`, the
//! legacy `benchmark_serving.py`, SGLang's `bench_serving` JSONL; inference-perf, InferenceX and MLPerf LoadGen
//! reports in `formats.rs`), each turned into a validation [`Case`] — what
//! the workload was, every measured figure present, and notes on what was missing or suspicious. A bundle of
//! cases is the input of calibration. Pure: the front ends read the files and pass their text.

pub mod calibrate;
pub mod checks;
mod fit;
mod formats;
mod import;
pub mod lengths;
pub mod run_config;
pub mod steps;
pub mod validation;

pub use calibrate::{
    Calibration, Extra, Multipliers, Options, calibrate, calibrate_with, calibrate_with_progress, default_training,
};
pub use import::{ImportError, Importer, import};

use serde::{Deserialize, Serialize};

/// The version of the bundle format written by [`Bundle::json`].
pub const BUNDLE_VERSION: u32 = 1;

/// The most runs a bundle holds, and an import reads from its files together: a benchmark sweep is tens to
/// thousands of runs; a file of millions of one-line runs would otherwise hold gigabytes of cases.
pub const MOST_CASES: usize = 100_000;

/// A set of validation cases (docs/truth.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bundle {
    pub inferscale_bundle: u32,
    #[serde(deserialize_with = "crate::spec::at_most::<_, _, MOST_CASES>")]
    pub cases: Vec<Case>,
}

impl Bundle {
    pub fn new(cases: Vec<Case>) -> Self {
        Bundle { inferscale_bundle: BUNDLE_VERSION, cases }
    }

    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a bundle serialises") + "\n"
    }

    /// Read a bundle back; the error names what is wrong.
    pub fn parse(text: &str) -> Result<Bundle, String> {
        let b: Bundle = serde_json::from_str(text.trim_start_matches('\u{feff}'))
            .map_err(|e| format!("not an InferScale bundle: {e}"))?;
        if b.inferscale_bundle != BUNDLE_VERSION {
            return Err(format!(
                "inferscale_bundle: version {} (this build reads {BUNDLE_VERSION})",
                b.inferscale_bundle
            ));
        }
        Ok(b)
    }
}

/// One measured run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Case {
    /// `file:line` (a JSONL run) or `file` (a one-run file): unique in a bundle, and where to look.
    pub id: String,
    pub source: Source,
    /// `vllm` or `sglang`; what an InferenceX file names (`framework`); `unknown` when the file names none
    /// (inference-perf, MLPerf LoadGen).
    pub engine: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_id: Option<String>,
    /// Tensor parallelism and GPUs, when the file says (`tensor_parallel_size`, `tp`; metadata `gpu` such as
    /// `4xNVIDIA_L40S`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub tp: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub gpu: Option<String>,
    pub workload: CaseWorkload,
    pub measured: Measured,
    /// What was missing, renamed or suspicious, in words.
    pub notes: Vec<String>,
}

/// Where a case was read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    pub file: String,
    /// 1-based line of the run in a JSONL file; 1 for a one-object file.
    pub line: usize,
}

/// The offered load: a rate (req/s), or `inf` — all at once, or as fast as `max_concurrency` allows.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rate {
    PerSecond(f64),
    Infinite,
}

/// What the benchmark client sent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CaseWorkload {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_rate: Option<Rate>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<u64>,
    /// vLLM's gamma arrivals: CV = 1/√burstiness (1: Poisson).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub burstiness: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_prompts: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dataset: Option<String>,
    /// Mean input and output tokens per completed request (from the totals, or the per-request lists).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_input_tokens: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_output_tokens: Option<f64>,
    /// Per-request lengths, when the file has them: (input, output) pairs in the order sent, empty responses
    /// (0 output tokens) left out.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub input_lens: Vec<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub output_lens: Vec<u32>,
    /// The client's length generator, when the file names it (a `random` dataset's `random_input_len` with
    /// `random_range_ratio`): lengths uniform between these bounds, inclusive.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub input_range: Option<[u32; 2]>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub output_range: Option<[u32; 2]>,
    /// The output lengths' spread when the file has no per-request lists and its E2E percentiles show one
    /// (`lengths::infer_output`): lognormal with the mean output and this coefficient of variation, at most
    /// `output_max_tokens`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub output_cv: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub output_max_tokens: Option<u32>,
    /// Wall time of the run, s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    /// The client cycles through this many distinct prompts (inference-perf's `shared_prefix` data: groups ×
    /// prompts per group), so a prompt sent again finds its whole blocks in the server's prefix cache.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub distinct_prompts: Option<u64>,
}

/// A latency's statistics, ms; each only when the file has it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyMs {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p90: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p95: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p99: Option<f64>,
}

impl LatencyMs {
    pub fn is_empty(&self) -> bool {
        *self == LatencyMs::default()
    }
}

/// Every measured figure the file has.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed: Option<u64>,
    #[serde(skip_serializing_if = "LatencyMs::is_empty", default)]
    pub ttft_ms: LatencyMs,
    #[serde(skip_serializing_if = "LatencyMs::is_empty", default)]
    pub tpot_ms: LatencyMs,
    #[serde(skip_serializing_if = "LatencyMs::is_empty", default)]
    pub itl_ms: LatencyMs,
    #[serde(skip_serializing_if = "LatencyMs::is_empty", default)]
    pub e2e_ms: LatencyMs,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_throughput_rps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_throughput_tps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_token_throughput_tps: Option<f64>,
}

impl Measured {
    /// No latency at all: nothing to calibrate against.
    pub fn has_latency(&self) -> bool {
        !(self.ttft_ms.is_empty() && self.tpot_ms.is_empty() && self.itl_ms.is_empty() && self.e2e_ms.is_empty())
    }
}
