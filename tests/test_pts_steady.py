"""The PTS steady-state rule on hand-made round series (reached, not reached by range,
slope failure, reached late, the 25-round limit)."""
from __future__ import annotations

import pytest

from ssdlab.pts import steady


def test_flat_series_reaches_at_round_five():
    s = steady.detect([100, 101, 99, 100, 100])
    assert s.reached and s.round == 5 and s.window.first == 1
    assert s.window.data_excursion_pct == pytest.approx(2.0)
    assert s.window.slope_excursion_pct < 1


def test_too_few_rounds_is_not_a_window():
    s = steady.detect([100, 100, 100, 100])
    assert not s.reached and s.window is None and not s.done


def test_range_failure_with_a_flat_line():
    # max - min = 30 = 30 % of 100 while the fitted line is flat: data excursion fails alone
    vals = [100, 85, 115, 115, 85]
    w = steady.window(vals, 1)
    assert w.slope_ok and not w.data_ok
    assert w.data_excursion_pct == pytest.approx(30.0)
    assert not steady.detect(vals).reached


def test_slope_failure_within_the_range():
    # a steady climb of 4 per round: range 16 % (ok), the line changes 16 % across the window
    vals = [92, 96, 100, 104, 108]
    w = steady.window(vals, 1)
    assert w.data_ok and not w.slope_ok
    assert w.slope == pytest.approx(4.0)
    assert w.slope_excursion_pct == pytest.approx(16.0)
    assert not steady.detect(vals).reached


def test_reached_late_after_a_decay():
    # the write cliff: IOPS fall from 100k toward 20k, then settle
    vals = [100_000, 70_000, 50_000, 38_000, 30_000, 26_000, 23_000, 21_500, 21_000, 20_800, 20_700, 20_600]
    s = steady.detect(vals)
    assert s.reached and s.round is not None and s.round > 5
    assert s.window.last == s.round and s.window.first == s.round - 4
    assert s.window.data_ok and s.window.slope_ok
    # every earlier window failed
    assert all(not w.steady for w in s.tried[:-1])


def test_not_reached_in_25_rounds_uses_the_last_window():
    vals = [100 * (0.9 ** i) for i in range(30)]  # keeps falling 10 % a round
    s = steady.detect(vals)
    assert not s.reached and s.rounds == 25 and s.done
    assert (s.window.first, s.window.last) == (21, 25)
    d = s.as_dict()
    assert d["reached"] is False and d["window_last_round"] == 25 and d["max_rounds"] == 25


def test_limits_are_inclusive():
    # data excursion exactly 20 % of the average and a flat line
    vals = [90, 110, 90, 110, 100]
    assert steady.window(vals, 1).data_ok


def test_windows_start_no_earlier_than_asked():
    ss = steady.detect([100.0] * 9, start=4)
    assert ss.reached and ss.round == 8 and (ss.window.first, ss.window.last) == (4, 8)
    assert ss.as_dict()["windows_from_round"] == 4
    early = steady.detect([100.0] * 7, start=4)  # rounds 4..8 not all run yet
    assert not early.reached and not early.done and early.window.first == 3
