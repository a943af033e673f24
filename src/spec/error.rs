//! Errors from reading and validating a scenario. Each names the field (a dotted path), says what is allowed,
//! and shows what was given.

use std::fmt;

/// One bad field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// Dotted path, e.g. `workload.classes[0].prompt_tokens.mean`.
    pub path: String,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// Why a scenario was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    pub errors: Vec<FieldError>,
}

impl ScenarioError {
    pub fn one(path: impl Into<String>, message: impl Into<String>) -> Self {
        ScenarioError { errors: vec![FieldError { path: path.into(), message: message.into() }] }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.errors.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ScenarioError {}

/// Collects errors while validating, so the user sees every bad field at once.
#[derive(Default)]
pub(crate) struct Errors(pub Vec<FieldError>);

/// A number in a message: as written for ordinary magnitudes, in exponent form for extreme ones
/// (`1e-300`, not three hundred zeros).
fn num(v: f64) -> String {
    if v != 0.0 && v.is_finite() && !(1e-4..1e12).contains(&v.abs()) { format!("{v:e}") } else { format!("{v}") }
}

impl Errors {
    pub fn push(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.0.push(FieldError { path: path.into(), message: message.into() });
    }

    /// A finite number in [lo, hi].
    pub fn range(&mut self, path: &str, v: f64, lo: f64, hi: f64) -> bool {
        if !(v.is_finite() && v >= lo && v <= hi) {
            self.push(path, format!("must be between {} and {} (got {})", num(lo), num(hi), num(v)));
            return false;
        }
        true
    }

    /// A finite number in (lo, hi].
    pub fn range_open_lo(&mut self, path: &str, v: f64, lo: f64, hi: f64) -> bool {
        if !(v.is_finite() && v > lo && v <= hi) {
            self.push(path, format!("must be > {} and ≤ {} (got {})", num(lo), num(hi), num(v)));
            return false;
        }
        true
    }

    /// A finite number in [lo, hi] where the bounds are physical: the message says why.
    pub fn within(&mut self, path: &str, v: f64, lo: f64, hi: f64, why: &str) -> bool {
        if !(v.is_finite() && v >= lo && v <= hi) {
            self.push(path, format!("must be between {} and {} (got {}): {why}", num(lo), num(hi), num(v)));
            return false;
        }
        true
    }

    /// An integer in [lo, hi].
    pub fn int(&mut self, path: &str, v: u64, lo: u64, hi: u64) -> bool {
        if v < lo || v > hi {
            self.push(path, format!("must be an integer from {lo} to {hi} (got {v})"));
            return false;
        }
        true
    }

    pub fn finish(self) -> Result<(), ScenarioError> {
        if self.0.is_empty() { Ok(()) } else { Err(ScenarioError { errors: self.0 }) }
    }
}

/// Edit distance, for "did you mean" suggestions.
pub(crate) fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The closest of `candidates` to `word`, if close enough to be a plausible typo.
pub(crate) fn suggest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (levenshtein(word, c), c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}
