//! What every panel shares of the page: its elements by id, the listeners it keeps, the way a worker's
//! answer or a file's text finds its panel later, the figures' hover and labels, and shared links. It knows
//! no panel: the app gives it the route to them.

use std::any::Any;
use std::cell::RefCell;
use std::rc::Rc;

use inferscale_worker::Output;
use serde_json::Value;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{Document, Element, HtmlCanvasElement, HtmlElement};

use crate::components::figure::Figure;
use crate::components::table::esc;
use crate::panels::PanelId;
use crate::workers::Pool;

/// A message to a panel, delivered once the page is free: a worker's answer `(worker, Output)` or what the
/// panel itself asked for (a file's text).
pub type Message = Box<dyn Any>;

/// The app's way to hand a panel its message.
pub type Route = Rc<dyn Fn(PanelId, Message)>;

/// An event closure.
pub type Listener = Closure<dyn FnMut(web_sys::Event)>;

pub fn window() -> web_sys::Window {
    web_sys::window().expect("a window")
}

pub fn now_ms() -> f64 {
    window().performance().map(|p| p.now()).unwrap_or(0.0)
}

pub struct Page {
    pub doc: Document,
    route: Route,
    /// Every event closure, kept for the page's lifetime (never leaked with `forget`).
    listeners: RefCell<Vec<Listener>>,
}

impl Page {
    pub fn new(route: Route) -> Page {
        let doc = window().document().expect("a document");
        Page { doc, route, listeners: RefCell::new(Vec::new()) }
    }

    pub fn el(&self, id: &str) -> Element {
        self.doc.get_element_by_id(id).unwrap_or_else(|| panic!("#{id} missing from index.html"))
    }

    pub fn html(&self, id: &str) -> HtmlElement {
        self.el(id).dyn_into().expect("an HTML element")
    }

    /// The status line beside the Serving Lab's Run.
    pub fn set_status(&self, s: &str) {
        self.el("status").set_text_content(Some(s));
    }

    /// Keep an event closure alive as long as the page.
    pub fn keep(&self, c: Listener) {
        self.listeners.borrow_mut().push(c);
    }

    /// A sender of messages to panel `to`, for a callback that fires later.
    pub fn sender(&self, to: PanelId) -> impl Fn(Message) + Clone + 'static {
        let route = self.route.clone();
        move |m| route(to, m)
    }

    /// `n` fresh simulator workers whose answers reach panel `to` as `(worker, Output)`.
    pub fn pool(&self, to: PanelId, n: usize) -> Pool {
        let send = self.sender(to);
        Pool::spawn(n, move |w: usize, out: Output| send(Box::new((w, out))))
    }

    /// The pointer's read-out on the figure under it, among `figures`.
    pub fn hover(&self, figures: &[Figure], ev: &web_sys::MouseEvent) {
        let Some(canvas) = ev.target().and_then(|t| t.dyn_into::<HtmlCanvasElement>().ok()) else { return };
        let Some(f) = figures.iter().find(|f| f.id == canvas.id()) else { return };
        let scale = canvas.width() as f64 / canvas.client_width().max(1) as f64;
        let text = f.read_out(((ev.offset_x() as f64) * scale) as i32, ((ev.offset_y() as f64) * scale) as i32);
        self.el(&format!("hover-{}", f.id)).set_text_content(Some(&text));
    }

    /// Move the keyboard focus to `to` when an action left it nowhere — on the page itself, or on one of `from`
    /// (the control just used, now disabled or replaced) — so a keyboard user lands on what the action
    /// produced; a field the user moved to meanwhile keeps it.
    pub fn focus_if_lost(&self, from: &[&str], to: &str) {
        let lost = match self.doc.active_element() {
            None => true,
            Some(a) => a.tag_name() == "BODY" || from.contains(&a.id().as_str()),
        };
        if lost && let Some(el) = self.doc.get_element_by_id(to) {
            let _ = el.dyn_into::<HtmlElement>().map(|h| h.focus());
        }
    }

    /// Give each drawn figure its accessible name and its data table.
    pub fn label_figures(&self, figures: &[Figure]) {
        for f in figures {
            self.el(&f.id).set_attribute("aria-label", &f.summary).ok();
            self.el(&format!("data-{}", f.id)).set_inner_html(&f.table());
        }
    }
}

pub fn set_disabled(el: &Element, disabled: bool) {
    if disabled {
        el.set_attribute("disabled", "").ok()
    } else {
        el.remove_attribute("disabled").ok()
    };
}

/// The validator's errors as the study panels list them.
pub fn error_list(errors: &[(String, String)]) -> String {
    errors.iter().map(|(p, m)| format!("<li><code>{}</code>: {}</li>", esc(p), esc(m))).collect()
}

/// Mark a field invalid or valid, for sight and for screen readers: the message is shown right after the
/// field (and is its description), and goes away when the field is fixed.
pub fn mark_field(el: &Element, error: Option<&str>) {
    el.class_list().toggle_with_force("invalid", error.is_some()).ok();
    el.set_attribute("aria-invalid", if error.is_some() { "true" } else { "false" }).ok();
    say_at(el, "field-msg", "msg", error);
}

/// A note about a valid value (a max that cuts the mean) after the field, and in its description.
pub fn note_field(el: &Element, note: Option<&str>) {
    say_at(el, "field-note", "note", note);
}

/// Text of `class` right after the field (after a slider + number pair, not between them), or none.
fn say_at(el: &Element, class: &str, prefix: &str, text: Option<&str>) {
    let anchor = el.parent_element().filter(|p| p.class_list().contains("pair")).unwrap_or_else(|| el.clone());
    let mut next = anchor.next_element_sibling();
    while let Some(n) = next.clone().filter(|n| !n.class_list().contains(class)) {
        let said = n.class_list().contains("field-msg") || n.class_list().contains("field-note");
        next = if said { n.next_element_sibling() } else { None };
    }
    let key =
        if el.id().is_empty() { el.get_attribute("data-ptr").unwrap_or_default().replace('/', "-") } else { el.id() };
    let id = format!("{prefix}-{key}");
    let described = el.get_attribute("aria-describedby").unwrap_or_default();
    let others: Vec<&str> = described.split_whitespace().filter(|d| *d != id).collect();
    match (text, next) {
        (Some(m), Some(n)) => n.set_text_content(Some(m)),
        (Some(m), None) => {
            let Some(doc) = el.owner_document() else { return };
            let Ok(n) = doc.create_element("span") else { return };
            n.set_class_name(class);
            n.set_attribute("role", "status").ok();
            n.set_text_content(Some(m));
            n.set_id(&id);
            el.set_attribute("aria-describedby", &[others, vec![id.as_str()]].concat().join(" ")).ok();
            anchor.insert_adjacent_element("afterend", &n).ok();
        }
        (None, Some(n)) => {
            n.remove();
            if others.is_empty() {
                el.remove_attribute("aria-describedby").ok();
            } else {
                el.set_attribute("aria-describedby", &others.join(" ")).ok();
            }
        }
        (None, None) => {}
    }
}

/// Put `hash` in the URL and copy the whole link.
pub fn copy_link_to(hash: &str) {
    let _ = window().location().set_hash(hash);
    let href = window().location().href().unwrap_or_default();
    let _ = window().navigator().clipboard().write_text(&href);
}

pub fn share_hash(scenario: &str) -> String {
    let compact =
        serde_json::from_str::<Value>(scenario).map(|v| v.to_string()).unwrap_or_else(|_| scenario.to_string());
    format!("scenario={}", String::from(js_sys::encode_uri_component(&compact)))
}

/// A link to a panel with its options and the scenario: `#panel=NAME&params=…&scenario=…` (the Serving Lab's
/// is `#scenario=…`).
pub fn share_hash_for(panel: &str, options: &Value, scenario: &str) -> String {
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
