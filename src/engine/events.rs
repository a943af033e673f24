//! The event queue: events pop in (time, sequence) order — FIFO on equal times, so a run is a pure function of
//! its scenario.
//!
//! The few earliest events wait in a small buffer and the rest in a binary heap; a pop takes the earlier of
//! the buffer's first and the heap's top. Which events sit where changes nothing but speed, since every pop is
//! the minimum of both. The buffer is for the events that come due next, over and over: each replica's step
//! end, scheduled a step ahead (with two replicas a single slot forced the other's step end through the heap
//! at every step — a push and a pop, a tenth of an agent run). An event scheduled when the buffer is full
//! sends the latest of the buffer and itself to the heap, so a far event (a tool call's end, a TTL) ends up
//! there and a near one stays out.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Everything that can happen. One `match` in the simulation's run (engine/mod.rs) dispatches them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Event {
    /// The pending request arrives.
    Arrival,
    /// A replica's current step finishes.
    StepEnd { replica: u32 },
    /// A preempted request's backoff ends; it may queue again.
    Retry { request: u32 },
    /// An arrival's serving overhead (HTTP, tokenising) is over: it reaches the scheduler's queue.
    Ready { request: u32 },
    /// Disaggregated: a prompt's KV reached its decode worker.
    TransferDone { request: u32 },
    /// The earliest follow-up request (one the workload created in answer to a completion) arrives.
    FollowUp,
    /// A session's history came back from host memory: the turn waiting for it queues.
    Restored { request: u32 },
    /// A session's TTL ran out (stale, and skipped without advancing the clock, if a turn came since: the
    /// session's pending expiry is no longer this instant). One u32, so an event stays 8 bytes.
    Expire { session: u32 },
    /// A workflow's role prefix, prefetched from host memory, reached HBM.
    Prefetched { transfer: u32 },
    /// The run's horizon: stop, report what is still in the system as unfinished.
    Horizon,
}

/// (time ns, sequence, event): ordered by time, then sequence, which is unique (`Event`'s order never
/// decides).
pub(super) type Entry = (u64, u64, Event);

/// Events held outside the heap: enough for the step ends of a few replicas and the arrival due next.
const NEAR: usize = 4;

pub(super) struct EventQueue {
    /// The buffer, latest first: `near[len - 1]` is its earliest.
    near: [Entry; NEAR],
    len: usize,
    far: BinaryHeap<Reverse<Entry>>,
    seq: u64,
}

impl EventQueue {
    pub fn new() -> Self {
        EventQueue { near: [(0, 0, Event::Horizon); NEAR], len: 0, far: BinaryHeap::new(), seq: 0 }
    }

    /// The sequence number the next scheduled event gets.
    pub fn next_seq(&self) -> u64 {
        self.seq
    }

    #[inline(always)]
    pub fn push(&mut self, at_ns: u64, ev: Event) {
        let e = (at_ns, self.seq, ev);
        self.seq += 1;
        if self.len == NEAR {
            if e > self.near[0] {
                self.far.push(Reverse(e));
                return;
            }
            self.far.push(Reverse(self.near[0]));
            self.near.copy_within(1.., 0);
            self.len -= 1;
        }
        // Insert keeping the buffer latest first: from its earliest end, move every earlier entry up one.
        let mut i = self.len;
        while i > 0 && self.near[i - 1] < e {
            self.near[i] = self.near[i - 1];
            i -= 1;
        }
        self.near[i] = e;
        self.len += 1;
    }

    /// The earliest event.
    #[inline(always)]
    pub fn pop(&mut self) -> Option<Entry> {
        if self.len == 0 {
            return self.far.pop().map(|r| r.0);
        }
        let n = self.near[self.len - 1];
        match self.far.peek() {
            Some(Reverse(f)) if *f < n => self.far.pop().map(|r| r.0),
            _ => {
                self.len -= 1;
                Some(n)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The queue pops what one heap of every event pops, in the same order: random times with many ties,
    /// pushes and pops interleaved, the buffer overflowing and draining.
    #[test]
    fn pops_in_time_then_sequence_order_as_one_heap() {
        let mut r = crate::rng::stream(11, crate::rng::Stream::Study, 0);
        let (mut q, mut heap) = (EventQueue::new(), BinaryHeap::new());
        let mut now = 0;
        for round in 0..20_000u32 {
            let pushes = r.below(4);
            for _ in 0..pushes {
                let at = now + r.below(if round % 7 == 0 { 1_000_000 } else { 30 });
                heap.push(Reverse((at, q.next_seq(), Event::StepEnd { replica: round })));
                q.push(at, Event::StepEnd { replica: round });
            }
            for _ in 0..r.below(4) {
                let (a, b) = (q.pop(), heap.pop().map(|x| x.0));
                assert_eq!(a.map(|e| (e.0, e.1)), b.map(|e| (e.0, e.1)));
                if let Some(e) = a {
                    now = e.0;
                }
            }
        }
        while let Some(Reverse(e)) = heap.pop() {
            assert_eq!(q.pop().map(|x| (x.0, x.1)), Some((e.0, e.1)));
        }
        assert_eq!(q.pop().map(|x| x.1), None);
    }
}
