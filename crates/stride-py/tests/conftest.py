"""Shared helpers of the Python package's tests (run by scripts/test.sh on the built wheel)."""

import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
QUICK = REPO / "scenarios" / "quick.toml"


def need(ok: bool, why: str) -> None:
    """Skips the test (printing why) when a prerequisite is missing; under STRIDE_REQUIRE_PY=1
    (CI) a missing prerequisite fails it instead."""
    if ok:
        return
    if os.environ.get("STRIDE_REQUIRE_PY") == "1":
        pytest.fail(f"missing prerequisite (STRIDE_REQUIRE_PY=1): {why}")
    print(f"SKIPPED: {why}")
    pytest.skip(why)


def without_wall_clock(summary):
    """A summary (or one transport's report) without the values that measure the machine."""
    import stride_sim

    if not isinstance(summary, dict):
        return summary
    return {
        k: without_wall_clock(v)
        for k, v in summary.items()
        if k not in stride_sim.WALL_CLOCK_KEYS
    }


def cargo_built(name: str) -> pathlib.Path:
    """A binary `cargo test` built (the `stride` CLI, or `examples/NAME`), in the cargo target
    dir (CARGO_TARGET_DIR, default target/ of the checkout)."""
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
    return target / "debug" / name
