//! Each scenario field's bound and default are written once, in `src/spec`; docs/scenario.md's tables must say
//! the same (a row per declared field, its allowed range first in the "allowed" column, its default in the
//! "default" column), and so must the lab's controls (checked in the `www` crate's tests).

use inferscale::scenario::{
    AdmissionSpec, ArrivalSpec, Bound, Field, RouterSpec, SchedulerSpec, Variants, declared_blocks, plain, snake,
};
use serde_json::Value;

/// A docs table row: the section it is under (its heading's first backticked path), the field names of its
/// first column, and its cells by header.
struct Row {
    names: Vec<String>,
    cells: Vec<(String, String)>,
}

fn backticked(s: &str) -> Vec<String> {
    s.split('`').skip(1).step_by(2).map(str::to_string).collect()
}

/// Every table row of the docs, as the full dotted path of each name it lists.
fn rows(docs: &str) -> Vec<(String, Row)> {
    let (mut section, mut header, mut out) = (String::new(), Vec::new(), Vec::new());
    for line in docs.lines() {
        if line.starts_with('#') {
            section = backticked(line).into_iter().next().unwrap_or_default();
            header.clear();
        } else if let Some(body) = line.strip_prefix('|') {
            let cells: Vec<String> = body.trim_end_matches('|').split('|').map(|c| c.trim().to_string()).collect();
            if header.is_empty() {
                header = cells;
            } else if !cells[0].starts_with("---") {
                let names = backticked(&cells[0]).iter().map(|n| format!("{section}.{n}")).collect();
                out.push((section.clone(), Row { names, cells: header.iter().cloned().zip(cells).collect() }));
            }
        } else {
            header.clear();
        }
    }
    out
}

fn cell<'a>(row: &'a Row, header: &str) -> Option<&'a str> {
    row.cells.iter().find(|(h, _)| h == header).map(|(_, c)| c.as_str())
}

fn default_text(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) => Some(plain(n.as_f64()?)),
        Value::Bool(b) => Some(b.to_string()),
        Value::String(s) => Some(format!("`{s}`")),
        _ => None,
    }
}

/// What the docs say is wrong about the declared fields (empty: they agree).
fn disagreements(docs: &str) -> Vec<String> {
    let rows = rows(docs);
    let mut wrong = Vec::new();
    for block in declared_blocks() {
        for f in block.fields {
            let path = format!("{}.{}", block.at, f.name);
            let Some((_, row)) = rows.iter().find(|(_, r)| r.names.contains(&path)) else {
                wrong.push(format!("{path}: no row in docs/scenario.md"));
                continue;
            };
            let allowed = cell(row, "allowed").unwrap_or("");
            if !allowed.starts_with(&f.bound.allowed()) {
                wrong.push(format!("{path}: the docs allow `{allowed}`, the code {}", f.bound.allowed()));
            }
        }
        // Every field with a default (flags and kinds too) documented at it.
        for (name, v) in block.defaults.iter().flat_map(|d| d.as_object()).flatten() {
            let path = format!("{}.{name}", block.at);
            let row = rows.iter().find(|(_, r)| r.names.contains(&path));
            if let (Some((_, row)), Some(code)) = (row, default_text(v))
                && let Some(doc) = cell(row, "default")
                && doc != code
            {
                wrong.push(format!("{path}: the docs' default is `{doc}`, the code's {code}"));
            }
        }
    }
    wrong
}

#[test]
fn docs_state_every_declared_bound_and_default_as_the_code_does() {
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/scenario.md")).unwrap();
    let wrong = disagreements(&docs);
    assert!(wrong.is_empty(), "docs/scenario.md differs from src/spec:\n{}", wrong.join("\n"));
}

#[test]
fn a_documented_range_or_default_that_drifts_fails() {
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/scenario.md")).unwrap();
    let drifted = docs
        .replace("| `max_num_seqs` | sequences | 256 | 1 … 65,536 |", "| `max_num_seqs` | sequences | 128 | 1 … 512 |");
    assert_ne!(drifted, docs, "the row the test edits is in the docs");
    let wrong = disagreements(&drifted);
    assert_eq!(wrong.len(), 2, "{wrong:?}");
    let gone = docs.replace("| `series_points` |", "| `series_point` |");
    assert_eq!(disagreements(&gone), ["metrics.series_points: no row in docs/scenario.md"]);
}

/// Each arrival kind's row in docs/scenario.md names every bounded field of the kind with its range in the
/// parenthesis after it (or after the fields listed with it).
fn variant_disagreements(docs: &str) -> Vec<String> {
    let mut wrong = Vec::new();
    for (variant, fields) in ArrivalSpec::VARIANTS {
        let kind = snake(variant);
        let Some(row) = docs.lines().find(|l| l.starts_with(&format!("| `{kind}` |"))) else {
            wrong.push(format!("arrival kind {kind}: no row in docs/scenario.md"));
            continue;
        };
        for f in *fields {
            let allowed = f.bound.allowed();
            let stated = row.find(&format!("`{}`", f.name)).and_then(|i| {
                let rest = &row[i..];
                let open = rest.find('(')?;
                Some(&rest[open..open + rest[open..].find(')').unwrap_or(rest.len() - open)])
            });
            if !stated.is_some_and(|p| p.contains(&allowed)) {
                wrong
                    .push(format!("workload.arrival.{} ({kind}): the docs say {stated:?}, the code {allowed}", f.name));
            }
        }
    }
    wrong
}

#[test]
fn docs_state_every_arrival_kinds_bounds_as_the_code_does() {
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/scenario.md")).unwrap();
    let wrong = variant_disagreements(&docs);
    assert!(wrong.is_empty(), "docs/scenario.md differs from spec::ArrivalSpec:\n{}", wrong.join("\n"));
    let drifted = docs.replace(
        "`cv` (coefficient of variation of gaps, 0.05 … 20)",
        "`cv` (coefficient of variation of gaps, 0.1 … 20)",
    );
    assert_ne!(drifted, docs, "the row the test edits is in the docs");
    assert_eq!(variant_disagreements(&drifted).len(), 1);
}

/// A tagged enum's variants with their bounded fields (`Variants::VARIANTS`).
type Kinds = &'static [(&'static str, &'static [Field])];

/// Each policy's bounded fields (scheduler, admission, router) are stated in docs/scenario.md's prose as
/// "`field` (RANGE …)": the first such mention of each must carry the code's range.
fn policy_disagreements(docs: &str) -> Vec<String> {
    let all: [Kinds; 3] = [SchedulerSpec::VARIANTS, AdmissionSpec::VARIANTS, RouterSpec::VARIANTS];
    let mut wrong = Vec::new();
    for f in all.iter().flat_map(|v| v.iter()).flat_map(|(_, fields)| fields.iter()) {
        let name = format!("`{}`", f.name);
        let stated = docs.match_indices(&name).find_map(|(i, _)| {
            let rest = docs[i + name.len()..].trim_start();
            rest.starts_with('(').then(|| &rest[..rest.find(')').unwrap_or(rest.len())])
        });
        if !stated.is_some_and(|p| p.contains(&f.bound.allowed())) {
            wrong.push(format!("{}: the docs say {stated:?}, the code {}", f.name, f.bound.allowed()));
        }
    }
    wrong
}

#[test]
fn docs_state_every_policys_bounds_as_the_code_does() {
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/scenario.md")).unwrap();
    let wrong = policy_disagreements(&docs);
    assert!(wrong.is_empty(), "docs/scenario.md differs from the policies' bounds:\n{}", wrong.join("\n"));
    let drifted = docs.replace("`max_waiting` (1 … 1e9)", "`max_waiting` (1 … 1e6)");
    assert_ne!(drifted, docs, "the text the test edits is in the docs");
    assert_eq!(policy_disagreements(&drifted).len(), 1);
}

/// Field `f` of the object at `at` (a dotted path, `[i]` for a list item) in scenario `base`, set just below its
/// least and just above its most, is refused at `{at}.{name}` each time (a negative whole number is a type
/// error, tested elsewhere). Returns how many probes it made.
fn probe(base: &Value, at: &str, f: &Field) -> usize {
    let path = format!("{at}.{}", f.name);
    let whole = matches!(f.bound, Bound::Int(..));
    let (lo, hi) = f.bound.limits();
    let step = |v: f64| if whole { 1.0 } else { v.abs().max(1.0) * 1e-6 };
    let below = if matches!(f.bound, Bound::OpenLo(..)) { lo } else { lo - step(lo) };
    let mut n = 0;
    for v in [below, hi + step(hi)].into_iter().filter(|v| !(whole && *v < 0.0)) {
        let mut s = base.clone();
        let number = if whole { Value::from(v as u64) } else { Value::from(v) };
        object_at(&mut s, at).insert(f.name.to_string(), number);
        let out =
            inferscale::scenario::parse(&s.to_string()).and_then(|sp| inferscale::scenario::validate(&sp).map(|_| ()));
        let hit = out.err().is_some_and(|e| e.errors.iter().any(|x| x.path == path));
        assert!(hit, "{path} = {v} is not refused at its field");
        n += 1;
    }
    n
}

/// The object at dotted path `at` in `s`, made (empty) where it is missing.
fn object_at<'a>(s: &'a mut Value, at: &str) -> &'a mut serde_json::Map<String, Value> {
    let mut v = s;
    for part in at.split(['.', '[', ']']).filter(|p| !p.is_empty()) {
        v = match part.parse::<usize>() {
            Ok(i) => &mut v[i],
            Err(_) => v.as_object_mut().unwrap().entry(part).or_insert(Value::Object(Default::default())),
        };
    }
    v.as_object_mut().unwrap()
}

fn shipped(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(super::root().join("scenarios").join(name)).unwrap()).unwrap()
}

#[test]
fn a_declared_bound_is_what_validation_refuses_at() {
    // A block with required fields is probed on the first shipped scenario that has it.
    let bases = [shipped("default.json"), shipped("pd-llama3-8b-h100.json"), shipped("agent-sessions.json")];
    let mut checks = 0;
    for block in declared_blocks() {
        let pointer = format!("/{}", block.at.replace('.', "/"));
        let has = |b: &&Value| block.defaults.is_some() || b.pointer(&pointer).is_some();
        let base = bases.iter().find(has).unwrap_or_else(|| panic!("no shipped scenario has {}", block.at));
        checks += block.fields.iter().map(|f| probe(base, block.at, f)).sum::<usize>();
    }
    let fields: usize = declared_blocks().iter().map(|b| b.fields.len()).sum();
    assert!(checks > fields, "{checks} probes of {fields} fields");
    eprintln!("{checks} probes just past the bounds of {fields} declared fields in {} blocks", declared_blocks().len());
}

#[test]
fn an_arrival_kinds_bound_is_what_validation_refuses_at() {
    let trace = std::fs::read_to_string(super::root().join("scenarios/traces/sample-vidur.csv")).unwrap();
    let mut checks = 0;
    for (variant, fields) in ArrivalSpec::VARIANTS {
        let mut base = shipped("default.json");
        base["workload"]["arrival"] = inferscale::catalog::arrival_of_kind(&snake(variant), 2.0);
        if snake(variant) == "trace" {
            base["workload"]["arrival"]["data"] = Value::from(trace.as_str());
        }
        checks += fields.iter().map(|f| probe(&base, "workload.arrival", f)).sum::<usize>();
    }
    assert!(checks >= 20, "{checks} probes");
    eprintln!("{checks} probes just past the bounds of the arrival kinds' fields");
}

#[test]
fn a_policys_bound_is_what_validation_refuses_at() {
    let mut checks = 0;
    let policies: [(&str, Kinds); 3] = [
        ("scheduler", SchedulerSpec::VARIANTS),
        ("admission", AdmissionSpec::VARIANTS),
        ("cluster.router", RouterSpec::VARIANTS),
    ];
    for (at, variants) in policies {
        for (variant, fields) in variants {
            // The variant with every field in the middle of its range, then one field just past each end.
            let mut base = shipped("default.json");
            let policy = object_at(&mut base, at);
            policy.clear();
            policy.insert("kind".into(), Value::from(snake(variant)));
            for f in *fields {
                let (lo, hi) = f.bound.limits();
                let mid = if matches!(f.bound, Bound::Int(..)) {
                    Value::from(((lo + hi) / 2.0) as u64)
                } else {
                    Value::from((lo + hi) / 2.0)
                };
                policy.insert(f.name.into(), mid);
            }
            checks += fields.iter().map(|f| probe(&base, at, f)).sum::<usize>();
        }
    }
    assert!(checks >= 12, "{checks} probes");
    eprintln!("{checks} probes just past the bounds of the policies' fields");
}

/// The list items' bounds (a class, its objectives, a tenant, a tool, a session class), declared beside their
/// structs, are what validation refuses at, on the first item of a shipped scenario that has one.
#[test]
fn a_list_items_bound_is_what_validation_refuses_at() {
    use inferscale::scenario::{ClassSpec, Declared, SessionClassSpec, SloSpec, TenantSpec, ToolSpec};
    let items: [(&str, &[Field], &str); 5] = [
        ("workload.classes[0]", ClassSpec::FIELDS, "default.json"),
        ("workload.classes[0].slo", SloSpec::FIELDS, "default.json"),
        ("workload.tenants[0]", TenantSpec::FIELDS, "bursty-multitenant.json"),
        ("workload.sessions.tools[0]", ToolSpec::FIELDS, "agent-sessions.json"),
        ("workload.sessions.classes[0]", SessionClassSpec::FIELDS, "agent-mix.json"),
    ];
    let mut checks = 0;
    for (at, fields, scenario) in items {
        let base = shipped(scenario);
        checks += fields.iter().map(|f| probe(&base, at, f)).sum::<usize>();
    }
    assert!(checks >= 20, "{checks} probes");
    eprintln!("{checks} probes just past the bounds of the list items' fields");
}

/// Every number a declared block takes (its `u32`, `u64` or `f64` field, optional or not) has its bound in the
/// block's `bounds!`, or is one of the few bounded by other fields, which validation checks by hand (named
/// here with where): a number added to a block without a bound fails here, not in a user's run at 1e308.
#[test]
fn every_number_of_a_declared_block_has_its_bound() {
    let src = std::fs::read_to_string(super::root().join("src/spec/mod.rs")).unwrap();
    // Bounded by other fields or by the model, checked in scenario::validate (field: why).
    let elsewhere = [
        ("EngineSpec", "prefill_chunk_tokens"), // ≤ engine.max_num_batched_tokens
        ("EngineSpec", "max_model_len"),        // ≤ model.context_tokens
        ("PoolSpec", "tp"),                     // hardware.tp's bound, said at the pool's field
    ];
    let (mut checked, mut missing) = (0, Vec::new());
    for decl in src.split("bounds!(").skip(1) {
        let name = decl.split(|c: char| !c.is_alphanumeric()).next().unwrap();
        let bounded: Vec<&str> = decl
            .split("})")
            .next()
            .unwrap()
            .split('{')
            .nth(1)
            .unwrap_or("")
            .split(',')
            .filter_map(|f| f.split(':').next())
            .map(str::trim)
            .collect();
        let Some(body) = src.split(&format!("pub struct {name} {{")).nth(1) else { continue };
        for line in body.split("\n}").next().unwrap().lines().map(str::trim) {
            let Some((field, ty)) = line.strip_prefix("pub ").and_then(|l| l.split_once(": ")) else { continue };
            let ty = ty.trim_end_matches(',');
            let number = ["u32", "u64", "f64"].iter().any(|n| ty == *n || ty == format!("Option<{n}>"));
            if !number {
                continue;
            }
            checked += 1;
            if !bounded.contains(&field) && !elsewhere.contains(&(name, field)) {
                missing.push(format!("{name}.{field}: {ty}"));
            }
        }
    }
    assert!(checked > 40, "only {checked} numbers read: the scan is broken");
    assert!(missing.is_empty(), "numbers without a declared bound: {missing:?}");
}
