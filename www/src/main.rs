//! InferScale Lab: the page. The simulator runs in a Web Worker (gloo-worker); this thread only edits the
//! scenario, validates it (fast), sends it, and draws what comes back, so it never blocks.
//!
//! The app's shell is at the top (`app`: start and wiring; `page`: the DOM; `panels` and `behaviour`: what a
//! panel is; `workers`); each panel has its folder (`lab`, `studies`, `calibration`) or file (`findings`), and
//! what they share is in `components`. Natively only the pure parts build, for their tests.

#[cfg(target_arch = "wasm32")]
mod app;
#[cfg(target_arch = "wasm32")]
mod behaviour;
mod calibration;
mod components;
#[cfg(target_arch = "wasm32")]
mod findings;
mod lab;
#[cfg(target_arch = "wasm32")]
mod page;
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
mod panels;
mod studies;
#[cfg(target_arch = "wasm32")]
mod workers;

#[cfg(target_arch = "wasm32")]
fn main() {
    app::start();
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("the lab runs in a browser: build it with Trunk (see README)");
}
