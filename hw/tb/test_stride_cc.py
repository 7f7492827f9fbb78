"""stride_cc against stride-proto's vectors: every checked-in vector and a random stimulus."""
import re

import pytest

from common import RTL, VECTORS, group_by_shifts, load_cases, random_vectors, run_group

CHECKED_IN = sorted(VECTORS.glob("*.jsonl"))


def test_vectors_exist():
    names = {p.name for p in CHECKED_IN}
    assert {"branches.jsonl", "extremes.jsonl", "wrap.jsonl", "random.jsonl"} <= names
    cases = load_cases(CHECKED_IN)
    assert len(cases) >= 30
    assert sum(len(c["steps"]) for c in cases) > 4000


_groups = group_by_shifts(load_cases(CHECKED_IN))


@pytest.mark.parametrize("key", sorted(_groups), ids=lambda k: "a%d-md%d-n%d" % k)
def test_checked_in_vectors(key):
    run_group(key, _groups[key], "vec")


def test_random_stimulus_from_stride_proto():
    # 12 cases of 2000 random events each, random parameters, expected outputs by stride-proto.
    cases = random_vectors(24000, seed=20261122, steps=2000)
    assert len(cases) == 12
    for key, group in sorted(group_by_shifts(cases).items()):
        run_group(key, group, "rand")


def test_no_multiply_divide_or_modulo():
    src = (RTL / "stride_cc.v").read_text()
    code = re.sub(r"/\*.*?\*/", "", src, flags=re.S)
    # compiler directives (`timescale 1ns / 1ps) are not operators
    code = "\n".join(
        line.split("//")[0] for line in code.splitlines() if not line.lstrip().startswith("`")
    )
    for op in "*/%":
        assert op not in code, f"stride_cc.v uses {op!r}"
    # and the check itself can fail: the comparison core has all three kinds
    timely = (RTL / "timely_cc.v").read_text()
    timely_code = "\n".join(line.split("//")[0] for line in timely.splitlines())
    assert "*" in timely_code and "/" in timely_code
