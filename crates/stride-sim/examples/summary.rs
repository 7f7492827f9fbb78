//! The summary of a comparison from the Rust API: the document `stride sim compare --json`
//! prints, from `stride_sim::outcome`. Run from the repository root:
//! `cargo run -p stride-sim --example summary -- scenarios/quick.toml stride,dctcp workload.flows=60`
//! (scenario, comma-separated transports, then `section.field=value` overrides).
use stride_sim::scenario::Scenario;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(path), Some(cc)) = (args.next(), args.next()) else {
        anyhow::bail!("usage: summary SCENARIO TRANSPORT[,TRANSPORT...] [KEY=VALUE...]");
    };
    let sets: Vec<String> = args.collect();
    let loaded = Scenario::load_with(path.as_ref(), &sets).map_err(|e| anyhow::anyhow!("{e}"))?;
    let transports: Vec<String> = cc.split(',').map(str::to_string).collect();
    let started = std::time::Instant::now();
    let runs = stride_sim::outcome::compare(&loaded, &transports)?;
    let summary = stride_sim::outcome::summary(&loaded, &runs, started.elapsed().as_secs_f64())?;
    println!("{}", serde_json::to_string(&summary)?);
    Ok(())
}
