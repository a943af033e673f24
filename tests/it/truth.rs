//! Importing measured runs: one small file per shape of docs/truth.md (each with the quirks seen in the wild),
//! the bundle's round trip, and bad files — an error naming file, line and key, the other runs kept.

use inferscale::truth::{Bundle, Case, Rate, import};

fn file(name: &str) -> (Vec<Case>, Vec<inferscale::truth::ImportError>) {
    let text = std::fs::read_to_string(super::root().join("tests/data/results").join(name)).unwrap();
    import(name, &text)
}

fn one(name: &str) -> Case {
    let (cases, errors) = file(name);
    assert!(errors.is_empty(), "{name}: {errors:?}");
    assert_eq!(cases.len(), 1, "{name}");
    cases.into_iter().next().unwrap()
}

/// A case made here: measured by a simulation, or written by hand.
fn made(id: String, workload: inferscale::truth::CaseWorkload, measured: inferscale::truth::Measured) -> Case {
    Case {
        id,
        source: inferscale::truth::Source { file: "made".into(), line: 1 },
        engine: "vllm".into(),
        backend: None,
        model_id: None,
        tp: None,
        gpu: None,
        workload,
        measured,
        notes: vec![],
    }
}

fn noted(c: &Case, words: &str) -> bool {
    c.notes.iter().any(|n| n.contains(words))
}

#[test]
fn current_vllm_results_import_whole() {
    let c = one("vllm-current.json");
    assert_eq!((c.id.as_str(), c.engine.as_str(), c.source.line), ("vllm-current.json", "vllm", 1));
    assert_eq!(c.model_id.as_deref(), Some("meta-llama/Llama-3.1-8B-Instruct"));
    assert_eq!(c.workload.request_rate, Some(Rate::PerSecond(8.0)));
    assert_eq!(c.workload.max_concurrency, None, "null is absent");
    assert_eq!(c.workload.mean_input_tokens, Some(1024.0));
    assert_eq!(c.workload.mean_output_tokens, Some(249.85));
    let m = &c.measured;
    assert_eq!(
        (m.ttft_ms.median, m.tpot_ms.mean, m.itl_ms.p99, m.e2e_ms.p99),
        (Some(150.3), Some(21.9), Some(60.2), Some(9800.1))
    );
    assert_eq!((m.completed, m.failed, m.request_throughput_rps), (Some(200), Some(0), Some(8.13)));
    // Saved without per-request lists: the one note says how the output lengths were read.
    assert_eq!(c.notes.len(), 1, "{:?}", c.notes);
    assert!(c.notes[0].starts_with("output lengths read from the E2E percentiles"), "{:?}", c.notes);
}

#[test]
fn legacy_vllm_results_with_the_colon_key_and_old_e2e_name() {
    let c = one("vllm-legacy.json");
    assert_eq!(c.measured.e2e_ms.median, Some(4600.0), "E2E from *_latency_ms");
    assert!(noted(&c, "old name `*_latency_ms`") && noted(&c, "`request_goodput:`"), "{:?}", c.notes);
    assert_eq!(c.workload.input_lens, [1024; 4]);
    assert_eq!(c.workload.output_lens, [128; 4]);
}

#[test]
fn infinite_rates_as_a_string_or_a_bare_token_are_closed_loop_or_a_burst() {
    let c = one("vllm-inf-concurrency.json");
    assert_eq!((c.workload.request_rate, c.workload.max_concurrency), (Some(Rate::Infinite), Some(16)));
    assert!(noted(&c, "closed loop, 16 clients"), "{:?}", c.notes);
    let (cases, errors) = file("sglang-bench-serving.jsonl");
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(cases.len(), 2);
    let inf = &cases[1];
    assert_eq!((inf.id.as_str(), inf.engine.as_str()), ("sglang-bench-serving.jsonl:2", "sglang"));
    assert_eq!(inf.workload.request_rate, Some(Rate::Infinite), "a bare Infinity");
    assert_eq!(inf.measured.total_token_throughput_tps, Some(13020.0), "SGLang's total_throughput");
    assert_eq!(inf.workload.output_lens, [512], "details.output_lens, the empty response left out");
    assert!(
        noted(inf, "1 empty response(s) (0 output tokens, or no TTFT) left out of every statistic"),
        "{:?}",
        inf.notes
    );
    assert_eq!(cases[0].measured.e2e_ms.p99, Some(11200.0), "SGLang's *_e2e_latency_ms");
    assert_eq!(cases[0].measured.itl_ms.p95, Some(30.0));
}

#[test]
fn json_lines_under_a_json_name_and_metadata_as_strings() {
    let (cases, errors) = file("vllm-runs-jsonl.json");
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        cases.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
        ["vllm-runs-jsonl.json:1", "vllm-runs-jsonl.json:2"]
    );
    assert_eq!(cases[1].workload.request_rate, Some(Rate::PerSecond(4.0)));
    assert!(noted(&cases[0], "read from text") && noted(&cases[0], "output_len"), "{:?}", cases[0].notes);
}

#[test]
fn old_sglang_and_stripped_files_keep_what_they_have_and_say_what_is_missing() {
    let old = one("sglang-old.jsonl");
    assert_eq!(old.engine, "sglang");
    assert_eq!(
        (old.measured.ttft_ms.median, old.measured.itl_ms.median, old.measured.e2e_ms.mean),
        (Some(90.0), Some(12.0), Some(2600.0))
    );
    assert_eq!(old.workload.mean_output_tokens, Some(210.0), "total_output / completed");
    assert!(noted(&old, "missing: request throughput, TPOT, p99 latencies"), "{:?}", old.notes);
    assert!(noted(&old, "not forced to the requested length"), "{:?}", old.notes);
    let s = one("stripped.json");
    assert_eq!(s.measured.ttft_ms.p99, Some(400.0));
    assert!(noted(&s, "missing: duration, completed, token totals, request throughput"), "{:?}", s.notes);
}

#[test]
fn per_chunk_itl_and_per_request_lists_are_read_for_what_they_are() {
    let c = one("chunked-itl.json");
    assert!(noted(&c, "ITL is per streamed chunk (mean ITL 9.8× mean TPOT)"), "{:?}", c.notes);
    let d = one("detailed-only.json");
    // TTFTs 20, 30, 40, 50 ms; TPOT (latency − TTFT) / (output − 1) = 10 ms for the three of 2+ tokens.
    assert_eq!(d.measured.ttft_ms.median, Some(35.0));
    assert_eq!(d.measured.tpot_ms.mean.map(|x| (x * 1e6).round() / 1e6), Some(10.0));
    assert_eq!(
        d.measured.e2e_ms.p99.map(|x| (x * 1e6).round() / 1e6),
        Some(336.7),
        "p99 of 50, 120, 230, 340 ms: 230 + 0.97 × 110"
    );
    assert!(noted(&d, "TTFT, E2E, TPOT computed from the per-request lists"), "{:?}", d.notes);
}

/// SGLang's `random` dataset draws each length uniformly from [max(⌊L × ratio⌋, 1), L] and ignores EOS: the
/// case keeps the generator's range (checked against the measured totals), and no note says the outputs were
/// not forced.
#[test]
fn sglang_random_lengths_keep_the_generators_range() {
    let (cases, errors) = file("sglang-random-range.jsonl");
    assert!(errors.is_empty(), "{errors:?}");
    let (c, old) = (&cases[0], &cases[1]);
    assert_eq!((c.workload.input_range, c.workload.output_range), (Some([1024, 2048]), Some([128, 256])));
    assert!(noted(c, "input lengths uniform in 1024 … 2048 tokens"), "{:?}", c.notes);
    assert!(!noted(c, "not forced"), "bench_serving ignores EOS: {:?}", c.notes);
    assert_eq!((old.workload.input_range, old.workload.output_range), (Some([1, 1024]), Some([1, 512])));
    let base = super::shipped("default.json");
    let spec = inferscale::truth::calibrate::scenario_of(&base, c).unwrap();
    assert_eq!(
        spec.workload.classes[0].prompt_tokens,
        inferscale::scenario::LengthSpec::Uniform { min: 1024, max: 2048 }
    );
    // Totals that the range cannot give (the made file of another shape): the measured mean is used, and said.
    let (made, _) = file("sglang-bench-serving.jsonl");
    assert_eq!(made[0].workload.input_range, None);
    assert!(
        noted(&made[0], "are not the generator's uniform 1 … 1024 (mean 512.5): the measured mean is used"),
        "{:?}",
        made[0].notes
    );
}

/// Per-request lists are checked entry by entry: a length that is not a whole number of tokens, a TTFT past
/// its latency, a list of another length or a count that disagrees with `completed` is refused or noted, with
/// the key and the entry.
#[test]
fn per_request_lists_are_checked_entry_by_entry() {
    let run = |lists: &str| {
        let text =
            format!(r#"{{"backend": "vllm", "request_rate": 1.0, "completed": 3, "median_ttft_ms": 10.0, {lists}}}"#);
        import("lists.json", &text)
    };
    for (lists, key, says) in [
        (r#""input_lens": [10, -5, 30]"#, "input_lens[1]", "whole number of tokens from 0 to 10,000,000 (got -5)"),
        (r#""output_lens": [10, 1e12, 30]"#, "output_lens[1]", "(got 1000000000000.0)"),
        (r#""output_lens": [10, 2.9, 30]"#, "output_lens[1]", "(got 2.9)"),
        (r#""ttfts": [0.5, 0.1, 0.1], "latencies": [0.2, 1.0, 1.0]"#, "ttfts[0]", "longer than the request's latency"),
        (r#""ttfts": [-0.2, 0.1, 0.1]"#, "ttfts[0]", "a time in seconds ≥ 0"),
        (r#""ttfts": 7"#, "ttfts", "must be a list"),
    ] {
        let (cases, errors) = run(lists);
        assert!(cases.is_empty(), "{lists}");
        assert_eq!(errors[0].key.as_deref(), Some(key), "{lists}: {errors:?}");
        assert!(errors[0].message.contains(says), "{lists}: {}", errors[0]);
    }
    let (cases, _) = run(r#""input_lens": [10, 20, 30], "output_lens": [5, 6]"#);
    assert!(noted(&cases[0], "disagree in length (input_lens 3, output_lens 2)"), "{:?}", cases[0].notes);
    assert!(cases[0].workload.input_lens.is_empty(), "lists that disagree are not used");
    let (cases, _) = run(r#""input_lens": [10, 20, 30, 40], "output_lens": [5, 6, 7, 8]"#);
    assert!(noted(&cases[0], "hold 4 requests, the run says completed 3"), "{:?}", cases[0].notes);
}

/// Empty responses (0 output tokens, TTFT 0) are left out of every statistic, not just noted: the TTFT median
/// of the served requests replaces the file's, and the replayed pairs are the served ones.
#[test]
fn empty_responses_are_left_out_of_every_statistic() {
    let text = r#"{"backend": "vllm", "request_rate": "inf", "completed": 5, "median_ttft_ms": 0.2, "mean_ttft_ms": 60.0,
        "input_lens": [100, 200, 300, 400, 500], "output_lens": [10, 0, 20, 0, 30],
        "ttfts": [0.1, 0.0, 0.2, 0.0, 0.3], "latencies": [0.5, 0.0, 0.6, 0.0, 0.7],
        "itls": [[0.04], [], [0.02, 0.02], [], [0.01]]}"#;
    let (cases, errors) = import("empties.json", text);
    assert!(errors.is_empty(), "{errors:?}");
    let c = &cases[0];
    assert_eq!(
        (c.workload.input_lens.as_slice(), c.workload.output_lens.as_slice()),
        ([100, 300, 500].as_slice(), [10, 20, 30].as_slice())
    );
    assert_eq!(
        c.measured.ttft_ms.median.map(|x| (x * 1e6).round() / 1e6),
        Some(200.0),
        "the served requests' 100, 200, 300 ms"
    );
    assert_eq!(c.workload.mean_output_tokens, Some(20.0));
    assert_eq!(c.measured.itl_ms.mean.map(|x| (x * 1e6).round() / 1e6), Some(22.5));
    assert!(
        noted(
            c,
            "2 empty response(s) (0 output tokens, or no TTFT) left out of every statistic and of the replayed pairs (TTFT, E2E, TPOT, ITL computed from the lists; TTFT median 0.2 ms in the file's aggregates, 200.0 ms without them)"
        ),
        "{:?}",
        c.notes
    );
}

/// A bad run gives an error naming the file, the line and the key; the others still import.
#[test]
fn bad_runs_are_named_and_never_lose_the_others() {
    let (cases, errors) = file("broken.jsonl");
    assert_eq!(cases.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["broken.jsonl:1"]);
    let shown: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
    assert_eq!(errors.iter().map(|e| e.line).collect::<Vec<_>>(), [2, 3, 4, 5], "{shown:?}");
    assert!(shown[0].starts_with("broken.jsonl:2: `duration`: must be a finite number ≥ 0"), "{}", shown[0]);
    assert!(shown[1].contains("no usable metric"), "{}", shown[1]);
    assert!(shown[2].contains("not JSON"), "{}", shown[2]);
    assert!(shown[3].starts_with("broken.jsonl:5: `median_ttft_ms`: must be a number"), "{}", shown[3]);
    // Whole files that are not results.
    for (text, want) in [
        ("", "empty"),
        ("[1, 2]", "not a JSON object"),
        ("{\"a\": 1}", "no usable metric"),
        ("{\"mean_ttft_ms\": 1", "not JSON"),
    ] {
        let (c, e) = import("x.json", text);
        assert!(c.is_empty() && !e.is_empty() && e.iter().all(|e| e.to_string().contains(want)), "{text:?}: {e:?}");
    }
}

#[test]
fn a_bundle_of_every_shape_round_trips() {
    let mut cases = Vec::new();
    for name in [
        "vllm-current.json",
        "vllm-legacy.json",
        "vllm-inf-concurrency.json",
        "vllm-runs-jsonl.json",
        "sglang-bench-serving.jsonl",
        "sglang-old.jsonl",
        "stripped.json",
        "chunked-itl.json",
        "detailed-only.json",
        "broken.jsonl",
    ] {
        cases.extend(file(name).0);
    }
    assert_eq!(cases.len(), 12);
    let b = Bundle::new(cases);
    let back = Bundle::parse(&b.json()).unwrap();
    assert_eq!(back, b);
    assert!(Bundle::parse("{\"inferscale_bundle\": 9, \"cases\": []}").unwrap_err().contains("version 9"));
    assert!(Bundle::parse("{").is_err());
}

/// A bundle — the import's own output, the lab's "Export bundle" — imports back as its cases (the lab's
/// Calibration panel refused it as a result file); a bundle of another version is an error naming the file.
#[test]
fn a_bundle_imports_back_as_its_cases() {
    let cases: Vec<Case> = ["vllm-current.json", "sglang-bench-serving.jsonl"].iter().flat_map(|n| file(n).0).collect();
    let text = Bundle::new(cases.clone()).json();
    let mut importer = inferscale::truth::Importer::default();
    importer.add("inferscale-bundle.json", &text);
    importer.add(
        "vllm-legacy.json",
        &std::fs::read_to_string(super::root().join("tests/data/results/vllm-legacy.json")).unwrap(),
    );
    let (back, errors) = importer.finish();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(back[..cases.len()], cases[..], "the bundle's cases, as they were");
    assert_eq!(back.len(), cases.len() + 1, "beside a result file's run");
    let mut importer = inferscale::truth::Importer::default();
    importer.add("old.json", "{\"inferscale_bundle\": 9, \"cases\": []}");
    let (none, errors) = importer.finish();
    assert!(none.is_empty() && errors[0].file == "old.json" && errors[0].message.contains("version 9"), "{errors:?}");
    // Attacks: a bundle cut short, nested 100,000 deep, or a case of the wrong shape — each an error naming the
    // file, never a panic, and the other files' runs kept.
    let deep = format!("{{\"inferscale_bundle\": 1, \"cases\": {}", "[".repeat(100_000));
    let half = (0..=text.len() / 2).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
    for (name, text) in [
        ("cut.json", text[..half].to_string()),
        ("deep.json", deep),
        ("shape.json", "{\"inferscale_bundle\": 1, \"cases\": [{\"id\": 5}]}".to_string()),
    ] {
        let mut importer = inferscale::truth::Importer::default();
        importer.add(name, &text);
        importer.add("inferscale-bundle.json", &Bundle::new(cases.clone()).json());
        let (kept, errors) = importer.finish();
        assert_eq!(kept.len(), cases.len(), "{name}");
        assert!(
            errors.len() == 1 && errors[0].file == name && errors[0].message.starts_with("not an InferScale bundle"),
            "{name}: {errors:?}"
        );
    }
}

/// A run is past saturation by its measurement when it served under 85 % of what a run of its size that keeps
/// up serves: n requests offered at λ take (n − 1) ÷ λ plus the last one's decode, so 4 requests at 10 req/s
/// whose last decodes for 2.6 s serve 1.4 req/s while keeping up — not past saturation (they were called so).
#[test]
fn a_short_run_is_not_called_past_saturation_for_its_drain() {
    use inferscale::truth::{CaseWorkload, LatencyMs, Measured, checks::measured_saturation};
    let case = |n: u64, served: f64| {
        let workload = CaseWorkload {
            request_rate: Some(Rate::PerSecond(10.0)),
            num_prompts: Some(n),
            mean_output_tokens: Some(128.0),
            ..CaseWorkload::default()
        };
        let measured = Measured {
            request_throughput_rps: Some(served),
            tpot_ms: LatencyMs { median: Some(20.0), ..LatencyMs::default() },
            ..Measured::default()
        };
        made(format!("n{n}"), workload, measured)
    };
    // 4 / (0.3 + 2.56) = 1.40 req/s keeps up.
    assert_eq!(measured_saturation(&case(4, 1.4)), None);
    assert!(measured_saturation(&case(4, 1.0)).is_some_and(|w| w.contains("keeps up serves 1.40")));
    // A long run is held to the offered rate itself: 10,000 / (999.9 + 2.56) = 9.97.
    assert_eq!(measured_saturation(&case(10_000, 9.0)), None);
    assert!(measured_saturation(&case(10_000, 7.0)).is_some());
}

#[test]
fn the_import_command_writes_the_bundle_and_names_what_it_could_not_read() {
    let dir = super::root().join("tests/data/results");
    let mut files: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path().to_string_lossy().into_owned()).collect();
    files.sort();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_inferscale")).arg("import").args(args).output().unwrap()
    };
    let args: Vec<&str> = files.iter().map(String::as_str).chain(["/dev/zero"]).collect();
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let bundle = Bundle::parse(&String::from_utf8(out.stdout).unwrap()).unwrap();
    // 14 vLLM and SGLang runs, an inference-perf stage, two InferenceX aggregates and three dashboard rows (a
    // fourth refused), two LoadGen logs.
    assert_eq!(bundle.cases.len(), 22);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("broken.jsonl:2: `duration`") && err.contains("/dev/zero: not a regular file"), "{err}");
    assert!(err.contains("summary_lifecycle_metrics.json:1: `load_summary.requested_rate`"), "{err}");
    assert!(err.contains("inferencex-dashboard-rows.json:3: `random_range_ratio`"), "{err}");
    let csv = run(&[&files[0], "--format", "csv"]);
    let text = String::from_utf8(csv.stdout).unwrap();
    assert!(text.starts_with("case,engine,model,request_rate_rps"), "{text}");
    assert_eq!(text.lines().count(), 2, "header + broken.jsonl's one good run");
    let md = run(&[&files[0], "--format", "md"]);
    assert!(String::from_utf8(md.stdout).unwrap().contains("| case | engine |"));
    let none = run(&["/dev/zero"]);
    assert_eq!(none.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&none.stderr).contains("no run could be read"));
}

/// Mutated result files (cut, spliced with attack text) never panic the importer: each run is a case or an
/// error naming its file and line.
#[test]
fn mutated_result_files_import_or_are_named_never_a_panic() {
    use inferscale::rng::{self, Stream};
    let dir = super::root().join("tests/data/results");
    let texts: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap()).collect();
    let words = [
        "Infinity",
        "-Infinity",
        "NaN",
        "\"inf\"",
        "-1",
        "1e308",
        "null",
        "[]",
        "{}",
        "\"",
        "\n",
        ",",
        "\u{feff}",
        "\"request_goodput:\": 1,",
    ];
    for i in 0..2000u64 {
        let mut r = rng::stream(0x7457, Stream::Study, i);
        let mut t = texts[r.below(texts.len() as u64) as usize].clone();
        for _ in 0..1 + r.below(4) {
            let cuts: Vec<usize> = t.char_indices().map(|(k, _)| k).collect();
            let at = cuts[r.below(cuts.len() as u64) as usize];
            let end = t[at..].char_indices().nth(r.below(8) as usize).map_or(t.len(), |(k, _)| at + k);
            t.replace_range(at..end, words[r.below(words.len() as u64) as usize]);
        }
        let (cases, errors) =
            std::panic::catch_unwind(|| import("m.json", &t)).unwrap_or_else(|_| panic!("case {i} panicked on {t:?}"));
        assert!(
            errors.iter().all(|e| e.file == "m.json" && e.line >= 1 && !e.message.is_empty()),
            "case {i}: {errors:?}"
        );
        assert!(cases.iter().all(|c| c.measured.has_latency()), "case {i}: a case without a latency");
        let _ = Bundle::parse(&Bundle::new(cases).json())
            .unwrap_or_else(|e| panic!("case {i}: the bundle does not round-trip: {e}"));
    }
}

/// Every figure a simulated run gives a case: each latency's median and mean, and its throughput.
fn measured_by(r: &inferscale::Report) -> inferscale::truth::Measured {
    use inferscale::truth::{LatencyMs, Measured};
    let ms = |s: &inferscale::metrics::Stats| LatencyMs {
        median: Some(s.p50 * 1e3),
        mean: Some(s.mean * 1e3),
        p90: Some(s.p90 * 1e3),
        p99: Some(s.p99 * 1e3),
        ..LatencyMs::default()
    };
    Measured {
        completed: Some(r.summary.completed),
        ttft_ms: ms(&r.summary.ttft_s),
        tpot_ms: ms(&r.summary.tpot_s),
        itl_ms: ms(&r.summary.itl_s),
        e2e_ms: ms(&r.summary.e2e_s),
        request_throughput_rps: Some(r.summary.throughput_rps),
        ..Measured::default()
    }
}

/// The base of the recovery tests: the default scenario with one class of 512 / 128 tokens.
fn one_class_base() -> inferscale::scenario::Spec {
    use inferscale::scenario::LengthSpec;
    let mut base = super::shipped("default.json");
    base.workload.classes.truncate(1);
    base.workload.classes[0].prompt_tokens = LengthSpec::Fixed { tokens: 512 };
    base.workload.classes[0].output_tokens = LengthSpec::Fixed { tokens: 128 };
    base
}

/// A case at `rate` req/s of 300 requests of 512 / 128 tokens, measured on `base` with prefill and decode
/// scaled by `scale`.
fn case_at(base: &inferscale::scenario::Spec, rate: f64, scale: (f64, f64)) -> Case {
    use inferscale::scenario::CostScaleSpec;
    use inferscale::truth::CaseWorkload;
    let workload = CaseWorkload {
        request_rate: Some(Rate::PerSecond(rate)),
        num_prompts: Some(300),
        mean_input_tokens: Some(512.0),
        mean_output_tokens: Some(128.0),
        ..CaseWorkload::default()
    };
    let mut truth = base.clone();
    truth.workload.arrival = inferscale::scenario::ArrivalSpec::Poisson { rate_rps: rate };
    truth.workload.requests = Some(300);
    truth.cost_scale = Some(CostScaleSpec { prefill: scale.0, decode: scale.1, transfer: 1.0 });
    made(format!("rate{rate}"), workload, measured_by(&inferscale::simulate(&super::valid(&truth))))
}

/// Recovery: runs "measured" on a known scenario with prefill × 1.3 and decode × 0.8 calibrate back to those
/// multipliers within 2 % — with two training cases past saturation whose TTFT no scale of the model reaches
/// (a tenth of what the model gives, as SGLang's admission keeps it low): they are flagged and fitted on their
/// throughput only, so they cannot bend the fit. Every latency metric the cases have is compared, the held-out
/// and leave-one-out errors fall to about 0, and the verdict recommends the calibrated model.
#[test]
fn calibration_recovers_known_multipliers_when_some_training_cases_are_past_saturation() {
    use inferscale::truth::calibrate;
    let base = one_class_base();
    let mut cases: Vec<Case> = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0].iter().map(|&r| case_at(&base, r, (1.3, 0.8))).collect();
    for rate in [60.0, 80.0] {
        let mut c = case_at(&base, rate, (1.3, 0.8));
        for l in [&mut c.measured.ttft_ms.median, &mut c.measured.ttft_ms.mean] {
            *l = l.map(|x| x / 10.0);
        }
        cases.push(c);
    }
    let train: Vec<String> = ["rate1", "rate3", "rate5", "rate60", "rate80"].map(String::from).to_vec();
    let c = calibrate(&base, &cases, &train).unwrap();
    assert!(
        (c.fitted.prefill / 1.3 - 1.0).abs() < 0.02 && (c.fitted.decode / 0.8 - 1.0).abs() < 0.02,
        "fitted {:?}",
        c.fitted
    );
    let flagged: Vec<&str> = c.saturated.iter().map(|s| s.case.as_str()).collect();
    assert_eq!(flagged, ["rate60", "rate80"], "{:?}", c.saturated);
    assert!(c.saturated[0].why.contains("past saturation"), "{:?}", c.saturated[0]);
    let metrics: std::collections::BTreeSet<&str> = c.rows.iter().map(|r| r.metric).collect();
    assert_eq!(metrics.len(), 8, "TTFT, TPOT, ITL and E2E, median and mean: {metrics:?}");
    for m in c.held_out_mape.iter() {
        let (b, a) = (m.baseline.unwrap(), m.calibrated.unwrap());
        assert!(a < 0.01 && a < b, "{}: held-out MAPE {b} → {a}", m.metric);
    }
    let (h, l) = (c.held_out, c.leave_one_out);
    assert!(h.calibrated.unwrap() < 0.01 && h.baseline.unwrap() > 0.05, "{h:?}");
    assert!(l.calibrated.unwrap() < 0.01 && l.figures == 24, "three training cases not saturated: {l:?}");
    assert_eq!(c.recommended, "calibrated", "{}", c.verdict);
    // The tails are predicted and reported, never fitted nor counted: the held-out headline is over the eight
    // fitted figures alone, and the recovered multipliers bring the held-out p90s and p99s back too (within
    // 10 %: a multiplier 2 % off moves a queue's tail more than its median).
    let tails: std::collections::BTreeSet<&str> = c.tail_rows.iter().map(|r| r.metric).collect();
    assert_eq!(tails.len(), 7, "TTFT, TPOT and E2E p90 and p99, ITL p99: {tails:?}");
    assert_eq!(h.figures, c.rows.iter().filter(|r| !r.training && !r.saturated).count());
    for r in c.tail_rows.iter().filter(|r| !r.training && !r.saturated) {
        assert!(r.calibrated_ape < 0.10 && r.calibrated_ape < r.baseline_ape, "{r:?}");
    }
    assert!(c.rows.iter().filter(|r| r.training && !r.saturated).all(|r| r.leave_one_out_ape.is_some()));
    assert!(!c.warnings.iter().any(|w| w.starts_with("rate6")), "rate 6 is inside 1 … 80: {:?}", c.warnings);
    // Without the flags the unreachable TTFTs would pull prefill down: the same cases, all trusted, fit worse.
    let mut trusted = cases.clone();
    for c in &mut trusted[6..] {
        c.measured.request_throughput_rps = None;
        c.workload.request_rate = Some(Rate::PerSecond(6.5));
    }
    let bent = calibrate(&base, &trusted, &train).unwrap();
    assert!((bent.fitted.prefill / 1.3 - 1.0).abs() > 0.05, "unflagged, the fit bends: {:?}", bent.fitted);
}

/// A case the base cannot place is an error or left out, named; so are bundles no fit should run on.
#[test]
fn calibration_refuses_what_is_not_a_measurement_and_names_it() {
    use inferscale::truth::calibrate;
    let base = one_class_base();
    let cases: Vec<Case> = [1.0, 2.0, 3.0].iter().map(|&r| case_at(&base, r, (1.0, 1.0))).collect();
    assert!(calibrate(&base, &cases, &["nope".into()]).unwrap_err().contains("`nope`"));
    assert_eq!(calibrate(&base, &[], &[]).unwrap_err(), "the bundle has no case");
    let twice = [cases.clone(), vec![cases[1].clone()]].concat();
    assert!(calibrate(&base, &twice, &[]).unwrap_err().contains("case `rate2` twice"), "duplicate ids");
    let left_out = |c: Case| {
        let w = calibrate(&base, &[cases.clone(), vec![c]].concat(), &[]).unwrap().warnings;
        w.into_iter().find(|w| w.starts_with("left out: odd")).unwrap_or_default()
    };
    for (v, what) in
        [(-100.0, "measured.ttft_ms.median"), (0.0, "measured.ttft_ms.median"), (1e308, "measured.ttft_ms.median")]
    {
        let mut odd = cases[0].clone();
        (odd.id, odd.measured.ttft_ms.median) = ("odd".into(), Some(v));
        let w = left_out(odd);
        assert!(w.contains(what) && w.contains("a day"), "{v}: {w}");
    }
    let mut odd = cases[0].clone();
    (odd.id, odd.workload.request_rate) = ("odd".into(), Some(Rate::PerSecond(1e308)));
    assert!(left_out(odd).contains("workload.arrival.rate_rps"));
    let mut odd = cases[0].clone();
    (odd.id, odd.workload.request_rate) = ("odd".into(), None);
    assert!(left_out(odd.clone()).contains("no request rate"));
    assert!(calibrate(&base, &[odd], &[]).unwrap_err().contains("no request rate"));
    let mut wide = cases[0].clone();
    (wide.id, wide.workload.request_rate, wide.workload.max_concurrency) =
        ("wide".into(), Some(Rate::Infinite), Some(1_000_000_000_000));
    let c = calibrate(&base, &[cases.clone(), vec![wide]].concat(), &[]).unwrap();
    assert!(c.warnings.iter().any(|w| w.contains("max_concurrency 1000000000000 is simulated as 1,000,000")));
    // Every case trains: no held-out error, and the verdict does not recommend an unchecked fit.
    let all: Vec<String> = cases.iter().map(|c| c.id.clone()).collect();
    let c = calibrate(&base, &cases, &all).unwrap();
    assert_eq!((c.held_out.figures, c.held_out.calibrated), (0, None));
    assert!(c.leave_one_out.figures > 0, "three training cases: each left out once");
}

/// A run longer than the budget is simulated shorter, and said; a short one is simulated whole, past the old
/// cap of 2,000 requests.
#[test]
fn a_case_runs_its_measured_count_within_the_budget() {
    use inferscale::truth::calibrate::{CASE_STEPS, case_run};
    let base = one_class_base();
    let mut c = case_at(&base, 4.0, (1.0, 1.0));
    c.workload.num_prompts = Some(3_200);
    let (_, asked, simulated) = case_run(&base, &c).unwrap();
    assert_eq!((asked, simulated), (3_200, 3_200));
    c.workload.num_prompts = Some(10_000_000);
    c.workload.mean_output_tokens = Some(1_000.0);
    let (sc, asked, simulated) = case_run(&base, &c).unwrap();
    assert_eq!(asked, 10_000_000);
    assert!(simulated < asked && sc.estimate().steps <= CASE_STEPS, "{simulated}");
}

/// A knob the cases cannot move is reported as such, not as a fitted value; a fit that ends on its bound is
/// warned about; a case measured on another model is named with the preset that matches it; and a fit that
/// predicts the held-out cases worse than the uncalibrated model is not recommended.
#[test]
fn calibration_says_what_it_cannot_identify_reach_or_improve() {
    use inferscale::truth::{Extra, calibrate, calibrate_with_progress};
    let base = one_class_base();
    let cases: Vec<Case> = [1.0, 2.0, 3.0, 4.0].iter().map(|&r| case_at(&base, r, (1.0, 1.0))).collect();
    let c = calibrate_with_progress(&base, &cases, &[], &[Extra::TpComm], &mut |_, _| {}).unwrap();
    assert_eq!(c.unidentified, ["tp_comm"], "TP 1 has no all-reduce");
    assert_eq!(c.fitted.tp_comm, None);
    assert!(inferscale::export::calibration_markdown(&c).contains("Not identifiable from these cases"));
    // Measured eight times slower than the model: prefill ends on its bound of 4.
    let slow: Vec<Case> = [1.0, 2.0, 3.0, 4.0].iter().map(|&r| case_at(&base, r / 8.0, (8.0, 8.0))).collect();
    let c = calibrate(&base, &slow, &[]).unwrap();
    assert!(c.warnings.iter().any(|w| w.contains("ends on its search bound")), "{:?}", c.warnings);
    // Training cases measured 1.5× slower than the held-out ones: the fit chases them, and is not recommended.
    let mixed: Vec<Case> = [1.0, 2.0, 3.0, 4.0]
        .iter()
        .map(|&r| case_at(&base, r, if r % 2.0 == 1.0 { (1.5, 1.5) } else { (1.0, 1.0) }))
        .collect();
    let c = calibrate(&base, &mixed, &[]).unwrap();
    assert!(c.held_out.calibrated > c.held_out.baseline, "{:?}", c.held_out);
    assert_eq!(c.recommended, "uncalibrated");
    assert!(
        c.verdict.contains("Left out one at a time the calibrated model is better, but held out it is worse"),
        "{}",
        c.verdict
    );
    assert!(inferscale::export::calibration_markdown(&c).contains("**Use the uncalibrated model.**"));
    let mut seventy = cases.clone();
    seventy[0].model_id = Some("meta-llama/Meta-Llama-3-70B-Instruct".into());
    seventy[1].tp = Some(4);
    let w = calibrate(&base, &seventy, &[]).unwrap().warnings;
    assert!(
        w.iter().any(|w| w.starts_with("rate1 was measured on meta-llama/Meta-Llama-3-70B-Instruct")
            && w.contains("set `model.preset` to `llama-3-70b`")),
        "{w:?}"
    );
    assert!(w.iter().any(|w| w == "rate2 ran at TP 4, the base scenario at TP 1"), "{w:?}");
}

/// Repeated runs of one configuration give the noise floor, and the verdict says it.
#[test]
fn repeated_runs_give_the_noise_floor() {
    let base = one_class_base();
    let mut cases: Vec<Case> = [1.0, 2.0, 3.0].iter().map(|&r| case_at(&base, r, (1.0, 1.0))).collect();
    let mut again = cases[1].clone();
    again.id = "rate2-again".into();
    again.measured.ttft_ms.median = again.measured.ttft_ms.median.map(|x| x * 1.1);
    cases.push(again);
    let c = inferscale::truth::calibrate(&base, &cases, &[]).unwrap();
    let n = c.noise_floor.unwrap();
    assert_eq!((n.groups, n.runs), (1, 2));
    assert!(n.spread < 0.05, "one figure of eight differs by ±4.8 %: {n:?}");
    assert!(c.verdict.contains("Repeated runs in the bundle differ by"), "{}", c.verdict);
}

/// A burst with per-request lengths replays its (input, output) pairs in order: the case's run equals, byte
/// for byte, a hand-written trace of the same pairs at t = 0, and the seed no longer moves it.
#[test]
fn a_burst_case_replays_its_pairs_exactly() {
    use inferscale::scenario::{ArrivalSpec, TraceFormat};
    use inferscale::truth::{CaseWorkload, calibrate::scenario_of};
    let base = one_class_base();
    let pairs: Vec<(u32, u32)> = (0..40).map(|i| (100 + 37 * (i * 7 % 40), 5 + 11 * (i * 13 % 40))).collect();
    let workload = CaseWorkload {
        request_rate: Some(Rate::Infinite),
        num_prompts: Some(40),
        input_lens: pairs.iter().map(|p| p.0).collect(),
        output_lens: pairs.iter().map(|p| p.1).collect(),
        ..CaseWorkload::default()
    };
    let case = made("burst".into(), workload, inferscale::truth::Measured::default());
    let replay = scenario_of(&base, &case).unwrap();
    let mut trace = replay.clone();
    let csv: String = std::iter::once("arrived_at,num_prefill_tokens,num_decode_tokens\n".to_string())
        .chain(pairs.iter().map(|(i, o)| format!("0,{i},{o}\n")))
        .collect();
    trace.workload.arrival = ArrivalSpec::Trace {
        path: None,
        data: Some(csv.into()),
        format: TraceFormat::Vidur,
        time_scale: 1.0,
        reuse_hash_ids: true,
        hash_block_tokens: 512,
    };
    let run = |s: &inferscale::scenario::Spec| {
        let sc = super::valid(s);
        let r = inferscale::simulate(&sc);
        (serde_json::to_string(&r.summary).unwrap(), inferscale::export::requests_csv(&r, &sc))
    };
    assert_eq!(run(&replay), run(&trace), "the replay is the trace");
    let mut reseeded = replay.clone();
    reseeded.seed = 7;
    assert_eq!(run(&replay).0, run(&reseeded).0, "no length is drawn: the seed does not move the burst");
}

/// The extra knobs: runs made with a 40 ms request overhead and TP 2's all-reduce at 1.5× its time on an H100
/// pair are fitted with `--fit request_overhead,tp_comm`: the overhead comes back within 3 ms and the held-out
/// error falls below 2 % on every metric; without the knobs it stays higher. The cases differ in prompt length
/// as well as load: with one prompt length a fixed overhead and the prefill scale cost TTFT alike and no fit
/// can tell them apart. The all-reduce factor moves the right way but trades against the prefill and decode
/// scales (all cost per token at one TP), so it is asserted only to rise: cases at several TPs would pin it.
/// The fit is deterministic.
#[test]
fn calibration_fits_the_request_overhead_and_the_all_reduce_when_asked() {
    use inferscale::truth::{Extra, calibrate_with_progress};
    let mut base = super::shipped("default.json");
    base.workload.classes.truncate(1);
    (base.hardware.device, base.hardware.tp) = (Some("h100-sxm".into()), 2);
    let cases = overhead_cases(&base, 40.0, 1.5);
    let extras = [Extra::RequestOverhead, Extra::TpComm];
    let (mut calls, mut last) = (0u64, (0, 0));
    let c = calibrate_with_progress(&base, &cases, &[], &extras, &mut |d, e| {
        calls += 1;
        last = (d, e);
    })
    .unwrap();
    let f = c.fitted;
    println!("fitted {f:?}; held out {:?}", c.held_out_mape);
    assert!((f.request_overhead_ms.unwrap() - 40.0).abs() < 3.0, "{f:?}");
    assert!(f.tp_comm.unwrap() > 1.2, "{f:?}");
    for m in c.held_out_mape.iter().filter(|m| m.baseline.is_some()) {
        assert!(m.calibrated.unwrap() < 0.02, "{}: held-out MAPE {:?}", m.metric, m.calibrated);
    }
    assert_eq!(calls, last.0, "a progress call per simulation");
    // Prefill and decode alone cannot place a fixed 40 ms before every request: the held-out TTFT stays off.
    let plain = inferscale::truth::calibrate(&base, &cases, &[]).unwrap();
    let ttft = |c: &inferscale::truth::Calibration| c.held_out_mape[0].calibrated.unwrap();
    assert!(ttft(&plain) > 2.0 * ttft(&c), "TTFT held-out {} without the knobs vs {} with", ttft(&plain), ttft(&c));
    assert_eq!(
        inferscale::export::calibration_json(&c),
        inferscale::export::calibration_json(
            &calibrate_with_progress(&base, &cases, &[], &extras, &mut |_, _| {}).unwrap()
        )
    );
    assert!(inferscale::export::calibration_markdown(&c).contains("request overhead + "));
}

/// Runs "measured" on `base` with `overhead_ms` before every request and the all-reduce at `allreduce` times
/// its time: six loads, three prompt lengths (one length could not tell an overhead from the prefill scale);
/// medians of TTFT, TPOT and E2E.
fn overhead_cases(base: &inferscale::scenario::Spec, overhead_ms: f64, allreduce: f64) -> Vec<Case> {
    let points = [(1.0, 128), (3.0, 2048), (6.0, 512), (10.0, 128), (15.0, 2048), (20.0, 512)];
    made_cases(base, &points, overhead_ms, 0.0, 128, allreduce, 0.0)
}

/// [`overhead_cases`] at `points` (rate, prompt tokens) with `step_ms` on every step, `per_seq_us` of host
/// work per running sequence on every step, and `output` tokens a request.
fn made_cases(
    base: &inferscale::scenario::Spec,
    points: &[(f64, u32)],
    overhead_ms: f64,
    step_ms: f64,
    output: u32,
    allreduce: f64,
    per_seq_us: f64,
) -> Vec<Case> {
    use inferscale::scenario::LengthSpec;
    use inferscale::truth::{CaseWorkload, LatencyMs, Measured};
    let ms = |p: f64| LatencyMs { median: Some(p * 1e3), ..LatencyMs::default() };
    points
        .iter()
        .map(|&(rate, prompt)| {
            let workload = CaseWorkload {
                request_rate: Some(Rate::PerSecond(rate)),
                num_prompts: Some(300),
                mean_input_tokens: Some(prompt as f64),
                mean_output_tokens: Some(output as f64),
                ..CaseWorkload::default()
            };
            let mut truth = base.clone();
            truth.workload.arrival = inferscale::scenario::ArrivalSpec::Poisson { rate_rps: rate };
            truth.workload.requests = Some(300);
            truth.workload.classes[0].prompt_tokens = LengthSpec::Fixed { tokens: prompt };
            truth.workload.classes[0].output_tokens = LengthSpec::Fixed { tokens: output };
            truth.engine.request_overhead_ms = overhead_ms;
            let mut sc = super::valid(&truth);
            for p in &mut sc.pools {
                p.cost = p.cost.clone().adjusted(step_ms * 1e6, allreduce, per_seq_us * 1e3);
            }
            let r = inferscale::simulate(&sc);
            let measured = Measured {
                ttft_ms: ms(r.summary.ttft_s.p50),
                tpot_ms: ms(r.summary.tpot_s.p50),
                e2e_ms: ms(r.summary.e2e_s.p50),
                ..Measured::default()
            };
            made(format!("rate{rate}"), workload, measured)
        })
        .collect()
}

/// `--fit auto` chooses the knobs by leave-one-out on the training cases and never looks at the held-out
/// ones: runs made with a 150 ms request overhead get a per-request knob (the overhead, or the front end that
/// costs the same at these loads) and its time back; runs made on the plain model get none, a knob not
/// earning its place; and held-out measurements twice as fast change neither the choice nor the fit —
/// only the verdict, which they can veto.
#[test]
fn calibration_chooses_its_knobs_by_leave_one_out_never_by_the_held_out_cases() {
    use inferscale::truth::{Options, calibrate_with};
    let mut base = super::shipped("default.json");
    base.workload.classes.truncate(1);
    let auto = Options { choose: true, ..Options::default() };
    let cases = overhead_cases(&base, 150.0, 1.0);
    let c = calibrate_with(&base, &cases, &[], &auto, &mut |_, _| {}).unwrap();
    let chosen: Vec<&str> = c.knob_choice.iter().filter(|t| t.chosen).map(|t| t.knobs.as_str()).collect();
    let tried: Vec<&str> = c.knob_choice.iter().map(|t| t.knobs.as_str()).collect();
    let singles = ["none", "step_overhead", "request_overhead", "frontend"];
    assert_eq!(tried[..4], singles, "TP 1: no all-reduce to try; the per-sequence time only when named");
    println!("chose {chosen:?}: {:?}; fitted {:?}", c.knob_choice, c.fitted);
    // A second knob is tried only beside the single chosen, and not kept when it earns nothing.
    assert_eq!(chosen.len(), 1);
    assert_eq!(tried.len(), 6, "{tried:?}");
    assert!(tried[4..].iter().all(|t| t.split(", ").any(|k| k == chosen[0])), "{tried:?}");
    let per_request = c.fitted.request_overhead_ms.or(c.fitted.frontend_ms).expect("a per-request knob");
    assert!((per_request - 150.0).abs() < 15.0, "{:?}", c.fitted);
    assert!(c.verdict.starts_with("Knobs chosen by leave-one-out on the training cases"), "{}", c.verdict);
    assert_eq!(c.recommended, "calibrated", "{}", c.verdict);
    // The plain model's own runs: no knob lowers the leave-one-out error by half a point.
    let plain = overhead_cases(&base, 0.0, 1.0);
    let p = calibrate_with(&base, &plain, &[], &auto, &mut |_, _| {}).unwrap();
    assert_eq!(p.knob_choice.iter().find(|t| t.chosen).unwrap().knobs, "none", "{:?}", p.knob_choice);
    assert_eq!((p.fitted.step_overhead_ms, p.fitted.request_overhead_ms, p.fitted.frontend_ms), (None, None, None));
    // Held-out cases measured twice as fast: the same choice and fit, and the held-out cases veto it.
    let split = inferscale::truth::default_training(&cases);
    let mut faster = cases.clone();
    for (c, _) in faster.iter_mut().zip(&split).filter(|(_, t)| !**t) {
        for l in [&mut c.measured.ttft_ms, &mut c.measured.tpot_ms, &mut c.measured.e2e_ms] {
            l.median = l.median.map(|x| x * 0.5);
        }
    }
    let s = calibrate_with(&base, &faster, &[], &auto, &mut |_, _| {}).unwrap();
    let choice = |c: &inferscale::truth::Calibration| -> Vec<(String, Option<f64>, bool)> {
        c.knob_choice.iter().map(|t| (t.knobs.clone(), t.leave_one_out, t.chosen)).collect()
    };
    assert_eq!((choice(&s), s.fitted), (choice(&c), c.fitted));
    // Each trial's held-out error is reported beside it — and it is the held-out cases' own, not the choice's.
    let held = |c: &inferscale::truth::Calibration| c.knob_choice.iter().map(|t| t.held_out).collect::<Vec<_>>();
    assert!(held(&s).iter().zip(held(&c)).all(|(a, b)| a.unwrap() > b.unwrap() + 0.2), "{:?}", s.knob_choice);
    assert_eq!(s.recommended, "uncalibrated", "{}", s.verdict);
    assert!(s.verdict.contains("but held out it is worse"), "{}", s.verdict);
    // One training case leaves nothing out: no knob is chosen, and it is said.
    let one = calibrate_with(&base, &cases, &["rate1".into()], &auto, &mut |_, _| {}).unwrap();
    assert_eq!(one.knob_choice.len(), 1);
    assert!(
        one.warnings.iter().any(|w| w.contains("one training case leaves nothing to leave out")),
        "{:?}",
        one.warnings
    );
}

/// `--fit seq_overhead` fits the step's batch-dependent term: runs made with 300 µs of host work per running
/// sequence on every step (Poisson 1 … 8 req/s, batches of about 3 to 60), trained on the three lightest (1,
/// 2 and 4 req/s), get it back within 15 % and predict the three heaviest — held out, above every training
/// load — within 2 % at the median; a fixed step overhead fitted on the same light runs cannot follow the step
/// as the batch grows, and misses the heavy runs by at least twice as much (measured: 299.6 µs, 0.8 % against
/// 52.8 %, uncalibrated 61.1 %). Named beside `auto` with the step overhead, it is the knob chosen.
#[test]
fn calibration_fits_the_batch_dependent_step_time_and_extrapolates_to_heavy_load() {
    use inferscale::truth::{Options, calibrate_with};
    let mut base = super::shipped("default.json");
    base.workload.classes.truncate(1);
    let points = [(1.0, 512), (2.0, 512), (4.0, 512), (6.0, 512), (7.0, 512), (8.0, 512)];
    let cases = made_cases(&base, &points, 0.0, 0.0, 256, 1.0, 300.0);
    let train: Vec<String> = ["rate1", "rate2", "rate4"].map(String::from).to_vec();
    let fit = |knob: &str| {
        let opts = Options::parse(&[knob.into()], None).unwrap();
        calibrate_with(&base, &cases, &train, &opts, &mut |_, _| {}).unwrap()
    };
    let (per_seq, fixed) = (fit("seq_overhead"), fit("step_overhead"));
    let heavy = |c: &inferscale::truth::Calibration| c.heavy_load.calibrated.unwrap();
    println!(
        "per sequence {:?}: heavy {:?}; fixed {:?}: heavy {:?}",
        per_seq.fitted, per_seq.heavy_load, fixed.fitted, fixed.heavy_load
    );
    let us = per_seq.fitted.seq_overhead_us.unwrap();
    assert!((us - 300.0).abs() < 45.0, "{:?}", per_seq.fitted);
    assert!(per_seq.fitted.sentence().contains("per-sequence step time + "), "{}", per_seq.fitted.sentence());
    assert_eq!(per_seq.heavy_load.figures, 9, "TTFT, TPOT and E2E medians of the three heavy runs");
    assert!(heavy(&per_seq) < 0.02, "{:?}", per_seq.heavy_load);
    assert!(heavy(&fixed) > 2.0 * heavy(&per_seq), "{:?} {:?}", fixed.heavy_load, per_seq.heavy_load);
    let named = Options::parse(&["auto".into(), "seq_overhead".into(), "step_overhead".into()], None).unwrap();
    let auto = calibrate_with(&base, &cases, &train, &named, &mut |_, _| {}).unwrap();
    let pick = auto.knob_choice.iter().find(|t| t.chosen).unwrap();
    assert_eq!(pick.knobs, "seq_overhead", "{:?}", auto.knob_choice);
}

/// `--fit auto` adds a second knob when one is not enough: runs made with 150 ms before every request *and*
/// 15 ms on every step, long prompts and long answers (so the decode step grows with the batch's context and
/// a larger decode scale cannot stand in for a fixed step time), get both — the pair's leave-one-out error
/// more than half a point below the best single's, the step's 15 ms back within 3. Never more than two, and
/// never a set whose fit leaves a knob idle.
#[test]
fn calibration_adds_a_second_knob_only_when_it_earns_its_place() {
    use inferscale::truth::{Options, calibrate_with};
    let mut base = super::shipped("default.json");
    base.workload.classes.truncate(1);
    let auto = Options { choose: true, ..Options::default() };
    let points = [(0.05, 7680), (0.15, 7680), (0.3, 7680), (0.5, 128), (1.0, 128), (2.0, 128)];
    let cases = made_cases(&base, &points, 150.0, 15.0, 512, 1.0, 0.0);
    let c = calibrate_with(&base, &cases, &[], &auto, &mut |_, _| {}).unwrap();
    println!("{:#?}\nfitted {:?}", c.knob_choice, c.fitted);
    let pick = c.knob_choice.iter().find(|t| t.chosen).unwrap();
    // The step's knob and a per-request one (the fixed overhead, or the front end that costs the same at
    // these loads).
    assert!(
        ["step_overhead, request_overhead", "step_overhead, frontend"].contains(&pick.knobs.as_str()),
        "{:?}",
        c.knob_choice
    );
    let best_single = (c.knob_choice.iter().filter(|t| !t.knobs.contains(", ") && t.knobs != "none"))
        .filter_map(|t| t.leave_one_out)
        .fold(f64::INFINITY, f64::min);
    assert!(pick.leave_one_out.unwrap() < best_single - 0.005, "{:?}", c.knob_choice);
    assert!((c.fitted.step_overhead_ms.unwrap() - 15.0).abs() < 3.0, "{:?}", c.fitted);
    assert!(c.fitted.request_overhead_ms.or(c.fitted.frontend_ms).unwrap() > 75.0, "{:?}", c.fitted);
    // Shown, never consulted: on the runs no fit saw, the pair is better than the single too.
    let single = c.knob_choice.iter().find(|t| t.knobs == "step_overhead").unwrap();
    assert!(pick.held_out.unwrap() < single.held_out.unwrap(), "{:?}", c.knob_choice);
    assert!(c.knob_choice.iter().all(|t| t.knobs.split(", ").count() <= 2 && !(t.chosen && t.idle)));
    let said =
        format!("Knobs chosen by leave-one-out on the training cases, never by the held-out ones: {}", pick.knobs);
    assert!(c.verdict.contains(&said), "{}", c.verdict);
}

/// No metric gets much worse unremarked: the public Mixtral-8x7B series calibrated against a mismatched base
/// (Llama-2-70B at TP 4) improves the median error both left out and held out, yet its held-out E2E error
/// triples — the verdict names the figure and does not recommend the fit.
#[test]
fn a_fit_that_makes_one_metric_much_worse_is_named_and_not_recommended() {
    use inferscale::truth::{Bundle, Options, calibrate_with};
    let root = super::root().join("tests/data/public");
    let base = inferscale::scenario::parse(&std::fs::read_to_string(root.join("llama-2-70b.json")).unwrap()).unwrap();
    let bundle = Bundle::parse(&std::fs::read_to_string(root.join("mixtral-8x7b.bundle.json")).unwrap()).unwrap();
    let train = ["general/stage_0.json", "general/stage_1.json"].map(|s| format!("mixtral-8x7b-v0-1-tp2-{s}"));
    let opts = Options::parse(&["request_overhead".into()], None).unwrap();
    let c = calibrate_with(&base, &bundle.cases, &train, &opts, &mut |_, _| {}).unwrap();
    let (l, h) = (c.leave_one_out, c.held_out);
    assert!(l.calibrated < l.baseline && h.calibrated < h.baseline, "{l:?} {h:?}");
    let e2e = c.held_out_mape.iter().find(|m| m.metric == "E2E median").unwrap();
    assert!(e2e.calibrated.unwrap() > 1.5 * e2e.baseline.unwrap(), "{e2e:?}");
    assert_eq!(c.recommended, "uncalibrated", "{}", c.verdict);
    assert!(c.verdict.contains("much worse") && c.verdict.contains("E2E median held out"), "{}", c.verdict);
    assert!(!c.verdict.contains("is not better"), "the median is better; the figure is the reason: {}", c.verdict);
}

/// Heavy load is where a capacity is decided: a fit better left out one at a time and better over every held-out
/// figure, but worse on the held-out cases above every training load, is not recommended, and the verdict says
/// so with both heavy-load errors. Light runs are "measured" with 10 ms on every step; the heavy one is the
/// uncalibrated model's own prediction, so the fit that learned the 10 ms extrapolates worse there.
#[test]
fn a_fit_that_extrapolates_worse_at_heavy_load_is_not_recommended() {
    use inferscale::truth::{Options, calibrate_with};
    let base = one_class_base();
    let light = [(1.0, 128), (2.0, 128), (3.0, 128), (4.0, 128), (5.0, 128)];
    let mut cases = made_cases(&base, &light, 0.0, 10.0, 128, 1.0, 0.0);
    cases.extend(made_cases(&base, &[(10.0, 128)], 0.0, 0.0, 128, 1.0, 0.0));
    let opts = Options::parse(&["step_overhead".into()], None).unwrap();
    let c = calibrate_with(&base, &cases, &[], &opts, &mut |_, _| {}).unwrap();
    let (l, h, heavy) = (c.leave_one_out, c.held_out, c.heavy_load);
    println!("{l:?} {h:?} {heavy:?}\n{}", c.verdict);
    assert!(l.calibrated < l.baseline && h.calibrated < h.baseline, "{l:?} {h:?}");
    assert_eq!(heavy.figures, 3, "the rate-10 case's TTFT, TPOT and E2E medians: {heavy:?}");
    assert!(heavy.calibrated > heavy.baseline, "{heavy:?}");
    assert_eq!(c.recommended, "uncalibrated", "{}", c.verdict);
    let said = format!(
        "Held out at heavy load, above every training case's load (3 figures, latency medians): median APE {:.1} % uncalibrated → {:.1} % calibrated.",
        heavy.baseline.unwrap() * 100.0,
        heavy.calibrated.unwrap() * 100.0
    );
    assert!(c.verdict.contains(&said), "{}", c.verdict);
    assert!(c.verdict.contains("the fit extrapolates worse than the uncalibrated model"), "{}", c.verdict);
    assert_eq!(c.gate.model, "uncalibrated");
    let heavy_row = "| held out at heavy load (above the training loads) | 3 |";
    assert!(inferscale::export::calibration_markdown(&c).contains(heavy_row));
    // The light runs alone (no heavy point held out): the same fit is recommended, and no heavy sentence.
    let c = calibrate_with(&base, &cases[..5], &[], &opts, &mut |_, _| {}).unwrap();
    assert_eq!((c.recommended, c.heavy_load.figures), ("calibrated", 0), "{}", c.verdict);
    assert!(!c.verdict.contains("heavy load"), "{}", c.verdict);
    assert!(!inferscale::export::calibration_markdown(&c).contains("at heavy load"));
}

/// The gate: the recommended model's median error on runs it did not see against the tolerance, 20 % unless
/// given; the same calibration passes at a loose tolerance and fails at a tight one, and says which set it
/// judged. The tolerance's extremes are refused naming the field and its range.
#[test]
fn every_calibrated_answer_carries_a_gate_at_a_stated_tolerance() {
    use inferscale::truth::{Options, calibrate_with};
    let base = one_class_base();
    // Held-out runs measured 5 % slower than the training ones: no fit predicts them exactly.
    let split = [true, false, true, false];
    let cases: Vec<Case> = ([1.0, 2.0, 3.0, 4.0].iter().zip(split))
        .map(|(&r, train)| case_at(&base, r, if train { (1.2, 0.9) } else { (1.26, 0.945) }))
        .collect();
    let at = |pct: Option<f64>| {
        let opts = Options::parse(&[], pct).unwrap();
        calibrate_with(&base, &cases, &[], &opts, &mut |_, _| {}).unwrap()
    };
    let (default, tight, loose) = (at(None), at(Some(0.1)), at(Some(1000.0)));
    assert_eq!((default.gate.tolerance, default.gate.over), (0.20, "held out"));
    let error = default.gate.error.unwrap();
    assert_eq!(
        error,
        if default.recommended == "calibrated" { default.held_out.calibrated } else { default.held_out.baseline }
            .unwrap()
    );
    assert_eq!(default.gate.pass, Some(error <= 0.20), "{:?}", default.gate);
    assert!(error > 0.001, "a tolerance of 0.1 % must fail for the test to mean anything: {error}");
    assert_eq!((tight.gate.pass, loose.gate.pass), (Some(false), Some(true)));
    assert!(tight.verdict.contains("Gate (0.1 % held out)") && tight.verdict.contains(": fail"), "{}", tight.verdict);
    assert!(loose.verdict.contains("Gate (1000 % held out)") && loose.verdict.contains(": pass."), "{}", loose.verdict);
    // Every case trains: the gate judges the training cases left out one at a time.
    let all: Vec<String> = cases.iter().map(|c| c.id.clone()).collect();
    let c = calibrate_with(&base, &cases, &all, &Options::default(), &mut |_, _| {}).unwrap();
    assert_eq!(c.gate.over, "left out one at a time");
    assert!(c.gate.pass.is_some());
    for bad in [0.0, -5.0, 1e-300, 1e308, f64::NAN, f64::INFINITY, 0.09, 1000.5] {
        let (field, why) = Options::parse(&[], Some(bad)).unwrap_err();
        assert_eq!(field, "tolerance_pct", "{bad}");
        assert!(why.contains("0.1 … 1000"), "{bad}: {why}");
    }
    let (field, why) = Options::parse(&["warp".into()], None).unwrap_err();
    assert!(field == "fit" && why.contains("auto, step_overhead"), "{why}");
}

#[test]
fn the_calibrate_command_reads_a_bundle_and_a_base_scenario() {
    let bin = env!("CARGO_BIN_EXE_inferscale");
    let dir = std::env::temp_dir().join(format!("inferscale-cal-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bundle = dir.join("bundle.json");
    let results = super::root().join("tests/data/results");
    let imported = std::process::Command::new(bin)
        .args([
            "import",
            results.join("vllm-runs-jsonl.json").to_str().unwrap(),
            results.join("vllm-current.json").to_str().unwrap(),
            "--out",
            bundle.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(imported.status.success(), "{}", String::from_utf8_lossy(&imported.stderr));
    let base = super::root().join("scenarios/default.json");
    let run = |extra: &[&str]| {
        std::process::Command::new(bin)
            .args(["calibrate", bundle.to_str().unwrap(), "--scenario", base.to_str().unwrap()])
            .args(extra)
            .output()
            .unwrap()
    };
    let md = run(&["--format", "md"]);
    assert!(md.status.success(), "{}", String::from_utf8_lossy(&md.stderr));
    let text = String::from_utf8(md.stdout).unwrap();
    assert!(
        text.contains("# Calibration") && text.contains("| case | set | metric |") && text.contains("held-out"),
        "{text}"
    );
    let json: serde_json::Value = serde_json::from_slice(&run(&[]).stdout).unwrap();
    assert!(json["fitted"]["prefill"].as_f64().unwrap() > 0.0);
    let bad = run(&["--train", "nope"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("`nope`"));
    // The gate's tolerance: its extremes exit 2 naming the option and its range; a knob that is not one, too.
    for t in ["0", "-5", "1e-300", "1e308", "NaN", "inf", "abc"] {
        let out = run(&["--tolerance-pct", t]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{t}: {err}");
        assert!(err.contains("--tolerance-pct"), "{t}: {err}");
        assert!(err.contains("0.1 … 1000") || t == "abc", "{t}: {err}");
    }
    let warp = run(&["--fit", "warp"]);
    assert_eq!(warp.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&warp.stderr).contains("auto"), "the knobs listed, auto among them");
    let gated: serde_json::Value = serde_json::from_slice(&run(&["--tolerance-pct", "12.5"]).stdout).unwrap();
    assert_eq!(gated["gate"]["tolerance"], 0.125);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Step-time fitting: a table made by the roofline with known efficiencies is fitted back to them (and its
/// held-out rows to within 1 %); the measured A100 table is fitted with its held-out
/// error printed; bad tables name the line and the column.
#[test]
fn step_tables_fit_the_roofline_and_say_the_held_out_error() {
    use inferscale::truth::steps::{fit_steps, parse_steps};
    let sc = super::valid(&super::shipped("default.json"));
    let (m, h) = (&sc.model, &sc.front_pool().hardware);
    let truth = inferscale::scenario::Hardware {
        mfu: 0.5,
        weight_bw_efficiency: 0.6,
        kv_bw_efficiency: 0.9,
        step_overhead_ns: 2e6,
        ..h.clone()
    };
    let roof = inferscale::cost::Roofline::new(m, &truth);
    let mut csv = String::from("phase,batch_size,new_tokens_per_req,kv_context,step_ms\n");
    for (decode, b, n, k) in [
        (true, 1, 1, 512),
        (true, 4, 1, 4096),
        (true, 16, 1, 1024),
        (true, 64, 1, 8192),
        (true, 128, 1, 2048),
        (true, 256, 1, 512),
        (false, 1, 256, 0),
        (false, 2, 1024, 0),
        (false, 1, 4096, 0),
        (false, 4, 512, 1024),
        (true, 32, 1, 16384),
        (false, 1, 8192, 0),
    ] {
        let row = parse_steps(&format!(
            "phase,batch_size,new_tokens_per_req,kv_context,step_ms\n{},{b},{n},{k},1\n{},{b},{n},{k},1\n",
            if decode { "decode" } else { "prefill" },
            if decode { "decode" } else { "prefill" }
        ))
        .unwrap();
        let w = if decode {
            inferscale::cost::StepWork { decode_seqs: b, decode_context_tokens: k * b as u64, ..Default::default() }
        } else {
            inferscale::cost::StepWork {
                prefill_seqs: b,
                prefill_tokens: n * b,
                prefill_attention_pairs: (n as u64 * k + n as u64 * (n as u64 + 1) / 2) * b as u64,
                prefill_context_tokens: k * b as u64,
                ..Default::default()
            }
        };
        assert_eq!(row.len(), 2);
        csv += &format!(
            "{},{b},{n},{k},{}\n",
            if decode { "decode" } else { "prefill" },
            roof.step(&w).total_ns as f64 / 1e6
        );
    }
    let fit = fit_steps(m, h, &parse_steps(&csv).unwrap());
    let f = fit.fitted;
    // MFU and the KV-read efficiency are identified; the weight read and the fixed overhead cost alike at
    // every step, so only their sum is: the fitted pair must give the true time of a step's weight read
    // plus overhead.
    for (got, want) in [(f.mfu, 0.5), (f.kv_bw_efficiency, 0.9)] {
        assert!((got / want - 1.0).abs() < 0.02, "fitted {f:?}");
    }
    let fixed = |bw: f64, ovh: f64| m.weight_bytes() / (h.hbm_bytes_per_s * bw) * 1e3 + ovh;
    assert!((fixed(f.weight_bw_efficiency, f.step_overhead_ms) / fixed(0.6, 2.0) - 1.0).abs() < 0.02, "fitted {f:?}");
    assert!(
        fit.held_out_mape_fitted < 0.01 && fit.held_out_mape_fitted < fit.held_out_mape_baseline,
        "{} → {}",
        fit.held_out_mape_baseline,
        fit.held_out_mape_fitted
    );
    // The measured table: both errors stated, neither far off.
    let a100 = parse_steps(
        &std::fs::read_to_string(super::root().join("tests/data/measured-step-times-llama3-8b-a100.csv")).unwrap(),
    )
    .unwrap();
    let fit = fit_steps(m, h, &a100);
    assert_eq!((fit.rows.len(), fit.rows.iter().filter(|r| r.training).count()), (10, 5));
    println!(
        "A100 table: held-out MAPE {:.1} % with the defaults, {:.1} % fitted",
        fit.held_out_mape_baseline * 100.0,
        fit.held_out_mape_fitted * 100.0
    );
    assert!(fit.held_out_mape_fitted < 0.1 && fit.held_out_mape_baseline < 0.1);
    for (text, want) in [
        ("phase,batch_size\ndecode,1\n".to_string(), "missing column `new_tokens_per_req`"),
        (
            "phase,batch_size,new_tokens_per_req,kv_context,step_ms\nboth,1,1,0,2\nx,1,1,0,2\n".to_string(),
            "line 2: `phase`",
        ),
        ("phase,batch_size,new_tokens_per_req,kv_context\ndecode,1,1,0\n".to_string(), "no measured column"),
        (
            "phase,batch_size,new_tokens_per_req,kv_context,step_ms\ndecode,1,1,0,5\ndecode,1,1,0,1e-300\n".to_string(),
            "line 3: `step_ms` must be a step time from 0.001 to 10^8 ms (got \"1e-300\")",
        ),
        (
            H.to_string() + "decode,1,1,0,-5\n",
            "line 2: `step_ms` must be a step time from 0.001 to 10^8 ms (got \"-5\")",
        ),
        (H.to_string() + "decode,1,1,0,NaN\n", "line 2: `step_ms` must be a step time"),
        (H.to_string() + "decode,1,1,0,inf\n", "line 2: `step_ms` must be a step time"),
        (
            H.to_string() + "decode,2.9,1,0,5\n",
            "line 2: `batch_size` must be a whole number from 1 to 65536 (got \"2.9\")",
        ),
        (
            H.to_string() + "prefill,65536,65536,0,5\n",
            "line 2: `batch_size` × `new_tokens_per_req` is 4.294967296e9 tokens in one step",
        ),
        (H.to_string() + &"decode,1,1,0,5\n".repeat(100_001), "line 100002: a step table has at most 100000 rows"),
        (
            "phase,batch_size,new_tokens_per_req,kv_context,step_ms\ndecode,1,1,1e300,5\ndecode,1,1,0,5\n".to_string(),
            "line 2: `kv_context`",
        ),
        (
            "phase,batch_size,new_tokens_per_req,kv_context,step_ms\ndecode,1e308,1,0,5\ndecode,1,1,0,5\n".to_string(),
            "line 2: `batch_size`",
        ),
    ] {
        let e = parse_steps(&text).unwrap_err();
        assert!(e.contains(want), "{:?}: {e}", &text[..text.len().min(200)]);
    }
}

/// The step table's header, for the refusals above.
const H: &str = "phase,batch_size,new_tokens_per_req,kv_context,step_ms\n";

/// Bursts measured behind a front end of 4 ms a request (the first token's floor grows with the burst):
/// `--fit frontend` fits it back within 0.5 ms, and the held-out bursts are predicted better than by the scales
/// alone.
#[test]
fn calibration_fits_the_front_end_from_bursts() {
    use inferscale::scenario::{ArrivalSpec, FrontendSpec};
    use inferscale::truth::{CaseWorkload, Extra, calibrate_with_progress};
    let base = one_class_base();
    let cases: Vec<Case> = [10u64, 20, 40, 80]
        .iter()
        .map(|&n| {
            let mut truth = base.clone();
            (truth.workload.arrival, truth.workload.requests) = (ArrivalSpec::Burst {}, Some(n));
            truth.engine.frontend = Some(FrontendSpec { per_request_ms: 4.0, per_prompt_token_us: 0.0 });
            let workload = CaseWorkload {
                request_rate: Some(Rate::Infinite),
                num_prompts: Some(n),
                mean_input_tokens: Some(512.0),
                mean_output_tokens: Some(128.0),
                ..CaseWorkload::default()
            };
            made(format!("burst{n}"), workload, measured_by(&inferscale::simulate(&super::valid(&truth))))
        })
        .collect();
    let fit = |extras: &[Extra]| calibrate_with_progress(&base, &cases, &[], extras, &mut |_, _| {}).unwrap();
    let (with, plain) = (fit(&[Extra::Frontend]), fit(&[]));
    assert!((with.fitted.frontend_ms.unwrap() - 4.0).abs() < 0.5, "{:?}", with.fitted);
    assert!(with.held_out.calibrated.unwrap() < 0.02, "{:?}", with.held_out);
    assert!(with.held_out.calibrated < plain.held_out.calibrated, "{:?} vs {:?}", with.held_out, plain.held_out);
}

/// inference-perf's stage report: seconds to ms, the requested rate as Poisson, per-chunk ITL left out, empty
/// responses noted; the summary across stages (no rate) is refused, naming the key, and a case is calibratable.
#[test]
fn inference_perf_stage_reports_import_and_their_summary_is_refused() {
    let c = one("inference-perf-stage_0_lifecycle_metrics.json");
    assert_eq!(c.engine, "unknown");
    assert_eq!(c.workload.request_rate, Some(Rate::PerSecond(8.0)));
    assert_eq!((c.workload.num_prompts, c.measured.completed, c.measured.failed), (Some(2400), Some(2400), Some(0)));
    assert!((c.measured.ttft_ms.median.unwrap() - 26.803).abs() < 1e-9);
    assert!((c.measured.e2e_ms.mean.unwrap() - 2057.6).abs() < 1e-9);
    assert!(c.measured.itl_ms.is_empty(), "ITL per chunk is left out");
    assert!(c.measured.tpot_ms.is_empty(), "and so is the TPOT computed from the same gaps");
    assert_eq!(c.workload.mean_input_tokens, Some(575.45));
    assert!(noted(&c, "per streamed chunk") && noted(&c, "per-chunk gaps"), "{:?}", c.notes);
    assert!(noted(&c, "empty") && noted(&c, "Poisson"), "{:?}", c.notes);
    let (cases, errors) = file("inference-perf-summary_lifecycle_metrics.json");
    assert!(cases.is_empty());
    assert_eq!(errors[0].key.as_deref(), Some("load_summary.requested_rate"), "{}", errors[0]);
    assert!(errors[0].message.contains("stage_N"), "{}", errors[0]);
    let s = inferscale::truth::calibrate::scenario_of(&super::small(), &c).unwrap();
    assert!(matches!(s.workload.arrival, inferscale::scenario::ArrivalSpec::Poisson { rate_rps } if rate_rps == 8.0));
    // A negative figure is the run's error at its path.
    let bad =
        std::fs::read_to_string(super::root().join("tests/data/results/inference-perf-stage_0_lifecycle_metrics.json"))
            .unwrap()
            .replace("\"requests_per_sec\": 7.978", "\"requests_per_sec\": -7.978");
    let (_, errors) = import("bad.json", &bad);
    assert_eq!(errors[0].key.as_deref(), Some("successes.throughput.requests_per_sec"));
    // So is a block of figures that is not one: named at the block, never dropped as if absent.
    let stage =
        std::fs::read_to_string(super::root().join("tests/data/results/inference-perf-stage_0_lifecycle_metrics.json"))
            .unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&stage).unwrap();
    for (block, wrong, said) in [
        ("request_latency", serde_json::json!("fast"), "the text \"fast\""),
        ("time_to_first_token", serde_json::json!([1, 2]), "a list"),
        ("request_latency", serde_json::json!(3.5), "3.5"),
    ] {
        let mut w = v.clone();
        w["successes"]["latency"][block] = wrong;
        let (cases, errors) = import("bad.json", &w.to_string());
        assert!(cases.is_empty(), "{block}");
        assert_eq!(errors[0].key.as_deref(), Some(format!("successes.latency.{block}").as_str()), "{}", errors[0]);
        assert_eq!(errors[0].message, format!("must be a block of figures (got {said})"));
    }
    v["successes"]["latency"]["request_latency"] = serde_json::Value::Null;
    let (cases, errors) = import("null.json", &v.to_string());
    assert!(errors.is_empty() && cases[0].measured.e2e_ms.is_empty(), "null is absent: {errors:?}");
}

/// InferenceX's aggregate: seconds to ms, per-GPU throughputs times the GPUs, `conc` as the closed loop of
/// `conc × 10` prompts, the framework, model and hardware kept; `*_intvty` (1000 / TPOT ms) is not a latency.
#[test]
fn inferencex_aggregates_import_single_node_and_disaggregated() {
    let c = one("inferencex-agg-llama70b-tp4-conc64.json");
    assert_eq!((c.engine.as_str(), c.tp, c.gpu.as_deref()), ("vllm", Some(4), Some("h200")));
    assert_eq!(c.model_id.as_deref(), Some("meta-llama/Llama-3.3-70B-Instruct"));
    assert_eq!((c.workload.request_rate, c.workload.max_concurrency), (Some(Rate::Infinite), Some(64)));
    assert_eq!(c.workload.num_prompts, Some(640));
    assert!((c.measured.ttft_ms.median.unwrap() - 180.2).abs() < 1e-9);
    assert!((c.measured.tpot_ms.mean.unwrap() - 19.6).abs() < 1e-9);
    assert!((c.measured.e2e_ms.p99.unwrap() - 22300.0).abs() < 1e-6);
    assert!((c.measured.output_throughput_tps.unwrap() - 825.2 * 4.0).abs() < 1e-9);
    assert!(noted(&c, "conc × 10") && noted(&c, "random_range_ratio"), "{:?}", c.notes);
    let d = one("inferencex-agg-dsr1-disagg.json");
    assert_eq!((d.engine.as_str(), d.tp), ("dynamo-sglang", None));
    assert!((d.measured.total_token_throughput_tps.unwrap() - 3100.0 * 24.0).abs() < 1e-6, "8 + 16 GPUs");
    assert!(noted(&d, "disaggregated"), "{:?}", d.notes);
    let s = inferscale::truth::calibrate::scenario_of(&super::small(), &c).unwrap();
    assert!(matches!(s.workload.arrival, inferscale::scenario::ArrivalSpec::ClosedLoop { clients: 64, .. }));
    let (_, errors) = import("x.json", r#"{"tput_per_gpu": 1, "conc": 0, "median_ttft": 0.1}"#);
    assert_eq!(errors[0].key.as_deref(), Some("conc"));
    // Counts are whole and bounded where they are read: none wraps, rounds or overflows into the figures.
    for (extra, key, range, got) in [
        (r#""conc": 1e19"#, "conc", "1 to 1000000", "1e19"),
        (r#""conc": 2.5"#, "conc", "1 to 1000000", "2.5"),
        (
            r#""conc": 4, "num_prefill_gpu": 1.8e19, "num_decode_gpu": 1.8e19"#,
            "num_prefill_gpu",
            "0 to 100000",
            "1.8e19",
        ),
        (r#""conc": 4, "tp": 0"#, "tp", "1 to 100000", "0"),
        (r#""conc": 4, "isl": 1e15"#, "isl", "1 to 10000000", "1000000000000000"),
        (r#""conc": 4, "osl": 0.5"#, "osl", "1 to 10000000", "0.5"),
    ] {
        let (cases, errors) = import("x.json", &format!(r#"{{"tput_per_gpu": 1, {extra}, "median_ttft": 0.1}}"#));
        assert!(cases.is_empty(), "{extra}");
        assert_eq!(errors[0].key.as_deref(), Some(key), "{extra}: {}", errors[0]);
        assert_eq!(errors[0].message, format!("must be a whole number from {range} (got {got})"), "{extra}");
    }
}

/// InferenceX's dashboard rows (the app's benchmarks API): an array of runs, the figures nested under
/// `metrics`, the device as `hardware`, a single node's `decode_tp` as its TP; lengths uniform from ⌊0.8 · L⌋ to
/// L as InferenceX's workflows run the client, unless the row records its ratio; a ratio above 1 is refused,
/// naming the key, and the other rows are kept.
#[test]
fn inferencex_dashboard_rows_import_as_runs_with_their_length_ranges() {
    let (cases, errors) = file("inferencex-dashboard-rows.json");
    assert_eq!(cases.len(), 3, "{errors:?}");
    assert_eq!((errors.len(), errors[0].line, errors[0].key.as_deref()), (1, 3, Some("random_range_ratio")));
    let c = &cases[0];
    assert_eq!(c.id, "inferencex-dashboard-rows.json:1");
    assert_eq!((c.engine.as_str(), c.tp, c.gpu.as_deref()), ("sglang", Some(8), Some("mi300x")));
    assert_eq!((c.workload.max_concurrency, c.workload.num_prompts), (Some(16), Some(160)));
    assert_eq!((c.workload.input_range, c.workload.output_range), (Some([819, 1024]), Some([6553, 8192])));
    assert_eq!(c.workload.mean_output_tokens, Some(7372.5));
    assert!((c.measured.tpot_ms.median.unwrap() - 31.0).abs() < 1e-9);
    assert!((c.measured.e2e_ms.p99.unwrap() - 240_000.0).abs() < 1e-6);
    assert!((c.measured.total_token_throughput_tps.unwrap() - 71.0 * 8.0).abs() < 1e-9);
    assert!(noted(c, "InferenceX's workflows use 0.8") && noted(c, "run_url https://"), "{:?}", c.notes);
    let r = &cases[1];
    assert_eq!((r.workload.input_range, r.workload.output_range), (Some([500, 1000]), Some([50, 100])));
    assert!(noted(r, "the file's random_range_ratio"), "{:?}", r.notes);
    let d = &cases[2];
    assert_eq!((d.tp, d.engine.as_str()), (None, "dynamo-sglang"), "a disaggregated row has no single TP");
    assert!(noted(d, "disaggregated"), "{:?}", d.notes);
    let s = inferscale::truth::calibrate::scenario_of(&super::small(), c).unwrap();
    let class = &s.workload.classes[0];
    assert_eq!(class.output_tokens, inferscale::scenario::LengthSpec::Uniform { min: 6553, max: 8192 });
}

/// MLPerf LoadGen: the summary (both spellings of the TPOT labels, odd spacing, an INVALID run) and the detail
/// log (`:::MLLOG` records among other lines) give the same figures; ns to ms; Server is Poisson at target_qps;
/// prompt lengths are not in the logs, and calibration says so rather than guess.
#[test]
fn mlperf_loadgen_summary_and_detail_logs_import_alike() {
    let s = one("mlperf_log_summary.txt");
    let d = one("mlperf_log_detail.txt");
    for c in [&s, &d] {
        assert_eq!(c.workload.request_rate, Some(Rate::PerSecond(10.0)), "{}", c.id);
        assert!((c.measured.ttft_ms.median.unwrap() - 423.446548).abs() < 1e-9, "{}", c.id);
        assert!((c.measured.ttft_ms.p99.unwrap() - 2034.76129).abs() < 1e-9, "{}", c.id);
        assert!((c.measured.tpot_ms.mean.unwrap() - 86.269215).abs() < 1e-9, "{}", c.id);
        assert!((c.measured.tpot_ms.median.unwrap() - 82.613828).abs() < 1e-9, "{}", c.id);
        assert!((c.measured.e2e_ms.mean.unwrap() - 24917.656212).abs() < 1e-6, "{}", c.id);
        assert!((c.workload.mean_output_tokens.unwrap() - 2893.46 / 9.98).abs() < 1e-9, "{}", c.id);
        assert!(noted(c, "prompt lengths are not in LoadGen's logs"), "{:?}", c.notes);
    }
    assert!(noted(&s, "INVALID") && !noted(&d, "INVALID"));
    // A vLLM result whose label mentions the summary's title is still a vLLM result.
    let vllm = std::fs::read_to_string(super::root().join("tests/data/results/vllm-current.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&vllm).unwrap();
    v["label"] = serde_json::json!("compare with the MLPerf Results Summary of last week");
    let (cases, errors) = import("vllm-current.json", &v.to_string());
    assert!(errors.is_empty() && cases.len() == 1, "{errors:?}");
    assert_eq!(cases[0].measured, one("vllm-current.json").measured);
    let e = inferscale::truth::calibrate::scenario_of(&super::small(), &s).unwrap_err();
    assert!(e.contains("no input lengths"), "{e}");
    let offline = std::fs::read_to_string(super::root().join("tests/data/results/mlperf_log_summary.txt"))
        .unwrap()
        .replace("Scenario : Server", "Scenario : MultiStream");
    let (_, errors) = import("mlperf_log_summary.txt", &offline);
    assert_eq!(errors[0].key.as_deref(), Some("scenario"), "{}", errors[0]);
    // A bad figure is named as the file writes it; a bare NaN is a bad figure, not a missing one.
    for bad in ["-5", "NaN", "abc"] {
        let text = std::fs::read_to_string(super::root().join("tests/data/results/mlperf_log_summary.txt"))
            .unwrap()
            .replace("Mean latency (ns)               : 24917656212", &format!("Mean latency (ns) : {bad}"));
        let (_, errors) = import("mlperf_log_summary.txt", &text);
        assert_eq!(errors[0].key.as_deref(), Some("Mean latency (ns)"), "{bad}: {}", errors[0]);
        assert!(errors[0].message.contains(&format!("(got {bad})")), "{}", errors[0]);
    }
}

/// `validation` refuses, with exit 2 and before anything runs, a manifest of no series or more than 100, bundles
/// that together pass 256 MB, and a case whose run (as calibration cuts it) would pass the memory budget
/// (`--budget-gb`), naming each;
/// titles and names reach the Markdown as text (`titles_and_names_are_text_in_the_markdown`).
#[test]
fn validation_refuses_what_it_cannot_bound() {
    let root = super::root();
    let dir = std::env::temp_dir().join(format!("inferscale-validation-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let public = root.join("tests/data/public");
    std::fs::copy(public.join("llama-2-7b.json"), dir.join("base.json")).unwrap();
    let mut bundle: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(public.join("llama-2-7b.bundle.json")).unwrap()).unwrap();
    // Lengths of one token: even cut to the calibration's steps a case (2e7), the run holds millions of requests.
    let w = &mut bundle["cases"][1]["workload"];
    (w["num_prompts"], w["mean_input_tokens"], w["mean_output_tokens"]) = (50_000_000u64.into(), 1.into(), 1.into());
    std::fs::write(dir.join("big.bundle.json"), bundle.to_string()).unwrap();
    let series = |n: usize, b: &str| {
        let one = serde_json::json!({"name": "s", "source": "x", "scenario": "base.json", "bundle": b, "train": []});
        serde_json::json!({"title": "t", "about": [], "series": vec![one; n]})
    };
    let run = |manifest: serde_json::Value, budget: &str| {
        std::fs::write(dir.join("m.json"), manifest.to_string()).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_inferscale"))
            .args(["--budget-gb", budget, "validation"])
            .arg(dir.join("m.json"))
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    for n in [0, 101] {
        let (code, err) = run(series(n, "big.bundle.json"), "8");
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains(&format!("series: 1 to 100 series (got {n})")), "{err}");
    }
    let (code, err) = run(series(1, "big.bundle.json"), "0.5");
    assert_eq!(code, Some(2), "{err}");
    let id = bundle["cases"][1]["id"].as_str().unwrap();
    assert!(err.contains(&format!("series[0] (s): case {id}: ")) && err.contains("--budget-gb"), "{err}");
    // 200 bundles' worth of bytes: refused at the series whose bundle passes the total, before any parse.
    let pad = " ".repeat(100 << 20);
    let fair = std::fs::read_to_string(public.join("llama-2-7b.bundle.json")).unwrap();
    std::fs::write(dir.join("padded.bundle.json"), format!("{fair}{pad}")).unwrap();
    let (code, err) = run(series(3, "padded.bundle.json"), "8");
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("series[2] (s): bundle, with the bundles before it") && err.contains("over the limit"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// docs/validation.md is what `inferscale validation` writes from the public series' bundles, byte for byte:
/// a stale table is a failing test.
#[test]
fn the_published_accuracy_table_is_what_its_command_writes() {
    let root = super::root();
    let (code, written, stderr) = match std::env::var_os("INFERSCALE_VALIDATION_WRITTEN") {
        // What the release CLI wrote when the test command ran it in the background, niced, from the moment it
        // was built (scripts/test.sh: twelve CPU-minutes taken from the cores the builds and the browser leave
        // idle): its stdout, stderr and exit status, each in a file of that name in the directory named.
        Some(dir) => {
            let dir = std::path::PathBuf::from(dir);
            let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
            (read("status").trim().parse::<i32>().ok(), read("stdout"), read("stderr"))
        }
        None => {
            // The release binary when the test command built it and names it: the binary users run, and a third
            // faster than the test profile's, whose overflow checks and debug assertions cost this run half as
            // much again. Else the test profile's: the output is the same byte for byte.
            let cli = std::env::var_os("INFERSCALE_RELEASE_CLI")
                .map_or_else(|| std::path::PathBuf::from(env!("CARGO_BIN_EXE_inferscale")), std::path::PathBuf::from);
            let out = std::process::Command::new(cli)
                .args(["validation", "tests/data/public/validation.json"])
                .current_dir(&root)
                .output()
                .unwrap();
            let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
            (out.status.code(), text(out.stdout), text(out.stderr))
        }
    };
    assert_eq!(code, Some(0), "{stderr}");
    let committed = std::fs::read_to_string(root.join("docs/validation.md")).unwrap();
    assert!(
        written == committed,
        "docs/validation.md is stale: run scripts/public-series.sh, or `inferscale validation tests/data/public/validation.json --out docs/validation.md`"
    );
    // Every series is held out on cases its fit did not see, and the document says how many meet the target.
    assert!(written.contains("the calibrated held-out error is within 10 % on"), "{written}");
    assert_eq!(written.matches("\n## ").count(), 12);
    // The knobs are chosen per series by leave-one-out, and each answer carries its gate.
    assert_eq!(
        written.matches("Knobs chosen by leave-one-out on the training cases, never by the held-out ones").count(),
        12
    );
    // Each series shows every knob set tried with its held-out errors beside, after the choice: the frozen
    // Blackwell set's question (does a second knob beat none and one?) is answered in those tables.
    assert_eq!(
        written.matches("| knobs tried | leave-one-out (chooses) | held out | held out, heavy load | chosen |").count(),
        12
    );
    // Each series' held-out errors by regime, medians and p99s apart; the heavy-load figure is in the summary and
    // the footer counts the series that meet it.
    assert_eq!(written.matches("| held-out regime | cases | TTFT median | TPOT median | ITL median | E2E median | TTFT p99 | TPOT p99 | E2E p99 |").count(), 12);
    assert!(written.contains("| heavy load |") && written.contains("and at heavy load on"), "{written}");
    assert!(
        written.contains("| use | gate |") && written.contains("the recommended model passes its gate on"),
        "{written}"
    );
    // The footer names the figures the error is over, and only those: the inference-perf series carry TTFT and
    // E2E alone, the InferenceX runs TPOT and ITL too (it once said every metric was counted when none but those
    // two were).
    assert!(written.contains("the held-out runs have (E2E mean, E2E median, ITL mean, ITL median, TPOT mean, TPOT median, TTFT mean, TTFT median)"), "{written}");
    assert!(!written.contains("(TTFT, TPOT, ITL, E2E; median and mean)"));
    // Past saturation the model's served rate is set against the measured one (the capacity error) only where
    // the run served every request but a few, each error the one its two rates give; a run that failed many is
    // said and not compared; the footer counts both.
    let lines: Vec<&str> =
        written.lines().filter(|l| l.contains("so what it served is the capacity it sustained")).collect();
    assert_eq!(lines.len(), 1, "CodeLlama-34B's reasoning stage: 4 of 4800 failed");
    for l in &lines {
        let num = |after: &str| -> f64 {
            let rest = &l[l.find(after).unwrap() + after.len()..];
            rest.trim_start().split([' ', ')', '(']).find(|w| !w.is_empty()).unwrap().parse().unwrap()
        };
        let measured = num("it sustained:");
        let (before, shown) = (num("the model serves"), num("uncalibrated ("));
        assert!(((before / measured - 1.0) * 100.0 - shown).abs() < 2.5, "{l}");
    }
    assert_eq!(
        written.matches("failed (the file does not say why), so what it served is not the server's capacity").count(),
        3
    );
    assert!(
        written.contains("Sustainable capacity: 4 series have held-out runs past saturation; 1 of them served"),
        "{written}"
    );
}

/// An inference-perf run's config.yaml beside its stage report: `import` reads it unasked and takes from it
/// what the report lacks — the server and model, the configured output length (the server ignored EOS; the
/// report's output_len re-tokenises the text and reads short), and the 100 prompts `shared_prefix` cycles
/// through, which the scenario replays as prefix groups a repeat finds cached.
#[test]
fn an_inference_perf_config_beside_its_stage_report_is_applied() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_inferscale"))
        .args(["import", "tests/data/inference-perf-run/stage_0_lifecycle_metrics.json"])
        .current_dir(super::root())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let c = Bundle::parse(&String::from_utf8(out.stdout).unwrap()).unwrap().cases.remove(0);
    assert_eq!((c.engine.as_str(), c.model_id.as_deref()), ("vllm", Some("meta-llama/Llama-2-7b-hf")));
    assert_eq!((c.workload.mean_output_tokens, c.workload.distinct_prompts), (Some(248.0), Some(100)));
    assert!(noted(&c, "settings from tests/data/inference-perf-run/config.yaml"), "{:?}", c.notes);
    assert!(noted(&c, "re-tokenises") && noted(&c, "mean 210.0") && noted(&c, "load.type constant"), "{:?}", c.notes);
    assert!(!noted(&c, "some responses were empty") && !noted(&c, "are not in it"), "{:?}", c.notes);
    let spec = inferscale::truth::calibrate::scenario_of(&super::small(), &c).unwrap();
    let p = spec.prefix.clone().unwrap();
    // 575 prompt tokens: every whole block but the one holding the last token, as vLLM recomputes it.
    assert_eq!((p.prefix_tokens, p.groups, p.zipf_s, p.reuse_fraction), (560, 100, 0.0, 1.0));
    let report = inferscale::simulate(&super::valid(&spec));
    let prefix = report.prefix.unwrap();
    assert_eq!((prefix.shared_tokens, prefix.requests_with_prefix), (560, 2400));
    assert_eq!(prefix.prefill_tokens_saved, prefix.hits * 560);
    // Each prompt misses once (or while its first copy still prefills); every other request hits.
    assert!(prefix.lookups - prefix.hits < 200, "{prefix:?}");
}

/// The config's edge cases, through the importer the CLI and the worker share: a config from another
/// directory applies to nothing and says so; in the lab (names without directories) it applies to the upload;
/// multi-turn chat and outputs that stop at EOS keep what the report measured; malformed, hostile and foreign
/// YAML is an error naming the file, never a panic.
#[test]
fn inference_perf_configs_apply_by_directory_and_bad_yaml_is_named() {
    use inferscale::truth::{ImportError, Importer};
    let dir = super::root().join("tests/data/inference-perf-run");
    let stage = std::fs::read_to_string(dir.join("stage_0_lifecycle_metrics.json")).unwrap();
    let config = std::fs::read_to_string(dir.join("config.yaml")).unwrap();
    let run = |files: &[(&str, &str)]| -> (Vec<Case>, Vec<ImportError>) {
        let mut importer = Importer::default();
        for (name, text) in files {
            importer.add(name, text);
        }
        importer.finish()
    };
    let (cases, errors) = run(&[("a/stage_0.json", &stage), ("b/config.yaml", &config)]);
    assert_eq!((cases[0].engine.as_str(), cases[0].workload.distinct_prompts), ("unknown", None));
    assert!(errors[0].to_string().starts_with("b/config.yaml:1: no inference-perf stage report"), "{}", errors[0]);
    // Reports of two directories given interleaved: each directory is asked for once.
    let mut importer = Importer::default();
    for name in ["a/stage_0.json", "b/stage_0.json", "a/stage_1.json"] {
        importer.add(name, &stage);
    }
    assert_eq!(importer.dirs_wanting_config(), ["a", "b"]);
    let (cases, errors) = run(&[("config.yml", &config), ("stage_0.json", &stage)]);
    assert!(errors.is_empty() && cases[0].workload.distinct_prompts == Some(100), "{errors:?}");
    let multi = config.replace("    output_len: 248", "    output_len: 248\n    enable_multi_turn_chat: true");
    let no_eos = config.replace("ignore_eos: true", "ignore_eos: false");
    for (text, prompts, output) in [(multi, None, Some(248.0)), (no_eos, Some(100), Some(210.03))] {
        let (cases, errors) = run(&[("stage_0.json", &stage), ("config.yaml", &text)]);
        assert!(errors.is_empty(), "{errors:?}");
        let w = &cases[0].workload;
        assert_eq!((w.distinct_prompts, w.mean_output_tokens), (prompts, output), "{:?}", cases[0].notes);
    }
    let laughs = "a: &a [x, x, x, x, x, x, x, x, x]\n".to_string()
        + &(b'b'..=b'z')
            .map(|c| {
                format!(
                    "{0}: &{0} [*{1}, *{1}, *{1}, *{1}, *{1}, *{1}, *{1}, *{1}, *{1}]\n",
                    c as char,
                    (c - 1) as char
                )
            })
            .collect::<String>();
    let deep = "[".repeat(100_000);
    let bad = [
        "data: [unclosed\n",
        "- a list\n",
        "tokenizer: {}\n",
        "",
        "\0\u{feff}",
        &laughs,
        &deep,
        "data:\n  shared_prefix:\n    num_groups: -3\n",
    ];
    for text in bad {
        let (cases, errors) = run(&[("stage_0.json", &stage), ("x/config.yaml", text)]);
        assert_eq!(cases.len(), 1);
        assert!(errors.len() == 1 && errors[0].file == "x/config.yaml", "{text:.40}: {errors:?}");
        assert!(
            errors[0].message.contains("config.yaml") || errors[0].message.contains("no inference-perf"),
            "{}",
            errors[0]
        );
    }
    // Impossible settings are refused at their key, not kept: a length of 2^64 − 1, a product of counts that
    // would saturate; and in the stage report, a count of 1e300 and a mean prompt of 1e12 tokens.
    let sp = "data.shared_prefix";
    for (from, to, said) in [
        (
            "output_len: 248",
            "output_len: 18446744073709551615",
            format!("{sp}.output_len: must be from 0 to 10000000 tokens (got 18446744073709551615)"),
        ),
        (
            "question_len: 447",
            "question_len: 10000001",
            format!("{sp}.question_len: must be from 0 to 10000000 tokens (got 10000001)"),
        ),
        (
            "num_groups: 10",
            "num_groups: 18446744073709551615",
            format!(
                "{sp}: num_groups × num_prompts_per_group must be at most 1000000000 prompts (got 18446744073709551615 × 10)"
            ),
        ),
        (
            "num_groups: 10",
            "num_groups: 100000001",
            format!("{sp}: num_groups × num_prompts_per_group must be at most 1000000000 prompts (got 100000001 × 10)"),
        ),
    ] {
        let (_, errors) = run(&[("stage_0.json", &stage), ("config.yaml", &config.replace(from, to))]);
        assert_eq!(errors.len(), 1, "{to}: {errors:?}");
        assert_eq!(errors[0].message, said);
    }
    let report: serde_json::Value = serde_json::from_str(&stage).unwrap();
    for (path, value, said) in [
        ("/load_summary/count", serde_json::json!(1e300), "must be a whole number from 0 to 1000000000 (got 1e300)"),
        ("/successes/count", serde_json::json!(2.5), "must be a whole number from 0 to 1000000000 (got 2.5)"),
        (
            "/successes/prompt_len/mean",
            serde_json::json!(1e12),
            "must be from 0 to 10000000 tokens (got 1000000000000)",
        ),
    ] {
        let mut r = report.clone();
        *r.pointer_mut(path).unwrap() = value;
        let (cases, errors) = run(&[("stage_0.json", &r.to_string())]);
        assert!(cases.is_empty(), "{path}");
        assert_eq!(errors[0].key.as_deref(), Some(path[1..].replace('/', ".").as_str()));
        assert_eq!(errors[0].message, said, "{path}");
    }
}

/// `import` streams: a 120 MB JSON Lines file of 40 detailed runs (per-request lists, ITLs and generated
/// texts) imports under a 700 MB address-space limit. Held whole as a JSON value tree (~20× the file) it
/// would need gigabytes; one run at a time it needs the text and a run.
#[test]
fn a_large_result_file_imports_in_bounded_memory() {
    let dir = std::env::temp_dir().join(format!("inferscale-big-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("big.jsonl");
    let n = 1000;
    let text = "lorem ipsum dolor sit amet ".repeat(90);
    let run = serde_json::json!({
        "backend": "vllm", "model_id": "m", "request_rate": 4.0, "num_prompts": n, "completed": n, "duration": 250.0,
        "mean_ttft_ms": 80.0, "median_ttft_ms": 75.0, "mean_e2el_ms": 3000.0,
        "input_lens": vec![512; n], "output_lens": vec![128; n], "ttfts": vec![0.08; n],
        "itls": vec![vec![0.0234567; 127]; n], "generated_texts": vec![text; n],
    })
    .to_string();
    let mut file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    for _ in 0..40 {
        std::io::Write::write_all(&mut file, run.as_bytes()).unwrap();
        std::io::Write::write_all(&mut file, b"\n").unwrap();
    }
    drop(file);
    let bytes = std::fs::metadata(&path).unwrap().len();
    assert!(bytes > 100 << 20, "{bytes}");
    let out = std::process::Command::new("bash")
        .args(["-c", "ulimit -v 700000 && exec \"$0\" import \"$1\" --format csv", env!("CARGO_BIN_EXE_inferscale")])
        .arg(&path)
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 41, "a header and 40 cases");
}

/// A file of more runs than any sweep (issue 45, defect 22: 1.4 million one-line runs aborted on allocation under
/// a 3 GB limit) is read up to `MOST_CASES` runs, and the first line not read is named; an array of more is
/// refused whole, saying the bound.
#[test]
fn a_file_of_millions_of_runs_is_read_up_to_the_bound_and_says_where_it_stopped() {
    use inferscale::truth::MOST_CASES;
    let run = r#"{"backend": "vllm", "model_id": "m", "request_rate": 4.0, "num_prompts": 10, "completed": 10, "duration": 2.5, "mean_ttft_ms": 80.0, "median_ttft_ms": 75.0, "mean_e2el_ms": 3000.0}"#;
    let lines = format!("{run}\n").repeat(MOST_CASES + 5);
    let (cases, errors) = import("many.jsonl", &lines);
    assert_eq!(cases.len(), MOST_CASES);
    assert_eq!(errors.len(), 1, "{:?}", &errors[..errors.len().min(3)]);
    assert_eq!(errors[0].line, MOST_CASES + 1);
    assert!(errors[0].message.contains(&format!("more than {MOST_CASES} runs")), "{}", errors[0]);
    let array = format!("[{}]", vec![run; MOST_CASES + 1].join(","));
    let (cases, errors) = import("many.json", &array);
    assert!(cases.is_empty());
    assert!(errors[0].message.contains(&format!("at most {MOST_CASES} entries")), "{}", errors[0]);
    let array = format!("[{}]", [run; 3].join(","));
    assert_eq!(import("three.json", &array).0.len(), 3, "an array within the bound is read");
}

/// A `vllm bench serve` file saved without its per-request lists: the output lengths' spread is read from the
/// E2E percentiles (n ≈ 1 + (E2E − TTFT) ÷ TPOT per quantile) as a lognormal with the file's mean, bounded by
/// vLLM's ShareGPT filter (prompt + output ≤ 2,048), and the note says so. On a run the model itself made with
/// ShareGPT-like outputs (lognormal, CV 1), the uncalibrated prediction of the E2E median lands within 10 % with
/// the spread and more than 25 % off with every output at the mean; TPOT is right either way. A run whose
/// outputs are one length stays fixed. Bundles carrying a spread out of its range are refused at the field.
#[test]
fn a_run_saved_without_its_lists_gets_its_output_spread_from_the_percentiles() {
    use inferscale::scenario::{ArrivalSpec, LengthSpec};
    use inferscale::truth::calibrate::scenario_of;
    let base = one_class_base();
    let run = |output: LengthSpec| {
        let mut truth = base.clone();
        truth.workload.arrival = ArrivalSpec::Poisson { rate_rps: 2.0 };
        truth.workload.requests = Some(1000);
        truth.workload.classes[0].output_tokens = output;
        inferscale::simulate(&super::valid(&truth))
    };
    let file = |r: &inferscale::Report, dataset: &str| {
        let s = &r.summary;
        let ms = |x: f64| x * 1e3;
        serde_json::json!({
            "backend": "vllm", "dataset_name": dataset, "request_rate": 2.0, "num_prompts": 1000,
            "completed": s.completed, "duration": s.duration_s, "request_throughput": s.throughput_rps,
            "total_input_tokens": 512 * s.completed,
            "total_output_tokens": (s.output_tokens_per_s * s.duration_s).round(),
            "mean_ttft_ms": ms(s.ttft_s.mean), "median_ttft_ms": ms(s.ttft_s.p50), "p99_ttft_ms": ms(s.ttft_s.p99),
            "mean_tpot_ms": ms(s.tpot_s.mean), "median_tpot_ms": ms(s.tpot_s.p50), "p99_tpot_ms": ms(s.tpot_s.p99),
            "mean_e2el_ms": ms(s.e2e_s.mean), "median_e2el_ms": ms(s.e2e_s.p50), "p99_e2el_ms": ms(s.e2e_s.p99),
        })
        .to_string()
    };
    let measured = run(LengthSpec::Lognormal { mean: 200.0, cv: 1.0, max: 1536 });
    let (cases, errors) = inferscale::truth::import("sharegpt.json", &file(&measured, "sharegpt"));
    assert!(errors.is_empty(), "{errors:?}");
    let case = &cases[0];
    let (cv, max) = (case.workload.output_cv.unwrap(), case.workload.output_max_tokens);
    println!("inferred CV {cv:.3}, max {max:?}; notes {:?}", case.notes);
    assert!((0.6..=1.6).contains(&cv), "CV 1 made, {cv} read");
    assert_eq!(max, Some(2048 - 512), "the ShareGPT filter's bound");
    assert!(
        case.notes.iter().any(|n| n.contains("read from the E2E percentiles") && n.contains("lognormal")),
        "{:?}",
        case.notes
    );
    let predict = |c: &Case| inferscale::simulate(&super::valid(&scenario_of(&base, c).unwrap())).summary;
    let (spread, at_mean) = {
        let mut fixed = case.clone();
        (fixed.workload.output_cv, fixed.workload.output_max_tokens) = (None, None);
        (predict(case), predict(&fixed))
    };
    let off = |p: f64, m: f64| (p / m - 1.0).abs();
    let m = &measured.summary;
    println!(
        "E2E median: measured {:.3} s, with the spread {:.3}, at the mean {:.3}",
        m.e2e_s.p50, spread.e2e_s.p50, at_mean.e2e_s.p50
    );
    assert!(off(spread.e2e_s.p50, m.e2e_s.p50) < 0.10, "with the spread");
    assert!(off(at_mean.e2e_s.p50, m.e2e_s.p50) > 0.25, "every output at the mean");
    assert!(off(spread.tpot_s.p50, m.tpot_s.p50) < 0.05 && off(at_mean.tpot_s.p50, m.tpot_s.p50) < 0.05);
    // One length: the percentiles agree, and the lengths stay fixed at the mean.
    let fixed = run(LengthSpec::Fixed { tokens: 128 });
    let (cases, _) = inferscale::truth::import("random.json", &file(&fixed, "random"));
    assert_eq!((cases[0].workload.output_cv, cases[0].workload.output_max_tokens), (None, None));
    assert!(cases[0].notes.iter().any(|n| n.contains("fixed at the mean")), "{:?}", cases[0].notes);
    // The shipped files: vLLM's current format without lists reads a spread; runs of the `random` dataset with
    // EOS ignored (one length) and SGLang's stay fixed; files with per-request lists keep their pairs.
    let results = super::root().join("tests/data/results");
    for (f, spread) in [
        ("vllm-current.json", true),
        ("vllm-runs-jsonl.json", false),
        ("vllm-inf-concurrency.json", false),
        ("sglang-bench-serving.jsonl", false),
        ("vllm-legacy.json", false),
    ] {
        let (cases, _) = inferscale::truth::import(f, &std::fs::read_to_string(results.join(f)).unwrap());
        for c in &cases {
            assert_eq!(c.workload.output_cv.is_some(), spread, "{f}: {:?}", c.notes);
        }
    }
    // A bundle's spread out of range is refused at its field, never simulated.
    for (cv, max, field) in [
        (Some(-1.0), None, "workload.output_cv"),
        (Some(0.0), None, "workload.output_cv"),
        (Some(1e-300), None, ""),
        (Some(1e308), None, "workload.output_cv"),
        (Some(1.0), Some(0), "workload.output_max_tokens"),
    ] {
        let mut odd = case.clone();
        (odd.workload.output_cv, odd.workload.output_max_tokens) = (cv, max);
        // As calibration prepares a case: its figures checked, then its scenario.
        let got = inferscale::truth::checks::figures(&odd)
            .and_then(|_| inferscale::truth::calibrate::case_run(&base, &odd).map(|_| ()));
        match field {
            "" => assert!(got.is_ok(), "{cv:?}: {got:?}"),
            f => assert!(got.unwrap_err().contains(f), "{cv:?} {max:?}"),
        }
    }
}

/// The InferenceX held-out set (tests/data/public/inferencex/FROZEN.md) is what was hashed before any fit:
/// a bundle edited after the freeze fails here.
#[test]
fn inferencex_bundles_are_the_frozen_ones() {
    use sha2::{Digest, Sha256};
    // The first set (H200 and AMD, docs/validation.md) and the Blackwell set frozen for the next fit (its
    // FROZEN.md): bundles and rows as hashed when each was frozen.
    for (folder, bundles_frozen, cases) in [("inferencex", 4, 42), ("inferencex-blackwell", 2, 16)] {
        let dir = super::root().join("tests/data/public").join(folder);
        let sums = std::fs::read_to_string(dir.join("SHA256SUMS")).unwrap();
        let bundles: Vec<(&str, &str)> =
            sums.lines().filter_map(|l| l.split_once("  ")).filter(|(_, f)| f.ends_with(".bundle.json")).collect();
        assert_eq!(bundles.len(), bundles_frozen, "{folder}");
        let mut n = 0;
        for (sum, name) in bundles {
            let bytes = std::fs::read(dir.join(name)).unwrap();
            let got: String = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(got, sum, "{folder}/{name} changed after the freeze");
            let b = Bundle::parse(std::str::from_utf8(&bytes).unwrap()).unwrap();
            assert!(b.cases.iter().all(|c| c.engine == "sglang" && c.tp == Some(8)), "{name}");
            n += b.cases.len();
        }
        assert_eq!(n, cases, "{folder}");
    }
    // The Blackwell set's base scenarios, written after the freeze from the launch scripts alone: each is
    // valid, and the two are one recipe on two devices (dsr1_fp8_b300.sh reuses the B200 recipe as-is).
    let dir = super::root().join("tests/data/public/inferencex-blackwell");
    let spec = |gpu: &str| {
        let text = std::fs::read_to_string(dir.join(format!("dsr1-fp8-{gpu}.json"))).unwrap();
        inferscale::scenario::parse(&text).unwrap()
    };
    let (b200, mut b300) = (spec("b200"), spec("b300"));
    for s in [&b200, &b300] {
        let sc = super::valid(s);
        assert_eq!((sc.pools[0].hardware.tp, sc.pools[0].engine.max_num_seqs), (8, 128), "{}", s.name);
    }
    assert_eq!(b300.hardware.device.as_deref(), Some("b300"));
    (b300.name, b300.description, b300.hardware.device) =
        (b200.name.clone(), b200.description.clone(), b200.hardware.device.clone());
    assert_eq!(format!("{b300:?}"), format!("{b200:?}"));
}
