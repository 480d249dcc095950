"""``report.html``: one self-contained, offline, interactive page for one or more results folders.

:func:`write_report` reads results folders (``summary.json`` and the series next to it, see
:mod:`ssdlab.results`) and writes a single HTML file with everything inline: CSS, a small
hand-written script that draws the plots on ``<canvas>``, and the data as JSON in a
``<script type="application/json">`` block. No CDN, no web fonts, no images, no requests:
the file works from a USB stick on a machine without network, and can be mailed around.

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
* **Other runs** (``"sweep"``, ``"recovery"``, ``"used"``... or anything with a ``plot`` hint):
  line plots, one section per ``test`` kind, with a run selector (or all runs overlaid),
  log / linear toggle, drag zoom, and clickable legend entries.
* A run that groups other results folders (``"test": "review"``, with their folder names in
  ``part_dirs``) comes first: its tables are the page's overview. :func:`expand_run_dirs`
  turns such a folder into itself and its parts.
* Tables: the main metrics side by side (one column per run; click a column header to show
  that run), every ``tables`` entry a run provides, and per run a collapsible block with the
  ssdlab version, command line, target, profile, target facts and every stored value.

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
         "logy": false}                 # initial scale (default false)

    A run with a ``plot`` hint is drawn as line/scatter charts even if its series has
    ``iops``. A run of another kind without a hint gets one line chart of ``series``:
    x = ``t_s`` (else the first column), y = ``iops`` if present, else every other column.
``"tables"``: a list of ``{"title": str, "columns": [str, ...], "rows": [[...], ...],
"note": str}``; a row may also be a dict keyed by column name. Rendered as HTML tables, in
order, in the run's section; numbers are formatted, ``null`` shows as "n/a".

Big series are thinned to at most :data:`MAX_POINTS` points per chart: each of a few
thousand time buckets keeps its minimum and maximum, plus an even stride of the rest (so
the dot density still reads right), and every zero-IOPS interval is kept. The page says
when a chart was thinned. The full series stay in the results folder.
"""
from __future__ import annotations

import datetime as _dt
import html
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import __version__, results

__all__ = [
    "write_report",
    "render_report",
    "load_run",
    "expand_run_dirs",
    "variant_label",
    "downsample_indices",
    "format_value",
    "MAIN_METRICS",
    "unit_suffix",
    "MAX_POINTS",
    "REPORT_NAME",
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

#: The metrics shown side by side (key, label, unit). ``latency_us.p99`` reads a nested key.
MAIN_METRICS: tuple[tuple[str, str, str], ...] = (
    ("iops_mean", "IOPS mean", "IOPS"),
    ("iops_median", "IOPS median", "IOPS"),
    ("iops_p1", "IOPS 1st percentile", "IOPS"),
    ("iops_p99", "IOPS 99th percentile", "IOPS"),
    ("iops_min", "IOPS min", "IOPS"),
    ("iops_max", "IOPS max", "IOPS"),
    ("mbps_mean", "MB/s mean", "MB/s"),
    ("iops_cv", "coefficient of variation", ""),
    ("consistency_score", "consistency score (mean/σ, steady state)", ""),
    ("zero_iops_seconds", "time at zero IOPS", "s"),
    ("longest_stall_s", "longest stall", "s"),
    ("fob_iops", "fresh-out-of-box IOPS", "IOPS"),
    ("fob_duration_s", "fresh-out-of-box lasts", "s"),
    ("steady_state_onset_s", "steady-state onset", "s"),
    ("steady_state_iops_mean", "steady-state IOPS mean", "IOPS"),
    ("steady_state_iops_median", "steady-state IOPS median", "IOPS"),
    ("steady_state_iops_p1", "steady-state IOPS 1st percentile", "IOPS"),
    ("bimodal", "bimodal", ""),
    ("low_mode_iops", "low mode", "IOPS"),
    ("high_mode_iops", "high mode", "IOPS"),
    ("high_mode_share", "time in high mode", "share"),
    ("burst_mean_s", "burst length", "s"),
    ("burst_period_s", "burst period", "s"),
    ("write_amplification", "write amplification", ""),
    ("steady_state_write_amplification", "write amplification, steady state", ""),
    ("latency_us.p50", "latency p50", "µs"),
    ("latency_us.p99", "latency p99", "µs"),
    ("latency_us.p99.9", "latency p99.9", "µs"),
    ("latency_us.max", "latency max", "µs"),
)
#: Run parameters shown above the metrics.
_PARAMS: tuple[tuple[str, str, str], ...] = (
    ("span_pct", "span", "%"),
    ("duration_s", "duration", "s"),
    ("qd", "queue depth", ""),
    ("bs_bytes", "block size", "bytes"),
)
_PARAM_KEYS = {k for k, _, _ in _PARAMS}
#: Keys that describe the run rather than measure it (left out of "other values").
_META_KEYS = {
    "test", "target", "ssdlab_version", "seed", "python_version", "platform", "hostname",
    "command_line", "started_utc", "libraries", "profile", "geometry", "target_info", "purge",
    "preconditioning", "plots", "plot", "tables", "label", "variant", "complete",
    "incomplete_reason", "counters", "logs", "fill",
}
_AXIS_LABELS = {
    "t_s": "time (s)", "iops": "IOPS", "mbps": "MB/s", "position_pct": "position (% of LBA span)",
    "write_mbps": "write MB/s", "read_mbps": "read MB/s", "write_amplification": "write amplification",
    "free_blocks": "free blocks",
}


# --------------------------------------------------------------------------- values

def format_value(v: Any, unit: str = "") -> str:
    """A number as the tables show it: ``None`` -> "n/a", thousands separated, 3 significant
    digits below 100; the unit ``"share"`` takes a 0..1 share and shows percent (``0.541`` -> "54.1")."""
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
    """`` (unit)`` for a metric label (``share`` shows as %; no "(IOPS)" after "IOPS mean")."""
    shown = "%" if unit == "share" else unit
    if not shown or (shown == "IOPS" and "IOPS" in label):
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
    hint = summary.get("plot")
    if hint is None:
        return []
    hints = [hint] if isinstance(hint, Mapping) else list(hint) if isinstance(hint, (list, tuple)) else []
    return [dict(h) for h in hints if isinstance(h, Mapping)]


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


def _line_chart(series: Mapping[str, np.ndarray], hint: Mapping[str, Any], name: str,
                errors: list[str], max_points: int) -> dict | None:
    cols = _numeric(series)
    if not cols:
        errors.append(f"{name}: no numeric columns")
        return None
    x = hint.get("x") or ("t_s" if "t_s" in cols else next(iter(cols)))
    if x not in cols:
        errors.append(f"{name}: plot x column {x!r} not found (columns: {', '.join(cols)})")
        return None
    ys = hint.get("y")
    if isinstance(ys, str):
        ys = [ys]
    if not ys:
        ys = ["iops"] if ("iops" in cols and x == "t_s" and not hint) else [c for c in cols if c != x]
    missing = [y for y in ys if y not in cols]
    if missing:
        errors.append(f"{name}: plot y column(s) {', '.join(map(repr, missing))} not found "
                      f"(columns: {', '.join(cols)})")
    ys = [y for y in ys if y in cols and y != x]
    if not ys:
        return None
    n = len(cols[x])
    keep = (cols["iops"] == 0) if "iops" in ys else None
    idx = downsample_indices([cols[y] for y in ys], max_points, keep)
    units = {_unit(y) for y in ys}
    ylabel = hint.get("ylabel") or (_pretty(ys[0]) if len(ys) == 1 else
                                    (units.pop() or "value") if len(units) == 1 else "value")
    if hint.get("title"):
        title = str(hint["title"])
    elif len(ys) <= 2:
        title = " and ".join(_pretty(y) for y in ys) + " vs " + _pretty(x)
    else:
        title = f"{ylabel if ylabel != 'value' else 'values'} vs {_pretty(x)} ({len(ys)} series)"
    return {
        "series": name,
        "kind": "scatter" if hint.get("kind") == "scatter" else "line",
        "title": title,
        "xlabel": str(hint.get("xlabel") or _pretty(x)),
        "ylabel": str(ylabel),
        "logy": bool(hint.get("logy", False)),
        "xcol": x,
        "x": _compact(cols[x][idx], 9),
        "ys": [{"name": y, "label": _pretty(y), "unit": _unit(y) or "", "values": _compact(cols[y][idx])} for y in ys],
        "n_total": int(n),
        "n_shown": int(idx.size),
    }


def _consistency_chart(series: Mapping[str, np.ndarray], max_points: int) -> dict:
    t = np.asarray(series["t_s"], dtype=np.float64) if "t_s" in series else np.arange(len(series["iops"]), dtype=np.float64)
    y = np.asarray(series["iops"], dtype=np.float64)
    zero = y == 0
    idx = downsample_indices([y], max_points, zero)
    d = np.diff(t)
    d = d[np.isfinite(d) & (d > 0)]
    interval = float(np.median(d)) if d.size else 1.0
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


def load_run(folder: str | os.PathLike, *, max_points: int = MAX_POINTS) -> dict:
    """One results folder as the page's data: summary, kind, charts (thinned), problems.

    Raises FileNotFoundError if the folder has neither ``summary.json`` nor an ssdlab
    ``INCOMPLETE`` marker, ValueError for an unreadable ``summary.json``.
    """
    folder = Path(folder)
    errors: list[str] = []
    try:
        summary = results.read_summary(folder)
    except FileNotFoundError:
        reason = results.incomplete_reason(folder)
        if reason is None:
            raise FileNotFoundError(f"{folder}: no summary.json: not an ssdlab results folder") from None
        summary = {"test": "unknown", "complete": False, "incomplete_reason": reason}
        errors.append("no summary.json (the run stopped before writing it)")
    if not isinstance(summary, dict):
        raise ValueError(f"{folder / results.SUMMARY_NAME}: expected a JSON object, got {type(summary).__name__}")
    if summary.get("complete") is not False:
        reason = results.incomplete_reason(folder)
        if reason is not None and reason != "in progress":
            summary = {**summary, "complete": False, "incomplete_reason": reason}
    series = _read_series_or_none(folder, "series", errors)
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
    }
    if kind == "consistency" and series is not None:
        run["consistency"] = _consistency_chart(series, max_points)
    elif kind == "lines":
        hints = _plot_hints(summary) or [{}]
        cache: dict[str, dict | None] = {"series": series}
        for i, hint in enumerate(hints):
            name = str(hint.get("series") or "series")
            if name not in cache:
                cache[name] = _read_series_or_none(folder, name, errors)
            s = cache[name]
            if s is None:
                errors.append(f"plot {i + 1}: no series {name!r} ({name}.parquet / {name}.csv) in the folder")
                continue
            chart = _line_chart(s, hint, name, errors, max_points)
            if chart is not None:
                run["charts"].append(chart)
    elif series is None and not errors and run["test"] in CONSISTENCY_TESTS:
        errors.append("no series file (series.parquet / series.csv): nothing to plot")
    return run


# --------------------------------------------------------------------------- HTML pieces

def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _metric_rows(runs: Sequence[dict], keys: Sequence[tuple[str, str, str]]) -> list[tuple[str, str, list[Any]]]:
    rows = []
    for key, label, unit in keys:
        vals = [_get(r["summary"], key) for r in runs]
        if all(v is None for v in vals):
            continue
        rows.append((label + unit_suffix(label, unit), unit, vals))
    return rows


def _generic_metric_keys(runs: Sequence[dict]) -> list[tuple[str, str, str]]:
    """Top-level numeric values of non-consistency runs (in first-seen order)."""
    seen: dict[str, None] = {}
    for r in runs:
        for k, v in r["summary"].items():
            if k in _META_KEYS or k in _PARAM_KEYS or isinstance(v, (dict, list, str)) or v is None:
                continue
            if isinstance(v, (bool, int, float)):
                seen.setdefault(k, None)
    return [(k, k, "") for k in seen]


def _metrics_table(runs: Sequence[dict], keys: Sequence[tuple[str, str, str]], table_id: str,
                   section: str, heading: str = "") -> str:
    params = _metric_rows(runs, _PARAMS)
    rows = params + _metric_rows(runs, keys)
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
    body = []
    for r in rows:
        if isinstance(r, Mapping):
            cells = [r.get(c) for c in cols]
        elif isinstance(r, (list, tuple)):
            cells = list(r) + [None] * (len(cols) - len(r))
        else:
            cells = [r] + [None] * (len(cols) - 1)
        tds = "".join(f'<td class="{_cell_class(v)}">{_e(format_value(v))}</td>' for v in cells)
        body.append(f"<tr>{tds}</tr>")
    title = t.get("title") or f"table {i + 1}"
    note = f'<p class="note">{_e(t["note"])}</p>' if t.get("note") else ""
    head = "".join(f"<th scope=\"col\">{_e(c)}</th>" for c in cols)
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


def _run_tables(runs: Sequence[dict]) -> str:
    """The ``tables`` every run provides, titled with the run's drive and variant."""
    out = []
    for r in runs:
        tables = r["summary"].get("tables")
        if tables is None:
            continue
        head = f'<h3 class="runtables">{_e(r["drive"])} · {_e(r["variant"])} <span class="sub">{_e(r["name"])}</span></h3>'
        if not isinstance(tables, list):
            out.append(head + '<p class="warn">"tables" in summary.json is not a list; skipped</p>')
        elif tables:
            out.append(f'<div class="runtables" data-run="{_e(r["id"])}">' + head
                       + "".join(_user_table(t, i) for i, t in enumerate(tables)) + "</div>")
    return "".join(out)


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


def _chart_block(section_id: str, title: str) -> str:
    return (f'<div class="chart" id="{_e(section_id)}" data-section="{_e(section_id)}">'
            f'<div class="controls"></div>'
            f'<div class="plotwrap"><canvas class="plot" id="cv-{_e(section_id)}" '
            f'aria-label="{_e(title)}" role="img"></canvas><div class="tip" hidden></div>'
            f'<div class="sel" hidden></div></div><p class="caption"></p></div>')


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
            parts.append("no steady state detected")
            continue
        if v is not None:
            parts.append(f"{label} {format_value(v)}{unit}")
    return " · ".join(parts)


def render_report(runs: list[dict], title: str | None = None) -> str:
    """The HTML text for runs loaded by :func:`load_run` (ids are assigned here)."""
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
                "consistency": r["consistency"], "charts": r["charts"],
            }
            for r in runs
        },
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
        return (f'<section id="{sid}-section"><h2>{_e(test.capitalize())}</h2>'
                + _run_tables(rs)
                + _metrics_table(rs, _generic_metric_keys(rs) or MAIN_METRICS, f"metrics-{sid}", sid, "Values")
                + "</section>")

    parts: list[str] = []
    # Runs that group other runs (a review's overview of its parts) come first.
    for i, (test, rs) in enumerate(rest.items()):
        if test in GROUP_TESTS:
            parts.append(rest_section(i, test, rs))
    if cons:
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
            + _metrics_table(cons, MAIN_METRICS, "metrics-consistency", "consistency", "Metrics")
            + _run_tables(cons) + "</section>")
    for i, (test, rs) in enumerate(line_sections.items()):
        sid = f"lines-{i}"
        parts.append(
            f'<section id="{sid}-section"><h2>{_e(test.capitalize())}</h2>'
            + _chart_block(sid, f"{test} line plot")
            + _run_tables(rs)
            + _metrics_table(rs, _generic_metric_keys(rs), f"metrics-{sid}", sid, "Values")
            + "</section>")
    for i, (test, rs) in enumerate(rest.items()):
        if test not in GROUP_TESTS:
            parts.append(rest_section(i, test, rs))
    parts.append('<section id="runs-section"><h2>Runs</h2><p class="lead">Version, command line, target, '
                 'profile and every stored value of each run (click to open).</p>'
                 + "".join(_run_details(r) for r in runs) + "</section>")

    return _TEMPLATE.replace("@@TITLE@@", _e(title)).replace(
        "@@HEADER@@",
        f'<h1>{_e(title)}</h1><p class="meta">{len(runs)} run{"s" if len(runs) != 1 else ""} · report by ssdlab '
        f'{_e(__version__)} · {_e(generated)}</p>'
    ).replace("@@CSS@@", _CSS).replace("@@BODY@@", "".join(parts)).replace(
        "@@DATA@@", payload).replace("@@JS@@", _JS)


def write_report(run_dirs: Sequence[str | os.PathLike], out_path: str | os.PathLike,
                 title: str | None = None) -> Path:
    """Write ``report.html`` for the results folders ``run_dirs`` to ``out_path``; returns it.

    One self-contained file (inline CSS, script and data; no network). Raises ValueError for
    an empty list, FileNotFoundError for a folder without results. Written atomically.
    """
    dirs = [Path(p) for p in run_dirs]
    if not dirs:
        raise ValueError("a report needs at least one results folder")
    runs = [load_run(d) for d in dirs]
    text = render_report(runs, title)
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode("utf-8")
    return results.atomic_write(out, lambda f: f.write(data))


# --------------------------------------------------------------------------- inline assets

_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="ssdlab">
<link rel="icon" href="data:,">
<title>@@TITLE@@</title>
<style>@@CSS@@</style>
</head>
<body>
<header>@@HEADER@@</header>
<main>
<noscript><p class="warn">The graphs need JavaScript; the tables below work without it.</p></noscript>
@@BODY@@
</main>
<footer>Made with ssdlab: review-grade SSD torture tests on real drives and on a simulator. This page is self-contained and works offline.</footer>
<script type="application/json" id="ssdlab-data">@@DATA@@</script>
<script>@@JS@@</script>
</body>
</html>
"""

_CSS = r"""
:root{--fg:#1d2330;--muted:#5b6472;--line:#d9dde3;--accent:#1f5fa8;--bg:#f6f7f9;--warn:#a33a00}
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--fg);background:var(--bg)}
header{background:#20242c;color:#fff;padding:14px 24px}
header h1{margin:0;font-size:21px;font-weight:600}
header .meta{margin:2px 0 0;color:#b9c0cc;font-size:13px}
main{max-width:1180px;margin:0 auto;padding:8px 20px 30px}
section{background:#fff;border:1px solid var(--line);border-radius:6px;padding:14px 18px;margin:16px 0}
h2{margin:0 0 6px;font-size:19px}
h3{margin:18px 0 6px;font-size:16px}
h4{margin:12px 0 4px;font-size:14px}
.lead,.note,.caption{color:var(--muted);font-size:13.5px;margin:4px 0 8px}
.warn{color:var(--warn);font-size:13.5px;margin:4px 0}
.chart{margin:8px 0}
.plotwrap{position:relative;border:1px solid var(--line);border-radius:4px;background:#fff}
canvas.plot{display:block;width:100%;height:420px;cursor:crosshair}
.tip{position:absolute;pointer-events:none;background:rgba(32,36,44,.92);color:#fff;font-size:12px;padding:3px 7px;border-radius:3px;white-space:nowrap;z-index:2}
.sel{position:absolute;top:0;bottom:0;background:rgba(31,95,168,.15);border-left:1px solid var(--accent);border-right:1px solid var(--accent);pointer-events:none}
.controls{display:flex;flex-wrap:wrap;gap:6px 18px;margin:0 0 8px}
.ctl{display:flex;flex-wrap:wrap;align-items:center;gap:4px}
.ctl>.lbl{font-size:12px;color:var(--muted);text-transform:uppercase;letter-spacing:.04em;margin-right:2px}
.ctl.drives{flex-basis:100%}
button.btn{font:inherit;font-size:13px;padding:4px 10px;border:1px solid #b8bfca;background:#eef0f3;color:var(--fg);border-radius:3px;cursor:pointer}
button.btn:hover{background:#e2e6eb}
button.btn.on{background:var(--accent);border-color:var(--accent);color:#fff}
button.btn:disabled{opacity:.45;cursor:not-allowed}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:13px;margin:6px 2px 0}
.legend span{cursor:pointer;user-select:none}
.legend span.off{opacity:.4;text-decoration:line-through}
.legend i{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:5px;vertical-align:-1px}
.tablewrap{overflow-x:auto}
table{border-collapse:collapse;font-size:13.5px;margin:4px 0 8px}
th,td{border-bottom:1px solid var(--line);padding:4px 10px;text-align:right;white-space:nowrap}
th[scope=row],td.txt{text-align:left}
td.txt.long{white-space:normal;min-width:22em}
thead th{background:#f0f2f5;vertical-align:bottom}
table.metrics thead th[data-run]{cursor:pointer}
table.metrics .shown{background:#e8f0fa}
table.metrics thead th.shown{background:#cfe0f5}
table.kv td{text-align:left;white-space:normal;word-break:break-all}
.sub{color:var(--muted);font-weight:normal;font-size:12px}
details.run{border-top:1px solid var(--line);padding:6px 0}
details.run>summary{cursor:pointer}
details.inner{margin:4px 0 4px 4px}
details.inner>summary{cursor:pointer;color:var(--accent);font-size:13.5px}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;font-size:13.5px;margin:8px 0}
dt{color:var(--muted)}dd{margin:0;word-break:break-word}
pre{background:#f6f7f9;border:1px solid var(--line);padding:8px;font-size:12px;overflow:auto;max-height:360px}
code{font-size:12.5px;background:#f0f2f5;padding:1px 4px;border-radius:3px}
.badge{background:var(--warn);color:#fff;border-radius:3px;font-size:11px;padding:1px 5px}
footer{color:var(--muted);font-size:12px;text-align:center;padding:10px 0 24px}
"""

_JS = r"""
(function () {
'use strict';
var D = JSON.parse(document.getElementById('ssdlab-data').textContent);
var COLORS = ['#1f5fa8', '#d9822b', '#2ca02c', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#bcbd22', '#7f7f7f'];
var STALL = '#d62728';
var REVIEW_ZOOM = 1400, REVIEW_RUN = 2000, LINEAR_TOP = 40000;

function trim3(x) { return String(parseFloat(Number(x).toPrecision(3))); }
function si(v) {
  if (v === 0) return '0';
  var a = Math.abs(v), u = [[1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'K']];
  for (var i = 0; i < u.length; i++) if (a >= u[i][0]) return trim3(v / u[i][0]) + u[i][1];
  return trim3(v);
}
function fmt(v) {
  if (v === null || v === undefined || !isFinite(v)) return 'n/a';
  var a = Math.abs(v);
  if (a >= 100) return Math.round(v).toLocaleString('en-US');
  return trim3(v);
}
function niceCeil(x) {
  if (!(x > 0)) return 1;
  var e = Math.floor(Math.log10(x)), m = x / Math.pow(10, e), ms = [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8, 10];
  for (var i = 0; i < ms.length; i++) if (m <= ms[i] + 1e-9) return ms[i] * Math.pow(10, e);
  return 10 * Math.pow(10, e);
}
function niceStep(range, n) {
  var raw = range / Math.max(n, 1), e = Math.floor(Math.log10(raw)), m = raw / Math.pow(10, e);
  var s = m <= 1 ? 1 : m <= 2 ? 2 : m <= 2.5 ? 2.5 : m <= 5 ? 5 : 10;
  return s * Math.pow(10, e);
}
function linTicks(lo, hi, n) {
  if (!(hi > lo)) return [lo];
  var s = niceStep(hi - lo, n), out = [];
  for (var v = Math.ceil(lo / s - 1e-9) * s; v <= hi + s * 1e-9; v += s) out.push(Math.abs(v) < s * 1e-9 ? 0 : v);
  return out;
}
function percentile(arr, p) {
  if (!arr.length) return 0;
  var a = arr.slice().sort(function (x, y) { return x - y; });
  var k = (a.length - 1) * p / 100, f = Math.floor(k), c = Math.min(f + 1, a.length - 1);
  return a[f] + (a[c] - a[f]) * (k - f);
}
function el(tag, attrs, text) {
  var e = document.createElement(tag);
  if (attrs) for (var k in attrs) if (attrs.hasOwnProperty(k)) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}
function lowerBound(xs, v) {
  var lo = 0, hi = xs.length;
  while (lo < hi) { var m = (lo + hi) >> 1; if (xs[m] === null || xs[m] < v) lo = m + 1; else hi = m; }
  return lo;
}

/* ---------------------------------------------------------------- drawing */
// P: {title, subtitle, xlabel, ylabel, logy, x0, x1, y0, y1, floor, series:[{label, color, x, y, kind}], legend:[...], note}
function drawPlot(cv, P) {
  var dpr = window.devicePixelRatio || 1;
  var W = Math.max(360, cv.clientWidth || 900), H = Math.max(280, cv.clientHeight || 420);
  cv.width = Math.round(W * dpr); cv.height = Math.round(H * dpr);
  var g = cv.getContext('2d');
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.fillStyle = '#fff'; g.fillRect(0, 0, W, H);
  var L = 66, R = W - 16, T = 34, B = H - 44;
  var x0 = P.x0, x1 = P.x1 > P.x0 ? P.x1 : P.x0 + 1;
  var sx = function (v) { return L + (v - x0) / (x1 - x0) * (R - L); };
  var ly0 = Math.log10(P.y0), ly1 = Math.log10(P.y1);
  var sy = P.logy ? function (v) { return B - (Math.log10(v) - ly0) / (ly1 - ly0) * (B - T); }
                  : function (v) { return B - (v - P.y0) / (P.y1 - P.y0) * (B - T); };
  g.font = '12px system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif';
  // grid and y ticks
  g.lineWidth = 1; g.textAlign = 'right'; g.textBaseline = 'middle';
  var yt = [];
  if (P.logy) {
    for (var e = Math.ceil(ly0 - 1e-9); e <= Math.floor(ly1 + 1e-9); e++) {
      yt.push(Math.pow(10, e));
      for (var m = 2; m < 10; m++) {
        var mv = m * Math.pow(10, e);
        if (mv > P.y0 && mv < P.y1) { g.strokeStyle = '#f0f0f0'; g.beginPath(); g.moveTo(L, Math.round(sy(mv)) + .5); g.lineTo(R, Math.round(sy(mv)) + .5); g.stroke(); }
      }
    }
  } else yt = linTicks(P.y0, P.y1, 6);
  yt.forEach(function (v) {
    var y = Math.round(sy(v)) + .5;
    g.strokeStyle = '#d9d9d9'; g.beginPath(); g.moveTo(L, y); g.lineTo(R, y); g.stroke();
    g.fillStyle = '#333'; g.fillText(si(v), L - 6, y);
  });
  var xt = linTicks(x0, x1, Math.max(4, Math.floor((R - L) / 90)));
  g.textAlign = 'center'; g.textBaseline = 'top';
  xt.forEach(function (v) {
    var x = Math.round(sx(v)) + .5;
    g.strokeStyle = '#ececec'; g.beginPath(); g.moveTo(x, T); g.lineTo(x, B); g.stroke();
    g.fillStyle = '#333'; g.fillText(si(v), x, B + 5);
  });
  // data
  var stats = {drawn: 0, stalls: 0, above: 0};
  g.save(); g.beginPath(); g.rect(L, T, R - L, B - T); g.clip();
  var floorY = P.logy ? sy(P.floor) : sy(0);
  P.series.forEach(function (s) {
    if (s.hidden) return;
    var xs = s.x, ys = s.y, n = xs.length;
    var i0 = Math.max(0, lowerBound(xs, x0) - 1), i1 = Math.min(n, lowerBound(xs, x1) + 1);
    var stalls = [];
    if (s.kind === 'line') {
      g.strokeStyle = s.color; g.lineWidth = 1.6; g.beginPath();
      var pen = false;
      for (var i = i0; i < i1; i++) {
        var xv = xs[i], yv = ys[i];
        if (xv === null || yv === null) { pen = false; continue; }
        if (P.logy && yv <= 0) { stalls.push(xv); pen = false; continue; }
        var px = sx(xv), py = sy(yv);
        if (!pen) { g.moveTo(px, py); pen = true; } else g.lineTo(px, py);
        stats.drawn++;
        if (!P.logy && yv > P.y1) stats.above++;
      }
      g.stroke();
    } else {
      var sz = s.dot || ((i1 - i0) > 6000 ? 1.7 : 2.6), h = sz / 2;
      g.fillStyle = s.color;
      for (var j = i0; j < i1; j++) {
        var xv2 = xs[j], yv2 = ys[j];
        if (xv2 === null || yv2 === null) continue;
        if (yv2 <= 0) { stalls.push(xv2); continue; }
        if (xv2 < x0 || xv2 > x1) continue;
        if (!P.logy && yv2 > P.y1) { stats.above++; continue; }
        g.fillRect(sx(xv2) - h, sy(yv2) - h, sz, sz);
        stats.drawn++;
      }
    }
    // stalls: triangles at the floor (log) or at 0 (linear)
    g.fillStyle = s.stallColor || STALL; g.strokeStyle = '#000'; g.lineWidth = .5;
    stalls.forEach(function (xv) {
      if (xv < x0 || xv > x1) return;
      var px = sx(xv), py = Math.min(floorY, B - 4);
      g.beginPath(); g.moveTo(px - 3.5, py - 4); g.lineTo(px + 3.5, py - 4); g.lineTo(px, py + 3); g.closePath(); g.fill(); g.stroke();
      stats.stalls++;
    });
  });
  g.restore();
  // frame, labels, titles
  g.strokeStyle = '#888'; g.lineWidth = 1; g.strokeRect(L + .5, T + .5, R - L - 1, B - T - 1);
  g.fillStyle = '#222'; g.textAlign = 'center'; g.textBaseline = 'alphabetic';
  g.fillText(P.xlabel || '', (L + R) / 2, H - 8);
  g.save(); g.translate(15, (T + B) / 2); g.rotate(-Math.PI / 2); g.fillText(P.ylabel || '', 0, 0); g.restore();
  g.textAlign = 'left'; g.font = '600 13.5px system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif';
  var sub = P.subtitle || '', title = P.title || '';
  g.font = '12px system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif';
  var subW = g.measureText(sub).width;
  g.font = '600 13.5px system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif';
  var room = R - L - subW - 24;
  if (g.measureText(title).width > room) {
    while (title.length > 1 && g.measureText(title + '\u2026').width > room) title = title.slice(0, -1);
    title += '\u2026';
  }
  g.fillText(title, L, 20);
  g.font = '12px system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif';
  g.textAlign = 'right'; g.fillStyle = '#555'; g.fillText(sub, R, 20);
  // legend inside the plot, top right
  var leg = (P.legend || []).slice();
  if (stats.stalls) leg.push({label: '0 IOPS (stall), drawn at ' + (P.logy ? si(P.floor) : '0') + ': ' + stats.stalls, color: P.stallLegendColor || STALL, marker: 'tri'});
  if (stats.above) leg.push({label: stats.above + ' points above ' + si(P.y1) + ' not shown', color: '#999', marker: 'none'});
  if (leg.length) {
    g.font = '12px system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif';
    var wmax = 0; leg.forEach(function (l) { wmax = Math.max(wmax, g.measureText(l.label).width); });
    var bw = wmax + 30, bh = leg.length * 17 + 8, bx = R - bw - 8, by = T + 8;
    g.fillStyle = 'rgba(255,255,255,.88)'; g.fillRect(bx, by, bw, bh);
    g.strokeStyle = '#ccc'; g.strokeRect(bx + .5, by + .5, bw, bh);
    g.textAlign = 'left'; g.textBaseline = 'middle';
    leg.forEach(function (l, k) {
      var cy = by + 12 + k * 17;
      g.fillStyle = l.color;
      if (l.marker === 'tri') { g.beginPath(); g.moveTo(bx + 8, cy - 4); g.lineTo(bx + 16, cy - 4); g.lineTo(bx + 12, cy + 3); g.closePath(); g.fill(); }
      else if (l.marker === 'line') g.fillRect(bx + 6, cy - 1, 12, 2.5);
      else if (l.marker !== 'none') g.fillRect(bx + 9, cy - 2.5, 5, 5);
      g.fillStyle = '#222'; g.fillText(l.label, bx + 22, cy);
    });
  }
  return {L: L, R: R, T: T, B: B, x0: x0, x1: x1, sx: sx, sy: sy, stats: stats, P: P};
}

/* ---------------------------------------------------------------- shared chart shell */
function Shell(root) {
  this.root = root;
  this.controls = root.querySelector('.controls');
  this.canvas = root.querySelector('canvas');
  this.tip = root.querySelector('.tip');
  this.selBox = root.querySelector('.sel');
  this.caption = root.querySelector('.caption');
  this.layout = null;
  this.renders = 0;
  var self = this, dragX = null;
  function xAt(ev) { var r = self.canvas.getBoundingClientRect(); return ev.clientX - r.left; }
  function toData(px) { var l = self.layout; return l.x0 + (px - l.L) / (l.R - l.L) * (l.x1 - l.x0); }
  this.canvas.addEventListener('mousedown', function (ev) { if (self.layout) { dragX = xAt(ev); ev.preventDefault(); } });
  window.addEventListener('mouseup', function (ev) {
    if (dragX === null) return;
    var a = dragX, b = xAt(ev); dragX = null; self.selBox.hidden = true;
    var l = self.layout;
    a = Math.max(l.L, Math.min(l.R, a)); b = Math.max(l.L, Math.min(l.R, b));
    if (Math.abs(b - a) > 6 && self.onZoom) self.onZoom(toData(Math.min(a, b)), toData(Math.max(a, b)));
  });
  this.canvas.addEventListener('mousemove', function (ev) {
    var l = self.layout; if (!l) return;
    var px = xAt(ev);
    if (dragX !== null) {
      self.selBox.hidden = false;
      self.selBox.style.left = Math.min(dragX, px) + 'px'; self.selBox.style.width = Math.abs(px - dragX) + 'px';
    }
    self.hover(px, ev.clientY - self.canvas.getBoundingClientRect().top);
  });
  this.canvas.addEventListener('mouseleave', function () { self.tip.hidden = true; });
  this.canvas.addEventListener('dblclick', function () { if (self.onReset) self.onReset(); });
  var t = null;
  window.addEventListener('resize', function () { clearTimeout(t); t = setTimeout(function () { if (self.redraw) self.redraw(); }, 120); });
}
Shell.prototype.hover = function (px, py) {
  var l = this.layout; if (!l || px < l.L || px > l.R) { this.tip.hidden = true; return; }
  var xv = l.x0 + (px - l.L) / (l.R - l.L) * (l.x1 - l.x0), best = null;
  l.P.series.forEach(function (s) {
    if (s.hidden) return;
    var i = lowerBound(s.x, xv);
    [i - 1, i].forEach(function (k) {
      if (k < 0 || k >= s.x.length || s.y[k] === null || s.x[k] === null) return;
      var yy = s.y[k] <= 0 ? (l.P.logy ? l.P.floor : 0) : s.y[k];
      if (!l.P.logy && yy > l.P.y1) yy = l.P.y1;
      var d = Math.abs(l.sx(s.x[k]) - px) + Math.abs(l.sy(yy) - py) * 0.25;
      if (!best || d < best.d) best = {d: d, s: s, k: k, py: l.sy(yy)};
    });
  });
  if (!best || best.d > 60) { this.tip.hidden = true; return; }
  var s = best.s;
  this.tip.textContent = (s.label ? s.label + ': ' : '') + (l.P.xname || 'x') + ' ' + fmt(s.x[best.k]) + (l.P.xunit || '') + ', ' + fmt(s.y[best.k]) + ' ' + (s.yunit || '');
  this.tip.hidden = false;
  var left = l.sx(s.x[best.k]) + 10;
  if (left > l.R - 200) left -= 220;
  this.tip.style.left = left + 'px'; this.tip.style.top = Math.max(0, best.py - 28) + 'px';
};
Shell.prototype.group = function (label, cls) {
  var d = el('div', {'class': 'ctl' + (cls ? ' ' + cls : '')});
  d.appendChild(el('span', {'class': 'lbl'}, label));
  this.controls.appendChild(d);
  return d;
};
Shell.prototype.button = function (parent, text, role, value, on, onclick) {
  var b = el('button', {'class': 'btn' + (on ? ' on' : ''), 'type': 'button', 'data-role': role, 'data-value': String(value)}, text);
  b.setAttribute('aria-pressed', on ? 'true' : 'false');
  b.addEventListener('click', onclick);
  parent.appendChild(b);
  return b;
};
Shell.prototype.draw = function (P) {
  this.layout = drawPlot(this.canvas, P);
  this.renders++;
  this.root.setAttribute('data-renders', String(this.renders));
  this.root.setAttribute('data-points', String(this.layout.stats.drawn));
  this.root.setAttribute('data-stalls', String(this.layout.stats.stalls));
  this.root.setAttribute('data-x0', String(P.x0)); this.root.setAttribute('data-x1', String(P.x1));
  return this.layout;
};
function highlightColumns(section, ids) {
  var tables = document.querySelectorAll('table.metrics[data-section="' + section + '"]');
  Array.prototype.forEach.call(tables, function (t) {
    Array.prototype.forEach.call(t.querySelectorAll('[data-run]'), function (c) {
      c.classList.toggle('shown', ids.indexOf(c.getAttribute('data-run')) >= 0);
    });
  });
}
function bindColumns(section, pick) {
  var tables = document.querySelectorAll('table.metrics[data-section="' + section + '"]');
  Array.prototype.forEach.call(tables, function (t) {
    Array.prototype.forEach.call(t.querySelectorAll('thead th[data-run]'), function (th) {
      var go = function () { pick(th.getAttribute('data-run')); };
      th.addEventListener('click', go);
      th.addEventListener('keydown', function (ev) { if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); go(); } });
    });
  });
}

/* ---------------------------------------------------------------- consistency view */
function ConsistencyView(root) {
  var shell = new Shell(root), groups = D.groups, runs = D.runs;
  var st = {group: 0, variant: 0, scale: 'log', zoom: 'whole', custom: null};
  // one y scale for every drive, as in the reviews
  var minPos = Infinity, peak = 0;
  groups.forEach(function (g) { g.runs.forEach(function (id) {
    runs[id].consistency.y.forEach(function (v) { if (v !== null && v > 0) { if (v < minPos) minPos = v; if (v > peak) peak = v; } });
  }); });
  var floor = (!isFinite(minPos) || minPos >= 1) ? 1 : Math.pow(10, Math.floor(Math.log10(minPos)) - 1);
  var logTop = Math.max(1e5, Math.pow(10, Math.ceil(Math.log10(Math.max(peak, 1) * 1.05))));
  var linCache = {};
  function shown() {
    var g = groups[st.group];
    return st.variant === 'all' ? g.runs.slice() : [g.runs[Math.min(st.variant, g.runs.length - 1)]];
  }
  function runEnd(ids) { var e = 0; ids.forEach(function (id) { e = Math.max(e, runs[id].consistency.end_s); }); return e; }
  function reviewStart(end) { return end >= REVIEW_RUN ? REVIEW_ZOOM : 0.7 * end; }
  function onsetOf(ids) {
    var o = null;
    ids.forEach(function (id) { var v = runs[id].onset_s; if (v !== null && v !== undefined && (o === null || v < o)) o = v; });
    return o;
  }
  function windowFor(ids) {
    var end = runEnd(ids);
    if (st.zoom === 'custom' && st.custom) return [st.custom[0], st.custom[1]];
    if (st.zoom === 'steady') { var o = onsetOf(ids); if (o !== null && o < end) return [o, end]; }
    if (st.zoom === 'review') return [reviewStart(end), end];
    return [0, end];
  }
  function linearTop(w) {
    var key = w[0] + ':' + w[1];
    if (linCache[key]) return linCache[key];
    var vals = [];
    groups.forEach(function (g) { g.runs.forEach(function (id) {
      var c = runs[id].consistency;
      for (var i = 0; i < c.x.length; i++) if (c.x[i] !== null && c.x[i] >= w[0] && c.x[i] < w[1] && c.y[i] !== null) vals.push(c.y[i]);
    }); });
    var p = percentile(vals, 99.5);
    return (linCache[key] = p <= LINEAR_TOP ? LINEAR_TOP : niceCeil(p));
  }
  function build() {
    shell.controls.textContent = '';
    var g = groups[st.group];
    var dg = shell.group('Drive', 'drives');
    groups.forEach(function (gg, i) {
      shell.button(dg, gg.label, 'drive', i, i === st.group, function () {
        if (st.group !== i) { var cur = variantLabel(); st.group = i; st.variant = matchVariant(cur); if (st.zoom === 'custom') st.zoom = 'whole'; render(); }
      });
    });
    var vg = shell.group('Variant', 'variants');
    g.runs.forEach(function (id, i) {
      shell.button(vg, runs[id].variant, 'variant', i, st.variant === i, function () { st.variant = i; render(); });
    });
    if (g.runs.length > 1) shell.button(vg, 'All (overlay)', 'variant', 'all', st.variant === 'all', function () { st.variant = 'all'; render(); });
    var sg = shell.group('Scale');
    shell.button(sg, 'Log', 'scale', 'log', st.scale === 'log', function () { st.scale = 'log'; render(); });
    shell.button(sg, 'Linear', 'scale', 'linear', st.scale === 'linear', function () { st.scale = 'linear'; render(); });
    var zg = shell.group('Zoom'), ids = shown(), end = runEnd(ids), o = onsetOf(ids), rs = reviewStart(end);
    shell.button(zg, 'Whole run', 'zoom', 'whole', st.zoom === 'whole', function () { st.zoom = 'whole'; render(); });
    var sb = shell.button(zg, o !== null ? 'Steady state (t \u2265 ' + fmt(o) + ' s)' : 'Steady state', 'zoom', 'steady', st.zoom === 'steady', function () { st.zoom = 'steady'; render(); });
    if (o === null) { sb.disabled = true; sb.title = 'no steady state detected (SNIA rule)'; }
    shell.button(zg, end >= REVIEW_RUN ? 'From t=1400 s (reviews)' : 'From t=' + fmt(rs) + ' s (70% of run)', 'zoom', 'review', st.zoom === 'review', function () { st.zoom = 'review'; render(); });
    if (st.zoom === 'custom') shell.button(zg, 'Custom ' + fmt(st.custom[0]) + '\u2013' + fmt(st.custom[1]) + ' s', 'zoom', 'custom', true, function () {});
  }
  function variantLabel() { var v = shown(); return st.variant === 'all' ? 'all' : runs[v[0]].variant; }
  function matchVariant(label) {
    if (label === 'all') return groups[st.group].runs.length > 1 ? 'all' : 0;
    var i = groups[st.group].runs.map(function (id) { return runs[id].variant; }).indexOf(label);
    return i < 0 ? 0 : i;
  }
  function render() {
    if (st.zoom === 'steady' && onsetOf(shown()) === null) st.zoom = 'whole';
    build();
    var ids = shown(), w = windowFor(ids), g = groups[st.group], multi = ids.length > 1;
    var logy = st.scale === 'log';
    var interval = runs[ids[0]].consistency.interval_s;
    var series = ids.map(function (id, i) {
      var r = runs[id], c = COLORS[i % COLORS.length];
      return {label: r.variant, color: c, stallColor: multi ? c : STALL, x: r.consistency.x, y: r.consistency.y, kind: 'scatter', yunit: 'IOPS'};
    });
    var legend = multi ? series.map(function (s) { return {label: s.label, color: s.color}; })
                       : [{label: 'IOPS per ' + fmt(interval) + ' s interval', color: COLORS[0]}];
    var subtitle = (st.zoom === 'whole' ? 'whole run' : 'from t=' + fmt(w[0]) + ' s') + ', ' + st.scale + ' scale';
    var P = {title: g.label + ' \u2014 ' + (multi ? 'all variants' : runs[ids[0]].variant), subtitle: subtitle,
             xlabel: 'time (s)', ylabel: 'IOPS', xname: 't', xunit: ' s', logy: logy, x0: w[0], x1: w[1],
             y0: logy ? floor / 2 : 0, y1: logy ? logTop : linearTop(w), floor: floor, series: series, legend: legend,
             stallLegendColor: multi ? '#888' : STALL};
    shell.draw(P);
    root.setAttribute('data-scale', st.scale);
    root.setAttribute('data-zoom', st.zoom);
    root.setAttribute('data-group', String(st.group));
    root.setAttribute('data-drive', g.label);
    root.setAttribute('data-variant', multi ? 'all' : runs[ids[0]].variant);
    root.setAttribute('data-run', ids.join(','));
    shell.caption.textContent = ids.map(function (id) { return (multi ? runs[id].variant + ': ' : '') + runs[id].facts; }).join('  |  ');
    highlightColumns('consistency', ids);
  }
  shell.onZoom = function (a, b) { st.zoom = 'custom'; st.custom = [a, b]; render(); };
  shell.onReset = function () { st.zoom = 'whole'; render(); };
  shell.redraw = render;
  bindColumns('consistency', function (id) {
    var r = runs[id]; if (!r || r.group === null) return;
    st.group = r.group; st.variant = groups[r.group].runs.indexOf(id); if (st.zoom === 'custom') st.zoom = 'whole'; render();
    root.scrollIntoView({block: 'nearest'});
  });
  render();
  return {state: st, render: render};
}

/* ---------------------------------------------------------------- line view */
function LinesView(root, section) {
  var shell = new Shell(root), runs = D.runs, ids = section.runs;
  var first = runs[ids[0]].charts[0];
  var st = {run: 0, chart: 0, scale: first.logy ? 'log' : 'linear', custom: null, hidden: {}};
  var nCharts = 0; ids.forEach(function (id) { nCharts = Math.max(nCharts, runs[id].charts.length); });
  function shownRuns() { return st.run === 'all' ? ids.slice() : [ids[st.run]]; }
  function charts() {
    var out = [];
    shownRuns().forEach(function (id) { var c = runs[id].charts[Math.min(st.chart, runs[id].charts.length - 1)]; if (c) out.push([id, c]); });
    return out;
  }
  function build() {
    shell.controls.textContent = '';
    var rg = shell.group('Run', 'drives');
    ids.forEach(function (id, i) {
      var r = runs[id];
      shell.button(rg, r.drive + ' \u00b7 ' + r.variant + (ids.length > 1 && sameLabel(i) ? ' \u00b7 ' + r.name : ''), 'run', i, st.run === i, function () { st.run = i; st.custom = null; render(); });
    });
    if (ids.length > 1) shell.button(rg, 'All (overlay)', 'run', 'all', st.run === 'all', function () { st.run = 'all'; render(); });
    if (nCharts > 1) {
      var cg = shell.group('Chart');
      var titles = runs[ids[st.run === 'all' ? 0 : st.run]].charts;
      for (var k = 0; k < nCharts; k++) (function (k) {
        var t = titles[k] ? titles[k].title : 'chart ' + (k + 1);
        shell.button(cg, t, 'chart', k, st.chart === k, function () { st.chart = k; st.custom = null; st.hidden = {}; render(); });
      })(k);
    }
    var sg = shell.group('Scale');
    shell.button(sg, 'Log', 'scale', 'log', st.scale === 'log', function () { st.scale = 'log'; render(); });
    shell.button(sg, 'Linear', 'scale', 'linear', st.scale === 'linear', function () { st.scale = 'linear'; render(); });
    var zg = shell.group('Zoom');
    shell.button(zg, 'Whole range', 'zoom', 'whole', !st.custom, function () { st.custom = null; render(); });
    if (st.custom) shell.button(zg, 'Custom ' + fmt(st.custom[0]) + '\u2013' + fmt(st.custom[1]), 'zoom', 'custom', true, function () {});
  }
  function sameLabel(i) {
    var r = runs[ids[i]];
    return ids.some(function (id, j) { return j !== i && runs[id].drive === r.drive && runs[id].variant === r.variant; });
  }
  function render() {
    build();
    var cs = charts(), series = [], k = 0, xmin = Infinity, xmax = -Infinity, ymin = Infinity, ymax = -Infinity, minPos = Infinity;
    var multiRun = cs.length > 1;
    cs.forEach(function (pair) {
      var r = runs[pair[0]], c = pair[1];
      c.ys.forEach(function (y) {
        var key = pair[0] + '/' + y.name, color = COLORS[k++ % COLORS.length];
        var s = {key: key, label: (multiRun ? r.drive + ' \u00b7 ' + r.variant + ' \u00b7 ' : '') + y.label, color: color,
                 x: c.x, y: y.values, kind: c.kind, hidden: !!st.hidden[key], yunit: y.unit || ''};
        series.push(s);
        c.x.forEach(function (v) { if (v !== null) { if (v < xmin) xmin = v; if (v > xmax) xmax = v; } });
        if (!s.hidden) y.values.forEach(function (v) { if (v !== null) { if (v < ymin) ymin = v; if (v > ymax) ymax = v; if (v > 0 && v < minPos) minPos = v; } });
      });
    });
    if (!isFinite(xmin)) { xmin = 0; xmax = 1; }
    if (!isFinite(ymin)) { ymin = 0; ymax = 1; }
    var logy = st.scale === 'log', c0 = cs[0][1];
    var w = st.custom || [xmin, xmax];
    var floor = isFinite(minPos) ? Math.pow(10, Math.floor(Math.log10(minPos))) : 1;
    var P = {title: c0.title, subtitle: (multiRun ? 'all runs' : runs[cs[0][0]].drive + ' \u00b7 ' + runs[cs[0][0]].variant) + ', ' + st.scale + ' scale',
             xlabel: c0.xlabel, ylabel: c0.ylabel, xname: c0.xcol, xunit: '', logy: logy, x0: w[0], x1: w[1] > w[0] ? w[1] : w[0] + 1,
             y0: logy ? floor / 2 : Math.min(0, ymin), y1: logy ? Math.pow(10, Math.ceil(Math.log10(Math.max(ymax, floor) * 1.05))) : niceCeil(ymax > 0 ? ymax * 1.05 : 1),
             floor: floor, series: series, legend: []};
    if (!logy && ymin < 0) P.y0 = -niceCeil(-ymin * 1.05);
    shell.draw(P);
    root.setAttribute('data-scale', st.scale);
    root.setAttribute('data-zoom', st.custom ? 'custom' : 'whole');
    root.setAttribute('data-run', cs.map(function (p) { return p[0]; }).join(','));
    root.setAttribute('data-chart', String(st.chart));
    var lg = root.querySelector('.legend');
    if (!lg) { lg = el('div', {'class': 'legend'}); shell.canvas.parentNode.parentNode.insertBefore(lg, shell.caption); }
    lg.textContent = '';
    series.forEach(function (s) {
      var sp = el('span', {'class': s.hidden ? 'off' : '', 'title': 'click to show or hide', 'data-key': s.key});
      var sw = el('i'); sw.style.background = s.color; sp.appendChild(sw); sp.appendChild(document.createTextNode(s.label));
      sp.addEventListener('click', function () { st.hidden[s.key] = !st.hidden[s.key]; render(); });
      lg.appendChild(sp);
    });
    var notes = [];
    cs.forEach(function (p) { if (p[1].n_shown < p[1].n_total) notes.push(runs[p[0]].name + ': ' + p[1].n_shown.toLocaleString('en-US') + ' of ' + p[1].n_total.toLocaleString('en-US') + ' points shown (thinned; min/max kept)'); });
    shell.caption.textContent = notes.join(' | ');
    highlightColumns(section.id, cs.map(function (p) { return p[0]; }));
  }
  shell.onZoom = function (a, b) { st.custom = [a, b]; render(); };
  shell.onReset = function () { st.custom = null; render(); };
  shell.redraw = render;
  bindColumns(section.id, function (id) { var i = ids.indexOf(id); if (i >= 0) { st.run = i; st.custom = null; render(); } });
  render();
  return {state: st, render: render};
}

var views = {};
var croot = document.getElementById('consistency');
if (croot && D.groups.length) views.consistency = ConsistencyView(croot);
D.line_sections.forEach(function (sec) {
  var r = document.getElementById(sec.id);
  if (r) views[sec.id] = LinesView(r, sec);
});
window.ssdlabReport = {data: D, views: views};
document.body.setAttribute('data-ready', '1');
})();
"""
