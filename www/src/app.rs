//! Page state and event handling. The state lives in one `App` owned by an `Rc<RefCell<_>>` that every
//! event closure holds; the closures themselves are kept in `App::listeners` (never leaked with `forget`).

use std::cell::RefCell;
use std::rc::Rc;

use gloo_worker::{Spawnable, WorkerBridge};
use inferscale_worker::{Input, Output, Results, SimWorker};
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Document, Element, HtmlCanvasElement, HtmlElement, HtmlInputElement, HtmlSelectElement, HtmlTextAreaElement};

#[path = "study_panel.rs"]
mod study_panel;

use crate::charts::{self, Mapping};
use crate::details;
use crate::table::{esc, Table};

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
];
const SAMPLE_TRACE: (&str, &str) = ("traces/sample-vidur.csv", include_str!("../../scenarios/traces/sample-vidur.csv"));

const PAGE_ROWS: usize = 50;

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Num,
    Int,
    Bool,
    Text,
    /// The value replaces the whole object at the pointer: `{"kind": value}`.
    Tagged,
}

/// Controls and the scenario fields they edit (JSON pointers).
const CONTROLS: &[(&str, &str, Kind)] = &[
    ("c-seed", "/seed", Kind::Int),
    ("c-arrival", "/workload/arrival/kind", Kind::Text),
    ("c-rate", "/workload/arrival/rate_rps", Kind::Num),
    ("c-cv", "/workload/arrival/cv", Kind::Num),
    ("c-requests", "/workload/requests", Kind::Int),
    ("c-model", "/model/preset", Kind::Text),
    ("c-device", "/hardware/device", Kind::Text),
    ("c-tp", "/hardware/tp", Kind::Int),
    ("c-replicas", "/cluster/replicas", Kind::Int),
    ("c-seqs", "/engine/max_num_seqs", Kind::Int),
    ("c-budget", "/engine/max_num_batched_tokens", Kind::Int),
    ("c-chunked", "/engine/chunked_prefill", Kind::Bool),
    ("c-chunk", "/engine/prefill_chunk_tokens", Kind::Int),
    ("c-block", "/engine/block_size_tokens", Kind::Int),
    ("c-mem", "/engine/gpu_memory_utilization", Kind::Num),
    ("c-oversub", "/engine/kv_oversubscription", Kind::Num),
    ("c-prompt", "/workload/classes/0/prompt_tokens", Kind::Num),
    ("c-output", "/workload/classes/0/output_tokens", Kind::Num),
    ("c-ttft", "/workload/classes/0/slo/ttft_ms", Kind::Num),
    ("c-tpot", "/workload/classes/0/slo/tpot_ms", Kind::Num),
    ("c-order", "/estimator/order", Kind::Tagged),
    ("c-reserve", "/estimator/reserve", Kind::Tagged),
    ("c-admission", "/admission", Kind::Tagged),
    ("c-sched", "/scheduler", Kind::Tagged),
    ("c-router", "/cluster/router", Kind::Tagged),
];

/// Slider ↔ number pairs.
const PAIRS: &[(&str, &str)] = &[("c-rate-range", "c-rate"), ("c-seqs-range", "c-seqs")];

struct App {
    doc: Document,
    bridge: Option<WorkerBridge<SimWorker>>,
    run_id: u32,
    running: bool,
    started_ms: f64,
    /// An uploaded trace: (name written in `path`, text).
    trace: Option<(String, String)>,
    results: Option<Results>,
    report: Value,
    table: Table,
    sort: Option<(usize, bool)>,
    page: usize,
    mappings: Vec<(String, Mapping)>,
    listeners: Vec<Closure<dyn FnMut(web_sys::Event)>>,
    self_ref: std::rc::Weak<RefCell<App>>,
    /// The panel on screen: "lab" or a study's name.
    panel: String,
    study: study_panel::StudyState,
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
        let (Some((name, data)), Ok(mut v)) = (&self.trace, serde_json::from_str::<Value>(&text)) else { return text };
        let arrival = v.pointer_mut("/workload/arrival");
        if let Some(a) = arrival.and_then(Value::as_object_mut)
            && a.get("kind").and_then(Value::as_str) == Some("trace") && a.get("path").and_then(Value::as_str) == Some(name) && !a.contains_key("data") {
                a.insert("data".into(), Value::String(data.clone()));
            }
        v.to_string()
    }

    /// Validate the editor's scenario; show every error inline; enable Run only when valid.
    fn validate(&self) -> bool {
        let errors: Vec<(String, String)> = match inferscale::scenario::load(&self.scenario_text()) {
            Ok(_) => vec![],
            Err(e) => e.errors.into_iter().map(|f| (f.path, f.message)).collect(),
        };
        self.show_errors(&errors);
        let ok = errors.is_empty();
        if let Ok(b) = self.el("run").dyn_into::<web_sys::HtmlButtonElement>() {
            b.set_disabled(!ok || self.running);
        }
        ok
    }

    fn show_errors(&self, errors: &[(String, String)]) {
        self.el("errors").set_inner_html(&error_list(errors));
        self.editor().class_list().toggle_with_force("invalid", !errors.is_empty()).ok();
        for (id, ptr, kind) in CONTROLS {
            let dotted = dotted(ptr, *kind);
            let hit = errors.iter().find(|(p, _)| *p == dotted || p.starts_with(&format!("{dotted}.")));
            mark_field(&self.el(id), hit.map(|h| h.1.as_str()));
        }
        let Ok(fields) = self.el("details").query_selector_all("[data-ptr]") else { return };
        for i in 0..fields.length() {
            let Some(el) = fields.item(i).and_then(|n| n.dyn_into::<Element>().ok()) else { continue };
            let ptr = el.get_attribute("data-ptr").unwrap_or_default();
            let hit = errors.iter().find(|(p, _)| details::concerns(p, &ptr));
            mark_field(&el, hit.map(|h| h.1.as_str()));
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
                    if focused.as_deref() == Some(ptr.as_str()) {
                        continue; // the user is typing there
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
            let raw = if let Ok(i) = target.clone().dyn_into::<HtmlInputElement>() {
                i.value()
            } else if let Ok(s) = target.clone().dyn_into::<HtmlSelectElement>() {
                s.value()
            } else {
                return;
            };
            details::edit(&mut v, &ptr, &ty, &raw);
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

    /// Show the scenario's effective values (defaults filled in) in the controls.
    fn sync_controls(&self) {
        let Ok(spec) = inferscale::scenario::parse(&self.editor().value()) else { return };
        let Ok(v) = serde_json::to_value(&spec) else { return };
        let arrival = v.pointer("/workload/arrival/kind").and_then(Value::as_str).unwrap_or("");
        for (id, ptr, kind) in CONTROLS {
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
            let enabled = match *id {
                "c-rate" => matches!(arrival, "poisson" | "constant" | "gamma"),
                "c-cv" => arrival == "gamma",
                "c-prompt" | "c-output" => arrival != "trace" && length_field(&v, id, ptr).is_some(),
                _ => true,
            };
            set_disabled(&el, !enabled);
            if let Ok(input) = el.clone().dyn_into::<HtmlInputElement>() {
                match kind {
                    Kind::Bool => input.set_checked(value.as_ref().and_then(Value::as_bool).unwrap_or(false)),
                    _ => input.set_value(&value.map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())).unwrap_or_default()),
                }
            } else if let Ok(sel) = el.dyn_into::<HtmlSelectElement>() {
                sel.set_value(value.as_ref().and_then(Value::as_str).unwrap_or(""));
            }
        }
        self.render_details(&v);
        for (range, number) in PAIRS {
            let n: HtmlInputElement = self.el(number).dyn_into().unwrap();
            let r: HtmlInputElement = self.el(range).dyn_into().unwrap();
            r.set_value(&n.value());
            set_disabled(&r, n.disabled());
        }
    }

    /// A control changed: write its value into the editor's JSON.
    fn control_changed(&mut self, id: &str) {
        let Some((_, ptr, kind)) = CONTROLS.iter().find(|c| c.0 == id) else { return };
        let el = self.el(id);
        let raw = if let Ok(i) = el.clone().dyn_into::<HtmlInputElement>() {
            if *kind == Kind::Bool { i.checked().to_string() } else { i.value() }
        } else if let Ok(s) = el.dyn_into::<HtmlSelectElement>() {
            s.value()
        } else {
            return;
        };
        let Ok(mut v) = serde_json::from_str::<Value>(&self.editor().value()) else {
            self.show_errors(&[("(root)".into(), "fix the JSON first: the controls edit it".into())]);
            return;
        };
        let new = match kind {
            // A number that does not parse is kept as text, so the validator names the field.
            Kind::Num => raw.parse::<f64>().map(|x| json!(x)).unwrap_or(Value::String(raw.clone())),
            Kind::Int => raw.parse::<i64>().map(|x| json!(x)).unwrap_or(Value::String(raw.clone())),
            Kind::Bool => json!(raw == "true"),
            Kind::Text => json!(raw),
            Kind::Tagged => kind_object(&raw),
        };
        if id == "c-arrival" {
            // Each arrival kind has its own fields: rebuild the object, keeping the rate.
            let rate = v.pointer("/workload/arrival/rate_rps").or(v.pointer("/workload/arrival/rate_on_rps")).cloned().unwrap_or(json!(1.0));
            let cv = v.pointer("/workload/arrival/cv").cloned().unwrap_or(json!(2.0));
            let a = match raw.as_str() {
                "gamma" => json!({"kind": raw, "rate_rps": rate, "cv": cv}),
                // Bursts at 3× the rate a third of the time; quiet periods at a tenth of it.
                "on_off" => {
                    let r = rate.as_f64().unwrap_or(1.0);
                    json!({"kind": raw, "rate_on_rps": r * 3.0, "rate_off_rps": r / 10.0, "mean_on_s": 10.0, "mean_off_s": 20.0})
                }
                _ => json!({"kind": raw, "rate_rps": rate}),
            };
            details::set(&mut v, "/workload/arrival", a);
        } else if let Some(field) = length_field(&v, id, ptr) {
            // A fixed length takes whole tokens; a mean may be fractional.
            let new = if field == "tokens" { raw.parse::<u64>().map(|x| json!(x)).unwrap_or(Value::String(raw.clone())) } else { new };
            details::set(&mut v, &format!("{ptr}/{field}"), new);
        } else {
            details::set(&mut v, ptr, new);
        }
        self.editor().set_value(&serde_json::to_string_pretty(&v).unwrap_or_default());
        self.sync_controls();
        self.validate();
    }

    fn load_text(&mut self, text: &str) {
        let pretty = serde_json::from_str::<Value>(text).ok().and_then(|v| serde_json::to_string_pretty(&v).ok()).unwrap_or_else(|| text.to_string());
        self.editor().set_value(&pretty);
        self.sync_controls();
        self.validate();
        if self.panel != "lab" {
            self.sync_study_params();
            self.validate_study();
        }
    }

    fn spawn_worker(&mut self) {
        let weak = self.self_ref.clone();
        let bridge = SimWorker::spawner()
            .as_module(false)
            .callback(move |out: Output| {
                if let Some(app) = weak.upgrade() {
                    app.borrow_mut().on_output(out);
                }
            })
            .spawn("./worker.js");
        self.bridge = Some(bridge);
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
        // The URL replays this run.
        let _ = window().location().set_hash(&share_hash(&self.editor().value()));
        // `?crash-test` in the URL makes Run crash the worker instead: the e2e test of recovery.
        let crash = window().location().search().unwrap_or_default().contains("crash-test");
        let msg = if crash { Input::Crash { run_id: self.run_id } } else { Input::Run { run_id: self.run_id, scenario_json: self.scenario_text() } };
        if self.bridge.is_none() {
            self.spawn_worker();
        }
        self.bridge.as_ref().expect("spawned").send(msg);
    }

    fn cancel(&mut self) {
        if !self.running {
            return;
        }
        // Dropping the bridge terminates the worker at once, mid-run; a fresh one takes the next run.
        self.bridge = None;
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
                let left = if f > 0.02 { format!(", about {:.0} s left", elapsed * (1.0 - f) / f) } else { String::new() };
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
                // Run → results on screen (cards, charts, table drawn), for the e2e benchmark.
                self.el("status").set_attribute("data-shown-ms", &format!("{:.1}", now_ms() - self.started_ms)).ok();
            }
            Output::Failed { run_id, message } if run_id == self.run_id => {
                // The worker is dead: replace it; the inputs and the last results stay on screen.
                self.running = false;
                self.bridge = None;
                self.spawn_worker();
                self.set_buttons();
                self.progress(0.0);
                self.show_errors(&[("(simulator)".into(), format!("internal error, the worker was restarted: {message}"))]);
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

    fn show_results(&mut self, results: Results) {
        self.report = serde_json::from_str(&results.report_json).unwrap_or(Value::Null);
        self.table = Table::parse(&results.requests_csv);
        self.sort = None;
        self.page = 0;
        self.results = Some(results);
        self.html("results").set_hidden(false);
        self.render_diagnosis();
        self.render_cards();
        self.render_charts();
        self.render_classes();
        self.render_table();
    }

    fn render_diagnosis(&self) {
        let d = &self.report["diagnosis"];
        let findings: String = d["findings"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|f| {
                        let v = f["value"].as_f64().unwrap_or(0.0);
                        let shown = if f["unit"] == "fraction" { format!("{:.1} %", v * 100.0) } else { format!("{v:.3}") };
                        format!("<li>{}: <b>{}</b></li>", esc(f["label"].as_str().unwrap_or("")), shown)
                    })
                    .collect()
            })
            .unwrap_or_default();
        self.el("diagnosis").set_inner_html(&format!(
            "<h3>Diagnosis: {}</h3><p>{}</p><p><b>Most likely to help:</b> {}</p><ul>{}</ul>",
            esc(d["kind"].as_str().unwrap_or("")),
            esc(d["verdict"].as_str().unwrap_or("")),
            esc(d["advice"].as_str().unwrap_or("")),
            findings
        ));
    }

    fn render_cards(&self) {
        let s = &self.report["summary"];
        let a = &self.report["audits"];
        let f = |v: &Value| v.as_f64().unwrap_or(0.0);
        let t = |v: &Value| fmt_s(f(v));
        let p = |v: &Value| format!("{:.1} %", f(v) * 100.0);
        let cards = vec![
            ("TTFT p50", t(&s["ttft_s"]["p50"]), ""),
            ("TTFT p95", t(&s["ttft_s"]["p95"]), ""),
            ("TTFT p99", t(&s["ttft_s"]["p99"]), ""),
            ("TPOT p50", t(&s["tpot_s"]["p50"]), ""),
            ("TPOT p95", t(&s["tpot_s"]["p95"]), ""),
            ("TPOT p99", t(&s["tpot_s"]["p99"]), ""),
            ("E2E p50", t(&s["e2e_s"]["p50"]), ""),
            ("E2E p95", t(&s["e2e_s"]["p95"]), ""),
            ("E2E p99", t(&s["e2e_s"]["p99"]), ""),
            ("Throughput", format!("{:.2} req/s", f(&s["throughput_rps"])), ""),
            ("Output tokens", format!("{:.0} tok/s", f(&s["output_tokens_per_s"])), ""),
            ("Goodput", format!("{:.2} req/s", f(&s["goodput_rps"])), ""),
            ("SLO attainment", p(&s["slo_attainment"]), if f(&s["slo_attainment"]) >= 0.99 { "good" } else { "bad" }),
            ("KV peak", p(&s["kv_peak_fraction"]), ""),
            ("Preemptions", format!("{}", s["preemptions"]), ""),
            ("Rejected", format!("{}", s["rejected"]), ""),
            ("Unfinished", format!("{}", s["unfinished"]), ""),
            ("Little's law", format!("err {:.1e}", f(&a["little"]["relative_error"])), if a["ok"] == true { "good" } else { "bad" }),
            ("GPUs", format!("{}", self.report["gpus"]), ""),
            ("Goodput/GPU", format!("{:.3} req/s", f(&s["goodput_per_gpu_rps"])), ""),
        ];
        let mut cards = cards.into_iter().map(|(k, v, c)| (k.to_string(), v, c)).collect::<Vec<_>>();
        // Disaggregated and prefix-sharing runs have their own figures.
        if let Some(pools) = self.report["pools"].as_array() {
            for pool in pools {
                cards.push((format!("{} pool busy", pool["role"].as_str().unwrap_or("")), p(&pool["busy_fraction"]), ""));
            }
            let tr = &self.report["transfer"];
            cards.push(("KV transfer p95".into(), t(&tr["latency_s"]["p95"]), ""));
            cards.push(("Busiest link".into(), p(&tr["link_busy_max_fraction"]), if f(&tr["link_busy_max_fraction"]) > 0.8 { "bad" } else { "" }));
        }
        if self.report["prefix"].is_object() {
            let x = &self.report["prefix"];
            cards.push(("Prefix cache hits".into(), p(&x["hit_rate"]), ""));
            cards.push(("Prefill tokens saved".into(), format!("{}", x["prefill_tokens_saved"]), ""));
        }
        let html: String = cards
            .iter()
            .map(|(k, v, cls)| format!("<div class=\"card {cls}\" data-metric=\"{}\"><div class=\"k\">{}</div><div class=\"v\">{}</div></div>", esc(k), esc(k), esc(v)))
            .collect();
        self.el("cards").set_inner_html(&html);
    }

    fn render_charts(&mut self) {
        let Some(r) = &self.results else { return };
        let series = &self.report["series"];
        let xs: Vec<f64> = series["t_s"].as_array().map(|a| a.iter().filter_map(Value::as_f64).collect()).unwrap_or_default();
        let col = |k: &str| -> Vec<(f64, f64)> {
            let ys: Vec<f64> = series[k].as_array().map(|a| a.iter().filter_map(Value::as_f64).collect()).unwrap_or_default();
            xs.iter().copied().zip(ys).collect()
        };
        let mut maps = Vec::new();
        if let Some(m) = charts::lines("chart-cdf", "Latency CDF", "seconds", "fraction of requests", &[("TTFT", r.ttft_cdf.clone()), ("E2E", r.e2e_cdf.clone())], Some(1.0)) {
            maps.push(("cdf".to_string(), m));
        }
        if let Some(m) = charts::lines("chart-queue", "Queue and batch over time", "time (s)", "requests (window mean)", &[("waiting", col("waiting")), ("running", col("running"))], None) {
            maps.push(("queue".to_string(), m));
        }
        if let Some(m) = charts::lines("chart-kv", "KV cache use over time", "time (s)", "fraction of KV blocks", &[("KV used", col("kv_used_fraction"))], Some(1.0)) {
            maps.push(("kv".to_string(), m));
        }
        let bars: Vec<(String, f64)> = self.report["classes"]
            .as_array()
            .map(|a| a.iter().map(|c| (c["name"].as_str().unwrap_or("").to_string(), c["slo_attainment"].as_f64().unwrap_or(0.0))).collect())
            .unwrap_or_default();
        if let Some(m) = charts::bars("chart-class", "SLO attainment per class", "requests meeting every SLO", &bars, Some(0.99)) {
            maps.push(("class".to_string(), m));
        }
        self.mappings = maps;
    }

    fn hover(&self, which: &str, ev: &web_sys::MouseEvent) {
        let Some((_, map)) = self.mappings.iter().find(|m| m.0 == which) else { return };
        let Ok(canvas) = self.el(&format!("chart-{which}")).dyn_into::<HtmlCanvasElement>() else { return };
        // The canvas may be scaled by CSS: map the mouse back to canvas pixels.
        let scale = canvas.width() as f64 / canvas.client_width().max(1) as f64;
        let px = ((ev.offset_x() as f64) * scale) as i32;
        let py = ((ev.offset_y() as f64) * scale) as i32;
        let text = match map((px, py)) {
            Some((x, y)) => match which {
                "cdf" => format!("{} → {:.1} % of requests", fmt_s(x), y * 100.0),
                "queue" => format!("t = {x:.1} s: {y:.1} requests"),
                "kv" => format!("t = {x:.1} s: {:.1} % of KV", y * 100.0),
                _ => {
                    let i = x.floor() as usize;
                    let c = &self.report["classes"][i];
                    format!("{}: {:.1} % attainment", c["name"].as_str().unwrap_or("?"), c["slo_attainment"].as_f64().unwrap_or(0.0) * 100.0)
                }
            },
            None => String::new(),
        };
        self.el(&format!("hover-{which}")).set_text_content(Some(&text));
    }

    fn render_classes(&self) {
        let rows: String = self.report["classes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                format!(
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1} %</td><td>{:.3}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(c["name"].as_str().unwrap_or("")),
                    c["requests"],
                    c["completed"],
                    c["rejected"],
                    c["slo_attainment"].as_f64().unwrap_or(0.0) * 100.0,
                    c["goodput_rps"].as_f64().unwrap_or(0.0),
                    fmt_s(c["ttft_s"]["p95"].as_f64().unwrap_or(0.0)),
                    fmt_s(c["tpot_s"]["p95"].as_f64().unwrap_or(0.0)),
                    fmt_s(c["e2e_s"]["p95"].as_f64().unwrap_or(0.0)),
                )
            })
            .collect();
        self.el("classes").set_inner_html(&format!(
            "<table><thead><tr><th>Class</th><th>Requests</th><th>Completed</th><th>Rejected</th><th>SLO attainment</th><th>Goodput (req/s)</th><th>p95 TTFT</th><th>p95 TPOT</th><th>p95 E2E</th></tr></thead><tbody>{rows}</tbody></table>"
        ));
    }

    fn render_table(&self) {
        let t = &self.table;
        let head: String = t
            .header
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let sort = match self.sort {
                    Some((c, true)) if c == i => " aria-sort=\"descending\"",
                    Some((c, false)) if c == i => " aria-sort=\"ascending\"",
                    _ => "",
                };
                format!("<th data-col=\"{i}\" tabindex=\"0\"{sort}>{}</th>", esc(h))
            })
            .collect();
        let body: String = t
            .page(self.page, PAGE_ROWS)
            .iter()
            .map(|r| format!("<tr>{}</tr>", r.iter().map(|c| format!("<td>{}</td>", esc(c))).collect::<String>()))
            .collect();
        self.el("requests").set_inner_html(&format!(
            "<div class=\"pager\"><button type=\"button\" data-page=\"prev\">Previous</button><span id=\"page-info\">Page {} of {} ({} requests)</span><button type=\"button\" data-page=\"next\">Next</button></div><div class=\"table-wrap\"><table id=\"request-table\"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>",
            self.page + 1,
            t.pages(PAGE_ROWS),
            t.rows.len()
        ));
    }

    fn table_click(&mut self, target: &Element) {
        if let Some(col) = target.get_attribute("data-col").and_then(|c| c.parse::<usize>().ok()) {
            let desc = matches!(self.sort, Some((c, false)) if c == col);
            self.table.sort(col, desc);
            self.sort = Some((col, desc));
            self.page = 0;
            self.render_table();
        } else if let Some(dir) = target.get_attribute("data-page") {
            let pages = self.table.pages(PAGE_ROWS);
            self.page = if dir == "next" { (self.page + 1).min(pages - 1) } else { self.page.saturating_sub(1) };
            self.render_table();
        }
    }

    fn export(&self, what: &str) {
        let Some(r) = &self.results else { return };
        let name = self.report["scenario"].as_str().unwrap_or("scenario").to_string();
        let seed = self.report["seed"].as_u64().unwrap_or(0);
        let (text, ext, mime) = match what {
            "json" => (&r.report_json, "json", "application/json"),
            "csv" => (&r.requests_csv, "requests.csv", "text/csv"),
            "summary" => (&r.summary_csv, "summary.csv", "text/csv"),
            _ => (&r.markdown, "md", "text/markdown"),
        };
        download_text(&format!("inferscale-{name}-seed{seed}.{ext}"), text, mime);
    }

    fn export_png(&self, canvas_id: &str) {
        let Ok(c) = self.el(canvas_id).dyn_into::<HtmlCanvasElement>() else { return };
        let Ok(url) = c.to_data_url() else { return };
        let name = self.report["scenario"].as_str().unwrap_or("scenario");
        click_link(&url, &format!("inferscale-{name}-{}.png", canvas_id.trim_start_matches("chart-")));
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

/// `{"kind": k}` with the parameters that kind requires, at sensible defaults (editable in the JSON).
fn kind_object(k: &str) -> Value {
    match k {
        "lognormal" => json!({"kind": k, "sigma": 0.5}),
        "queue_cap" => json!({"kind": k, "max_waiting": 64}),
        "deadline" => json!({"kind": k, "slack": 1.0}),
        "random_drop" => json!({"kind": k, "probability": 0.1}),
        "token_bucket" => json!({"kind": k, "rate_tokens_per_s": 20000.0, "burst_tokens": 100000.0}),
        "drr" => json!({"kind": k, "quantum_tokens": 2048}),
        _ => json!({"kind": k}),
    }
}

fn set_disabled(el: &Element, disabled: bool) {
    if disabled { el.set_attribute("disabled", "").ok() } else { el.remove_attribute("disabled").ok() };
}

/// `/engine/max_num_seqs` → `engine.max_num_seqs` (the validator's field paths).
fn dotted(ptr: &str, kind: Kind) -> String {
    let p = details::dotted(ptr);
    if kind == Kind::Tagged { p } else { p.trim_end_matches(".kind").to_string() }
}

fn fmt_s(s: f64) -> String {
    if s < 10.0 { format!("{:.1} ms", s * 1e3) } else { format!("{s:.2} s") }
}

/// The validator's errors as the page lists them.
fn error_list(errors: &[(String, String)]) -> String {
    errors.iter().map(|(p, m)| format!("<li><code>{}</code>: {}</li>", esc(p), esc(m))).collect()
}

/// Mark a field invalid (with the message as its tooltip) or valid, for sight and for screen readers.
fn mark_field(el: &Element, error: Option<&str>) {
    el.class_list().toggle_with_force("invalid", error.is_some()).ok();
    el.set_attribute("aria-invalid", if error.is_some() { "true" } else { "false" }).ok();
    if let Some(m) = error {
        el.set_attribute("title", m).ok();
    }
}

/// Put `hash` in the URL and copy the whole link.
fn copy_link_to(hash: &str) {
    let _ = window().location().set_hash(hash);
    let href = window().location().href().unwrap_or_default();
    let _ = window().navigator().clipboard().write_text(&href);
}

fn share_hash(scenario: &str) -> String {
    let compact = serde_json::from_str::<Value>(scenario).map(|v| v.to_string()).unwrap_or_else(|_| scenario.to_string());
    format!("scenario={}", String::from(js_sys::encode_uri_component(&compact)))
}

/// A link to a panel with its options and the scenario: `#panel=NAME&params=…&scenario=…` (the Serving Lab's
/// is `#scenario=…`).
fn share_hash_for(panel: &str, options: &Value, scenario: &str) -> String {
    if panel == "lab" {
        share_hash(scenario)
    } else {
        format!("panel={panel}&params={}&{}", String::from(js_sys::encode_uri_component(&options.to_string())), share_hash(scenario))
    }
}

fn download_text(name: &str, text: &str, mime: &str) {
    let parts = js_sys::Array::of1(&JsValue::from_str(text));
    let opts = web_sys::BlobPropertyBag::new();
    opts.set_type(mime);
    let Ok(blob) = web_sys::Blob::new_with_str_sequence_and_options(&parts, &opts) else { return };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else { return };
    click_link(&url, name);
    let _ = web_sys::Url::revoke_object_url(&url);
}

fn click_link(href: &str, name: &str) {
    let doc = window().document().expect("a document");
    let Ok(a) = doc.create_element("a").map(|e| e.unchecked_into::<web_sys::HtmlAnchorElement>()) else { return };
    a.set_href(href);
    a.set_download(name);
    a.click();
}

/// Read the file a file input's change event selected, then call `f(app, file name, text)`.
fn read_file(app: &Rc<RefCell<App>>, e: &web_sys::Event, f: impl FnOnce(&mut App, String, String) + 'static) {
    let Some(input) = e.target().and_then(|t| t.dyn_into::<HtmlInputElement>().ok()) else { return };
    let Some(file) = input.files().and_then(|f| f.get(0)) else { return };
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

thread_local! {
    /// The page owns the app for its lifetime; every closure holds only a weak reference.
    static APP: RefCell<Option<Rc<RefCell<App>>>> = const { RefCell::new(None) };
}

pub fn start() {
    // A bug must say what it was: the message goes to the console (the tests fail on console errors).
    std::panic::set_hook(Box::new(|info| web_sys::console::error_1(&JsValue::from_str(&format!("InferScale Lab panicked: {info}")))));
    let doc = window().document().expect("a document");
    let app = Rc::new(RefCell::new(App {
        doc,
        bridge: None,
        run_id: 0,
        running: false,
        started_ms: 0.0,
        trace: Some((SAMPLE_TRACE.0.to_string(), SAMPLE_TRACE.1.to_string())),
        results: None,
        report: Value::Null,
        table: Table::default(),
        sort: None,
        page: 0,
        mappings: Vec::new(),
        listeners: Vec::new(),
        self_ref: std::rc::Weak::new(),
        panel: "lab".into(),
        study: Default::default(),
    }));
    app.borrow_mut().self_ref = Rc::downgrade(&app);
    APP.with(|a| *a.borrow_mut() = Some(app.clone()));
    app.borrow_mut().spawn_worker();

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
    on(&app, "preset", "change", |app, _| {
        let name = app.borrow().el("preset").unchecked_into::<HtmlSelectElement>().value();
        if let Some((_, text)) = PRESETS.iter().find(|p| p.0 == name) {
            app.borrow_mut().load_text(text);
        }
    });
    for (id, _, kind) in CONTROLS {
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
    on(&app, "scenario", "input", |app, _| {
        let a = app.borrow();
        a.sync_controls();
        a.validate();
    });
    // Panels: the sidebar switches; every panel keeps its inputs and its last result.
    on(&app, "nav", "click", |app, e| {
        let Some(t) = e.target().and_then(|t| t.dyn_into::<Element>().ok()) else { return };
        let Some(name) = t.closest("[data-panel]").ok().flatten().and_then(|a| a.get_attribute("data-panel")) else { return };
        e.prevent_default();
        app.borrow_mut().show_panel(&name);
    });
    on(&app, "study-goto-lab", "click", |app, e| {
        e.prevent_default();
        app.borrow_mut().show_panel("lab");
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
        let Some(m) = e.dyn_ref::<web_sys::MouseEvent>() else { return };
        let Some(i) = e.target().and_then(|t| t.dyn_into::<Element>().ok()).and_then(|t| t.id().strip_prefix("study-chart-").and_then(|i| i.parse::<usize>().ok())) else { return };
        app.borrow().study_hover(i, m);
    });
    on(&app, "c-trace", "change", |app, e| {
        read_file(app, &e, |a, name, text| {
            a.trace = Some((name.clone(), text));
            let Ok(mut v) = serde_json::from_str::<Value>(&a.editor().value()) else { return };
            details::set(&mut v, "/workload/arrival", json!({"kind": "trace", "path": name, "format": "auto"}));
            if let Some(w) = v.pointer_mut("/workload").and_then(Value::as_object_mut) {
                w.remove("requests");
                w.remove("duration_s");
            }
            let pretty = serde_json::to_string_pretty(&v).unwrap_or_default();
            a.load_text(&pretty);
        });
    });
    // One listener per generated section serves every row in it.
    for id in ["d-arrival", "d-classes", "d-tenants"] {
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
    on(&app, "c-import", "change", |app, e| read_file(app, &e, |a, _, text| a.load_text(&text)));
    on(&app, "save-scenario", "click", |app, _| {
        let a = app.borrow();
        let name = serde_json::from_str::<Value>(&a.editor().value()).ok().and_then(|v| v["name"].as_str().map(str::to_string)).unwrap_or_else(|| "scenario".into());
        download_text(&format!("{name}.json"), &a.editor().value(), "application/json");
    });
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
            && let Some(t) = e.target().and_then(|t| t.dyn_into::<Element>().ok()) {
                app.borrow_mut().table_click(&t);
            }
    });
    for which in ["cdf", "queue", "kv", "class"] {
        on(&app, &format!("chart-{which}"), "mousemove", move |app, e| {
            if let Some(m) = e.dyn_ref::<web_sys::MouseEvent>() {
                app.borrow().hover(which, m);
            }
        });
    }

    // A shared link replays its run; otherwise start from the default example.
    // `#scenario=…` replays a Serving Lab run; `#panel=NAME&scenario=…` reruns a study.
    let hash = window().location().hash().unwrap_or_default();
    let (panel, rest) = match hash.strip_prefix("#panel=").and_then(|h| h.split_once('&')) {
        Some((p, rest)) => (Some(p.to_string()), format!("#{rest}")),
        None => (None, hash),
    };
    // Study options come before the scenario (whose JSON may contain anything).
    let (options, rest) = match rest.strip_prefix("#params=").and_then(|h| h.split_once("&scenario=")) {
        Some((o, s)) => (js_sys::decode_uri_component(o).ok().map(String::from).and_then(|o| serde_json::from_str::<Value>(&o).ok()), format!("#scenario={s}")),
        None => (None, rest),
    };
    if let (Some(p), Some(o)) = (&panel, options) {
        app.borrow_mut().study.options.insert(p.clone(), o);
    }
    let shared = rest
        .strip_prefix("#scenario=")
        .and_then(|h| js_sys::decode_uri_component(h).ok())
        .map(String::from);
    match (shared, panel) {
        (Some(text), Some(p)) => {
            app.borrow_mut().load_text(&text);
            app.borrow_mut().show_panel(&p);
            app.borrow_mut().run_study();
        }
        (Some(text), None) => {
            app.borrow_mut().load_text(&text);
            app.borrow_mut().run();
        }
        (None, _) => app.borrow_mut().load_text(PRESETS[0].1),
    }
}
