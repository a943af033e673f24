//! The study panels' fields. Each study of the core's registry (`study::Kind`) is a panel — its name, title,
//! group, question and how it answers are the core's `About` — and its options are the core's too
//! (`Kind::options`: label, unit, help, bound, how each is edited), so a study with options needs no page code.
//! A panel that also lets the user change scenario fields (the study's inputs) lists them here. Plain data and
//! pure HTML, so its tests run natively.

use inferscale::spec::Bound;
use inferscale::study::Kind;
use inferscale::study::option::{Edit, OptionDef};
use serde_json::{Value, json};

use crate::components::table::esc;
use crate::panels::{CalibrationPanel, FindingsPanel, LabPanel, Panel};

/// The scenario fields a study's panel edits (its inputs), beside the study's own options.
pub(crate) struct PanelDef {
    pub kind: Kind,
    pub inputs: &'static [Input],
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

/// How a field is edited: as an option's type asks (`study::option::Edit`), or as a scenario field's choices.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum PKind {
    Edit(Edit),
    Select(&'static [(&'static str, &'static str)]),
    /// The kind of a block and the numbers that kind takes (`variant.rs`).
    Variant(&'static crate::lab::variant::Variant),
}

/// A scenario field a panel edits (a study's input).
pub(crate) struct Input {
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

pub(crate) const PANELS: &[PanelDef] = &[
    PanelDef {
        kind: Kind::Pd,
        inputs: &[
            Input {
                id: "p-prefill",
                label: "Prefill workers",
                unit: "",
                title: "Workers in the prefill pool",
                ptr: "/cluster/disaggregation/prefill/replicas",
                kind: PKind::Edit(Edit::Int),
            },
            Input {
                id: "p-prefill-dev",
                label: "Prefill device",
                unit: "",
                title: "Device of the prefill pool",
                ptr: "/cluster/disaggregation/prefill/device",
                kind: PKind::Select(DEVICES),
            },
            Input {
                id: "p-prefill-tp",
                label: "Prefill TP",
                unit: "GPUs/worker",
                title: "Tensor parallelism of a prefill worker",
                ptr: "/cluster/disaggregation/prefill/tp",
                kind: PKind::Edit(Edit::Int),
            },
            Input {
                id: "p-decode",
                label: "Decode workers",
                unit: "",
                title: "Workers in the decode pool",
                ptr: "/cluster/disaggregation/decode/replicas",
                kind: PKind::Edit(Edit::Int),
            },
            Input {
                id: "p-decode-dev",
                label: "Decode device",
                unit: "",
                title: "Device of the decode pool",
                ptr: "/cluster/disaggregation/decode/device",
                kind: PKind::Select(DEVICES),
            },
            Input {
                id: "p-decode-tp",
                label: "Decode TP",
                unit: "GPUs/worker",
                title: "Tensor parallelism of a decode worker",
                ptr: "/cluster/disaggregation/decode/tp",
                kind: PKind::Edit(Edit::Int),
            },
            Input {
                id: "p-bw",
                label: "Link bandwidth",
                unit: "GB/s",
                title: "Bandwidth of one KV-transfer link",
                ptr: "/cluster/disaggregation/link/bandwidth_gbps",
                kind: PKind::Edit(Edit::Num),
            },
            Input {
                id: "p-lat",
                label: "Link latency",
                unit: "ms",
                title: "Fixed latency of a transfer",
                ptr: "/cluster/disaggregation/link/latency_ms",
                kind: PKind::Edit(Edit::Num),
            },
            Input {
                id: "p-topo",
                label: "Links",
                unit: "",
                title: "A link per (prefill, decode) pair, or one shared by all",
                ptr: "/cluster/disaggregation/link/topology",
                kind: PKind::Select(TOPOLOGY),
            },
            Input {
                id: "p-prefix",
                label: "Shared prefix",
                unit: "tokens",
                title: "Length of each shared prompt prefix (whole KV blocks are shared)",
                ptr: "/prefix/prefix_tokens",
                kind: PKind::Edit(Edit::Int),
            },
            Input {
                id: "p-reuse",
                label: "Reuse fraction",
                unit: "of requests",
                title: "Fraction of requests whose prompt starts with a shared prefix",
                ptr: "/prefix/reuse_fraction",
                kind: PKind::Edit(Edit::Num),
            },
            Input {
                id: "p-groups",
                label: "Prefixes",
                unit: "distinct",
                title: "Number of distinct shared prefixes",
                ptr: "/prefix/groups",
                kind: PKind::Edit(Edit::Int),
            },
            Input {
                id: "p-zipf",
                label: "Popularity skew",
                unit: "Zipf s",
                title: "Zipf exponent of prefix popularity (0 = uniform)",
                ptr: "/prefix/zipf_s",
                kind: PKind::Edit(Edit::Num),
            },
        ],
    },
    PanelDef {
        kind: Kind::AgentSessions,
        inputs: &[
            Input {
                id: "g-rate",
                label: "Session rate",
                unit: "sessions/s",
                title: "Sessions starting per second (each arrival of the scenario's process starts one)",
                ptr: "/workload/arrival/rate_rps",
                kind: PKind::Edit(Edit::Num),
            },
            Input {
                id: "g-sessions",
                label: "Sessions",
                unit: "",
                title: "Sessions the run starts",
                ptr: "/workload/requests",
                kind: PKind::Edit(Edit::Int),
            },
            Input {
                id: "g-turns",
                label: "Turns",
                unit: "mean per session",
                title: "Mean turns a session (the distribution's mean)",
                ptr: "/workload/sessions/turns/mean",
                kind: PKind::Edit(Edit::Num),
            },
            Input {
                id: "g-first",
                label: "First prompt",
                unit: "tokens, mean",
                title: "The first turn's prompt: system prompt and task",
                ptr: "/workload/sessions/first_tokens/mean",
                kind: PKind::Edit(Edit::Num),
            },
            Input {
                id: "g-new",
                label: "New input",
                unit: "tokens a later turn, mean",
                title: "A later turn's new input: the tool's result and what follows",
                ptr: "/workload/sessions/new_tokens/mean",
                kind: PKind::Edit(Edit::Num),
            },
            Input {
                id: "g-output",
                label: "Output",
                unit: "tokens a turn, mean",
                title: "Each turn's output",
                ptr: "/workload/sessions/output_tokens/mean",
                kind: PKind::Edit(Edit::Num),
            },
            Input {
                id: "g-replicas",
                label: "Replicas",
                unit: "",
                title: "Workers the router spreads turns over",
                ptr: "/cluster/replicas",
                kind: PKind::Edit(Edit::Int),
            },
            Input {
                id: "g-retention",
                label: "Retention",
                unit: "",
                title: "What a turn's end does with the session's KV: freed; kept in HBM; kept a TTL, then moved to host memory or freed; moved to host memory at once; the gap oracle, which sees each tool's duration (a bound on gap cost); or adaptive, which learns it",
                ptr: "/workload/sessions/retention",
                kind: PKind::Variant(&crate::lab::variant::RETENTION),
            },
            Input {
                id: "g-router",
                label: "Router",
                unit: "",
                title: "How turns pick a worker: sticky keeps a session where its KV is; bounded affinity leaves when the worker's queue penalty passes the best one's by more than the slack",
                ptr: "/cluster/router",
                kind: PKind::Variant(&crate::lab::variant::ROUTER),
            },
            Input {
                id: "g-host",
                label: "Host tier",
                unit: "",
                title: "Host memory for sessions' KV and its link to HBM",
                ptr: "/engine/host_kv",
                kind: PKind::Variant(&crate::lab::variant::HOST_TIER),
            },
            Input {
                id: "g-tools",
                label: "Tools",
                unit: "JSON: [{name, weight, mean_s, cv}] — latency lognormal by mean and CV",
                title: "The tools a turn's end calls, picked by weight",
                ptr: "/workload/sessions/tools",
                kind: PKind::Edit(Edit::Json),
            },
        ],
    },
    PanelDef {
        kind: Kind::AgentPolicies,
        inputs: &[
            Input {
                id: "a-rate",
                label: "Session rate",
                unit: "sessions/s",
                title: "Sessions starting per second (each arrival of the scenario's process starts one)",
                ptr: "/workload/arrival/rate_rps",
                kind: PKind::Edit(Edit::Num),
            },
            Input {
                id: "a-sessions",
                label: "Sessions",
                unit: "",
                title: "Sessions the run starts",
                ptr: "/workload/requests",
                kind: PKind::Edit(Edit::Int),
            },
            Input {
                id: "a-replicas",
                label: "Replicas",
                unit: "",
                title: "Workers the router spreads turns over",
                ptr: "/cluster/replicas",
                kind: PKind::Edit(Edit::Int),
            },
        ],
    },
    PanelDef {
        kind: Kind::TtlSweep,
        inputs: &[
            Input {
                id: "t-rate",
                label: "Session rate",
                unit: "sessions/s",
                title: "Sessions starting per second",
                ptr: "/workload/arrival/rate_rps",
                kind: PKind::Edit(Edit::Num),
            },
            Input {
                id: "t-replicas",
                label: "Replicas",
                unit: "",
                title: "Workers",
                ptr: "/cluster/replicas",
                kind: PKind::Edit(Edit::Int),
            },
        ],
    },
    PanelDef {
        kind: Kind::TieredKv,
        inputs: &[
            Input {
                id: "k-rate",
                label: "Session rate",
                unit: "sessions/s",
                title: "Sessions starting per second",
                ptr: "/workload/arrival/rate_rps",
                kind: PKind::Edit(Edit::Num),
            },
            Input {
                id: "k-replicas",
                label: "Replicas",
                unit: "",
                title: "Workers",
                ptr: "/cluster/replicas",
                kind: PKind::Edit(Edit::Int),
            },
        ],
    },
    PanelDef {
        kind: Kind::AdaptiveTiering,
        inputs: &[
            Input {
                id: "v-rate",
                label: "Session rate",
                unit: "sessions/s",
                title: "Sessions starting per second",
                ptr: "/workload/arrival/rate_rps",
                kind: PKind::Edit(Edit::Num),
            },
            Input {
                id: "v-replicas",
                label: "Replicas",
                unit: "",
                title: "Workers",
                ptr: "/cluster/replicas",
                kind: PKind::Edit(Edit::Int),
            },
        ],
    },
    PanelDef {
        kind: Kind::AffinitySlack,
        inputs: &[
            Input {
                id: "f-rate",
                label: "Session rate",
                unit: "sessions/s",
                title: "Sessions starting per second",
                ptr: "/workload/arrival/rate_rps",
                kind: PKind::Edit(Edit::Num),
            },
            Input {
                id: "f-replicas",
                label: "Replicas",
                unit: "",
                title: "Workers",
                ptr: "/cluster/replicas",
                kind: PKind::Edit(Edit::Int),
            },
        ],
    },
    PanelDef {
        kind: Kind::ExecLearning,
        inputs: &[workflow_rate("x-rate"), replicas("x-replicas"), prefix_budget("x-budget")],
    },
    PanelDef {
        kind: Kind::PrefetchThreshold,
        inputs: &[workflow_rate("pt-rate"), replicas("pt-replicas"), prefix_budget("pt-budget")],
    },
    PanelDef {
        kind: Kind::TransitionDecay,
        inputs: &[workflow_rate("td-rate"), replicas("td-replicas"), prefix_budget("td-budget")],
    },
    PanelDef {
        kind: Kind::Forecast,
        inputs: &[workflow_rate("fc-rate"), replicas("fc-replicas"), prefix_budget("fc-budget")],
    },
    PanelDef {
        kind: Kind::ForecastHorizon,
        inputs: &[workflow_rate("fh-rate"), replicas("fh-replicas"), prefix_budget("fh-budget")],
    },
    PanelDef { kind: Kind::PrefixBudget, inputs: &[workflow_rate("pb-rate"), replicas("pb-replicas")] },
    PanelDef {
        kind: Kind::ResearchSummary,
        inputs: &[workflow_rate("rs-rate"), replicas("rs-replicas"), prefix_budget("rs-budget")],
    },
];

/// Workflows starting per second (a workflow study's first field).
const fn workflow_rate(id: &'static str) -> Input {
    Input {
        id,
        label: "Workflow rate",
        unit: "workflows/s",
        title: "Workflows starting per second",
        ptr: "/workload/arrival/rate_rps",
        kind: PKind::Edit(Edit::Num),
    }
}

const fn replicas(id: &'static str) -> Input {
    Input { id, label: "Replicas", unit: "", title: "Workers", ptr: "/cluster/replicas", kind: PKind::Edit(Edit::Int) }
}

const fn prefix_budget(id: &'static str) -> Input {
    Input {
        id,
        label: "Prefix budget",
        unit: "× all roles' prefixes",
        title: "The HBM a worker's role prefixes may hold, as a share of all roles' prefixes",
        ptr: "/workload/sessions/workflow/prefix_budget",
        kind: PKind::Edit(Edit::Num),
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

/// A field of a study's panel: a scenario field it edits (`ptr` a JSON pointer) or, with a `study:` prefix, one
/// of the study's options.
#[derive(Clone, PartialEq)]
pub(crate) struct Param {
    pub id: String,
    pub label: &'static str,
    pub unit: &'static str,
    pub title: &'static str,
    pub ptr: String,
    pub kind: PKind,
    /// What a number allows (the input's min and max).
    pub bound: Option<Bound>,
}

impl From<&Input> for Param {
    fn from(i: &Input) -> Param {
        let bound = inferscale::spec::bound_at(i.ptr);
        Param { id: i.id.into(), label: i.label, unit: i.unit, title: i.title, ptr: i.ptr.into(), kind: i.kind, bound }
    }
}

/// Option `o` of study `study` as a field: `study:NAME`, edited as the option's type says.
pub(crate) fn option_field(study: &str, o: &OptionDef) -> Param {
    Param {
        id: format!("o-{study}-{}", o.name.replace('_', "-")),
        label: o.text.label,
        unit: o.text.unit,
        title: o.text.help,
        ptr: format!("study:{}", o.name),
        kind: PKind::Edit(o.edit),
        bound: o.text.bound,
    }
}

/// The fields of study `kind`'s panel: the scenario fields it edits, then its options as the core describes
/// them (`repetitions` last, for a study that does not repeat by itself).
pub(crate) fn params(kind: Kind) -> Vec<Param> {
    let inputs = PANELS.iter().find(|p| p.kind == kind).map_or(&[][..], |p| p.inputs);
    let options = kind.options();
    inputs.iter().map(Param::from).chain(options.iter().map(|o| option_field(kind.name(), o))).collect()
}

/// The panel's fields as HTML: each labelled, with its unit; numbers limited by their bound; a fieldset whose
/// legend says whether they are inputs (this panel's scenario), options (in the link and the CLI), or both.
pub(crate) fn params_html(params: &[Param]) -> String {
    let html: String = params.iter().map(param_html).collect();
    let inputs = params.iter().any(|f| f.ptr.starts_with('/'));
    let options = params.iter().any(|f| f.ptr.starts_with("study:"));
    let legend = match (inputs, options) {
        (true, true) => {
            "Study inputs and options <span class=\"unit\">this panel's own (the Serving Lab's scenario is unchanged); options in the link, the CLI's --params</span>"
        }
        (true, false) => {
            "Study inputs <span class=\"unit\">this panel's own: the Serving Lab's scenario is unchanged</span>"
        }
        _ => "Study options <span class=\"unit\">in the link; the CLI's --params</span>",
    };
    format!("<fieldset><legend>{legend}</legend>{html}</fieldset>")
}

/// One field's label and control.
fn param_html(f: &Param) -> String {
    let (id, ptr, title) = (&f.id, &f.ptr, esc(f.title));
    // A number's limits: its bound's, else not below zero.
    let limits = |step: &str| {
        let (lo, hi) = f.bound.map_or((0.0, f64::INFINITY), |b| b.limits());
        let max = if hi.is_finite() { format!(" max=\"{hi}\"") } else { String::new() };
        format!("type=\"number\" step=\"{step}\" min=\"{lo}\"{max}")
    };
    let input = match f.kind {
        PKind::Select(opts) => {
            let opts: String = opts.iter().map(|(v, l)| format!("<option value=\"{v}\">{}</option>", esc(l))).collect();
            format!("<select id=\"{id}\" data-ptr=\"{ptr}\" title=\"{title}\">{opts}</select>")
        }
        PKind::Edit(Edit::Int) | PKind::Edit(Edit::OptInt) => {
            format!("<input id=\"{id}\" data-ptr=\"{ptr}\" {} title=\"{title}\">", limits("1"))
        }
        PKind::Edit(Edit::Num) | PKind::Edit(Edit::OptNum) => {
            format!("<input id=\"{id}\" data-ptr=\"{ptr}\" {} title=\"{title}\">", limits("any"))
        }
        PKind::Edit(Edit::Bool) => {
            format!("<input id=\"{id}\" data-ptr=\"{ptr}\" type=\"checkbox\" title=\"{title}\">")
        }
        PKind::Edit(Edit::Json) => format!(
            "<textarea id=\"{id}\" data-ptr=\"{ptr}\" rows=\"6\" spellcheck=\"false\" title=\"{title}\"></textarea>"
        ),
        PKind::Variant(var) => return variant_html(f, var),
    };
    let unit = if f.unit.is_empty() { String::new() } else { format!(" <span class=\"unit\">{}</span>", esc(f.unit)) };
    let wide = if f.kind == PKind::Edit(Edit::Json) { " class=\"wide\"" } else { "" };
    format!("<label{wide}>{}{unit}{input}</label>", esc(f.label))
}

/// A variant field: its kind's select, and an input for each number any kind takes (`variant.rs`).
fn variant_html(f: &Param, var: &crate::lab::variant::Variant) -> String {
    let options: String =
        var.choices.iter().map(|c| format!("<option value=\"{}\">{}</option>", c.value, esc(c.label))).collect();
    let mut html = format!(
        "<label>{}<select id=\"{}\" data-ptr=\"{}\" title=\"{}\">{options}</select></label>",
        esc(f.label),
        f.id,
        f.ptr,
        esc(f.title)
    );
    for n in var.numbers() {
        let id = format!("{}-{}", f.id, n.key);
        html.push_str(&format!(
            "<label id=\"{id}-label\">{} <span class=\"unit\">{}</span><input id=\"{id}\" data-ptr=\"{}/{}\" type=\"number\" step=\"any\" min=\"0\" title=\"{}\"></label>",
            esc(n.label),
            esc(n.unit),
            f.ptr,
            n.key,
            esc(n.label)
        ));
    }
    html
}

#[cfg(test)]
mod tests {
    use inferscale::study::option::Text;

    use super::*;

    #[test]
    fn every_study_is_a_panel_in_the_registry_order() {
        // A panel lists only the scenario fields it edits, once; its options are the core's.
        for k in Kind::ALL {
            assert!(PANELS.iter().filter(|p| p.kind == *k).count() <= 1, "{}", k.name());
        }
        assert!(PANELS.iter().all(|p| !p.inputs.is_empty() && p.inputs.iter().all(|i| i.ptr.starts_with('/'))));
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

    /// A study's option fields are the core's description of its options, each once, in its order — every
    /// option its options struct takes (but the P/D study's, which apply only when the scenario has no prefix
    /// block: its panel edits the scenario's prefix itself), and no other; and every field's id is unique on
    /// the page (the panels share one form).
    #[test]
    fn a_studys_option_fields_are_the_cores_description_of_its_options() {
        let mut ids = Vec::new();
        let mut checked = 0;
        for &k in Kind::ALL {
            let fields = params(k);
            let shown: Vec<String> =
                fields.iter().filter_map(|f| f.ptr.strip_prefix("study:")).map(str::to_string).collect();
            let described: Vec<String> = k.options().iter().map(|o| o.name.to_string()).collect();
            // A bound is checked on a number only: one on a flag or a JSON value would be ignored.
            for o in k.options().iter().filter(|o| o.text.bound.is_some()) {
                assert!(
                    matches!(o.edit, Edit::Int | Edit::Num | Edit::OptNum | Edit::OptInt),
                    "{}.{}",
                    k.name(),
                    o.name
                );
            }
            assert_eq!(shown, described, "{}", k.name());
            let mut names = k.option_names();
            if k.about().repeats_by.is_none() {
                names.push("repetitions".into());
            }
            let (mut a, mut b) = (shown.clone(), names.clone());
            a.sort();
            b.sort();
            if k != Kind::Pd {
                assert_eq!(a, b, "{}: the options described and the options taken", k.name());
            }
            assert!(shown.iter().all(|o| names.contains(o)), "{}", k.name());
            checked += shown.len();
            ids.extend(fields.into_iter().map(|f| f.id));
        }
        let n = ids.len();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), n, "a field id is used twice");
        assert!(checked >= 60, "{checked} option fields checked");
    }

    /// A study the page has never seen — here a fixture's options — becomes a panel from the core's
    /// description alone: a labelled field per option with its unit and help, the control its type asks for,
    /// a number's limits from its bound, under the options' legend. Nothing of the page names the study.
    #[test]
    fn a_new_studys_options_appear_in_its_panel_with_no_page_code() {
        let fixture = [
            OptionDef {
                name: "window_s",
                edit: Edit::Num,
                text: Text {
                    label: "Window",
                    unit: "s",
                    help: "How long each window lasts",
                    bound: Some(Bound::OpenLo(0.0, 3600.0)),
                },
            },
            OptionDef {
                name: "max_tries",
                edit: Edit::Int,
                text: Text {
                    label: "Most tries",
                    unit: "",
                    help: "Tries before giving up",
                    bound: Some(Bound::Int(1, 50)),
                },
            },
            OptionDef {
                name: "cap",
                edit: Edit::OptNum,
                text: Text { label: "Cap", unit: "req/s (empty: none)", help: "An optional cap", bound: None },
            },
            OptionDef {
                name: "strict",
                edit: Edit::Bool,
                text: Text { label: "Strict", unit: "", help: "Refuse ties", bound: None },
            },
            OptionDef {
                name: "grid",
                edit: Edit::Json,
                text: Text { label: "Grid", unit: "JSON list", help: "The points to try", bound: None },
            },
        ];
        let fields: Vec<Param> = fixture.iter().map(|o| option_field("new-study", o)).collect();
        let html = params_html(&fields);
        for (want, why) in [
            ("Study options", "the options' legend"),
            (
                "<label>Window <span class=\"unit\">s</span><input id=\"o-new-study-window-s\" data-ptr=\"study:window_s\" type=\"number\" step=\"any\" min=\"0\" max=\"3600\" title=\"How long each window lasts\"></label>",
                "a number with its bound",
            ),
            (
                "<input id=\"o-new-study-max-tries\" data-ptr=\"study:max_tries\" type=\"number\" step=\"1\" min=\"1\" max=\"50\"",
                "a whole number with its bound",
            ),
            (
                "<input id=\"o-new-study-cap\" data-ptr=\"study:cap\" type=\"number\" step=\"any\" min=\"0\" title",
                "an optional number, no upper limit",
            ),
            ("Cap <span class=\"unit\">req/s (empty: none)</span>", "its unit"),
            ("<input id=\"o-new-study-strict\" data-ptr=\"study:strict\" type=\"checkbox\"", "a flag"),
            (
                "<label class=\"wide\">Grid <span class=\"unit\">JSON list</span><textarea id=\"o-new-study-grid\" data-ptr=\"study:grid\"",
                "a JSON value",
            ),
        ] {
            assert!(html.contains(want), "{why}: {want} not in {html}");
        }
        assert_eq!(html.matches("<label").count(), fixture.len());
    }

    /// Every study that does not repeat by itself has the Repetitions field, last; one that does keeps its own
    /// field for its own option (research-summary: Seeds), and no second one.
    #[test]
    fn every_study_has_one_repetitions_field_or_its_own() {
        for &k in Kind::ALL {
            let fields = params(k);
            let reps: Vec<&Param> = fields.iter().filter(|f| f.label == "Repetitions").collect();
            match k.about().repeats_by {
                None => assert_eq!(fields.last().map(|f| f.ptr.as_str()), Some("study:repetitions"), "{}", k.name()),
                Some(own) => {
                    assert!(fields.iter().any(|f| f.ptr == format!("study:{own}")), "{}: no field for {own}", k.name());
                }
            }
            assert!(reps.len() <= 1, "{}: {} Repetitions fields", k.name(), reps.len());
        }
        // Its words carry the core's bound and seed stride.
        let reps = inferscale::study::option::REPETITIONS;
        let most = inferscale::study::repeated::MOST;
        assert!(reps.text.unit.contains(&format!("1 … {most}")), "{}", reps.text.unit);
        assert_eq!(reps.text.bound, Some(Bound::Int(1, most)));
        assert_eq!(inferscale::study::repeated::SEED_STRIDE, 1_000_000, "the title says seed + k × 1,000,000");
        assert!(reps.text.help.contains("seed + k × 1,000,000"));
    }

    /// A scenario field names a field the scenario format has: written into the default scenario, the
    /// scenario parser never calls it unknown.
    #[test]
    fn scenario_fields_are_fields_of_the_scenario() {
        let base: Value = serde_json::from_str(include_str!("../../../scenarios/default.json")).unwrap();
        let mut checked = 0;
        for f in PANELS.iter().flat_map(|p| p.inputs) {
            let mut v = base.clone();
            let value = match f.kind {
                PKind::Select(opts) => json!(opts.last().unwrap().0),
                PKind::Edit(Edit::Int) => json!(2),
                // Every choice of a variant, with its numbers (variant.rs checks each against the core).
                PKind::Variant(var) => {
                    var.choose(&mut v, f.ptr, var.choices.last().unwrap().value);
                    v.pointer(f.ptr).cloned().unwrap_or(Value::Null)
                }
                _ => json!(0.5),
            };
            crate::lab::details::set(&mut v, f.ptr, value);
            if let Err(e) = inferscale::scenario::parse(&v.to_string()) {
                assert!(!e.to_string().contains("unknown field"), "{}: {e}", f.ptr);
            }
            checked += 1;
        }
        assert!(checked >= 13, "{checked} scenario fields checked");
    }

    #[test]
    fn default_options_are_accepted_by_the_study() {
        let spec = inferscale::scenario::parse(include_str!("../../../scenarios/default.json")).unwrap();
        let agents = inferscale::scenario::parse(include_str!("../../../scenarios/agent-sessions.json")).unwrap();
        let workflows = inferscale::scenario::parse(include_str!("../../../scenarios/agent-workflows.json")).unwrap();
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
        let html = include_str!("../../../index.html");
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
        let routers: Vec<&str> = crate::lab::variant::ROUTER.choices.iter().map(|c| c.value).collect();
        let mut lab = options("c-router");
        lab.sort();
        let mut core = routers.iter().map(|r| r.to_string()).collect::<Vec<_>>();
        core.sort();
        assert_eq!(lab, core);
    }
}
