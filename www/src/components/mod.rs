//! What every panel shares: charts and the figure around each, tables and their sorting, the numbers a field
//! shows and takes, the export bar, and the editor's JSON line marks. Each is pure where it can be, so its
//! tests run natively.

#[cfg(target_arch = "wasm32")]
pub mod charts;
#[cfg(target_arch = "wasm32")]
pub mod exports;
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub mod figure;
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub mod json_lines;
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub mod numbers;
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub mod sort;
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub mod table;
