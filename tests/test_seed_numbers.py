"""The seed archetypes' numbers, at full size and at the seeds' interval resolution.

The consistency runs are the reviews' test: the whole built-in drive (256 GB) filled
sequentially, then 4 KiB random writes at QD32 for 2000 s, read from t >= 1400 s as the
reviews zoom; the recovery runs are ``ssdlab recovery`` on the whole drive. The scaled-down
shapes are in ``test_profile_shapes.py``; these check the figures themselves, each within
the tolerance stated next to it ("about" in a seed is read as +-25 %).
``benches/bench_archetypes.py`` prints the same figures.
"""
from __future__ import annotations

import functools
import json

import numpy as np
import pytest

from ssdlab import analysis, profiles
from ssdlab.targets.sim import SimTarget

from conftest import fill_then_random_writes, run_cli

DURATION_S = 2000.0
T0_S = 1400.0
ABOUT = 0.25


def about(value: float, seed: float, rel: float = ABOUT) -> bool:
    return abs(value - seed) <= rel * seed


@functools.lru_cache(maxsize=None)
def steady(name: str, span_pct: float, interval_s: float) -> np.ndarray:
    """Per-interval IOPS from t >= 1400 s of the full-size consistency test."""
    _, r = fill_then_random_writes(SimTarget(profiles.load_profile(name), seed=1), DURATION_S, span_pct, interval_s)
    return np.asarray(r.series["iops"], dtype=np.float64)[int(T0_S / interval_s):]


# Seed 001, a reader's measurement of the M5 Pro (fw 1.02): "the throughput peaks always last
# about 0.4 sec, but at 0% OP they only occur with a period of about 7 seconds, while at 20%
# OP ... about 1.4 seconds, so the average throughput increases by about a factor of 5 ...
# about 30% of its time in the high-speed mode with 20% OP, but only about 6% ... with 0%
# OP"; the high-speed mode is "32,000+ IOPS" against ~100 IOPS.
HIGH_IOPS = 30_000


def stalling_bursts(span_pct: float) -> dict:
    x = steady("stalling", span_pct, 0.1)
    return analysis.burst_stats(x, HIGH_IOPS, 0.1, max_gap_s=analysis.BURST_JOIN_S)


def test_stalling_peaks_last_about_0_4_s_at_both_spare_areas():
    for span in (100.0, 80.0):
        b = stalling_bursts(span)
        assert about(b["burst_mean_s"], 0.4), (span, b)


def test_stalling_peaks_come_every_1_4_s_with_20_percent_spare_30_percent_of_the_time():
    b = stalling_bursts(80.0)
    assert about(b["burst_period_s"], 1.4), b
    assert abs(b["high_share"] - 0.30) <= 0.05, b


def test_stalling_peaks_are_rare_at_0_percent_spare():
    """Period: seed ~7 s, the model ~5.7 s (-19 %): one program time sets both periods, and
    it is chosen for the 20 % spare case and the burst length. High share: seed ~6 %."""
    b = stalling_bursts(100.0)
    assert about(b["burst_period_s"], 7.0), b
    assert abs(b["high_share"] - 0.06) <= 0.02, b


def test_stalling_spare_area_multiplies_average_throughput_about_5x():
    """Seed ~5x (its period ratio); the model ~3.9x: within 25 %."""
    ratio = steady("stalling", 80.0, 0.1).mean() / steady("stalling", 100.0, 0.1).mean()
    assert about(ratio, 5.0), ratio


def test_stalling_seconds_trickle_at_about_100_iops_with_peaks_above_30k():
    """AnandTech's 1-second view: most seconds at ~100 IOPS, "singular peak transfers ... at
    30-40K IOPS"."""
    x = steady("stalling", 100.0, 0.1)
    per_s = analysis.whole_seconds(x, 0.1)
    assert 50 <= np.median(per_s) <= 200, np.median(per_s)
    assert 25_000 <= per_s.max() <= 40_000, per_s.max()


# Seed 004, the M5M at 1 s intervals: "two main lines: One at ~7K IOPS and the other at 0
# IOPS ... About every third second the M5M completely stops"; with 25 % spare "the minimum
# IOPS is now over 20K (no more sudden 0 IOPS drops) ... the drop is only 5K IOPS". On the
# review's scatter plot (600 dots) "every third second" is the density of the 0 line: a
# third of the seconds. That share is matched; the stalls come as ~2 s every ~7 s, not 1 s
# every 3 s (the rhythm a scatter plot cannot show).


def test_cleanup_later_works_at_about_7k_and_stops_a_third_of_the_seconds():
    x = steady("cleanup-later", 100.0, 1.0)
    assert about(np.median(x[x > 0]), 7_000), np.median(x[x > 0])
    assert abs((x == 0).mean() - 1 / 3) <= 0.08, (x == 0).mean()


def test_cleanup_later_with_25_percent_spare_never_stops_and_dips_about_5k():
    x = steady("cleanup-later", 75.0, 1.0)
    assert x.min() > 20_000, x.min()
    assert 2_500 <= np.median(x) - x.min() <= 7_500, (np.median(x), x.min())


# Seed 000, the M3 under HD Tach (write passes over the whole drive): clean ~329 MB/s; after
# 20 min of 4 KiB random writes at QD32 "an average write speed of ~163MB/s ... as low as
# 50MB/s for the first LBAs, while the peak performance is still easily over 300MB/s";
# after idle time "almost as new ... on average only 25MB/s short of clean"; after TRIM as
# new. After 60 min: "50MB/s on average regardless of the LBA. At the lowest ... 35-40MB/s".


@functools.lru_cache(maxsize=None)
def recovery(tmp_root: str, torture_min: int) -> dict:
    out = f"{tmp_root}/recovery-{torture_min}"
    run_cli("recovery", "--target", "sim:recovery", "--torture-min", str(torture_min), "--no-read", "--out", out,
            "--no-progress", timeout=600)
    with open(f"{out}/summary.json") as f:
        return json.load(f)["stages"]


@pytest.fixture(scope="module")
def tmp_root(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("seed-recovery"))


def test_recovery_after_20_min_torture_averages_163_from_50_at_the_first_lbas(tmp_root):
    st = recovery(tmp_root, 20)
    assert about(st["clean"]["write_mbps_mean"], 329, 0.05), st["clean"]
    torture = st["after_torture"]
    assert about(torture["write_mbps_mean"], 163), torture
    assert about(torture["write_mbps_first_zones"], 50), torture
    assert torture["write_mbps_max"] > 300, torture


def test_recovery_after_idle_is_almost_as_new_and_after_trim_as_new(tmp_root):
    st = recovery(tmp_root, 20)
    clean = st["clean"]["write_mbps_mean"]
    assert 0 <= clean - st["after_idle"]["write_mbps_mean"] <= 50, st["after_idle"]
    assert about(st["after_trim"]["write_mbps_mean"], clean, 0.03), st["after_trim"]


def test_recovery_after_60_min_torture_is_lowest_at_35_to_40(tmp_root):
    torture = recovery(tmp_root, 60)["after_torture"]
    assert 30 <= torture["write_mbps_min"] <= 45, torture


@pytest.mark.xfail(strict=True, reason="the model's pass recovers across the LBAs after 60 min too "
                   "(~38 -> ~266 MB/s, 91 on average): greedy GC relocates at most (1-x)/s units per "
                   "unit written once a pass has rewritten a fraction x of the drive (test_pass_bound.py), "
                   "which keeps the last tenth above ~143 MB/s; the seed's drive stays at ~50")
def test_recovery_after_60_min_torture_averages_about_50_regardless_of_lba(tmp_root):
    torture = recovery(tmp_root, 60)["after_torture"]
    assert about(torture["write_mbps_mean"], 50), torture
    assert torture["write_mbps_last_zones"] <= 1.5 * torture["write_mbps_first_zones"], torture
