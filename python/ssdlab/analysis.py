"""Numbers from a per-interval IOPS series: the metrics the reviews argue about.

Input is one row per interval, as in a target's ``PhaseResult.series`` (see
:mod:`ssdlab.targets.base`): ``iops`` is the mean IO rate over each interval of
``interval_s`` seconds. Everything here is pure numpy, deterministic, and returns plain
Python ``float``/``int``/``bool``/``None`` so results go straight into ``summary.json``.

Units: IOs per second (``iops``), seconds (``_s``), bytes (``_bytes``), megabytes per
second (``mbps``, 1 MB = 10**6 bytes). Times are measured from the start of the series
(the start of its first interval); a time ``t`` names the interval that starts at ``t``.

Metrics and their exact definitions (:func:`analyze_iops` returns them all):

* Distribution: ``iops_mean``, ``iops_median``, ``iops_p1``, ``iops_p99`` (percentiles with
  numpy's default linear interpolation), ``iops_min``, ``iops_max``, ``iops_std``
  (population, ddof=0), ``iops_cv`` = std/mean, ``mbps_mean`` = iops_mean * bs_bytes / 1e6.
* Stalls: ``zero_iops_seconds`` = (number of intervals with IOPS exactly 0) * interval_s;
  ``longest_stall_s`` = longest run of consecutive zero intervals * interval_s.
* Fresh-out-of-box (FOB), see :func:`fob_phase`: ``fob_iops`` is the median of the first
  ``max(5, ceil(2% of the run))`` intervals; ``fob_duration_s`` is the start time of the
  first interval that is below ``fob_drop_fraction`` (50%) of ``fob_iops`` *and* after which
  a strict majority of the next ``max(5, ceil(1% of the run))`` intervals (itself included)
  are below it too. ``None`` when the series never leaves the FOB level.
* Steady state, see :func:`steady_state_window`: the SNIA SSS PTS rule (5-round window,
  range of the round means <= 20 % of their mean, least-squares excursion <= 10 %) on rounds
  of ``round_s`` seconds (60 s: long enough to average a drive's GC bursts), applied to
  IOPS and, where the series has host and NAND bytes, to each round's write amplification.
  The drive must *stay* steady: the onset is the start of the first window that meets the
  rule and after which the level holds to the end of the run (the means of every later
  5-round window within 20 % of each other, the least-squares excursion over the rest within
  10 %), so a run whose level drifts or steps after a flat stretch has no steady state
  ("not reached"); stationary noise averages out and passes. By default the search starts at the first round that begins at or
  after the end of the FOB phase (``ss_skip_fob``): a long FOB plateau (500 s on a Plextor
  M5M) is flat enough to pass the SNIA test although it is the opposite of steady state;
  SNIA avoids it by preconditioning, a torture test records it on purpose.
  ``steady_state_rounds`` is the 1-based number of the last round of the first qualifying
  window, i.e. how many rounds the drive needed to reach steady state (SNIA reporting).
  Steady-state statistics (``steady_state_iops_*``, ``consistency_score`` = mean/std) use
  the intervals from the onset to the end of the series. ``consistency_score`` is ``None``
  when there is no steady state *or* when std == 0 (a perfectly flat series has an
  infinite score, which JSON cannot hold).
* Bimodality, see :func:`split_modes` and :func:`burst_stats`: a two-class split of
  log10(iops + 1) by Otsu's method (the 1-D 2-means optimum) over the steady-state window,
  or over the second half of the run when there is no steady state. The series is called
  ``bimodal`` when both classes hold at least ``modes_min_share`` (2%) of the finite
  intervals and (median of the high class + 1) >= ``modes_min_ratio`` (3) * (median of the
  low class + 1). Only then are ``mode_threshold_iops``, ``low_mode_iops``,
  ``high_mode_iops``, ``high_mode_share``, ``burst_mean_s`` and ``burst_period_s``
  reported; otherwise they are ``None``. At intervals that divide a second (0.1 s, 0.5 s)
  the modes are split on whole seconds (each second's mean), the resolution the reviews
  plot: finer intervals read a trickle of ~100 IOPS as 0 or a few IOs, which would split
  idle intervals from the trickle instead of the trickle from the bursts. A *burst* is a run
  of consecutive intervals above the threshold, at the series' own resolution, dips of at
  most ``BURST_JOIN_S`` (0.25 s) included; ``burst_mean_s`` is the mean run length and
  ``burst_period_s`` the mean time between the starts of consecutive runs. Runs cut by the
  edges of the analysed window are left out of the length mean (and a run cut at the start,
  out of the period), unless they are the only runs.

NaN marks an interval without a measurement: it is left out of every statistic, it is not a
zero (it ends a stall run and a burst run), a round with no finite value has no mean, and a
steady-state window containing such a round does not qualify. Negative or infinite IOPS are
errors.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

if TYPE_CHECKING:  # imported in the functions that use them: `ssdlab --help` starts without them
    import numpy as np

__all__ = [
    "analyze_iops",
    "analyze_series",
    "round_means",
    "steady_state_window",
    "SteadyState",
    "fob_phase",
    "FobPhase",
    "otsu_threshold",
    "split_modes",
    "Modes",
    "burst_stats",
    "whole_seconds",
    "zero_runs",
    "write_amplification",
    "endurance_projection",
]


# --------------------------------------------------------------------------- helpers


def _as_series(iops: Any, name: str = "iops") -> np.ndarray:
    """Validate and return ``iops`` as a 1-D float64 array (NaN allowed, not inf/negative)."""
    import numpy as np

    x = np.asarray(iops, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"{name} must be a 1-D series (one row per interval), got shape {x.shape}")
    if x.size == 0:
        raise ValueError(f"{name} is empty: there is nothing to analyze (the run produced no intervals)")
    finite = np.isfinite(x)
    if not finite.any():
        raise ValueError(f"{name} has no finite values ({x.size} intervals, all NaN)")
    if np.isinf(x).any():
        i = int(np.flatnonzero(np.isinf(x))[0])
        raise ValueError(f"{name}[{i}] is infinite; IOPS must be finite (use NaN for a missing interval)")
    if (x[finite] < 0).any():
        i = int(np.flatnonzero(finite & (x < 0))[0])
        raise ValueError(f"{name}[{i}] = {x[i]} is negative; IOPS must be >= 0")
    return x


def _check_interval(interval_s: float) -> float:
    interval_s = float(interval_s)
    if not (interval_s > 0 and math.isfinite(interval_s)):
        raise ValueError(f"interval_s must be a positive number of seconds, got {interval_s}")
    return interval_s


def _intervals_per_round(round_s: float, interval_s: float) -> int:
    ratio = float(round_s) / interval_s
    k = int(round(ratio))
    if k < 1 or abs(ratio - k) > 1e-6 * max(1.0, ratio):
        raise ValueError(
            f"round_s={round_s} must be a whole positive multiple of interval_s={interval_s}"
        )
    return k


def _f(x: Any) -> float | None:
    """Plain float, or None for NaN/inf/None (JSON-safe)."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start indices and lengths of the runs of True in a 1-D boolean array."""
    import numpy as np

    m = np.asarray(mask, dtype=bool)
    if m.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    d = np.diff(np.concatenate(([0], m.astype(np.int8), [0])))
    starts = np.flatnonzero(d == 1)
    ends = np.flatnonzero(d == -1)
    return starts.astype(np.int64), (ends - starts).astype(np.int64)


def _dist(values: np.ndarray) -> dict[str, float | None]:
    """mean, median, p1, p99, min, max, std of the finite values (None if there are none)."""
    import numpy as np

    v = values[np.isfinite(values)]
    if v.size == 0:
        return dict.fromkeys(("mean", "median", "p1", "p99", "min", "max", "std"))
    p1, p50, p99 = np.percentile(v, [1.0, 50.0, 99.0])
    return {
        "mean": float(v.mean()),
        "median": float(p50),
        "p1": float(p1),
        "p99": float(p99),
        "min": float(v.min()),
        "max": float(v.max()),
        "std": float(v.std()),
    }


# --------------------------------------------------------------------------- stalls


def zero_runs(iops: Any) -> tuple[np.ndarray, np.ndarray]:
    """Runs of intervals at exactly 0 IOPS: ``(start_indices, lengths)`` in intervals.

    NaN is not zero, so it ends a run.
    """
    x = _as_series(iops)
    return _runs(x == 0)


# --------------------------------------------------------------------------- FOB


@dataclass(frozen=True)
class FobPhase:
    """The fresh-out-of-box plateau at the start of a run.

    ``level_iops`` is the plateau level; ``end_index`` the first interval after it (None if
    the series never leaves it); ``duration_s`` = ``end_index * interval_s`` (or None).
    """

    level_iops: float
    end_index: int | None
    duration_s: float | None


def _fob_end(x: np.ndarray, level: float, drop_fraction: float, hold: int) -> int | None:
    import numpy as np

    thr = drop_fraction * level
    below = np.isfinite(x) & (x < thr)
    n = x.size
    if n < hold:
        return None
    # below_count[i] = number of below-threshold intervals in x[i : i + hold]
    c = np.concatenate(([0], np.cumsum(below, dtype=np.int64)))
    below_count = c[hold:] - c[: n - hold + 1]
    ok = below[: n - hold + 1] & (2 * below_count > hold)
    idx = np.flatnonzero(ok)
    return int(idx[0]) if idx.size else None


def fob_phase(
    iops: Any,
    interval_s: float = 1.0,
    *,
    drop_fraction: float = 0.5,
    head_intervals: int | None = None,
    hold_intervals: int | None = None,
) -> FobPhase:
    """Find the fresh-out-of-box plateau and when it ends.

    Level: median of the first ``head_intervals`` finite values (default
    ``max(5, ceil(0.02 * n))``, capped at n). End: the first interval ``i`` with
    ``iops[i] < drop_fraction * level`` such that a strict majority of
    ``iops[i : i + hold_intervals]`` is below that threshold too (default hold
    ``max(5, ceil(0.01 * n))``; the window must fit in the series). "Majority" rather than
    "all" lets the drive's isolated bursts (M5 Pro: one ~35K interval every ~7 s) sit above
    the threshold without hiding the end of the plateau, while a single dip does not end it.

    One refinement: if the plateau ends inside the head, the level is recomputed as the
    median of the intervals before the end and the end searched again with it, so that a
    short plateau is not averaged with what follows.
    """
    import numpy as np

    x = _as_series(iops)
    interval_s = _check_interval(interval_s)
    if not 0 < drop_fraction < 1:
        raise ValueError(f"drop_fraction must be in (0, 1), got {drop_fraction}")
    n = x.size
    head = head_intervals if head_intervals is not None else max(5, math.ceil(0.02 * n))
    hold = hold_intervals if hold_intervals is not None else max(5, math.ceil(0.01 * n))
    if head < 1 or hold < 1:
        raise ValueError("head_intervals and hold_intervals must be >= 1")
    head = min(head, n)

    def level_of(m: int) -> float:
        v = x[:m][np.isfinite(x[:m])]
        return float(np.median(v)) if v.size else float(np.nanmedian(x))

    level = level_of(head)
    end = _fob_end(x, level, drop_fraction, hold)
    if end is not None and 0 < end < head:
        level = level_of(end)
        end = _fob_end(x, level, drop_fraction, hold)
    return FobPhase(level, end, None if end is None else end * interval_s)


# --------------------------------------------------------------------------- steady state


def round_means(iops: Any, interval_s: float = 1.0, round_s: float = 60.0) -> np.ndarray:
    """Mean IOPS of each full round of ``round_s`` seconds (a trailing partial round is dropped).

    A round without any finite value has mean NaN.
    """
    import numpy as np

    x = _as_series(iops)
    k = _intervals_per_round(round_s, _check_interval(interval_s))
    r = x.size // k
    if r == 0:
        return np.zeros(0)
    blocks = x[: r * k].reshape(r, k)
    fin = np.isfinite(blocks)
    cnt = fin.sum(axis=1)
    tot = np.where(fin, blocks, 0.0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(cnt > 0, tot / np.maximum(cnt, 1), np.nan)


def _holds(rounds: np.ndarray, window_rounds: int, range_limit: float, slope_limit: float) -> bool:
    """Whether the level stays put over ``rounds`` (a steady-state window's first round to
    the end of the run): the means of every ``window_rounds`` consecutive rounds lie within
    ``range_limit`` x their overall mean of each other, and the least-squares line through all
    the rounds moves less than ``slope_limit`` x that mean from end to end. Stationary noise
    passes (window means average it out); a level that drifts or steps after a flat stretch
    does not."""
    import numpy as np

    v = rounds[np.isfinite(rounds)]
    if v.size < window_rounds:
        return False
    mean = float(v.mean())
    if mean <= 0:
        return False
    means = np.lib.stride_tricks.sliding_window_view(v, window_rounds).mean(axis=1)
    xc = np.arange(v.size, dtype=np.float64) - (v.size - 1) / 2.0
    excursion = abs(float((v * xc).sum() / (xc * xc).sum())) * (v.size - 1)
    tol = 1 + 1e-12
    return bool(means.max() - means.min() <= range_limit * mean * tol and excursion <= slope_limit * mean * tol)


def steady_state_rule(round_s: float, with_wa: bool) -> str:
    """The steady-state rule a run was judged by, in words (for its summary and report)."""
    return (f"SNIA rule (5 rounds of {round_s:g} s: range <= 20 % of the mean, least-squares excursion <= "
            f"10 %) on IOPS{' and write amplification' if with_wa else ''}, and the level holding to the end")


def round_sums(values: Any, per_round: int) -> np.ndarray:
    """Sums of each full round of ``per_round`` intervals (a trailing partial round is dropped)."""
    import numpy as np

    v = np.asarray(values, dtype=np.float64)
    r = v.size // per_round
    return v[: r * per_round].reshape(r, per_round).sum(axis=1) if r else np.zeros(0)


@dataclass(frozen=True)
class SteadyState:
    """The first window of rounds that meets the SNIA steady-state rule.

    Rounds are 0-based; ``last_round`` is inclusive. ``range_fraction`` = (max - min of the
    window's round means) / their mean; ``excursion_fraction`` = |slope| * (rounds - 1) /
    mean, the slope (``slope_iops_per_round``) being the least-squares line through the
    round means.
    """

    onset_s: float
    first_round: int
    last_round: int
    window_mean_iops: float
    range_fraction: float
    excursion_fraction: float
    slope_iops_per_round: float


def steady_state_window(
    iops: Any,
    interval_s: float = 1.0,
    *,
    round_s: float = 60.0,
    window_rounds: int = 5,
    range_limit: float = 0.20,
    slope_limit: float = 0.10,
    start_s: float = 0.0,
    also: Sequence[np.ndarray] = (),
    hold: bool = True,
) -> SteadyState | None:
    """SNIA SSS PTS steady state on rounds of ``round_s`` seconds.

    Split the series into rounds, take each round's mean IOPS; a window of ``window_rounds``
    consecutive rounds, starting at or after ``start_s`` (rounds start at multiples of
    ``round_s``), meets the rule when (max - min of the round means) <= ``range_limit`` *
    window mean and the excursion of the least-squares line through them,
    |slope| * (window_rounds - 1), is <= ``slope_limit`` * window mean, and the window mean
    is > 0 (a dead drive is not "steady"). ``also``: other per-round series (e.g. each
    round's write amplification) that must meet the same rule in the same window. Returns
    the first window that meets it and, with ``hold`` (the default), from which the level
    stays put to the end of the run (:func:`_holds`: the means of every later window within
    ``range_limit`` of each other, the excursion over the rest within ``slope_limit``);
    ``None`` if there is none, including when the series holds fewer than ``window_rounds``
    full rounds.
    """
    import numpy as np

    if window_rounds < 2:
        raise ValueError(f"window_rounds must be >= 2 (a slope needs two rounds), got {window_rounds}")
    if range_limit < 0 or slope_limit < 0:
        raise ValueError("range_limit and slope_limit must be >= 0")
    means = round_means(iops, interval_s, round_s)
    r0 = max(0, math.ceil(float(start_s) / float(round_s) - 1e-9))
    w = window_rounds
    if means.size - r0 < w:
        return None

    def rule(rounds: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        win = np.lib.stride_tricks.sliding_window_view(rounds[r0:], w)
        avg = win.mean(axis=1)
        rng = win.max(axis=1) - win.min(axis=1)
        xc = np.arange(w, dtype=np.float64) - (w - 1) / 2.0
        slope = (win * xc).sum(axis=1) / float((xc * xc).sum())
        exc = np.abs(slope) * (w - 1)
        tol = 1 + 1e-12
        with np.errstate(invalid="ignore"):
            ok = (np.isfinite(avg) & (avg > 0) & (rng <= range_limit * avg * tol)
                  & (exc <= slope_limit * avg * tol))
        return ok, avg, rng, exc, slope

    ok, avg, rng, exc, slope = rule(means)
    for other in also:
        other = np.asarray(other, dtype=np.float64)[: means.size]
        if other.size < means.size:
            other = np.concatenate([other, np.full(means.size - other.size, np.nan)])
        ok &= rule(other)[0]
    if hold:
        series = [means] + [np.asarray(o, dtype=np.float64)[: means.size] for o in also]
        for j in np.flatnonzero(ok):
            ok[j] = all(_holds(v[r0 + j:], w, range_limit, slope_limit) for v in series)
    hits = np.flatnonzero(ok)
    if hits.size == 0:
        return None
    j = int(hits[0])
    first = r0 + j
    return SteadyState(
        onset_s=first * float(round_s),
        first_round=first,
        last_round=first + w - 1,
        window_mean_iops=float(avg[j]),
        range_fraction=float(rng[j] / avg[j]),
        excursion_fraction=float(exc[j] / avg[j]),
        slope_iops_per_round=float(slope[j]),
    )


# --------------------------------------------------------------------------- bimodality


def otsu_threshold(values: Any) -> float | None:
    """Otsu's threshold of 1-D data: the split maximising the between-class variance.

    Returns the midpoint between the largest value of the low class and the smallest of the
    high class (so ``values > t`` is the high class), or None with fewer than two distinct
    finite values. Exact, O(n log n). NaNs are ignored.
    """
    import numpy as np

    v = np.asarray(values, dtype=np.float64)
    v = np.sort(v[np.isfinite(v)])
    n = v.size
    if n < 2 or v[0] == v[-1]:
        return None
    c = np.cumsum(v)
    k = np.arange(1, n)  # size of the low class for a split after index k-1
    w0 = k / n
    mu0 = c[:-1] / k
    mu1 = (c[-1] - c[:-1]) / (n - k)
    between = w0 * (1 - w0) * (mu0 - mu1) ** 2
    between[v[1:] == v[:-1]] = -1.0  # only split between distinct values
    i = int(np.argmax(between))
    return float((v[i] + v[i + 1]) / 2.0)


@dataclass(frozen=True)
class Modes:
    """A low/high split of IOPS values (see :func:`split_modes`)."""

    threshold_iops: float
    low_iops: float
    high_iops: float
    high_share: float
    low_share: float
    bimodal: bool


def split_modes(iops: Any, *, min_ratio: float = 3.0, min_share: float = 0.02) -> Modes | None:
    """Split IOPS values into a low and a high mode with Otsu's method on log10(iops + 1).

    Log space because the modes the reviews show differ by orders of magnitude (0 vs 7K,
    100 vs 35K); in linear space the high mode would swallow everything. ``low_iops`` and
    ``high_iops`` are the medians of each class; shares are fractions of the finite values.
    ``bimodal`` is True when both shares are >= ``min_share`` and (high_iops + 1) >=
    ``min_ratio`` * (low_iops + 1). Returns None when the values are all equal (or fewer
    than two finite values).
    """
    import numpy as np

    x = _as_series(iops)
    v = x[np.isfinite(x)]
    y = np.log10(v + 1.0)
    t = otsu_threshold(y)
    if t is None:
        return None
    hi = y > t
    share_hi = float(hi.mean())
    low_iops = float(np.median(v[~hi]))
    high_iops = float(np.median(v[hi]))
    bimodal = (
        share_hi >= min_share
        and (1.0 - share_hi) >= min_share
        and (high_iops + 1.0) >= min_ratio * (low_iops + 1.0)
    )
    return Modes(
        threshold_iops=float(10.0**t - 1.0),
        low_iops=low_iops,
        high_iops=high_iops,
        high_share=share_hi,
        low_share=1.0 - share_hi,
        bimodal=bool(bimodal),
    )


#: Dips below the mode threshold of at most this long inside a burst do not split it, in
#: the summary's burst figures: at 0.1 s intervals a burst's ramp or tail can dip for an
#: interval or two, which would otherwise halve the burst period [s].
BURST_JOIN_S = 0.25


def whole_seconds(x: np.ndarray, interval_s: float) -> np.ndarray:
    """Mean IOPS of each whole second of ``x`` (seconds with a NaN interval are NaN) when its
    intervals divide a second and there are at least two seconds; otherwise ``x`` itself."""
    import numpy as np

    x = np.asarray(x, dtype=np.float64)
    k = round(1.0 / interval_s)
    if k < 2 or abs(k * interval_s - 1.0) > 1e-9 or x.size < 2 * k:
        return x
    return x[: x.size // k * k].reshape(-1, k).mean(axis=1)


def burst_stats(iops: Any, threshold_iops: float, interval_s: float = 1.0,
                max_gap_s: float = 0.0) -> dict[str, float | int | None]:
    """Runs of consecutive intervals above ``threshold_iops`` (bursts) in ``iops``.

    Two runs separated by at most ``max_gap_s`` seconds of intervals at or below the
    threshold are one burst (at fine intervals a burst's edge can dip below the threshold
    for an interval; 0 = no joining). Returns ``bursts`` (number of bursts),
    ``high_share`` (fraction of finite intervals above the threshold), ``burst_mean_s``
    (mean burst length, joined gaps included; bursts touching either end of the series
    are left out unless there are no others) and ``burst_period_s`` (mean time between the
    starts of consecutive bursts; a burst touching the start has no known start and is
    left out; None with fewer than two usable starts). NaN intervals are not bursts.
    """
    import numpy as np

    x = _as_series(iops)
    interval_s = _check_interval(interval_s)
    if not max_gap_s >= 0:
        raise ValueError(f"max_gap_s must be a number of seconds >= 0, got {max_gap_s}")
    fin = np.isfinite(x)
    hi = fin & (x > threshold_iops)
    starts, lengths = _runs(hi)
    if starts.size > 1 and max_gap_s > 0:
        gaps = starts[1:] - (starts[:-1] + lengths[:-1])
        new = np.concatenate(([True], gaps * interval_s > max_gap_s + 1e-9 * interval_s))
        ends = starts + lengths
        keep = np.flatnonzero(new)
        last = np.concatenate((keep[1:] - 1, [starts.size - 1]))
        starts, lengths = starts[keep], ends[last] - starts[keep]
    n = x.size
    if starts.size == 0:
        return {"bursts": 0, "high_share": 0.0, "burst_mean_s": None, "burst_period_s": None}
    interior = (starts > 0) & (starts + lengths < n)
    lens = lengths[interior] if interior.any() else lengths
    known = starts[starts > 0]
    period = float(np.diff(known).mean() * interval_s) if known.size >= 2 else None
    return {
        "bursts": int(starts.size),
        "high_share": float(hi.sum() / fin.sum()),
        "burst_mean_s": float(lens.mean() * interval_s),
        "burst_period_s": period,
    }


# --------------------------------------------------------------------------- write amplification


def write_amplification(host_bytes: float | int | None, nand_bytes: float | int | None) -> float | None:
    """NAND bytes written / host bytes written (dimensionless, >= 1 for a drive without compression).

    ``None`` when either is unknown (``None``, e.g. a real drive without counters) or when
    the host wrote nothing. Negative byte counts are an error.
    """
    if host_bytes is None or nand_bytes is None:
        return None
    h, m = float(host_bytes), float(nand_bytes)
    if not (math.isfinite(h) and math.isfinite(m)) or h < 0 or m < 0:
        raise ValueError(f"byte counts must be finite and >= 0, got host_bytes={host_bytes}, nand_bytes={nand_bytes}")
    if h == 0:
        return None
    return m / h


#: Days in a year, for ``years_until_rated_pe``.
DAYS_PER_YEAR = 365.25
#: Seconds in a day.
S_PER_DAY = 86_400.0


def _gb(n_bytes: float) -> str:
    """Bytes as GB (10^9) with three significant digits, whole GB from 100 on."""
    gb = n_bytes / 1e9
    return f"{gb:,.0f}" if gb >= 100 else f"{gb:.3g}"


def endurance_projection(host_write_bytes: float | int, duration_s: float, write_amplification: float | None,
                         capacity_bytes: float | int, rated_pe_cycles: float | int | None,
                         raw_capacity_bytes: float | int | None = None) -> dict[str, Any]:
    """How long the NAND lasts to its rated program/erase (P/E) count if the host kept
    writing as it did for ``duration_s``: ``host_write_bytes`` over ``duration_s`` seconds,
    around the clock, at ``write_amplification`` (NAND bytes / host bytes).

    Every block of NAND wears, spare area included, and wear levelling spreads the NAND
    writes over all of it, so the rating allows ``raw_capacity_bytes`` (the physical NAND,
    a profile's ``geometry.physical_bytes``) × ``rated_pe_cycles`` bytes of NAND writes.
    Without ``raw_capacity_bytes`` the user ``capacity_bytes`` stands in for it, which
    understates the endurance by the spare fraction; ``pe_capacity_basis`` says which was
    used. Then::

        host_bytes_per_day   = host_write_bytes / duration_s × 86400
        drive_writes_per_day = host_bytes_per_day / capacity_bytes             (DWPD, user capacity)
        nand_bytes_per_day   = host_bytes_per_day × write_amplification
        rated_total_host_bytes = pe_capacity_bytes × rated_pe_cycles / write_amplification   (TBW)
        days_until_rated_pe  = pe_capacity_bytes × rated_pe_cycles / (host_bytes_per_day × WA)
        years_until_rated_pe = days_until_rated_pe / 365.25

    Returns a dict with those keys plus the inputs (``host_write_bytes_per_s``,
    ``write_amplification``, ``capacity_bytes``, ``rated_pe_cycles``, ``pe_capacity_bytes``,
    ``pe_capacity_basis``), ``assumptions`` (one sentence a report can print) and
    ``unavailable``: None, or why the projection is n/a. A value that needs an unknown
    input is None: a real drive without NAND counters has no write amplification (no NAND
    bytes, no days), an unknown rating (``rated_pe_cycles`` None or 0) gives no TBW and no
    days; ``drive_writes_per_day`` needs neither. No host writes: no days (never worn out).
    """
    def number(name: str, v: Any, *, positive: bool) -> float:
        x = float(v)
        if not math.isfinite(x) or x < 0 or (positive and x == 0):
            raise ValueError(f"{name} must be a finite number {'> 0' if positive else '>= 0'}, got {v!r}")
        return x

    host = number("host_write_bytes", host_write_bytes, positive=False)
    dur = number("duration_s", duration_s, positive=True)
    cap = number("capacity_bytes", capacity_bytes, positive=True)
    wa = None if write_amplification is None else number("write_amplification", write_amplification, positive=True)
    pe = None if rated_pe_cycles is None else number("rated_pe_cycles", rated_pe_cycles, positive=False) or None
    raw = None if raw_capacity_bytes is None else number("raw_capacity_bytes", raw_capacity_bytes, positive=True)
    pe_cap, basis = (raw, "raw NAND") if raw is not None else (cap, "user capacity")

    rate = host / dur
    per_day = rate * S_PER_DAY
    nand_per_day = None if wa is None else per_day * wa
    tbw_exact = None if wa is None or pe is None else pe_cap * pe / wa
    tbw = None if tbw_exact is None else int(round(tbw_exact))  # whole bytes
    days = None if tbw_exact is None or per_day == 0 else tbw_exact / per_day
    missing = [why for why, gone in (("write amplification unknown (no NAND write counter)", wa is None),
                                     ("rated P/E cycles unknown", pe is None),
                                     ("no host writes", per_day == 0)) if gone]
    assumptions = (
        f"the host writes {rate / 1e6:.3g} MB/s around the clock (the measured mean rate); "
        + ("write amplification stays at the measured " + f"{wa:.3g}" if wa is not None else
           "write amplification unknown")
        + f"; wear levelling spreads NAND writes evenly over the {basis} ({_gb(pe_cap)} GB)"
        + (f", each block good for {pe:,.0f} P/E cycles" if pe is not None else "")
        + ". Reaching the rated P/E count ends the vendor's retention guarantee; it is not a failure date")
    return {
        "host_write_bytes_per_s": rate,
        "host_bytes_per_day": per_day,
        "drive_writes_per_day": per_day / cap,
        "write_amplification": wa,
        "nand_bytes_per_day": nand_per_day,
        "capacity_bytes": int(cap),
        "rated_pe_cycles": None if pe is None else int(pe),
        "pe_capacity_bytes": int(pe_cap),
        "pe_capacity_basis": basis,
        "rated_total_host_bytes": tbw,
        "days_until_rated_pe": days,
        "years_until_rated_pe": None if days is None else days / DAYS_PER_YEAR,
        "assumptions": assumptions,
        "unavailable": "; ".join(missing) or None,
    }


# --------------------------------------------------------------------------- main entry


def analyze_iops(
    iops: Any,
    interval_s: float = 1.0,
    *,
    round_s: float = 60.0,
    bs_bytes: int = 4096,
    window_rounds: int = 5,
    range_limit: float = 0.20,
    slope_limit: float = 0.10,
    ss_skip_fob: bool = True,
    fob_drop_fraction: float = 0.5,
    modes_min_ratio: float = 3.0,
    modes_min_share: float = 0.02,
    host_bytes: Any = None,
    nand_bytes: Any = None,
) -> dict[str, float | int | bool | None]:
    """All metrics of one IOPS series (one value per ``interval_s`` seconds), as a flat dict.
    ``host_bytes`` and ``nand_bytes`` (per interval, where the target counts them): steady
    state also needs each round's write amplification to meet the rule (see
    :func:`steady_state_rule`).

    See the module docstring for every definition. Keys (units in the names):

    ``n_intervals, interval_s, duration_s, nan_intervals``,
    ``iops_mean, iops_median, iops_p1, iops_p99, iops_min, iops_max, iops_std, iops_cv,
    mbps_mean``, ``zero_iops_seconds, longest_stall_s``, ``fob_iops, fob_duration_s``,
    ``rounds_total, steady_state_onset_s, steady_state_rounds, steady_state_iops_mean,
    steady_state_iops_median, steady_state_iops_p1, steady_state_iops_p99,
    consistency_score``, ``modes_from_s, bimodal, mode_threshold_iops, low_mode_iops,
    high_mode_iops, high_mode_share, burst_mean_s, burst_period_s``.

    Raises ValueError for an empty series, one without finite values, negative or infinite
    values, or a ``round_s`` that is not a whole multiple of ``interval_s``.
    """
    import numpy as np

    x = _as_series(iops)
    interval_s = _check_interval(interval_s)
    if bs_bytes <= 0:
        raise ValueError(f"bs_bytes must be > 0, got {bs_bytes}")
    k_round = _intervals_per_round(round_s, interval_s)
    n = x.size
    fin = np.isfinite(x)
    out: dict[str, float | int | bool | None] = {
        "n_intervals": int(n),
        "interval_s": interval_s,
        "duration_s": n * interval_s,
        "nan_intervals": int(n - fin.sum()),
    }

    d = _dist(x)
    mean = d["mean"]
    out.update(
        iops_mean=mean,
        iops_median=d["median"],
        iops_p1=d["p1"],
        iops_p99=d["p99"],
        iops_min=d["min"],
        iops_max=d["max"],
        iops_std=d["std"],
        iops_cv=(d["std"] / mean) if mean else None,
        mbps_mean=mean * bs_bytes / 1e6,
    )

    _, zlen = _runs(x == 0)
    out["zero_iops_seconds"] = float(zlen.sum() * interval_s)
    out["longest_stall_s"] = float((zlen.max() if zlen.size else 0) * interval_s)

    fob = fob_phase(x, interval_s, drop_fraction=fob_drop_fraction)
    out["fob_iops"] = fob.level_iops
    out["fob_duration_s"] = fob.duration_s

    also = []
    if host_bytes is not None and nand_bytes is not None:
        host, nand = (round_sums(v, k_round) for v in (host_bytes, nand_bytes))
        with np.errstate(invalid="ignore", divide="ignore"):
            also.append(np.where(host > 0, nand / host, np.nan))
    ss = steady_state_window(
        x,
        interval_s,
        round_s=round_s,
        window_rounds=window_rounds,
        range_limit=range_limit,
        slope_limit=slope_limit,
        start_s=(fob.duration_s or 0.0) if ss_skip_fob else 0.0,
        also=also,
    )
    out["rounds_total"] = int(n // k_round)
    if ss is None:
        out.update(
            steady_state_onset_s=None,
            steady_state_rounds=None,
            steady_state_iops_mean=None,
            steady_state_iops_median=None,
            steady_state_iops_p1=None,
            steady_state_iops_p99=None,
            consistency_score=None,
        )
        modes_from = n // 2
    else:
        onset_i = ss.first_round * k_round
        sd = _dist(x[onset_i:])
        out.update(
            steady_state_onset_s=ss.onset_s,
            steady_state_rounds=ss.last_round + 1,
            steady_state_iops_mean=sd["mean"],
            steady_state_iops_median=sd["median"],
            steady_state_iops_p1=sd["p1"],
            steady_state_iops_p99=sd["p99"],
            consistency_score=(sd["mean"] / sd["std"]) if sd["std"] else None,
        )
        modes_from = onset_i

    out["modes_from_s"] = modes_from * interval_s
    part = x[modes_from:]
    per_s = whole_seconds(part, interval_s)
    modes = split_modes(per_s, min_ratio=modes_min_ratio, min_share=modes_min_share) if np.isfinite(per_s).any() else None
    out["bimodal"] = bool(modes is not None and modes.bimodal)
    if modes is not None and modes.bimodal:
        b = burst_stats(part, modes.threshold_iops, interval_s, max_gap_s=BURST_JOIN_S)
        out.update(
            mode_threshold_iops=modes.threshold_iops,
            low_mode_iops=modes.low_iops,
            high_mode_iops=modes.high_iops,
            high_mode_share=modes.high_share,
            burst_mean_s=b["burst_mean_s"],
            burst_period_s=b["burst_period_s"],
        )
    else:
        out.update(
            mode_threshold_iops=None,
            low_mode_iops=None,
            high_mode_iops=None,
            high_mode_share=None,
            burst_mean_s=None,
            burst_period_s=None,
        )
    return {k: (_f(v) if isinstance(v, float) else v) for k, v in out.items()}


def analyze_series(
    series: Mapping[str, Any],
    *,
    interval_s: float | None = None,
    **kwargs: Any,
) -> dict[str, float | int | bool | None]:
    """:func:`analyze_iops` on a target's series dict (``t_s``, ``iops`` columns).

    ``interval_s`` defaults to the median step of ``t_s`` (1.0 if there is a single row).
    Time points in the result (``steady_state_onset_s``, ``modes_from_s``) are shifted by
    ``t_s[0]`` so they read on the series' own clock; durations are not. Other keyword arguments go to
    :func:`analyze_iops`.
    """
    import numpy as np

    if "iops" not in series:
        raise ValueError(f"series has no 'iops' column (columns: {sorted(series)})")
    iops = np.asarray(series["iops"], dtype=np.float64)
    t0 = 0.0
    if "t_s" in series:
        t = np.asarray(series["t_s"], dtype=np.float64)
        if t.shape != iops.shape:
            raise ValueError(f"series columns differ in length: t_s {t.shape}, iops {iops.shape}")
        if t.size:
            t0 = float(t[0])
        if interval_s is None and t.size >= 2:
            steps = np.diff(t)
            if not (steps > 0).all():
                raise ValueError("series t_s must be strictly increasing")
            interval_s = float(np.median(steps))
    res = analyze_iops(iops, 1.0 if interval_s is None else interval_s, **kwargs)
    if t0:
        for key in ("steady_state_onset_s", "modes_from_s"):
            if res.get(key) is not None:
                res[key] = float(res[key]) + t0
    return res
