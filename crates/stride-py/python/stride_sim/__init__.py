"""STRIDE's packet-level datacenter simulator from Python.

The simulator itself is the Rust library behind the ``stride`` CLI (``stride-sim``), loaded as
the extension module ``stride_sim._native``: the same scenarios, the same ``--set`` overrides,
the same numbers. A run releases the GIL, so a thread pool runs several at once.

    import stride_sim as ss
    sc = ss.Scenario.load("scenarios/quick.toml", sets=["workload.flows=100"])
    cmp = sc.compare(["stride", "dctcp"])
    cmp.categories.to_pandas()          # FCT and slowdown per size category and transport
    cmp["stride"].flows.to_pandas()     # one row per flow

Results are :class:`Table` objects (columns as lists); ``Table.to_pandas()`` makes a pandas
DataFrame (pandas is needed only then). Errors in a scenario or an override raise
:class:`ScenarioError` (a ``ValueError``) whose ``field`` names the bad field.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _native
from ._native import Progress, ScenarioError

__all__ = [
    "Comparison",
    "Progress",
    "Run",
    "Scenario",
    "ScenarioError",
    "Sweep",
    "Table",
    "WALL_CLOCK_KEYS",
    "load",
    "sweep",
    "transports",
]

#: The summary keys that measure the machine (wall time, events per second), not the
#: simulation: every other value is the same on every run of one scenario, seed and build.
WALL_CLOCK_KEYS: Tuple[str, ...] = tuple(_native.wall_clock_keys())

#: Overrides: ``"section.field=value"`` strings (the CLI's ``--set``), or a mapping of
#: ``"section.field"`` to a value (a number, bool, string such as ``"40us"``, or list).
Sets = Union[str, Iterable[str], Mapping[str, Any], None]

CATEGORIES = ("I", "II", "III", "IV", "all")


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, str):
        return v
    raise TypeError(f"override value {v!r}: a number, bool, string or list")


def _sets(sets: Sets) -> List[str]:
    """Normalizes overrides to the CLI's ``section.field=value`` strings."""
    if sets is None:
        return []
    if isinstance(sets, str):
        return [sets]
    if isinstance(sets, Mapping):
        return [f"{k}={_toml_value(v)}" for k, v in sets.items()]
    out: List[str] = []
    for s in sets:
        out.extend(_sets(s))
    return out


def _vary(vary: Sets) -> List[str]:
    """Normalizes sweep lists to ``section.field=v1,v2,...`` strings."""
    if isinstance(vary, Mapping):
        return [
            f"{k}={','.join(_toml_value(x) for x in (v if isinstance(v, (list, tuple)) else [v]))}"
            for k, v in vary.items()
        ]
    if isinstance(vary, str):
        return [vary]
    out: List[str] = []
    for v in vary or []:
        out.extend(_vary(v))
    return out


class Table:
    """Columns of equal length, by name (``table["fct_ns"]`` is a list).

    ``to_pandas()`` makes a DataFrame; ``rows()`` gives one dict per row.
    """

    def __init__(self, columns: Mapping[str, List[Any]]):
        self._cols: Dict[str, List[Any]] = dict(columns)

    @property
    def columns(self) -> List[str]:
        return list(self._cols)

    def __getitem__(self, name: str) -> List[Any]:
        return self._cols[name]

    def __len__(self) -> int:
        return len(next(iter(self._cols.values()), []))

    def __repr__(self) -> str:
        return f"Table({len(self)} rows: {', '.join(self._cols)})"

    def rows(self) -> List[Dict[str, Any]]:
        names = list(self._cols)
        return [dict(zip(names, r)) for r in zip(*self._cols.values())]

    def to_dict(self) -> Dict[str, List[Any]]:
        return {k: list(v) for k, v in self._cols.items()}

    def to_pandas(self) -> "Any":
        """The table as a pandas DataFrame (needs pandas)."""
        try:
            import pandas as pd
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError(
                "Table.to_pandas() needs pandas: pip install pandas (or use the columns as lists)"
            ) from e
        return pd.DataFrame(self._cols, columns=list(self._cols))

    @staticmethod
    def concat(parts: Sequence[Tuple[Dict[str, Any], "Table"]]) -> "Table":
        """Stacks tables, each with constant columns first (e.g. ``{"transport": "dctcp"}``)."""
        cols: Dict[str, List[Any]] = {}
        for const, t in parts:
            n = len(t)
            names = list(const) + t.columns
            for c in names:
                cols.setdefault(c, [])
            for c in names:
                cols[c].extend([const[c]] * n if c in const else t[c])
        return Table(cols)


def _categories(report: Mapping[str, Any]) -> Table:
    cats = report["categories"]
    names = ["flows", "avg_fct_us", "p50_fct_us", "p99_fct_us", "avg_slowdown", "p99_slowdown"]
    cols: Dict[str, List[Any]] = {"category": [c for c in CATEGORIES if c in cats]}
    for n in names:
        cols[n] = [cats[c][n] for c in cols["category"]]
    return Table(cols)


class Run:
    """One transport's finished run: ``summary`` (its report, as in ``stride sim run --json``)
    and its measurements as tables."""

    def __init__(self, native: "_native.Run"):
        self._n = native
        self.transport: str = native.transport
        self.summary: Dict[str, Any] = json.loads(native.report_json())
        self._cache: Dict[str, Table] = {}

    def _table(self, name: str) -> Table:
        if name not in self._cache:
            self._cache[name] = Table(getattr(self._n, name)())
        return self._cache[name]

    @property
    def flows(self) -> Table:
        """Per flow: src, dst, bytes, start_ns, fct_ns, ideal_ns, slowdown, delivered_bytes,
        goodput_gbps, category (fct_ns and slowdown None if unfinished)."""
        return self._table("flows")

    @property
    def queue(self) -> Table:
        """Queue samples of the watched ports (``[watch]``): t_ns, port, from, to, bytes."""
        return self._table("queue")

    @property
    def trace(self) -> Table:
        """Sender state of the traced flows (``[trace]``): t_ns, flow, cwnd_bytes, rate_gbps,
        alpha, rtt_ns, queueing_ns, stt_ns, branch, delivered_bytes."""
        return self._table("trace")

    @property
    def jain(self) -> Table:
        """Jain's index over time (``[trace]``): t_ns, jain, flows."""
        return self._table("jain")

    @property
    def categories(self) -> Table:
        """Per size category (I..IV, all): flows, avg/p50/p99 FCT (us), avg/p99 slowdown."""
        return _categories(self.summary)

    def csv(self, which: str = "flows") -> str:
        """The CSV ``stride sim run --out`` writes: ``flows``, ``queue``, ``trace`` or ``jain``."""
        return self._n.csv(which)

    def __repr__(self) -> str:
        s = self.summary
        return f"Run({self.transport!r}, {s['completed']}/{s['flows_total']} flows done)"


class Comparison:
    """Several transports on identical flows: ``summary`` is the document
    ``stride sim compare --json`` prints; ``runs`` (or ``cmp["dctcp"]``) each transport's run;
    the tables stack every run's rows with a ``transport`` column first."""

    def __init__(self, runs: List[Run], summary: Dict[str, Any]):
        self.runs: Dict[str, Run] = {r.transport: r for r in runs}
        self.summary = summary

    def __getitem__(self, transport: str) -> Run:
        return self.runs[transport]

    @property
    def improvement(self) -> Dict[str, Any]:
        """Other transport's FCT / STRIDE's, per transport, category and avg/p99."""
        return self.summary["improvement"]

    def _stack(self, name: str) -> Table:
        return Table.concat([({"transport": t}, getattr(r, name)) for t, r in self.runs.items()])

    @property
    def flows(self) -> Table:
        return self._stack("flows")

    @property
    def queue(self) -> Table:
        return self._stack("queue")

    @property
    def trace(self) -> Table:
        return self._stack("trace")

    @property
    def jain(self) -> Table:
        return self._stack("jain")

    @property
    def categories(self) -> Table:
        return self._stack("categories")

    def __repr__(self) -> str:
        return f"Comparison({', '.join(self.runs)})"


class Scenario:
    """A validated scenario: from a file (:meth:`load`), TOML text (:meth:`from_toml`) or a
    dict (:meth:`from_dict`), with overrides in the grammar of ``--set``."""

    def __init__(self, native: "_native.Scenario"):
        self._n = native

    @staticmethod
    def load(path: Union[str, "os.PathLike[str]"], sets: Sets = None) -> "Scenario":
        """Loads a scenario file; workload files resolve against its directory."""
        return Scenario(_native.Scenario.load(os.fspath(path), _sets(sets)))

    @staticmethod
    def from_toml(text: str, base_dir: Union[str, "os.PathLike[str]"] = ".", sets: Sets = None) -> "Scenario":
        """A scenario from TOML text; workload files resolve against ``base_dir``."""
        return Scenario(_native.Scenario.from_toml(text, os.fspath(base_dir), _sets(sets)))

    @staticmethod
    def from_dict(
        d: Mapping[str, Any], base_dir: Union[str, "os.PathLike[str]"] = ".", sets: Sets = None
    ) -> "Scenario":
        """A scenario from a dict shaped like the TOML file (sections as nested dicts)."""
        return Scenario(_native.Scenario.from_json(json.dumps(d), os.fspath(base_dir), _sets(sets)))

    def with_sets(self, *sets: Sets) -> "Scenario":
        """The same scenario with more overrides (``"stride.t_high=40us"``, or a mapping)."""
        return Scenario(self._n.with_sets(_sets(list(sets))))

    @property
    def name(self) -> str:
        return self._n.name

    @property
    def seed(self) -> int:
        return self._n.seed

    @property
    def hosts(self) -> int:
        return self._n.hosts

    @property
    def flow_count(self) -> int:
        return self._n.flow_count

    @property
    def transports(self) -> List[str]:
        """What ``stride sim run`` simulates: the transports the file lists (a scenario with
        ``[group.NAME]`` sections: its one mixed run)."""
        return self._n.transports

    @property
    def sets(self) -> List[str]:
        return self._n.sets

    @property
    def path(self) -> Optional[str]:
        return self._n.path

    @property
    def notes(self) -> List[str]:
        """Deprecation notes of keys the scenario or its overrides used."""
        return self._n.notes

    def files(self) -> List[Tuple[str, str]]:
        """The files the scenario reads besides itself, as (key, path)."""
        return self._n.files()

    def to_toml(self) -> str:
        return self._n.to_toml()

    def to_dict(self) -> Dict[str, Any]:
        return json.loads(self._n.to_json())

    def run(self, transport: str = "stride", progress: Optional[Progress] = None) -> Run:
        """Runs one transport to the scenario's end (the GIL is released meanwhile);
        ``progress`` (a :class:`Progress`) is updated as it goes, readable from other threads."""
        return Run(self._n.run(transport, progress))

    def compare(self, transports: Optional[Sequence[str]] = None) -> Comparison:
        """Runs each transport (default: the scenario's) on identical flows, in parallel."""
        runs, summary = self._n.compare(list(transports or self.transports))
        return Comparison([Run(r) for r in runs], json.loads(summary))

    def __repr__(self) -> str:
        return repr(self._n)


def load(path: Union[str, "os.PathLike[str]"], sets: Sets = None) -> Scenario:
    """Same as :meth:`Scenario.load`."""
    return Scenario.load(path, sets)


def transports() -> List[str]:
    """Every transport name the simulator knows."""
    return list(_native.transports())


class Sweep:
    """A finished sweep: ``result`` (``sweep.json``), ``csv`` (``sweep.csv``), ``text`` (the
    table ``stride sim sweep`` prints) and ``points`` (one row per point, flattened)."""

    def __init__(self, result: str, csv: str, text: str, simulations: int, workers: int):
        self.result: Dict[str, Any] = json.loads(result)
        self.csv = csv
        self.text = text
        self.simulations = simulations
        self.workers = workers

    @property
    def points(self) -> Table:
        keys = self.result["keys"]
        rows = []
        for p in self.result["points"]:
            r = {k: p[k] for k in keys}
            r.update(completed=p["completed"], flows=p["flows"], drops=p["drops"])
            for c, s in p["categories"].items():
                r[f"{c}_avg_fct_us"] = s["avg_fct_us"]
                r[f"{c}_p99_fct_us"] = s["p99_fct_us"]
            if "improvement" in p:
                for f in ("avg", "p99"):
                    r[f"improvement_all_{f}"] = p["improvement"].get("all", {}).get(f)
            rows.append(r)
        names: List[str] = []
        for r in rows:
            names.extend(k for k in r if k not in names)
        return Table({n: [r.get(n) for r in rows] for n in names})


def sweep(
    scenario: Union[str, "os.PathLike[str]", Scenario],
    vary: Sets,
    transport: str = "stride",
    baseline: Optional[str] = None,
    sets: Sets = None,
    jobs: Optional[int] = None,
    ray: Optional[str] = None,
    ray_options: Optional[Mapping[str, Any]] = None,
) -> Sweep:
    """``stride sim sweep``: ``transport`` over every combination of the ``vary`` lists
    (``"stride.t_high=40us,80us"``), optionally against ``baseline`` on the same flows.

    On this machine's threads by default; with ``ray`` (an address for ``ray.init``: ``auto``,
    ``HOST:6379``, ``ray://HOST:10001``, or ``local``) as Ray tasks that ship this package and
    the scenario with its files to the workers (see :mod:`stride_sim.ray`).
    """
    if isinstance(scenario, Scenario):
        if scenario.path is None:
            raise ValueError("a sweep needs a scenario file (Scenario.load)")
        sets = list(scenario.sets) + _sets(sets)
        scenario = scenario.path
    path = os.fspath(scenario)
    vary_list = _vary(vary)
    if ray is None:
        out = _native.sweep(path, vary_list, transport, baseline, _sets(sets), jobs)
        return Sweep(*out)
    import tempfile

    from .ray import executor

    with tempfile.TemporaryDirectory(prefix="stride-sweep-") as bundle:
        ex = executor(ray, **dict(ray_options or {}))
        out = _native.sweep(path, vary_list, transport, baseline, _sets(sets), None, ex, bundle)
    return Sweep(*out)
