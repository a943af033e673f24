//! A request's life: created by the workload, advanced by the engine — which owns the table of records
//! during a run and decides from it — and handed to the metrics when the run ends, which only read it.

use crate::sched::admission::Reject;
use crate::workload::Request;

/// A request's final state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Still in the system (only during a run).
    InFlight,
    Completed,
    Rejected(Reject),
    /// Preempted more than `max_preemptions` times.
    Failed,
    /// Still in the system when the horizon ended the run.
    Unfinished,
}

/// Everything recorded about one request. Times are `u64::MAX` until they happen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RequestRecord {
    pub id: u32,
    pub arrival_ns: u64,
    /// First admitted into a batch (end of queueing).
    pub first_scheduled_ns: u64,
    pub first_token_ns: u64,
    pub done_ns: u64,
    /// Last token emitted before a preemption (restored on readmission).
    pub last_token_ns: u64,
    pub prompt_tokens: u32,
    pub output_tokens: u32,
    pub generated: u32,
    pub pred_order_tokens: u32,
    pub pred_reserve_tokens: u32,
    pub class: u16,
    pub tenant: u16,
    /// u16::MAX for the central queue until a replica takes it.
    pub replica: u16,
    pub preemptions: u16,
    pub outcome: Outcome,
    /// The shared prefix the prompt starts with (`workload::NO_PREFIX`: none).
    pub prefix_group: u16,
    /// Disaggregated: the prompt's KV arrived with the request (cleared by a preemption, after which the
    /// decode worker recomputes it).
    pub kv_ready: bool,
    /// Disaggregated: when prefill handed the request to the link (`u64::MAX`: never).
    pub handoff_ns: u64,
    /// The session it is a turn of (`workload::NO_SESSION`: none), and which turn (1 = the first).
    pub session: u32,
    pub turn: u16,
}

impl RequestRecord {
    /// The request as it was created, for a policy that needs to see it again (a decode pool's router).
    /// `drop_u` is not kept: it served admission, which is over.
    pub fn request(&self) -> Request {
        Request {
            id: self.id,
            arrival_ns: self.arrival_ns,
            class: self.class,
            tenant: self.tenant,
            prompt_tokens: self.prompt_tokens,
            output_tokens: self.output_tokens,
            pred_order_tokens: self.pred_order_tokens,
            pred_reserve_tokens: self.pred_reserve_tokens,
            drop_u: 0.0,
            prefix_group: self.prefix_group,
            session: self.session,
        }
    }

    pub fn new(r: &Request) -> Self {
        RequestRecord {
            id: r.id,
            arrival_ns: r.arrival_ns,
            first_scheduled_ns: u64::MAX,
            first_token_ns: u64::MAX,
            done_ns: u64::MAX,
            last_token_ns: 0,
            prompt_tokens: r.prompt_tokens,
            output_tokens: r.output_tokens,
            generated: 0,
            pred_order_tokens: r.pred_order_tokens,
            pred_reserve_tokens: r.pred_reserve_tokens,
            class: r.class,
            tenant: r.tenant,
            replica: u16::MAX,
            preemptions: 0,
            outcome: Outcome::InFlight,
            prefix_group: r.prefix_group,
            kv_ready: false,
            handoff_ns: u64::MAX,
            session: r.session,
            turn: 1,
        }
    }
}
