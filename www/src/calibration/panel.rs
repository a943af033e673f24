//! The Calibration panel: result files read in a worker (`inferscale import`'s parser), the cases shown with
//! their training marks, calibration run in a worker of its own with progress and Cancel, then the answer,
//! the held-out error, the measured-vs-predicted charts, every case's rows and the exports. The JSON export
//! is `inferscale calibrate`'s byte for byte; the views are `view`'s.

use inferscale::truth::{Bundle, Case, default_training};
use inferscale_worker::{Calibrated, Imported, Input, Output};
use serde_json::Value;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{Element, HtmlInputElement};

use crate::behaviour::{Behaviour, Cx, Wiring};
use crate::calibration::view as cal_view;
use crate::components::exports;
use crate::components::figure::Figure;
use crate::components::sort::Sort;
use crate::components::table::esc;
use crate::page::{Message, copy_link_to, error_list, now_ms, share_hash_for};
use crate::panels::PanelId;
use crate::workers::Pool;

/// An import's files by position: (name, text) once read.
type Texts = RefCell<Vec<Option<(String, String)>>>;

/// File `k` of an import, read (`text`) or not: the reader's answer, back to the panel.
struct FileRead {
    texts: Rc<Texts>,
    left: Rc<Cell<usize>>,
    k: usize,
    name: String,
    text: Option<String>,
}

#[derive(Default)]
pub struct Calibration {
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

impl Calibration {
    /// Files being read, or sent to the worker and not yet answered.
    pub fn importing(&self) -> usize {
        self.import_batches.iter().sum()
    }
}

/// The largest result file the panel reads, bytes (the CLI's limit).
const MAX_RESULT_BYTES: f64 = 256e6;

impl Calibration {
    fn cal_worker(&mut self, cx: &Cx) -> &Pool {
        if self.worker.is_none() {
            self.worker = Some(cx.page.pool(PanelId::Calibration, 1));
        }
        self.worker.as_ref().expect("spawned")
    }

    /// Files chosen or dropped together are read, then sent to the worker as one import in the order they
    /// were given — the order `inferscale import` lists their cases in. (Sent as each read finished, a small
    /// file overtook a larger one and the table's order depended on timing.)
    pub fn cal_files(&mut self, cx: &Cx, files: web_sys::FileList) {
        let mut chosen = Vec::new();
        for i in 0..files.length() {
            let Some(file) = files.get(i) else { continue };
            let name = file.name();
            if file.size() > MAX_RESULT_BYTES {
                self.import_errors.push(format!(
                    "{name}: {:.0} MB, over the limit of {} MB for a result file",
                    file.size() / 1e6,
                    MAX_RESULT_BYTES / 1e6
                ));
            } else if self.cases.iter().any(|c| c.source.file == name) {
                self.import_errors.push(format!("{name}: already imported (its cases are in the table)"));
            } else if chosen.iter().any(|f: &web_sys::File| f.name() == name) {
                self.import_errors.push(format!("{name}: chosen twice; read once"));
            } else {
                chosen.push(file);
            }
        }
        if !chosen.is_empty() {
            self.read_then_import(cx, chosen);
        }
        self.render_cases(cx);
    }

    /// Read every file (off the main thread's critical path: `FileReader` is asynchronous), then send the
    /// texts that could be read, in order, as one import.
    fn read_then_import(&mut self, cx: &Cx, files: Vec<web_sys::File>) {
        let texts: Rc<Texts> = Rc::new(RefCell::new(vec![None; files.len()]));
        let left = Rc::new(Cell::new(files.len()));
        self.import_batches.push_back(files.len());
        for (k, file) in files.into_iter().enumerate() {
            let name = file.name();
            let Some(reader) = web_sys::FileReader::new().ok() else {
                self.file_read(cx, &texts, &left, k, &name, None);
                continue;
            };
            let (texts2, left2, r2, name2) = (texts.clone(), left.clone(), reader.clone(), name.clone());
            let send = cx.page.sender(PanelId::Calibration);
            // On load or on error: keep what was read (nothing, for an error).
            let done = Closure::<dyn FnMut(web_sys::Event)>::new(move |_e: web_sys::Event| {
                let text = r2.result().ok().and_then(|v| v.as_string());
                let (texts, left, name) = (texts2.clone(), left2.clone(), name2.clone());
                send(Box::new(FileRead { texts, left, k, name, text }));
            });
            reader.set_onload(Some(done.as_ref().unchecked_ref()));
            reader.set_onerror(Some(done.as_ref().unchecked_ref()));
            if reader.read_as_text(&file).is_err() {
                self.file_read(cx, &texts, &left, k, &name, None);
            }
            cx.page.keep(done);
        }
    }

    /// File `k` of an import was read (`text`) or could not be; once every file is in, the import goes to
    /// the worker.
    fn file_read(&mut self, cx: &Cx, texts: &Texts, left: &Cell<usize>, k: usize, name: &str, text: Option<String>) {
        match text {
            Some(t) => texts.borrow_mut()[k] = Some((name.to_string(), t)),
            None => self.import_errors.push(format!("{name}: the browser could not read the file")),
        }
        left.set(left.get() - 1);
        if left.get() == 0 {
            let run_id = self.run_id;
            let files: Vec<(String, String)> = texts.borrow_mut().drain(..).flatten().collect();
            self.cal_worker(cx).send(0, Input::Import { run_id, files });
        }
    }

    /// A file's runs came back: their cases join the table (the default split is made again over them all).
    fn cal_imported(&mut self, cx: &Cx, imported: Imported) {
        self.import_batches.pop_front();
        self.import_errors.extend(imported.errors);
        if let Some(b) = imported.bundle_json.as_deref().and_then(|j| Bundle::parse(j).ok()) {
            for c in b.cases {
                if self.cases.iter().any(|x| x.id == c.id) {
                    self.import_errors
                        .push(format!("{}: a case of that id is already in the table; this one was left out", c.id));
                } else {
                    self.cases.push(c);
                }
            }
            self.train = default_training(&self.cases);
        }
        self.render_cases(cx);
    }

    /// "Clear cases": the cases go, and with them the answer computed on them (it answered for cases no longer
    /// in the table); a calibration still running on them is cancelled.
    pub fn cal_clear(&mut self, cx: &Cx) {
        self.cancel(cx);
        self.cases.clear();
        self.train.clear();
        self.import_errors.clear();
        self.result = None;
        self.figures.clear();
        (self.order, self.sort) = (Vec::new(), Sort::default());
        cx.page.html("cal-results").set_hidden(true);
        for id in ["cal-answer", "cal-mape-wrap", "cal-table", "cal-charts"] {
            cx.page.el(id).set_inner_html("");
        }
        self.render_cases(cx);
    }

    /// A training checkbox changed.
    pub fn cal_mark(&mut self, cx: &Cx, target: &Element) {
        let Some(i) = target.get_attribute("data-case").and_then(|s| s.parse::<usize>().ok()) else { return };
        let Ok(input) = target.clone().dyn_into::<HtmlInputElement>() else { return };
        if let Some(t) = self.train.get_mut(i) {
            *t = input.checked();
        }
        if let Some(tr) = target.closest("tr").ok().flatten() {
            tr.set_attribute("data-set", if input.checked() { "training" } else { "held-out" }).ok();
        }
        self.cal_buttons(cx);
    }

    fn render_cases(&self, cx: &Cx) {
        let c = self;
        cx.page.html("cal-how").set_hidden(!c.cases.is_empty());
        cx.page.el("cal-how").set_text_content(Some(cal_view::HOW_TO));
        let errors: String = c.import_errors.iter().map(|e| format!("<li>{}</li>", esc(e))).collect();
        cx.page.el("cal-import-errors").set_inner_html(&errors);
        cx.page.el("cal-cases").set_inner_html(&if c.cases.is_empty() {
            String::new()
        } else {
            cal_view::cases_table(&c.cases, &c.train)
        });
        let shown = cx.page.el("cal-status").text_content().unwrap_or_default();
        let status = if c.importing() > 0 {
            format!("Reading {} file(s)…", c.importing())
        } else if c.running {
            "Running…".into()
        } else if shown.starts_with("Reading") || shown == "Ready" {
            format!("{} case(s) imported", c.cases.len())
        } else {
            shown
        };
        cx.page.el("cal-status").set_text_content(Some(&status));
        self.cal_buttons(cx);
    }

    /// Why Run is not possible now, if it is not.
    fn cal_blocked(&self) -> Option<&'static str> {
        let c = self;
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

    fn cal_buttons(&self, cx: &Cx) {
        let set = |id: &str, disabled: bool| {
            if let Ok(b) = cx.page.el(id).dyn_into::<web_sys::HtmlButtonElement>() {
                b.set_disabled(disabled);
            }
        };
        let blocked = self.cal_blocked();
        set("cal-run", self.running || blocked.is_some());
        set("cal-cancel", !self.running);
        set("cal-clear", self.running || self.cases.is_empty());
        set("cal-bundle", self.cases.is_empty());
        let why = match (blocked, self.cases.is_empty()) {
            (Some(w), false) => format!("<li>Cannot run: {w}</li>"),
            _ => String::new(),
        };
        cx.page.el("cal-errors").set_inner_html(&why);
    }

    /// The knobs checked under "Fit" (`auto` among them: choose by leave-one-out), as the core lists them.
    fn cal_extras(&self, cx: &Cx) -> Vec<String> {
        (inferscale::catalog::catalog().calibration_knobs.into_iter())
            .filter(|x| {
                cx.page
                    .doc
                    .get_element_by_id(&format!("cal-fit-{x}"))
                    .and_then(|e| e.dyn_into::<HtmlInputElement>().ok())
                    .is_some_and(|i| i.checked())
            })
            .collect()
    }

    /// The gate's tolerance as typed, marked at its field: None when empty (the default); an error when it is
    /// not a number or outside the core's range (the check `calibrate --tolerance-pct` makes).
    pub fn cal_tolerance(&self, cx: &Cx) -> Result<Option<f64>, String> {
        let input = cx.page.doc.get_element_by_id("cal-tolerance").and_then(|e| e.dyn_into::<HtmlInputElement>().ok());
        let text = input.as_ref().map(|i| i.value()).unwrap_or_default();
        let text = text.trim();
        let read = match text.parse::<f64>() {
            _ if text.is_empty() => Ok(None),
            Ok(t) => inferscale::truth::Options::parse(&[], Some(t)).map(|_| Some(t)).map_err(|(_, why)| why),
            Err(_) => Err(format!("`{text}` is not a number")),
        };
        if let Some(i) = &input {
            crate::page::mark_field(i, read.as_ref().err().map(String::as_str));
        }
        read.map_err(|why| format!("Gate tolerance (%): {why}"))
    }

    fn cal_progress(&self, cx: &Cx, f: f64) {
        if let Ok(p) = cx.page.el("cal-progress").dyn_into::<web_sys::HtmlProgressElement>() {
            p.set_value(f);
        }
    }

    fn render_calibration(&mut self, cx: &Cx) {
        let Some((_, c)) = self.result.clone() else { return };
        cx.page.html("cal-results").set_hidden(false);
        cx.page.el("cal-answer").set_inner_html(&format!("<b>Answer:</b> {}", esc(&cal_view::answer(&c))));
        let tables = cal_view::headline_table(&c) + &cal_view::mape_table(&c) + &cal_view::saturated_table(&c);
        cx.page.el("cal-mape-wrap").set_inner_html(&tables);
        let n = c["rows"].as_array().map_or(0, Vec::len);
        if self.order.len() != n || self.sort.col.is_none() {
            self.order = (0..n).collect();
        }
        cx.page.el("cal-table").set_inner_html(&cal_view::rows_table(&c, &self.order, &self.sort));
        let charts = cal_view::charts(&c);
        let html: String = charts
            .iter()
            .enumerate()
            .map(|(i, ch)| crate::components::figure::html(&format!("cal-chart-{i}"), &ch.title, 420, 360))
            .collect();
        cx.page.el("cal-charts").set_inner_html(&html);
        let figures: Vec<Figure> = charts
            .iter()
            .enumerate()
            .filter_map(|(i, ch)| crate::components::charts::measured_vs_predicted(&format!("cal-chart-{i}"), ch))
            .collect();
        cx.page.label_figures(&figures);
        self.figures = figures;
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
        cx.page.el("cal-notes").set_inner_html(&notes);
    }

    fn cal_file_base(&self, cx: &Cx) -> String {
        let name = serde_json::from_str::<Value>(&cx.editor.text(cx.page))
            .ok()
            .and_then(|v| v["name"].as_str().map(str::to_string))
            .unwrap_or_else(|| "scenario".into());
        format!("inferscale-calibration-{name}")
    }
}

impl Behaviour for Calibration {
    fn wiring(&self) -> &'static Wiring {
        &Wiring {
            run: "cal-run",
            cancel: "cal-cancel",
            copy_link: "cal-copy-link",
            results: "cal-results",
            charts: "cal-charts",
            export_bar: ("cal-exports", "Calibration exports"),
            exports: &[("cx-json", "json", "JSON"), ("cx-csv", "csv", "CSV"), ("cx-md", "md", "Markdown")],
        }
    }

    /// The panel came on screen: its scenario line, its cases and its last result.
    fn show(&mut self, cx: &Cx, _id: PanelId) {
        let text = cx.editor.text(cx.page);
        let line = match inferscale::scenario::parse(&text) {
            Ok(s) => {
                let model = s.model.preset.clone().unwrap_or_else(|| "custom model".into());
                let device = s.hardware.device.clone().unwrap_or_else(|| "custom device".into());
                format!("{}: {model} on {device}, TP {}, {} replica(s)", s.name, s.hardware.tp, s.cluster.replicas)
            }
            Err(_) => "the Serving Lab's scenario does not parse: fix it there first".into(),
        };
        cx.page.el("cal-scenario").set_text_content(Some(&line));
        self.render_cases(cx);
        if self.result.is_some() {
            self.render_calibration(cx);
        }
    }

    fn run(&mut self, cx: &Cx) {
        if self.running || self.cal_blocked().is_some() {
            return;
        }
        let scenario = cx.editor.scenario_text(cx.page);
        if let Err(e) = inferscale::scenario::parse(&scenario) {
            cx.page
                .el("cal-errors")
                .set_inner_html(&format!("<li>Fix the Serving Lab's scenario first: {}</li>", esc(&e.to_string())));
            return;
        }
        let train: Vec<String> =
            self.cases.iter().zip(&self.train).filter(|(_, t)| **t).map(|(c, _)| c.id.clone()).collect();
        let bundle_json = Bundle::new(self.cases.clone()).json();
        self.run_id += 1;
        self.running = true;
        self.started_ms = now_ms();
        let run_id = self.run_id;
        let fit = self.cal_extras(cx);
        let tolerance_pct = match self.cal_tolerance(cx) {
            Ok(t) => t,
            Err(why) => {
                (self.running, self.run_id) = (false, self.run_id - 1);
                cx.page.el("cal-errors").set_inner_html(&format!("<li>{}</li>", esc(&why)));
                return;
            }
        };
        let input = Input::Calibrate { run_id, bundle_json, scenario_json: scenario, train, fit, tolerance_pct };
        self.cal_worker(cx).send(0, input);
        self.cal_progress(cx, 0.0);
        cx.page.el("cal-status").set_text_content(Some("Running…"));
        self.cal_buttons(cx);
    }

    /// Cancel: the worker is terminated at once; a fresh one takes the next import or run.
    fn cancel(&mut self, cx: &Cx) {
        if !self.running {
            return;
        }
        self.worker = None;
        self.running = false;
        self.import_batches.clear();
        self.cal_progress(cx, 0.0);
        cx.page.el("cal-status").set_text_content(Some("Cancelled (the last result stays on screen)"));
        self.cal_buttons(cx);
    }

    fn on_output(&mut self, cx: &Cx, _worker: usize, out: Output) {
        match out {
            Output::Imported { imported, .. } => self.cal_imported(cx, imported),
            Output::Progress { run_id, done, expected } if run_id == self.run_id && self.running => {
                let f = if expected > 0 { (done as f64 / expected as f64).min(1.0) } else { 0.0 };
                self.cal_progress(cx, f);
                let elapsed = (now_ms() - self.started_ms) / 1000.0;
                let left =
                    if f > 0.02 { format!(", about {:.0} s left", elapsed * (1.0 - f) / f) } else { String::new() };
                cx.page
                    .el("cal-status")
                    .set_text_content(Some(&format!("Running: {done} of about {expected} simulations{left}")));
            }
            Output::Calibrated { run_id, calibrated } if run_id == self.run_id => {
                let secs = (now_ms() - self.started_ms) / 1000.0;
                let value = serde_json::from_str::<Value>(&calibrated.json).unwrap_or(Value::Null);
                self.result = Some((calibrated, value));
                self.running = false;
                self.sort = Sort::default();
                self.cal_progress(cx, 1.0);
                let status = cx.page.el("cal-status");
                status.set_attribute("data-run-ms", &format!("{:.1}", secs * 1000.0)).ok();
                status.set_text_content(Some(&format!("Done in {secs:.2} s")));
                self.render_calibration(cx);
                self.cal_buttons(cx);
            }
            Output::Invalid { run_id, errors } if run_id == self.run_id => {
                self.running = false;
                self.cal_progress(cx, 0.0);
                cx.page.el("cal-status").set_text_content(Some("Calibration refused"));
                self.cal_buttons(cx);
                cx.page.el("cal-errors").set_inner_html(&error_list(&errors));
            }
            Output::Failed { message, .. } => {
                self.worker = None;
                self.running = false;
                self.import_batches.clear();
                self.cal_progress(cx, 0.0);
                cx.page.el("cal-status").set_text_content(Some("The simulator failed; it was restarted"));
                self.cal_buttons(cx);
                cx.page.el("cal-errors").set_inner_html(&format!("<li>internal error: {}</li>", esc(&message)));
            }
            _ => {}
        }
    }

    fn on_message(&mut self, cx: &Cx, message: Message) {
        if let Ok(f) = message.downcast::<FileRead>() {
            self.file_read(cx, &f.texts, &f.left, f.k, &f.name, f.text);
        }
    }

    fn export(&self, cx: &Cx, what: &str) {
        if what == "bundle" {
            if !self.cases.is_empty() {
                exports::download_text(
                    "inferscale-bundle.json",
                    &Bundle::new(self.cases.clone()).json(),
                    "application/json",
                );
            }
            return;
        }
        let Some((r, _)) = &self.result else { return };
        let (text, ext, mime) = match what {
            "json" => (&r.json, "json", "application/json"),
            "csv" => (&r.csv, "csv", "text/csv"),
            _ => (&r.markdown, "md", "text/markdown"),
        };
        exports::download_text(&format!("{}.{ext}", self.cal_file_base(cx)), text, mime);
    }

    fn copy_link(&self, cx: &Cx) {
        copy_link_to(&share_hash_for(
            crate::panels::PanelId::Calibration.name(),
            &serde_json::json!({}),
            &cx.editor.text(cx.page),
        ));
        cx.page
            .el("cal-status")
            .set_text_content(Some("Link copied: it opens this panel with the scenario; drop the result files again"));
    }

    /// A click in the results: a PNG button or a sortable header.
    fn click(&mut self, cx: &Cx, target: &Element) {
        if let Some(id) = target.get_attribute("data-png") {
            exports::png(&id, &format!("{}-{}.png", self.cal_file_base(cx), id.trim_start_matches("cal-")));
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
        let Some((_, c)) = self.result.clone() else { return };
        self.sort.click(col);
        self.order = cal_view::sorted(&c, col, self.sort.desc);
        cx.page.el("cal-table").set_inner_html(&cal_view::rows_table(&c, &self.order, &self.sort));
    }

    fn figures(&self) -> &[Figure] {
        &self.figures
    }
}
