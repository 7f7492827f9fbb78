//! The queue disciplines by name: what a scenario (`queue.discipline`, or the sections and
//! `[queue]` settings it has) and a topology built without one choose from.

use super::{droptail, ecn, qcn, red, QueueDiscipline};
use crate::net::QueueSpec;
use crate::scenario::ScenarioError;
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;

/// A scenario's discipline sections (`[ecn]`, `[red]`, `[qcn]`, ...) by name, unread.
pub type Sections = BTreeMap<String, toml::Value>;

/// No sections: a topology built without a scenario.
static NO_SECTIONS: Sections = BTreeMap::new();

/// Every discipline, in the order checks run and tables list them. Without
/// `queue.discipline` the *last* one the settings imply runs: a discipline's own section
/// outranks the `[queue]` settings the ones before it read.
pub static REGISTRY: &[Discipline] = &[
    droptail::DISCIPLINE,
    ecn::DISCIPLINE,
    red::DISCIPLINE,
    qcn::DISCIPLINE,
];

/// What a discipline is configured from.
#[derive(Clone, Copy, Debug)]
pub struct Settings<'a> {
    /// The switch queues' `[queue]` settings, in bytes (K = 0: no ECN step).
    pub queue: QueueSpec,
    /// The scenario's discipline sections (none for a topology built without a scenario).
    pub sections: &'a Sections,
    /// The discipline `queue.discipline` names, if it names one.
    pub named: Option<&'a str>,
}

impl<'a> Settings<'a> {
    /// The settings of a topology built from `queue` alone.
    pub fn of_queue(queue: &QueueSpec) -> Settings<'static> {
        Settings {
            queue: *queue,
            sections: &NO_SECTIONS,
            named: None,
        }
    }

    /// Whether the scenario has section `name`.
    pub fn has(&self, name: &str) -> bool {
        self.sections.contains_key(name)
    }

    /// Section `name` read as `T`, if present; an error names the bad field (`red.pmax`).
    pub fn section<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>, ScenarioError> {
        let Some(v) = self.sections.get(name) else {
            return Ok(None);
        };
        let mut t = toml::Table::new();
        t.insert(name.to_string(), v.clone());
        let mut m: BTreeMap<String, T> = toml::Value::Table(t)
            .try_into()
            .map_err(|e: toml::de::Error| ScenarioError(e.to_string()))?;
        Ok(m.remove(name))
    }

    /// Whether `queue.discipline` names `name`.
    pub fn names(&self, name: &str) -> bool {
        self.named == Some(name)
    }
}

/// A scenario section of a discipline, and the reader that checks its fields' names and types.
#[derive(Clone, Copy, Debug)]
pub struct Section {
    /// `[NAME]` in a scenario file.
    pub name: &'static str,
    /// Reads the section (given its name); an error names a missing, unknown or mistyped
    /// field.
    pub read: fn(&Settings, &str) -> Result<(), ScenarioError>,
}

impl Section {
    /// Section `[name]`, read as `T`.
    pub const fn of<T: DeserializeOwned>(name: &'static str) -> Section {
        Section {
            name,
            read: read_as::<T>,
        }
    }
}

/// `Ok` if section `name` reads as `T`.
fn read_as<T: DeserializeOwned>(s: &Settings, name: &str) -> Result<(), ScenarioError> {
    s.section::<T>(name).map(|_| ())
}

/// One registered queue discipline.
#[derive(Clone, Copy, Debug)]
pub struct Discipline {
    /// Name in `queue.discipline`.
    pub name: &'static str,
    /// One line for tables.
    pub about: &'static str,
    /// Its own scenario section, if it reads one.
    pub section: Option<Section>,
    /// Whether these settings choose it when `queue.discipline` is absent (see [`REGISTRY`]).
    pub implied: fn(&Settings) -> bool,
    /// Checks the settings it reads (its section when present, its needs when chosen);
    /// an error names the field.
    pub check: fn(&Settings) -> Result<(), ScenarioError>,
    /// One port's instance, from checked settings.
    pub build: fn(&Settings) -> Box<dyn QueueDiscipline>,
    /// Its ports send QCN feedback frames (what the `qcn` reaction points react to).
    pub feedback: bool,
}

/// The discipline called `name`.
pub fn find(name: &str) -> Option<&'static Discipline> {
    REGISTRY.iter().find(|d| d.name == name)
}

/// The discipline whose section is `[name]`.
pub fn by_section(name: &str) -> Option<&'static Discipline> {
    REGISTRY
        .iter()
        .find(|d| d.section.is_some_and(|s| s.name == name))
}

/// Every registered name, in registry order.
pub fn names() -> Vec<&'static str> {
    REGISTRY.iter().map(|d| d.name).collect()
}

/// The discipline `s` chooses: the one `queue.discipline` names (checked by [`check`]), else
/// the last one the settings imply.
pub fn choose(s: &Settings) -> &'static Discipline {
    s.named
        .and_then(find)
        .or_else(|| REGISTRY.iter().rev().find(|d| (d.implied)(s)))
        .unwrap_or(&REGISTRY[0])
}

/// Reads every section present (field names and types), before anything is checked.
pub fn read(s: &Settings) -> Result<(), ScenarioError> {
    for d in REGISTRY {
        if let Some(sec) = d.section.filter(|sec| s.has(sec.name)) {
            (sec.read)(s, sec.name)?;
        }
    }
    Ok(())
}

/// Checks the settings: a registered `queue.discipline`, every discipline's own checks in
/// registry order, and, with `queue.discipline`, no section of another discipline.
pub fn check(s: &Settings) -> Result<(), ScenarioError> {
    if let Some(n) = s.named {
        if find(n).is_none() {
            return Err(ScenarioError::field(
                "queue.discipline",
                format!("unknown discipline {n:?} ({})", names().join(", ")),
            ));
        }
    }
    for d in REGISTRY {
        (d.check)(s)?;
    }
    if let Some(n) = s.named {
        for d in REGISTRY.iter().filter(|d| d.name != n) {
            if let Some(sec) = d.section.filter(|sec| s.has(sec.name)) {
                return Err(ScenarioError::field(
                    sec.name,
                    format!("queue.discipline = {n:?} does not read it"),
                ));
            }
        }
    }
    Ok(())
}

/// The discipline a [`QueueSpec`] alone describes: an ECN step at K when `ecn_k_bytes > 0`
/// (marking at enqueue), else RED marking when `red` is set, else drop-tail.
pub fn from_spec(q: &QueueSpec) -> Box<dyn QueueDiscipline> {
    let s = Settings::of_queue(q);
    (choose(&s).build)(&s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(ecn_k_bytes: u64, red: Option<(u64, u64, f64)>) -> QueueSpec {
        QueueSpec {
            cap_bytes: 100_000,
            ecn_k_bytes,
            red,
        }
    }

    #[test]
    fn the_settings_imply_todays_choice() {
        let red = Some((1_000, 5_000, 0.1));
        let chosen = |q: QueueSpec, text: &str| {
            let sections: Sections = toml::from_str(text).unwrap();
            let s = Settings {
                queue: q,
                sections: &sections,
                named: None,
            };
            let d = choose(&s);
            assert_eq!((d.build)(&s).name(), from_name(d.name, &s), "{text}");
            d.name
        };
        assert_eq!(chosen(spec(0, None), ""), "droptail");
        assert_eq!(chosen(spec(9_000, None), ""), "ecn");
        // the step wins over queue.red; queue.red runs when the step is off
        assert_eq!(chosen(spec(9_000, red), ""), "ecn");
        assert_eq!(chosen(spec(0, red), ""), "red");
        // a discipline's own section wins over the step
        let red_section = "[red]\nkmin_bytes = 1\nkmax_bytes = 2\npmax = 0.5\n";
        assert_eq!(chosen(spec(9_000, None), red_section), "red");
        assert_eq!(chosen(spec(9_000, None), "[qcn]\n"), "qcn");
        let deq = "[ecn]\nmark_at = \"dequeue\"\n";
        assert_eq!(chosen(spec(9_000, None), deq), "ecn");
        // a topology without a scenario: the same rule on its QueueSpec
        assert_eq!(from_spec(&spec(9_000, red)).name(), "ecn-step");
        assert_eq!(from_spec(&spec(0, red)).name(), "red-ecn");
        assert_eq!(from_spec(&spec(0, None)).name(), "drop-tail");
    }

    /// The report name of the instance the registry entry `name` builds from `s`.
    fn from_name(name: &str, s: &Settings) -> &'static str {
        (find(name).unwrap().build)(s).name()
    }

    #[test]
    fn a_named_discipline_is_registered_and_alone() {
        let sections: Sections = toml::from_str("[qcn]\n").unwrap();
        let s = |named| Settings {
            queue: spec(9_000, None),
            sections: &sections,
            named,
        };
        assert_eq!(choose(&s(Some("qcn"))).name, "qcn");
        assert!(check(&s(Some("qcn"))).is_ok());
        let e = check(&s(Some("ecn"))).unwrap_err().0;
        assert!(e.contains("`qcn`") && e.contains("does not read it"), "{e}");
        let e = check(&s(Some("pie"))).unwrap_err().0;
        assert!(
            e.contains("queue.discipline") && e.contains("droptail, ecn"),
            "{e}"
        );
        for d in REGISTRY {
            assert_eq!(find(d.name).map(|f| f.name), Some(d.name));
            if let Some(sec) = d.section {
                assert_eq!(by_section(sec.name).map(|f| f.name), Some(d.name));
            }
        }
    }
}
