//! The scenario every panel shares: the editor's JSON, the controls and generated rows that edit it, its
//! validation shown at each field, examples, imports, uploaded traces and Undo. The panels read it (its text,
//! its validity); only this file writes it.

use std::cell::Cell;

use serde_json::{Value, json};
use wasm_bindgen::JsCast;
use web_sys::{Element, HtmlElement, HtmlInputElement, HtmlSelectElement, HtmlTextAreaElement};

use crate::components::json_lines;
use crate::components::numbers;
use crate::components::table::esc;
use crate::lab::controls::{CONTROLS, Kind, PAIRS};
use crate::lab::details;
use crate::page::{self, Page, mark_field, set_disabled};

/// Shipped examples (the trace example carries its trace text, since a page cannot read files by path).
pub const PRESETS: &[(&str, &str)] = &[
    ("default", include_str!("../../../scenarios/default.json")),
    ("chat-70b-h100-tp4", include_str!("../../../scenarios/chat-70b-h100-tp4.json")),
    ("bursty-multitenant", include_str!("../../../scenarios/bursty-multitenant.json")),
    ("kv-pressure", include_str!("../../../scenarios/kv-pressure.json")),
    ("trace-replay", include_str!("../../../scenarios/trace-replay.json")),
    ("mmc-central-queue", include_str!("../../../scenarios/mmc-central-queue.json")),
    ("peer-llama3-8b-h100", include_str!("../../../scenarios/peer-llama3-8b-h100.json")),
    ("pd-llama3-8b-h100", include_str!("../../../scenarios/pd-llama3-8b-h100.json")),
    ("agent-sessions", include_str!("../../../scenarios/agent-sessions.json")),
    ("agent-mix", include_str!("../../../scenarios/agent-mix.json")),
    ("agent-workflows", include_str!("../../../scenarios/agent-workflows.json")),
];
const SAMPLE_TRACE: (&str, &str) =
    ("traces/sample-vidur.csv", include_str!("../../../scenarios/traces/sample-vidur.csv"));
/// The shipped session trace, for a scenario that names it (`workload.sessions.trace.path`).
const SAMPLE_SESSIONS: (&str, &str) =
    ("traces/sample-sessions.jsonl", include_str!("../../../scenarios/traces/sample-sessions.jsonl"));

/// The scenario's editing state (the text itself is the editor's, on the page).
pub struct Editor {
    /// An uploaded trace: (name written in `path`, text).
    trace: Option<(String, String)>,
    /// An uploaded session trace (name, text): the scenario names it, this carries its text.
    session_trace: Option<(String, String)>,
    /// Fields whose text is not an acceptable value (yet): (validator path, message). The scenario keeps
    /// the field's last good value; Run stays disabled until the text is fixed.
    field_errors: Vec<(String, String)>,
    /// The scenario an example, import or trace replaced: (what replaced it, its text), for Undo.
    undo: Option<(String, String)>,
    /// The last name the page derived for the scenario (it keeps deriving while the name is its own).
    auto_name: String,
    /// The Serving Lab's run is in flight: its Run stays disabled whatever the scenario.
    pub lab_running: Cell<bool>,
    /// Fields typed while the JSON did not parse (a control's id, or a generated row's `ptr:` pointer):
    /// they keep their text and are applied once the JSON parses again.
    unapplied: Vec<String>,
}

impl Default for Editor {
    fn default() -> Self {
        Editor {
            trace: Some((SAMPLE_TRACE.0.to_string(), SAMPLE_TRACE.1.to_string())),
            session_trace: Some((SAMPLE_SESSIONS.0.to_string(), SAMPLE_SESSIONS.1.to_string())),
            field_errors: Vec::new(),
            undo: None,
            auto_name: String::new(),
            lab_running: Cell::new(false),
            unapplied: Vec::new(),
        }
    }
}

impl Editor {
    /// The JSON editor.
    pub fn area(&self, page: &Page) -> HtmlTextAreaElement {
        page.el("scenario").dyn_into().expect("a textarea")
    }

    /// The editor's text as typed.
    pub fn text(&self, page: &Page) -> String {
        self.area(page).value()
    }

    /// The editor's text with an uploaded trace's data put in, ready to validate or run.
    pub fn scenario_text(&self, page: &Page) -> String {
        let text = self.area(page).value();
        if self.trace.is_none() && self.session_trace.is_none() {
            return text;
        }
        let Ok(mut v) = serde_json::from_str::<Value>(&text) else { return text };
        if let Some((name, data)) = &self.trace {
            with_trace_text(&mut v, "/workload/arrival", name, data);
        }
        if let Some((name, data)) = &self.session_trace {
            with_trace_text(&mut v, "/workload/sessions/trace", name, data);
        }
        v.to_string()
    }

    /// Validate the editor's scenario; show every error inline; enable Run only when valid.
    pub fn validate(&self, page: &Page) -> bool {
        let mut errors = self.field_errors.clone();
        // The text is parsed once; only a scenario that fails is looked at for a syntax error.
        let mut syntax = None;
        match inferscale::scenario::load_for_browser(&self.scenario_text(page)) {
            Ok(sc) => self.show_length_notes(page, &sc.workload.truncations(), &sc.past_max_model_len()),
            Err(e) => match json_lines::syntax_error(&self.text(page)) {
                // Text that is not JSON yet: where it breaks, in the editor's lines (not a field's verdict).
                Some(bad) => syntax = Some(bad),
                // A field with text of its own still in error shows that, not the old value's verdict.
                None => errors.extend(
                    e.errors
                        .into_iter()
                        .map(|f| (f.path, f.message))
                        .filter(|(p, _)| !self.field_errors.iter().any(|(q, _)| q == p)),
                ),
            },
        }
        self.show_lines(page, syntax.as_ref());
        errors.extend(syntax.map(|bad| ("(root)".to_string(), bad.text())));
        self.show_errors(page, &errors);
        let ok = errors.is_empty();
        if let Ok(b) = page.el("run").dyn_into::<web_sys::HtmlButtonElement>() {
            b.set_disabled(!ok || self.lab_running.get());
        }
        // Say it where the user looks, beside Run.
        let status = page.el("status").text_content().unwrap_or_default();
        if !ok && !self.lab_running.get() {
            let names: Vec<String> = errors
                .iter()
                .map(|(p, _)| self.label_of(page, p))
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            page.set_status(&format!(
                "Cannot run: fix {} ({} problem{})",
                names.join(", "),
                errors.len(),
                if errors.len() == 1 { "" } else { "s" }
            ));
        } else if ok && status.starts_with("Cannot run") {
            page.set_status("Ready");
        }
        ok
    }

    /// A max that cuts its distribution's mean, and a prompt max that with the largest output passes
    /// `max_model_len`, are said at the max (and at the class's length control).
    fn show_length_notes(
        &self,
        page: &Page,
        cuts: &[inferscale::workload::Truncation],
        past: &[inferscale::scenario::PastLimit],
    ) {
        let note = |path: &str| {
            let notes: Vec<String> = (cuts.iter().filter(|t| t.path == path).map(|t| t.what()))
                .chain(past.iter().filter(|p| p.path == path).map(|p| p.what.clone()))
                .collect();
            (!notes.is_empty()).then(|| notes.join("; "))
        };
        for (id, path) in
            [("c-prompt", "workload.classes[0].prompt_tokens"), ("c-output", "workload.classes[0].output_tokens")]
        {
            page::note_field(&page.el(id), note(path).as_deref());
        }
        let Ok(fields) = page.el("details").query_selector_all("[data-ptr$=\"/max\"]") else { return };
        for i in 0..fields.length() {
            let Some(el) = fields.item(i).and_then(|n| n.dyn_into::<Element>().ok()) else { continue };
            let ptr = el.get_attribute("data-ptr").unwrap_or_default();
            page::note_field(&el, note(&details::dotted(ptr.trim_end_matches("/max"))).as_deref());
        }
    }

    /// The name a user knows a field by: its control's label, a generated row's label, else the path.
    pub fn label_of(&self, page: &Page, path: &str) -> String {
        if let Some(c) = CONTROLS.iter().find(|(_, ptr, kind, _)| dotted(ptr, *kind) == path) {
            return c.3.to_string();
        }
        if let Ok(Some(el)) = page.el("details").query_selector(&format!("[data-ptr=\"{}\"]", pointer_of(path)))
            && let Some(l) = el.get_attribute("aria-label")
        {
            return l;
        }
        if path == "(root)" { "the scenario JSON".into() } else { path.to_string() }
    }

    pub fn show_errors(&self, page: &Page, errors: &[(String, String)]) {
        let items: String = errors
            .iter()
            .map(|(p, m)| {
                let label = self.label_of(page, p);
                let text = if m.starts_with(&label) { esc(m) } else { format!("<b>{}</b>: {}", esc(&label), esc(m)) };
                let go = json_lines::line_of(m).filter(|_| p == "(root)").map_or(String::new(), |n| {
                    format!(" <button type=\"button\" data-line=\"{n}\">Go to line {n}</button>")
                });
                format!("<li>{text} <code>{}</code>{go}</li>", esc(p))
            })
            .collect();
        page.el("errors").set_inner_html(&items);
        self.area(page).class_list().toggle_with_force("invalid", !errors.is_empty()).ok();
        for (id, ptr, kind, label) in CONTROLS {
            let dotted = dotted(ptr, *kind);
            // A tagged policy owns its parameters' errors; a plain field (the arrival kind too) only its own.
            let hit = errors
                .iter()
                .find(|(p, _)| *p == dotted || (*kind == Kind::Tagged && p.starts_with(&format!("{dotted}."))));
            mark_field(&page.el(id), hit.map(|h| field_message(label, &h.1)).as_deref());
        }
        let Ok(fields) = page.el("details").query_selector_all("[data-ptr]") else { return };
        for i in 0..fields.length() {
            let Some(el) = fields.item(i).and_then(|n| n.dyn_into::<Element>().ok()) else { continue };
            let ptr = el.get_attribute("data-ptr").unwrap_or_default();
            let label = el.get_attribute("aria-label").unwrap_or_default();
            let hit = errors.iter().find(|(p, _)| details::concerns(p, &ptr));
            mark_field(&el, hit.map(|h| field_message(&label, &h.1)).as_deref());
        }
    }

    /// Arrival parameters, classes and tenants as generated rows. Rebuilt only when their structure changes
    /// (a class added, a kind switched); otherwise values are updated in place so focus stays put.
    pub fn render_details(&self, page: &Page, v: &Value) {
        let focused = page.doc.active_element().and_then(|e| e.get_attribute("data-ptr"));
        for sec in details::sections(v) {
            let el = page.el(sec.id);
            if el.get_attribute("data-sig").as_deref() == Some(sec.sig.as_str()) {
                for (ptr, value) in &sec.values {
                    if focused.as_deref() == Some(ptr.as_str())
                        || self.field_errors.iter().any(|(p, _)| *p == details::dotted(ptr))
                    {
                        continue; // the user is typing there, or its text is kept until fixed
                    }
                    let Ok(Some(field)) = el.query_selector(&format!("[data-ptr=\"{ptr}\"]")) else { continue };
                    if let Ok(i) = field.clone().dyn_into::<HtmlInputElement>() {
                        if i.value() != *value {
                            i.set_value(value);
                        }
                    } else if let Ok(s) = field.dyn_into::<HtmlSelectElement>() {
                        s.set_value(value);
                    }
                }
            } else {
                el.set_inner_html(&sec.html);
                el.set_attribute("data-sig", &sec.sig).ok();
                if let Some(ptr) = &focused
                    && let Ok(Some(field)) = el.query_selector(&format!("[data-ptr=\"{ptr}\"]"))
                    && let Ok(h) = field.dyn_into::<HtmlElement>()
                {
                    h.focus().ok();
                }
            }
        }
    }

    /// A generated field changed (`target` carries its pointer and type) or one of their buttons was pressed.
    pub fn detail_changed(&mut self, page: &Page, target: &Element) {
        let held = target.get_attribute("data-ptr").map(|p| (format!("ptr:{p}"), details::dotted(&p)));
        let Ok(mut v) = serde_json::from_str::<Value>(&self.area(page).value()) else {
            match held {
                Some((field, path)) => self.hold(page, field, path),
                None => {
                    self.notice(page, "Not done: the scenario JSON has an error (see its line); fix it first.", None)
                }
            }
            return;
        };
        self.unapplied.retain(|u| Some(u) != held.as_ref().map(|h| &h.0));
        if let (Some(ptr), Some(ty)) = (target.get_attribute("data-ptr"), target.get_attribute("data-ty")) {
            let (raw, bad_input) = if let Ok(i) = target.clone().dyn_into::<HtmlInputElement>() {
                if i.type_() == "checkbox" {
                    (i.checked().to_string(), false)
                } else {
                    (i.value(), i.validity().bad_input())
                }
            } else if let Ok(s) = target.clone().dyn_into::<HtmlSelectElement>() {
                (s.value(), false)
            } else {
                return;
            };
            let path = details::dotted(&ptr);
            self.field_errors.retain(|(p, _)| *p != path);
            let label = target.get_attribute("aria-label").unwrap_or_default();
            if let Err(message) = details::edit(&mut v, &ptr, &ty, &raw, &label, bad_input) {
                self.field_errors.push((path, message));
                self.validate(page);
                return;
            }
        } else if let Some(act) = target.get_attribute("data-act") {
            let i = target.get_attribute("data-i").and_then(|i| i.parse().ok()).unwrap_or(0);
            details::action(&mut v, &act, i);
            self.area(page).set_value(&serde_json::to_string_pretty(&v).unwrap_or_default());
            self.sync_controls(page);
            self.validate(page);
            refocus(page, &act, i);
            return;
        } else {
            return;
        }
        self.area(page).set_value(&serde_json::to_string_pretty(&v).unwrap_or_default());
        self.sync_controls(page);
        self.validate(page);
    }

    /// Show the scenario's effective values (defaults filled in) in the controls. The focused control is
    /// left as the user is typing it, and a control whose text is in error keeps that text until fixed.
    pub fn sync_controls(&self, page: &Page) {
        let Ok(spec) = inferscale::scenario::parse(&self.area(page).value()) else { return };
        let Ok(v) = serde_json::to_value(&spec) else { return };
        let arrival = v.pointer("/workload/arrival/kind").and_then(Value::as_str).unwrap_or("");
        let focused = page.doc.active_element().map(|e| e.id()).unwrap_or_default();
        let (pd, sessions) =
            (v.pointer("/cluster/disaggregation").is_some(), v.pointer("/workload/sessions").is_some());
        for (id, ptr, kind, _) in CONTROLS {
            let el = page.el(id);
            let path = if *kind == Kind::Tagged {
                format!("{ptr}/kind")
            } else if let Some(field) = length_field(&v, id, ptr) {
                format!("{ptr}/{field}")
            } else {
                ptr.to_string()
            };
            let mut value = v.pointer(&path).cloned();
            if *id == "c-chunk" && value.is_none() {
                value = v.pointer("/engine/max_num_batched_tokens").cloned();
            }
            if *id == "c-formation" && value.is_none() {
                value = Some(json!("vllm")); // the default, which the format leaves out
            }
            let enabled = match *id {
                "c-rate" => matches!(arrival, "poisson" | "constant" | "gamma"),
                "c-cv" => arrival == "gamma",
                // Sessions draw their own lengths; the pools replace the replicas and their router.
                "c-prompt" | "c-output" => arrival != "trace" && !sessions && length_field(&v, id, ptr).is_some(),
                "c-replicas" | "c-router" => !pd,
                _ => true,
            };
            set_disabled(&el, !enabled);
            let pending = self.field_errors.iter().any(|(p, _)| *p == dotted(ptr, *kind));
            if *id == focused || pending {
                continue;
            }
            if let Ok(input) = el.clone().dyn_into::<HtmlInputElement>() {
                match kind {
                    Kind::Bool => input.set_checked(value.as_ref().and_then(Value::as_bool).unwrap_or(false)),
                    _ => {
                        let text = value.as_ref().map(numbers::shown).unwrap_or_default();
                        if input.value() != text {
                            input.set_value(&text);
                        }
                    }
                }
            } else if let Ok(sel) = el.dyn_into::<HtmlSelectElement>() {
                sel.set_value(value.as_ref().and_then(Value::as_str).unwrap_or(""));
            }
        }
        page.el("c-rate-unit").set_text_content(Some(if sessions { "sessions/s" } else { "req/s" }));
        page.el("c-requests-unit").set_text_content(Some(if sessions { "sessions" } else { "" }));
        self.render_details(page, &v);
        for (range, number) in PAIRS {
            let n: HtmlInputElement = page.el(number).dyn_into().unwrap();
            let r: HtmlInputElement = page.el(range).dyn_into().unwrap();
            if *range != focused {
                r.set_value(&n.value());
            }
            set_disabled(&r, n.disabled());
        }
    }

    /// A control changed: write its value into the editor's JSON. Number text that is not a value (yet)
    /// leaves the JSON as it was and is reported at the field.
    pub fn control_changed(&mut self, page: &Page, id: &str) {
        let Some(&(_, ptr, kind, label)) = CONTROLS.iter().find(|c| c.0 == id) else { return };
        let el = page.el(id);
        let (raw, bad_input) = if let Ok(i) = el.clone().dyn_into::<HtmlInputElement>() {
            if kind == Kind::Bool { (i.checked().to_string(), false) } else { (i.value(), i.validity().bad_input()) }
        } else if let Ok(s) = el.dyn_into::<HtmlSelectElement>() {
            (s.value(), false)
        } else {
            return;
        };
        let path = dotted(ptr, kind);
        self.field_errors.retain(|(p, _)| *p != path);
        let Ok(mut v) = serde_json::from_str::<Value>(&self.area(page).value()) else {
            self.hold(page, id.to_string(), path);
            return;
        };
        self.unapplied.retain(|u| u != id);
        let length = length_field(&v, id, ptr);
        // A fixed length takes whole tokens; a mean may be fractional.
        let int = kind == Kind::Int || length == Some("tokens");
        let new = match kind {
            Kind::Num | Kind::OptNum | Kind::Int => {
                match numbers::typed(&raw, label, int, kind == Kind::OptNum, bad_input) {
                    numbers::Typed::Number(x) => Some(x),
                    numbers::Typed::Cleared => None,
                    numbers::Typed::Invalid(message) => {
                        self.field_errors.push((path, message));
                        self.validate(page);
                        return;
                    }
                }
            }
            Kind::Bool => Some(json!(raw == "true")),
            Kind::Text => Some(json!(raw)),
            Kind::Tagged => Some(inferscale::catalog::policy_of_kind(&raw)),
        };
        let target = match length {
            Some(field) => format!("{ptr}/{field}"),
            None => ptr.to_string(),
        };
        if id == "c-arrival" {
            let a = arrival_object(&v, &raw);
            details::set(&mut v, "/workload/arrival", a);
        } else if let Some(new) = new {
            details::set(&mut v, &target, new);
        } else {
            details::remove(&mut v, &target);
        }
        if matches!(id, "c-model" | "c-device" | "c-tp" | "c-replicas" | "c-rate" | "c-arrival") {
            self.derive_name(&mut v);
        }
        self.area(page).set_value(&serde_json::to_string_pretty(&v).unwrap_or_default());
        self.sync_controls(page);
        self.validate(page);
    }

    /// While the scenario's name is an example's or one the page derived, it follows what is run, so the
    /// name in exports and reports says it ("llama-3-70b-h100-sxm-tp4x2-20rps"); a name the user wrote stays.
    /// A field typed while the JSON does not parse: it keeps its text, says why it is not applied yet, and
    /// the JSON's own error stays in the list.
    fn hold(&mut self, page: &Page, field: String, path: String) {
        let line = json_lines::syntax_error(&self.text(page)).map_or(0, |e| e.line);
        self.field_errors.retain(|(p, _)| *p != path);
        self.field_errors.push((
            path,
            format!("not applied yet: the scenario JSON has an error at line {line}; this value is applied once the JSON parses"),
        ));
        if !self.unapplied.contains(&field) {
            self.unapplied.push(field);
        }
        self.validate(page);
    }

    /// The JSON parses again: the fields typed meanwhile are applied, in the order they were typed.
    pub fn apply_held(&mut self, page: &Page) {
        if self.unapplied.is_empty() || json_lines::syntax_error(&self.text(page)).is_some() {
            return;
        }
        for field in std::mem::take(&mut self.unapplied) {
            match field.strip_prefix("ptr:") {
                Some(ptr) => {
                    let sel = format!("[data-ptr=\"{ptr}\"]");
                    if let Ok(Some(el)) = page.el("details").query_selector(&sel) {
                        self.detail_changed(page, &el);
                    } else {
                        self.field_errors.retain(|(p, _)| *p != details::dotted(ptr));
                    }
                }
                None => self.control_changed(page, &field),
            }
        }
        self.sync_controls(page);
        self.validate(page);
    }

    /// The line numbers beside the editor, the broken line marked; redrawn only when they change.
    fn show_lines(&self, page: &Page, bad: Option<&json_lines::SyntaxError>) {
        let text = self.text(page);
        let key = format!("{}:{}", text.split('\n').count(), bad.map_or(String::new(), |b| b.text()));
        let gutter = page.el("scenario-lines");
        if gutter.get_attribute("data-key").as_deref() != Some(key.as_str()) {
            gutter.set_inner_html(&json_lines::gutter_html(&text, bad));
            gutter.set_attribute("data-key", &key).ok();
        }
        gutter.set_scroll_top(self.area(page).scroll_top());
    }

    /// "Go to line N": select that line in the editor and bring it into view.
    pub fn go_to_line(&self, page: &Page, line: usize) {
        let area = self.area(page);
        let text = area.value();
        let (a, b) = json_lines::line_range(&text, line);
        // The textarea counts UTF-16 units.
        let units = |i: usize| text[..i].encode_utf16().count() as u32;
        area.focus().ok();
        area.set_selection_range(units(a), units(b)).ok();
        let lines = text.split('\n').count().max(1) as i32;
        area.set_scroll_top((area.scroll_height() * (line as i32 - 3).max(0)) / lines);
        page.el("scenario-lines").set_scroll_top(area.scroll_top());
    }

    pub fn derive_name(&mut self, v: &mut Value) {
        let name = v["name"].as_str().unwrap_or("scenario").to_string();
        let ours = name == self.auto_name || PRESETS.iter().any(|(p, _)| *p == name) || name == "scenario";
        if !ours {
            return;
        }
        let Ok(spec) = inferscale::scenario::parse(&v.to_string()) else { return };
        use inferscale::scenario::ArrivalSpec as A;
        let r = |x: &f64| numbers::shown(&json!(x));
        let (tag, load) = match &spec.workload.arrival {
            A::Poisson { rate_rps } => {
                (format!("-{}rps", r(rate_rps)), format!(", Poisson arrivals at {} req/s", r(rate_rps)))
            }
            A::Constant { rate_rps } => {
                (format!("-{}rps", r(rate_rps)), format!(", evenly spaced arrivals at {} req/s", r(rate_rps)))
            }
            A::Gamma { rate_rps, cv } => (
                format!("-{}rps-bursty", r(rate_rps)),
                format!(", bursty arrivals (gap CV {}) at {} req/s", r(cv), r(rate_rps)),
            ),
            A::OnOff { .. } => ("-on-off".to_string(), ", on/off bursts".to_string()),
            A::ClosedLoop { clients, .. } => {
                (format!("-{clients}clients"), format!(", a closed loop of {clients} clients"))
            }
            A::Burst {} => ("-burst".to_string(), ", a burst at t = 0".to_string()),
            A::Trace { .. } => ("-trace".to_string(), ", replaying a trace".to_string()),
        };
        let model = spec.model.preset.clone().unwrap_or_else(|| "custom-model".into());
        let device = spec.hardware.device.clone().unwrap_or_else(|| "custom-gpu".into());
        let (tp, replicas) = (spec.hardware.tp, spec.cluster.replicas);
        let derived = format!("{model}-{device}-tp{tp}x{replicas}{tag}");
        let kept = v["description"]
            .as_str()
            .filter(|d| d.starts_with("Derived from the example"))
            .and_then(|d| d.split_once(". "))
            .map(|(p, _)| format!("{p}. "));
        let from = if PRESETS.iter().any(|(p, _)| *p == name) {
            format!("Derived from the example \"{name}\". ")
        } else {
            kept.unwrap_or_default()
        };
        if let Some(o) = v.as_object_mut() {
            o.insert("name".into(), json!(derived));
            if !from.is_empty() || o.get("description").is_some() {
                let plural = if replicas == 1 { "" } else { "s" };
                o.insert(
                    "description".into(),
                    json!(format!(
                        "{from}{model} on {} × {device} (TP {tp} × {replicas} replica{plural}){load}.",
                        tp * replicas
                    )),
                );
            }
        }
        self.auto_name = derived;
    }

    /// Replace the scenario with one from `what` (an example, an imported file, a trace); the one it replaces
    /// is kept for Undo, so no choice loses the working scenario.
    pub fn replace_scenario(&mut self, page: &Page, what: &str, text: &str) {
        let old = self.area(page).value();
        if old.trim() != text.trim() {
            self.undo = Some((what.to_string(), old));
        }
        self.field_errors.clear();
        self.unapplied.clear();
        self.notice(page, "", None);
        self.load_text(page, text);
        self.show_undo(page);
    }

    pub fn show_undo(&self, page: &Page) {
        let b = page.html("undo");
        b.set_hidden(self.undo.is_none());
        if let Some((what, _)) = &self.undo {
            b.set_text_content(Some(&format!("Undo {what}")));
            b.set_title("Put back the scenario you had before");
        }
    }

    pub fn undo(&mut self, page: &Page) {
        let Some((what, text)) = self.undo.take() else { return };
        self.field_errors.clear();
        self.unapplied.clear();
        self.load_text(page, &text);
        self.show_undo(page);
        // The Undo button hides itself: focus goes to the Example select, where a replacement starts.
        if let Ok(e) = page.el("preset").dyn_into::<web_sys::HtmlElement>() {
            let _ = e.focus();
        }
        self.notice(page, &format!("Undone: the scenario from before the {what} is back."), None);
    }

    /// A message about a file or example the page refused or undid, beside the scenario's controls; `field`
    /// is the file input it concerns (marked invalid until the next load).
    pub fn notice(&self, page: &Page, text: &str, field: Option<&str>) {
        let n = page.html("notice");
        n.set_text_content(Some(text));
        n.set_hidden(text.is_empty());
        for id in ["c-import", "c-trace", "c-session-trace"] {
            mark_field(&page.el(id), (field == Some(id)).then_some(text));
        }
    }

    /// An imported scenario file: refused with its parse error if it is not JSON (the working scenario stays),
    /// else loaded with Undo offered (its own validation errors are shown at their fields).
    pub fn import(&mut self, page: &Page, name: &str, text: &str) {
        let text = text.trim_start_matches('\u{feff}');
        match serde_json::from_str::<Value>(text) {
            Ok(_) => self.replace_scenario(page, &format!("import of {name}"), text),
            Err(e) => self.notice(
                page,
                &format!("{name} was not imported: it is not valid JSON ({e}). Your scenario is unchanged."),
                Some("c-import"),
            ),
        }
    }

    /// An uploaded trace: checked with the scenario before anything changes; a trace the core refuses leaves
    /// the scenario (its rate, its request count) and the previous trace as they were.
    pub fn upload_trace(&mut self, page: &Page, name: &str, text: String) {
        let Ok(mut v) = serde_json::from_str::<Value>(&self.area(page).value()) else {
            self.notice(page, "Fix the scenario JSON first: the trace goes into it.", Some("c-trace"));
            return;
        };
        details::set(&mut v, "/workload/arrival", json!({"kind": "trace", "path": name, "format": "auto"}));
        if let Some(w) = v.pointer_mut("/workload").and_then(Value::as_object_mut) {
            w.remove("requests");
            w.remove("duration_s");
        }
        if !self.upload_accepted(page, &v, "/workload/arrival", (name, &text), "Trace", "c-trace") {
            return;
        }
        self.trace = Some((name.to_string(), text));
        self.replace_scenario(
            page,
            &format!("trace upload ({name})"),
            &serde_json::to_string_pretty(&v).unwrap_or_default(),
        );
    }

    /// Whether the core accepts scenario `v` with the uploaded file's `text` in its trace block at `ptr`;
    /// if not, the notice at `field` says why ("`what` `name` was not loaded: …") and nothing changes.
    pub fn upload_accepted(
        &self,
        page: &Page,
        v: &Value,
        ptr: &str,
        (name, text): (&str, &str),
        what: &str,
        field: &str,
    ) -> bool {
        let mut with_data = v.clone();
        with_trace_text(&mut with_data, ptr, name, text);
        let Err(e) = inferscale::scenario::load_for_browser(&with_data.to_string()) else { return true };
        let why: Vec<String> = e.errors.iter().map(|f| format!("{}: {}", f.path, f.message)).collect();
        self.notice(
            page,
            &format!("{what} {name} was not loaded: {}. Your scenario is unchanged.", why.join("; ")),
            Some(field),
        );
        false
    }

    /// An uploaded session trace: the sessions become its programs (the distributions and classes they
    /// replace leave the scenario; an arrival process that cannot start sessions becomes Poisson at 1 /s; no
    /// count: the file's sessions), checked before anything changes — a trace the core refuses is named by
    /// line and key and leaves the scenario as it was.
    pub fn upload_session_trace(&mut self, page: &Page, name: &str, text: String) {
        let Ok(mut v) = serde_json::from_str::<Value>(&self.area(page).value()) else {
            self.notice(page, "Fix the scenario JSON first: the session trace goes into it.", Some("c-session-trace"));
            return;
        };
        let mut sessions = v.pointer("/workload/sessions").and_then(Value::as_object).cloned().unwrap_or_default();
        for k in ["turns", "first_tokens", "new_tokens", "output_tokens", "tools", "classes"] {
            sessions.remove(k);
        }
        sessions.insert("trace".into(), json!({"path": name, "format": "auto"}));
        details::set(&mut v, "/workload/sessions", Value::Object(sessions));
        let open_loop = matches!(
            v.pointer("/workload/arrival/kind").and_then(Value::as_str),
            Some("poisson" | "constant" | "gamma" | "on_off")
        );
        if !open_loop {
            details::set(&mut v, "/workload/arrival", json!({"kind": "poisson", "rate_rps": 1.0}));
        }
        if v.pointer("/workload/requests").is_none() && v.pointer("/workload/duration_s").is_none() {
            details::set(
                &mut v,
                "/workload/requests",
                json!(text.lines().filter(|l| !l.trim().is_empty()).count().max(1)),
            );
        }
        if !self.upload_accepted(
            page,
            &v,
            "/workload/sessions/trace",
            (name, &text),
            "Session trace",
            "c-session-trace",
        ) {
            return;
        }
        self.session_trace = Some((name.to_string(), text));
        self.replace_scenario(
            page,
            &format!("session trace upload ({name})"),
            &serde_json::to_string_pretty(&v).unwrap_or_default(),
        );
    }

    pub fn load_text(&mut self, page: &Page, text: &str) {
        let pretty = serde_json::from_str::<Value>(text)
            .ok()
            .and_then(|v| serde_json::to_string_pretty(&v).ok())
            .unwrap_or_else(|| text.to_string());
        self.area(page).set_value(&pretty);
        self.sync_controls(page);
        self.validate(page);
    }
}

/// The field a length control edits for the distribution at `ptr`: `tokens` (fixed) or `mean` (lognormal,
/// geometric); None for other controls and for kinds without one figure (uniform, empirical: edit the JSON).
fn length_field(v: &Value, id: &str, ptr: &str) -> Option<&'static str> {
    if id != "c-prompt" && id != "c-output" {
        return None;
    }
    match v.pointer(&format!("{ptr}/kind")).and_then(Value::as_str) {
        Some("fixed") => Some("tokens"),
        Some("lognormal") | Some("geometric") => Some("mean"),
        _ => None,
    }
}

/// The arrival object for kind `k`: each kind has its own fields, so it is rebuilt (the core's starting block),
/// keeping the rate and the gap CV.
fn arrival_object(v: &Value, k: &str) -> Value {
    let old = |f: &str| v.pointer(&format!("/workload/arrival/{f}")).cloned();
    let rate = old("rate_rps").or(old("rate_on_rps"));
    let mut a = inferscale::catalog::arrival_of_kind(k, rate.as_ref().and_then(Value::as_f64).unwrap_or(1.0));
    for (field, given) in [("rate_rps", rate), ("cv", old("cv"))] {
        if let (Some(slot), Some(given)) = (a.get_mut(field), given) {
            *slot = given;
        }
    }
    a
}

/// `workload.classes[1].slo.ttft_ms` → `/workload/classes/1/slo/ttft_ms`.
fn pointer_of(path: &str) -> String {
    let mut out = String::new();
    for part in path.split('.') {
        let (name, index) = part.split_once('[').map_or((part, None), |(n, i)| (n, Some(i.trim_end_matches(']'))));
        out.push('/');
        out.push_str(name);
        if let Some(i) = index {
            out.push('/');
            out.push_str(i);
        }
    }
    out
}

/// The message shown beside a field: the validator's words, led by the field's name.
fn field_message(label: &str, message: &str) -> String {
    if message.starts_with(label) || label.is_empty() { message.to_string() } else { format!("{label}: {message}") }
}

/// `/engine/max_num_seqs` → `engine.max_num_seqs` (the validator's field paths).
fn dotted(ptr: &str, kind: Kind) -> String {
    let p = details::dotted(ptr);
    if kind == Kind::Tagged { p } else { p.trim_end_matches(".kind").to_string() }
}

/// Put an uploaded trace's text into the trace block at `ptr` (an arrival of kind `trace`, or a session
/// trace) when the block names the file `name` and carries no text of its own (the editor shows the scenario
/// without it).
fn with_trace_text(v: &mut Value, ptr: &str, name: &str, data: &str) {
    if let Some(b) = v.pointer_mut(ptr).and_then(Value::as_object_mut)
        && b.get("kind").is_none_or(|k| k.as_str() == Some("trace"))
        && b.get("path").and_then(Value::as_str) == Some(name)
        && !b.contains_key("data")
    {
        b.insert("data".into(), Value::String(data.to_string()));
    }
}

/// After a row is added or removed the rows are drawn anew: focus goes back to the Add button, or to the Remove
/// button now in the removed row's place (else the one before it, else Add), so a keyboard user stays put.
fn refocus(page: &Page, act: &str, i: usize) {
    let Some((verb, what)) = act.split_once('-') else { return };
    let find = |sel: String| page.doc.query_selector(&sel).ok().flatten();
    let add = || find(format!("[data-act=\"add-{what}\"]"));
    let del = |k: usize| find(format!("[data-act=\"del-{what}\"][data-i=\"{k}\"]:not([disabled])"));
    let target = match verb {
        "del" => del(i).or_else(|| i.checked_sub(1).and_then(del)).or_else(add),
        _ => add(),
    };
    if let Some(e) = target.and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok()) {
        let _ = e.focus();
    }
}
