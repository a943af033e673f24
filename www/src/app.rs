//! Page state and event handling. The state lives in one `App` owned by an `Rc<RefCell<_>>` that every
//! event closure holds; the closures themselves are kept in `App::listeners` (never leaked with `forget`).

use std::cell::RefCell;
use std::rc::Rc;

use inferscale_worker::{Input, Output, Results};
use serde_json::{Value, json};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{Document, Element, HtmlElement, HtmlInputElement, HtmlSelectElement, HtmlTextAreaElement};

#[path = "calibration.rs"]
mod calibration;
#[path = "lab.rs"]
mod lab;
#[path = "study_panel.rs"]
mod study_panel;

use crate::controls::{CONTROLS, Kind, PAIRS};
use crate::details;
use crate::exports;
use crate::figure::{self, Figure};
use crate::numbers;
use crate::panels::PanelId;
use crate::sort::Sort;
use crate::table::{Table, esc};
use crate::workers::Pool;

/// Shipped examples (the trace example carries its trace text, since a page cannot read files by path).
const PRESETS: &[(&str, &str)] = &[
    ("default", include_str!("../../scenarios/default.json")),
    ("chat-70b-h100-tp4", include_str!("../../scenarios/chat-70b-h100-tp4.json")),
    ("bursty-multitenant", include_str!("../../scenarios/bursty-multitenant.json")),
    ("kv-pressure", include_str!("../../scenarios/kv-pressure.json")),
    ("trace-replay", include_str!("../../scenarios/trace-replay.json")),
    ("mmc-central-queue", include_str!("../../scenarios/mmc-central-queue.json")),
    ("peer-llama3-8b-h100", include_str!("../../scenarios/peer-llama3-8b-h100.json")),
    ("pd-llama3-8b-h100", include_str!("../../scenarios/pd-llama3-8b-h100.json")),
    ("agent-sessions", include_str!("../../scenarios/agent-sessions.json")),
    ("agent-mix", include_str!("../../scenarios/agent-mix.json")),
];
const SAMPLE_TRACE: (&str, &str) = ("traces/sample-vidur.csv", include_str!("../../scenarios/traces/sample-vidur.csv"));
/// The shipped session trace, for a scenario that names it (`workload.sessions.trace.path`).
const SAMPLE_SESSIONS: (&str, &str) =
    ("traces/sample-sessions.jsonl", include_str!("../../scenarios/traces/sample-sessions.jsonl"));

const PAGE_ROWS: usize = 50;

/// A class's per-request SLOs in ns: (name, TTFT, TPOT, E2E).
type ClassSlos = (String, Option<u64>, Option<u64>, Option<u64>);

struct App {
    doc: Document,
    /// The Serving Lab's simulator: a pool of one worker.
    pool: Option<Pool>,
    run_id: u32,
    running: bool,
    started_ms: f64,
    /// An uploaded trace: (name written in `path`, text).
    trace: Option<(String, String)>,
    /// An uploaded session trace (name, text): the scenario names it, this carries its text.
    session_trace: Option<(String, String)>,
    results: Option<Results>,
    report: Value,
    table: Table,
    /// Show only the requests that missed an objective of their class.
    missed_only: bool,
    /// The per-request SLOs (ns) of each class of the scenario that ran: (name, ttft, tpot, e2e).
    ran_slos: Vec<ClassSlos>,
    sort: Sort,
    page: usize,
    /// The Serving Lab's charts on screen: what each drew and how its pixels map to data.
    charts: Vec<Figure>,
    listeners: Vec<Closure<dyn FnMut(web_sys::Event)>>,
    self_ref: std::rc::Weak<RefCell<App>>,
    /// The panel on screen.
    panel: PanelId,
    study: study_panel::StudyState,
    cal: calibration::CalState,
    /// Fields whose text is not an acceptable value (yet): (validator path, message). The scenario keeps
    /// the field's last good value; Run stays disabled until the text is fixed.
    field_errors: Vec<(String, String)>,
    /// The scenario an example, import or trace replaced: (what replaced it, its text), for Undo.
    undo: Option<(String, String)>,
    /// The last name the page derived for the scenario (it keeps deriving while the name is its own).
    auto_name: String,
}

fn window() -> web_sys::Window {
    web_sys::window().expect("a window")
}

fn now_ms() -> f64 {
    window().performance().map(|p| p.now()).unwrap_or(0.0)
}

impl App {
    fn el(&self, id: &str) -> Element {
        self.doc.get_element_by_id(id).unwrap_or_else(|| panic!("#{id} missing from index.html"))
    }
    fn html(&self, id: &str) -> HtmlElement {
        self.el(id).dyn_into().expect("an HTML element")
    }
    fn editor(&self) -> HtmlTextAreaElement {
        self.el("scenario").dyn_into().expect("a textarea")
    }
    fn set_status(&self, s: &str) {
        self.el("status").set_text_content(Some(s));
    }

    /// The editor's text with an uploaded trace's data put in, ready to validate or run.
    fn scenario_text(&self) -> String {
        let text = self.editor().value();
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
    fn validate(&self) -> bool {
        let mut errors = self.field_errors.clone();
        if let Err(e) = inferscale::scenario::load_for_browser(&self.scenario_text()) {
            // A field with text of its own still in error shows that, not the old value's verdict.
            errors.extend(
                e.errors
                    .into_iter()
                    .map(|f| (f.path, f.message))
                    .filter(|(p, _)| !self.field_errors.iter().any(|(q, _)| q == p)),
            );
        }
        self.show_errors(&errors);
        let ok = errors.is_empty();
        if let Ok(b) = self.el("run").dyn_into::<web_sys::HtmlButtonElement>() {
            b.set_disabled(!ok || self.running);
        }
        // Say it where the user looks, beside Run.
        let status = self.el("status").text_content().unwrap_or_default();
        if !ok && !self.running {
            let names: Vec<String> = errors
                .iter()
                .map(|(p, _)| self.label_of(p))
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            self.set_status(&format!(
                "Cannot run: fix {} ({} problem{})",
                names.join(", "),
                errors.len(),
                if errors.len() == 1 { "" } else { "s" }
            ));
        } else if ok && status.starts_with("Cannot run") {
            self.set_status("Ready");
        }
        ok
    }

    /// The name a user knows a field by: its control's label, a generated row's label, else the path.
    fn label_of(&self, path: &str) -> String {
        if let Some(c) = CONTROLS.iter().find(|(_, ptr, kind, _)| dotted(ptr, *kind) == path) {
            return c.3.to_string();
        }
        if let Ok(Some(el)) = self.el("details").query_selector(&format!("[data-ptr=\"{}\"]", pointer_of(path)))
            && let Some(l) = el.get_attribute("aria-label")
        {
            return l;
        }
        if path == "(root)" { "the scenario JSON".into() } else { path.to_string() }
    }

    fn show_errors(&self, errors: &[(String, String)]) {
        let items: String = errors
            .iter()
            .map(|(p, m)| {
                let label = self.label_of(p);
                let text = if m.starts_with(&label) { esc(m) } else { format!("<b>{}</b>: {}", esc(&label), esc(m)) };
                format!("<li>{text} <code>{}</code></li>", esc(p))
            })
            .collect();
        self.el("errors").set_inner_html(&items);
        self.editor().class_list().toggle_with_force("invalid", !errors.is_empty()).ok();
        for (id, ptr, kind, label) in CONTROLS {
            let dotted = dotted(ptr, *kind);
            // A tagged policy owns its parameters' errors; a plain field (the arrival kind too) only its own.
            let hit = errors
                .iter()
                .find(|(p, _)| *p == dotted || (*kind == Kind::Tagged && p.starts_with(&format!("{dotted}."))));
            mark_field(&self.el(id), hit.map(|h| field_message(label, &h.1)).as_deref());
        }
        let Ok(fields) = self.el("details").query_selector_all("[data-ptr]") else { return };
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
    fn render_details(&self, v: &Value) {
        let focused = self.doc.active_element().and_then(|e| e.get_attribute("data-ptr"));
        for sec in details::sections(v) {
            let el = self.el(sec.id);
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
    fn detail_changed(&mut self, target: &Element) {
        let Ok(mut v) = serde_json::from_str::<Value>(&self.editor().value()) else {
            self.show_errors(&[("(root)".into(), "fix the JSON first: the controls edit it".into())]);
            return;
        };
        if let (Some(ptr), Some(ty)) = (target.get_attribute("data-ptr"), target.get_attribute("data-ty")) {
            let (raw, bad_input) = if let Ok(i) = target.clone().dyn_into::<HtmlInputElement>() {
                (i.value(), i.validity().bad_input())
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
                self.validate();
                return;
            }
        } else if let Some(act) = target.get_attribute("data-act") {
            let i = target.get_attribute("data-i").and_then(|i| i.parse().ok()).unwrap_or(0);
            details::action(&mut v, &act, i);
        } else {
            return;
        }
        self.editor().set_value(&serde_json::to_string_pretty(&v).unwrap_or_default());
        self.sync_controls();
        self.validate();
    }

    /// Show the scenario's effective values (defaults filled in) in the controls. The focused control is
    /// left as the user is typing it, and a control whose text is in error keeps that text until fixed.
    fn sync_controls(&self) {
        let Ok(spec) = inferscale::scenario::parse(&self.editor().value()) else { return };
        let Ok(v) = serde_json::to_value(&spec) else { return };
        let arrival = v.pointer("/workload/arrival/kind").and_then(Value::as_str).unwrap_or("");
        let focused = self.doc.active_element().map(|e| e.id()).unwrap_or_default();
        for (id, ptr, kind, _) in CONTROLS {
            let el = self.el(id);
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
                "c-prompt" | "c-output" => arrival != "trace" && length_field(&v, id, ptr).is_some(),
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
        self.render_details(&v);
        for (range, number) in PAIRS {
            let n: HtmlInputElement = self.el(number).dyn_into().unwrap();
            let r: HtmlInputElement = self.el(range).dyn_into().unwrap();
            if *range != focused {
                r.set_value(&n.value());
            }
            set_disabled(&r, n.disabled());
        }
    }

    /// A control changed: write its value into the editor's JSON. Number text that is not a value (yet)
    /// leaves the JSON as it was and is reported at the field.
    fn control_changed(&mut self, id: &str) {
        let Some(&(_, ptr, kind, label)) = CONTROLS.iter().find(|c| c.0 == id) else { return };
        let el = self.el(id);
        let (raw, bad_input) = if let Ok(i) = el.clone().dyn_into::<HtmlInputElement>() {
            if kind == Kind::Bool { (i.checked().to_string(), false) } else { (i.value(), i.validity().bad_input()) }
        } else if let Ok(s) = el.dyn_into::<HtmlSelectElement>() {
            (s.value(), false)
        } else {
            return;
        };
        let path = dotted(ptr, kind);
        self.field_errors.retain(|(p, _)| *p != path);
        let Ok(mut v) = serde_json::from_str::<Value>(&self.editor().value()) else {
            self.show_errors(&[("(root)".into(), "fix the JSON first: the controls edit it".into())]);
            return;
        };
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
                        self.validate();
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
        self.editor().set_value(&serde_json::to_string_pretty(&v).unwrap_or_default());
        self.sync_controls();
        self.validate();
    }

    /// While the scenario's name is an example's or one the page derived, it follows what is run, so the
    /// name in exports and reports says it ("llama-3-70b-h100-sxm-tp4x2-20rps"); a name the user wrote stays.
    fn derive_name(&mut self, v: &mut Value) {
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
    fn replace_scenario(&mut self, what: &str, text: &str) {
        let old = self.editor().value();
        if old.trim() != text.trim() {
            self.undo = Some((what.to_string(), old));
        }
        self.field_errors.clear();
        self.notice("", None);
        self.load_text(text);
        self.show_undo();
    }

    fn show_undo(&self) {
        let b = self.html("undo");
        b.set_hidden(self.undo.is_none());
        if let Some((what, _)) = &self.undo {
            b.set_text_content(Some(&format!("Undo {what}")));
            b.set_title("Put back the scenario you had before");
        }
    }

    fn undo(&mut self) {
        let Some((what, text)) = self.undo.take() else { return };
        self.field_errors.clear();
        self.load_text(&text);
        self.show_undo();
        self.notice(&format!("Undone: the scenario from before the {what} is back."), None);
    }

    /// A message about a file or example the page refused or undid, beside the scenario's controls; `field`
    /// is the file input it concerns (marked invalid until the next load).
    fn notice(&self, text: &str, field: Option<&str>) {
        let n = self.html("notice");
        n.set_text_content(Some(text));
        n.set_hidden(text.is_empty());
        for id in ["c-import", "c-trace", "c-session-trace"] {
            mark_field(&self.el(id), (field == Some(id)).then_some(text));
        }
    }

    /// An imported scenario file: refused with its parse error if it is not JSON (the working scenario stays),
    /// else loaded with Undo offered (its own validation errors are shown at their fields).
    fn import(&mut self, name: &str, text: &str) {
        let text = text.trim_start_matches('\u{feff}');
        match serde_json::from_str::<Value>(text) {
            Ok(_) => self.replace_scenario(&format!("import of {name}"), text),
            Err(e) => self.notice(
                &format!("{name} was not imported: it is not valid JSON ({e}). Your scenario is unchanged."),
                Some("c-import"),
            ),
        }
    }

    /// An uploaded trace: checked with the scenario before anything changes; a trace the core refuses leaves
    /// the scenario (its rate, its request count) and the previous trace as they were.
    fn upload_trace(&mut self, name: &str, text: String) {
        let Ok(mut v) = serde_json::from_str::<Value>(&self.editor().value()) else {
            self.notice("Fix the scenario JSON first: the trace goes into it.", Some("c-trace"));
            return;
        };
        details::set(&mut v, "/workload/arrival", json!({"kind": "trace", "path": name, "format": "auto"}));
        if let Some(w) = v.pointer_mut("/workload").and_then(Value::as_object_mut) {
            w.remove("requests");
            w.remove("duration_s");
        }
        if !self.upload_accepted(&v, "/workload/arrival", name, &text, "Trace", "c-trace") {
            return;
        }
        self.trace = Some((name.to_string(), text));
        self.replace_scenario(&format!("trace upload ({name})"), &serde_json::to_string_pretty(&v).unwrap_or_default());
    }

    /// Whether the core accepts scenario `v` with the uploaded file's `text` in its trace block at `ptr`;
    /// if not, the notice at `field` says why ("`what` `name` was not loaded: …") and nothing changes.
    fn upload_accepted(&self, v: &Value, ptr: &str, name: &str, text: &str, what: &str, field: &str) -> bool {
        let mut with_data = v.clone();
        with_trace_text(&mut with_data, ptr, name, text);
        let Err(e) = inferscale::scenario::load_for_browser(&with_data.to_string()) else { return true };
        let why: Vec<String> = e.errors.iter().map(|f| format!("{}: {}", f.path, f.message)).collect();
        self.notice(
            &format!("{what} {name} was not loaded: {}. Your scenario is unchanged.", why.join("; ")),
            Some(field),
        );
        false
    }

    /// An uploaded session trace: the sessions become its programs (the distributions and classes they
    /// replace leave the scenario; an arrival process that cannot start sessions becomes Poisson at 1 /s; no
    /// count: the file's sessions), checked before anything changes — a trace the core refuses is named by
    /// line and key and leaves the scenario as it was.
    fn upload_session_trace(&mut self, name: &str, text: String) {
        let Ok(mut v) = serde_json::from_str::<Value>(&self.editor().value()) else {
            self.notice("Fix the scenario JSON first: the session trace goes into it.", Some("c-session-trace"));
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
        if !self.upload_accepted(&v, "/workload/sessions/trace", name, &text, "Session trace", "c-session-trace") {
            return;
        }
        self.session_trace = Some((name.to_string(), text));
        self.replace_scenario(
            &format!("session trace upload ({name})"),
            &serde_json::to_string_pretty(&v).unwrap_or_default(),
        );
    }

    fn load_text(&mut self, text: &str) {
        let pretty = serde_json::from_str::<Value>(text)
            .ok()
            .and_then(|v| serde_json::to_string_pretty(&v).ok())
            .unwrap_or_else(|| text.to_string());
        self.editor().set_value(&pretty);
        self.sync_controls();
        self.validate();
        if self.panel != PanelId::Lab {
            self.sync_study_params();
            self.validate_study();
        }
    }

    fn spawn_worker(&mut self) {
        self.pool = Some(Pool::spawn(1, self.self_ref.clone(), |app: &mut App, _, out| app.on_output(out)));
    }

    fn run(&mut self) {
        if self.running || !self.validate() {
            return;
        }
        self.run_id += 1;
        self.running = true;
        self.started_ms = now_ms();
        self.set_buttons();
        self.progress(0.0);
        self.set_status("Running…");
        // The objectives the run is judged by, for the table's "missed" filter.
        self.ran_slos = inferscale::scenario::parse(&self.scenario_text())
            .map(|sp| {
                let ns = |ms: Option<f64>| ms.map(|m| (m * 1e6).round() as u64);
                sp.workload
                    .classes
                    .iter()
                    .map(|c| (c.name.clone(), ns(c.slo.ttft_ms), ns(c.slo.tpot_ms), ns(c.slo.e2e_ms)))
                    .collect()
            })
            .unwrap_or_default();
        // The URL replays this run.
        let _ = window().location().set_hash(&share_hash(&self.editor().value()));
        // `?crash-test` in the URL makes Run crash the worker instead: the e2e test of recovery.
        let crash = window().location().search().unwrap_or_default().contains("crash-test");
        let msg = if crash {
            Input::Crash { run_id: self.run_id }
        } else {
            Input::Run { run_id: self.run_id, scenario_json: self.scenario_text() }
        };
        if self.pool.is_none() {
            self.spawn_worker();
        }
        if let Some(p) = &self.pool {
            p.send(0, msg);
        }
    }

    fn cancel(&mut self) {
        if !self.running {
            return;
        }
        // Dropping the pool terminates the worker at once, mid-run; a fresh one takes the next run.
        self.pool = None;
        self.spawn_worker();
        self.running = false;
        self.set_buttons();
        self.progress(0.0);
        self.set_status("Cancelled (the last results stay on screen)");
    }

    fn set_buttons(&self) {
        if let Ok(b) = self.el("cancel").dyn_into::<web_sys::HtmlButtonElement>() {
            b.set_disabled(!self.running);
        }
        self.validate();
    }

    fn progress(&self, f: f64) {
        if let Ok(p) = self.el("progress").dyn_into::<web_sys::HtmlProgressElement>() {
            p.set_value(f);
        }
    }

    fn on_output(&mut self, out: Output) {
        match out {
            Output::Progress { run_id, done, expected } if run_id == self.run_id && self.running => {
                let f = if expected > 0 { (done as f64 / expected as f64).min(1.0) } else { 0.0 };
                self.progress(f);
                let elapsed = (now_ms() - self.started_ms) / 1000.0;
                let left =
                    if f > 0.02 { format!(", about {:.0} s left", elapsed * (1.0 - f) / f) } else { String::new() };
                self.set_status(&format!("Running: {done} of {expected} requests done ({:.0} %){left}", f * 100.0));
            }
            Output::Done { run_id, results } if run_id == self.run_id => {
                self.running = false;
                self.set_buttons();
                self.progress(1.0);
                let secs = (now_ms() - self.started_ms) / 1000.0;
                self.el("status").set_attribute("data-run-ms", &format!("{:.1}", secs * 1000.0)).ok();
                self.el("status").set_attribute("data-compute-ms", &format!("{:.1}", results.compute_ms)).ok();
                self.el("status").set_attribute("data-simulate-ms", &format!("{:.1}", results.simulate_ms)).ok();
                self.set_status(&format!("Done in {secs:.2} s"));
                self.show_results(results);
                // Take the user to what the run says.
                self.el("results").scroll_into_view();
                if let Ok(h) = self.el("diagnosis-title").dyn_into::<HtmlElement>() {
                    h.focus().ok();
                }
                // Run → results on screen (cards, charts, table drawn), for the e2e benchmark.
                self.el("status").set_attribute("data-shown-ms", &format!("{:.1}", now_ms() - self.started_ms)).ok();
            }
            Output::Failed { run_id, message } if run_id == self.run_id => {
                // The worker is dead: replace it; the inputs and the last results stay on screen.
                self.running = false;
                self.pool = None;
                self.spawn_worker();
                self.set_buttons();
                self.progress(0.0);
                self.show_errors(&[(
                    "(simulator)".into(),
                    format!("internal error, the worker was restarted: {message}"),
                )]);
                self.set_status("The simulator failed; it was restarted");
            }
            Output::Invalid { run_id, errors } if run_id == self.run_id => {
                self.running = false;
                self.set_buttons();
                self.show_errors(&errors);
                self.set_status("The scenario was refused");
            }
            _ => {} // a message from a cancelled run
        }
    }

    fn copy_link(&self) {
        copy_link_to(&share_hash(&self.editor().value()));
        self.set_status("Link copied: it replays this exact run");
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

fn set_disabled(el: &Element, disabled: bool) {
    if disabled {
        el.set_attribute("disabled", "").ok()
    } else {
        el.remove_attribute("disabled").ok()
    };
}

/// `/engine/max_num_seqs` → `engine.max_num_seqs` (the validator's field paths).
fn dotted(ptr: &str, kind: Kind) -> String {
    let p = details::dotted(ptr);
    if kind == Kind::Tagged { p } else { p.trim_end_matches(".kind").to_string() }
}

/// The validator's errors as the study panels list them.
fn error_list(errors: &[(String, String)]) -> String {
    errors.iter().map(|(p, m)| format!("<li><code>{}</code>: {}</li>", esc(p), esc(m))).collect()
}

/// Mark a field invalid or valid, for sight and for screen readers: the message is shown right after the
/// field (and is its description), and goes away when the field is fixed.
fn mark_field(el: &Element, error: Option<&str>) {
    el.class_list().toggle_with_force("invalid", error.is_some()).ok();
    el.set_attribute("aria-invalid", if error.is_some() { "true" } else { "false" }).ok();
    // Beside a slider + number pair the message goes after the pair, not between them.
    let anchor = el.parent_element().filter(|p| p.class_list().contains("pair")).unwrap_or_else(|| el.clone());
    let next = anchor.next_element_sibling().filter(|n| n.class_list().contains("field-msg"));
    match (error, next) {
        (Some(m), Some(n)) => n.set_text_content(Some(m)),
        (Some(m), None) => {
            let Some(doc) = el.owner_document() else { return };
            let Ok(n) = doc.create_element("span") else { return };
            n.set_class_name("field-msg");
            n.set_attribute("role", "status").ok();
            n.set_text_content(Some(m));
            let id = format!(
                "msg-{}",
                if el.id().is_empty() {
                    el.get_attribute("data-ptr").unwrap_or_default().replace('/', "-")
                } else {
                    el.id()
                }
            );
            n.set_id(&id);
            el.set_attribute("aria-describedby", &id).ok();
            anchor.insert_adjacent_element("afterend", &n).ok();
        }
        (None, Some(n)) => {
            n.remove();
            el.remove_attribute("aria-describedby").ok();
        }
        (None, None) => {}
    }
}

/// Put `hash` in the URL and copy the whole link.
fn copy_link_to(hash: &str) {
    let _ = window().location().set_hash(hash);
    let href = window().location().href().unwrap_or_default();
    let _ = window().navigator().clipboard().write_text(&href);
}

fn share_hash(scenario: &str) -> String {
    let compact =
        serde_json::from_str::<Value>(scenario).map(|v| v.to_string()).unwrap_or_else(|_| scenario.to_string());
    format!("scenario={}", String::from(js_sys::encode_uri_component(&compact)))
}

/// A link to a panel with its options and the scenario: `#panel=NAME&params=…&scenario=…` (the Serving Lab's
/// is `#scenario=…`).
fn share_hash_for(panel: &str, options: &Value, scenario: &str) -> String {
    if PanelId::from_name(panel) == PanelId::Lab {
        share_hash(scenario)
    } else {
        format!(
            "panel={panel}&params={}&{}",
            String::from(js_sys::encode_uri_component(&options.to_string())),
            share_hash(scenario)
        )
    }
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

/// The largest scenario or trace file the lab reads, bytes.
const MAX_UPLOAD_BYTES: f64 = 256e6;

/// Read the file a file input's change event selected, then call `f(app, file name, text)`.
fn read_file(app: &Rc<RefCell<App>>, e: &web_sys::Event, f: impl FnOnce(&mut App, String, String) + 'static) {
    let Some(input) = e.target().and_then(|t| t.dyn_into::<HtmlInputElement>().ok()) else { return };
    let Some(file) = input.files().and_then(|f| f.get(0)) else { return };
    // A tab's memory is the limit: a file past it is refused before it is read, and nothing changes.
    if file.size() > MAX_UPLOAD_BYTES {
        let msg = format!(
            "{} is {:.0} MB, over the lab's limit of {} MB for a file; the command line reads larger ones. Nothing changed.",
            file.name(),
            file.size() / 1e6,
            MAX_UPLOAD_BYTES / 1e6
        );
        app.borrow().notice(&msg, None);
        input.set_value("");
        return;
    }
    let Ok(reader) = web_sys::FileReader::new() else { return };
    let weak = Rc::downgrade(app);
    let (r2, name) = (reader.clone(), file.name());
    let mut f = Some(f);
    let onload = Closure::<dyn FnMut(web_sys::Event)>::new(move |_e: web_sys::Event| {
        let (Some(app), Some(f)) = (weak.upgrade(), f.take()) else { return };
        let text = r2.result().ok().and_then(|v| v.as_string()).unwrap_or_default();
        f(&mut app.borrow_mut(), name.clone(), text);
    });
    reader.set_onload(Some(onload.as_ref().unchecked_ref()));
    let _ = reader.read_as_text(&file);
    app.borrow_mut().listeners.push(onload);
}

/// Wire one listener; the closure is kept in the app.
fn on(app: &Rc<RefCell<App>>, id: &str, event: &str, f: impl FnMut(&Rc<RefCell<App>>, web_sys::Event) + 'static) {
    let weak = Rc::downgrade(app);
    let mut f = f;
    let cb = Closure::<dyn FnMut(web_sys::Event)>::new(move |e: web_sys::Event| {
        if let Some(app) = weak.upgrade() {
            f(&app, e);
        }
    });
    let el = app.borrow().el(id);
    el.add_event_listener_with_callback(event, cb.as_ref().unchecked_ref()).expect("listener");
    app.borrow_mut().listeners.push(cb);
}

/// A shared link's state as the URL hash carries it: `#scenario=…` (the Serving Lab) or
/// `#panel=NAME&params=…&scenario=…` (a study), each value URI-encoded.
#[derive(serde::Deserialize, Default)]
struct SharedLink {
    panel: Option<String>,
    params: Option<String>,
    scenario: Option<String>,
}

/// The URL hash read by the browser's own parser (`URLSearchParams`, which decodes each value) and crossed into
/// Rust by serde-wasm-bindgen — no hand splitting of the hash.
fn shared_link() -> SharedLink {
    let hash = window().location().hash().unwrap_or_default();
    let Ok(query) = web_sys::UrlSearchParams::new_with_str(hash.trim_start_matches('#')) else {
        return SharedLink::default();
    };
    js_sys::Object::from_entries(query.as_ref())
        .ok()
        .and_then(|o| serde_wasm_bindgen::from_value(o.into()).ok())
        .unwrap_or_default()
}

thread_local! {
    /// The page owns the app for its lifetime; every closure holds only a weak reference.
    static APP: RefCell<Option<Rc<RefCell<App>>>> = const { RefCell::new(None) };
}

/// The page's entry point: the app, the generated parts of the page, every listener, then the shared link.
pub fn start() {
    // A bug must say what it was: the message goes to the console (the tests fail on console errors).
    std::panic::set_hook(Box::new(|info| {
        web_sys::console::error_1(&JsValue::from_str(&format!("InferScale Lab panicked: {info}")))
    }));
    let app = new_app();
    lay_out(&app);
    wire_scenario(&app);
    wire_studies(&app);
    wire_calibration(&app);
    wire_results(&app);
    open_shared_link(&app);
}

/// The app, owned by the page (every closure holds a weak reference), with its simulator worker.
fn new_app() -> Rc<RefCell<App>> {
    let doc = window().document().expect("a document");
    let app = Rc::new(RefCell::new(App {
        doc,
        pool: None,
        run_id: 0,
        running: false,
        started_ms: 0.0,
        trace: Some((SAMPLE_TRACE.0.to_string(), SAMPLE_TRACE.1.to_string())),
        session_trace: Some((SAMPLE_SESSIONS.0.to_string(), SAMPLE_SESSIONS.1.to_string())),
        results: None,
        report: Value::Null,
        table: Table::default(),
        missed_only: false,
        ran_slos: Vec::new(),
        sort: Sort::default(),
        page: 0,
        charts: Vec::new(),
        listeners: Vec::new(),
        self_ref: std::rc::Weak::new(),
        panel: PanelId::Lab,
        study: Default::default(),
        cal: Default::default(),
        field_errors: Vec::new(),
        undo: None,
        auto_name: String::new(),
    }));
    app.borrow_mut().self_ref = Rc::downgrade(&app);
    APP.with(|a| *a.borrow_mut() = Some(app.clone()));
    app.borrow_mut().spawn_worker();
    app
}

/// The parts of the page generated from registries: the sidebar, the figures, the export bars, the examples.
fn lay_out(app: &Rc<RefCell<App>>) {
    app.borrow().el("nav").set_inner_html(&crate::study_defs::sidebar_html());
    {
        let figures: String = [
            ("chart-ttft", "TTFT CDF"),
            ("chart-tpot", "TPOT CDF"),
            ("chart-e2e", "E2E CDF"),
            ("chart-queue", "Queue and batch over time"),
            ("chart-kv", "KV cache use over time"),
            ("chart-class", "SLO attainment per class"),
        ]
        .iter()
        .map(|(id, caption)| figure::html(id, caption, 560, 320))
        .collect();
        let a = app.borrow();
        a.el("lab-charts").set_inner_html(&figures);
        a.el("lab-exports").set_inner_html(&exports::bar(
            "Exports",
            &[("x-json", "JSON"), ("x-csv", "CSV (requests)"), ("x-summary", "CSV (summary)"), ("x-md", "Markdown")],
        ));
        a.el("study-exports").set_inner_html(&exports::bar(
            "Study exports",
            &[("sx-json", "JSON"), ("sx-csv", "CSV"), ("sx-md", "Markdown")],
        ));
        a.el("cal-exports").set_inner_html(&exports::bar(
            "Calibration exports",
            &[("cx-json", "JSON"), ("cx-csv", "CSV"), ("cx-md", "Markdown")],
        ));
    }

    // Presets.
    {
        let a = app.borrow();
        let sel = a.el("preset");
        for (name, _) in PRESETS {
            if let Ok(o) = a.doc.create_element("option") {
                o.set_text_content(Some(name));
                o.set_attribute("value", name).ok();
                sel.append_child(&o).ok();
            }
        }
    }
}

/// The scenario's inputs: examples, Undo, every control and generated row, the JSON editor, files.
fn wire_scenario(app: &Rc<RefCell<App>>) {
    let app = app.clone();
    on(&app, "preset", "change", |app, _| {
        let name = app.borrow().el("preset").unchecked_into::<HtmlSelectElement>().value();
        if let Some((_, text)) = PRESETS.iter().find(|p| p.0 == name) {
            app.borrow_mut().replace_scenario(&format!("example \"{name}\""), text);
        }
    });
    on(&app, "undo", "click", |app, _| app.borrow_mut().undo());
    // Enter in a field must not submit (and reload) the page; the Content-Security-Policy forbids inline
    // handlers, so this is a listener.
    for form in ["controls", "study-params"] {
        on(&app, form, "submit", |_, e| e.prevent_default());
    }
    on(&app, "skip-run", "click", |app, e| {
        // Focus Run without touching the URL (its hash is the shared-link state).
        e.prevent_default();
        app.borrow().html("run").focus().ok();
    });
    for (id, ptr, _, label) in CONTROLS {
        // Each control's accessible name is the label its errors use (the visible label wraps a unit, a
        // slider or a tooltip, which made names such as "Mean arrival rate, requests").
        let el = app.borrow().el(id);
        el.set_attribute("aria-label", label).ok();
        // The field's bound is the core's: written once, beside its declaration.
        if let Some((lo, hi)) = crate::controls::limits(ptr) {
            el.set_attribute("min", &lo.to_string()).ok();
            el.set_attribute("max", &hi.to_string()).ok();
        }
    }
    for (id, _, kind, _) in CONTROLS {
        let event = if matches!(kind, Kind::Text | Kind::Tagged | Kind::Bool) { "change" } else { "input" };
        let id2 = id.to_string();
        on(&app, id, event, move |app, _| app.borrow_mut().control_changed(&id2));
    }
    for (range, number) in PAIRS {
        let (r2, n2) = (range.to_string(), number.to_string());
        on(&app, range, "input", move |app, _| {
            let v = app.borrow().el(&r2).unchecked_into::<HtmlInputElement>().value();
            app.borrow().el(&n2).unchecked_into::<HtmlInputElement>().set_value(&v);
            app.borrow_mut().control_changed(&n2);
        });
    }
    // A field reformats only once the user has left it.
    on(&app, "controls", "focusout", |app, _| app.borrow().sync_controls());
    on(&app, "scenario", "input", |app, _| {
        let a = app.borrow();
        a.sync_controls();
        a.validate();
    });
    on(&app, "c-trace", "change", |app, e| read_file(app, &e, |a, name, text| a.upload_trace(&name, text)));
    on(&app, "c-session-trace", "change", |app, e| {
        read_file(app, &e, |a, name, text| a.upload_session_trace(&name, text))
    });
    // One listener per generated section serves every row in it.
    for id in ["d-arrival", "d-classes", "d-tenants", "d-objectives"] {
        for event in ["change", "click"] {
            on(&app, id, event, move |app, e| {
                let Some(t) = e.target().and_then(|t| t.dyn_into::<Element>().ok()) else { return };
                // Fields commit on change; buttons act on click.
                let is_button = t.has_attribute("data-act");
                if (event == "click") == is_button {
                    app.borrow_mut().detail_changed(&t);
                }
            });
        }
    }
    on(&app, "c-import", "change", |app, e| read_file(app, &e, |a, name, text| a.import(&name, &text)));
    on(&app, "save-scenario", "click", |app, _| {
        let a = app.borrow();
        let name = serde_json::from_str::<Value>(&a.editor().value())
            .ok()
            .and_then(|v| v["name"].as_str().map(str::to_string))
            .unwrap_or_else(|| "scenario".into());
        exports::download_text(&format!("{name}.json"), &a.editor().value(), "application/json");
    });
}

/// The study panels: the sidebar, their parameters, Run/Cancel, results and exports.
fn wire_studies(app: &Rc<RefCell<App>>) {
    let app = app.clone();
    // Panels: the sidebar switches; every panel keeps its inputs and its last result.
    on(&app, "nav", "click", |app, e| {
        let Some(t) = e.target().and_then(|t| t.dyn_into::<Element>().ok()) else { return };
        let Some(name) = t.closest("[data-panel]").ok().flatten().and_then(|a| a.get_attribute("data-panel")) else {
            return;
        };
        e.prevent_default();
        app.borrow_mut().show_panel(&name);
    });
    on(&app, "study-goto-lab", "click", |app, e| {
        e.prevent_default();
        app.borrow_mut().show_panel(PanelId::Lab.name());
    });
    on(&app, "study-params", "change", |app, e| {
        if let Some(t) = e.target().and_then(|t| t.dyn_into::<Element>().ok()) {
            app.borrow_mut().study_param_changed(&t);
        }
    });
    on(&app, "study-run", "click", |app, _| app.borrow_mut().run_study());
    on(&app, "study-cancel", "click", |app, _| app.borrow_mut().cancel_study());
    on(&app, "study-copy-link", "click", |app, _| app.borrow().copy_study_link());
    for (id, what) in [("sx-json", "json"), ("sx-csv", "csv"), ("sx-md", "md")] {
        on(&app, id, "click", move |app, _| app.borrow().export_study(what));
    }
    on(&app, "study-results", "click", |app, e| {
        if let Some(t) = e.target().and_then(|t| t.dyn_into::<Element>().ok()) {
            app.borrow_mut().study_click(&t);
        }
    });
    on(&app, "study-results", "keydown", |app, e| {
        let Some(k) = e.dyn_ref::<web_sys::KeyboardEvent>() else { return };
        if k.key() == "Enter"
            && let Some(t) = e.target().and_then(|t| t.dyn_into::<Element>().ok())
        {
            app.borrow_mut().study_click(&t);
        }
    });
    on(&app, "study-charts", "mousemove", |app, e| {
        if let Some(m) = e.dyn_ref::<web_sys::MouseEvent>() {
            let a = app.borrow();
            a.hover(&a.study.figures, m);
        }
    });
}

/// The Calibration panel: files (chosen or dropped), training marks, Run/Cancel, results and exports.
fn wire_calibration(app: &Rc<RefCell<App>>) {
    let app = app.clone();
    on(&app, "cal-files", "change", |app, e| {
        let Some(input) = e.target().and_then(|t| t.dyn_into::<HtmlInputElement>().ok()) else { return };
        if let Some(files) = input.files() {
            app.borrow_mut().cal_files(files);
        }
        input.set_value("");
    });
    // A drop zone: dragover must be cancelled for the drop to reach the page instead of opening the file.
    on(&app, "cal-drop", "dragover", |_, e| e.prevent_default());
    on(&app, "cal-drop", "drop", |app, e| {
        e.prevent_default();
        if let Some(files) = e.dyn_ref::<web_sys::DragEvent>().and_then(|d| d.data_transfer()).and_then(|t| t.files()) {
            app.borrow_mut().cal_files(files);
        }
    });
    on(&app, "cal-clear", "click", |app, _| app.borrow_mut().cal_clear());
    on(&app, "cal-bundle", "click", |app, _| app.borrow().export_calibration("bundle"));
    on(&app, "cal-cases", "change", |app, e| {
        if let Some(t) = e.target().and_then(|t| t.dyn_into::<Element>().ok()) {
            app.borrow_mut().cal_mark(&t);
        }
    });
    on(&app, "cal-run", "click", |app, _| app.borrow_mut().run_calibration());
    on(&app, "cal-cancel", "click", |app, _| app.borrow_mut().cancel_calibration());
    on(&app, "cal-copy-link", "click", |app, _| app.borrow().copy_calibration_link());
    on(&app, "cal-goto-lab", "click", |app, e| {
        e.prevent_default();
        app.borrow_mut().show_panel(PanelId::Lab.name());
    });
    for (id, what) in [("cx-json", "json"), ("cx-csv", "csv"), ("cx-md", "md")] {
        on(&app, id, "click", move |app, _| app.borrow().export_calibration(what));
    }
    on(&app, "cal-results", "click", |app, e| {
        if let Some(t) = e.target().and_then(|t| t.dyn_into::<Element>().ok()) {
            app.borrow_mut().cal_click(&t);
        }
    });
    on(&app, "cal-results", "keydown", |app, e| {
        let Some(k) = e.dyn_ref::<web_sys::KeyboardEvent>() else { return };
        if k.key() == "Enter"
            && let Some(t) = e.target().and_then(|t| t.dyn_into::<Element>().ok())
        {
            app.borrow_mut().cal_click(&t);
        }
    });
    on(&app, "cal-charts", "mousemove", |app, e| {
        if let Some(m) = e.dyn_ref::<web_sys::MouseEvent>() {
            let a = app.borrow();
            a.hover(&a.cal.figures, m);
        }
    });
}

/// Run, Cancel, the link, the Serving Lab's exports, its table and charts.
fn wire_results(app: &Rc<RefCell<App>>) {
    let app = app.clone();
    on(&app, "run", "click", |app, _| app.borrow_mut().run());
    on(&app, "cancel", "click", |app, _| app.borrow_mut().cancel());
    on(&app, "copy-link", "click", |app, _| app.borrow().copy_link());
    for (id, what) in [("x-json", "json"), ("x-csv", "csv"), ("x-summary", "summary"), ("x-md", "md")] {
        on(&app, id, "click", move |app, _| app.borrow().export(what));
    }
    on(&app, "results", "click", |app, e| {
        let Some(t) = e.target().and_then(|t| t.dyn_into::<Element>().ok()) else { return };
        if let Some(id) = t.get_attribute("data-png") {
            app.borrow().export_png(&id);
        } else {
            app.borrow_mut().table_click(&t);
        }
    });
    on(&app, "results", "keydown", |app, e| {
        let Some(k) = e.dyn_ref::<web_sys::KeyboardEvent>() else { return };
        if k.key() == "Enter"
            && let Some(t) = e.target().and_then(|t| t.dyn_into::<Element>().ok())
        {
            app.borrow_mut().table_click(&t);
        }
    });
    on(&app, "lab-charts", "mousemove", |app, e| {
        if let Some(m) = e.dyn_ref::<web_sys::MouseEvent>() {
            let a = app.borrow();
            a.hover(&a.charts, m);
        }
    });
}

/// A shared link replays its run (`#scenario=…`) or reruns its study (`#panel=NAME&params=…&scenario=…`);
/// otherwise the page starts from the default example.
fn open_shared_link(app: &Rc<RefCell<App>>) {
    // `#scenario=…` replays a Serving Lab run; `#panel=NAME&scenario=…` reruns a study.
    let link = shared_link();
    if let (Some(p), Some(o)) =
        (&link.panel, link.params.as_deref().and_then(|o| serde_json::from_str::<Value>(o).ok()))
    {
        app.borrow_mut().study.options.insert(p.clone(), o);
    }
    let (shared, panel) = (link.scenario, link.panel);
    match (shared, panel) {
        (Some(text), Some(p)) => {
            app.borrow_mut().load_text(&text);
            app.borrow_mut().show_panel(&p);
            // A calibration needs the user's result files, which links do not carry.
            if PanelId::from_name(&p) != PanelId::Calibration {
                app.borrow_mut().run_study();
            }
        }
        (Some(text), None) => {
            app.borrow_mut().load_text(&text);
            app.borrow_mut().run();
        }
        (None, _) => app.borrow_mut().load_text(PRESETS[0].1),
    }
}
