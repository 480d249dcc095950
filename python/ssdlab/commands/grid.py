"""``ssdlab grid GRID.toml``: a grid of simulations (spare area x GC policy x workload x
profile...) on a local process pool or a dask.distributed cluster; one table and comparison
plots. The engine and the GRID.toml format: :mod:`ssdlab.grid`.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..procedures.declare import number

GRID_FORMAT = """\
GRID.toml:
  [grid]
  test = "consistency"                 # or "used"
  target = "sim:default"               # default; sim:PROFILE (name or .toml path)
  set = ["blocks_per_plane=64", "user_capacity_bytes=7GiB"]   # profile overrides, every point
  duration_s = 600                     # common run options: span_pct, duration_s, qd, bs_bytes, seed
  seed = 1                             # (used: also dirty_spans, dirty_bytes); title = "..."

  [axes]                               # lists; the grid is their Cartesian product
  span_pct = [100, 75]                 # a run option
  gc_policy = ["greedy", "fifo"]       # any other name is a profile key (ssdlab profiles --keys)
  profile = ["default", "stalling"]    # target sim:<profile>

Points run in Cartesian-product order (axes as listed, the last fastest), each into
OUT/points/<index>_<axis=value_...>/. OUT gets grid.parquet and grid.csv (one row per point:
axis values, metrics, wall_s; sorted by point), summary.json and comparison plots
grid_<metric>_vs_<axis>.png/.svg. Same grid and seeds, same table, on either backend.
Ctrl-C: points not started are cancelled, finished rows kept, OUT marked incomplete."""

DESCRIPTION = """\
Run a grid of tests (e.g. spare area x GC policy x workload x profile) on the simulator:
on a local process pool (default), or on a dask.distributed cluster with --scheduler
(the workers need the same ssdlab; OUT must be a folder they share, at the same path).
Writes one table (grid.parquet, grid.csv), summary.json and comparison plots."""


def add_grid_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the grid's options to ``parser``: GRID.toml (dest ``grid``), --out, --workers,
    --scheduler, --connect-timeout, --force, --no-progress, --dry-run, --destroy-data."""
    add = parser.add_argument
    add("grid", metavar="GRID.toml",
        help="the grid: a [grid] table (test, target, set, common options) and an [axes] table (see below)")
    add("--out", metavar="DIR", default=None,
        help="results folder (default: ./NAME-results for NAME.toml); with --scheduler it must be on storage "
             "the dask workers share, at the same path")
    add("--workers", type=number(int, 1, 4096), default=None, metavar="N",
        help="local worker processes (default: the CPU count; 1 runs the points one after another in this "
             "process). Each simulated drive needs memory in proportion to its capacity: fewer workers for big "
             "drives; must be in [1, 4096]). Ignored with --scheduler")
    add("--scheduler", metavar="tcp://HOST:PORT", default=None,
        help="run the points on this dask.distributed scheduler's workers instead of local processes "
             "(pip install 'ssdlab[cluster]')")
    add("--connect-timeout", type=number(float, 0, 3600, low_open=True, unit="s"), default=10.0, metavar="S",
        help="seconds to wait for the scheduler and its first worker (default: %(default)g s; must be in (0, 3600] s)")
    add("--force", action="store_true", help="write into --out even if it holds files that are not ssdlab results")
    add("--no-progress", dest="progress", action="store_false", default=None,
        help="no progress bar (shown when stderr is a terminal)")
    add("--dry-run", action="store_true", help="check GRID.toml and list the points; run nothing")
    add("--destroy-data", dest="destroy", metavar="DEVICE",
        help="real targets: allow writing to DEVICE although the safety gate found data on it (ALL DATA LOST)")


def register(subparsers, add_target_args) -> None:  # noqa: ARG001 - the grid file names the target
    g = subparsers.add_parser("grid", help="a grid of simulations (spare area x GC policy x ...): one table and plots, "
                                           "local processes or a dask cluster",
                              description=DESCRIPTION, epilog=GRID_FORMAT,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    add_grid_arguments(g)
    g.set_defaults(func=run_grid_command)


def _default_out(grid: str) -> str:
    return f"{Path(grid).stem}-results"


def run_grid_command(args) -> int:
    """Runs ``ssdlab grid`` from parsed arguments (see :func:`add_grid_arguments`); returns the
    exit status (0; 1 if points failed). Raises UserError / KeyboardInterrupt like the others."""
    from .. import grid as gridmod

    grid_file = args.grid
    spec = gridmod.load_grid(grid_file)
    out = args.out or _default_out(grid_file)
    scheduler = args.scheduler
    if args.dry_run:
        points = gridmod.make_points(spec, out)
        axes = " x ".join(f"{a.name} ({len(a.values)})" for a in spec.axes)
        print(f"# {spec.path}: {spec.test} grid, {len(points)} points: {axes}")
        print(f"# target {spec.target}" + (f", set {' '.join(spec.sets)}" if spec.sets else "")
              + (f", options {spec.options}" if spec.options else ""))
        for p in points:
            print(f"{p['dir']}  {p['target']}  " + " ".join(f"--set {s}" for s in p["sets"][len(spec.sets):])
                  + "  " + " ".join(f"{k}={v}" for k, v in p["options"].items() if k in p["values"]))
        return 0
    summary = gridmod.run_grid(spec, out, workers=args.workers, scheduler=scheduler,
                               progress=args.progress, argv=sys.argv,
                               force=args.force,
                               connect_timeout=args.connect_timeout,
                               destroy=args.destroy)
    _print(summary, out)
    return 0 if summary["complete"] else 1


def _cell(v) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"
    return str(v)


def _print(summary: dict, out: str, max_rows: int = 40) -> None:
    t = summary["tables"][0]
    b = summary["backend"]
    where = f"dask {b.get('scheduler')} ({b.get('workers')} workers)" if b["kind"] == "dask" else \
        f"{b['workers']} local process{'es' if b['workers'] != 1 else ''}"
    print(f"{t['title']}: {summary['points_done']} of {summary['points']} points on {where} "
          f"in {summary['wall_s']:.1f} s")
    cells = [[_cell(v) for v in r] for r in t["rows"][:max_rows]]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(t["columns"])]
    print("  " + "  ".join(c.rjust(w) for c, w in zip(t["columns"], widths)))
    for r in cells:
        print("  " + "  ".join(c.rjust(w) for c, w in zip(r, widths)))
    if len(t["rows"]) > max_rows:
        print(f"  ... {len(t['rows']) - max_rows} more rows in grid.csv")
    for f in summary.get("failed_points", []):
        print(f"  point {f['point']} failed: {f['error']}", file=sys.stderr)
    print(f"  results in {out}/ (grid.parquet, grid.csv, summary.json, grid_*.png, points/)")
