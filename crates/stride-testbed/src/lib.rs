//! The paper's testbed (two hosts, a bottleneck, a background traffic generator) rebuilt on one
//! machine with network namespaces and a kernel rate limiter, running STRIDE against kernel TCP
//! (`stride testbed run FILE`).
//!
//! - [`topo`]: the namespaces, veth links and the `tbf`/`htb` bottleneck, or `htb-dscp` with
//!   STRIDE's DSCP in a class and queue of its own (root only), torn down
//!   on drop; without privilege the userspace relay of `stride_apps::relay` is the fallback
//!   (STRIDE only, since kernel TCP cannot cross a UDP relay);
//! - [`flows`]: foreground flows through one harness for both transports, the receiver, and the
//!   pinned-rate background generator (fixed, seeded random, linear patterns);
//! - [`scenario`]: the TOML format (rates, sizes and `--set` overrides in the grammar of
//!   `stride-units`);
//! - [`run`]: one experiment, returning its report, tables and figures ([`Outcome`]); the
//!   figures are data ([`Figure`]), which `stride testbed` draws.
//!
//! [`demo`] is `stride demo` through the same topology's kernel bottleneck (the relay where
//! namespaces cannot be made).
//!
//! Experiments, one module each: `fct` (Fig. 6 time per KB and Fig. 7 packets lost per block
//! category), `ack_interval` (Fig. 5), `stt` (Fig. 8a/8b) and `coexistence` (one STRIDE flow
//! next to one kernel TCP flow, which may leave early). Transports are interleaved flow by flow
//! (the coexistence pairings repetition by repetition) and figures use medians, because the
//! machine is shared.

pub mod demo;
mod env;
mod experiments;
pub mod flows;
mod report;
pub mod scenario;
pub mod topo;

pub use env::clean_up_on_interrupt;
pub use report::{Figure, FlowRecord, Outcome, Series};

use anyhow::{bail, Context};
use scenario::{Mode, Testbed};
use std::path::{Path, PathBuf};

/// Runs a testbed file in `mode` (default: the file's); writes `results.json` and `tables.md`
/// to `out` and returns them with the figures to draw there.
pub fn run(tb: &Testbed, mode: Option<Mode>, out: &Path) -> anyhow::Result<Outcome> {
    std::fs::create_dir_all(out).with_context(|| format!("create {}", out.display()))?;
    let mode = mode.unwrap_or(tb.mode);
    let env = env::Env::new(tb, mode)?;
    let exp = tb.file.experiment.as_str();
    if env.mode == "relay" && exp != "fct" {
        bail!(
            "experiment {exp:?} needs the namespace testbed (root); the relay fallback runs only experiment = \"fct\" (STRIDE only)"
        );
    }
    let outcome = match exp {
        "fct" => experiments::fct::run(tb, &env)?,
        "ack_interval" => experiments::ack::run(tb, &env)?,
        "stt" => experiments::stt::run(tb, &env)?,
        "coexistence" => experiments::coexist::run(tb, &env)?,
        _ => unreachable!("validated"),
    };
    std::fs::write(out.join("tables.md"), &outcome.tables)?;
    let path = out.join("results.json");
    std::fs::write(&path, serde_json::to_string_pretty(&outcome.report)?)?;
    Ok(outcome)
}

/// The default output directory of a testbed file: `target/testbed/NAME`.
pub fn default_out(tb: &Testbed) -> PathBuf {
    PathBuf::from("target/testbed").join(&tb.file.name)
}
