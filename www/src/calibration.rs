//! The Calibration panel: result files read in a worker (`inferscale import`'s parser), the cases shown with
//! their training marks, calibration run in a worker of its own with progress and Cancel, then the answer,
//! the held-out error, the measured-vs-predicted charts, every case's rows and the exports. The JSON export
//! is `inferscale calibrate`'s byte for byte; the views are `cal_view`'s.

use inferscale::truth::{Bundle, Case, default_training};
use inferscale_worker::{Calibrated, Imported, Input, Output};
use serde_json::Value;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{Element, HtmlInputElement};

use super::{App, esc, now_ms};
use crate::cal_view;
use crate::exports;
use crate::figure::Figure;
use crate::sort::Sort;
use crate::workers::Pool;

/// An import's files by position: (name, text) once read.
type Texts = RefCell<Vec<Option<(String, String)>>>;

#[derive(Default)]
pub(super) struct CalState {
    /// Every case imported so far, and which of them train the fit.
    pub cases: Vec<Case>,
    pub train: Vec<bool>,
    /// Runs or files that could not be read, as the importer said.
    pub import_errors: Vec<String>,
    /// How many files each import in flight (being read, or sent to the worker and not yet answered)
    /// carries, oldest first: the worker answers in order.
    pub import_batches: std::collections::VecDeque<usize>,
    /// The panel's own worker: importing and calibrating never wait on the Serving Lab's.
    pub worker: Option<Pool>,
    pub run_id: u32,
    pub running: bool,
    pub started_ms: f64,
    /// The last calibration: its exports and its JSON read back, kept until the next.
    pub result: Option<(Calibrated, Value)>,
    pub figures: Vec<Figure>,
    pub order: Vec<usize>,
    pub sort: Sort,
}

impl CalState {
    /// Files being read, or sent to the worker and not yet answered.
    pub fn importing(&self) -> usize {
        self.import_batches.iter().sum()
    }
}

/// The largest result file the panel reads, bytes (the CLI's limit).
const MAX_RESULT_BYTES: f64 = 256e6;

impl App {
    fn cal_worker(&mut self) -> &Pool {
        if self.cal.worker.is_none() {
            self.cal.worker =
                Some(Pool::spawn(1, self.self_ref.clone(), |app: &mut App, _, out| app.on_cal_output(out)));
        }
        self.cal.worker.as_ref().expect("spawned")
    }

    /// The panel came on screen: its scenario line, its cases and its last result.
    pub(super) fn show_calibration(&mut self) {
        let text = self.editor().value();
        let line = match inferscale::scenario::parse(&text) {
            Ok(s) => {
                let model = s.model.preset.clone().unwrap_or_else(|| "custom model".into());
                let device = s.hardware.device.clone().unwrap_or_else(|| "custom device".into());
                format!("{}: {model} on {device}, TP {}, {} replica(s)", s.name, s.hardware.tp, s.cluster.replicas)
            }
            Err(_) => "the Serving Lab's scenario does not parse: fix it there first".into(),
        };
        self.el("cal-scenario").set_text_content(Some(&line));
        self.render_cases();
        if self.cal.result.is_some() {
            self.render_calibration();
        }
    }

    /// Files chosen or dropped together are read, then sent to the worker as one import in the order they
    /// were given — the order `inferscale import` lists their cases in. (Sent as each read finished, a small
    /// file overtook a larger one and the table's order depended on timing.)
    pub(super) fn cal_files(&mut self, files: web_sys::FileList) {
        let mut chosen = Vec::new();
        for i in 0..files.length() {
            let Some(file) = files.get(i) else { continue };
            let name = file.name();
            if file.size() > MAX_RESULT_BYTES {
                self.cal.import_errors.push(format!(
                    "{name}: {:.0} MB, over the limit of {} MB for a result file",
                    file.size() / 1e6,
                    MAX_RESULT_BYTES / 1e6
                ));
            } else if self.cal.cases.iter().any(|c| c.source.file == name) {
                self.cal.import_errors.push(format!("{name}: already imported (its cases are in the table)"));
            } else if chosen.iter().any(|f: &web_sys::File| f.name() == name) {
                self.cal.import_errors.push(format!("{name}: chosen twice; read once"));
            } else {
                chosen.push(file);
            }
        }
        if !chosen.is_empty() {
            self.read_then_import(chosen);
        }
        self.render_cases();
    }

    /// Read every file (off the main thread's critical path: `FileReader` is asynchronous), then send the
    /// texts that could be read, in order, as one import.
    fn read_then_import(&mut self, files: Vec<web_sys::File>) {
        let texts: Rc<Texts> = Rc::new(RefCell::new(vec![None; files.len()]));
        let left = Rc::new(Cell::new(files.len()));
        self.cal.import_batches.push_back(files.len());
        for (k, file) in files.into_iter().enumerate() {
            let name = file.name();
            let Some(reader) = web_sys::FileReader::new().ok() else {
                self.file_read(&texts, &left, k, &name, None);
                continue;
            };
            let (texts2, left2, weak, r2, name2) =
                (texts.clone(), left.clone(), self.self_ref.clone(), reader.clone(), name.clone());
            // On load or on error: keep what was read (nothing, for an error).
            let done = Closure::<dyn FnMut(web_sys::Event)>::new(move |_e: web_sys::Event| {
                let Some(app) = weak.upgrade() else { return };
                let text = r2.result().ok().and_then(|v| v.as_string());
                app.borrow_mut().file_read(&texts2, &left2, k, &name2, text);
            });
            reader.set_onload(Some(done.as_ref().unchecked_ref()));
            reader.set_onerror(Some(done.as_ref().unchecked_ref()));
            if reader.read_as_text(&file).is_err() {
                self.file_read(&texts, &left, k, &name, None);
            }
            self.listeners.push(done);
        }
    }

    /// File `k` of an import was read (`text`) or could not be; once every file is in, the import goes to
    /// the worker.
    fn file_read(&mut self, texts: &Texts, left: &Cell<usize>, k: usize, name: &str, text: Option<String>) {
        match text {
            Some(t) => texts.borrow_mut()[k] = Some((name.to_string(), t)),
            None => self.cal.import_errors.push(format!("{name}: the browser could not read the file")),
        }
        left.set(left.get() - 1);
        if left.get() == 0 {
            let run_id = self.cal.run_id;
            let files: Vec<(String, String)> = texts.borrow_mut().drain(..).flatten().collect();
            self.cal_worker().send(0, Input::Import { run_id, files });
        }
    }

    /// A file's runs came back: their cases join the table (the default split is made again over them all).
    fn cal_imported(&mut self, imported: Imported) {
        self.cal.import_batches.pop_front();
        self.cal.import_errors.extend(imported.errors);
        if let Some(b) = imported.bundle_json.as_deref().and_then(|j| Bundle::parse(j).ok()) {
            for c in b.cases {
                if self.cal.cases.iter().any(|x| x.id == c.id) {
                    self.cal
                        .import_errors
                        .push(format!("{}: a case of that id is already in the table; this one was left out", c.id));
                } else {
                    self.cal.cases.push(c);
                }
            }
            self.cal.train = default_training(&self.cal.cases);
        }
        self.render_cases();
    }

    pub(super) fn cal_clear(&mut self) {
        self.cal.cases.clear();
        self.cal.train.clear();
        self.cal.import_errors.clear();
        self.render_cases();
    }

    /// A training checkbox changed.
    pub(super) fn cal_mark(&mut self, target: &Element) {
        let Some(i) = target.get_attribute("data-case").and_then(|s| s.parse::<usize>().ok()) else { return };
        let Ok(input) = target.clone().dyn_into::<HtmlInputElement>() else { return };
        if let Some(t) = self.cal.train.get_mut(i) {
            *t = input.checked();
        }
        if let Some(tr) = target.closest("tr").ok().flatten() {
            tr.set_attribute("data-set", if input.checked() { "training" } else { "held-out" }).ok();
        }
        self.cal_buttons();
    }

    fn render_cases(&self) {
        let c = &self.cal;
        self.html("cal-how").set_hidden(!c.cases.is_empty());
        self.el("cal-how").set_text_content(Some(cal_view::HOW_TO));
        let errors: String = c.import_errors.iter().map(|e| format!("<li>{}</li>", esc(e))).collect();
        self.el("cal-import-errors").set_inner_html(&errors);
        self.el("cal-cases").set_inner_html(&if c.cases.is_empty() {
            String::new()
        } else {
            cal_view::cases_table(&c.cases, &c.train)
        });
        let shown = self.el("cal-status").text_content().unwrap_or_default();
        let status = if c.importing() > 0 {
            format!("Reading {} file(s)…", c.importing())
        } else if c.running {
            "Running…".into()
        } else if shown.starts_with("Reading") || shown == "Ready" {
            format!("{} case(s) imported", c.cases.len())
        } else {
            shown
        };
        self.el("cal-status").set_text_content(Some(&status));
        self.cal_buttons();
    }

    /// Why Run is not possible now, if it is not.
    fn cal_blocked(&self) -> Option<&'static str> {
        let c = &self.cal;
        if c.cases.is_empty() {
            Some("import result files first")
        } else if c.importing() > 0 {
            Some("files are still being read")
        } else if !c.train.iter().any(|t| *t) {
            Some("mark at least one case for training")
        } else {
            None
        }
    }

    fn cal_buttons(&self) {
        let set = |id: &str, disabled: bool| {
            if let Ok(b) = self.el(id).dyn_into::<web_sys::HtmlButtonElement>() {
                b.set_disabled(disabled);
            }
        };
        let blocked = self.cal_blocked();
        set("cal-run", self.cal.running || blocked.is_some());
        set("cal-cancel", !self.cal.running);
        set("cal-clear", self.cal.running || self.cal.cases.is_empty());
        set("cal-bundle", self.cal.cases.is_empty());
        let why = match (blocked, self.cal.cases.is_empty()) {
            (Some(w), false) => format!("<li>Cannot run: {w}</li>"),
            _ => String::new(),
        };
        self.el("cal-errors").set_inner_html(&why);
    }

    pub(super) fn run_calibration(&mut self) {
        if self.cal.running || self.cal_blocked().is_some() {
            return;
        }
        let scenario = self.scenario_text();
        if let Err(e) = inferscale::scenario::parse(&scenario) {
            self.el("cal-errors")
                .set_inner_html(&format!("<li>Fix the Serving Lab's scenario first: {}</li>", esc(&e.to_string())));
            return;
        }
        let train: Vec<String> =
            self.cal.cases.iter().zip(&self.cal.train).filter(|(_, t)| **t).map(|(c, _)| c.id.clone()).collect();
        let bundle_json = Bundle::new(self.cal.cases.clone()).json();
        self.cal.run_id += 1;
        self.cal.running = true;
        self.cal.started_ms = now_ms();
        let run_id = self.cal.run_id;
        let fit = self.cal_extras();
        self.cal_worker().send(0, Input::Calibrate { run_id, bundle_json, scenario_json: scenario, train, fit });
        self.cal_progress(0.0);
        self.el("cal-status").set_text_content(Some("Running…"));
        self.cal_buttons();
    }

    /// The extra knobs checked under "Also fit".
    fn cal_extras(&self) -> Vec<String> {
        inferscale::truth::Extra::ALL
            .iter()
            .filter(|x| {
                self.doc
                    .get_element_by_id(&format!("cal-fit-{}", x.name()))
                    .and_then(|e| e.dyn_into::<HtmlInputElement>().ok())
                    .is_some_and(|i| i.checked())
            })
            .map(|x| x.name().to_string())
            .collect()
    }

    /// Cancel: the worker is terminated at once; a fresh one takes the next import or run.
    pub(super) fn cancel_calibration(&mut self) {
        if !self.cal.running {
            return;
        }
        self.cal.worker = None;
        self.cal.running = false;
        self.cal.import_batches.clear();
        self.cal_progress(0.0);
        self.el("cal-status").set_text_content(Some("Cancelled (the last result stays on screen)"));
        self.cal_buttons();
    }

    fn on_cal_output(&mut self, out: Output) {
        match out {
            Output::Imported { imported, .. } => self.cal_imported(imported),
            Output::Progress { run_id, done, expected } if run_id == self.cal.run_id && self.cal.running => {
                let f = if expected > 0 { (done as f64 / expected as f64).min(1.0) } else { 0.0 };
                self.cal_progress(f);
                let elapsed = (now_ms() - self.cal.started_ms) / 1000.0;
                let left =
                    if f > 0.02 { format!(", about {:.0} s left", elapsed * (1.0 - f) / f) } else { String::new() };
                self.el("cal-status")
                    .set_text_content(Some(&format!("Running: {done} of about {expected} simulations{left}")));
            }
            Output::Calibrated { run_id, calibrated } if run_id == self.cal.run_id => {
                let secs = (now_ms() - self.cal.started_ms) / 1000.0;
                let value = serde_json::from_str::<Value>(&calibrated.json).unwrap_or(Value::Null);
                self.cal.result = Some((calibrated, value));
                self.cal.running = false;
                self.cal.sort = Sort::default();
                self.cal_progress(1.0);
                let status = self.el("cal-status");
                status.set_attribute("data-run-ms", &format!("{:.1}", secs * 1000.0)).ok();
                status.set_text_content(Some(&format!("Done in {secs:.2} s")));
                self.render_calibration();
                self.cal_buttons();
            }
            Output::Invalid { run_id, errors } if run_id == self.cal.run_id => {
                self.cal.running = false;
                self.cal_progress(0.0);
                self.el("cal-status").set_text_content(Some("Calibration refused"));
                self.cal_buttons();
                self.el("cal-errors").set_inner_html(&super::error_list(&errors));
            }
            Output::Failed { message, .. } => {
                self.cal.worker = None;
                self.cal.running = false;
                self.cal.import_batches.clear();
                self.cal_progress(0.0);
                self.el("cal-status").set_text_content(Some("The simulator failed; it was restarted"));
                self.cal_buttons();
                self.el("cal-errors").set_inner_html(&format!("<li>internal error: {}</li>", esc(&message)));
            }
            _ => {}
        }
    }

    fn cal_progress(&self, f: f64) {
        if let Ok(p) = self.el("cal-progress").dyn_into::<web_sys::HtmlProgressElement>() {
            p.set_value(f);
        }
    }

    fn render_calibration(&mut self) {
        let Some((_, c)) = self.cal.result.clone() else { return };
        self.html("cal-results").set_hidden(false);
        self.el("cal-answer").set_inner_html(&format!("<b>Answer:</b> {}", esc(&cal_view::answer(&c))));
        self.el("cal-mape-wrap").set_inner_html(&cal_view::mape_table(&c));
        let n = c["rows"].as_array().map_or(0, Vec::len);
        if self.cal.order.len() != n || self.cal.sort.col.is_none() {
            self.cal.order = (0..n).collect();
        }
        self.el("cal-table").set_inner_html(&cal_view::rows_table(&c, &self.cal.order, &self.cal.sort));
        let charts = cal_view::charts(&c);
        let html: String = charts
            .iter()
            .enumerate()
            .map(|(i, ch)| crate::figure::html(&format!("cal-chart-{i}"), &ch.title, 420, 360))
            .collect();
        self.el("cal-charts").set_inner_html(&html);
        let figures: Vec<Figure> = charts
            .iter()
            .enumerate()
            .filter_map(|(i, ch)| crate::charts::study_figure(&format!("cal-chart-{i}"), ch))
            .collect();
        self.label_figures(&figures);
        self.cal.figures = figures;
        let notes: String = cal_view::warnings(&c)
            .iter()
            .map(|w| format!("<li class=\"warning\">⚠ {}</li>", esc(w)))
            .chain(
                c["notes"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|n| n.as_str())
                    .map(|n| format!("<li>{}</li>", esc(n))),
            )
            .collect();
        self.el("cal-notes").set_inner_html(&notes);
    }

    /// A click in the results: a PNG button or a sortable header.
    pub(super) fn cal_click(&mut self, target: &Element) {
        if let Some(id) = target.get_attribute("data-png") {
            exports::png(&id, &format!("{}-{}.png", self.cal_file_base(), id.trim_start_matches("cal-")));
            return;
        }
        let Some(col) = target
            .closest("th")
            .ok()
            .flatten()
            .and_then(|th| th.get_attribute("data-ccol"))
            .and_then(|c| c.parse::<usize>().ok())
        else {
            return;
        };
        let Some((_, c)) = self.cal.result.clone() else { return };
        self.cal.sort.click(col);
        self.cal.order = cal_view::sorted(&c, col, self.cal.sort.desc);
        self.el("cal-table").set_inner_html(&cal_view::rows_table(&c, &self.cal.order, &self.cal.sort));
    }

    fn cal_file_base(&self) -> String {
        let name = serde_json::from_str::<Value>(&self.editor().value())
            .ok()
            .and_then(|v| v["name"].as_str().map(str::to_string))
            .unwrap_or_else(|| "scenario".into());
        format!("inferscale-calibration-{name}")
    }

    pub(super) fn export_calibration(&self, what: &str) {
        if what == "bundle" {
            if !self.cal.cases.is_empty() {
                exports::download_text(
                    "inferscale-bundle.json",
                    &Bundle::new(self.cal.cases.clone()).json(),
                    "application/json",
                );
            }
            return;
        }
        let Some((r, _)) = &self.cal.result else { return };
        let (text, ext, mime) = match what {
            "json" => (&r.json, "json", "application/json"),
            "csv" => (&r.csv, "csv", "text/csv"),
            _ => (&r.markdown, "md", "text/markdown"),
        };
        exports::download_text(&format!("{}.{ext}", self.cal_file_base()), text, mime);
    }

    pub(super) fn copy_calibration_link(&self) {
        super::copy_link_to(&super::share_hash_for(
            crate::panels::PanelId::Calibration.name(),
            &serde_json::json!({}),
            &self.editor().value(),
        ));
        self.el("cal-status")
            .set_text_content(Some("Link copied: it opens this panel with the scenario; drop the result files again"));
    }
}
