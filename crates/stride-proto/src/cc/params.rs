//! Controller parameters, declared once.
//!
//! A controller's parameter struct is written with [`controller_params!`](crate::controller_params):
//! each field once, with its type, its [`Unit`], its default for a line rate and its doc
//! comment. From that one declaration come the struct, `for_line_rate`, the by-name setter
//! behind `stride send --cc-param` and the simulator's `[cc.NAME]` tables (reading values in
//! the unit grammar of `stride-units`), the JSON echo of the values, and the parameter table
//! of `docs/controllers.md` ([`markdown_table`]).

use super::{rate_from_gbps, CcConfig};

/// How a parameter's value is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// A plain count.
    Count,
    /// A shift: the quantity is a power of two.
    Shift,
    /// On or off (`true`/`false`, `on`/`off`, `1`/`0`).
    Switch,
    /// Thousandths (`500` is one half).
    Milli,
    /// 1/1024ths.
    Frac1024,
    /// 1/2^20ths.
    Frac2p20,
    /// Percent.
    Percent,
    /// Nanoseconds: a duration (`"5us"`) or an integer number of nanoseconds.
    Nanos,
    /// Rate units (2^-20 bytes per ns): a rate (`"156mbit"`) or an integer in rate units.
    Rate,
    /// Bytes: a size (`"64KiB"`) or an integer.
    Bytes,
}

impl Unit {
    /// The unit as the parameter tables write it.
    pub fn label(self) -> &'static str {
        match self {
            Unit::Count => "count",
            Unit::Shift => "shift",
            Unit::Switch => "switch",
            Unit::Milli => "1/1000",
            Unit::Frac1024 => "1/1024",
            Unit::Frac2p20 => "1/2^20",
            Unit::Percent => "%",
            Unit::Nanos => "duration",
            Unit::Rate => "rate",
            Unit::Bytes => "bytes",
        }
    }
}

/// One declared parameter.
#[derive(Clone, Copy, Debug)]
pub struct Param {
    /// Its name (`--cc-param NAME=VALUE`, `[cc.NAME]` keys).
    pub name: &'static str,
    /// Its unit.
    pub unit: Unit,
    /// Its doc comment.
    pub doc: &'static str,
    /// An older name still read (empty: none); readers note the new name.
    pub was: &'static str,
}

/// A parameter struct that extends another controller's (`base` in
/// [`controller_params!`](crate::controller_params)): its parameters come first.
pub trait Based {
    /// The base's parameters, if any.
    fn base(&self) -> Option<&dyn super::ControllerFactory> {
        None
    }
    /// The same, mutably.
    fn base_mut(&mut self) -> Option<&mut dyn super::ControllerFactory> {
        None
    }
}

/// Reads `text` as a value of `unit` (the integer the controller stores).
pub fn read_integer(key: &str, text: &str, unit: Unit) -> Result<u64, String> {
    let t = text.trim();
    if let Ok(v) = t.replace('_', "").parse::<u64>() {
        return Ok(v);
    }
    let read = match unit {
        Unit::Nanos => stride_units::parse_duration_ns(t),
        Unit::Rate => stride_units::parse_rate_bps(t).map(rate_from_bps),
        Unit::Bytes => stride_units::parse_bytes(t),
        _ => Err(format!("{t:?} is not a whole number")),
    };
    read.map_err(|e| format!("{key}: {e}"))
}

/// Converts bit/s to rate units (configuration time only).
pub fn rate_from_bps(bps: u64) -> u64 {
    u64::from(rate_from_gbps(bps as f64 / 1e9))
}

/// A type a declared parameter can have.
pub trait ParamValue: Sized + std::fmt::Display {
    /// Reads `text` (for parameter `key` of unit `unit`).
    fn read(key: &str, text: &str, unit: Unit) -> Result<Self, String>;
}

macro_rules! int_param {
    ($($t:ty),*) => {$(
        impl ParamValue for $t {
            fn read(key: &str, text: &str, unit: Unit) -> Result<Self, String> {
                let v = read_integer(key, text, unit)?;
                <$t>::try_from(v).map_err(|_| {
                    format!("{key}: {v} is out of range (at most {})", <$t>::MAX)
                })
            }
        }
    )*};
}
int_param!(u8, u16, u32, u64);

impl ParamValue for bool {
    fn read(key: &str, text: &str, _unit: Unit) -> Result<Self, String> {
        super::parse_switch(key, text)
    }
}

/// The parameter table of every registered controller at `line_gbps`, as markdown: one section
/// per controller, one row per parameter (name, unit, default, what it does).
pub fn markdown_table(line_gbps: f64) -> String {
    let line = rate_from_gbps(line_gbps);
    let mut s = String::new();
    for r in super::registry() {
        let c: CcConfig = (r.make)(line);
        s.push_str(&format!("### `{}`\n\n{}\n\n", r.name, r.about));
        let specs = c.specs();
        if specs.is_empty() {
            s.push_str("No parameters.\n\n");
            continue;
        }
        s.push_str("| parameter | unit | default | meaning |\n|---|---|---|---|\n");
        let values = c.params();
        for p in &specs {
            let v = values
                .iter()
                .find(|(k, _)| *k == p.name)
                .map(|(_, v)| readable(v, p.unit))
                .unwrap_or_default();
            let doc = p.doc.split_whitespace().collect::<Vec<_>>().join(" ");
            let was = if p.was.is_empty() {
                String::new()
            } else {
                format!(" (formerly `{}`)", p.was)
            };
            s.push_str(&format!(
                "| `{}`{was} | {} | {v} | {} |\n",
                p.name,
                p.unit.label(),
                doc.replace('|', "\\|")
            ));
        }
        s.push('\n');
    }
    s
}

/// A parameter's value as a reader of the tables wants it: durations and rates with their unit.
fn readable(v: &str, unit: Unit) -> String {
    let Ok(n) = v.parse::<u64>() else {
        return v.to_string();
    };
    match unit {
        Unit::Nanos => stride_units::fmt_duration_ns(n),
        Unit::Rate => {
            let bps = n as f64 * 8e9 / f64::from(1u32 << super::RATE_FRAC_BITS);
            format!("{} ({n})", stride_units::fmt_rate_bps(bps.round() as u64))
        }
        _ => v.to_string(),
    }
}

/// Declares a controller's parameter struct once: fields with their doc comment, type, unit
/// and default at line rate `line` (rate units), and, optionally, an older name still read
/// (`was "old_name"`) and the value that switches a mechanism off (`off VALUE`, for
/// `without_mechanisms`). `extends FIELD: TYPE = { DEFAULT }` after the line-rate binding nests
/// another controller's parameters, settable by their own names. Generates the struct, `for_line_rate`, `without_mechanisms`, `PARAMS`
/// and the [`ControllerFactory`](crate::cc::ControllerFactory) implementation (whose `validate`
/// calls the struct's own `check`).
///
/// ```ignore
/// controller_params! {
///     /// My controller's parameters.
///     pub struct MyParams for |_p| "mine", (line) {
///         /// Additive step.
///         step: u32 [Rate] = line >> 6;
///         /// Decrease shift.
///         md_shift: u8 [Shift] = 3;
///     }
///     build: |p, _now| Mine::new(p)
/// }
/// ```
#[macro_export]
macro_rules! controller_params {
    (@off $cur:expr) => { $cur };
    (@off $cur:expr, $off:expr) => { $off };
    (@was) => { "" };
    (@was $was:literal) => { $was };
    (
        $(#[$sm:meta])*
        pub struct $t:ident for |$np:ident| $name:expr, ($line:ident)
            $(extends $bf:ident : $bty:ty = $bdef:block)? {
            $(
                $(#[doc = $doc:literal])*
                $f:ident : $ty:ty [$unit:ident $(, was $was:literal)? $(, off $off:expr)?] = $def:expr;
            )*
        }
        build: |$p:ident, $now:ident| $build:expr $(,)?
    ) => {
        $(#[$sm])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $t {
            $( $(#[doc = $doc])* pub $f: $ty, )*
            $(
                /// The parameters of the controller this one extends.
                pub $bf: $bty,
            )?
        }

        impl $crate::cc::params::Based for $t {
            $(
                fn base(&self) -> Option<&dyn $crate::cc::ControllerFactory> {
                    Some(&self.$bf)
                }
                fn base_mut(&mut self) -> Option<&mut dyn $crate::cc::ControllerFactory> {
                    Some(&mut self.$bf)
                }
            )?
        }

        impl $t {
            /// Every parameter: name, unit and doc, in declaration order.
            pub const PARAMS: &'static [$crate::cc::params::Param] = &[$(
                $crate::cc::params::Param {
                    name: stringify!($f),
                    unit: $crate::cc::params::Unit::$unit,
                    doc: concat!($($doc, "\n"),*),
                    was: $crate::controller_params!(@was $($was)?),
                },
            )*];

            /// The defaults at line rate `line` (rate units).
            pub fn for_line_rate($line: u32) -> Self {
                let _ = $line;
                $t { $($f: $def,)* $($bf: $bdef,)? }
            }

            /// The same parameters with every mechanism switched off (the fields declared
            /// with `off`).
            pub fn without_mechanisms(self) -> Self {
                $t {
                    $($f: $crate::controller_params!(@off self.$f $(, $off)?),)*
                    $($bf: self.$bf.without_mechanisms(),)?
                }
            }
        }

        impl $crate::cc::ControllerFactory for $t {
            fn name(&self) -> &'static str {
                let $np = self;
                $name
            }
            fn build(&self, $now: u64) -> Box<dyn $crate::cc::Controller> {
                let $p = *self;
                let _ = $now;
                Box::new($build)
            }
            fn validate(&self) -> Result<(), (&'static str, &'static str)> {
                self.check()
            }
            fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
                use $crate::cc::params::ParamValue;
                $(
                    let was: &str = $crate::controller_params!(@was $($was)?);
                    if key == stringify!($f) || (!was.is_empty() && key == was) {
                        self.$f = <$ty>::read(
                            stringify!($f),
                            value,
                            $crate::cc::params::Unit::$unit,
                        )?;
                        return Ok(());
                    }
                )*
                let name = $crate::cc::ControllerFactory::name(self);
                let mut names: Vec<&str> = Vec::new();
                if let Some(b) = $crate::cc::params::Based::base_mut(self) {
                    if b.specs().iter().any(|p| p.name == key || (!p.was.is_empty() && p.was == key)) {
                        return b.set(key, value);
                    }
                    names.extend(b.specs().iter().map(|p| p.name));
                }
                names.extend([$(stringify!($f)),*]);
                Err(format!("{key}: not a parameter of {name}; it has: {}", names.join(", ")))
            }
            fn params(&self) -> Vec<(&'static str, String)> {
                let mut v = $crate::cc::params::Based::base(self)
                    .map(|b| b.params())
                    .unwrap_or_default();
                v.extend([$((stringify!($f), self.$f.to_string())),*]);
                v
            }
            fn specs(&self) -> Vec<$crate::cc::params::Param> {
                let mut v = $crate::cc::params::Based::base(self)
                    .map(|b| b.specs())
                    .unwrap_or_default();
                v.extend_from_slice(Self::PARAMS);
                v
            }
            fn clone_box(&self) -> Box<dyn $crate::cc::ControllerFactory> {
                Box::new(*self)
            }
            fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
                self
            }
            fn as_any(&self) -> &dyn std::any::Any {
                self
            }
        }
    };
}
