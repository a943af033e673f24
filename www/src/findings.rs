//! The Findings panel: the report `inferscale report` writes, its runs shared among the page's workers and
//! assembled by the same core plan (`findings::Plan`), so its Markdown export is the CLI's byte for byte; each
//! experiment shown with its table, chart and verdict, and each one rerun alone on the Serving Lab's scenario in
//! place of its shipped one.

use inferscale_worker::{FindingsStep, Input, Output};
use serde_json::Value;

use wasm_bindgen::JsCast;
use web_sys::Element;

use crate::behaviour::{Behaviour, Cx, Wiring};
use crate::components::exports;
use crate::components::figure::Figure;
use crate::components::table::esc;
use crate::page::{copy_link_to, error_list, now_ms, share_hash_for, window};
use crate::panels::PanelId;
use crate::workers::Pool;

/// A report the worker wrote: its Markdown and JSON as the CLI writes them, and the JSON read back.
struct Written {
    markdown: String,
    json: String,
    value: Value,
}

/// A report in progress, its runs shared among the workers (`findings::Plan`): which jobs read the first
/// part's capacity, that part once done, each job's part, the jobs not yet handed out and the free workers.
struct Split {
    base_json: Option<String>,
    only: Option<String>,
    needs_capacity: Vec<bool>,
    first: Option<(Option<f64>, Vec<u8>)>,
    parts: Vec<Option<Vec<u8>>>,
    /// Handed out from the end: the later experiments' runs are the longest, and the short ones left at the
    /// end keep every worker busy.
    pending: Vec<usize>,
    idle: Vec<usize>,
}

impl Split {
    fn done(&self) -> usize {
        usize::from(self.first.is_some()) + self.parts.iter().filter(|p| p.is_some()).count()
    }
}

/// Workers for a report: one per core, at most 8 (each holds its runs' state).
fn worker_count() -> usize {
    (window().navigator().hardware_concurrency() as usize).clamp(1, 8)
}

#[derive(Default)]
pub struct Findings {
    worker: Option<Pool>,
    split: Option<Split>,
    run_id: u32,
    /// What is running: the whole report (None) or one experiment on the Serving Lab's scenario.
    running: Option<Option<String>>,
    started_ms: f64,
    report: Option<Written>,
    /// Each experiment rerun on the Serving Lab's scenario: its section's id, and the rerun (or why not).
    reruns: Vec<(String, Result<Written, String>)>,
    figures: Vec<Figure>,
}

/// Experiments that do not run on a scenario: the bookkeeping over every run, the public series, and the
/// planted-cause corpus.
const NOT_RERUN: [&str; 3] = ["little", "trust", "diagnosis"];

/// `text` as HTML, its `code` spans kept.
fn inline(text: &str) -> String {
    let mut out = String::new();
    for (i, part) in esc(text).split('`').enumerate() {
        if i % 2 == 1 {
            out.push_str(&format!("<code>{part}</code>"));
        } else {
            out.push_str(part);
        }
    }
    out
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or("")
}

/// One experiment's section (with its prediction from `report`), its chart's canvas id `chart_id`.
fn section_html(s: &Value, report: &Value, chart_id: &str, rerun_button: bool) -> String {
    let id = str_of(s, "id");
    let claims: Vec<&Value> =
        report["predictions"].as_array().into_iter().flatten().filter(|p| str_of(p, "section") == id).collect();
    let mut h =
        format!("<h3>{}</h3><p><b>Question.</b> {}</p>", esc(str_of(s, "title")), inline(str_of(s, "question")));
    for p in &claims {
        let (what, tolerance) = if str_of(p, "kind") == "audit" {
            ("Audit", "Not counted")
        } else {
            ("Registered prediction", "Decided by")
        };
        let stop = if str_of(p, "tolerance").ends_with('.') { "" } else { "." };
        h += &format!(
            "<p><b>{what}</b> (<code>{}</code>). {} <i>{tolerance}:</i> {}{stop}</p>",
            esc(str_of(p, "id")),
            inline(str_of(p, "hypothesis")),
            inline(str_of(p, "tolerance"))
        );
    }
    h += &format!("<p><b>Setup.</b> {}</p>", inline(str_of(s, "setup")));
    if let Some(x) = s.get("scenario").filter(|x| !x.is_null()) {
        let arms: String = (x["arms"].as_array().into_iter().flatten())
            .map(|a| format!("<li>{}: <code>{}</code></li>", esc(a[0].as_str().unwrap_or("")), esc(&a[1].to_string())))
            .collect();
        h += &format!(
            "<p><b>Scenario.</b> <code>{}</code>, with these changes:</p><ul class=\"excerpt\">{arms}</ul>",
            esc(str_of(x, "file"))
        );
    }
    h += &format!("<p><b>Regime.</b> {}</p>", inline(str_of(s, "regime")));
    h += &table_html(s);
    if s["chart"].is_object() {
        h += &crate::components::figure::html(chart_id, s["chart"]["title"].as_str().unwrap_or(""), 560, 320);
    }
    // A section's only claim is named by its id alone; several are each named on their outcome and verdict,
    // as in the Markdown.
    for p in &claims {
        let verdict = str_of(p, "verdict");
        let named = if claims.len() == 1 { String::new() } else { format!(" (<code>{}</code>)", esc(str_of(p, "id"))) };
        h += &format!(
            "<p><b>Outcome</b>{named}. {}</p><p class=\"verdict verdict-{verdict}\"><b>Verdict{named}: {verdict}.</b></p>",
            inline(str_of(p, "outcome"))
        );
    }
    if let Some(r) = s.get("robustness").filter(|r| r.is_object()) {
        h += &format!(
            "<section class=\"robustness\" aria-label=\"Robustness of experiment {}\"><p><b>Robustness.</b> {}</p>{}<p class=\"robustness-summary\">{}</p></section>",
            esc(id),
            inline(str_of(r, "about")),
            table_html(r),
            inline(str_of(r, "summary"))
        );
    }
    if rerun_button && !NOT_RERUN.contains(&id) {
        h += &format!(
            "<button type=\"button\" data-rerun=\"{id}\">Rerun on the Serving Lab's scenario</button><div class=\"rerun\" id=\"rerun-{id}\" tabindex=\"-1\" aria-live=\"polite\"></div>",
            id = esc(id)
        );
    }
    h
}

fn table_html(s: &Value) -> String {
    let cols = s["columns"].as_array().cloned().unwrap_or_default();
    if cols.is_empty() {
        return String::new();
    }
    let head: String =
        cols.iter().map(|c| format!("<th scope=\"col\">{}</th>", inline(c.as_str().unwrap_or("")))).collect();
    let rows: String = (s["rows"].as_array().into_iter().flatten())
        .map(|r| {
            let cells: String = (r.as_array().into_iter().flatten())
                .map(|c| {
                    format!("<td>{}</td>", esc(&crate::components::numbers::cell_breaks(c.as_str().unwrap_or(""))))
                })
                .collect();
            format!("<tr>{cells}</tr>")
        })
        .collect();
    format!("<div class=\"table-wrap\"><table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div>")
}

/// The tally: predictions held, contradicted and inconclusive; the audits apart, never counted.
fn tally_html(report: &Value) -> String {
    let all = report["predictions"].as_array().cloned().unwrap_or_default();
    let (audits, ps): (Vec<Value>, Vec<Value>) = all.into_iter().partition(|p| str_of(p, "kind") == "audit");
    let count = |v: &str| ps.iter().filter(|p| str_of(p, "verdict") == v).count();
    let mut h = format!(
        "<h3>Tally</h3><p>Registered predictions: {}. Held: {}. Contradicted: {}. Inconclusive (the interval straddles the line): {}.</p>",
        ps.len(),
        count("held"),
        count("contradicted"),
        count("inconclusive")
    );
    if !audits.is_empty() {
        let items: String = (audits.iter())
            .map(|p| {
                let (id, verdict) = (esc(str_of(p, "id")), esc(str_of(p, "verdict")));
                format!("<li><code>{id}</code> ({verdict}): {}</li>", inline(str_of(p, "tolerance")))
            })
            .collect();
        h += &format!("<p>Audits, reported and not counted:</p><ul class=\"audits\">{items}</ul>");
    }
    let multiplicity = str_of(report, "multiplicity");
    if !multiplicity.is_empty() {
        h += &format!("<p class=\"multiplicity\">{}</p>", inline(multiplicity));
    }
    h
}

/// Draw the chart of every section in `sections` whose canvas is `id_of(section id)`.
fn draw(sections: &[Value], id_of: impl Fn(&str) -> String) -> Vec<Figure> {
    (sections.iter())
        .filter_map(|s| {
            let chart: inferscale::study::Chart = serde_json::from_value(s["chart"].clone()).ok()?;
            crate::components::charts::study_figure(&id_of(str_of(s, "id")), &chart)
        })
        .collect()
}

impl Findings {
    fn worker(&mut self, cx: &Cx) -> &Pool {
        if self.worker.is_none() {
            self.worker = Some(cx.page.pool(PanelId::Findings, worker_count()));
        }
        self.worker.as_ref().expect("spawned")
    }

    /// Step `step` of the report in progress, on worker `w`.
    fn step(&self, w: usize, step: FindingsStep) {
        let (Some(pool), Some(split)) = (&self.worker, &self.split) else { return };
        let (base_json, only) = (split.base_json.clone(), split.only.clone());
        pool.send(w, Input::Findings { run_id: self.run_id, base_json, only, step });
    }

    /// Hand each free worker the next job it can run (one that reads the capacity once the first part has
    /// measured it), or, every part done, have one assemble the report.
    fn dispatch(&mut self) {
        let Some(split) = self.split.as_mut() else { return };
        let mut steps = Vec::new();
        if split.first.is_some() && split.parts.iter().all(Option::is_some) {
            let (_, first) = split.first.take().expect("just checked");
            let parts = split.parts.iter_mut().map(|p| p.take().expect("just checked")).collect();
            steps.push((split.idle.pop().unwrap_or(0), FindingsStep::Assemble { first, parts }));
        } else {
            let capacity = split.first.as_ref().map(|(c, _)| *c);
            while let Some(&w) = split.idle.last()
                && let Some(i) = split.pending.iter().rposition(|&k| !split.needs_capacity[k] || capacity.is_some())
            {
                let job = split.pending.remove(i);
                split.idle.pop();
                let capacity = capacity.flatten().filter(|_| split.needs_capacity[job]);
                steps.push((w, FindingsStep::Job { job: job as u32, capacity }));
            }
        }
        for (w, step) in steps {
            self.step(w, step);
        }
    }

    fn buttons(&self, cx: &Cx) {
        let set = |id: &str, disabled: bool| {
            if let Ok(b) = cx.page.el(id).dyn_into::<web_sys::HtmlButtonElement>() {
                b.set_disabled(disabled);
            }
        };
        set("fd-run", self.running.is_some());
        set("fd-cancel", self.running.is_none());
        cx.page.html("fd-results").set_hidden(self.report.is_none());
    }

    fn progress(&self, cx: &Cx, f: f64) {
        if let Ok(p) = cx.page.el("fd-progress").dyn_into::<web_sys::HtmlProgressElement>() {
            p.set_value(f);
        }
    }

    /// `done` of `total` runs of the report done, and the time left at that pace.
    fn told(&self, cx: &Cx, done: usize, total: usize) {
        let f = (done as f64 / total.max(1) as f64).min(1.0);
        self.progress(cx, f);
        let elapsed = (now_ms() - self.started_ms) / 1000.0;
        let left = if f > 0.0 { format!(", about {:.0} s left", elapsed * (1.0 - f) / f) } else { String::new() };
        let on = match self.worker.as_ref().map_or(1, Pool::len) {
            1 => "one worker".to_string(),
            n => format!("{n} workers"),
        };
        cx.page
            .el("fd-status")
            .set_text_content(Some(&format!("Running on {on}: {done} of {total} experiment runs done{left}")));
    }

    fn send(&mut self, cx: &Cx, base_json: Option<String>, only: Option<String>) {
        self.run_id += 1;
        self.running = Some(only.clone());
        self.started_ms = now_ms();
        self.worker(cx);
        let (needs_capacity, parts, pending, idle) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        self.split = Some(Split { base_json, only, needs_capacity, first: None, parts, pending, idle });
        self.step(0, FindingsStep::Plan);
        self.progress(cx, 0.0);
        cx.page.el("fd-errors").set_inner_html("");
        self.buttons(cx);
    }

    /// The report, each section with its chart, and the reruns under their sections.
    fn render(&mut self, cx: &Cx) {
        let Some(w) = &self.report else { return };
        let sections = w.value["sections"].as_array().cloned().unwrap_or_default();
        let mut html = format!("<p class=\"intro\">{}</p>", inline(str_of(&w.value, "intro")));
        for s in &sections {
            html += &format!(
                "<article class=\"finding\" id=\"finding-{}\">{}</article>",
                esc(str_of(s, "id")),
                section_html(s, &w.value, &format!("fd-chart-{}", str_of(s, "id")), true)
            );
        }
        html += &tally_html(&w.value);
        cx.page.el("fd-report").set_inner_html(&html);
        let mut figures = draw(&sections, |id| format!("fd-chart-{id}"));
        for (id, rerun) in &self.reruns {
            let Some(el) = cx.page.doc.get_element_by_id(&format!("rerun-{id}")) else { continue };
            match rerun {
                Ok(r) => {
                    let ss = r.value["sections"].as_array().cloned().unwrap_or_default();
                    let body: String =
                        ss.iter().map(|s| section_html(s, &r.value, &format!("fd-rerun-chart-{id}"), false)).collect();
                    el.set_inner_html(&format!("<h4>On the Serving Lab's scenario</h4><p class=\"notes\">The setup describes the shipped scenario; the excerpt shows what ran on yours.</p>{body}"));
                    // Drawn once its canvas is in the page.
                    figures.extend(draw(&ss, |id| format!("fd-rerun-chart-{id}")));
                }
                Err(why) => el.set_inner_html(&format!("<p class=\"errors\">Not rerun: {}</p>", esc(why))),
            }
        }
        cx.page.label_figures(&figures);
        self.figures = figures;
    }

    fn done(&mut self, cx: &Cx, markdown: String, json: String) {
        let secs = (now_ms() - self.started_ms) / 1000.0;
        let value = serde_json::from_str::<Value>(&json).unwrap_or(Value::Null);
        let written = Written { markdown, json, value };
        self.split = None;
        let (status, answer) = match self.running.take().flatten() {
            None => {
                self.report = Some(written);
                self.reruns.clear();
                (format!("Done in {secs:.1} s"), "fd-report".to_string())
            }
            Some(id) => {
                self.reruns.retain(|(i, _)| *i != id);
                self.reruns.push((id.clone(), Ok(written)));
                let status = format!("Experiment `{id}` rerun on the Serving Lab's scenario in {secs:.1} s");
                (status, format!("rerun-{id}"))
            }
        };
        self.progress(cx, 1.0);
        let el = cx.page.el("fd-status");
        el.set_attribute("data-run-ms", &format!("{:.1}", secs * 1000.0)).ok();
        el.set_text_content(Some(&status));
        self.buttons(cx);
        self.render(cx);
        // Rendering replaced the Rerun button; Run was disabled: the keyboard lands on the answer.
        cx.page.focus_if_lost(&["fd-run", "fd-cancel"], &answer);
    }
}

impl Behaviour for Findings {
    fn wiring(&self) -> &'static Wiring {
        &Wiring {
            run: "fd-run",
            cancel: "fd-cancel",
            copy_link: "fd-copy-link",
            results: "fd-results",
            charts: "fd-report",
            export_bar: ("fd-exports", "Findings exports"),
            exports: &[("fx-md", "md", "Markdown"), ("fx-json", "json", "JSON")],
        }
    }

    fn show(&mut self, cx: &Cx, _id: PanelId) {
        self.buttons(cx);
        if self.report.is_some() {
            self.render(cx);
        }
    }

    fn run(&mut self, cx: &Cx) {
        if self.running.is_none() {
            self.send(cx, None, None);
            cx.page.el("fd-status").set_text_content(Some("Running the report…"));
        }
    }

    fn cancel(&mut self, cx: &Cx) {
        if self.running.take().is_none() {
            return;
        }
        self.worker = None;
        self.split = None;
        self.progress(cx, 0.0);
        cx.page.el("fd-status").set_text_content(Some("Cancelled (the last report stays on screen)"));
        self.buttons(cx);
    }

    fn on_output(&mut self, cx: &Cx, worker: usize, out: Output) {
        match out {
            Output::FindingsPlanned { run_id, needs_capacity } if run_id == self.run_id => {
                let Some(split) = self.split.as_mut() else { return };
                split.parts = vec![None; needs_capacity.len()];
                split.pending = (0..needs_capacity.len()).collect();
                split.needs_capacity = needs_capacity;
                split.idle = (1..self.worker.as_ref().map_or(1, Pool::len)).rev().collect();
                self.step(worker, FindingsStep::First);
                self.dispatch();
            }
            Output::FindingsPart { run_id, job, capacity, part } if run_id == self.run_id => {
                let Some(split) = self.split.as_mut() else { return };
                match job {
                    None => split.first = Some((capacity, part)),
                    // A worker answers only the jobs the plan has (it refuses any other).
                    Some(k) => {
                        if let Some(slot) = split.parts.get_mut(k as usize) {
                            *slot = Some(part);
                        }
                    }
                }
                split.idle.push(worker);
                let (done, total) = (split.done(), split.parts.len() + 1);
                self.dispatch();
                self.told(cx, done, total);
            }
            Output::Findings { run_id, markdown, json } if run_id == self.run_id => self.done(cx, markdown, json),
            Output::Invalid { run_id, errors } if run_id == self.run_id => {
                self.progress(cx, 0.0);
                self.split = None;
                match self.running.take().flatten() {
                    Some(id) => {
                        let why = errors.iter().map(|(_, m)| m.as_str()).collect::<Vec<_>>().join("; ");
                        self.reruns.retain(|(i, _)| *i != id);
                        self.reruns.push((id.clone(), Err(why)));
                        cx.page.el("fd-status").set_text_content(Some(&format!("Experiment `{id}` not rerun")));
                        self.render(cx);
                        cx.page.focus_if_lost(&["fd-run", "fd-cancel"], &format!("rerun-{id}"));
                    }
                    None => {
                        cx.page.el("fd-status").set_text_content(Some("Report refused"));
                        cx.page.el("fd-errors").set_inner_html(&error_list(&errors));
                    }
                }
                self.buttons(cx);
            }
            Output::Failed { message, .. } => {
                self.worker = None;
                self.split = None;
                self.running = None;
                self.progress(cx, 0.0);
                cx.page.el("fd-status").set_text_content(Some("The simulator failed; it was restarted"));
                cx.page.el("fd-errors").set_inner_html(&format!("<li>internal error: {}</li>", esc(&message)));
                self.buttons(cx);
            }
            _ => {}
        }
    }

    fn export(&self, _cx: &Cx, what: &str) {
        let Some(w) = &self.report else { return };
        match what {
            "json" => exports::download_text("inferscale-findings.json", &w.json, "application/json"),
            _ => exports::download_text("inferscale-findings.md", &w.markdown, "text/markdown"),
        }
    }

    fn copy_link(&self, cx: &Cx) {
        copy_link_to(&share_hash_for(PanelId::Findings.name(), &serde_json::json!({}), &cx.editor.text(cx.page)));
        cx.page.el("fd-status").set_text_content(Some("Link copied: it opens this panel with the scenario"));
    }

    /// A PNG button, or an experiment's Rerun.
    fn click(&mut self, cx: &Cx, target: &Element) {
        if let Some(id) = target.get_attribute("data-png") {
            exports::png(&id, &format!("inferscale-{}.png", id.trim_start_matches("fd-")));
            return;
        }
        let Some(id) = target.get_attribute("data-rerun") else { return };
        if self.running.is_some() {
            cx.page.el("fd-status").set_text_content(Some("Wait for the run in progress, or cancel it"));
            return;
        }
        self.send(cx, Some(cx.editor.scenario_text(cx.page)), Some(id.clone()));
        if let Some(el) = cx.page.doc.get_element_by_id(&format!("rerun-{id}")) {
            el.set_inner_html("<p>Running on the Serving Lab's scenario…</p>");
        }
        cx.page.el("fd-status").set_text_content(Some(&format!("Rerunning `{id}` on the Serving Lab's scenario…")));
    }

    fn figures(&self) -> &[Figure] {
        &self.figures
    }
}
