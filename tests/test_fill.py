"""``ssdlab fill``: the change-point detection against planted fills (the published shapes of
three drives), and the test end to end on the simulator and on a loop device."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from conftest import run_cli, set_args
from ssdlab.procedures import fill
from test_report import browser  # noqa: F401  (the headless Chromium fixture)


def _planted(pieces: list[tuple[float, float]], interval_s: float = 0.5, noise: float = 0.03, seed: int = 1) -> dict:
    """A fill series written at ``mbps`` for ``gb`` GB per piece, with multiplicative noise."""
    rng = np.random.default_rng(seed)
    rates = []
    for gb, mbps in pieces:
        n = int(round(gb * 1e3 / mbps / interval_s))
        rates += [mbps] * n
    mbps = np.asarray(rates) * (1 + noise * rng.standard_normal(len(rates)))
    return {"t_s": np.arange(len(mbps)) * interval_s, "dt_s": np.full(len(mbps), interval_s), "mbps": mbps}


@pytest.mark.parametrize("pieces", [
    [(113, 4000), (887, 1500)],                       # a 980 Pro 1 TB-like TLC drive (TechPowerUp)
    [(150, 2000), (450, 500), (400, 400)],            # an A2000 1 TB-like drive: two rates after the cache
    [(54, 5000), (406, 3500), (1540, 130)],           # an FX700 2 TB-like QLC drive
])
def test_phases_found_where_planted(pieces):
    s = fill.analyze_fill(_planted(pieces), min_phase_pct=1.0)
    assert len(s["phases"]) == len(pieces), s["phases"]
    edges = np.cumsum([gb for gb, _ in pieces])
    for p, (gb, mbps), end in zip(s["phases"], pieces, edges):
        assert p["mbps"] == pytest.approx(mbps, rel=0.02)
        assert p["end_gb"] == pytest.approx(end, rel=0.02, abs=mbps * 0.5 / 1e3 * 2)
    assert s["cache_bytes"] == pytest.approx(pieces[0][0] * 1e9, rel=0.02)
    total_gb = edges[-1]
    total_s = sum(gb * 1e3 / mbps for gb, mbps in pieces)
    assert s["fill_mbps_mean"] == pytest.approx(total_gb * 1e3 / total_s, rel=0.02)


def test_constant_rate_has_no_cache():
    s = fill.analyze_fill(_planted([(100, 800)], noise=0.1), min_phase_pct=1.0)
    assert len(s["phases"]) == 1 and s["cache_bytes"] is None


def test_a_drop_shorter_than_the_minimum_phase_is_not_a_phase():
    s = fill.analyze_fill(_planted([(50, 2000), (0.2, 200), (50, 2000)], noise=0.01), min_phase_pct=2.0)
    assert len(s["phases"]) == 1 and s["cache_bytes"] is None


def test_fill_on_the_simulator(tmp_path):
    out = tmp_path / "f"
    run_cli("fill", *set_args(), "--pause", "2", "--burst", "5", "--out", str(out), "--no-progress")
    s = json.loads((out / "summary.json").read_text())
    # the simulator counts every byte: the fill wrote the span, a whole number of bytes
    assert s["complete"] and s["written_bytes"] == s["span_bytes"] and isinstance(s["written_bytes"], int)
    assert s["fill_mbps_mean"] == pytest.approx(s["written_bytes"] / s["fill_s"] / 1e6, rel=1e-3)
    assert "binary segmentation" in s["phase_method"]
    assert (out / "fill.png").exists() and (out / "burst.parquet").exists() and (out / "report.html").exists()


def test_a_simulated_fill_ends_at_its_rate_not_with_a_dip():
    """A byte-limited phase ends within an interval: that interval's rate is over its own
    length (``dt_s``, as fio's series), so a steady sequential fill ends at its rate, and
    the rates times the lengths add up to the bytes written."""
    from conftest import SMALL_DRIVE
    from ssdlab.profiles import load_profile
    from ssdlab.targets.base import JobSpec
    from ssdlab.targets.sim import SimTarget
    t = SimTarget(load_profile("default", SMALL_DRIVE))
    r = t.run_phase(JobSpec("fill", "write", bs_bytes=131072, qd=32, span_bytes=t.capacity_bytes // 131072 * 131072))
    s = r.series
    dt, mbps = np.asarray(s["dt_s"]), np.asarray(s["mbps"])
    assert np.all(dt[:-1] == 1.0) and 0.1 < dt[-1] < 0.9, dt[-3:]  # this drive's fill: 19.77 s
    assert float(np.sum(dt)) == pytest.approx(r.totals["duration_s"])
    assert mbps[-1] == pytest.approx(np.median(mbps[1:-1]), rel=0.02), mbps[-3:]
    assert float(np.sum(mbps * dt)) * 1e6 == pytest.approx(r.totals["host_write_bytes"], rel=1e-9)


@pytest.mark.realtime
@pytest.mark.skipif(os.environ.get("SSDLAB_NO_LOOP") == "1", reason="SSDLAB_NO_LOOP=1")
def test_fill_on_a_loop_device(tmp_path):
    out = tmp_path / "f"
    run_cli("fill", "--target", "loop:256MB", "--interval", "0.05", "--pause", "1", "--out", str(out),
            "--no-progress")
    s = json.loads((out / "summary.json").read_text())
    assert s["complete"] and s["written_bytes"] == pytest.approx(s["span_bytes"], rel=0.01)
    assert s["phases"] and (out / "report.html").exists()


def test_fill_report_draws_mbps_against_gb_written(tmp_path, browser):
    from test_reports_every_test import _drawn, _legend, _load_clean
    from test_report import _shot_dir

    out = tmp_path / "f"
    run_cli("fill", *set_args(), "--pause", "2", "--burst", "5", "--out", str(out), "--no-progress")
    _load_clean(browser, out / "report.html")
    _drawn(browser, "lines-0", _shot_dir(tmp_path) / "fill.png")
    assert _legend(browser, "lines-0") == ["fill", "after 2 s idle"]
