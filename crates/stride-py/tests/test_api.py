"""The package's API: scenarios from a file, a dict or TOML text, overrides in the grammar of
`--set`, runs and comparisons as tables, errors naming the field, runs in a thread pool."""

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import stride_sim as ss
from conftest import QUICK, REPO, without_wall_clock

SMALL = ["workload.flows=60"]


def test_load_with_overrides_in_both_forms():
    a = ss.Scenario.load(QUICK, sets=["workload.flows=60", "stride.t_high=40us"])
    b = ss.load(str(QUICK), sets={"workload.flows": 60, "stride.t_high": "40us"})
    assert a.flow_count == b.flow_count == 60
    assert a.sets == b.sets == ["workload.flows=60", "stride.t_high=40us"]
    assert a.hosts == 16 and a.name == "quick" and a.seed == 1
    c = a.with_sets("seed=2")
    assert c.seed == 2 and a.seed == 1
    assert a.files() == [("workload.cdf", str(REPO / "scenarios/workloads/WebSearch_distribution.txt"))]


def test_dict_and_toml_text_give_the_files_scenario():
    from_file = ss.Scenario.load(QUICK, sets=SMALL)
    d = from_file.to_dict()
    assert d["workload"]["flows"] == 60 and d["topology"]["kind"] == "leaf_spine"
    base = REPO / "scenarios"
    from_dict = ss.Scenario.from_dict(d, base_dir=base)
    from_text = ss.Scenario.from_toml(from_file.to_toml(), base_dir=base)
    runs = [s.run("dctcp").summary for s in (from_file, from_dict, from_text)]
    assert without_wall_clock(runs[0]) == without_wall_clock(runs[1]) == without_wall_clock(runs[2])
    assert runs[0]["completed"] == 60


def test_run_gives_tables():
    sc = ss.Scenario.load(QUICK, sets=SMALL + ["trace.flows=[0, 1]", "trace.every=20us"])
    r = sc.run("stride")
    assert r.transport == "stride" and r.summary["flows_total"] == 60
    flows = r.flows
    assert len(flows) == 60 and flows.columns[:4] == ["src", "dst", "bytes", "start_ns"]
    done = [f for f in flows["fct_ns"] if f is not None]
    assert len(done) == r.summary["completed"]
    assert set(flows["category"]) <= {"I", "II", "III", "IV"}
    cats = r.categories
    assert cats["category"] == ["I", "II", "III", "IV", "all"]
    assert cats["flows"][-1] == r.summary["completed"]
    assert len(r.queue) > 0 and set(r.queue.columns) == {"t_ns", "port", "from", "to", "bytes"}
    assert len(r.trace) > 0 and set(r.trace["flow"]) <= {0, 1}
    assert len(r.jain) > 0
    # the CSV is the one `stride sim run --out` writes
    assert r.csv("flows").splitlines()[0].startswith("src,dst,bytes,start_ns,fct_ns")
    assert len(r.csv("flows").splitlines()) == 61


def test_tables_as_dataframes():
    pd = pytest.importorskip("pandas")
    cmp = ss.Scenario.load(QUICK, sets=SMALL).compare(["stride", "dctcp"])
    df = cmp.flows.to_pandas()
    assert isinstance(df, pd.DataFrame) and len(df) == 120
    assert list(df.columns[:2]) == ["transport", "src"]
    cats = cmp.categories.to_pandas().set_index(["transport", "category"])
    assert cats.loc[("dctcp", "all"), "flows"] == cmp.summary["transports"]["dctcp"]["completed"]
    imp = cmp.improvement["dctcp"]["all"]["avg"]
    s, d = (cmp.summary["transports"][t]["categories"]["all"]["avg_fct_us"] for t in ("stride", "dctcp"))
    assert imp == pytest.approx(d / s)


@pytest.mark.parametrize(
    "sets, field, words",
    [
        (["stride.t_high=fast"], "stride.t_high", "fast"),
        (["workload.load=1.5"], "workload.load", ""),
        (["stride.t_hgh=40us"], "stride.t_hgh", "unknown key"),
        (["topology.kind=ring"], None, "ring"),
        (["nosuchsection"], None, "section.field=value"),
    ],
)
def test_bad_overrides_raise_naming_the_field(sets, field, words):
    with pytest.raises(ss.ScenarioError) as e:
        ss.Scenario.load(QUICK, sets=sets)
    assert isinstance(e.value, ValueError)
    assert words in str(e.value)
    if field is not None:
        assert e.value.field == field, str(e.value)


def test_bad_scenarios_and_transports_raise():
    with pytest.raises(ss.ScenarioError) as e:
        ss.Scenario.from_dict({"name": "x", "workload": {"kind": "incast", "senders": 1, "bytes": 1}})
    assert e.value.field == "topology", str(e.value)
    with pytest.raises(ss.ScenarioError, match="no_such.toml"):
        ss.Scenario.load(REPO / "no_such.toml")
    with pytest.raises(ss.ScenarioError, match="<toml>"):
        ss.Scenario.from_toml("name = ")
    sc = ss.Scenario.load(QUICK, sets=SMALL)
    with pytest.raises(ValueError, match="unknown transport \"tcpx\""):
        sc.run("tcpx")
    with pytest.raises(ss.ScenarioError) as e:
        sc.with_sets("workload.flows=0")
    assert e.value.field == "workload.flows", str(e.value)
    # the scenario it was derived from is untouched
    assert sc.run("dctcp").summary["completed"] == 60


def test_two_runs_are_in_progress_at_once_in_a_thread_pool():
    """The GIL is released during a run: two runs in a thread pool are both in progress at
    once (seen through their progress counters, written without the GIL), and give the same
    results as one after the other."""
    sc = ss.Scenario.load(QUICK)
    pair = ("stride", "dctcp")
    serial = [without_wall_clock(sc.run(t).summary) for t in pair]
    progress = [ss.Progress(), ss.Progress()]
    overlapped = False
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = [pool.submit(sc.run, t, p) for t, p in zip(pair, progress)]
        while not all(f.done() for f in futures):
            if all(p.running for p in progress):
                overlapped = True
            time.sleep(0.0002)
        parallel = [without_wall_clock(f.result().summary) for f in futures]
    assert overlapped, "the two runs were never in progress at once: is the GIL held during a run?"
    assert all(p.finished and p.events == s["events"] for p, s in zip(progress, serial))
    assert parallel == serial


def test_sweep_on_threads_matches_the_rust_sweep_table():
    sw = ss.sweep(QUICK, {"workload.load": [0.3, 0.6]}, baseline="dctcp", sets=["workload.flows=20"])
    assert sw.simulations == 4 and len(sw.points) == 2
    assert sw.points["workload.load"] == ["0.3", "0.6"]
    assert sw.csv.splitlines()[0].startswith("workload.load,completed,flows,drops,all_avg_fct_us")
    assert "lowest average FCT" in sw.text
    assert sw.points["improvement_all_avg"][0] == sw.result["points"][0]["improvement"]["all"]["avg"]


def test_bad_sweeps_raise_before_running():
    with pytest.raises(ss.ScenarioError) as e:
        ss.sweep(QUICK, {"stride.t_high": ["40us", "fast"]}, sets=["workload.flows=20"])
    assert e.value.field == "stride.t_high", str(e.value)
    with pytest.raises(ValueError, match="unknown transport"):
        ss.sweep(QUICK, "stride.t_high=40us", baseline="tcpx")
    with pytest.raises(ValueError, match="no \"nope\" table"):
        ss.Scenario.load(QUICK, sets=SMALL).run("dctcp").csv("nope")
