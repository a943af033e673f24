//! Reading benchmark result files leniently (docs/truth.md): field sets drift between versions, and files in the
//! wild carry every quirk of `docs/truth.md`'s list — `"request_goodput:"` with a colon, `request_rate` as `"inf"`
//! or a bare `Infinity`, JSON Lines under a `.json` name, metadata merged in as strings, stripped files, old
//! names (`*_latency_ms` for E2E), per-request lists present or not. One bad run never loses the others.

use serde_json::{Map, Value};

use super::{Case, CaseWorkload, LatencyMs, Measured, Rate, Source};

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
pub fn import(file: &str, text: &str) -> (Vec<Case>, Vec<ImportError>) {
    let text = sanitize(text.trim_start_matches('\u{feff}'));
    let runs = runs_of(&text);
    let one_run = runs.len() == 1;
    let (mut cases, mut errors) = (Vec::new(), Vec::new());
    for (line, run) in runs {
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
    }
    (cases, errors)
}

/// Bare `NaN`, `Infinity` and `-Infinity` tokens (SGLang writes them; JSON has none) outside strings become
/// `null`, `"inf"` and `"-inf"`.
fn sanitize(text: &str) -> String {
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

/// The runs of a file: one JSON object, an array of them, or JSON Lines (whatever the file's name says); each
/// with its 1-based line.
/// A run's 1-based line and its object, or why it is none.
type Run = (usize, Result<Map<String, Value>, String>);

fn runs_of(text: &str) -> Vec<Run> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => return vec![(1, Ok(m))],
        Ok(Value::Array(a)) => {
            return a
                .into_iter()
                .enumerate()
                .map(|(i, v)| {
                    (i + 1, v.as_object().cloned().ok_or_else(|| format!("run {} is not a JSON object", i + 1)))
                })
                .collect();
        }
        Ok(_) => return vec![(1, Err("not a JSON object".into()))],
        Err(_) => {}
    }
    let lines: Vec<_> = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return vec![(1, Err("the file is empty".into()))];
    }
    (lines.into_iter())
        .map(|(i, l)| {
            let run = match serde_json::from_str::<Value>(l) {
                Ok(Value::Object(m)) => Ok(m),
                Ok(_) => Err("not a JSON object".to_string()),
                Err(e) => Err(format!("not JSON ({e}); a result file is one JSON object, or one per line")),
            };
            (i + 1, run)
        })
        .collect()
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
            let x = match self.obj.get(*k) {
                None | Some(Value::Null) => continue,
                Some(Value::Number(n)) => n.as_f64(),
                Some(Value::String(s)) => {
                    let v = s.trim().parse::<f64>().ok();
                    if v.is_some() && !self.from_text.iter().any(|t| t == k) {
                        self.from_text.push(k.to_string());
                    }
                    v
                }
                Some(_) => None,
            };
            return match x {
                Some(v) if v.is_finite() && v >= 0.0 => Ok(Some(v)),
                Some(v) => Err((Some(k.to_string()), format!("must be a finite number ≥ 0 (got {v})"))),
                None => Err((Some(k.to_string()), format!("must be a number (got {})", self.obj[*k]))),
            };
        }
        Ok(None)
    }

    fn count(&mut self, keys: &[&str]) -> Result<Option<u64>, Bad> {
        Ok(self.num(keys)?.map(|v| v.round() as u64))
    }

    fn text(&self, keys: &[&str]) -> Option<String> {
        keys.iter().find_map(|k| self.obj.get(*k).and_then(Value::as_str)).map(str::to_string)
    }

    /// A per-request list of numbers, from the top level or `details`.
    fn list(&self, key: &str) -> Vec<f64> {
        let v = self.obj.get(key).or_else(|| self.details.and_then(|d| d.get(key)));
        v.and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|x| x.as_f64().or_else(|| x.as_str()?.parse().ok())).collect())
            .unwrap_or_default()
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
    let mut f = Fields::new(obj);
    let engine = engine_of(obj);
    let workload = workload_of(&mut f)?;
    let measured = measured_of(&mut f, &workload)?;
    if !measured.has_latency() {
        return Err((
            None,
            "no usable metric: the run has no TTFT, TPOT, ITL or E2E figure (nor per-request lists to compute one)"
                .into(),
        ));
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
        workload,
        measured,
        notes: f.notes,
    })
}

fn workload_of(f: &mut Fields) -> Result<CaseWorkload, Bad> {
    let request_rate = match f.obj.get("request_rate") {
        Some(Value::String(s)) if ["inf", "infinity", "+inf"].contains(&s.trim().to_ascii_lowercase().as_str()) => {
            Some(Rate::Infinite)
        }
        Some(Value::String(s)) if s.trim() == "trace" => None,
        None | Some(Value::Null) => None,
        _ => f.num(&["request_rate"])?.map(Rate::PerSecond),
    };
    let completed = f.count(&["completed"])?;
    let (inputs, outputs) = (f.list("input_lens"), f.list("output_lens"));
    let mean_of = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let per_completed = |total: Option<f64>| match (total, completed) {
        (Some(t), Some(c)) if c > 0 => Some(t / c as f64),
        _ => None,
    };
    let total_in = f.num(&["total_input_tokens", "total_input"])?;
    let total_out = f.num(&["total_output_tokens", "total_output"])?;
    let w = CaseWorkload {
        request_rate,
        max_concurrency: f.count(&["max_concurrency"])?,
        burstiness: f.num(&["burstiness"])?,
        num_prompts: f.count(&["num_prompts"])?,
        dataset: f.text(&["dataset_name", "dataset"]),
        mean_input_tokens: per_completed(total_in)
            .or_else(|| mean_of(&inputs))
            .or(f.num(&["random_input_len", "input_len"])?),
        mean_output_tokens: per_completed(total_out)
            .or_else(|| mean_of(&outputs))
            .or(f.num(&["random_output_len", "output_len"])?),
        input_lens: inputs.iter().map(|x| *x as u32).collect(),
        output_lens: outputs.iter().map(|x| *x as u32).collect(),
        duration_s: f.num(&["duration"])?,
    };
    Ok(w)
}

fn measured_of(f: &mut Fields, w: &CaseWorkload) -> Result<Measured, Bad> {
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
    from_lists(f, w, &mut m);
    Ok(m)
}

/// Latencies the file has only as per-request lists (seconds): their statistics, said in a note.
fn from_lists(f: &mut Fields, w: &CaseWorkload, m: &mut Measured) {
    let (ttfts, latencies) = (f.list("ttfts"), f.list("latencies"));
    let mut computed = Vec::new();
    if m.ttft_ms.is_empty() && !ttfts.is_empty() {
        m.ttft_ms = stats_ms(&ttfts);
        computed.push("TTFT");
    }
    if m.e2e_ms.is_empty() && !latencies.is_empty() {
        m.e2e_ms = stats_ms(&latencies);
        computed.push("E2E");
    }
    if m.tpot_ms.is_empty() && ttfts.len() == latencies.len() && latencies.len() == w.output_lens.len() {
        // vLLM's TPOT of a request: (latency − TTFT) / (output tokens − 1), over requests of 2 or more tokens.
        let per: Vec<f64> = (0..latencies.len())
            .filter(|&i| w.output_lens[i] > 1)
            .map(|i| (latencies[i] - ttfts[i]) / (w.output_lens[i] - 1) as f64)
            .collect();
        if !per.is_empty() {
            m.tpot_ms = stats_ms(&per);
            computed.push("TPOT");
        }
    }
    if !computed.is_empty() {
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
    let empty = w.output_lens.iter().filter(|&&o| o == 0).count();
    if empty > 0 {
        f.notes.push(format!("{empty} request(s) with no output counted as completed: they pull the means down"));
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
    if let (Some(req), Some(got)) = (requested, w.mean_output_tokens)
        && req > 0.0
        && (got / req - 1.0).abs() > 0.1
    {
        f.notes.push(format!(
            "outputs were not forced to the requested length: {got:.1} tokens per request against {req:.0} asked"
        ));
    }
}
