"""Plots as the reviewers drew them: IOPS-vs-time scatter plots, sweep lines, bar tables, and
per-interval latency against time.

The performance-consistency test logs IOPS every second for 2000 s; the reviews show three
scatter plots of it (AnandTech, Intel SSD DC S3700 review onward):

1. the whole run on a log IOPS axis (fresh-out-of-box level, the drop, steady state);
2. a zoom on steady state (from t=1400 s) on a log axis;
3. the same zoom on a linear axis that tops out at 40K IOPS.

Intervals with zero IOPS (the drive stalled for a whole interval) cannot sit on a log axis;
rather than letting matplotlib drop them silently, they are drawn at a floor (y=1 IOPS)
with their own marker, and the legend says so.

Every axis labels the range it shows: log axes span whole decades with a label at each end,
linear throughput axes start at 0 and end at a labelled "nice" value, and the x axis labels
its last value (the end of the run). :func:`figure_problems` checks a figure for that (data
inside the axes and inside the outermost tick labels, every series it was given drawn); with
the environment variable ``SSDLAB_CHECK_PLOTS=1`` (the test suite sets it) :func:`save_figure`
refuses a figure that fails it.

Everything is drawn on :class:`matplotlib.figure.Figure` objects with the Agg canvas (no
pyplot, no global backend switch), so plotting is safe in threads and in notebooks.
Output is deterministic: fixed SVG hash salt, no date/software in the metadata.
"""
from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import functools
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported in the functions that use them: `ssdlab --help` starts without them
    import numpy as np

from .charts import Chart
from .columns import latency_columns

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


@functools.cache
def _mpl() -> types.SimpleNamespace:
    """matplotlib's parts this module draws with, imported at the first drawing: the import
    takes ~0.4 s, which a command that draws nothing (``--help``, a ``run`` without
    ``--plots``, a grid point) should not pay."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import LogNorm
    from matplotlib.container import BarContainer
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.markers import MarkerStyle
    from matplotlib.path import Path as MplPath
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, MaxNLocator, NullFormatter

    stall = MarkerStyle(MplPath([(0.0, 0.0), (-0.5, 1.0), (0.5, 1.0), (0.0, 0.0)], closed=True))
    return types.SimpleNamespace(
        rc_context=matplotlib.rc_context, colormaps=matplotlib.colormaps, FigureCanvasAgg=FigureCanvasAgg,
        Figure=Figure, BarContainer=BarContainer, Line2D=Line2D, LogNorm=LogNorm, stall_marker=stall,
        FixedLocator=FixedLocator, FuncFormatter=FuncFormatter, LogLocator=LogLocator, MaxNLocator=MaxNLocator,
        NullFormatter=NullFormatter)

__all__ = [
    "REVIEW_ZOOM_START_S",
    "REVIEW_LINEAR_TOP_IOPS",
    "IOPS_LABEL",
    "TIME_LABEL",
    "VIEWS",
    "default_zoom_start",
    "nice_ceil",
    "consistency_figures",
    "consistency_plots",
    "consistency_plots_multi",
    "line_figure",
    "line_plot",
    "chart_figure",
    "chart_files",
    "bar_table_figure",
    "bar_table_plot",
    "latency_figure",
    "latency_plot",
    "save_figure",
    "figure_problems",
]

#: Where the reviews start the steady-state zoom (s), for runs of at least 2000 s.
REVIEW_ZOOM_START_S = 1400.0
REVIEW_RUN_S = 2000.0
#: Top of the reviews' linear steady-state axis (IOPS).
REVIEW_LINEAR_TOP_IOPS = 40_000.0
IOPS_LABEL = "IOPS (4 KiB)"
TIME_LABEL = "time (s)"
#: The three consistency views, in the order the reviews show them: name -> file suffix.
VIEWS = {"log": "_log", "steady_log": "_steady_log", "steady_linear": "_steady_linear"}

FIGSIZE_IN = (10.0, 4.5)
DPI = 100
#: Where zero-IOPS intervals are drawn on a log axis (IOPS).
ZERO_FLOOR_IOPS = 1.0
_DOT_AREA = 4.0  # marker area (pt^2): small dots like the reviews
#: A downward triangle whose tip is the point (it stands on a floor at the axis' bottom, inside
#: the axes); a marker path is scaled to half its size from the point, hence the area (pt^2).
_STALL_AREA = 88.0
_SINGLE_COLOR = "#1f5fa8"
#: Mantissas of the "nice" axis tops chosen by :func:`nice_ceil`.
NICE_MANTISSAS = (1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0)
_STALL_COLOR = "#d62728"
#: Latency statistics keep one colour each (also in report.html); directions differ by marker.
LATENCY_COLORS = {"p50": "#1f5fa8", "p99": "#d9822b", "p99.9": "#2ca02c", "max": "#d62728"}
#: How the statistics overlap readably (p99.9 often equals max or p99): (marker area factor,
#: hollow, z-order): max the largest ring at the bottom, p99.9 a size larger than p99 above it.
_LATENCY_STYLE = {"max": (3.0, True, 2.0), "p99.9": (2.2, False, 2.1), "p99": (1.0, False, 2.2),
                  "p50": (1.0, False, 2.3)}
_DIRECTION_MARKERS = {"write": "o", "read": "s", "trim": "^"}
_RASTERIZE_ABOVE = 20_000  # points per artist; keeps SVGs of long runs small
_RC = {
    "svg.hashsalt": "ssdlab",
    "svg.fonttype": "path",
    "font.size": 10,
    "axes.titlesize": 11,
    "path.simplify": True,
}


# --------------------------------------------------------------------------- helpers

def nice_ceil(x: float) -> float:
    """Smallest "nice" number (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8 x 10^k) >= x."""
    if not math.isfinite(x) or x <= 0:
        raise ValueError(f"nice_ceil needs a positive finite number, got {x}")
    exp = math.floor(math.log10(x))
    for m in NICE_MANTISSAS:
        v = m * 10.0**exp
        if v >= x * (1 - 1e-12):
            return float(round(v, max(0, 2 - exp)))
    return 10.0 ** (exp + 1)  # pragma: no cover - 10.0 above always matches


def _si(v: float, _pos: Any = None) -> str:
    """Tick label: 0, 1, 10, 500, 1K, 2.5K, 40K, 1M."""
    if v == 0:
        return "0"
    a = abs(v)
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "K")):
        if a >= div:
            return f"{v / div:g}{suffix}"
    return f"{v:g}"


def _decades(lo: float, hi: float) -> tuple[float, float]:
    """The whole decades enclosing [lo, hi] (positive), at least one decade."""
    a = 10.0 ** math.floor(math.log10(lo) + 1e-9)
    b = 10.0 ** math.ceil(math.log10(max(hi, lo)) - 1e-9)
    return a, (b if b > a else a * 10.0)


def _label_ends(axis: Any, lo: float, hi: float) -> None:
    """Linear ``axis`` (ax.xaxis / ax.yaxis) from ``lo`` to ``hi`` with ticks at "nice" steps and
    at both ends (a step tick closer than 40 % of a step to an end gives way to it)."""
    steps = _mpl().MaxNLocator(nbins=8, steps=[1, 2, 2.5, 5, 10]).tick_values(lo, hi)
    step = float(steps[1] - steps[0]) if len(steps) > 1 else hi - lo
    inner = [float(v) for v in steps if v - lo > 0.4 * step and hi - v > 0.4 * step]
    axis.set_major_locator(_mpl().FixedLocator([lo, *inner, hi]))
    axis.set_major_formatter(_mpl().FuncFormatter(_plain))


def label_range(ax: Axes, x: np.ndarray, y: np.ndarray, *, logy: bool, zeros_at: float | None = None) -> None:
    """Shows and labels the range of data ``x``, ``y`` on ``ax`` as every plot here does: x
    from its start (0 when the data start near it) to its end, labelled at both ends; y over
    whole decades (``logy``; values at or below 0 drawn at ``zeros_at`` count as that value)
    or from 0 (or a nice number below a negative value) to a nice top, labelled at both ends."""
    import numpy as np

    x = np.asarray(x, float)
    y = np.asarray(y, float)
    x, y = x[np.isfinite(x)], y[np.isfinite(y)]
    if len(x):
        lo, hi = _x_range(float(x.min()), float(x.max()))
        ax.set_xlim(lo, hi)
        _label_ends(ax.xaxis, lo, hi)
    if logy:
        pos = y[y > 0]
        lo = float(pos.min()) if len(pos) else 1.0
        if zeros_at is not None and (y <= 0).any():
            lo = min(lo, zeros_at)
        ax.set_ylim(*_decades(lo, float(pos.max()) if len(pos) else 10.0))
    else:
        lo = float(y.min()) if len(y) else 0.0
        bottom = -nice_ceil(-lo * 1.05) if lo < 0 else 0.0
        top = _linear_top(float(y.max()) if len(y) else 0.0)
        ax.set_ylim(bottom, top)
        _label_ends(ax.yaxis, bottom, top)


def _plain(v: float, _pos: Any = None) -> str:
    """Tick label without trailing zeros: 0, 0.5, 7.516, 1,400, 2,000."""
    if abs(v) >= 1000 and float(v).is_integer():
        return f"{v:,.0f}"
    return f"{v:.4g}"


def _linear_top(hi: float) -> float:
    """Top of a linear value axis: a nice number 5 % above the highest value (1 without data)."""
    return nice_ceil(hi * 1.05) if hi > 0 and math.isfinite(hi) else 1.0


def _x_range(lo: float, hi: float) -> tuple[float, float]:
    """The x range of a line plot: the data's, from 0 when the data start near it (GB written)."""
    if 0 < lo <= 0.05 * hi:
        lo = 0.0
    return (lo, hi) if hi > lo else (lo, lo + 1.0)


def _expect(fig: Figure, gids: Iterable[str]) -> Figure:
    """Notes the artists (by gid) ``fig`` must show, for :func:`figure_problems`."""
    fig.ssdlab_series = list(gids)  # type: ignore[attr-defined]
    return fig


def _as_series(obj: Any) -> Mapping[str, Any]:
    """Accept a series dict or anything with a ``.series`` dict (a PhaseResult)."""
    series = getattr(obj, "series", obj)
    if not isinstance(series, Mapping):
        raise TypeError(f"expected a series dict (column -> array) or a PhaseResult, got {type(obj).__name__}")
    return series


def _time_iops(label: str, series: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray, float]:
    """t_s, iops (float) and the interval length (s) of one run."""
    import numpy as np

    for col in ("t_s", "iops"):
        if col not in series:
            raise ValueError(f"run {label!r}: series has no {col!r} column (has: {', '.join(series)})")
    t = np.asarray(series["t_s"], dtype=float)
    y = np.asarray(series["iops"], dtype=float)
    if t.ndim != 1 or y.ndim != 1 or len(t) != len(y):
        raise ValueError(f"run {label!r}: t_s and iops must be 1-D and the same length ({t.shape} vs {y.shape})")
    d = np.diff(t)
    d = d[np.isfinite(d) & (d > 0)]
    interval = float(np.median(d)) if len(d) else 1.0
    return t, y, interval


def _run_end(t: np.ndarray, interval: float) -> float:
    """End of a run in seconds: last interval start + one interval."""
    import numpy as np

    finite = t[np.isfinite(t)]
    return float(finite.max() + interval) if len(finite) else 0.0


def default_zoom_start(run_s: float) -> float:
    """Start of the steady-state zoom: t=1400 s (the reviews) for runs of at least 2000 s,
    else 70% of the run."""
    return REVIEW_ZOOM_START_S if run_s >= REVIEW_RUN_S else 0.7 * run_s


def _interval_text(interval: float) -> str:
    return f"{interval:g} s"


def _new_figure(figsize: tuple[float, float] = FIGSIZE_IN) -> tuple[Figure, Axes]:
    fig = _mpl().Figure(figsize=figsize, dpi=DPI, layout="constrained")
    _mpl().FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    return fig, ax


def save_figure(fig: Figure, path: str | os.PathLike) -> Path:
    """Save ``fig`` to ``path`` (format from the suffix: .png or .svg), deterministically.

    Written to a temporary file in the same folder and renamed, like the other results.
    """
    from ssdlab.results import atomic_write

    path = Path(path)
    fmt = path.suffix.lstrip(".").lower()
    if fmt not in ("png", "svg"):
        raise ValueError(f"{path}: plots are written as .png or .svg, not {path.suffix or 'no suffix'!r}")
    if os.environ.get("SSDLAB_CHECK_PLOTS") == "1" and (problems := figure_problems(fig)):
        raise ValueError(f"{path}: the plot does not show its data in the labelled range: " + "; ".join(problems))
    metadata = {"Software": None} if fmt == "png" else {"Date": None, "Creator": None}
    path.parent.mkdir(parents=True, exist_ok=True)
    with _mpl().rc_context(_RC):
        atomic_write(path, lambda f: fig.savefig(f, format=fmt, dpi=DPI, metadata=metadata))
    # Constrained layout re-solves (and nudges positions) at every draw; freeze the layout of
    # the first save so that the PNG and SVG of a figure, and any later save, match exactly.
    if fig.get_layout_engine() is not None:
        fig.set_layout_engine("none")
    return path


def _drawn_points(ax: Axes) -> tuple[dict[str, int], list[np.ndarray], list[np.ndarray]]:
    """What ``ax`` shows in data coordinates: points per artist gid, and the x and y values of
    its lines, scatter dots and bars (a horizontal bar's extent along x only)."""
    import numpy as np

    counts: dict[str, int] = {}
    xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    artists = [(a.get_gid(), np.asarray(a.get_xydata(), dtype=float)) for a in ax.lines]
    artists += [(c.get_gid(), np.asarray(c.get_offsets(), dtype=float)) for c in ax.collections
                if c.get_offset_transform() == ax.transData]
    for gid, xy in artists:
        xy = xy.reshape(-1, 2)
        xy = xy[np.isfinite(xy).all(axis=1)]
        if gid:
            counts[gid] = counts.get(gid, 0) + len(xy)
        xs.append(xy[:, 0])
        ys.append(xy[:, 1])
    for bars in (c for c in ax.containers if isinstance(c, _mpl().BarContainer)):
        for r in bars.patches:
            if bars.orientation == "horizontal":
                xs.append(np.array([r.get_x(), r.get_x() + r.get_width()], dtype=float))
            else:
                ys.append(np.array([r.get_y(), r.get_y() + r.get_height()], dtype=float))
            if r.get_gid():
                counts[r.get_gid()] = counts.get(r.get_gid(), 0) + 1
    return counts, xs, ys


def _axis_problems(name: str, axis: Any, lim: tuple[float, float], values: list[np.ndarray]) -> list[str]:
    """The data of one axis outside its limits or beyond its outermost labelled ticks."""
    import numpy as np

    v = np.concatenate(values) if values else np.zeros(0)
    log = axis.get_scale() == "log"
    v = v[np.isfinite(v) & ((v > 0) if log else True)]
    if not len(v):
        return []
    lo, hi = sorted(lim)
    tol = (lambda x: abs(x) * 1e-9) if log else (lambda x: (hi - lo) * 1e-9)
    dmin, dmax = float(v.min()), float(v.max())
    out = []
    if dmin < lo - tol(lo) or dmax > hi + tol(hi):
        out.append(f"{name}: data {dmin:g} to {dmax:g} outside the axis {lo:g} to {hi:g}")
    locs = np.asarray(axis.get_majorticklocs(), dtype=float)
    locs = locs[(locs >= lo - tol(lo)) & (locs <= hi + tol(hi))]
    texts = axis.get_major_formatter().format_ticks(list(locs)) if len(locs) else []
    labelled = [float(x) for x, t in zip(locs, texts) if t.strip()]
    if len(labelled) < 2:
        return out + [f"{name}: {len(labelled)} tick labels"]
    if dmin < min(labelled) - tol(min(labelled)):
        out.append(f"{name}: lowest value {dmin:g} below the lowest label ({min(labelled):g})")
    if dmax > max(labelled) + tol(max(labelled)):
        out.append(f"{name}: highest value {dmax:g} above the highest label ({max(labelled):g})")
    return out


def figure_problems(fig: Figure) -> list[str]:
    """What keeps ``fig`` from showing its data in the range it labels: for every axes (heat
    maps and colour bars aside), data outside the axis limits or beyond the outermost tick
    labels of x or y (a chart must label the top and bottom of what it shows and the end of
    its run), and series the figure was built with (artist gids) that draw no point."""
    out = []
    counts: dict[str, int] = {}
    for i, ax in enumerate(fig.axes):
        if ax.images or getattr(ax, "_colorbar", None) is not None:
            continue
        c, xs, ys = _drawn_points(ax)
        for gid, n in c.items():
            counts[gid] = counts.get(gid, 0) + n
        where = f"axes {i + 1}" if len(fig.axes) > 1 else ""
        out += _axis_problems(f"{where} x".strip(), ax.xaxis, ax.get_xlim(), xs)
        out += _axis_problems(f"{where} y".strip(), ax.yaxis, ax.get_ylim(), ys)
    out += [f"series {gid!r} draws no point" for gid in getattr(fig, "ssdlab_series", []) if not counts.get(gid)]
    return out


def _save_all(fig: Figure, base: Path, formats: Sequence[str]) -> list[Path]:
    return [save_figure(fig, base.with_name(f"{base.name}.{fmt}")) for fmt in formats]


def _paths_for(out_path: str | os.PathLike, formats: Sequence[str] | None) -> list[Path]:
    p = Path(out_path)
    if formats is None:
        if p.suffix.lower() not in (".png", ".svg"):
            raise ValueError(f"{p}: give a .png or .svg file name, or formats=('png', 'svg')")
        return [p]
    base = p.with_suffix("") if p.suffix.lower() in (".png", ".svg") else p
    return [base.with_name(f"{base.name}.{fmt}") for fmt in formats]


# --------------------------------------------------------------------------- consistency

def _scatter_run(
    ax: Axes,
    label: str,
    t: np.ndarray,
    y: np.ndarray,
    *,
    logy: bool,
    floor: float,
    color: str,
    stall_color: str,
    alpha: float,
    window: tuple[float, float],
    top: float = math.inf,
) -> int:
    """Draw one run's dots (and its zero-IOPS marks); return the number of stalls drawn. Dots
    above ``top`` (the linear view's 40K) are left out: the plot counts them in a note."""
    import numpy as np

    lo, hi = window
    in_win = np.isfinite(t) & (t >= lo) & (t < hi) & np.isfinite(y)
    pos = in_win & (y > 0) & (y <= top)
    zero = in_win & (y <= 0)
    n = int(pos.sum())
    ax.scatter(
        t[pos], y[pos], s=_DOT_AREA, color=color, marker="o", linewidths=0, alpha=alpha,
        label=label, gid=f"iops:{label}", rasterized=n > _RASTERIZE_ABOVE, zorder=2,
    )
    n_zero = int(zero.sum())
    if n_zero:
        ax.scatter(
            t[zero], np.full(n_zero, floor if logy else 0.0), s=_STALL_AREA, marker=_mpl().stall_marker,
            color=stall_color, edgecolors="black", linewidths=0.4, gid=f"stalls:{label}",
            label=f"_stalls:{label}",  # legend gets one shared entry, see _legend
            clip_on=False, zorder=3, rasterized=n_zero > _RASTERIZE_ABOVE,
        )
    return n_zero


def _legend(ax: Axes, n_stalls: int, *, logy: bool, floor: float, multi: bool, stall_color: str) -> None:
    handles, labels = ax.get_legend_handles_labels()
    if n_stalls:
        where = f"drawn at {_si(floor)}" if logy else "drawn at 0"
        handles.append(_mpl().Line2D(
            [], [], linestyle="none", marker=_mpl().stall_marker, markersize=6,
            markerfacecolor="0.6" if multi else stall_color, markeredgecolor="black", markeredgewidth=0.4,
        ))
        labels.append(f"0 IOPS (stall), {where}: {n_stalls} intervals")
    if handles:
        # Below the axes, never over the data (the reviews' plots are dense up to the top).
        ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncols=len(handles),
                  markerscale=2.0, fontsize=8, frameon=False, scatterpoints=1, borderaxespad=0.0)


def consistency_figures(
    runs: Mapping[str, Any],
    *,
    title: str,
    zoom_start_s: float | None = None,
    ylabel: str = IOPS_LABEL,
    linear_top_iops: float | None = None,
    log_top_iops: float | None = None,
) -> dict[str, Figure]:
    """Build the three review scatter plots for one or more runs, without saving them.

    ``runs`` maps a label ("default", "25% spare area"...) to a series (dict with ``t_s`` and
    ``iops`` columns) or a PhaseResult. Returns ``{"log": fig, "steady_log": fig,
    "steady_linear": fig}`` (see :data:`VIEWS`); each figure has one Axes whose artists carry
    gids ``iops:<label>`` and, when the run has zero-IOPS intervals in view,
    ``stalls:<label>``.

    ``zoom_start_s``: start of the steady-state zoom; default :func:`default_zoom_start` of
    the longest run. ``linear_top_iops``: top of the linear axis; default 40,000 IOPS unless
    the zoomed data's 99.5th percentile (the highest over the runs) exceeds it, then that
    value rounded up with :func:`nice_ceil`. ``log_top_iops``: top of the log axes; default
    the decade above the highest value (at least 100K). Give both to put several drives on
    the same scale, as the reviews do.

    Intervals with IOPS <= 0 are stalls: drawn at the floor (y=1 IOPS, or a decade below
    the smallest positive value) on log axes and at 0 on the linear one, with their own
    marker and a legend entry giving their count. NaN intervals (not measured) are not drawn.
    """
    import numpy as np

    if not runs:
        raise ValueError("consistency plots need at least one run")
    data = {str(label): _time_iops(str(label), _as_series(s)) for label, s in runs.items()}
    run_end = max(_run_end(t, dt) for t, _, dt in data.values())
    if run_end <= 0:
        raise ValueError("consistency plots: the runs have no intervals")
    if zoom_start_s is None:
        zoom_start_s = default_zoom_start(run_end)
    zoom_start_s = float(zoom_start_s)
    if not 0 <= zoom_start_s < run_end:
        raise ValueError(f"zoom_start_s={zoom_start_s:g} s is outside the run (0 to {run_end:g} s)")
    multi = len(data) > 1
    intervals = sorted({dt for _, _, dt in data.values()})
    dots = f"IOPS per {_interval_text(intervals[0])} interval" if len(intervals) == 1 else "IOPS per interval"

    # y ranges
    all_pos = np.concatenate([y[np.isfinite(y) & (y > 0)] for _, y, _ in data.values()])
    min_pos = float(all_pos.min()) if len(all_pos) else ZERO_FLOOR_IOPS
    floor = ZERO_FLOOR_IOPS if min_pos >= ZERO_FLOOR_IOPS else 10.0 ** (math.floor(math.log10(min_pos)) - 1)
    if log_top_iops is None:
        peak = float(all_pos.max()) if len(all_pos) else 1.0
        log_top_iops = max(1e5, 10.0 ** math.ceil(math.log10(peak * 1.05)))
    if linear_top_iops is None:
        p995 = 0.0
        for t, y, _ in data.values():
            z = y[np.isfinite(t) & (t >= zoom_start_s) & np.isfinite(y)]
            if len(z):
                p995 = max(p995, float(np.percentile(z, 99.5)))
        linear_top_iops = REVIEW_LINEAR_TOP_IOPS if p995 <= REVIEW_LINEAR_TOP_IOPS else nice_ceil(p995)

    colors = _mpl().colormaps["tab10"].colors
    figs: dict[str, Figure] = {}
    views = {
        "log": ((0.0, run_end), True, "whole run, log scale"),
        "steady_log": ((zoom_start_s, run_end), True, f"from t={zoom_start_s:g} s (the reviews' zoom), log scale"),
        "steady_linear": ((zoom_start_s, run_end), False,
                          f"from t={zoom_start_s:g} s (the reviews' zoom), linear scale"),
    }
    with _mpl().rc_context(_RC):
        for view, (window, logy, subtitle) in views.items():
            fig, ax = _new_figure()
            n_stalls = 0
            for i, (label, (t, y, _)) in enumerate(data.items()):
                color = colors[i % len(colors)] if multi else _SINGLE_COLOR
                n_stalls += _scatter_run(
                    ax, label if multi else dots, t, y, logy=logy, floor=floor, color=color,
                    stall_color=color if multi else _STALL_COLOR, alpha=0.75 if multi else 1.0,
                    window=window, top=math.inf if logy else linear_top_iops,
                )
            ax.set_xlim(*window)
            _label_ends(ax.xaxis, *window)
            if logy:
                ax.set_yscale("log")
                ax.set_ylim(floor, log_top_iops)
                ax.yaxis.set_major_locator(_mpl().LogLocator(base=10))
                ax.yaxis.set_minor_locator(_mpl().LogLocator(base=10, subs=np.arange(2, 10)))
                ax.yaxis.set_minor_formatter(_mpl().NullFormatter())
            else:
                ax.set_ylim(0.0, linear_top_iops)
                _label_ends(ax.yaxis, 0.0, linear_top_iops)
                above = sum(
                    int(np.sum((t >= window[0]) & (t < window[1]) & (y > linear_top_iops)))
                    for t, y, _ in data.values()
                )
                if above:
                    ax.text(0.005, 0.985, f"{above} intervals above {_si(linear_top_iops)} not shown",
                            transform=ax.transAxes, ha="left", va="top", fontsize=8, color="0.35",
                            gid="above_top")
            ax.yaxis.set_major_formatter(_mpl().FuncFormatter(_si))
            ax.grid(True, which="major", color="0.85", linewidth=0.7)
            if logy:
                ax.grid(True, which="minor", axis="y", color="0.94", linewidth=0.5)
            ax.set_axisbelow(True)
            ax.set_xlabel(TIME_LABEL)
            ax.set_ylabel(ylabel)
            ax.set_title(title, loc="left")
            ax.set_title(subtitle, loc="right", fontsize=9, color="0.3")
            _legend(ax, n_stalls, logy=logy, floor=floor, multi=multi, stall_color=_STALL_COLOR)
            shown = [label for label, (t, y, _) in data.items()
                     if np.any(np.isfinite(t) & (t >= window[0]) & (t < window[1]) & (y > 0)
                               & (y <= (math.inf if logy else linear_top_iops)))]
            figs[view] = _expect(fig, [f"iops:{label if multi else dots}" for label in shown])
    return figs


def consistency_plots_multi(
    out_dir: str | os.PathLike,
    runs: Mapping[str, Any],
    *,
    title: str,
    zoom_start_s: float | None = None,
    stem: str = "consistency",
    formats: Sequence[str] = ("png", "svg"),
    ylabel: str = IOPS_LABEL,
    linear_top_iops: float | None = None,
    log_top_iops: float | None = None,
) -> list[Path]:
    """Write the three review scatter plots with several runs overlaid (distinct colours,
    legend by label), e.g. ``{"default": s1, "25% spare area": s2}``.

    Files: ``{stem}_log``, ``{stem}_steady_log``, ``{stem}_steady_linear``, each in every
    format of ``formats``. Returns the paths written, in that order. See
    :func:`consistency_figures` for the options.
    """
    figs = consistency_figures(
        runs, title=title, zoom_start_s=zoom_start_s, ylabel=ylabel,
        linear_top_iops=linear_top_iops, log_top_iops=log_top_iops,
    )
    out = Path(out_dir)
    paths: list[Path] = []
    for view, suffix in VIEWS.items():
        paths += _save_all(figs[view], out / f"{stem}{suffix}", formats)
    return paths


def consistency_plots(
    out_dir: str | os.PathLike,
    series: Any,
    *,
    title: str,
    zoom_start_s: float | None = None,
    stem: str = "consistency",
    formats: Sequence[str] = ("png", "svg"),
    ylabel: str = IOPS_LABEL,
    linear_top_iops: float | None = None,
    log_top_iops: float | None = None,
) -> list[Path]:
    """Write the three review scatter plots of one run (a series dict or a PhaseResult):
    ``{stem}_log`` (whole run, log IOPS), ``{stem}_steady_log`` (zoom from
    ``zoom_start_s``, log), ``{stem}_steady_linear`` (same zoom, linear, top 40K IOPS unless
    the data needs more). Returns the paths written (.png then .svg for each view)."""
    return consistency_plots_multi(
        out_dir, {"run": series}, title=title, zoom_start_s=zoom_start_s, stem=stem,
        formats=formats, ylabel=ylabel, linear_top_iops=linear_top_iops, log_top_iops=log_top_iops,
    )


# --------------------------------------------------------------------------- lines and bars

def line_figure(
    x: Any,
    ys: Mapping[str, Any],
    xlabel: str,
    ylabel: str,
    title: str,
    logy: bool = False,
) -> Figure:
    """The figure :func:`line_plot` saves (for tests and for callers that add to it)."""
    import numpy as np

    x = np.asarray(x, dtype=float)
    if x.ndim != 1:
        raise ValueError(f"line plot {title!r}: x must be 1-D, got shape {x.shape}")
    if not ys:
        raise ValueError(f"line plot {title!r}: nothing to plot (ys is empty)")
    cols: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for label, y in ys.items():
        xy = x
        if isinstance(y, tuple):  # (x, y) of a series on its own x (a burst after the fill)
            xy, y = np.asarray(y[0], dtype=float), y[1]
        y = np.asarray(y, dtype=float)
        if y.shape != xy.shape:
            raise ValueError(f"line plot {title!r}: {label!r} has shape {y.shape}, x has {xy.shape}")
        cols[str(label)] = (xy, y)
    colors = _mpl().colormaps["tab10"].colors
    every_y = np.concatenate([y[np.isfinite(y) & np.isfinite(xy)] for xy, y in cols.values()])
    every_x = np.concatenate([xy[np.isfinite(xy)] for xy, _ in cols.values()])
    with _mpl().rc_context(_RC):
        fig, ax = _new_figure()
        n_nonpos = 0
        floor = ZERO_FLOOR_IOPS
        pos = every_y[every_y > 0]
        if logy and len(pos):
            floor = _decades(float(pos.min()), float(pos.max()))[0]
        for i, (label, (xy, y)) in enumerate(cols.items()):
            color = colors[i % len(colors)]
            shown = np.where(y > 0, y, np.nan) if logy else y
            ax.plot(xy, shown, color=color, marker="o" if len(xy) <= 60 else None, markersize=3, linewidth=1.3,
                    label=label, gid=f"line:{label}")
            if logy:
                bad = np.isfinite(y) & (y <= 0)
                if bad.any():
                    n_nonpos += int(bad.sum())
                    ax.scatter(xy[bad], np.full(int(bad.sum()), floor), marker=_mpl().stall_marker, s=_STALL_AREA,
                               color=color, edgecolors="black", linewidths=0.4, clip_on=False, zorder=3,
                               gid=f"zeros:{label}")
        if logy:
            ax.set_yscale("log")
        # zeros are drawn at the floor, the lowest decade of the positive values
        label_range(ax, every_x, every_y, logy=logy)
        ax.yaxis.set_major_formatter(_mpl().FuncFormatter(_si))
        ax.grid(True, which="major", color="0.85", linewidth=0.7)
        ax.set_axisbelow(True)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title, loc="left")
        handles, labels = ax.get_legend_handles_labels()
        if n_nonpos:
            handles.append(_mpl().Line2D([], [], linestyle="none", marker=_mpl().stall_marker, markersize=12,
                                         markerfacecolor="0.6", markeredgecolor="black", markeredgewidth=0.4))
            labels.append(f"0 or less, drawn at {_si(floor)}: {n_nonpos} points")
        if len(cols) > 1 or n_nonpos:
            ax.legend(handles, labels, loc="best", fontsize=8, framealpha=0.85)
    return _expect(fig, [f"line:{label}" for label, (xy, y) in cols.items()
                         if np.any(np.isfinite(xy) & np.isfinite(y) & ((y > 0) if logy else True))])


def line_plot(
    out_path: str | os.PathLike,
    x: Any,
    ys: Mapping[str, Any],
    xlabel: str,
    ylabel: str,
    title: str,
    logy: bool = False,
    *,
    formats: Sequence[str] | None = None,
) -> list[Path]:
    """Lines of y against x, one per entry of ``ys`` (label -> array as long as ``x``).

    For sweeps (MB/s vs LBA position) and traces (IOPS per 100k commands). An entry may
    also be an ``(x, y)`` pair: a series on its own x (the burst after a fill, against its
    own GB written). A linear y axis starts at 0 (below it only for negative values); with
    ``logy=True`` it spans whole decades and zero or negative values are drawn at its floor
    with their own marker instead of vanishing. The file format comes from ``out_path``'s suffix (.png/.svg), or
    give ``formats=("png", "svg")`` to write both next to each other. Returns the paths.
    """
    fig = line_figure(x, ys, xlabel, ylabel, title, logy)
    return [save_figure(fig, p) for p in _paths_for(out_path, formats)]


def chart_figure(chart: Chart, series: Mapping[str, Mapping[str, Any]]) -> Figure:
    """The figure of ``chart`` (:class:`ssdlab.charts.Chart`, the declaration the report
    draws too) from ``series`` (results series by name): a line per declared line, those of
    another series than the chart's against that series' own x column."""
    import numpy as np

    ys: dict[str, Any] = {}
    for ln in chart.lines:
        name = ln.series or chart.series
        y = np.asarray(series[name][ln.y], dtype=float) * ln.scale
        ys[ln.label] = y if name == chart.series else (np.asarray(series[name][chart.x], dtype=float), y)
    return line_figure(series[chart.series][chart.x], ys, chart.xlabel, chart.ylabel, chart.title, chart.logy)


def chart_files(folder: str | os.PathLike, charts: Iterable[Chart],
                series: Mapping[str, Mapping[str, Any]]) -> list[Path]:
    """The PNG and SVG of each chart that names a ``file`` (:func:`chart_figure`), in
    ``folder``. Returns the paths."""
    out: list[Path] = []
    for c in charts:
        if c.file is not None:
            fig = chart_figure(c, series)
            out += [save_figure(fig, p) for p in _paths_for(Path(folder) / c.file, ("png", "svg"))]
    return out


def _value_text(v: float) -> str:
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def bar_table_figure(
    rows: Mapping[str, Any],
    ylabel: str,
    title: str,
    *,
    highlight: str | Iterable[str] | None = None,
) -> Figure:
    """The figure :func:`bar_table_plot` saves."""
    import numpy as np

    if not rows:
        raise ValueError(f"bar table {title!r}: no rows")
    labels = [str(k) for k in rows]
    values = np.array([np.nan if v is None else float(v) for v in rows.values()], dtype=float)
    marked = {highlight} if isinstance(highlight, str) else set(highlight or ())
    with _mpl().rc_context(_RC):
        fig, ax = _new_figure((FIGSIZE_IN[0], max(2.0, 0.42 * len(labels) + 1.2)))
        ypos = np.arange(len(labels))
        colors = ["#d9822b" if lab in marked else _SINGLE_COLOR for lab in labels]
        shown = np.where(np.isfinite(values), values, 0.0)
        bars = ax.barh(ypos, shown, color=colors, height=0.65, gid="bars")
        ax.set_yticks(ypos, labels)
        ax.invert_yaxis()  # first row on top, like a table
        finite = values[np.isfinite(values)]
        vmax = float(np.abs(finite).max()) if len(finite) else 1.0
        vmax = vmax or 1.0
        for bar, v in zip(bars, values):
            text = _value_text(v) if np.isfinite(v) else "n/a"
            x = bar.get_width() if np.isfinite(v) else 0.0
            ax.text(x + 0.01 * vmax * (1 if x >= 0 else -1), bar.get_y() + bar.get_height() / 2, text,
                    va="center", ha="left" if x >= 0 else "right", fontsize=9)
        lo = -nice_ceil(-float(finite.min()) * 1.15) if len(finite) and finite.min() < 0 else 0.0
        hi = nice_ceil(vmax * 1.15) if (len(finite) and finite.max() > 0) else 1.0
        ax.set_xlim(lo, hi)
        _label_ends(ax.xaxis, lo, hi)
        ax.xaxis.set_major_formatter(_mpl().FuncFormatter(_si))
        ax.grid(True, axis="x", color="0.85", linewidth=0.7)
        ax.set_axisbelow(True)
        ax.set_xlabel(ylabel)
        ax.set_title(title, loc="left")
    return _expect(fig, ["bars"] if len(finite) else [])


def bar_table_plot(
    out_path: str | os.PathLike,
    rows: Mapping[str, Any],
    ylabel: str,
    title: str,
    *,
    highlight: str | Iterable[str] | None = None,
    formats: Sequence[str] | None = None,
) -> list[Path]:
    """Horizontal bars, one per row (label -> value) in the given order, top to bottom, with
    the value printed at the end of each bar (``None``/NaN -> "n/a"), like the reviews'
    bench tables (e.g. used vs new). ``ylabel`` names the value axis (with its unit);
    ``highlight`` colours the named rows. Format from ``out_path``'s suffix, or ``formats``.
    """
    fig = bar_table_figure(rows, ylabel, title, highlight=highlight)
    return [save_figure(fig, p) for p in _paths_for(out_path, formats)]


# --------------------------------------------------------------------------- latency

def _us_text(v: float, _pos: Any = None) -> str:
    """Latency tick label from microseconds: 50 µs, 1 ms, 2.5 ms, 1 s."""
    if v <= 0:
        return "0"
    for div, unit in ((1e6, "s"), (1e3, "ms")):
        if v >= div:
            return f"{v / div:g} {unit}"
    return f"{v:g} µs"


def latency_figure(series: Any, *, title: str) -> Figure:
    """Per-interval latency against time on a log axis: every ``{direction}_lat_{stat}_us``
    column of ``series`` (a series dict or a PhaseResult) that holds data, p50 / p99 / p99.9 /
    max in fixed colours, one marker per direction; max as the largest hollow marker under
    p99.9, p99.9 a size larger than p99 under p99, so that each shows where they coincide.
    The y axis spans the whole decades around the data. Intervals in which nothing completed
    (NaN) are not drawn. Artists carry gids ``latency:<column>``. Raises ValueError without
    latency columns."""
    import numpy as np

    series = _as_series(series)
    cols = latency_columns(series)
    if "t_s" not in series or not cols:
        raise ValueError(f"latency plot {title!r}: the series has no t_s or no per-interval latency columns "
                         f"(has: {', '.join(series)})")
    t = np.asarray(series["t_s"], dtype=float)
    d = np.diff(t)
    d = d[np.isfinite(d) & (d > 0)]
    interval = float(np.median(d)) if len(d) else 1.0
    several = len({d for _, d, _ in cols}) > 1
    drawn, lo, hi = [], math.inf, 0.0
    with _mpl().rc_context(_RC):
        fig, ax = _new_figure()
        for col, direction, stat in cols:
            y = np.asarray(series[col], dtype=float)
            ok = np.isfinite(t) & np.isfinite(y) & (y > 0)
            n = int(ok.sum())
            if n:
                drawn.append(f"latency:{col}")
                lo, hi = min(lo, float(y[ok].min())), max(hi, float(y[ok].max()))
            area, hollow, z = _LATENCY_STYLE.get(stat, (1.0, False, 2.0))
            color = LATENCY_COLORS.get(stat, "0.4")
            ax.scatter(t[ok], y[ok], s=_DOT_AREA * area, marker=_DIRECTION_MARKERS.get(direction, "o"),
                       facecolors="none" if hollow else color, edgecolors=color, linewidths=0.8 if hollow else 0,
                       label=f"{direction} {stat}" if several else stat, gid=f"latency:{col}",
                       rasterized=n > _RASTERIZE_ABOVE, zorder=z)
        end = max(_run_end(t, interval), interval)
        ax.set_xlim(0.0, end)
        _label_ends(ax.xaxis, 0.0, end)
        ax.set_yscale("log")
        if drawn:
            ax.set_ylim(*_decades(lo, hi))
        ax.yaxis.set_major_locator(_mpl().LogLocator(base=10))
        ax.yaxis.set_minor_locator(_mpl().LogLocator(base=10, subs=np.arange(2, 10)))
        ax.yaxis.set_minor_formatter(_mpl().NullFormatter())
        ax.yaxis.set_major_formatter(_mpl().FuncFormatter(_us_text))
        ax.grid(True, which="major", color="0.85", linewidth=0.7)
        ax.grid(True, which="minor", axis="y", color="0.94", linewidth=0.5)
        ax.set_axisbelow(True)
        ax.set_xlabel(TIME_LABEL)
        ax.set_ylabel("completion latency per interval")
        ax.set_title(title, loc="left")
        ax.set_title("log scale", loc="right", fontsize=9, color="0.3")
        handles, labels = ax.get_legend_handles_labels()
        ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncols=len(handles),
                  markerscale=2.0, fontsize=8, frameon=False, scatterpoints=1, borderaxespad=0.0)
    return _expect(fig, drawn)


def latency_plot(out_path: str | os.PathLike, series: Any, *, title: str,
                 formats: Sequence[str] | None = None) -> list[Path]:
    """Writes :func:`latency_figure` (format from ``out_path``'s suffix, or ``formats`` such as
    ``("png", "svg")``). Returns the paths written."""
    fig = latency_figure(series, title=title)
    return [save_figure(fig, p) for p in _paths_for(out_path, formats)]


# --------------------------------------------------------------------------- heat map (PTS IOPS matrix)

def heatmap_plot(
    out_path: str | os.PathLike,
    values: Any,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    title: str,
    unit: str,
    *,
    formats: Sequence[str] | None = None,
) -> list[Path]:
    """A matrix of values (rows x columns, e.g. block sizes x R/W mixes) as coloured cells on a
    log colour scale, each cell labelled with its value; NaN cells stay blank. Returns the paths."""
    import numpy as np

    v = np.asarray(values, dtype=float)
    fig, ax = _new_figure((1.1 * len(col_labels) + 2.5, 0.55 * len(row_labels) + 1.8))
    pos = v[np.isfinite(v) & (v > 0)]
    norm = _mpl().LogNorm(vmin=float(pos.min()), vmax=float(pos.max())) if pos.size and pos.min() < pos.max() else None
    im = ax.imshow(np.where(v > 0, v, np.nan), aspect="auto", cmap="viridis", norm=norm)
    ax.set_xticks(range(len(col_labels)), labels=list(col_labels))
    ax.set_yticks(range(len(row_labels)), labels=list(row_labels))
    lo = math.sqrt(float(pos.min()) * float(pos.max())) if pos.size else 0.0
    for i in range(v.shape[0]):
        for j in range(v.shape[1]):
            if np.isfinite(v[i, j]):
                ax.text(j, i, _value_text(v[i, j]), ha="center", va="center", fontsize=7,
                        color="white" if v[i, j] < lo else "black")
    ax.set_title(title)
    fig.colorbar(im, ax=ax, label=unit)
    return [save_figure(fig, p) for p in _paths_for(out_path, formats)]
