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
    /// Request i takes `v[i mod len]`: no draw.
    Sequence(Vec<u32>),
}

/// The standard normal CDF.
fn phi(z: f64) -> f64 {
    0.5 * libm::erfc(-z / std::f64::consts::SQRT_2)
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
            // Sessions refuse a sequence at validation; were one to get here, it is read as empirical.
            LengthDist::Sequence(v) => v[rng.below(v.len() as u64) as usize],
        }
    }

    /// Request `idx`'s sample: a sequence's `idx`-th value (cycling), otherwise a draw as [`Self::sample`].
    pub fn sample_at(&self, idx: u64, rng: &mut Rng64) -> u32 {
        match self {
            LengthDist::Sequence(v) => v[(idx % v.len() as u64) as usize],
            d => d.sample(rng),
        }
    }

    /// The mean before clamping (what the class-mean predictor uses).
    pub fn mean(&self) -> f64 {
        match self {
            LengthDist::Fixed(n) => *n as f64,
            LengthDist::Uniform { min, max } => (*min as f64 + *max as f64) / 2.0,
            LengthDist::Lognormal { mean, .. } => *mean,
            LengthDist::Geometric { p, .. } => 1.0 / p,
            LengthDist::Empirical(v) | LengthDist::Sequence(v) => {
                v.iter().map(|x| *x as f64).sum::<f64>() / v.len() as f64
            }
        }
    }

    /// The mean of the samples: the bounds' clamping included (lognormal: E[min(X, max)] in closed form, the
    /// rounding and the clamp at 1 left out; geometric: Σ_{k=1}^{max} P(K ≥ k)).
    pub fn sampled_mean(&self) -> f64 {
        match self {
            LengthDist::Lognormal { mu, sigma, mean, max } if *sigma > 0.0 => {
                let m = *max as f64;
                let z = (libm::log(m) - mu) / sigma;
                mean * phi(z - sigma) + m * (1.0 - phi(z))
            }
            LengthDist::Lognormal { mean, max, .. } => mean.min(*max as f64),
            LengthDist::Geometric { p, max } if *p < 1.0 => -libm::expm1(*max as f64 * libm::log1p(-p)) / p,
            _ => self.mean(),
        }
    }

    /// (asked, sampled) means when the bounds cut the asked mean by more than 1 %: what a user who typed a
    /// mean and a max should be told.
    pub fn truncated(&self) -> Option<(f64, f64)> {
        let (asked, got) = (self.mean(), self.sampled_mean());
        (got < asked * 0.99).then_some((asked, got))
    }

    /// The smallest value a sample can take.
    pub fn min(&self) -> u32 {
        match self {
            LengthDist::Fixed(n) => *n,
            LengthDist::Uniform { min, .. } => *min,
            // Rounded and clamped to [1, max].
            LengthDist::Lognormal { .. } | LengthDist::Geometric { .. } => 1,
            LengthDist::Empirical(v) | LengthDist::Sequence(v) => v.iter().copied().min().unwrap_or(1),
        }
    }

    /// The largest value a sample can take.
    pub fn max(&self) -> u32 {
        match self {
            LengthDist::Fixed(n) => *n,
            LengthDist::Uniform { max, .. } | LengthDist::Lognormal { max, .. } | LengthDist::Geometric { max, .. } => {
                *max
            }
            LengthDist::Empirical(v) | LengthDist::Sequence(v) => v.iter().copied().max().unwrap_or(1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sampled_mean_is_the_clamped_ones_and_a_cut_over_1_percent_is_reported() {
        let mut rng = crate::rng::stream(3, crate::rng::Stream::Study, 0);
        for d in [
            LengthDist::lognormal(2000.0, 1.0, 4096),
            LengthDist::geometric(500.0, 600),
            LengthDist::lognormal(200.0, 1.0, 1600),
        ] {
            let n = 200_000;
            let sampled = (0..n).map(|_| d.sample(&mut rng) as f64).sum::<f64>() / n as f64;
            let rel = (sampled - d.sampled_mean()).abs() / sampled;
            assert!(rel < 0.01, "{d:?}: sampled {sampled}, closed form {}", d.sampled_mean());
        }
        let (asked, got) = LengthDist::lognormal(2000.0, 1.0, 4096).truncated().unwrap();
        assert_eq!(asked, 2000.0);
        assert!((1700.0..1900.0).contains(&got), "{got}");
        assert_eq!(LengthDist::lognormal(200.0, 1.0, 1600).truncated(), None, "max 8 × mean cuts 0.5 %");
        assert_eq!(LengthDist::Fixed(7).truncated(), None);
    }
}
