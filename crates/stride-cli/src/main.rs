//! The `stride` command line tool.
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "stride",
    version,
    about = "STRIDE: a delay-based, hardware-friendly reliable transport"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Regenerate or check the shared test vectors under vectors/.
    Vectors(vectors::Args),
}

mod vectors;

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Vectors(a) => vectors::run(a),
    }
}
