//! The Calibration panel: result files imported and calibrated in workers (`panel`), and what it shows,
//! computed without the DOM (`view`).

#[cfg(target_arch = "wasm32")]
pub mod panel;
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub mod view;
