//! Named random streams from one master seed.
//!
//! Nothing else in the crate builds a random generator. Every stream is a `Pcg64` (a portable generator whose
//! output is fixed by its algorithm, not by a library release), and every floating-point transform goes through
//! `libm`, so native and wasm32 draw bit-identical values.
//!
//! Two kinds of stream exist:
//! - *sequential* streams ([`Stream::Arrivals`], [`Stream::Router`]) are one generator consumed in order;
//! - *per-request* streams ([`Stream::Request`]) give request `i` its own generator, seeded from
//!   `(master seed, stream, i)`. A request's class, tenant, lengths and estimator noise therefore never depend on
//!   how many values another request consumed — the basis of common random numbers across compared configurations.

use rand::Rng;
use rand_pcg::Pcg64;

/// The named streams. The discriminant is part of the seed derivation: never renumber.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// Interarrival gaps (sequential).
    Arrivals = 1,
    /// Everything drawn for one request at its creation (per request).
    Request = 2,
    /// Random and power-of-two routing (sequential).
    Router = 3,
    /// Study-level resampling, e.g. bootstrap (sequential).
    Study = 4,
    /// A request's shared-prefix draws (per request; a stream of its own so that turning the feature on or
    /// off never moves any other draw).
    Prefix = 5,
    /// A session's program: its turns, lengths, tools and gaps (per session).
    Session = 6,
    /// A later turn's own draws (per session and turn).
    Turn = 7,
    /// A session's class (per session; apart from its program, so weights move no program draw).
    SessionClass = 8,
    /// A workflow's role sequence (per session; apart from its program, so a workflow's roles move no length).
    Workflow = 9,
}

/// splitmix64 finaliser: a bijective 64-bit mixer used only to derive seeds.
fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A generator for `stream`, element `index` (0 for sequential streams).
pub fn stream(seed: u64, stream: Stream, index: u64) -> Rng64 {
    let s = stream as u64;
    let a = mix64(seed ^ mix64(s.wrapping_mul(0xA24B_AED4_963E_E407)));
    let b = mix64(a ^ mix64(index.wrapping_add(0x5851_F42D_4C95_7F2D)));
    let c = mix64(b ^ 0xD6E8_FEB8_6659_FD93);
    let state = ((a as u128) << 64) | b as u128;
    Rng64(Pcg64::new(state, ((s as u128) << 64) | c as u128))
}

/// The project's random generator: a `Pcg64` with the few transforms the model needs.
#[derive(Clone, Debug)]
pub struct Rng64(Pcg64);

impl Rng64 {
    /// A raw 64-bit value.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    /// Uniform in [0, 1) with 53 random bits.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
    /// Uniform in (0, 1]: safe to take the logarithm of.
    pub fn uniform_open0(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
    }
    /// Uniform integer in [0, n). `n` must be > 0. Lemire's multiply-shift (bias < 2^-64 · n, negligible).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
    /// Standard normal by Box–Muller; always consumes exactly two values.
    pub fn std_normal(&mut self) -> f64 {
        let u1 = self.uniform_open0();
        let u2 = self.uniform();
        // IEEE 754 fixes sqrt's result to the bit, so the instruction (f64.sqrt, sqrtsd) agrees with libm
        // everywhere; libm's portable sqrt, which wasm32 gets, is many times slower.
        (-2.0 * libm::log(u1)).sqrt() * libm::cos(2.0 * core::f64::consts::PI * u2)
    }
    /// Exponential with the given mean.
    pub fn exponential(&mut self, mean: f64) -> f64 {
        -mean * libm::log(self.uniform_open0())
    }
    /// Gamma(shape k, scale 1) by Marsaglia–Tsang; for k < 1 uses the boost `G(k+1)·U^(1/k)`.
    pub fn gamma(&mut self, shape: f64) -> f64 {
        if shape < 1.0 {
            let g = self.gamma(shape + 1.0);
            return g * libm::pow(self.uniform_open0(), 1.0 / shape);
        }
        let d = shape - 1.0 / 3.0;
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let x = self.std_normal();
            let v = 1.0 + c * x;
            if v <= 0.0 {
                continue;
            }
            let v = v * v * v;
            let u = self.uniform_open0();
            if libm::log(u) < 0.5 * x * x + d - d * v + d * libm::log(v) {
                return d * v;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_distinct_and_stable() {
        let mut a = stream(42, Stream::Request, 0);
        let mut b = stream(42, Stream::Request, 1);
        let mut c = stream(42, Stream::Arrivals, 0);
        let (x, y, z) = (a.next_u64(), b.next_u64(), c.next_u64());
        assert!(x != y && y != z && x != z);
        assert_eq!(stream(42, Stream::Request, 0).next_u64(), x);
    }

    #[test]
    fn moments_are_right() {
        let mut r = stream(7, Stream::Study, 0);
        let n = 200_000;
        let (mut s1, mut s2) = (0.0, 0.0);
        for _ in 0..n {
            let z = r.std_normal();
            s1 += z;
            s2 += z * z;
        }
        assert!((s1 / n as f64).abs() < 0.01);
        assert!((s2 / n as f64 - 1.0).abs() < 0.01);
        let g: f64 = (0..n).map(|_| r.gamma(0.25)).sum::<f64>() / n as f64;
        assert!((g - 0.25).abs() < 0.01, "gamma mean {g}");
    }
}
