//! A field that picks among the kinds of a block (`{"kind": "ttl", "ttl_s": 10}`) with the numbers each kind
//! takes — or, untagged, a block that is there with its numbers or not (a host tier). One select and a
//! number input per number; an input shows only while its kind is chosen. Plain JSON editing, so its tests
//! run natively.

use serde_json::{Map, Value, json};

#[derive(PartialEq)]
pub(crate) struct Variant {
    /// The tag's key (`kind`); None: the first choice is "no block" and the others write the block untagged.
    pub tag: Option<&'static str>,
    /// The choice an absent block is (what the engine assumes).
    pub absent: &'static str,
    pub choices: &'static [Choice],
}

#[derive(PartialEq)]
pub(crate) struct Choice {
    pub value: &'static str,
    pub label: &'static str,
    pub numbers: &'static [Number],
}

/// A number a kind takes: its key, label, unit and the value written when the kind is chosen (None: left
/// out, the kind's own default).
#[derive(PartialEq)]
pub(crate) struct Number {
    pub key: &'static str,
    pub label: &'static str,
    pub unit: &'static str,
    pub default: Option<f64>,
}

impl Variant {
    /// Every number of every choice, once, in choice order (one input each).
    pub fn numbers(&self) -> Vec<&'static Number> {
        let mut out: Vec<&'static Number> = Vec::new();
        for n in self.choices.iter().flat_map(|c| c.numbers) {
            if !out.iter().any(|o| o.key == n.key) {
                out.push(n);
            }
        }
        out
    }

    /// The choice the block at `ptr` of `v` is.
    pub fn chosen(&self, v: &Value, ptr: &str) -> &'static str {
        let block = v.pointer(ptr).filter(|b| !b.is_null());
        let value = match (block, self.tag) {
            (None, _) => return self.absent,
            (Some(b), Some(tag)) => b.get(tag).and_then(Value::as_str).unwrap_or(self.absent),
            (Some(_), None) => return self.choices.get(1).map_or(self.absent, |c| c.value),
        };
        self.choices.iter().find(|c| c.value == value).map_or(self.absent, |c| c.value)
    }

    /// Whether the chosen kind takes number `key`.
    pub fn takes(&self, v: &Value, ptr: &str, key: &str) -> bool {
        let chosen = self.chosen(v, ptr);
        self.choices.iter().any(|c| c.value == chosen && c.numbers.iter().any(|n| n.key == key))
    }

    /// Choose `value`: the block becomes that kind, keeping the numbers it takes that are set and writing
    /// the defaults of the rest; the untagged "no block" choice removes it.
    pub fn choose(&self, v: &mut Value, ptr: &str, value: &str) {
        let Some(c) = self.choices.iter().find(|c| c.value == value) else { return };
        if self.tag.is_none() && c.value == self.choices[0].value {
            inferscale::study::remove_pointer(v, ptr);
            return;
        }
        let old = v.pointer(ptr).and_then(Value::as_object).cloned().unwrap_or_default();
        let mut block = Map::new();
        if let Some(tag) = self.tag {
            block.insert(tag.into(), json!(value));
        }
        for n in c.numbers {
            match (old.get(n.key), n.default) {
                (Some(x), _) if !x.is_null() => {
                    block.insert(n.key.into(), x.clone());
                }
                (_, Some(d)) => {
                    block.insert(n.key.into(), number(d));
                }
                _ => {}
            }
        }
        inferscale::study::set_pointer(v, ptr, Value::Object(block));
    }

    /// Number `key` typed as `raw`: written as a number (the text itself when it is not one, so the core
    /// names the field); empty leaves it out. A number the chosen kind does not take is not written.
    pub fn set_number(&self, v: &mut Value, ptr: &str, key: &str, raw: &str) {
        if !self.takes(v, ptr, key) {
            return;
        }
        let at = format!("{ptr}/{key}");
        if v.pointer(ptr).is_none_or(Value::is_null) {
            self.choose(v, ptr, self.chosen(v, ptr));
        }
        match raw.trim() {
            "" => inferscale::study::remove_pointer(v, &at),
            t => inferscale::study::set_pointer(v, &at, t.parse::<f64>().map(number).unwrap_or(json!(t))),
        }
    }
}

/// A number as the scenario writes it: a whole one as an integer (`10`, not `10.0`).
fn number(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 1e15 { json!(x as i64) } else { json!(x) }
}

/// A number field's text for `x`: JSON's shortest form (`1e-300`, not 300 zeros), a whole one without `.0`.
pub(crate) fn shown(x: &Value) -> String {
    match x {
        Value::Null => String::new(),
        Value::String(t) => t.clone(),
        x => {
            let t = x.to_string();
            t.strip_suffix(".0").map(str::to_string).unwrap_or(t)
        }
    }
}

pub(crate) const RETENTION: Variant = Variant {
    tag: Some("kind"),
    absent: "stateless",
    choices: &[
        Choice { value: "stateless", label: "stateless", numbers: &[] },
        Choice { value: "retain", label: "retain in HBM", numbers: &[] },
        Choice {
            value: "ttl",
            label: "TTL in HBM",
            numbers: &[Number { key: "ttl_s", label: "TTL", unit: "s; empty: no expiry", default: Some(10.0) }],
        },
        Choice { value: "host_offload", label: "host offload", numbers: &[] },
        Choice { value: "gap_oracle", label: "gap oracle (bound on gap cost)", numbers: &[] },
        Choice {
            value: "adaptive",
            label: "adaptive, all tools",
            numbers: &[Number { key: "alpha", label: "α", unit: "EWMA weight, 0 < α ≤ 1", default: Some(0.2) }],
        },
        Choice {
            value: "adaptive_per_tool",
            label: "adaptive per tool",
            numbers: &[Number { key: "alpha", label: "α", unit: "EWMA weight, 0 < α ≤ 1", default: Some(0.2) }],
        },
    ],
};

pub(crate) const ROUTER: Variant = Variant {
    tag: Some("kind"),
    absent: "round_robin",
    choices: &[
        Choice { value: "round_robin", label: "round robin", numbers: &[] },
        Choice { value: "least_outstanding", label: "least outstanding", numbers: &[] },
        Choice { value: "least_kv", label: "least KV", numbers: &[] },
        Choice { value: "power_of_two", label: "power of two choices", numbers: &[] },
        Choice { value: "random", label: "random", numbers: &[] },
        Choice { value: "sticky", label: "sticky", numbers: &[] },
        Choice {
            value: "bounded_affinity",
            label: "bounded affinity",
            numbers: &[Number { key: "slack_ms", label: "Affinity slack", unit: "ms", default: Some(50.0) }],
        },
        Choice { value: "central_queue", label: "central queue", numbers: &[] },
    ],
};

pub(crate) const HOST_TIER: Variant = Variant {
    tag: None,
    absent: "none",
    choices: &[
        Choice { value: "none", label: "none", numbers: &[] },
        Choice {
            value: "host",
            label: "host memory",
            numbers: &[
                Number { key: "capacity_gb", label: "Host capacity", unit: "GB per worker", default: Some(256.0) },
                Number { key: "bandwidth_gbps", label: "Host link", unit: "GB/s, host → HBM", default: Some(25.0) },
                Number { key: "latency_ms", label: "Link latency", unit: "ms", default: Some(0.05) },
            ],
        },
    ],
};

/// For a field of the sessions' own (`/workload/sessions/turns/mean`, `/workload/sessions/tools`) when the
/// scenario has session classes: the classes that take it (those that do not set their own). None: no
/// classes, or not such a field.
pub(crate) fn inherited_by(v: &Value, ptr: &str) -> Option<Vec<String>> {
    let key = ptr.strip_prefix("/workload/sessions/")?.split('/').next()?;
    if !["turns", "first_tokens", "new_tokens", "output_tokens", "tools"].contains(&key) {
        return None;
    }
    let classes = v.pointer("/workload/sessions/classes")?.as_array().filter(|c| !c.is_empty())?;
    Some(
        classes
            .iter()
            .filter(|c| c.get(key).is_none())
            .map(|c| c.get("name").and_then(Value::as_str).unwrap_or("?").to_string())
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sessions_field_is_used_by_the_classes_that_do_not_set_their_own() {
        let mix: Value = serde_json::from_str(include_str!("../../../scenarios/agent-mix.json")).unwrap();
        assert_eq!(inherited_by(&mix, "/workload/sessions/turns/mean"), Some(vec![]), "every class sets its turns");
        assert_eq!(inherited_by(&mix, "/workload/sessions/first_tokens/mean"), Some(vec!["quick_fix".to_string()]));
        assert_eq!(
            inherited_by(&mix, "/workload/sessions/tools"),
            Some(vec!["quick_fix".to_string(), "feature".to_string()])
        );
        assert_eq!(inherited_by(&mix, "/workload/sessions/retention"), None, "retention is the sessions' alone");
        let plain: Value = serde_json::from_str(include_str!("../../../scenarios/agent-sessions.json")).unwrap();
        assert_eq!(inherited_by(&plain, "/workload/sessions/turns/mean"), None);
    }

    #[test]
    fn choosing_a_kind_keeps_what_it_takes_and_drops_the_rest() {
        let mut v = json!({"workload": {"sessions": {"retention": {"kind": "ttl", "ttl_s": 3}}}});
        let p = "/workload/sessions/retention";
        assert_eq!(RETENTION.chosen(&v, p), "ttl");
        assert!(RETENTION.takes(&v, p, "ttl_s"));
        RETENTION.choose(&mut v, p, "retain");
        assert_eq!(v.pointer(p).unwrap(), &json!({"kind": "retain"}), "ttl_s is not a field of retain");
        assert!(!RETENTION.takes(&v, p, "ttl_s"));
        RETENTION.choose(&mut v, p, "ttl");
        assert_eq!(v.pointer(p).unwrap(), &json!({"kind": "ttl", "ttl_s": 10}), "the default TTL");
        RETENTION.set_number(&mut v, p, "ttl_s", "1e-3");
        assert_eq!(v.pointer(p).unwrap(), &json!({"kind": "ttl", "ttl_s": 0.001}));
        RETENTION.set_number(&mut v, p, "ttl_s", "");
        assert_eq!(v.pointer(p).unwrap(), &json!({"kind": "ttl"}), "empty: no expiry");
        RETENTION.set_number(&mut v, p, "ttl_s", "-");
        assert_eq!(
            v.pointer(p).unwrap(),
            &json!({"kind": "ttl", "ttl_s": "-"}),
            "the text, for the core to refuse at its field"
        );
        RETENTION.choose(&mut v, p, "ttl");
        assert_eq!(v.pointer(p).unwrap(), &json!({"kind": "ttl", "ttl_s": "-"}), "a kept value is kept as typed");
        let none = json!({});
        assert_eq!(
            (
                RETENTION.chosen(&none, p),
                ROUTER.chosen(&none, "/cluster/router"),
                HOST_TIER.chosen(&none, "/engine/host_kv")
            ),
            ("stateless", "round_robin", "none")
        );
    }

    #[test]
    fn an_untagged_block_is_there_with_its_numbers_or_not() {
        let mut v = json!({"engine": {}});
        let p = "/engine/host_kv";
        HOST_TIER.choose(&mut v, p, "host");
        assert_eq!(v.pointer(p).unwrap(), &json!({"capacity_gb": 256, "bandwidth_gbps": 25, "latency_ms": 0.05}));
        assert_eq!(
            [shown(&json!(1e-300)), shown(&json!(10.0)), shown(&json!(256)), shown(&json!(0.05))],
            ["1e-300", "10", "256", "0.05"]
        );
        assert_eq!(HOST_TIER.chosen(&v, p), "host");
        HOST_TIER.set_number(&mut v, p, "bandwidth_gbps", "100");
        HOST_TIER.choose(&mut v, p, "none");
        assert_eq!(v, json!({"engine": {}}));
        // A number the chosen kind does not take is not written (its input is hidden then).
        let mut w = json!({"engine": {}});
        ROUTER.set_number(&mut w, "/cluster/router", "slack_ms", "5");
        HOST_TIER.set_number(&mut w, p, "capacity_gb", "5");
        assert_eq!(w, json!({"engine": {}}));
        assert_eq!(
            HOST_TIER.numbers().iter().map(|n| n.key).collect::<Vec<_>>(),
            ["capacity_gb", "bandwidth_gbps", "latency_ms"]
        );
    }

    /// Each choice is a kind the core accepts, with its numbers' defaults.
    #[test]
    fn every_choice_is_accepted_by_the_core() {
        let base: Value = serde_json::from_str(include_str!("../../../scenarios/agent-sessions.json")).unwrap();
        for (var, ptr) in [
            (&RETENTION, "/workload/sessions/retention"),
            (&ROUTER, "/cluster/router"),
            (&HOST_TIER, "/engine/host_kv"),
        ] {
            for c in var.choices {
                let mut v = base.clone();
                var.choose(&mut v, ptr, c.value);
                let spec = inferscale::scenario::parse(&v.to_string());
                assert!(spec.is_ok(), "{ptr} = {}: {:?}", c.value, spec.err());
                assert_eq!(var.chosen(&v, ptr), c.value);
            }
        }
    }
}
