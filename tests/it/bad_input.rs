//! A table of broken scenarios and traces: each must give an error naming the field, never a panic.

use inferscale::scenario;
use serde_json::{Value, json};

fn base() -> Value {
    serde_json::from_str(&std::fs::read_to_string(super::root().join("scenarios/default.json")).unwrap()).unwrap()
}

/// Set a value at a JSON pointer (creating objects on the way).
fn with(mut v: Value, pointer: &str, x: Value) -> Value {
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    let p = if parent.is_empty() { &mut v } else { v.pointer_mut(parent).unwrap_or_else(|| panic!("no {parent}")) };
    match p {
        Value::Object(m) => {
            m.insert(key.to_string(), x);
        }
        Value::Array(a) => a[key.parse::<usize>().unwrap()] = x,
        _ => panic!("{parent} is not a container"),
    }
    v
}

fn without(mut v: Value, pointer: &str) -> Value {
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    v.pointer_mut(parent).unwrap().as_object_mut().unwrap().remove(key);
    v
}

/// The default scenario, disaggregated.
fn pd() -> Value {
    with(
        base(),
        "/cluster/disaggregation",
        json!({"prefill": {"replicas": 1}, "decode": {"replicas": 2}, "link": {"bandwidth_gbps": 25.0, "latency_ms": 0.1}}),
    )
}

fn trace(data: &str) -> Value {
    with(base(), "/workload/arrival", json!({"kind": "trace", "data": data}))
}

#[test]
fn broken_scenarios_name_the_field() {
    let cases: Vec<(&str, Value, &str)> = vec![
        ("negative rate", with(base(), "/workload/arrival/rate_rps", json!(-1.0)), "workload.arrival.rate_rps"),
        ("zero rate", with(base(), "/workload/arrival/rate_rps", json!(0.0)), "workload.arrival.rate_rps"),
        ("huge rate", with(base(), "/workload/arrival/rate_rps", json!(1e12)), "workload.arrival.rate_rps"),
        ("rate as text", with(base(), "/workload/arrival/rate_rps", json!("fast")), "workload.arrival"),
        ("missing rate", without(base(), "/workload/arrival/rate_rps"), "workload.arrival"),
        ("unknown arrival kind", with(base(), "/workload/arrival/kind", json!("possion")), "workload.arrival"),
        (
            "gamma cv zero",
            with(base(), "/workload/arrival", json!({"kind": "gamma", "rate_rps": 1.0, "cv": 0.0})),
            "workload.arrival.cv",
        ),
        (
            "on/off negative period",
            with(
                base(),
                "/workload/arrival",
                json!({"kind": "on_off", "rate_on_rps": 1.0, "mean_on_s": -1.0, "mean_off_s": 1.0}),
            ),
            "workload.arrival.mean_on_s",
        ),
        ("zero requests", with(base(), "/workload/requests", json!(0)), "workload.requests"),
        ("negative requests", with(base(), "/workload/requests", json!(-5)), "workload.requests"),
        ("neither count nor duration", without(base(), "/workload/requests"), "workload"),
        ("negative duration", with(base(), "/workload/duration_s", json!(-3.0)), "workload.duration_s"),
        ("no classes", with(base(), "/workload/classes", json!([])), "workload.classes"),
        (
            "zero weights",
            with(with(base(), "/workload/classes/0/weight", json!(0.0)), "/workload/classes/1/weight", json!(0.0)),
            "workload.classes",
        ),
        ("negative weight", with(base(), "/workload/classes/0/weight", json!(-1.0)), "workload.classes[0].weight"),
        (
            "zero fixed prompt",
            with(base(), "/workload/classes/0/prompt_tokens", json!({"kind": "fixed", "tokens": 0})),
            "workload.classes[0].prompt_tokens.tokens",
        ),
        (
            "uniform min > max",
            with(base(), "/workload/classes/0/output_tokens", json!({"kind": "uniform", "min": 50, "max": 10})),
            "workload.classes[0].output_tokens.max",
        ),
        (
            "lognormal mean < 1",
            with(base(), "/workload/classes/1/prompt_tokens", json!({"kind": "lognormal", "mean": 0.5, "cv": 1.0})),
            "workload.classes[1].prompt_tokens.mean",
        ),
        (
            "empty empirical",
            with(base(), "/workload/classes/0/prompt_tokens", json!({"kind": "empirical", "values": []})),
            "workload.classes[0].prompt_tokens.values",
        ),
        (
            "negative SLO",
            with(base(), "/workload/classes/0/slo/ttft_ms", json!(-10)),
            "workload.classes[0].slo.ttft_ms",
        ),
        (
            "prompt larger than KV",
            with(base(), "/workload/classes/0/prompt_tokens", json!({"kind": "fixed", "tokens": 900000})),
            "workload.classes[0]",
        ),
        ("explicit KV too small", with(base(), "/engine/kv_capacity_tokens", json!(3000)), "workload.classes"),
        ("unknown model", with(base(), "/model/preset", json!("llama-4-9000b")), "model.preset"),
        ("unknown device", with(base(), "/hardware/device", json!("h1000")), "hardware.device"),
        ("custom model missing fields", with(base(), "/model", json!({"params_b": 7.0})), "model.layers"),
        ("tp zero", with(base(), "/hardware/tp", json!(0)), "hardware.tp"),
        ("tp not power of two", with(base(), "/hardware/tp", json!(3)), "hardware.tp"),
        ("mfu above 1", with(base(), "/hardware/mfu", json!(1.5)), "hardware.mfu"),
        (
            "weights do not fit",
            with(with(base(), "/model/preset", json!("llama-3-70b")), "/hardware/tp", json!(1)),
            "engine.gpu_memory_utilization",
        ),
        ("zero batch", with(base(), "/engine/max_num_seqs", json!(0)), "engine.max_num_seqs"),
        (
            "all-reduce efficiency 1e-300",
            with(base(), "/hardware/allreduce_bw_efficiency", json!(1e-300)),
            "hardware.allreduce_bw_efficiency",
        ),
        (
            "all-reduce efficiency above 1",
            with(base(), "/hardware/allreduce_bw_efficiency", json!(1.5)),
            "hardware.allreduce_bw_efficiency",
        ),
        ("context zero", with(base(), "/model/context_tokens", json!(0)), "model.context_tokens"),
        ("context 1e308", with(base(), "/model/context_tokens", json!(1e308)), "model.context_tokens"),
        (
            "max_model_len past the context",
            with(base(), "/engine/max_model_len", json!(100000)),
            "engine.max_model_len",
        ),
        (
            "request overhead 1e308",
            with(base(), "/engine/request_overhead_ms", json!(1e308)),
            "engine.request_overhead_ms",
        ),
        ("unknown batch formation", with(base(), "/engine/batch_formation", json!("tgi")), "engine.batch_formation"),
        (
            "hashed block zero",
            with(
                trace("{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 2, \"hash_ids\": [1]}\n"),
                "/workload/arrival/hash_block_tokens",
                json!(0),
            ),
            "workload.arrival.hash_block_tokens",
        ),
        (
            "zero token budget",
            with(base(), "/engine/max_num_batched_tokens", json!(0)),
            "engine.max_num_batched_tokens",
        ),
        (
            "chunk above budget",
            with(base(), "/engine/prefill_chunk_tokens", json!(100000)),
            "engine.prefill_chunk_tokens",
        ),
        (
            "no chunking, prompt over budget",
            with(with(base(), "/engine/chunked_prefill", json!(false)), "/engine/max_num_batched_tokens", json!(4096)),
            "workload.classes",
        ),
        (
            "memory fraction zero",
            with(base(), "/engine/gpu_memory_utilization", json!(0.0)),
            "engine.gpu_memory_utilization",
        ),
        (
            "over-subscription zero",
            with(base(), "/engine/kv_oversubscription", json!(0.0)),
            "engine.kv_oversubscription",
        ),
        ("unknown victim", with(base(), "/engine/preemption", json!({"victim": "oldest"})), "engine.preemption.victim"),
        (
            "negative sigma",
            with(base(), "/estimator/order", json!({"kind": "lognormal", "sigma": -1})),
            "estimator.order.sigma",
        ),
        ("unknown scheduler", with(base(), "/scheduler/kind", json!("fcfz")), "scheduler"),
        (
            "drr zero quantum",
            with(base(), "/scheduler", json!({"kind": "drr", "quantum_tokens": 0})),
            "scheduler.quantum_tokens",
        ),
        (
            "drop probability > 1",
            with(base(), "/admission", json!({"kind": "random_drop", "probability": 2.0})),
            "admission.probability",
        ),
        (
            "deadline without e2e SLO",
            with(base(), "/admission", json!({"kind": "deadline"})),
            "workload.classes[0].slo.e2e_ms",
        ),
        (
            "feasible without a TTFT or e2e SLO",
            with(with(base(), "/workload/classes/0/slo", json!({})), "/admission", json!({"kind": "feasible"})),
            "workload.classes[0].slo.ttft_ms",
        ),
        ("feasible slack 0", with(base(), "/admission", json!({"kind": "feasible", "slack": 0.0})), "admission.slack"),
        (
            "feasible slack 1e308",
            with(base(), "/admission", json!({"kind": "feasible", "slack": 1e308})),
            "admission.slack",
        ),
        (
            "feasible slack -1",
            with(base(), "/admission", json!({"kind": "feasible", "slack": -1.0})),
            "admission.slack",
        ),
        ("zero replicas", with(base(), "/cluster/replicas", json!(0)), "cluster.replicas"),
        ("unknown router", with(base(), "/cluster/router/kind", json!("least_load")), "cluster.router"),
        ("unknown top-level field", with(base(), "/sed", json!(1)), "sed"),
        ("unknown nested field", with(base(), "/engine/max_num_seq", json!(1)), "engine"),
        (
            "trace without data",
            with(base(), "/workload/arrival", json!({"kind": "trace", "path": "missing.csv"})),
            "workload.arrival.data",
        ),
        ("trace unknown header", trace("a,b,c\n1,2,3\n"), "workload.arrival.data"),
        (
            "trace bad number",
            trace("arrived_at,num_prefill_tokens,num_decode_tokens\n0.5,12x,3\n"),
            "workload.arrival.data",
        ),
        (
            "trace negative time",
            trace("arrived_at,num_prefill_tokens,num_decode_tokens\n-1,12,3\n"),
            "workload.arrival.data",
        ),
        (
            "trace missing column value",
            trace("arrived_at,num_prefill_tokens,num_decode_tokens\n0.5,12\n"),
            "workload.arrival.data",
        ),
        (
            "trace zero tokens",
            trace("arrived_at,num_prefill_tokens,num_decode_tokens\n0.5,0,3\n"),
            "workload.arrival.data",
        ),
        ("trace header only", trace("arrived_at,num_prefill_tokens,num_decode_tokens\n"), "workload.arrival.data"),
        (
            "azure bad timestamp",
            trace("TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,10,10\n"),
            "workload.arrival.data",
        ),
        ("mooncake not json", trace("{\"timestamp\": 1, \"input_length\": 5\n"), "workload.arrival.data"),
        (
            "trace request over KV",
            trace("arrived_at,num_prefill_tokens,num_decode_tokens\n0.5,9000000,3\n"),
            "workload.arrival.data",
        ),
        ("empty file", Value::Null, "(root)"),
        (
            "P/D zero prefill workers",
            with(pd(), "/cluster/disaggregation/prefill/replicas", json!(0)),
            "cluster.disaggregation.prefill.replicas",
        ),
        (
            "P/D zero decode workers",
            with(pd(), "/cluster/disaggregation/decode/replicas", json!(0)),
            "cluster.disaggregation.decode.replicas",
        ),
        (
            "P/D zero bandwidth",
            with(pd(), "/cluster/disaggregation/link/bandwidth_gbps", json!(0.0)),
            "cluster.disaggregation.link.bandwidth_gbps",
        ),
        (
            "P/D negative latency",
            with(pd(), "/cluster/disaggregation/link/latency_ms", json!(-1.0)),
            "cluster.disaggregation.link.latency_ms",
        ),
        ("P/D missing link", without(pd(), "/cluster/disaggregation/link"), "cluster.disaggregation"),
        (
            "P/D central queue",
            with(pd(), "/cluster/disaggregation/decode/router", json!({"kind": "central_queue"})),
            "cluster.disaggregation.decode.router",
        ),
        (
            "P/D unknown device",
            with(pd(), "/cluster/disaggregation/decode/device", json!("b900")),
            "cluster.disaggregation.decode.device",
        ),
        (
            "P/D tp not power of two",
            with(pd(), "/cluster/disaggregation/prefill/tp", json!(3)),
            "cluster.disaggregation.prefill.tp",
        ),
        (
            "P/D unknown topology",
            with(pd(), "/cluster/disaggregation/link/topology", json!("mesh")),
            "cluster.disaggregation.link.topology",
        ),
        (
            "prefix longer than prompts",
            with(base(), "/prefix", json!({"prefix_tokens": 9000, "reuse_fraction": 0.5})),
            "prefix.prefix_tokens",
        ),
        (
            "prefix reuse above 1",
            with(base(), "/prefix", json!({"prefix_tokens": 512, "reuse_fraction": 1.5})),
            "prefix.reuse_fraction",
        ),
        (
            "prefix zero groups",
            with(base(), "/prefix", json!({"prefix_tokens": 512, "reuse_fraction": 0.5, "groups": 0})),
            "prefix.groups",
        ),
        (
            "prefix negative zipf",
            with(base(), "/prefix", json!({"prefix_tokens": 512, "reuse_fraction": 0.5, "zipf_s": -1})),
            "prefix.zipf_s",
        ),
    ];
    assert!(cases.len() >= 30);
    for (what, v, field) in cases {
        let text = if v.is_null() { String::new() } else { v.to_string() };
        let result = std::panic::catch_unwind(|| scenario::load(&text));
        let err = match result {
            Ok(Ok(_)) => panic!("{what}: accepted"),
            Ok(Err(e)) => e,
            Err(_) => panic!("{what}: panicked"),
        };
        let shown = err.to_string();
        assert!(
            err.errors.iter().any(|e| e.path.starts_with(field)),
            "{what}: expected an error at `{field}`, got:\n{shown}"
        );
        assert!(!shown.is_empty());
        println!("{what:<34} → {}", shown.lines().next().unwrap());
    }
}

#[test]
fn errors_say_the_allowed_range_and_suggest_fixes() {
    let e =
        scenario::load(&with(base(), "/workload/arrival/rate_rps", json!(-1.0)).to_string()).unwrap_err().to_string();
    assert!(e.contains("-1") && e.contains("10000000"), "{e}");
    let e = scenario::load(&with(base(), "/engine/max_num_seq", json!(1)).to_string()).unwrap_err().to_string();
    assert!(e.contains("did you mean `max_num_seqs`"), "{e}");
    let e = scenario::load(&with(base(), "/scheduler/kind", json!("fcfz")).to_string()).unwrap_err().to_string();
    assert!(e.contains("did you mean `fcfs`"), "{e}");
    let e = scenario::load(&with(base(), "/hardware/device", json!("h100")).to_string()).unwrap_err().to_string();
    assert!(e.contains("h100-sxm"), "{e}");
    // Several bad fields are reported together.
    let v = with(with(base(), "/cluster/replicas", json!(0)), "/engine/max_num_seqs", json!(0));
    let err = scenario::load(&v.to_string()).unwrap_err();
    assert!(err.errors.len() >= 2, "{err}");
}

#[test]
fn every_trace_shape_parses() {
    use inferscale::scenario::TraceFormat;
    use inferscale::workload::trace::parse;
    let vidur =
        parse("arrived_at,num_prefill_tokens,num_decode_tokens\n1.5,100,10\n0.5,200,20\n", TraceFormat::Auto).unwrap();
    assert_eq!(vidur[0].prompt_tokens, 200, "sorted by arrival");
    assert_eq!(vidur[1].arrival_ns, 1_000_000_000, "relative to the first");
    let azure = parse("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,4808,10\n2023-11-16 18:15:50.9951690,3180,8\n", TraceFormat::Auto).unwrap();
    assert_eq!(azure[1].arrival_ns, 4_314_579_000);
    let burst = parse("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n5,ChatGPT,472,18,490,Conversation log\n45,ChatGPT,1087,0,1087,Conversation log\n47,GPT-4,417,276,693,API log\n", TraceFormat::Auto).unwrap();
    assert_eq!(burst.len(), 2, "a response of 0 tokens is a failed request, skipped");
    let moon = parse("{\"timestamp\": 0, \"input_length\": 6955, \"output_length\": 52, \"hash_ids\": [0, 1]}\n{\"timestamp\": 27, \"input_length\": 6472, \"output_length\": 26, \"hash_ids\": [0]}\n", TraceFormat::Auto).unwrap();
    assert_eq!(moon[1].arrival_ns, 27_000_000);
    // Quoted fields and CRLF line ends.
    let q = parse(
        "\"arrived_at\",\"num_prefill_tokens\",\"num_decode_tokens\"\r\n\"0.25\",\"64\",\"8\"\r\n",
        TraceFormat::Vidur,
    )
    .unwrap();
    assert_eq!((q[0].prompt_tokens, q[0].output_tokens), (64, 8));
}

/// The quirks of files in the wild (docs/scenario.md): a byte-order mark, blank lines before the header and
/// between rows, a line of blanks, columns in another order with extra ones, a quoted field holding a comma,
/// counts written as floats, spaces around fields, and LF or CRLF ends. All parse to the same requests.
#[test]
fn trace_quirks_of_files_in_the_wild_parse_to_the_same_rows() {
    use inferscale::scenario::TraceFormat;
    use inferscale::workload::trace::parse;
    let plain =
        parse("arrived_at,num_prefill_tokens,num_decode_tokens\n0.5,100,10\n1.5,200,20\n", TraceFormat::Auto).unwrap();
    let quirky = [
        "\u{feff}arrived_at,num_prefill_tokens,num_decode_tokens\n0.5,100,10\n1.5,200,20\n",
        "\n\narrived_at,num_prefill_tokens,num_decode_tokens\n\n0.5,100,10\n   \n1.5,200,20\n\n",
        "note,num_decode_tokens,arrived_at,num_prefill_tokens\n\"a, b\",10,0.5,100\n\"c\",20,1.5,200\n",
        "arrived_at , num_prefill_tokens , num_decode_tokens\r\n 0.5 , 100.0 , 10.0 \r\n1.5,200,20",
    ];
    for q in quirky {
        assert_eq!(parse(q, TraceFormat::Auto).as_ref(), Ok(&plain), "{q:?}");
    }
    // An error names the line as the user's editor counts it.
    let e = parse("\narrived_at,num_prefill_tokens,num_decode_tokens\n0.5,100,10\n0.7,1x,10\n", TraceFormat::Auto)
        .unwrap_err();
    assert!(e.starts_with("line 4:"), "{e}");
}

/// Azure timestamps are wall-clock dates: one far from 1970 (past 2262, where i64 nanoseconds wrap) is
/// ordered by its date, and a trace spanning more than the simulated clock holds is refused, not wrapped.
#[test]
fn azure_dates_far_from_1970_keep_their_order_or_are_refused() {
    use inferscale::scenario::TraceFormat;
    use inferscale::workload::trace::parse;
    let rows = parse("TIMESTAMP,ContextTokens,GeneratedTokens\n2400-01-01 00:00:02,30,3\n2400-01-01 00:00:00,10,1\n2400-01-01 00:00:01,20,2\n", TraceFormat::Auto).unwrap();
    let got: Vec<(u64, u32)> = rows.iter().map(|r| (r.arrival_ns, r.prompt_tokens)).collect();
    assert_eq!(got, [(0, 10), (1_000_000_000, 20), (2_000_000_000, 30)]);
    let wide = parse(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n1900-01-01 00:00:00,10,1\n2400-01-01 00:00:00,10,1\n",
        TraceFormat::Auto,
    )
    .unwrap_err();
    assert!(wide.contains("past the simulated clock's limit"), "{wide}");
    let v = trace(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n0001-01-01 00:00:00,10,1\n9999-12-31 23:59:59.999999999,10,1\n",
    );
    let err = inferscale::scenario::validate(&serde_json::from_value(v).unwrap()).unwrap_err();
    assert!(err.errors.iter().any(|f| f.path == "workload.arrival.data" && f.message.contains("spans")), "{err}");
}

/// Inputs the validator used to accept and the engine then hung on, wrapped its clock on or answered with
/// garbage (issue 11's red-team list): each is now refused, naming the field and why.
#[test]
fn physically_impossible_inputs_are_refused_with_the_reason() {
    let onoff = |on: f64, rate: f64| {
        with(
            base(),
            "/workload/arrival",
            json!({"kind": "on_off", "rate_on_rps": rate, "rate_off_rps": 0.0, "mean_on_s": on, "mean_off_s": 1.0}),
        )
    };
    let cases: Vec<(&str, Value, &str)> = vec![
        ("a run that never ends: on periods of 1 ns", onoff(1e-9, 9.0), "workload.arrival.mean_on_s"),
        ("a run that never ends: 1e-300 req/s while on", onoff(10.0, 1e-300), "workload.arrival.rate_on_rps"),
        ("far fewer than one arrival per on period", onoff(0.01, 0.01), "workload.arrival.mean_on_s"),
        (
            "TTFT of 2^64 ns: 1e-300 TFLOPS",
            with(base(), "/hardware/peak_tflops", json!(1e-300)),
            "hardware.peak_tflops",
        ),
        ("1e-9 GB/s HBM", with(base(), "/hardware/hbm_bandwidth_gbps", json!(1e-9)), "hardware.hbm_bandwidth_gbps"),
        ("MFU of 1e-12", with(base(), "/hardware/mfu", json!(1e-12)), "hardware.mfu"),
        (
            "a P/D link of 1e-300 GB/s",
            with(pd(), "/cluster/disaggregation/link/bandwidth_gbps", json!(1e-300)),
            "cluster.disaggregation.link.bandwidth_gbps",
        ),
        (
            "a P/D link of 1e-9 GB/s",
            with(pd(), "/cluster/disaggregation/link/bandwidth_gbps", json!(1e-9)),
            "cluster.disaggregation.link.bandwidth_gbps",
        ),
        (
            "arrivals past the clock: 5 requests at 1e-10 req/s",
            with(
                with(base(), "/workload/arrival", json!({"kind": "constant", "rate_rps": 1e-10})),
                "/workload/requests",
                json!(5),
            ),
            "workload.requests",
        ),
        (
            "a trace scaled past the clock",
            with(
                trace("arrived_at,num_prefill_tokens,num_decode_tokens\n0,10,5\n5e8,10,5\n9e8,10,5\n"),
                "/workload/arrival/time_scale",
                json!(1e6),
            ),
            "workload.arrival.time_scale",
        ),
    ];
    for (what, v, path) in cases {
        let e = scenario::load(&v.to_string()).expect_err(what);
        let f = e
            .errors
            .iter()
            .find(|f| f.path == path)
            .unwrap_or_else(|| panic!("{what}: expected an error at {path}, got {e}"));
        println!("{what}: {}: {}", f.path, f.message);
        assert!(f.message.contains("must be") || f.message.contains("past the"), "{what}: {}", f.message);
    }
    // The physical bounds say why.
    let e = scenario::load(&with(base(), "/hardware/peak_tflops", json!(1e-300)).to_string()).unwrap_err();
    assert!(
        e.to_string()
            .contains("(got 1e-300): dense TFLOPS per GPU; a step's compute time is its FLOPs divided by this"),
        "{e}"
    );
}

/// At the edge of what is accepted, a run ends, quickly, with a sane report.
#[test]
fn the_extremes_that_are_accepted_end_with_a_sane_report() {
    let edge = with(
        with(
            base(),
            "/workload/arrival",
            json!({"kind": "on_off", "rate_on_rps": 1.0, "rate_off_rps": 0.0, "mean_on_s": 1e-3, "mean_off_s": 1e-3}),
        ),
        "/workload/requests",
        json!(200),
    );
    for (what, v) in [
        ("one arrival per thousand 1 ms on periods", edge),
        (
            "the slowest accepted GPU",
            with(with(base(), "/hardware/peak_tflops", json!(0.01)), "/workload/requests", json!(20)),
        ),
        (
            "the slowest accepted link",
            with(
                with(pd(), "/cluster/disaggregation/link/bandwidth_gbps", json!(1e-3)),
                "/workload/requests",
                json!(20),
            ),
        ),
    ] {
        let sc = scenario::load(&v.to_string()).unwrap_or_else(|e| panic!("{what}: {e}"));
        let t = std::time::Instant::now();
        let r = inferscale::simulate(&sc);
        let json = inferscale::export::json(&r);
        assert!(!json.contains("null") && !json.contains("NaN"), "{what}: a sane report");
        assert!(r.audits.ok, "{what}: audits {:?}", r.audits);
        assert_eq!(
            r.summary.completed + r.summary.rejected + r.summary.failed + r.summary.unfinished,
            r.summary.requests
        );
        assert!(r.engine.busy_fraction <= 1.0 + 1e-9 && r.summary.slo_attainment <= 1.0, "{what}: fractions in [0, 1]");
        println!("{what}: {} requests, {} completed in {:?}", r.summary.requests, r.summary.completed, t.elapsed());
        assert!(t.elapsed().as_secs() < 20, "{what}: bounded time");
    }
}

/// What the outputs carry of a user's text cannot become markup or a formula, a BOM is not an error, and a
/// failed write is not a success.
#[test]
fn outputs_neutralise_user_text_and_report_write_errors() {
    let mut v = base();
    v["name"] = json!("<img src=x onerror=alert(1)> | x\nnext");
    v["workload"]["classes"][0]["name"] = json!("=HYPERLINK(\"http://x\")");
    v["workload"]["classes"][1]["name"] = json!("a|b<script>");
    v["workload"]["requests"] = json!(50);
    let sc = scenario::load(&v.to_string()).unwrap();
    let r = inferscale::simulate(&sc);
    let md = inferscale::export::markdown(&r);
    assert!(!md.contains("<img") && !md.contains("<script>"), "no raw HTML in the Markdown");
    assert!(md.contains("&lt;img src=x onerror=alert(1)&gt; \\| x next"), "the title is escaped, on one line");
    let rows: Vec<&str> = md.lines().filter(|l| l.contains("script")).collect();
    assert!(
        !rows.is_empty() && rows.iter().all(|l| l.starts_with("| a\\|b&lt;script&gt; |")),
        "a class name cannot split a table row: {rows:?}"
    );
    let csv = inferscale::export::requests_csv(&r, &sc);
    assert!(csv.contains("\"'=HYPERLINK(\"\"http://x\"\")\""), "a formula-looking cell is prefixed and quoted");
    assert!(!csv.lines().skip(1).any(|l| l.split(',').any(|c| c.starts_with('='))), "no cell starts with =");
    for (raw, cell) in [("+1", "'+1"), ("-x", "'-x"), ("@sum", "'@sum"), ("plain", "plain"), ("a,b", "\"a,b\"")] {
        assert_eq!(inferscale::export::csv_field(raw), cell);
    }
    // A byte-order mark before the JSON is accepted.
    let with_bom = format!("\u{feff}{}", base());
    scenario::load(&with_bom).expect("a UTF-8 BOM is not an error");
}

#[test]
fn a_failed_write_exits_non_zero() {
    if !std::path::Path::new("/dev/full").exists() {
        return;
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_inferscale"))
        .args(["run", "scenarios/default.json"])
        .current_dir(super::root())
        .stdout(std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "writing to a full device is a failure: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot write the output"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A disaggregated trace whose rows do not fit a pool's worker used to pass and then leave every such request
/// unfinished; its first such row is named now.
#[test]
fn a_pd_trace_that_does_not_fit_a_pool_is_refused() {
    // The rows fit the scenario's A100 80GB (colocated), not the decode pool's L40S.
    let data = "arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,100,10\n0.5,120,300000\n";
    let v = with(pd(), "/cluster/disaggregation/decode/device", json!("l40s"));
    let v = with(v, "/workload/arrival", json!({"kind": "trace", "data": data}));
    let v = without(v, "/workload/requests");
    let e = scenario::load(&v.to_string()).expect_err("a row needs more KV than a decode worker has");
    let f = e.errors.iter().find(|f| f.path == "workload.arrival.data (request 2)").unwrap_or_else(|| panic!("{e}"));
    assert!(f.message.contains("exceeds the KV capacity of one decode worker"), "{}", f.message);
    // The same trace with rows that fit runs, every request completed.
    let ok = with(
        without(pd(), "/workload/requests"),
        "/workload/arrival",
        json!({"kind": "trace", "data": "arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,100,10\n0.5,120,20\n"}),
    );
    let r = inferscale::simulate(&scenario::load(&ok.to_string()).unwrap());
    assert_eq!(r.summary.completed, 2);
}

/// Long lists are refused while they are read: five million classes (15 MB of `{}`) used to be parsed whole
/// — 900 MB and a second — before validation said at most 64; now parsing stops at the 65th.
#[test]
fn lists_past_their_limit_are_refused_as_they_are_read() {
    let base = std::fs::read_to_string(super::root().join("scenarios/default.json")).unwrap();
    for (field, limit, n) in [("classes", 64, 5_000_000), ("tenants", 1024, 2_000_000)] {
        let mut v: Value = serde_json::from_str(&base).unwrap();
        v["workload"][field] = json!([]);
        let text =
            v.to_string().replace(&format!("\"{field}\":[]"), &format!("\"{field}\":[{}{{}}]", "{},".repeat(n - 1)));
        let t = std::time::Instant::now();
        let err = inferscale::scenario::parse(&text).unwrap_err();
        assert_eq!(err.errors[0].path, format!("workload.{field}"), "{err}");
        assert!(err.errors[0].message.contains(&format!("at most {limit} entries")), "{err}");
        // Stopped at once (a whole parse took a second); generous for a loaded CI machine.
        assert!(t.elapsed().as_millis() < 300, "{field}: {:?}", t.elapsed());
    }
    let mut v: Value = serde_json::from_str(&base).unwrap();
    v["objectives"] = json!({"percentiles": vec![json!({"metric": "ttft", "percentile": 95, "max_ms": 100}); 65]});
    assert_eq!(inferscale::scenario::parse(&v.to_string()).unwrap_err().errors[0].path, "objectives.percentiles");
}
