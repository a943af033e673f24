//! A study's options described once, beside its options struct (`described!`): each option's label, unit, help
//! and — where it has one — bound. The lab builds a study's panel from this (a study with options needs no
//! page code), validation checks the declared bounds (`Described::check_bounds`), and the lab's numeric fields
//! take their limits from the same bounds.

use crate::scenario::Errors;
use crate::spec::{AsNumber, Bound};

/// How an option is edited: from its Rust type ([`Editable`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edit {
    /// A whole number.
    Int,
    /// A number.
    Num,
    /// A number that may be left empty (the option is then absent).
    OptNum,
    /// A whole number that may be left empty.
    OptInt,
    Bool,
    /// A JSON value edited as text (a list, an object, a treatment).
    Json,
}

/// An option type's edit, and its value as a bound reads it (a number's; None for the rest).
pub trait Editable {
    const EDIT: Edit;
    fn number(&self) -> (Option<f64>, Option<u64>) {
        (None, None)
    }
}

macro_rules! editable {
    ($edit:ident: $($t:ty),*) => {
        $(impl Editable for $t {
            const EDIT: Edit = Edit::$edit;
            fn number(&self) -> (Option<f64>, Option<u64>) {
                (self.as_number(), self.as_whole())
            }
        })*
    };
}
editable!(Int: u32, u64);
editable!(Num: f64);
editable!(OptNum: Option<f64>);
editable!(OptInt: Option<u32>, Option<u64>);
impl Editable for bool {
    const EDIT: Edit = Edit::Bool;
}
impl<T> Editable for Vec<T> {
    const EDIT: Edit = Edit::Json;
}
impl<K, V> Editable for std::collections::BTreeMap<K, V> {
    const EDIT: Edit = Edit::Json;
}
impl Editable for serde_json::Value {
    const EDIT: Edit = Edit::Json;
}
impl Editable for serde_json::Map<String, serde_json::Value> {
    const EDIT: Edit = Edit::Json;
}
impl<T> Editable for Option<Vec<T>> {
    const EDIT: Edit = Edit::Json;
}
// Blocks of the scenario's format a study takes as options, edited as their JSON.
impl Editable for crate::spec::HostKvSpec {
    const EDIT: Edit = Edit::Json;
}
impl Editable for Option<crate::spec::ToolShiftSpec> {
    const EDIT: Edit = Edit::Json;
}

/// One option of a study, as its panel shows it: its name, how it is edited, and what it says of itself.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OptionDef {
    /// Its name in the options (and in the report's notes, and in the CLI's `--params`).
    pub name: &'static str,
    pub edit: Edit,
    pub text: Text,
}

/// What an option says of itself (`described!` gives the rest, its name and edit, from its field).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Text {
    pub label: &'static str,
    /// Its unit, or what an empty field means.
    pub unit: &'static str,
    /// One sentence: what it does.
    pub help: &'static str,
    /// What it allows, when the option is a number with a plain range (validation checks it).
    pub bound: Option<Bound>,
}

/// An options struct whose options are described (`described!`).
pub trait Described {
    /// Its options, in the panel's order.
    fn described() -> Vec<OptionDef>;
}

/// Validation's side of `Described`.
pub(crate) trait Bounded {
    /// Checks each option with a declared bound (absent passes), errors at `at.name`; true when all hold.
    fn check_bounds(&self, at: &str, e: &mut Errors) -> bool;
}

/// The edit of the option `field` reads (the closure names the field, so a misspelt one does not compile).
pub fn edit_of<P, T: Editable>(_field: fn(&P) -> &T) -> Edit {
    T::EDIT
}

/// Checks `v` against `bound` at `at.name` (no bound, or no value: passes).
pub(crate) fn check<T: Editable>(bound: Option<Bound>, at: &str, name: &str, v: &T, e: &mut Errors) -> bool {
    bound.is_none_or(|b| b.check(&format!("{at}.{name}"), &Numeric(v.number()), e))
}

/// A value as a bound reads it.
struct Numeric((Option<f64>, Option<u64>));

impl AsNumber for Numeric {
    fn as_number(&self) -> Option<f64> {
        self.0.0
    }
    fn as_whole(&self) -> Option<u64> {
        self.0.1
    }
}

/// Describes an options struct's options beside it, each by a [`Text`] (a shared one by its name):
/// `described!(CapacityParams { target: Text { label: "SLO attainment target", unit: "fraction", help: "…",
/// bound: Some(Bound::OpenLo(0.0, 1.0)) }; … })`. The field names must be the struct's (else it does not compile).
macro_rules! described {
    ($ty:ty { $($f:ident: $text:expr;)* }) => {
        impl $crate::study::option::Described for $ty {
            fn described() -> Vec<$crate::study::option::OptionDef> {
                vec![$($crate::study::option::OptionDef {
                    name: stringify!($f),
                    edit: $crate::study::option::edit_of(|p: &$ty| &p.$f),
                    text: $text,
                }),*]
            }
        }
        impl $crate::study::option::Bounded for $ty {
            #[allow(unused_variables, unused_mut)]
            fn check_bounds(&self, at: &str, e: &mut $crate::scenario::Errors) -> bool {
                let mut ok = true;
                $(ok &= $crate::study::option::check(($text).bound, at, stringify!($f), &self.$f, e);)*
                ok
            }
        }
    };
}
pub(crate) use described;

/// `repetitions`, which every study that does not repeat by itself takes (`repeated`).
pub const REPETITIONS: OptionDef = OptionDef {
    name: "repetitions",
    edit: Edit::OptInt,
    text: Text {
        label: "Repetitions",
        unit: "whole-study runs on seeds apart, 1 … 20 (empty: once)",
        help: "Run the whole study R times, repetition k on seed + k × 1,000,000: each figure shows its mean ± its 95 % interval, and rows whose intervals overlap are called ties",
        bound: Some(Bound::Int(1, super::repeated::MOST)),
    },
};
