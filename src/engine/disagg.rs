//! Prefill/decode disaggregation: a prompt's KV leaves its prefill worker over a link (a FIFO server: bytes ÷
//! bandwidth, then the latency) to the decode worker the decode pool's router picked; when it arrives the
//! prefill worker frees its copy and the request queues for decode.

use std::collections::BTreeMap;

use crate::scenario::{Link, LinkTopology};

/// A prompt's KV on its way from a prefill worker to a decode worker (a record: what the link carries).
pub(crate) struct Transfer {
    pub from: usize,
    pub blocks: u64,
    /// The cached prefix the prompt shares on the prefill worker (kept until its KV has left).
    pub shared_group: Option<u16>,
}

/// A transfer booked on a link: its bytes' time on the link, when they are through, and when the KV arrives.
pub(crate) struct Sent {
    pub send_ns: u64,
    pub through_ns: u64,
    pub arrives_ns: u64,
}

/// The link a prompt takes from the prefill worker `from_local` (its index in its pool) to the decode worker
/// `to_local` of `decode_replicas`.
pub(crate) fn link_between(link: &Link, from_local: usize, to_local: usize, decode_replicas: usize) -> usize {
    match link.topology {
        LinkTopology::PerPair => from_local * decode_replicas + to_local,
        LinkTopology::Shared => 0,
    }
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

    /// Request `id`'s prompt (`prompt_tokens`) joins link `l`'s FIFO at `now`: its bytes take the link's
    /// send time, then its latency.
    pub(crate) fn send(&mut self, link: &Link, l: usize, now: u64, id: u32, prompt_tokens: u32, t: Transfer) -> Sent {
        let send_ns = link.send_ns(prompt_tokens);
        let start = now.max(self.free_ns[l]);
        self.free_ns[l] = start + send_ns;
        self.in_flight.insert(id, t);
        Sent { send_ns, through_ns: start + send_ns, arrives_ns: start + send_ns + link.latency_ns }
    }

    /// Request `id`'s transfer, arrived.
    pub(crate) fn arrived(&mut self, id: u32) -> Transfer {
        self.in_flight.remove(&id).expect("a transfer in flight")
    }
}
