//! Unit-bearing scenario keys: `link_delay = "1us"`, `host_rate = "100gbit"`,
//! `t_high = "20us"`, `limit = "10ms"` in the grammar of the `stride-units` crate (the same as
//! the command line's). The older keys with the unit in their name (`link_delay_ns = 1000`,
//! `host_gbps = 100.0`, `min_rto_us = 1000`) are still accepted, each with a deprecation note.
//!
//! [`normalize`] rewrites a parsed scenario table before it is deserialised: every new key
//! becomes the numeric field the scenario structs hold, so the structs and their users keep
//! one representation.

use crate::scenario::ScenarioError;

/// How a unit-bearing key is stored in the scenario structs.
#[derive(Clone, Copy)]
enum Store {
    /// Integer nanoseconds.
    Ns,
    /// Integer microseconds (the value must be whole microseconds).
    Us,
    /// Float milliseconds.
    Ms,
    /// Float Gbit/s.
    Gbps,
    /// Float Mbit/s.
    Mbps,
    /// Integer bytes (the key is unchanged; a string like "1MB" is read as a size).
    Bytes,
}

/// (section, key in the unit grammar, older key with the unit in its name, storage).
const KEYS: &[(&str, &str, &str, Store)] = &[
    ("", "limit", "limit_ms", Store::Ms),
    ("topology", "host_rate", "host_gbps", Store::Gbps),
    ("topology", "fabric_rate", "fabric_gbps", Store::Gbps),
    (
        "topology",
        "bottleneck_rate",
        "bottleneck_gbps",
        Store::Gbps,
    ),
    ("topology", "link_delay", "link_delay_ns", Store::Ns),
    ("stride", "min_rto", "min_rto_us", Store::Us),
    ("tcp", "min_rto", "min_rto_us", Store::Us),
    ("watch", "every", "every_ns", Store::Ns),
    ("trace", "every", "every_ns", Store::Ns),
    ("tcp", "delack_timeout", "delack_timeout_us", Store::Us),
    ("tcp", "aimd_rto", "aimd_rto_us", Store::Us),
    ("workload", "bytes", "bytes", Store::Bytes),
    ("queue", "mtu_bytes", "mtu_bytes", Store::Bytes),
    ("stride", "send_buffer", "send_buffer", Store::Bytes),
    ("stride", "ack_interval", "ack_interval", Store::Bytes),
    ("stride", "delayed_ack", "delayed_ack_ns", Store::Ns),
    ("stride", "ack_ride", "ack_ride_ns", Store::Ns),
    ("stride", "send_batch", "send_batch", Store::Bytes),
    ("coexist", "every", "every", Store::Ns),
    ("coexist", "queue_every", "queue_every", Store::Ns),
    ("coexist", "settle", "settle", Store::Ns),
];

/// Controller parameters whose older key carried its unit: (section, new key, older key,
/// storage of the older value). The controller reads the new key itself, in the grammar; an
/// older key is rewritten to the new one with a note.
const RENAMED: &[(&str, &str, &str, Store)] = &[
    ("stride", "beta", "beta_mbps", Store::Mbps),
    ("stride", "wbeta", "wbeta_mbps", Store::Mbps),
    ("stride", "t_low", "t_low_ns", Store::Ns),
    ("stride", "t_high", "t_high_ns", Store::Ns),
];

/// The same for tables of named tables (`[section.NAME]`): each table's keys.
const NAMED_KEYS: &[(&str, &str, &str, Store)] = &[
    ("group", "start", "start", Store::Ns),
    ("group", "stop", "stop", Store::Ns),
    ("group", "bytes", "bytes", Store::Bytes),
];

/// The same for arrays of tables (`[[section]]`): each entry's keys.
const ARRAY_KEYS: &[(&str, &str, &str, Store)] = &[
    ("rate_change", "at", "at_ms", Store::Ms),
    ("rate_change", "rate", "gbps", Store::Gbps),
];

fn dotted(section: &str, key: &str) -> String {
    if section.is_empty() {
        key.to_string()
    } else {
        format!("{section}.{key}")
    }
}

/// Renames, in a validation message, the stored key to the key a user writes.
pub(crate) fn user_names(msg: &str) -> String {
    let mut m = msg.to_string();
    for (section, new, old, _) in KEYS {
        if new != old {
            m = m.replace(
                &format!("`{}`", dotted(section, old)),
                &format!("`{}`", dotted(section, new)),
            );
        }
    }
    for (section, new, old, _) in ARRAY_KEYS {
        if m.contains(&format!("`{section}[")) {
            m = m.replace(&format!("].{old}`"), &format!("].{new}`"));
        }
    }
    m
}

/// Renames, in a message of the file format's reader (`missing field `every_ns`` with `in
/// `trace``, or the list of the fields a section knows), each stored key of the section it
/// names (or of the top level, when it names none) to the key a user writes.
pub(crate) fn user_names_in_format_error(msg: &str) -> String {
    let mut m = user_names(msg);
    for (section, new, old, _) in KEYS {
        let here = if section.is_empty() {
            !m.contains("in `")
        } else {
            m.contains(&format!("in `{section}`"))
        };
        if new != old && here {
            m = m.replace(&format!("`{old}`"), &format!("`{new}`"));
        }
    }
    m
}

/// Reads `v` (at `field`) in the grammar and converts it to its storage.
fn convert(field: &str, v: &toml::Value, store: Store) -> Result<toml::Value, ScenarioError> {
    let bad = |why: String| ScenarioError(format!("field `{field}`: {why}"));
    let text = match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Integer(0) => "0".into(),
        toml::Value::Float(f) if *f == 0.0 => "0".into(),
        toml::Value::Integer(i) if matches!(store, Store::Bytes) => i.to_string(),
        other => {
            let hint = match store {
                Store::Gbps | Store::Mbps => "\"100gbit\" or \"500mbit\"",
                Store::Bytes => "\"1MB\" or 1000000",
                _ => "\"1us\" or \"20ms\"",
            };
            return Err(bad(format!(
                "{other} needs a unit: write a string such as {hint}"
            )));
        }
    };
    let int = |n: u64| {
        i64::try_from(n)
            .map(toml::Value::Integer)
            .map_err(|_| bad(format!("{text:?} is out of range")))
    };
    match store {
        Store::Ns => int(stride_units::parse_duration_ns(&text).map_err(bad)?),
        Store::Us => {
            let ns = stride_units::parse_duration_ns(&text).map_err(bad)?;
            if ns % 1000 != 0 {
                return Err(bad(format!("{text:?} must be whole microseconds")));
            }
            int(ns / 1000)
        }
        Store::Ms => Ok(toml::Value::Float(
            stride_units::parse_duration_ns(&text).map_err(bad)? as f64 / 1e6,
        )),
        Store::Gbps => Ok(toml::Value::Float(
            stride_units::parse_rate_bps(&text).map_err(bad)? as f64 / 1e9,
        )),
        Store::Mbps => Ok(toml::Value::Float(
            stride_units::parse_rate_bps(&text).map_err(bad)? as f64 / 1e6,
        )),
        Store::Bytes => int(stride_units::parse_bytes(&text).map_err(bad)?),
    }
}

/// The old key's value written in the grammar, for the deprecation note.
fn in_grammar(v: &toml::Value, store: Store) -> String {
    let f = match v {
        toml::Value::Integer(i) => *i as f64,
        toml::Value::Float(f) => *f,
        other => return other.to_string(),
    };
    let q = |s: String| format!("\"{s}\"");
    match store {
        Store::Ns => q(stride_units::fmt_duration_ns(f as u64)),
        Store::Us => q(stride_units::fmt_duration_ns((f * 1e3) as u64)),
        Store::Ms => q(stride_units::fmt_duration_ns((f * 1e6) as u64)),
        Store::Gbps => q(stride_units::fmt_rate_bps((f * 1e9) as u64)),
        Store::Mbps => q(stride_units::fmt_rate_bps((f * 1e6) as u64)),
        Store::Bytes => format!("{f}"),
    }
}

/// Rewrites one key of table `t` (named `section` in messages) into its stored form.
fn rewrite(
    t: &mut toml::Table,
    section: &str,
    (new, old, store): (&str, &str, Store),
    notes: &mut Vec<String>,
) -> Result<(), ScenarioError> {
    if new == old {
        if let Some(v) = t.get(new) {
            let v = convert(&dotted(section, new), v, store)?;
            t.insert(new.to_string(), v);
        }
        return Ok(());
    }
    match (t.remove(new), t.get(old)) {
        (Some(_), Some(_)) => {
            return Err(ScenarioError(format!(
                "field `{}`: give either `{new}` or the deprecated `{old}`, not both",
                dotted(section, new)
            )))
        }
        (Some(v), None) => {
            let v = convert(&dotted(section, new), &v, store)?;
            t.insert(old.to_string(), v);
        }
        (None, Some(v)) => notes.push(format!(
            "`{}` is deprecated: write `{new} = {}`",
            dotted(section, old),
            in_grammar(v, store)
        )),
        (None, None) => {}
    }
    Ok(())
}

/// Rewrites the unit-bearing keys of a scenario table into their stored form and returns one
/// deprecation note per older key found. `transports = "stride,dctcp"` (as `--set` gives it)
/// becomes a list.
pub fn normalize(table: &mut toml::Table) -> Result<Vec<String>, ScenarioError> {
    let mut notes = Vec::new();
    if let Some(toml::Value::String(s)) = table.get("transports") {
        let list = s
            .split(',')
            .map(|t| toml::Value::String(t.trim().to_string()))
            .collect();
        table.insert("transports".into(), toml::Value::Array(list));
    }
    for &(section, new, old, store) in KEYS {
        let t = if section.is_empty() {
            &mut *table
        } else {
            match table.get_mut(section) {
                Some(toml::Value::Table(t)) => t,
                _ => continue,
            }
        };
        rewrite(t, section, (new, old, store), &mut notes)?;
    }
    for &(section, new, old, store) in RENAMED {
        let Some(toml::Value::Table(t)) = table.get_mut(section) else {
            continue;
        };
        let Some(v) = t.remove(old) else { continue };
        if t.contains_key(new) {
            return Err(ScenarioError(format!(
                "field `{}`: give either `{new}` or the deprecated `{old}`, not both",
                dotted(section, new)
            )));
        }
        let number = match &v {
            toml::Value::Integer(i) => *i as f64,
            toml::Value::Float(f) => *f,
            other => {
                return Err(ScenarioError(format!(
                    "field `{}`: {other} is not a number",
                    dotted(section, old)
                )))
            }
        };
        let text = match store {
            Store::Mbps => format!("{number}mbit"),
            _ => format!("{number}ns"),
        };
        notes.push(format!(
            "`{}` is deprecated: write `{new} = {}`",
            dotted(section, old),
            in_grammar(&v, store)
        ));
        t.insert(new.to_string(), toml::Value::String(text));
    }
    // Named tables: every `[group.NAME]`.
    for &(section, new, old, store) in NAMED_KEYS {
        if let Some(toml::Value::Table(named)) = table.get_mut(section) {
            for (name, e) in named.iter_mut() {
                if let toml::Value::Table(t) = e {
                    rewrite(
                        t,
                        &format!("{section}.{name}"),
                        (new, old, store),
                        &mut notes,
                    )?;
                }
            }
        }
    }
    // Arrays of tables: every entry of `[[rate_change]]`.
    for &(section, new, old, store) in ARRAY_KEYS {
        if let Some(toml::Value::Array(entries)) = table.get_mut(section) {
            for (i, e) in entries.iter_mut().enumerate() {
                if let toml::Value::Table(t) = e {
                    rewrite(t, &format!("{section}[{i}]"), (new, old, store), &mut notes)?;
                }
            }
        }
    }
    Ok(notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(text: &str) -> Result<(toml::Table, Vec<String>), String> {
        let mut t: toml::Table = toml::from_str(text).unwrap();
        let notes = normalize(&mut t).map_err(|e| e.0)?;
        Ok((t, notes))
    }

    #[test]
    fn rate_change_entries_take_the_unit_grammar() {
        let (t, notes) = norm(
            "[[rate_change]]\nat = \"10ms\"\nrate = \"200mbit\"\nswitch = \"left\"\nport = 0\n\
             [[rate_change]]\nat_ms = 3510\ngbps = 1.0\nswitch = \"left\"\nport = 0\n",
        )
        .unwrap();
        let rc = t["rate_change"].as_array().unwrap();
        assert_eq!(rc[0]["at_ms"].as_float(), Some(10.0));
        assert_eq!(rc[0]["gbps"].as_float(), Some(0.2));
        assert_eq!(rc[1]["at_ms"].as_integer(), Some(3510));
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].contains("rate_change[1].at_ms"), "{notes:?}");
        let e = norm("[[rate_change]]\nat = 10\nswitch = \"left\"\nport = 0\n").unwrap_err();
        assert!(e.contains("rate_change[0].at"), "{e}");
    }

    #[test]
    fn new_keys_become_the_stored_fields() {
        let (t, notes) = norm(
            "limit = \"5ms\"\n[topology]\nhost_rate = \"100gbit\"\nlink_delay = \"1us\"\n\
             [stride]\nt_high = \"20us\"\nbeta = \"50mbit\"\nmin_rto = \"1ms\"\n\
             [workload]\nbytes = \"1MB\"\n",
        )
        .unwrap();
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(t["limit_ms"].as_float(), Some(5.0));
        assert_eq!(t["topology"]["host_gbps"].as_float(), Some(100.0));
        assert_eq!(t["topology"]["link_delay_ns"].as_integer(), Some(1000));
        // STRIDE's controller reads its own parameters in the grammar.
        assert_eq!(t["stride"]["t_high"].as_str(), Some("20us"));
        assert_eq!(t["stride"]["beta"].as_str(), Some("50mbit"));
        assert_eq!(t["stride"]["min_rto_us"].as_integer(), Some(1000));
        assert_eq!(t["workload"]["bytes"].as_integer(), Some(1_000_000));
        assert!(t["topology"].get("link_delay").is_none());
    }

    #[test]
    fn tcp_and_trace_durations_have_unit_spellings_and_old_ones_a_note() {
        let (t, notes) = norm(
            "[tcp]\ndelack_timeout = \"200us\"\naimd_rto = \"1ms\"\n[trace]\nevery = \"10us\"\n",
        )
        .unwrap();
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(t["tcp"]["delack_timeout_us"].as_integer(), Some(200));
        assert_eq!(t["tcp"]["aimd_rto_us"].as_integer(), Some(1000));
        assert_eq!(t["trace"]["every_ns"].as_integer(), Some(10_000));
        let (t, notes) =
            norm("[tcp]\ndelack_timeout_us = 40\naimd_rto_us = 2000\n[trace]\nevery_ns = 500\n")
                .unwrap();
        assert_eq!(t["tcp"]["delack_timeout_us"].as_integer(), Some(40));
        let all = notes.join("\n");
        for want in [
            "`tcp.delack_timeout_us` is deprecated: write `delack_timeout = \"40us\"`",
            "`tcp.aimd_rto_us` is deprecated: write `aimd_rto = \"2ms\"`",
            "`trace.every_ns` is deprecated: write `every = \"500ns\"`",
        ] {
            assert!(all.contains(want), "{want} not in {all}");
        }
        let e = norm("[tcp]\ndelack_timeout = \"1500ns\"\n").unwrap_err();
        assert!(
            e.contains("`tcp.delack_timeout`: \"1500ns\" must be whole microseconds"),
            "{e}"
        );
    }

    #[test]
    fn old_keys_still_work_with_a_deprecation_note_in_the_new_grammar() {
        let (t, notes) = norm("[topology]\nlink_delay_ns = 1000\nhost_gbps = 10.0\n").unwrap();
        assert_eq!(t["topology"]["link_delay_ns"].as_integer(), Some(1000));
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(
            notes[0].contains("`topology.host_gbps` is deprecated: write `host_rate = \"10gbit\"`")
        );
        assert!(
            notes[1].contains("write `link_delay = \"1us\"`"),
            "{notes:?}"
        );
    }

    #[test]
    fn bare_numbers_both_keys_and_bad_units_are_refused_naming_the_field() {
        for (text, want) in [
            (
                "[topology]\nlink_delay = 1000\n",
                "`topology.link_delay`: 1000 needs a unit",
            ),
            (
                "[topology]\nhost_rate = 100\n",
                "`topology.host_rate`: 100 needs a unit",
            ),
            (
                "[topology]\nlink_delay = \"1us\"\nlink_delay_ns = 1000\n",
                "give either `link_delay` or the deprecated `link_delay_ns`",
            ),
            (
                "[stride]\nmin_rto = \"1500ns\"\n",
                "must be whole microseconds",
            ),
            (
                "[watch]\nevery = \"10 parsecs\"\n",
                "`watch.every`: unknown time unit",
            ),
            (
                "[stride]\nt_low = \"1us\"\nt_low_ns = 1000\n",
                "give either `t_low` or the deprecated `t_low_ns`",
            ),
        ] {
            let e = norm(text).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    #[test]
    fn a_transports_string_becomes_a_list() {
        let (t, _) = norm("transports = \"stride, dctcp\"\n").unwrap();
        let names: Vec<_> = t["transports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(names, ["stride", "dctcp"]);
    }
}
