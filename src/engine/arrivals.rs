//! Where requests come from: the open-loop arrivals, drawn one ahead, and the follow-ups the workload creates
//! in answer to completions (closed-loop clients, session turns), each with its turn in its chain. It owns the
//! workload's generator; the engine asks it for the request due and tells it what became final.

use std::collections::BTreeMap;

use crate::workload::{Generator, Program, Request, SessionEnds};

pub(super) struct Arrivals<'a> {
    generator: Generator<'a>,
    /// The next open-loop arrival (None: there are no more).
    pending: Option<Request>,
    /// Follow-ups not yet arrived, earliest first (FIFO on ties: the second key is the event queue's
    /// sequence), each with its turn in its chain.
    follow_ups: BTreeMap<(u64, u64), FollowUp>,
    /// Per request: its turn in its chain (1: an open-loop arrival). Empty when the workload answers no
    /// completion.
    turns: Vec<u32>,
    /// Requests final since the engine last answered them (completed, refused or failed), when the workload
    /// answers completions.
    finals: Vec<u32>,
}

/// A request the workload created in answer to a completion, and its turn; kept by (time, sequence), which are
/// unique, so the payload needs no order of its own.
#[derive(Clone, Copy, Debug)]
struct FollowUp(Request, u32);

impl<'a> Arrivals<'a> {
    pub fn new(mut generator: Generator<'a>) -> Self {
        let pending = generator.next();
        Arrivals { generator, pending, follow_ups: BTreeMap::new(), turns: Vec::new(), finals: Vec::new() }
    }

    /// When the next open-loop request arrives (None: no more will).
    pub fn next_arrival_ns(&self) -> Option<u64> {
        self.pending.map(|p| p.arrival_ns)
    }

    /// The open-loop request due now; the one after it is drawn.
    pub fn take_arrival(&mut self) -> Request {
        let req = self.pending.take().expect("an Arrival event has a pending request");
        self.pending = self.generator.next();
        req
    }

    /// The earliest follow-up, due now, and its turn.
    pub fn take_follow_up(&mut self) -> (Request, u32) {
        let (_, FollowUp(req, turn)) = self.follow_ups.pop_first().expect("a FollowUp event has a follow-up");
        (req, turn)
    }

    /// Request `id` (the next id) arrived as turn `turn` of its chain.
    pub fn arrived(&mut self, id: u32, turn: u32) {
        if self.answers_completions() {
            debug_assert_eq!(id as usize, self.turns.len(), "ids are given in arrival order");
            self.turns.push(turn);
        }
    }

    /// Request `id` is final: the workload may answer it (a closed-loop client goes on after a refusal or a
    /// failure too).
    pub fn finished(&mut self, id: u32) {
        if self.answers_completions() {
            self.finals.push(id);
        }
    }

    /// Where a step end puts the requests it completes (None: the workload answers none).
    pub fn finals_sink(&mut self) -> Option<&mut Vec<u32>> {
        self.answers_completions().then_some(&mut self.finals)
    }

    /// The requests final since the last call, in the order they became final.
    pub fn take_finals(&mut self) -> Vec<u32> {
        std::mem::take(&mut self.finals)
    }

    pub fn has_finals(&self) -> bool {
        !self.finals.is_empty()
    }

    /// The workload's answer to request `done` (id `id`), final at `now_ns` (`completed`: it completed, not
    /// refused or failed): the next request of its chain, if any, not yet queued.
    pub fn answer(&mut self, done: &Request, id: u32, now_ns: u64, completed: bool) -> Option<Request> {
        self.generator.follow_up(done, self.turns[id as usize], now_ns, completed)
    }

    /// Queue `next`, the answer to request `id`, to arrive at `at_ns` (`seq`: its event's sequence).
    pub fn queue_answer(&mut self, next: Request, id: u32, at_ns: u64, seq: u64) {
        self.follow_ups.insert((at_ns, seq), FollowUp(next, self.turns[id as usize] + 1));
    }

    pub fn answers_completions(&self) -> bool {
        self.generator.answers_completions()
    }

    /// Whether turn `turn` of `req`'s session is its last.
    pub fn is_last_turn(&self, req: &Request, turn: u32) -> bool {
        self.generator.is_last_turn(req, turn)
    }

    /// Whether turn `turn`'s prompt continues the session's history (a traced agent may compact it).
    pub fn continues_history(&self, req: &Request, turn: u32) -> bool {
        self.generator.continues_history(req, turn)
    }

    /// Session `s`'s program: its turns, tools and roles.
    pub fn program(&self, s: u32) -> &Program {
        self.generator.program(s)
    }

    /// At the run's end: how sessions ended, and their programs.
    pub fn into_sessions(mut self) -> (SessionEnds, Vec<Program>) {
        let programs = self.generator.take_programs();
        (self.generator.session_ends, programs)
    }
}
