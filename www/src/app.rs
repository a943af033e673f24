//! The page: one `App` owning the shared page, the scenario editor and every panel, held in an
//! `Rc<RefCell<_>>` that each event closure reaches through a weak reference. The app only routes: a
//! panel's own events to its `Behaviour`, the scenario's to the editor, a worker's answer to the panel that
//! spawned it.

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use serde_json::Value;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{Element, HtmlInputElement, HtmlSelectElement};

use crate::behaviour::{self, Behaviour, Cx};
use crate::calibration::panel::Calibration;
use crate::components::exports;
use crate::components::figure;
use crate::lab::controls::{CONTROLS, Kind, PAIRS};
use crate::lab::editor::{Editor, PRESETS};
use crate::lab::panel::Lab;
use crate::page::{Page, Route, window};
use crate::panels::{LabPanel, PanelId};
use crate::studies::defs::registry;
use crate::studies::panel::Studies;

struct App {
    page: Page,
    editor: Editor,
    lab: Lab,
    study: Studies,
    cal: Calibration,
    findings: crate::findings::Findings,
    /// The panel on screen.
    panel: PanelId,
}

impl App {
    /// Run `f` on panel `id` with the page and the scenario beside it.
    fn with<R>(&mut self, id: PanelId, f: impl FnOnce(&mut dyn Behaviour, &Cx) -> R) -> R {
        let cx = Cx { page: &self.page, editor: &self.editor };
        let panel: &mut dyn Behaviour = match id {
            PanelId::Lab => &mut self.lab,
            PanelId::Study(_) => &mut self.study,
            PanelId::Calibration => &mut self.cal,
            PanelId::Findings => &mut self.findings,
        };
        f(panel, &cx)
    }

    /// Edit the scenario: `f` gets the editor and the page.
    fn edit(&mut self, f: impl FnOnce(&mut Editor, &Page)) {
        f(&mut self.editor, &self.page);
    }

    /// The scenario was replaced (an example, an import, a trace, Undo, a link): the panel on screen hears it.
    fn replaced(&mut self, f: impl FnOnce(&mut Editor, &Page)) {
        self.edit(f);
        self.with(self.panel, |p, cx| p.scenario_replaced(cx));
    }

    /// Show a panel by its name (a link's, the sidebar's); each keeps its inputs and its last result.
    fn show_panel(&mut self, name: &str) {
        let all = registry();
        let shown = all.iter().find(|p| p.name() == name).copied().unwrap_or(&LabPanel);
        self.panel = PanelId::from_name(shown.name());
        for p in &all {
            self.page.html(p.section()).set_hidden(p.section() != shown.section());
        }
        mark_current(&self.page, shown.name());
        let id = self.panel;
        self.with(id, |p, cx| p.show(cx, id));
    }
}

/// One of each kind of panel (the study panel serves every study).
const PANELS: [PanelId; 4] =
    [PanelId::Lab, PanelId::Study(inferscale::study::Kind::ALL[0]), PanelId::Calibration, PanelId::Findings];

/// The sidebar marks the panel on screen.
fn mark_current(page: &Page, name: &str) {
    let Ok(links) = page.doc.query_selector_all("nav [data-panel]") else { return };
    for i in 0..links.length() {
        let Some(a) = links.item(i).and_then(|n| n.dyn_into::<Element>().ok()) else { continue };
        let on = a.get_attribute("data-panel").as_deref() == Some(name);
        a.class_list().toggle_with_force("active", on).ok();
        if on {
            a.set_attribute("aria-current", "page").ok()
        } else {
            a.remove_attribute("aria-current").ok()
        };
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
        let a = app.borrow();
        a.editor.notice(&a.page, &msg, None);
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
    app.borrow().page.keep(onload);
}

/// Wire one listener; the page keeps the closure.
fn on(app: &Rc<RefCell<App>>, id: &str, event: &str, f: impl FnMut(&Rc<RefCell<App>>, web_sys::Event) + 'static) {
    let weak = Rc::downgrade(app);
    let mut f = f;
    let cb = Closure::<dyn FnMut(web_sys::Event)>::new(move |e: web_sys::Event| {
        if let Some(app) = weak.upgrade() {
            f(&app, e);
        }
    });
    let a = app.borrow();
    a.page.el(id).add_event_listener_with_callback(event, cb.as_ref().unchecked_ref()).expect("listener");
    a.page.keep(cb);
}

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
    wire_panels(&app);
    open_shared_link(&app);
}

/// The app, owned by the page (every closure holds a weak reference). Messages to a panel (a worker's
/// answer, a file read) come back through the route, which finds the panel by its id.
fn new_app() -> Rc<RefCell<App>> {
    let app = Rc::new_cyclic(|weak: &Weak<RefCell<App>>| {
        let weak = weak.clone();
        let route: Route = Rc::new(move |to, message| {
            if let Some(app) = weak.upgrade() {
                app.borrow_mut().with(to, |p, cx| behaviour::deliver(p, cx, message));
            }
        });
        RefCell::new(App {
            page: Page::new(route),
            editor: Editor::default(),
            lab: Lab::default(),
            study: Studies::default(),
            cal: Calibration::default(),
            findings: Default::default(),
            panel: PanelId::Lab,
        })
    });
    APP.with(|a| *a.borrow_mut() = Some(app.clone()));
    // The Serving Lab's worker starts with the page, so the first run does not wait for it to load.
    {
        let a = &mut *app.borrow_mut();
        a.lab.spawn_worker(&Cx { page: &a.page, editor: &a.editor });
    }
    app
}

/// The parts of the page generated from registries: the sidebar, the figures, the export bars, the examples.
fn lay_out(app: &Rc<RefCell<App>>) {
    app.borrow().page.el("nav").set_inner_html(&crate::studies::defs::sidebar_html());
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
        let a = &mut *app.borrow_mut();
        a.page.el("lab-charts").set_inner_html(&figures);
        for id in PANELS {
            let w = a.with(id, |p, _| p.wiring());
            let buttons: Vec<(&str, &str)> = w.exports.iter().map(|e| (e.0, e.2)).collect();
            a.page.el(w.export_bar.0).set_inner_html(&exports::bar(w.export_bar.1, &buttons));
        }
    }

    // Presets.
    {
        let a = app.borrow();
        let sel = a.page.el("preset");
        for (name, _) in PRESETS {
            if let Ok(o) = a.page.doc.create_element("option") {
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
        let name = app.borrow().page.el("preset").unchecked_into::<HtmlSelectElement>().value();
        if let Some((_, text)) = PRESETS.iter().find(|p| p.0 == name) {
            app.borrow_mut().replaced(|ed, page| ed.replace_scenario(page, &format!("example \"{name}\""), text));
        }
    });
    on(&app, "undo", "click", |app, _| app.borrow_mut().replaced(|ed, page| ed.undo(page)));
    // Enter in a field must not submit (and reload) the page; the Content-Security-Policy forbids inline
    // handlers, so this is a listener.
    for form in ["controls", "study-params"] {
        on(&app, form, "submit", |_, e| e.prevent_default());
    }
    on(&app, "skip-run", "click", |app, e| {
        // Focus Run without touching the URL (its hash is the shared-link state).
        e.prevent_default();
        app.borrow().page.html("run").focus().ok();
    });
    for (id, ptr, _, label) in CONTROLS {
        // Each control's accessible name is the label its errors use (the visible label wraps a unit, a
        // slider or a tooltip, which made names such as "Mean arrival rate, requests").
        let el = app.borrow().page.el(id);
        el.set_attribute("aria-label", label).ok();
        // The field's bound is the core's: written once, beside its declaration.
        if let Some((lo, hi)) = crate::lab::controls::limits(ptr) {
            el.set_attribute("min", &lo.to_string()).ok();
            el.set_attribute("max", &hi.to_string()).ok();
        }
    }
    for (id, _, kind, _) in CONTROLS {
        let event = if matches!(kind, Kind::Text | Kind::Tagged | Kind::Bool) { "change" } else { "input" };
        let id2 = id.to_string();
        on(&app, id, event, move |app, _| app.borrow_mut().edit(|ed, page| ed.control_changed(page, &id2)));
    }
    for (range, number) in PAIRS {
        let (r2, n2) = (range.to_string(), number.to_string());
        on(&app, range, "input", move |app, _| {
            let v = app.borrow().page.el(&r2).unchecked_into::<HtmlInputElement>().value();
            app.borrow().page.el(&n2).unchecked_into::<HtmlInputElement>().set_value(&v);
            app.borrow_mut().edit(|ed, page| ed.control_changed(page, &n2));
        });
    }
    // A field reformats only once the user has left it.
    // (A focusout can fire inside another handler, when that handler's DOM change removes the focused field:
    // then that handler reformats the controls itself.)
    on(&app, "controls", "focusout", |app, _| {
        let Ok(a) = app.try_borrow() else { return };
        a.editor.sync_controls(&a.page)
    });
    on(&app, "scenario", "input", |app, _| {
        let a = app.borrow();
        a.editor.sync_controls(&a.page);
        a.editor.validate(&a.page);
    });
    // Leaving the editor with JSON that parses applies what was typed in the fields while it did not.
    on(&app, "scenario", "change", |app, _| app.borrow_mut().edit(|ed, page| ed.apply_held(page)));
    on(&app, "scenario", "scroll", |app, _| {
        let a = app.borrow();
        a.page.el("scenario-lines").set_scroll_top(a.editor.area(&a.page).scroll_top());
    });
    on(&app, "errors", "click", |app, e| {
        let Some(t) = e.target().and_then(|t| t.dyn_into::<Element>().ok()) else { return };
        let Some(line) = t.get_attribute("data-line").and_then(|n| n.parse().ok()) else { return };
        let a = app.borrow();
        a.editor.go_to_line(&a.page, line);
    });
    on(&app, "c-trace", "change", |app, e| {
        read_file(app, &e, |a, name, text| a.replaced(|ed, page| ed.upload_trace(page, &name, text)))
    });
    on(&app, "c-session-trace", "change", |app, e| {
        read_file(app, &e, |a, name, text| a.replaced(|ed, page| ed.upload_session_trace(page, &name, text)))
    });
    // One listener serves every generated row.
    for event in ["change", "click"] {
        on(&app, "details", event, move |app, e| {
            let Some(t) = e.target().and_then(|t| t.dyn_into::<Element>().ok()) else { return };
            // Fields commit on change; buttons act on click.
            let is_button = t.has_attribute("data-act");
            if (event == "click") == is_button {
                app.borrow_mut().edit(|ed, page| ed.detail_changed(page, &t));
            }
        });
    }
    on(&app, "c-import", "change", |app, e| {
        read_file(app, &e, |a, name, text| a.replaced(|ed, page| ed.import(page, &name, &text)))
    });
    on(&app, "save-scenario", "click", |app, _| {
        let a = app.borrow();
        let text = a.editor.text(&a.page);
        let name = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| v["name"].as_str().map(str::to_string))
            .unwrap_or_else(|| "scenario".into());
        exports::download_text(&format!("{name}.json"), &text, "application/json");
    });
}

/// A panel's own controls, from its `Wiring`: Run, Cancel, the link, the exports, clicks in its results
/// (and Enter on a sortable header) and the pointer over its figures.
fn wire_panel(app: &Rc<RefCell<App>>, id: PanelId) {
    let w = app.borrow_mut().with(id, |p, _| p.wiring());
    on(app, w.run, "click", move |app, _| app.borrow_mut().with(id, |p, cx| p.run(cx)));
    on(app, w.cancel, "click", move |app, _| app.borrow_mut().with(id, |p, cx| p.cancel(cx)));
    on(app, w.copy_link, "click", move |app, _| app.borrow_mut().with(id, |p, cx| p.copy_link(cx)));
    for &(button, what, _) in w.exports {
        on(app, button, "click", move |app, _| app.borrow_mut().with(id, |p, cx| p.export(cx, what)));
    }
    on(app, w.results, "click", move |app, e| {
        if let Some(t) = e.target().and_then(|t| t.dyn_into::<Element>().ok()) {
            app.borrow_mut().with(id, |p, cx| p.click(cx, &t));
        }
    });
    on(app, w.results, "keydown", move |app, e| {
        let Some(k) = e.dyn_ref::<web_sys::KeyboardEvent>() else { return };
        // A button or a box already clicks on Enter; a header does not.
        let Some(t) = e.target().and_then(|t| t.dyn_into::<Element>().ok()) else { return };
        if k.key() == "Enter" && !matches!(t.tag_name().as_str(), "BUTTON" | "INPUT") {
            app.borrow_mut().with(id, |p, cx| p.click(cx, &t));
        }
    });
    on(app, w.charts, "mousemove", move |app, e| {
        if let Some(m) = e.dyn_ref::<web_sys::MouseEvent>() {
            app.borrow_mut().with(id, |p, cx| cx.page.hover(p.figures(), m));
        }
    });
}

/// The sidebar, and what only one panel has: a study's parameters, Calibration's files and training marks.
fn wire_panels(app: &Rc<RefCell<App>>) {
    for id in PANELS {
        wire_panel(app, id);
    }
    on(app, "nav", "click", |app, e| {
        let Some(t) = e.target().and_then(|t| t.dyn_into::<Element>().ok()) else { return };
        let Some(name) = t.closest("[data-panel]").ok().flatten().and_then(|a| a.get_attribute("data-panel")) else {
            return;
        };
        e.prevent_default();
        app.borrow_mut().show_panel(&name);
    });
    for back in ["study-goto-lab", "cal-goto-lab"] {
        on(app, back, "click", |app, e| {
            e.prevent_default();
            app.borrow_mut().show_panel(PanelId::Lab.name());
        });
    }
    // A study panel's own inputs reach the Serving Lab only through this button (Undo puts the old scenario back).
    on(app, "study-use-in-lab", "click", |app, _| {
        let a = &mut *app.borrow_mut();
        let what = format!("the {} inputs", a.study.title());
        let Some(text) = a.study.take_edits(&Cx { page: &a.page, editor: &a.editor }) else { return };
        a.replaced(|ed, page| ed.replace_scenario(page, &what, &text));
        a.page.el("study-status").set_text_content(Some(
            "The Serving Lab now runs this panel's inputs (Undo there puts its scenario back).",
        ));
        // The button hid with the difference it offered to apply: the keyboard lands on what it did.
        a.page.focus_if_lost(&["study-use-in-lab"], "study-status");
    });
    on(app, "study-reset-inputs", "click", |app, _| {
        let a = &mut *app.borrow_mut();
        a.study.reset_edits(&Cx { page: &a.page, editor: &a.editor });
    });
    on(app, "study-params", "change", |app, e| {
        if let Some(t) = e.target().and_then(|t| t.dyn_into::<Element>().ok()) {
            let a = &mut *app.borrow_mut();
            a.study.study_param_changed(&Cx { page: &a.page, editor: &a.editor }, &t);
        }
    });
    wire_calibration_files(app);
}

/// Calibration's result files (chosen or dropped), Clear and the training marks.
fn wire_calibration_files(app: &Rc<RefCell<App>>) {
    fn cal(app: &Rc<RefCell<App>>, f: impl FnOnce(&mut Calibration, &Cx)) {
        let a = &mut *app.borrow_mut();
        f(&mut a.cal, &Cx { page: &a.page, editor: &a.editor });
    }
    on(app, "cal-files", "change", |app, e| {
        let Some(input) = e.target().and_then(|t| t.dyn_into::<HtmlInputElement>().ok()) else { return };
        if let Some(files) = input.files() {
            cal(app, |c, cx| c.cal_files(cx, files));
        }
        input.set_value("");
    });
    // A drop zone: dragover must be cancelled for the drop to reach the page instead of opening the file.
    on(app, "cal-drop", "dragover", |_, e| e.prevent_default());
    on(app, "cal-drop", "drop", |app, e| {
        e.prevent_default();
        if let Some(files) = e.dyn_ref::<web_sys::DragEvent>().and_then(|d| d.data_transfer()).and_then(|t| t.files()) {
            cal(app, |c, cx| c.cal_files(cx, files));
        }
    });
    on(app, "cal-clear", "click", |app, _| cal(app, |c, cx| c.cal_clear(cx)));
    // The gate's tolerance is checked as it is typed: its mark goes as soon as it is fixed.
    on(app, "cal-tolerance", "input", |app, _| {
        cal(app, |c, cx| {
            let _ = c.cal_tolerance(cx);
        })
    });
    on(app, "cal-bundle", "click", |app, _| cal(app, |c, cx| c.export(cx, "bundle")));
    on(app, "cal-cases", "change", |app, e| {
        if let Some(t) = e.target().and_then(|t| t.dyn_into::<Element>().ok()) {
            cal(app, |c, cx| c.cal_mark(cx, &t));
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
            app.borrow_mut().replaced(|ed, page| ed.load_text(page, &text));
            app.borrow_mut().show_panel(&p);
            // A calibration needs the user's result files, which links do not carry.
            if PanelId::from_name(&p) != PanelId::Calibration {
                let id = PanelId::from_name(&p);
                app.borrow_mut().with(id, |p, cx| p.run(cx));
            }
        }
        (Some(text), None) => {
            app.borrow_mut().replaced(|ed, page| ed.load_text(page, &text));
            app.borrow_mut().with(PanelId::Lab, |p, cx| p.run(cx));
        }
        (None, _) => app.borrow_mut().replaced(|ed, page| ed.load_text(page, PRESETS[0].1)),
    }
}
