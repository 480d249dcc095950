"""Parameter grids: many simulations (e.g. spare area x GC policy x workload x profile) in
one go, on a local process pool or on a dask.distributed cluster, with one table and
comparison plots.

It sits above the test procedures, as :mod:`ssdlab.procedures.review` does: it runs them
(:mod:`~ssdlab.procedures.consistency`, :mod:`~ssdlab.procedures.used`) on targets and
writes results, plots and one summary, and imports only what lies below (procedures,
targets, profiles, results, plots, units), never the command line: ``ssdlab grid``
(:mod:`ssdlab.commands.grid`) calls it.

GRID.toml
---------
::

    [grid]
    test = "consistency"          # or "used"
    title = "spare area vs GC policy"   # optional, for the table and the plots
    target = "sim:default"        # default; sim:PROFILE (built-in name or .toml path)
    set = ["blocks_per_plane=64", "user_capacity_bytes=7GiB"]   # profile overrides, every point
    duration_s = 600              # run options common to every point (defaults: the test's)
    qd = 32
    bs_bytes = 4096               # or "4KiB"
    seed = 1

    [axes]                        # each a list of values; the grid is their Cartesian product
    span_pct = [100, 75]          # run option
    gc_policy = ["greedy", "fifo"]    # anything that is not a run option is a profile key
    profile = ["default", "stalling"] # target sim:<profile> (replaces the target's profile)

Run options (in ``[grid]`` and as axes): ``span_pct``, ``duration_s``, ``qd``, ``bs_bytes``,
``seed``, ``profile``; the ``used`` test also takes ``dirty_spans`` and ``dirty_bytes``.
Every other axis name is a simulator profile key (``ssdlab profiles --keys``), applied as
``--set KEY=VALUE`` after the ``set`` list. Relative profile paths are taken relative to
GRID.toml. Points are numbered in Cartesian-product order: axes in the order the file lists
them, the last one varying fastest. Every point uses the seed of the grid (or of its
``seed`` axis), so the same grid gives the same numbers, run after run, whatever runs it.

Mistakes are found before anything runs (unknown keys, empty or non-list axes, bad
values, profile keys with a real target, profiles that do not resolve...) and reported as
:class:`~ssdlab.errors.UserError` naming GRID.toml and the key.

Running
-------
Each point runs :func:`run_point` (a top-level, picklable function) in a worker: it opens the
target, runs the test into its own results folder ``OUT/points/<index>_<axis=value_...>/``
(the usual summary.json, series and plots) and returns one flat row: ``point``, the axis
values, the test's main metrics, ``complete``, ``wall_s`` and ``dir``.

* local (default): a :class:`concurrent.futures.ProcessPoolExecutor` of ``workers`` processes
  (default: the CPU count; each simulated drive needs memory in proportion to its capacity,
  so fewer workers for big drives); ``workers=1`` runs the points one after another in this
  process. Real targets (fio) always run one point at a time, here.
* dask: given a scheduler address (``tcp://HOST:PORT``), ``distributed.Client(address)`` and
  ``client.map(run_point, points, pure=False)``. The workers write the point folders
  themselves, so OUT must be on storage they share with this machine (same path); a point
  whose folder is not visible here is reported. The workers need the same ssdlab version
  (checked when connecting). Install with ``pip install 'ssdlab[cluster]'``.

Both give identical tables (apart from ``wall_s``): rows are sorted by point index.

Ctrl-C (or SIGTERM) cancels the points not started; local points running are interrupted
(their folders keep what they measured, marked incomplete); points on a dask cluster that
already run are abandoned. Finished rows are kept and the grid's summary says
``"complete": false``.

Output in OUT
-------------
``grid.parquet`` and ``grid.csv`` (one row per finished point), ``summary.json``
(``"test": "grid"``, the grid, the backend, run metadata, the table as a ``tables`` entry,
failed points), comparison plots ``grid_<metric>_vs_<axis>.png/.svg`` for every numeric
axis (one line per combination of the other axes; the median, min and max over them when
there are more than :data:`MAX_LINES`), ``grid_<metric>.png/.svg`` bars per point (grids of
up to :data:`MAX_BARS` points) and ``points/``.
"""
from __future__ import annotations

import csv
import functools
import io
import itertools
import math
import os
import re
import signal
import sys
import threading
import time
import tomllib
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .errors import UserError
from . import targets
from .targets import kind_of
from .units import parse_size, round_to

__all__ = [
    "TESTS", "RUN_OPTIONS", "metrics", "MAX_LINES", "MAX_BARS",
    "Axis", "GridSpec", "load_grid", "parse_grid", "make_points", "run_point", "run_grid",
    "table_columns", "write_table", "read_table",
]

#: Tests a grid can run.
TESTS = ("consistency", "used")
#: Run options per test (besides ``profile``), with the kind of value each takes.
RUN_OPTIONS: dict[str, dict[str, str]] = {
    "consistency": {"span_pct": "pct", "duration_s": "pos", "qd": "count", "bs_bytes": "bs", "seed": "seed"},
    "used": {"span_pct": "pct", "duration_s": "pos", "qd": "count", "bs_bytes": "bs", "seed": "seed",
             "dirty_spans": "nonneg", "dirty_bytes": "bytes"},
}
#: ``[grid]`` keys that are not run options.
GRID_KEYS = ("test", "title", "target", "profile", "set", "purge")
#: Columns every grid adds after its test's metrics: the span, the profile's spare area, and
#: ``effective_spare_fraction``, which counts the part of the drive outside the tested span as
#: spare too (1 - span / NAND bytes, computed: see :func:`_metric`).
_DRIVE_METRICS: dict[str, tuple[str, ...]] = {
    "span_bytes": ("span_bytes",), "spare_fraction": ("geometry", "spare_fraction"), "effective_spare_fraction": (),
}
#: Metrics drawn against each numeric axis (labelled as their test declares them).
PLOT_METRICS: dict[str, tuple[str, ...]] = {
    "consistency": ("iops_median", "write_amplification"),
    "used": ("used_mbps", "used_vs_new_pct"),
}
#: Metrics shown in the summary's ``tables`` entry (rounded to the decimals their test declares).
TABLE_METRICS: dict[str, tuple[str, ...]] = {
    "consistency": ("iops_median", "iops_p1", "iops_min", "zero_iops_seconds", "steady_state_onset_s",
                    "write_amplification"),
    "used": ("new_mbps", "used_mbps", "trimmed_mbps", "used_vs_new_pct"),
}


@functools.cache
def _declared(test: str) -> dict:
    """The metrics ``test`` declares (:class:`ssdlab.charts.Metric`), by key (a
    grid's test is the procedure module of its name: only that one is imported)."""
    from .procedures.declare import tests

    return {m.key: m for m in tests(only=test)[0].metrics}


def metrics(test: str) -> dict[str, tuple[str, ...]]:
    """Metrics in the table: column -> path in the point's summary.json (``()``: computed),
    the test's declared metrics then the drive's."""
    return {**{k: m.where for k, m in _declared(test).items()}, **_DRIVE_METRICS}


def _metric_label(test: str, key: str) -> str:
    """A metric's label with its unit, as its test declares it: "time at zero IOPS (s)"."""
    from .report import unit_suffix

    m = _declared(test)[key]
    return m.label + unit_suffix(m.label, m.unit)


#: Most lines in a comparison plot; beyond, the median/min/max over the other axes.
MAX_LINES = 8
#: Most points for the per-point bar plots.
MAX_BARS = 40
_RESERVED = ("point", "complete", "wall_s", "dir")


# --------------------------------------------------------------------------- the grid file

@dataclass(frozen=True)
class Axis:
    name: str
    #: "option" (a run option), "profile" (the sim: profile) or "key" (a profile key).
    kind: str
    #: The values as given in GRID.toml (profile paths made absolute).
    values: tuple


@dataclass
class GridSpec:
    path: str
    test: str
    title: str
    target: str
    #: ``KEY=VALUE`` overrides applied to every point.
    sets: tuple[str, ...]
    #: Run options common to every point (the test's defaults filled in).
    options: dict
    axes: tuple[Axis, ...]
    purge_method: str = "blkdiscard"
    #: Resolved value of profile-key axes (axis -> given value -> resolved value), numbers for plots.
    resolved: dict = field(default_factory=dict)

    @property
    def real(self) -> bool:
        """Whether the target is a device of this machine (one point at a time, through fio)."""
        return kind_of(self.target).device

    @property
    def n_points(self) -> int:
        return math.prod(len(a.values) for a in self.axes)

    def to_json(self) -> dict:
        return {"file": self.path, "test": self.test, "title": self.title, "target": self.target,
                "set": list(self.sets), "options": dict(self.options),
                "axes": [{"name": a.name, "kind": a.kind, "values": list(a.values)} for a in self.axes],
                "points": self.n_points}


def _profiled() -> str:
    """The kinds whose targets name a drive profile, as the help writes them."""
    return " or ".join(k.usage for k in targets.KINDS if k.profile)


def load_grid(path: str | os.PathLike) -> GridSpec:
    """Reads and validates GRID.toml (see the module docstring); raises UserError."""
    p = Path(path)
    try:
        with open(p, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise UserError(f"{p}: no such grid file") from None
    except IsADirectoryError:
        raise UserError(f"{p}: is a folder, not a grid file") from None
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{p}: not valid TOML: {e}") from None
    except RecursionError:
        from .profiles import too_deep

        raise UserError(too_deep(p)) from None
    return parse_grid(data, p)


def _bad(where: str, key: str, what: str) -> UserError:
    return UserError(f"{where}: `{key}`: {what}")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _option_value(where: str, key: str, kind: str, v: Any):
    """A run option's value, checked (and sizes parsed)."""
    if kind == "pct":
        if not _is_number(v) or not 0 < v <= 100:
            raise _bad(where, key, f"{v!r}: expected a percentage of the capacity in (0, 100]")
        return v
    if kind == "pos":
        if not _is_number(v) or not (v > 0 and math.isfinite(v)):
            raise _bad(where, key, f"{v!r}: expected a number of seconds > 0")
        return v
    if kind == "nonneg":
        if not _is_number(v) or not (v >= 0 and math.isfinite(v)):
            raise _bad(where, key, f"{v!r}: expected a number >= 0")
        return v
    if kind in ("count", "seed"):
        lo = 1 if kind == "count" else 0
        if not isinstance(v, int) or isinstance(v, bool) or v < lo:
            raise _bad(where, key, f"{v!r}: expected a whole number >= {lo}")
        return v
    if kind in ("bs", "bytes"):
        n = _size(v)
        if n is None or n < 0 or (kind == "bs" and n == 0):
            want = "a positive number of bytes" if kind == "bs" else "a number of bytes >= 0"
            raise _bad(where, key, f"{v!r}: expected {want} (bytes, or text such as \"4KiB\", \"8GiB\", \"8GB\")")
        if kind == "bs" and n % 4096:
            used = round_to(n, 4096)
            print(f"ssdlab grid: note: {where}: `{key}` = {v!r}: {n} bytes is not a multiple of 4096; using {used} bytes",
                  file=sys.stderr)
            return used
        return n
    if kind == "profile":
        if not isinstance(v, str) or not v.strip():
            raise _bad(where, key, f"{v!r}: expected a profile name or .toml path (text)")
        return v
    raise AssertionError(kind)


def _size(v: Any) -> int | None:
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if isinstance(v, str):
        try:
            return parse_size(v)
        except ValueError:
            return None
    return None


def _text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _profile_path(v: str, base: Path) -> str:
    """A profile given as a relative .toml path is relative to GRID.toml (absolute for workers)."""
    if (v.endswith(".toml") or "/" in v) and not Path(v).is_absolute():
        return str((base / v).resolve())
    return v


def parse_grid(data: dict, path: str | os.PathLike = "GRID.toml") -> GridSpec:
    """Validates a parsed GRID.toml (``data``); ``path`` names it in errors."""
    from . import _native, profiles

    path = Path(path)
    where = str(path)
    base = path.resolve().parent
    for key in data:
        if key not in ("grid", "axes"):
            raise _bad(where, key, "unknown table or key; a grid file has a [grid] table and an [axes] table")
    g = data.get("grid")
    if not isinstance(g, dict):
        raise UserError(f"{where}: no [grid] table; it needs at least test = \"consistency\" (or \"used\")")
    test = g.get("test")
    if test not in TESTS:
        raise _bad(f"{where} [grid]", "test", f"{test!r}: expected one of {', '.join(map(repr, TESTS))}")
    opts_kinds = {**RUN_OPTIONS[test], "profile": "profile"}
    gw = f"{where} [grid]"
    for key in g:
        if key not in GRID_KEYS and key not in opts_kinds:
            other = [t for t in TESTS if key in RUN_OPTIONS[t]]
            hint = (f"it is an option of the {other[0]!r} test" if other else
                    "profile keys go in set = [\"KEY=VALUE\"] or in [axes]" if _is_profile_key(key) else
                    f"expected one of {', '.join(sorted(set(GRID_KEYS) | set(opts_kinds)))}")
            raise _bad(gw, key, f"unknown option; {hint}")
    title = g.get("title", "")
    if not isinstance(title, str):
        raise _bad(gw, "title", f"{title!r}: expected text")
    target = g.get("target", "sim:default")
    if not isinstance(target, str) or not target.strip():
        raise _bad(gw, "target", f"{target!r}: expected {targets.usage(about=False)}")
    target = target.strip()
    tkind = kind_of(target, f"{gw}: target")
    purge = g.get("purge", "blkdiscard")
    if purge not in ("blkdiscard", "nvme-format", "ata-secure-erase", "none"):
        raise _bad(gw, "purge", f"{purge!r}: expected blkdiscard, nvme-format, ata-secure-erase or none")
    if tkind.profile:
        target = tkind.prefix + _profile_path(tkind.rest(target) or "default", base)
    sets = g.get("set", [])
    if not isinstance(sets, list) or not all(isinstance(s, str) for s in sets):
        raise _bad(gw, "set", f"{sets!r}: expected a list of \"KEY=VALUE\" texts, e.g. [\"gc_policy=fifo\"]")
    if sets and not tkind.profile:
        raise _bad(gw, "set", f"profile overrides apply to targets with a drive profile ({_profiled()}) only; "
                              f"{target} has none")
    set_keys = []
    for s in sets:
        try:
            k, v = profiles.parse_override(s)
            _native.check_value(k, v)
        except (UserError, _native.ProfileError) as e:
            raise _bad(gw, "set", f"{s!r}: {e.args[0]}") from None
        set_keys.append(k)
    options: dict = {}
    for key, kind in opts_kinds.items():
        if key in g:
            options[key] = _option_value(gw, key, kind, g[key])
    if "profile" in options:
        if not tkind.profile:
            raise _bad(gw, "profile", f"a profile applies to targets with a drive profile ({_profiled()}) only; "
                                      f"target is {target}")
        if "target" in g:
            raise _bad(gw, "profile", "give either target = \"sim:PROFILE\" or profile = \"PROFILE\", not both")
        target = tkind.prefix + _profile_path(options.pop("profile"), base)

    ax = data.get("axes")
    aw = f"{where} [axes]"
    if ax is None or (isinstance(ax, dict) and not ax):
        raise UserError(f"{where}: no [axes] table, or it is empty: give at least one axis, e.g. "
                        "[axes] span_pct = [100, 75]")
    if not isinstance(ax, dict):
        raise UserError(f"{where}: `axes` must be a table ([axes]) of KEY = [values...]")
    axes: list[Axis] = []
    resolved: dict = {}
    for key, values in ax.items():
        if key in _RESERVED or key in metrics(test):
            raise _bad(aw, key, "is a column of the results table; it cannot be an axis")
        if not isinstance(values, list):
            raise _bad(aw, key, f"{values!r}: an axis is a list of values, e.g. {key} = [{values!r}]")
        if not values:
            raise _bad(aw, key, "empty list: an axis needs at least one value")
        for v in values:
            if isinstance(v, (list, dict)) or v is None:
                raise _bad(aw, key, f"{v!r}: axis values are numbers or text, not {type(v).__name__}s")
        if len({(type(v).__name__, _text(v)) for v in values}) != len(values):
            raise _bad(aw, key, f"{values!r}: the same value twice")
        kinds = {"text" if isinstance(v, str) else "number" if _is_number(v) else type(v).__name__ for v in values}
        if len(kinds) > 1:
            raise _bad(aw, key, f"{values!r}: mixes {' and '.join(sorted(kinds))} values; use one kind per axis")
        if key in opts_kinds:
            if key in g:
                raise _bad(aw, key, "is also set in [grid]; give it in one place")
            if key == "profile":
                if not tkind.profile:
                    raise _bad(aw, key, f"a profile axis needs a target with a drive profile ({_profiled()}); "
                                        f"target is {target}")
                vals = tuple(_profile_path(_option_value(aw, key, "profile", v), base) for v in values)
                axes.append(Axis(key, "profile", vals))
            else:
                vals = tuple(_option_value(aw, key, opts_kinds[key], v) for v in values)
                if len(set(vals)) != len(vals):
                    raise _bad(aw, key, f"{values!r}: the same value twice")
                axes.append(Axis(key, "option", vals))
            continue
        other = [t for t in TESTS if key in RUN_OPTIONS[t]]
        if other:
            raise _bad(aw, key, f"is an option of the {other[0]!r} test, not of {test!r}")
        if key in GRID_KEYS:
            raise _bad(aw, key, "cannot be an axis (it is a [grid] option)")
        if not _is_profile_key(key):
            try:
                _native.check_value(key, _text(values[0]))
            except _native.ProfileError as e:
                msg = e.args[0]
            else:  # pragma: no cover - a key the native side accepts but does not list
                msg = "unknown key"
            raise _bad(aw, key, f"not a run option of the {test!r} test ({', '.join(sorted(opts_kinds))}) nor a "
                       f"simulator profile key: {msg}")
        if not tkind.profile:
            raise _bad(aw, key, f"is a drive profile key; target {target} has no profile ({_profiled()} have)")
        if key in set_keys:
            raise _bad(aw, key, f"is also in [grid] set = {sets!r}; give it in one place")
        for v in values:
            try:
                _native.check_value(key, _text(v))
            except _native.ProfileError as e:
                raise _bad(aw, key, f"{v!r}: {e.args[0]}") from None
        axes.append(Axis(key, "key", tuple(values)))

    spec = GridSpec(path=str(path), test=test, title=title, target=target, sets=tuple(sets),
                    options=options, axes=tuple(axes), purge_method=purge, resolved=resolved)
    _check_points(spec)
    return spec


def _is_profile_key(key: str) -> bool:
    from . import _native

    return key in {k[0] for k in _native.profile_keys()}


def _params(test: str, options: dict):
    """The procedure module and its parameters for one point."""
    if test == "consistency":
        from .procedures import consistency

        return consistency, consistency.ConsistencyParams(**options)
    from .procedures import used

    return used, used.UsedParams(**options)


def _combos(spec: GridSpec):
    """(index, {axis: value}) in Cartesian-product order (last axis fastest)."""
    names = [a.name for a in spec.axes]
    for i, values in enumerate(itertools.product(*(a.values for a in spec.axes))):
        yield i, dict(zip(names, values))


def _point_setup(spec: GridSpec, values: dict) -> tuple[str, list[str], dict]:
    """(target, sets, run options) of one point."""
    target = spec.target
    sets = list(spec.sets)
    options = dict(spec.options)
    for a in spec.axes:
        v = values[a.name]
        if a.kind == "profile":
            target = kind_of(target).prefix + v
        elif a.kind == "key":
            sets.append(f"{a.name}={_text(v)}")
        else:
            options[a.name] = v
    return target, sets, options


def _check_points(spec: GridSpec) -> None:
    """Resolves every point's profile and parameters before anything runs: a bad
    combination fails now, naming GRID.toml and the point, not hours later on a worker."""
    from . import profiles
    from .procedures.common import span_bytes

    cache: dict = {}
    for i, values in _combos(spec):
        target, sets, options = _point_setup(spec, values)
        label = ", ".join(f"{k}={_text(v)}" for k, v in values.items())
        try:
            module, params = _params(spec.test, options)
            if hasattr(params, "check"):
                params.check()
            kind = kind_of(target)
            if not kind.profile:
                continue
            key = (target, tuple(sets))
            if key not in cache:
                cache[key] = profiles.load_profile(kind.rest(target) or "default", sets)
            prof = cache[key]
            span_bytes(prof.user_bytes, params.span_pct, max(4096, params.bs_bytes))
        except UserError as e:
            raise UserError(f"{spec.path}: point {i} ({label}): {e}") from None
        for a in spec.axes:
            if a.kind == "key":
                spec.resolved.setdefault(a.name, {})[_text(values[a.name])] = prof.values.get(a.name, values[a.name])


# --------------------------------------------------------------------------- points

def _slug(v: Any) -> str:
    t = format(v, "g") if isinstance(v, float) else _text(v)
    if "/" in t:  # a profile path: its file name is enough
        t = Path(t).stem
    return re.sub(r"[^A-Za-z0-9.+-]+", "-", t).strip("-") or "x"


def _fname(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]+", "-", name)


def point_dir_name(index: int, n: int, values: dict) -> str:
    width = max(3, len(str(max(n - 1, 0))))
    name = f"{index:0{width}d}_" + "_".join(f"{k}={_slug(v)}" for k, v in values.items())
    return name[:120].rstrip("_-")


def make_points(spec: GridSpec, out: str | os.PathLike, *, argv: list[str] | None = None,
                destroy: str | None = None) -> list[dict]:
    """The grid's points as plain (picklable) dicts for :func:`run_point`, in order."""
    out = Path(out).resolve()
    n = spec.n_points
    points = []
    for i, values in _combos(spec):
        target, sets, options = _point_setup(spec, values)
        name = point_dir_name(i, n, values)
        row_values = {}
        for a in spec.axes:
            v = values[a.name]
            if a.kind == "key":
                v = spec.resolved.get(a.name, {}).get(_text(v), v)
            row_values[a.name] = v
        points.append({
            "index": i, "test": spec.test, "target": target, "sets": sets, "seed": int(options.get("seed", 1)),
            "options": options, "values": row_values, "dir": f"points/{name}", "out": str(out / "points" / name),
            "argv": list(argv) if argv is not None else None, "destroy": destroy, "purge_method": spec.purge_method,
        })
    return points


def _metric(summary: dict, name: str, path: tuple[str, ...]):
    if name == "effective_spare_fraction":
        span, nand = _get(summary, ("span_bytes",)), _get(summary, ("geometry", "physical_bytes"))
        return 1.0 - span / nand if span and nand else None
    return _get(summary, path)


def _get(summary: dict, path: tuple[str, ...]):
    v: Any = summary
    for k in path:
        if not isinstance(v, dict):
            return None
        v = v.get(k)
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, (int, float)):
        return v
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


#: In a pool worker: whether a point may be interrupted by SIGINT (the parent's choice: not
#: when the parent itself ignores SIGINT, e.g. under nohup). None: decide from this process.
_POINT_SIGINT: bool | None = None
#: In a pool worker: set by the parent on Ctrl-C; points not started yet are then skipped.
_STOP = None


class PointCancelled(Exception):
    """A point skipped because the grid was stopped before it started."""


def _interrupt_once() -> Callable[[], None]:
    """While a point runs (main thread only): the first SIGINT raises KeyboardInterrupt (the
    test keeps what it measured), later ones are ignored so that saving is not cut short.
    A process that ignores SIGINT keeps ignoring it."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.getsignal(signal.SIGINT)
    if _POINT_SIGINT is False or (_POINT_SIGINT is None and previous == signal.SIG_IGN):
        return lambda: None

    def handler(signum, frame):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)
    return lambda: signal.signal(signal.SIGINT, previous)


def run_point(point: dict) -> dict:
    """Runs one grid point (a dict from :func:`make_points`) into its results folder and
    returns its table row: ``point``, the axis values, the metrics, ``complete``, ``wall_s``,
    ``dir``. Top-level and picklable: this is what the pool and dask workers run."""
    from .results import ResultsDir

    t0 = time.perf_counter()
    out = Path(point["out"])
    restore = _interrupt_once()
    try:
        # Checked after the SIGINT handler is in place: the parent sets the event, then signals.
        if _STOP is not None and _STOP.is_set():
            raise PointCancelled(f"point {point['index']}: grid stopped before it started")
        real = kind_of(point["target"]).device
        rd = ResultsDir(out)  # first: fio's job files go in it
        kw = {"workdir": out / "fio", "destroy": point.get("destroy"),
              "purge_method": point.get("purge_method", "blkdiscard")} if real else {}
        try:
            target = targets.open_target(point["target"], sets=point["sets"], seed=point["seed"], **kw)
        except Exception as e:
            rd.mark_incomplete(f"not started: {e}")
            raise
        try:
            module, params = _params(point["test"], point["options"])
            summary = module.run(target, params, rd, argv=point.get("argv"), progress=False)
        finally:
            target.close()
    finally:
        restore()
    row: dict = {"point": point["index"], **point["values"]}
    for col, path in metrics(point["test"]).items():
        row[col] = _metric(summary, col, path)
    row["complete"] = bool(summary.get("complete", True))
    row["wall_s"] = time.perf_counter() - t0
    row["dir"] = point["dir"]
    return row


# --------------------------------------------------------------------------- the table

def table_columns(spec: GridSpec) -> list[str]:
    return ["point", *(a.name for a in spec.axes), *metrics(spec.test), "complete", "wall_s", "dir"]


def _arrow_table(spec: GridSpec, rows: list[dict], points: list[dict]):
    import pyarrow as pa

    cols = {}
    for c in table_columns(spec):
        vals = [r.get(c) for r in rows]
        if c == "point" or c.endswith("_bytes") and c in metrics(spec.test):  # byte counts: whole numbers
            typ = pa.int64()
        elif c in ("complete",):
            typ = pa.bool_()
        elif c == "dir":
            typ = pa.string()
        elif c in metrics(spec.test) or c == "wall_s":
            typ = pa.float64()
        else:  # an axis: its type from every point's value, so partial tables keep it
            every = [p["values"][c] for p in points]
            typ = (pa.string() if any(isinstance(v, str) for v in every) else
                   pa.int64() if all(isinstance(v, int) for v in every) else pa.float64())
        if typ == pa.float64():
            vals = [None if v is None else float(v) for v in vals]
        cols[c] = pa.array(vals, type=typ)
    return pa.table(cols)


def write_table(out: str | os.PathLike, spec: GridSpec, rows: list[dict], points: list[dict]) -> list[Path]:
    """``grid.parquet`` and ``grid.csv`` (rows sorted by point index)."""
    import pyarrow.csv as pa_csv
    import pyarrow.parquet as pq

    from .results import atomic_write

    rows = sorted(rows, key=lambda r: r["point"])
    table = _arrow_table(spec, rows, points)
    out = Path(out)
    pq_path = atomic_write(out / "grid.parquet", lambda f: pq.write_table(table, f))

    def write_csv(f) -> None:
        header = io.StringIO()
        csv.writer(header, lineterminator="\n").writerow(table.column_names)
        f.write(header.getvalue().encode("utf-8"))
        if table.num_rows:
            pa_csv.write_csv(table, f, pa_csv.WriteOptions(include_header=False, quoting_style="needed"))

    csv_path = atomic_write(out / "grid.csv", write_csv)
    return [pq_path, csv_path]


def read_table(out: str | os.PathLike) -> list[dict]:
    """The rows of ``OUT/grid.parquet`` as dicts."""
    import pyarrow.parquet as pq

    return pq.read_table(Path(out) / "grid.parquet").to_pylist()


def _summary_table(spec: GridSpec, rows: list[dict]) -> dict:
    shown = [_declared(spec.test)[c] for c in TABLE_METRICS[spec.test]]
    cols = ["point", *(a.name for a in spec.axes), *(_metric_label(spec.test, m.key) for m in shown)]
    out_rows = []
    for r in sorted(rows, key=lambda r: r["point"]):
        vals = [r.get(m.key) for m in shown]
        out_rows.append([r["point"], *(r.get(a.name) for a in spec.axes),
                         *(None if v is None else round(float(v) * m.scale, m.decimals) for v, m in zip(vals, shown))])
    return {"title": spec.title or f"{spec.test} grid: {' x '.join(a.name for a in spec.axes)}",
            "columns": cols, "rows": out_rows,
            "note": "all metrics per point in grid.parquet / grid.csv; each point's results in its folder (points/)"}


# --------------------------------------------------------------------------- plots

def _label(values: dict) -> str:
    return ", ".join(f"{k}={_slug(v) if isinstance(v, str) and '/' in v else _text(v)}" for k, v in values.items())


def grid_plots(out: str | os.PathLike, spec: GridSpec, rows: list[dict]) -> list[Path]:
    """Comparison plots (see the module docstring); returns the files written."""
    import numpy as np

    from . import plots

    out = Path(out)
    written: list[Path] = []
    if not rows:
        return written
    rows = sorted(rows, key=lambda r: r["point"])
    title = spec.title or spec.test
    numeric = [a for a in spec.axes if a.name != "seed" and len(a.values) > 1
               and all(_is_number(r.get(a.name)) for r in rows)]
    for a in numeric:
        others = [b.name for b in spec.axes if b.name != a.name]
        xs = sorted({r[a.name] for r in rows})
        xi = {x: i for i, x in enumerate(xs)}
        groups: dict[tuple, dict] = {}
        for r in rows:
            groups.setdefault(tuple(_text(r.get(o)) for o in others), {"values": {o: r.get(o) for o in others}, "rows": []})["rows"].append(r)
        for metric in PLOT_METRICS[spec.test]:
            ylabel = _metric_label(spec.test, metric)
            ys: dict[str, Any] = {}
            lines = []
            for g in groups.values():
                y = np.full(len(xs), np.nan)
                for r in g["rows"]:
                    v = r.get(metric)
                    y[xi[r[a.name]]] = np.nan if v is None else float(v)
                lines.append((_label(g["values"]) or metric, y))
            if len(lines) <= MAX_LINES:
                ys = dict(lines)
                note = ""
            else:
                stack = np.vstack([y for _, y in lines])
                with warnings.catch_warnings():  # all-NaN columns (points not run) stay NaN
                    warnings.simplefilter("ignore", RuntimeWarning)
                    ys = {f"median of {len(lines)} combinations": np.nanmedian(stack, axis=0),
                          "min": np.nanmin(stack, axis=0), "max": np.nanmax(stack, axis=0)}
                note = f" (over {', '.join(others)})"
            if all(np.all(np.isnan(y)) for y in ys.values()):
                continue
            written += plots.line_plot(out / f"grid_{_fname(metric)}_vs_{_fname(a.name)}", xs, ys, a.name, ylabel,
                                       f"{title}: {ylabel} vs {a.name}{note}", formats=("png", "svg"))
    if len(rows) <= MAX_BARS:
        metric = PLOT_METRICS[spec.test][0]
        ylabel = _metric_label(spec.test, metric)
        bars = {f"{r['point']}: {_label({b.name: r.get(b.name) for b in spec.axes})}": r.get(metric) for r in rows}
        if any(v is not None for v in bars.values()):
            written += plots.bar_table_plot(out / f"grid_{_fname(metric)}", bars, ylabel, f"{title}: {ylabel} per point",
                                            formats=("png", "svg"))
    return written


# --------------------------------------------------------------------------- backends

def _progress_bar(total: int, enabled: bool | None):
    from tqdm import tqdm

    if enabled is None:
        enabled = sys.stderr.isatty() or os.environ.get("SSDLAB_PROGRESS") == "1"
    return tqdm(total=total, desc="grid points", unit="point", disable=not enabled, file=sys.stderr, leave=True)


def _worker_init(point_sigint: bool, stop) -> None:
    """Pool workers ignore Ctrl-C between points; :func:`run_point` handles it during one
    (if ``point_sigint``: the parent does not ignore SIGINT itself). ``stop``: the parent's
    stop event."""
    global _POINT_SIGINT, _STOP
    _POINT_SIGINT = point_sigint
    _STOP = stop
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run_serial(points, on_done) -> None:
    for p in points:
        try:
            row = run_point(p)
        except KeyboardInterrupt as e:
            on_done(p, None, e)
            raise
        except Exception as e:  # a failed point does not cost the others
            on_done(p, None, e)
        else:
            on_done(p, row, None)


def _run_local(points, workers: int, on_done) -> None:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    ctx = multiprocessing.get_context("spawn")
    stop = ctx.Event()
    ex = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_worker_init,
                             initargs=(signal.getsignal(signal.SIGINT) != signal.SIG_IGN, stop))
    futures: dict = {}
    seen: set = set()
    try:
        futures = {ex.submit(run_point, p): p for p in points}
        for f in as_completed(futures):
            seen.add(f)
            _collect(f, futures[f], on_done)
    except KeyboardInterrupt:
        stop.set()  # before the signal: a point starting now sees one or the other
        for f in futures:
            f.cancel()
        for proc in list((getattr(ex, "_processes", None) or {}).values()):
            try:
                os.kill(proc.pid, signal.SIGINT)  # running points stop and save what they have
            except (OSError, AttributeError):
                pass
        ex.shutdown(wait=True, cancel_futures=True)
        for f, p in futures.items():  # finished while we were stopping: keep them
            if f not in seen and f.done() and not f.cancelled():
                _collect(f, p, on_done)
        raise
    finally:
        ex.shutdown(wait=True, cancel_futures=True)


def _collect(f, point, on_done) -> None:
    e = f.exception()
    on_done(point, None if e else f.result(), e)


def connect(scheduler: str, timeout: float = 10.0):
    """A ``distributed.Client`` on ``scheduler`` with at least one worker; UserError otherwise."""
    try:
        import distributed
    except ImportError:
        raise UserError("--scheduler needs dask.distributed: pip install 'ssdlab[cluster]' "
                        "(or pip install dask distributed)") from None
    try:
        client = distributed.Client(scheduler, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError, ValueError, TypeError) as e:
        raise UserError(f"--scheduler {scheduler}: cannot reach a dask scheduler there within {timeout:g} s ({e}); "
                        "start one with `dask scheduler` and workers with `dask worker "
                        f"{scheduler}`, or leave out --scheduler to use local processes") from None
    try:
        client.wait_for_workers(1, timeout=timeout)
    except (TimeoutError, OSError) as e:
        client.close()
        raise UserError(f"--scheduler {scheduler}: the scheduler has no workers (waited {timeout:g} s: {e}); "
                        f"start some with `dask worker {scheduler}`") from None
    from . import __version__

    try:  # same simulator everywhere, or the same seeds would not give the same numbers
        versions = client.run(_ssdlab_version)
    except Exception as e:
        client.close()
        raise UserError(f"--scheduler {scheduler}: the workers cannot run ssdlab ({type(e).__name__}: {e}); "
                        "install the same ssdlab on every worker") from None
    other = {w: v for w, v in versions.items() if v != __version__}
    if other:
        client.close()
        raise UserError(f"--scheduler {scheduler}: workers run another ssdlab than this one ({__version__}): "
                        + ", ".join(f"{w}: {v}" for w, v in sorted(other.items())))
    return client


def _ssdlab_version() -> str:
    """Runs on each dask worker (:func:`connect`)."""
    from . import __version__

    return __version__


def _run_dask(points, client, on_done) -> None:
    import distributed

    futures = client.map(run_point, points, pure=False)
    by_key = {f.key: p for f, p in zip(futures, points)}
    seen = set()
    try:
        for f in distributed.as_completed(futures, loop=client.loop):
            seen.add(f.key)
            p = by_key[f.key]
            if f.status == "error":
                on_done(p, None, f.exception())
            elif f.status == "finished":
                on_done(p, f.result(), None)
    except KeyboardInterrupt:
        pending = [f for f in futures if f.key not in seen and f.status == "pending"]
        client.cancel(pending)
        for f in futures:
            if f.key not in seen and f.status == "finished":
                on_done(by_key[f.key], f.result(), None)
        raise


# --------------------------------------------------------------------------- the run

def run_grid(spec: GridSpec, out: str | os.PathLike, *, workers: int | None = None, scheduler: str | None = None,
             progress: bool | None = None, argv: list[str] | None = None, force: bool = False,
             connect_timeout: float = 10.0, destroy: str | None = None, client=None) -> dict:
    """Runs every point of ``spec`` and writes OUT (see the module docstring); returns the
    grid's summary. ``workers``: local processes (default: CPU count; 1 = in this process).
    ``scheduler``: a dask scheduler address, or give a connected ``client``. On Ctrl-C the
    finished rows are written, marked incomplete, and KeyboardInterrupt is re-raised."""
    from . import results

    if workers is not None and workers < 1:
        raise UserError(f"--workers {workers}: must be >= 1")
    if spec.real and (scheduler or client):
        raise UserError(f"{spec.path}: target {spec.target} is a real drive; it can only be tested from this "
                        "machine, one point at a time: leave out --scheduler")
    own_client = False
    if scheduler and client is None:
        client = connect(scheduler, connect_timeout)  # before creating OUT: a bad address writes nothing
        own_client = True
    try:
        rd = results.ResultsDir(out, overwrite=force)
        points = make_points(spec, rd.path, argv=argv, destroy=destroy)
        if client is not None:
            import dask
            import distributed

            backend = {"kind": "dask", "scheduler": scheduler or getattr(client.scheduler, "address", None),
                       "workers": len(client.scheduler_info().get("workers", {})),
                       "dask_version": dask.__version__, "distributed_version": distributed.__version__}
        else:
            n = 1 if spec.real else min(workers or os.cpu_count() or 1, len(points))
            backend = {"kind": "local", "workers": n, "in_process": n == 1}
        summary: dict = {"test": "grid", "title": spec.title, "target": spec.target, "grid": spec.to_json(),
                         "backend": backend, "points": len(points), **results.run_metadata(argv)}
        rows: list[dict] = []
        failed: list[dict] = []
        stopped: list[dict] = []
        bar = _progress_bar(len(points), progress)

        def on_done(point: dict, row: dict | None, error: BaseException | None) -> None:
            bar.update(1)
            if error is None and row is not None:
                rows.append(row)
            elif isinstance(error, PointCancelled):
                pass
            elif isinstance(error, KeyboardInterrupt):  # its folder keeps what it measured, marked incomplete
                stopped.append({"point": point["index"], "dir": point["dir"], "values": point["values"]})
            else:
                failed.append({"point": point["index"], "dir": point["dir"], "values": point["values"],
                               "error": f"{type(error).__name__}: {error}"})
                bar.write(f"ssdlab grid: point {point['index']} ({point['dir']}) failed: {type(error).__name__}: {error}",
                          file=sys.stderr)

        t0 = time.perf_counter()
        interrupted = False
        try:
            if client is not None:
                _run_dask(points, client, on_done)
            elif backend["workers"] == 1:
                _run_serial(points, on_done)
            else:
                _run_local(points, backend["workers"], on_done)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            bar.close()
        summary["wall_s"] = time.perf_counter() - t0
        summary["interrupted_points"] = sorted(stopped, key=lambda r: r["point"])
        _finish(rd, spec, summary, rows, failed, points, interrupted, shared_check=client is not None)
        if interrupted:
            raise KeyboardInterrupt
        return summary
    finally:
        if own_client:
            client.close()


def _finish(rd, spec: GridSpec, summary: dict, rows: list[dict], failed: list[dict], points: list[dict],
            interrupted: bool, shared_check: bool) -> None:
    from .results import INTERRUPTED_REASON

    rows.sort(key=lambda r: r["point"])
    failed.sort(key=lambda r: r["point"])
    summary["points_done"] = len(rows)
    summary["failed_points"] = failed
    if shared_check:
        missing = [r["dir"] for r in rows if not (rd.path / r["dir"] / "summary.json").exists()]
        if missing:
            summary["missing_point_dirs"] = missing
            print(f"ssdlab grid: warning: {len(missing)} point folders written by the dask workers are not in "
                  f"{rd.path} (e.g. {missing[0]}); OUT must be on storage the workers share", file=sys.stderr)
    files = write_table(rd.path, spec, rows, points)
    summary["table_files"] = [p.name for p in files]
    summary["columns"] = table_columns(spec)
    summary["tables"] = [_summary_table(spec, rows)]
    summary["plots"] = [p.name for p in grid_plots(rd.path, spec, rows)]
    complete = not interrupted and not failed and len(rows) == len(points)
    summary["complete"] = complete
    if interrupted:
        rd.mark_incomplete(INTERRUPTED_REASON)
    elif failed:
        rd.mark_incomplete(f"{len(failed)} of {len(points)} points failed")
    elif not complete:
        rd.mark_incomplete(f"{len(points) - len(rows)} of {len(points)} points were interrupted or did not run")
    rd.write_summary(summary)
    if complete:
        rd.finish()
