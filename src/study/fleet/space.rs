//! The search space: the product of the option lists, each point a [`Candidate`] — one replica (or one P/D
//! unit) of the scenario as that point changes it, with its GPUs and its price per hour.

use serde::{Deserialize, Serialize};

use super::{FleetParams, FleetStudy, MOST_CANDIDATES};
use crate::cost::{CostModel, presets};
use crate::scenario::{self, DisaggSpec, HardwareSpec, PoolSpec, Scenario, ScenarioError, Spec};
use crate::study::StudyDef;

/// How a candidate's GPUs are arranged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Layout {
    /// Every worker prefills and decodes.
    Colocated {},
    /// A unit of `prefill` prefill workers and `decode` decode workers over the scenario's KV link (or the P/D
    /// study's default); each pool on its own device when given, else the candidate's.
    Pd {
        prefill: u32,
        decode: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prefill_device: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        decode_device: Option<String>,
    },
}

/// One point of the search space.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// What sets it apart from the other candidates ("h100-sxm, TP 2, P/D 1:2").
    pub name: String,
    /// "h100-sxm", or "h100-sxm → h20" for P/D pools on different devices.
    pub devices: String,
    pub tp: u32,
    /// "colocated" or "P/D 1:2".
    pub layout: String,
    /// One replica (one P/D unit) at the scenario's rate.
    pub unit: Spec,
    /// (prefill, decode) workers of a unit; None: colocated, one worker.
    pub pd: Option<(u32, u32)>,
    pub gpus_per_unit: u32,
    /// US dollars per hour of one unit, and of its prefill pool (P/D).
    pub usd_per_unit_hour: f64,
    pub prefill_usd_per_unit_hour: Option<f64>,
    /// What the planner reads off the unit, validated once, or why it cannot run, said in its row.
    pub validated: Result<UnitFigures, String>,
}

/// The figures the planner reads off a candidate's validated unit: kept instead of the unit's `Scenario`, which
/// holds a replayed trace's rows — a thousand candidates of a 250,000-row trace held 2.8 GB of copies.
#[derive(Clone, Debug)]
pub struct UnitFigures {
    /// A full batch of decodes, nothing else, per unit (`bench::textbook_rps_of`).
    pub textbook_rps: Option<f64>,
    /// Mean prompt and output tokens over the class mix.
    pub mean_tokens: (f64, f64),
    /// The first (prefill, or only) pool's and the last (decode, or only) pool's cost models.
    pub prefill_cost: CostModel,
    pub decode_cost: CostModel,
    /// The decode pool's batch cap.
    pub decode_max_num_seqs: u32,
}

impl UnitFigures {
    fn of(sc: &Scenario) -> UnitFigures {
        let (pre, dec) = (sc.pools.first().expect("a pool"), sc.pools.last().expect("a pool"));
        UnitFigures {
            textbook_rps: crate::bench::textbook_rps_of(sc),
            mean_tokens: crate::bench::mean_tokens(sc),
            prefill_cost: pre.cost.clone(),
            decode_cost: dec.cost.clone(),
            decode_max_num_seqs: dec.engine.max_num_seqs,
        }
    }
}

impl Candidate {
    /// The unit's scenario with `n` units (replicas, or both pools × n).
    pub fn with_units(&self, n: u32) -> Spec {
        let mut s = self.unit.clone();
        match (&mut s.cluster.disaggregation, self.pd) {
            (Some(d), Some((p, q))) => {
                d.prefill.replicas = p * n;
                d.decode.replicas = q * n;
            }
            _ => s.cluster.replicas = n,
        }
        s
    }
}

/// A list naming one value twice would make every candidate with it twice (identical rows, and an answer that
/// compares a row with itself): refused at the repeat.
fn no_repeats<T: PartialEq>(list: &[T], field: &str) -> Result<(), ScenarioError> {
    for (i, x) in list.iter().enumerate() {
        if let Some(j) = list[..i].iter().position(|y| y == x) {
            let why = format!("repeats {field}[{j}]: each value is tried once; remove one");
            return Err(ScenarioError::one(format!("{field}[{i}]"), why));
        }
    }
    Ok(())
}

/// Every candidate of the options' product, in the order devices, TP, layout, batch cap, token budget,
/// formation, scheduler (the last varies fastest). A candidate whose scenario is invalid (a model that does not
/// fit, a TP the heads do not divide) is kept with the reason; an option that names no device, or a device
/// without a price, is an error at that option.
pub fn candidates(spec: &Spec, p: &FleetParams) -> Result<Vec<Candidate>, ScenarioError> {
    let at = FleetStudy::at();
    let own_device = spec.hardware.device.clone().unwrap_or_else(|| "custom".into());
    let devices = or_own(&p.devices, own_device.clone());
    let tps = or_own(&p.tp, spec.hardware.tp);
    let layouts = or_own(&p.layouts, own_layout(spec));
    let seqs = or_own(&p.max_num_seqs, spec.engine.max_num_seqs);
    let budgets = or_own(&p.max_num_batched_tokens, spec.engine.max_num_batched_tokens);
    let formations = or_own(&p.batch_formations, spec.engine.batch_formation);
    let schedulers = or_own(&p.schedulers, spec.scheduler.clone());
    let count = [devices.len(), tps.len(), layouts.len(), seqs.len(), budgets.len(), formations.len()]
        .iter()
        .fold(schedulers.len(), |a, b| a.saturating_mul(*b));
    if count > MOST_CANDIDATES {
        return Err(ScenarioError::one(
            at,
            format!("the options make {count} candidates; at most {MOST_CANDIDATES}: shorten a list"),
        ));
    }
    check_values(spec, p)?;
    no_repeats(&p.devices, &format!("{at}.devices"))?;
    no_repeats(&p.tp, &format!("{at}.tp"))?;
    no_repeats(&p.layouts, &format!("{at}.layouts"))?;
    no_repeats(&p.max_num_seqs, &format!("{at}.max_num_seqs"))?;
    no_repeats(&p.max_num_batched_tokens, &format!("{at}.max_num_batched_tokens"))?;
    no_repeats(&p.batch_formations, &format!("{at}.batch_formations"))?;
    no_repeats(&p.schedulers, &format!("{at}.schedulers"))?;
    let price = |name: &str, field: &str| usd_per_gpu_hour(p, name, &own_device, field);
    for (i, d) in devices.iter().enumerate() {
        price(d, &format!("{at}.devices[{i}]"))?;
    }
    for (i, l) in layouts.iter().enumerate() {
        if let Layout::Pd { prefill, decode, prefill_device, decode_device } = l {
            let f = format!("{at}.layouts[{i}]");
            let mut e = scenario::Errors::default();
            e.int(&format!("{f}.prefill"), *prefill as u64, 1, 64);
            e.int(&format!("{f}.decode"), *decode as u64, 1, 64);
            e.finish()?;
            for (d, k) in [(prefill_device, "prefill_device"), (decode_device, "decode_device")] {
                if let Some(d) = d {
                    price(d, &format!("{f}.{k}"))?;
                }
            }
        }
    }
    for name in p.prices.keys() {
        let used = devices.contains(name) || layouts.iter().any(|l| pool_devices(l).contains(&Some(name)));
        if !used {
            return Err(ScenarioError::one(
                format!("{at}.prices.{name}"),
                "no candidate uses this device: add it to devices or to a layout",
            ));
        }
    }
    let vary = Vary {
        device: devices.len() > 1,
        tp: tps.len() > 1,
        layout: layouts.len() > 1,
        seqs: seqs.len() > 1,
        budget: budgets.len() > 1,
        formation: formations.len() > 1,
        scheduler: schedulers.len() > 1,
    };
    let mut out = Vec::new();
    for d in &devices {
        for &tp in &tps {
            for l in &layouts {
                for &b in &seqs {
                    for &t in &budgets {
                        for &f in &formations {
                            for s in &schedulers {
                                let point =
                                    Point { device: d, tp, layout: l, seqs: b, budget: t, formation: f, scheduler: s };
                                out.push(candidate(spec, &point, &vary, &|n: &str| {
                                    price(n, "").expect("every device's price was checked")
                                }));
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(out)
}

/// A value of a list whose validity does not depend on the rest of the candidate (a batch cap, a token budget,
/// a formation, a scheduler, a TP degree's range) is checked on the scenario alone, and refused at its option;
/// a combination that does not run (a model too big for a device at a TP) is a row that says why.
fn check_values(spec: &Spec, p: &FleetParams) -> Result<(), ScenarioError> {
    let at = FleetStudy::at();
    let mut e = scenario::Errors::default();
    for (i, &tp) in p.tp.iter().enumerate() {
        e.int(&format!("{at}.tp[{i}]"), tp as u64, 1, 64);
    }
    e.finish()?;
    let alone = |what: String, edit: &dyn Fn(&mut Spec)| {
        let mut s = spec.clone();
        edit(&mut s);
        scenario::validate(&s).map(|_| ()).map_err(|e| crate::study::at_option(e, &what))
    };
    for (i, &b) in p.max_num_seqs.iter().enumerate() {
        alone(format!("{at}.max_num_seqs[{i}]"), &|s| s.engine.max_num_seqs = b)?;
    }
    for (i, &t) in p.max_num_batched_tokens.iter().enumerate() {
        alone(format!("{at}.max_num_batched_tokens[{i}]"), &|s| {
            s.engine.max_num_batched_tokens = t;
            s.engine.prefill_chunk_tokens = s.engine.prefill_chunk_tokens.map(|c| c.min(t));
        })?;
    }
    for (i, &f) in p.batch_formations.iter().enumerate() {
        alone(format!("{at}.batch_formations[{i}]"), &|s| s.engine.batch_formation = f)?;
    }
    for (i, x) in p.schedulers.iter().enumerate() {
        alone(format!("{at}.schedulers[{i}]"), &|s| s.scheduler = x.clone())?;
    }
    Ok(())
}

/// The scenario's layout: colocated, or its pools as one P/D unit.
fn own_layout(spec: &Spec) -> Layout {
    match &spec.cluster.disaggregation {
        None => Layout::Colocated {},
        Some(d) => Layout::Pd {
            prefill: d.prefill.replicas,
            decode: d.decode.replicas,
            prefill_device: d.prefill.device.clone(),
            decode_device: d.decode.device.clone(),
        },
    }
}

/// The option's list, or the scenario's own value alone.
fn or_own<T: Clone>(list: &[T], own: T) -> Vec<T> {
    if list.is_empty() { vec![own] } else { list.to_vec() }
}

fn pool_devices(l: &Layout) -> [Option<&String>; 2] {
    match l {
        Layout::Colocated {} => [None, None],
        Layout::Pd { prefill_device, decode_device, .. } => [prefill_device.as_ref(), decode_device.as_ref()],
    }
}

/// A device's price: the option's, else the shipped list's; a device that is neither a preset nor the
/// scenario's own is an error at `field`.
fn usd_per_gpu_hour(p: &FleetParams, name: &str, own: &str, field: &str) -> Result<f64, ScenarioError> {
    let preset = presets::device(name);
    if preset.is_none() && name != own {
        let names: Vec<&str> = presets::DEVICES.iter().map(|d| d.name).collect();
        return Err(ScenarioError::one(field, format!("unknown device `{name}` (one of: {})", names.join(", "))));
    }
    p.prices.get(name).copied().or(preset.and_then(|d| d.usd_per_gpu_hour)).ok_or_else(|| {
        ScenarioError::one(
            format!("{}.prices.{name}", FleetStudy::at()),
            format!(
                "`{name}` has no list price ({}, read {}): give one, US dollars per GPU-hour",
                presets::PRICE_SOURCE,
                presets::PRICE_READ_ON
            ),
        )
    })
}

/// Which options have more than one value: those name the candidates.
struct Vary {
    device: bool,
    tp: bool,
    layout: bool,
    seqs: bool,
    budget: bool,
    formation: bool,
    scheduler: bool,
}

struct Point<'a> {
    device: &'a str,
    tp: u32,
    layout: &'a Layout,
    seqs: u32,
    budget: u32,
    formation: scenario::BatchFormationSpec,
    scheduler: &'a scenario::SchedulerSpec,
}

fn candidate(spec: &Spec, x: &Point, vary: &Vary, price: &dyn Fn(&str) -> f64) -> Candidate {
    let mut unit = spec.clone();
    unit.hardware = on_device(&spec.hardware, x.device, x.tp);
    if unit.hardware != spec.hardware {
        // An explicit KV size belongs to the scenario's device; the candidate's is derived from its HBM.
        unit.engine.kv_capacity_tokens = None;
    }
    unit.engine.max_num_seqs = x.seqs;
    unit.engine.max_num_batched_tokens = x.budget;
    if let Some(c) = unit.engine.prefill_chunk_tokens {
        unit.engine.prefill_chunk_tokens = Some(c.min(x.budget));
    }
    unit.engine.batch_formation = x.formation;
    unit.scheduler = x.scheduler.clone();
    unit.cluster.replicas = 1;
    let (layout, devices, pd, gpus, usd, prefill_usd) = match x.layout {
        Layout::Colocated {} => {
            unit.cluster.disaggregation = None;
            ("colocated".to_string(), x.device.to_string(), None, x.tp, x.tp as f64 * price(x.device), None)
        }
        Layout::Pd { prefill, decode, prefill_device, decode_device } => {
            let pdev = prefill_device.as_deref().unwrap_or(x.device);
            let ddev = decode_device.as_deref().unwrap_or(x.device);
            let link =
                spec.cluster.disaggregation.as_ref().map_or_else(crate::study::pd::default_link, |d| d.link.clone());
            let pool = |replicas, dev: &str| PoolSpec {
                replicas,
                device: (dev != x.device).then(|| dev.to_string()),
                tp: None,
                router: pool_router(spec),
            };
            unit.cluster.disaggregation =
                Some(DisaggSpec { prefill: pool(*prefill, pdev), decode: pool(*decode, ddev), link });
            let devices = if pdev == ddev { pdev.to_string() } else { format!("{pdev} → {ddev}") };
            let p_usd = (prefill * x.tp) as f64 * price(pdev);
            let d_usd = (decode * x.tp) as f64 * price(ddev);
            (
                format!("P/D {prefill}:{decode}"),
                devices,
                Some((*prefill, *decode)),
                (prefill + decode) * x.tp,
                p_usd + d_usd,
                Some(p_usd),
            )
        }
    };
    let mut parts = Vec::new();
    if vary.device || pd.is_some() {
        parts.push(devices.clone());
    }
    if vary.tp {
        parts.push(format!("TP {}", x.tp));
    }
    if vary.layout {
        parts.push(layout.clone());
    }
    if vary.seqs {
        parts.push(format!("batch {}", x.seqs));
    }
    if vary.budget {
        parts.push(format!("budget {}", x.budget));
    }
    if vary.formation {
        parts.push(crate::catalog::kind_of(&x.formation));
    }
    if vary.scheduler {
        parts.push(crate::catalog::kind_of(x.scheduler));
    }
    parts.dedup();
    let name = if parts.is_empty() { format!("{devices}, TP {}, {layout}", x.tp) } else { parts.join(", ") };
    let validated = scenario::validate(&unit).map(|sc| UnitFigures::of(&sc)).map_err(|e| e.to_string());
    Candidate {
        name,
        devices,
        tp: x.tp,
        layout,
        unit,
        pd,
        gpus_per_unit: gpus,
        usd_per_unit_hour: usd,
        prefill_usd_per_unit_hour: prefill_usd,
        validated,
    }
}

/// A pool's router: the scenario's, unless it is the central queue (pools route requests to workers).
fn pool_router(spec: &Spec) -> scenario::RouterSpec {
    match &spec.cluster.router {
        scenario::RouterSpec::CentralQueue => scenario::RouterSpec::default(),
        r => r.clone(),
    }
}

/// The scenario's hardware on `device` at `tp`: its efficiency figures kept, a preset's own figures in place
/// of any the scenario overrode for its device.
fn on_device(h: &HardwareSpec, device: &str, tp: u32) -> HardwareSpec {
    if h.device.as_deref().unwrap_or("custom") == device {
        return HardwareSpec { tp, ..h.clone() };
    }
    HardwareSpec {
        device: Some(device.to_string()),
        tp,
        peak_tflops: None,
        hbm_bandwidth_gbps: None,
        hbm_gb: None,
        interconnect_gbps: None,
        ..h.clone()
    }
}
