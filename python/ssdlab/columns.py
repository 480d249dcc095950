"""Every column of a phase's per-interval series, declared once: its name, unit, meaning,
which way is better, and the chart it leads.

The simulated drive's counters are declared in the simulator's core (``ssdsim::columns``,
read here through ``ssdlab._native.series_columns()``): which counter a column reads, how
(its growth over the interval, or its level at the interval's end) and its scale. The
columns every target measures from the host's side (time, IOPS, MB/s, per-direction
latency percentiles) and those derived from the drive's columns (write amplification) are
declared here. Targets build their series from these tables, and the report and the plots
draw their charts of the drive from :func:`charts`; a new simulator counter is charted with
no change here.
"""
from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from . import _native

#: Data directions, in fio's order (its log files code them 0, 1, 2).
DIRECTIONS = ("read", "write", "trim")

#: Per-interval latency statistics a phase's series carries for each direction that ran:
#: (label, percentile); ``max`` is the largest latency of the interval.
LATENCY_STATS = (("p50", 50.0), ("p99", 99.0), ("p99.9", 99.9), ("max", 100.0))


def latency_column(direction: str, label: str) -> str:
    """Series column of one per-interval latency statistic [us]: ``write_lat_p99_us``,
    ``read_lat_p99_9_us``, ``write_lat_max_us``. NaN in an interval where that direction
    completed nothing."""
    return f"{direction}_lat_{label.replace('.', '_')}_us"


@dataclass(frozen=True)
class Column:
    """One series column. ``unit``: of the stored values ("bytes", "s", "IOPS", "MB/s",
    "us", what a count counts such as "blocks"; "" for a ratio). ``reading``: "change" (a
    drive counter's growth over the interval), "level" (a drive counter at the interval's
    end), "rate" (per second over the interval), "ratio", "latency" (a statistic of the IOs
    that completed in the interval) or "time". ``better``: "higher", "lower" or "n/a".
    ``chart``: the :class:`Chart` it leads ("" when not charted). Drive columns also name
    their ``counter``, ``scale`` and the feature they ``need`` ("slc_cache", "map_cache";
    "" for none)."""

    name: str
    unit: str
    label: str
    meaning: str
    better: str = "n/a"
    reading: str = "rate"
    chart: str = ""
    counter: str = ""
    scale: str = ""
    needs: str = ""


@dataclass(frozen=True)
class Chart:
    """A chart of series columns against time: drawn when one of the columns leading it
    (those whose ``chart`` is its ``id``) holds data, with the ``with`` columns beside them
    for comparison. ``button`` names it where several share a place."""

    id: str
    title: str
    ylabel: str
    button: str
    with_: tuple[str, ...] = ()


def _direction_columns(d: str) -> tuple[Column, ...]:
    lat = tuple(Column(latency_column(d, label), "us", f"{d} {label}",
                       f"{'Largest' if label == 'max' else label} completion latency of the {d}s that completed "
                       "in the interval (NaN where none did).", "lower", "latency", "latency")
                for label, _ in LATENCY_STATS)
    return (Column(f"{d}_iops", "IOPS", f"{d} IOPS", f"{d.capitalize()}s completed per second in the interval.",
                   "higher"),
            Column(f"{d}_mbps", "MB/s", f"{d} MB/s",
                   f"{d.capitalize()} data per second in the interval"
                   + (" (TRIM: bytes deallocated)." if d == "trim" else "."), "higher")) + lat


#: The columns every target's series may have, and those derived from the drive's.
HOST_COLUMNS: tuple[Column, ...] = (
    Column("t_s", "s", "time", "Start of the interval, from the phase's start.", reading="time"),
    Column("dt_s", "s", "interval", "Length of the interval (the last may be shorter).", reading="time"),
    Column("iops", "IOPS", "IOPS", "IOs completed per second in the interval, every direction.", "higher"),
    Column("mbps", "MB/s", "MB/s", "Data moved per second in the interval, every direction.", "higher"),
    *(c for d in DIRECTIONS for c in _direction_columns(d)),
    Column("write_amplification", "", "write amplification",
           "NAND bytes / host bytes written in the interval (NaN when the host wrote nothing).", "lower", "ratio",
           "wa"),
    # An emulated drive's faithfulness (emu: targets), on the wall clock.
    Column("late_share", "", "late replies",
           "Share of the emulated drive's replies in the interval sent more than 50 us (wall clock) after their "
           "simulated completion time: the host was too slow to emulate the drive (emu: targets).", "lower",
           "ratio"),
    Column("late_p99_us", "us", "lateness p99",
           "99th percentile of how late the emulated drive's replies in the interval were sent [us, wall clock; "
           "the upper bound of its 1-2-5 bucket] (emu: targets).", "lower", "latency"),
    # A trace replay's series: one row per window of commands.
    Column("window", "", "window", "Index of the replay window.", reading="time"),
    Column("commands", "", "commands", "Commands replayed by the window's end.", reading="time"),
)
#: Charts of the derived columns, drawn before the drive's own.
HOST_CHARTS: tuple[Chart, ...] = (
    Chart("wa", "Write amplification per interval (NAND bytes / host bytes)", "write amplification",
          "write amplification"),
)


@functools.cache
def _native_tables() -> dict:
    return _native.series_columns()


def counters() -> tuple[str, ...]:
    """The simulated drive's counters by name, as its snapshots hold them."""
    return tuple(_native_tables()["counters"])


@functools.cache
def drive_columns() -> tuple[Column, ...]:
    """The simulated drive's columns, in series order, as its core declares them."""
    return tuple(Column(c["name"], c["unit"], c["label"], c["meaning"], c["better"], c["reading"], c["chart"],
                        c["counter"], c["scale"], c["needs"]) for c in _native_tables()["columns"])


@functools.cache
def charts() -> tuple[Chart, ...]:
    """Every chart of the drive's and the derived columns, in page order."""
    return HOST_CHARTS + tuple(Chart(k["id"], k["title"], k["ylabel"], k["button"], tuple(k["with"]))
                               for k in _native_tables()["charts"])


@functools.cache
def declared() -> dict[str, Column]:
    """Every declared column by name."""
    return {c.name: c for c in HOST_COLUMNS + drive_columns()}


def undeclared(names: Iterable[str]) -> list[str]:
    """The column names in ``names`` that no table declares."""
    known = declared()
    return [n for n in names if n not in known]


def chart_columns(chart: Chart) -> tuple[list[Column], list[Column]]:
    """(the columns leading ``chart``, its ``with`` columns), in declaration order."""
    known = declared()
    return [c for c in known.values() if c.chart == chart.id], [known[n] for n in chart.with_]


def chart_kind(chart: Chart) -> str:
    """"line" for a chart of levels, "scatter" for one of per-interval figures."""
    leading, _ = chart_columns(chart)
    return "line" if all(c.reading == "level" for c in leading) else "scatter"


def display(column: Column, interval_s: float) -> tuple[str, float]:
    """How a chart shows ``column`` of a series of ``interval_s`` intervals: (unit, factor
    on the values). Bytes per interval become MB/s, byte levels GB, other counts per
    interval counts per second; the rest is shown as stored."""
    if column.unit == "bytes":
        return ("MB/s", 1e-6 / interval_s) if column.reading == "change" else ("GB", 1e-9)
    if column.reading == "change":
        return f"{column.unit}/s", 1.0 / interval_s
    return column.unit, 1.0


def has_data(series: Mapping[str, Any], name: str) -> bool:
    """True if ``series`` has column ``name`` with a finite value."""
    import numpy as np

    return name in series and bool(np.isfinite(np.asarray(series[name], dtype=np.float64)).any())


def latency_columns(series: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """The per-interval latency columns of ``series`` that hold data, as (column, direction,
    statistic label), in :data:`DIRECTIONS` x :data:`LATENCY_STATS` order."""
    return [(c, d, label) for d in DIRECTIONS for label, _ in LATENCY_STATS
            if has_data(series, c := latency_column(d, label))]
