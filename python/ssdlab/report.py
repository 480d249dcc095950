"""``report.html``: one self-contained, offline, interactive page for one or more results folders.

:func:`write_report` reads results folders (``summary.json`` and the series next to it, see
:mod:`ssdlab.results`) and writes a single HTML file with everything inline: CSS, the charting
library `dygraphs <https://dygraphs.com>`_ (MIT; vendored in ``ssdlab/vendor/dygraphs`` from
Debian's ``libjs-dygraphs``, licence kept as a comment), a small script that drives it, and the
data as JSON in a ``<script type="application/json">`` block. No CDN, no web fonts, no images,
no requests: the file works from a USB stick on a machine without network, and can be mailed
around.

What the page shows, like the reviews' interactive consistency graphs (AnandTech, seeds
001/004):

* **Performance consistency** (runs whose ``test`` is ``"consistency"`` or ``"analyze"``, or
  any run without a ``plot`` hint whose series has ``t_s`` and ``iops``): an IOPS-vs-time
  scatter plot with buttons to switch the *drive*, the *variant* ("Default" vs "25% Spare
  Area"...), the *scale* (log / linear) and the *zoom* (whole run; steady state from the
  detected onset; from t=1400 s as in the reviews, or 70 % of a run shorter than 2000 s).
  Drag on the plot to zoom on a time range, double-click to see the whole run again. All
  drives share one y scale, as in the reviews, so switching drives compares like with like.
  Zero-IOPS intervals are drawn at the floor (log scale) or at 0 with their own marker.
  Under it, for the run(s) shown and over the same time range: per-interval **latency**
  (p50, p99, p99.9, max per direction, log scale; series with ``{direction}_lat_*_us``
  columns) and the simulator's **why**: write amplification, free blocks, GC copies vs host
  writes (MB/s) per interval (the columns :mod:`ssdlab.targets.sim` writes).
* **Other runs** (``"sweep"``, ``"recovery"``, ``"used"``... or anything with a ``plot`` hint):
  line or scatter charts, one section per ``test`` kind, with a run selector (or all runs
  overlaid), a chart selector, log / linear toggle, drag zoom, and clickable legend entries.
* A run that groups other results folders (``"test": "review"``, with their folder names in
  ``part_dirs``) comes first: its tables are the page's overview. :func:`expand_run_dirs`
  turns such a folder into itself and its parts.
* Every chart labels the range it shows: log axes span whole decades with the top and bottom
  labelled, linear ones start at 0, the x axis labels both ends (the end of the run).
* Tables: the main metrics side by side (one column per run; click a column header to show
  that run), every ``tables`` entry a run provides (and a fill's phases, from its summary),
  the other values labelled with units (:func:`value_label`; a PTS run's threads and queue
  depth as run, only the options of the tests it ran), and per run a collapsible block with
  the ssdlab version, command line, target, profile, target facts and every stored value.

Grouping: runs are grouped into *drives* by (``target``, ``target_info.model``,
``profile``); inside a drive, runs are *variants* labelled by ``span_pct``: 100 % (or no
span) is "Default", 75 % is "25% Spare Area" (the rest of the drive left unwritten as extra
spare area). Drives whose labels collide get the profile keys that differ appended.

Conventions in ``summary.json`` that the report reads (all optional):

``"label": "Samsung SSD 840 Pro 256GB"``
    The drive's name on the buttons (default: ``target_info.model`` and ``target``, or
    ``target``).
``"variant": "25% OP"``
    The variant's name (default: from ``span_pct`` as above).
``"plot"``: a dict, or a list of dicts (one chart each)::

        {"series": "series",            # which <name>.parquet / <name>.csv (default "series")
         "x": "position_pct",           # x column (default "t_s", else the first column)
         "y": ["write_mbps", "read_mbps"],  # y columns (default: every other column)
         "kind": "line",                # "line" (default) or "scatter"
         "title": "...", "xlabel": "...", "ylabel": "...",  # default: the column names
         "label": "...",                # the chart's button when a run has several (default: title)
         "logy": false}                 # initial scale (default false)

    A ``y`` entry may also be a dict ``{"series": "used", "y": "iops", "label": "used",
    "unit": "IOPS", "scale": 1.0, "stat": "p99", "group": "used"}``: a column of another
    series of the folder (same ``x`` column name), its legend label, unit, a factor applied
    to the values (e.g. bytes per 1 s interval x 1e-6 = MB/s), and for latency the
    statistic (one colour each) and the group it belongs to (one marker shape each).
``"phase_plots"``: more hints like ``plot``, drawn after it: the per-interval series of a
    test's phases (IOPS, latency, the simulator's internals over time), as
    :func:`time_series_hints` builds them.
    A run with a ``plot`` hint is drawn as line/scatter charts even if its series has
    ``iops``. A run of another kind without a hint gets one line chart of ``series``:
    x = ``t_s`` (else the first column), y = ``iops`` if present, else every other column.
``"tables"``: a list of ``{"title": str, "columns": [str, ...], "rows": [[...], ...],
"note": str, "bars": [column, ...], "highlight": [first cell, ...]}``; a row may also be a
dict keyed by column name. Rendered as HTML tables, in order, in the run's section; numbers
are formatted, ``null`` shows as "n/a"; ``bars`` columns get a bar proportional to the value
(the reviewers' bar tables), ``highlight`` rows a second colour.

Big series are thinned to at most :data:`MAX_POINTS` points per chart: each of a few
thousand time buckets keeps its minimum and maximum, plus an even stride of the rest (so
the dot density still reads right), and every zero-IOPS interval is kept. The page says
when a chart was thinned. The full series stay in the results folder.
"""
from __future__ import annotations

import datetime as _dt
import functools
import html
import json
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported in the functions that use them: `ssdlab --help` starts without them
    import numpy as np

from . import __version__, columns, results
from .charts import Metric
from .columns import latency_columns

__all__ = [
    "write_report",
    "render_report",
    "load_run",
    "expand_run_dirs",
    "variant_label",
    "downsample_indices",
    "format_value",
    "VALUE_LABELS",
    "value_label",
    "unit_suffix",
    "MAX_POINTS",
    "REPORT_NAME",
    "latency_columns",
    "time_series_hints",
    "phase_hints",
    "DYGRAPHS_VERSION",
]

REPORT_NAME = "report.html"
#: Most points a chart carries into the page (per run and chart).
MAX_POINTS = 20_000
#: ``test`` values drawn as consistency scatter plots.
CONSISTENCY_TESTS = ("consistency", "analyze")
#: ``test`` values drawn as line plots even when their series has ``iops``.
LINE_TESTS = ("sweep", "recovery", "used")
#: ``test`` values of runs that group other results folders (their ``part_dirs``, relative
#: folder names in ``summary.json``): shown first, as the overview of the page.
GROUP_TESTS = ("review",)

#: The endurance projection (``summary["endurance"]``, see
#: :func:`ssdlab.analysis.endurance_projection`) as the report shows it: (key, label, unit,
#: divisor from the summary's unit).
ENDURANCE_METRICS: tuple[tuple[str, str, str, float], ...] = (
    ("host_write_bytes_per_s", "host write rate", "MB/s", 1e6),
    ("drive_writes_per_day", "drive writes per day", "", 1.0),
    ("host_bytes_per_day", "host writes per day", "TB", 1e12),
    ("write_amplification", "write amplification", "", 1.0),
    ("write_amplification_basis", "write amplification from", "", 1.0),
    ("nand_bytes_per_day", "NAND writes per day", "TB", 1e12),
    ("rated_pe_cycles", "rated P/E cycles", "", 1.0),
    ("pe_capacity_bytes", "capacity the rating applies to", "GB", 1e9),
    ("pe_capacity_basis", "which capacity", "", 1.0),
    ("rated_total_host_bytes", "host writes the rating allows, TBW", "TB", 1e12),
    ("days_until_rated_pe", "time to the rated P/E count", "days", 1.0),
    ("years_until_rated_pe", "time to the rated P/E count", "years", 1.0),
    ("unavailable", "n/a because", "", 1.0),
)
#: Run parameters shown above the metrics: (key, label, unit[, divisor from the summary's unit]).
_PARAMS: tuple[tuple, ...] = (
    ("span_pct", "span", "%"),
    ("duration_s", "duration", "s"),
    ("qd", "queue depth", ""),
    ("threads", "threads", ""),
    ("bs_bytes", "block size", "KiB", 1024.0),
)
_PARAM_KEYS = {k for k, *_ in _PARAMS}
#: Labels and units of the summary values the "Values" tables show, beyond the figures the
#: tests declare (:class:`ssdlab.charts.Metric`) and the run parameters: key -> (label, unit,
#: divisor from the summary's unit; bytes shown as GB or KiB). A key found in none of them is
#: named from its words by :func:`value_label` (``after_idle_write_mbps`` -> "after idle
#: write", MB/s).
VALUE_LABELS: dict[str, tuple[str, str, float]] = {
    "capacity_bytes": ("user capacity", "GB", 1e9),
    "span_bytes": ("span", "GB", 1e9),
    "requested_duration_s": ("duration asked for", "s", 1.0),
    "n_intervals": ("intervals", "", 1.0),
    "interval_s": ("interval", "s", 1.0),
    "nan_intervals": ("intervals without a measurement", "", 1.0),
    "iops_std": ("IOPS standard deviation", "IOPS", 1.0),
    "rounds_total": ("steady-state rounds", "", 1.0),
    "steady_state_rounds": ("rounds in steady state", "", 1.0),
    "modes_from_s": ("modes counted from", "s", 1.0),
    "mode_threshold_iops": ("threshold between the modes", "IOPS", 1.0),
    "wall_s": ("wall-clock time", "s", 1.0),
    "parts_done": ("parts done", "", 1.0),
    # fill
    "pause_s": ("idle pause before the burst", "s", 1.0),
    "burst_pct": ("burst after the pause, of the span", "%", 1.0),
    "min_phase_pct": ("shortest phase kept, of the bytes written", "%", 1.0),
    # SNIA PTS
    "round_s": ("round length", "s", 1.0),
    "max_rounds": ("rounds at most", "", 1.0),
    "wsat_max_s": ("WSAT time limit", "s", 1.0),
    "wsat_capacities": ("WSAT ends after, user capacities", "", 1.0),
    "hir_cycles": ("HIR cycles per wait state", "", 1.0),
    "hir_return_s": ("HIR writes after each wait state", "s", 1.0),
    "dirth_bs_bytes": ("DIRTH block size", "KiB", 1024.0),
    "dirth_read_pct": ("DIRTH reads", "%", 1.0),
    "dirth_art_limit_ms": ("DIRTH response-time limit", "ms", 1.0),
    "resume": ("resumed", "", 1.0),
    # recovery, used, sweep
    "torture_min": ("torture", "min", 1.0),
    "idle_min": ("idle time", "min", 1.0),
    "torture_qd": ("torture queue depth", "", 1.0),
    "torture_bs_bytes": ("torture block size", "KiB", 1024.0),
    "zone_size_bytes": ("zone size", "GB", 1e9),
    "zone_bytes": ("written per zone", "GB", 1e9),
    "sweep_bs_bytes": ("sweep block size", "KiB", 1024.0),
    "sweep_qd": ("sweep queue depth", "", 1.0),
    "sweep_write_bytes": ("written per sweep", "GB", 1e9),
    "edge_zones": ("zones at each end compared", "", 1.0),
    "dirty_write_bytes": ("random writes that make the drive used", "GB", 1e9),
}
#: Units named by the last word of a key (:func:`value_label`): word -> (unit, divisor).
_KEY_UNITS = {"mbps": ("MB/s", 1.0), "iops": ("IOPS", 1.0), "pct": ("%", 1.0), "s": ("s", 1.0),
              "min": ("min", 1.0), "ms": ("ms", 1.0), "us": ("µs", 1.0), "bytes": ("GB", 1e9)}
#: Headings of the test sections (default: the test's name, capitalised).
SECTION_TITLES = {"pts": "SNIA PTS", "fill": "Whole-drive fill"}
#: Keys that describe the run rather than measure it (left out of "other values").
_META_KEYS = {
    "test", "target", "ssdlab_version", "seed", "python_version", "platform", "hostname",
    "command_line", "started_utc", "libraries", "profile", "geometry", "target_info", "purge",
    "preconditioning", "plots", "plot", "phase_plots", "tables", "label", "variant", "complete",
    "incomplete_reason", "counters", "logs", "fill",
}
_AXIS_LABELS = {
    "t_s": "time (s)", "iops": "IOPS", "mbps": "MB/s", "position_pct": "position (% of LBA span)",
    "write_mbps": "write MB/s", "read_mbps": "read MB/s", "write_amplification": "write amplification",
    "free_blocks": "free blocks",
}



def _companion_order() -> tuple[str, ...]:
    """Charts under the consistency IOPS chart, in page order: latency, then the drive's
    (:func:`ssdlab.columns.charts`)."""
    return ("latency",) + tuple(c.id for c in columns.charts())


#: The vendored charting library (``ssdlab/vendor/dygraphs``, see its SOURCE file).
DYGRAPHS_VERSION = "2.2.1"


# --------------------------------------------------------------------------- values

def format_value(v: Any, unit: str = "") -> str:
    """A number as the tables show it: ``None`` -> "n/a", thousands separated, 3 significant
    digits below 100; the unit ``"share"`` takes a 0..1 share and shows percent (``0.541`` -> "54.1")."""
    import numpy as np

    if v is None:
        return "n/a"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if not math.isfinite(v):
            return "n/a"
        if unit == "share":
            v *= 100.0
        if v == 0:
            return "0"
        if abs(v) >= 100:
            return f"{v:,.0f}"
        if abs(v) >= 0.001:
            text = f"{v:.3g}"
            return text
        return f"{v:.2e}"
    if isinstance(v, (dict, list)):
        return json.dumps(v, ensure_ascii=False)
    return str(v)


def unit_suffix(label: str, unit: str) -> str:
    """`` (unit)`` for a metric label (``share`` shows as %; none where the label names the
    unit already: "IOPS mean", "MB/s mean")."""
    shown = "%" if unit == "share" else unit
    if not shown or (shown in ("IOPS", "MB/s") and shown in label):
        return ""
    return f" ({shown})"


def _get(summary: Mapping[str, Any], key: str) -> Any:
    """``summary[key]``, where ``a.b`` reads ``summary["a"]["b"]`` (``latency_us.p99.9``)."""
    if key in summary:
        return summary[key]
    head, _, rest = key.partition(".")
    sub = summary.get(head)
    if rest and isinstance(sub, Mapping):
        return _get(sub, rest)
    return None


def variant_label(span_pct: Any) -> str:
    """"Default" for a 100 % span (or none), else ``"25% Spare Area"`` for 75 %."""
    try:
        span = float(span_pct)
    except (TypeError, ValueError):
        return "Default"
    if not math.isfinite(span) or span >= 100.0:
        return "Default"
    return f"{100.0 - span:g}% Spare Area"


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or v is None:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


# --------------------------------------------------------------------------- thinning

def downsample_indices(columns: Sequence[Any], max_points: int = MAX_POINTS,
                       keep: Any = None) -> np.ndarray:
    """Indices (sorted) of the rows to draw so a chart carries at most about ``max_points``.

    Half the budget goes to the minimum and maximum of every column in each of
    ``budget / (4 * ncols)`` consecutive buckets (peaks and drops survive), half to an even
    stride (the density of the dots survives). Rows where ``keep`` is true (e.g. zero IOPS)
    are always kept, even beyond the budget. With ``n <= max_points`` every row is kept.
    """
    import numpy as np

    cols = [np.asarray(c, dtype=np.float64) for c in columns]
    n = len(cols[0]) if cols else 0
    if n <= max_points:
        return np.arange(n)
    keep_idx = np.flatnonzero(np.asarray(keep, dtype=bool)) if keep is not None else np.zeros(0, np.int64)
    budget = max(max_points - keep_idx.size, 64)
    ncols = max(len(cols), 1)
    buckets = max(budget // (4 * ncols), 1)
    k = int(math.ceil(n / buckets))
    picked = [keep_idx]
    base = np.arange(buckets) * k
    for c in cols:
        pad = buckets * k - n
        v = np.pad(c, (0, pad), constant_values=np.nan).reshape(buckets, k)
        nan = np.isnan(v)
        picked.append(np.argmin(np.where(nan, np.inf, v), axis=1) + base)
        picked.append(np.argmax(np.where(nan, -np.inf, v), axis=1) + base)
    stride = max(int(math.ceil(n / max(budget // 2, 1))), 1)
    picked.append(np.arange(0, n, stride))
    idx = np.unique(np.concatenate(picked).astype(np.int64))
    return idx[idx < n]


def _compact(a: np.ndarray, digits: int = 6) -> list:
    """Numbers for the page: ``digits`` significant digits, integers without ``.0``, NaN -> null."""
    import numpy as np

    out: list = []
    fmt = f"%.{digits}g"
    for v in np.asarray(a, dtype=np.float64).tolist():
        if v != v or v in (math.inf, -math.inf):
            out.append(None)
            continue
        r = float(fmt % v)
        out.append(int(r) if r.is_integer() and abs(r) < 2**53 else r)
    return out


# --------------------------------------------------------------------------- loading

def expand_run_dirs(paths: Sequence[str | os.PathLike]) -> list[Path]:
    """Results folders named by ``paths``: a results folder itself, its ``summary.json``, or a
    folder whose sub-folders are results folders (taken in name order). A folder that groups
    others (``ssdlab review``: ``part_dirs`` in its summary) stands for itself and its parts. Raises
    FileNotFoundError naming a path that holds no results."""
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_file() and p.name == results.SUMMARY_NAME:
            p = p.parent
        if not p.exists():
            raise FileNotFoundError(f"{p}: no such results folder")
        if not p.is_dir():
            raise FileNotFoundError(f"{p}: not a results folder (expected a folder holding summary.json)")
        if (p / results.SUMMARY_NAME).exists() or (p / results.INCOMPLETE_NAME).exists():
            out.append(p)
            out.extend(_part_dirs(p))  # a review: its parts too, as in its own report.html
            continue
        subs = sorted(c for c in p.iterdir() if c.is_dir() and (c / results.SUMMARY_NAME).exists())
        if not subs:
            raise FileNotFoundError(f"{p}: no summary.json in it or in its sub-folders: not an ssdlab results folder")
        out.extend(subs)
    return out


def _part_dirs(folder: Path) -> list[Path]:
    """The results folders a grouping run (``ssdlab review``) lists in ``part_dirs``, that
    exist; [] for an ordinary results folder."""
    try:
        summary = results.read_summary(folder)
    except (OSError, ValueError):
        return []
    names = summary.get("part_dirs") if isinstance(summary, dict) else None
    if not isinstance(names, list):
        return []
    out = []
    for name in names:
        d = folder / str(name)
        if d.is_dir() and ((d / results.SUMMARY_NAME).exists() or (d / results.INCOMPLETE_NAME).exists()):
            out.append(d)
    return out


def _plot_hints(summary: Mapping[str, Any]) -> list[dict]:
    """The charts a run asks for: ``plot``, then ``phase_plots``."""
    out: list[dict] = []
    for key in ("plot", "phase_plots"):
        hint = summary.get(key)
        hints = [hint] if isinstance(hint, Mapping) else list(hint) if isinstance(hint, (list, tuple)) else []
        out += [dict(h) for h in hints if isinstance(h, Mapping)]
    return out


def _run_kind(summary: Mapping[str, Any], series: Mapping[str, np.ndarray] | None) -> str:
    test = summary.get("test")
    if _plot_hints(summary):
        return "lines"
    if test in CONSISTENCY_TESTS:
        return "consistency" if series is not None and "iops" in series else "none"
    if series is None:
        return "none"
    if test not in LINE_TESTS and "t_s" in series and "iops" in series:
        return "consistency"
    return "lines"


def _read_series_or_none(folder: Path, name: str, errors: list[str]) -> dict[str, np.ndarray] | None:
    try:
        return results.read_series(folder / name)
    except FileNotFoundError:
        return None
    except Exception as e:  # noqa: BLE001 - a broken series must not stop the report
        errors.append(f"{name}: cannot be read ({type(e).__name__}: {e})")
        return None


def _numeric(series: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    import numpy as np

    return {k: np.asarray(v, dtype=np.float64) for k, v in series.items()
            if np.asarray(v).dtype.kind in "biuf"}


def _pretty(col: str) -> str:
    """A column name for people: ``write_mbps_after_idle`` -> "write MB/s after idle"."""
    if col in _AXIS_LABELS:
        return _AXIS_LABELS[col]
    words = col.split("_")
    units = {"mbps": "MB/s", "iops": "IOPS", "pct": "%", "s": "(s)", "us": "(µs)", "bytes": "(bytes)"}
    return " ".join(units.get(w, w) for w in words)


def _unit(col: str) -> str | None:
    words = col.split("_")
    for key, unit in (("mbps", "MB/s"), ("iops", "IOPS"), ("pct", "%"), ("bytes", "bytes")):
        if key in words:
            return unit
    if words[-1] == "s":
        return "s"
    return None


def _interval_s(t: np.ndarray) -> float:
    """The series interval [s]: the median step of ``t`` (1.0 when it cannot be told)."""
    import numpy as np

    d = np.diff(np.asarray(t, dtype=np.float64))
    d = d[np.isfinite(d) & (d > 0)]
    return float(np.median(d)) if d.size else 1.0


def _y_specs(ys: Any, name: str) -> list[dict]:
    """A hint's ``y`` entries as dicts: series, y (column), label, unit, scale."""
    if isinstance(ys, (str, Mapping)):
        ys = [ys]
    out = []
    for y in ys or []:
        if isinstance(y, Mapping):
            out.append({"series": str(y.get("series") or name), "y": str(y.get("y")), "label": y.get("label"),
                        "unit": y.get("unit"), "scale": _num(y.get("scale")),
                        "stat": y.get("stat"), "group": y.get("group")})
        else:
            out.append({"series": name, "y": str(y), "label": None, "unit": None, "scale": None,
                        "stat": None, "group": None})
    return out


def _line_chart(hint: Mapping[str, Any], name: str, load: Callable[[str], dict | None],
                errors: list[str], max_points: int) -> dict | None:
    """One chart of a ``plot`` hint: x and y columns of the series ``name`` (and, for y
    entries naming another series, of that one), each source thinned on its own."""
    cols = _numeric(load(name) or {})
    if not cols:
        errors.append(f"{name}: no numeric columns")
        return None
    x = hint.get("x") or ("t_s" if "t_s" in cols else next(iter(cols)))
    if x not in cols:
        errors.append(f"{name}: plot x column {x!r} not found (columns: {', '.join(cols)})")
        return None
    specs = _y_specs(hint.get("y"), name)
    if not specs:
        default = ["iops"] if ("iops" in cols and x == "t_s" and not hint) else [c for c in cols if c != x]
        specs = _y_specs(default, name)
    groups: dict[str, list[dict]] = {}
    for sp in specs:
        src = cols if sp["series"] == name else _numeric(load(sp["series"]) or {})
        if not src:
            errors.append(f"{name}: plot y {sp['y']!r}: no series {sp['series']!r} in the folder")
        elif x not in src:
            errors.append(f"{sp['series']}: plot x column {x!r} not found (columns: {', '.join(src)})")
        elif sp["y"] not in src:
            errors.append(f"{sp['series']}: plot y column {sp['y']!r} not found (columns: {', '.join(src)})")
        elif sp["y"] != x:
            groups.setdefault(sp["series"], []).append(sp)
    if not groups:
        return None
    several = len(groups) > 1
    ys_out: list[dict] = []
    chart_x: list | None = None
    n_total = n_shown = 0
    for gi, (src_name, sps) in enumerate(groups.items()):
        src = cols if src_name == name else _numeric(load(src_name) or {})
        keep = (src["iops"] == 0) if any(sp["y"] == "iops" for sp in sps) else None
        idx = downsample_indices([src[sp["y"]] for sp in sps], max_points, keep)
        xs = _compact(src[x][idx], 9)
        if gi == 0:
            chart_x = xs
        n_total += len(src[x])
        n_shown += int(idx.size)
        for sp in sps:
            v = src[sp["y"]][idx] * (sp["scale"] if sp["scale"] is not None else 1.0)
            label = str(sp["label"]) if sp["label"] else (f"{src_name}: " if several else "") + _pretty(sp["y"])
            y = {"name": sp["y"] if src_name == name else f"{src_name}.{sp['y']}", "label": label,
                 "unit": str(sp["unit"]) if sp["unit"] is not None else (_unit(sp["y"]) or ""),
                 "values": _compact(v)}
            y.update({k: str(sp[k]) for k in ("stat", "group") if sp[k] is not None})
            if gi:
                y["x"] = xs
            ys_out.append(y)
    ycols = [sp["y"] for sps in groups.values() for sp in sps]
    units = {y["unit"] for y in ys_out}
    ylabel = hint.get("ylabel") or (ys_out[0]["label"] if len(ys_out) == 1 else
                                    (units.pop() or "value") if len(units) == 1 else "value")
    if hint.get("title"):
        title = str(hint["title"])
    elif len(ys_out) <= 2 and not several:
        title = " and ".join(_pretty(y) for y in ycols) + " vs " + _pretty(x)
    else:
        title = f"{ylabel if ylabel != 'value' else 'values'} vs {_pretty(x)} ({len(ys_out)} series)"
    return {
        "series": name,
        "kind": "scatter" if hint.get("kind") == "scatter" else "line",
        "title": title,
        "label": str(hint.get("label") or title),
        "xlabel": str(hint.get("xlabel") or _pretty(x)),
        "ylabel": str(ylabel),
        "logy": bool(hint.get("logy", False)),
        "xcol": x,
        "x": chart_x,
        "ys": ys_out,
        "n_total": int(n_total),
        "n_shown": int(n_shown),
    }


def _consistency_chart(series: Mapping[str, np.ndarray], max_points: int) -> dict:
    import numpy as np

    t = np.asarray(series["t_s"], dtype=np.float64) if "t_s" in series else np.arange(len(series["iops"]), dtype=np.float64)
    y = np.asarray(series["iops"], dtype=np.float64)
    zero = y == 0
    idx = downsample_indices([y], max_points, zero)
    interval = _interval_s(t)
    fin_t = t[np.isfinite(t)]
    return {
        "x": _compact(t[idx], 9),
        "y": _compact(y[idx]),
        "interval_s": interval,
        "end_s": float(fin_t.max() + interval) if fin_t.size else 0.0,
        "n_total": int(y.size),
        "n_shown": int(idx.size),
        "zeros": int(zero.sum()),
    }


def _drive_charts(series: Mapping[str, Any], charts: Sequence[columns.Chart] | None = None
                 ) -> list[tuple[columns.Chart, int, list[columns.Column]]]:
    """The charts of :func:`ssdlab.columns.charts` (or ``charts``) that ``series`` can draw
    (a column leading it holds data), as (chart, how many columns it declares, its columns
    that hold data)."""
    out = []
    for chart in columns.charts() if charts is None else charts:
        leading, with_ = columns.chart_columns(chart)
        if any(columns.has_data(series, c.name) for c in leading):
            out.append((chart, len(leading) + len(with_),
                        [c for c in leading + with_ if columns.has_data(series, c.name)]))
    return out


def _companion_charts(series: Mapping[str, np.ndarray], max_points: int) -> list[dict]:
    """Charts under a consistency run's IOPS, against the same time: latency (log µs) and the
    simulator's internals (:func:`ssdlab.columns.charts`), each only when its columns hold data."""
    import numpy as np

    if "t_s" not in series:
        return []
    t = np.asarray(series["t_s"], dtype=np.float64)
    interval = _interval_s(t)
    defs: list[tuple[str, str, str, str, bool, list[tuple[str, str, str, float]]]] = []
    lat = latency_columns(series)
    if lat:
        several = len({d for _, d, _ in lat}) > 1
        defs.append(("latency", "Latency per interval (completion latency)", "latency (µs)", "scatter", True,
                     [(c, f"{d} {stat}" if several or d != "write" else stat, "µs", 1.0) for c, d, stat in lat]))
    for chart, _n, drawn in _drive_charts(series):
        defs.append((chart.id, chart.title, chart.ylabel, columns.chart_kind(chart), False,
                     [(c.name, c.label, *columns.display(c, interval)) for c in drawn]))
    out = []
    for cid, title, ylabel, kind, logy, cols in defs:
        arrays = [np.asarray(series[c], dtype=np.float64) * scale for c, _, _, scale in cols]
        idx = downsample_indices(arrays, max_points)
        out.append({"id": cid, "title": title, "ylabel": ylabel, "kind": kind, "logy": logy,
                    "x": _compact(t[idx], 9),
                    "ys": [{"name": c, "label": label, "unit": unit, "values": _compact(a[idx]),
                            **({"stat": label.split()[-1]} if cid == "latency" else {})}
                           for (c, label, unit, _), a in zip(cols, arrays)],
                    "n_total": int(t.size), "n_shown": int(idx.size)})
    return out


def phase_hints(folder: str | os.PathLike, phases: Sequence[tuple[str, str]], what: str,
                short: str = "") -> list[dict]:
    """:func:`time_series_hints` for the phase series a results folder holds: ``phases`` =
    (series name, label); names without a series file (not run, interrupted before) are left
    out."""
    got = []
    for name, label in phases:
        try:
            got.append((name, label, results.read_series(Path(folder) / name)))
        except FileNotFoundError:
            continue
    return time_series_hints(got, what, short)


def time_series_hints(phases: Sequence[tuple[str, str, Mapping[str, Any]]], what: str,
                      short: str = "") -> list[dict]:
    """``plot`` hints for the per-interval series of a test's phases, for tests other than
    consistency (recovery's torture, used's three measurements): IOPS (scatter, log), latency
    (scatter, log µs; when the series have latency columns) and each chart of :func:`ssdlab.columns.charts`
    (simulated targets), overlaying the phases. ``phases``: (series name as written with
    ``write_series``, label, the series); ``what`` starts the titles, ``short`` the chart
    buttons ("torture: "). Only columns that hold data are named."""
    phases = [(n, lab, s) for n, lab, s in phases if "t_s" in s and len(s["t_s"])]
    if not phases:
        return []
    first = phases[0][0]
    hints = []
    ys = [{"series": n, "y": "iops", "label": lab, "unit": "IOPS"} for n, lab, s in phases if "iops" in s]
    if ys:
        hints.append({"series": first, "x": "t_s", "y": ys, "kind": "scatter", "logy": True,
                      "title": f"{what}: IOPS per interval", "label": f"{short}IOPS", "ylabel": "IOPS"})
    ys = [{"series": n, "y": c, "label": f"{lab} {d} {stat}", "unit": "µs", "stat": stat, "group": lab}
          for n, lab, s in phases for c, d, stat in latency_columns(s)]
    if ys:
        hints.append({"series": first, "x": "t_s", "y": ys, "kind": "scatter", "logy": True,
                      "title": f"{what}: latency per interval", "label": f"{short}latency", "ylabel": "latency (µs)"})
    for chart in columns.charts():
        ys = []
        for n, lab, s in phases:
            interval = _interval_s(s["t_s"])
            for _chart, n_declared, drawn in _drive_charts(s, (chart,)):
                for c in drawn:
                    unit, scale = columns.display(c, interval)
                    ys.append({"series": n, "y": c.name, "label": f"{lab}: {c.label}" if n_declared > 1 else lab,
                               "unit": unit, **({"scale": scale} if scale != 1.0 else {})})
        if ys:
            hints.append({"series": first, "x": "t_s", "y": ys, "kind": columns.chart_kind(chart), "logy": False,
                          "title": f"{what}: {chart.title[0].lower()}{chart.title[1:]}",
                          "label": f"{short}{chart.button}", "ylabel": chart.ylabel})
    return hints


def _drive_key(summary: Mapping[str, Any]) -> str:
    info = summary.get("target_info") if isinstance(summary.get("target_info"), Mapping) else {}
    return json.dumps([summary.get("label"), summary.get("target"), info.get("model"), summary.get("profile")],
                      sort_keys=True, default=str)


def _drive_label(summary: Mapping[str, Any], folder: Path) -> str:
    if summary.get("label"):
        return str(summary["label"])
    info = summary.get("target_info") if isinstance(summary.get("target_info"), Mapping) else {}
    target = summary.get("target")
    if info.get("model"):
        return f"{info['model']} ({target})" if target else str(info["model"])
    return str(target) if target else folder.name


def read_run(folder: str | os.PathLike, errors: list[str] | None = None) -> tuple[dict, dict | None]:
    """A results folder's summary and main series (``series.parquet`` / ``.csv``, None if
    absent). Where the run stopped before writing them (killed outright: SIGKILL, a crash,
    power loss), both come from its journal (:mod:`ssdlab.journal`): the summary's head as
    the run started, marked incomplete, with the consistency metrics of the intervals
    journalled; the series of the phase that was running. ``errors`` (if given) receives
    what the reader should know: which file is missing and where the figures come from.

    Raises FileNotFoundError if the folder has neither ``summary.json`` nor an ssdlab
    ``INCOMPLETE`` marker, ValueError for an unreadable ``summary.json``."""
    from . import journal

    folder = Path(folder)
    errors = [] if errors is None else errors
    try:
        summary = results.read_summary(folder)
    except FileNotFoundError:
        reason = results.describe_incomplete(folder)
        if reason is None:
            raise FileNotFoundError(f"{folder}: no summary.json: not an ssdlab results folder") from None
        summary = None
        errors.append("no summary.json (the run stopped before writing it)")
    if summary is not None and not isinstance(summary, dict):
        raise ValueError(f"{folder / results.SUMMARY_NAME}: expected a JSON object, got {type(summary).__name__}")
    if summary is not None and summary.get("complete") is not False:
        reason = results.incomplete_reason(folder)
        if reason is not None and reason != "in progress":
            summary = {**summary, "complete": False, "incomplete_reason": reason}
    series = _read_series_or_none(folder, "series", errors)
    rebuilt = journal.rebuild(folder) if summary is None or series is None else None
    if rebuilt is not None:
        errors.extend(rebuilt.notes)
        main = rebuilt.main
        if series is None and main is not None:
            series = main.series
            errors.append(rebuilt.describe())
    info = (summary or {}).get("target_info")
    emulator = info.get("emulator") if isinstance(info, Mapping) else None
    if isinstance(emulator, Mapping) and emulator.get("warning"):
        errors.append(f"emulated drive: {emulator['warning']}")
    if summary is None:
        summary = dict(rebuilt.head) if rebuilt is not None and rebuilt.head else {"test": "unknown"}
        summary["complete"] = False
        summary["incomplete_reason"] = results.describe_incomplete(folder) or "unknown"
        if rebuilt is not None and rebuilt.main is not None:
            summary["series_source"] = rebuilt.describe()
            summary.update(_journal_metrics(series, summary))
        summary = results.to_jsonable(summary)
    return summary, series


def _journal_metrics(series: Mapping[str, np.ndarray], head: Mapping[str, Any]) -> dict:
    """The consistency metrics of a series rebuilt from a journal (a run killed before it
    computed its own): IOPS statistics, stalls, steady state, and its duration."""
    import numpy as np

    from . import analysis

    t = np.asarray(series.get("t_s", ()), dtype=np.float64)
    if "iops" not in series or not t.size:
        return {}
    dt = np.asarray(series["dt_s"], dtype=np.float64) if "dt_s" in series else None
    interval = _interval_s(t) if t.size > 1 else float(dt[0]) if dt is not None and dt.size else 1.0
    out: dict[str, Any] = {"duration_s": float(t[-1] + (dt[-1] if dt is not None else interval))}
    try:
        bs = int(head.get("bs_bytes") or 4096)
        # Steady-state rounds of about 60 s, a whole number of intervals (a fio target's
        # journal follows fio's status reports, about a second apart).
        round_s = interval * max(1, round(60.0 / interval))
        out.update(analysis.analyze_iops(np.asarray(series["iops"], dtype=np.float64), interval, round_s=round_s,
                                         bs_bytes=bs))
    except Exception as e:  # noqa: BLE001 - a partial series may be too short for some metrics
        out["metrics_error"] = f"{type(e).__name__}: {e}"
    if "host_write_bytes" in series and "nand_write_bytes" in series:  # the simulator's exact counters
        host = float(np.nansum(series["host_write_bytes"]))
        out["host_write_bytes"] = host
        out["nand_write_bytes"] = float(np.nansum(series["nand_write_bytes"]))
        out["write_amplification"] = analysis.write_amplification(host, out["nand_write_bytes"])
    return out


def load_run(folder: str | os.PathLike, *, max_points: int = MAX_POINTS) -> dict:
    """One results folder as the page's data: summary, kind, charts (thinned), problems.
    A run killed before it wrote its summary or series is shown from its journal
    (:func:`read_run`), marked incomplete.

    Raises FileNotFoundError if the folder has neither ``summary.json`` nor an ssdlab
    ``INCOMPLETE`` marker, ValueError for an unreadable ``summary.json``.
    """
    folder = Path(folder)
    errors: list[str] = []
    summary, series = read_run(folder, errors)
    kind = _run_kind(summary, series)
    run: dict[str, Any] = {
        "dir": str(folder),
        "name": folder.resolve().name or str(folder),
        "test": str(summary.get("test") or "unknown"),
        "kind": kind,
        "summary": summary,
        "drive_key": _drive_key(summary),
        "drive": _drive_label(summary, folder),
        "variant": str(summary["variant"]) if summary.get("variant") else variant_label(summary.get("span_pct")),
        "span_pct": _num(summary.get("span_pct")),
        "complete": summary.get("complete") is not False,
        "incomplete_reason": summary.get("incomplete_reason"),
        "onset_s": _num(summary.get("steady_state_onset_s")),
        "errors": errors,
        "charts": [],
        "consistency": None,
        "companions": [],
    }
    if kind == "consistency" and series is not None:
        run["consistency"] = _consistency_chart(series, max_points)
        run["companions"] = _companion_charts(series, max_points)
    elif kind == "lines":
        hints = _plot_hints(summary) or [{}]
        cache: dict[str, dict | None] = {"series": series}

        def load(name: str) -> dict | None:
            if name not in cache:
                cache[name] = _read_series_or_none(folder, name, errors)
            return cache[name]

        for i, hint in enumerate(hints):
            name = str(hint.get("series") or "series")
            if load(name) is None:
                errors.append(f"plot {i + 1}: no series {name!r} ({name}.parquet / {name}.csv) in the folder")
                continue
            chart = _line_chart(hint, name, load, errors, max_points)
            if chart is not None:
                run["charts"].append(chart)
    elif series is None and not errors and run["test"] in CONSISTENCY_TESTS:
        errors.append("no series file (series.parquet / series.csv): nothing to plot")
    return run


# --------------------------------------------------------------------------- HTML pieces

def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def value_label(key: str, declared: Mapping[str, Metric] | None = None) -> tuple[str, str, float]:
    """(label, unit, divisor) of a summary value: from the figures the tests declare
    (``declared``: key -> :class:`~ssdlab.charts.Metric`, see :func:`declared_by_key`),
    :data:`VALUE_LABELS` or the run parameters, else from the key's words with the unit its
    last word names (``_mbps``, ``_iops``, ``_pct``, ``_s``, ``_bytes`` as GB...)."""
    m = (declared or {}).get(key)
    if m is not None:
        return m.label, m.unit, 1.0 / m.scale
    if key in VALUE_LABELS:
        return VALUE_LABELS[key]
    for k, label, unit, *div in _PARAMS:
        if k == key:
            return label, unit, div[0] if div else 1.0
    words = key.split(".")[-1].split("_")
    unit, div = _KEY_UNITS.get(words[-1], ("", 1.0)) if len(words) > 1 else ("", 1.0)
    if unit:
        words = words[:-1]
    names = {"mbps": "MB/s", "iops": "IOPS", "pct": "%", "qd": "queue depth", "bs": "block size", "lat": "latency"}
    return " ".join(names.get(w, w) for w in words), unit, div


def declared_by_key(metrics: Mapping[str, Sequence[Metric]]) -> dict[str, Metric]:
    """Every declared figure by its summary key (``metrics``: a summary's ``test`` -> the
    figures that test declares; a key two tests declare is one figure, the first one's)."""
    out: dict[str, Metric] = {}
    for ms in metrics.values():
        for m in ms:
            out.setdefault(m.key, m)
    return out


def _rows_of(metrics: Sequence[Metric]) -> list[tuple[str, str, str, float]]:
    """``metrics`` as :func:`_metric_rows` takes them: (dotted key, label, unit, divisor)."""
    return [(".".join(map(str, m.where)), m.label, m.unit, 1.0 / m.scale) for m in metrics]


def _declared_rows(runs: Sequence[dict], metrics: Mapping[str, Sequence[Metric]]) -> list[tuple[str, str, str, float]]:
    """The figures the tests of ``runs`` declare, each once, in the order of their declarations."""
    seen: dict[str, Metric] = {}
    for r in runs:
        for m in metrics.get(r["test"], ()):
            seen.setdefault(m.key, m)
    return _rows_of(list(seen.values()))


def _scaled(v: Any, div: float) -> Any:
    import numpy as np

    if div == 1.0 or isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        return v
    return float(v) / div


def _metric_rows(runs: Sequence[dict], keys: Sequence[tuple]) -> list[tuple[str, str, list[Any]]]:
    """Rows of (label with unit, unit, one value per run) for ``keys``: (key, label, unit) or
    (key, label, unit, divisor); keys no run has are left out."""
    rows = []
    for key, label, unit, *div in keys:
        vals = [_scaled(_get(r["summary"], key), div[0] if div else 1.0) for r in runs]
        if all(v is None for v in vals):
            continue
        rows.append((label + unit_suffix(label, unit), unit, vals))
    return rows


def _generic_metric_keys(runs: Sequence[dict], declared: Mapping[str, Metric]) -> list[tuple[str, str, str, float]]:
    """Top-level numeric values of non-consistency runs (in first-seen order), labelled by
    :func:`value_label`."""
    seen: dict[str, None] = {}
    for r in runs:
        for k, v in r["summary"].items():
            if k in _META_KEYS or k in _PARAM_KEYS or isinstance(v, (dict, list, str)) or v is None:
                continue
            if isinstance(v, (bool, int, float)):
                seen.setdefault(k, None)
    return [(k, *value_label(k, declared)) for k in seen]


def _pts_view(summary: Mapping[str, Any]) -> dict:
    """A PTS run's summary as its "Values" table shows it: the threads and queue depth the
    tests ran at (``pts``; the top-level 0 means "the variant's"), without the options of the
    tests that did not run (``wsat_max_s`` when WSAT was not chosen)."""
    from .pts.spec import TESTS

    ran = set(summary.get("tests") or TESTS)
    out = {k: v for k, v in summary.items()
           if not any(k.startswith(f"{t}_") for t in TESTS if t not in ran)}
    pts = summary.get("pts") if isinstance(summary.get("pts"), Mapping) else {}
    out.update({k: pts[k] for k in ("threads", "qd") if k in pts})
    return out


def _metrics_table(runs: Sequence[dict], keys: Sequence[tuple[str, str, str]], table_id: str,
                   section: str, heading: str = "", *, params: bool = True) -> str:
    rows = (_metric_rows(runs, _PARAMS) if params else []) + _metric_rows(runs, keys)
    if not rows:
        return ""
    heading = f"<h3>{_e(heading)}</h3>" if heading else ""
    head = "".join(
        f'<th scope="col" data-run="{_e(r["id"])}" title="{_e(r["dir"])}" tabindex="0">'
        f'{_e(r["drive"])}<br><span class="sub">{_e(r["variant"])}</span></th>'
        for r in runs)
    body = []
    for label, unit, vals in rows:
        cells = "".join(f'<td data-run="{_e(r["id"])}">{_e(format_value(v, unit))}</td>' for r, v in zip(runs, vals))
        body.append(f"<tr><th scope=\"row\">{_e(label)}</th>{cells}</tr>")
    return (f'{heading}<div class="tablewrap"><table class="metrics" id="{_e(table_id)}" data-section="{_e(section)}">'
            f'<thead><tr><th scope="col">metric</th>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>')


def _cell_class(v: Any) -> str:
    """``num`` (right-aligned), ``txt`` or, for long text that may wrap, ``txt long``."""
    if v is None or isinstance(v, (int, float)) and not isinstance(v, bool):
        return "num"
    return "txt long" if isinstance(v, str) and len(v) > 40 else "txt"


def _user_table(t: Any, i: int) -> str:
    if not isinstance(t, Mapping):
        return f'<p class="warn">tables[{i}] is not an object; skipped</p>'
    cols = [str(c) for c in (t.get("columns") or [])]
    rows = t.get("rows") or []
    if not isinstance(rows, list):
        rows = []
    if not cols:
        width = max((len(r) for r in rows if isinstance(r, (list, tuple))), default=0)
        keys: list[str] = []
        for r in rows:
            if isinstance(r, Mapping):
                keys += [str(k) for k in r if str(k) not in keys]
        cols = keys or [f"column {j + 1}" for j in range(width)]
    grid = []
    for r in rows:
        if isinstance(r, Mapping):
            cells = [r.get(c) for c in cols]
        elif isinstance(r, (list, tuple)):
            cells = list(r) + [None] * (len(cols) - len(r))
        else:
            cells = [r] + [None] * (len(cols) - 1)
        grid.append(cells)
    # "bars": columns drawn as the reviewers' bar tables (bar length = value / column maximum)
    bars = {str(c) for c in t.get("bars") or [] if isinstance(c, str)}
    top = {j: max((abs(v) for row in grid if isinstance(v := row[j], (int, float)) and not isinstance(v, bool)
                   and math.isfinite(v)), default=0.0) for j, c in enumerate(cols) if c in bars}
    marked = {str(h) for h in t.get("highlight") or []}
    body = []
    for cells in grid:
        tds = []
        for j, v in enumerate(cells):
            text = _e(format_value(v))
            if top.get(j) and isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                pct = max(0.0, min(100.0, abs(v) / top[j] * 100.0))
                text = f'<span class="bar" style="width:{pct:.1f}%"></span><span class="v">{text}</span>'
                tds.append(f'<td class="num barcell">{text}</td>')
            else:
                tds.append(f'<td class="{_cell_class(v)}">{text}</td>')
        hl = ' class="hl"' if cells and str(cells[0]) in marked else ""
        body.append(f"<tr{hl}>{''.join(tds)}</tr>")
    title = t.get("title") or f"table {i + 1}"
    note = f'<p class="note">{_e(t["note"])}</p>' if t.get("note") else ""
    # a column of text is aligned left, its heading too
    text_cols = {j for j in range(len(cols)) if any(_cell_class(row[j]).startswith("txt") for row in grid
                                                     if row[j] is not None)}
    head = "".join(f'<th scope="col"{" class=txt" if j in text_cols else ""}>{_e(c)}</th>' for j, c in enumerate(cols))
    return (f'<div class="usertable"><h4>{_e(title)}</h4><div class="tablewrap"><table class="data">'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>{note}</div>")


def _flatten(d: Any, prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    if isinstance(d, Mapping):
        for k, v in d.items():
            out += _flatten(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(d, list) and not all(isinstance(v, (int, float, str, bool)) or v is None for v in d):
        for i, v in enumerate(d):
            out += _flatten(v, f"{prefix}[{i}]")
    else:
        out.append((prefix, d))
    return out


def _json_block(obj: Any) -> str:
    return _e(json.dumps(obj, indent=2, ensure_ascii=False, default=str))


def _fill_phases(s: Mapping[str, Any]) -> dict | None:
    """The fill's phases as a table (phase, GB written from/to, GB, MB/s), and the burst after
    the idle pause, from the fill's summary; None without phases."""
    phases = s.get("phases")
    if s.get("test") != "fill" or not isinstance(phases, list) or not phases:
        return None
    rows = []
    for i, ph in enumerate(p for p in phases if isinstance(p, Mapping)):
        a, b = _num(ph.get("start_gb")), _num(ph.get("end_gb"))
        name = "write cache" if i == 0 and s.get("cache_bytes") else f"phase {i + 1}"
        rows.append([name, a, b, None if a is None or b is None else b - a, _num(ph.get("mbps"))])
    if _num(s.get("burst_bytes")) is not None:
        gb = float(s["burst_bytes"]) / 1e9
        pause = _num(s.get("pause_s"))
        rows.append([f"burst after {pause:g} s idle" if pause is not None else "burst after the pause",
                     0.0, gb, gb, _num(s.get("burst_mbps_mean"))])
    return {"title": "Fill phases (constant-rate pieces of the MB/s series)",
            "columns": ["phase", "from (GB written)", "to (GB written)", "written (GB)", "MB/s"],
            "rows": rows, "bars": ["MB/s"], "note": s.get("phase_method") or ""}


def _run_tables(runs: Sequence[dict]) -> str:
    """The ``tables`` every run provides (after the tables the report derives from the summary:
    a fill's phases), titled with the run's drive and variant."""
    out = []
    for r in runs:
        tables = r["summary"].get("tables")
        derived = _fill_phases(r["summary"])
        if derived is not None:
            tables = [derived] + (tables if isinstance(tables, list) else [])
        if tables is None:
            continue
        head = f'<h3 class="runtables">{_e(r["drive"])} · {_e(r["variant"])} <span class="sub">{_e(r["name"])}</span></h3>'
        if not isinstance(tables, list):
            out.append(head + '<p class="warn">"tables" in summary.json is not a list; skipped</p>')
        elif tables:
            out.append(f'<div class="runtables" data-run="{_e(r["id"])}">' + head
                       + "".join(_user_table(t, i) for i, t in enumerate(tables)) + "</div>")
    return "".join(out)


def _endurance_section(runs: Sequence[dict]) -> str:
    """How long each run's NAND would last at its measured write rate, for every run whose
    summary has an ``endurance`` projection (any test); "" when none has."""
    shown = [r for r in runs if isinstance(r["summary"].get("endurance"), Mapping)]
    if not shown:
        return ""
    views = []
    for r in shown:
        e = r["summary"]["endurance"]
        view = {k: (v / div if isinstance(v, (int, float)) and not isinstance(v, bool) and div != 1.0 else v)
                for k, _, _, div in ENDURANCE_METRICS if (v := e.get(k)) is not None}
        views.append({**r, "summary": view})
    keys = [(k, label, unit) for k, label, unit, _ in ENDURANCE_METRICS]
    notes = "".join(f'<p class="note">{_e(r["drive"])} · {_e(r["variant"])}: '
                    f'{_e(r["summary"]["endurance"].get("assumptions", ""))}.</p>' for r in shown)
    return ('<section id="endurance-section"><h2>Endurance</h2><p class="lead">If the host kept writing at the '
            "run's rate around the clock: drive writes per day, NAND written per day (host writes × write "
            "amplification), and the days until the NAND reaches its rated program/erase count = capacity × "
            "rated P/E ÷ (host bytes per day × write amplification).</p>"
            + _metrics_table(views, keys, "metrics-endurance", "endurance", params=False) + notes + "</section>")


def _run_details(r: dict) -> str:
    s = r["summary"]
    facts = [
        ("folder", r["dir"]),
        ("test", s.get("test")),
        ("target", s.get("target")),
        ("ssdlab version", s.get("ssdlab_version")),
        ("command line", s.get("command_line")),
        ("started (UTC)", s.get("started_utc")),
        ("host", s.get("hostname")),
        ("platform", s.get("platform")),
        ("seed", s.get("seed")),
        ("preconditioning", s.get("preconditioning")),
        ("fio logs", ", ".join(map(str, s["logs"])) if isinstance(s.get("logs"), list) else s.get("logs")),
    ]
    dl = "".join(
        f"<dt>{_e(k)}</dt><dd>{'<code>' + _e(v) + '</code>' if k == 'command line' else _e(v)}</dd>"
        for k, v in facts if v not in (None, ""))
    blocks = []
    profile = s.get("profile")
    if profile is not None:
        blocks.append(f'<details class="inner"><summary>profile{(": " + _e(profile.get("name"))) if isinstance(profile, Mapping) and profile.get("name") else ""}</summary>'
                      f"<pre>{_json_block(profile)}</pre></details>")
    for key, title in (("geometry", "geometry"), ("target_info", "target facts"), ("purge", "purge"),
                       ("fill", "sequential fill"), ("counters", "simulator counters"), ("libraries", "libraries")):
        if s.get(key) is not None:
            blocks.append(f'<details class="inner"><summary>{_e(title)}</summary><pre>{_json_block(s[key])}</pre></details>')
    table_html = ""
    values = [(k, v) for k, v in _flatten({k: v for k, v in s.items() if k not in _META_KEYS})]
    vals_html = ""
    if values:
        rows = "".join(f"<tr><th scope=\"row\">{_e(k)}</th><td>{_e(format_value(v))}</td></tr>" for k, v in values)
        vals_html = (f'<details class="inner"><summary>every value in summary.json ({len(values)})</summary>'
                     f'<div class="tablewrap"><table class="data kv">{rows}</table></div></details>')
    warn = ""
    if not r["complete"]:
        warn += f'<p class="warn">Incomplete run: {_e(r["incomplete_reason"] or "unknown reason")}</p>'
    for err in r["errors"]:
        warn += f'<p class="warn">{_e(err)}</p>'
    badge = ' <span class="badge">incomplete</span>' if not r["complete"] else ""
    return (f'<details class="run" id="details-{_e(r["id"])}" data-run="{_e(r["id"])}">'
            f'<summary><b>{_e(r["drive"])}</b> · {_e(r["variant"])} · {_e(r["test"])} · '
            f'<span class="sub">{_e(r["name"])}</span>{badge}</summary>'
            f'{warn}<dl>{dl}</dl>{table_html}{"".join(blocks)}{vals_html}</details>')


def _chart_block(section_id: str, title: str, *, controls: bool = True, companion: str | None = None) -> str:
    """A chart's place in the page: controls, title line, the plot (dygraphs draws into
    ``#plot-<id>``), legend and caption; the script fills them in."""
    comp = f' data-companion="{_e(companion)}"' if companion else ""
    return (f'<div class="chart{" companion" if companion else ""}" id="{_e(section_id)}" '
            f'data-section="{_e(section_id)}"{comp}>'
            + ('<div class="controls"></div>' if controls else "")
            + '<div class="ctitle"><span class="t"></span><span class="s"></span></div>'
            f'<div class="plotwrap"><div class="plot" id="plot-{_e(section_id)}" role="img" '
            f'aria-label="{_e(title)}"></div></div><div class="legend"></div><p class="caption"></p></div>')


# --------------------------------------------------------------------------- the page

def _assign_groups(runs: list[dict]) -> list[dict]:
    """Drives (groups) of consistency runs with their variants, labels made unique."""
    groups: dict[str, dict] = {}
    for r in runs:
        if r["kind"] != "consistency":
            continue
        g = groups.setdefault(r["drive_key"], {"label": r["drive"], "runs": [], "profile": r["summary"].get("profile")})
        g["runs"].append(r)
    glist = list(groups.values())
    # Colliding drive labels: append the profile keys that differ between them.
    by_label: dict[str, list[dict]] = {}
    for g in glist:
        by_label.setdefault(g["label"], []).append(g)
    for label, same in by_label.items():
        if len(same) < 2:
            continue
        profs = [g["profile"] if isinstance(g["profile"], Mapping) else {} for g in same]
        keys = sorted({k for p in profs for k in p})
        differ = [k for k in keys if len({json.dumps(p.get(k), sort_keys=True, default=str) for p in profs}) > 1]
        for i, (g, p) in enumerate(zip(same, profs)):
            extra = ", ".join(f"{k}={p.get(k)}" for k in differ[:3] if k != "description")
            g["label"] = f"{label} ({extra})" if extra else f"{label} #{i + 1}"
    for gi, g in enumerate(glist):
        g["runs"].sort(key=lambda r: -(r["span_pct"] if r["span_pct"] is not None else 100.0))
        seen: dict[str, int] = {}
        for r in g["runs"]:
            seen[r["variant"]] = seen.get(r["variant"], 0) + 1
        for r in g["runs"]:
            if seen[r["variant"]] > 1:
                r["variant"] = f"{r['variant']} · {r['name']}"
            r["drive"] = g["label"]
            r["group"] = gi
    return [{"label": g["label"], "runs": [r["id"] for r in g["runs"]]} for g in glist]


def _quick_facts(r: dict) -> str:
    s = r["summary"]
    parts = []
    for key, label, unit in (("iops_mean", "mean", " IOPS"), ("iops_median", "median", ""),
                             ("iops_p1", "1st pct", ""), ("zero_iops_seconds", "at zero IOPS", " s"),
                             ("steady_state_onset_s", "steady state from", " s"),
                             ("write_amplification", "WA", "")):
        v = s.get(key)
        if key == "steady_state_onset_s" and v is None and "steady_state_onset_s" in s:
            parts.append("steady state not reached")
            continue
        if v is not None:
            parts.append(f"{label} {format_value(v)}{unit}")
    return " · ".join(parts)


def _section_title(test: str) -> str:
    return SECTION_TITLES.get(test, test.capitalize())


def _values_table(runs: Sequence[dict], table_id: str, section: str, metrics: Mapping[str, Sequence[Metric]]) -> str:
    """The "Values" table of runs other than consistency: parameters and top-level numbers of
    each summary, labelled with units (:func:`value_label`; else the figures their tests
    declare); a PTS run's as :func:`_pts_view`."""
    shown = [{**r, "summary": _pts_view(r["summary"])} if r["test"] == "pts" else r for r in runs]
    own = {r["test"]: metrics.get(r["test"], ()) for r in runs}  # a key as these runs' tests declare it first
    keys = (_generic_metric_keys(shown, {**declared_by_key(metrics), **declared_by_key(own)})
            or _declared_rows(shown, metrics))
    return _metrics_table(shown, keys, table_id, section, "Values")


def render_report(runs: list[dict], title: str | None = None, *, metrics: Mapping[str, Sequence[Metric]]) -> str:
    """The HTML text for runs loaded by :func:`load_run` (ids are assigned here); ``metrics``:
    a summary's ``test`` -> the figures that test declares (:class:`~ssdlab.charts.Metric`),
    which label, scale and order the tables' figures (a consistency-like run's "Metrics")."""
    if not runs:
        raise ValueError("a report needs at least one results folder")
    for i, r in enumerate(runs):
        r["id"] = f"run{i}"
    groups = _assign_groups(runs)
    cons = [r for r in runs if r["kind"] == "consistency"]
    others = [r for r in runs if r["kind"] != "consistency"]
    line_sections: dict[str, list[dict]] = {}
    for r in others:
        if r["charts"]:
            line_sections.setdefault(r["test"], []).append(r)
    if title is None:
        if len(runs) == 1:
            r = runs[0]
            title = f"ssdlab {r['test']}: {r['drive']} · {r['variant']}"
        else:
            title = f"ssdlab report: {len(runs)} runs"
    generated = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")

    data = {
        "title": title,
        "version": __version__,
        "generated_utc": generated,
        "groups": groups,
        "runs": {
            r["id"]: {
                "id": r["id"], "name": r["name"], "dir": r["dir"], "test": r["test"], "kind": r["kind"],
                "drive": r["drive"], "variant": r["variant"], "group": r.get("group"),
                "span_pct": r["span_pct"], "onset_s": r["onset_s"], "complete": r["complete"],
                "facts": _quick_facts(r) if r["kind"] == "consistency" else "",
                "consistency": r["consistency"], "charts": r["charts"], "companions": r["companions"],
                "errors": r["errors"],
            }
            for r in runs
        },
        "companions": [c for c in _companion_order() if any(ch["id"] == c for r in runs for ch in r["companions"])],
        "line_sections": [{"id": f"lines-{i}", "test": test, "runs": [r["id"] for r in rs]}
                          for i, (test, rs) in enumerate(line_sections.items())],
    }
    payload = (json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
               .replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
               .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))

    rest: dict[str, list[dict]] = {}
    for r in others:
        if not r["charts"]:
            rest.setdefault(r["test"], []).append(r)

    def rest_section(i: int, test: str, rs: list[dict]) -> str:
        sid = f"other-{i}"
        return (f'<section id="{sid}-section"><h2>{_e(_section_title(test))}</h2>'
                + _run_tables(rs)
                + _values_table(rs, f"metrics-{sid}", sid, metrics)
                + "</section>")

    parts: list[str] = []
    # Runs that group other runs (a review's overview of its parts) come first.
    for i, (test, rs) in enumerate(rest.items()):
        if test in GROUP_TESTS:
            parts.append(rest_section(i, test, rs))
    comp_ids = [c for c in _companion_order() if any(ch["id"] == c for r in cons for ch in r["companions"])]
    if cons:
        companions = ""
        if comp_ids:
            companions = ('<div class="companions"><h3>Latency and the drive\'s internals over the same time</h3>'
                          '<p class="lead">For the run(s) shown above and the same time range: completion latency '
                          'per interval (p50, p99, p99.9, max; click a legend entry to hide it) and, for a simulated '
                          'drive, why the IOPS do what they do: write amplification, free blocks and garbage-'
                          'collection copies against host writes.</p>'
                          + "".join(_chart_block(f"consistency-{c}", f"{c} over time", controls=False, companion=c)
                                    for c in comp_ids) + "</div>")
        thinned = [r for r in cons if r["consistency"]["n_shown"] < r["consistency"]["n_total"]]
        note = ""
        if thinned:
            note = ('<p class="note">Long runs are thinned for the page: ' + "; ".join(
                f'{_e(r["drive"])} · {_e(r["variant"])}: {r["consistency"]["n_shown"]:,} of '
                f'{r["consistency"]["n_total"]:,} intervals' for r in thinned)
                + " (minimum and maximum of every time bucket plus an even stride; every zero-IOPS "
                  "interval is kept). The full series is in each results folder.</p>")
        parts.append(
            '<section id="consistency-section"><h2>Performance consistency</h2>'
            '<p class="lead">IOPS in every interval against time, as in the reviews: fresh-out-of-box level, '
            'the drop once the spare area is used up, then steady state. Pick a drive and a variant below the '
            'graph; drag across the graph to zoom on a time range, double-click to see the whole run.</p>'
            + _chart_block("consistency", "performance consistency scatter plot") + note
            + companions
            + _metrics_table(cons, _declared_rows(cons, metrics), "metrics-consistency", "consistency", "Metrics")
            + _run_tables(cons) + "</section>")
    for i, (test, rs) in enumerate(line_sections.items()):
        sid = f"lines-{i}"
        parts.append(
            f'<section id="{sid}-section"><h2>{_e(_section_title(test))}</h2>'
            + _chart_block(sid, f"{test} line plot")
            + _run_tables(rs)
            + _values_table(rs, f"metrics-{sid}", sid, metrics)
            + "</section>")
    for i, (test, rs) in enumerate(rest.items()):
        if test not in GROUP_TESTS:
            parts.append(rest_section(i, test, rs))
    parts.append(_endurance_section(runs))
    parts.append('<section id="runs-section"><h2>Runs</h2><p class="lead">Version, command line, target, '
                 'profile and every stored value of each run (click to open).</p>'
                 + "".join(_run_details(r) for r in runs) + "</section>")

    js, css = _dygraphs()
    fills = {
        "TITLE": _e(title),
        "HEADER": f'<h1>{_e(title)}</h1><p class="meta">{len(runs)} run{"s" if len(runs) != 1 else ""} · report by '
                  f'ssdlab {_e(__version__)} · {_e(generated)}</p>',
        "LIBCSS": css, "CSS": _asset("report.css"), "BODY": "".join(parts), "DATA": payload, "LIBJS": js,
        "JS": _asset("report.js"),
    }
    # One pass, so text that came from the data cannot be taken for a later placeholder.
    return re.sub(r"@@([A-Z]+)@@", lambda m: fills[m.group(1)], _TEMPLATE)


def write_report(run_dirs: Sequence[str | os.PathLike], out_path: str | os.PathLike,
                 title: str | None = None, *, metrics: Mapping[str, Sequence[Metric]]) -> Path:
    """Write ``report.html`` for the results folders ``run_dirs`` to ``out_path``; returns it.
    ``metrics``: a summary's ``test`` -> the figures that test declares, as
    :func:`ssdlab.procedures.declare.metrics_by_test` gives them (see :func:`render_report`).

    One self-contained file (inline CSS, script and data; no network). Raises ValueError for
    an empty list, FileNotFoundError for a folder without results,
    :class:`~ssdlab.results.ResultsWriteError` if the page cannot be written (a full disk...).
    Written atomically.
    """
    dirs = [Path(p) for p in run_dirs]
    if not dirs:
        raise ValueError("a report needs at least one results folder")
    runs = [load_run(d) for d in dirs]
    text = render_report(runs, title, metrics=metrics)
    out = Path(out_path)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise results.write_failed(out.parent, e) from e
    data = text.encode("utf-8")
    return results.atomic_write(out, lambda f: f.write(data), len(data))


# --------------------------------------------------------------------------- inline assets

def _vendor_text(name: str) -> str:
    return resources.files("ssdlab").joinpath("vendor", "dygraphs", name).read_text(encoding="utf-8")


@functools.cache
def _asset(name: str) -> str:
    """The page's own style sheet or script (``ssdlab/report_assets/<name>``), inlined as is."""
    return resources.files("ssdlab").joinpath("report_assets", name).read_text(encoding="utf-8")


@functools.cache
def _dygraphs() -> tuple[str, str]:
    """dygraphs' minified script and style sheet, ready to inline: the licence (the Debian
    copyright file, MIT) as a comment at the top, source-map references dropped (nothing to
    fetch), and the upstream one-line licence header replaced by that full text."""
    js, css, licence = _vendor_text("dygraph.min.js"), _vendor_text("dygraph.min.css"), _vendor_text("LICENSE")
    js = re.sub(r"^/\*! @license [^*]*\*/\n?", "", js)
    js = re.sub(r"^//# sourceMappingURL=.*$", "", js, flags=re.M).rstrip()
    css = re.sub(r"/\*# sourceMappingURL=[^*]*\*/", "", css).strip()
    notice = (f"/*! dygraphs {DYGRAPHS_VERSION}, MIT licence (Debian package libjs-dygraphs {DYGRAPHS_VERSION}-1, "
              "the code as shipped). Its copyright file:\n\n" + licence.replace("*/", "* /") + "\n*/\n")
    for text in (js, css):
        if re.search(r"</(script|style)|<!--|https?://", text, re.I):
            raise RuntimeError("vendored dygraphs cannot be inlined: it contains </script>, <!-- or a URL")
    return notice + js, f"/* dygraphs {DYGRAPHS_VERSION} (MIT), see the licence in the script below */\n" + css


_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="ssdlab">
<link rel="icon" href="data:,">
<title>@@TITLE@@</title>
<style>@@LIBCSS@@
@@CSS@@</style>
</head>
<body>
<header>@@HEADER@@</header>
<main>
<noscript><p class="warn">The graphs need JavaScript; the tables below work without it.</p></noscript>
@@BODY@@
</main>
<footer>Made with ssdlab: review-grade SSD torture tests on real drives and on a simulator. This page is self-contained and works offline.</footer>
<script type="application/json" id="ssdlab-data">@@DATA@@</script>
<script>@@LIBJS@@</script>
<script>@@JS@@</script>
</body>
</html>
"""
