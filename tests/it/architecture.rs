//! The code's shape, checked on the code as `cargo fmt` writes it (`rustfmt.toml`; the test command runs
//! `cargo fmt --check` first): no function in `src/`, `worker/src` or `www/src` longer than a hundred lines, no
//! import cycle between the core's modules, and none between the files of any one folder
//! (`docs/ARCHITECTURE.md` states all three).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::root;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().filter_map(|e| e.ok()) {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The Rust files under each of `dirs` (paths from the repository's root).
fn files_in(dirs: &[&str]) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in dirs {
        rust_files(&root().join(dir), &mut files);
    }
    files
}

/// `src/engine/mod.rs:42`: line `i` (from 0) of file `f`, as a finding names it.
fn line_at(f: &Path, i: usize) -> String {
    format!("{}:{}", f.strip_prefix(root()).unwrap().display(), i + 1)
}

/// A line without its comment and string literals (braces inside them do not count).
fn code_of(line: &str) -> String {
    let mut out = String::new();
    let (mut in_str, mut esc) = (false, false);
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        if in_str {
            if esc {
                esc = false;
            } else if c == '\\' {
                esc = true;
            } else if c == '"' {
                in_str = false;
            }
        } else if c == '"' {
            in_str = true;
        } else if c == '/' && b.get(i + 1) == Some(&b'/') {
            break;
        } else if c == '\'' && b.get(i + 2) == Some(&b'\'') {
            i += 3; // a char literal such as '{'
            continue;
        } else {
            out.push(c);
        }
        i += 1;
    }
    out
}

/// (name, first line, length) of every function of a file: from its `fn` line to where its body's braces
/// balance.
fn functions(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        let t = t
            .strip_prefix("pub(crate) ")
            .or_else(|| t.strip_prefix("pub(super) "))
            .or_else(|| t.strip_prefix("pub "))
            .unwrap_or(t);
        let t = t.strip_prefix("const ").unwrap_or(t);
        let Some(rest) = t.strip_prefix("fn ") else { continue };
        let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        let (mut depth, mut opened) = (0i64, false);
        for (j, l) in lines.iter().enumerate().skip(i) {
            let code = code_of(l);
            depth += code.matches('{').count() as i64 - code.matches('}').count() as i64;
            opened |= code.contains('{');
            if opened && depth <= 0 {
                out.push((name.clone(), i + 1, j - i + 1));
                break;
            }
            if !opened && code.contains(';') {
                break; // a declaration without a body
            }
        }
    }
    out
}

/// Every Rust file of the three crates' sources.
fn source_files() -> Vec<PathBuf> {
    let mut files = files_in(&["src", "worker/src", "www/src"]);
    files.sort();
    files
}

#[test]
fn no_function_is_longer_than_a_hundred_formatted_lines() {
    let (mut long, mut over_60, mut counted) = (Vec::new(), Vec::new(), 0);
    for f in &source_files() {
        for (name, line, n) in functions(&std::fs::read_to_string(f).unwrap()) {
            counted += 1;
            let at = format!("{}:{line} {name} ({n} lines)", f.strip_prefix(root()).unwrap().display());
            if n > 100 {
                long.push(at);
            } else if n > 60 {
                over_60.push(at);
            }
        }
    }
    println!("functions: {counted}, of which {} over 60 lines: {over_60:?}", over_60.len());
    assert!(counted > 900, "only {counted} functions found: the scan is broken");
    assert!(long.is_empty(), "functions longer than 100 lines: {long:?}");
}

#[test]
fn the_code_is_measured_as_formatted() {
    let config = std::fs::read_to_string(root().join("rustfmt.toml")).expect("rustfmt.toml");
    assert!(config.contains("max_width = 120"), "{config}");
    // What rustfmt cannot break (a line with a string literal or a comment) may pass the width; code may not.
    let mut wide = Vec::new();
    for f in &source_files() {
        let mut in_string = false;
        for (i, line) in std::fs::read_to_string(f).unwrap().lines().enumerate() {
            let breakable = !in_string && !line.contains('"') && !line.contains("//");
            if breakable && line.chars().count() > 120 {
                wide.push(line_at(f, i));
            }
            // A string still open at the end of a line (an odd number of unescaped quotes) goes on.
            let quotes = line.replace("\\\\", "").replace("\\\"", "").replace("'\"'", "").matches('"').count();
            in_string ^= quotes % 2 == 1;
        }
    }
    assert!(wide.is_empty(), "code lines over 120 columns (run cargo fmt): {wide:?}");
}

#[test]
fn the_function_scan_measures_what_it_should() {
    let text = "fn a() {\n    let s = \"}\";\n    let c = '{';\n    // }\n}\npub(crate) fn b(x: u32)\n    -> u32 {\n    x\n}\nfn decl();\n";
    assert_eq!(functions(text), [("a".to_string(), 1, 5), ("b".to_string(), 6, 4)]);
}

/// The core's top-level module a file belongs to (`src/engine/batch.rs` → `engine`); None for the crate
/// root and the CLI.
fn module_of(path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root().join("src")).ok()?;
    let first = rel.components().next()?.as_os_str().to_string_lossy().into_owned();
    let name = first.trim_end_matches(".rs").to_string();
    (!["lib", "main"].contains(&name.as_str())).then_some(name)
}

/// Edges `module → module` from every `crate::X` a module's files name.
fn import_graph() -> BTreeMap<String, BTreeSet<String>> {
    let files = files_in(&["src"]);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let Some(from) = module_of(f) else { continue };
        let text = std::fs::read_to_string(f).unwrap();
        let deps = graph.entry(from.clone()).or_default();
        for line in text.lines() {
            let code = code_of(line);
            for part in code.split("crate::").skip(1) {
                let to: String = part.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                if !to.is_empty() && to != from {
                    deps.insert(to);
                }
            }
        }
    }
    graph
}

#[test]
fn the_core_modules_import_each_other_without_a_cycle() {
    let graph = import_graph();
    assert!(graph.len() >= 12, "modules found: {:?}", graph.keys());
    // Kahn's algorithm: repeatedly take a module all of whose imports are taken.
    let mut done: Vec<String> = Vec::new();
    while done.len() < graph.len() {
        let next = graph
            .iter()
            .find(|(m, deps)| !done.contains(m) && deps.iter().all(|d| done.contains(d) || !graph.contains_key(d)));
        match next {
            Some((m, _)) => done.push(m.clone()),
            None => {
                let left: Vec<_> =
                    graph.iter().filter(|(m, _)| !done.contains(m)).map(|(m, d)| format!("{m} → {d:?}")).collect();
                panic!("an import cycle among: {left:?}");
            }
        }
    }
    println!("modules, each after what it imports: {}", done.join(", "));
    // The format depends on nothing; the domains depend on the format, not on the assembled scenario.
    assert!(graph["spec"].is_empty(), "spec imports {:?}", graph["spec"]);
    for domain in ["cost", "workload", "router", "sched", "kv", "rng"] {
        assert!(!graph[domain].contains("scenario"), "{domain} imports scenario");
    }
}

/// A folder's files, each with its code (comments, strings and its tests left out).
fn folder_code(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap().filter_map(|e| e.ok()) {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "rs") {
            let text = std::fs::read_to_string(&p).unwrap();
            let text = text.split("#[cfg(test)]").next().unwrap();
            let code: Vec<String> = text.lines().map(code_of).collect();
            out.insert(p.file_stem().unwrap().to_string_lossy().into_owned(), code.join("\n"));
        }
    }
    out
}

/// The names a file defines at its top level (items and modules), and the methods it defines in its impls.
fn definitions(code: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut items, mut methods) = (BTreeSet::new(), BTreeSet::new());
    for line in code.lines() {
        let (indent, t) = (line.len() - line.trim_start().len(), line.trim_start());
        let t = ["pub(crate) ", "pub(super) ", "pub "].iter().find_map(|v| t.strip_prefix(v)).unwrap_or(t);
        let t = t.strip_prefix("const ").filter(|r| r.starts_with("fn ")).unwrap_or(t);
        for kind in ["struct ", "enum ", "fn ", "trait ", "type ", "const ", "static ", "mod "] {
            if let Some(rest) = t.strip_prefix(kind) {
                let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                match indent {
                    0 => items.insert(name),
                    4 if kind == "fn " => methods.insert(name),
                    _ => false,
                };
            }
        }
    }
    (items, methods)
}

/// The first identifier of each path after `prefix` (`prefix{a, b::c}` names `a` and `b`).
fn named_after(code: &str, prefix: &str) -> BTreeSet<String> {
    let ident =
        |s: &str| -> String { s.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect() };
    let mut out = BTreeSet::new();
    for part in code.split(prefix).skip(1) {
        match part.strip_prefix('{') {
            Some(group) => out.extend(group.split('}').next().unwrap().split(',').map(ident)),
            None => {
                out.insert(ident(part));
            }
        }
    }
    out.retain(|n| !n.is_empty());
    out
}

/// The methods a file calls on `self` (`self.m(…)`).
fn method_calls(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for part in code.split("self.").skip(1) {
        let name: String = part.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        if part[name.len()..].starts_with('(') {
            out.insert(name);
        }
    }
    out
}

/// Edges `file → file` between the files of one folder: a path naming a sibling module or an item defined in a
/// sibling, or a call `self.m(…)` of a method only one sibling defines. The folder's face (`mod.rs`, `lib.rs`,
/// `main.rs`) is left out: it declares its files and may use them, and they may use what it defines.
fn folder_graph(dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let files = folder_code(dir);
    let face = |f: &str| ["mod", "lib", "main"].contains(&f);
    let defs: BTreeMap<&str, _> = files.iter().map(|(f, c)| (f.as_str(), definitions(c))).collect();
    let owners = |name: &str, methods: bool| -> Vec<&str> {
        defs.iter().filter(|(_, d)| if methods { &d.1 } else { &d.0 }.contains(name)).map(|(f, _)| *f).collect()
    };
    let mut prefixes = vec!["super::".to_string(), "crate::".to_string()];
    if let Ok(rel) = dir.strip_prefix(root().join("src"))
        && !rel.as_os_str().is_empty()
    {
        let module = rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("::");
        prefixes = vec!["super::".to_string(), format!("crate::{module}::")];
    }
    let mut graph = BTreeMap::new();
    for (f, code) in files.iter().filter(|(f, _)| !face(f)) {
        let mut to = BTreeSet::new();
        for n in prefixes.iter().flat_map(|p| named_after(code, p)) {
            if files.contains_key(&n) {
                to.insert(n);
            } else {
                to.extend(owners(&n, false).into_iter().map(str::to_string));
            }
        }
        for m in method_calls(code) {
            if let [one] = owners(&m, true)[..] {
                to.insert(one.to_string());
            }
        }
        to.retain(|t| t != f && !face(t));
        graph.insert(f.clone(), to);
    }
    graph
}

/// The modules left in a cycle once every module whose imports are all taken has been taken (Kahn's
/// algorithm); empty when there is no cycle.
fn in_a_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut done: Vec<&String> = Vec::new();
    while let Some(m) = graph
        .iter()
        .find(|(m, deps)| !done.contains(m) && deps.iter().all(|d| done.contains(&d) || !graph.contains_key(d)))
    {
        done.push(m.0);
    }
    graph.iter().filter(|(m, _)| !done.contains(m)).map(|(m, d)| format!("{m} → {d:?}")).collect()
}

#[test]
fn the_files_of_each_folder_import_each_other_without_a_cycle() {
    let mut dirs = vec![root().join("worker/src"), root().join("www/src"), root().join("src")];
    let mut i = 2;
    while i < dirs.len() {
        let sub: Vec<PathBuf> = std::fs::read_dir(&dirs[i])
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        dirs.extend(sub);
        i += 1;
    }
    let mut cycles = Vec::new();
    for dir in &dirs {
        let left = in_a_cycle(&folder_graph(dir));
        if !left.is_empty() {
            cycles.push(format!("{}: {left:?}", dir.strip_prefix(root()).unwrap().display()));
        }
    }
    assert!(dirs.len() >= 12, "folders: {dirs:?}");
    assert!(cycles.is_empty(), "import cycles between a folder's files: {cycles:?}");
}

#[test]
fn the_folder_scan_sees_a_cycle() {
    let dir = std::env::temp_dir().join(format!("inferscale-arch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |f: &str, text: &str| std::fs::write(dir.join(f), text).unwrap();
    write("mod.rs", "mod a;\nmod b;\nmod c;\npub struct Face;\n");
    write("a.rs", "use super::{Face, b::B};\npub struct A;\n");
    write("b.rs", "pub struct B;\nimpl B {\n    fn m(&self) { self.only_c(); }\n}\n");
    write("c.rs", "use super::A; // super::b::B in a comment does not count\nimpl A {\n    fn only_c(&self) {}\n}\n");
    let graph = folder_graph(&dir);
    assert_eq!(graph["a"], BTreeSet::from(["b".to_string()]));
    assert_eq!(graph["b"], BTreeSet::from(["c".to_string()]));
    assert_eq!(graph["c"], BTreeSet::from(["a".to_string()]));
    assert_eq!(in_a_cycle(&graph).len(), 3);
    write("c.rs", "pub struct C;\nimpl C {\n    fn only_c(&self) {}\n}\n");
    assert!(in_a_cycle(&folder_graph(&dir)).is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The engine feeds the recorder only through its hooks (`on_*`, `advance`, `itl_sink`, `finish`) and reads
/// only its counts for progress: no field of it is written or read from the engine. The recorder is
/// `Simulation`'s (its type is named only in engine/mod.rs, and in engine/replica/mod.rs where `Around` lends
/// its hooks to a formation, scanned as `cx.rec.`), so no function elsewhere is handed it to write a field
/// where this scan would not look (engine/sessions.rs once was).
#[test]
fn the_engine_feeds_the_recorder_only_through_its_hooks() {
    let files = files_in(&["src/engine"]);
    let allowed = ["advance", "itl_sink", "finish", "expected_requests", "n_final"];
    let mut bad = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = code_of(line);
            if code.contains("Recorder") && !f.ends_with("engine/mod.rs") && !f.ends_with("engine/replica/mod.rs") {
                bad.push(format!("{} names the Recorder", line_at(f, i)));
            }
            // `self.rec.` in the simulation, `cx.rec.` where it lends the recorder to a formation (`Around`).
            for part in code.split(".rec.").skip(1) {
                let name: String = part.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                let call = part[name.len()..].starts_with('(');
                if !call || !(name.starts_with("on_") || allowed.contains(&name.as_str())) {
                    bad.push(format!("{} .rec.{name}", line_at(f, i)));
                }
            }
        }
    }
    assert!(bad.is_empty(), "the engine touches the recorder outside its hooks: {bad:?}");
}

/// docs/ARCHITECTURE.md's row for the engine lists every `Event`, in the enum's order ("StepEnd" as "step
/// end"): a new event cannot go unmentioned, nor a removed one stay.
#[test]
fn the_architecture_lists_every_event() {
    let src = std::fs::read_to_string(root().join("src/engine/events.rs")).unwrap();
    let body = src.split("pub enum Event {").nth(1).unwrap().split("\n}").next().unwrap();
    let words = |name: &str| {
        let mut w = String::new();
        for (i, c) in name.chars().enumerate() {
            if c.is_uppercase() && i > 0 {
                w.push(' ');
            }
            w.push(c.to_ascii_lowercase());
        }
        w
    };
    let variants: Vec<String> = (body.lines().map(code_of))
        .map(|l| l.trim().to_string())
        .filter(|l| l.starts_with(|c: char| c.is_uppercase()))
        .map(|l| words(l.split(|c: char| !c.is_alphanumeric()).next().unwrap()))
        .collect();
    assert!(variants.len() >= 10 && variants[1] == "step end", "the scan is broken: {variants:?}");
    let doc = std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
    let row = doc.lines().find(|l| l.starts_with("| `src/engine/events.rs` |")).unwrap();
    let listed = row.split("`enum Event` (").nth(1).unwrap().split(')').next().unwrap();
    assert_eq!(listed.split(", ").collect::<Vec<_>>(), variants, "docs/ARCHITECTURE.md's events");
}

/// Every file and folder docs/ARCHITECTURE.md names (in backticks) exists, and every item it names (`Batch`,
/// `Scenario::front_pool`, `run_eager`) is a word of the sources: the map cannot drift from the code unnoticed.
#[test]
fn every_file_and_item_the_architecture_names_exists() {
    let doc = std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
    let files = files_in(&["src", "worker/src", "www/src", "tests"]);
    let mut words = BTreeSet::new();
    for f in files.iter().chain([&root().join("index.html"), &root().join("scripts/test.sh")]) {
        let text = std::fs::read_to_string(f).unwrap();
        words.extend(text.split(|c: char| !(c.is_alphanumeric() || c == '_')).map(str::to_string));
    }
    // Build outputs (`dist/`, `target/`) are named but not in a fresh clone: .gitignore lists them.
    let ignored: Vec<String> = std::fs::read_to_string(root().join(".gitignore"))
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix('/'))
        .map(|l| l.trim_end_matches('/').to_string())
        .collect();
    let (mut checked, mut missing) = (0, Vec::new());
    for token in doc.split('`').skip(1).step_by(2) {
        let t = token.trim_end_matches("()");
        let is_path = t.contains('/') && !t.contains(' ') && !t.contains("::") && !t.starts_with("../");
        let is_item =
            !t.is_empty() && t.split("::").all(|s| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_'));
        let built = ignored.iter().any(|i| t.trim_start_matches('/').trim_end_matches('/') == i);
        if is_path && !built && !t.contains(['*', '…', '<']) {
            checked += 1;
            // Named from the repository, or (in a row about them) from the core's src/ or from docs/.
            if !["", "src", "docs"].iter().any(|base| root().join(base).join(t.trim_start_matches('/')).exists()) {
                missing.push(format!("file {t}"));
            }
        } else if is_item && t.chars().any(|c| c == '_' || c.is_uppercase()) {
            checked += 1;
            if let Some(s) = t.split("::").find(|s| !words.contains(*s)) {
                missing.push(format!("item {t} ({s})"));
            }
        }
    }
    assert!(checked > 100, "only {checked} names checked: the scan is broken");
    assert!(missing.is_empty(), "docs/ARCHITECTURE.md names what is not there: {missing:?}");
}

/// The `StudyDef` types of `src/study` no line of the registry lists.
fn unregistered_studies(files: &[(String, String)], registry: &str) -> Vec<String> {
    let listed: BTreeSet<&str> =
        registry.lines().filter_map(|l| l.split("=>").nth(1)).map(|t| t.trim().trim_end_matches(',')).collect();
    let mut missing = Vec::new();
    for (path, text) in files {
        let studies = text.lines().filter_map(|l| l.trim().strip_prefix("impl StudyDef for "));
        // A knob is a study as the sweep that turns it: listed as `sweep::Sweep<path::Knob>`.
        let knobs = text.lines().filter_map(|l| l.trim().strip_prefix("impl Knob for "));
        for (line, close) in studies.map(|l| (l, "")).chain(knobs.map(|l| (l, ">"))) {
            let ty = line.trim_end_matches(" {").trim();
            let named = |l: &str| l.strip_suffix(close).and_then(|l| l.rsplit("::").next()) == Some(ty);
            if !listed.iter().any(|l| named(l)) {
                missing.push(format!("{path}: {ty}"));
            }
        }
    }
    missing
}

#[test]
fn every_study_is_registered_once() {
    let paths = files_in(&["src/study"]);
    let files: Vec<(String, String)> =
        paths.iter().map(|p| (p.display().to_string(), std::fs::read_to_string(p).unwrap())).collect();
    let module = std::fs::read_to_string(root().join("src/study/mod.rs")).unwrap();
    let start = module.find("registry! {").expect("the registry");
    let registry = &module[start..start + module[start..].find("\n}").unwrap()];
    assert_eq!(unregistered_studies(&files, registry), Vec::<String>::new());
    let defs = files.iter().map(|(_, t)| t.matches("impl StudyDef for ").count() + t.matches("impl Knob for ").count());
    let defs = defs.sum::<usize>();
    assert_eq!(defs, inferscale::study::Kind::ALL.len(), "one registry line per study, none twice");
    // A study written but not listed is found.
    let forgotten = [("new.rs".to_string(), "impl StudyDef for NewStudy {\nimpl Knob for NewKnob {".to_string())];
    assert_eq!(unregistered_studies(&forgotten, registry), ["new.rs: NewStudy", "new.rs: NewKnob"]);
}

/// A study's table is declared as `ColumnDef`s (header, unit, format and cell together) and built by
/// `study::table`: no study writes a `Column` or a row of cells by hand, so a header cannot drift from its cells.
#[test]
fn every_study_table_is_declared_with_its_cells() {
    let files = files_in(&["src/study"]);
    let mut bad = Vec::new();
    for f in files.iter().filter(|f| !f.ends_with("study/mod.rs")) {
        let text = std::fs::read_to_string(f).unwrap();
        let code: Vec<String> = text.split("#[cfg(test)]").next().unwrap().lines().map(code_of).collect();
        for (i, line) in code.iter().enumerate() {
            for hand in ["Column {", "columns = vec!", "columns.push(", "rows.push(vec!", "rows = vec!"] {
                // `DynColumn { label, unit, format, cell }` is declared whole, its header made at run time.
                if line.contains(hand) && !line.contains("DynColumn {") {
                    bad.push(format!("{} `{hand}`", line_at(f, i)));
                }
            }
        }
    }
    assert!(files.len() >= 12, "study files: {files:?}");
    assert!(bad.is_empty(), "tables written by hand, not as ColumnDefs: {bad:?}");
}

/// The fields of struct `name` in `code` (as formatted: one per line, four spaces in).
fn struct_fields(code: &str, name: &str) -> Vec<String> {
    let start = code.find(&format!("pub struct {name}")).unwrap_or_else(|| panic!("no struct {name}"));
    (code[start..].lines().skip(1))
        .take_while(|l| *l != "}")
        .filter(|l| l.starts_with("    ") && !l.trim_start().starts_with("//") && !l.trim_start().starts_with('#'))
        .filter_map(|l| l.trim().split_once(':').map(|(f, _)| f.trim_start_matches("pub(crate) ").to_string()))
        .collect()
}

/// `Simulation` holds the clock, the event queue and the engine's parts, each owning its state — at most
/// twelve fields, so a new piece of state joins a part instead of the hub: it had 25, and the sessions'
/// state (workflows included), the run's fixed rules, the dispatch (the routers, the central queue) and the
/// door (max_model_len, admission, the front end) became one part each; the prefix gauge is the recorder's
/// and the preempted requests to requeue their replica's.
#[test]
fn the_simulation_holds_parts_not_their_fields() {
    let code = std::fs::read_to_string(root().join("src/engine/mod.rs")).unwrap();
    let fields = struct_fields(&code, "Simulation<'a>");
    assert!(fields.len() <= 12, "{} fields: {fields:?}", fields.len());
    assert!(fields.contains(&"sessions".to_string()) && fields.contains(&"now".to_string()), "{fields:?}");
}

/// The engine's hub: `Simulation` (engine/mod.rs) and its handlers (engine/handle.rs).
const HUB: [&str; 2] = ["src/engine/mod.rs", "src/engine/handle.rs"];

/// The code of every engine file (tests left out), by its path from the root.
fn engine_code() -> Vec<(String, String)> {
    let mut files = files_in(&["src/engine"]);
    files.sort();
    let code = |p: &PathBuf| {
        let text = std::fs::read_to_string(p).unwrap();
        text.split("#[cfg(test)]").next().unwrap().lines().map(code_of).collect::<Vec<_>>().join("\n")
    };
    files.iter().map(|p| (p.strip_prefix(root()).unwrap().display().to_string(), code(p))).collect()
}

/// The engine's parts — every struct the simulation holds, and what they hold in turn — keep their fields
/// private, so no other file can read or write them: Rust's privacy enforces what this checks is asked of it. A
/// struct whose fields are public is a record one part hands another (a step's books, what the simulation
/// lends a formation), never a part; two records are held by parts: `Running`, a request's place in a batch
/// (the batch's step end and the replica's formation both write it), and `Transfer`, what a link carries.
#[test]
fn the_engines_parts_keep_their_fields_private() {
    let files = engine_code();
    let structs: BTreeMap<String, (String, Vec<String>)> = files
        .iter()
        .flat_map(|(f, code)| {
            let lines: Vec<&str> = code.lines().collect();
            let mut out = Vec::new();
            for (i, l) in lines.iter().enumerate() {
                let t = ["pub(crate) ", "pub(super) ", "pub "].iter().find_map(|v| l.strip_prefix(v)).unwrap_or(l);
                let Some(rest) = t.strip_prefix("struct ") else { continue };
                let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                let body = lines[i + 1..].iter().take_while(|l| !l.starts_with('}')).map(|l| l.to_string());
                if rest.trim_end().ends_with('{') {
                    out.push((name, (f.clone(), body.collect())));
                }
            }
            out
        })
        .collect();
    let ident = |t: &str| -> Vec<String> {
        t.split(|c: char| !c.is_alphanumeric() && c != '_').filter(|w| !w.is_empty()).map(str::to_string).collect()
    };
    let (mut parts, mut todo) = (BTreeSet::new(), vec!["Simulation".to_string()]);
    while let Some(name) = todo.pop() {
        let Some((_, body)) = structs.get(&name) else { continue };
        for field in body.iter().filter_map(|l| l.trim().split_once(':')) {
            for ty in ident(field.1).into_iter().filter(|t| structs.contains_key(t)) {
                if parts.insert(ty.clone()) {
                    todo.push(ty);
                }
            }
        }
    }
    let records = ["Running", "Transfer"];
    let mut public = Vec::new();
    for part in parts.iter().filter(|p| !records.contains(&p.as_str())) {
        let (file, body) = &structs[part];
        for l in body.iter().filter(|l| l.trim_start().starts_with("pub")) {
            public.push(format!("{file}: {part}.{}", l.trim()));
        }
    }
    for part in ["Replica", "SessionState", "Workflows", "Links", "Door", "Dispatch", "Arrivals", "EventQueue", "Batch"]
    {
        assert!(parts.contains(part), "the scan lost the part {part}: {parts:?}");
    }
    assert!(public.is_empty(), "a part's field is public: {public:?}");
}

/// `Simulation`'s methods live in the hub (engine/mod.rs: the run and the one `match`; engine/handle.rs: what
/// each event does), and no other engine file names anything the hub defines: the parts are used by the hub
/// and never reach back into it, so the hub is a face, not a knot.
#[test]
fn the_engines_parts_never_reach_back_into_the_hub() {
    let files = engine_code();
    let mut hub_items = BTreeSet::new();
    for (_, code) in files.iter().filter(|(f, _)| HUB.contains(&f.as_str())) {
        let modules: BTreeSet<String> = (code.lines())
            .filter_map(|l| l.trim_start().strip_prefix("mod ").and_then(|m| m.strip_suffix(';')))
            .map(str::to_string)
            .collect();
        let (items, _) = definitions(code);
        hub_items.extend(items.into_iter().filter(|i| !modules.contains(i)));
    }
    assert!(hub_items.contains("Simulation") && hub_items.contains("CLOCK_END_NS"), "{hub_items:?}");
    let mut bad = Vec::new();
    for (f, code) in files.iter().filter(|(f, _)| !HUB.contains(&f.as_str())) {
        if code.contains("impl Simulation") || code.contains("impl<'a> Simulation") {
            bad.push(format!("{f} has methods of Simulation"));
        }
        // A file of engine/ names the hub as `super::`; a file of a folder inside it, as `super::super::`.
        let depth = f.trim_start_matches("src/engine/").matches('/').count();
        let up = if depth == 0 { "super::" } else { "super::super::" };
        let named: BTreeSet<String> = [up, "crate::engine::"].iter().flat_map(|p| named_after(code, p)).collect();
        for n in named.intersection(&hub_items) {
            bad.push(format!("{f} names the hub's {n}"));
        }
    }
    assert!(bad.is_empty(), "engine parts reaching into the hub: {bad:?}");
}

/// What breaks the core's purity on one line of code (its comments and strings left out): IO, a clock, the
/// environment, a global, `unsafe`.
fn impure(code: &str) -> Option<&'static str> {
    let words = [
        "std::fs",
        "std::io",
        "std::net",
        "std::process",
        "std::env",
        "std::time",
        "Instant::",
        "SystemTime",
        "println!",
        "eprintln!",
        "print!",
        "eprint!",
        "dbg!",
        "thread_local!",
        "OnceLock",
        "LazyLock",
        "OnceCell",
        "lazy_static",
        "static mut",
    ];
    if let Some(w) = words.iter().find(|w| code.contains(**w)) {
        return Some(w);
    }
    if code.split(|c: char| !(c.is_alphanumeric() || c == '_')).any(|w| w == "unsafe") {
        return Some("unsafe");
    }
    let t = code.trim_start();
    let t = t.strip_prefix("pub(crate) ").or_else(|| t.strip_prefix("pub ")).unwrap_or(t);
    t.starts_with("static ").then_some("a static item")
}

/// docs/ARCHITECTURE.md: the core (src/ but main.rs, the CLI) does no IO, reads no clock, has no globals and no
/// `unsafe` — and says so to the compiler (`#![forbid(unsafe_code)]`).
#[test]
fn the_core_does_no_io_reads_no_clock_and_has_no_globals() {
    let files = files_in(&["src"]);
    let mut bad = Vec::new();
    for f in files.iter().filter(|f| !f.ends_with("src/main.rs")) {
        for (i, line) in std::fs::read_to_string(f).unwrap().lines().enumerate() {
            if let Some(what) = impure(&code_of(line)) {
                bad.push(format!("{} {what}", line_at(f, i)));
            }
        }
    }
    assert!(files.len() > 100, "only {} files scanned", files.len());
    assert!(bad.is_empty(), "the core is not pure: {bad:?}");
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).unwrap();
    assert!(lib.lines().any(|l| l.trim() == "#![forbid(unsafe_code)]"), "src/lib.rs forbids unsafe code");
}

#[test]
fn the_purity_scan_sees_io_clocks_and_globals() {
    for line in [
        "let t = std::fs::read_to_string(p)?;",
        "let now = std::time::Instant::now();",
        "static COUNTER: AtomicU64 = AtomicU64::new(0);",
        "pub static TABLE: [u8; 4] = [0; 4];",
        "thread_local! { static X: u8 = 0; }",
        "eprintln!(\"{x}\");",
        "let b = unsafe { *p };",
    ] {
        assert!(impure(&code_of(line)).is_some(), "not seen: {line}");
    }
    let fine = ["let s: &'static str = \"std::fs\";", "// std::time is the CLI's", "#![forbid(unsafe_code)]"];
    for line in fine {
        assert_eq!(impure(&code_of(line)), None, "seen in {line}");
    }
}

/// docs/ARCHITECTURE.md: policies return decisions and only the engine schedules events — no file outside
/// src/engine names the `Event` type, and inside it only the hub (engine/mod.rs, engine/handle.rs) schedules.
#[test]
fn only_the_engine_schedules_events() {
    let files = files_in(&["src"]);
    let hub = |f: &Path| f.ends_with("src/engine/mod.rs") || f.ends_with("src/engine/handle.rs");
    let (mut scheduled, mut bad) = (0, Vec::new());
    for f in &files {
        let in_engine = f.starts_with(root().join("src/engine"));
        for (i, line) in std::fs::read_to_string(f).unwrap().lines().enumerate() {
            let code = code_of(line);
            let names_event = code.split(|c: char| !(c.is_alphanumeric() || c == '_')).any(|w| w == "Event");
            let schedules = code.contains("schedule(");
            scheduled += usize::from(schedules && hub(f));
            if (names_event && !in_engine) || (schedules && !hub(f)) {
                bad.push(line_at(f, i));
            }
        }
    }
    assert!(scheduled >= 5, "only {scheduled} schedule calls seen in the hub: the scan is broken");
    assert!(bad.is_empty(), "events named or scheduled outside the engine's hub: {bad:?}");
}

/// docs/ARCHITECTURE.md: wasm32 has no 64×64→128 multiply, so the engine and the recorder's per-event files
/// multiply into u128 only through `mul_wide` (whose cold arm is the one place the wide product is written);
/// the cost model uses no `f64::max`/`min` (NaN rules differ from wasm's instructions) and the hot paths no
/// `libm::sqrt` (f64::sqrt is one exact instruction on every target).
#[test]
fn the_wasm_hot_paths_make_no_hidden_library_calls() {
    let mut files = files_in(&["src/engine", "src/kv", "src/cost"]);
    files.extend(["src/metrics/mod.rs", "src/metrics/sessions.rs"].map(|f| root().join(f)));
    let mut bad = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let wide_fns: Vec<(usize, usize)> = (functions(&text).into_iter())
            .filter(|(name, ..)| name.starts_with("mul_wide"))
            .map(|(_, at, n)| (at - 1, at - 1 + n))
            .collect();
        for (i, line) in lines.iter().enumerate() {
            let code = code_of(line);
            let wide_product = code.contains("as u128") && code.contains(" * ");
            let in_cost = f.starts_with(root().join("src/cost"));
            if (wide_product && !wide_fns.iter().any(|&(a, b)| (a..b).contains(&i)))
                || (in_cost && (code.contains("f64::max") || code.contains("f64::min")))
                || code.contains("libm::sqrt")
            {
                bad.push(format!("{} {}", line_at(f, i), line.trim()));
            }
        }
    }
    assert!(files.len() > 10, "only {} files scanned", files.len());
    assert!(bad.is_empty(), "hidden library calls on wasm's hot paths: {bad:?}");
}

/// docs/ARCHITECTURE.md: the page's thread validates and draws; every run (a simulation, a study's job, a
/// calibration, the findings) happens in a worker. The page's code (its tests aside) calls none of them.
#[test]
fn the_page_never_simulates() {
    let files = files_in(&["www/src"]);
    let runs = ["simulate", "run_job", "run_native", "truth::calibrate", "findings::run", "capacity::sustained"];
    let mut bad = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let page = text.split("#[cfg(test)]").next().unwrap();
        for (i, line) in page.lines().enumerate() {
            let code = code_of(line);
            if let Some(r) = runs.iter().find(|r| code.contains(&format!("{r}("))) {
                bad.push(format!("{} {r}", line_at(f, i)));
            }
        }
    }
    assert!(files.len() > 15, "only {} files scanned", files.len());
    assert!(bad.is_empty(), "the page runs what a worker should: {bad:?}");
}

/// Every test function of the repository (Rust: `#[test]` or `#[wasm_bindgen_test]` before its `fn`) and
/// every e2e test's title.
fn test_names() -> (BTreeSet<String>, Vec<String>) {
    let files = files_in(&["src", "worker", "www/src", "tests"]);
    let mut names = BTreeSet::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let mut attributed = false;
        for line in text.lines().map(str::trim) {
            if line.starts_with("#[test]") || line.starts_with("#[wasm_bindgen_test]") {
                attributed = true;
            } else if let Some(rest) = line.strip_prefix("fn ").filter(|_| attributed) {
                names.insert(rest.split('(').next().unwrap().to_string());
                attributed = false;
            } else if !line.starts_with("#[") && !line.starts_with("//") {
                attributed = false;
            }
        }
    }
    let mut titles = Vec::new();
    for e in std::fs::read_dir(root().join("tests/e2e")).unwrap().filter_map(|e| e.ok()) {
        if e.path().to_string_lossy().ends_with(".test.mjs") {
            let text = std::fs::read_to_string(e.path()).unwrap();
            titles.extend(text.lines().filter_map(|l| l.strip_prefix("test(")).map(|l| l.replace("\\'", "'")));
        }
    }
    (names, titles)
}

/// docs/ARCHITECTURE.md: every invariant ends "Held by" the tests that would fail if it stopped being true, and
/// each test it names exists — a Rust test function anywhere in the workspace, or an e2e test by its title.
#[test]
fn every_invariant_names_the_tests_that_hold_it() {
    let doc = std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
    let section = doc.split("## Invariants\n").nth(1).unwrap().split("\n## ").next().unwrap();
    let bullets: Vec<&str> = section.split("\n- ").skip(1).collect();
    let (names, titles) = test_names();
    assert!(
        names.len() > 300 && titles.len() > 40,
        "{} tests, {} e2e titles: the scan is broken",
        names.len(),
        titles.len()
    );
    let mut bad = Vec::new();
    for b in &bullets {
        let head: String = b.chars().take(60).collect();
        let Some(held) = b.split("Held by ").nth(1) else {
            bad.push(format!("{head}…: names no test"));
            continue;
        };
        let held = held.replace('\n', " ");
        let (mut n, mut rest) = (0, held.as_str());
        while let Some(i) = rest.find(['`', '"']) {
            let quote = rest.as_bytes()[i] as char;
            let Some(len) = rest[i + 1..].find(quote) else { break };
            let name = &rest[i + 1..i + 1 + len];
            let e2e = rest[..i].trim_end().ends_with("e2e");
            let found = if e2e {
                titles.iter().any(|t| t.trim_start_matches(['\'', '"']).starts_with(name))
            } else {
                names.contains(name)
            };
            if !found {
                bad.push(format!("{head}…: {}{name} is not a test", if e2e { "e2e " } else { "" }));
            }
            n += 1;
            rest = &rest[i + 2 + len..];
        }
        if n == 0 {
            bad.push(format!("{head}…: names no test"));
        }
    }
    assert!(bullets.len() >= 20, "only {} invariants read", bullets.len());
    assert!(bad.is_empty(), "{bad:#?}");
}
