//! The scenario's kind-dependent and list-shaped fields — the arrival process's parameters, every request
//! class (mix weight, priority, both length distributions with their parameters, SLOs) and every tenant — as
//! generated form rows. Everything here is a pure function of the scenario JSON, so it is tested natively;
//! the app only puts the HTML in the page and hands edits back.
//!
//! Each input carries `data-ptr` (the JSON pointer it edits) and `data-ty` (how its text becomes JSON), so one
//! delegated listener serves every row, however many classes the scenario has.

use serde_json::{Value, json};

use crate::components::table::esc;
use crate::lab::variant::{self, Variant};

/// One generated section: the container's id, its HTML, and a signature of its structure (which fields, of
/// which kinds). When the signature is unchanged the page updates values in place instead of rebuilding,
/// so focus and keyboard navigation survive an edit.
pub struct Section {
    pub id: &'static str,
    pub html: String,
    pub sig: String,
    /// (pointer, value) of every input, for in-place updates.
    pub values: Vec<(String, String)>,
}

/// The sections, from the effective spec (defaults filled in).
pub fn sections(v: &Value) -> Vec<Section> {
    vec![arrival(v), classes(v), tenants(v), objectives(v), disaggregation(v), sessions(v)]
}

/// How a field's text becomes JSON.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Ty {
    Num,
    Int,
    /// Empty removes the field (an optional objective or limit).
    OptNum,
    Text,
    /// Comma-separated whole numbers.
    List,
    /// A length distribution's kind: replaces the object, keeping its scale.
    LenKind,
    /// One of a select's values, written as text.
    Choice,
    /// Text where empty removes the field (e.g. "every class").
    OptText,
    /// A checkbox that adds a block (at its starting values) or removes it: P/D, sessions.
    OnOff,
    /// A router's kind: the block becomes that kind with the numbers it takes.
    Router,
    /// Sessions' retention kind, likewise.
    Retention,
    /// The host tier: none, or host memory with its numbers.
    HostTier,
}

impl Ty {
    fn name(self) -> &'static str {
        match self {
            Ty::Num => "num",
            Ty::Int => "int",
            Ty::OptNum => "optnum",
            Ty::Text => "text",
            Ty::List => "list",
            Ty::LenKind => "lenkind",
            Ty::Choice => "choice",
            Ty::OptText => "opttext",
            Ty::OnOff => "onoff",
            Ty::Router => "router",
            Ty::Retention => "retention",
            Ty::HostTier => "host",
        }
    }
    fn parse(s: &str) -> Option<Ty> {
        use Ty::*;
        [Num, Int, OptNum, Text, List, LenKind, Choice, OptText, OnOff, Router, Retention, HostTier]
            .into_iter()
            .find(|t| t.name() == s)
    }
    /// The block kinds a select of this type picks among (the study panels' own, one definition).
    fn variant(self) -> Option<&'static Variant> {
        match self {
            Ty::Router => Some(&variant::ROUTER),
            Ty::Retention => Some(&variant::RETENTION),
            Ty::HostTier => Some(&variant::HOST_TIER),
            _ => None,
        }
    }
}

/// Builds one section's HTML while recording its structure and values.
struct Builder {
    html: String,
    sig: String,
    values: Vec<(String, String)>,
}

impl Builder {
    fn new() -> Self {
        Builder { html: String::new(), sig: String::new(), values: Vec::new() }
    }

    fn input(&mut self, ptr: &str, ty: Ty, value: &Value, label: &str, title: &str) {
        let text = match value {
            Value::Null => String::new(),
            Value::String(s) => s.clone(),
            Value::Array(a) => a.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", "),
            other => crate::components::numbers::shown(other),
        };
        let (kind, extra) = match ty {
            Ty::Num | Ty::OptNum => ("number", " step=\"any\""),
            Ty::Int => ("number", " step=\"1\""),
            Ty::OnOff => ("checkbox", if value.as_bool() == Some(true) { " checked" } else { "" }),
            _ => ("text", ""),
        };
        self.html.push_str(&format!(
            "<input type=\"{kind}\"{extra} data-ptr=\"{}\" data-ty=\"{}\" aria-label=\"{}\" title=\"{}\" value=\"{}\">",
            esc(ptr),
            ty.name(),
            esc(label),
            esc(title),
            esc(&text)
        ));
        self.sig.push_str(&format!("{ptr}:{};", ty.name()));
        self.values.push((ptr.to_string(), text));
    }

    /// A list entry's first two cells: its name and its weight, a relative share `of` what it is picked for.
    fn name_and_weight(&mut self, p: &str, x: &Value, who: &str, of: &str) {
        self.cell(&format!("{p}/name"), Ty::Text, &x["name"], &format!("{who} name"), "Name shown in reports");
        let title = format!("Relative share of {of} (normalised)");
        self.cell(&format!("{p}/weight"), Ty::Num, &x["weight"], &format!("{who} weight"), &title);
    }

    /// An input in a table cell of its own.
    fn cell(&mut self, ptr: &str, ty: Ty, value: &Value, label: &str, title: &str) {
        self.html.push_str("<td>");
        self.input(ptr, ty, value, label, title);
        self.html.push_str("</td>");
    }

    fn len_kind(&mut self, ptr: &str, kind: &str, label: &str) {
        let options: String = len_kinds()
            .iter()
            .map(|k| format!("<option value=\"{k}\"{}>{k}</option>", if k == kind { " selected" } else { "" }))
            .collect();
        self.html.push_str(&format!(
            "<select data-ptr=\"{}\" data-ty=\"lenkind\" aria-label=\"{}\" title=\"The distribution's shape; its parameters follow\">{options}</select>",
            esc(ptr),
            esc(label)
        ));
        // The kind is part of the structure: a new kind has other parameter fields.
        self.sig.push_str(&format!("{ptr}:lenkind={kind};"));
        self.values.push((ptr.to_string(), kind.to_string()));
    }

    /// A select of `options` (value, shown) writing its value as text.
    fn choice(&mut self, ptr: &str, value: &str, options: &[(&str, &str)], label: &str, title: &str) {
        let opts: String = options
            .iter()
            .map(|(k, name)| {
                format!("<option value=\"{k}\"{}>{name}</option>", if *k == value { " selected" } else { "" })
            })
            .collect();
        self.html.push_str(&format!(
            "<select data-ptr=\"{}\" data-ty=\"choice\" aria-label=\"{}\" title=\"{}\">{opts}</select>",
            esc(ptr),
            esc(label),
            esc(title)
        ));
        self.sig.push_str(&format!("{ptr}:choice;"));
        self.values.push((ptr.to_string(), value.to_string()));
    }

    /// A select of a block's kinds (`ty` names which) and inputs for the numbers the chosen kind takes.
    fn variant(&mut self, ptr: &str, ty: Ty, v: &Value, label: &str, title: &str) {
        let Some(var) = ty.variant() else { return };
        let chosen = var.chosen(v, ptr);
        let opts: String = var
            .choices
            .iter()
            .map(|c| {
                let sel = if c.value == chosen { " selected" } else { "" };
                format!("<option value=\"{}\"{sel}>{}</option>", c.value, esc(c.label))
            })
            .collect();
        self.html.push_str(&format!(
            "<select data-ptr=\"{}\" data-ty=\"{}\" aria-label=\"{}\" title=\"{}\">{opts}</select>",
            esc(ptr),
            ty.name(),
            esc(label),
            esc(title)
        ));
        // The kind is part of the structure: another kind takes other numbers.
        self.sig.push_str(&format!("{ptr}:{}={chosen};", ty.name()));
        self.values.push((ptr.to_string(), chosen.to_string()));
        let taken = var.choices.iter().find(|c| c.value == chosen).map_or(&[][..], |c| c.numbers);
        for n in taken {
            let at = format!("{ptr}/{}", n.key);
            let x = v.pointer(&at).cloned().unwrap_or(Value::Null);
            self.html.push_str(&format!("<label>{} <span class=\"unit\">{}</span>", esc(n.label), esc(n.unit)));
            let unit = n.unit.split([';', ',']).next().unwrap_or(n.unit);
            self.input(&at, Ty::Num, &x, &format!("{label}: {} ({unit})", n.label), n.unit);
            self.html.push_str("</label>");
        }
    }

    fn finish(self, id: &'static str) -> Section {
        Section { id, html: self.html, sig: self.sig, values: self.values }
    }
}

/// A list edited as table rows (classes, tenants, tools, objectives): a header, one row per entry with its
/// Remove button, and an Add button; the count is part of the structure.
struct Rows {
    /// The header cells of the entry's fields (the Remove column is added).
    head: &'static str,
    /// The list's pointer; its entries are `{ptr}/{i}`.
    ptr: &'static str,
    /// An entry as labels name it ("tenant": "tenant 2 weight", "Remove tenant 2", "Add tenant").
    what: &'static str,
    /// The Add button's title.
    add_title: &'static str,
    /// The list keeps one entry at least (its last Remove is disabled).
    keep_one: bool,
    /// What an empty list's one row says.
    empty: &'static str,
}

impl Rows {
    /// The table; `cells` writes an entry's cells given its pointer, value and name ("tenant 2").
    fn build(&self, b: &mut Builder, list: &[Value], cells: impl Fn(&mut Builder, &str, &Value, &str)) {
        b.html.push_str(&format!("<table class=\"dtable\"><thead><tr>{}<th></th></tr></thead><tbody>", self.head));
        let what = self.what;
        for (i, x) in list.iter().enumerate() {
            let who = format!("{what} {}", i + 1);
            b.html.push_str("<tr>");
            cells(b, &format!("{}/{i}", self.ptr), x, &who);
            let disabled = if self.keep_one && list.len() == 1 { " disabled" } else { "" };
            b.html.push_str(&format!(
                "<td><button type=\"button\" data-act=\"del-{what}\" data-i=\"{i}\"{disabled} aria-label=\"Remove {who}\" title=\"Remove this {what}\">Remove</button></td></tr>"
            ));
        }
        if list.is_empty() && !self.empty.is_empty() {
            b.html.push_str(&format!("<tr><td colspan=\"9\">{}</td></tr>", esc(self.empty)));
        }
        b.html.push_str(&format!(
            "</tbody></table><button type=\"button\" data-act=\"add-{what}\" title=\"{}\">Add {what}</button>",
            esc(self.add_title)
        ));
        b.sig.push_str(&format!("{}={};", self.ptr, list.len()));
    }
}

/// The length kinds, as the core lists them.
fn len_kinds() -> Vec<String> {
    inferscale::catalog::catalog().length_kinds.into_iter().map(|k| k.kind).collect()
}

/// A parameter's label and unit, from its name (the units are in the names).
fn describe(key: &str) -> (&'static str, &'static str) {
    match key {
        "rate_rps" => ("rate", "req/s"),
        "rate_on_rps" => ("rate while on", "req/s"),
        "rate_off_rps" => ("rate while off", "req/s"),
        "mean_on_s" => ("mean on period", "s"),
        "mean_off_s" => ("mean off period", "s"),
        "cv" => ("CV", "ratio"),
        "clients" => ("clients", "each waits for its previous request"),
        "think_s" => ("think time", "s, mean"),
        "time_scale" => ("time scale", "× gaps"),
        "tokens" => ("tokens", "tokens"),
        "min" => ("min", "tokens"),
        "max" => ("max", "tokens"),
        "mean" => ("mean", "tokens"),
        "values" => ("values", "tokens, comma-separated"),
        _ => ("", ""),
    }
}

fn arrival(v: &Value) -> Section {
    let mut b = Builder::new();
    let a = v.pointer("/workload/arrival").and_then(Value::as_object).cloned().unwrap_or_default();
    let kind = a.get("kind").and_then(Value::as_str).unwrap_or("");
    let name = match kind {
        "poisson" => "Poisson",
        "constant" => "Constant",
        "gamma" => "Gamma",
        "on_off" => "On/off",
        "closed_loop" => "Closed-loop",
        "burst" => "Burst",
        "trace" => "Trace",
        other => other,
    };
    b.html.push_str(&format!("<span class=\"dkind\">{} arrivals:</span>", esc(name)));
    let trace_format_label = format!("trace format ({})", inferscale::catalog::catalog().trace_formats.join(", "));
    for (key, value) in &a {
        if matches!(key.as_str(), "kind" | "data") {
            continue;
        }
        let (label, unit) = describe(key);
        let ptr = format!("/workload/arrival/{key}");
        let (label, ty) = match key.as_str() {
            "path" => ("trace file", Ty::Text),
            "format" => (trace_format_label.as_str(), Ty::Text),
            _ => (label, Ty::Num),
        };
        b.html.push_str(&format!("<label>{} <span class=\"unit\">{}</span>", esc(label), esc(unit)));
        b.input(&ptr, ty, value, &format!("arrival {label}"), &format!("{key} ({unit})"));
        b.html.push_str("</label>");
    }
    b.html.push_str("<label>stop after <span class=\"unit\">s simulated (empty: no limit)</span>");
    let dur = v.pointer("/workload/duration_s").cloned().unwrap_or(Value::Null);
    b.input(
        "/workload/duration_s",
        Ty::OptNum,
        &dur,
        "stop creating requests after (seconds)",
        "duration_s: no new requests after this simulated time",
    );
    b.html.push_str("</label>");
    b.finish("d-arrival")
}

fn length_cells(b: &mut Builder, ptr: &str, len: &Value, who: &str) {
    let obj = len.as_object().cloned().unwrap_or_default();
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("fixed");
    b.html.push_str("<td><div class=\"len\">");
    b.len_kind(&format!("{ptr}/kind"), kind, &format!("{who} distribution"));
    for (key, value) in &obj {
        if key == "kind" {
            continue;
        }
        let (label, unit) = describe(key);
        let ty = match key.as_str() {
            "values" => Ty::List,
            "mean" | "cv" => Ty::Num,
            _ => Ty::Int,
        };
        b.html.push_str(&format!("<label>{}", esc(label)));
        b.input(&format!("{ptr}/{key}"), ty, value, &format!("{who} {label} ({unit})"), &format!("{key} ({unit})"));
        b.html.push_str("</label>");
    }
    b.html.push_str("</div></td>");
}

fn classes(v: &Value) -> Section {
    let mut b = Builder::new();
    let list = v.pointer("/workload/classes").and_then(Value::as_array).cloned().unwrap_or_default();
    let rows = Rows {
        head: "<th>Class</th><th>Weight</th><th>Priority <span class=\"unit\">0 = first</span></th><th>Prompt tokens</th><th>Output tokens</th><th>TTFT SLO <span class=\"unit\">ms</span></th><th>TPOT SLO <span class=\"unit\">ms</span></th><th>E2E SLO <span class=\"unit\">ms</span></th>",
        ptr: "/workload/classes",
        what: "class",
        add_title: "Add a class (a copy of the last)",
        keep_one: true,
        empty: "",
    };
    rows.build(&mut b, &list, |b, p, c, who| {
        b.name_and_weight(p, c, who, "requests");
        b.cell(
            &format!("{p}/priority"),
            Ty::Int,
            &c["priority"],
            &format!("{who} priority"),
            "0 is most urgent (priority scheduler, preemption victim)",
        );
        length_cells(b, &format!("{p}/prompt_tokens"), &c["prompt_tokens"], &format!("{who} prompt"));
        length_cells(b, &format!("{p}/output_tokens"), &c["output_tokens"], &format!("{who} output"));
        for (key, what) in [
            ("ttft_ms", "time to first token"),
            ("tpot_ms", "time per output token"),
            ("e2e_ms", "end-to-end deadline"),
        ] {
            let value = c.pointer(&format!("/slo/{key}")).cloned().unwrap_or(Value::Null);
            let label = format!("{who} {what} objective (ms)");
            b.cell(&format!("{p}/slo/{key}"), Ty::OptNum, &value, &label, &format!("{what}, ms; empty: no objective"));
        }
    });
    b.finish("d-classes")
}

fn tenants(v: &Value) -> Section {
    let mut b = Builder::new();
    let list = v.pointer("/workload/tenants").and_then(Value::as_array).cloned().unwrap_or_default();
    let rows = Rows {
        head: "<th>Tenant</th><th>Weight</th><th>Bucket rate <span class=\"unit\">tokens/s</span></th><th>Bucket size <span class=\"unit\">tokens</span></th>",
        ptr: "/workload/tenants",
        what: "tenant",
        add_title: "Add a tenant",
        keep_one: true,
        empty: "",
    };
    rows.build(&mut b, &list, |b, p, t, who| {
        b.name_and_weight(p, t, who, "requests");
        let rate = t.get("rate_tokens_per_s").cloned().unwrap_or(Value::Null);
        b.cell(
            &format!("{p}/rate_tokens_per_s"),
            Ty::OptNum,
            &rate,
            &format!("{who} token-bucket rate (tokens/s)"),
            "Token-bucket admission: this tenant's refill rate; empty: the admission block's",
        );
        let burst = t.get("burst_tokens").cloned().unwrap_or(Value::Null);
        b.cell(
            &format!("{p}/burst_tokens"),
            Ty::OptNum,
            &burst,
            &format!("{who} token-bucket size (tokens)"),
            "Token-bucket admission: this tenant's bucket; empty: the admission block's",
        );
    });
    b.finish("d-tenants")
}

const METRICS: &[(&str, &str)] = &[("ttft", "TTFT"), ("tpot", "TPOT"), ("e2e", "E2E"), ("queue_delay", "queue delay")];

/// The attainment target and the objectives on percentiles ("p95 TTFT ≤ 1000 ms").
fn objectives(v: &Value) -> Section {
    let mut b = Builder::new();
    let target = v.pointer("/objectives/attainment_target").cloned().unwrap_or(json!(0.99));
    b.html.push_str("<div class=\"drow\"><label>attainment target <span class=\"unit\">fraction of requests meeting their SLOs</span>");
    b.input("/objectives/attainment_target", Ty::Num, &target, "attainment target (fraction)", "Share of requests that must meet every per-request SLO of their class, in (0, 1]: the cards, the diagnosis and the capacity planner use it");
    b.html.push_str("</label></div>");
    let list = v.pointer("/objectives/percentiles").and_then(Value::as_array).cloned().unwrap_or_default();
    let rows = Rows {
        head: "<th>Percentile <span class=\"unit\">%</span></th><th>Metric</th><th>At most <span class=\"unit\">ms</span></th><th>Class <span class=\"unit\">empty: all</span></th>",
        ptr: "/objectives/percentiles",
        what: "objective",
        add_title: "Add an objective on a percentile",
        keep_one: false,
        empty: "",
    };
    rows.build(&mut b, &list, |b, p, o, who| {
        b.cell(
            &format!("{p}/percentile"),
            Ty::Num,
            &o["percentile"],
            &format!("{who} percentile (%)"),
            "Which percentile: 50 is the median, 99 the tail",
        );
        b.html.push_str("<td>");
        b.choice(
            &format!("{p}/metric"),
            o["metric"].as_str().unwrap_or("ttft"),
            METRICS,
            &format!("{who} metric"),
            "The latency it bounds",
        );
        b.html.push_str("</td>");
        b.cell(
            &format!("{p}/max_ms"),
            Ty::Num,
            &o["max_ms"],
            &format!("{who} bound (ms)"),
            "The percentile must be at most this",
        );
        let class = o.get("class").unwrap_or(&Value::Null);
        b.cell(
            &format!("{p}/class"),
            Ty::OptText,
            class,
            &format!("{who} class"),
            "A class name; empty: every completed request",
        );
    });
    b.finish("d-objectives")
}

/// A checkbox that turns a block on (`ptr`, at its starting values) or off, with its label.
fn on_off(b: &mut Builder, ptr: &str, on: bool, label: &str, title: &str) {
    b.html.push_str("<div class=\"drow\"><label class=\"check\">");
    b.input(ptr, Ty::OnOff, &json!(on), label, title);
    b.html.push_str(&format!(" {}</label></div>", esc(label)));
    b.sig.push_str(&format!("{ptr}={on};"));
}

/// The device presets a pool may take; empty: the scenario's hardware.
fn devices() -> Vec<(&'static str, &'static str)> {
    let mut out = vec![("", "as Device above")];
    out.extend(inferscale::cost::presets::DEVICES.iter().map(|d| (d.name, d.name)));
    out
}

const TOPOLOGY: &[(&str, &str)] = &[("per_pair", "a link per pair"), ("shared", "one shared link")];

/// Prefill and decode on separate pools: on/off, each pool's workers, device, TP and router, and the link.
fn disaggregation(v: &Value) -> Section {
    let mut b = Builder::new();
    let d = v.pointer("/cluster/disaggregation").filter(|d| d.is_object());
    on_off(
        &mut b,
        "/cluster/disaggregation",
        d.is_some(),
        "Prefill and decode on separate workers (P/D)",
        "Disaggregated serving: prefill workers hand each prompt's KV over a link to decode workers. Off: every replica does both",
    );
    let Some(d) = d else { return b.finish("d-disagg") };
    let tp = v.pointer("/hardware/tp").and_then(Value::as_u64).unwrap_or(1);
    b.html.push_str(
        "<table class=\"dtable\"><thead><tr><th>Pool</th><th>Workers</th><th>Device</th><th>TP <span class=\"unit\">GPUs/worker; empty: TP above</span></th><th>Router</th></tr></thead><tbody>",
    );
    let mut gpus = 0;
    for role in ["prefill", "decode"] {
        let p = format!("/cluster/disaggregation/{role}");
        let pool = &d[role];
        gpus += pool["replicas"].as_u64().unwrap_or(1) * pool["tp"].as_u64().unwrap_or(tp);
        b.html.push_str(&format!("<tr><td>{role}</td><td>"));
        b.input(
            &format!("{p}/replicas"),
            Ty::Int,
            &pool["replicas"],
            &format!("{role} workers"),
            "Workers in this pool",
        );
        b.html.push_str("</td><td>");
        let dev = pool["device"].as_str().unwrap_or("");
        b.choice(
            &format!("{p}/device"),
            dev,
            &devices(),
            &format!("{role} device"),
            "This pool's GPU; empty: Device above",
        );
        b.html.push_str("</td><td>");
        b.input(
            &format!("{p}/tp"),
            Ty::OptNum,
            &pool["tp"],
            &format!("{role} TP (GPUs per worker)"),
            "Tensor parallelism of one worker; empty: TP above",
        );
        b.html.push_str("</td><td><div class=\"len\">");
        b.variant(
            &format!("{p}/router"),
            Ty::Router,
            v,
            &format!("{role} router"),
            "How requests pick a worker in this pool",
        );
        b.html.push_str("</div></td></tr>");
    }
    b.html.push_str("</tbody></table><div class=\"drow\"><label>KV link <span class=\"unit\">GB/s</span>");
    let link = "/cluster/disaggregation/link";
    b.input(
        &format!("{link}/bandwidth_gbps"),
        Ty::Num,
        &d["link"]["bandwidth_gbps"],
        "KV link bandwidth (GB/s)",
        "Bandwidth of one link carrying prompt KV from prefill to decode",
    );
    b.html.push_str("</label><label>latency <span class=\"unit\">ms</span>");
    b.input(
        &format!("{link}/latency_ms"),
        Ty::Num,
        &d["link"]["latency_ms"],
        "KV link latency (ms)",
        "Fixed latency of one transfer",
    );
    b.html.push_str("</label><label>topology");
    let topo = d["link"]["topology"].as_str().unwrap_or("per_pair");
    b.choice(
        &format!("{link}/topology"),
        topo,
        TOPOLOGY,
        "KV link topology",
        "A link per (prefill, decode) pair, or one link every transfer shares",
    );
    b.html.push_str(&format!(
        "</label></div><p class=\"unit\">The pools replace Replicas and Router above: {gpus} GPUs in all.</p>"
    ));
    b.finish("d-disagg")
}

/// Agent sessions: on/off, their lengths, tools as rows, what a turn's end does with the KV, the host tier
/// and the sessions' objectives.
fn sessions(v: &Value) -> Section {
    let mut b = Builder::new();
    let s = v.pointer("/workload/sessions").filter(|s| s.is_object());
    on_off(
        &mut b,
        "/workload/sessions",
        s.is_some(),
        "Agent sessions (multi-turn, tool calls between turns)",
        "Each arrival starts a session whose turns re-send a growing history, with a tool call between turns. Off: each arrival is one request",
    );
    let Some(s) = s else { return b.finish("d-sessions") };
    b.html.push_str("<p class=\"unit\">Arrivals start sessions: Rate is sessions/s and Requests counts sessions; each turn is scheduled as a request of the class mix.</p>");
    let p = "/workload/sessions";
    if let Some(path) = s.pointer("/trace/path").and_then(Value::as_str) {
        b.html.push_str(&format!("<p>Sessions replay <code>{}</code>.</p>", esc(path)));
        b.sig.push_str("trace;");
    } else {
        b.html.push_str("<table class=\"dtable\"><thead><tr><th>Turns <span class=\"unit\">per session</span></th><th>First prompt <span class=\"unit\">tokens</span></th><th>New input <span class=\"unit\">tokens a later turn</span></th><th>Output <span class=\"unit\">tokens a turn</span></th></tr></thead><tbody><tr>");
        for (key, who) in [
            ("turns", "session turns"),
            ("first_tokens", "first prompt"),
            ("new_tokens", "new input"),
            ("output_tokens", "turn output"),
        ] {
            length_cells(&mut b, &format!("{p}/{key}"), &s[key], who);
        }
        b.html.push_str("</tr></tbody></table>");
        tools(&mut b, s);
    }
    b.html.push_str("<div class=\"drow\"><label>Retention <span class=\"unit\">KV between turns</span>");
    b.variant(&format!("{p}/retention"), Ty::Retention, v, "retention", "What a turn's end does with the session's KV: freed; kept in HBM; kept a TTL, then moved to the host tier or freed; moved to the host tier at once; the gap oracle (the cheapest tier for each realised gap: a bound on gap cost); or adaptive, the same rule on an estimate learned from the calls that returned");
    b.html.push_str("</label><label>Host tier");
    b.variant("/engine/host_kv", Ty::HostTier, v, "host tier", "Host memory behind HBM for sessions' KV, and its link");
    b.html.push_str("</label><label>turn TTFT SLO <span class=\"unit\">ms</span>");
    let slo = |k: &str| s.pointer(&format!("/slo/{k}")).cloned().unwrap_or(Value::Null);
    b.input(
        &format!("{p}/slo/turn_ttft_ms"),
        Ty::OptNum,
        &slo("turn_ttft_ms"),
        "turn TTFT objective (ms)",
        "Every turn's TTFT must be at most this; empty: none",
    );
    b.html.push_str("</label><label>session SLO <span class=\"unit\">s</span>");
    b.input(
        &format!("{p}/slo/session_s"),
        Ty::OptNum,
        &slo("session_s"),
        "session time objective (s)",
        "A whole session must take at most this; empty: none",
    );
    b.html.push_str("</label></div>");
    let classes: Vec<&str> =
        s["classes"].as_array().map_or(vec![], |c| c.iter().filter_map(|c| c["name"].as_str()).collect());
    if !classes.is_empty() {
        b.html.push_str(&format!(
            "<p class=\"unit\">Session classes {} set their own fields in the JSON; the fields here apply where a class leaves one out.</p>",
            esc(&classes.join(", "))
        ));
        b.sig.push_str(&format!("classes={};", classes.len()));
    }
    b.finish("d-sessions")
}

/// The tools a turn's end calls: one row each (name, weight, mean latency, CV), added and removed.
fn tools(b: &mut Builder, s: &Value) {
    let list = s["tools"].as_array().cloned().unwrap_or_default();
    let rows = Rows {
        head: "<th>Tool</th><th>Weight</th><th>Mean latency <span class=\"unit\">s</span></th><th>CV <span class=\"unit\">lognormal</span></th>",
        ptr: "/workload/sessions/tools",
        what: "tool",
        add_title: "Add a tool a turn's end may call",
        keep_one: false,
        empty: "No tools: each turn follows the last at once.",
    };
    rows.build(b, &list, |b, p, t, who| {
        b.name_and_weight(p, t, who, "tool calls");
        b.cell(
            &format!("{p}/mean_s"),
            Ty::Num,
            &t["mean_s"],
            &format!("{who} mean latency (s)"),
            "Mean time the tool takes, seconds",
        );
        b.cell(
            &format!("{p}/cv"),
            Ty::Num,
            &t["cv"],
            &format!("{who} latency CV"),
            "Coefficient of variation of its latency (0: always the mean)",
        );
    });
}

/// The block a checkbox turns on: the P/D study's pools (a third of the replicas prefill) or the example's
/// sessions. None when the scenario is not one yet (its errors say why).
pub fn block_turned_on(v: &Value, ptr: &str) -> Option<Value> {
    match ptr {
        "/cluster/disaggregation" => {
            let spec = inferscale::scenario::parse(&v.to_string()).ok()?;
            serde_json::to_value(inferscale::study::pd::default_disaggregation(&spec)).ok()
        }
        "/workload/sessions" => {
            let spec = inferscale::scenario::parse(&v.to_string()).ok()?;
            let preset = spec.model.preset.as_deref().and_then(inferscale::cost::presets::model);
            Some(inferscale::catalog::default_sessions(spec.model.context_tokens.or(preset.map(|m| m.context_tokens))))
        }
        _ => None,
    }
}

/// A length distribution of kind `kind` at about the scale of `old` (its mean), with the other parameters
/// at sensible defaults.
fn length_of_kind(kind: &str, old: &Value) -> Value {
    let f = |k: &str| old.get(k).and_then(Value::as_f64);
    let mean = f("mean")
        .or(f("tokens"))
        .or_else(|| Some((f("min")? + f("max")?) / 2.0))
        .or_else(|| {
            let a = old.get("values")?.as_array()?;
            (!a.is_empty()).then(|| a.iter().filter_map(Value::as_f64).sum::<f64>() / a.len() as f64)
        })
        .unwrap_or(256.0);
    inferscale::catalog::length_of_kind(kind, mean)
}

/// Apply a field edit: the text `raw` of the input with pointer `ptr` and type name `ty`. Text that does not
/// parse as a number is written as a string, so the validator names the field instead of the edit vanishing.
pub fn edit(v: &mut Value, ptr: &str, ty: &str, raw: &str, label: &str, bad_input: bool) -> Result<(), String> {
    use crate::components::numbers::{Typed, typed};
    let Some(ty) = Ty::parse(ty) else { return Ok(()) };
    let raw = raw.trim();
    let new = match ty {
        Ty::LenKind => {
            let obj_ptr = ptr.trim_end_matches("/kind");
            let old = v.pointer(obj_ptr).cloned().unwrap_or(Value::Null);
            set(v, obj_ptr, length_of_kind(raw, &old));
            return Ok(());
        }
        // Text that is no number yet leaves the scenario as it was; the field says why.
        Ty::Num | Ty::OptNum | Ty::Int => match typed(raw, label, ty == Ty::Int, ty == Ty::OptNum, bad_input) {
            Typed::Number(x) => x,
            Typed::Cleared => {
                remove(v, ptr);
                return Ok(());
            }
            Typed::Invalid(message) => return Err(message),
        },
        Ty::OnOff => {
            match (raw == "true", v.pointer(ptr).is_some_and(|b| !b.is_null())) {
                (true, false) => match block_turned_on(v, ptr) {
                    Some(block) => set(v, ptr, block),
                    None => return Err(format!("{label}: fix the scenario's errors first")),
                },
                (false, true) => remove(v, ptr),
                _ => {}
            }
            return Ok(());
        }
        Ty::Router | Ty::Retention | Ty::HostTier => {
            if let Some(var) = ty.variant() {
                var.choose(v, ptr, raw);
            }
            return Ok(());
        }
        Ty::Text => Value::String(raw.to_string()),
        Ty::OptText | Ty::Choice if raw.is_empty() => {
            remove(v, ptr);
            return Ok(());
        }
        Ty::OptText | Ty::Choice => Value::String(raw.to_string()),
        Ty::List => {
            let items: Vec<Value> = raw
                .split([',', ' ', ';'])
                .filter(|s| !s.is_empty())
                .map(|s| s.parse::<i64>().map(|x| json!(x)).unwrap_or_else(|_| Value::String(s.to_string())))
                .collect();
            Value::Array(items)
        }
    };
    set(v, ptr, new);
    Ok(())
}

/// A button: add or remove a class, a tenant or an objective.
pub fn action(v: &mut Value, act: &str, i: usize) {
    // Objectives may be none at all (classes and tenants may not).
    if act == "add-objective" || act == "del-objective" {
        if v.pointer("/objectives/percentiles").is_none() {
            set(v, "/objectives/percentiles", json!([]));
        }
        let Some(list) = v.pointer_mut("/objectives/percentiles").and_then(Value::as_array_mut) else { return };
        if act == "add-objective" {
            list.push(json!({"metric": "ttft", "percentile": 95, "max_ms": 1000}));
        } else if i < list.len() {
            list.remove(i);
        }
        return;
    }
    if act == "add-tool" || act == "del-tool" {
        let Some(list) = tools_of(v) else { return };
        if act == "add-tool" {
            list.push(json!({"name": format!("tool-{}", list.len() + 1), "weight": 1, "mean_s": 1, "cv": 1}));
        } else if i < list.len() {
            list.remove(i);
        }
        return;
    }
    let list_ptr = match act {
        "add-class" | "del-class" => "/workload/classes",
        "add-tenant" | "del-tenant" => "/workload/tenants",
        _ => return,
    };
    let Some(list) = ensure_array(v, list_ptr) else { return };
    let n = list.len();
    match act {
        // A new class copies the last one (its lengths and SLOs are the likeliest starting point).
        "add-class" => {
            let mut c = list.last().cloned().unwrap_or_else(|| json!({}));
            if let Some(o) = c.as_object_mut() {
                o.insert("name".into(), json!(format!("class-{}", n + 1)));
            }
            list.push(c);
        }
        "add-tenant" => list.push(json!({"name": format!("tenant-{}", n + 1), "weight": 1.0})),
        // A scenario always keeps one class and one tenant.
        _ if n > 1 && i < n => {
            list.remove(i);
        }
        _ => {}
    }
}

/// The sessions' tools (none when the list is left out), when the scenario has sessions.
fn tools_of(v: &mut Value) -> Option<&mut Vec<Value>> {
    let s = v.pointer_mut("/workload/sessions")?.as_object_mut()?;
    s.entry("tools").or_insert_with(|| json!([])).as_array_mut()
}

/// The list at `ptr`. A scenario that leaves it out has the default one — a single entry with every field
/// at its default, which is what `{}` means — so that is what an absent list becomes.
fn ensure_array<'a>(v: &'a mut Value, ptr: &str) -> Option<&'a mut Vec<Value>> {
    if v.pointer(ptr).is_none() {
        set(v, ptr, json!([{}]));
    }
    v.pointer_mut(ptr).and_then(Value::as_array_mut)
}

/// Set the value at a JSON pointer (the core's: objects made on the way, a missing list is its default).
pub fn set(v: &mut Value, ptr: &str, new: Value) {
    inferscale::study::set_pointer(v, ptr, new);
}

/// Remove the field at a JSON pointer (an optional field left empty).
pub fn remove(v: &mut Value, ptr: &str) {
    inferscale::study::remove_pointer(v, ptr);
}

/// `/workload/classes/1/slo/ttft_ms` → `workload.classes[1].slo.ttft_ms` (the validator's field paths).
pub fn dotted(ptr: &str) -> String {
    let mut out = String::new();
    for part in ptr.trim_start_matches('/').split('/') {
        if part.parse::<usize>().is_ok() {
            out.push_str(&format!("[{part}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(part);
        }
    }
    out
}

/// Does the validator's error `path` concern the field at `ptr`? A length distribution's errors may name the
/// whole object; they are shown on its kind selector.
pub fn concerns(path: &str, ptr: &str) -> bool {
    let d = dotted(ptr);
    if let Some(obj) = d.strip_suffix(".kind")
        && path == obj
    {
        return true;
    }
    path == d || path.starts_with(&format!("{d}[")) || path.starts_with(&format!("{d}."))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(text: &str) -> Value {
        let s = inferscale::scenario::parse(text).expect("a valid spec");
        serde_json::to_value(&s).unwrap()
    }

    const TWO_CLASSES: &str = r#"{"workload": {"arrival": {"kind": "on_off", "rate_on_rps": 9, "mean_on_s": 2, "mean_off_s": 5}, "requests": 100,
        "classes": [{"name": "chat", "prompt_tokens": {"kind": "fixed", "tokens": 100}, "output_tokens": {"kind": "uniform", "min": 10, "max": 30}, "slo": {"ttft_ms": 500}},
                    {"name": "batch", "weight": 2, "priority": 3, "prompt_tokens": {"kind": "empirical", "values": [5, 7, 9]}, "slo": {"e2e_ms": 60000}}]}}"#;

    #[test]
    fn every_class_parameter_and_arrival_parameter_gets_a_field() {
        let v = spec(TWO_CLASSES);
        let s = sections(&v);
        let ptrs: Vec<&str> = s.iter().flat_map(|s| s.values.iter().map(|(p, _)| p.as_str())).collect();
        for p in [
            "/workload/arrival/rate_on_rps",
            "/workload/arrival/rate_off_rps",
            "/workload/arrival/mean_on_s",
            "/workload/arrival/mean_off_s",
            "/workload/classes/0/output_tokens/min",
            "/workload/classes/0/output_tokens/max",
            "/workload/classes/1/prompt_tokens/values",
            "/workload/classes/1/priority",
            "/workload/classes/1/slo/e2e_ms",
            "/workload/tenants/0/weight",
        ] {
            assert!(ptrs.contains(&p), "{p} missing from {ptrs:?}");
        }
        let values: Vec<&(String, String)> = s.iter().flat_map(|s| s.values.iter()).collect();
        assert!(values.contains(&&("/workload/classes/1/prompt_tokens/values".to_string(), "5, 7, 9".to_string())));
        assert!(values.contains(&&("/workload/classes/0/slo/tpot_ms".to_string(), String::new())));
    }

    #[test]
    fn edits_round_trip_through_the_validator() {
        let mut v = spec(TWO_CLASSES);
        edit(&mut v, "/workload/classes/1/prompt_tokens/values", "list", "3, 4 ,5", "field", false).unwrap();
        edit(&mut v, "/workload/classes/1/slo/ttft_ms", "optnum", "250", "field", false).unwrap();
        edit(&mut v, "/workload/classes/0/slo/ttft_ms", "optnum", "", "field", false).unwrap();
        edit(&mut v, "/workload/arrival/mean_off_s", "num", "7.5", "field", false).unwrap();
        edit(&mut v, "/workload/classes/0/output_tokens/kind", "lenkind", "lognormal", "field", false).unwrap();
        let s = inferscale::scenario::parse(&v.to_string()).expect("still a valid spec");
        let back = serde_json::to_value(&s).unwrap();
        assert_eq!(back.pointer("/workload/classes/1/prompt_tokens/values"), Some(&json!([3, 4, 5])));
        assert_eq!(back.pointer("/workload/classes/1/slo/ttft_ms"), Some(&json!(250.0)));
        assert_eq!(back.pointer("/workload/classes/0/slo/ttft_ms"), None);
        assert_eq!(back.pointer("/workload/arrival/mean_off_s"), Some(&json!(7.5)));
        // The new kind keeps the old scale: uniform 10..30 becomes lognormal with mean 20.
        assert_eq!(back.pointer("/workload/classes/0/output_tokens/kind"), Some(&json!("lognormal")));
        assert_eq!(back.pointer("/workload/classes/0/output_tokens/mean"), Some(&json!(20.0)));
        inferscale::scenario::validate(&s).expect("validates");
    }

    #[test]
    fn the_objective_metrics_are_the_cores() {
        let names: Vec<&str> = METRICS.iter().map(|m| m.0).collect();
        assert_eq!(names, inferscale::catalog::catalog().metrics, "a metric the core adds needs its label here");
    }

    #[test]
    fn every_length_kind_is_valid_from_every_other() {
        let kinds = len_kinds();
        for from in kinds.iter().map(|k| (k.as_str(),)) {
            for to in kinds.iter().map(|k| (k.as_str(),)) {
                let old = length_of_kind(from.0, &json!({"kind": "fixed", "tokens": 300}));
                let mut v = spec(r#"{"workload": {"arrival": {"kind": "poisson", "rate_rps": 1}, "requests": 10}}"#);
                set(&mut v, "/workload/classes/0/prompt_tokens", old);
                edit(&mut v, "/workload/classes/0/prompt_tokens/kind", "lenkind", to.0, "field", false).unwrap();
                let s = inferscale::scenario::parse(&v.to_string())
                    .unwrap_or_else(|e| panic!("{} → {}: {e:?}", from.0, to.0));
                inferscale::scenario::validate(&s).unwrap_or_else(|e| panic!("{} → {}: {e:?}", from.0, to.0));
            }
        }
    }

    #[test]
    fn a_bad_number_is_reported_at_the_field_and_the_scenario_keeps_its_value() {
        let mut v = spec(TWO_CLASSES);
        let before = v.clone();
        let err = edit(&mut v, "/workload/classes/1/weight", "num", "abc", "weight", false).unwrap_err();
        assert_eq!(err, "weight: \"abc\" is not a number");
        let err = edit(&mut v, "/workload/arrival/mean_on_s", "num", "", "mean on period (s)", false).unwrap_err();
        assert_eq!(err, "mean on period (s): enter a number");
        edit(&mut v, "/workload/classes/0/priority", "int", "", "priority", true).unwrap_err();
        assert_eq!(v, before, "nothing was written");
    }

    #[test]
    fn classes_and_tenants_are_added_and_removed_but_never_emptied() {
        let mut v = spec(TWO_CLASSES);
        action(&mut v, "add-class", 0);
        let classes = v.pointer("/workload/classes").unwrap().as_array().unwrap();
        assert_eq!(classes.len(), 3);
        assert_eq!(classes[2]["name"], "class-3");
        assert_eq!(classes[2]["priority"], 3, "a new class copies the last one");
        action(&mut v, "del-class", 0);
        action(&mut v, "del-class", 0);
        action(&mut v, "del-class", 0);
        assert_eq!(v.pointer("/workload/classes").unwrap().as_array().unwrap().len(), 1);
        action(&mut v, "add-tenant", 0);
        assert_eq!(v.pointer("/workload/tenants/1/name"), Some(&json!("tenant-2")));
        let s = inferscale::scenario::parse(&v.to_string()).unwrap();
        inferscale::scenario::validate(&s).unwrap();
        // The structure changed, so the page rebuilds; a value edit keeps the signature.
        let before = sections(&v)[2].sig.clone();
        edit(&mut v, "/workload/tenants/1/weight", "num", "4", "field", false).unwrap();
        assert_eq!(sections(&v)[2].sig, before);
        action(&mut v, "del-tenant", 1);
        assert_ne!(sections(&v)[2].sig, before);
    }

    #[test]
    fn lists_left_at_their_default_are_edited_as_the_default() {
        let bare = r#"{"workload": {"arrival": {"kind": "poisson", "rate_rps": 1}, "requests": 10}}"#;
        let mut v: Value = serde_json::from_str(bare).unwrap();
        action(&mut v, "add-tenant", 0);
        assert_eq!(
            v.pointer("/workload/tenants").unwrap().as_array().unwrap().len(),
            2,
            "the default tenant and the new one"
        );
        let mut v: Value = serde_json::from_str(bare).unwrap();
        edit(&mut v, "/workload/classes/0/slo/ttft_ms", "optnum", "800", "field", false).unwrap();
        let s = inferscale::scenario::parse(&v.to_string()).expect("a list, not an object keyed \"0\"");
        assert_eq!(s.workload.classes.len(), 1);
        assert_eq!(s.workload.classes[0].slo.ttft_ms, Some(800.0));
    }

    #[test]
    fn objectives_are_added_edited_and_removed_and_validate() {
        let mut v = spec(TWO_CLASSES);
        assert!(sections(&v)[3].values.iter().any(|(p, x)| p == "/objectives/attainment_target" && x == "0.99"));
        action(&mut v, "add-objective", 0);
        action(&mut v, "add-objective", 0);
        edit(&mut v, "/objectives/percentiles/1/metric", "choice", "tpot", "m", false).unwrap();
        edit(&mut v, "/objectives/percentiles/1/percentile", "num", "99", "p", false).unwrap();
        edit(&mut v, "/objectives/percentiles/1/max_ms", "num", "50", "x", false).unwrap();
        edit(&mut v, "/objectives/percentiles/1/class", "opttext", "chat", "c", false).unwrap();
        edit(&mut v, "/objectives/attainment_target", "num", "0.95", "t", false).unwrap();
        let s = inferscale::scenario::parse(&v.to_string()).expect("a valid spec");
        let sc = inferscale::scenario::validate(&s).expect("validates");
        assert_eq!(sc.objectives.attainment_target, 0.95);
        assert_eq!(sc.objectives.percentiles.len(), 2);
        assert_eq!(sc.objectives.percentiles[1].class, Some(0));
        assert_eq!(sc.objectives.percentiles[1].max_ns, 50_000_000);
        edit(&mut v, "/objectives/percentiles/1/class", "opttext", "", "c", false).unwrap();
        assert!(v.pointer("/objectives/percentiles/1/class").is_none(), "empty: every class");
        action(&mut v, "del-objective", 0);
        action(&mut v, "del-objective", 0);
        assert_eq!(
            v.pointer("/objectives/percentiles").unwrap().as_array().unwrap().len(),
            0,
            "objectives may be none"
        );
        inferscale::scenario::validate(&inferscale::scenario::parse(&v.to_string()).unwrap()).unwrap();
    }

    #[test]
    fn error_paths_map_to_fields() {
        assert_eq!(dotted("/workload/classes/1/slo/ttft_ms"), "workload.classes[1].slo.ttft_ms");
        assert!(concerns("workload.classes[1].slo.ttft_ms", "/workload/classes/1/slo/ttft_ms"));
        assert!(concerns("workload.classes[0].prompt_tokens.values[2]", "/workload/classes/0/prompt_tokens/values"));
        assert!(concerns("workload.classes[0].prompt_tokens", "/workload/classes/0/prompt_tokens/kind"));
        assert!(!concerns("workload.classes[0].prompt_tokens", "/workload/classes/0/prompt_tokens/max"));
        assert!(!concerns("workload.classes[10].weight", "/workload/classes/1/weight"));
    }

    #[test]
    fn pd_turns_on_with_pools_edits_each_pool_and_turns_off() {
        let mut v = spec(
            r#"{"workload": {"arrival": {"kind": "poisson", "rate_rps": 4}, "requests": 50}, "cluster": {"replicas": 6}}"#,
        );
        assert_eq!(sections(&v)[4].values.len(), 1, "off: only the checkbox");
        edit(&mut v, "/cluster/disaggregation", "onoff", "true", "P/D", false).unwrap();
        assert_eq!(v.pointer("/cluster/disaggregation/prefill/replicas"), Some(&json!(2)), "a third prefill");
        assert_eq!(v.pointer("/cluster/disaggregation/decode/replicas"), Some(&json!(4)));
        let v2 = spec(&v.to_string());
        let ptrs: Vec<String> = sections(&v2)[4].values.iter().map(|x| x.0.clone()).collect();
        for p in [
            "/cluster/disaggregation/decode/tp",
            "/cluster/disaggregation/prefill/router",
            "/cluster/disaggregation/link/topology",
        ] {
            assert!(ptrs.iter().any(|x| x == p), "{p} missing from {ptrs:?}");
        }
        assert!(sections(&v2)[4].html.contains("6 GPUs in all"));
        edit(&mut v, "/cluster/disaggregation/decode/device", "choice", "h200", "d", false).unwrap();
        edit(&mut v, "/cluster/disaggregation/decode/tp", "optnum", "2", "d", false).unwrap();
        edit(&mut v, "/cluster/disaggregation/prefill/router", "router", "bounded_affinity", "r", false).unwrap();
        assert_eq!(v.pointer("/cluster/disaggregation/prefill/router/slack_ms"), Some(&json!(50)));
        let v2 = spec(&v.to_string());
        assert!(sections(&v2)[4].html.contains("10 GPUs in all"), "2 prefill × 1 + 4 decode × 2");
        inferscale::scenario::validate(&inferscale::scenario::parse(&v.to_string()).unwrap()).expect("validates");
        edit(&mut v, "/cluster/disaggregation/decode/device", "choice", "", "d", false).unwrap();
        assert!(v.pointer("/cluster/disaggregation/decode/device").is_none(), "empty: the scenario's device");
        edit(&mut v, "/cluster/disaggregation", "onoff", "false", "P/D", false).unwrap();
        assert!(v.pointer("/cluster/disaggregation").is_none());
    }

    #[test]
    fn sessions_turn_on_with_tools_as_rows_that_are_added_edited_and_removed() {
        let mut v = spec(r#"{"workload": {"arrival": {"kind": "poisson", "rate_rps": 0.2}, "requests": 20}}"#);
        edit(&mut v, "/workload/sessions", "onoff", "true", "sessions", false).unwrap();
        let n = |v: &Value| v.pointer("/workload/sessions/tools").and_then(Value::as_array).map_or(0, Vec::len);
        assert_eq!(n(&v), 6, "the example's tools");
        let shown = spec(&v.to_string());
        let ptrs: Vec<String> = sections(&shown)[5].values.iter().map(|x| x.0.clone()).collect();
        for p in [
            "/workload/sessions/tools/5/mean_s",
            "/workload/sessions/turns/mean",
            "/workload/sessions/retention/ttl_s",
            "/engine/host_kv",
            "/workload/sessions/slo/session_s",
        ] {
            assert!(ptrs.iter().any(|x| x == p), "{p} missing from {ptrs:?}");
        }
        for _ in 0..6 {
            action(&mut v, "del-tool", 0);
        }
        assert_eq!(n(&v), 0, "none: turns follow at once");
        assert!(sections(&spec(&v.to_string()))[5].html.contains("No tools"));
        action(&mut v, "add-tool", 0);
        edit(&mut v, "/workload/sessions/tools/0/mean_s", "num", "2.5", "t", false).unwrap();
        edit(&mut v, "/workload/sessions/retention", "retention", "host_offload", "r", false).unwrap();
        edit(&mut v, "/engine/host_kv", "host", "host", "h", false).unwrap();
        let sc =
            inferscale::scenario::validate(&inferscale::scenario::parse(&v.to_string()).unwrap()).expect("validates");
        assert!(sc.workload.sessions.is_some());
        edit(&mut v, "/workload/sessions", "onoff", "false", "sessions", false).unwrap();
        assert!(v.pointer("/workload/sessions").is_none());
        action(&mut v, "add-tool", 0);
        assert!(v.pointer("/workload/sessions").is_none(), "no tools without sessions");
    }
}
