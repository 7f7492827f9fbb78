//! `stride testbed`: runs a testbed file (crates/stride-testbed) and draws its figures.

use anyhow::bail;
use clap::{Args, Subcommand};
use std::path::PathBuf;
use stride_testbed::scenario::{Mode, Testbed};

/// Arguments of `stride testbed`.
#[derive(Args, Debug)]
#[command(
    after_help = "Builds sender, bottleneck, receiver and generator network namespaces \
(root), a tbf/htb rate limit with a drop-tail queue on the bottleneck, background traffic, and runs \
STRIDE and kernel TCP flows through it. Without root, mode = auto falls back to the userspace relay \
(STRIDE only).\n\nExample:\n  stride testbed run scenarios/testbed-fig6.toml --out target/testbed/fig6"
)]
pub struct TestbedArgs {
    #[command(subcommand)]
    pub cmd: TestbedCmd,
}

/// Subcommands.
#[derive(Subcommand, Debug)]
pub enum TestbedCmd {
    /// Run the experiment a testbed file describes.
    Run {
        /// The testbed file (TOML).
        file: PathBuf,
        /// Output directory for results.json, tables.md and the plots (default target/testbed/NAME).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Override the file's mode: netns, relay or auto.
        #[arg(long)]
        mode: Option<String>,
        /// Override a field: `section.field=value` (repeatable), e.g.
        /// `--set stride.line_rate=800mbit --set foreground.blocks=[1,2]`.
        #[arg(long, value_name = "KEY=VALUE")]
        set: Vec<String>,
    },
}

/// `stride testbed`: the run writes results.json and tables.md; the figures are drawn here,
/// then the tables printed.
pub fn run(a: TestbedArgs) -> anyhow::Result<()> {
    stride_testbed::clean_up_on_interrupt();
    match a.cmd {
        TestbedCmd::Run {
            file,
            out,
            mode,
            set,
        } => {
            let tb = Testbed::load_with(&file, &set)?;
            let mode = match mode.as_deref() {
                None => None,
                Some("netns") => Some(Mode::Netns),
                Some("relay") => Some(Mode::Relay),
                Some("auto") => Some(Mode::Auto),
                Some(m) => bail!("--mode {m:?} is not netns, relay or auto"),
            };
            let out = out.unwrap_or_else(|| stride_testbed::default_out(&tb));
            let outcome = stride_testbed::run(&tb, mode, &out)?;
            for f in &outcome.figures {
                crate::plot::draw_figure(&out, f)?;
            }
            println!("{}", outcome.tables);
            eprintln!("stride testbed: results in {}", out.display());
            Ok(())
        }
    }
}
