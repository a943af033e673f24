//! Preemption's victim choice: which running request gives its KV back when a step's blocks run out. The
//! engine frees the victim's KV and requeues it (recompute, as vLLM does); this module only chooses.

use crate::spec::VictimSpec;

/// The victim among the candidates `from..len` of a batch in admission order (those not yet planned this
/// step, the request that needs the blocks — `from` — included), given each one's progress (tokens computed)
/// and priority. Ties go to the newest (the later position), like vLLM's recompute order.
pub fn pick(
    policy: VictimSpec,
    from: usize,
    len: usize,
    progress: impl Fn(usize) -> u32,
    priority: impl Fn(usize) -> u32,
) -> usize {
    let tail = from..len;
    match policy {
        VictimSpec::Newest => len - 1,
        VictimSpec::LeastProgress => tail.max_by_key(|&j| (std::cmp::Reverse(progress(j)), j)).unwrap_or(from),
        VictimSpec::LowestPriority => tail.max_by_key(|&j| (priority(j), j)).unwrap_or(from),
    }
}
