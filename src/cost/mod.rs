//! Step-time models: pure functions from one step's work to its duration, returned as a breakdown.
//! No state, no random numbers.
//!
//! Roofline (per replica of `tp` GPUs), with P parameters, T = decode + prefill tokens in the step,
//! A = attention query–key pairs, K = KV tokens read:
//! ```text
//! C  = (2·P·T + 4·layers·heads·head_dim·A) / (tp · peak · mfu)                 compute
//! Mw = (weight bytes + T · kv_bytes_per_token · r) / (tp · bw · weight_bw_eff)   weights (+ KV writes)
//! Mk = K · kv_bytes_per_token · r / (tp · bw · kv_bw_eff)                       KV reads
//! r  = max(1, tp / kv_heads)                                 KV heads replicated on every GPU past kv_heads
//! M  = Mw + Mk
//! step = max(C, M) + overlap_penalty · min(C, M) + comm + overhead
//! comm = 2·layers·min over the small- and large-message lines of
//!        (latency + T·hidden·2 B·2(tp−1)/tp / (link_bw · efficiency))                    (tp > 1)
//! ```
//! See docs/model.md for the derivation and the fit to measured A100 step times.

mod device;
pub mod presets;

pub use device::{Hardware, Model};

/// What one step does: the inputs of the cost model. In declaration order (`repr(C)`), which keeps the two
/// u64 counts the cost model scales alike apart: adjacent, they were read as one 16-byte load right after the
/// batch formation wrote them as two 8-byte stores, and the store could not forward to it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct StepWork {
    /// Sequences producing one decode token each.
    pub decode_seqs: u32,
    /// Σ context (tokens already in KV) over decode sequences.
    pub decode_context_tokens: u64,
    /// Sequences running a prefill chunk.
    pub prefill_seqs: u32,
    /// Σ prefill chunk tokens.
    pub prefill_tokens: u32,
    /// Σ over chunks of chunk × (prior context + (chunk + 1)/2): query–key pairs of causal attention.
    pub prefill_attention_pairs: u64,
    /// Σ prior context (already in KV) of prefill chunks: KV that the chunk's attention reads.
    pub prefill_context_tokens: u64,
}

impl StepWork {
    pub fn tokens(&self) -> u64 {
        self.decode_seqs as u64 + self.prefill_tokens as u64
    }
    pub fn seqs(&self) -> u32 {
        self.decode_seqs + self.prefill_seqs
    }
}

/// Where a step's time goes, in nanoseconds. `total_ns` is what the engine advances by.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepCost {
    pub total_ns: u64,
    /// Compute time of prefill tokens (dense + attention).
    pub prefill_compute_ns: f64,
    /// Compute time of decode tokens (dense + attention).
    pub decode_compute_ns: f64,
    /// Reading the weights (and writing new KV).
    pub weights_ns: f64,
    /// Reading the KV cache in attention.
    pub kv_read_ns: f64,
    /// Tensor-parallel all-reduce.
    pub comm_ns: f64,
    /// Fixed per-step overhead.
    pub overhead_ns: f64,
    /// Compute time ≥ memory time.
    pub compute_bound: bool,
}

/// The step-time model of a scenario.
#[derive(Clone, Debug, PartialEq)]
pub enum CostModel {
    Roofline(Roofline),
    Linear(Linear),
}

impl CostModel {
    /// A step prefilling `tokens` (capped at u32::MAX) alone from an empty context, ns: what computing a
    /// session's history or a role's prefix adds, as the gap price and the prefetch plan weigh it.
    pub fn lone_prefill_ns(&self, tokens: u64) -> f64 {
        let t = tokens.min(u32::MAX as u64);
        let work = StepWork {
            prefill_seqs: 1,
            prefill_tokens: t as u32,
            prefill_attention_pairs: t * (t + 1) / 2,
            ..Default::default()
        };
        self.step(&work).total_ns as f64
    }

    /// The prefill and decode multipliers in effect.
    pub fn scales(&self) -> (f64, f64) {
        match self {
            CostModel::Roofline(r) => (r.prefill_scale, r.decode_scale),
            CostModel::Linear(l) => (l.prefill_scale, l.decode_scale),
        }
    }

    /// The same model with its step overhead raised by `ns` (a linear model's base time), its
    /// tensor-parallel all-reduce time multiplied by `comm` (a linear model has none) and its host work per
    /// sequence raised by `per_seq_ns` (a linear model's time per sequence): calibration's extra knobs.
    pub fn adjusted(mut self, overhead_ns: f64, comm: f64, per_seq_ns: f64) -> Self {
        match &mut self {
            CostModel::Roofline(r) => {
                r.overhead_ns += overhead_ns;
                r.cpu_ns_per_seq += per_seq_ns;
                r.comm_ns_fixed *= comm;
                r.comm_ns_per_token *= comm;
                r.comm_large_ns_fixed *= comm;
                r.comm_large_ns_per_token *= comm;
            }
            CostModel::Linear(l) => (l.base_ns, l.per_seq_ns) = (l.base_ns + overhead_ns, l.per_seq_ns + per_seq_ns),
        }
        self
    }

    /// The same model with a step's host work (`engine.step_cpu`): `per_step_ns` + `per_seq_ns` × its
    /// sequences, overlapped with the GPU's or not. A linear model is returned as it is (validation refuses the
    /// pair: its `per_seq_ms` is its per-sequence time).
    pub fn with_cpu(mut self, per_step_ns: f64, per_seq_ns: f64, overlapped: bool) -> Self {
        if let CostModel::Roofline(r) = &mut self {
            (r.cpu_ns_per_step, r.cpu_ns_per_seq, r.cpu_overlapped) = (per_step_ns, per_seq_ns, overlapped);
        }
        self
    }

    /// The same model with its prefill and decode times multiplied.
    pub fn scaled(mut self, prefill: f64, decode: f64) -> Self {
        match &mut self {
            CostModel::Roofline(r) => {
                r.prefill_scale = prefill;
                r.decode_scale = decode;
            }
            CostModel::Linear(l) => {
                l.prefill_scale = prefill;
                l.decode_scale = decode;
            }
        }
        self
    }

    pub fn step(&self, w: &StepWork) -> StepCost {
        match self {
            CostModel::Roofline(r) => r.step(w),
            CostModel::Linear(l) => l.step(w),
        }
    }
}

/// The step sizes (tokens) whose expert-untouched power a mixture's [`Roofline`] keeps precomputed: every
/// decode batch and most chunks.
const EXPERT_POWERS: usize = 1024;

/// Roofline constants, precomputed per unit so a step costs a few multiplies.
#[derive(Clone, Debug, PartialEq)]
pub struct Roofline {
    compute_ns_per_token: f64,
    compute_ns_per_pair: f64,
    weights_ns: f64,
    /// Mixture of experts: the time to read every expert, and the chance one token leaves a given expert
    /// untouched (1 − k/E); 0 for a dense model.
    expert_weights_ns: f64,
    expert_untouched: f64,
    /// `expert_untouched` to the power n for a step of n < [`EXPERT_POWERS`] tokens, each exactly what
    /// `libm::pow` gives (a power on every step was a seventh of a mixture's run time); shared by clones.
    expert_untouched_pow: std::sync::Arc<[f64]>,
    kv_write_ns_per_token: f64,
    kv_read_ns_per_token: f64,
    /// A step's all-reduces as two lines in its tokens, small messages' and large ones' (the faster wins).
    comm_ns_fixed: f64,
    comm_ns_per_token: f64,
    comm_large_ns_fixed: f64,
    comm_large_ns_per_token: f64,
    overlap_penalty: f64,
    overhead_ns: f64,
    /// The step's host work: fixed and per sequence, ns, and whether it overlaps the GPU's (`with_cpu`).
    cpu_ns_per_step: f64,
    cpu_ns_per_seq: f64,
    cpu_overlapped: bool,
    /// Profile-error multipliers (1 = as fitted; ×1 is exact, so unscaled results do not move).
    pub prefill_scale: f64,
    pub decode_scale: f64,
}

impl Roofline {
    pub fn new(m: &Model, h: &Hardware) -> Self {
        let tp = h.tp as f64;
        let flops_per_ns = tp * h.peak_flops * h.mfu / 1e9;
        let wbw = tp * h.hbm_bytes_per_s * h.weight_bw_efficiency / 1e9;
        let kbw = tp * h.hbm_bytes_per_s * h.kv_bw_efficiency / 1e9;
        // Each GPU reads and writes its own KV heads; with fewer KV heads than GPUs every GPU holds a whole
        // head's copy (vLLM's and SGLang's attention layers: `num_kv_heads = max(1, total // tp)`; DeepSeek's
        // latent is one head, whole on every rank), so the replica moves max(1, tp / kv_heads) times the
        // model's KV bytes — the same per-GPU figure the KV capacity is computed from.
        let replication = tp / m.kv_heads.max(1) as f64;
        let kvb = if replication > 1.0 { m.kv_bytes_per_token() * replication } else { m.kv_bytes_per_token() };
        let line = |latency_ns: f64, efficiency: f64| {
            if h.tp == 1 {
                return (0.0, 0.0);
            }
            let bytes_per_token = m.hidden as f64 * 2.0 * 2.0 * (tp - 1.0) / tp;
            let link = h.interconnect_bytes_per_s * efficiency / 1e9;
            (2.0 * m.layers as f64 * latency_ns, 2.0 * m.layers as f64 * bytes_per_token / link)
        };
        let (comm_fixed, comm_tok) = line(h.allreduce_latency_ns, h.allreduce_bw_efficiency);
        let (comm_large_fixed, comm_large_tok) = line(h.allreduce_large_latency_ns, h.allreduce_large_bw_efficiency);
        let (expert_weights_ns, expert_untouched) = match m.moe {
            Some(x) => (x.expert_params * m.bytes_per_param / wbw, 1.0 - x.per_token as f64 / x.experts as f64),
            None => (0.0, 0.0),
        };
        Roofline {
            compute_ns_per_token: 2.0 * m.active_params() / flops_per_ns,
            expert_weights_ns,
            expert_untouched,
            expert_untouched_pow: if expert_weights_ns > 0.0 {
                (0..EXPERT_POWERS).map(|n| libm::pow(expert_untouched, n as f64)).collect()
            } else {
                std::sync::Arc::new([])
            },
            compute_ns_per_pair: 4.0 * m.layers as f64 * m.heads as f64 * m.head_dim as f64 / flops_per_ns,
            weights_ns: m.weight_bytes() / wbw,
            kv_write_ns_per_token: kvb / wbw,
            kv_read_ns_per_token: kvb / kbw,
            comm_ns_fixed: comm_fixed,
            comm_ns_per_token: comm_tok,
            comm_large_ns_fixed: comm_large_fixed,
            comm_large_ns_per_token: comm_large_tok,
            overlap_penalty: h.overlap_penalty,
            overhead_ns: h.step_overhead_ns,
            cpu_ns_per_step: 0.0,
            cpu_ns_per_seq: 0.0,
            cpu_overlapped: false,
            prefill_scale: 1.0,
            decode_scale: 1.0,
        }
    }

    /// This model with `other`'s host work per step (a pool on another device keeps the engine's host work).
    pub fn with_cpu_of(mut self, other: &Roofline) -> Self {
        (self.cpu_ns_per_step, self.cpu_ns_per_seq, self.cpu_overlapped) =
            (other.cpu_ns_per_step, other.cpu_ns_per_seq, other.cpu_overlapped);
        self
    }

    /// Time to read the weights a step of `tokens` tokens touches: all of a dense model's; of a mixture, less
    /// the experts none of its tokens is routed to — each untouched with probability (1 − k/E)^tokens under
    /// uniform routing, so a batch of one reads k of E experts and a large batch reads them all.
    #[inline(always)]
    fn weights_read_ns(&self, tokens: f64) -> f64 {
        if self.expert_weights_ns > 0.0 {
            let untouched = match self.expert_untouched_pow.get(tokens as usize) {
                Some(&p) => p,
                None => libm::pow(self.expert_untouched, tokens),
            };
            self.weights_ns - self.expert_weights_ns * untouched
        } else {
            self.weights_ns
        }
    }

    /// A step's all-reduce time for `tokens` tokens: the faster line (a comparison, not f64::min: see `step`).
    #[inline(always)]
    fn comm_ns(&self, tokens: f64) -> f64 {
        let small = self.comm_ns_fixed + tokens * self.comm_ns_per_token;
        let large = self.comm_large_ns_fixed + tokens * self.comm_large_ns_per_token;
        if small <= large { small } else { large }
    }

    pub fn step(&self, w: &StepWork) -> StepCost {
        let tokens = real(w.tokens());
        let prefill_c = (w.prefill_tokens as f64 * self.compute_ns_per_token
            + real(w.prefill_attention_pairs) * self.compute_ns_per_pair)
            * self.prefill_scale;
        let decode_c = (w.decode_seqs as f64 * self.compute_ns_per_token
            + real(w.decode_context_tokens) * self.compute_ns_per_pair)
            * self.decode_scale;
        let c = prefill_c + decode_c;
        let weights = (self.weights_read_ns(tokens) + tokens * self.kv_write_ns_per_token) * self.decode_scale;
        let kv_read =
            real(w.decode_context_tokens + w.prefill_context_tokens) * self.kv_read_ns_per_token * self.decode_scale;
        let m = weights + kv_read;
        let comm = if tokens > 0.0 { self.comm_ns(tokens) } else { 0.0 };
        // A comparison, not f64::max/min: wasm's min/max instructions treat NaN differently from Rust's, so
        // those compile to library calls there (c and m are finite and ≥ 0, so the result is the same).
        let (hi, lo) = if c >= m { (c, m) } else { (m, c) };
        let core = hi + self.overlap_penalty * lo;
        let gpu = core + comm + self.overhead_ns;
        // The host's part: added, or overlapped so that only what outlasts the GPU step shows (0 without any,
        // and x + 0.0 is x: a scenario without host work steps exactly as before).
        let cpu = self.cpu_ns_per_step + w.seqs() as f64 * self.cpu_ns_per_seq;
        let exposed = if !self.cpu_overlapped {
            cpu
        } else if cpu > gpu {
            cpu - gpu
        } else {
            0.0
        };
        StepCost {
            total_ns: round_ns(gpu + exposed).max(1),
            prefill_compute_ns: prefill_c,
            decode_compute_ns: decode_c,
            weights_ns: weights,
            kv_read_ns: kv_read,
            comm_ns: comm,
            overhead_ns: self.overhead_ns + exposed,
            compute_bound: c >= m,
        }
    }
}

/// `x.round() as u64`, exactly (half away from zero; negative and NaN give 0, huge saturates), without the
/// library call `f64::round` is on x86-64's baseline and on wasm32: below 2^53 the truncation and the
/// remainder are exact, and above it x is whole. The common case goes through i64, whose conversions are one
/// instruction each way on x86-64 (u64's are a sequence, and this is on every step's critical path).
#[inline(always)]
pub fn round_ns(x: f64) -> u64 {
    if (0.0..9_007_199_254_740_992.0).contains(&x) {
        let i = x as i64;
        return (i + (x - i as f64 >= 0.5) as i64) as u64;
    }
    let i = x as u64;
    if x - i as f64 >= 0.5 { i + 1 } else { i }
}

/// A count as f64, through i64 (one instruction on x86-64, where u64's conversion is a sequence); the same
/// value for every count below 2^63, which every token count and product of counts here is.
#[inline(always)]
fn real(x: u64) -> f64 {
    x.min(i64::MAX as u64) as i64 as f64
}

/// step = base + per_seq·seqs + per_prefill_token·prefill tokens + per_kv_token·context tokens read.
/// Reduces the engine to textbook queues (batch 1, one prefill step per request: service = base + c·prompt).
#[derive(Clone, Debug, PartialEq)]
pub struct Linear {
    pub base_ns: f64,
    pub per_seq_ns: f64,
    pub per_prefill_token_ns: f64,
    pub per_kv_token_ns: f64,
    pub prefill_scale: f64,
    pub decode_scale: f64,
}

impl Linear {
    pub fn step(&self, w: &StepWork) -> StepCost {
        let prefill = w.prefill_tokens as f64 * self.per_prefill_token_ns * self.prefill_scale;
        let seqs = w.seqs() as f64 * self.per_seq_ns * self.decode_scale;
        let kv = real(w.decode_context_tokens + w.prefill_context_tokens) * self.per_kv_token_ns * self.decode_scale;
        let base = self.base_ns * self.decode_scale;
        let total = base + seqs + prefill + kv;
        StepCost {
            total_ns: round_ns(total).max(1),
            prefill_compute_ns: prefill,
            decode_compute_ns: seqs,
            weights_ns: 0.0,
            kv_read_ns: kv,
            comm_ns: 0.0,
            overhead_ns: base,
            compute_bound: prefill >= kv,
        }
    }
}
