"""``ssdlab report``, ``ssdlab analyze``, ``ssdlab compare``: results you already have.

* ``ssdlab report DIR... [--out report.html]``: one self-contained interactive page
  (:mod:`ssdlab.report`) for one or more results folders (or folders of results folders).
* ``ssdlab analyze LOG... [--interval S] [--bs SIZE] [--out DIR]``: the consistency
  metrics (:func:`ssdlab.analysis.analyze_iops`) of a run's fio logs, read by the one fio
  log reader (:mod:`ssdlab.fio_logs`) onto a regular grid. The logs given are the jobs of
  one run (``numjobs``), summed interval by interval; a folder or a ``write_*_log`` prefix
  stands for every log in it. With ``--out`` a results folder is written: summary.json
  (``"test": "analyze"``), series.parquet/.csv, the three review scatter plots and
  report.html.
* ``ssdlab compare DIR... [--out DIR]``: the main metrics of several runs side by side as
  a text table; with ``--out`` also compare.csv (one row per run), the overlay scatter
  plots (``compare_log``, ``compare_steady_log``, ``compare_steady_linear``), summary.json
  (``"test": "compare"``, the table as a ``tables`` entry) and report.html of the runs.
"""
from __future__ import annotations

import csv
import io
import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UserError
from ..charts import Metric
from ..procedures.declare import by_summary_name, metrics_by_test, number, size
from ..units import MAX_BS_BYTES

if TYPE_CHECKING:
    from .. import fio_logs

EPILOG = "Docs: README.md"


def register(subparsers, add_target_args) -> None:  # noqa: ARG001 - no target here
    r = subparsers.add_parser(
        "report", help="build one self-contained interactive report.html from results folders",
        description="Build report.html from one or more results folders: the review-style interactive graphs "
                    "(drive and spare-area variant buttons, log/linear scale, zoom presets), metric tables and "
                    "each run's version, command line, target and profile. One file, works offline.",
        epilog=EPILOG)
    r.add_argument("dirs", nargs="+", metavar="DIR",
                   help="results folder (or a folder holding results folders)")
    r.add_argument("--out", metavar="FILE", default=None,
                   help="where to write the page (default: DIR/report.html for one folder, else ./report.html)")
    r.add_argument("--title", default=None, help="page title")
    r.set_defaults(func=cmd_report)

    a = subparsers.add_parser(
        "analyze", help="consistency metrics of existing fio logs (iops, histogram, latency, bw)",
        description="Read the fio logs of a run (write_hist_log histograms, write_lat_log per-IO latencies, "
                    "write_iops_log windowed or per-IO, write_bw_log) onto a regular grid of intervals (an "
                    "interval in which nothing completed is 0 IOPS) and compute the consistency metrics: IOPS "
                    "mean/median/p1/p99/min, zero-IOPS seconds, longest stall, fresh-out-of-box level, steady-state "
                    "onset (SNIA rule), bimodality; and latency percentiles per interval where the logs hold them. "
                    "The logs of one run (one folder and write_*_log prefix) are its jobs and are summed; the logs "
                    "of several runs (a folder of a test's phases) are analysed one by one, with --out into one "
                    "folder per run. Where the run's fio JSON (PREFIX.json) lies beside its histogram logs, as "
                    "ssdlab's fio targets write them, it supplies what fio does not log (the final window, the run "
                    "time, the IO sizes), and the series is the one the run itself made. A results folder stands "
                    "for the fio logs in its fio/ folder.",
        epilog=EPILOG)
    a.add_argument("logs", nargs="+", metavar="LOG",
                   help="fio log file (*_iops.N.log, *_clat_hist.N.log, *_clat.N.log, *_lat.N.log, *_bw.N.log), "
                        "or a folder / write_*_log prefix (all its logs)")
    a.add_argument("--interval", type=number(float, 0, 86400, low_open=True, unit="s"), default=None, metavar="S",
                   help="series interval in seconds, at least the logs' own window (default: the logs' window, "
                        "detected from their time stamps; 1 s for per-IO logs)")
    a.add_argument("--bs", type=number(size, 1, MAX_BS_BYTES, unit="bytes"), default=None, metavar="SIZE",
                   help="block size of the IOs, for MB/s (default: the run's mean IO size from its fio JSON "
                        "PREFIX.json beside the logs, else 4KiB = 4096 bytes)")
    a.add_argument("--direction", choices=["read", "write", "trim"], default=None,
                   help="only this direction (default: every direction in the logs, summed)")
    a.add_argument("--log-avg-msec", type=number(int, 0, 86_400_000, unit="ms"), default=None, metavar="MS",
                   help="fio's log_avg_msec (or log_hist_msec) for these logs, 0 for per-IO logs (default: detected)")
    a.add_argument("--round", dest="round_s", type=number(float, 0, 86400, low_open=True, unit="s"), default=60.0,
                   metavar="S",
                   help="steady-state round length in seconds (SNIA rule, default: %(default)s)")
    a.add_argument("--label", default=None, help="the drive's name in the results and report")
    a.add_argument("--span", type=number(float, 0, 100, low_open=True, unit="%"), default=None, metavar="PCT",
                   help="percent of the drive the run covered (for the report's variant buttons: 75 = 25%% spare area)")
    a.add_argument("--json", action="store_true", help="print the metrics as JSON instead of text")
    a.add_argument("--out", default=None, metavar="DIR", help="write a results folder here")
    a.add_argument("--force", action="store_true", help="write into --out even if it holds files that are not ssdlab results")
    a.set_defaults(func=cmd_analyze)

    c = subparsers.add_parser(
        "compare", help="main metrics of several runs side by side",
        description="Print the main metrics of several results folders side by side. With --out, also write "
                    "compare.csv, the overlaid consistency scatter plots and report.html.",
        epilog=EPILOG)
    c.add_argument("dirs", nargs="+", metavar="DIR", help="results folder (or a folder holding results folders)")
    c.add_argument("--out", default=None, metavar="DIR", help="write compare.csv, plots, summary.json and report.html here")
    c.add_argument("--force", action="store_true", help="write into --out even if it holds files that are not ssdlab results")
    c.add_argument("--title", default=None, help="title of the plots and report")
    c.set_defaults(func=cmd_compare)


# --------------------------------------------------------------------------- report

def _run_dirs(paths) -> list[Path]:
    from .. import report

    try:
        return report.expand_run_dirs(paths)
    except FileNotFoundError as e:
        raise UserError(str(e)) from None


def cmd_report(args) -> int:
    from .. import report, results

    dirs = _run_dirs(args.dirs)
    out = Path(args.out) if args.out else (dirs[0] / report.REPORT_NAME if len(dirs) == 1 else Path(report.REPORT_NAME))
    if out.is_dir():
        out = out / report.REPORT_NAME
    try:
        path = report.write_report(dirs, out, title=args.title, metrics=declared_metrics())
    except (FileNotFoundError, ValueError) as e:
        raise UserError(str(e)) from None
    print(f"report of {len(dirs)} run{'s' if len(dirs) != 1 else ''}: {path}")
    for d in dirs:
        reason = results.describe_incomplete(d)
        if reason is not None:
            print(f"{d}: incomplete: {reason}")
    return 0


# --------------------------------------------------------------------------- analyze

#: Log kinds ``analyze`` reads, in the order it prefers them (see fio_logs.grid_from_files).
ANALYZE_KINDS = ("clat_hist", "hist", "clat", "lat", "iops", "slat", "bw")


def _log_files(items) -> list[Path]:
    """The fio log files named on the command line: files as given; a folder or a
    ``write_*_log`` prefix stands for every log of the kinds :data:`ANALYZE_KINDS` in it."""
    from .. import fio_logs

    files: list[Path] = []
    for item in items:
        p = Path(item)
        if p.is_file():
            files.append(p)
            continue
        if (p / "summary.json").is_file() and (p / "fio").is_dir():  # a results folder of a fio target
            p = p / "fio"
        elif (p / "summary.json").is_file():  # a simulated run's folder: its stored time series
            files += _time_series_files(p)
            continue
        found = []
        for kind in ANALYZE_KINDS:
            try:
                found += fio_logs.find_logs(p, kind)
            except FileNotFoundError:
                pass
        if not found:
            raise UserError(f"{item}: no such file, and no fio logs (*_iops.N.log, *_clat_hist.N.log, *_clat.N.log, "
                            "*_lat.N.log, *_bw.N.log) in it")
        files += found
    return files


def log_runs(files: list[Path]) -> list[tuple[str, list[Path], dict | None]]:
    """The logs grouped by the fio run that wrote them (one folder and ``write_*_log`` prefix):
    (prefix, logs, the run's fio JSON or None). A run's JSON is ``PREFIX.json`` beside its
    histogram logs, as fio targets write them; it holds what the logs lack (the final window,
    the run time, the IO sizes)."""
    from .. import fio_logs
    from ..targets.fio import parse_fio_json

    groups: dict[tuple[Path, str], list[Path]] = {}
    for f in files:
        ln = fio_logs.parse_log_name(f)
        groups.setdefault((f.parent, ln.job if ln else f.name), []).append(f)
    out = []
    for (folder, prefix), logs in groups.items():
        data = None
        kinds = {(fio_logs.parse_log_name(f) or fio_logs.LogName("", "iops", None)).kind for f in logs}
        if kinds <= {"clat_hist", "hist"} and (folder / f"{prefix}.json").is_file():
            try:
                data = parse_fio_json((folder / f"{prefix}.json").read_text(errors="replace"))
            except (ValueError, OSError):
                data = None
        out.append((prefix, logs, data if data and data.get("jobs") else None))
    return out


def _time_series_files(folder: Path) -> list[Path]:
    """The time series (``t_s`` and ``iops`` columns) a results folder holds, as Parquet files."""
    import pyarrow.parquet as pq

    found = [f for f in sorted(folder.glob("*.parquet"))
             if {"t_s", "iops", "dt_s"} <= set(pq.read_schema(f).names)]
    if not found:
        raise UserError(f"{folder}: a results folder with no fio logs and no time series (IOPS per interval) to "
                        "analyze; its summary.json and report.html hold what the test measured")
    return found


def _analyze_stored_series(path: Path, *, bs_bytes: int | None, round_s: float
                           ) -> tuple[dict, dict, "fio_logs.Grid"]:
    """(series, metrics, grid) of a time series a test stored (``NAME.parquet``), with the
    metric function the tests use; the interval is the series' own."""
    import numpy as np

    from .. import fio_logs, results

    series = results.read_series(path)
    dt = np.asarray(series["dt_s"], float)
    if not len(dt):
        raise UserError(f"{path}: an empty series (the run stopped before its first interval)")
    interval = float(np.median(dt))
    grid = fio_logs.Grid(interval_s=interval, end_s=float(np.sum(dt)), sources=[path])
    series_out, metrics, grid = _metrics(series, grid, bs_bytes or 4096, round_s)
    if bs_bytes is None and "mbps" in series:  # the stored MB/s, whatever the IO sizes were
        metrics["mbps_mean"] = float(np.nanmean(series["mbps"]))
        metrics["bs_bytes"] = None
    return series_out, metrics, grid


def analyze_logs(files, *, interval_s: float | None = None, bs_bytes: int | None = None, direction=None,
                 log_avg_msec=None, round_s: float = 60.0, fio_json: dict | None = None
                 ) -> tuple[dict, dict, "fio_logs.Grid"]:
    """(series, metrics, grid) of the fio logs of one run: series on a regular grid of
    ``interval_s`` (default: the logs' own window, 1 s for per-IO logs) with ``t_s``, ``iops``,
    ``mbps`` and per-interval latency where the logs hold it; metrics from
    :func:`ssdlab.analysis.analyze_iops` (plus ``round_s``, ``log_window_ms``). With the run's
    ``fio_json`` (histogram logs only) the series is the one a fio target made of that run
    (:func:`ssdlab.fio_logs.run_grid`), else :func:`ssdlab.fio_logs.grid_from_files`.
    ``bs_bytes`` (for MB/s) defaults to the run's mean IO size, else 4096."""
    from .. import analysis, fio_logs

    if fio_json is not None and direction is None:
        try:
            grid = fio_logs.run_grid(files, fio_json, interval_s=interval_s, window_ms=log_avg_msec or None)
        except ValueError as e:
            raise UserError(str(e)) from None
        sizes = fio_logs.run_io_bytes(fio_json)
        jobs = fio_json.get("jobs") or []
        series = fio_logs.run_series(grid, fio_json, per_direction=len(jobs) > 1 or len(sizes) > 1, bs_bytes=bs_bytes)
        if bs_bytes is None:
            ios, nbytes = (sum(v) for v in zip(*sizes.values())) if sizes else (0, 0)
            bs_bytes = nbytes / ios if ios else 4096
        return _metrics(series, grid, bs_bytes, round_s)
    bs_bytes = 4096 if bs_bytes is None else bs_bytes
    if interval_s is not None and not interval_s > 0:
        raise UserError(f"--interval {interval_s:g}: must be > 0 seconds")
    if round_s <= 0:
        raise UserError(f"--round {round_s:g}: must be > 0 seconds")
    kinds = {(fio_logs.parse_log_name(f) or fio_logs.LogName("", "iops", None)).kind for f in files}
    if kinds == {"bw"}:
        raise UserError(f"{files[0]}: a fio bw log, not an IOPS log: it holds bytes, not IO counts; give the run's "
                        "iops, histogram (clat_hist) or latency logs too")
    try:
        grid = fio_logs.grid_from_files(files, interval_s=interval_s, log_avg_msec=log_avg_msec, direction=direction)
    except (ValueError, FileNotFoundError) as e:
        raise UserError(str(e) if "--interval" in str(e) or interval_s is None else f"{e} (--interval {interval_s:g})") from None
    return _metrics(grid.series(bs_bytes), grid, bs_bytes, round_s)


def _metrics(series: dict, grid, bs_bytes: float, round_s: float) -> tuple[dict, dict, "fio_logs.Grid"]:
    import numpy as np

    from .. import analysis

    interval = grid.interval_s
    if abs(round_s / interval - round(round_s / interval)) > 1e-9:
        round_s = interval * math.ceil(round_s / interval)  # rounds must hold whole intervals
    try:
        metrics = analysis.analyze_iops(series["iops"], interval, round_s=round_s, bs_bytes=bs_bytes)
    except ValueError as e:
        raise UserError(f"cannot analyze these logs: {e}") from None
    metrics["bs_bytes"] = bs_bytes
    if grid.bytes:  # per-IO or bandwidth logs: MB/s from the bytes, not from IOPS x --bs
        metrics["mbps_mean"] = float(np.nanmean(series["mbps"]))
    return series, {**metrics, "round_s": float(round_s), "log_window_ms": grid.window_ms}, grid


def print_metrics(m: dict, what: str) -> None:
    from ..procedures.common import figure

    print(what)
    print(f"  {m['n_intervals']} intervals of {m['interval_s']:g} s ({m['duration_s']:g} s)")
    print(f"  IOPS mean {figure(m['iops_mean'])}  median {figure(m['iops_median'])}  p1 {figure(m['iops_p1'])}  "
          f"p99 {figure(m['iops_p99'])}  min {figure(m['iops_min'])}  max {figure(m['iops_max'])}")
    print(f"  MB/s mean {figure(m['mbps_mean'], ',.1f')}  coefficient of variation {figure(m['iops_cv'], '.3f')}  "
          f"consistency score {figure(m['consistency_score'], '.2f')}")
    print(f"  zero-IOPS seconds {figure(m['zero_iops_seconds'], 'g')}  longest stall "
          f"{figure(m['longest_stall_s'], 'g', 's')}")
    print(f"  fresh-out-of-box {figure(m['fob_iops'], unit='IOPS')} for {figure(m['fob_duration_s'], 'g', 's')}  "
          + ("steady state not reached" if m["steady_state_onset_s"] is None else
             f"steady state from {figure(m['steady_state_onset_s'], 'g', 's')} "
             f"(mean {figure(m['steady_state_iops_mean'], unit='IOPS')})"))
    if m.get("bimodal"):
        print(f"  bimodal: high mode {figure(m['high_mode_iops'], unit='IOPS')} {m['high_mode_share'] * 100:.1f}% of "
              f"the time, low mode {figure(m['low_mode_iops'], unit='IOPS')}; bursts "
              f"{figure(m['burst_mean_s'], '.3g', 's')} every {figure(m['burst_period_s'], '.3g', 's')}")


def cmd_analyze(args) -> int:
    from .. import results

    files = _log_files(args.logs)
    if args.bs is not None and args.bs <= 0:
        raise UserError(f"--bs {args.bs}: must be > 0 bytes")
    if args.span is not None and not 0 < args.span <= 100:
        raise UserError(f"--span {args.span:g}: must be a percentage in (0, 100]")
    stored = [f for f in files if f.suffix == ".parquet"]
    runs = log_runs([f for f in files if f.suffix != ".parquet"]) + [(f.stem, [f], None) for f in stored]
    if args.direction is not None:  # the JSON-based series sums every direction
        runs = [(prefix, logs, None) for prefix, logs, _ in runs]
    everything = {}
    for prefix, logs, data in runs:
        out = None if not args.out else Path(args.out) if len(runs) == 1 else Path(args.out) / prefix
        everything[prefix] = _analyze_run(args, logs, data, out)
    if args.json:
        print(json.dumps(results.to_jsonable(next(iter(everything.values())) if len(runs) == 1 else everything),
                         indent=2))
    return 0


def _analyze_run(args, files: list[Path], data: dict | None, out: Path | None) -> dict:
    """Analyses the logs of one fio run (with its JSON, or None), prints the metrics (unless
    ``--json``) and, with ``out``, writes a results folder there; returns the metrics."""
    from .. import __version__, fio_logs, plots, report, results

    if files[0].suffix == ".parquet":
        series, metrics, grid = _analyze_stored_series(files[0], bs_bytes=args.bs, round_s=args.round_s)
        job, source = None, f"{files[0].parent.name}/{files[0].name}"
    else:
        series, metrics, grid = analyze_logs(files, interval_s=args.interval, bs_bytes=args.bs,
                                              direction=args.direction, log_avg_msec=args.log_avg_msec,
                                              round_s=args.round_s, fio_json=data)
        job = fio_logs.parse_log_name(files[0])
        source = f"fio:{job.job}" if job else f"fio:{files[0].name}"
    what = (f"{args.label or source}: the stored series" if job is None and files[0].suffix == ".parquet" else
            f"{args.label or source}: {len(files)} fio log{'s' if len(files) != 1 else ''}"
            + (f" and the run's JSON ({job.job}.json)" if data is not None and job else ""))
    if not args.json:
        print_metrics(metrics, what)
        for note in grid.notes:
            print(f"  note: {note}")
    if out is None:
        return metrics
    rd = results.ResultsDir(out, overwrite=args.force)
    summary: dict = {"test": "analyze", "target": source, "ssdlab_version": __version__}
    if args.label:
        summary["label"] = args.label
    if args.span is not None:
        summary["span_pct"] = args.span
    summary.update({
        "logs": [str(f.resolve()) for f in grid.sources],
        "notes": grid.notes,
        "direction": args.direction or "all",
        "log_avg_msec": args.log_avg_msec,
        "fio_json": str((files[0].parent / f"{job.job}.json").resolve()) if data is not None and job else None,
        **metrics,
        **results.run_metadata(sys.argv),
        "complete": True,
    })
    rd.write_series("series", series)
    title = f"{args.label or source} — IOPS from fio logs"
    summary["plots"] = [p.name for p in plots.consistency_plots(rd.path, series, title=title)]
    rd.write_summary(summary)
    report.write_report([rd.path], rd.path / report.REPORT_NAME, metrics=declared_metrics())
    rd.finish()
    if not args.json:
        print(f"  results in {out}/ (summary.json, series.parquet, consistency_*.png, report.html)")
    return metrics


# --------------------------------------------------------------------------- compare

def declared_metrics() -> dict[str, tuple[Metric, ...]]:
    """The figures every test declares, by the ``test`` field of its summaries
    (:func:`~ssdlab.procedures.declare.metrics_by_test`), and those of an ``analyze`` run:
    the consistency test's, with ``ssdlab run``'s per-direction ones after the IOPS mean."""
    declared = metrics_by_test()
    cons = declared["consistency"]
    direction = tuple(m for m in declared["run"] if m.key not in {c.key for c in cons})
    return {**declared, "analyze": (cons[0], *direction, *cons[1:])}


#: Rows every run has a value for, before each test's own figures: (key, label, unit).
COMMON_ROWS = (("span_pct", "span", "%"), ("duration_s", "duration", "s"))


def compare_rows(summaries: list[dict], dirs: list | None = None) -> list[tuple[str, str, str, list]]:
    """(key, label, unit, values) for every compare row some run has: the common ones, then
    each run's test's headline figures (its declaration's ``headline``; a run without one,
    such as ``analyze``, or stopped early, every figure an ``analyze`` run declares), in the
    order they first appear. A run without a figure shows n/a in that row. A row's key is
    the summary key of the declared figure of that label and unit (shown in the key's unit),
    else ``test:label``."""
    from .. import report

    tests = by_summary_name()
    declared = declared_metrics()
    by_label = {(m.label, m.unit): m.key for ms in declared.values() for m in ms if m.scale == 1.0}
    rows: dict[tuple[str, str], list] = {}
    keys: dict[tuple[str, str], str] = {}
    per_run = []
    for i, s in enumerate(summaries):
        t = tests.get(s.get("test"))
        if t is not None and t.headline is not None:
            own = [(by_label.get((label, unit), f"{s.get('test')}:{label}"), label + report.unit_suffix(label, unit),
                    unit, v) for label, unit, v in t.headline(s, dirs[i] if dirs else None)]
        else:
            own = []
        if s.get("complete") is False or not own:  # a run stopped early: also what its journal's series gives
            have = {label for _, label, _, _ in own}
            own += [(m.key if m.scale == 1.0 else f"{s.get('test')}:{m.label}", label, m.unit, m.shown(s))
                    for m in declared["analyze"] if (label := m.label + report.unit_suffix(m.label, m.unit)) not in have]
        common = [(key, label + report.unit_suffix(label, unit), unit, s.get(key)) for key, label, unit in COMMON_ROWS]
        per_run.append(common + own)
    for i, own in enumerate(per_run):
        for key, label, unit, v in own:
            row = rows.setdefault((label, unit), [None] * len(summaries))
            keys.setdefault((label, unit), key)
            row[i] = v
    return [(keys[(label, unit)], label, unit, vals) for (label, unit), vals in rows.items()
            if any(v is not None for v in vals)]


def text_table(header: list[list[str]], rows: list[list[str]]) -> str:
    """Aligned columns: first column left-aligned, the others right-aligned."""
    allrows = header + rows
    ncol = max(len(r) for r in allrows)
    allrows = [r + [""] * (ncol - len(r)) for r in allrows]
    w = [max(len(r[i]) for r in allrows) for i in range(ncol)]
    lines = []
    for j, r in enumerate(allrows):
        cells = [r[0].ljust(w[0])] + [r[i].rjust(w[i]) for i in range(1, ncol)]
        lines.append("  ".join(cells).rstrip())
        if j == len(header) - 1:
            lines.append("  ".join("-" * x for x in w))
    return "\n".join(lines)


def cmd_compare(args) -> int:
    from .. import __version__, plots, report, results

    dirs = _run_dirs(args.dirs)
    runs = []
    for d in dirs:
        notes: list[str] = []
        try:
            # A run killed before writing summary.json or its series is read from its journal.
            s, series = report.read_run(d, notes)
        except (FileNotFoundError, ValueError, OSError) as e:
            raise UserError(f"{d}: {e}; give a results folder written by ssdlab") from None
        runs.append({"dir": d, "summary": s, "series": series, "notes": notes, "drive": report._drive_label(s, d),
                     "variant": s.get("variant") or report.variant_label(s.get("span_pct"))})
    labels = [f"{r['drive']} · {r['variant']}" for r in runs]
    for i, lab in enumerate(labels):
        if labels.count(lab) > 1:
            labels[i] = f"{lab} ({runs[i]['dir'].name})"
    while len(set(labels)) < len(labels):  # same folder names too: number them
        labels = [f"{lab} #{i + 1}" for i, lab in enumerate(labels)]
    summaries = [r["summary"] for r in runs]
    rows = compare_rows(summaries, [r["dir"] for r in runs])
    header = [["metric"] + [str(r["drive"]) for r in runs],
              [""] + [str(r["variant"]) for r in runs],
              ["folder"] + [r["dir"].name + (" (incomplete)" if r["summary"].get("complete") is False else "")
                            for r in runs]]
    body = [[label] + [report.format_value(v, unit) for v in vals] for _, label, unit, vals in rows]
    print(text_table(header, body))
    for r in runs:
        s = r["summary"]
        if s.get("complete") is False:
            print(f"{r['dir']}: incomplete: {s.get('incomplete_reason') or 'unknown reason'}")
            for note in r["notes"]:
                print(f"  {note}")
    if not args.out:
        return 0

    rd = results.ResultsDir(args.out, overwrite=args.force)
    keys = [key for key, *_ in rows]

    def write_csv(f):
        text = io.StringIO()
        w = csv.writer(text, lineterminator="\n")
        w.writerow(["run", "folder", "test", "target"] + keys)
        for i, (lab, r) in enumerate(zip(labels, runs)):
            s = r["summary"]
            vals = [row[3][i] for row in rows]
            w.writerow([lab, str(r["dir"]), s.get("test", ""), s.get("target", "")]
                       + ["" if v is None else repr(float(v)) if isinstance(v, float) else v for v in vals])
        f.write(text.getvalue().encode("utf-8"))

    results.atomic_write(rd / "compare.csv", write_csv)
    title = args.title or f"Comparison of {len(runs)} runs"
    overlay = {}
    for lab, r in zip(labels, runs):
        s = r["series"]
        if s is None:
            continue
        if "t_s" in s and "iops" in s and r["summary"].get("test") not in report.LINE_TESTS:
            overlay[lab] = s
    plot_names = []
    if overlay:
        plot_names = [p.name for p in plots.consistency_plots_multi(rd.path, overlay, title=title, stem="compare")]
    table = {"title": "Main metrics", "columns": ["metric"] + labels,
             "rows": [[label] + [v * 100.0 if unit == "share" and isinstance(v, (int, float)) and not isinstance(v, bool)
                                 else v for v in vals] for _, label, unit, vals in rows]}
    summary = {"test": "compare", "ssdlab_version": __version__, "runs": [str(d.resolve()) for d in dirs],
               "labels": labels, "tables": [table], "plots": plot_names + ["compare.csv"],
               **results.run_metadata(sys.argv), "complete": True}
    rd.write_summary(summary)
    report.write_report(dirs, rd.path / report.REPORT_NAME, title=title, metrics=declared_metrics())
    rd.finish()
    print(f"results in {args.out}/ (compare.csv, {'compare_*.png, ' if plot_names else ''}report.html)")
    return 0
