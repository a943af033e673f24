//! Shared KV: which leading tokens of a request a worker's cache already holds (a prefix group's, a trace's
//! hashed blocks, a session's retained history), and pinning the entries that hold them while it runs.

use crate::kv::{EntryId, ReuseCache};
use crate::metrics::RequestRecord;
use crate::workload::{Chains, NO_PREFIX, NO_SESSION, Prefix};

/// The leading prompt tokens of `rec` whose KV this worker's cache holds: its prefix group's (when the group
/// is cached), or the longest cached leading run of its trace's block hashes — leaving at least one prompt
/// token to compute, as vLLM does, so the step produces the first token. 0: none.
#[inline]
pub(crate) fn cached_shared(
    cache: &ReuseCache,
    chains: Option<&Chains>,
    prefix: Option<&Prefix>,
    rec: &RequestRecord,
    block_tokens: u32,
) -> u32 {
    if rec.session != NO_SESSION {
        // A session's shared prefix, when it has one, then its retained history after it (whole blocks), less
        // at least one prompt token to compute. Without its prefix the history is of no use (its KV follows
        // the prefix's, as a block's hash chains on its parent's).
        let p = session_prefix_tokens(cached_prefix_tokens(prefix), rec);
        if p > 0 && !cache.is_cached(EntryId::prefix(rec.prefix_group)) {
            return 0;
        }
        let held = cache.blocks_of(EntryId::session(rec.session)) * block_tokens as u64;
        let most = ((rec.prompt_tokens - 1) / block_tokens * block_tokens) as u64;
        return (p as u64 + held).min(most) as u32;
    }
    if let Some(c) = chains {
        let most = ((rec.prompt_tokens - 1) / c.block_tokens) as usize;
        let k = c
            .full_blocks(rec.id, rec.prompt_tokens)
            .iter()
            .take(most)
            .take_while(|&&h| cache.is_cached(EntryId::block(h)))
            .count();
        return k as u32 * c.block_tokens;
    }
    match prefix {
        Some(p) if p.caching && rec.prefix_group != NO_PREFIX && cache.is_cached(EntryId::prefix(rec.prefix_group)) => {
            p.shared_tokens
        }
        _ => 0,
    }
}

/// The tokens of a shared prefix a worker caches (0: none, or prefix caching off).
#[inline]
pub(crate) fn cached_prefix_tokens(prefix: Option<&Prefix>) -> u32 {
    prefix.filter(|p| p.caching).map_or(0, |p| p.shared_tokens)
}

/// The shared prefix a session turn starts with and shares, on a worker caching prefixes of `prefix_tokens`
/// (its tokens; 0: none).
#[inline]
pub(crate) fn session_prefix_tokens(prefix_tokens: u32, rec: &RequestRecord) -> u32 {
    if rec.prefix_group != NO_PREFIX { prefix_tokens } else { 0 }
}

/// Pin the entries holding `rec`'s first `shared_tokens` tokens (nothing when 0).
#[inline]
pub(crate) fn pin_shared(
    cache: &mut ReuseCache,
    chains: Option<&Chains>,
    prefix_tokens: u32,
    rec: &RequestRecord,
    shared_tokens: u32,
) {
    for_each_shared(chains, prefix_tokens, rec, shared_tokens, |id| cache.pin(id));
}

/// Unpin what a request sharing its first `shared_tokens` tokens pinned (nothing when 0).
#[inline]
pub(crate) fn unpin_shared(
    cache: &mut ReuseCache,
    chains: Option<&Chains>,
    prefix_tokens: u32,
    rec: &RequestRecord,
    shared_tokens: u32,
) {
    for_each_shared(chains, prefix_tokens, rec, shared_tokens, |id| cache.unpin(id));
}

/// The cache entries holding `rec`'s first `shared_tokens` tokens: a session turn's shared prefix and its
/// session's retained history after it, the trace blocks of that run, or its prefix group's entry (none when
/// 0).
#[inline]
fn for_each_shared(
    chains: Option<&Chains>,
    prefix_tokens: u32,
    rec: &RequestRecord,
    shared_tokens: u32,
    mut f: impl FnMut(EntryId),
) {
    if shared_tokens == 0 {
        return;
    }
    match chains {
        _ if rec.session != NO_SESSION => {
            let p = session_prefix_tokens(prefix_tokens, rec);
            if p > 0 {
                f(EntryId::prefix(rec.prefix_group));
            }
            if shared_tokens > p {
                f(EntryId::session(rec.session));
            }
        }
        Some(c) => {
            for &h in &c.full_blocks(rec.id, rec.prompt_tokens)[..(shared_tokens / c.block_tokens) as usize] {
                f(EntryId::block(h));
            }
        }
        None => f(EntryId::prefix(rec.prefix_group)),
    }
}
