//! The one search of the capacity and fleet planners and of sustained capacity: bracket by doubling or halving
//! (or by a smaller factor from a close first guess), then bisect. A rate search passes below its answer and
//! stops at a precision; a replica search, over the integers, passes above it.

/// A one-dimensional search (one seed's, or one of all repetitions together).
#[derive(Clone, Debug)]
pub struct Search {
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
    /// A rate search brackets by this factor (2: doubling or halving).
    factor: f64,
}

impl Search {
    /// From `start`, never below `min` (a rate at which the run's requests would outlast the clock).
    pub fn rate(start: f64, precision: f64, min: f64, max_tries: u32) -> Search {
        let (lo, hi) = ((start / 1e4).max(min), (start * 1e4).max(min));
        let next = Some(start.clamp(lo, hi));
        Search { pass: None, fail: None, next, tried: 0, max_tries, replicas: false, precision, lo, hi, factor: 2.0 }
    }

    /// The same search bracketing by `factor` (> 1) instead of 2: for a first guess known to be close.
    pub fn bracketing_by(self, factor: f64) -> Search {
        Search { factor, ..self }
    }

    pub fn replicas(start: u32, max: u32, max_tries: u32) -> Search {
        let next = Some(start.clamp(1, max) as f64);
        let hi = max as f64;
        let (lo, precision, factor) = (1.0, 0.0, 2.0);
        Search { pass: None, fail: None, next, tried: 0, max_tries, replicas: true, precision, lo, hi, factor }
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
            (false, Some(p), None) if p < self.hi => Some(p * self.factor),
            (false, None, Some(f)) if f > self.lo => Some(f / self.factor),
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

    /// The estimate of the boundary: the middle of the final bracket, or the highest pass when nothing
    /// failed (a rate search).
    pub fn boundary(&self) -> Option<f64> {
        match (self.pass, self.fail) {
            (Some(p), Some(f)) => Some((p + f) / 2.0),
            (p, _) => p,
        }
    }

    /// Whether it used all its points (and stopped there, converged or not).
    pub fn exhausted(&self) -> bool {
        self.tried >= self.max_tries
    }
}
