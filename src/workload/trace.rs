//! Trace parsing: the column shapes of the public traces (docs/scenario.md). Lenient about extra columns and
//! column order; every error names the line.

use crate::spec::TraceFormat;

/// One replayed request: arrival relative to the trace's first row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceRow {
    pub arrival_ns: u64,
    pub prompt_tokens: u32,
    pub output_tokens: u32,
}

/// Each request's chain of block hashes (Mooncake's `hash_ids`, one per block of the prompt; equal leading ids
/// are a shared prefix), in row order: row i's are `flat[start[i]..start[i + 1]]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HashChains {
    flat: Vec<u64>,
    start: Vec<u32>,
}

impl HashChains {
    /// Row `i`'s hashes (none past the last row).
    pub fn of(&self, i: usize) -> &[u64] {
        match (self.start.get(i), self.start.get(i + 1)) {
            (Some(&a), Some(&b)) => &self.flat[a as usize..b as usize],
            _ => &[],
        }
    }
    pub fn total(&self) -> usize {
        self.flat.len()
    }
}

/// The largest block hash taken: entries of the reuse cache keep the top bit for their kind.
pub const MAX_HASH: u64 = (1 << 53) - 1;

const MAX_ROWS: usize = 50_000_000;
/// The longest span a trace may have, ns (`workload::MAX_SPAN_NS`).
const MAX_SPAN_NS: i128 = 1_000_000_000_000_000_000;

/// Parse a trace's text. Rows are sorted by arrival (stable), and times are made relative to the first.
pub fn parse(text: &str, format: TraceFormat) -> Result<Vec<TraceRow>, String> {
    parse_with_chains(text, format).map(|(rows, _)| rows)
}

/// [`parse`], with the rows' block-hash chains when the trace has them (Mooncake's `hash_ids`), in the
/// sorted rows' order.
pub fn parse_with_chains(text: &str, format: TraceFormat) -> Result<(Vec<TraceRow>, Option<HashChains>), String> {
    let text = text.trim_start_matches('\u{feff}');
    let format = match format {
        TraceFormat::Auto => detect(text)?,
        f => f,
    };
    let (mut rows, mut chains) = match format {
        TraceFormat::Mooncake => parse_mooncake(text)?,
        _ => (parse_csv(text, format)?, Vec::new()),
    };
    if rows.is_empty() {
        return Err("the trace has no request rows".into());
    }
    if rows.len() > MAX_ROWS {
        return Err(format!("the trace has {} rows; at most {MAX_ROWS} are supported", rows.len()));
    }
    if chains.iter().all(Vec::is_empty) {
        chains.clear();
    }
    if chains.is_empty() {
        rows.sort_by_key(|r| r.0);
    } else {
        // Sort the chains with their rows (stable, as the rows alone are).
        let mut order: Vec<usize> = (0..rows.len()).collect();
        order.sort_by_key(|&i| rows[i].0);
        rows = order.iter().map(|&i| rows[i]).collect();
        chains = order.iter().map(|&i| std::mem::take(&mut chains[i])).collect();
    }
    let t0 = rows[0].0;
    // Relative to the first row, every arrival must stay on the simulated clock (u64 ns, less the drain).
    let (last, _, _) = rows[rows.len() - 1];
    if last - t0 > MAX_SPAN_NS {
        return Err(format!(
            "the trace spans {:.3e} s from its first to its last request, past the simulated clock's limit of {:.0e} s (about 31 years)",
            (last - t0) as f64 / 1e9,
            MAX_SPAN_NS as f64 / 1e9
        ));
    }
    let chains = (!chains.is_empty()).then(|| {
        let mut h = HashChains {
            flat: Vec::with_capacity(chains.iter().map(Vec::len).sum()),
            start: Vec::with_capacity(chains.len() + 1),
        };
        for c in &chains {
            h.start.push(h.flat.len() as u32);
            h.flat.extend_from_slice(c);
        }
        h.start.push(h.flat.len() as u32);
        h
    });
    Ok((
        rows.into_iter()
            .map(|(t, p, o)| TraceRow { arrival_ns: (t - t0) as u64, prompt_tokens: p, output_tokens: o })
            .collect(),
        chains,
    ))
}

/// Stretch or compress the gaps.
pub fn scale(rows: Vec<TraceRow>, time_scale: f64) -> Vec<TraceRow> {
    if time_scale == 1.0 {
        return rows;
    }
    rows.into_iter().map(|r| TraceRow { arrival_ns: (r.arrival_ns as f64 * time_scale).round() as u64, ..r }).collect()
}

fn detect(text: &str) -> Result<TraceFormat, String> {
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    if first.trim_start().starts_with('{') {
        return Ok(TraceFormat::Mooncake);
    }
    let header: Vec<String> =
        reader(first).headers().map(|h| h.iter().map(str::to_string).collect()).unwrap_or_default();
    let has = |name: &str| header.iter().any(|h| h == name);
    if has("arrived_at") {
        Ok(TraceFormat::Vidur)
    } else if has("TIMESTAMP") && has("ContextTokens") {
        Ok(TraceFormat::Azure)
    } else if has("Timestamp") && has("Request tokens") {
        Ok(TraceFormat::Burstgpt)
    } else {
        Err(format!(
            "line 1: cannot tell the trace format from the header `{}`; expected Vidur (arrived_at, num_prefill_tokens, num_decode_tokens), Azure (TIMESTAMP, ContextTokens, GeneratedTokens), BurstGPT (Timestamp, Request tokens, Response tokens) or Mooncake JSONL",
            first.chars().take(120).collect::<String>()
        ))
    }
}

/// A CSV reader (the `csv` crate: RFC 4180 quoting, CRLF or LF): the first record is the header, fields are
/// trimmed, and rows may have more or fewer fields than the header (a missing value is reported at its row).
fn reader(text: &str) -> csv::Reader<&[u8]> {
    csv::ReaderBuilder::new().has_headers(true).flexible(true).trim(csv::Trim::All).from_reader(text.as_bytes())
}

/// Rows as (arrival ns on the trace's own clock, prompt, output).
fn parse_csv(text: &str, format: TraceFormat) -> Result<Vec<(i128, u32, u32)>, String> {
    let (t_col, p_col, o_col) = match format {
        TraceFormat::Vidur => ("arrived_at", "num_prefill_tokens", "num_decode_tokens"),
        TraceFormat::Azure => ("TIMESTAMP", "ContextTokens", "GeneratedTokens"),
        TraceFormat::Burstgpt => ("Timestamp", "Request tokens", "Response tokens"),
        TraceFormat::Auto | TraceFormat::Mooncake => unreachable!("resolved by the caller"),
    };
    // Blank lines before the header are not part of the CSV.
    let skipped = text.lines().take_while(|l| l.trim().is_empty()).count();
    let body = text.split_inclusive('\n').skip(skipped).collect::<String>();
    let mut rd = reader(&body);
    let header: Vec<String> = rd.headers().map_err(|e| format!("line 1: {e}"))?.iter().map(str::to_string).collect();
    if header.iter().all(|h| h.is_empty()) {
        return Err("the trace is empty".into());
    }
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .ok_or_else(|| format!("line 1: missing column `{name}` (header has: {})", header.join(", ")))
    };
    let (ti, pi, oi) = (col(t_col)?, col(p_col)?, col(o_col)?);
    let mut rows = Vec::new();
    for rec in rd.records() {
        let rec = rec.map_err(|e| format!("line {}: {e}", e.position().map_or(0, |p| p.line() as usize + skipped)))?;
        let line = rec.position().map_or(0, |p| p.line() as usize) + skipped;
        if rec.iter().all(str::is_empty) {
            continue; // a line of blanks
        }
        let get = |i: usize, name: &str| {
            rec.get(i).filter(|s| !s.is_empty()).ok_or_else(|| format!("line {line}: missing value for `{name}`"))
        };
        let t = match format {
            TraceFormat::Azure => {
                parse_datetime(get(ti, t_col)?).map_err(|m| format!("line {line}: `{t_col}`: {m}"))?
            }
            _ => {
                let s = get(ti, t_col)?;
                let secs =
                    s.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0 && *v < 1e9).ok_or_else(|| {
                        format!("line {line}: `{t_col}` must be a time from 0 to 1e9 seconds (got `{s}`)")
                    })?;
                (secs * 1e9).round() as i128
            }
        };
        let p = tokens(get(pi, p_col)?, p_col, line - 1)?;
        let o = tokens(get(oi, o_col)?, o_col, line - 1)?;
        if format == TraceFormat::Burstgpt && o == 0 {
            continue; // BurstGPT marks failed requests with 0 response tokens.
        }
        if p == 0 || o == 0 {
            return Err(format!("line {line}: token counts must be ≥ 1 (got {p_col} = {p}, {o_col} = {o})"));
        }
        rows.push((t, p, o));
    }
    Ok(rows)
}

fn tokens(s: &str, name: &str, n: usize) -> Result<u32, String> {
    // Some exports write counts as floats ("512.0").
    let v: f64 =
        s.parse().map_err(|_| format!("line {}: `{name}` must be a whole number of tokens (got `{s}`)", n + 1))?;
    if !(v.is_finite() && (0.0..=10_000_000.0).contains(&v) && v.fract() == 0.0) {
        return Err(format!(
            "line {}: `{name}` must be a whole number of tokens from 0 to 10,000,000 (got `{s}`)",
            n + 1
        ));
    }
    Ok(v as u32)
}

/// Rows as parsed: (arrival ns, prompt tokens, output tokens), and each row's block hashes.
type Parsed = (Vec<(i128, u32, u32)>, Vec<Vec<u64>>);

/// Mooncake's JSONL: `timestamp` (ms), `input_length`, `output_length`, and `hash_ids` when it has them.
fn parse_mooncake(text: &str) -> Result<Parsed, String> {
    let (mut rows, mut chains) = (Vec::new(), Vec::new());
    let mut total_hashes = 0usize;
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("line {}: not a JSON object: {e}", n + 1))?;
        let num = |k: &str| {
            v.get(k)
                .and_then(|x| x.as_f64())
                .filter(|x| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| format!("line {}: missing or invalid `{k}`", n + 1))
        };
        let ms = num("timestamp")?;
        if ms >= 1e12 {
            return Err(format!("line {}: `timestamp` must be below 1e12 ms", n + 1));
        }
        let t = (ms * 1e6).round() as i128;
        let p = tokens(&num("input_length")?.to_string(), "input_length", n)?;
        let o = tokens(&num("output_length")?.to_string(), "output_length", n)?;
        if p == 0 || o == 0 {
            return Err(format!("line {}: token counts must be ≥ 1", n + 1));
        }
        let chain = hash_ids(&v, n)?;
        total_hashes += chain.len();
        if total_hashes > u32::MAX as usize / 2 {
            return Err(format!("line {}: more than {} hash_ids in the trace", n + 1, u32::MAX / 2));
        }
        rows.push((t, p, o));
        chains.push(chain);
    }
    Ok((rows, chains))
}

/// A row's `hash_ids`: absent, or an array of whole numbers 0 … 2^53 − 1 (at most 100,000: 51 M tokens at 512
/// a block).
fn hash_ids(v: &serde_json::Value, n: usize) -> Result<Vec<u64>, String> {
    let Some(ids) = v.get("hash_ids") else { return Ok(Vec::new()) };
    let bad = || format!("line {}: `hash_ids` must be an array of whole numbers from 0 to 2^53 − 1", n + 1);
    let ids = ids.as_array().ok_or_else(bad)?;
    if ids.len() > 100_000 {
        return Err(format!("line {}: `hash_ids` has {} entries; at most 100,000", n + 1, ids.len()));
    }
    ids.iter().map(|x| x.as_u64().filter(|h| *h <= MAX_HASH).ok_or_else(bad)).collect()
}

/// `2023-11-16 18:15:46.6805900` → nanoseconds since 1970 (UTC assumed; only differences matter), by
/// `jiff`'s ISO 8601 parser (a space or `T` between date and time, up to nine fraction digits, years 0 to
/// 9999). In i128: years far from 1970 do not wrap.
fn parse_datetime(s: &str) -> Result<i128, String> {
    let bad = |why: String| format!("expected `YYYY-MM-DD HH:MM:SS[.fraction]` (got `{s}`: {why})");
    let text = s.trim_end_matches(['Z', 'z']);
    // A date alone, or a time without seconds, is not a timestamp of the trace's shape.
    if text.split_once([' ', 'T']).is_none_or(|(_, time)| time.matches(':').count() != 2) {
        return Err(bad("a date and a time to the second are needed".into()));
    }
    let dt: jiff::civil::DateTime = text.parse().map_err(|e: jiff::Error| bad(e.to_string()))?;
    let epoch = jiff::civil::date(1970, 1, 1).at(0, 0, 0, 0);
    Ok(dt.duration_since(epoch).as_nanos())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn azure_dates() {
        let a = parse_datetime("2023-11-16 18:15:46.6805900").unwrap();
        let b = parse_datetime("2023-11-17 18:15:46.6805900").unwrap();
        assert_eq!(b - a, 86_400_000_000_000);
        assert_eq!(parse_datetime("1970-01-01 00:00:00").unwrap(), 0);
        assert_eq!(parse_datetime("1970-01-01 00:00:01.5").unwrap(), 1_500_000_000);
        assert_eq!(parse_datetime("1970-01-01T00:00:01.000000001Z").unwrap(), 1_000_000_001);
        // 292 years past 1970 would wrap an i64 of nanoseconds.
        assert_eq!(
            parse_datetime("2400-01-01 00:00:00").unwrap() - parse_datetime("2399-12-31 00:00:00").unwrap(),
            86_400_000_000_000
        );
        assert!(parse_datetime("2023-13-01 00:00:00").is_err());
        assert!(parse_datetime("2023-11-16").is_err());
    }
}
