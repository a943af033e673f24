//! Each scenario field's bound, written once beside its struct (`bounds!`), checked by validation with an
//! error path built from the field's name, and read by the docs' test and the lab's controls.

use super::Errors;

/// What a number field allows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bound {
    /// A whole number in lo ..= hi.
    Int(u64, u64),
    /// A finite number in [lo, hi].
    Range(f64, f64),
    /// A finite number in (lo, hi].
    OpenLo(f64, f64),
    /// A finite number in [lo, hi] where the bounds are physical: the message says why.
    Within(f64, f64, &'static str),
}

/// A field of a scenario block and its bound.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Field {
    pub name: &'static str,
    pub bound: Bound,
}

/// A block of the scenario whose fields declare their bounds (with `bounds!`).
pub trait Declared {
    /// Its bounded fields, in declaration order.
    const FIELDS: &'static [Field];
}

/// Validation's side of `Declared`.
/// A tagged enum whose variants' number fields are bounded (`variant_bounds!`): each variant's Rust name
/// (its `kind` is [`snake`] of it) with its fields, for the docs test and the lab.
pub trait Variants {
    const VARIANTS: &'static [(&'static str, &'static [Field])];
}

pub(crate) trait Checked {
    /// Checks every bounded field that is present, pushing errors at `at.name`; true when all hold.
    fn check_fields(&self, at: &str, e: &mut Errors) -> bool;
}

/// A field's value as a bound reads it: absent (an unset option) passes.
pub trait AsNumber {
    fn as_number(&self) -> Option<f64>;
    /// Whole numbers, exactly (a u64 past 2^53 is not a float).
    fn as_whole(&self) -> Option<u64> {
        None
    }
}

impl AsNumber for f64 {
    fn as_number(&self) -> Option<f64> {
        Some(*self)
    }
}

impl AsNumber for u32 {
    fn as_number(&self) -> Option<f64> {
        Some(*self as f64)
    }
    fn as_whole(&self) -> Option<u64> {
        Some(*self as u64)
    }
}

impl AsNumber for u64 {
    fn as_number(&self) -> Option<f64> {
        Some(*self as f64)
    }
    fn as_whole(&self) -> Option<u64> {
        Some(*self)
    }
}

impl<T: AsNumber> AsNumber for Option<T> {
    fn as_number(&self) -> Option<f64> {
        self.as_ref().and_then(T::as_number)
    }
    fn as_whole(&self) -> Option<u64> {
        self.as_ref().and_then(T::as_whole)
    }
}

impl Bound {
    /// Checks `v` (absent passes) at `path`; true when it holds.
    pub(crate) fn check(&self, path: &str, v: &impl AsNumber, e: &mut Errors) -> bool {
        match (*self, v.as_number()) {
            (_, None) => true,
            (Bound::Int(lo, hi), Some(x)) => e.int(path, v.as_whole().unwrap_or(x as u64), lo, hi),
            (Bound::Range(lo, hi), Some(x)) => e.range(path, x, lo, hi),
            (Bound::OpenLo(lo, hi), Some(x)) => e.range_open_lo(path, x, lo, hi),
            (Bound::Within(lo, hi, why), Some(x)) => e.within(path, x, lo, hi, why),
        }
    }

    /// The least and the most allowed (an open bound's least is not allowed itself).
    pub fn limits(&self) -> (f64, f64) {
        match *self {
            Bound::Int(lo, hi) => (lo as f64, hi as f64),
            Bound::Range(lo, hi) | Bound::OpenLo(lo, hi) | Bound::Within(lo, hi, _) => (lo, hi),
        }
    }

    /// What the bound allows, as docs/scenario.md writes it: `1 … 65,536`, `> 0 … 1e8`.
    pub fn allowed(&self) -> String {
        let (lo, hi) = self.limits();
        let open = if matches!(self, Bound::OpenLo(..)) { "> " } else { "" };
        format!("{open}{} … {}", plain(lo), plain(hi))
    }
}

/// A number as the docs write it: `2^40` for a large power of two, `1e8` for a large power of ten, thousands
/// separated from 10,000 on.
pub fn plain(v: f64) -> String {
    let whole = v.fract() == 0.0 && v.abs() < 2f64.powi(63);
    if whole && v >= 2f64.powi(30) && (v as u64).is_power_of_two() {
        return format!("2^{}", (v as u64).trailing_zeros());
    }
    if v > 0.0 && v < 1e-4 && libm::log10(v).fract() == 0.0 {
        return format!("1e{}", libm::log10(v) as i32);
    }
    if v >= 1e5 && libm::log10(v).fract() == 0.0 {
        return format!("1e{}", libm::log10(v) as i32);
    }
    if whole && v.abs() >= 1e4 {
        let digits = (v.abs() as u64).to_string();
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        return if v < 0.0 { format!("-{out}") } else { out };
    }
    format!("{v}")
}

/// A block of fields at its path in the scenario file, with its defaults when it has them.
#[derive(Clone, Debug)]
pub struct Block {
    /// Dotted, as errors name it: `engine.preemption`.
    pub at: &'static str,
    pub fields: &'static [Field],
    /// The block's `Default`, as the file would hold it; none when the block has required fields.
    pub defaults: Option<serde_json::Value>,
}

impl Block {
    pub(crate) fn with_defaults<T: Declared + Default + serde::Serialize>(at: &'static str) -> Block {
        Block { at, fields: T::FIELDS, defaults: serde_json::to_value(T::default()).ok() }
    }
    pub(crate) fn required<T: Declared>(at: &'static str) -> Block {
        Block { at, fields: T::FIELDS, defaults: None }
    }
}

/// The bound of the field a JSON pointer names (`/engine/max_num_seqs`), if it declares one.
pub fn bound_at(pointer: &str) -> Option<Bound> {
    let in_block = super::declared_blocks().into_iter().find_map(|b| {
        let rest = pointer.strip_prefix('/')?.strip_prefix(&b.at.replace('.', "/"))?.strip_prefix('/')?;
        b.fields.iter().find(|f| f.name == rest).map(|f| f.bound)
    });
    // An arrival kind's field (a field two kinds share, as `rate_rps`, has one bound).
    let arrival = || {
        let name = pointer.strip_prefix("/workload/arrival/")?;
        let fields = <super::ArrivalSpec as Variants>::VARIANTS.iter().flat_map(|v| v.1.iter());
        fields.clone().find(|f| f.name == name).map(|f| f.bound)
    };
    in_block.or_else(arrival)
}

/// The bound `T` declares for its field `name` (`bounds!`): for an option that takes a scenario field's value
/// and so must hold the field's bound.
pub fn field_bound<T: Declared>(name: &str) -> Option<Bound> {
    T::FIELDS.iter().find(|f| f.name == name).map(|f| f.bound)
}

/// The bound a tagged enum declares for field `name` of its variant `variant` (the Rust name, `variant_bounds!`).
pub fn variant_bound<T: Variants>(variant: &str, name: &str) -> Option<Bound> {
    let fields = T::VARIANTS.iter().find(|v| v.0 == variant)?.1;
    fields.iter().find(|f| f.name == name).map(|f| f.bound)
}

/// A field's path, `at.name`, with the name taken from the field itself (`at!(at, en.max_model_len)` does
/// not compile when the field is renamed).
macro_rules! at {
    ($s:ident . $f:ident) => {{
        let _ = &$s.$f;
        stringify!($f)
    }};
    ($s:ident . $t:ident . $f:ident) => {{
        let _ = &$s.$t.$f;
        stringify!($f)
    }};
    ($at:expr, $s:ident . $f:ident) => {{
        let _ = &$s.$f;
        format!("{}.{}", $at, stringify!($f))
    }};
    // A field of a spec type where no value of it is at hand: `at!("hardware", HardwareSpec::tp)`.
    ($at:expr, $ty:ident :: $f:ident) => {{
        let _ = |s: &$ty| {
            let _ = &s.$f;
        };
        format!("{}.{}", $at, stringify!($f))
    }};
    // A field of an enum's variant: `at!("workload.arrival", ArrivalSpec::Trace { data })`.
    ($at:expr, $ty:ident :: $v:ident { $f:ident }) => {{
        let _ = |x: &$ty| {
            if let $ty::$v { $f, .. } = x {
                let _ = $f;
            }
        };
        format!("{}.{}", $at, stringify!($f))
    }};
}
pub(crate) use at;

/// The path of a field reached from the scenario: `path_of!(spec.engine.host_kv)` → `"engine.host_kv"`. The chain
/// must name real fields (it is type-checked), so a renamed field cannot leave its error path behind.
macro_rules! path_of {
    ($root:ident $(. $f:ident)+) => {{
        let _ = &$root$(.$f)+;
        [$(stringify!($f)),+].join(".")
    }};
}
pub(crate) use path_of;

/// Declares the bounds of a block's fields, beside its struct: `bounds!(EngineSpec { max_num_seqs:
/// Bound::Int(1, 65_536), … })`. A misspelt field does not compile.
macro_rules! bounds {
    ($ty:ty { $($f:ident: $b:expr),* $(,)? }) => {
        impl $crate::spec::Declared for $ty {
            const FIELDS: &'static [$crate::spec::Field] =
                &[$($crate::spec::Field { name: stringify!($f), bound: $b }),*];
        }
        impl $crate::spec::field::Checked for $ty {
            fn check_fields(&self, at: &str, e: &mut $crate::spec::Errors) -> bool {
                let mut ok = true;
                $(ok &= $b.check(&format!("{at}.{}", stringify!($f)), &self.$f, e);)*
                ok
            }
        }
    };
}
pub(crate) use bounds;

/// Declares the bounds of a tagged enum's fields, variant by variant, beside the enum:
/// `variant_bounds!(ArrivalSpec { Poisson { rate_rps: Bound::OpenLo(0.0, 1e7) }, … })`. Checking a value checks
/// its variant's fields, each error at `{at}.{field}`; a variant not listed has no bounded field.
macro_rules! variant_bounds {
    ($ty:ident { $($v:ident { $($f:ident: $b:expr),* $(,)? }),* $(,)? }) => {
        impl $crate::spec::field::Variants for $ty {
            const VARIANTS: &'static [(&'static str, &'static [$crate::spec::Field])] = &[$((
                stringify!($v),
                &[$($crate::spec::Field { name: stringify!($f), bound: $b }),*],
            )),*];
        }
        impl $crate::spec::field::Checked for $ty {
            fn check_fields(&self, at: &str, e: &mut $crate::spec::Errors) -> bool {
                #[allow(unreachable_patterns)]
                match self {
                    $($ty::$v { $($f,)* .. } => {
                        let mut ok = true;
                        $(ok &= $b.check(&format!("{at}.{}", stringify!($f)), $f, e);)*
                        ok
                    })*
                    _ => true,
                }
            }
        }
    };
}
pub(crate) use variant_bounds;

/// A variant's serde name (`rename_all = "snake_case"`): `ClosedLoop` → `closed_loop`.
pub fn snake(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_numbers_read_as_the_docs_write_them() {
        let cases = [(65_536.0, "65,536"), (8192.0, "8192"), (1e8, "1e8"), (1e4, "10,000"), (0.9, "0.9")];
        for (v, s) in cases {
            assert_eq!(plain(v), s);
        }
        assert_eq!(plain((1u64 << 40) as f64), "2^40");
        assert_eq!(plain((1u64 << 22) as f64), "4,194,304");
        assert_eq!(Bound::OpenLo(0.0, 1.0).allowed(), "> 0 … 1");
    }
}
