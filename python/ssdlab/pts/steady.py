"""The PTS steady-state rule, as a pure function of a tracking variable's round values.

PTS 2.0.2 (and 1.x, section "Steady State"): the measurement window is the last 5 rounds;
steady state holds when, over that window,

* the data excursion -- max − min of the tracking variable -- is at most 20 % of the
  window's average, and
* the slope excursion -- the change of the least-squares line fitted through the window's
  (round, value) points from its first round to its last -- is at most 10 % of the average;

rounds continue until it holds, at most 25 of them; when it never holds, the last 5 rounds
are the measurement window and the report says steady state was not reached.

A caller may let windows start no earlier than a given round (``detect(..., start=k)``):
the suite does so on a drive that reports its garbage collection, from the first round in
which it copied valid data (see :mod:`ssdlab.pts.suite`).
(Values: the spec's text as SNIA's 1.x test pages state it, and CloudHarmony's
block-storage implementation, which fits the line the same way.)
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

WINDOW_ROUNDS = 5
MAX_ROUNDS = 25
DATA_EXCURSION_PCT = 20.0
SLOPE_EXCURSION_PCT = 10.0


@dataclass(frozen=True)
class Window:
    """The criteria over one 5-round window (rounds ``first``..``last``, 1-based)."""

    first: int
    last: int
    average: float
    data_excursion: float       #: max − min over the window [the variable's unit]
    data_excursion_pct: float   #: ... in percent of the average
    slope: float                #: least-squares slope [unit per round]
    intercept: float            #: the line's value at round ``first``
    slope_excursion: float      #: |slope| × (rounds − 1): the line's change across the window
    slope_excursion_pct: float  #: ... in percent of the average
    data_ok: bool
    slope_ok: bool

    @property
    def steady(self) -> bool:
        return self.data_ok and self.slope_ok


def window(values, first: int, window_rounds: int = WINDOW_ROUNDS,
           data_pct: float = DATA_EXCURSION_PCT, slope_pct: float = SLOPE_EXCURSION_PCT) -> Window:
    """The criteria over ``values[first-1 : first-1+window_rounds]`` (``first`` is 1-based)."""
    y = np.asarray(values, dtype=float)[first - 1:first - 1 + window_rounds]
    if len(y) != window_rounds:
        raise ValueError(f"window from round {first} needs {window_rounds} rounds, have {len(y)}")
    x = np.arange(window_rounds, dtype=float)
    avg = float(y.mean())
    slope, intercept = (float(v) for v in np.polyfit(x, y, 1))
    data_exc = float(y.max() - y.min())
    slope_exc = abs(slope) * (window_rounds - 1)
    scale = abs(avg)

    def pct(v: float) -> float:
        return 100.0 * v / scale if scale > 0 else (0.0 if v == 0 else float("inf"))

    return Window(first=first, last=first + window_rounds - 1, average=avg, data_excursion=data_exc,
                  data_excursion_pct=pct(data_exc), slope=slope, intercept=intercept,
                  slope_excursion=slope_exc, slope_excursion_pct=pct(slope_exc),
                  data_ok=pct(data_exc) <= data_pct + 1e-9, slope_ok=pct(slope_exc) <= slope_pct + 1e-9)


@dataclass(frozen=True)
class SteadyState:
    """The rule applied to a round series: reached or not, at which round, the measurement
    window and its criteria, and each window tried (for the convergence plot)."""

    reached: bool
    #: Round at which steady state was found (the window's last round); None if not reached.
    round: int | None
    rounds: int
    #: The measurement window (the steady one, or the last 5 rounds when not reached);
    #: None with fewer than 5 rounds.
    window: Window | None
    tried: tuple[Window, ...]
    max_rounds: int = MAX_ROUNDS
    #: The earliest round a window may start at (1: any).
    start: int = 1

    @property
    def done(self) -> bool:
        """No more rounds needed: reached, or the round limit hit."""
        return self.reached or self.rounds >= self.max_rounds

    def as_dict(self) -> dict:
        return {"reached": self.reached, "round": self.round, "rounds": self.rounds, "max_rounds": self.max_rounds,
                "window_rounds": WINDOW_ROUNDS, "data_excursion_limit_pct": DATA_EXCURSION_PCT,
                "slope_excursion_limit_pct": SLOPE_EXCURSION_PCT,
                "window": asdict(self.window) if self.window else None,
                "window_first_round": self.window.first if self.window else None,
                "window_last_round": self.window.last if self.window else None,
                "windows_from_round": self.start}


def detect(values, max_rounds: int = MAX_ROUNDS, window_rounds: int = WINDOW_ROUNDS,
           data_pct: float = DATA_EXCURSION_PCT, slope_pct: float = SLOPE_EXCURSION_PCT,
           start: int = 1) -> SteadyState:
    """Steady state of the tracking variable's round values (round 1 first): the first
    window (the 5 rounds ending at round r, r = 5, 6, ... up to ``max_rounds``) that meets
    both criteria and starts at round ``start`` or later. Rounds after ``max_rounds`` are
    ignored. Not reached: the last 5 rounds are the window."""
    y = [float(v) for v in values][:max_rounds]
    start = max(1, int(start))
    tried = []
    for last in range(window_rounds, len(y) + 1):
        w = window(y, last - window_rounds + 1, window_rounds, data_pct, slope_pct)
        tried.append(w)
        if w.steady and w.first >= start:
            return SteadyState(True, last, len(y), w, tuple(tried), max_rounds, start)
    return SteadyState(False, None, len(y), tried[-1] if tried else None, tuple(tried), max_rounds, start)
