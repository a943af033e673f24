//! Where a session's history waits out a tool call — HBM, host memory, or nowhere (the next turn recomputes
//! it) — and what each choice costs for a gap of a given length: the *gap price*, InferCept's waste rule in
//! one currency. The gap oracle takes the cheapest tier for the realised gap, so no policy pays a lower gap
//! price; the adaptive policies take the cheapest for an estimate of the gap, learned online from the tool
//! calls that have already returned (`GapEstimator`). Pure: the engine builds the prices and applies the tiers.

/// Where a history waits out a tool gap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    /// Freed: the next turn prefills it again.
    Drop,
    /// An idle entry in the worker's HBM.
    Hbm,
    /// Moved to the worker's host memory; the next turn restores it over the host link.
    Host,
}

/// What each tier costs for one history and one gap, in ns of a whole worker: holding the history's share of
/// the worker's KV through the gap (share × gap: a GPU's memory-time), restoring it over the host link (the
/// restore's time), or recomputing it (the prefill time it adds to the next turn).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GapPrice {
    /// The history's blocks ÷ the worker's KV blocks.
    pub hbm_share: f64,
    /// Transfer and latency of a restore; None without a host tier.
    pub restore_ns: Option<f64>,
    pub recompute_ns: f64,
}

impl GapPrice {
    /// The price of `tier` for a gap of `gap_ns`.
    pub fn cost_ns(&self, tier: Tier, gap_ns: f64) -> f64 {
        match tier {
            Tier::Hbm => self.hbm_share * gap_ns,
            Tier::Host => self.restore_ns.unwrap_or(self.recompute_ns),
            Tier::Drop => self.recompute_ns,
        }
    }

    /// The cheapest tier for a gap of `gap_ns`; ties keep in HBM, then restore rather than recompute.
    pub fn best(&self, gap_ns: f64) -> Tier {
        let away = self.away();
        if self.cost_ns(Tier::Hbm, gap_ns) <= self.cost_ns(away, gap_ns) { Tier::Hbm } else { away }
    }

    /// The cheaper way to have the history back after leaving HBM: restore (with a host tier, when no slower
    /// than recomputing) or recompute.
    pub fn away(&self) -> Tier {
        match self.restore_ns {
            Some(r) if r <= self.recompute_ns => Tier::Host,
            _ => Tier::Drop,
        }
    }

    /// The gap past which keeping in HBM costs more than leaving it (infinite for an empty history).
    pub fn break_even_ns(&self) -> f64 {
        let away = self.cost_ns(self.away(), 0.0);
        if self.hbm_share > 0.0 { away / self.hbm_share } else { f64::INFINITY }
    }

    /// What a TTL of `ttl_ns` pays for a gap of `gap_ns`: HBM until the gap or the TTL ends, then — if the
    /// gap outlasts it — the way back from host memory (or the recompute without a host tier); and where the
    /// history spent the gap's end.
    pub fn ttl(&self, ttl_ns: f64, gap_ns: f64) -> (Tier, f64) {
        let held = self.hbm_share * gap_ns.min(ttl_ns);
        match (gap_ns <= ttl_ns, self.restore_ns) {
            (true, _) => (Tier::Hbm, held),
            (false, Some(r)) => (Tier::Host, held + r),
            (false, None) => (Tier::Drop, held + self.recompute_ns),
        }
    }
}

/// An exponentially weighted estimate of the coming tool gap, learned only from tool calls that returned:
/// one over every tool (global) or one per tool (a tool not seen yet borrows the global one). The first gap
/// seen is the estimate; each later one moves it by `alpha` of the error.
#[derive(Clone, Debug, PartialEq)]
pub struct GapEstimator {
    alpha: f64,
    per_tool: bool,
    global: Option<f64>,
    tools: Vec<Option<f64>>,
}

impl GapEstimator {
    pub fn new(alpha: f64, per_tool: bool) -> Self {
        GapEstimator { alpha, per_tool, global: None, tools: Vec::new() }
    }

    /// A call of `tool` returned after `gap_ns`.
    pub fn observe(&mut self, tool: u16, gap_ns: f64) {
        let t = tool as usize;
        if self.tools.len() <= t {
            self.tools.resize(t + 1, None);
        }
        for e in [&mut self.global, &mut self.tools[t]] {
            *e = Some(e.map_or(gap_ns, |x| x + self.alpha * (gap_ns - x)));
        }
    }

    /// The estimate for a call of `tool` (None before any call returned).
    pub fn estimate(&self, tool: u16) -> Option<f64> {
        match self.tools.get(tool as usize).copied().flatten() {
            Some(x) if self.per_tool => Some(x),
            _ => self.global,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// α = 0.5 by hand: tool 0 sees 10 then 20 (10 → 15); tool 1 sees 100. Global: 10, 15, 57.5.
    #[test]
    fn the_estimates_follow_the_gaps_as_computed_by_hand() {
        let (mut g, mut p) = (GapEstimator::new(0.5, false), GapEstimator::new(0.5, true));
        assert_eq!((g.estimate(0), p.estimate(3)), (None, None));
        for (tool, gap) in [(0, 10.0), (0, 20.0), (1, 100.0)] {
            g.observe(tool, gap);
            p.observe(tool, gap);
        }
        assert_eq!((g.estimate(0), g.estimate(1)), (Some(57.5), Some(57.5)));
        assert_eq!((p.estimate(0), p.estimate(1), p.estimate(2)), (Some(15.0), Some(100.0), Some(57.5)));
    }

    /// The cheapest tier by hand: 1 % of KV; restore 3 ms, recompute 10 ms — break-even 300 ms.
    #[test]
    fn the_best_tier_is_the_cheapest_for_the_gap() {
        let p = GapPrice { hbm_share: 0.01, restore_ns: Some(3e6), recompute_ns: 1e7 };
        assert_eq!((p.best(2e8), p.best(3e8), p.best(4e8)), (Tier::Hbm, Tier::Hbm, Tier::Host));
        assert_eq!(p.break_even_ns(), 3e8);
        let slow = GapPrice { restore_ns: Some(2e7), ..p };
        assert_eq!((slow.best(2e9), slow.break_even_ns()), (Tier::Drop, 1e9));
        assert_eq!(p.ttl(1e8, 5e7), (Tier::Hbm, 5e5));
        assert_eq!(p.ttl(1e8, 5e8), (Tier::Host, 1e6 + 3e6));
        for gap in [0.0, 1e6, 3e8, 1e12] {
            let best = p.cost_ns(p.best(gap), gap);
            for t in [Tier::Drop, Tier::Hbm, Tier::Host] {
                assert!(best <= p.cost_ns(t, gap));
            }
            assert!(best <= p.ttl(1e8, gap).1);
        }
    }
}
