//! The Serving Lab: the scenario every panel shares (its editor, controls and generated rows) and the panel
//! that runs it and shows the results.

#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub mod controls;
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub mod details;
#[cfg(target_arch = "wasm32")]
pub mod editor;
#[cfg(target_arch = "wasm32")]
pub mod panel;
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub mod variant;
