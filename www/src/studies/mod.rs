//! The study panels: each study of the core's registry as a panel (`defs`, built from the core's
//! description of its options) and the panel that runs them over the study workers (`panel`).

#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub mod defs;
#[cfg(target_arch = "wasm32")]
pub mod panel;
