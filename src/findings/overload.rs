//! Experiments 5 and 6: what to do when the offered load is past capacity — add replicas or shed, and which
//! arrivals to shed.

use super::runs::{Config, PEER, Runs, excerpt, mean, offer, run, shipped};
use super::{Findings, Line, Test, Unit, Verdict};
use crate::scenario::{self, Spec};
use crate::spec::AdmissionSpec;

/// The overload both experiments run at, as a share of one replica's sustained capacity.
const OVERLOAD: f64 = 1.5;
/// The e2e objective deadline admission checks: TTFT 2 s plus 256 tokens at 50 ms.
const E2E_MS: f64 = 15_000.0;

/// The benchmark scenario with an e2e objective, offered `OVERLOAD` × `sat` on `replicas` replicas behind
/// `admission`, on seed k.
fn overloaded(cfg: &Config, k: u64, sat: f64, replicas: u32, admission: AdmissionSpec) -> Spec {
    let mut s = shipped(PEER, cfg, k);
    offer(&mut s, OVERLOAD * sat);
    for c in &mut s.workload.classes {
        c.slo.e2e_ms = Some(E2E_MS);
    }
    s.cluster.replicas = replicas;
    s.admission = admission;
    s
}

/// One overloaded run: SLO attainment over every offered request (the shed count as misses), the share shed,
/// and the p99 TTFT of the requests served.
#[derive(Clone, Copy)]
struct Outcome {
    attainment: f64,
    shed: f64,
    ttft_p99_s: f64,
    /// The share of the requests served that finished past their e2e objective.
    late: f64,
}

fn outcome(s: &Spec, littles: &mut Runs) -> Outcome {
    let r = run(s, littles);
    let n = r.summary.requests.max(1) as f64;
    let served = r.requests.iter().filter(|q| q.outcome == crate::request::Outcome::Completed);
    let late = served.clone().filter(|q| (q.done_ns - q.arrival_ns) as f64 > E2E_MS * 1e6).count();
    Outcome {
        attainment: r.summary.slo_attainment,
        shed: r.summary.rejected as f64 / n,
        ttft_p99_s: r.summary.ttft_s.p99,
        late: late as f64 / served.count().max(1) as f64,
    }
}

/// The remedies experiment 5 compares: a name, the replicas, and the admission policy (built from the
/// sustained capacity `sat`, in req/s, and the mean tokens of a request).
fn remedies(sat: f64, tokens: f64) -> Vec<(String, u32, AdmissionSpec)> {
    let bucket = sat * tokens;
    vec![
        ("Nothing (1 replica)".into(), 1, AdmissionSpec::None),
        ("Queue cap 8".into(), 1, AdmissionSpec::QueueCap { max_waiting: 8 }),
        ("Queue cap 64".into(), 1, AdmissionSpec::QueueCap { max_waiting: 64 }),
        ("Deadline rejection (slack 1)".into(), 1, AdmissionSpec::Deadline { slack: 1.0 }),
        ("Random drop of 1 − 1/ρ".into(), 1, AdmissionSpec::RandomDrop { probability: 1.0 - 1.0 / OVERLOAD }),
        (
            "Token bucket at capacity, 4 s burst".into(),
            1,
            AdmissionSpec::TokenBucket { rate_tokens_per_s: bucket, burst_tokens: 4.0 * bucket },
        ),
        ("2 replicas".into(), 2, AdmissionSpec::None),
        ("3 replicas".into(), 3, AdmissionSpec::None),
    ]
}

/// Experiment 5, doubling the fleet against every shedding policy at ρ = 1.5 of one replica.
pub(super) fn fleet_or_shed(f: &mut Findings, cfg: &Config, sat: f64, littles: &mut Runs) {
    f.expect_on(
        "fleet",
        "At ρ = 1.5 of one replica's sustained capacity, a second replica adds 33 points of SLO attainment and a third 0.0, as the seed measured, and the second keeps more of the offered requests within their objectives than any shedding policy (the shed count as misses).",
        vec![
            Test::seed("fleet.second_replica", "the second replica's gain", 0.33, Unit::Points),
            Test::seed("fleet.third_replica", "the third replica's gain", 0.0, Unit::Points),
            Test::new("fleet.margin_over_best_shed", "its lead over the best shedding policy", Line::Above(0.0), Unit::Points),
        ],
    );
    let sc = scenario::validate(&shipped(PEER, cfg, 0)).expect("the benchmark scenario is valid");
    let (prompt, output) = crate::bench::mean_tokens(&sc);
    let tokens = prompt + output;
    let arms = remedies(sat, tokens);
    let runs: Vec<Vec<Outcome>> = (arms.iter())
        .map(|(_, n, a)| {
            (0..cfg.repetitions).map(|k| outcome(&overloaded(cfg, k, sat, *n, a.clone()), littles)).collect()
        })
        .collect();
    let mut rows = Vec::new();
    for (i, ((name, ..), outs)) in arms.iter().zip(&runs).enumerate() {
        let col = |f: &mut Findings, what: &str, unit: Unit, x: fn(&Outcome) -> f64| {
            f.mean_ci(&format!("fleet.{i}.{what}"), &outs.iter().map(x).collect::<Vec<_>>(), unit).0
        };
        rows.push(vec![
            name.clone(),
            col(f, "attainment", Unit::Share, |o| o.attainment),
            col(f, "shed", Unit::Share, |o| o.shed),
            col(f, "ttft_p99", Unit::Seconds, |o| o.ttft_p99_s),
        ]);
    }
    let att = |i: usize| runs[i].iter().map(|o| o.attainment).collect::<Vec<_>>();
    let diff = |a: Vec<f64>, b: Vec<f64>| a.iter().zip(&b).map(|(x, y)| x - y).collect::<Vec<_>>();
    let (one, two, three) = (0, arms.len() - 2, arms.len() - 1);
    let best_shed = (1..two).max_by(|a, b| mean(&att(*a)).total_cmp(&mean(&att(*b)))).unwrap_or(one);
    let (second, _) = f.mean_ci("fleet.second_replica", &diff(att(two), att(one)), Unit::Points);
    let (third, _) = f.mean_ci("fleet.third_replica", &diff(att(three), att(two)), Unit::Points);
    let (margin, _) = f.mean_ci("fleet.margin_over_best_shed", &diff(att(two), att(best_shed)), Unit::Points);
    let rate = f.figure("fleet.rate_rps", OVERLOAD * sat, Unit::Rps);
    let rho = f.figure("fleet.rho", OVERLOAD, Unit::Percent);
    let chart = f.bars(
        "SLO attainment of every offered request",
        "%",
        arms.iter().enumerate().map(|(i, (name, ..))| (name.clone(), format!("fleet.{i}.attainment"))).collect(),
    );
    let s = f.section(
        "fleet",
        "5. A second replica against shedding",
        "Past capacity, does adding a replica or turning arrivals away keep more requests within their objectives — and what is each further replica worth?",
    );
    s.setup = format!(
        "The benchmark scenario offered {rate} (Poisson), with an e2e objective of 15 s added to its TTFT 2 s and TPOT 100 ms (what deadline rejection checks). Each shedding policy runs on one replica; the fleet runs its replicas round robin with no shedding. Attainment counts every offered request, the shed as misses; p99 TTFT is over the requests served. The random drop is told the overload (it drops 1 − 1/ρ); the token bucket refills at the sustained capacity in tokens (prompt + output)."
    );
    s.regime = format!(
        "ρ = {rho} of one replica's sustained capacity measured in experiment 1: overload, the queue grows without shedding."
    );
    s.scenario = excerpt(
        PEER,
        cfg,
        arms.iter().map(|(name, n, a)| (name.clone(), overloaded(cfg, 0, sat, *n, a.clone()))).collect(),
    );
    s.columns = ["Remedy", "SLO attainment", "Shed", "p99 TTFT of the served"].map(String::from).to_vec();
    s.rows = rows;
    s.chart = Some(chart);
    let verdict = f.decide("fleet");
    let alone = f.shown("fleet.0.attainment");
    f.found(
        "fleet",
        format!(
            "The second replica adds {second} of SLO attainment and the third {third}; the best shedding policy here, {}, stays {margin} below two replicas. Shedding can only choose which requests miss; the second replica serves them.{}",
            arms[best_shed].0.to_lowercase(),
            if verdict == Verdict::Held {
                String::new()
            } else {
                format!(" What the second replica is worth depends on how far past capacity one replica is: here one alone meets the objectives for {alone} of the offered requests.")
            }
        ),
        verdict,
    );
}

/// Each seed's run behind `admission`, and a random drop of the share it shed on the same seed.
fn against_random(cfg: &Config, sat: f64, admission: &AdmissionSpec, littles: &mut Runs) -> [Vec<Outcome>; 2] {
    let (policy, random) = (0..cfg.repetitions)
        .map(|k| {
            let d = outcome(&overloaded(cfg, k, sat, 1, admission.clone()), littles);
            let r = outcome(&overloaded(cfg, k, sat, 1, AdmissionSpec::RandomDrop { probability: d.shed }), littles);
            (d, r)
        })
        .unzip();
    [policy, random]
}

/// Experiment 6's two policies: deadline rejection as the seed built it (the queue drained at the prefill rate)
/// and the feasibility check that reads the measured drain rate and checks TTFT and TPOT too; each against a random drop
/// of the share it sheds. (row name, figure id, admission)
const SHEDDERS: [(&str, &str, AdmissionSpec); 2] = [
    ("Deadline rejection (slack 1)", "deadline.deadline", AdmissionSpec::Deadline { slack: 1.0 }),
    ("SLO feasibility, measured drain (slack 1)", "deadline.measured", AdmissionSpec::Feasible { slack: 1.0 }),
];

/// Experiment 6, deadline-feasibility rejection against dropping the same share at random.
pub(super) fn deadline_or_random(f: &mut Findings, cfg: &Config, sat: f64, littles: &mut Runs) {
    f.expect_on(
        "deadline",
        "At ρ = 1.5, rejecting the arrivals whose estimated completion misses their e2e deadline sheds 25 % of them and keeps 71.5 % of the offered requests within their objectives, and loses to dropping the same share at random, as the seed measured.",
        vec![
            Test::seed("deadline.deadline.shed", "the share it sheds", 0.25, Unit::Share),
            Test::seed("deadline.deadline.attainment", "its SLO attainment", 0.715, Unit::Share),
            Test::new("deadline.deadline.gain", "its lead over random drop", Line::Below(0.0), Unit::Points),
        ],
    );
    f.expect_on(
        "deadline.measured",
        "A competent check — the queue ahead drained at the rate the replica has been completing requests, and TTFT and TPOT checked as well as e2e (`feasible`) — keeps more of the offered requests within their objectives than dropping the share it sheds at random.",
        vec![Test::new("deadline.measured.gain", "its lead over random drop", Line::Above(0.0), Unit::Points)],
    );
    let (mut rows, mut gains, mut bars) = (Vec::new(), Vec::new(), Vec::new());
    for (name, id, admission) in &SHEDDERS {
        let [policy, random] = against_random(cfg, sat, admission, littles);
        for (name, id, outs) in [
            (name.to_string(), id.to_string(), &policy),
            (
                format!("Random drop, {} share", if *id == "deadline.deadline" { "the same" } else { "its" }),
                format!("{id}.random"),
                &random,
            ),
        ] {
            let col = |f: &mut Findings, what: &str, unit: Unit, x: fn(&Outcome) -> f64| {
                f.mean_ci(&format!("{id}.{what}"), &outs.iter().map(x).collect::<Vec<_>>(), unit).0
            };
            bars.push((name.clone(), format!("{id}.attainment")));
            rows.push(vec![
                name,
                col(f, "shed", Unit::Share, |o| o.shed),
                col(f, "attainment", Unit::Share, |o| o.attainment),
                col(f, "ttft_p99", Unit::Seconds, |o| o.ttft_p99_s),
                col(f, "late", Unit::Share, |o| o.late),
            ]);
        }
        let gain: Vec<f64> = policy.iter().zip(&random).map(|(d, r)| d.attainment - r.attainment).collect();
        gains.push(f.mean_ci(&format!("{id}.gain"), &gain, Unit::Points));
        let shed: Vec<f64> = policy.iter().map(|o| o.shed).collect();
        f.figure(&format!("{id}.rho_after_random_drop"), OVERLOAD * (1.0 - mean(&shed)), Unit::Percent);
    }
    let rho = f.figure("deadline.rho", OVERLOAD, Unit::Percent);
    let chart = f.bars("SLO attainment, shedding the same share", "%", bars);
    let s = f.section(
        "deadline",
        "6. Deadline rejection against random drop",
        "When some arrivals must be turned away, is it better to turn away those predicted to miss their deadline, or the same share at random?",
    );
    s.setup = "Experiment 5's overload on one replica. Deadline rejection estimates each arrival's completion (the queue ahead drained at the prefill rate, then its own prefill and decode) and rejects it when the estimate passes its 15 s e2e objective. The feasibility check (`feasible`) drains the queue ahead one request per completion at the gap between completions the replica has measured, and rejects an arrival whose estimated first token passes its 2 s TTFT objective, whose measured step passes its 100 ms TPOT objective, or whose completion (its predicted output at the measured step) passes its 15 s e2e. Each is set against a random drop of the share it shed on the same seed.".into();
    s.regime = format!("ρ = {rho} of one replica's sustained capacity (experiment 1).");
    s.scenario = excerpt(
        PEER,
        cfg,
        SHEDDERS.iter().map(|(name, _, a)| (name.to_string(), overloaded(cfg, 0, sat, 1, a.clone()))).collect(),
    );
    s.columns = ["Policy", "Shed", "SLO attainment", "p99 TTFT of the served", "Served past the e2e deadline"]
        .map(String::from)
        .to_vec();
    s.rows = rows;
    s.chart = Some(chart);
    answer_deadline(f, &gains);
}

/// Experiment 6's answers, from the figures written.
fn answer_deadline(f: &mut Findings, gains: &[(String, (f64, f64, f64))]) {
    let [(gain_shown, _), (measured_shown, _)] = [gains[0].clone(), gains[1].clone()];
    let [shed, att, late, ttft, left] = ["shed", "attainment", "late", "ttft_p99", "rho_after_random_drop"]
        .map(|x| f.shown(&format!("deadline.deadline.{x}")));
    let why = format!(
        "Deadline rejection estimates an arrival's wait as if the queue ahead drained at the prefill rate; with the batch full, a waiting request leaves the queue only when a running one finishes and frees its place, far slower, so the estimate admits requests that cannot make it: {late} of those it serves finish past the very e2e deadline it checked, and they wait past their 2 s TTFT objective too (p99 TTFT of the served: {ttft}). Dropping the same share at random leaves the replica at ρ = {left}"
    );
    let verdict = f.decide("deadline");
    f.found(
        "deadline",
        format!(
            "Deadline rejection sheds {shed} of the arrivals and keeps {att} of them within their objectives; shedding the same share, its SLO attainment less random drop's is {gain_shown}. {why}{}",
            match f.decide_on("deadline", "deadline.deadline.gain") {
                Verdict::Held => ", which serves more of the offered requests within their objectives.",
                Verdict::Inconclusive => ", still past saturation, where its attainment swings from seed to seed with how early the queue passes the TTFT objective: the interval straddles zero.",
                Verdict::Contradicted => "; yet checking the deadline picks the requests that can still make it.",
            }
        ),
        verdict,
    );
    let [shed, att, late, left] =
        ["shed", "attainment", "late", "rho_after_random_drop"].map(|x| f.shown(&format!("deadline.measured.{x}")));
    let rho = f.figure_named("deadline.measured.rho_after_random_drop").map_or(0.0, |x| x.value);
    let near = if (0.95..=1.05).contains(&rho) {
        ", about its capacity, where its attainment swings from seed to seed"
    } else {
        ""
    };
    let verdict = f.decide("deadline.measured");
    f.found(
        "deadline.measured",
        format!(
            "Reading the measured drain and checking TTFT and TPOT, the check sheds {shed} and keeps {att} of the offered requests within their objectives, {measured_shown} against a random drop of that share; {late} of those it serves finish past their e2e deadline. The random drop leaves the replica at ρ = {left}{near}."
        ),
        verdict,
    );
}
