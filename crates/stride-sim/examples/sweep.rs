//! A parameter sweep from Rust: STRIDE's T_high at two values on the quick scenario, each
//! point against DCTCP on the same flows. Run from the repository root:
//! `cargo run --release -p stride-sim --example sweep`.
use stride_sim::sweep::{run, table, SweepSpec};

fn main() -> anyhow::Result<()> {
    let spec = SweepSpec {
        scenario: "scenarios/quick.toml".into(),
        vary: vec!["stride.t_high=40us,80us".into()],
        transport: "stride".into(),
        baseline: Some("dctcp".into()),
        sets: vec!["workload.flows=50".into()],
        jobs: None,
    };
    let out = run(&spec)?;
    print!("{}", table(&out.keys, &out.rows, spec.baseline.as_deref()));
    Ok(())
}
