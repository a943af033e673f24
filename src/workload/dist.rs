//! Token-length distributions. Immutable; the generator is passed in (as in `rand::distr`).

use crate::rng::Rng64;

/// A validated length distribution on {1, …, max}.
#[derive(Clone, Debug, PartialEq)]
pub enum LengthDist {
    Fixed(u32),
    Uniform {
        min: u32,
        max: u32,
    },
    /// ln L ~ Normal(mu, sigma), rounded and clamped to [1, max].
    Lognormal {
        mu: f64,
        sigma: f64,
        mean: f64,
        max: u32,
    },
    /// P(L = k) = (1 − p)^(k−1) p, clamped to max.
    Geometric {
        p: f64,
        max: u32,
    },
    Empirical(Vec<u32>),
}

impl LengthDist {
    /// Lognormal from its mean and coefficient of variation: σ² = ln(1 + cv²), μ = ln(mean) − σ²/2.
    pub fn lognormal(mean: f64, cv: f64, max: u32) -> Self {
        let s2 = libm::log(1.0 + cv * cv);
        LengthDist::Lognormal { mu: libm::log(mean) - s2 / 2.0, sigma: s2.sqrt(), mean, max }
    }

    pub fn geometric(mean: f64, max: u32) -> Self {
        LengthDist::Geometric { p: 1.0 / mean, max }
    }

    /// One sample. Always consumes the same number of draws for a given variant (two for lognormal).
    pub fn sample(&self, rng: &mut Rng64) -> u32 {
        match self {
            LengthDist::Fixed(n) => *n,
            LengthDist::Uniform { min, max } => min + rng.below((max - min) as u64 + 1) as u32,
            LengthDist::Lognormal { mu, sigma, max, .. } => {
                let x = libm::exp(mu + sigma * rng.std_normal()).round();
                x.clamp(1.0, *max as f64) as u32
            }
            LengthDist::Geometric { p, max } => {
                if *p >= 1.0 {
                    return 1;
                }
                // Inversion: 1 + floor(ln U / ln(1 − p)), U in (0, 1].
                let k = 1.0 + libm::floor(libm::log(rng.uniform_open0()) / libm::log1p(-p));
                k.clamp(1.0, *max as f64) as u32
            }
            LengthDist::Empirical(v) => v[rng.below(v.len() as u64) as usize],
        }
    }

    /// The mean before clamping (what the class-mean predictor uses).
    pub fn mean(&self) -> f64 {
        match self {
            LengthDist::Fixed(n) => *n as f64,
            LengthDist::Uniform { min, max } => (*min as f64 + *max as f64) / 2.0,
            LengthDist::Lognormal { mean, .. } => *mean,
            LengthDist::Geometric { p, .. } => 1.0 / p,
            LengthDist::Empirical(v) => v.iter().map(|x| *x as f64).sum::<f64>() / v.len() as f64,
        }
    }

    /// The smallest value a sample can take.
    pub fn min(&self) -> u32 {
        match self {
            LengthDist::Fixed(n) => *n,
            LengthDist::Uniform { min, .. } => *min,
            // Rounded and clamped to [1, max].
            LengthDist::Lognormal { .. } | LengthDist::Geometric { .. } => 1,
            LengthDist::Empirical(v) => v.iter().copied().min().unwrap_or(1),
        }
    }

    /// The largest value a sample can take.
    pub fn max(&self) -> u32 {
        match self {
            LengthDist::Fixed(n) => *n,
            LengthDist::Uniform { max, .. } | LengthDist::Lognormal { max, .. } | LengthDist::Geometric { max, .. } => {
                *max
            }
            LengthDist::Empirical(v) => v.iter().copied().max().unwrap_or(1),
        }
    }
}
