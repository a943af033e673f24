//! The study panels (P/D comparison, and the studies to come): parameters, a run fanned out over several
//! Web Workers, the table, the charts and the exports. The study itself — which runs, and what their results
//! mean — is the core's `study` module, driven here exactly as the CLI drives it, so the JSON export is the
//! CLI's byte for byte whatever the number of workers.

use std::collections::HashMap;

use inferscale::study::option::Edit;
use inferscale::study::{self, Cell, Format, Job, Kind, RunSummary, Study, StudyReport};
use inferscale_worker::{Input, Output};
use serde_json::{Value, json};
use wasm_bindgen::JsCast;
use web_sys::{Element, HtmlInputElement, HtmlSelectElement};

use crate::behaviour::{Behaviour, Cx, Wiring};
use crate::components::charts;
use crate::components::exports;
use crate::components::figure::Figure;
use crate::components::sort::Sort;
use crate::components::table::{esc, shown_order};
use crate::lab::details;
use crate::lab::variant::Variant;
use crate::page::{copy_link_to, error_list, mark_field, now_ms, share_hash_for, window};
use crate::panels::PanelId;
use crate::studies::defs::{PKind, Param, default_options, params, params_html};
use crate::workers::Pool;

/// A study running in the page.
pub struct Active {
    name: String,
    study: Box<dyn Study>,
    batch: Vec<Job>,
    results: Vec<Option<RunSummary>>,
    next_job: usize,
    /// Jobs finished in earlier batches.
    done_before: usize,
    started_ms: f64,
}

/// The study panels' state: one panel serves every study, each keeping its options and last result.
pub struct Studies {
    /// The study on screen.
    shown: Kind,
    active: Option<Active>,
    /// Each panel keeps its last result.
    reports: HashMap<String, StudyReport>,
    workers: Option<Pool>,
    run_id: u32,
    /// The panel's charts on screen.
    figures: Vec<Figure>,
    /// Display order of the table's rows, and the sort column.
    order: Vec<usize>,
    sort: Sort,
    /// Each panel's study options (as the CLI's `--params`).
    pub options: HashMap<String, Value>,
    /// Each panel's own inputs on the scenario (block pointer → value; null: removed): the variants it
    /// compares. The Serving Lab's scenario never changes under them; "Use in Serving Lab" applies them.
    pub edits: HashMap<String, serde_json::Map<String, Value>>,
}

impl Default for Studies {
    fn default() -> Self {
        Studies {
            shown: Kind::ALL[0],
            active: None,
            reports: HashMap::new(),
            workers: None,
            run_id: 0,
            figures: Vec::new(),
            edits: HashMap::new(),
            order: Vec::new(),
            sort: Sort::default(),
            options: HashMap::new(),
        }
    }
}

/// The P/D and prefix blocks the P/D study assumes when the scenario has none (the core's defaults), for a
/// scenario that validates.
fn pd_defaults(v: &Value) -> Option<(Value, Value)> {
    let spec = inferscale::scenario::parse(&v.to_string()).ok()?;
    let sc = inferscale::scenario::validate(&spec).ok()?;
    let d = study::pd::default_disaggregation(&spec);
    let x = study::pd::default_prefix(&sc, &Default::default());
    Some((serde_json::to_value(d).ok()?, serde_json::to_value(x).ok()?))
}

impl Studies {
    /// The current panel's study options, without nulls (absent options take the study's default).
    /// The panel's title ("P/D comparison").
    pub fn title(&self) -> &'static str {
        self.shown.about().title
    }

    /// The sessions an agent panel adds when the Serving Lab's scenario `v` has none: the shipped example's
    /// (fitted to the model's context), so the panel runs without loading the example first; a workflow
    /// study's, the workflow example's when `v` has no workflow.
    fn added_sessions(&self, v: &Value) -> Option<Value> {
        let workflow = study::agents::WORKFLOW_STUDIES.contains(&self.shown.name());
        if workflow && v.pointer("/workload/sessions/workflow").is_none() {
            return Some(inferscale::catalog::workflow_sessions());
        }
        let agents = self.shown.about().group == study::Group::Agents;
        (agents && v.pointer("/workload/sessions").is_none())
            .then(|| details::block_turned_on(v, "/workload/sessions"))
            .flatten()
    }

    /// The scenario as this panel sees it: `text` with the panel's own inputs applied.
    fn with_edits(&self, text: &str) -> Option<Value> {
        let mut v = serde_json::from_str::<Value>(text).ok()?;
        if let Some(s) = self.added_sessions(&v) {
            details::set(&mut v, "/workload/sessions", s);
        }
        for (ptr, x) in self.edits.get(self.shown.name()).into_iter().flatten() {
            if x.is_null() {
                details::remove(&mut v, ptr);
            } else {
                details::set(&mut v, ptr, x.clone());
            }
        }
        Some(v)
    }

    /// The panel's scenario: the Serving Lab's with this panel's inputs (as the link and "Use in Serving Lab"
    /// carry it).
    pub fn panel_text(&self, cx: &Cx) -> String {
        let text = cx.editor.text(cx.page);
        self.with_edits(&text).map_or(text, |v| serde_json::to_string_pretty(&v).unwrap_or_default())
    }

    /// The panel's scenario `text`, and the fields its inputs change, for the line that offers to use them in
    /// the Serving Lab.
    fn show_edits(&self, cx: &Cx, text: &str) {
        cx.page.el("study-own-text").set_text_content(Some(text));
        let mut fields: Vec<String> =
            self.edits.get(self.shown.name()).into_iter().flatten().map(|e| e.0.clone()).collect();
        let lab = serde_json::from_str::<Value>(&cx.editor.text(cx.page)).unwrap_or_default();
        if self.added_sessions(&lab).is_some() {
            fields.insert(
                0,
                "/workload/sessions (the agent example's: the Serving Lab's scenario has no sessions)".into(),
            );
        }
        cx.page.html("study-own").set_hidden(fields.is_empty());
        cx.page.el("study-own-fields").set_text_content(Some(&fields.join(", ")));
    }

    /// "Use in Serving Lab": this panel's inputs become the Serving Lab's scenario's (the app records the old one
    /// for Undo, and the replaced scenario redraws the panel); the panel then has none of its own.
    pub fn take_edits(&mut self, cx: &Cx) -> Option<String> {
        let text = self.panel_text(cx);
        let lab = serde_json::from_str::<Value>(&cx.editor.text(cx.page)).ok()?;
        let edits = self.edits.remove(self.shown.name());
        (edits.is_some() || self.added_sessions(&lab).is_some()).then_some(text)
    }

    /// "Reset": the panel's inputs follow the Serving Lab's scenario again.
    pub fn reset_edits(&mut self, cx: &Cx) {
        self.edits.remove(self.shown.name());
        self.sync_study_params(cx);
        self.validate_study(cx);
    }

    /// Keep `block` of the panel's scenario `v` as one of its own inputs.
    fn keep_edit(&mut self, cx: &Cx, v: &Value, block: &str) {
        let x = v.pointer(block).cloned().unwrap_or(Value::Null);
        self.edits.entry(self.shown.name().to_string()).or_default().insert(block.to_string(), x);
        self.sync_study_params(cx);
        self.validate_study(cx);
    }

    pub fn study_options(&self) -> Value {
        let v = self.options.get(self.shown.name()).cloned().unwrap_or_else(|| default_options(self.shown.name()));
        match v {
            Value::Object(m) => Value::Object(m.into_iter().filter(|(_, x)| !x.is_null()).collect()),
            other => other,
        }
    }

    /// The study `kind` came on screen: its title, parameters, buttons and last result.
    fn show_study(&mut self, cx: &Cx, kind: Kind) {
        self.shown = kind;
        let name = kind.name();
        let about = kind.about();
        cx.page.el("study-title").set_text_content(Some(about.title));
        cx.page.el("study-intro").set_inner_html(&format!(
            "<strong>{}</strong> {}",
            esc(&capitalised(about.question)),
            esc(about.how)
        ));
        self.render_params(cx, &params(kind));
        self.sync_study_params(cx);
        self.set_study_buttons(cx);
        match self.reports.get(name).cloned() {
            Some(r) => self.render_study(cx, &r),
            None => cx.page.html("study-results").set_hidden(true),
        }
        let busy = self.active.as_ref().is_some_and(|a| a.name == name);
        if !busy {
            cx.page.el("study-status").set_text_content(Some(if self.reports.contains_key(name) {
                "Showing the last result"
            } else {
                "Ready"
            }));
        }
    }

    fn render_params(&self, cx: &Cx, params: &[Param]) {
        cx.page.el("study-params").set_inner_html(&params_html(params));
    }

    /// With session classes, a field of the sessions' own applies only to the classes that do not set it:
    /// its title says which, and it is disabled when none does (its value would change nothing).
    fn mark_inherited(&self, cx: &Cx, params: &[Param], v: &Value) {
        for f in params {
            let Some(el) = cx.page.doc.get_element_by_id(&f.id) else { continue };
            let users = crate::lab::variant::inherited_by(v, &f.ptr);
            let title = match &users {
                None => f.title.to_string(),
                Some(u) if u.is_empty() => format!("{} — not used: every session class sets its own", f.title),
                Some(u) => format!("{} — used by the session classes {}", f.title, u.join(", ")),
            };
            el.set_attribute("title", &title).ok();
            el.toggle_attribute_with_force("disabled", users.is_some_and(|u| u.is_empty())).ok();
        }
    }

    /// A variant field's select and the inputs of its chosen kind's numbers (the others hidden).
    fn sync_variant(&self, cx: &Cx, f: &Param, var: &Variant, v: &Value) {
        let focused = |el: &Element| cx.page.doc.active_element().as_ref() == Some(el);
        let sel = cx.page.el(&f.id);
        if !focused(&sel)
            && let Ok(s) = sel.dyn_into::<HtmlSelectElement>()
        {
            s.set_value(var.chosen(v, &f.ptr));
        }
        for n in var.numbers() {
            let id = format!("{}-{}", &f.id, n.key);
            if let Some(label) = cx.page.doc.get_element_by_id(&format!("{id}-label")) {
                label.toggle_attribute_with_force("hidden", !var.takes(v, &f.ptr, n.key)).ok();
            }
            let el = cx.page.el(&id);
            let shown = v.pointer(&format!("{}/{}", &f.ptr, n.key)).map_or(String::new(), crate::lab::variant::shown);
            if !focused(&el)
                && let Ok(i) = el.dyn_into::<HtmlInputElement>()
            {
                i.set_value(&shown);
            }
        }
    }

    /// Show the scenario's values (or the defaults the study would take) in the parameter fields.
    pub fn sync_study_params(&self, cx: &Cx) {
        let ps = params(self.shown);
        let text = self.panel_text(cx);
        self.show_edits(cx, &text);
        let Ok(v) = serde_json::from_str::<Value>(&text) else { return };
        let mut full = v.clone();
        if let Some((d, x)) = pd_defaults(&v) {
            if full.pointer("/cluster/disaggregation").is_none() {
                details::set(&mut full, "/cluster/disaggregation", d);
            }
            if full.pointer("/prefix").is_none() {
                details::set(&mut full, "/prefix", x);
            }
        }
        let options =
            self.options.get(self.shown.name()).cloned().unwrap_or_else(|| default_options(self.shown.name()));
        for f in &ps {
            if let PKind::Variant(var) = f.kind {
                self.sync_variant(cx, f, var, &full);
                continue;
            }
            let raw = match f.ptr.strip_prefix("study:") {
                Some(key) => match (key, options.get(key)) {
                    // An explorer without a list shows the candidates it will derive from the scenario.
                    ("candidates", None | Some(Value::Null)) => {
                        inferscale::scenario::parse(&text).ok().and_then(|spec| {
                            let sc = inferscale::scenario::validate(&spec).ok()?;
                            serde_json::to_value(inferscale::study::explorer::default_candidates(&spec, &sc)).ok()
                        })
                    }
                    (_, x) => x.cloned(),
                },
                None => full.pointer(&f.ptr).cloned(),
            };
            let value = match (&raw, f.kind) {
                (Some(x), PKind::Edit(Edit::Json)) => serde_json::to_string_pretty(x).unwrap_or_default(),
                (Some(Value::Null) | None, _) => String::new(),
                (Some(x), _) => crate::components::numbers::shown(x),
            };
            let el = cx.page.el(&f.id);
            if cx.page.doc.active_element().as_ref() == Some(&el) {
                continue;
            }
            if let Ok(i) = el.clone().dyn_into::<HtmlInputElement>() {
                if f.kind == PKind::Edit(Edit::Bool) {
                    i.set_checked(raw.as_ref().and_then(Value::as_bool).unwrap_or(false));
                } else {
                    i.set_value(&value);
                }
            } else if let Ok(s) = el.clone().dyn_into::<HtmlSelectElement>() {
                s.set_value(&value);
            } else if let Ok(t) = el.dyn_into::<web_sys::HtmlTextAreaElement>() {
                // As tall as its value (an empty list is a line), up to 8 lines; it scrolls past that.
                t.set_rows(value.lines().count().clamp(1, 8) as u32);
                t.set_value(&value);
            }
        }
        // Fields left to the scenario show what they inherit.
        let tp = v.pointer("/hardware/tp").map(|x| x.to_string()).unwrap_or_else(|| "1".into());
        for id in ["p-prefill-tp", "p-decode-tp"] {
            if let Some(el) = cx.page.doc.get_element_by_id(id) {
                el.set_attribute("placeholder", &format!("{tp} (hardware.tp)")).ok();
            }
        }
        let cores = window().navigator().hardware_concurrency() as usize;
        cx.page.el("study-workers").set_attribute("placeholder", &cores.clamp(1, 16).to_string()).ok();
        let name = v.pointer("/name").and_then(Value::as_str).unwrap_or("unnamed");
        let unit = if v.pointer("/workload/sessions").is_some() { "sessions" } else { "requests" };
        let n =
            v.pointer("/workload/requests").map(|x| format!("{x} {unit}")).unwrap_or_else(|| format!("trace {unit}"));
        let model = v.pointer("/model/preset").and_then(Value::as_str).unwrap_or("custom model");
        let device = v.pointer("/hardware/device").and_then(Value::as_str).unwrap_or("custom device");
        let classes: Vec<&str> = v
            .pointer("/workload/sessions/classes")
            .and_then(Value::as_array)
            .map_or(vec![], |c| c.iter().filter_map(|x| x.get("name").and_then(Value::as_str)).collect());
        let mix = if classes.is_empty() {
            String::new()
        } else {
            format!(
                ", session classes {} (each field below that a class sets for itself does not apply to it)",
                classes.join(", ")
            )
        };
        cx.page.el("study-scenario").set_text_content(Some(&format!("{name}: {model} on {device}, {n}{mix}")));
        self.mark_inherited(cx, &ps, &v);
    }

    /// A parameter field changed: write it (and the rest of its block, if the scenario had none) into the
    /// scenario, so the Serving Lab and the link carry it too.
    pub fn study_param_changed(&mut self, cx: &Cx, target: &Element) {
        let Some(ptr) = target.get_attribute("data-ptr") else { return };
        let ps = params(self.shown);
        if let Some((f, var)) = ps.iter().find_map(|f| match f.kind {
            PKind::Variant(var) if *ptr == f.ptr || ptr.starts_with(&format!("{}/", f.ptr)) => Some((f, var)),
            _ => None,
        }) {
            self.variant_changed(cx, f, var, &ptr, target);
            return;
        }
        let Some(f) = ps.iter().find(|f| f.ptr == *ptr) else { return };
        let raw = if let Ok(i) = target.clone().dyn_into::<HtmlInputElement>() {
            if f.kind == PKind::Edit(Edit::Bool) { i.checked().to_string() } else { i.value() }
        } else if let Ok(s) = target.clone().dyn_into::<HtmlSelectElement>() {
            s.value()
        } else if let Ok(t) = target.clone().dyn_into::<web_sys::HtmlTextAreaElement>() {
            t.value()
        } else {
            return;
        };
        if let Some(key) = ptr.strip_prefix("study:") {
            // A study option: kept with the panel (and in its link), not in the scenario.
            let raw = raw.trim();
            let value = match f.kind {
                PKind::Edit(Edit::Bool) => json!(raw == "true"),
                PKind::Edit(Edit::OptNum) | PKind::Edit(Edit::OptInt) | PKind::Edit(Edit::Json) if raw.is_empty() => {
                    Value::Null
                }
                PKind::Edit(Edit::Int) | PKind::Edit(Edit::OptInt) => {
                    raw.parse::<i64>().map(|n| json!(n)).unwrap_or(json!(raw))
                }
                PKind::Edit(Edit::Num) | PKind::Edit(Edit::OptNum) => {
                    raw.parse::<f64>().map(|n| json!(n)).unwrap_or(json!(raw))
                }
                PKind::Edit(Edit::Json) => match serde_json::from_str::<Value>(raw) {
                    Ok(v) => v,
                    Err(e) => {
                        self.show_study_errors(
                            cx,
                            &[(format!("study.{}.{key}", self.shown.name()), format!("not JSON: {e}"))],
                        );
                        return;
                    }
                },
                PKind::Select(_) | PKind::Variant(_) => json!(raw),
            };
            let mut opts =
                self.options.get(self.shown.name()).cloned().unwrap_or_else(|| default_options(self.shown.name()));
            opts[key] = value;
            self.options.insert(self.shown.name().to_string(), opts);
            self.validate_study(cx);
            return;
        }
        let Some(mut v) = self.with_edits(&cx.editor.text(cx.page)) else {
            self.show_study_errors(cx, &[("(root)".into(), "fix the scenario JSON in the Serving Lab first".into())]);
            return;
        };
        // The first edit of a block writes the rest of it as the study would assume it, and the block is what
        // the panel keeps.
        let mut block = ptr.clone();
        if let Some((d, x)) = pd_defaults(&v) {
            if ptr.starts_with("/cluster/disaggregation") {
                if v.pointer("/cluster/disaggregation").is_none() {
                    details::set(&mut v, "/cluster/disaggregation", d);
                }
                block = "/cluster/disaggregation".into();
            }
            if ptr.starts_with("/prefix") {
                if v.pointer("/prefix").is_none() {
                    details::set(&mut v, "/prefix", x);
                }
                block = "/prefix".into();
            }
        }
        let raw = raw.trim();
        let number = |raw: &str, int: bool| {
            if int { raw.parse::<i64>().map(|n| json!(n)).ok() } else { raw.parse::<f64>().map(|n| json!(n)).ok() }
                .unwrap_or(json!(raw))
        };
        match f.kind {
            // An emptied field is left to the scenario's default, not written as "".
            PKind::Select(_)
            | PKind::Edit(Edit::Int)
            | PKind::Edit(Edit::OptInt)
            | PKind::Edit(Edit::Num)
            | PKind::Edit(Edit::OptNum)
                if raw.is_empty() =>
            {
                details::remove(&mut v, &ptr)
            }
            PKind::Select(_) => details::set(&mut v, &ptr, json!(raw)),
            PKind::Edit(Edit::Int) | PKind::Edit(Edit::OptInt) => details::set(&mut v, &ptr, number(raw, true)),
            PKind::Edit(Edit::Num) | PKind::Edit(Edit::OptNum) => details::set(&mut v, &ptr, number(raw, false)),
            PKind::Edit(Edit::Bool) | PKind::Edit(Edit::Json) => {
                details::set(&mut v, &ptr, serde_json::from_str(raw).unwrap_or(json!(raw)))
            }
            PKind::Variant(_) => {} // variant_changed wrote it
        }
        self.keep_edit(cx, &v, &block);
    }

    /// A variant's select (a kind chosen) or one of its numbers (typed) changed: kept as the panel's input.
    fn variant_changed(&mut self, cx: &Cx, f: &Param, var: &Variant, ptr: &str, target: &Element) {
        let Some(mut v) = self.with_edits(&cx.editor.text(cx.page)) else {
            self.show_study_errors(cx, &[("(root)".into(), "fix the scenario JSON in the Serving Lab first".into())]);
            return;
        };
        if let Ok(s) = target.clone().dyn_into::<HtmlSelectElement>() {
            var.choose(&mut v, &f.ptr, &s.value());
        } else if let Ok(i) = target.clone().dyn_into::<HtmlInputElement>() {
            let key = ptr.rsplit_once('/').map_or("", |x| x.1);
            var.set_number(&mut v, &f.ptr, key, &i.value());
        }
        self.keep_edit(cx, &v, &f.ptr);
    }

    /// Check the scenario and the study's inputs; show errors by their fields; Run only when valid.
    pub fn validate_study(&self, cx: &Cx) -> bool {
        self.build_study(cx).is_some()
    }

    /// The panel's study from the scenario and its options, built by the core (which validates both); its
    /// errors shown by their fields, and Run enabled only when there are none.
    fn build_study(&self, cx: &Cx) -> Option<Box<dyn Study>> {
        let fields =
            |e: inferscale::ScenarioError| e.errors.into_iter().map(|f| (f.path, f.message)).collect::<Vec<_>>();
        let text = cx.editor.scenario_text(cx.page);
        let text = self.with_edits(&text).map_or(text, |v| v.to_string());
        let built = inferscale::scenario::parse(&text)
            .map_err(fields)
            .and_then(|spec| study::build(self.shown.name(), &spec, &self.study_options()).map_err(fields));
        self.show_study_errors(cx, built.as_ref().err().map_or(&[][..], |e| e.as_slice()));
        built.ok()
    }

    fn show_study_errors(&self, cx: &Cx, errors: &[(String, String)]) {
        cx.page.el("study-errors").set_inner_html(&error_list(errors));
        for f in params(self.shown) {
            let d = match f.ptr.strip_prefix("study:") {
                Some(key) => format!("study.{}.{key}", self.shown.name()),
                None => details::dotted(&f.ptr),
            };
            let under = |path: &str, d: &str| path == d || path.starts_with(&format!("{d}."));
            let at = |d: &str| errors.iter().find(|(path, _)| under(path, d)).map(|h| h.1.as_str());
            if let PKind::Variant(var) = f.kind {
                // A number's error at its input; the rest of the block's at the select.
                let numbers = var.numbers();
                for n in &numbers {
                    mark_field(&cx.page.el(&format!("{}-{}", &f.id, n.key)), at(&format!("{d}.{}", n.key)));
                }
                let rest = errors.iter().find(|(path, _)| {
                    under(path, &d) && !numbers.iter().any(|n| path.starts_with(&format!("{d}.{}", n.key)))
                });
                mark_field(&cx.page.el(&f.id), rest.map(|h| h.1.as_str()));
                continue;
            }
            mark_field(&cx.page.el(&f.id), at(&d));
        }
        if let Ok(b) = cx.page.el("study-run").dyn_into::<web_sys::HtmlButtonElement>() {
            b.set_disabled(!errors.is_empty() || self.active.is_some());
        }
    }

    fn set_study_buttons(&self, cx: &Cx) {
        let running = self.active.is_some();
        if let Ok(b) = cx.page.el("study-cancel").dyn_into::<web_sys::HtmlButtonElement>() {
            b.set_disabled(!running);
        }
        self.validate_study(cx);
    }

    fn worker_count(&self, cx: &Cx) -> usize {
        let want = cx
            .page
            .el("study-workers")
            .dyn_into::<HtmlInputElement>()
            .ok()
            .and_then(|i| i.value().parse::<usize>().ok());
        let cores = window().navigator().hardware_concurrency() as usize;
        want.unwrap_or(cores).clamp(1, 16)
    }

    fn spawn_study_workers(&mut self, cx: &Cx, n: usize) {
        self.workers = Some(cx.page.pool(PanelId::Study(self.shown), n));
    }

    fn workers_len(&self) -> usize {
        self.workers.as_ref().map_or(0, Pool::len)
    }

    fn next_batch(&mut self, cx: &Cx) {
        let Some(a) = self.active.as_mut() else { return };
        a.done_before += a.batch.len();
        a.batch = a.study.next();
        if a.batch.is_empty() {
            let a = self.active.take().expect("active");
            let report = a.study.report();
            let secs = (now_ms() - a.started_ms) / 1000.0;
            self.reports.insert(a.name.clone(), report.clone());
            self.set_study_buttons(cx);
            self.study_progress(cx, 1.0);
            let status = cx.page.el("study-status");
            status.set_attribute("data-run-ms", &format!("{:.1}", secs * 1000.0)).ok();
            let runs = if a.done_before == 1 { "1 run".to_string() } else { format!("{} runs", a.done_before) };
            status.set_text_content(Some(&format!("Done: {runs} in {secs:.2} s on {} workers", self.workers_len())));
            if self.shown.name() == a.name {
                self.sort = Sort::default();
                self.render_study(cx, &report);
                cx.page.focus_if_lost(&["study-run", "study-cancel"], "study-answer");
            }
            return;
        }
        a.results = vec![None; a.batch.len()];
        a.next_job = 0;
        for w in 0..self.workers_len() {
            self.dispatch(w);
        }
    }

    /// Give worker `w` the next job of the batch, if any is left.
    fn dispatch(&mut self, w: usize) {
        let run_id = self.run_id;
        let Some(a) = self.active.as_mut() else { return };
        if a.next_job >= a.batch.len() {
            return;
        }
        let job = &a.batch[a.next_job];
        // A batch of one run reports its requests' progress (a study of many shows runs done).
        let progress = a.batch.len() == 1;
        let msg = Input::Job {
            run_id,
            job: a.next_job as u32,
            label: job.label.clone(),
            scenario_json: serde_json::to_string(&job.spec).unwrap_or_default(),
            progress,
        };
        a.next_job += 1;
        if let Some(p) = &self.workers {
            p.send(w, msg);
        }
    }

    fn stop_study(&mut self, cx: &Cx, status: &str) {
        // Dropping the bridges terminates the workers at once; fresh ones take the next study.
        self.workers = None;
        self.active = None;
        self.study_progress(cx, 0.0);
        self.set_study_buttons(cx);
        cx.page.el("study-status").set_text_content(Some(status));
        cx.page.focus_if_lost(&["study-cancel"], "study-status");
    }

    fn study_progress(&self, cx: &Cx, f: f64) {
        if let Ok(p) = cx.page.el("study-progress").dyn_into::<web_sys::HtmlProgressElement>() {
            p.set_value(f);
        }
    }

    pub fn render_study(&mut self, cx: &Cx, r: &StudyReport) {
        cx.page.html("study-results").set_hidden(false);
        cx.page.el("study-answer").set_inner_html(&format!("<b>Answer:</b> {}", esc(&r.answer)));
        if self.order.len() != r.rows.len() || self.sort.col.is_none() {
            self.order = (0..r.rows.len()).collect();
        }
        self.render_study_table(cx, r);
        let charts: String = r
            .charts
            .iter()
            .enumerate()
            .map(|(i, c)| crate::components::figure::html(&format!("study-chart-{i}"), &c.title, 560, 320))
            .collect();
        cx.page.el("study-charts").set_inner_html(&charts);
        let figures: Vec<crate::components::figure::Figure> = r
            .charts
            .iter()
            .enumerate()
            .filter_map(|(i, c)| charts::study_figure(&format!("study-chart-{i}"), c))
            .collect();
        cx.page.label_figures(&figures);
        self.figures = figures;
        let notes: String = r.notes.iter().map(|n| format!("<li>{}</li>", esc(n))).collect();
        cx.page.el("study-notes").set_inner_html(&notes);
    }

    fn render_study_table(&self, cx: &Cx, r: &StudyReport) {
        let shown = shown_order(&r.columns);
        let head: String = (shown.iter().map(|&i| (i, &r.columns[i])))
            .map(|(i, c)| self.sort.th_classed("data-scol", i, &header_html(c), &c.label, decisive_class(c)))
            .collect();
        let body: String = self
            .order
            .iter()
            .map(|&i| {
                let cells: String = shown.iter().map(|&k| cell_html(&r.rows[i][k], &r.columns[k])).collect();
                // A bound (a clairvoyant or hindsight oracle) is set apart: a reference, not a choice.
                let class = if Some(i) == r.best_row {
                    " class=\"best\" aria-label=\"best\""
                } else if r.bounds.contains(&i) {
                    " class=\"bound\" title=\"a bound, not a policy one can run\""
                } else {
                    ""
                };
                format!("<tr{class}>{cells}</tr>")
            })
            .collect();
        let more: String = r.tables.iter().enumerate().map(|(k, t)| extra_table(k, t)).collect();
        cx.page.el("study-table").set_inner_html(&format!("<div class=\"table-wrap\"><table id=\"study-table-el\"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>{more}"));
    }
}

impl Behaviour for Studies {
    fn wiring(&self) -> &'static Wiring {
        &Wiring {
            run: "study-run",
            cancel: "study-cancel",
            copy_link: "study-copy-link",
            results: "study-results",
            charts: "study-charts",
            export_bar: ("study-exports", "Study exports"),
            exports: &[("sx-json", "json", "JSON"), ("sx-csv", "csv", "CSV"), ("sx-md", "md", "Markdown")],
        }
    }

    fn show(&mut self, cx: &Cx, id: PanelId) {
        if let PanelId::Study(kind) = id {
            self.show_study(cx, kind);
        }
    }

    fn run(&mut self, cx: &Cx) {
        if self.active.is_some() {
            return;
        }
        let Some(st) = self.build_study(cx) else { return };
        let name = self.shown.name().to_string();
        let _ = window().location().set_hash(&share_hash_for(&name, &self.study_options(), &self.panel_text(cx)));
        let n = self.worker_count(cx);
        if self.workers_len() != n {
            self.spawn_study_workers(cx, n);
        }
        self.run_id += 1;
        self.active = Some(Active {
            name,
            study: st,
            batch: Vec::new(),
            results: Vec::new(),
            next_job: 0,
            done_before: 0,
            started_ms: now_ms(),
        });
        self.set_study_buttons(cx);
        // Run is disabled while the study runs: the keyboard lands on Cancel, not on the page.
        cx.page.focus_if_lost(&["study-run"], "study-cancel");
        cx.page.el("study-status").set_text_content(Some("Running…"));
        cx.page.el("study-status").set_attribute("data-workers", &n.to_string()).ok();
        self.next_batch(cx);
    }

    fn cancel(&mut self, cx: &Cx) {
        if self.active.is_some() {
            self.stop_study(cx, "Cancelled (the last result stays on screen)");
        }
    }

    fn on_output(&mut self, cx: &Cx, w: usize, out: Output) {
        if self.active.is_none() {
            return; // a cancelled study's last message
        }
        match out {
            Output::JobDone { run_id, job, summary_json } if run_id == self.run_id => {
                let summary = match serde_json::from_str::<RunSummary>(&summary_json) {
                    Ok(s) => s,
                    Err(e) => {
                        // Never a silent stall: a result the page cannot read stops the study, said.
                        self.stop_study(cx, "A run's result could not be read; the study stopped");
                        let why = format!("internal error: a run's summary did not read back ({e})");
                        self.show_study_errors(cx, &[("(simulator)".into(), why)]);
                        return;
                    }
                };
                let a = self.active.as_mut().expect("active");
                a.results[job as usize] = Some(summary);
                let finished = a.results.iter().filter(|r| r.is_some()).count();
                let (_, total) = a.study.progress();
                let done = a.done_before + finished;
                let total = total.max(done).max(1);
                let elapsed = (now_ms() - a.started_ms) / 1000.0;
                let f = done as f64 / total as f64;
                let left = if f > 0.0 && f < 1.0 {
                    format!(", about {:.0} s left", elapsed * (1.0 - f) / f)
                } else {
                    String::new()
                };
                let text = format!("Running: {done} of {total} runs done{left}");
                let complete = finished == a.results.len();
                self.study_progress(cx, f);
                cx.page.el("study-status").set_text_content(Some(&text));
                if complete {
                    let a = self.active.as_mut().expect("active");
                    let results = a.results.drain(..).map(|r| r.expect("complete")).collect();
                    a.study.feed(results);
                    self.next_batch(cx);
                } else {
                    self.dispatch(w);
                }
            }
            Output::Progress { run_id, done, expected } if run_id == self.run_id => {
                let f = if expected > 0 { (done as f64 / expected as f64).min(1.0) } else { 0.0 };
                self.study_progress(cx, f);
                cx.page.el("study-status").set_text_content(Some(&format!(
                    "Running: 0 of 1 runs done, its requests {:.0} % done",
                    f * 100.0
                )));
            }
            Output::Invalid { run_id, errors } if run_id == self.run_id => {
                self.stop_study(cx, "A run of the study was refused");
                self.show_study_errors(cx, &errors);
            }
            Output::Failed { run_id, message } if run_id == self.run_id => {
                self.stop_study(cx, "The simulator failed; the workers were restarted");
                self.show_study_errors(cx, &[("(simulator)".into(), format!("internal error: {message}"))]);
            }
            _ => {}
        }
    }

    fn export(&self, _cx: &Cx, what: &str) {
        let Some(r) = self.reports.get(self.shown.name()) else { return };
        let base = format!("inferscale-study-{}-{}-seed{}", r.study, r.scenario, r.seed);
        let (text, ext, mime) = match what {
            "json" => (r.json(), "json", "application/json"),
            "csv" => (r.csv(), "csv", "text/csv"),
            _ => (r.markdown(), "md", "text/markdown"),
        };
        exports::download_text(&format!("{base}.{ext}"), &text, mime);
    }

    fn copy_link(&self, cx: &Cx) {
        copy_link_to(&share_hash_for(self.shown.name(), &self.study_options(), &self.panel_text(cx)));
        cx.page.el("study-status").set_text_content(Some("Link copied: it reruns this study"));
    }

    fn click(&mut self, cx: &Cx, target: &Element) {
        if let Some(id) = target.get_attribute("data-png") {
            if let Some(r) = self.reports.get(self.shown.name()) {
                exports::png(
                    &id,
                    &format!(
                        "inferscale-study-{}-{}-seed{}-{}.png",
                        r.study,
                        r.scenario,
                        r.seed,
                        id.trim_start_matches("study-")
                    ),
                );
            }
            return;
        }
        let Some(col) = target
            .closest("th")
            .ok()
            .flatten()
            .and_then(|th| th.get_attribute("data-scol"))
            .and_then(|c| c.parse::<usize>().ok())
        else {
            return;
        };
        let Some(r) = self.reports.get(self.shown.name()).cloned() else { return };
        self.sort.click(col);
        let desc = self.sort.desc;
        let key = |i: usize| r.rows[i].get(col).cloned().unwrap_or(Cell::Empty);
        self.order.sort_by(|&a, &b| {
            let ord = match (key(a), key(b)) {
                (Cell::Num(x), Cell::Num(y)) => x.total_cmp(&y),
                (Cell::Interval { mean: x, .. }, Cell::Interval { mean: y, .. }) => x.total_cmp(&y),
                (Cell::Empty, Cell::Empty) => std::cmp::Ordering::Equal,
                (Cell::Empty, _) => return std::cmp::Ordering::Greater,
                (_, Cell::Empty) => return std::cmp::Ordering::Less,
                (x, y) => inferscale::export::show(&x, Format::Text).cmp(&inferscale::export::show(&y, Format::Text)),
            };
            if desc { ord.reverse() } else { ord }
        });
        self.render_study_table(cx, &r);
    }

    fn figures(&self) -> &[Figure] {
        &self.figures
    }

    /// The study's parameters inherit from the scenario: show the new one's, and whether the study takes it.
    fn scenario_replaced(&mut self, cx: &Cx) {
        self.sync_study_params(cx);
        self.validate_study(cx);
    }
}

/// "which …?" → "Which …?"
fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

/// A variant field: its select of kinds, then a labelled number input per number any kind takes.
/// A column's header: its label, and its unit when it has one (a text column's, marked to sit left as its
/// cells do).
fn header_html(c: &study::Column) -> String {
    let label = match inferscale::export::display_unit(c) {
        "" => esc(&c.label),
        u => format!("{} <span class=\"unit\">{}</span>", esc(&c.label), esc(u)),
    };
    if c.format == Format::Text { format!("<span class=\"text\">{label}</span>") } else { label }
}

/// A table cell as its column shows it (text left-aligned; a long text — a diagnosis, a verdict — wide enough
/// that it does not stretch its row into a column of words).
fn cell_html(c: &study::Cell, col: &study::Column) -> String {
    let shown = inferscale::export::show(c, col.format);
    let class = match col.format {
        Format::Text if shown.chars().count() > 60 => " class=\"text long\"",
        Format::Text => " class=\"text\"",
        _ => "",
    };
    format!("<td{class}>{}</td>", esc(&shown))
}

fn decisive_class(c: &study::Column) -> &'static str {
    if c.decisive { "decisive" } else { "" }
}

/// A report's further table, under its title, in its own order (the first table's sort does not move it).
fn extra_table(k: usize, t: &study::Table) -> String {
    let shown = shown_order(&t.columns);
    let head: String = (shown.iter().map(|&i| &t.columns[i]))
        .map(|c| match c.decisive {
            true => format!("<th class=\"decisive\">{}</th>", header_html(c)),
            false => format!("<th>{}</th>", header_html(c)),
        })
        .collect();
    let body: String = (t.rows.iter())
        .map(|row| format!("<tr>{}</tr>", shown.iter().map(|&i| cell_html(&row[i], &t.columns[i])).collect::<String>()))
        .collect();
    format!(
        "<h3 class=\"table-title\">{}</h3><div class=\"table-wrap\"><table id=\"study-table-{}\" aria-label=\"{}\"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>",
        esc(&t.title),
        k + 1,
        esc(&t.title)
    )
}
