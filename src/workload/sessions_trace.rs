//! Session traces: recorded agent sessions, one per JSONL line, replayed as session programs.
//!
//! Two shapes (docs/scenario.md, "Session traces"):
//! - ours: `{"id": …, "arrival_s": 0.5, "turns": [{"new_tokens": 4000, "output_tokens": 120, "tool": "read_file",
//!   "tool_s": 0.2}, …]}` — the first turn's `new_tokens` is its whole prompt; each later turn's prompt is the
//!   history plus its new tokens; `tool`/`tool_s` run after the turn (ignored after the last). `arrival_s` on
//!   every line, or on none (then the scenario's arrival process starts the sessions). A workflow's trace names
//!   each turn's `role` (on every turn of a session, or on none).
//! - inference-lab's (doublewordai/inference-lab, `src/request/session.rs`): `{"id": …, "steps": [{"input":
//!   15524, "new": 15524, "output": 111, "gap": 0.0, "kind": "user"}, …]}` — `input` is the step's whole prompt,
//!   `new` the tokens not from the parent's context, `gap` the seconds from the parent's completion to this
//!   step (ignored on the first), `kind` free text (the tool name here). Read as that simulator reads it:
//!   unknown keys pass, sessions without steps are dropped, a zero `input` or `output` counts as 1.
//!
//! Errors name the line and the key. The core reads no file: the front end puts the text in.

use crate::spec::json_kind;
use serde_json::{Map, Value};

use super::Program;

/// Most sessions a trace may hold, and turns a session.
pub const MAX_SESSIONS: usize = 1_000_000;
pub const MAX_TURNS: usize = 10_000;
/// Most tokens of one turn's prompt or output, and seconds of one tool.
const MAX_TOKENS: u64 = 100_000_000;
const MAX_TOOL_S: f64 = 1e6;

/// A parsed session trace.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionTrace {
    /// Each session's program, in file order.
    pub programs: Vec<Program>,
    /// The line each program was read from (1-based), for messages about it.
    pub lines: Vec<u32>,
    /// Each session's start relative to the first (ours with `arrival_s`), in file order; empty when the
    /// scenario's arrival process starts them.
    pub arrivals_ns: Vec<u64>,
    /// Tool names (`Program::tools` indexes them).
    pub tools: Vec<String>,
    /// Sessions without a step, dropped (inference-lab's rule).
    pub dropped_empty: u64,
    /// Role names a workflow trace's turns give (`Program::roles` indexes them; empty: no roles).
    pub roles: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Ours,
    InferenceLab,
}

/// Parse `text`; `shape` None: detect from the first session (`turns` or `steps`).
pub fn parse(text: &str, shape: Option<Shape>) -> Result<SessionTrace, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = SessionTrace {
        programs: Vec::new(),
        lines: Vec::new(),
        arrivals_ns: Vec::new(),
        tools: Vec::new(),
        dropped_empty: 0,
        roles: Vec::new(),
    };
    let mut shape = shape;
    let mut arrivals_s: Vec<Option<f64>> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let v = crate::spec::strict_json(line).map_err(|e| match e.is_data() {
            true => format!("line {n}: {e}"),
            false => format!("line {n}: not JSON ({e})"),
        })?;
        let Value::Object(o) = v else {
            return Err(format!("line {n}: a session is a JSON object, got {}", json_kind(&v)));
        };
        let s = *shape.get_or_insert(match (o.contains_key("turns"), o.contains_key("steps")) {
            (true, _) => Shape::Ours,
            (_, true) => Shape::InferenceLab,
            _ => return Err(format!("line {n}: neither `turns` (InferScale's shape) nor `steps` (inference-lab's) — docs/scenario.md, \"Session traces\"")),
        });
        if out.programs.len() >= MAX_SESSIONS {
            return Err(format!("line {n}: at most {MAX_SESSIONS} sessions"));
        }
        let program = match s {
            Shape::Ours => ours(&o, n, &mut out, &mut arrivals_s)?,
            Shape::InferenceLab => inference_lab(&o, n, &mut out.tools)?,
        };
        match program {
            Some(p) => {
                out.programs.push(p);
                out.lines.push(n as u32);
            }
            None => out.dropped_empty += 1,
        }
    }
    if out.programs.is_empty() {
        return Err("no session with a turn in the trace".into());
    }
    out.arrivals_ns = relative_arrivals(&arrivals_s)?;
    Ok(out)
}

/// A whole number of tokens at `key` (absent: `default`, None: required).
fn tokens(o: &Map<String, Value>, key: &str, at: &str, default: Option<u64>) -> Result<u64, String> {
    match o.get(key) {
        None | Some(Value::Null) => default.ok_or_else(|| format!("{at}: `{key}` is required")),
        Some(Value::Number(x)) => match x.as_u64() {
            Some(t) if t <= MAX_TOKENS => Ok(t),
            _ => Err(format!("{at}: `{key}` must be a whole number of tokens, 0 … {MAX_TOKENS} (got {x})")),
        },
        Some(v) => Err(format!("{at}: `{key}` must be a whole number of tokens, got {}", json_kind(v))),
    }
}

/// Seconds at `key` (absent: 0).
fn seconds(o: &Map<String, Value>, key: &str, at: &str, most: f64) -> Result<f64, String> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(0.0),
        Some(Value::Number(x)) => match x.as_f64() {
            Some(t) if (0.0..=most).contains(&t) => Ok(t),
            _ => Err(format!("{at}: `{key}` must be seconds, 0 … {most} (got {x})")),
        },
        Some(v) => Err(format!("{at}: `{key}` must be seconds, got {}", json_kind(v))),
    }
}

/// The index of tool `name` (added when new; at most 64 distinct).
fn tool_index(tools: &mut Vec<String>, name: &str, at: &str) -> Result<u16, String> {
    name_index(tools, name, at, "tools")
}

/// The index of `name` in `names` (added when new; at most 64 distinct `what`).
fn name_index(names: &mut Vec<String>, name: &str, at: &str, what: &str) -> Result<u16, String> {
    if let Some(i) = names.iter().position(|t| t == name) {
        return Ok(i as u16);
    }
    if names.len() >= 64 {
        return Err(format!("{at}: more than 64 distinct {what}"));
    }
    names.push(name.to_string());
    Ok((names.len() - 1) as u16)
}

fn text_of(o: &Map<String, Value>, key: &str, at: &str) -> Result<Option<String>, String> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.chars().take(64).collect())),
        Some(v) => Err(format!("{at}: `{key}` must be text, got {}", json_kind(v))),
    }
}

fn list<'a>(o: &'a Map<String, Value>, key: &str, n: usize) -> Result<&'a Vec<Value>, String> {
    match o.get(key) {
        Some(Value::Array(a)) if a.len() <= MAX_TURNS => Ok(a),
        Some(Value::Array(a)) => Err(format!("line {n}: `{key}`: at most {MAX_TURNS} a session (got {})", a.len())),
        Some(v) => Err(format!("line {n}: `{key}` must be a list, got {}", json_kind(v))),
        None => Err(format!("line {n}: `{key}` is required")),
    }
}

fn refuse_unknown(o: &Map<String, Value>, known: &[&str], at: &str) -> Result<(), String> {
    match o.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => {
            let hint = crate::spec::suggest(k, known.iter().copied())
                .map(|s| format!("; did you mean `{s}`?"))
                .unwrap_or_default();
            Err(format!(
                "{at}: unknown key `{k}` (one of {}){hint}",
                known.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
            ))
        }
        None => Ok(()),
    }
}

/// Our shape: a session with `turns`, each its new input, output and the tool after it.
fn ours(
    o: &Map<String, Value>,
    n: usize,
    out: &mut SessionTrace,
    arrivals: &mut Vec<Option<f64>>,
) -> Result<Option<Program>, String> {
    refuse_unknown(o, &["id", "arrival_s", "turns"], &format!("line {n}"))?;
    let turns = list(o, "turns", n)?;
    arrivals.push(match o.get("arrival_s") {
        None | Some(Value::Null) => None,
        _ => Some(seconds(o, "arrival_s", &format!("line {n}"), 1e8)?),
    });
    if turns.is_empty() {
        return Err(format!("line {n}: `turns` is empty (a session has at least one turn)"));
    }
    let mut p = Program {
        new_tokens: Vec::new(),
        output_tokens: Vec::new(),
        tools: Vec::new(),
        gaps_ns: Vec::new(),
        prompt_tokens: Vec::new(),
        class: 0,
        roles: Vec::new(),
        shifted: false,
    };
    for (k, t) in turns.iter().enumerate() {
        let at = format!("line {n}: `turns[{k}]`");
        let Value::Object(t) = t else { return Err(format!("{at} must be an object, got {}", json_kind(t))) };
        refuse_unknown(t, &["new_tokens", "output_tokens", "tool", "tool_s", "role"], &at)?;
        let (new, output) = (tokens(t, "new_tokens", &at, None)?, tokens(t, "output_tokens", &at, None)?);
        if new == 0 || output == 0 {
            return Err(format!("{at}: `new_tokens` and `output_tokens` must be at least 1"));
        }
        p.new_tokens.push(new as u32);
        p.output_tokens.push(output as u32);
        match text_of(t, "role", &at)? {
            Some(r) if p.roles.len() == k => p.roles.push(name_index(&mut out.roles, &r, &at, "roles")?),
            None if p.roles.is_empty() => {}
            _ => return Err(format!("{at}: `role` on every turn of a session, or on none")),
        }
        if k + 1 < turns.len() {
            let name = text_of(t, "tool", &at)?.unwrap_or_else(|| "tool".into());
            p.tools.push(tool_index(&mut out.tools, &name, &at)?);
            p.gaps_ns.push(crate::spec::s_to_ns(seconds(t, "tool_s", &at, MAX_TOOL_S)?));
        }
    }
    Ok(Some(p))
}

/// inference-lab's shape, read as it reads it.
fn inference_lab(o: &Map<String, Value>, n: usize, tools: &mut Vec<String>) -> Result<Option<Program>, String> {
    let steps = list(o, "steps", n)?;
    if steps.is_empty() {
        return Ok(None);
    }
    let mut p = Program {
        new_tokens: Vec::new(),
        output_tokens: Vec::new(),
        tools: Vec::new(),
        gaps_ns: Vec::new(),
        prompt_tokens: Vec::new(),
        class: 0,
        roles: Vec::new(),
        shifted: false,
    };
    for (k, s) in steps.iter().enumerate() {
        let at = format!("line {n}: `steps[{k}]`");
        let Value::Object(s) = s else { return Err(format!("{at} must be an object, got {}", json_kind(s))) };
        let input = tokens(s, "input", &at, None)?.max(1) as u32;
        let new = tokens(s, "new", &at, None)?.min(input as u64) as u32;
        let output = tokens(s, "output", &at, None)?.max(1) as u32;
        p.prompt_tokens.push(input);
        // The first step's prompt is all new; a later step's new tail is at least one token (its prompt has
        // something to compute).
        p.new_tokens.push(if k == 0 { input } else { new.max(1) });
        p.output_tokens.push(output);
        if k > 0 {
            let name = text_of(s, "kind", &at)?.unwrap_or_else(|| "step".into());
            p.tools.push(tool_index(tools, &name, &at)?);
            p.gaps_ns.push(crate::spec::s_to_ns(seconds(s, "gap", &at, MAX_TOOL_S)?));
        }
    }
    Ok(Some(p))
}

/// Session starts relative to the first, in file order: every session has `arrival_s`, or none does.
fn relative_arrivals(a: &[Option<f64>]) -> Result<Vec<u64>, String> {
    let given = a.iter().filter(|x| x.is_some()).count();
    if given == 0 {
        return Ok(Vec::new());
    }
    if given < a.len() {
        let line = a.iter().position(|x| x.is_none()).map_or(0, |i| i + 1);
        return Err(format!(
            "session {line} has no `arrival_s` while others do: give it on every session, or on none (the scenario's arrival process then starts them)"
        ));
    }
    let t: Vec<f64> = a.iter().map(|x| x.unwrap_or(0.0)).collect();
    let t0 = t.iter().copied().fold(f64::INFINITY, f64::min);
    if let Some(i) = t.windows(2).position(|w| w[1] < w[0]) {
        return Err(format!(
            "session {}: `arrival_s` goes back in time ({} after {}): sessions must be in arrival order",
            i + 2,
            t[i + 1],
            t[i]
        ));
    }
    Ok(t.iter().map(|x| crate::spec::s_to_ns(x - t0)).collect())
}
