//! InferScale Lab: the page. The simulator runs in a Web Worker (gloo-worker); this thread only edits the
//! scenario, validates it (fast), sends it, and draws what comes back, so it never blocks.

#[cfg(target_arch = "wasm32")]
mod app;
#[cfg(target_arch = "wasm32")]
mod behaviour;
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
mod cal_view;
#[cfg(target_arch = "wasm32")]
mod calibration;
#[cfg(target_arch = "wasm32")]
mod editor;
#[cfg(target_arch = "wasm32")]
mod findings;
#[cfg(target_arch = "wasm32")]
mod lab;
#[cfg(target_arch = "wasm32")]
mod page;
#[cfg(target_arch = "wasm32")]
mod study_panel;

#[cfg(target_arch = "wasm32")]
mod charts;
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
mod controls;
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
mod details;
#[cfg(target_arch = "wasm32")]
mod exports;
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
mod figure;
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
mod json_lines;
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
mod numbers;
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
mod panels;
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
mod sort;
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
mod study_defs;
#[cfg(target_arch = "wasm32")]
mod workers;
// Used by the wasm app; natively only its tests run.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
mod table;
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
mod variant;

#[cfg(target_arch = "wasm32")]
fn main() {
    app::start();
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("the lab runs in a browser: build it with Trunk (see README)");
}
