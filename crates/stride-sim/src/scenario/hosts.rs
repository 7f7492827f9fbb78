//! The host side of a scenario: STRIDE's endpoint configuration from `[stride]`, the
//! registry controllers' parameters from `[cc.NAME]`, and the host stacks of a transport.

use super::{bad, Scenario, ScenarioError};
use crate::engine::HostStack;
use stride_proto::cc::{rate_from_gbps, CcConfig, StrideParams};
use stride_proto::EchoPolicy;

/// A TOML value as the text a controller parameter is read from.
fn toml_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

impl Scenario {
    /// The registry's controller `name` at line rate `line` with its `[cc.NAME]` parameters
    /// applied; an error names the bad field (`cc.swift.base_target`).
    pub fn controller(&self, name: &str, line: u32) -> Result<CcConfig, ScenarioError> {
        if name == "stride" || name == "stride-paper" {
            return Err(bad(
                &format!("cc.{name}"),
                "STRIDE's parameters are set in [stride]",
            ));
        }
        let mut c = CcConfig::by_name(name, line).map_err(|e| bad(&format!("cc.{name}"), e))?;
        self.apply_cc(name, &mut c)?;
        Ok(c)
    }

    /// Sets `[stride]`'s controller parameters (the section's keys other than its connection
    /// fields) on `c`, a controller with STRIDE's parameters (not validated: the caller does, after its
    /// own settings); an error names the bad field.
    pub fn apply_stride_params(&self, c: &mut CcConfig) -> Result<(), ScenarioError> {
        for (key, value) in &self.stride.controller {
            let known = StrideParams::PARAMS.iter().any(|p| p.name == key);
            if !known {
                return Err(bad(
                    &format!("stride.{key}"),
                    format!(
                        "unknown key; STRIDE's controller has: {}",
                        StrideParams::PARAMS
                            .iter()
                            .map(|p| p.name)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
            c.set(key, &toml_text(value))
                .map_err(|e| bad(&format!("stride.{key}"), e))?;
        }
        Ok(())
    }

    /// Sets the `[cc.NAME]` parameters on `c` (a controller `name` whose defaults the caller
    /// chose, e.g. from the fabric) and validates it; an error names the bad field.
    pub fn apply_cc(&self, name: &str, c: &mut CcConfig) -> Result<(), ScenarioError> {
        for (key, value) in self.cc.get(name).into_iter().flatten() {
            c.set(key, &toml_text(value))
                .map_err(|e| bad(&format!("cc.{name}.{key}"), e))?;
        }
        c.validate()
            .map_err(|(field, why)| bad(&format!("cc.{name}.{field}"), why))
    }

    /// The STRIDE endpoint configuration (core defaults for the host rate, overridden by the file).
    pub fn stride_config(&self) -> Result<stride_proto::Config, ScenarioError> {
        let gbps = self.host_bps() as f64 / 1e9;
        let mut cfg = stride_proto::Config::for_line_rate_gbps(gbps);
        let line = rate_from_gbps(gbps);
        let mut cc = CcConfig::stride(StrideParams::for_line_rate(line));
        self.apply_stride_params(&mut cc)?;
        let mut p = *cc.params_ref::<StrideParams>().expect("stride");
        let s = &self.stride;
        if let Some(f) = s.start_fraction {
            if !(f > 0.0 && f <= 1.0) {
                return Err(bad("stride.start_fraction", "must be in (0, 1]"));
            }
            p.rate_init = ((f64::from(line) * f) as u32).max(p.rate_min);
        }
        if let Err((f, why)) = p.validate() {
            return Err(bad(&format!("stride.{f}"), why));
        }
        cfg.cc = CcConfig::stride(p);
        if let Some(e) = &s.echo {
            cfg.echo = match e.as_str() {
                "min" => EchoPolicy::Min,
                "last" => EchoPolicy::Last,
                _ => {
                    return Err(bad(
                        "stride.echo",
                        format!("{e:?}: use \"last\" or \"min\""),
                    ))
                }
            };
        }
        if let Some(v) = s.ack_interval {
            cfg.ack_interval = v;
        }
        if let Some(v) = s.delayed_ack_ns {
            cfg.delayed_ack_ns = v;
        }
        if let Some(v) = s.min_rto_us {
            cfg.min_rto_ns = v * 1000;
        }
        if let Some(v) = s.max_payload {
            cfg.max_payload = v;
        }
        if let Some(r) = &s.recovery {
            cfg.recovery = r.parse().map_err(|e: String| bad("stride.recovery", e))?;
        }
        if let Some(v) = s.handshake_rtt {
            cfg.handshake_rtt = v;
        }
        if let Some(v) = s.rx_share {
            cfg.rx_share = v;
        }
        if let Some(v) = s.ack_ride_ns {
            cfg.ack_ride_ns = v;
        }
        if let Some(v) = s.send_batch {
            cfg.send_batch_bytes = v;
        }
        // The sender holds real bytes; the core's 4 MiB default times a thousand concurrent
        // flows is gigabytes. 400 µs at the line rate covers the fabric RTT with full queues
        // (`stride sim sweep scenarios/quick.toml --vary stride.send_buffer=...`: no change
        // in any FCT from 256 KiB to 4 MiB at 10 Gbit/s).
        cfg.send_buffer = s
            .send_buffer
            .unwrap_or(((gbps * 50_000.0) as usize).max(256 << 10));
        // a simulated flow never idles for long; keep linger short so tables stay small
        cfg.linger_ns = cfg.max_rto_ns.min(100_000_000);
        if let Err((f, why)) = cfg.validate() {
            return Err(bad(&format!("stride.{f}"), why));
        }
        Ok(cfg)
    }

    /// Host stacks for one transport (any name in `crate::transport::TRANSPORTS`).
    pub fn stacks(&self, transport: &str) -> Result<Vec<Box<dyn HostStack>>, ScenarioError> {
        let Some(tr) = crate::transport::find(transport) else {
            return Err(bad(
                "transports",
                format!(
                    "unknown transport {transport:?} ({})",
                    crate::transport::names().join(", ")
                ),
            ));
        };
        tr.build(self, self.hosts())
    }
}
