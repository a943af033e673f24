//! Prefill/decode disaggregation: a prompt's KV leaves its prefill worker over a link (a FIFO server: bytes ÷
//! bandwidth, then the latency) to the decode worker the decode pool's router picked; when it arrives the
//! prefill worker frees its copy and the request queues for decode.

use std::collections::BTreeMap;

use super::{Event, Simulation};
use crate::kv::EntryId;
use crate::scenario::LinkTopology;

/// A prompt's KV on its way from a prefill worker to a decode worker.
pub(crate) struct Transfer {
    from: usize,
    blocks: u64,
    /// The cached prefix the prompt shares on the prefill worker (kept until its KV has left).
    shared_group: Option<u16>,
}

/// The links' state: each link's next free instant, and the transfers in flight by request.
pub(crate) struct Links {
    free_ns: Vec<u64>,
    in_flight: BTreeMap<u32, Transfer>,
}

impl Links {
    pub(crate) fn new(n_links: usize) -> Links {
        Links { free_ns: vec![0; n_links], in_flight: BTreeMap::new() }
    }

    /// Request `id`'s transfer joins link `l`'s FIFO at `now` for `send_ns`; when its bytes start to move.
    fn send(&mut self, l: usize, now: u64, send_ns: u64, id: u32, t: Transfer) -> u64 {
        let start = now.max(self.free_ns[l]);
        self.free_ns[l] = start + send_ns;
        self.in_flight.insert(id, t);
        start
    }

    /// Request `id`'s transfer, arrived.
    fn arrived(&mut self, id: u32) -> Transfer {
        self.in_flight.remove(&id).expect("a transfer in flight")
    }
}

impl Simulation<'_> {
    /// Disaggregated: request `id` finished prefill on worker `from`, its prompt's KV (`blocks` there)
    /// goes to a decode worker over the link. The decode pool's router picks the worker now, so its load
    /// counts the transfer; the link is a FIFO server (bytes / bandwidth), then the latency.
    pub(super) fn start_transfer(&mut self, id: u32, from: usize, blocks: u64, shared_group: Option<u16>) {
        let (now, sc) = (self.now, self.sc);
        let link = sc.link.expect("transfers happen only when disaggregated");
        let dec = &sc.pools[1];
        let req = self.requests[id as usize].request();
        let local = self.dispatch.routing[1].route(&req, None).expect("validation refuses a central queue for pools");
        let d = dec.first as usize + local;
        let rep = &mut self.replicas[d];
        rep.outstanding += 1;
        self.dispatch.routing[1].outstanding(local, rep.outstanding);
        let rec = &mut self.requests[id as usize];
        rec.handoff_ns = now;
        rec.replica = d as u16;
        // The first token was emitted by prefill; it and the prompt's KV travel together.
        rec.generated = 1;
        let l = match link.topology {
            LinkTopology::PerPair => self.replicas[from].local * dec.replicas as usize + local,
            LinkTopology::Shared => 0,
        };
        let prompt_tokens = rec.prompt_tokens;
        let send_ns = link.send_ns(prompt_tokens);
        let start = self.links.send(l, now, send_ns, id, Transfer { from, blocks, shared_group });
        self.rec.on_transfer(l, send_ns, start + send_ns, link.kv_bytes(prompt_tokens).round() as u64);
        self.schedule(start + send_ns + link.latency_ns, Event::TransferDone { request: id });
    }

    /// Disaggregated: the KV arrived. The prefill worker frees its copy; the request waits for decode KV in
    /// its decode worker's queue. The user sees the first token now (it came with the KV).
    pub(super) fn on_transfer_done(&mut self, id: u32) {
        let t = self.links.arrived(id);
        let from = &mut self.replicas[t.from];
        from.kv.release(t.blocks);
        from.transfer_blocks -= t.blocks;
        if let Some(g) = t.shared_group {
            from.kv.cache.unpin(EntryId::prefix(g));
        }
        let (n_running, used) = (from.batch.len() as u64, from.kv.used());
        self.rec.on_kv_change(t.from, n_running, used);
        let rec = &mut self.requests[id as usize];
        rec.first_token_ns = self.now;
        rec.last_token_ns = self.now;
        rec.kv_ready = true;
        let d = rec.replica as usize;
        let item = self.queue_item(id);
        self.rec.on_queued();
        self.replicas[d].queue.push(item);
        self.try_start(d);
        self.try_start(t.from);
    }
}
