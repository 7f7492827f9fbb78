//! `--set dotted.key=value` overrides on a parsed TOML file, shared by `stride sim` scenarios and
//! `stride testbed` files (feature `toml`).

/// Applies one `dotted.key=value` override to a parsed TOML table, creating missing sections.
///
/// The value is read as a TOML value (`5`, `[1, 2]`, `"x"`) and otherwise kept as a bare string
/// (`800mbit`). The error is a plain sentence quoting the override (or naming the field, as
/// ``field `a.b`: `a` is not a section``) for the caller to wrap in its own error type.
///
/// ```
/// let mut t: toml::Table = toml::from_str("[link]\nrate = \"1gbit\"").unwrap();
/// stride_units::overrides::apply_set(&mut t, "link.rate=10gbit").unwrap();
/// stride_units::overrides::apply_set(&mut t, "repetitions = 3").unwrap();
/// assert_eq!(t["link"]["rate"].as_str(), Some("10gbit"));
/// assert_eq!(t["repetitions"].as_integer(), Some(3));
/// assert!(stride_units::overrides::apply_set(&mut t, "nokey").is_err());
/// ```
pub fn apply_set(table: &mut toml::Table, set: &str) -> Result<(), String> {
    let Some((key, raw)) = set.split_once('=') else {
        return Err(format!("override {set:?}: expected `section.field=value`"));
    };
    let (key, raw) = (key.trim(), raw.trim());
    let value = match toml::from_str::<toml::Table>(&format!("v = {raw}")) {
        Ok(mut t) => t.remove("v").expect("parsed key"),
        Err(_) => toml::Value::String(raw.to_string()),
    };
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(format!("override {set:?}: empty key"));
    }
    let mut t = table;
    for p in &parts[..parts.len() - 1] {
        let entry = t
            .entry(p.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        t = match entry {
            toml::Value::Table(t) => t,
            _ => return Err(format!("field `{key}`: `{p}` is not a section")),
        };
    }
    t.insert(parts[parts.len() - 1].to_string(), value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> toml::Table {
        toml::from_str("name = \"t\"\n[tcp]\nmss = 1460\n").unwrap()
    }

    #[test]
    fn values_are_toml_or_bare_strings_and_sections_are_created() {
        let mut t = table();
        apply_set(&mut t, "tcp.mss=9000").unwrap();
        apply_set(&mut t, " link.rate = 800mbit ").unwrap();
        apply_set(&mut t, "blocks=[1, 2]").unwrap();
        assert_eq!(t["tcp"]["mss"].as_integer(), Some(9000));
        assert_eq!(t["link"]["rate"].as_str(), Some("800mbit"));
        assert_eq!(t["blocks"].as_array().map(|a| a.len()), Some(2));
    }

    #[test]
    fn malformed_overrides_are_refused_with_the_override_quoted() {
        let mut t = table();
        assert_eq!(
            apply_set(&mut t, "nokey").unwrap_err(),
            "override \"nokey\": expected `section.field=value`"
        );
        assert_eq!(
            apply_set(&mut t, "tcp..mss=1").unwrap_err(),
            "override \"tcp..mss=1\": empty key"
        );
        assert_eq!(
            apply_set(&mut t, "name.x=1").unwrap_err(),
            "field `name.x`: `name` is not a section"
        );
    }
}
