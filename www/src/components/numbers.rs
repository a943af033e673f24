//! What a typed number becomes in the scenario, and how a scenario number is shown in a field. Pure, so it is
//! tested natively; the app calls it on every keystroke.
//!
//! The rule the page keeps: a field is never rewritten while the user types in it (reformatting a focused
//! `<input>` moves the caret, which turned typed `20` into `2.0`). The scenario takes the number the text
//! means, written as the user wrote it where JSON can (`20` stays an integer, `12.5` a decimal); text that is
//! not a number yet (`1e`, `-`, empty) leaves the scenario as it was and is reported at the field.

use serde_json::{Value, json};

/// What a number field's text means.
#[derive(Debug, PartialEq)]
pub enum Typed {
    /// A number: the JSON to write.
    Number(Value),
    /// Empty text in a field where empty means "none" (an optional objective): remove the key.
    Cleared,
    /// Not (yet) an acceptable value: the scenario keeps its old value and the field shows this message.
    Invalid(String),
}

/// `raw` typed into a field labelled `label` (with its unit), taking whole numbers only when `int`, and
/// "empty means none" when `optional`. `bad_input` is the browser's flag for text that is not a number at
/// all (its `value` is then empty).
pub fn typed(raw: &str, label: &str, int: bool, optional: bool, bad_input: bool) -> Typed {
    let raw = raw.trim();
    let what = if int { "a whole number" } else { "a number" };
    if bad_input {
        return Typed::Invalid(format!(
            "{label}: not a number yet; type {what} (digits, a decimal point, an exponent such as 1e3)"
        ));
    }
    if raw.is_empty() {
        return if optional { Typed::Cleared } else { Typed::Invalid(format!("{label}: enter {what}")) };
    }
    if int && let Ok(u) = raw.parse::<u64>() {
        return Typed::Number(json!(u)); // a seed may need all 64 bits
    }
    let Ok(x) = raw.parse::<f64>() else { return Typed::Invalid(format!("{label}: \"{raw}\" is not {what}")) };
    if !x.is_finite() {
        return Typed::Invalid(format!("{label}: {raw} is too large"));
    }
    let plain_integer = !raw.contains(['.', 'e', 'E']);
    if int {
        if x.fract() != 0.0 || x.abs() >= 9.007_199_254_740_992e15 {
            return Typed::Invalid(format!("{label}: enter a whole number (got {raw})"));
        }
        return Typed::Number(json!(x as i64));
    }
    match (plain_integer, raw.parse::<i64>()) {
        (true, Ok(i)) => Typed::Number(json!(i)),
        _ => Typed::Number(json!(x)),
    }
}

/// A scenario value as a field shows it: whole numbers without a trailing `.0`, others in the shortest form
/// that reads back to the same number.
pub fn shown(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (_, Some(u), _) => u.to_string(),
            (_, _, Some(f)) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

/// A share as a percent with `decimals` places; a value that rounds to zero reads "0 %", never "-0 %" (an
/// axis through zero).
pub fn pct_label(x: f64, decimals: usize) -> String {
    let scale = 10f64.powi(decimals as i32);
    let v = (x * 100.0 * scale).round() / scale + 0.0;
    format!("{v:.decimals$} %")
}

/// A time tick on an axis that runs up to `axis_max_s`: every tick of one axis in one unit (s when the axis
/// reaches 10 s, else ms), to three significant digits — never "3000 ms" beside "10.0 s".
pub fn secs_on_axis(x: f64, axis_max_s: f64) -> String {
    let sig3 = |v: f64| {
        if v == 0.0 || !v.is_finite() {
            return "0".to_string();
        }
        let p = 10f64.powi(2 - v.abs().log10().floor() as i32);
        format!("{}", (v * p).round() / p)
    };
    if axis_max_s >= 10.0 { format!("{} s", sig3(x)) } else { format!("{} ms", sig3(x * 1e3)) }
}

/// A table cell's text with its spaces unbreakable except where a reader would break it: after a comma, a
/// semicolon or a colon, before "(" and around "–". A figure keeps its number and unit together, and a long cell
/// (a figure's every seed) wraps between its values instead of running off the table.
pub fn cell_breaks(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let breakable = |i: usize| {
        let before = i.checked_sub(1).map(|j| chars[j]);
        let after = chars.get(i + 1).copied();
        matches!(before, Some(',' | ';' | ':' | '–')) || matches!(after, Some('(' | '–'))
    };
    (0..chars.len()).map(|i| if chars[i] == ' ' && !breakable(i) { '\u{a0}' } else { chars[i] }).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_cell_breaks_between_values_never_inside_one() {
        let nb = '\u{a0}';
        assert_eq!(
            super::cell_breaks("75.0 ms (95 % CI 73.3 ms – 76.7 ms)"),
            format!("75.0{nb}ms (95{nb}%{nb}CI{nb}73.3{nb}ms – 76.7{nb}ms)")
        );
        assert_eq!(
            super::cell_breaks("2972 ms (median of 5 seeds that split: 2972 ms, 46.7 s)"),
            format!("2972{nb}ms (median{nb}of{nb}5{nb}seeds{nb}that{nb}split: 2972{nb}ms, 46.7{nb}s)")
        );
    }

    #[test]
    fn an_axis_has_one_time_unit() {
        let ticks = |max: f64| [0.5, 1.0, 3.0, 10.0].map(|x| super::secs_on_axis(x, max));
        assert_eq!(ticks(30.0), ["0.5 s", "1 s", "3 s", "10 s"]);
        assert_eq!(ticks(5.0), ["500 ms", "1000 ms", "3000 ms", "10000 ms"]);
        assert_eq!(super::secs_on_axis(0.0123456, 1.0), "12.3 ms");
        assert_eq!(super::secs_on_axis(0.002, 20.0), "0.002 s");
    }

    #[test]
    fn a_percent_that_rounds_to_zero_is_never_negative() {
        assert_eq!(super::pct_label(-0.0001, 0), "0 %");
        assert_eq!(super::pct_label(-0.0, 1), "0.0 %");
        assert_eq!(super::pct_label(-0.25, 0), "-25 %");
        assert_eq!(super::pct_label(0.9876, 1), "98.8 %");
    }

    use super::*;

    fn num(raw: &str) -> Value {
        match typed(raw, "Rate (req/s)", false, false, false) {
            Typed::Number(v) => v,
            other => panic!("{raw}: {other:?}"),
        }
    }

    #[test]
    fn what_is_typed_is_what_the_scenario_gets() {
        for (raw, want) in [
            ("20", 20.0),
            ("0.9", 0.9),
            ("12.5", 12.5),
            ("800", 800.0),
            ("1e3", 1000.0),
            ("2.5e-1", 0.25),
            (" 7 ", 7.0),
            ("-3", -3.0),
        ] {
            assert_eq!(num(raw).as_f64(), Some(want), "{raw}");
        }
        assert_eq!(num("20").to_string(), "20", "an integer stays an integer in the JSON");
        assert_eq!(num("12.5").to_string(), "12.5");
        assert_eq!(num("0.1").to_string(), "0.1");
    }

    #[test]
    fn shown_reads_back_to_the_same_number() {
        for raw in ["20", "0.9", "12.5", "1000", "0.1", "1e-7", "123456.789"] {
            let v = num(raw);
            let text = shown(&v);
            assert_eq!(text.parse::<f64>().unwrap(), v.as_f64().unwrap(), "{raw} → {text}");
        }
        assert_eq!(shown(&json!(20.0)), "20");
        assert_eq!(shown(&json!(2.0)), "2");
        assert_eq!(shown(&json!(0.09)), "0.09");
    }

    #[test]
    fn incomplete_or_empty_text_is_reported_not_written() {
        assert!(
            matches!(typed("", "Rate (req/s)", false, false, false), Typed::Invalid(m) if m == "Rate (req/s): enter a number")
        );
        assert_eq!(typed("", "TPOT SLO (ms)", false, true, false), Typed::Cleared);
        assert!(
            matches!(typed("", "Rate (req/s)", false, false, true), Typed::Invalid(m) if m.contains("not a number yet"))
        );
        assert!(
            matches!(typed("2.5", "Replicas", true, false, false), Typed::Invalid(m) if m.contains("whole number"))
        );
        assert_eq!(typed("1e3", "Requests", true, false, false), Typed::Number(json!(1000)));
        assert_eq!(typed("18446744073709551615", "Seed", true, false, false), Typed::Number(json!(u64::MAX)));
        assert!(
            matches!(typed("1e400", "Rate (req/s)", false, false, false), Typed::Invalid(m) if m.contains("too large"))
        );
    }
}
