//! The capacity and fleet planners' one search: bracket by doubling or halving, then bisect. A rate search
//! passes below its answer and stops at a precision; a replica search, over the integers, passes above it.

/// A one-dimensional search (one seed's, or one of all repetitions together).
#[derive(Clone, Debug)]
pub(crate) struct Search {
    pass: Option<f64>,
    fail: Option<f64>,
    pub next: Option<f64>,
    tried: u32,
    /// Most points evaluated; the search ends there, converged or not.
    max_tries: u32,
    replicas: bool,
    precision: f64,
    lo: f64,
    hi: f64,
}

impl Search {
    /// From `start`, never below `min` (a rate at which the run's requests would outlast the clock).
    pub fn rate(start: f64, precision: f64, min: f64, max_tries: u32) -> Search {
        let (lo, hi) = ((start / 1e4).max(min), (start * 1e4).max(min));
        let next = Some(start.clamp(lo, hi));
        Search { pass: None, fail: None, next, tried: 0, max_tries, replicas: false, precision, lo, hi }
    }

    pub fn replicas(start: u32, max: u32, max_tries: u32) -> Search {
        let next = Some(start.clamp(1, max) as f64);
        let hi = max as f64;
        Search { pass: None, fail: None, next, tried: 0, max_tries, replicas: true, precision: 0.0, lo: 1.0, hi }
    }

    /// The outcome at `x` (the point `next` gave); then `next` is the following point, or None.
    pub fn record(&mut self, x: f64, pass: bool) {
        self.tried += 1;
        if pass {
            self.pass = Some(x);
        } else {
            self.fail = Some(x);
        }
        self.next = if self.exhausted() { None } else { self.choose() };
    }

    fn choose(&self) -> Option<f64> {
        match (self.replicas, self.pass, self.fail) {
            (true, Some(p), None) if p > self.lo => Some((p / 2.0).floor().max(self.lo)),
            (true, None, Some(f)) if f < self.hi => Some((f * 2.0).min(self.hi)),
            (true, Some(p), Some(f)) if p - f > 1.0 => Some(((p + f) / 2.0).floor()),
            (false, Some(p), None) if p < self.hi => Some(p * 2.0),
            (false, None, Some(f)) if f > self.lo => Some(f / 2.0),
            (false, Some(p), Some(f)) if (f - p) / p > self.precision => Some((p + f) / 2.0),
            _ => None,
        }
    }

    /// The answer: the highest passing rate, or the fewest passing replicas.
    pub fn found(&self) -> Option<f64> {
        self.pass
    }

    /// The lowest failing rate, or the most replicas that failed.
    pub fn failed(&self) -> Option<f64> {
        self.fail
    }

    /// Whether it used all its points (and stopped there, converged or not).
    pub fn exhausted(&self) -> bool {
        self.tried >= self.max_tries
    }
}
