//! Scheduling policies: waiting-queue order and admission. Policies decide; only the engine schedules events.

pub mod admission;
pub mod queue;
pub mod sglang;
pub mod victim;

pub use queue::{QueueItem, WaitingQueue};
