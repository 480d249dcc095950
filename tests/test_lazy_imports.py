"""A command that draws nothing does not import matplotlib (~0.4 s of a short run's start-up);
``run --plots`` draws PNG and SVG charts, a plain ``run`` writes the report without them."""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

#: The default drive at 1.75 GiB and a 1 s job: the run itself takes a few hundredths of a second.
SMALL = ["--set", "blocks_per_plane=64", "--set", "pages_per_block=64", "--set", "user_capacity_bytes=1792MiB"]
JOB = ["--name=w", "--rw=randwrite", "--bs=4k", "--iodepth=32", "--ioengine=libaio", "--runtime=1", "--time_based"]

_PROBE = """
import sys
from ssdlab import cli
try:
    status = cli.main(sys.argv[1:])
except SystemExit as e:  # --help
    status = e.code
print("HEAVY", sorted(m for m in ("matplotlib", "pandas", "scipy", "dask") if m in sys.modules))
sys.exit(status)
"""


def _heavy(args: list[str]) -> list[str]:
    """The heavy libraries imported by running ``ssdlab ARGS`` in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    line = next(x for x in out.stdout.splitlines() if x.startswith("HEAVY"))
    return ast.literal_eval(line[len("HEAVY"):].strip())


def test_help_and_plain_run_do_not_import_matplotlib(tmp_path: Path) -> None:
    assert _heavy(["run", "--help"]) == []
    assert _heavy(["run", *JOB, *SMALL, "--out", str(tmp_path / "r"), "--no-progress"]) == []
    files = {p.name for p in (tmp_path / "r").iterdir()}
    assert {"report.html", "summary.json", "series.parquet", "series.csv"} <= files
    assert not {f for f in files if f.endswith((".png", ".svg"))}
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert "plots" not in summary and summary["plot_files"] is False


def test_run_with_plots_draws_them(tmp_path: Path) -> None:
    # The probe can see matplotlib: drawing imports it, so the check above is not vacuous.
    assert _heavy(["run", *JOB, *SMALL, "--plots", "--out", str(tmp_path / "r"), "--no-progress"]) == ["matplotlib"]
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert {"iops.png", "iops.svg", "latency.png", "latency.svg"} <= set(summary["plots"])
    assert all((tmp_path / "r" / name).stat().st_size > 1000 for name in summary["plots"])
