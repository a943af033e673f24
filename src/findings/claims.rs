//! A claim's tolerance as data: the figures it rests on and the line each one's 95 % interval must clear. The
//! report derives both the "Decided by" text and the verdict from the same [`Test`]s, so the two cannot drift,
//! and a claim that reproduces a figure of the seed study gets its band from one rule ([`Test::seed`]).

use super::{Unit, Verdict};
use serde::{Deserialize, Serialize};

/// Where a figure's 95 % interval must lie for its claim to hold.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Line {
    Above(f64),
    Below(f64),
    /// Within the band, both ends included.
    Within(f64, f64),
}

impl Line {
    /// Held when the whole interval `lo`…`hi` is where the line says, contradicted when the whole is not,
    /// else inconclusive.
    pub fn verdict(self, lo: f64, hi: f64) -> Verdict {
        match self {
            Line::Above(x) => Verdict::of(lo, hi, x, true),
            Line::Below(x) => Verdict::of(lo, hi, x, false),
            Line::Within(a, b) if lo >= a && hi <= b => Verdict::Held,
            Line::Within(a, b) if hi < a || lo > b => Verdict::Contradicted,
            Line::Within(..) => Verdict::Inconclusive,
        }
    }

    fn words(self, unit: Unit) -> String {
        match self {
            Line::Above(x) => format!("lies wholly above {}", unit.show(x)),
            Line::Below(x) => format!("lies wholly below {}", unit.show(x)),
            Line::Within(a, b) => format!("lies within {} – {}", unit.show(a), unit.show(b)),
        }
    }
}

/// One test of a claim: the figure (its id in the report and its words), the line its interval must clear,
/// and the seed study's value when the line is that value's band.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Test {
    pub figure: String,
    pub what: String,
    pub line: Line,
    pub unit: Unit,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<f64>,
}

/// The band a seed figure is reproduced within: a factor of 2 either way for a ratio, 10 points either way for
/// a share, a gap or a difference, and 1 point either way for a difference the seed found nil (it reported
/// 0.0, so more than a point would be a different finding).
pub const SEED_BAND: &str = "a ratio within a factor of 2 of the seed's, a share, gap or difference within 10 points of it, and a difference the seed found nil (0.0) within 1 point of zero";

impl Test {
    pub fn new(figure: &str, what: &str, line: Line, unit: Unit) -> Test {
        Test { figure: figure.into(), what: what.into(), line, unit, seed: None }
    }

    /// The seed study's figure `x`, reproduced when the interval lies within [`SEED_BAND`].
    pub fn seed(figure: &str, what: &str, x: f64, unit: Unit) -> Test {
        let line = match unit {
            Unit::Times => Line::Within(x / 2.0, x * 2.0),
            _ if x == 0.0 => Line::Within(-0.01, 0.01),
            _ => Line::Within(x - 0.10, x + 0.10),
        };
        Test { seed: Some(x), ..Test::new(figure, what, line, unit) }
    }

    fn words(&self) -> String {
        let seed = self.seed.map(|x| format!(" (the seed's {})", self.unit.show(x))).unwrap_or_default();
        format!("the 95 % interval of {} {}{seed}", self.what, self.line.words(self.unit))
    }
}

/// The "Decided by" text of a claim resting on `tests`.
pub fn tolerance(tests: &[Test]) -> String {
    let each: Vec<String> = tests.iter().map(Test::words).collect();
    let wrong = if tests.len() == 1 { "it lies" } else { "any lies" };
    format!("held when {}; contradicted when {wrong} wholly on the other side, else inconclusive.", each.join(", and "))
}
