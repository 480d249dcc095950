"""The series-column table (:mod:`ssdlab.columns`, the drive's part declared in the
simulator's core): every column a simulated run emits is declared, the series takes the
drive's columns from the table, and the report charts whatever the table declares."""
from __future__ import annotations

import numpy as np
import pytest

from ssdlab import columns, report
from ssdlab.profiles import load_profile
from ssdlab.targets.base import JobSpec
from ssdlab.targets.sim import SimTarget

from conftest import SMALL_DRIVE


@pytest.fixture(scope="module")
def cached_dramless_runs():
    """A filled small drive with a pseudo-SLC cache, a map cache and FDP: a job phase and a
    read/write/TRIM workload of several jobs."""
    t = SimTarget(load_profile("dramless-hmb", SMALL_DRIVE + ["fdp=1", "fdp_reclaim_unit_handles=2"]), seed=3)
    fill = t.run_phase(JobSpec("fill", "write", bs_bytes=128 * 1024, qd=32))
    job = t.run_phase(JobSpec("rand", "randwrite", duration_s=3.0, interval_s=0.5))
    mix = t.run_workload({"name": "mix", "interval_s": 0.5, "jobs": [
        {"name": "a", "read_fraction": 0.5, "trim_fraction": 0.2, "duration_s": 3.0, "qd": 8},
        {"name": "b", "duration_s": 3.0, "qd": 4}]})
    return fill, job, mix


def test_every_column_a_simulated_run_emits_is_declared(cached_dramless_runs):
    for r in cached_dramless_runs:
        assert r.series and not columns.undeclared(r.series), r.job.name
    names = set().union(*(r.series for r in cached_dramless_runs))
    # The runs reach the columns that need a feature, and every direction.
    assert {"slc_cache_bytes", "fold_bytes", "map_misses", "fdp_mbe_bytes", "trim_iops", "read_lat_p99_us"} <= names


def test_the_check_catches_an_undeclared_column(cached_dramless_runs):
    series = dict(cached_dramless_runs[1].series, gc_stall_s=np.zeros(6))
    assert columns.undeclared(series) == ["gc_stall_s"]


def test_the_series_has_the_drive_columns_its_features_allow(cached_dramless_runs):
    _, job, _ = cached_dramless_runs
    # A zoned namespace has no SLC or map cache: its columns are checked on the zns drive.
    drive = [c.name for c in columns.drive_columns() if c.needs != "zones"]
    assert [c for c in job.series if c in drive] == drive
    plain = SimTarget(load_profile("default", SMALL_DRIVE), seed=3).run_phase(
        JobSpec("w", "randwrite", duration_s=1.0, interval_s=0.5))
    needing = {c.name for c in columns.drive_columns() if c.needs}
    assert needing and not needing & set(plain.series)
    assert set(drive) - needing <= set(plain.series)
    zoned = SimTarget(load_profile("zns", SMALL_DRIVE), seed=3).run_phase(
        JobSpec("w", "write", duration_s=1.0, interval_s=0.5))
    zone_columns = {c.name for c in columns.drive_columns() if c.needs == "zones"}
    assert zone_columns and zone_columns <= set(zoned.series)
    assert zoned.series["zone_full_errors"].sum() == 0 and zoned.totals["host_write_bytes"] > 0


def test_drive_columns_are_their_counters_per_interval(cached_dramless_runs):
    _, job, _ = cached_dramless_runs
    s = job.series
    # Cumulative counters add up to the phase's totals; levels stay levels.
    assert s["gc_copied_bytes"].sum() == job.totals["gc_copied_bytes"]
    assert s["erases"].sum() == job.totals["erases"]
    assert (s["free_blocks"] == np.round(s["free_blocks"])).all() and s["free_blocks"].min() >= 0
    by_name = columns.declared()
    assert by_name["free_blocks"].reading == "level" and by_name["erases"].reading == "change"
    # nvme fdp stats' counters are the drive's own: host bytes, NAND bytes, erased blocks' bytes
    # (test_sim_workload checks them on a drive that erases).
    np.testing.assert_array_equal(s["fdp_hbmw_bytes"], s["host_write_bytes"])
    np.testing.assert_array_equal(s["fdp_mbmw_bytes"], s["nand_write_bytes"])
    v = load_profile("dramless-hmb").values
    np.testing.assert_allclose(s["fdp_mbe_bytes"], s["erases"] * v["pages_per_block"] * v["page_size_bytes"])


def test_declarations_are_complete():
    for c in columns.declared().values():
        assert c.meaning.endswith(".") and c.label and c.better in ("higher", "lower", "n/a"), c
        assert c.reading in ("change", "level", "rate", "ratio", "latency", "time"), c
    ids = [k.id for k in columns.charts()]
    assert len(ids) == len(set(ids))
    for k in columns.charts():
        leading, with_ = columns.chart_columns(k)
        assert leading, k.id
    assert columns.display(columns.declared()["gc_copied_bytes"], 0.5) == ("MB/s", 2e-6)
    assert columns.display(columns.declared()["slc_cache_bytes"], 0.5) == ("GB", 1e-9)
    assert columns.display(columns.declared()["map_misses"], 0.5) == ("misses/s", 2.0)


def _tables(monkeypatch, fake: dict):
    """The core's tables replaced by ``fake`` while a test runs (the cached views of them
    made anew before and after)."""
    caches = (columns.drive_columns, columns.charts, columns.declared)
    for f in caches:
        f.cache_clear()
    monkeypatch.setattr(columns, "_native_tables", lambda: fake)
    yield
    for f in caches:
        f.cache_clear()


@pytest.fixture
def extra_counter(monkeypatch):
    """The core's tables with one more counter column and its chart, as a new counter adds."""
    real = columns._native_tables()
    fake = {"counters": real["counters"] + ["spare_units"],
            "columns": real["columns"] + [{
                "name": "spare_bytes", "counter": "spare_units", "reading": "change", "scale": "unit_bytes",
                "unit": "bytes", "label": "spare writes", "meaning": "Spare writes in the interval.", "better": "lower",
                "chart": "spare", "needs": ""}],
            "charts": real["charts"] + [{"id": "spare", "title": "Spare writes vs host writes", "ylabel": "MB/s",
                                         "button": "spare", "with": ["host_write_bytes"]}]}
    yield from _tables(monkeypatch, fake)


def test_the_report_charts_what_the_table_declares(cached_dramless_runs, extra_counter):
    _, job, _ = cached_dramless_runs
    series = dict(job.series, spare_bytes=np.full(len(job.series["t_s"]), 1e6))
    assert not columns.undeclared(series)
    charts = {c["id"]: c for c in report._companion_charts(series, report.MAX_POINTS)}
    zone_charts = {c.chart for c in columns.drive_columns() if c.needs == "zones"}
    assert list(charts) == ["latency"] + [k.id for k in columns.charts() if k.id not in zone_charts]
    spare = charts["spare"]
    assert spare["kind"] == "scatter" and [y["name"] for y in spare["ys"]] == ["spare_bytes", "host_write_bytes"]
    assert spare["ys"][0]["unit"] == "MB/s" and spare["ys"][0]["values"][0] == pytest.approx(2.0)
    hints = report.time_series_hints([("rand", "rand", series)], "torture")
    assert any(h["label"] == "spare" and h["y"][0]["y"] == "spare_bytes" for h in hints)
    # Without data in the leading column, the chart is left out.
    del series["spare_bytes"]
    assert "spare" not in {c["id"] for c in report._companion_charts(series, report.MAX_POINTS)}


def test_map_write_back_per_interval_adds_up_to_the_drive_counter():
    """A column the core declares reaches the series with the mechanism's figures: a DRAM-less
    drive whose map cache is far smaller than its map writes dirty map pages back."""
    t = SimTarget(load_profile("dramless-hmb", SMALL_DRIVE + ["map_cache_bytes=1MiB"]), seed=2)
    t.run_phase(JobSpec("fill", "write", bs_bytes=128 * 1024, qd=32))
    before = t._sim.counters()["map_write_bytes"]
    r = t.run_phase(JobSpec("rand", "randwrite", duration_s=2.0, interval_s=0.5))
    written = r.series["map_write_bytes"]
    assert len(written) == 4 and (written > 0).all()
    assert written.sum() == t._sim.counters()["map_write_bytes"] - before
    assert "map_write" in {c["id"] for c in report._companion_charts(r.series, report.MAX_POINTS)}


@pytest.fixture
def second_erase_column(monkeypatch):
    """The core's tables with one more column over a counter the drive has (its erases), as a
    new counter's declaration adds one."""
    real = columns._native_tables()
    fake = {**real, "columns": real["columns"] + [{
        "name": "erased_blocks", "counter": "erases", "reading": "change", "scale": "one", "unit": "blocks",
        "label": "blocks erased", "meaning": "Blocks erased in the interval.", "better": "n/a", "chart": "",
        "needs": ""}]}
    yield from _tables(monkeypatch, fake)


def test_a_column_added_to_the_table_reaches_series_totals_replays_and_groups(second_erase_column):
    """The drive's per-interval series, a phase's totals, a trace replay's windows and totals
    and a workload group's summary take every change column of the table: none names them."""
    from types import SimpleNamespace

    from ssdlab.targets.base import OP_WRITE, ReplayJob
    from ssdlab.workload.engine import group_summary

    t = SimTarget(load_profile("default", SMALL_DRIVE), seed=1)
    t.run_phase(JobSpec("fill", "write", bs_bytes=128 * 1024, qd=32))
    r = t.run_phase(JobSpec("rand", "randwrite", duration_s=2.0, interval_s=0.5))
    assert r.series["erases"].sum() > 0 and (r.series["erased_blocks"] == r.series["erases"]).all()
    assert r.totals["erased_blocks"] == r.totals["erases"] == r.series["erases"].sum()
    assert group_summary(SimpleNamespace(name="g"), r)["erased_blocks"] == r.totals["erases"]
    rng = np.random.default_rng(1)
    n = 20_000
    op = np.full(n, OP_WRITE, np.uint8)
    off = rng.integers(0, t.capacity_bytes // 4096, n).astype(np.uint64) * 4096
    replay = t.replay(ReplayJob("trace", qd=8, window_commands=1000), [(op, off, np.full(n, 4096, np.uint64))])
    assert replay.series["erases"].sum() > 0 and (replay.series["erased_blocks"] == replay.series["erases"]).all()
    assert replay.totals["erased_blocks"] == replay.totals["erases"] == replay.series["erases"].sum()
