//! The one integration-test binary. Modules:
//! - `closed_forms`: the engine against M/D/1, M/G/1 (Pollaczek–Khinchine), M/M/1 and M/M/c (Erlang C), and
//!   sustained capacity against μ·c.
//! - `capacity`: the stability test and sustained capacity in each of its consumers.
//! - `audits`: Little's law, conservation and KV invariants on every shipped scenario.
//! - `determinism`: same seed → identical bytes; seeds differ; common random numbers across policies.
//! - `roofline`: the weight-read floor and the fit to measured A100 step times.
//! - `bad_input`: a table of broken scenarios and traces → the right error, never a panic.
//! - `property`: random valid scenarios → no panic, every audit holds.
//! - `engine`: targeted behaviours (preemption, chunking, routing, admission, horizon, traces).
//! - `pd`: prefill/decode disaggregation (the link's timing) and shared-prefix caching.
//! - `study`: studies — identical on any thread count, common random numbers, their tables and CLI.
//! - `cli`: the command-line contract (formats, keys, exit codes).
//! - `fields`: each scenario field's bound and default, declared once, against docs/scenario.md and validation.

mod it;
