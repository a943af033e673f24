//! Findings: experiments written as a living report with registered predictions (`inferscale report`,
//! docs/results.md). Each experiment registers its prediction ([`Findings::expect`]) before it runs, answers it
//! ([`Findings::found`]) with a verdict its interval decides, and writes every number through
//! [`Findings::figure`], so the text holds no number that was typed in and the JSON holds every number the
//! text shows. Rendering refuses a prediction left unanswered and an answer without a prediction.

mod experiments;

use serde::Serialize;

pub use experiments::{Config, report};

/// What became of a registered prediction, as its 95 % interval says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Held,
    Contradicted,
    /// The interval straddles the line the prediction drew.
    Inconclusive,
}

impl Verdict {
    /// The verdict on "the figure is above `line`" (`above`) or below it, from its interval: held when the
    /// whole interval is on the predicted side, contradicted when the whole is on the other, else inconclusive.
    pub fn of(lo: f64, hi: f64, line: f64, above: bool) -> Verdict {
        let (yes, no) = if above { (lo > line, hi < line) } else { (hi < line, lo > line) };
        match (yes, no) {
            (true, _) => Verdict::Held,
            (_, true) => Verdict::Contradicted,
            _ => Verdict::Inconclusive,
        }
    }

    /// Both predictions must hold; one contradicted contradicts.
    pub fn and(self, other: Verdict) -> Verdict {
        match (self, other) {
            (Verdict::Contradicted, _) | (_, Verdict::Contradicted) => Verdict::Contradicted,
            (Verdict::Held, Verdict::Held) => Verdict::Held,
            _ => Verdict::Inconclusive,
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            Verdict::Held => "held",
            Verdict::Contradicted => "contradicted",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

/// How a figure is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Requests per second, two decimals.
    Rps,
    /// Seconds: ms below 10 s, as every report.
    Seconds,
    /// A fraction shown as a percentage, one decimal.
    Percent,
    /// A ratio, "×", two decimals.
    Times,
    /// A count.
    Count,
    /// A small relative error, in scientific notation (3.1e-9).
    Relative,
    /// A difference of two fractions, in percentage points, one decimal.
    Points,
}

impl Unit {
    pub fn show(self, x: f64) -> String {
        match self {
            Unit::Rps => format!("{x:.2} req/s"),
            Unit::Seconds => crate::metrics::secs(x),
            Unit::Percent => format!("{:.1} %", no_minus_zero(x * 100.0, 0.05)),
            Unit::Times => format!("{x:.2}×"),
            Unit::Count => format!("{x:.0}"),
            Unit::Relative => format!("{x:.1e}"),
            Unit::Points => format!("{:.1} points", no_minus_zero(x * 100.0, 0.05)),
        }
    }
}

/// `x`, or 0 where it would show as "-0.0" (a rounding's sign is not a finding).
fn no_minus_zero(x: f64, half_step: f64) -> f64 {
    if x.abs() < half_step { 0.0 } else { x }
}

/// A number of the report: its value (a mean over repetitions, with its 95 % interval when there were
/// several) and how the text shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Figure {
    pub id: String,
    pub value: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<(f64, f64)>,
    pub unit: Unit,
    /// Exactly as the text shows it.
    pub shown: String,
}

/// A prediction registered before its experiment ran, and its answer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Prediction {
    pub id: String,
    pub hypothesis: String,
    pub outcome: Option<String>,
    pub verdict: Option<Verdict>,
}

/// One experiment's section.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Section {
    pub id: String,
    pub title: String,
    pub question: String,
    /// The scenario and what was varied, in a paragraph.
    pub setup: String,
    /// The load regime, measured (ρ against measured capacity).
    pub regime: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// Why a report cannot be rendered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FindingsError {
    /// A prediction was registered and never answered.
    Unanswered(String),
    /// An answer names no registered prediction.
    NoPrediction(String),
}

impl std::fmt::Display for FindingsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FindingsError::Unanswered(id) => write!(f, "prediction `{id}` was registered but never answered"),
            FindingsError::NoPrediction(id) => write!(f, "an answer to `{id}`, which no prediction registered"),
        }
    }
}

/// The report being written: its sections, predictions, answers and figures, in the order they came.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Findings {
    pub title: String,
    pub intro: String,
    pub sections: Vec<Section>,
    pub predictions: Vec<Prediction>,
    /// Answers to ids no prediction registered (an error when rendered).
    #[serde(skip)]
    orphans: Vec<String>,
    pub figures: Vec<Figure>,
}

impl Findings {
    pub fn new(title: &str, intro: String) -> Findings {
        Findings { title: title.into(), intro, ..Findings::default() }
    }

    /// Start experiment `id`'s section.
    pub fn section(&mut self, id: &str, title: &str, question: &str) -> &mut Section {
        self.sections.push(Section {
            id: id.into(),
            title: title.into(),
            question: question.into(),
            ..Default::default()
        });
        self.sections.last_mut().expect("just pushed")
    }

    /// Register a prediction before its experiment runs.
    pub fn expect(&mut self, id: &str, hypothesis: &str) {
        self.predictions.push(Prediction {
            id: id.into(),
            hypothesis: hypothesis.into(),
            outcome: None,
            verdict: None,
        });
    }

    /// Answer prediction `id`: what was found, and the verdict.
    pub fn found(&mut self, id: &str, outcome: String, verdict: Verdict) {
        match self.predictions.iter_mut().find(|p| p.id == id) {
            Some(p) => (p.outcome, p.verdict) = (Some(outcome), Some(verdict)),
            None => self.orphans.push(id.into()),
        }
    }

    /// A figure of the report, as the text shows it.
    pub fn figure(&mut self, id: &str, value: f64, unit: Unit) -> String {
        self.add(id, value, None, unit, unit.show(value))
    }

    /// A mean over repetitions with its 95 % interval (Student t), as "mean (lo – hi)".
    pub fn mean_ci(&mut self, id: &str, xs: &[f64], unit: Unit) -> (String, (f64, f64, f64)) {
        let (m, lo, hi) = crate::study::mean_ci(xs);
        let shown = match xs.len() {
            0 | 1 => unit.show(m),
            // Every seed gave the same figure (a burst of fixed lengths draws nothing that matters).
            n if xs.iter().all(|x| *x == xs[0]) => format!("{} (the same on all {n} seeds)", unit.show(m)),
            _ => format!("{} (95 % CI {} – {})", unit.show(m), unit.show(lo), unit.show(hi)),
        };
        (self.add(id, m, (xs.len() > 1).then_some((lo, hi)), unit, shown), (m, lo, hi))
    }

    fn add(&mut self, id: &str, value: f64, interval: Option<(f64, f64)>, unit: Unit, shown: String) -> String {
        self.figures.push(Figure { id: id.into(), value, interval, unit, shown: shown.clone() });
        shown
    }

    /// Every prediction answered and every answer predicted.
    pub fn check(&self) -> Result<(), FindingsError> {
        if let Some(p) = self.predictions.iter().find(|p| p.verdict.is_none()) {
            return Err(FindingsError::Unanswered(p.id.clone()));
        }
        match self.orphans.first() {
            Some(id) => Err(FindingsError::NoPrediction(id.clone())),
            None => Ok(()),
        }
    }

    /// The report as JSON: its sections, predictions with their verdicts, and every figure.
    pub fn json(&self) -> Result<String, FindingsError> {
        self.check()?;
        Ok(serde_json::to_string_pretty(self).expect("findings serialise") + "\n")
    }

    /// The report as Markdown (docs/results.md).
    pub fn markdown(&self) -> Result<String, FindingsError> {
        self.check()?;
        let mut out = format!("# {}\n\n{}\n", self.title, self.intro);
        for s in &self.sections {
            out.push_str(&section_md(s, self.predictions.iter().find(|p| p.id == s.id)));
        }
        out.push_str(&self.tally());
        Ok(out)
    }

    /// How many predictions held, were contradicted, or stayed open, and what the misses say.
    fn tally(&self) -> String {
        let count = |v: Verdict| self.predictions.iter().filter(|p| p.verdict == Some(v)).count();
        let mut out = format!(
            "\n## Tally\n\nRegistered predictions: {}. Held: {}. Contradicted: {}. Inconclusive (the interval straddles the line): {}.\n",
            self.predictions.len(),
            count(Verdict::Held),
            count(Verdict::Contradicted),
            count(Verdict::Inconclusive)
        );
        for p in self.predictions.iter().filter(|p| p.verdict != Some(Verdict::Held)) {
            let verdict = p.verdict.map_or("", Verdict::word);
            out.push_str(&format!("\n- `{}` ({verdict}): {}", p.id, p.outcome.as_deref().unwrap_or("")));
        }
        if self.predictions.iter().any(|p| p.verdict != Some(Verdict::Held)) {
            out.push('\n');
        }
        out
    }
}

fn section_md(s: &Section, p: Option<&Prediction>) -> String {
    let mut out = format!("\n## {}\n\n**Question.** {}\n", s.title, s.question);
    if let Some(p) = p {
        out.push_str(&format!("\n**Registered prediction** (`{}`). {}\n", p.id, p.hypothesis));
    }
    out.push_str(&format!("\n**Setup.** {}\n\n**Regime.** {}\n", s.setup, s.regime));
    if !s.columns.is_empty() {
        out.push_str(&format!("\n| {} |\n|{}\n", s.columns.join(" | "), "---|".repeat(s.columns.len())));
        for r in &s.rows {
            out.push_str(&format!("| {} |\n", r.join(" | ")));
        }
    }
    if let Some(p) = p {
        let verdict = p.verdict.map_or("", Verdict::word);
        out.push_str(&format!("\n**Outcome.** {}\n\n**Verdict: {verdict}.**\n", p.outcome.as_deref().unwrap_or("")));
    }
    out
}
