//! Sessions, validated: the session classes a program is drawn from (turns, lengths, tools, objectives), the
//! retention policy, or a replayed session trace.

use super::LengthDist;
use super::class::{Class, cdf, validate_length, validate_length_within};
use super::sessions_trace::SessionTrace;
use crate::spec::at;
use crate::spec::field::Checked;
use crate::spec::{
    Errors, LengthSpec, NS_PER_S, RetentionSpec, SessionClassSpec, SessionSloSpec, SessionTraceSpec, SessionsSpec,
    ToolSpec, ms_to_ns, s_to_ns,
};
use std::sync::Arc;

const P: &str = "workload.sessions";

/// The most turns a session may have.
const MAX_TURNS: u32 = 10_000;

/// Multi-turn sessions (validated): the classes a session's program is drawn from.
#[derive(Clone, Debug, PartialEq)]
pub struct Sessions {
    /// One class (the sessions' own fields) unless the spec names classes.
    pub classes: Vec<SessionClass>,
    /// Cumulative normalised class weights.
    pub class_cdf: Vec<f64>,
    /// The spec named its classes: the report then breaks its figures down by class.
    pub named_classes: bool,
    /// Every class's tools (a program's tools index this list).
    pub tools: Vec<Tool>,
    /// What happens to a session's KV when a turn ends.
    pub retention: Retention,
    /// Recorded sessions replayed instead of drawn programs (the one class's distributions are then the
    /// trace's own, for estimates).
    pub trace: Option<Arc<SessionTrace>>,
    /// A tool whose latency changes part-way through the run.
    pub shift: Option<Shift>,
    /// Each session is a multi-agent workflow of these roles.
    pub workflow: Option<crate::workflow::Workflow>,
}

/// From `at_ns` on, calls of the tool take `factor` × their drawn latency (validated `ToolShiftSpec`).
#[derive(Clone, Debug, PartialEq)]
pub struct Shift {
    /// Every entry of `Sessions::tools` of the tool's name (session classes may each list it).
    pub tools: Vec<u16>,
    pub at_ns: u64,
    pub factor: f64,
}

/// A kind of session (validated `SessionClassSpec`, or the sessions' own fields).
#[derive(Clone, Debug, PartialEq)]
pub struct SessionClass {
    pub name: String,
    /// Share of sessions (the normalised weight).
    pub share: f64,
    pub turns: LengthDist,
    pub first: LengthDist,
    pub new: LengthDist,
    pub output: LengthDist,
    /// The tools it calls (indices into `Sessions::tools`) and their cumulative weights.
    pub tools: Vec<u16>,
    pub tool_cdf: Vec<f64>,
    /// The session objective: every turn's TTFT, and the session's span (ns; None: not set).
    pub turn_ttft_ns: Option<u64>,
    pub session_ns: Option<u64>,
    /// The request class its turns are (None: drawn from the class mix).
    pub request_class: Option<u16>,
}

impl SessionClass {
    /// Whether its sessions are judged: it has a turn TTFT or a session objective.
    pub fn has_slo(&self) -> bool {
        self.turn_ttft_ns.is_some() || self.session_ns.is_some()
    }
}

/// A session's KV between turns (validated `RetentionSpec`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Retention {
    Stateless,
    /// Kept in HBM until the session ends (or pressure evicts it).
    Retain,
    /// Kept in HBM this long after each turn (ns; 0: not at all), then offloaded or freed.
    Ttl(u64),
    HostOffload,
    GapOracle,
    /// The gap oracle's rule on an exponentially weighted estimate (weight `alpha`) of the gaps returned so
    /// far, over all tools or per tool.
    Adaptive {
        alpha: f64,
        per_tool: bool,
    },
}

impl Retention {
    /// Whether sessions' KV may outlive a turn anywhere (in HBM or in host memory).
    pub fn keeps(self) -> bool {
        self != Retention::Stateless
    }
}

/// A tool's latency: lognormal by its mean (ns) and coefficient of variation.
#[derive(Clone, Debug, PartialEq)]
pub struct Tool {
    pub name: String,
    pub mean_ns: f64,
    /// ln-space parameters: the latency is exp(mu + sigma · z).
    pub mu: f64,
    pub sigma: f64,
}

impl Sessions {
    /// The mean over sessions of a per-class figure: Σ share × `f(class)`.
    pub fn mean_of(&self, f: impl Fn(&SessionClass) -> f64) -> f64 {
        self.classes.iter().map(|c| c.share * f(c)).sum()
    }

    /// The largest per-class figure.
    pub fn max_of(&self, f: impl Fn(&SessionClass) -> u32) -> u32 {
        self.classes.iter().map(f).max().unwrap_or(0)
    }

    /// How long a call of `tool` drawn as `drawn_ns` takes when made at `call_ns` (after a shift, scaled).
    pub fn gap_ns(&self, tool: u16, drawn_ns: u64, call_ns: u64) -> u64 {
        match &self.shift {
            Some(s) if call_ns >= s.at_ns && s.tools.contains(&tool) => {
                (drawn_ns as f64 * s.factor).round().min(1e17) as u64
            }
            _ => drawn_ns,
        }
    }

    /// Whether each tool call is priced and reported (`sessions.tiering`): the policy decides from the gap
    /// (the gap oracle, an adaptive policy), or a tool's latency shifts.
    pub fn prices_gaps(&self) -> bool {
        self.shift.is_some() || matches!(self.retention, Retention::GapOracle | Retention::Adaptive { .. })
    }

    /// Whether any class has a session objective.
    pub fn has_slo(&self) -> bool {
        self.classes.iter().any(SessionClass::has_slo)
    }

    /// The sessions of `s` (request classes named by `request_classes`); errors under `workload.sessions.`.
    pub(super) fn build(s: &SessionsSpec, request_classes: &[Class], e: &mut Errors) -> Option<Sessions> {
        let retention = retention(s, e);
        if let Some(t) = &s.trace {
            return Sessions::from_trace(s, t, retention, e);
        }
        let n0 = e.0.len();
        let mut tools = Vec::new();
        let (turns, first, new, output) = given_lengths(lengths_at!(P, s), e);
        let base = Base {
            turns,
            first,
            new,
            output,
            tools: tool_mix(&s.tools, &at!(P, s.tools), &mut tools, e),
            slo: slo(&s.slo, &at!(P, s.slo), e),
        };
        let classes: Vec<SessionClass> = if s.classes.is_empty() {
            base.class("default".into(), 1.0, None, P, e).into_iter().collect()
        } else {
            class_list(&s.classes, &base, request_classes, &mut tools, e)
        };
        let class_cdf = if s.classes.is_empty() {
            vec![1.0]
        } else {
            cdf(s.classes.iter().map(|c| c.weight), &at!(P, s.classes), e)
        };
        if e.0.len() > n0 {
            return None;
        }
        let mut last = 0.0;
        let classes = (classes.into_iter().zip(&class_cdf))
            .map(|(c, &cum)| SessionClass { share: cum - std::mem::replace(&mut last, cum), ..c })
            .collect();
        let shift = shift(s, &tools, e)?;
        Some(Sessions {
            classes,
            class_cdf,
            named_classes: !s.classes.is_empty(),
            tools,
            retention,
            trace: None,
            shift,
            workflow: workflow(s, None, e)?,
        })
    }

    /// Sessions replayed from a trace: its programs, its tools (named, each at its mean recorded latency), and
    /// empirical distributions of its lengths for the estimates.
    fn from_trace(s: &SessionsSpec, t: &SessionTraceSpec, retention: Retention, e: &mut Errors) -> Option<Sessions> {
        use super::sessions_trace::{Shape, parse};
        for (given, at) in [
            (s.turns.is_some(), at!(P, s.turns)),
            (s.first_tokens.is_some(), at!(P, s.first_tokens)),
            (s.new_tokens.is_some(), at!(P, s.new_tokens)),
            (s.output_tokens.is_some(), at!(P, s.output_tokens)),
            (!s.tools.is_empty(), at!(P, s.tools)),
            (!s.classes.is_empty(), at!(P, s.classes)),
        ] {
            if given {
                e.push(at, "comes from the session trace: remove it, or remove `trace`");
            }
        }
        let (turn_ttft_ns, session_ns) = slo(&s.slo, &at!(P, s.slo), e);
        let Some(text) = &t.data else {
            e.push(at!(P, s.trace), "the trace's text is missing: give `path` (the CLI reads it) or `data`");
            return None;
        };
        let shape = match t.format {
            crate::spec::SessionTraceFormat::Auto => None,
            crate::spec::SessionTraceFormat::Inferscale => Some(Shape::Ours),
            crate::spec::SessionTraceFormat::InferenceLab => Some(Shape::InferenceLab),
        };
        let mut trace = parse(text, shape).map_err(|why| e.push(at!(P, s.trace), why)).ok()?;
        let empirical = |v: Vec<u32>| LengthDist::Empirical(if v.is_empty() { vec![1] } else { v });
        let progs = &trace.programs;
        let tools: Vec<Tool> = (trace.tools.iter().enumerate())
            .map(|(i, name)| {
                let gaps: Vec<f64> = progs
                    .iter()
                    .flat_map(|x| {
                        x.tools.iter().zip(&x.gaps_ns).filter(|(t, _)| **t as usize == i).map(|(_, g)| *g as f64)
                    })
                    .collect();
                let mean_ns = gaps.iter().sum::<f64>() / gaps.len().max(1) as f64;
                Tool { name: name.clone(), mean_ns, mu: libm::log(mean_ns.max(1.0)), sigma: 0.0 }
            })
            .collect();
        let class = SessionClass {
            name: "default".into(),
            share: 1.0,
            turns: empirical(progs.iter().map(|x| x.new_tokens.len() as u32).collect()),
            first: empirical(progs.iter().map(|x| x.new_tokens[0]).collect()),
            new: empirical(progs.iter().flat_map(|x| x.new_tokens[1..].iter().copied()).collect()),
            output: empirical(progs.iter().flat_map(|x| x.output_tokens.iter().copied()).collect()),
            tools: (0..tools.len() as u16).collect(),
            tool_cdf: Vec::new(),
            turn_ttft_ns,
            session_ns,
            request_class: None,
        };
        let workflow = workflow(s, Some(&mut trace), e)?;
        Some(Sessions {
            classes: vec![class],
            class_cdf: vec![1.0],
            named_classes: false,
            shift: shift(s, &tools, e)?,
            tools,
            retention,
            trace: Some(Arc::new(trace)),
            workflow,
        })
    }
}

/// The sessions' own fields, validated, that a class takes what it leaves out from.
struct Base {
    turns: Field,
    first: Field,
    new: Field,
    output: Field,
    tools: Option<(Vec<u16>, Vec<f64>)>,
    slo: (Option<u64>, Option<u64>),
}

/// A length field: not given (None), given but not valid (its error pushed), or valid.
type Field = Option<Option<LengthDist>>;

impl Base {
    /// The class of the sessions' fields alone (at `p`, `workload.sessions`): each is required.
    fn class(
        &self,
        name: String,
        share: f64,
        request_class: Option<u16>,
        p: &str,
        e: &mut Errors,
    ) -> Option<SessionClass> {
        let need = |x: &Field, field: &str, e: &mut Errors| match x {
            Some(x) => x.clone(),
            None => {
                e.push(
                    format!("{p}.{field}"),
                    "required (a length distribution), unless the sessions come from a `trace`",
                );
                None
            }
        };
        let (turns, first, new, output) = (
            need(&self.turns, "turns", e),
            need(&self.first, "first_tokens", e),
            need(&self.new, "new_tokens", e),
            need(&self.output, "output_tokens", e),
        );
        let (tools, tool_cdf) = self.tools.clone()?;
        let (turn_ttft_ns, session_ns) = self.slo;
        Some(SessionClass {
            name,
            share,
            turns: turns?,
            first: first?,
            new: new?,
            output: output?,
            tools,
            tool_cdf,
            turn_ttft_ns,
            session_ns,
            request_class,
        })
    }
}

/// The named classes: each field a class gives replaces the sessions' one.
fn class_list(
    specs: &[SessionClassSpec],
    base: &Base,
    request_classes: &[Class],
    tools: &mut Vec<Tool>,
    e: &mut Errors,
) -> Vec<SessionClass> {
    let mut out = Vec::new();
    for (i, c) in specs.iter().enumerate() {
        let p = format!("{}[{i}]", at!(P, SessionsSpec::classes));
        c.check_fields(&p, e);
        if c.name.trim().is_empty() {
            e.push(at!(p, c.name), "a session class needs a name");
        } else if specs[..i].iter().any(|o| o.name == c.name) {
            e.push(at!(p, c.name), format!("the name {:?} is taken by an earlier session class", c.name));
        }
        let (turns, first, new, output) = given_lengths(lengths_at!(p, c), e);
        let merged = Base {
            turns: turns.or_else(|| base.turns.clone()),
            first: first.or_else(|| base.first.clone()),
            new: new.or_else(|| base.new.clone()),
            output: output.or_else(|| base.output.clone()),
            tools: match &c.tools {
                Some(t) => tool_mix(t, &at!(p, c.tools), tools, e),
                None => base.tools.clone(),
            },
            slo: {
                let (t, s) = slo(&c.slo, &at!(p, c.slo), e);
                (t.or(base.slo.0), s.or(base.slo.1))
            },
        };
        let request_class =
            c.request_class.as_ref().and_then(|name| match request_classes.iter().position(|rc| &rc.name == name) {
                Some(k) => Some(k as u16),
                None => {
                    let known: Vec<&str> = request_classes.iter().map(|rc| rc.name.as_str()).collect();
                    e.push(
                        format!("{p}.request_class"),
                        format!("no request class is named {name:?} (workload.classes has {})", known.join(", ")),
                    );
                    None
                }
            });
        // A field neither the class nor the sessions give is the class's to give.
        out.extend(merged.class(c.name.clone(), 0.0, request_class, &p, e));
    }
    out
}

/// The turns, first prompt, new input and output of `$s` (the sessions' or a class's spec), each with its path
/// under `$at`.
macro_rules! lengths_at {
    ($at:expr, $s:ident) => {
        [
            (&$s.turns, at!($at, $s.turns)),
            (&$s.first_tokens, at!($at, $s.first_tokens)),
            (&$s.new_tokens, at!($at, $s.new_tokens)),
            (&$s.output_tokens, at!($at, $s.output_tokens)),
        ]
    };
}
use lengths_at;

/// The turns, first prompt, new input and output, each with its path, validated; None where not given.
fn given_lengths(x: [(&Option<LengthSpec>, String); 4], e: &mut Errors) -> (Field, Field, Field, Field) {
    for (l, at) in &x {
        if let Some(LengthSpec::Sequence { .. }) = l {
            e.push(
                format!("{at}.kind"),
                "a sequence replays lengths per request; a session draws its program: use `empirical`",
            );
        }
    }
    let length =
        |(x, at): &(&Option<LengthSpec>, String), e: &mut Errors| x.as_ref().map(|x| validate_length(x, at, e));
    let turns = x[0].0.as_ref().map(|t| validate_turns(t, &x[0].1, e));
    (turns, length(&x[1], e), length(&x[2], e), length(&x[3], e))
}

/// A turn-count distribution: a length distribution of at most 10,000 turns.
fn validate_turns(x: &LengthSpec, path: &str, e: &mut Errors) -> Option<LengthDist> {
    validate_length_within(x, path, MAX_TURNS, e)
}

/// Tools at `path` added to `all`: their indices there and cumulative weights (None when one is invalid).
fn tool_mix(specs: &[ToolSpec], path: &str, all: &mut Vec<Tool>, e: &mut Errors) -> Option<(Vec<u16>, Vec<f64>)> {
    let n0 = e.0.len();
    let mut ix = Vec::new();
    for (i, t) in specs.iter().enumerate() {
        let tp = format!("{path}[{i}]");
        let ok = t.check_fields(&tp, e);
        if t.name.trim().is_empty() {
            e.push(format!("{tp}.name"), "a tool needs a name");
        }
        if ok {
            let sigma = libm::sqrt(libm::log(1.0 + t.cv * t.cv));
            let mean_ns = t.mean_s * NS_PER_S;
            ix.push(all.len() as u16);
            all.push(Tool {
                name: t.name.clone(),
                mean_ns,
                mu: libm::log(mean_ns.max(1.0)) - sigma * sigma / 2.0,
                sigma,
            });
        }
    }
    let tool_cdf = if specs.is_empty() { Vec::new() } else { cdf(specs.iter().map(|t| t.weight), path, e) };
    (e.0.len() == n0).then_some((ix, tool_cdf))
}

/// A session spec's retention policy.
fn retention(s: &SessionsSpec, e: &mut Errors) -> Retention {
    match s.retention {
        RetentionSpec::Stateless => Retention::Stateless,
        RetentionSpec::Retain | RetentionSpec::Ttl { ttl_s: None } => Retention::Retain,
        RetentionSpec::Ttl { ttl_s: Some(t) } => {
            s.retention.check_fields(&at!(P, s.retention), e);
            Retention::Ttl(s_to_ns(t.clamp(0.0, 1e7)))
        }
        RetentionSpec::HostOffload => Retention::HostOffload,
        RetentionSpec::GapOracle => Retention::GapOracle,
        RetentionSpec::Adaptive { alpha } | RetentionSpec::AdaptivePerTool { alpha } => {
            s.retention.check_fields(&at!(P, s.retention), e);
            let per_tool = matches!(s.retention, RetentionSpec::AdaptivePerTool { .. });
            Retention::Adaptive { alpha: alpha.clamp(1e-9, 1.0), per_tool }
        }
    }
}

/// What to say of a tool name none of `tools` has.
pub fn no_tool_named(tools: &[Tool], name: &str) -> String {
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    format!("no tool is named {name:?}; the tools are: {}", names.join(", "))
}

/// The sessions' tool shift, its tool found by name among `tools`; Err when it is not valid (reported).
fn shift(s: &SessionsSpec, tools: &[Tool], e: &mut Errors) -> Option<Option<Shift>> {
    let Some(x) = &s.shift else { return Some(None) };
    if !x.check_fields(&at!(P, s.shift), e) {
        return None;
    }
    let named: Vec<u16> = (0..tools.len() as u16).filter(|&i| tools[i as usize].name == x.tool).collect();
    if named.is_empty() {
        e.push(format!("{}.tool", at!(P, s.shift)), no_tool_named(tools, &x.tool));
        return None;
    }
    Some(Some(Shift { tools: named, at_ns: s_to_ns(x.at_s), factor: x.factor }))
}

/// The workflow of `s`, if any (Some(None): none): its steps carry no history, so the sessions keep none; a
/// trace's turns must each name one of its roles.
fn workflow(
    s: &SessionsSpec,
    trace: Option<&mut SessionTrace>,
    e: &mut Errors,
) -> Option<Option<crate::workflow::Workflow>> {
    let Some(w) = &s.workflow else {
        if let Some(t) = trace.filter(|t| !t.roles.is_empty()) {
            e.push(
                at!(P, s.trace),
                format!(
                    "its turns name roles ({}): give `workflow` with them, or remove the roles",
                    t.roles.join(", ")
                ),
            );
            return None;
        }
        return Some(None);
    };
    let at = at!(P, s.workflow);
    if !s.retention.is_stateless() {
        e.push(
            at!(P, s.retention),
            "a workflow's steps carry no history (each starts with its role's prefix): retention must be stateless",
        );
    }
    let wf = crate::workflow::Workflow::build(w, e)?;
    if let Some(t) = trace {
        if let Some(r) = t.roles.iter().find(|r| !wf.roles.contains(r)) {
            e.push(
                format!("{at}.roles"),
                format!("the trace names role {r:?}, which is not one of the workflow's roles"),
            );
            return None;
        }
        if let Some(i) = t.programs.iter().position(|p| p.roles.len() != p.new_tokens.len()) {
            let line = t.lines[i];
            e.push(at!(P, s.trace), format!("line {line}: a workflow's trace names the role of every turn (`role`)"));
            return None;
        }
        // The trace's role indices become the workflow's.
        let map: Vec<u16> = t.roles.iter().map(|r| wf.roles.iter().position(|x| x == r).unwrap_or(0) as u16).collect();
        t.programs.iter_mut().flat_map(|p| p.roles.iter_mut()).for_each(|r| *r = map[*r as usize]);
    }
    Some(Some(wf))
}

/// Session objectives at `at` (ns); out of their bounds, reported (and the scenario refused).
fn slo(s: &SessionSloSpec, at: &str, e: &mut Errors) -> (Option<u64>, Option<u64>) {
    match s.check_fields(at, e) {
        true => (s.turn_ttft_ms.map(ms_to_ns), s.session_s.map(s_to_ns)),
        false => (None, None),
    }
}
