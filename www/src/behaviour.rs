//! What the page asks of every panel — show, run, cancel, take a worker's answer, export, copy its link, react
//! to a click in its results, read out its figures — as one trait. Each implementation (`lab::Lab`,
//! `study_panel::Studies`, `calibration::Calibration`) owns its state; the app only routes events to the
//! panel they belong to.

use inferscale_worker::Output;
use web_sys::Element;

use crate::components::figure::Figure;
use crate::lab::editor::Editor;
use crate::page::{Message, Page};
use crate::panels::PanelId;

/// What a panel works with besides its own state: the page and the scenario every panel shares.
#[derive(Clone, Copy)]
pub struct Cx<'a> {
    pub page: &'a Page,
    pub editor: &'a Editor,
}

/// The ids of a panel's own elements, which the app wires to the trait's methods.
pub struct Wiring {
    pub run: &'static str,
    pub cancel: &'static str,
    pub copy_link: &'static str,
    /// Clicks (and Enter) in it go to [`Behaviour::click`].
    pub results: &'static str,
    /// Its figures' container: the pointer over it reads out [`Behaviour::figures`].
    pub charts: &'static str,
    /// The export bar: (its container's id, its title).
    pub export_bar: (&'static str, &'static str),
    /// Its buttons: (id, what for [`Behaviour::export`], label).
    pub exports: &'static [(&'static str, &'static str, &'static str)],
}

pub trait Behaviour {
    fn wiring(&self) -> &'static Wiring;
    /// It came on screen as `id` (the study panel serves every study).
    fn show(&mut self, cx: &Cx, id: PanelId);
    fn run(&mut self, cx: &Cx);
    fn cancel(&mut self, cx: &Cx);
    /// An answer of one of its workers.
    fn on_output(&mut self, cx: &Cx, worker: usize, out: Output);
    /// A message it sent itself through [`Page::sender`] (a file's text, …).
    fn on_message(&mut self, _cx: &Cx, _message: Message) {}
    fn export(&self, cx: &Cx, what: &str);
    fn copy_link(&self, cx: &Cx);
    /// A click (or Enter) on `target` in its results: a sort header, a filter, a PNG button, …
    fn click(&mut self, cx: &Cx, target: &Element);
    /// Its figures on screen, for the pointer's read-out.
    fn figures(&self) -> &[Figure];
    /// The shared scenario was replaced (an example, an import, Undo, a link).
    fn scenario_replaced(&mut self, _cx: &Cx) {}
}

/// Hand `message` to `panel`: a worker's answer goes to `on_output`, anything else to `on_message`.
pub fn deliver(panel: &mut dyn Behaviour, cx: &Cx, message: Message) {
    match message.downcast::<(usize, Output)>() {
        Ok(answer) => panel.on_output(cx, answer.0, answer.1),
        Err(other) => panel.on_message(cx, other),
    }
}
