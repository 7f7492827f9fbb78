//! Reading a scenario file: overrides, deprecated keys, sections, validation, flows.

use super::{Loaded, Scenario, ScenarioError, WorkloadKind, KEYS, KEYS_BEFORE_SECTIONS};
use std::path::Path;

impl Scenario {
    /// Parses and validates a scenario file; CDF paths resolve against its directory.
    pub fn load(path: &Path) -> Result<Loaded, ScenarioError> {
        Self::load_with(path, &[])
    }

    /// Like [`Scenario::load`], with overrides `dotted.key=value` applied before validation
    /// (`stride.t_high_ns=20000`, `workload.load=0.7`, `topology.k=4`). The value is read as a
    /// TOML value (number, boolean, `"string"`, array) and otherwise as a bare string; a key
    /// the file format does not know is an error naming it.
    pub fn load_with(path: &Path, sets: &[String]) -> Result<Loaded, ScenarioError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ScenarioError(format!("{}: {e}", path.display())))?;
        let table: toml::Table =
            toml::from_str(&text).map_err(|e| ScenarioError(format!("{}: {e}", path.display())))?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Self::load_table(table, &dir, &path.display().to_string(), sets)
    }

    /// Like [`Scenario::load_with`], from a scenario already read into a TOML table (built in
    /// code, or from TOML text): `dir` is where relative workload paths resolve, `what` names
    /// the scenario in error messages (a path, or e.g. `<toml>`).
    pub fn load_table(
        mut table: toml::Table,
        dir: &Path,
        what: &str,
        sets: &[String],
    ) -> Result<Loaded, ScenarioError> {
        for s in sets {
            stride_units::overrides::apply_set(&mut table, s).map_err(ScenarioError)?;
        }
        let deprecations = crate::units::normalize(&mut table)?;
        let what = if sets.is_empty() {
            what.to_string()
        } else {
            format!("{what} with {}", sets.join(" "))
        };
        let format_error = |e: &dyn std::fmt::Display| {
            ScenarioError(crate::units::user_names_in_format_error(&format!(
                "{what}: {e}"
            )))
        };
        let sc: Scenario = toml::Value::Table(table)
            .try_into()
            .map_err(|e| format_error(&e))?;
        sc.read_sections().map_err(|e| format_error(&e))?;
        sc.validate()
            .map_err(|e| ScenarioError(crate::units::user_names(&e.0)))?;
        let flows = sc.flows(dir)?;
        Ok(Loaded {
            sc,
            flows,
            deprecations,
        })
    }

    /// The files a scenario reads besides itself (its workload's CDF), as `(key, path)` with the
    /// path resolved against `dir` (the scenario file's directory).
    pub fn files(&self, dir: &Path) -> Vec<(&'static str, std::path::PathBuf)> {
        let Some(w) = &self.workload else {
            return Vec::new();
        };
        match (&w.kind, &w.cdf) {
            (WorkloadKind::Poisson, Some(cdf)) => vec![("workload.cdf", dir.join(cdf))],
            _ => Vec::new(),
        }
    }
}

impl Scenario {
    /// Reads the queue disciplines' sections (their fields' names and types) and refuses any
    /// other key the file format does not know.
    pub fn read_sections(&self) -> Result<(), ScenarioError> {
        for key in self.qdisc.keys() {
            if crate::qdisc::by_section(key).is_none() {
                let sections = crate::qdisc::REGISTRY
                    .iter()
                    .filter_map(|d| d.section.map(|s| s.name));
                let keys: Vec<String> = KEYS[..KEYS_BEFORE_SECTIONS]
                    .iter()
                    .copied()
                    .chain(sections)
                    .chain(KEYS[KEYS_BEFORE_SECTIONS..].iter().copied())
                    .map(|k| format!("`{k}`"))
                    .collect();
                return Err(ScenarioError(format!(
                    "unknown field `{key}`, expected one of {}",
                    keys.join(", ")
                )));
            }
        }
        crate::qdisc::read(&self.qdisc_settings())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key the unknown-key message lists is a field of [`Scenario`] (not left over for
    /// the disciplines' sections).
    #[test]
    fn the_listed_keys_are_the_scenario_fields() {
        let base = "name = \"t\"\n[topology]\nkind = \"dumbbell\"\nsenders = 1\nreceivers = 1\n\
                    host_gbps = 1.0\nbottleneck_gbps = 1.0\nlink_delay_ns = 1000\n\
                    [workload]\nkind = \"incast\"\nsenders = 1\nbytes = 1\n";
        for &key in KEYS {
            let mut t: toml::Table = toml::from_str(base).unwrap();
            t.entry(key.to_string())
                .or_insert(toml::Value::String("x".into()));
            if let Ok(sc) = toml::Value::Table(t).try_into::<Scenario>() {
                assert!(!sc.qdisc.contains_key(key), "{key} is not a field");
            }
        }
        let mut t: toml::Table = toml::from_str(base).unwrap();
        t.insert("sede".into(), toml::Value::Integer(3));
        let sc: Scenario = toml::Value::Table(t).try_into().unwrap();
        let e = sc.read_sections().unwrap_err().0;
        assert!(
            e.starts_with("unknown field `sede`, expected one of `name`, `seed`")
                && e.contains("`trace`, `ecn`, `red`, `qcn`, `pfc`"),
            "{e}"
        );
    }

    /// The reader's messages name a field as the file spells it (`every`, `limit`), not as it
    /// is stored after the unit grammar (`every_ns`, `limit_ms`).
    #[test]
    fn format_errors_name_fields_as_files_spell_them() {
        let base = "name = \"t\"\n[topology]\nkind = \"dumbbell\"\nsenders = 1\nreceivers = 1\n\
                    host_rate = \"1gbit\"\nbottleneck_rate = \"1gbit\"\nlink_delay = \"1us\"\n\
                    [workload]\nkind = \"incast\"\nsenders = 1\nbytes = 1\n";
        let err = |top: &str, extra: &str| {
            let t: toml::Table = toml::from_str(&format!("{top}{base}{extra}")).unwrap();
            Scenario::load_table(t, Path::new("."), "<toml>", &[])
                .err()
                .expect("refused")
                .0
        };
        let e = err("", "[trace]\nhosts = [1]\n");
        assert!(
            e.contains("missing field `every`") && !e.contains("every_ns"),
            "{e}"
        );
        let e = err("sede = 3\n", "");
        assert!(e.contains("`limit`") && !e.contains("limit_ms"), "{e}");
    }
}
