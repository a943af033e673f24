//! Reading benchmark result files leniently (docs/truth.md): field sets drift between versions, and files in the
//! wild carry every quirk of `docs/truth.md`'s list — `"request_goodput:"` with a colon, `request_rate` as `"inf"`
//! or a bare `Infinity`, JSON Lines under a `.json` name, metadata merged in as strings, stripped files, old
//! names (`*_latency_ms` for E2E), per-request lists present or not. One bad run never loses the others.

use serde_json::{Map, Value};

use super::formats;
use super::run_config::{self, RunConfig};
use super::{Case, CaseWorkload, LatencyMs, MOST_CASES, Measured, Rate, Source};

/// Why a run (or a whole file) gave no case: the file, the line, the key when one is to blame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportError {
    pub file: String,
    pub line: usize,
    pub key: Option<String>,
    pub message: String,
}

impl std::fmt::Display for ImportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.key {
            Some(k) => write!(f, "{}:{}: `{k}`: {}", self.file, self.line, self.message),
            None => write!(f, "{}:{}: {}", self.file, self.line, self.message),
        }
    }
}

/// The cases of one file's text (`file` names it in ids and errors), and an error for each run that gave none.
/// A run is read, turned into its case and dropped before the next is read, and the keys no case uses
/// (`generated_texts`, `errors`, `start_times`: most of a detailed file) are skipped as they are read: memory
/// is a small multiple of the largest run, not of the file.
pub fn import(file: &str, text: &str) -> (Vec<Case>, Vec<ImportError>) {
    let text = text.trim_start_matches('\u{feff}');
    let (mut cases, mut errors) = (Vec::new(), Vec::new());
    let source = Source { file: file.to_string(), line: 1 };
    // LoadGen's logs are text, read as written (a bare NaN there is a bad figure, not JSON's null).
    if let Some(run) = formats::mlperf(file, &source, text) {
        match run {
            Ok(c) => cases.push(c),
            Err((key, message)) => errors.push(ImportError { file: file.to_string(), line: 1, key, message }),
        }
        return (cases, errors);
    }
    let text = sanitize(text);
    let mut take = |line: usize, run: Result<Map<String, Value>, String>, one_run: bool| {
        let fail = |key: Option<String>, message: String| ImportError { file: file.to_string(), line, key, message };
        match run {
            Err(message) => errors.push(fail(None, message)),
            Ok(obj) => {
                let id = if one_run { file.to_string() } else { format!("{file}:{line}") };
                match case_of(id, Source { file: file.to_string(), line }, &obj) {
                    Ok(c) => cases.push(c),
                    Err((key, message)) => errors.push(fail(key, message)),
                }
            }
        }
    };
    let first = text.trim_start().as_bytes().first().copied();
    // An array of runs is read as a whole, and no longer than MOST_CASES (a data error can only be that: a run
    // is any value, each said if it is no object); anything else that fails is tried as JSON Lines.
    let array = (first == Some(b'[')).then(|| serde_json::from_str::<Runs>(&text));
    match (first, array) {
        // One run, or an array of runs; a JSON Lines file also starts with `{`, and fails as one value.
        (Some(b'{'), _) if let Ok(Lean(run)) = serde_json::from_str::<Lean>(&text) => take(1, run, true),
        (_, Some(Ok(Runs(runs)))) => {
            let one_run = runs.len() == 1;
            for (i, Lean(run)) in runs.into_iter().enumerate() {
                take(i + 1, run.map_err(|_| format!("run {} is not a JSON object", i + 1)), one_run);
            }
        }
        (_, Some(Err(e))) if e.is_data() => take(1, Err(format!("an array of runs: {e}")), true),
        _ => {
            let mut any = false;
            for (n, (i, l)) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()).enumerate() {
                if n == MOST_CASES {
                    let message = format!("more than {MOST_CASES} runs: this line and the ones after it are not read");
                    take(i + 1, Err(message), false);
                    break;
                }
                any = true;
                let run = match serde_json::from_str::<Lean>(l) {
                    Ok(Lean(run)) => run,
                    Err(e) => Err(format!("not JSON ({e}); a result file is one JSON object, or one per line")),
                };
                take(i + 1, run, false);
            }
            if !any {
                take(1, Err("the file is empty".into()), true);
            }
        }
    }
    (cases, errors)
}

/// Files read one after another (`add`), then finished: each file's cases, with inference-perf's `config.yaml`
/// applied to the stage reports of its own directory (in the lab, of the same upload). Each file's text can be
/// dropped once added.
#[derive(Default)]
pub struct Importer {
    cases: Vec<Case>,
    errors: Vec<ImportError>,
    configs: Vec<(String, RunConfig)>,
}

impl Importer {
    pub fn add(&mut self, file: &str, text: &str) {
        // A bundle (`inferscale import`'s output, the lab's "Export bundle") brings its cases as they are: only
        // a bundle has that key.
        if text.contains("\"inferscale_bundle\"") {
            match super::Bundle::parse(text) {
                Ok(b) => {
                    self.cases.extend(b.cases);
                    self.within_most();
                }
                Err(message) => self.errors.push(ImportError { file: file.into(), line: 1, key: None, message }),
            }
            return;
        }
        if run_config::is_config(file) {
            match run_config::parse(text) {
                Ok(cfg) => self.configs.push((file.to_string(), cfg)),
                Err((line, message)) => self.errors.push(ImportError { file: file.into(), line, key: None, message }),
            }
            return;
        }
        let (c, e) = import(file, text);
        self.cases.extend(c);
        self.errors.extend(e);
        self.within_most();
    }

    /// Files together hold at most [`MOST_CASES`] runs: past it the last file's extra runs are dropped, said.
    fn within_most(&mut self) {
        if self.cases.len() > MOST_CASES {
            let c = &self.cases[MOST_CASES];
            let message = format!(
                "more than {MOST_CASES} runs in the files together: this run and the ones after it are not read"
            );
            self.errors.push(ImportError { file: c.source.file.clone(), line: c.source.line, key: None, message });
            self.cases.truncate(MOST_CASES);
        }
    }

    /// Directories with an inference-perf stage report and no config yet: where a front end may look for
    /// `config.yaml`.
    pub fn dirs_wanting_config(&self) -> Vec<String> {
        let dirs: std::collections::BTreeSet<&str> = (self.cases.iter().filter(|c| run_config::wants_config(c)))
            .map(|c| run_config::dir_of(&c.source.file))
            .filter(|d| !self.configs.iter().any(|(f, _)| run_config::dir_of(f) == *d))
            .collect();
        dirs.into_iter().map(str::to_string).collect()
    }

    /// The cases and the errors; a config that applies to no stage report is one of the errors.
    pub fn finish(mut self) -> (Vec<Case>, Vec<ImportError>) {
        for (file, cfg) in &self.configs {
            let dir = run_config::dir_of(file);
            let mut used = false;
            for c in self.cases.iter_mut().filter(|c| run_config::dir_of(&c.source.file) == dir) {
                if run_config::wants_config(c) {
                    run_config::apply(c, file, cfg);
                    used = true;
                }
            }
            if !used {
                let message = "no inference-perf stage report from its directory to apply it to".into();
                self.errors.push(ImportError { file: file.clone(), line: 1, key: None, message });
            }
        }
        (self.cases, self.errors)
    }
}

/// A file's array of runs, at most [`MOST_CASES`].
#[derive(serde::Deserialize)]
struct Runs(#[serde(deserialize_with = "crate::spec::at_most::<_, _, MOST_CASES>")] Vec<Lean>);

/// A run's object without the keys no case reads, or why it is no object.
struct Lean(Result<Map<String, Value>, String>);

/// Keys of result files that no case reads: the generated texts, per-request errors and start times.
const SKIPPED: [&str; 3] = ["generated_texts", "errors", "start_times"];

impl<'de> serde::Deserialize<'de> for Lean {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LeanVisitor)
    }
}

struct LeanVisitor;

/// What a run that is not an object reads as.
fn not_object() -> Lean {
    Lean(Err("not a JSON object".into()))
}

impl<'de> serde::de::Visitor<'de> for LeanVisitor {
    type Value = Lean;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Lean, A::Error> {
        let mut obj = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if SKIPPED.contains(&key.as_str()) {
                map.next_value::<serde::de::IgnoredAny>()?;
            } else {
                let v = map.next_value::<Value>()?;
                obj.insert(key, v);
            }
        }
        Ok(Lean(Ok(obj)))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Lean, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(not_object())
    }

    fn visit_bool<E>(self, _: bool) -> Result<Lean, E> {
        Ok(not_object())
    }

    fn visit_i64<E>(self, _: i64) -> Result<Lean, E> {
        Ok(not_object())
    }

    fn visit_u64<E>(self, _: u64) -> Result<Lean, E> {
        Ok(not_object())
    }

    fn visit_f64<E>(self, _: f64) -> Result<Lean, E> {
        Ok(not_object())
    }

    fn visit_str<E>(self, _: &str) -> Result<Lean, E> {
        Ok(not_object())
    }

    fn visit_unit<E>(self) -> Result<Lean, E> {
        Ok(not_object())
    }
}

/// Bare `NaN`, `Infinity` and `-Infinity` tokens (SGLang writes them; JSON has none) outside strings become
/// `null`, `"inf"` and `"-inf"`; a text without them is not copied.
fn sanitize(text: &str) -> std::borrow::Cow<'_, str> {
    if !(text.contains("NaN") || text.contains("Infinity")) {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(sanitized(text))
}

fn sanitized(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut in_str, mut esc) = (false, false);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_str {
            in_str = esc || c != '"';
            esc = !esc && c == '\\';
        } else if c == '"' {
            in_str = true;
        } else {
            let word = [("-Infinity", "\"-inf\""), ("Infinity", "\"inf\""), ("NaN", "null")]
                .into_iter()
                .find(|(w, _)| rest.starts_with(w));
            if let Some((w, with)) = word {
                out.push_str(with);
                rest = &rest[w.len()..];
                continue;
            }
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// A run's fields, read leniently: a number may be written as a string (metadata merged in by `--metadata`);
/// keys are tried in the order given (current name first, then older ones).
struct Fields<'a> {
    obj: &'a Map<String, Value>,
    /// SGLang's `--output-details` writes the per-request lists under `details` (older versions: top level).
    details: Option<&'a Map<String, Value>>,
    notes: Vec<String>,
    from_text: Vec<String>,
}

type Bad = (Option<String>, String);

impl<'a> Fields<'a> {
    fn new(obj: &'a Map<String, Value>) -> Self {
        Fields { obj, details: obj.get("details").and_then(Value::as_object), notes: Vec::new(), from_text: Vec::new() }
    }

    /// The first of `keys` present and not null, as a finite number ≥ 0; a negative or non-numeric value is the
    /// run's error, naming the key.
    fn num(&mut self, keys: &[&str]) -> Result<Option<f64>, Bad> {
        for k in keys {
            let Some(v) = self.obj.get(*k).filter(|v| !v.is_null()) else { continue };
            let x = formats::figure(k, v)?;
            if v.is_string() && !self.from_text.iter().any(|t| t == k) {
                self.from_text.push(k.to_string());
            }
            return Ok(x);
        }
        Ok(None)
    }

    fn count(&mut self, keys: &[&str]) -> Result<Option<u64>, Bad> {
        Ok(self.num(keys)?.map(|v| v.round() as u64))
    }

    fn text(&self, keys: &[&str]) -> Option<String> {
        keys.iter().find_map(|k| self.obj.get(*k).and_then(Value::as_str)).map(str::to_string)
    }

    /// A per-request list from the top level or `details`, each entry checked by `entry` (an error names
    /// `key[i]`); None when the file has no such list.
    fn list<T>(&self, key: &str, entry: impl Fn(&Value) -> Result<T, String>) -> Result<Option<Vec<T>>, Bad> {
        let v = self.obj.get(key).or_else(|| self.details.and_then(|d| d.get(key)));
        let Some(v) = v.filter(|v| !v.is_null()) else { return Ok(None) };
        let a = v.as_array().ok_or_else(|| (Some(key.to_string()), "must be a list, one entry per request".into()))?;
        (a.iter().enumerate())
            .map(|(i, x)| entry(x).map_err(|m| (Some(format!("{key}[{i}]")), m)))
            .collect::<Result<Vec<T>, Bad>>()
            .map(Some)
    }

    /// `{mean,median}_{name}_ms` and `p{90,95,99}_{name}_ms` for the first of `names` that has any.
    fn latency(&mut self, names: &[&str]) -> Result<(LatencyMs, Option<String>), Bad> {
        for name in names {
            let l = LatencyMs {
                mean: self.num(&[&format!("mean_{name}_ms")])?,
                median: self.num(&[&format!("median_{name}_ms")])?,
                p90: self.num(&[&format!("p90_{name}_ms")])?,
                p95: self.num(&[&format!("p95_{name}_ms")])?,
                p99: self.num(&[&format!("p99_{name}_ms")])?,
            };
            if !l.is_empty() {
                return Ok((l, Some(name.to_string())));
            }
        }
        Ok((LatencyMs::default(), None))
    }
}

/// Which engine wrote a run: SGLang's `bench_serving` names its dataset and random lengths and writes E2E as
/// `*_e2e_latency_ms`; everything else is read as vLLM's.
fn engine_of(obj: &Map<String, Value>) -> &'static str {
    let sglang = [
        "dataset_name",
        "random_input_len",
        "mean_e2e_latency_ms",
        "median_e2e_latency_ms",
        "total_input",
        "sharegpt_output_len",
    ];
    if sglang.iter().any(|k| obj.contains_key(*k)) && !obj.contains_key("model_id") { "sglang" } else { "vllm" }
}

fn case_of(id: String, source: Source, obj: &Map<String, Value>) -> Result<Case, Bad> {
    if let Some(other) = formats::case_of(&id, &source, obj) {
        return other;
    }
    let mut f = Fields::new(obj);
    let engine = engine_of(obj);
    let lists = per_request(&mut f)?;
    let workload = workload_of(&mut f, engine, lists.as_ref())?;
    let measured = measured_of(&mut f, lists.as_ref())?;
    if !measured.has_latency() {
        return Err((
            None,
            "no usable metric: the run has no TTFT, TPOT, ITL or E2E figure (nor per-request lists to compute one)"
                .into(),
        ));
    }
    let mut workload = workload;
    if workload.output_lens.is_empty() && workload.output_range.is_none() {
        let w = &workload;
        let inferred = (w.mean_output_tokens)
            .and_then(|mean| super::lengths::infer_output(&measured, mean, w.mean_input_tokens, w.dataset.as_deref()));
        if let Some(i) = inferred {
            (workload.output_cv, workload.output_max_tokens) = (i.cv, i.max_tokens);
            f.notes.push(i.note);
        }
    }
    check_run(&mut f, &workload, &measured);
    if !f.from_text.is_empty() {
        f.notes.push(format!("read from text (metadata merged in as strings): {}", f.from_text.join(", ")));
    }
    if obj.contains_key("request_goodput:") {
        f.notes.push("legacy key `request_goodput:` (with a colon): goodput read from it".into());
    }
    Ok(Case {
        id,
        source,
        engine: engine.into(),
        backend: f.text(&["backend"]),
        model_id: f.text(&["model_id", "model", "tokenizer_id"]),
        tp: f.count(&["tensor_parallel_size", "tp_size", "tp"]).ok().flatten().map(|t| t.min(1 << 20) as u32),
        gpu: f.text(&["gpu", "gpu_type", "hardware"]),
        workload,
        measured,
        notes: f.notes,
    })
}

fn workload_of(f: &mut Fields, engine: &str, lists: Option<&PerRequest>) -> Result<CaseWorkload, Bad> {
    let request_rate = match f.obj.get("request_rate") {
        Some(Value::String(s)) if ["inf", "infinity", "+inf"].contains(&s.trim().to_ascii_lowercase().as_str()) => {
            Some(Rate::Infinite)
        }
        Some(Value::String(s)) if s.trim() == "trace" => None,
        None | Some(Value::Null) => None,
        _ => f.num(&["request_rate"])?.map(Rate::PerSecond),
    };
    let completed = f.count(&["completed"])?;
    let (inputs, outputs) = lists.map_or((vec![], vec![]), |l| (l.inputs.clone(), l.outputs.clone()));
    let mean_of = |v: &[u32]| (!v.is_empty()).then(|| v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64);
    let per_completed = |total: Option<f64>| match (total, completed) {
        (Some(t), Some(c)) if c > 0 => Some(t / c as f64),
        _ => None,
    };
    // With empty responses left out of the lists, their means are the served requests'; the totals are not.
    let lists_first = lists.is_some_and(|l| l.empty > 0);
    let total_in = per_completed(f.num(&["total_input_tokens", "total_input"])?);
    let total_out = per_completed(f.num(&["total_output_tokens", "total_output"])?);
    let pick = |lists: Option<f64>, totals: Option<f64>| if lists_first { lists.or(totals) } else { totals.or(lists) };
    let (input_range, output_range) = generator_ranges(f, engine)?;
    let mut w = CaseWorkload {
        request_rate,
        max_concurrency: f.count(&["max_concurrency"])?,
        burstiness: f.num(&["burstiness"])?,
        num_prompts: f.count(&["num_prompts"])?,
        dataset: f.text(&["dataset_name", "dataset"]),
        mean_input_tokens: pick(mean_of(&inputs), total_in).or(f.num(&["random_input_len", "input_len"])?),
        mean_output_tokens: pick(mean_of(&outputs), total_out).or(f.num(&["random_output_len", "output_len"])?),
        input_lens: inputs,
        output_lens: outputs,
        input_range,
        output_range,
        duration_s: f.num(&["duration"])?,
        distinct_prompts: None,
        output_cv: None,
        output_max_tokens: None,
    };
    for (what, range, mean) in
        [("input", &mut w.input_range, w.mean_input_tokens), ("output", &mut w.output_range, w.mean_output_tokens)]
    {
        let Some([lo, hi]) = *range else { continue };
        let drawn = (lo as f64 + hi as f64) / 2.0;
        match mean {
            Some(m) if (m / drawn - 1.0).abs() > 0.1 => {
                f.notes.push(format!("the {what} lengths measured (mean {m:.1}) are not the generator's uniform {lo} … {hi} (mean {drawn:.1}): the measured mean is used"));
                *range = None;
            }
            _ => f.notes.push(format!(
                "{what} lengths uniform in {lo} … {hi} tokens, as the `random` dataset drew them (`random_range_ratio`)"
            )),
        }
    }
    Ok(w)
}

/// The `random` dataset's length generator, when the file names it: SGLang's `bench_serving` draws each
/// length uniformly from [max(⌊L × ratio⌋, 1), L] for input and output alike (and ignores EOS, so outputs
/// are as drawn); vLLM's from [⌊L × (1 − ratio)⌋, ⌊L × (1 + ratio)⌋] for the input (its outputs stop at EOS
/// unless `--ignore-eos`, so only the input's range is the generator's).
/// An inclusive range of tokens, for the input and the output.
type Ranges = (Option<[u32; 2]>, Option<[u32; 2]>);

fn generator_ranges(f: &mut Fields, engine: &str) -> Result<Ranges, Bad> {
    let random = f.text(&["dataset_name", "dataset"]).is_some_and(|d| d.starts_with("random"));
    let ratio = f.num(&["random_range_ratio"])?;
    let (Some(ratio), true) = (ratio, random) else { return Ok((None, None)) };
    if ratio > 1.0 && engine == "sglang" {
        return Err((Some("random_range_ratio".into()), format!("must be from 0 to 1 (got {ratio})")));
    }
    let cap = |x: f64| x.clamp(0.0, 1e7) as u32;
    let range = |len: Option<f64>, forced: bool| -> Option<[u32; 2]> {
        let l = len.filter(|&l| l >= 1.0 && forced)?;
        Some(if engine == "sglang" {
            [cap((l * ratio).floor()).max(1), cap(l)]
        } else {
            [cap((l * (1.0 - ratio)).floor()).max(1), cap((l * (1.0 + ratio)).floor())]
        })
    };
    let input = range(f.num(&["random_input_len"])?, true);
    let output = range(f.num(&["random_output_len"])?, engine == "sglang");
    Ok((input, output))
}

/// A request's tokens in a per-request list: a whole number from 0 to 10^7.
fn tokens_entry(x: &Value) -> Result<u32, String> {
    match x.as_f64().or_else(|| x.as_str()?.trim().parse().ok()) {
        Some(v) if v.fract() == 0.0 && (0.0..=1e7).contains(&v) => Ok(v as u32),
        _ => Err(format!("must be a whole number of tokens from 0 to 10,000,000 (got {x})")),
    }
}

/// A request's time in seconds, ≥ 0 and finite; null (a failed request's) is none.
fn seconds_entry(x: &Value) -> Result<Option<f64>, String> {
    if x.is_null() {
        return Ok(None);
    }
    match x.as_f64().or_else(|| x.as_str()?.trim().parse().ok()) {
        Some(v) if v.is_finite() && v >= 0.0 => Ok(Some(v)),
        _ => Err(format!("must be a time in seconds ≥ 0 (got {x})")),
    }
}

/// A request's inter-token gaps: a list of seconds (or one number).
fn gaps_entry(x: &Value) -> Result<Vec<f64>, String> {
    match x {
        Value::Array(a) => a.iter().map(|g| seconds_entry(g).map(|v| v.unwrap_or(0.0))).collect(),
        _ => seconds_entry(x).map(|v| v.into_iter().collect()),
    }
}

/// The per-request lists (vLLM's `--save-detailed` and the legacy script, SGLang's `--output-details`),
/// checked entry by entry and against each other, with the empty responses (0 output tokens, or no TTFT or
/// latency) left out: what the requests served measured.
struct PerRequest {
    inputs: Vec<u32>,
    outputs: Vec<u32>,
    ttfts_s: Vec<f64>,
    latencies_s: Vec<f64>,
    /// Every served request's inter-token gaps, in one list.
    itls_s: Vec<f64>,
    /// TPOT of each served request of 2 or more tokens: (latency − TTFT) / (output − 1), as vLLM computes it.
    tpots_s: Vec<f64>,
    empty: usize,
}

fn per_request(f: &mut Fields) -> Result<Option<PerRequest>, Bad> {
    let inputs = f.list("input_lens", tokens_entry)?;
    let outputs = f.list("output_lens", tokens_entry)?;
    let ttfts = f.list("ttfts", seconds_entry)?;
    let latencies = f.list("latencies", seconds_entry)?;
    let itls = f.list("itls", gaps_entry)?;
    let sizes: Vec<(&str, usize)> = [
        ("input_lens", inputs.as_ref().map(Vec::len)),
        ("output_lens", outputs.as_ref().map(Vec::len)),
        ("ttfts", ttfts.as_ref().map(Vec::len)),
        ("latencies", latencies.as_ref().map(Vec::len)),
        ("itls", itls.as_ref().map(Vec::len)),
    ]
    .into_iter()
    .filter_map(|(k, n)| Some((k, n?)))
    .collect();
    let Some(&(_, n)) = sizes.first() else { return Ok(None) };
    if sizes.iter().any(|&(_, m)| m != n) {
        let said: Vec<String> = sizes.iter().map(|(k, m)| format!("{k} {m}")).collect();
        f.notes.push(format!("the per-request lists disagree in length ({}): they are not used", said.join(", ")));
        return Ok(None);
    }
    let at = |v: &Option<Vec<Option<f64>>>, i: usize| v.as_ref().map(|v| v[i]);
    let mut pr = PerRequest {
        inputs: vec![],
        outputs: vec![],
        ttfts_s: vec![],
        latencies_s: vec![],
        itls_s: vec![],
        tpots_s: vec![],
        empty: 0,
    };
    for i in 0..n {
        let (ttft, latency) = (at(&ttfts, i), at(&latencies, i));
        if let (Some(Some(t)), Some(Some(l))) = (ttft, latency)
            && t > l + 1e-9
        {
            return Err((
                Some(format!("ttfts[{i}]")),
                format!("a TTFT of {t} s is longer than the request's latency ({l} s)"),
            ));
        }
        let out = outputs.as_ref().map(|o| o[i]);
        if out == Some(0) || ttft == Some(None) || latency == Some(None) || ttft == Some(Some(0.0)) && out.is_none() {
            pr.empty += 1;
            continue;
        }
        (inputs.as_ref()).inspect(|v| pr.inputs.push(v[i]));
        out.inspect(|&o| pr.outputs.push(o));
        ttft.flatten().inspect(|&t| pr.ttfts_s.push(t));
        latency.flatten().inspect(|&l| pr.latencies_s.push(l));
        (itls.as_ref()).inspect(|v| pr.itls_s.extend_from_slice(&v[i]));
        if let (Some(Some(t)), Some(Some(l)), Some(o)) = (ttft, latency, out)
            && o > 1
        {
            pr.tpots_s.push((l - t) / (o - 1) as f64);
        }
    }
    let (completed, failed) = (f.count(&["completed"])?, f.count(&["failed"])?.unwrap_or(0));
    if let Some(c) = completed
        && n as u64 != c
        && n as u64 != c + failed
    {
        f.notes.push(format!("the per-request lists hold {n} requests, the run says completed {c} (failed {failed})"));
    }
    Ok(Some(pr))
}

fn measured_of(f: &mut Fields, lists: Option<&PerRequest>) -> Result<Measured, Bad> {
    let (ttft_ms, _) = f.latency(&["ttft"])?;
    let (tpot_ms, _) = f.latency(&["tpot"])?;
    let (itl_ms, _) = f.latency(&["itl"])?;
    let (e2e_ms, e2e_name) = f.latency(&["e2el", "e2e_latency", "latency"])?;
    if e2e_name.as_deref() == Some("latency") {
        f.notes.push("E2E read from the old name `*_latency_ms`".into());
    }
    let mut m = Measured {
        completed: f.count(&["completed"])?,
        failed: f.count(&["failed"])?,
        ttft_ms,
        tpot_ms,
        itl_ms,
        e2e_ms,
        request_throughput_rps: f.num(&["request_throughput"])?,
        output_throughput_tps: f.num(&["output_throughput"])?,
        total_token_throughput_tps: f.num(&["total_token_throughput", "total_throughput"])?,
    };
    if let Some(l) = lists {
        from_lists(f, l, &mut m);
    }
    Ok(m)
}

/// Statistics from the per-request lists: every one when empty responses were left out of them (the file's
/// aggregates count those), otherwise only those the file has no aggregate for; said in a note.
fn from_lists(f: &mut Fields, l: &PerRequest, m: &mut Measured) {
    let before = m.ttft_ms.median;
    let mut computed = Vec::new();
    for (name, list, stat) in [
        ("TTFT", &l.ttfts_s, &mut m.ttft_ms),
        ("E2E", &l.latencies_s, &mut m.e2e_ms),
        ("TPOT", &l.tpots_s, &mut m.tpot_ms),
        ("ITL", &l.itls_s, &mut m.itl_ms),
    ] {
        if !list.is_empty() && (stat.is_empty() || l.empty > 0) {
            *stat = stats_ms(list);
            computed.push(name);
        }
    }
    if l.empty > 0 {
        let median = |x: Option<f64>| x.map_or("—".into(), |v| format!("{v:.1} ms"));
        f.notes.push(format!(
            "{} empty response(s) (0 output tokens, or no TTFT) left out of every statistic and of the replayed pairs ({} computed from the lists; TTFT median {} in the file's aggregates, {} without them)",
            l.empty,
            computed.join(", "),
            median(before),
            median(m.ttft_ms.median)
        ));
    } else if !computed.is_empty() {
        f.notes.push(format!("{} computed from the per-request lists (no aggregate in the file)", computed.join(", ")));
    }
}

/// Mean, median, p90, p95, p99 (linear interpolation) of seconds, in ms.
fn stats_ms(v: &[f64]) -> LatencyMs {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    s.sort_by(f64::total_cmp);
    if s.is_empty() {
        return LatencyMs::default();
    }
    let p = |q: f64| crate::metrics::percentile(&s, q) * 1e3;
    LatencyMs {
        mean: Some(s.iter().sum::<f64>() / s.len() as f64 * 1e3),
        median: Some(p(50.0)),
        p90: Some(p(90.0)),
        p95: Some(p(95.0)),
        p99: Some(p(99.0)),
    }
}

/// Notes on what a run is missing or what may mislead a comparison.
fn check_run(f: &mut Fields, w: &CaseWorkload, m: &Measured) {
    let missing: Vec<&str> = [
        ("duration", w.duration_s.is_none()),
        ("completed", m.completed.is_none()),
        ("token totals", w.mean_input_tokens.is_none() || w.mean_output_tokens.is_none()),
        ("request throughput", m.request_throughput_rps.is_none()),
        ("TPOT", m.tpot_ms.is_empty()),
        ("p99 latencies", m.ttft_ms.p99.is_none() && m.e2e_ms.p99.is_none()),
    ]
    .into_iter()
    .filter_map(|(what, gone)| gone.then_some(what))
    .collect();
    if !missing.is_empty() {
        f.notes.push(format!("missing: {}", missing.join(", ")));
    }
    if w.request_rate == Some(Rate::Infinite) {
        f.notes.push(match w.max_concurrency {
            Some(n) => format!("request_rate inf under max_concurrency {n}: closed loop, {n} clients each sending on its previous completion"),
            None => "request_rate inf without max_concurrency: a burst of every prompt at t = 0".into(),
        });
    }
    if let (Some(itl), Some(tpot)) = (m.itl_ms.mean, m.tpot_ms.mean)
        && tpot > 0.0
        && itl > 2.0 * tpot
    {
        f.notes.push(format!(
            "ITL is per streamed chunk (mean ITL {:.1}× mean TPOT): TPOT is the per-token figure",
            itl / tpot
        ));
    }
    let requested = f.num(&["random_output_len", "output_len"]).ok().flatten();
    if let (Some(req), Some(got), None) = (requested, w.mean_output_tokens, w.output_range)
        && req > 0.0
        && (got / req - 1.0).abs() > 0.1
    {
        f.notes.push(format!(
            "outputs were not forced to the requested length: {got:.1} tokens per request against {req:.0} asked"
        ));
    }
}
