"""Synthetic workloads on the simulator (``SimTarget.run_workload``, ``Simulator.start_workload``).

A small default-profile drive, filled, then fio-like workloads: a 70/30 random read/write mix
with a block-size split, a rate-capped one, bursts with idle gaps. Oracles: the per-direction
series add up to the phase's, shares and caps come out as asked, the latency columns are
those of :func:`~ssdlab.targets.base.latency_column` and NaN exactly where a direction
completed nothing; bad keys are refused naming the key; ``run_phase`` is unchanged.
"""
from __future__ import annotations

import numpy as np
import pytest

from ssdlab import _native, errors
from ssdlab.profiles import load_profile
from ssdlab.targets.base import DIRECTIONS, LATENCY_STATS, JobSpec, latency_column
from ssdlab.targets.sim import SimTarget, WorkloadPhase

from conftest import SMALL_DRIVE


@pytest.fixture(scope="module")
def target():
    t = SimTarget(load_profile("default", SMALL_DRIVE), seed=4)
    t.run_phase(JobSpec("fill", "write", bs_bytes=128 * 1024, qd=32))
    return t


@pytest.fixture(scope="module")
def randrw(target):
    shown: list[tuple[float, str]] = []
    spec = {"name": "randrw", "read_fraction": 0.7, "write_bssplit": [(4096, 80), (65536, 20)],
            "duration_s": 20.0, "interval_s": 0.5, "qd": 32}
    return target.run_workload(spec, lambda f, text: shown.append((f, text))), shown


def test_series_has_total_and_per_direction_columns_that_add_up(randrw):
    r, _ = randrw
    s = r.series
    n = len(s["t_s"])
    assert n == 40 and r.complete
    assert isinstance(r.job, WorkloadPhase) and r.job.name == "randrw" and r.job.interval_s == 0.5
    for d in ("read", "write"):
        for col in [f"{d}_iops", f"{d}_mbps"] + [latency_column(d, label) for label, _ in LATENCY_STATS]:
            assert s[col].dtype == np.float64 and len(s[col]) == n, col
    assert "trim_iops" not in s and latency_column("trim", "p50") not in s
    np.testing.assert_allclose(s["read_iops"] + s["write_iops"], s["iops"])
    np.testing.assert_allclose(s["read_mbps"] + s["write_mbps"], s["mbps"])
    t = r.totals
    assert t["read_ios"] + t["write_ios"] == t["ios"]
    assert abs(t["read_ios"] / t["ios"] - 0.7) < 0.01
    assert t["read_bytes"] == t["host_read_bytes"] == 4096 * t["read_ios"]
    assert t["write_bytes"] == t["host_write_bytes"]
    # 80 % 4 KiB and 20 % 64 KiB writes: mean write size 16 KiB.
    assert abs(t["write_bytes"] / t["write_ios"] / 16384 - 1) < 0.05
    assert set(t["read_latency_us"]) >= {"p50", "p99", "max"}
    assert t["idle_gaps"] == 0


def test_latency_columns_are_nan_exactly_where_a_direction_completed_nothing(randrw):
    r, _ = randrw
    for d in ("read", "write"):
        busy = r.series[f"{d}_iops"] > 0
        cols = [r.series[latency_column(d, label)] for label, _ in LATENCY_STATS]
        for col in cols:
            assert not np.isnan(col[busy]).any() and np.isnan(col[~busy]).all()
        p50, p99, p999, mx = (c[busy] for c in cols)
        assert (p50 <= p99).all() and (p99 <= p999).all() and (p999 <= mx).all()
    assert r.latency_us["max"] >= np.nanmax(r.series[latency_column("write", "max")])


def test_progress_shows_live_figures_and_reaches_the_end(randrw):
    _, shown = randrw
    assert shown and shown[-1][0] == 1.0
    assert "simulated" in shown[-1][1]


def test_rate_cap_and_idle_gaps(target):
    r = target.run_workload({"read_fraction": 1.0, "read_rate_iops": 500.0, "duration_s": 10.0})
    assert abs(r.totals["ios"] / 10.0 - 500) < 1
    assert np.all(np.abs(r.series["read_iops"] - 500) <= 1)
    # 5,000 reads of well under 0.4 ms each (GC left over from earlier writes still runs on
    # the dies they read from): the capped host leaves the drive idle more than 8 of the 10 s
    assert r.totals["idle_s"] > 8.0
    r = target.run_workload({"read_fraction": 1.0, "number_ios": 8000, "thinktime_s": 0.5,
                             "thinktime_blocks": 1000, "thinktime_blocks_issued": True, "interval_s": 0.1})
    # After every 1000th IO issued, the 8000th included (fio thinks after an IO, then ends).
    assert r.totals["idle_gaps"] == 8 and r.totals["idle_s"] == pytest.approx(4.0)
    # Bursts of 1000 reads take well under 0.1 s: each gap leaves 4 or 5 empty intervals.
    assert (r.series["iops"] == 0).sum() >= 8 * 4


def test_poisson_arrivals_keep_the_caps_mean_rate_with_bursts(target):
    """fio's rate_process=poisson: exponential gaps of the cap's mean; the same count of IOs
    takes about as long as evenly spaced ones, but intervals vary far more."""
    spec = {"read_fraction": 1.0, "read_rate_iops": 1000.0, "number_ios": 20_000, "interval_s": 0.05}
    even = target.run_workload(spec)
    poisson = target.run_workload({**spec, "rate_poisson": True})
    assert poisson.totals["ios"] == 20_000
    assert poisson.totals["duration_s"] == pytest.approx(even.totals["duration_s"], rel=0.03)
    # 50 IOs a 50 ms interval: Poisson counts have a standard deviation of about sqrt(50)
    assert np.std(poisson.series["iops"][:-1] * 0.05) == pytest.approx(50 ** 0.5, rel=0.25)
    assert np.std(even.series["iops"][:-1] * 0.05) < 1.5


def test_exitall_stops_the_other_jobs_when_the_first_ends(target):
    short = {"read_fraction": 1.0, "number_ios": 500, "read_rate_iops": 1000.0}
    long_ = {"read_fraction": 1.0, "duration_s": 5.0, "read_rate_iops": 1000.0}
    r = target.run_workload({"jobs": [{**short, "exit_stops": [1]}, long_]})
    assert r.totals["ios"] == pytest.approx(1000, abs=3) and r.totals["duration_s"] < 0.6
    r = target.run_workload({"jobs": [short, long_]})
    assert r.totals["ios"] == pytest.approx(5500, abs=3)


def test_every_distribution_and_trims_run(target):
    for extra in ({"distribution": "zipf", "zipf_theta": 1.2}, {"distribution": "pareto", "pareto_h": 0.3},
                  {"distribution": "normal", "normal_dev_pct": 10.0, "center_fraction": 0.3},
                  {"distribution": "zoned", "zones": [(80, 20.0), (20, 80.0)]}):
        r = target.run_workload({"number_ios": 5000, "trim_fraction": 0.2, "trim_bs_bytes": 65536, **extra})
        assert r.totals["ios"] == 5000
        assert r.totals["trim_bytes"] == 65536 * r.totals["trim_ios"]
        assert "trim_iops" in r.series and latency_column("trim", "p99") in r.series


@pytest.mark.parametrize("params, key", [
    ({"write_bssplit": [(1000, 1)]}, "write_bssplit"),
    ({"write_ba_bytes": 100}, "write_ba_bytes"),
    ({"read_fraction": 1.5}, "read_fraction"),
    ({"distribution": "zipf"}, "zipf_theta"),
    ({"distribution": "zipf", "zipf_theta": 1.0}, "zipf_theta"),
    ({"distribution": "gauss"}, "distribution"),
    ({"distribution": "zoned", "zones": "80/20"}, "zones"),
    ({"zones": [(100, 100.0)]}, "zones"),
    ({"qd": 0}, "qd"),
    ({"duration_s": -1}, "duration_s"),
    ({"rwmixread": 70}, "rwmixread"),
    ({"span_bytes": 4097}, "span_bytes"),
    ({"buffer_compress_pct": 120}, "buffer_compress_pct"),
    ({"random_map": True, "distribution": "zipf", "zipf_theta": 1.2}, "random_map"),
    ({"random_map": "yes"}, "random_map"),
    ({"seq_stride_bytes": -4096, "read_fraction": 1.0, "read_random_fraction": 0.0}, "seq_stride_bytes"),
    ({"seq_stride_bytes": 1000}, "seq_stride_bytes"),
    ({"rate_poisson": 1.5}, "rate_poisson"),
    ({"jobs": [{"exit_stops": [2]}, {}]}, "exit_stops"),
])
def test_bad_keys_are_refused_by_name_and_leave_the_drive_usable(target, params, key):
    with pytest.raises(ValueError, match=key) as refused:
        target.run_workload(params)
    assert isinstance(refused.value, errors.UserError), "a user error: the CLI prints it without a traceback"
    with pytest.raises(_native.WorkloadKeyError, match=key):
        _native.Simulator(list(load_profile("default", SMALL_DRIVE).pairs), 1).start_workload(params)
    r = target.run_workload({"number_ios": 10})
    assert r.totals["ios"] == 10


def test_run_phase_is_unchanged_and_advance_needs_a_phase(target):
    r = target.run_phase(JobSpec("rw", "randwrite", duration_s=2.0))
    assert not any(f"{d}_iops" in r.series for d in DIRECTIONS)
    assert latency_column("write", "p50") in r.series and latency_column("read", "p50") not in r.series
    sim = _native.Simulator(list(load_profile("default", SMALL_DRIVE).pairs), 1)
    with pytest.raises(ValueError, match="without a running phase"):
        sim.advance(10)
    with pytest.raises(ValueError, match="without a running phase"):
        sim.finish_phase()
    sim.start_workload({"number_ios": 100})
    with pytest.raises(ValueError, match="finish it first") as misuse:
        sim.idle(1.0)
    assert not isinstance(misuse.value, _native.WorkloadKeyError), "a call out of order is not a workload key"
    with pytest.raises(ValueError, match="finish it first") as misuse:
        sim.start_workload({"number_ios": 100})
    assert not isinstance(misuse.value, _native.WorkloadKeyError)
    assert sim.advance(1000)[0]
    raw = sim.finish_phase()
    assert raw["directions"]["write"]["total_ios"] == 100 and raw["idle_gaps"] == 0


def test_compressible_data_writes_proportionally_fewer_nand_bytes():
    # 2:1 compression (2 KiB slots); 7 GiB of user data fits even incompressible.
    profile = load_profile("default", SMALL_DRIVE + ["compression_ratio=2"])
    ratios = {}
    for pct in (0, 50, 100):
        t = SimTarget(profile, seed=1)
        r = t.run_workload({"write_bs_bytes": 131072, "write_random_fraction": 0.0, "buffer_compress_pct": pct})
        ratios[pct] = r.totals["nand_write_bytes"] / r.totals["host_write_bytes"]
    assert ratios == pytest.approx({0: 1.0, 50: 0.5, 100: 0.5}, abs=1e-3)


def test_sub_4k_writes_read_modify_write_whole_units():
    """512 B random writes on a full drive program a whole 4 KiB unit each, after reading it:
    about 8 times the NAND bytes per host byte of 4 KiB writes, one merge read per write."""
    def steady(bs: int) -> tuple[float, int, int]:
        t = SimTarget(load_profile("default", SMALL_DRIVE), seed=2)
        t.run_phase(JobSpec("fill", "write", bs_bytes=4096, qd=32))
        user = t.capacity_bytes // 4096
        t.run_workload({"write_bs_bytes": 4096, "number_ios": 2 * user})
        reads = t.counters()["rmw_reads"]
        r = t.run_workload({"write_bs_bytes": bs, "number_ios": 2 * user})
        return r.totals["write_amplification"], t.counters()["rmw_reads"] - reads, r.totals["ios"]

    wa4k, reads4k, _ = steady(4096)
    wa512, reads512, ios = steady(512)
    assert reads4k == 0 and reads512 == ios
    assert wa512 / wa4k == pytest.approx(8.0, rel=0.05)


def test_jesd219_like_mix_runs_and_counts_the_bytes_asked_for(target):
    split = [(512, 4), (1024, 1), (1536, 1), (2048, 1), (2560, 1), (3072, 1), (3584, 1),
             (4096, 67), (8192, 10), (16384, 7), (32768, 3), (65536, 3)]
    r = target.run_workload({"read_fraction": 0.4, "read_bssplit": split, "write_bssplit": split,
                             "write_ba_bytes": 4096, "distribution": "zoned",
                             "zones": [(50, 5.0), (30, 15.0), (20, 80.0)], "number_ios": 20_000})
    t = r.totals
    assert t["ios"] == 20_000
    assert t["write_bytes"] == t["host_write_bytes"] and t["write_bytes"] % 512 == 0
    mean = sum(b * w for b, w in split) / sum(w for _, w in split)
    assert t["write_bytes"] / t["write_ios"] == pytest.approx(mean, rel=0.1)
    assert t["write_amplification"] > 1.0


def test_compressible_replay_writes_fewer_nand_bytes_than_incompressible():
    """A replay job's ``buffer_compress_pct`` reaches the simulator: on a 2:1 compressing
    profile a sequential pass of incompressible data writes 2 NAND slots (2 KiB each) per
    4 KiB unit, half-compressible data 1, as ``buffer_compress_pct`` does for workloads."""
    from types import SimpleNamespace

    profile = load_profile("default", SMALL_DRIVE + ["compression_ratio=2"])
    n = 2048  # 128 KiB writes: 256 MiB
    chunk = (np.full(n, 1, dtype=np.uint8), np.arange(n, dtype=np.uint64) * 131072,
             np.full(n, 131072, dtype=np.uint64))
    ratios = {}
    for pct in (None, 0, 50):
        job = SimpleNamespace(name="seq", qd=8, window_commands=512, buffer_compress_pct=pct)
        r = SimTarget(profile, seed=1).replay(job, [chunk])
        ratios[pct] = r.totals["nand_write_bytes"] / r.totals["host_write_bytes"]
    assert ratios == pytest.approx({None: 0.5, 0: 1.0, 50: 0.5}, abs=1e-3)


def test_random_map_writes_every_unit_of_the_span_once_per_pass():
    """fio's random map: one span's worth of 4 KiB random writes on a fresh drive maps the whole
    span; without it (norandommap, the default) about 1/e of the units stay unmapped. A TRIM of
    the whole span then unmaps exactly the mapped units (``trimmed_bytes``)."""
    def mapped_fraction(random_map: bool) -> float:
        t = SimTarget(load_profile("default", SMALL_DRIVE), seed=3)
        span = t.capacity_bytes // 2 // 2**20 * 2**20
        w = t.run_workload({"random_map": random_map, "span_bytes": span})
        assert w.totals["write_bytes"] == span
        t.run_workload({"trim_fraction": 1.0, "trim_bs_bytes": 1 << 20, "trim_random_fraction": 0.0,
                        "span_bytes": span})
        return t.counters()["trimmed_bytes"] / span

    assert mapped_fraction(True) == 1.0
    assert mapped_fraction(False) == pytest.approx(1 - np.exp(-1), abs=0.01)


def test_series_errors_come_from_the_native_module_alone_and_reach_users_as_user_errors(monkeypatch):
    """The native module raises its own exception classes (it imports nothing from the
    package: with ``ssdlab.errors`` unimportable it raises the same); the target raises them as
    ``ssdlab.errors``' with the same message."""
    sim = _native.Simulator(list(load_profile("default", SMALL_DRIVE).pairs), 1)
    user = sim.geometry()["user_bytes"]
    monkeypatch.setitem(__import__("sys").modules, "ssdlab.errors", None)
    with pytest.raises(_native.SeriesError, match=r"^interval_s: 1000000 s in intervals of 0.000001 s makes .* at least 0.2 s") as native:
        sim.start_phase("randwrite", 4096, 1, 0, user, duration_s=1e6, interval_s=1e-6)
    with pytest.raises(_native.SeriesError, match=r'^workload key "jobs\[0\].interval_s": .*interval of at least 0.2 s'):
        sim.start_workload({"duration_s": 1e6, "interval_s": 1e-6})
    monkeypatch.undo()
    t = SimTarget(load_profile("default", SMALL_DRIVE), seed=1)
    with pytest.raises(errors.UserError) as e:
        t.run_phase(JobSpec("rw", "randwrite", duration_s=1e6, interval_s=1e-6))
    assert not isinstance(e.value, ValueError) and str(e.value) == str(native.value)


def test_a_full_drive_is_raised_as_ssdlabs_drive_full_error():
    """``_native.DriveFullError(message, key)`` from any simulator call becomes
    :class:`ssdlab.errors.DriveFullError` (a ProfileError, exit 2) with its message and key."""
    from ssdlab.targets.sim import _Drive

    class Full:
        def advance(self, max_ios):
            raise _native.DriveFullError("profile key `user_capacity_bytes`: ran out of space", "user_capacity_bytes")

    assert issubclass(_native.DriveFullError, _native.ProfileError)
    with pytest.raises(errors.DriveFullError) as e:
        _Drive(Full()).advance(10)
    assert isinstance(e.value, errors.ProfileError) and e.value.key == "user_capacity_bytes"
    assert str(e.value) == "profile key `user_capacity_bytes`: ran out of space"


def test_fdp_jobs_write_through_their_placement_ids_and_fdp_stats_are_the_drives_own():
    """Two jobs on disjoint halves, one through handle 1, the other round robin over 2 and 3;
    the per-handle counters add up to the drive's, and nvme fdp stats' HBMW, MBMW and MBE are
    its host bytes, NAND bytes and erased blocks' bytes."""
    profile = load_profile("default", SMALL_DRIVE + ["user_capacity_bytes=6GiB", "fdp=1", "fdp_reclaim_unit_handles=4",
                                                     "fdp_ruh_type=persistently-isolated"])
    t = SimTarget(profile, seed=2)
    t.run_phase(JobSpec("fill", "write", bs_bytes=128 * 1024, qd=32))
    half = profile.user_bytes // 2 // 4096 * 4096
    r = t.run_workload({"interval_s": 0.5, "jobs": [
        {"name": "hot", "span_bytes": half, "placement_ids": [1], "io_bytes": half, "qd": 8},
        {"name": "cold", "offset_bytes": half, "span_bytes": half, "placement_ids": [2, 3],
         "io_bytes": half // 2, "qd": 8}]})
    h = r.totals["fdp_handles"]
    assert [x["host_write_bytes"] for x in h] == pytest.approx([0, half, half / 4, half / 4], abs=64 * 1024)
    for key in ("host_write_bytes", "nand_write_bytes", "gc_copied_bytes"):
        assert sum(x[key] for x in h) == r.totals[key], key
    assert r.totals["erases"] > 0 and all(x["ru_filled"] > 0 for x in h[1:])
    assert sum(x["ru_reclaimed"] for x in h) == r.totals["erases"]
    s = r.series
    np.testing.assert_array_equal(s["fdp_hbmw_bytes"], s["host_write_bytes"])
    np.testing.assert_array_equal(s["fdp_mbmw_bytes"], s["nand_write_bytes"])
    block_bytes = profile.values["pages_per_block"] * profile.values["page_size_bytes"]
    np.testing.assert_array_equal(s["fdp_mbe_bytes"], s["erases"] * block_bytes)
    # A placement id the drive lacks, and placement on a drive without FDP, are refused by key.
    with pytest.raises(ValueError, match="placement_ids.*not below the drive's 4"):
        t.run_workload({"number_ios": 10, "placement_ids": [4]})
    with pytest.raises(ValueError, match="placement_scheme.*fdp = 1"):
        SimTarget(load_profile("default", SMALL_DRIVE), seed=2).run_workload(
            {"number_ios": 10, "placement_scheme": [(0, 4096, 0)]})
