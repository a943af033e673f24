//! What a fleet costs: per hour (its GPUs at their prices), and per million tokens of each kind.
//!
//! The hour's cost is split over the tokens the fleet serves in it by the time each kind takes on the
//! candidate's own cost model: a prompt token its share of a lone prefill of the mean prompt; a cached prompt
//! token what it adds to the prefill of the rest (its KV read by the new tokens' attention); an output token a
//! decode step at the fleet's mean batch, divided by that batch. On a P/D unit each pool's cost goes to its
//! own work: the prefill pool's to prompt tokens (fresh and cached), the decode pool's to output tokens. The
//! split conserves the hour: Σ over kinds of price × tokens = the hourly cost (tested).

use crate::cost::{CostModel, StepWork};

/// Tokens served per hour at the target rate, by kind.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TokensPerHour {
    pub input: f64,
    pub cached_input: f64,
    pub output: f64,
}

impl TokensPerHour {
    /// `rate_rps` requests of a mean `prompt` and `output` tokens, `cached` of the prompt tokens served from
    /// a prefix cache.
    pub fn at(rate_rps: f64, prompt: f64, output: f64, cached: f64) -> TokensPerHour {
        let per_hour = rate_rps * 3600.0;
        TokensPerHour {
            input: per_hour * prompt * (1.0 - cached),
            cached_input: per_hour * prompt * cached,
            output: per_hour * output,
        }
    }
}

/// US dollars per million tokens of each kind (cached input: None when no prompt token is cached).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PerMillion {
    pub input: f64,
    pub cached_input: Option<f64>,
    pub output: f64,
}

/// The time (ns) one token of each kind takes on `cost`: (prompt, cached prompt, output).
pub fn token_times_ns(prefill: &CostModel, decode: &CostModel, prompt: f64, batch: u32, ctx: f64) -> [f64; 3] {
    let p = prompt.max(1.0);
    let fresh = p.round() as u64;
    let input = prefill.lone_prefill_ns(fresh) / fresh as f64;
    // A prefix of `p` tokens already in KV under a fresh prompt of `p`: what the prefix adds, per token.
    let with_prefix = StepWork {
        prefill_seqs: 1,
        prefill_tokens: fresh as u32,
        prefill_attention_pairs: fresh * fresh + fresh * (fresh + 1) / 2,
        prefill_context_tokens: fresh,
        ..Default::default()
    };
    let cached = (prefill.step(&with_prefix).total_ns as f64 - prefill.lone_prefill_ns(fresh)).max(0.0) / p;
    let b = batch.max(1);
    let step = decode.step(&StepWork {
        decode_seqs: b,
        decode_context_tokens: (ctx.max(1.0) * b as f64) as u64,
        ..Default::default()
    });
    [input, cached, step.total_ns as f64 / b as f64]
}

/// The hour's cost split over the tokens by their times: colocated, one pool's cost over all three kinds; P/D,
/// `prefill_usd` over the prompt kinds and the rest over output.
pub fn per_million(usd_per_hour: f64, prefill_usd: Option<f64>, t: &TokensPerHour, ns: [f64; 3]) -> PerMillion {
    let work = [t.input * ns[0], t.cached_input * ns[1], t.output * ns[2]];
    let share = |usd: f64, of: &[usize]| {
        let total: f64 = of.iter().map(|&i| work[i]).sum();
        move |i: usize, tokens: f64| {
            if tokens <= 0.0 || total <= 0.0 { 0.0 } else { usd * work[i] / total / tokens * 1e6 }
        }
    };
    let cached = |x: f64| (t.cached_input > 0.0).then_some(x);
    match prefill_usd {
        None => {
            let f = share(usd_per_hour, &[0, 1, 2]);
            PerMillion { input: f(0, t.input), cached_input: cached(f(1, t.cached_input)), output: f(2, t.output) }
        }
        Some(p) => {
            let (pre, dec) = (share(p, &[0, 1]), share(usd_per_hour - p, &[2]));
            PerMillion {
                input: pre(0, t.input),
                cached_input: cached(pre(1, t.cached_input)),
                output: dec(2, t.output),
            }
        }
    }
}
