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

const MAX_ROWS: usize = 50_000_000;

/// Parse a trace's text. Rows are sorted by arrival (stable), and times are made relative to the first.
pub fn parse(text: &str, format: TraceFormat) -> Result<Vec<TraceRow>, String> {
    let text = text.trim_start_matches('\u{feff}');
    let format = match format {
        TraceFormat::Auto => detect(text)?,
        f => f,
    };
    let mut rows = match format {
        TraceFormat::Mooncake => parse_mooncake(text)?,
        _ => parse_csv(text, format)?,
    };
    if rows.is_empty() {
        return Err("the trace has no request rows".into());
    }
    if rows.len() > MAX_ROWS {
        return Err(format!("the trace has {} rows; at most {MAX_ROWS} are supported", rows.len()));
    }
    rows.sort_by_key(|r| r.0);
    let t0 = rows[0].0;
    Ok(rows.into_iter().map(|(t, p, o)| TraceRow { arrival_ns: (t - t0) as u64, prompt_tokens: p, output_tokens: o }).collect())
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
    let header: Vec<String> = split_csv(first).into_iter().map(|h| h.trim().to_string()).collect();
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

/// Split one CSV line, honouring double quotes.
fn split_csv(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut quoted) = (0, false);
    for (i, c) in line.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                out.push(line[start..i].trim_matches('"'));
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(line[start..].trim_end_matches(['\r']).trim_matches('"'));
    out
}

/// Rows as (arrival ns on the trace's own clock, prompt, output).
fn parse_csv(text: &str, format: TraceFormat) -> Result<Vec<(i64, u32, u32)>, String> {
    let (t_col, p_col, o_col) = match format {
        TraceFormat::Vidur => ("arrived_at", "num_prefill_tokens", "num_decode_tokens"),
        TraceFormat::Azure => ("TIMESTAMP", "ContextTokens", "GeneratedTokens"),
        TraceFormat::Burstgpt => ("Timestamp", "Request tokens", "Response tokens"),
        TraceFormat::Auto | TraceFormat::Mooncake => unreachable!("resolved by the caller"),
    };
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    let (_, header) = lines.next().ok_or("the trace is empty")?;
    let header: Vec<&str> = split_csv(header).into_iter().map(str::trim).collect();
    let col = |name: &str| {
        header.iter().position(|h| *h == name).ok_or_else(|| format!("line 1: missing column `{name}` (header has: {})", header.join(", ")))
    };
    let (ti, pi, oi) = (col(t_col)?, col(p_col)?, col(o_col)?);
    let mut rows = Vec::new();
    for (n, line) in lines {
        let f = split_csv(line);
        let get = |i: usize, name: &str| {
            f.get(i).map(|s| s.trim()).filter(|s| !s.is_empty()).ok_or_else(|| format!("line {}: missing value for `{name}`", n + 1))
        };
        let t = match format {
            TraceFormat::Azure => parse_datetime(get(ti, t_col)?).map_err(|m| format!("line {}: `{t_col}`: {m}", n + 1))?,
            _ => {
                let s = get(ti, t_col)?;
                let secs = s
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite() && *v >= 0.0 && *v < 1e9)
                    .ok_or_else(|| format!("line {}: `{t_col}` must be a time from 0 to 1e9 seconds (got `{s}`)", n + 1))?;
                (secs * 1e9).round() as i64
            }
        };
        let p = tokens(get(pi, p_col)?, p_col, n)?;
        let o = tokens(get(oi, o_col)?, o_col, n)?;
        if format == TraceFormat::Burstgpt && o == 0 {
            continue; // BurstGPT marks failed requests with 0 response tokens.
        }
        if p == 0 || o == 0 {
            return Err(format!("line {}: token counts must be ≥ 1 (got {p_col} = {p}, {o_col} = {o})", n + 1));
        }
        rows.push((t, p, o));
    }
    Ok(rows)
}

fn tokens(s: &str, name: &str, n: usize) -> Result<u32, String> {
    // Some exports write counts as floats ("512.0").
    let v: f64 = s.parse().map_err(|_| format!("line {}: `{name}` must be a whole number of tokens (got `{s}`)", n + 1))?;
    if !(v.is_finite() && (0.0..=10_000_000.0).contains(&v) && v.fract() == 0.0) {
        return Err(format!("line {}: `{name}` must be a whole number of tokens from 0 to 10,000,000 (got `{s}`)", n + 1));
    }
    Ok(v as u32)
}

fn parse_mooncake(text: &str) -> Result<Vec<(i64, u32, u32)>, String> {
    let mut rows = Vec::new();
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| format!("line {}: not a JSON object: {e}", n + 1))?;
        let num = |k: &str| {
            v.get(k).and_then(|x| x.as_f64()).filter(|x| x.is_finite() && *x >= 0.0).ok_or_else(|| format!("line {}: missing or invalid `{k}`", n + 1))
        };
        let ms = num("timestamp")?;
        if ms >= 1e12 {
            return Err(format!("line {}: `timestamp` must be below 1e12 ms", n + 1));
        }
        let t = (ms * 1e6).round() as i64;
        let p = tokens(&num("input_length")?.to_string(), "input_length", n)?;
        let o = tokens(&num("output_length")?.to_string(), "output_length", n)?;
        if p == 0 || o == 0 {
            return Err(format!("line {}: token counts must be ≥ 1", n + 1));
        }
        rows.push((t, p, o));
    }
    Ok(rows)
}

/// `2023-11-16 18:15:46.6805900` → nanoseconds since 1970 (UTC assumed; only differences matter). Whole
/// seconds and the fraction are kept apart so no precision is lost to a float.
fn parse_datetime(s: &str) -> Result<i64, String> {
    let bad = || format!("expected `YYYY-MM-DD HH:MM:SS[.fraction]` (got `{s}`)");
    let (date, time) = s.split_once([' ', 'T']).ok_or_else(bad)?;
    let d: Vec<&str> = date.split('-').collect();
    let t: Vec<&str> = time.trim_end_matches('Z').split(':').collect();
    if d.len() != 3 || t.len() != 3 {
        return Err(bad());
    }
    let y: i64 = d[0].parse().map_err(|_| bad())?;
    let m: i64 = d[1].parse().map_err(|_| bad())?;
    let day: i64 = d[2].parse().map_err(|_| bad())?;
    let hh: i64 = t[0].parse().map_err(|_| bad())?;
    let mm: i64 = t[1].parse().map_err(|_| bad())?;
    let (whole, frac) = t[2].split_once('.').unwrap_or((t[2], ""));
    let ss: i64 = whole.parse().map_err(|_| bad())?;
    if frac.len() > 9 || !frac.chars().all(|c| c.is_ascii_digit()) {
        return Err(bad());
    }
    let frac_ns: i64 = if frac.is_empty() { 0 } else { format!("{frac:0<9}").parse().map_err(|_| bad())? };
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) || !(0..24).contains(&hh) || !(0..60).contains(&mm) || !(0..61).contains(&ss) {
        return Err(bad());
    }
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Ok((days * 86_400 + hh * 3600 + mm * 60 + ss) * 1_000_000_000 + frac_ns)
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
    }
}
