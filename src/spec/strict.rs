//! JSON read strictly: a key given twice in one object is an error, where serde_json's `Value` keeps the last
//! one silently (a session trace line `{"turns": […], "turns": […]}` replayed only the second list).

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Parse `text` as one JSON value, refusing a duplicate key in any object ("duplicate key `turns`").
pub fn strict_json(text: &str) -> Result<Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let v = Strict::deserialize(&mut de)?.0;
    de.end()?;
    Ok(v)
}

/// What a JSON value is, in a user's words ("a list", "text", …), for messages that refuse it.
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, x: i64) -> Result<Value, E> {
        Ok(Value::Number(x.into()))
    }
    fn visit_u64<E>(self, x: u64) -> Result<Value, E> {
        Ok(Value::Number(x.into()))
    }
    fn visit_f64<E>(self, x: f64) -> Result<Value, E> {
        Ok(Number::from_f64(x).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_string()))
    }
    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(Strict(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(de::Error::custom(format!("duplicate key `{key}`")));
            }
            let Strict(v) = map.next_value()?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

/// The names a serde type lists when it refuses `probe` — a struct's fields for an unknown one, an enum's
/// variants for an unknown kind — so a list of them cannot drift from the type.
pub fn names_in_refusal<T: serde::de::DeserializeOwned>(probe: serde_json::Value) -> Vec<String> {
    let Err(e) = serde_json::from_value::<T>(probe) else { return Vec::new() };
    let text = e.to_string();
    // "unknown field `…`, expected `a`", "… `a` or `b`", "… one of `a`, `b`, `c`": the quoted names.
    let list = text.split_once("expected").map_or("", |x| x.1);
    list.split('`').skip(1).step_by(2).map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::strict_json;

    #[test]
    fn a_key_given_twice_is_refused_at_any_depth_and_the_rest_reads_as_serde_json_does() {
        for ok in ["{\"a\": [1, -2, 2.5, 1e300, true, null, \"x\"], \"b\": {\"c\": {}}}", "[]", "7", "\"s\""] {
            assert_eq!(strict_json(ok).unwrap(), serde_json::from_str::<serde_json::Value>(ok).unwrap(), "{ok}");
        }
        for bad in ["{\"a\": 1, \"a\": 2}", "{\"t\": [{\"x\": 1, \"y\": 2, \"x\": 3}]}"] {
            let e = strict_json(bad).unwrap_err().to_string();
            assert!(e.starts_with("duplicate key `"), "{bad}: {e}");
        }
        assert!(strict_json("{} {}").is_err(), "one value");
    }
}
