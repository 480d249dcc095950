"""Measured results a fit reads: a ``consistency``, ``fill`` or ``run`` results folder (of a
real drive or a simulated one), checked, with what a simulation must repeat to reproduce it.

Only the measurement is used: the test's parameters from ``summary.json`` (span, duration,
queue depth, block size, interval, the drive's capacity), the series (``series.parquet``,
``fill.parquet``/``burst.parquet``) and, for ``run``, the job file ``job.fio`` the run wrote. A
simulated drive's own profile, which ``summary.json`` also holds, is never read.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import results
from ..errors import UserError

#: Tests a fit can reproduce.
TESTS = ("consistency", "fill", "run")
#: Fewest intervals a series needs to be fitted.
MIN_INTERVALS = {"consistency": 10, "fill": 4, "run": 2}


@dataclass
class Measured:
    """One measured results folder.

    ``repro`` is what the simulation repeats (plain, picklable: it travels to the workers):
    ``test`` and the test's parameters; ``series`` the measured series (for the features and
    the plots); ``warnings`` what the user should know (an incomplete run...)."""

    folder: Path
    label: str
    test: str
    capacity_bytes: int
    repro: dict
    series: dict
    summary: dict
    warnings: list[str] = field(default_factory=list)
    #: Extra series (fill: the burst after the pause).
    extra: dict = field(default_factory=dict)


def _read_series(folder: Path, name: str, what: str) -> dict:
    try:
        return results.read_series(folder / name)
    except FileNotFoundError:
        raise UserError(f"{folder}: no {name}.parquet or {name}.csv ({what}); is the run complete?") from None
    except Exception as e:  # noqa: BLE001 - a damaged file: say which
        raise UserError(f"{folder / (name + '.parquet')}: cannot read the series: {type(e).__name__}: {e}") from None


def _interval(series: dict, folder: Path, name: str) -> float:
    t = np.asarray(series.get("t_s", ()), dtype=float)
    if len(t) < 2:
        raise UserError(f"{folder}/{name}: {len(t)} interval(s) measured; too few to fit")
    steps = np.diff(t)
    if not (steps > 0).all():
        raise UserError(f"{folder}/{name}: t_s is not increasing; not a series ssdlab wrote")
    return float(np.median(steps))


def _num(summary: dict, key: str, folder: Path, default=None, kind=float):
    v = summary.get(key, default)
    if v is None or isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        if default is not None:
            return kind(default)
        raise UserError(f"{folder}/summary.json: no usable {key!r} ({v!r}); the fit needs it to repeat the test")
    return kind(v)


def load_measured(path: str | Path) -> Measured:
    """Reads and checks one measured results folder. UserError naming the folder or file for
    a path that is not an ssdlab results folder, an unsupported test, an unusable series; an
    incomplete run with a usable series is accepted with a warning."""
    folder = Path(path)
    if not folder.exists():
        raise UserError(f"{folder}: no such results folder")
    if not folder.is_dir():
        raise UserError(f"{folder}: not a folder; give the results folder of a consistency, fill or run test")
    try:
        summary = results.read_summary(folder)
    except FileNotFoundError:
        reason = results.incomplete_reason(folder)
        if reason is not None:
            raise UserError(f"{folder}: the run stopped before writing summary.json ({reason}); nothing to fit") \
                from None
        raise UserError(f"{folder}: not an ssdlab results folder (no summary.json)") from None
    except (ValueError, OSError) as e:
        raise UserError(f"{folder}/summary.json: {e}") from None
    if not isinstance(summary, dict) or not results.is_results_dir(folder):
        raise UserError(f"{folder}/summary.json: not written by ssdlab (no ssdlab_version)")
    test = summary.get("test")
    if test not in TESTS:
        raise UserError(f"{folder}: a {test!r} results folder; a fit reproduces {', '.join(TESTS)} results")
    cap = summary.get("capacity_bytes")
    if not isinstance(cap, int) or cap <= 0:
        raise UserError(f"{folder}/summary.json: no capacity_bytes; the fit needs the drive's capacity")
    warnings = []
    marker = results.incomplete_reason(folder)  # "in progress": the process died mid-run
    reason = summary.get("incomplete_reason") or marker
    if summary.get("complete") is False or marker is not None:
        warnings.append(f"{folder}: incomplete run ({reason or 'marked incomplete'}); fitting the part measured")
    m = Measured(folder=folder, label=folder.resolve().name or str(folder), test=test, capacity_bytes=int(cap),
                 repro={}, series={}, summary=summary, warnings=warnings)
    {"consistency": _consistency, "fill": _fill, "run": _run}[test](m)
    return m


def _consistency(m: Measured) -> None:
    s, folder = m.summary, m.folder
    series = _read_series(folder, "series", "the random-write IOPS series")
    if "iops" not in series:
        raise UserError(f"{folder}/series: no iops column; not a consistency series")
    interval = _interval(series, folder, "series")
    x = np.asarray(series["iops"], dtype=float)
    finite = int(np.isfinite(x).sum())
    if finite < MIN_INTERVALS["consistency"]:
        raise UserError(f"{folder}/series: {finite} measured intervals; a fit needs at least "
                        f"{MIN_INTERVALS['consistency']}")
    m.series = {"t_s": np.asarray(series["t_s"], float), "iops": x}
    m.repro = {"test": "consistency", "span_pct": _num(s, "span_pct", folder, 100.0),
               "qd": _num(s, "qd", folder, 32, int), "bs_bytes": _num(s, "bs_bytes", folder, 4096, int),
               "interval_s": interval, "duration_s": len(x) * interval, "seed": 1}


def _fill(m: Measured) -> None:
    s, folder = m.summary, m.folder
    series = _read_series(folder, "fill", "the fill's MB/s series")
    if "mbps" not in series:
        raise UserError(f"{folder}/fill: no mbps column; not a fill series")
    interval = _interval(series, folder, "fill")
    if len(series["mbps"]) < MIN_INTERVALS["fill"]:
        raise UserError(f"{folder}/fill: {len(series['mbps'])} intervals; a fit needs at least {MIN_INTERVALS['fill']}")
    m.series = {k: np.asarray(v, float) for k, v in series.items()}
    try:
        burst = results.read_series(folder / "burst")
        m.extra["burst"] = {k: np.asarray(v, float) for k, v in burst.items()}
    except FileNotFoundError:
        pass
    span_pct = _num(s, "span_pct", folder, 100.0)
    written = float(np.nansum(np.asarray(series["mbps"], float) * np.asarray(series.get("dt_s", interval), float))) * 1e6
    span = _num(s, "span_bytes", folder, m.capacity_bytes * span_pct / 100)
    if written < 0.9 * span:
        m.warnings.append(f"{folder}: the fill wrote {written / 1e9:,.2f} of {span / 1e9:,.2f} GB; the fit compares "
                          "the part written")
    m.repro = {"test": "fill", "span_pct": span_pct, "bs_bytes": _num(s, "bs_bytes", folder, 1 << 20, int),
               "qd": _num(s, "qd", folder, 1, int), "interval_s": interval,
               "pause_s": _num(s, "pause_s", folder, 0.0), "burst_pct": _num(s, "burst_pct", folder, 0.0),
               "min_phase_pct": _num(s, "min_phase_pct", folder, 1.0), "seed": 1,
               "fraction_written": min(1.0, written / span) if span else 1.0}


def _run(m: Measured) -> None:
    s, folder = m.summary, m.folder
    job = folder / "job.fio"
    if not job.exists():
        raise UserError(f"{folder}: no job.fio; a fit repeats a run's fio job file (a generated workload such as "
                        "`record` has none and cannot be fitted)")
    groups = [g for g in s.get("groups") or [] if isinstance(g, dict)]
    usable = [g for g in groups if g.get("complete", True) and g.get("directions")]
    if not usable:
        raise UserError(f"{folder}/summary.json: no complete group with per-direction figures; nothing to fit")
    if len(usable) < len(groups):
        m.warnings.append(f"{folder}: {len(groups) - len(usable)} of {len(groups)} groups did not finish; fitting "
                          f"the first {len(usable)}")
    try:
        series = results.read_series(folder / "series")
    except FileNotFoundError:
        series = {}
    m.series = {k: np.asarray(v, float) for k, v in series.items()}
    fill = s.get("fill")
    m.repro = {"test": "run", "job_text": job.read_text(errors="replace"), "job_source": str(job),
               "fill": bool(fill), "interval_s": _num(s, "interval_s", folder, 1.0),
               "groups": len(usable), "seed": 1}
    m.extra["groups"] = usable
