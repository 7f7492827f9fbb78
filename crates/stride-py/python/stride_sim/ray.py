"""Sweeps as Ray tasks that ship what the workers need.

:func:`stride_sim.sweep` with ``ray=ADDRESS`` plans the sweep here, copies the scenario and the
files it reads into a bundle directory (``scenario.toml`` and ``files/``, with overrides that
point at the copies), and runs one Ray task per simulation with::

    runtime_env = {"working_dir": BUNDLE, "py_modules": [THIS PACKAGE'S DIRECTORY]}

so a worker needs only Python and Ray: Ray uploads the package (with its compiled simulator,
an abi3 module for CPython 3.9 on, built for this machine's OS and architecture) and the
bundle to the cluster, and each task runs in a copy of the bundle. The reports come back as
JSON and the table, CSV and JSON are built here exactly as for a local sweep.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

Job = Tuple[str, List[str]]


def simulate(transport: str, sets: List[str]) -> str:
    """A Ray task's body: one simulation of the bundle in the working directory, as JSON."""
    from . import _native

    return _native.simulate_report("scenario.toml", sets, transport)


def executor(
    address: str,
    resources: Optional[Mapping[str, float]] = None,
    init: Optional[Mapping[str, Any]] = None,
) -> Callable[[str, Sequence[Job]], Tuple[List[str], int]]:
    """The function :func:`stride_sim.sweep` hands the simulations to: it connects to the Ray
    cluster at ``address`` (``local`` starts a private one), runs one task per simulation
    (``num_cpus=1`` and ``resources``, e.g. ``{"big_memory": 1}``) and disconnects.
    ``init`` adds keyword arguments to ``ray.init``.
    """

    def run(bundle: str, jobs: Sequence[Job]) -> Tuple[List[str], int]:
        import ray

        here = os.path.dirname(os.path.abspath(__file__))
        env: Dict[str, Any] = {"working_dir": bundle, "py_modules": [here]}
        kw: Dict[str, Any] = {"logging_level": "ERROR", "log_to_driver": False}
        kw.update(init or {})
        kw["runtime_env"] = {**env, **kw.get("runtime_env", {})}
        ray.init(address=None if address == "local" else address, **kw)
        try:
            workers = int(ray.cluster_resources().get("CPU", 1))
            remote = ray.remote(num_cpus=1, resources=dict(resources or {}))(simulate)
            reports = ray.get([remote.remote(t, list(s)) for t, s in jobs])
        finally:
            ray.shutdown()
        return list(reports), workers

    return run
