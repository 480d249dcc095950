"""``ssdlab fit`` of curves measured elsewhere: CSV files of a fill (GB written, MB/s) or a
consistency run (seconds, IOPS), with the drive's capacity and the test's parameters as
options.

The published curve (``examples/fill-neo-forza-nfp075-1tb.csv``, TechPowerUp's whole-drive
fill of a 1 TB drive: 3 GB/s for 24 GB, then 1 GB/s to the end) is fitted on the
``tlc-direct`` drive's layout at 1/32 of its size with 100 simulations; the twin (fitted.toml
itself, simulated at full size by the fit's check) fills in the same phases within 10 % of
their ends and rates, and within 10 % of the average. The phases are those ``fill.phases``
finds in the curve, not numbers written here.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, run_cli, set_args
from ssdlab import results
from ssdlab.errors import UserError
from ssdlab.fit import core
from ssdlab.fit.measured import CsvOptions, load_measured
from ssdlab.procedures import fill

EXAMPLE = REPO / "examples" / "fill-neo-forza-nfp075-1tb.csv"
KEYS = ["--key", "slc_dynamic_max_bytes=4GB:100GB:log", "--key", "slc_t_prog_us=100:600:log",
        "--key", "t_prog_us=500:2000:log", "--key", "slc_fold_units_per_write=0:0.5"]


def _phases(series: dict) -> tuple[list[dict], float]:
    """The fill's phases (at least 1 % of the bytes each, as the fill test finds them) and its
    average MB/s, from a fit's written_gb/mbps series."""
    gb, mbps = np.asarray(series["written_gb"], float), np.asarray(series["mbps"], float)
    seconds = np.diff(np.concatenate([[0.0], gb])) * 1e3 / mbps
    return fill.phases(mbps, gb, 0.01 * gb[-1]), float(gb[-1] * 1e3 / seconds.sum())


def test_a_published_fill_curve_gives_a_twin_with_its_phases(tmp_path):
    out = tmp_path / "twin"
    proc = run_cli("fit", str(EXAMPLE), "--capacity", "1TB", "--base", "tlc-direct", "--scale", "0.03125", *KEYS,
                   "--evals", "100", "--workers", "1", "--out", str(out), "--no-progress")
    s = results.read_summary(out)
    assert s["measured"][0]["test"] == "fill" and s["measured"][0]["capacity_bytes"] == 10**12
    assert "phase_rates" in proc.stdout and s["checks"]["full_size"], proc.stdout
    want, want_avg = _phases(results.read_series(out / "measured_1"))
    got, got_avg = _phases(results.read_series(out / "fitted_1"))  # fitted.toml at full size
    shown = f"curve {[(round(p['end_gb']), round(p['mbps'])) for p in want]}, twin " \
            f"{[(round(p['end_gb']), round(p['mbps'])) for p in got]}"
    assert len(want) == 2 and len(got) == len(want), shown
    for w, g in zip(want, got):
        assert g["end_gb"] == pytest.approx(w["end_gb"], rel=0.10), shown
        assert g["mbps"] == pytest.approx(w["mbps"], rel=0.10), shown
    assert got_avg == pytest.approx(want_avg, rel=0.10)
    assert want_avg == pytest.approx(1000e3 / (24e3 / 3000 + 976e3 / 1000), rel=1e-3)  # the curve as written


def _csv(tmp_path: Path, text: str, name: str = "c.csv") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_a_fill_curve_runs_straight_between_its_points(tmp_path):
    """1,000 to 2,000 MB/s over 100 GB, linear in GB written: ln 2 / (10 MB/s per GB) =
    69.3 s, 1,443 MB/s on average; a step is two rows at one GB."""
    m = load_measured(_csv(tmp_path, "# a ramp\nwritten_gb,mbps\n0,1000\n100,2000\n"), CsvOptions(capacity_bytes=10**11))
    dt, mbps = m.series["dt_s"], m.series["mbps"]
    assert dt.sum() == pytest.approx(math.log(2) / 0.01, rel=1e-9)
    assert (mbps * dt).sum() / dt.sum() == pytest.approx(1e5 / (math.log(2) / 0.01), rel=1e-9)
    assert mbps[0] == pytest.approx(1000, rel=0.01) and mbps[-2] == pytest.approx(2000, rel=0.01)
    assert m.repro["interval_s"] == 0.5 and m.repro["fraction_written"] == pytest.approx(1.0)
    step = load_measured(_csv(tmp_path, "written_gb,mbps\n10,500\n10,100\n20,100\n", "s.csv"),
                         CsvOptions(capacity_bytes=10**11, interval_s=1.0))
    assert step.series["dt_s"].sum() == pytest.approx(10e3 / 500 + 10e3 / 100)
    assert set(np.round(step.series["mbps"])) == {500.0, 100.0}
    assert any("ends at 20.00 of the span's 100.00 GB" in w for w in step.warnings)


def test_a_consistency_curve_is_the_results_folder_it_came_from(tmp_path):
    folder = tmp_path / "m"
    run_cli("consistency", *set_args(), "--duration", "30", "--out", str(folder), "--no-progress")
    series = results.read_series(folder / "series")
    summary = results.read_summary(folder)
    rows = "".join(f"{float(t)!r},{float(x)!r}\n" for t, x in zip(series["t_s"], series["iops"]))
    csv = _csv(tmp_path, "t_s,iops\n" + rows)
    a = core.prepare([str(folder)], ["spare_pct"], base="default")
    b = core.prepare([str(csv)], ["spare_pct"], base="default",
                     csv=CsvOptions(capacity_bytes=summary["capacity_bytes"], test="consistency"))
    ma, mb = a.measured[0], b.measured[0]
    assert mb.capacity_bytes == ma.capacity_bytes
    for k in ("span_pct", "qd", "bs_bytes", "interval_s", "duration_s"):
        assert mb.repro[k] == ma.repro[k], k
    fa, fb = a.refs[0]["features"], b.refs[0]["features"]
    for k in ("fob_iops", "fob_s", "steady_p10", "steady_p50", "steady_p90", "run_s"):
        assert fb[k] == fa[k], k
    np.testing.assert_array_equal(fb["curve"], fa["curve"])


@pytest.mark.parametrize("text, opts, want", [
    ("written_gb,mbps\n0,3000\n24,x\n", {}, "c.csv:3: column mbps: 'x' is not a number"),
    ("# c\n\nwritten_gb,mbps\n0,3000\n24,3000,1\n", {}, "c.csv:5: 3 values; the header (written_gb,mbps) names 2"),
    ("written_gb,mbps\n0,3000\n30,3000\n24,1000\n", {}, "c.csv:4: column written_gb: 24 is below the row before's 30"),
    ("written_gb,mbps\n0,3000\n24,0\n", {}, "c.csv:3: column mbps: 0 MB/s"),
    ("written_gb,mbps\n0,3000\n-1,3000\n", {}, "c.csv:3: column written_gb: -1 is not a number >= 0"),
    ("written_gb,mbps\n0,3000\n1200,1000\n", {}, "c.csv:3: column written_gb: 1200 GB is beyond the span"),
    ("gb,speed\n0,3000\n", {}, "c.csv:1: header 'gb,speed': expected written_gb,mbps (a fill) or t_s,iops"),
    ("# only a comment\n", {}, "c.csv: no header line"),
    ("written_gb,mbps\n0,3000\n24,3000\n", {"test": "consistency"}, "c.csv:1: the header written_gb,mbps is a fill"),
    ("written_gb,mbps\n0,3000\n24,3000\n", {"capacity_bytes": None}, "c.csv: a CSV curve needs --capacity"),
    ("t_s,iops\n" + "".join(f"{i},{1000}\n" for i in range(1, 12)) + "13,900\n", {},
     "c.csv:13: column t_s: 2 s after the row before, the other rows 1 s"),
    ("t_s,iops\n1,5\n1,5\n", {}, "c.csv:3: column t_s: 1 s is not after the row before's 1 s"),
    ("t_s,iops\n1,5\n2,5\n", {}, "c.csv: 2 interval(s); a consistency curve needs at least 10"),
    ("t_s,iops\n" + "".join(f"{i},5\n" for i in range(1, 12)), {"interval_s": 1.0}, "--interval applies to a fill"),
])
def test_csv_errors_name_the_file_line_and_column(tmp_path, text, opts, want):
    path = _csv(tmp_path, text)
    o = {"capacity_bytes": 10**12, **opts}
    with pytest.raises(UserError) as e:
        load_measured(path, CsvOptions(**o))
    assert (f"{tmp_path}/{want}" if want.startswith("c.csv") else want) in str(e.value)


def test_csv_errors_on_the_command_line(tmp_path):
    bad = _csv(tmp_path, "written_gb,mbps\n0,3000\n24,fast\n")
    proc = run_cli("fit", str(bad), "--capacity", "1TB", "--out", str(tmp_path / "o"), check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"{bad}:3: column mbps: 'fast' is not a number" in proc.stderr, proc.stderr
    proc = run_cli("fit", str(EXAMPLE), "--capacity", "1TX", "--out", str(tmp_path / "o"), check=False)
    assert proc.returncode == 2 and "--capacity" in proc.stderr and "Traceback" not in proc.stderr
    folder = tmp_path / "m"
    run_cli("consistency", *set_args(), "--duration", "12", "--out", str(folder), "--no-progress")
    proc = run_cli("fit", str(folder), "--capacity", "1TB", "--out", str(tmp_path / "o"), check=False)
    assert proc.returncode == 2 and "--capacity: for CSV curves only" in proc.stderr, proc.stderr
    assert not (tmp_path / "o").exists()
