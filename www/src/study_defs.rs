//! The study panels' definitions: each study of the core's registry (`study::Kind`) is a panel — its name,
//! title, group, question and how it answers are the core's `About` — and a study with options has the fields
//! that edit its inputs and options here. Plain data, so its tests run natively: they
//! check every panel against the core (each study has a panel, each option field is an option of the study's
//! options struct, and each such option has a field).

use inferscale::study::Kind;
use serde_json::{Value, json};

use crate::panels::{CalibrationPanel, FindingsPanel, LabPanel, Panel};

/// The fields of a study's panel (a study without options needs none). Everything else a panel shows of
/// its study is the core's `About`, so the CLI's help, the report and the sidebar say the same.
pub(crate) struct PanelDef {
    pub kind: Kind,
    pub params: &'static [Param],
}

/// Every study is a panel of the sidebar, as the core describes it.
impl Panel for Kind {
    fn name(&self) -> &'static str {
        Kind::name(*self)
    }
    fn title(&self) -> &'static str {
        self.about().title
    }
    fn group(&self) -> &'static str {
        self.about().group.name()
    }
    fn section(&self) -> &'static str {
        "panel-study"
    }
}

/// Every panel of the page, in sidebar order: the Serving Lab, the study panels, then Calibration.
pub(crate) fn registry() -> Vec<&'static dyn Panel> {
    std::iter::once(&LabPanel as &'static dyn Panel)
        .chain(Kind::ALL.iter().map(|k| k as &'static dyn Panel))
        .chain(std::iter::once(&CalibrationPanel as &'static dyn Panel))
        .chain(std::iter::once(&FindingsPanel as &'static dyn Panel))
        .collect()
}

pub(crate) fn sidebar_html() -> String {
    crate::panels::sidebar_html(&registry(), "lab")
}

#[derive(Clone, Copy, PartialEq)]
pub(crate) enum PKind {
    Int,
    Num,
    /// A number that may be left empty (the option is then absent).
    OptNum,
    /// A whole number that may be left empty (the option is then absent).
    OptInt,
    Bool,
    /// A JSON value edited as text (a candidate list, a treatment).
    Json,
    Select(&'static [(&'static str, &'static str)]),
    /// The kind of a block and the numbers that kind takes (`variant.rs`).
    Variant(&'static crate::variant::Variant),
}

/// A parameter field: it edits the scenario at `ptr` (scenario fields are the study's inputs) or, with a
/// `study:` prefix, the study's own options.
pub(crate) struct Param {
    pub id: &'static str,
    pub label: &'static str,
    pub unit: &'static str,
    pub title: &'static str,
    pub ptr: &'static str,
    pub kind: PKind,
}

const DEVICES: &[(&str, &str)] = &[
    ("", "as the scenario"),
    ("a100-80g", "A100 80GB"),
    ("a100-40g", "A100 40GB"),
    ("h100-sxm", "H100 SXM"),
    ("h200", "H200"),
    ("l40s", "L40S"),
];
const TOPOLOGY: &[(&str, &str)] = &[("per_pair", "a link per pair"), ("shared", "one shared link")];

/// The capacity and fleet planners' mean-wait criterion (`capacity::Criterion`), one field on each panel.
const fn mean_wait(id: &'static str) -> Param {
    Param {
        id,
        label: "Or: mean wait at most",
        unit: "ms (empty: use the SLOs)",
        title: "Pass on mean queueing delay instead of SLO attainment",
        ptr: "study:max_mean_wait_ms",
        kind: PKind::OptNum,
    }
}

pub(crate) const PANELS: &[PanelDef] = &[
    PanelDef {
        kind: Kind::Ranking,
        params: &[
            Param {
                id: "o-admission",
                label: "Rank admission policies too",
                unit: "",
                title: "Also rank FCFS with a queue cap and with deadline admission",
                ptr: "study:admission",
                kind: PKind::Bool,
            },
            Param {
                id: "o-quantum",
                label: "DRR quantum",
                unit: "tokens",
                title: "Deficit round robin's quantum per tenant turn",
                ptr: "study:drr_quantum_tokens",
                kind: PKind::Int,
            },
            Param {
                id: "o-rreps",
                label: "Repetitions",
                unit: "seeds per policy",
                title: "Every policy runs on these seeds; the table shows 95 % intervals over them",
                ptr: "study:repetitions",
                kind: PKind::Int,
            },
        ],
    },
    PanelDef {
        kind: Kind::Capacity,
        params: &[
            Param {
                id: "o-target",
                label: "SLO attainment target",
                unit: "fraction (empty: the scenario's objectives)",
                title: "Every repetition must reach this attainment (and every percentile objective of the scenario)",
                ptr: "study:target",
                kind: PKind::OptNum,
            },
            Param {
                id: "o-target-rps",
                label: "Or: fewest replicas for",
                unit: "req/s; sessions/s with sessions (empty: find the highest rate)",
                title: "Search the fewest replicas that meet the objectives at this offered rate, each simulated with the router",
                ptr: "study:target_rps",
                kind: PKind::OptNum,
            },
            Param {
                id: "o-max-replicas",
                label: "Most replicas",
                unit: "",
                title: "The replica search stops here",
                ptr: "study:max_replicas",
                kind: PKind::Int,
            },
            Param {
                id: "o-reps",
                label: "Repetitions",
                unit: "seeds per rate",
                title: "Repetitions (seeds) per rate; all must pass",
                ptr: "study:repetitions",
                kind: PKind::Int,
            },
            Param {
                id: "o-precision",
                label: "Precision",
                unit: "fraction of the rate",
                title: "Stop when the pass/fail bracket is this narrow",
                ptr: "study:precision",
                kind: PKind::Num,
            },
            mean_wait("o-wait"),
            Param {
                id: "o-start",
                label: "First rate",
                unit: "req/s; sessions/s with sessions (empty: the scenario's)",
                title: "Where the search starts",
                ptr: "study:start_rps",
                kind: PKind::OptNum,
            },
            Param {
                id: "o-maxrates",
                label: "Most rates",
                unit: "",
                title: "Most rates evaluated before the search stops",
                ptr: "study:max_rates",
                kind: PKind::Int,
            },
        ],
    },
    PanelDef {
        kind: Kind::Fleet,
        params: &[
            Param {
                id: "f-target-rps",
                label: "Target rate",
                unit: "req/s (empty: the scenario's)",
                title: "The offered rate the fleet must carry",
                ptr: "study:target_rps",
                kind: PKind::OptNum,
            },
            Param {
                id: "f-headroom",
                label: "Burst headroom",
                unit: "fraction over the target",
                title: "Replicas are sized for the target × (1 + headroom)",
                ptr: "study:headroom",
                kind: PKind::Num,
            },
            Param {
                id: "f-reps",
                label: "Repetitions",
                unit: "seeds per candidate",
                title: "Each seed searches its own capacity and replica count; as many unseen seeds run the chosen fleet",
                ptr: "study:repetitions",
                kind: PKind::Int,
            },
            Param {
                id: "f-devices",
                label: "Devices",
                unit: "JSON list of presets, e.g. [\"h100-sxm\", \"l40s\"] ([]: the scenario's)",
                title: "Device presets to try",
                ptr: "study:devices",
                kind: PKind::Json,
            },
            Param {
                id: "f-prices",
                label: "Prices",
                unit: "JSON {device: USD per GPU-hour}, over the shipped list",
                title: "A device without a list price needs one here",
                ptr: "study:prices",
                kind: PKind::Json,
            },
            Param {
                id: "f-tp",
                label: "TP degrees",
                unit: "JSON list, e.g. [1, 2] ([]: the scenario's)",
                title: "Tensor-parallel degrees to try",
                ptr: "study:tp",
                kind: PKind::Json,
            },
            Param {
                id: "f-layouts",
                label: "Layouts",
                unit: "JSON list: {\"kind\": \"colocated\"} or {\"kind\": \"pd\", \"prefill\": 1, \"decode\": 2, \"decode_device\": \"l40s\"}",
                title: "Colocated or P/D units, each pool on its own device when given",
                ptr: "study:layouts",
                kind: PKind::Json,
            },
            Param {
                id: "f-seqs",
                label: "Batch caps",
                unit: "JSON list of max_num_seqs ([]: the scenario's)",
                title: "Batch caps to try",
                ptr: "study:max_num_seqs",
                kind: PKind::Json,
            },
            Param {
                id: "f-budgets",
                label: "Token budgets",
                unit: "JSON list of max_num_batched_tokens ([]: the scenario's)",
                title: "Token budgets to try",
                ptr: "study:max_num_batched_tokens",
                kind: PKind::Json,
            },
            Param {
                id: "f-formations",
                label: "Batch formations",
                unit: "JSON list, e.g. [\"vllm\", \"sglang\"] ([]: the scenario's)",
                title: "Batch formations to try",
                ptr: "study:batch_formations",
                kind: PKind::Json,
            },
            Param {
                id: "f-schedulers",
                label: "Schedulers",
                unit: "JSON list, e.g. [{\"kind\": \"fcfs\"}, {\"kind\": \"sjf\"}] ([]: the scenario's)",
                title: "Schedulers to try",
                ptr: "study:schedulers",
                kind: PKind::Json,
            },
            Param {
                id: "f-target",
                label: "SLO attainment target",
                unit: "fraction (empty: the scenario's objectives)",
                title: "A run passes at this attainment with every percentile objective met",
                ptr: "study:target",
                kind: PKind::OptNum,
            },
            mean_wait("f-wait"),
            Param {
                id: "f-max-replicas",
                label: "Most replicas",
                unit: "per candidate",
                title: "A candidate that needs more does not pass; its ceiling below the rate prunes it",
                ptr: "study:max_replicas",
                kind: PKind::Int,
            },
            Param {
                id: "f-precision",
                label: "Precision",
                unit: "fraction of the rate",
                title: "The capacity search stops when its bracket is this narrow",
                ptr: "study:precision",
                kind: PKind::Num,
            },
            Param {
                id: "f-model-error",
                label: "Model error",
                unit: "fraction (empty: none; the Calibration panel's held-out median APE)",
                title: "Widens the replica interval as a capacity off by this share would",
                ptr: "study:model_error",
                kind: PKind::OptNum,
            },
        ],
    },
    PanelDef {
        kind: Kind::Pd,
        params: &[
            Param {
                id: "p-prefill",
                label: "Prefill workers",
                unit: "",
                title: "Workers in the prefill pool",
                ptr: "/cluster/disaggregation/prefill/replicas",
                kind: PKind::Int,
            },
            Param {
                id: "p-prefill-dev",
                label: "Prefill device",
                unit: "",
                title: "Device of the prefill pool",
                ptr: "/cluster/disaggregation/prefill/device",
                kind: PKind::Select(DEVICES),
            },
            Param {
                id: "p-prefill-tp",
                label: "Prefill TP",
                unit: "GPUs/worker",
                title: "Tensor parallelism of a prefill worker",
                ptr: "/cluster/disaggregation/prefill/tp",
                kind: PKind::Int,
            },
            Param {
                id: "p-decode",
                label: "Decode workers",
                unit: "",
                title: "Workers in the decode pool",
                ptr: "/cluster/disaggregation/decode/replicas",
                kind: PKind::Int,
            },
            Param {
                id: "p-decode-dev",
                label: "Decode device",
                unit: "",
                title: "Device of the decode pool",
                ptr: "/cluster/disaggregation/decode/device",
                kind: PKind::Select(DEVICES),
            },
            Param {
                id: "p-decode-tp",
                label: "Decode TP",
                unit: "GPUs/worker",
                title: "Tensor parallelism of a decode worker",
                ptr: "/cluster/disaggregation/decode/tp",
                kind: PKind::Int,
            },
            Param {
                id: "p-bw",
                label: "Link bandwidth",
                unit: "GB/s",
                title: "Bandwidth of one KV-transfer link",
                ptr: "/cluster/disaggregation/link/bandwidth_gbps",
                kind: PKind::Num,
            },
            Param {
                id: "p-lat",
                label: "Link latency",
                unit: "ms",
                title: "Fixed latency of a transfer",
                ptr: "/cluster/disaggregation/link/latency_ms",
                kind: PKind::Num,
            },
            Param {
                id: "p-topo",
                label: "Links",
                unit: "",
                title: "A link per (prefill, decode) pair, or one shared by all",
                ptr: "/cluster/disaggregation/link/topology",
                kind: PKind::Select(TOPOLOGY),
            },
            Param {
                id: "p-prefix",
                label: "Shared prefix",
                unit: "tokens",
                title: "Length of each shared prompt prefix (whole KV blocks are shared)",
                ptr: "/prefix/prefix_tokens",
                kind: PKind::Int,
            },
            Param {
                id: "p-reuse",
                label: "Reuse fraction",
                unit: "of requests",
                title: "Fraction of requests whose prompt starts with a shared prefix",
                ptr: "/prefix/reuse_fraction",
                kind: PKind::Num,
            },
            Param {
                id: "p-groups",
                label: "Prefixes",
                unit: "distinct",
                title: "Number of distinct shared prefixes",
                ptr: "/prefix/groups",
                kind: PKind::Int,
            },
            Param {
                id: "p-zipf",
                label: "Popularity skew",
                unit: "Zipf s",
                title: "Zipf exponent of prefix popularity (0 = uniform)",
                ptr: "/prefix/zipf_s",
                kind: PKind::Num,
            },
        ],
    },
    PanelDef {
        kind: Kind::Explorer,
        params: &[
            Param {
                id: "o-etarget",
                label: "SLO pass at",
                unit: "fraction (empty: the scenario's target)",
                title: "A candidate passes at this SLO attainment",
                ptr: "study:target",
                kind: PKind::OptNum,
            },
            Param {
                id: "o-candidates",
                label: "Candidates",
                unit: "JSON: [{name, set: {JSON pointer: value}}]",
                title: "Each candidate changes these scenario fields",
                ptr: "study:candidates",
                kind: PKind::Json,
            },
        ],
    },
    PanelDef {
        kind: Kind::Paired,
        params: &[
            Param {
                id: "o-treatment",
                label: "Treatment",
                unit: "JSON: {JSON pointer: value}",
                title: "The scenario fields the treatment changes",
                ptr: "study:treatment",
                kind: PKind::Json,
            },
            Param {
                id: "o-preps",
                label: "Repetitions",
                unit: "pairs",
                title: "Paired repetitions K (seeds)",
                ptr: "study:repetitions",
                kind: PKind::Int,
            },
            Param {
                id: "o-resamples",
                label: "Bootstrap resamples",
                unit: "",
                title: "Resamples B of the bootstrap",
                ptr: "study:resamples",
                kind: PKind::Int,
            },
        ],
    },
    PanelDef {
        kind: Kind::Sensitivity,
        params: &[
            Param {
                id: "o-streatment",
                label: "Treatment",
                unit: "JSON: {JSON pointer: value}",
                title: "The scenario fields the treatment changes",
                ptr: "study:treatment",
                kind: PKind::Json,
            },
            Param {
                id: "o-samples",
                label: "Samples",
                unit: "",
                title: "Perturbation samples N",
                ptr: "study:samples",
                kind: PKind::Int,
            },
            Param {
                id: "o-range",
                label: "Range",
                unit: "× (each scale in [1/range, range])",
                title: "How far the profile may be off",
                ptr: "study:range",
                kind: PKind::Num,
            },
        ],
    },
    PanelDef {
        kind: Kind::AgentSessions,
        params: &[
            Param {
                id: "g-rate",
                label: "Session rate",
                unit: "sessions/s",
                title: "Sessions starting per second (each arrival of the scenario's process starts one)",
                ptr: "/workload/arrival/rate_rps",
                kind: PKind::Num,
            },
            Param {
                id: "g-sessions",
                label: "Sessions",
                unit: "",
                title: "Sessions the run starts",
                ptr: "/workload/requests",
                kind: PKind::Int,
            },
            Param {
                id: "g-turns",
                label: "Turns",
                unit: "mean per session",
                title: "Mean turns a session (the distribution's mean)",
                ptr: "/workload/sessions/turns/mean",
                kind: PKind::Num,
            },
            Param {
                id: "g-first",
                label: "First prompt",
                unit: "tokens, mean",
                title: "The first turn's prompt: system prompt and task",
                ptr: "/workload/sessions/first_tokens/mean",
                kind: PKind::Num,
            },
            Param {
                id: "g-new",
                label: "New input",
                unit: "tokens a later turn, mean",
                title: "A later turn's new input: the tool's result and what follows",
                ptr: "/workload/sessions/new_tokens/mean",
                kind: PKind::Num,
            },
            Param {
                id: "g-output",
                label: "Output",
                unit: "tokens a turn, mean",
                title: "Each turn's output",
                ptr: "/workload/sessions/output_tokens/mean",
                kind: PKind::Num,
            },
            Param {
                id: "g-replicas",
                label: "Replicas",
                unit: "",
                title: "Workers the router spreads turns over",
                ptr: "/cluster/replicas",
                kind: PKind::Int,
            },
            Param {
                id: "g-shown",
                label: "Turns on the chart",
                unit: "1 … 64",
                title: "TTFT by turn index shows turns up to this",
                ptr: "study:turns_shown",
                kind: PKind::Int,
            },
            Param {
                id: "g-retention",
                label: "Retention",
                unit: "",
                title: "What a turn's end does with the session's KV: freed; kept in HBM; kept a TTL, then moved to host memory or freed; moved to host memory at once; the gap oracle, which sees each tool's duration (a bound on gap cost); or adaptive, which learns it",
                ptr: "/workload/sessions/retention",
                kind: PKind::Variant(&crate::variant::RETENTION),
            },
            Param {
                id: "g-router",
                label: "Router",
                unit: "",
                title: "How turns pick a worker: sticky keeps a session where its KV is; bounded affinity leaves when the worker's queue penalty passes the best one's by more than the slack",
                ptr: "/cluster/router",
                kind: PKind::Variant(&crate::variant::ROUTER),
            },
            Param {
                id: "g-host",
                label: "Host tier",
                unit: "",
                title: "Host memory for sessions' KV and its link to HBM",
                ptr: "/engine/host_kv",
                kind: PKind::Variant(&crate::variant::HOST_TIER),
            },
            Param {
                id: "g-tools",
                label: "Tools",
                unit: "JSON: [{name, weight, mean_s, cv}] — latency lognormal by mean and CV",
                title: "The tools a turn's end calls, picked by weight",
                ptr: "/workload/sessions/tools",
                kind: PKind::Json,
            },
        ],
    },
    PanelDef {
        kind: Kind::AgentPolicies,
        params: &[
            Param {
                id: "a-rate",
                label: "Session rate",
                unit: "sessions/s",
                title: "Sessions starting per second (each arrival of the scenario's process starts one)",
                ptr: "/workload/arrival/rate_rps",
                kind: PKind::Num,
            },
            Param {
                id: "a-sessions",
                label: "Sessions",
                unit: "",
                title: "Sessions the run starts",
                ptr: "/workload/requests",
                kind: PKind::Int,
            },
            Param {
                id: "a-replicas",
                label: "Replicas",
                unit: "",
                title: "Workers the router spreads turns over",
                ptr: "/cluster/replicas",
                kind: PKind::Int,
            },
            Param {
                id: "a-ttl",
                label: "TTL",
                unit: "s",
                title: "How long the TTL policy keeps a history in HBM after a turn",
                ptr: "study:ttl_s",
                kind: PKind::Num,
            },
            Param {
                id: "a-slack",
                label: "Affinity slack",
                unit: "ms",
                title: "Bounded affinity leaves a session's worker when its queue penalty passes the best one's by more than this",
                ptr: "study:slack_ms",
                kind: PKind::Num,
            },
            host_tier("a-host"),
        ],
    },
    PanelDef {
        kind: Kind::TtlSweep,
        params: &[
            Param {
                id: "t-rate",
                label: "Session rate",
                unit: "sessions/s",
                title: "Sessions starting per second",
                ptr: "/workload/arrival/rate_rps",
                kind: PKind::Num,
            },
            Param {
                id: "t-replicas",
                label: "Replicas",
                unit: "",
                title: "Workers",
                ptr: "/cluster/replicas",
                kind: PKind::Int,
            },
            Param {
                id: "t-ttls",
                label: "TTLs",
                unit: "JSON list of s; null = ∞ (no expiry)",
                title: "The TTLs to try, e.g. [0, 1, 5, 30, null]",
                ptr: "study:ttl_s",
                kind: PKind::Json,
            },
        ],
    },
    PanelDef {
        kind: Kind::TieredKv,
        params: &[
            Param {
                id: "k-rate",
                label: "Session rate",
                unit: "sessions/s",
                title: "Sessions starting per second",
                ptr: "/workload/arrival/rate_rps",
                kind: PKind::Num,
            },
            Param {
                id: "k-replicas",
                label: "Replicas",
                unit: "",
                title: "Workers",
                ptr: "/cluster/replicas",
                kind: PKind::Int,
            },
            Param {
                id: "k-ttl",
                label: "TTL",
                unit: "s",
                title: "The TTL policy's time to live",
                ptr: "study:ttl_s",
                kind: PKind::Num,
            },
            Param {
                id: "k-slack",
                label: "Affinity slack",
                unit: "ms",
                title: "Bounded affinity's slack",
                ptr: "study:slack_ms",
                kind: PKind::Num,
            },
            host_tier("k-host"),
            Param {
                id: "k-budgets",
                label: "HBM budgets",
                unit: "JSON list, × the reference working set",
                title: "Per-replica retention budgets as multiples of the most idle history a worker holds under full retention",
                ptr: "study:budgets",
                kind: PKind::Json,
            },
        ],
    },
    PanelDef {
        kind: Kind::AdaptiveTiering,
        params: &[
            Param {
                id: "v-rate",
                label: "Session rate",
                unit: "sessions/s",
                title: "Sessions starting per second",
                ptr: "/workload/arrival/rate_rps",
                kind: PKind::Num,
            },
            Param {
                id: "v-replicas",
                label: "Replicas",
                unit: "",
                title: "Workers",
                ptr: "/cluster/replicas",
                kind: PKind::Int,
            },
            Param {
                id: "v-alpha",
                label: "EWMA weight α",
                unit: "0 < α ≤ 1",
                title: "How far each returned tool call moves the adaptive policies' estimate of the gap",
                ptr: "study:alpha",
                kind: PKind::Num,
            },
            Param {
                id: "v-alphas",
                label: "α sweep",
                unit: "JSON list",
                title: "The weights the second table tries, with one estimate per tool, e.g. [0.05, 0.2, 1]",
                ptr: "study:alphas",
                kind: PKind::Json,
            },
            Param {
                id: "v-ttl",
                label: "TTL",
                unit: "s",
                title: "The TTL policy's time to live",
                ptr: "study:ttl_s",
                kind: PKind::Num,
            },
            Param {
                id: "v-shift",
                label: "Tool shift",
                unit: "JSON {tool, at_s, factor}; empty: the scenario's, else the slowest tool 4× from mid-run",
                title: "From at_s on, every call of the tool takes factor × as long",
                ptr: "study:shift",
                kind: PKind::Json,
            },
            host_tier("v-host"),
        ],
    },
    PanelDef {
        kind: Kind::AffinitySlack,
        params: &[
            Param {
                id: "f-rate",
                label: "Session rate",
                unit: "sessions/s",
                title: "Sessions starting per second",
                ptr: "/workload/arrival/rate_rps",
                kind: PKind::Num,
            },
            Param {
                id: "f-replicas",
                label: "Replicas",
                unit: "",
                title: "Workers",
                ptr: "/cluster/replicas",
                kind: PKind::Int,
            },
            Param {
                id: "f-slacks",
                label: "Slacks",
                unit: "JSON list of ms",
                title: "The slacks to try, e.g. [0, 50, 250, 1000]",
                ptr: "study:slack_ms",
                kind: PKind::Json,
            },
        ],
    },
    PanelDef {
        kind: Kind::ExecLearning,
        params: &[
            workflow_rate("x-rate"),
            replicas("x-replicas"),
            prefix_budget("x-budget"),
            threshold("x-threshold"),
            decay("x-decay"),
            horizon("x-horizon"),
            host_tier("x-host"),
        ],
    },
    PanelDef {
        kind: Kind::PrefetchThreshold,
        params: &[
            workflow_rate("pt-rate"),
            replicas("pt-replicas"),
            prefix_budget("pt-budget"),
            Param {
                id: "pt-thresholds",
                label: "Thresholds",
                unit: "JSON list, 0 … 1",
                title: "The thresholds to try, e.g. [0.1, 0.3, 0.5]",
                ptr: "study:thresholds",
                kind: PKind::Json,
            },
            decay("pt-decay"),
        ],
    },
    PanelDef {
        kind: Kind::TransitionDecay,
        params: &[
            workflow_rate("td-rate"),
            replicas("td-replicas"),
            prefix_budget("td-budget"),
            Param {
                id: "td-decays",
                label: "Decays",
                unit: "JSON list, 0 < d ≤ 1 (1: counts)",
                title: "The decays to try, e.g. [1, 0.95, 0.8]",
                ptr: "study:decays",
                kind: PKind::Json,
            },
            threshold("td-threshold"),
        ],
    },
    PanelDef {
        kind: Kind::Forecast,
        params: &[
            workflow_rate("fc-rate"),
            replicas("fc-replicas"),
            prefix_budget("fc-budget"),
            threshold("fc-threshold"),
            decay("fc-decay"),
            multi_step_horizon("fc-horizon"),
            host_tier("fc-host"),
        ],
    },
    PanelDef {
        kind: Kind::ForecastHorizon,
        params: &[
            workflow_rate("fh-rate"),
            replicas("fh-replicas"),
            prefix_budget("fh-budget"),
            Param {
                id: "fh-horizons",
                label: "Horizons",
                unit: "JSON list, steps 1 … 16",
                title: "The horizons to try, e.g. [1, 2, 4, 8]",
                ptr: "study:horizons",
                kind: PKind::Json,
            },
            decay("fh-decay"),
            threshold("fh-threshold"),
        ],
    },
    PanelDef {
        kind: Kind::PrefixBudget,
        params: &[
            workflow_rate("pb-rate"),
            replicas("pb-replicas"),
            Param {
                id: "pb-budgets",
                label: "Budgets",
                unit: "JSON list, × all roles' prefixes, 0 … 1000",
                title: "The prefix budgets to try, e.g. [0.25, 0.5, 1]",
                ptr: "study:budgets",
                kind: PKind::Json,
            },
            decay("pb-decay"),
            threshold("pb-threshold"),
            multi_step_horizon("pb-horizon"),
        ],
    },
    PanelDef {
        kind: Kind::ResearchSummary,
        params: &[
            workflow_rate("rs-rate"),
            replicas("rs-replicas"),
            prefix_budget("rs-budget"),
            Param {
                id: "rs-seeds",
                label: "Seeds",
                unit: "2 … 64 (seed + k)",
                title: "Every policy runs on each seed; ten give the interval its 95 %",
                ptr: "study:seeds",
                kind: PKind::Int,
            },
            decay("rs-decay"),
            threshold("rs-threshold"),
            multi_step_horizon("rs-horizon"),
            Param {
                id: "rs-grid-decays",
                label: "Oracle grid: decays",
                unit: "JSON list, 0 < d ≤ 1",
                title: "The oracle searches the next-step threshold plan at each decay × threshold, and the utility plan at each decay",
                ptr: "study:grid_decays",
                kind: PKind::Json,
            },
            Param {
                id: "rs-grid-thresholds",
                label: "Oracle grid: thresholds",
                unit: "JSON list, 0 … 1",
                title: "The thresholds of the oracle's grid",
                ptr: "study:grid_thresholds",
                kind: PKind::Json,
            },
        ],
    },
];

/// Workflows starting per second (a workflow study's first field).
const fn workflow_rate(id: &'static str) -> Param {
    Param {
        id,
        label: "Workflow rate",
        unit: "workflows/s",
        title: "Workflows starting per second",
        ptr: "/workload/arrival/rate_rps",
        kind: PKind::Num,
    }
}

const fn threshold(id: &'static str) -> Param {
    Param {
        id,
        label: "Threshold",
        unit: "0 … 1",
        title: "The threshold plan fetches every role at least this likely to be needed",
        ptr: "study:threshold",
        kind: PKind::Num,
    }
}

const fn decay(id: &'static str) -> Param {
    Param {
        id,
        label: "Decay",
        unit: "0 < d ≤ 1",
        title: "The decayed model multiplies a role's learned row by d at each transition out of it",
        ptr: "study:decay",
        kind: PKind::Num,
    }
}

const fn horizon(id: &'static str) -> Param {
    Param {
        id,
        label: "Horizon",
        unit: "steps, 1 … 16",
        title: "How many coming steps the forecast covers",
        ptr: "study:horizon",
        kind: PKind::Int,
    }
}

const fn host_tier(id: &'static str) -> Param {
    Param {
        id,
        label: "Host tier",
        unit: "JSON: {capacity_gb, bandwidth_gbps, latency_ms} (used when the scenario has none)",
        title: "Host memory per worker and its link (host offload's tier; the workflows' prefetches)",
        ptr: "study:host_kv",
        kind: PKind::Json,
    }
}

/// A multi-step policy's horizon (the one-step row is the horizon of 1).
const fn multi_step_horizon(id: &'static str) -> Param {
    Param {
        id,
        label: "Horizon",
        unit: "steps, 2 … 16",
        title: "How many coming steps the multi-step policies forecast (the one-step row: 1)",
        ptr: "study:horizon",
        kind: PKind::Int,
    }
}

const fn replicas(id: &'static str) -> Param {
    Param { id, label: "Replicas", unit: "", title: "Workers", ptr: "/cluster/replicas", kind: PKind::Int }
}

const fn prefix_budget(id: &'static str) -> Param {
    Param {
        id,
        label: "Prefix budget",
        unit: "× all roles' prefixes",
        title: "The HBM a worker's role prefixes may hold, as a share of all roles' prefixes",
        ptr: "/workload/sessions/workflow/prefix_budget",
        kind: PKind::Num,
    }
}

/// The options a panel starts with: the study's defaults, and an example treatment where one is required.
pub(crate) fn default_options(name: &str) -> Value {
    let Ok(kind) = Kind::from_name(name) else { return json!({}) };
    let mut v = kind.default_options();
    if matches!(kind, Kind::Paired | Kind::Sensitivity) {
        v["treatment"] = json!({"/engine/prefill_chunk_tokens": 512});
    }
    if kind == Kind::Sensitivity {
        v["samples"] = json!(12);
    }
    v
}

/// Every study that does not repeat by itself takes `repetitions` (the core's `repeated`): one field for all.
const REPETITIONS: Param = Param {
    id: "o-repetitions",
    label: "Repetitions",
    unit: "whole-study runs on seeds apart, 1 … 20 (empty: once)",
    title: "Run the whole study R times, repetition k on seed + k × 1,000,000: each figure shows its mean ± its 95 % interval, and rows whose intervals overlap are called ties",
    ptr: "study:repetitions",
    kind: PKind::OptInt,
};

/// The fields of study `kind`'s panel: its own (none for a study without options), then Repetitions unless
/// it repeats by itself.
pub(crate) fn params(kind: Kind) -> Vec<&'static Param> {
    let own = PANELS.iter().find(|p| p.kind == kind).map_or(&[][..], |p| p.params);
    let repeated = kind.about().repeats_by.is_none().then_some(&REPETITIONS);
    own.iter().chain(repeated).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_study_is_a_panel_in_the_registry_order() {
        // A study with options has one definition of its fields; one without needs none.
        for k in Kind::ALL {
            let defs = PANELS.iter().filter(|p| p.kind == *k).count();
            let want = usize::from(!k.option_names().is_empty());
            assert_eq!(defs, want, "{}: {defs} field definitions", k.name());
        }
        let names: Vec<&str> = registry().iter().map(|p| p.name()).collect();
        assert_eq!(
            names,
            [
                "lab",
                "ranking",
                "capacity",
                "fleet",
                "pd",
                "explorer",
                "paired",
                "sensitivity",
                "research-summary",
                "agent-sessions",
                "agent-policies",
                "ttl-sweep",
                "tiered-kv",
                "affinity-slack",
                "adaptive-tiering",
                "exec-learning",
                "prefetch-threshold",
                "transition-decay",
                "forecast",
                "forecast-horizon",
                "prefix-budget",
                "calibration",
                "findings"
            ]
        );
    }

    /// A `study:` field edits an option of the study's options struct, and every option has a field — but
    /// the P/D study's, which apply only when the scenario has no prefix block: its panel edits the
    /// scenario's prefix itself.
    #[test]
    fn every_option_field_is_an_option_of_its_study_and_back() {
        let mut checked = 0;
        for p in PANELS {
            let options = p.kind.option_names();
            assert!(!options.is_empty(), "{}: no options read off the struct", p.kind.name());
            let fields: Vec<&str> = p.params.iter().filter_map(|f| f.ptr.strip_prefix("study:")).collect();
            for f in &fields {
                assert!(
                    options.iter().any(|o| o == f),
                    "{}: field `{f}` is not an option (options: {options:?})",
                    p.kind.name()
                );
                checked += 1;
            }
            if p.kind != Kind::Pd {
                for o in &options {
                    assert!(fields.contains(&o.as_str()), "{}: option `{o}` has no field", p.kind.name());
                }
            }
        }
        // Every field's id is unique on the page (the panels share one form).
        let mut ids: Vec<&str> = PANELS.iter().flat_map(|p| p.params).map(|f| f.id).collect();
        let n = ids.len();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), n, "a field id is used twice");
        assert!(checked >= 18, "{checked} option fields checked");
    }

    /// Every study that does not repeat by itself has the Repetitions field, last; one that does keeps its own
    /// field for its own option (research-summary: Seeds), and no second one.
    #[test]
    fn every_study_has_one_repetitions_field_or_its_own() {
        for &k in Kind::ALL {
            let fields = params(k);
            let reps: Vec<&&Param> = fields.iter().filter(|f| f.label == "Repetitions").collect();
            match k.about().repeats_by {
                None => assert_eq!(fields.last().map(|f| f.id), Some("o-repetitions"), "{}", k.name()),
                Some(own) => {
                    assert!(reps.iter().all(|f| f.id != "o-repetitions"), "{}", k.name());
                    assert!(fields.iter().any(|f| f.ptr == format!("study:{own}")), "{}: no field for {own}", k.name());
                }
            }
            assert!(reps.len() <= 1, "{}: {} Repetitions fields", k.name(), reps.len());
        }
        // Its words carry the core's bound and seed stride.
        let most = inferscale::study::repeated::MOST;
        assert!(REPETITIONS.unit.contains(&format!("1 … {most}")), "{}", REPETITIONS.unit);
        assert_eq!(inferscale::study::repeated::SEED_STRIDE, 1_000_000, "the title says seed + k × 1,000,000");
        assert!(REPETITIONS.title.contains("seed + k × 1,000,000"));
    }

    /// A scenario field names a field the scenario format has: written into the default scenario, the
    /// scenario parser never calls it unknown.
    #[test]
    fn scenario_fields_are_fields_of_the_scenario() {
        let base: Value = serde_json::from_str(include_str!("../../scenarios/default.json")).unwrap();
        let mut checked = 0;
        for f in PANELS.iter().flat_map(|p| p.params).filter(|f| f.ptr.starts_with('/')) {
            let mut v = base.clone();
            let value = match f.kind {
                PKind::Select(opts) => json!(opts.last().unwrap().0),
                PKind::Int => json!(2),
                // Every choice of a variant, with its numbers (variant.rs checks each against the core).
                PKind::Variant(var) => {
                    var.choose(&mut v, f.ptr, var.choices.last().unwrap().value);
                    v.pointer(f.ptr).cloned().unwrap_or(Value::Null)
                }
                _ => json!(0.5),
            };
            crate::details::set(&mut v, f.ptr, value);
            if let Err(e) = inferscale::scenario::parse(&v.to_string()) {
                assert!(!e.to_string().contains("unknown field"), "{}: {e}", f.ptr);
            }
            checked += 1;
        }
        assert!(checked >= 13, "{checked} scenario fields checked");
    }

    #[test]
    fn default_options_are_accepted_by_the_study() {
        let spec = inferscale::scenario::parse(include_str!("../../scenarios/default.json")).unwrap();
        let agents = inferscale::scenario::parse(include_str!("../../scenarios/agent-sessions.json")).unwrap();
        let workflows = inferscale::scenario::parse(include_str!("../../scenarios/agent-workflows.json")).unwrap();
        for k in Kind::ALL {
            let on = match k.about().group {
                _ if inferscale::study::agents::WORKFLOW_STUDIES.contains(&k.name()) => &workflows,
                inferscale::study::Group::Agents => &agents,
                _ => &spec,
            };
            let built = k.build(on, &default_options(k.name()));
            assert!(built.is_ok(), "{}: {:?}", k.name(), built.err());
        }
    }
}

#[cfg(test)]
mod preset_selects {
    /// The option values of the page's select `id`.
    fn options(id: &str) -> Vec<String> {
        let html = include_str!("../../index.html");
        let start = html.find(&format!("<select id=\"{id}\"")).unwrap_or_else(|| panic!("#{id} in index.html"));
        let select = &html[start..start + html[start..].find("</select>").unwrap()];
        select.split("<option value=\"").skip(1).map(|o| o[..o.find('"').unwrap()].to_string()).collect()
    }

    /// The Model and Device selects offer exactly the core's presets, in its order.
    #[test]
    fn the_model_and_device_selects_list_every_preset() {
        let models: Vec<String> = inferscale::cost::presets::MODELS.iter().map(|m| m.name.to_string()).collect();
        let devices: Vec<String> = inferscale::cost::presets::DEVICES.iter().map(|d| d.name.to_string()).collect();
        assert_eq!(options("c-model"), models);
        assert_eq!(options("c-device"), devices);
        assert_eq!(options("c-formation"), ["vllm", "sglang", "sglang_mixed"]);
        // The Router select offers every router the core has, as the Agent sessions panel's does.
        let routers: Vec<&str> = crate::variant::ROUTER.choices.iter().map(|c| c.value).collect();
        let mut lab = options("c-router");
        lab.sort();
        let mut core = routers.iter().map(|r| r.to_string()).collect::<Vec<_>>();
        core.sort();
        assert_eq!(lab, core);
    }
}
