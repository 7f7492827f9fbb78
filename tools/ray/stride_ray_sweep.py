"""Runs the simulations of `stride sim sweep --ray ADDRESS` as Ray tasks.

The `stride` binary starts this script (embedded in it) with the Python named by
STRIDE_RAY_PYTHON (default python3) and writes one JSON document on its stdin:

    {"address": "...", "stride": "/path/to/stride", "scenario": "/abs/scenario.toml",
     "jobs": [{"transport": "stride", "sets": ["stride.t_high=40us", ...]}, ...]}

Each job becomes one Ray task running `stride sim compare SCENARIO --cc T --set ... --json` on
a worker; the script prints the JSON list of the jobs' transport reports, in job order, on its
stdout, and the binary builds the same table, sweep.csv and sweep.json as a local sweep. The
workers need the `stride` binary and the scenario (with the workload files it names) at the
same paths as the machine starting the sweep (a shared file system or the same checkout).

ADDRESS is what `ray.init(address=...)` takes: `auto`, `HOST:6379`, `ray://HOST:10001`, or
`local` to start a private Ray instance for this sweep and stop it at the end.
"""

import json
import subprocess
import sys

import ray


@ray.remote(num_cpus=1)
def simulate(stride, scenario, transport, sets):
    cmd = [stride, "sim", "compare", scenario, "--cc", transport, "--json"]
    for s in sets:
        cmd += ["--set", s]
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
    return json.loads(r.stdout)["transports"][transport]


def main():
    req = json.load(sys.stdin)
    ray.init(address=req["address"], logging_level="ERROR", log_to_driver=False)
    try:
        workers = int(ray.cluster_resources().get("CPU", 1))
        refs = [
            simulate.remote(req["stride"], req["scenario"], j["transport"], j["sets"])
            for j in req["jobs"]
        ]
        reports = ray.get(refs)
    finally:
        ray.shutdown()
    json.dump({"reports": reports, "workers": workers}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
