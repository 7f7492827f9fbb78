"""A sweep from the package on a two-node Ray cluster whose second node cannot see the
checkout: the sweep's tasks run only there (a custom resource only it has), so they can run
only with what Ray shipped them (this package through `py_modules`, the scenario and its
workload file through `working_dir`), and the table, CSV and JSON are byte-identical to the
local sweep's.

The second node runs in its own mount namespace (`unshare -m`, as root) where the checkout
and the directory this package was imported from are empty tmpfs mounts, with an empty
working directory. Both nodes are `ray start --block` processes in their own sessions with
their own `--temp-dir`, stopped by signalling their process groups (no `ray stop`, which would
stop every Ray instance of the machine). Needs the `ray` CLI beside this Python, root and
`unshare`; it skips (fails under STRIDE_REQUIRE_PY=1) without them. About 30-60 s.
"""

import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest
import stride_sim as ss
from conftest import QUICK, REPO, need

RAY = pathlib.Path(sys.executable).with_name("ray")
PKG = pathlib.Path(ss.__file__).resolve().parent
VARY = {"workload.load": [0.3, 0.6]}
SETS = ["workload.flows=20"]

# Mounts an empty tmpfs over each path before `--`, keeping the virtualenv ($KEEP) visible
# even when it lies inside one of them, then runs the rest in $RUN_IN.
HIDE = r"""
set -e
if [ -n "$KEEP" ]; then mkdir -p "$STASH"; mount --bind "$KEEP" "$STASH"; fi
while [ "$1" != "--" ]; do mount -t tmpfs tmpfs "$1"; shift; done
shift
if [ -n "$KEEP" ]; then mkdir -p "$KEEP"; mount --bind "$STASH" "$KEEP"; fi
cd "$RUN_IN"
exec "$@"
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ray_env():
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RAY_ADDRESS")}
    env.update(
        RAY_USAGE_STATS_ENABLED="0",
        RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="1",
        RAY_AUTH_MODE="token",
        RAY_AUTH_TOKEN=os.urandom(16).hex(),
    )
    return env


class Node:
    """A `ray start --block` process group."""

    def __init__(self, args, env, log, hide=(), cwd=None, keep=""):
        cmd = [str(RAY), "start", "--block", *args]
        if hide:
            cmd = ["unshare", "-m", "sh", "-c", HIDE, "hide", *map(str, hide), "--", *cmd]
            env = dict(env, KEEP=keep, STASH=str(pathlib.Path(cwd).parent / "stash"), RUN_IN=str(cwd))
        self.log = open(log, "w")
        self.p = subprocess.Popen(
            cmd, env=env, cwd=cwd, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def signal(self, sig):
        try:
            os.killpg(self.p.pid, sig)
        except ProcessLookupError:
            pass


def stop(nodes, top):
    """SIGTERM to the nodes' process groups, SIGKILL after 5 s, then any process left that
    names this cluster's directory (one that left the group)."""
    for n in nodes:
        n.signal(signal.SIGTERM)
    deadline = time.time() + 5
    for n in nodes:
        try:
            n.p.wait(max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            pass
        n.signal(signal.SIGKILL)
        n.p.wait()
        n.log.close()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if str(top).encode() in f.read():
                    os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass


@pytest.fixture
def cluster(monkeypatch):
    need(RAY.exists(), f"{RAY} not found (the ray CLI of this Python's virtualenv)")
    need(os.geteuid() == 0 and shutil.which("unshare") is not None,
         "hiding the checkout from the second node needs root and unshare")
    env = ray_env()
    for k in ("RAY_USAGE_STATS_ENABLED", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN"):
        monkeypatch.setenv(k, env[k])
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    top = pathlib.Path(tempfile.mkdtemp(prefix="sr", dir="/tmp"))
    (top / "empty").mkdir()
    port = free_port()
    address = f"127.0.0.1:{port}"
    common = ["--node-ip-address", "127.0.0.1", "--disable-usage-stats"]
    nodes = [
        Node(["--head", "--port", str(port), "--num-cpus", "1", "--include-dashboard=false",
              "--temp-dir", str(top / "t1"), *common], env, top / "head.log"),
    ]
    try:
        venv = pathlib.Path(sys.prefix)
        hide = [REPO, PKG.parent]
        keep = str(venv) if any(h in venv.parents or h == venv for h in hide) else ""
        nodes.append(Node(["--address", address, "--num-cpus", "2", "--resources", '{"shipped": 2}',
                           "--temp-dir", str(top / "t2"), *common],
                          env, top / "node2.log", hide=hide, cwd=top / "empty", keep=keep))
        wait_for_nodes(address, 2, top)
        yield address, top
    finally:
        stop(nodes, top)
        shutil.rmtree(top, ignore_errors=True)


def wait_for_nodes(address, n, top):
    """Connects once the head is up, then waits until `n` nodes are alive."""
    import ray

    deadline = time.time() + 90
    last = None
    while True:
        try:
            if not ray.is_initialized():
                ray.init(address=address, logging_level="ERROR", log_to_driver=False)
            if len([x for x in ray.nodes() if x["Alive"]]) >= n:
                ray.shutdown()
                return
        except Exception as e:  # the head is not up yet
            last = e
        if time.time() > deadline:
            ray.shutdown()
            logs = "".join(p.read_text()[-2000:] for p in top.glob("*.log"))
            pytest.fail(f"the Ray cluster at {address} did not get {n} nodes: {last}\n{logs}")
        time.sleep(0.5)


def where_am_i(path):
    """Runs on the second node: where the package came from, and whether `path` is visible."""
    import stride_sim

    return stride_sim.__file__, os.getcwd(), os.path.exists(path)


def test_sweep_ships_itself_to_a_node_without_the_checkout(cluster):
    import ray
    from ray import cloudpickle

    address, top = cluster
    local = ss.sweep(QUICK, VARY, baseline="dctcp", sets=SETS)
    remote = ss.sweep(QUICK, VARY, baseline="dctcp", sets=SETS, ray=address,
                      ray_options={"resources": {"shipped": 1}})
    assert remote.workers == 3
    assert remote.csv == local.csv
    assert remote.text == local.text
    assert remote.result == local.result
    # where such a task runs: this package from Ray's copy, in a copy of the bundle, and the
    # checkout out of sight
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    ray.init(address=address, logging_level="ERROR", log_to_driver=False,
             runtime_env={"py_modules": [str(PKG)]})
    try:
        probe = ray.remote(num_cpus=1, resources={"shipped": 1})(where_am_i)
        module, cwd, sees = ray.get(probe.remote(str(QUICK)))
    finally:
        ray.shutdown()
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    assert not sees, f"the second node sees {QUICK}"
    assert not module.startswith(str(PKG)) and "runtime_resources" in module, module
    assert not cwd.startswith(str(REPO)), cwd
