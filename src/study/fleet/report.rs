//! The fleet planner's report: a row per candidate, the cheapest passing one marked, its interval and how
//! robust the ranking is, and the cost vs p95 TTFT chart with its Pareto frontier.

use super::FleetStudy;
use super::cost::{PerMillion, TokensPerHour, per_million, token_times_ns};
use super::lane::Lane;
use crate::capacity::search::Search;
use crate::cost::presets;
use crate::study::{
    Cell, Chart, ChartSeries, ColumnDef, Format, StudyDef, StudyReport, column, decisive, mean_ci, mean_ci_nonnegative,
    objective_words, pareto, report_head, table,
};

/// A candidate's figures, as its row shows them.
pub struct Row<'a> {
    pub lane: &'a Lane,
    /// Units chosen, and the 95 % interval of the units each seed needed (widened by the model's error).
    pub units: Option<u32>,
    pub interval: Option<(u32, u32)>,
    pub seed_interval: Option<(u32, u32)>,
    pub usd_per_hour: Option<f64>,
    pub per_million: Option<PerMillion>,
    /// Sustained capacity of one unit (the middle of each seed's final bracket): mean and 95 % interval over
    /// the seeds.
    pub capacity: Option<(f64, f64, f64)>,
    /// The target rate ÷ (units × one unit's sustained capacity): how close to its capacity the fleet runs.
    pub load: Option<f64>,
    pub attainment: Option<f64>,
    pub p_met: Option<f64>,
    pub ttft_p95_s: Option<f64>,
    pub e2e_p95_s: Option<f64>,
    pub diagnosis: String,
    pub status: String,
}

fn columns<'a>() -> [ColumnDef<Row<'a>>; 20] {
    [
        column("Candidate", "", Format::Text, |r| r.lane.cand.name.as_str().into()),
        column("Device(s)", "", Format::Text, |r| r.lane.cand.devices.as_str().into()),
        column("TP", "", Format::Int, |r| r.lane.cand.tp.into()),
        column("Layout", "", Format::Text, |r| r.lane.cand.layout.as_str().into()),
        column("Replicas", "", Format::Int, |r| r.units.into()),
        column("Replicas, 95 % interval", "", Format::Text, |r| r.interval.map(|(a, b)| format!("{a} – {b}")).into()),
        column("GPUs", "", Format::Int, |r| r.units.map(|n| n * r.lane.cand.gpus_per_unit).into()),
        decisive("$/h", "USD", Format::Num, |r| r.usd_per_hour.into()),
        column("$/M input tokens", "USD", Format::Num, |r| r.per_million.map(|m| m.input).into()),
        column("$/M cached input tokens", "USD", Format::Num, |r| r.per_million.and_then(|m| m.cached_input).into()),
        column("$/M output tokens", "USD", Format::Num, |r| r.per_million.map(|m| m.output).into()),
        column("Capacity/replica", "req/s", Format::Num, |r| {
            r.capacity.map_or(Cell::Empty, |(mean, lo, hi)| Cell::Interval { mean, lo, hi })
        }),
        column("Load at target", "ρ", Format::Percent, |r| r.load.into()),
        column("Attainment at target", "", Format::Percent, |r| r.attainment.into()),
        decisive("P(objectives met)", "", Format::Percent, |r| r.p_met.into()),
        decisive("P(met), 95 % interval", "", Format::Text, |r| r.p_met_interval().into()),
        column("p95 TTFT", "s", Format::Seconds, |r| r.ttft_p95_s.into()),
        column("p95 E2E", "s", Format::Seconds, |r| r.e2e_p95_s.into()),
        column("Diagnosis", "", Format::Text, |r| r.diagnosis.as_str().into()),
        decisive("Status", "", Format::Text, |r| r.status.as_str().into()),
    ]
}

impl Row<'_> {
    /// "44 – 100 %": the Wilson 95 % interval of the share of unseen seeds on which the fleet met the objectives.
    fn p_met_interval(&self) -> Option<String> {
        let n = self.lane.validation.len();
        let (lo, hi) = crate::study::wilson95(self.p_met?, n)?;
        Some(format!("{:.0} – {:.0} %", lo * 100.0, hi * 100.0))
    }
}

/// The integers a 95 % interval of `x`'s mean spans, rounded outward, within [1, max].
fn integer_interval(x: &[f64], max: u32) -> (u32, u32) {
    let (_, lo, hi) = mean_ci(x);
    let clamp = |v: f64| v.clamp(1.0, max as f64) as u32;
    (clamp(lo.floor()), clamp(hi.ceil()))
}

fn row<'a>(st: &FleetStudy, lane: &'a Lane) -> Row<'a> {
    let mut r = Row {
        lane,
        units: lane.chosen,
        interval: None,
        seed_interval: None,
        usd_per_hour: lane.chosen.map(|n| n as f64 * lane.cand.usd_per_unit_hour),
        per_million: None,
        capacity: None,
        load: None,
        attainment: None,
        p_met: None,
        ttft_p95_s: None,
        e2e_p95_s: None,
        diagnosis: String::new(),
        status: String::new(),
    };
    let caps: Vec<f64> = lane.capacity.iter().filter_map(Search::boundary).collect();
    if !caps.is_empty() {
        r.capacity = Some(mean_ci_nonnegative(&caps));
    }
    if let (Some(n), Some((cap, ..))) = (lane.chosen, r.capacity) {
        r.load = (cap > 0.0).then(|| st.target_rps / (n as f64 * cap));
    }
    let mins: Vec<f64> = lane.replicas.iter().filter_map(Search::found).collect();
    if lane.chosen.is_some() {
        let seeds = integer_interval(&mins, lane.z.max_replicas);
        let e = st.p.model_error.unwrap_or(0.0);
        let lo = ((seeds.0 as f64 / (1.0 + e)).floor() as u32).max(1);
        let hi = ((seeds.1 as f64 / (1.0 - e)).ceil() as u32).min(lane.z.max_replicas.max(seeds.1));
        (r.seed_interval, r.interval) = (Some(seeds), Some((lo, hi)));
    }
    validation_figures(st, lane, &mut r);
    r.status = status(st, lane);
    r
}

/// The chosen fleet's figures at the target rate, from the seeds the search never saw.
fn validation_figures(st: &FleetStudy, lane: &Lane, r: &mut Row) {
    let v = &lane.validation;
    let (Some(n), false) = (lane.chosen, v.is_empty()) else { return };
    let mean = |f: &dyn Fn(&crate::study::RunSummary) -> f64| v.iter().map(f).sum::<f64>() / v.len() as f64;
    r.attainment = Some(mean(&|x| x.slo_attainment));
    r.p_met = Some(v.iter().filter(|x| st.criterion.passes(x)).count() as f64 / v.len() as f64);
    r.ttft_p95_s = Some(mean(&|x| x.ttft_p95_s));
    r.e2e_p95_s = Some(mean(&|x| x.e2e_p95_s));
    r.diagnosis = most_common(v.iter().map(|x| x.diagnosis_kind.as_str()));
    let Ok(u) = &lane.cand.validated else { return };
    let (prompt, output) = u.mean_tokens;
    let cached = mean(&|x| x.prefill_saved_fraction.unwrap_or(0.0));
    let tokens = TokensPerHour::at(st.target_rps, prompt, output, cached);
    // Little's law: requests in one decode worker at once, the batch its output tokens are decoded in.
    let workers = n * lane.cand.pd.map_or(1, |(_, d)| d);
    let in_system = st.target_rps / workers as f64 * mean(&|x| x.e2e_mean_s);
    let batch = (in_system.round() as u32).clamp(1, u.decode_max_num_seqs);
    let ns = token_times_ns(&u.prefill_cost, &u.decode_cost, prompt, batch, prompt + output / 2.0);
    let usd = n as f64 * lane.cand.usd_per_unit_hour;
    let prefill_usd = lane.cand.prefill_usd_per_unit_hour.map(|p| p * n as f64);
    r.per_million = Some(per_million(usd, prefill_usd, &tokens, ns));
}

/// The most frequent of `xs` (the first on a tie).
fn most_common<'a>(xs: impl Iterator<Item = &'a str> + Clone) -> String {
    let count = |k: &str| xs.clone().filter(|x| *x == k).count();
    xs.clone().max_by_key(|k| (count(k), std::cmp::Reverse(xs.clone().position(|x| x == *k)))).unwrap_or("").to_string()
}

fn status(st: &FleetStudy, lane: &Lane) -> String {
    if let Some(s) = &lane.skipped {
        return s.clone();
    }
    if let Some(k) = lane.replicas.iter().position(|s| s.found().is_none()) {
        return format!(
            "no count up to {} units carries {:.3} req/s on seed {}",
            lane.z.max_replicas,
            st.target_rps * (1.0 + st.p.headroom),
            lane.cand.unit.seed + k as u64
        );
    }
    "passes".into()
}

pub fn report(st: &FleetStudy) -> StudyReport {
    let needed = st.target_rps * (1.0 + st.p.headroom);
    let question = format!(
        "which candidate carries {} req/s (sized for {needed:.3} with {:.0} % headroom) at the objectives for the least money?",
        st.target_rps,
        st.p.headroom * 100.0
    );
    let mut rep = report_head(FleetStudy::ABOUT, &st.base, question);
    let rows: Vec<Row> = st.lanes.iter().map(|l| row(st, l)).collect();
    rep.best_row = cheapest(&rows);
    (rep.columns, rep.rows) = table(&columns(), &rows);
    if let Some(b) = rep.best_row {
        let status = rep.columns.iter().position(|c| c.label == "Status").expect("a status column");
        rep.rows[b][status] = "cheapest passing".into();
    }
    rep.answer = answer(st, &rows, rep.best_row);
    rep.notes = notes(st, &rows);
    rep.charts = vec![chart(&rows)];
    rep.runs = st.lanes.iter().flat_map(|l| l.validation.iter().cloned()).collect();
    rep
}

/// The cheapest row with a fleet (fewest GPUs, then the first, on a tie).
fn cheapest(rows: &[Row]) -> Option<usize> {
    (0..rows.len()).filter(|&i| rows[i].usd_per_hour.is_some()).min_by(|&a, &b| {
        let key = |i: usize| {
            (rows[i].usd_per_hour.unwrap_or(f64::MAX), rows[i].units.unwrap_or(0) * rows[i].lane.cand.gpus_per_unit)
        };
        key(a).0.total_cmp(&key(b).0).then(key(a).1.cmp(&key(b).1)).then(a.cmp(&b))
    })
}

fn answer(st: &FleetStudy, rows: &[Row], best: Option<usize>) -> String {
    let Some(b) = best else {
        return format!(
            "no candidate carries {} req/s at the objectives within {} units: every row says why.",
            st.target_rps, st.p.max_replicas
        );
    };
    let r = &rows[b];
    let (n, (lo, hi)) = (r.units.unwrap_or(0), r.interval.unwrap_or((0, 0)));
    let pm = r.per_million.expect("a fleet has prices");
    let mut s = format!(
        "{}: {n} replica{} ({} GPUs; the units a seed needs lie in {lo} – {hi} at 95 %), ${:.2}/h — ${:.3} per million input{} and ${:.3} per million output tokens. Run at {} req/s on {} seeds the search never saw, the fleet met the objectives on {} of them (P(objectives met) 95 % interval {}; mean attainment {:.1} %, p95 TTFT {}).",
        r.lane.cand.name,
        if n == 1 { "" } else { "s" },
        n * r.lane.cand.gpus_per_unit,
        r.usd_per_hour.unwrap_or(0.0),
        pm.input,
        pm.cached_input.map_or(String::new(), |c| format!(", ${c:.3} per million cached input")),
        pm.output,
        st.target_rps,
        st.p.repetitions,
        (r.p_met.unwrap_or(0.0) * r.lane.validation.len() as f64).round(),
        r.p_met_interval().unwrap_or_default(),
        r.attainment.unwrap_or(0.0) * 100.0,
        crate::metrics::secs(r.ttft_p95_s.unwrap_or(0.0)),
    );
    s.push_str(&robustness(rows, b));
    s
}

/// Whether the two cheapest could swap within their replica intervals.
fn robustness(rows: &[Row], best: usize) -> String {
    let usd = |r: &Row, n: u32| n as f64 * r.lane.cand.usd_per_unit_hour;
    let runner = (0..rows.len())
        .filter(|&i| i != best && rows[i].usd_per_hour.is_some())
        .min_by(|&a, &b| rows[a].usd_per_hour.unwrap_or(0.0).total_cmp(&rows[b].usd_per_hour.unwrap_or(0.0)));
    let Some(j) = runner else { return " It is the only candidate that passes.".into() };
    let (b, r) = (&rows[best], &rows[j]);
    let (b_hi, r_lo) = (usd(b, b.interval.map_or(0, |x| x.1)), usd(r, r.interval.map_or(0, |x| x.0)));
    let gap = (r.usd_per_hour.unwrap_or(0.0) / b.usd_per_hour.unwrap_or(1.0) - 1.0) * 100.0;
    if r.usd_per_hour == b.usd_per_hour {
        return format!(
            " {} costs the same ({} GPUs); the first listed with the fewest GPUs is marked.",
            r.lane.cand.name,
            r.units.unwrap_or(0) * r.lane.cand.gpus_per_unit
        );
    }
    if r_lo < b_hi {
        format!(
            " The next, {}, costs {gap:+.1} % more, but the ranking could flip within the intervals: at the low end of its interval it costs ${r_lo:.2}/h, under this one's high end (${b_hi:.2}/h).",
            r.lane.cand.name
        )
    } else {
        format!(
            " The next, {}, costs {gap:+.1} % more, and the ranking holds across both intervals (its low end ${r_lo:.2}/h ≥ this one's high end ${b_hi:.2}/h).",
            r.lane.cand.name
        )
    }
}

fn notes(st: &FleetStudy, rows: &[Row]) -> Vec<String> {
    let mut notes = vec![
        format!(
            "Each candidate is searched on {} seeds ({} + k, the same requests for every candidate): the highest rate one replica (one P/D unit) sustains — its sustained capacity, a stable run objectives aside (docs/metrics.md, \"Stability\"), shown as Capacity/replica with Load at target, the target ÷ (replicas × it) —, then the fewest replicas that carry {:.3} req/s ({} req/s with {:.0} % headroom), every count simulated whole with the scenario's router. The fleet gets the most any seed needed; the interval is the 95 % interval of the counts the seeds needed.",
            st.p.repetitions,
            st.base.seed,
            st.target_rps * (1.0 + st.p.headroom),
            st.target_rps,
            st.p.headroom * 100.0
        ),
        format!(
            "Attainment, P(objectives met), p95 TTFT and p95 E2E are of the chosen fleet run at {} req/s on {} seeds no search saw ({} + {} + k). A run meets the objectives when {}.",
            st.target_rps,
            st.p.repetitions,
            st.base.seed,
            super::VALIDATION_SEED_OFFSET,
            criterion_words(st)
        ),
        format!(
            "Prices: {} read {}, US dollars per GPU-hour{}. $/M tokens splits the hour's cost over the tokens served in it by the time each kind takes on the candidate's cost model (a cached prompt token: what reading its KV adds to the prefill of the rest); on a P/D unit the prefill pool pays for prompt tokens and the decode pool for output.",
            presets::PRICE_SOURCE,
            presets::PRICE_READ_ON,
            if st.p.prices.is_empty() { String::new() } else { format!("; set in the options: {}", prices_set(st)) }
        ),
    ];
    let skipped: Vec<&str> = rows
        .iter()
        .filter(|r| r.lane.skipped.as_deref().is_some_and(|s| s.starts_with("pruned")))
        .map(|r| r.lane.cand.name.as_str())
        .collect();
    if !skipped.is_empty() {
        notes.push(format!(
            "Pruned without a run ({}): {} — a unit's textbook ceiling (a full batch of decodes, no prefill, no queueing) times the most replicas ({}) is under the rate to carry, so no simulation could pass.",
            skipped.len(),
            skipped.join("; "),
            st.p.max_replicas
        ));
    }
    let unmeasured: Vec<&str> = (rows.iter())
        .filter(|r| r.lane.skipped.is_none() && r.capacity.is_none())
        .map(|r| r.lane.cand.name.as_str())
        .collect();
    if !unmeasured.is_empty() {
        notes.push(format!(
            "Capacity/replica not measured ({}): no rate tried was stable on one unit — runs with fewer than 500 completions in their steady window judge nothing (raise workload.requests), or one unit is overloaded at every rate tried; the replica search started at one unit.",
            unmeasured.join("; ")
        ));
    }
    if rows.iter().any(|r| r.lane.cand.pd.is_some()) {
        notes.push("On a P/D row a replica is one unit — its prefill and decode workers together — and Capacity/replica is one unit's; GPUs counts both pools.".into());
    }
    if let Some(n) = model_error_note(st, rows) {
        notes.push(n);
    }
    notes
}

fn prices_set(st: &FleetStudy) -> String {
    st.p.prices.iter().map(|(k, v)| format!("{k} ${v}")).collect::<Vec<_>>().join(", ")
}

fn criterion_words(st: &FleetStudy) -> String {
    let c = &st.criterion;
    let objectives: String =
        st.base.objectives.percentiles.iter().map(|o| format!(", {} holds", objective_words(o))).collect();
    match c.max_mean_wait_ms {
        Some(w) => format!("its mean queueing delay is at most {w} ms and its waiting queue does not grow"),
        None => format!(
            "at least {:.1} % of its requests meet their class's SLO{objectives}, and its waiting queue does not grow",
            c.target * 100.0
        ),
    }
}

/// What dominates the cheapest row's interval: the seeds' spread, or the calibrated model's error.
fn model_error_note(st: &FleetStudy, rows: &[Row]) -> Option<String> {
    let e = st.p.model_error?;
    let r = &rows[cheapest(rows)?];
    let ((s0, s1), (m0, m1)) = (r.seed_interval?, r.interval?);
    let (seeds, model) = (s1 - s0, (m1 - m0) - (s1 - s0));
    let which = if model > seeds {
        "the model's error dominates: calibrate on more measured runs before buying"
    } else if model == seeds {
        "the two weigh the same"
    } else {
        "the seeds' spread dominates: more repetitions narrow it"
    };
    Some(format!(
        "With the calibrated model's held-out error ({:.1} %), the cheapest row's interval widens from {s0} – {s1} (seeds) to {m0} – {m1} replicas: {which}.",
        e * 100.0
    ))
}

/// Cost per hour vs p95 TTFT at the target rate, the Pareto frontier joined.
fn chart(rows: &[Row]) -> Chart {
    let with: Vec<&Row> = rows.iter().filter(|r| r.usd_per_hour.is_some() && r.ttft_p95_s.is_some()).collect();
    let pts: Vec<(f64, f64)> =
        with.iter().map(|r| (r.usd_per_hour.unwrap_or(0.0), r.ttft_p95_s.unwrap_or(0.0))).collect();
    let front = pareto(&pts.iter().map(|&(c, t)| (-c, t)).collect::<Vec<_>>());
    let mut frontier: Vec<(f64, f64)> = pts.iter().zip(&front).filter(|(_, f)| **f).map(|(p, _)| *p).collect();
    frontier.sort_by(|a, b| a.0.total_cmp(&b.0));
    Chart {
        kind: "scatter".into(),
        title: "Cost vs p95 TTFT at the target rate".into(),
        x_label: "fleet cost (USD per hour)".into(),
        y_label: "p95 TTFT (s)".into(),
        categories: vec![],
        series: vec![
            ChartSeries {
                name: "candidates".into(),
                points: pts,
                band: vec![],
                labels: with.iter().map(|r| r.lane.cand.name.clone()).collect(),
                line: false,
            },
            ChartSeries { name: "Pareto frontier".into(), points: frontier, band: vec![], labels: vec![], line: true },
        ],
        target: None,
    }
}
