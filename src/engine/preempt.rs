//! Giving KV back: recompute preemption (every formation), and SGLang's reservations and retraction (its
//! formations; the rules are [`crate::sched::sglang`]). vLLM's formation reserves prompt + predicted output
//! and chooses victims by `preemption.victim` (batch.rs).

use super::Simulation;
use super::running::{Running, want_need};
use super::shared::{cached_prefix_tokens, unpin_shared};
use crate::metrics::Outcome;
use crate::scenario::Role;
use crate::sched::sglang;

impl Simulation<'_> {
    /// Tokens the running requests of replica `r` hold in reserve for output to come: a decoder the ratio of
    /// its predicted output still to come, a prompt whose last chunk is in this step all of it, a prompt with
    /// chunks left nothing yet.
    pub(super) fn sglang_reserved_tokens(&self, r: usize) -> f64 {
        let rep = &self.replicas[r];
        let ratio = rep.new_token_ratio;
        let role = self.sc.pools[rep.pool].role;
        let reserve = |s: &Running| {
            let left = self.predicted_left(s, role);
            if s.prefilled == s.prefill_target {
                ratio.reserve(left)
            } else if s.step_tokens > 0 && s.prefilled + s.step_tokens == s.prefill_target {
                sglang::clip(left) as f64
            } else {
                0.0
            }
        };
        rep.batch.requests().iter().map(reserve).sum()
    }

    /// Output tokens `s` is predicted to produce still (a prefill worker's part is its first token).
    fn predicted_left(&self, s: &Running, role: Role) -> u32 {
        let predicted = if role == Role::Prefill { 1 } else { self.requests[s.id as usize].pred_reserve_tokens };
        predicted.saturating_sub(s.generated)
    }

    /// Retract decoders of replica `r`, SGLang's victim first, until the next decode step's blocks are free
    /// (one decoder is always kept); the ratio then decays, or after a retraction is re-estimated from the
    /// requests kept. Retracted requests go to the back of the queue ([`Simulation::requeued`]).
    pub(super) fn retract_for_decode(&mut self, r: usize) -> bool {
        let en = &self.sc.pools[self.replicas[r].pool].engine;
        let decodes = |s: &Running| s.step_tokens == 0 && s.prefilled == s.prefill_target;
        let mut retracted = false;
        loop {
            let running = self.replicas[r].batch.requests();
            if !running.iter().any(decodes) {
                return retracted;
            }
            let need: u64 = running.iter().filter(|s| decodes(s)).map(|s| want_need(s, 1, en).1).sum();
            if need <= self.replicas[r].kv.available() {
                break;
            }
            let candidates = (running.iter().enumerate().filter(|(_, s)| decodes(s)))
                .map(|(j, s)| (j, s.generated, self.requests[s.id as usize].prompt_tokens));
            let Some(v) = sglang::retraction_victim(candidates) else { break };
            self.preempt(r, v);
            retracted = true;
        }
        let (mut generated, mut predicted, mut kept) = (0, 0, 0);
        for s in self.replicas[r].batch.requests().iter().filter(|s| decodes(s)) {
            generated += s.generated as u64;
            predicted += self.requests[s.id as usize].pred_reserve_tokens as u64;
            kept += 1;
        }
        let ratio = &mut self.replicas[r].new_token_ratio;
        if retracted {
            ratio.after_retraction(generated, predicted, kept);
        } else {
            ratio.decay();
        }
        retracted
    }

    /// Recompute preemption of running[v]: free its KV; it queues again (after backoff) or fails past the cap.
    pub(super) fn preempt(&mut self, r: usize, v: usize) {
        let rep = &mut self.replicas[r];
        let s = rep.batch.remove(v);
        let en = &self.sc.pools[rep.pool].engine;
        // Past its cap the request fails (the count below is this one added).
        let failed = self.requests[s.id as usize].preemptions.saturating_add(1) as u32 > en.max_preemptions;
        // vLLM frees the victim's blocks with their hashes kept: its full blocks stay a cached prefix for its
        // readmission here (where the scenario allows it; not when it fails).
        let kept = if en.reuse_freed_blocks && !failed {
            (((s.kv_tokens - s.shared_tokens) / en.block_size_tokens).min(s.blocks)) as u64
        } else {
            0
        };
        if kept > 0 {
            rep.kv.cache.park(s.id, kept, s.shared_tokens);
        }
        rep.kv.release(s.blocks as u64 - kept);
        if s.shared_tokens > 0 {
            unpin_shared(
                &mut rep.kv.cache,
                self.sc.workload.chains.as_ref(),
                cached_prefix_tokens(self.sc.prefix.as_ref()),
                &self.requests[s.id as usize],
                s.shared_tokens,
            );
            rep.kv.keep_prefix_budget();
        }
        rep.reserved_blocks -= s.reserve_blocks as u64;
        let rec = &mut self.requests[s.id as usize];
        rec.preemptions = rec.preemptions.saturating_add(1);
        rec.generated = s.generated;
        rec.last_token_ns = s.last_token_ns;
        // Its KV is gone (but for blocks kept above): readmitted, it recomputes (on whichever worker it is
        // queued at).
        rec.kv_ready = false;
        self.rec.on_preempted(failed);
        // Per-replica queues keep a preempted request on its replica; the central queue takes it back.
        if failed || self.dispatch.central.is_some() {
            rep.outstanding -= 1;
            self.dispatch.routing[rep.pool].outstanding(rep.local, rep.outstanding);
        }
        if failed {
            rec.outcome = Outcome::Failed;
            rec.done_ns = self.now;
            self.arrivals.finished(s.id);
        } else {
            rep.requeue.push(s.id);
        }
    }
}
