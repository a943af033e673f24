//! The code's shape, checked: no function in `src/` or `worker/src` longer than about a hundred lines, and no
//! import cycle between the core's modules (`docs/ARCHITECTURE.md` states both).

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
        let t = t.strip_prefix("pub(crate) ").or_else(|| t.strip_prefix("pub(super) ")).or_else(|| t.strip_prefix("pub ")).unwrap_or(t);
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

#[test]
fn no_function_is_longer_than_about_a_hundred_lines() {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    rust_files(&root().join("worker/src"), &mut files);
    let (mut long, mut counted) = (Vec::new(), 0);
    for f in &files {
        for (name, line, n) in functions(&std::fs::read_to_string(f).unwrap()) {
            counted += 1;
            if n > 100 {
                long.push(format!("{}:{line} {name} ({n} lines)", f.strip_prefix(root()).unwrap().display()));
            }
        }
    }
    assert!(counted > 400, "only {counted} functions found: the scan is broken");
    assert!(long.is_empty(), "functions longer than 100 lines: {long:?}");
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
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
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
        let next = graph.iter().find(|(m, deps)| !done.contains(m) && deps.iter().all(|d| done.contains(d) || !graph.contains_key(d)));
        match next {
            Some((m, _)) => done.push(m.clone()),
            None => {
                let left: Vec<_> = graph.iter().filter(|(m, _)| !done.contains(m)).map(|(m, d)| format!("{m} → {d:?}")).collect();
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
