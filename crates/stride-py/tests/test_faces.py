"""The same numbers from every face: `stride sim compare --json`, the Rust API
(stride_sim::outcome, through the `summary` example) and this package give identical summaries
(every value but the wall-clock ones) for one scenario and seed."""

import json
import subprocess

import stride_sim as ss
from conftest import QUICK, cargo_built, need, without_wall_clock

SETS = ["workload.flows=60", "seed=7"]


def run_json(cmd):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, check=False)
    assert p.returncode == 0, f"{cmd}: {p.stderr}"
    return json.loads(p.stdout)


def test_cli_rust_api_and_python_give_the_same_summary():
    cli, example = cargo_built("stride"), cargo_built("examples/summary")
    need(cli.exists() and example.exists(), f"{cli} or {example} not built (run cargo test first)")
    sets = [a for s in SETS for a in ("--set", s)]
    from_cli = run_json([cli, "sim", "compare", QUICK, "--cc", "stride,dctcp", "--json", *sets])
    from_rust = run_json([example, QUICK, "stride,dctcp", *SETS])
    from_python = ss.Scenario.load(QUICK, sets=SETS).compare(["stride", "dctcp"]).summary
    a, b, c = (without_wall_clock(s) for s in (from_cli, from_rust, from_python))
    assert a["transports"]["dctcp"]["completed"] == 60
    assert a == b, "CLI and Rust API differ"
    assert a == c, "CLI and Python differ"
