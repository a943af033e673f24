//! The aggregate reports of other load generators, each one run without per-request lists:
//! kubernetes-sigs/inference-perf's lifecycle reports (`stage_N_lifecycle_metrics.json`), InferenceX's
//! aggregated result JSON (`agg_*.json`, SemiAnalysisAI/InferenceX `utils/process_result.py`), and MLPerf
//! LoadGen's `mlperf_log_summary.txt` and `mlperf_log_detail.txt`. Each becomes a [`Case`] like a vLLM or
//! SGLang result; what the format cannot say is said in the case's notes (docs/truth.md lists the quirks).

use super::{Case, CaseWorkload, LatencyMs, Measured, Rate, Source};
use crate::spec::MAX_TOKENS;
use serde_json::{Map, Value};

/// An inference-perf stage report's note until its run's `config.yaml` is applied (`run_config::apply`).
pub(super) const INFERENCE_PERF_NOTE: &str = "inference-perf lifecycle report: the server, the model and the arrival process (load.type) are not in it (they are in the run's config.yaml); Poisson arrivals at the requested rate are assumed";
/// How the note on empty responses starts.
pub(super) const EMPTY_RESPONSES_NOTE: &str = "some responses were empty (output_len min 0)";

/// Why a run gives no case: the key at fault (when one is) and the reason.
pub(super) type Refusal = (Option<String>, String);

/// A run in one of these JSON formats, told by its keys; None: not one of them (a vLLM or SGLang result).
pub(super) fn case_of(id: &str, source: &Source, obj: &Map<String, Value>) -> Option<Result<Case, Refusal>> {
    if obj.contains_key("load_summary") && obj.contains_key("successes") {
        return Some(inference_perf(blank(id, source), obj));
    }
    if obj.contains_key("tput_per_gpu") && obj.contains_key("conc") {
        return Some(inferencex(blank(id, source), obj));
    }
    if let (Some(Value::Object(metrics)), true) = (obj.get("metrics"), obj.contains_key("hardware")) {
        let case = inferencex(blank(id, source), &dashboard_row(obj, metrics)).map(|mut c| {
            let provenance: Vec<String> = (["image", "date", "run_url"].iter())
                .filter_map(|k| Some(format!("{k} {}", obj.get(*k)?.as_str()?)))
                .collect();
            if !provenance.is_empty() {
                c.notes.push(format!("InferenceX dashboard row: {}", provenance.join(", ")));
            }
            c
        });
        return Some(case);
    }
    None
}

/// A case with nothing read yet: the engine `unknown` until the file names one.
fn blank(id: &str, source: &Source) -> Case {
    Case {
        id: id.to_string(),
        source: source.clone(),
        engine: "unknown".into(),
        backend: None,
        model_id: None,
        tp: None,
        gpu: None,
        workload: CaseWorkload::default(),
        measured: Measured::default(),
        notes: Vec::new(),
    }
}

/// A number at a dotted path (`successes.latency.time_to_first_token.mean`), or a number written as text;
/// absent or null is None; negative, infinite or not a number is the run's error, naming the path; so is a
/// block on the way that is not one (`"request_latency": "fast"`), naming the block.
fn num(obj: &Map<String, Value>, path: &str) -> Result<Option<f64>, Refusal> {
    let mut at = obj;
    let mut parts = path.split('.').peekable();
    let mut walked = 0;
    while let Some(p) = parts.next() {
        walked += p.len() + 1;
        let Some(v) = at.get(p) else { return Ok(None) };
        if parts.peek().is_none() {
            return figure(path, v);
        }
        at = match v {
            Value::Object(o) => o,
            Value::Null => return Ok(None),
            _ => {
                return Err((
                    Some(path[..walked - 1].to_string()),
                    format!("must be a block of figures (got {})", kind_of(v)),
                ));
            }
        };
    }
    Ok(None)
}

/// The most requests a run's count may say (a count past it is no run's), and the most tokens a length.
pub(super) const MOST_REQUESTS: u64 = 1_000_000_000;

/// A count of requests at `path`: whole, 0 … [`MOST_REQUESTS`].
fn count(obj: &Map<String, Value>, path: &str) -> Result<Option<u64>, Refusal> {
    whole(obj, path, 0, MOST_REQUESTS)
}

/// A whole number at `path` from `lo` to `hi`: counts are whole and bounded where they are read (a wrapped, rounded
/// or overflowing one misleads).
fn whole(obj: &Map<String, Value>, path: &str, lo: u64, hi: u64) -> Result<Option<u64>, Refusal> {
    match num(obj, path)? {
        Some(x) if x.fract() == 0.0 && x >= lo as f64 && x <= hi as f64 => Ok(Some(x as u64)),
        Some(x) => Err((Some(path.into()), format!("must be a whole number from {lo} to {hi} (got {})", shown(x)))),
        None => Ok(None),
    }
}

/// A mean length in tokens at `path`: 0 … `MAX_TOKENS`, as a request's own lengths.
fn tokens(obj: &Map<String, Value>, path: &str) -> Result<Option<f64>, Refusal> {
    match num(obj, path)? {
        Some(x) if x > f64::from(MAX_TOKENS) => {
            Err((Some(path.into()), format!("must be from 0 to {MAX_TOKENS} tokens (got {})", shown(x))))
        }
        x => Ok(x),
    }
}

/// A number as an error shows it: in full up to 16 digits, past that as 1e300 (not 301 digits).
fn shown(x: f64) -> String {
    if x.abs() >= 1e16 { format!("{x:e}") } else { x.to_string() }
}

/// What a JSON value is, in words, short whatever its size.
fn kind_of(v: &Value) -> String {
    match v {
        Value::String(s) if s.chars().count() <= 40 => format!("the text {s:?}"),
        Value::String(_) => "a text".into(),
        Value::Array(_) => "a list".into(),
        other => other.to_string(),
    }
}

/// A figure's value as every format reads it (`key` names it in the error): null is None, a number or a
/// number written as text is itself when finite and ≥ 0, anything else is the run's error.
pub(super) fn figure(key: &str, v: &Value) -> Result<Option<f64>, Refusal> {
    let x = match v {
        Value::Null => return Ok(None),
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    match x {
        Some(x) if x.is_finite() && x >= 0.0 => Ok(Some(x)),
        Some(x) => Err((Some(key.to_string()), format!("must be a finite number ≥ 0 (got {x})"))),
        None => Err((Some(key.to_string()), format!("must be a number (got {v})"))),
    }
}

/// A latency's statistics at `path` (keys `mean`, `median` or `p50`, `p90`, `p95`, `p99`), × `to_ms`.
fn latency(obj: &Map<String, Value>, path: &str, to_ms: f64) -> Result<LatencyMs, Refusal> {
    let at = |k: &str| num(obj, &format!("{path}.{k}")).map(|x| x.map(|x| x * to_ms));
    Ok(LatencyMs {
        mean: at("mean")?,
        median: at("median")?.or(at("p50")?),
        p90: at("p90")?,
        p95: at("p95")?,
        p99: at("p99")?,
    })
}

/// A case needs a latency to be compared with.
fn usable(c: Case) -> Result<Case, Refusal> {
    if c.measured.has_latency() {
        Ok(c)
    } else {
        Err((None, "no usable metric: the run has no TTFT, TPOT, ITL or E2E figure".into()))
    }
}

/// inference-perf's report of one stage: latencies in seconds under `successes.latency`, the offered rate
/// under `load_summary`. The summary across stages has no rate (its stages ran at different ones): refused.
fn inference_perf(mut c: Case, o: &Map<String, Value>) -> Result<Case, Refusal> {
    let rate = match (num(o, "load_summary.requested_rate")?, num(o, "load_summary.achieved_rate")?) {
        (Some(r), _) | (None, Some(r)) if r > 0.0 => r,
        _ => return Err((
            Some("load_summary.requested_rate".into()),
            "no request rate: a summary across stages mixes their rates; import the stage_N_lifecycle_metrics.json files".into(),
        )),
    };
    let lat = |name: &str| latency(o, &format!("successes.latency.{name}"), 1000.0);
    let (mut itl, mut tpot) = (lat("inter_token_latency")?, lat("time_per_output_token")?);
    if let (Some(median), Some(mean)) = (itl.median, itl.mean)
        && median < mean / 10.0
    {
        c.notes.push(format!(
            "inter_token_latency is per streamed chunk (median {median:.3} ms against a mean of {mean:.2} ms): left out"
        ));
        itl = LatencyMs::default();
        // Its time_per_output_token is the mean of the same gaps (the two means agree within 1 %): per chunk too,
        // half the step time when every token comes with an empty chunk. E2E carries the decode time.
        if tpot.mean.is_some_and(|t| (t / mean - 1.0).abs() < 0.01) {
            c.notes.push("time_per_output_token is the mean of those per-chunk gaps (within 1 % of inter_token_latency's mean), not the time per token: left out; E2E carries the decode time".into());
            tpot = LatencyMs::default();
        }
    }
    c.workload = CaseWorkload {
        request_rate: Some(Rate::PerSecond(rate)),
        num_prompts: count(o, "load_summary.count")?,
        mean_input_tokens: tokens(o, "successes.prompt_len.mean")?,
        mean_output_tokens: tokens(o, "successes.output_len.mean")?,
        duration_s: num(o, "load_summary.send_duration")?,
        ..CaseWorkload::default()
    };
    c.measured = Measured {
        completed: count(o, "successes.count")?,
        failed: count(o, "failures.count")?,
        ttft_ms: lat("time_to_first_token")?,
        tpot_ms: tpot,
        itl_ms: itl,
        e2e_ms: lat("request_latency")?,
        request_throughput_rps: num(o, "successes.throughput.requests_per_sec")?,
        output_throughput_tps: num(o, "successes.throughput.output_tokens_per_sec")?,
        total_token_throughput_tps: num(o, "successes.throughput.total_tokens_per_sec")?,
    };
    c.notes.push(INFERENCE_PERF_NOTE.into());
    if num(o, "successes.output_len.min")? == Some(0.0) {
        c.notes.push(format!("{EMPTY_RESPONSES_NOTE}: they count in every statistic, as the report has no per-request lists to leave them out"));
    }
    usable(c)
}

/// A row of InferenceX's dashboard data (the app's benchmarks API, what its "export" saves): the aggregate's
/// figures nested under `metrics`, the device as `hardware`, the parallelism per pool (`prefill_tp`,
/// `decode_tp`, …), the run's `date` and `run_url` (the caller notes them). Flattened into the aggregate's shape:
/// a single-node, non-disaggregated row's `decode_tp` is its `tp`.
fn dashboard_row(obj: &Map<String, Value>, metrics: &Map<String, Value>) -> Map<String, Value> {
    let mut flat: Map<String, Value> =
        obj.iter().filter(|(k, _)| *k != "metrics").map(|(k, v)| (k.clone(), v.clone())).collect();
    flat.extend(metrics.iter().map(|(k, v)| (k.clone(), v.clone())));
    if let Some(hw) = flat.remove("hardware") {
        flat.insert("hw".into(), hw);
    }
    let yes = |k: &str| flat.get(k).and_then(Value::as_bool) == Some(true);
    if !yes("disagg")
        && !yes("is_multinode")
        && !flat.contains_key("tp")
        && let Some(tp) = flat.get("decode_tp").cloned()
    {
        flat.insert("tp".into(), tp);
    }
    flat
}

/// The most concurrent clients a closed loop simulates (calibration's bound), and GPUs a run names.
const MOST_CLIENTS: u64 = 1_000_000;
const MOST_GPUS: u64 = 100_000;

/// InferenceX's workflows run the client with `--random-range-ratio 0.8` (`.github/workflows/benchmark-tmpl.yml`,
/// SemiAnalysisAI/InferenceX): each length uniform between ⌊0.8 · L⌋ and L, mean 0.9 · L.
const INFERENCEX_RANGE_RATIO: f64 = 0.8;

/// InferenceX's aggregated result: the vLLM result's `*_ms` keys turned into seconds without the suffix,
/// `*_intvty` = 1000 / the TPOT in ms (tokens/s per user), throughputs per GPU; the client ran
/// `request_rate inf` under `max_concurrency conc` with `conc × 10` prompts of `isl` / `osl` tokens.
fn inferencex(mut c: Case, o: &Map<String, Value>) -> Result<Case, Refusal> {
    let text = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_string);
    let whole = |k: &str, lo: u64, hi: u64| whole(o, k, lo, hi);
    let conc = whole("conc", 1, MOST_CLIENTS)?.ok_or((Some("conc".into()), "must be a concurrency ≥ 1".into()))?;
    let gpus = match whole("tp", 1, MOST_GPUS)? {
        Some(tp) => tp,
        None => {
            whole("num_prefill_gpu", 0, MOST_GPUS)?.unwrap_or(0) + whole("num_decode_gpu", 0, MOST_GPUS)?.unwrap_or(0)
        }
    };
    let per_gpu = |k: &str| num(o, k).map(|x| x.filter(|_| gpus > 0).map(|x| x * gpus as f64));
    let lat = |name: &str| -> Result<LatencyMs, Refusal> {
        let at = |stat: &str| num(o, &format!("{stat}_{name}")).map(|x| x.map(|s| s * 1000.0));
        Ok(LatencyMs { mean: at("mean")?, median: at("median")?, p90: at("p90")?, p95: at("p95")?, p99: at("p99")? })
    };
    c.engine = text("framework").unwrap_or(c.engine);
    c.model_id = text("model");
    c.gpu = text("hw");
    c.tp = whole("tp", 1, MOST_GPUS)?.map(|t| t as u32);
    let recorded = num(o, "random_range_ratio")?;
    if recorded.is_some_and(|r| r > 1.0) {
        return Err((Some("random_range_ratio".into()), "must be between 0 and 1".into()));
    }
    let ratio = recorded.unwrap_or(INFERENCEX_RANGE_RATIO);
    // The client's `sample_uniform`: integers from int(L · ratio) to L inclusive.
    let range = |k: &str| -> Result<Option<[u32; 2]>, Refusal> {
        let Some(l) = whole(k, 1, u64::from(MAX_TOKENS))? else { return Ok(None) };
        let l = l as u32;
        Ok(Some([((f64::from(l) * ratio) as u32).max(1), l]))
    };
    let (input_range, output_range) = (range("isl")?, range("osl")?);
    let mean = |r: Option<[u32; 2]>| r.map(|[a, b]| (f64::from(a) + f64::from(b)) / 2.0);
    c.workload = CaseWorkload {
        request_rate: Some(Rate::Infinite),
        max_concurrency: Some(conc),
        num_prompts: Some(conc.saturating_mul(10)),
        dataset: Some("random".into()),
        mean_input_tokens: mean(input_range),
        mean_output_tokens: mean(output_range),
        input_range,
        output_range,
        ..CaseWorkload::default()
    };
    c.measured = Measured {
        ttft_ms: lat("ttft")?,
        tpot_ms: lat("tpot")?,
        itl_ms: lat("itl")?,
        e2e_ms: lat("e2el")?,
        output_throughput_tps: per_gpu("output_tput_per_gpu")?,
        total_token_throughput_tps: per_gpu("tput_per_gpu")?,
        ..Measured::default()
    };
    c.notes.push(format!("InferenceX aggregate: latencies in seconds, throughputs per GPU (× {gpus} GPUs here); the prompt count is not recorded ({} assumed, InferenceX's conc × 10)", conc * 10));
    c.notes.push(match recorded {
        Some(r) => format!("lengths uniform from ⌊{r} × isl⌋ to isl (and osl), the file's random_range_ratio"),
        None => format!("the random_range_ratio is not recorded: InferenceX's workflows use {INFERENCEX_RANGE_RATIO}, so lengths are uniform from ⌊{INFERENCEX_RANGE_RATIO} × isl⌋ to isl (and osl), mean 0.9 × isl"),
    });
    if o.get("disagg").and_then(Value::as_bool) == Some(true)
        || o.get("is_multinode").and_then(Value::as_bool) == Some(true)
    {
        c.notes
            .push("disaggregated or multi-node: the base scenario must have the same prefill and decode pools".into());
    }
    usable(c)
}

/// MLPerf LoadGen's text logs: the summary (`label : value` lines) or the detail log (`:::MLLOG {json}`
/// lines). None: the text is neither.
pub(super) fn mlperf(id: &str, source: &Source, text: &str) -> Option<Result<Case, Refusal>> {
    // The summary's title is a line of its own: a JSON result whose label merely mentions it is not one.
    let fields = if text.lines().any(|l| l.trim() == "MLPerf Results Summary") {
        summary_fields(text)
    } else if text.lines().any(|l| l.trim_start().starts_with(":::MLLOG")) {
        detail_fields(text)
    } else {
        return None;
    };
    Some(loadgen_case(id, source, &fields))
}

/// What a LoadGen log says, by the detail log's keys (the summary's labels are mapped to them): the key or
/// label as the file writes it (errors name it), and the value.
type LoadGen = std::collections::BTreeMap<String, (String, String)>;

/// The summary's `label : value` lines under the detail log's keys.
fn summary_fields(text: &str) -> LoadGen {
    let mut out = LoadGen::new();
    for line in text.lines() {
        let Some((label, value)) = line.split_once(':') else { continue };
        let (label, value) = (label.trim(), value.trim().to_string());
        if let Some(key) = summary_key(&label.to_ascii_lowercase()) {
            out.entry(key).or_insert((label.to_string(), value));
        }
    }
    out
}

/// The detail log's key for a summary label; both of LoadGen's spellings of the TPOT labels ("time per" and
/// "time to output token") are read.
fn summary_key(label: &str) -> Option<String> {
    let fixed = [
        ("scenario", "effective_scenario"),
        ("result is", "result_validity"),
        ("target_qps", "effective_target_qps"),
        ("scheduled samples per second", "result_scheduled_samples_per_sec"),
        ("completed samples per second", "result_completed_samples_per_sec"),
        ("samples per second", "result_samples_per_second"),
        ("completed tokens per second", "result_completed_tokens_per_second"),
        ("tokens per second", "result_tokens_per_second"),
        ("mean latency (ns)", "result_mean_latency_ns"),
        ("mean first token latency (ns)", "result_first_token_mean_latency_ns"),
        ("mean time per output token (ns)", "result_time_to_output_token_mean"),
        ("mean time to output token (ns)", "result_time_to_output_token_mean"),
    ];
    if let Some((_, k)) = fixed.iter().find(|(l, _)| *l == label) {
        return Some(k.to_string());
    }
    let (p, rest) = label.split_once(" percentile ")?;
    match rest {
        "latency (ns)" => Some(format!("result_{p}_percentile_latency_ns")),
        "first token latency (ns)" => Some(format!("result_first_token_{p}_percentile_latency_ns")),
        "time to output token (ns)" | "time per output token (ns)" => {
            Some(format!("result_time_per_output_token_{p}_percentile_ns"))
        }
        _ => None,
    }
}

/// The detail log's `:::MLLOG` records, key → value as text; a line that is not JSON is skipped.
fn detail_fields(text: &str) -> LoadGen {
    let mut out = LoadGen::new();
    for line in text.lines() {
        let Some(json) = line.trim_start().strip_prefix(":::MLLOG") else { continue };
        let Ok(Value::Object(rec)) = serde_json::from_str::<Value>(json.trim()) else { continue };
        let (Some(Value::String(key)), Some(v)) = (rec.get("key"), rec.get("value")) else { continue };
        let v = match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        out.entry(key.clone()).or_insert((key.clone(), v));
    }
    out
}

/// A LoadGen run as a case: Server is Poisson at the target rate, Offline every sample at once, SingleStream
/// one at a time; latencies in ns.
fn loadgen_case(id: &str, source: &Source, f: &LoadGen) -> Result<Case, Refusal> {
    let n = |k: &str| -> Result<Option<f64>, Refusal> {
        let Some((label, v)) = f.get(k) else { return Ok(None) };
        match v.trim().parse::<f64>() {
            Ok(x) if x.is_finite() && x >= 0.0 => Ok(Some(x)),
            _ => Err((Some(label.clone()), format!("must be a finite number ≥ 0 (got {v})"))),
        }
    };
    let scenario = f.get("effective_scenario").map(|(_, s)| s.trim().trim_matches('"').to_string()).unwrap_or_default();
    let (rate, concurrency) = match scenario.as_str() {
        "Server" => match n("effective_target_qps")? {
            Some(q) if q > 0.0 => (Rate::PerSecond(q), None),
            _ => {
                return Err((
                    Some("target_qps".into()),
                    "a Server run needs its target_qps (Test Parameters Used)".into(),
                ));
            }
        },
        "Offline" => (Rate::Infinite, None),
        "SingleStream" => (Rate::Infinite, Some(1)),
        other => {
            return Err((Some("scenario".into()), format!("must be Server, Offline or SingleStream (got {other:?})")));
        }
    };
    let ms = |k: &str| n(k).map(|x| x.map(|ns| ns / 1e6));
    let stats = |mean: &str, pct: &dyn Fn(&str) -> String| -> Result<LatencyMs, Refusal> {
        Ok(LatencyMs {
            mean: ms(mean)?,
            median: ms(&pct("50.00"))?,
            p90: ms(&pct("90.00"))?,
            p95: ms(&pct("95.00"))?,
            p99: ms(&pct("99.00"))?,
        })
    };
    let samples = n("result_completed_samples_per_sec")?.or(n("result_samples_per_second")?);
    let tokens = n("result_completed_tokens_per_second")?.or(n("result_tokens_per_second")?);
    let mut c = Case {
        workload: CaseWorkload {
            request_rate: Some(rate),
            max_concurrency: concurrency,
            mean_output_tokens: match (tokens, samples) {
                (Some(t), Some(s)) if s > 0.0 => Some(t / s),
                _ => None,
            },
            ..CaseWorkload::default()
        },
        measured: Measured {
            ttft_ms: stats("result_first_token_mean_latency_ns", &|p| {
                format!("result_first_token_{p}_percentile_latency_ns")
            })?,
            tpot_ms: stats("result_time_to_output_token_mean", &|p| {
                format!("result_time_per_output_token_{p}_percentile_ns")
            })?,
            e2e_ms: stats("result_mean_latency_ns", &|p| format!("result_{p}_percentile_latency_ns"))?,
            request_throughput_rps: samples,
            output_throughput_tps: tokens,
            ..Measured::default()
        },
        notes: vec![format!(
            "MLPerf LoadGen {scenario} run: prompt lengths are not in LoadGen's logs (set mean_input_tokens in the bundle from the benchmark's dataset before calibrating); output tokens per request are completed tokens ÷ completed samples per second"
        )],
        ..blank(id, source)
    };
    if let Some((_, v)) = f.get("result_validity").filter(|(_, v)| v.contains("INVALID")) {
        c.notes.push(format!(
            "LoadGen judged the run {}: its latencies may be past what the system sustains",
            v.trim_matches('"')
        ));
    }
    usable(c)
}
