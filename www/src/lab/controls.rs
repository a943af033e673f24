//! The Serving Lab's controls: the scenario field each edits (a JSON pointer), its kind and its label as
//! errors name it; their limits come from the core's declarations (`inferscale::scenario::bound_at`). Pure.

use inferscale::scenario::bound_at;

#[derive(Clone, Copy, PartialEq)]
pub enum Kind {
    Num,
    /// A number where empty means "none" (an objective): clearing the field removes the key.
    OptNum,
    Int,
    Bool,
    Text,
    /// The value replaces the whole object at the pointer: `{"kind": value}`.
    Tagged,
}

/// Controls, the scenario fields they edit (JSON pointers), and their labels as errors name them.
pub const CONTROLS: &[(&str, &str, Kind, &str)] = &[
    ("c-seed", "/seed", Kind::Int, "Seed"),
    ("c-arrival", "/workload/arrival/kind", Kind::Text, "Arrivals"),
    ("c-rate", "/workload/arrival/rate_rps", Kind::Num, "Rate (req/s)"),
    ("c-cv", "/workload/arrival/cv", Kind::Num, "Gap CV"),
    ("c-requests", "/workload/requests", Kind::Int, "Requests"),
    ("c-model", "/model/preset", Kind::Text, "Model"),
    ("c-device", "/hardware/device", Kind::Text, "Device"),
    ("c-tp", "/hardware/tp", Kind::Int, "TP (GPUs/replica)"),
    ("c-replicas", "/cluster/replicas", Kind::Int, "Replicas"),
    ("c-seqs", "/engine/max_num_seqs", Kind::Int, "Max batch (seqs)"),
    ("c-budget", "/engine/max_num_batched_tokens", Kind::Int, "Token budget (tokens/step)"),
    ("c-chunked", "/engine/chunked_prefill", Kind::Bool, "Chunked prefill"),
    ("c-chunk", "/engine/prefill_chunk_tokens", Kind::Int, "Chunk (tokens)"),
    ("c-block", "/engine/block_size_tokens", Kind::Int, "KV block (tokens)"),
    ("c-mem", "/engine/gpu_memory_utilization", Kind::Num, "Memory fraction"),
    ("c-oversub", "/engine/kv_oversubscription", Kind::Num, "Over-subscription (× KV)"),
    ("c-formation", "/engine/batch_formation", Kind::Text, "Batch formation"),
    ("c-frontend", "/engine/frontend/per_request_ms", Kind::OptNum, "Front end (ms/request)"),
    ("c-frontend-token", "/engine/frontend/per_prompt_token_us", Kind::OptNum, "Front end (µs/prompt token)"),
    ("c-cpu-step", "/engine/step_cpu/per_step_us", Kind::OptNum, "Host work (µs/step)"),
    ("c-cpu-seq", "/engine/step_cpu/per_seq_us", Kind::OptNum, "Host work (µs/seq)"),
    ("c-cpu-overlap", "/engine/step_cpu/overlapped", Kind::Bool, "Host work overlapped"),
    ("c-prompt", "/workload/classes/0/prompt_tokens", Kind::Num, "Prompt length (tokens)"),
    ("c-output", "/workload/classes/0/output_tokens", Kind::Num, "Output length (tokens)"),
    ("c-ttft", "/workload/classes/0/slo/ttft_ms", Kind::OptNum, "TTFT SLO (ms)"),
    ("c-tpot", "/workload/classes/0/slo/tpot_ms", Kind::OptNum, "TPOT SLO (ms)"),
    ("c-order", "/estimator/order", Kind::Tagged, "Order estimate"),
    ("c-reserve", "/estimator/reserve", Kind::Tagged, "Reserve estimate"),
    ("c-admission", "/admission", Kind::Tagged, "Admission"),
    ("c-sched", "/scheduler", Kind::Tagged, "Scheduler"),
    ("c-router", "/cluster/router", Kind::Tagged, "Router"),
];

/// Slider ↔ number pairs.
pub const PAIRS: &[(&str, &str)] = &[("c-rate-range", "c-rate"), ("c-seqs-range", "c-seqs")];

/// The `min` and `max` a control's number input takes: its field's declared bound, none when it declares none.
pub fn limits(pointer: &str) -> Option<(f64, f64)> {
    bound_at(pointer).map(|b| b.limits())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An attribute of the input with `id` in index.html, as written.
    fn attr(html: &str, id: &str, name: &str) -> Option<f64> {
        let start = html.find(&format!("id=\"{id}\""))?;
        let tag = &html[html[..start].rfind('<')?..start + html[start..].find('>')?];
        let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
        tag[at..at + tag[at..].find('"')?].parse().ok()
    }

    #[test]
    fn the_page_offers_every_arrival_kind_and_calibration_knob_the_core_lists() {
        let html = include_str!("../../../index.html");
        let c = inferscale::catalog::catalog();
        let select = &html[html.find("<select id=\"c-arrival\"").unwrap()..];
        let select = &select[..select.find("</select>").unwrap()];
        for k in &c.arrival_kinds {
            assert!(select.contains(&format!("<option value=\"{}\"", k.kind)), "arrival kind {} has no option", k.kind);
        }
        assert_eq!(select.matches("<option").count(), c.arrival_kinds.len(), "an option the core does not list");
        for knob in &c.calibration_knobs {
            assert!(html.contains(&format!("id=\"cal-fit-{knob}\"")), "calibration knob {knob} has no checkbox");
        }
        assert_eq!(
            html.matches("id=\"cal-fit-").count(),
            c.calibration_knobs.len(),
            "a checkbox the core does not list"
        );
    }

    #[test]
    fn controls_take_their_limits_from_the_core_and_sliders_stay_within_them() {
        let html = include_str!("../../../index.html");
        let mut bounded = 0;
        for (id, ptr, _, _) in CONTROLS {
            let Some((lo, hi)) = limits(ptr) else { continue };
            bounded += 1;
            for name in ["min", "max"] {
                assert_eq!(attr(html, id, name), None, "#{id}'s {name} is the core's ({lo} … {hi}), set at start");
            }
            for (range, _) in PAIRS.iter().filter(|(_, n)| n == id) {
                let (a, b) = (attr(html, range, "min").unwrap(), attr(html, range, "max").unwrap());
                assert!(lo <= a && b <= hi, "#{range} reaches {a} … {b}, past {ptr}'s {lo} … {hi}");
            }
        }
        assert!(bounded >= 8, "the engine's, hardware's and cluster's controls declare bounds ({bounded})");
        assert_eq!(limits("/engine/max_num_seqs"), Some((1.0, 65_536.0)));
    }
}
