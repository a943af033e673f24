//! Waiting-queue orders. A policy is a trait object built from the serde enum; `build` is the registry.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::spec::SchedulerSpec;

/// What a queue policy may look at to order a request.
#[derive(Clone, Copy, Debug)]
pub struct QueueItem {
    pub id: u32,
    pub arrival_ns: u64,
    pub tenant: u16,
    pub priority: u32,
    pub prompt_tokens: u32,
    pub pred_order_tokens: u32,
    /// Arrival + class e2e SLO (u64::MAX without one).
    pub deadline_ns: u64,
}

/// A waiting queue. `peek` may advance internal round-robin state (DRR) but never removes.
pub trait WaitingQueue {
    /// Add an arriving request. O(log n).
    fn push(&mut self, item: QueueItem);
    /// Put back a preempted request, ahead of others where the order allows. O(log n).
    fn requeue(&mut self, item: QueueItem);
    /// The request that would be admitted next. O(1) amortised (DRR: O(tenants) at worst).
    fn peek(&mut self) -> Option<QueueItem>;
    /// Remove what `peek` returned. O(log n).
    fn pop(&mut self) -> Option<QueueItem>;
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Build the queue a scheduler spec names: the registry of queue policies.
pub fn build(spec: &SchedulerSpec, n_tenants: usize) -> Box<dyn WaitingQueue> {
    match spec {
        SchedulerSpec::Fcfs => Box::new(KeyQueue::new(|i| (i.arrival_ns, 0))),
        SchedulerSpec::Sjf => Box::new(KeyQueue::new(|i| (i.pred_order_tokens as u64, i.arrival_ns))),
        SchedulerSpec::Spf => Box::new(KeyQueue::new(|i| (i.prompt_tokens as u64, i.arrival_ns))),
        SchedulerSpec::Edf => Box::new(KeyQueue::new(|i| (i.deadline_ns, i.arrival_ns))),
        SchedulerSpec::Priority => Box::new(KeyQueue::new(|i| (i.priority as u64, i.arrival_ns))),
        SchedulerSpec::Drr { quantum_tokens } => Box::new(Drr::new(n_tenants, *quantum_tokens as u64)),
    }
}

type Key = (u64, u64, u32);

/// A heap ordered by a static key; ties by request id (creation order), so equal keys are FIFO.
pub struct KeyQueue {
    key: fn(&QueueItem) -> (u64, u64),
    heap: BinaryHeap<Reverse<(Key, Slot)>>,
}

/// Heap payload; ordered only through the key, which is unique per request.
#[derive(Clone, Copy, Debug)]
struct Slot(QueueItem);
impl PartialEq for Slot {
    fn eq(&self, o: &Self) -> bool {
        self.0.id == o.0.id
    }
}
impl Eq for Slot {}
impl PartialOrd for Slot {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Slot {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.id.cmp(&o.0.id)
    }
}

impl KeyQueue {
    fn new(key: fn(&QueueItem) -> (u64, u64)) -> Self {
        KeyQueue { key, heap: BinaryHeap::new() }
    }
}

impl WaitingQueue for KeyQueue {
    fn push(&mut self, item: QueueItem) {
        let (a, b) = (self.key)(&item);
        self.heap.push(Reverse(((a, b, item.id), Slot(item))));
    }
    /// A preempted request keeps its original key: under FCFS its early arrival puts it near the front.
    fn requeue(&mut self, item: QueueItem) {
        self.push(item);
    }
    fn peek(&mut self) -> Option<QueueItem> {
        self.heap.peek().map(|Reverse((_, s))| s.0)
    }
    fn pop(&mut self) -> Option<QueueItem> {
        self.heap.pop().map(|Reverse((_, s))| s.0)
    }
    fn len(&self) -> usize {
        self.heap.len()
    }
}

/// Deficit round robin across tenants (Shreedhar & Varghese). A request costs prompt + predicted output
/// tokens; each visit to a backlogged tenant adds one quantum to its deficit.
pub struct Drr {
    queues: Vec<VecDeque<QueueItem>>,
    deficit: Vec<u64>,
    /// Backlogged tenants in service order; the front is being served.
    active: VecDeque<u16>,
    /// The front tenant has received its quantum for the current turn.
    turn_started: bool,
    quantum: u64,
    len: usize,
}

impl Drr {
    fn new(n_tenants: usize, quantum: u64) -> Self {
        Drr {
            queues: vec![VecDeque::new(); n_tenants],
            deficit: vec![0; n_tenants],
            active: VecDeque::new(),
            turn_started: false,
            quantum,
            len: 0,
        }
    }
    fn cost(i: &QueueItem) -> u64 {
        i.prompt_tokens as u64 + i.pred_order_tokens as u64
    }
    fn add(&mut self, item: QueueItem, front: bool) {
        let t = item.tenant as usize;
        if self.queues[t].is_empty() {
            self.active.push_back(item.tenant);
            self.deficit[t] = 0;
        }
        if front {
            self.queues[t].push_front(item)
        } else {
            self.queues[t].push_back(item)
        }
        self.len += 1;
    }
}

impl WaitingQueue for Drr {
    fn push(&mut self, item: QueueItem) {
        self.add(item, false);
    }
    fn requeue(&mut self, item: QueueItem) {
        self.add(item, true);
    }
    fn peek(&mut self) -> Option<QueueItem> {
        // A tenant gets one quantum when its turn starts and is served while its deficit covers its head;
        // then the turn passes on, the deficit kept. Terminates: every turn adds a quantum.
        loop {
            let &t = self.active.front()?;
            let head = *self.queues[t as usize].front().expect("active tenants are backlogged");
            let cost = Self::cost(&head);
            if !self.turn_started {
                let d = &mut self.deficit[t as usize];
                // A lone tenant would take ⌈cost/quantum⌉ turns in a row: add them at once.
                *d += if self.active.len() == 1 {
                    cost.saturating_sub(*d).div_ceil(self.quantum).max(1) * self.quantum
                } else {
                    self.quantum
                };
                self.turn_started = true;
            }
            if self.deficit[t as usize] >= cost {
                return Some(head);
            }
            self.active.rotate_left(1);
            self.turn_started = false;
        }
    }
    fn pop(&mut self) -> Option<QueueItem> {
        let head = self.peek()?;
        let t = head.tenant as usize;
        self.queues[t].pop_front();
        self.deficit[t] -= Self::cost(&head);
        self.len -= 1;
        if self.queues[t].is_empty() {
            self.deficit[t] = 0;
            self.active.pop_front();
            self.turn_started = false;
        }
        Some(head)
    }
    fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: u32, tenant: u16, prompt: u32) -> QueueItem {
        QueueItem {
            id,
            arrival_ns: id as u64,
            tenant,
            priority: 0,
            prompt_tokens: prompt,
            pred_order_tokens: 0,
            deadline_ns: u64::MAX,
        }
    }

    #[test]
    fn fcfs_ties_are_fifo() {
        let mut q = build(&SchedulerSpec::Fcfs, 1);
        for id in [3, 1, 2] {
            q.push(QueueItem { arrival_ns: 5, ..item(id, 0, 10) });
        }
        let order: Vec<u32> = std::iter::from_fn(|| q.pop().map(|i| i.id)).collect();
        assert_eq!(order, vec![1, 2, 3]);
    }

    #[test]
    fn drr_shares_tokens_between_tenants() {
        let mut q = build(&SchedulerSpec::Drr { quantum_tokens: 100 }, 2);
        // Tenant 0 sends many large requests first, tenant 1 small ones after.
        for id in 0..10 {
            q.push(item(id, 0, 200));
        }
        for id in 10..30 {
            q.push(item(id, 1, 100));
        }
        let first: Vec<u16> = (0..9).map(|_| q.pop().unwrap().tenant).collect();
        let t1 = first.iter().filter(|t| **t == 1).count();
        assert!((5..=7).contains(&t1), "tenant 1 got {t1} of 9: {first:?}");
        assert_eq!(q.len(), 21);
    }
}
