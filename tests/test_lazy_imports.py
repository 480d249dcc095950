"""A command that draws nothing does not import matplotlib (~0.4 s of a short run's start-up);
``run --plots`` draws PNG and SVG charts, a plain ``run`` writes the report without them. The
help imports neither numpy nor pyarrow (a third of a short run's start-up). No
command here looks for pandas (pyarrow's ``pa.array`` and ``to_numpy`` do, and import it where
it is installed: more than a short run's simulation) or dask."""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

#: The default drive at 1.75 GiB and a 1 s job: the run itself takes a few hundredths of a second.
SMALL = ["--set", "blocks_per_plane=64", "--set", "pages_per_block=64", "--set", "user_capacity_bytes=1792MiB"]
JOB = ["--name=w", "--rw=randwrite", "--bs=4k", "--iodepth=32", "--ioengine=libaio", "--runtime=1", "--time_based"]

#: A stand-in for pandas, first on the probe's path: it notes that it was looked for, then
#: is not there (so the probe sees a look for pandas whether or not pandas is installed).
_FAKE_PANDAS = """
import sys
sys.pandas_looked_for = True
raise ImportError("pandas is not installed here")
"""

_PROBE = """
import sys
from ssdlab import cli
try:
    status = cli.main(sys.argv[1:])
except SystemExit as e:  # --help
    status = e.code
heavy = {m for m in ("matplotlib", "pandas", "scipy", "dask", "numpy", "pyarrow") if m in sys.modules}
print("HEAVY", sorted(heavy | ({"pandas"} if getattr(sys, "pandas_looked_for", False) else set())))
sys.exit(status)
"""


def _heavy(args: list[str], fake: Path, probe: str = _PROBE) -> list[str]:
    """The heavy libraries imported (pandas: looked for) by running ``ssdlab ARGS`` in a fresh
    interpreter, with the stand-in for pandas in folder ``fake``."""
    (fake / "pandas").mkdir(parents=True, exist_ok=True)
    (fake / "pandas" / "__init__.py").write_text(_FAKE_PANDAS)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(fake), *sys.path])}
    out = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    line = next(x for x in out.stdout.splitlines() if x.startswith("HEAVY"))
    return ast.literal_eval(line[len("HEAVY"):].strip())


def test_help_and_plain_run_do_not_import_matplotlib_or_pandas(tmp_path: Path) -> None:
    fake = tmp_path / "fake"
    assert _heavy(["--help"], fake) == []  # nor numpy and pyarrow: the help needs no arrays
    assert _heavy(["run", "--help"], fake) == []
    assert _heavy(["run", *JOB, *SMALL, "--out", str(tmp_path / "r"), "--no-progress"], fake) == ["numpy", "pyarrow"]
    files = {p.name for p in (tmp_path / "r").iterdir()}
    assert {"report.html", "summary.json", "series.parquet", "series.csv"} <= files
    assert not {f for f in files if f.endswith((".png", ".svg"))}
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert "plots" not in summary and summary["plot_files"] is False


def test_run_with_plots_draws_them(tmp_path: Path) -> None:
    # The probe can see matplotlib: drawing imports it, so the check above is not vacuous.
    assert _heavy(["run", *JOB, *SMALL, "--plots", "--out", str(tmp_path / "r"), "--no-progress"],
                  tmp_path / "fake") == ["matplotlib", "numpy", "pyarrow"]
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert {"iops.png", "iops.svg", "latency.png", "latency.svg"} <= set(summary["plots"])
    assert all((tmp_path / "r" / name).stat().st_size > 1000 for name in summary["plots"])


def test_the_probe_sees_a_look_for_pandas(tmp_path: Path) -> None:
    # pyarrow's own conversion of a numpy array looks for pandas: the stand-in notes it.
    convert = _PROBE.replace("from ssdlab import cli", "import numpy, pyarrow\npyarrow.array(numpy.arange(3.0))\nfrom ssdlab import cli")
    assert _heavy(["--version"], tmp_path / "fake", convert) == ["numpy", "pandas", "pyarrow"]


def test_the_command_keeps_numpy_to_one_blas_thread_unless_the_user_says_otherwise() -> None:
    """numpy's BLAS would start a thread per core at import, for matrices ssdlab does not have."""
    probe = ("import os, sys\nfrom ssdlab import entry\nentry.main(['profiles'])\n"
             "print('BLAS', os.environ.get('OPENBLAS_NUM_THREADS'))\n")
    for preset, want in ((None, "1"), ("3", "3")):
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
        if preset:
            env["OPENBLAS_NUM_THREADS"] = preset
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env)
        assert out.returncode == 0, out.stderr
        assert f"BLAS {want}" in out.stdout.splitlines()
