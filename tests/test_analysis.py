"""ssdlab.analysis on synthetic series whose answers are known by construction.

The archetypes come from the seeds: active GC (continuously varying 5K..20K), "clean up
later" (7K with a 0-IOPS second about every third second), and the M5 Pro stall (about
100 IOPS with single-interval bursts above 30K every ~7 s).
"""
import json
import math

import numpy as np
import pytest

from ssdlab.analysis import (
    analyze_iops,
    analyze_series,
    burst_stats,
    whole_seconds,
    fob_phase,
    otsu_threshold,
    round_means,
    split_modes,
    steady_state_window,
    write_amplification,
    zero_runs,
)

N = 2000  # the reviewers' 2000-second run, one value per second

EXPECTED_KEYS = {
    "n_intervals", "interval_s", "duration_s", "nan_intervals",
    "iops_mean", "iops_median", "iops_p1", "iops_p99", "iops_min", "iops_max", "iops_std",
    "iops_cv", "mbps_mean", "zero_iops_seconds", "longest_stall_s", "fob_iops",
    "fob_duration_s", "rounds_total", "steady_state_onset_s", "steady_state_rounds",
    "steady_state_iops_mean", "steady_state_iops_median", "steady_state_iops_p1",
    "steady_state_iops_p99", "consistency_score", "modes_from_s", "bimodal",
    "mode_threshold_iops", "low_mode_iops", "high_mode_iops", "high_mode_share",
    "burst_mean_s", "burst_period_s",
}
BURST_KEYS = ("mode_threshold_iops", "low_mode_iops", "high_mode_iops", "high_mode_share",
              "burst_mean_s", "burst_period_s")


def fob_decay_flat(seed=1):
    """80K for 300 s, linear decay to 10K over 300..600 s, then 10K +-5% (uniform) noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(N, dtype=float)
    x = 10_000 * (1 + rng.uniform(-0.05, 0.05, N))
    x[:300] = 80_000
    dec = (t >= 300) & (t < 600)
    x[dec] = 80_000 - (t[dec] - 300) * 70_000 / 300
    return x


def m5pro_bursts(n=N, baseline=100.0, burst=35_000.0, period=7, phase=3):
    x = np.full(n, baseline)
    x[phase::period] = burst
    return x


# ----------------------------------------------------------------------------- contract


def test_result_is_flat_json_with_every_key():
    res = analyze_iops(fob_decay_flat())
    assert set(res) == EXPECTED_KEYS
    json.dumps(res, allow_nan=False)  # plain floats/ints/bools/None only
    for k, v in res.items():
        assert v is None or type(v) in (int, float, bool), (k, type(v))


def test_distribution_stats_and_units():
    x = np.arange(1, 101, dtype=float)  # 1..100 IOPS
    res = analyze_iops(x, bs_bytes=8192)
    assert res["iops_mean"] == 50.5
    assert res["iops_median"] == 50.5
    assert res["iops_min"] == 1.0 and res["iops_max"] == 100.0
    assert res["iops_p1"] == pytest.approx(1.99)  # numpy linear interpolation
    assert res["iops_p99"] == pytest.approx(99.01)
    assert res["iops_cv"] == pytest.approx(np.std(x) / 50.5)
    assert res["mbps_mean"] == pytest.approx(50.5 * 8192 / 1e6)
    assert res["duration_s"] == 100.0 and res["n_intervals"] == 100


# ----------------------------------------------------------------------------- steady state


def test_known_onset_after_fob_plateau_and_decay():
    res = analyze_iops(fob_decay_flat())
    assert res["fob_iops"] == 80_000.0
    # first interval below 40K: 80K - (t-300)*70K/300 < 40K  <=>  t > 471.43
    assert res["fob_duration_s"] == 472.0
    assert res["steady_state_onset_s"] == 600.0  # true onset of the flat part
    assert res["steady_state_rounds"] == 15  # window = rounds 10..14 (0-based)
    assert res["steady_state_iops_mean"] == pytest.approx(10_000, rel=0.01)
    assert res["steady_state_iops_p1"] == pytest.approx(9_510, rel=0.005)
    assert res["steady_state_iops_p99"] == pytest.approx(10_490, rel=0.005)
    # uniform +-5%: sigma = 0.05 * 10K / sqrt(3) -> mean/sigma = sqrt(3)/0.05 = 34.64
    assert res["consistency_score"] == pytest.approx(math.sqrt(3) / 0.05, rel=0.05)
    assert res["bimodal"] is False
    assert all(res[k] is None for k in BURST_KEYS)


def test_pure_snia_rule_calls_the_fob_plateau_steady():
    # Why the level must hold to the end: 5 flat rounds at 80K satisfy the SNIA rule alone.
    ss = steady_state_window(fob_decay_flat(), hold=False)
    assert ss.onset_s == 0.0 and ss.last_round == 4
    # held to the end, the plateau is no steady state, even without skipping the FOB phase
    assert analyze_iops(fob_decay_flat(), ss_skip_fob=False)["steady_state_onset_s"] == 600.0


@pytest.mark.parametrize("shape", ["step", "dip"])
def test_a_level_that_moves_after_a_flat_stretch_is_never_steady(shape):
    """Hand-made drifts of the kind a real drive shows (the default drive's 300 s medians went
    3.7K -> 6.3K -> 5.4K): each flat stretch passes the SNIA window alone, the run does not."""
    rng = np.random.default_rng(5)
    t = np.arange(N, dtype=float)
    level = {"step": np.where(t < 900, 3_750.0, 6_300.0),
             "dip": np.where((t >= 1200) & (t < 1500), 4_000.0, 5_400.0)}[shape]
    x = level * (1 + rng.uniform(-0.05, 0.05, N))
    assert steady_state_window(x, hold=False) is not None  # the SNIA window alone passes somewhere
    res = analyze_iops(x)
    assert res["steady_state_onset_s"] is None or res["steady_state_onset_s"] >= {
        "step": 900, "dip": 1500}[shape], res["steady_state_onset_s"]


def test_stationary_noise_is_steady_early():
    """Holding the level to the end costs noise nothing: with or without it, the onset is the
    first window the SNIA rule accepts (a noisy first window may fail it, as before)."""
    for seed in range(20):
        x = np.random.default_rng(seed).uniform(5_000, 20_000, N)
        ss = steady_state_window(x, hold=False)
        assert analyze_iops(x, ss_skip_fob=False)["steady_state_onset_s"] == ss.onset_s <= 300, seed


def test_write_amplification_that_drifts_keeps_the_drive_from_steady_state():
    x = np.full(N, 10_000.0)
    host = x * 4096
    wa = np.where(np.arange(N) < 1000, 3.0, 4.5)  # IOPS flat, the drive's WA still climbing
    assert analyze_iops(x)["steady_state_onset_s"] == 0.0
    assert analyze_iops(x, host_bytes=host, nand_bytes=host * wa)["steady_state_onset_s"] == 1020.0
    assert analyze_iops(x, host_bytes=host, nand_bytes=host * 3.0)["steady_state_onset_s"] == 0.0


@pytest.mark.parametrize("ramp", [np.linspace(1_000, 100_000, N), np.linspace(100_000, 1_000, N)],
                         ids=["up", "down"])
def test_ramp_never_settles(ramp):
    res = analyze_iops(ramp)
    assert res["steady_state_onset_s"] is None
    assert res["steady_state_rounds"] is None
    assert res["consistency_score"] is None
    assert res["steady_state_iops_mean"] is None
    assert res["modes_from_s"] == N / 2  # no steady state: modes over the second half


def test_too_short_for_a_window():
    x = np.full(299, 5_000.0)  # 4 full rounds of 60 s, window needs 5
    res = analyze_iops(x)
    assert res["rounds_total"] == 4
    assert res["steady_state_onset_s"] is None
    assert res["iops_mean"] == 5_000.0
    assert steady_state_window(x) is None
    assert steady_state_window(x, window_rounds=4).onset_s == 0.0


def test_snia_limits_are_inclusive_and_adjustable():
    # one interval per round: the round means are the values themselves
    ok_range = [90.0, 110.0, 100.0, 100.0, 100.0]  # range exactly 20% of 100
    ss = steady_state_window(ok_range, round_s=1.0)
    assert ss is not None and ss.first_round == 0 and ss.range_fraction == pytest.approx(0.2)
    assert steady_state_window([89.0, 111.0, 100.0, 100.0, 100.0], round_s=1.0) is None
    assert steady_state_window([89.0, 111.0, 100.0, 100.0, 100.0], round_s=1.0, range_limit=0.25) is not None
    sloped = [92.0, 96.0, 100.0, 104.0, 108.0]  # range 16% ok, fitted excursion 16% > 10%
    assert steady_state_window(sloped, round_s=1.0) is None
    ss = steady_state_window(sloped, round_s=1.0, slope_limit=0.16)
    assert ss.slope_iops_per_round == pytest.approx(4.0)
    assert ss.excursion_fraction == pytest.approx(0.16)


def test_window_search_starts_after_start_s_on_round_grid():
    x = np.full(600, 1_000.0)
    assert steady_state_window(x, start_s=61).onset_s == 120.0
    assert steady_state_window(x, start_s=60).onset_s == 60.0
    assert steady_state_window(x, start_s=301) is None  # rounds 6..9 only: 4 < 5


def test_round_means_drop_partial_round_and_nan_rounds():
    x = np.r_[np.full(60, 10.0), np.full(60, np.nan), np.full(30, 20.0)]
    m = round_means(x)
    assert m.shape == (2,) and m[0] == 10.0 and np.isnan(m[1])


def test_round_must_be_multiple_of_interval():
    with pytest.raises(ValueError, match="whole positive multiple"):
        analyze_iops(np.ones(100), interval_s=0.7, round_s=60.0)


def test_flat_series_has_no_finite_consistency_score():
    res = analyze_iops(np.full(N, 5_000.0))
    assert res["steady_state_onset_s"] == 0.0
    assert res["iops_cv"] == 0.0
    assert res["consistency_score"] is None  # sigma == 0: documented as None, not inf
    assert res["bimodal"] is False


# ----------------------------------------------------------------------------- FOB


def test_short_fob_plateau_is_not_averaged_with_what_follows():
    # FOB shorter than the 40-interval head: the refinement recovers the 80K level
    x = m5pro_bursts()
    x[:20] = 80_000
    fob = fob_phase(x)
    assert fob.level_iops == 80_000.0
    assert fob.end_index == 20 and fob.duration_s == 20.0


def test_single_dip_does_not_end_fob():
    x = np.full(N, 50_000.0)
    x[100:103] = 1_000  # 3 low intervals: no majority of the next 20
    assert fob_phase(x).duration_s is None


# ----------------------------------------------------------------------------- stalls


@pytest.mark.parametrize("interval_s", [1.0, 0.5])
def test_known_stalls(interval_s):
    x = np.full(N, 7_000.0)
    x[100:103] = 0  # 3
    x[500] = 0  # 1
    x[1000:1010] = 0  # 10
    res = analyze_iops(x, interval_s=interval_s)
    assert res["zero_iops_seconds"] == 14 * interval_s
    assert res["longest_stall_s"] == 10 * interval_s
    starts, lengths = zero_runs(x)
    assert starts.tolist() == [100, 500, 1000] and lengths.tolist() == [3, 1, 10]


def test_no_stall():
    res = analyze_iops(np.full(100, 1.0))
    assert res["zero_iops_seconds"] == 0.0 and res["longest_stall_s"] == 0.0


# ----------------------------------------------------------------------------- bimodality


def test_m5pro_bursts_every_7_seconds():
    res = analyze_iops(m5pro_bursts())
    assert res["bimodal"] is True
    assert res["burst_period_s"] == 7.0
    assert res["burst_mean_s"] == 1.0
    assert res["high_mode_share"] == pytest.approx(1 / 7, abs=0.002)
    assert res["low_mode_iops"] == 100.0 and res["high_mode_iops"] == 35_000.0
    assert 100 < res["mode_threshold_iops"] < 35_000
    assert res["zero_iops_seconds"] == 0.0


def test_m5pro_with_fob_and_noise():
    rng = np.random.default_rng(7)
    x = 100 * (1 + rng.uniform(-0.2, 0.2, N))
    x[3::7] = rng.uniform(30_000, 40_000, x[3::7].size)
    x[:40] = 80_000 * (1 + rng.uniform(-0.02, 0.02, 40))
    res = analyze_iops(x, interval_s=1.0)
    assert res["fob_duration_s"] == 40.0
    assert res["fob_iops"] == pytest.approx(80_000, rel=0.02)
    assert res["steady_state_onset_s"] == 60.0  # first round after the FOB drop
    assert res["bimodal"] is True
    assert res["burst_period_s"] == 7.0 and res["burst_mean_s"] == 1.0
    assert res["high_mode_share"] == pytest.approx(1 / 7, abs=0.005)


def test_clean_up_later_zero_every_third_second():
    x = np.full(N, 7_000.0)
    x[2::3] = 0
    res = analyze_iops(x)
    assert res["zero_iops_seconds"] == float(len(range(2, N, 3)))  # 666
    assert res["longest_stall_s"] == 1.0
    assert res["bimodal"] is True
    assert res["high_mode_share"] == pytest.approx(2 / 3, abs=0.001)
    assert res["burst_mean_s"] == 2.0 and res["burst_period_s"] == 3.0
    assert res["low_mode_iops"] == 0.0 and res["high_mode_iops"] == 7_000.0


def test_active_gc_is_not_bimodal():
    x = np.random.default_rng(3).uniform(5_000, 20_000, N)
    res = analyze_iops(x)
    assert res["bimodal"] is False
    assert all(res[k] is None for k in BURST_KEYS)
    assert res["zero_iops_seconds"] == 0.0
    assert res["fob_duration_s"] is None  # no FOB drop in this synthetic series
    assert res["steady_state_onset_s"] == 0.0


def test_rare_stalls_alone_are_not_bimodal():
    x = np.full(N, 7_000.0)
    x[::100] = 0  # 1% of intervals: below the 2% share rule
    assert analyze_iops(x)["bimodal"] is False


def test_split_modes_and_otsu_helpers():
    assert otsu_threshold([1, 1, 1, 10, 10, 10]) == 5.5
    assert otsu_threshold([3, 3, 3]) is None
    assert split_modes(np.full(10, 4.0)) is None
    m = split_modes(np.r_[np.full(90, 100.0), np.full(10, 50_000.0)])
    assert m.bimodal and m.high_share == pytest.approx(0.1)
    close = split_modes(np.r_[np.full(50, 1_000.0), np.full(50, 2_500.0)])  # 2.5x < 3x
    assert close is not None and not close.bimodal


def test_burst_stats_leave_out_edge_runs():
    x = np.array([9, 9, 0, 0, 9, 9, 9, 0, 0, 0, 9, 9, 9, 0, 9], dtype=float)
    b = burst_stats(x, threshold_iops=5)
    assert b["bursts"] == 4
    assert b["burst_mean_s"] == 3.0  # interior runs only (3 and 3)
    assert b["burst_period_s"] == 5.0  # starts 4, 10, 14 (the run at 0 has no known start)
    assert b["high_share"] == pytest.approx(9 / 15)
    assert burst_stats(np.zeros(5), 1)["burst_mean_s"] is None


def test_burst_stats_join_runs_split_by_short_dips():
    # Bursts of 4 intervals every 10, each split by a one-interval dip at 0.1 s intervals.
    one = np.array([0, 0, 0, 9, 2, 9, 9, 0, 0, 0], dtype=float)
    x = np.tile(one, 5)
    split = burst_stats(x, 5, 0.1)
    assert split["bursts"] == 10 and split["burst_period_s"] == pytest.approx(4.2 / 9)  # 0.2, 0.8, ...: half the true period
    joined = burst_stats(x, 5, 0.1, max_gap_s=0.1)
    assert joined["bursts"] == 5
    assert joined["burst_mean_s"] == pytest.approx(0.4)  # the dip is inside the burst
    assert joined["burst_period_s"] == pytest.approx(1.0)
    assert joined["high_share"] == split["high_share"] == pytest.approx(0.3)
    # The 0.3 s between bursts is not a dip at max_gap_s = 0.2 s; it is at 0.3 s.
    assert burst_stats(x, 5, 0.1, max_gap_s=0.2)["bursts"] == 5
    assert burst_stats(x, 5, 0.1, max_gap_s=0.6)["bursts"] == 1
    with pytest.raises(ValueError, match="max_gap_s"):
        burst_stats(x, 5, 0.1, max_gap_s=-1)


# ----------------------------------------------------------------------------- bad input, NaN


@pytest.mark.parametrize("bad, match", [
    ([], "empty"),
    ([np.nan, np.nan], "no finite values"),
    ([1.0, -1.0], "negative"),
    ([1.0, np.inf], "infinite"),
    (np.ones((2, 2)), "1-D"),
])
def test_bad_series(bad, match):
    with pytest.raises(ValueError, match=match):
        analyze_iops(bad)


def test_nan_is_missing_not_zero():
    x = np.array([5.0, 0.0, 0.0, np.nan, 0.0, 5.0, np.nan])
    res = analyze_iops(x)
    assert res["nan_intervals"] == 2
    assert res["zero_iops_seconds"] == 3.0
    assert res["longest_stall_s"] == 2.0  # NaN ends the run
    assert res["iops_mean"] == 2.0  # (5 + 0 + 0 + 0 + 5) / 5
    assert res["iops_min"] == 0.0 and res["iops_max"] == 5.0


def test_nan_round_blocks_steady_window():
    x = np.full(600, 1_000.0)
    x[120:180] = np.nan  # round 2 has no data
    assert analyze_iops(x)["steady_state_onset_s"] == 180.0


# ----------------------------------------------------------------------------- misc


def test_analyze_series_uses_t_s():
    iops = m5pro_bursts(n=4000, period=14, phase=6)  # 7 s period at 0.5-s intervals
    t = 100.0 + 0.5 * np.arange(iops.size)
    res = analyze_series({"t_s": t, "iops": iops})
    assert res["interval_s"] == 0.5
    assert res["burst_period_s"] == 7.0 and res["burst_mean_s"] == 0.5
    assert res["steady_state_onset_s"] == 100.0  # on the series' clock


def test_write_amplification():
    assert write_amplification(100, 250) == 2.5
    assert write_amplification(0, 10) is None
    assert write_amplification(100, None) is None
    with pytest.raises(ValueError):
        write_amplification(-1, 10)


def test_modes_at_fine_intervals_are_split_on_whole_seconds():
    """A stalling drive at 0.1 s: its trickle of ~100 IOPS completes in batches (96 IOs in
    one interval of each second, 960 IOPS, none in the others), with a 0.4 s burst at 80K
    every 5 s. Split per interval, the modes would be idle intervals against everything
    else, the trickle's batches counting as bursts; split on whole seconds they are the
    trickle (~100) against the bursts, and the burst figures come from the 0.1 s intervals."""
    cycle = np.zeros(50)
    cycle[[5, 16, 27, 38]] = 960.0
    cycle[45:49] = 80_000.0
    x = np.tile(cycle, 60)
    m = analyze_iops(x, interval_s=0.1, round_s=1.0)
    assert m["bimodal"]
    assert 50 <= m["low_mode_iops"] <= 200 and m["high_mode_iops"] > 20_000
    assert m["burst_mean_s"] == pytest.approx(0.4)
    assert m["burst_period_s"] == pytest.approx(5.0)
    # The same series at 1 s (no finer intervals): nothing changes in how it is split.
    per_s = whole_seconds(x, 0.1)
    assert per_s.size == 300
    assert np.array_equal(whole_seconds(per_s, 1.0), per_s)
