//! `stride vectors`: placeholder replaced once stride-proto's vector generator lands.
#[derive(clap::Args)]
pub struct Args {}
pub fn run(_a: Args) -> anyhow::Result<()> {
    anyhow::bail!("not yet implemented")
}
