//! Robustness: every experiment's verdicts rerun over setups a practitioner would choose instead of the one the
//! experiment runs — variable lengths for fixed ones, bursty arrivals for Poisson, tighter objectives, a
//! policy's other setting, the cost model off by its held-out error. A [`Setup`] changes the shipped scenario
//! before the experiment's arms change it (`runs::shipped`), so the experiment's own code runs unchanged; the
//! table shows, per setup, the figures each counted claim's tests rest on and its verdict, and says whether
//! each verdict holds across the setups or depends on one.

use super::{Findings, Kind, Verdict};
use crate::scenario::{ArrivalSpec, LengthSpec, SchedulerSpec, Spec};
use serde::{Deserialize, Serialize};

/// A setup an experiment is rerun on: its id (in figure ids), its name in the table, and the change it makes
/// to the shipped scenario (or the configured base) before the experiment's arms change it.
#[derive(Clone, Copy)]
pub struct Setup {
    pub id: &'static str,
    pub name: &'static str,
    pub apply: fn(&mut Spec),
}

impl PartialEq for Setup {
    fn eq(&self, other: &Setup) -> bool {
        self.id == other.id
    }
}

impl std::fmt::Debug for Setup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Setup({})", self.id)
    }
}

/// Seeds per setup of a rerun (the experiment as run keeps the report's own).
pub const SETUP_SEEDS: u64 = 3;

/// Every class's fixed lengths as lognormal ones of the same mean and a coefficient of variation of 1 (at most
/// 8× the mean): the spread real traffic has (lengths already drawn from a distribution stay as they are).
pub const VARIABLE_LENGTHS: Setup = Setup {
    id: "variable_lengths",
    name: "variable lengths (lognormal, CV 1, the same means)",
    apply: |s| {
        let spread = |l: &mut LengthSpec| {
            if let LengthSpec::Fixed { tokens } = *l {
                *l = LengthSpec::Lognormal { mean: tokens as f64, cv: 1.0, max: tokens.saturating_mul(8) };
            }
        };
        for c in &mut s.workload.classes {
            spread(&mut c.prompt_tokens);
            spread(&mut c.output_tokens);
        }
    },
};

/// Poisson arrivals as gamma-distributed gaps with a coefficient of variation of 2, at the same rate: the
/// burstiness production traces show (the experiments keep it when they set a rate, `runs::offer`).
pub const BURSTY_ARRIVALS: Setup = Setup {
    id: "bursty_arrivals",
    name: "bursty arrivals (gamma gaps, CV 2)",
    apply: |s| {
        if let ArrivalSpec::Poisson { rate_rps } = s.workload.arrival {
            s.workload.arrival = ArrivalSpec::Gamma { rate_rps, cv: 2.0 };
        }
    },
};

fn scale_objectives(s: &mut Spec, k: f64) {
    for c in &mut s.workload.classes {
        c.slo.ttft_ms = c.slo.ttft_ms.map(|x| x * k);
        c.slo.tpot_ms = c.slo.tpot_ms.map(|x| x * k);
    }
}

/// Every class's TTFT and TPOT objectives halved.
pub const TIGHT_OBJECTIVES: Setup =
    Setup { id: "tight_objectives", name: "TTFT and TPOT objectives halved", apply: |s| scale_objectives(s, 0.5) };

/// Every class's TTFT and TPOT objectives doubled.
pub const LOOSE_OBJECTIVES: Setup =
    Setup { id: "loose_objectives", name: "TTFT and TPOT objectives doubled", apply: |s| scale_objectives(s, 2.0) };

fn tpot_objective(s: &mut Spec, ms: f64) {
    for c in &mut s.workload.classes {
        c.slo.tpot_ms = Some(ms);
    }
}

/// A TPOT objective of 20 ms, as an interactive chat service sets it.
pub const TPOT_20_MS: Setup =
    Setup { id: "tpot_20ms", name: "a TPOT objective of 20 ms", apply: |s| tpot_objective(s, 20.0) };

/// A TPOT objective of 30 ms.
pub const TPOT_30_MS: Setup =
    Setup { id: "tpot_30ms", name: "a TPOT objective of 30 ms", apply: |s| tpot_objective(s, 30.0) };

fn drr_quantum(s: &mut Spec, quantum_tokens: u32) {
    s.scheduler = SchedulerSpec::Drr { quantum_tokens };
}

/// DRR with a quantum of 512 tokens (about one short request a turn).
pub const QUANTUM_512: Setup =
    Setup { id: "quantum_512", name: "a DRR quantum of 512 tokens", apply: |s| drr_quantum(s, 512) };

/// DRR with a quantum of 8192 tokens (several requests a turn).
pub const QUANTUM_8192: Setup =
    Setup { id: "quantum_8192", name: "a DRR quantum of 8192 tokens", apply: |s| drr_quantum(s, 8192) };

/// Round-robin routing in place of the scenario's load-aware router.
pub const ROUND_ROBIN: Setup = Setup {
    id: "round_robin",
    name: "round-robin routing",
    apply: |s| s.cluster.router = crate::scenario::RouterSpec::RoundRobin,
};

/// Half again the shipped arrival rate (a Poisson, gamma or constant process; others as they are).
pub const HEAVIER_LOAD: Setup = Setup {
    id: "heavier_load",
    name: "1.5× the shipped arrival rate",
    apply: |s| match &mut s.workload.arrival {
        ArrivalSpec::Poisson { rate_rps }
        | ArrivalSpec::Gamma { rate_rps, .. }
        | ArrivalSpec::Constant { rate_rps } => *rate_rps *= 1.5,
        _ => {}
    },
};

/// The cost model as far off as experiment 15 measures it on runs it never saw: prefill 1.5× slower (the
/// light-load vLLM series' mean TTFT error is 42–54 %) and decode 1.3× (their median error over every figure,
/// 27–29 %), in the direction measured near saturation (the model's steps are too fast there: docs/validation.md).
/// Capacity is measured again on it, so ρ keeps its meaning; what moves is every absolute latency against its
/// objective, and prefill against decode. A verdict that holds on it does not rest on the model's step times.
pub const MODEL_ERROR: Setup = Setup {
    id: "model_error",
    name: "the cost model off by its held-out error (prefill 1.5×, decode 1.3× slower)",
    apply: |s| {
        let c = s.cost_scale.get_or_insert_with(Default::default);
        (c.prefill, c.decode) = (c.prefill * 1.5, c.decode * 1.3);
    },
};

fn scale_requests(s: &mut Spec, k: f64) {
    s.workload.requests = s.workload.requests.map(|n| ((n as f64 * k) as u64).max(1));
}

/// Half the requests a run has (only for an experiment that sets its runs' lengths itself, as the diagnosis
/// corpus's cases do: `runs::shipped` sets the report's own after a setup).
pub const SHORTER_RUNS: Setup =
    Setup { id: "shorter_runs", name: "runs half as long", apply: |s| scale_requests(s, 0.5) };

/// Twice the requests a run has (as `SHORTER_RUNS`).
pub const LONGER_RUNS: Setup =
    Setup { id: "longer_runs", name: "runs twice as long", apply: |s| scale_requests(s, 2.0) };

/// An experiment's robustness: its counted claims' verdicts as run and on each setup.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Robustness {
    /// What was rerun, on how many seeds.
    pub about: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Per counted claim: whether its verdict holds across the setups or depends on one, and where it flips.
    pub summary: String,
    /// Per counted claim, its verdict in each row (the experiment as run first).
    pub verdicts: Vec<(String, Vec<Verdict>)>,
}

/// The robustness table of section `id`: its counted claims in `f` (the experiment as run, `as_run` naming
/// that setup), then each setup's rerun — its findings, or why it was refused. The figures shown are written
/// into `f` as `{figure}@{setup}`, so the JSON holds every number the table shows.
pub fn table(f: &mut Findings, id: &str, as_run: &str, reruns: &[(Setup, Result<Findings, String>)]) -> Robustness {
    let claims: Vec<super::Prediction> =
        (f.predictions.iter()).filter(|p| p.section == id && p.kind == Kind::Prediction).cloned().collect();
    let several = claims.len() > 1;
    let mut columns = vec!["Setup".to_string()];
    for p in &claims {
        columns.extend(p.tests.iter().map(|t| capitalised(&t.what)));
        columns.push(if several { format!("Verdict (`{}`)", p.id) } else { "Verdict".into() });
    }
    let mut rows = vec![row(f, as_run, &claims, None)];
    let mut verdicts: Vec<(String, Vec<Verdict>)> =
        claims.iter().map(|p| (p.id.clone(), vec![p.verdict.unwrap_or(Verdict::Inconclusive)])).collect();
    for (setup, rerun) in reruns {
        match rerun {
            Ok(r) => {
                rows.push(row(f, setup.name, &claims, Some((setup, r))));
                for (p, (_, v)) in claims.iter().zip(&mut verdicts) {
                    v.push(
                        r.predictions
                            .iter()
                            .find(|q| q.id == p.id)
                            .and_then(|q| q.verdict)
                            .unwrap_or(Verdict::Inconclusive),
                    );
                }
            }
            Err(why) => {
                let mut cells = vec![setup.name.to_string(), format!("refused: {why}")];
                cells.resize(columns.len(), "—".into());
                rows.push(cells);
            }
        }
    }
    let names: Vec<&str> = std::iter::once(as_run).chain(reruns.iter().map(|(s, _)| s.name)).collect();
    let summary = (verdicts.iter()).map(|(claim, v)| summary(claim, v, &names)).collect::<Vec<_>>().join(" ");
    Robustness {
        about: format!(
            "The experiment rerun whole on each setup below (on {SETUP_SEEDS} seeds where it repeats over seeds), with every claim decided by the same lines; the first row is the experiment as run above."
        ),
        columns,
        rows,
        summary,
        verdicts,
    }
}

/// One row: the setup's name, each claim's test figures as shown, and its verdict.
fn row(f: &mut Findings, name: &str, claims: &[super::Prediction], rerun: Option<(&Setup, &Findings)>) -> Vec<String> {
    let mut cells = vec![name.to_string()];
    for p in claims {
        for t in &p.tests {
            cells.push(match rerun {
                None => f.shown(&t.figure),
                Some((setup, r)) => match r.figure_named(&t.figure) {
                    Some(x) => {
                        let x = super::Figure { id: format!("{}@{}", t.figure, setup.id), ..x.clone() };
                        f.figures.push(x.clone());
                        x.shown
                    }
                    None => "—".into(),
                },
            });
        }
        let verdict = match rerun {
            None => p.verdict,
            Some((_, r)) => r.predictions.iter().find(|q| q.id == p.id).and_then(|q| q.verdict),
        };
        cells.push(verdict.map_or("—", Verdict::word).to_string());
    }
    cells
}

/// "`id` is held on every setup", or where it flips: each verdict with the setups that gave it.
fn summary(claim: &str, verdicts: &[Verdict], names: &[&str]) -> String {
    if verdicts.iter().all(|v| *v == verdicts[0]) {
        return format!("`{claim}` is {} on all {} setups.", verdicts[0].word(), verdicts.len());
    }
    let mut groups: Vec<(Verdict, Vec<&str>)> = Vec::new();
    for (v, name) in verdicts.iter().zip(names) {
        match groups.iter_mut().find(|(g, _)| g == v) {
            Some((_, n)) => n.push(name),
            None => groups.push((*v, vec![name])),
        }
    }
    let parts: Vec<String> = groups.iter().map(|(v, n)| format!("{}: {}", v.word(), n.join(", "))).collect();
    format!("`{claim}` depends on the setup — {}.", parts.join("; "))
}

/// A test's words as a column header: the first letter capitalised, unless the first word is a name like
/// "p99" that is written in lower case.
fn capitalised(s: &str) -> String {
    if s.split(' ').next().is_some_and(|w| w.chars().any(|c| c.is_ascii_digit())) {
        return s.to_string();
    }
    let mut c = s.chars();
    c.next().map(|x| x.to_uppercase().chain(c).collect()).unwrap_or_default()
}
