//! What the recorder observes of sessions: the sessions in the system, the KV retention holds (idle history in
//! HBM, history in host memory) as time-weighted gauges with a series, and the turns' cache outcomes and
//! restores. The gauges change only at session events, so they integrate when they change, not per event.

/// Gauges: sessions in the system, idle session-history blocks in HBM, history blocks in host memory.
const GAUGES: usize = 3;

#[derive(Clone, Debug, Default)]
pub struct SessionMetrics {
    value: [u64; GAUGES],
    last_ns: u64,
    /// Integrals over the run, value·ns, and peaks.
    pub area: [u128; GAUGES],
    pub peak: [u64; GAUGES],
    /// The most idle history one worker held at once, blocks.
    pub worker_hbm_peak: u64,
    /// Series of the two KV gauges' window means (blocks): (window start, HBM, host); the windows are the
    /// main series' (same width, merged pairwise at the same counts).
    pub points: Vec<(u64, f64, f64)>,
    window_ns: u64,
    max_points: usize,
    start_ns: u64,
    area_before: [u128; GAUGES],
    /// When each session (by index) ended (u64::MAX: still in the system).
    pub ended_ns: Vec<u64>,
    /// History tokens each session's later turns found kept (in HBM, or restored), by session.
    pub reused_tokens: Vec<u64>,
    /// Later turns admitted, those on the worker of their previous turn, and those that found their history
    /// in HBM (with `host_hits` of those restored from host memory for it).
    pub later_turns: u64,
    pub local_turns: u64,
    pub hits: u64,
    pub host_hits: u64,
    /// Each restore's wait: from the turn's readiness to its history in HBM (link queue, bytes, latency).
    pub restore_ns: Vec<u64>,
    pub restore_bytes: u64,
    pub ttl_evictions: u64,
    pub pressure_evictions: u64,
    pub host_evictions: u64,
    /// Each returned tool call, when the scenario prices them, in the order they returned.
    pub gaps: Vec<ToolGap>,
}

/// A tool call that returned: when it started, the tool, the estimate the turn's end chose from (adaptive
/// policies), the gap, the gap price of the tier chosen (a TTL's as it played out) and of the cheapest tier for
/// this gap, and whether they are the same tier.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ToolGap {
    pub start_ns: u64,
    pub tool: u16,
    pub estimate_ns: Option<f64>,
    /// The tier chosen (a TTL's: where the history was when the gap ended).
    pub tier: crate::tiering::Tier,
    pub gap_ns: u64,
    pub cost_ns: f64,
    pub oracle_cost_ns: f64,
    pub agrees: bool,
}

impl SessionMetrics {
    pub fn new(window_ns: u64, max_points: usize) -> Self {
        SessionMetrics { window_ns: window_ns.max(1), max_points, ..Default::default() }
    }

    /// Integrate up to `now`, closing the series windows passed.
    pub fn advance(&mut self, now: u64) {
        while self.last_ns < now {
            let wend = self.start_ns + self.window_ns;
            let seg_end = now.min(wend);
            let dt = seg_end - self.last_ns;
            for (a, v) in self.area.iter_mut().zip(self.value) {
                *a += super::mul_wide(v, dt);
            }
            self.last_ns = seg_end;
            if seg_end == wend {
                self.close_window(self.window_ns);
            }
        }
    }

    fn close_window(&mut self, len_ns: u64) {
        let mean =
            |k: usize| if len_ns == 0 { 0.0 } else { (self.area[k] - self.area_before[k]) as f64 / len_ns as f64 };
        self.points.push((self.start_ns, mean(1), mean(2)));
        self.start_ns += self.window_ns;
        self.area_before = self.area;
        if self.points.len() >= self.max_points {
            self.points = self
                .points
                .chunks(2)
                .map(|c| if let [a, b] = c { (a.0, (a.1 + b.1) / 2.0, (a.2 + b.2) / 2.0) } else { c[0] })
                .collect();
            self.window_ns *= 2;
        }
    }

    fn change(&mut self, now: u64, k: usize, delta: i64) {
        self.advance(now);
        self.value[k] = self.value[k].saturating_add_signed(delta);
        self.peak[k] = self.peak[k].max(self.value[k]);
    }

    pub fn on_start(&mut self, now: u64) {
        self.change(now, 0, 1);
        self.ended_ns.push(u64::MAX);
        self.reused_tokens.push(0);
    }

    pub fn on_end(&mut self, s: u32, now: u64) {
        self.change(now, 0, -1);
        self.ended_ns[s as usize] = now;
    }

    /// The retained blocks changed by these amounts (HBM idle history, host memory); the changed worker now
    /// holds `worker_hbm` blocks of idle history.
    pub fn on_retained(&mut self, now: u64, hbm: i64, host: i64, worker_hbm: u64) {
        self.worker_hbm_peak = self.worker_hbm_peak.max(worker_hbm);
        self.change(now, 1, hbm);
        self.change(now, 2, host);
    }

    /// The run ended at `end_ns`: close the last window.
    pub fn finish(&mut self, end_ns: u64) {
        self.advance(end_ns);
        let partial = end_ns - self.start_ns;
        if partial > 0 || self.points.is_empty() {
            self.close_window(partial);
        }
    }
}
