"""Measured results a fit reads: a ``consistency``, ``fill`` or ``run`` results folder (of a
real drive or a simulated one), or a CSV file of a fill or consistency curve from elsewhere
(a review, another tool), checked, with what a simulation must repeat to reproduce it.

Only the measurement is used: the test's parameters from ``summary.json`` (span, duration,
queue depth, block size, interval, the drive's capacity), the series (``series.parquet``,
``fill.parquet``/``burst.parquet``) and, for ``run``, the job file ``job.fio`` the run wrote. A
simulated drive's own profile, which ``summary.json`` also holds, is never read.

A CSV file (:data:`CSV_FORMAT`; :func:`load_csv`) holds the curve alone; the drive's capacity
and the test's parameters come from :class:`CsvOptions` (the command line's ``--capacity``,
``--test``, ``--bs``, ``--qd``, ``--span``, ``--interval``).
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path

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
    import numpy as np

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


def load_measured(path: str | Path, csv_options: "CsvOptions | None" = None) -> Measured:
    """Reads and checks one measured results folder, or a CSV file (:func:`load_csv`, with
    ``csv_options``). UserError naming the folder or file for a path that is not an ssdlab
    results folder, an unsupported test, an unusable series; an incomplete run with a usable
    series is accepted with a warning."""
    folder = Path(path)
    if not folder.exists():
        raise UserError(f"{folder}: no such results folder or CSV file")
    if folder.is_file() and folder.suffix.lower() == ".csv":
        return load_csv(folder, csv_options or CsvOptions())
    if not folder.is_dir():
        raise UserError(f"{folder}: not a folder nor a .csv file; give the results folder of a consistency, fill or "
                        "run test, or a CSV curve (ssdlab fit --help describes it)")
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
    import numpy as np

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
    import numpy as np

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
    import numpy as np

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


# --------------------------------------------------------------------------- CSV curves

#: The CSV format, as ``ssdlab fit --help`` and the README state it.
CSV_FORMAT = """\
A CSV file (.csv) is a curve measured elsewhere: lines starting with # are comments, the first
other line is the header, then one row per point, numbers only:
  fill         written_gb,mbps  GB written so far (10^9 bytes) and the write rate there (MB/s,
               10^6 bytes/s, above 0); GB never decreasing. The curve runs straight from point
               to point; a step is two rows at the same GB ("24,3000" then "24,1000"); before
               the first row the rate is the first row's. The fit reads it as the drive's
               fill (--interval S per interval, default 0.5 s) from 0 to the last row's GB.
  consistency  t_s,iops  seconds since the random writes started, one row per interval, evenly
               spaced (the step is the interval), and the IOPS in that interval (>= 0).
The drive and the test come from options: --capacity (required: the drive's user capacity,
e.g. 1TB), --test (fill or consistency; else the header says), --bs, --qd, --span (defaults:
the test's own: a fill of 1 MiB writes at QD1, a consistency run of 4 KiB at QD32, span 100 %)."""
#: CSV headers and the test each one is.
CSV_HEADERS = {("written_gb", "mbps"): "fill", ("t_s", "iops"): "consistency"}
#: A consistency CSV's steps may differ from their median by this share.
CSV_STEP_TOLERANCE = 0.02


@dataclass(frozen=True)
class CsvOptions:
    """What a CSV curve does not say: the drive's user capacity [bytes], the test (None: the
    header's), block size [bytes], queue depth, span [% of the capacity] (None: the test's
    defaults) and, for a fill, the interval the curve is read at [s]."""

    capacity_bytes: int | None = None
    test: str | None = None
    bs_bytes: int | None = None
    qd: int | None = None
    span_pct: float | None = None
    interval_s: float | None = None

    def given(self) -> list[str]:
        """The options set, as the command line spells them."""
        flags = {"capacity_bytes": "--capacity", "test": "--test", "bs_bytes": "--bs", "qd": "--qd",
                 "span_pct": "--span", "interval_s": "--interval"}
        return [flag for name, flag in flags.items() if getattr(self, name) is not None]


def _csv_rows(path: Path) -> tuple[int, list[str], list[tuple[int, list[float]]]]:
    """(header line, column names, [(line, values)]) of ``path``; UserError naming the file,
    line and column of the first thing that is not a number or a row of the wrong width."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"{path}: cannot read it: {e}") from None
    header, head_line, rows = None, 0, []
    for line_no, fields in enumerate(csv.reader(text.splitlines()), start=1):
        if not fields or not "".join(fields).strip() or fields[0].lstrip().startswith("#"):
            continue
        cells = [c.strip() for c in fields]
        if header is None:
            header, head_line = [c.lower() for c in cells], line_no
            continue
        if len(cells) != len(header):
            raise UserError(f"{path}:{line_no}: {len(cells)} values; the header ({','.join(header)}) names "
                            f"{len(header)}")
        values = []
        for name, cell in zip(header, cells):
            try:
                v = float(cell)
            except ValueError:
                raise UserError(f"{path}:{line_no}: column {name}: {cell!r} is not a number") from None
            if not math.isfinite(v) or v < 0:
                raise UserError(f"{path}:{line_no}: column {name}: {cell} is not a number >= 0")
            values.append(v)
        rows.append((line_no, values))
    if header is None:
        raise UserError(f"{path}: no header line; the first line that is not a # comment names the columns: "
                        + " or ".join(",".join(h) for h in CSV_HEADERS))
    return head_line, header, rows


def load_csv(path: Path, opts: CsvOptions) -> Measured:
    """A fill or consistency curve from a CSV file (:data:`CSV_FORMAT`), as a :class:`Measured`
    whose test the simulator repeats on a drive of ``opts.capacity_bytes``. UserError naming
    the file, line and column (or the option) of anything it cannot use."""
    import numpy as np

    from ..procedures.consistency import ConsistencyParams
    from ..procedures.fill import FillParams

    head_line, header, rows = _csv_rows(path)
    test = CSV_HEADERS.get(tuple(header))
    if test is None:
        raise UserError(f"{path}:{head_line}: header {','.join(header)!r}: expected "
                        + " or ".join(f"{','.join(h)} (a {t})" for h, t in CSV_HEADERS.items()))
    if opts.test is not None and opts.test != test:
        raise UserError(f"{path}:{head_line}: the header {','.join(header)} is a {test} curve, not --test {opts.test}")
    if opts.capacity_bytes is None:
        raise UserError(f"{path}: a CSV curve needs --capacity (the drive's user capacity, e.g. 1TB or 512GB)")
    cap = opts.capacity_bytes // 4096 * 4096
    if cap <= 0:
        raise UserError(f"--capacity {opts.capacity_bytes}: at least 4096 bytes")
    defaults = FillParams() if test == "fill" else ConsistencyParams()
    span_pct = defaults.span_pct if opts.span_pct is None else opts.span_pct
    bs = defaults.bs_bytes if opts.bs_bytes is None else opts.bs_bytes
    qd = defaults.qd if opts.qd is None else opts.qd
    span = cap * span_pct / 100
    m = Measured(folder=path, label=path.stem, test=test, capacity_bytes=cap, repro={}, series={},
                 summary={"test": test, "capacity_bytes": cap, "span_pct": span_pct, "span_bytes": span,
                          "bs_bytes": bs, "qd": qd, "source": "csv"})
    if test == "fill":
        m.series, interval = _fill_curve(path, rows, span,
                                         defaults.interval_s if opts.interval_s is None else opts.interval_s)
        written = float(np.sum(m.series["mbps"] * m.series["dt_s"])) * 1e6
        if written < 0.9 * span:
            m.warnings.append(f"{path}: the curve ends at {written / 1e9:,.2f} of the span's {span / 1e9:,.2f} GB; "
                              "the fit compares the part written")
        m.repro = {"test": "fill", "span_pct": span_pct, "bs_bytes": bs, "qd": qd, "interval_s": interval,
                   "pause_s": 0.0, "burst_pct": 0.0, "min_phase_pct": defaults.min_phase_pct, "seed": 1,
                   "fraction_written": min(1.0, written / span)}
    else:
        if opts.interval_s is not None:
            raise UserError(f"--interval applies to a fill curve; {path}'s rows give the consistency run's interval")
        m.series, interval = _consistency_curve(path, rows)
        m.repro = {"test": "consistency", "span_pct": span_pct, "qd": qd, "bs_bytes": bs, "interval_s": interval,
                   "duration_s": len(m.series["iops"]) * interval, "seed": 1}
    m.summary["interval_s"] = interval
    return m


def _fill_curve(path: Path, rows: list[tuple[int, list[float]]], span_bytes: float,
                interval_s: float) -> tuple[dict, float]:
    """The fill series (t_s, mbps, dt_s) of the piecewise-linear curve MB/s against GB written,
    read every ``interval_s`` of the time it takes (shorter for a curve of fewer than
    MIN_INTERVALS of them), and that interval [s]."""
    import numpy as np

    if len(rows) < 2:
        raise UserError(f"{path}: {len(rows)} point(s); a fill curve needs at least two")
    gb = np.array([v[0] for _, v in rows])
    mbps = np.array([v[1] for _, v in rows])
    for (line, v), prev in zip(rows[1:], gb[:-1]):
        if v[0] < prev:
            raise UserError(f"{path}:{line}: column written_gb: {v[0]:g} is below the row before's {prev:g}; GB "
                            "written never decreases")
    for line, v in rows:
        if v[1] <= 0:
            raise UserError(f"{path}:{line}: column mbps: {v[1]:g} MB/s; the curve needs a rate above 0 at every "
                            "point (a stall is a low rate over a short stretch of GB)")
        if v[0] * 1e9 > span_bytes * 1.01:
            raise UserError(f"{path}:{line}: column written_gb: {v[0]:g} GB is beyond the span "
                            f"({span_bytes / 1e9:,.4g} GB = --capacity x --span); check --capacity")
    if gb[-1] <= 0:
        raise UserError(f"{path}:{rows[-1][0]}: the curve ends at 0 GB written; nothing to fit")
    if gb[0] > 0:
        gb, mbps = np.concatenate([[0.0], gb]), np.concatenate([[mbps[0]], mbps])
    # Between two points the rate is linear in MB written, r(m) = a + k (m - m0): the stretch
    # takes ln(b / a) / k seconds, and t seconds into it m0 + a (e^(k t) - 1) / k MB are written
    # (k = 0: m / a and a t).
    mb = gb * 1e3
    a, b, d_mb = mbps[:-1], mbps[1:], np.diff(mb)
    k = np.divide(b - a, d_mb, out=np.zeros_like(a), where=d_mb > 0)
    flat = np.abs(k) * np.maximum(d_mb, 1.0) < 1e-9 * a
    seg_s = np.where(flat, d_mb / a, np.log(b / a) / np.where(flat, 1.0, k))
    ends = np.concatenate([[0.0], np.cumsum(seg_s)])
    total_s = float(ends[-1])
    step = min(interval_s, total_s / MIN_INTERVALS["fill"])
    t = np.minimum(np.arange(1, math.ceil(total_s / step - 1e-9) + 1) * step, total_s)
    i = np.clip(np.searchsorted(ends, t, side="right") - 1, 0, len(seg_s) - 1)
    tau = t - ends[i]
    ki = np.where(flat[i], 0.0, k[i])
    with np.errstate(over="ignore", invalid="ignore"):  # the branch np.where does not take
        grown = a[i] * np.expm1(ki * tau) / np.where(flat[i], 1.0, ki)
    written_mb = np.minimum(mb[-1], mb[i] + np.where(flat[i], a[i] * tau, grown))
    dt = np.diff(np.concatenate([[0.0], t]))
    keep = dt > 1e-12
    rate = np.diff(np.concatenate([[0.0], written_mb]))[keep] / dt[keep]
    return {"t_s": t[keep], "mbps": rate, "dt_s": dt[keep]}, step


def _consistency_curve(path: Path, rows: list[tuple[int, list[float]]]) -> tuple[dict, float]:
    """The consistency series (t_s, iops) and its interval [s]; the rows evenly spaced."""
    import numpy as np

    t = np.array([v[0] for _, v in rows])
    steps = np.diff(t)
    for (line, v), step, prev in zip(rows[1:], steps, t[:-1]):
        if step <= 0:
            raise UserError(f"{path}:{line}: column t_s: {v[0]:g} s is not after the row before's {prev:g} s")
    if len(rows) < MIN_INTERVALS["consistency"]:
        raise UserError(f"{path}: {len(rows)} interval(s); a consistency curve needs at least "
                        f"{MIN_INTERVALS['consistency']}")
    interval = float(np.median(steps))
    for (line, v), step in zip(rows[1:], steps):
        if abs(step - interval) > CSV_STEP_TOLERANCE * interval:
            raise UserError(f"{path}:{line}: column t_s: {step:g} s after the row before, the other rows "
                            f"{interval:g} s; one row per interval, evenly spaced")
    return {"t_s": t, "iops": np.array([v[1] for _, v in rows])}, interval
