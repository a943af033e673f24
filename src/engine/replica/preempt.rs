//! Giving KV back: recompute preemption (every formation), and SGLang's reservations and retraction (its
//! formations; the rules are [`crate::sched::sglang`]). vLLM's formation reserves prompt + predicted output
//! and chooses victims by `preemption.victim` (batch.rs).

use super::{Around, Replica};
use crate::engine::running::{Running, want_need};
use crate::engine::shared::{cached_prefix_tokens, unpin_shared};
use crate::metrics::Outcome;
use crate::scenario::Role;
use crate::sched::sglang;

impl Replica {
    /// Tokens the running requests hold in reserve for output to come: a decoder the ratio of its predicted
    /// output still to come, a prompt whose last chunk is in this step all of it, a prompt with chunks left
    /// nothing yet.
    pub(super) fn sglang_reserved_tokens(&self, cx: &Around) -> f64 {
        let ratio = self.new_token_ratio;
        let role = cx.sc.pools[self.pool].role;
        let reserve = |s: &Running| {
            let left = predicted_left(s, role, cx);
            if s.prefilled == s.prefill_target {
                ratio.reserve(left)
            } else if s.step_tokens > 0 && s.prefilled + s.step_tokens == s.prefill_target {
                sglang::clip(left) as f64
            } else {
                0.0
            }
        };
        self.batch.requests().iter().map(reserve).sum()
    }

    /// Retract decoders, SGLang's victim first, until the next decode step's blocks are free (one decoder is
    /// always kept); the ratio then decays, or after a retraction is re-estimated from the requests kept.
    /// Retracted requests go to the back of the queue (`Simulation::requeued`).
    pub(super) fn retract_for_decode(&mut self, cx: &mut Around) -> bool {
        let sc = cx.sc;
        let en = &sc.pools[self.pool].engine;
        let decodes = |s: &Running| s.step_tokens == 0 && s.prefilled == s.prefill_target;
        let mut retracted = false;
        loop {
            let running = self.batch.requests();
            if !running.iter().any(decodes) {
                return retracted;
            }
            let need: u64 = running.iter().filter(|s| decodes(s)).map(|s| want_need(s, 1, en).1).sum();
            if need <= self.kv.available() {
                break;
            }
            let candidates = (running.iter().enumerate().filter(|(_, s)| decodes(s)))
                .map(|(j, s)| (j, s.generated, cx.requests[s.id as usize].prompt_tokens));
            let Some(v) = sglang::retraction_victim(candidates) else { break };
            self.preempt(v, cx);
            retracted = true;
        }
        let (mut generated, mut predicted, mut kept) = (0, 0, 0);
        for s in self.batch.requests().iter().filter(|s| decodes(s)) {
            generated += s.generated as u64;
            predicted += cx.requests[s.id as usize].pred_reserve_tokens as u64;
            kept += 1;
        }
        if retracted {
            self.new_token_ratio.after_retraction(generated, predicted, kept);
        } else {
            self.new_token_ratio.decay();
        }
        retracted
    }

    /// Recompute preemption of `running[v]`: free its KV; it queues again (after backoff) or fails past the cap.
    pub(super) fn preempt(&mut self, v: usize, cx: &mut Around) {
        let s = self.batch.remove(v);
        let sc = cx.sc;
        let en = &sc.pools[self.pool].engine;
        // Past its cap the request fails (the count below is this one added).
        let failed = cx.requests[s.id as usize].preemptions.saturating_add(1) as u32 > en.max_preemptions;
        // vLLM frees the victim's blocks with their hashes kept: its full blocks stay a cached prefix for its
        // readmission here (where the scenario allows it; not when it fails).
        let kept = if en.reuse_freed_blocks && !failed {
            (((s.kv_tokens - s.shared_tokens) / en.block_size_tokens).min(s.blocks)) as u64
        } else {
            0
        };
        if kept > 0 {
            self.kv.cache.park(s.id, kept, s.shared_tokens);
        }
        self.kv.release(s.blocks as u64 - kept);
        if s.shared_tokens > 0 {
            let (chains, prefix) = (sc.workload.chains.as_ref(), cached_prefix_tokens(sc.prefix.as_ref()));
            unpin_shared(&mut self.kv.cache, chains, prefix, &cx.requests[s.id as usize], s.shared_tokens);
            self.kv.keep_prefix_budget();
        }
        self.reserved_blocks -= s.reserve_blocks as u64;
        let rec = &mut cx.requests[s.id as usize];
        rec.preemptions = rec.preemptions.saturating_add(1);
        rec.generated = s.generated;
        rec.last_token_ns = s.last_token_ns;
        // Its KV is gone (but for blocks kept above): readmitted, it recomputes (on whichever worker it is
        // queued at).
        rec.kv_ready = false;
        cx.rec.on_preempted(failed);
        // Per-replica queues keep a preempted request on its replica; the central queue takes it back. (The
        // router hears the count when the simulation settles the formation: `Simulation::flush_requeue`.)
        if failed || cx.central.is_some() {
            self.outstanding -= 1;
        }
        if failed {
            rec.outcome = Outcome::Failed;
            rec.done_ns = cx.now;
            self.failed.push(s.id);
        } else {
            self.requeue.push(s.id);
        }
    }
}

/// Output tokens `s` is predicted to produce still (a prefill worker's part is its first token).
fn predicted_left(s: &Running, role: Role, cx: &Around) -> u32 {
    let predicted = if role == Role::Prefill { 1 } else { cx.requests[s.id as usize].pred_reserve_tokens };
    predicted.saturating_sub(s.generated)
}
