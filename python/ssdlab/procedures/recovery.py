"""TRIM and idle recovery, the Plextor M3 sequence (seed 000): HD Tach-like sweeps of a
clean drive, after a random-write torture, after idle time, and after TRIM.

1. purge, then the **clean** sweep;
2. torture: sequential fill of the span (128 KiB, QD32) so the drive is full, then 4 KiB
   random writes at QD32 over the whole span for ``torture_min`` minutes (20; the review's
   second variant is 60), then the **after torture** sweep;
3. purge, fill and torture again (see below), then ``idle_min`` minutes without host I/O
   (40), in which a drive with idle-time garbage collection cleans up, then the **after idle**
   sweep;
4. TRIM of the whole span, then the **after TRIM** sweep.

Each sweep is :func:`ssdlab.procedures.sweep.sweep` (write pass, then read pass) over whole
zones by default: the write pass rewrites the whole span, as HD Tach's write test does. That
is what makes the seed's after-torture curve: the pass starts on a drive whose blocks are
full of scattered valid data (slow, foreground GC copies them) and, as its own writes empty
whole blocks, speeds up towards the last LBAs. A sampled sweep (``zone_bytes`` = a size or
None for the sweep's default sample, ``--zone-bytes``) writes a few percent of the span and
changes the drive little, but it cannot show that rise; on a real drive it saves the time
of four full writes of the span.

**Why the drive is tortured twice.** A sweep writes the zones it measures, as HD Tach does, and
a second sweep at the same positions rewrites exactly the LBAs the first one wrote
sequentially: whole blocks that the drive frees without copying anything. A sweep that follows
another therefore reads as a recovery the drive never made (256 GB default profile before it
had idle GC, 20 min torture: 73 MB/s after torture, 291 MB/s on an immediate second sweep). The review
avoided this: before the idle test it "secure erased the drive, reran our 20 minute torture
test and let the drive idle for 40 minutes". So does this test by default: after the
after-torture sweep it purges, fills and tortures again, then idles. ``retorture=False``
(``--no-retorture``) idles right after the after-torture sweep instead (one fill and one
torture less; on a real drive that saves the fill time plus ``torture_min``), and then "after
idle" includes that self-cleaning. The TRIM step follows the after-idle sweep: TRIM unmaps the
whole span, so no earlier sweep leaves a trace there.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from .. import plots, report, results
from ..charts import Chart, Line
from ..targets.base import JobSpec, Target
from .common import (FILL_BS_BYTES, base_summary, done_with_drive, end_run, failure_of, Interrupted, purge, run_phase,
                    span_bytes)
from ..units import MAX_BS_BYTES, human_size
from .declare import MAX_DURATION_S, MAX_QD, Metric, Test, headline_of, param, size
from .sweep import (FULL_DEFAULT, MAX_ZONES, ZONE_BYTES_HELP, parse_zone_bytes, SWEEP_BS_BYTES, SWEEP_QD, SWEEP_ZONES, WHOLE_ZONES, SweepInterrupted, ZoneLayout, describe_sweep,
                    edge_zones, fmt_mbps, sweep, sweep_jobs, sweep_stats, sweep_table, trim_bs,
                    zone_layout, zone_shape)

#: (id, label) of the four sweeps, in order.
STAGES = (("clean", "clean"), ("after_torture", "after torture"), ("after_idle", "after idle"),
          ("after_trim", "after TRIM"))


@dataclass(frozen=True)
class RecoveryParams:
    span_pct: float = param(100.0, "--span", "percent of the capacity to test; 75 emulates 25% extra spare area",
                            unit="%", low=0, high=100, low_open=True)
    torture_min: float = param(20.0, "--torture-min", "4 KiB random writes at QD32 on the full drive (the review's "
                               "second variant: 60)", unit="min", low=0, low_open=True, high=MAX_DURATION_S / 60,
                               series_interval="interval_s", metavar="MIN")
    idle_min: float = param(40.0, "--idle-min", "time without host I/O before the third sweep", unit="min", low=0,
                            high=MAX_DURATION_S / 60, metavar="MIN")
    torture_qd: int = 32
    torture_bs_bytes: int = 4096
    zones: int = param(SWEEP_ZONES, "--zones", "zones across the span, one measurement per zone and direction",
                       low=1, high=MAX_ZONES)
    #: Sweep bytes per zone; WHOLE_ZONES (-1, the default): full passes, as HD Tach's write
    #: test; None: the sweep's default sample.
    zone_bytes: int | None = param(WHOLE_ZONES, "--zone-bytes", ZONE_BYTES_HELP, parse=parse_zone_bytes,
                                   metavar="SIZE", default_text=FULL_DEFAULT)
    sweep_bs_bytes: int = param(SWEEP_BS_BYTES, "--bs", "sequential request size of the sweeps", unit="bytes",
                                parse=size, low=4096, high=MAX_BS_BYTES, multiple_of=4096)
    sweep_qd: int = param(SWEEP_QD, "--qd", "sequential queue depth of the sweeps (like HD Tach: one request at a "
                          "time)", low=1, high=MAX_QD)
    read: bool = param(True, "--no-read", "sweeps measure writes only", off_switch=True)
    #: Purge, fill and torture again before the idle period (as the review did).
    retorture: bool = param(True, "--no-retorture", "idle right after the after-torture sweep instead of purging, "
                            "filling and torturing again first as the review did (saves a fill and --torture-min; "
                            "but the after-idle sweep then rewrites what the previous sweep wrote, which a drive "
                            "frees cheaply, and overstates idle recovery)", off_switch=True)
    interval_s: float = param(1.0, "--interval", "IOPS interval of the torture's random writes", unit="s",
                              low=0.001, high=60, metavar="S")
    seed: int = param(1, None, "random seed")


def _layout(target: Target, p: RecoveryParams) -> tuple[int, ZoneLayout]:
    span = span_bytes(target.capacity_bytes, p.span_pct, max(FILL_BS_BYTES, p.sweep_bs_bytes))
    return span, zone_layout(span, p.zones, p.zone_bytes, p.sweep_bs_bytes)


def phases(target: Target, p: RecoveryParams) -> dict[str, JobSpec]:
    """The non-sweep phases by name: fill, torture, refill, retorture, idle, trim."""
    span, _ = _layout(target, p)
    fill = JobSpec("fill", "write", bs_bytes=FILL_BS_BYTES, qd=32, span_bytes=span)
    torture = JobSpec("torture", "randwrite", bs_bytes=p.torture_bs_bytes, qd=p.torture_qd, span_bytes=span,
                      duration_s=p.torture_min * 60.0, interval_s=p.interval_s)
    return {
        "fill": fill,
        "torture": torture,
        "refill": replace(fill, name="refill"),
        "retorture": replace(torture, name="retorture"),
        "idle": JobSpec("idle", "idle", duration_s=p.idle_min * 60.0),
        "trim": JobSpec("trim", "trim", bs_bytes=trim_bs(span), qd=32, span_bytes=span),
    }


def steps(p: RecoveryParams) -> list[tuple[str, str]]:
    """The sequence as (kind, name): ("sweep", stage), ("phase", phase name) or ("purge", "")."""
    again = [("purge", ""), ("phase", "refill"), ("phase", "retorture")] if p.retorture else []
    return ([("sweep", "clean"), ("phase", "fill"), ("phase", "torture"), ("sweep", "after_torture")] + again
            + [("phase", "idle"), ("sweep", "after_idle"), ("phase", "trim"), ("sweep", "after_trim")])


def plan(target: Target, p: RecoveryParams) -> list[JobSpec]:
    """Every phase in order (for ``--dry-run``; purges are not phases)."""
    _, layout = _layout(target, p)
    ph = phases(target, p)
    jobs: list[JobSpec] = []
    for kind, name in steps(p):
        if kind == "sweep":
            jobs += [j for _, j in sweep_jobs(layout, qd=p.sweep_qd, read=p.read, label=name)]
        elif kind == "phase":
            jobs.append(ph[name])
    return jobs


def _phase_totals(result) -> dict:
    t = dict(result.totals)
    dur = float(t.get("duration_s") or 0.0)
    ios = float(t.get("ios") or 0)
    if dur > 0 and result.job.pattern not in ("idle", "trim"):
        t["iops_mean"] = ios / dur
        t["mbps_mean"] = ios * result.job.bs_bytes / dur / 1e6
    return t


def run(target: Target, p: RecoveryParams, out: str | Path | results.ResultsDir, *,
        argv: list[str] | None = None, overwrite: bool = False, progress: bool | None = None) -> dict:
    """Runs the sequence and writes ``out``: ``sweeps.parquet`` (one row per zone; columns
    ``write_mbps_<stage>`` and ``read_mbps_<stage>``), the ``fill``/``torture`` (and
    ``refill``/``retorture``) series, the overlay
    plots ``recovery_write`` / ``recovery_read`` and ``recovery_stages`` (bars), summary.json.
    Returns the summary. On Ctrl-C what was measured is written, marked incomplete, and
    KeyboardInterrupt is re-raised."""
    span, layout = _layout(target, p)
    ph = phases(target, p)
    rd = out if isinstance(out, results.ResultsDir) else results.ResultsDir(out, overwrite=overwrite)
    summary = base_summary(
        "recovery", target, p.seed, argv, span_pct=p.span_pct, span_bytes=span, torture_min=p.torture_min,
        idle_min=p.idle_min, torture_qd=p.torture_qd, torture_bs_bytes=p.torture_bs_bytes, zones=layout.zones,
        zone_size_bytes=layout.zone_size_bytes, zone_bytes=layout.sample_bytes, sweep_bs_bytes=layout.bs_bytes,
        sweep_qd=p.sweep_qd, read_pass=p.read, retorture_before_idle=p.retorture, sweep_write_bytes=layout.write_bytes)
    summary["purge"] = purge(target)
    summary["preconditioning"] = (
        f"{summary['purge']['method']}; clean sweep; then sequential fill of {human_size(span)} (128 KiB, QD32) and "
        f"{p.torture_bs_bytes // 1024} KiB random writes at QD{p.torture_qd} over the span for {p.torture_min:g} min; "
        + ("before the idle period the drive is purged, filled and tortured again (as in the review), so no "
           "earlier sweep's writes are rewritten by the after-idle sweep" if p.retorture else
           "the idle period follows the after-torture sweep directly (--no-retorture): the after-idle sweep "
           "rewrites what that sweep wrote, which overstates idle recovery"))
    summary["method"] = (describe_sweep(layout, p.sweep_qd) + "; each sweep writes "
                         f"{human_size(layout.write_bytes)} ({layout.write_bytes / span * 100:.1f} % of the span), "
                         "which is part of the drive's history")
    sweeps = layout.position_columns(target.capacity_bytes)
    summary["stages"] = {}
    done: list[str] = []

    def measure(stage: str, label: str) -> None:
        s = sweep(target, layout, qd=p.sweep_qd, read=p.read, label=f"sweep {label}",
                  progress=progress)
        _store(stage, label, s)

    def _store(stage: str, label: str, s: dict) -> None:
        sweeps[f"write_mbps_{stage}"] = s["write_mbps"]
        sweeps[f"read_mbps_{stage}"] = s["read_mbps"]
        shape = zone_shape(s["write_mbps"])
        summary["stages"][stage] = {"label": label, **sweep_stats(s), "write_mbps_first_zones": shape["first_zones"],
                                    "write_mbps_last_zones": shape["last_zones"], "write_trend": shape["trend"]}
        done.append(stage)
        rd.write_series("sweeps", sweeps)
        rd.write_summary(summary)

    what = f"{p.torture_bs_bytes // 1024} KiB QD{p.torture_qd}"
    bar_labels = {"fill": "sequential fill", "torture": f"torture {what}", "refill": "sequential fill (again)",
                  "retorture": f"torture {what} (again)", "idle": f"idle {p.idle_min:g} min", "trim": "TRIM span"}
    series_kept = ("fill", "torture", "refill", "retorture")

    def step(key: str) -> None:
        result = run_phase(target, ph[key], bar_labels[key], progress)
        if key in series_kept:
            rd.write_series(key, result.series)
        summary[key] = _phase_totals(result)

    stages = dict(STAGES)
    try:
        for kind, name in steps(p):
            if kind == "sweep":
                measure(name, stages[name])
            elif kind == "purge":
                summary["purge_before_idle"] = purge(target)
            else:
                step(name)
        complete, error = True, None
    except (Interrupted, KeyboardInterrupt) as e:
        complete, error = False, failure_of(e)
        if isinstance(e, SweepInterrupted):
            stage = next(s for s, _ in STAGES if s not in done)
            _store(stage, stages[stage] + " (interrupted)", e.sweep)
        elif isinstance(e, Interrupted) and e.result is not None:
            key = e.result.job.name
            if key in series_kept:
                rd.write_series(key, e.result.series)
            summary[key] = {**_phase_totals(e.result), "complete": False}
    _finish(rd, target, summary, sweeps, done, p, layout)
    end_run(rd, summary, complete, error)
    return summary


def _finish(rd, target: Target, summary: dict, sweeps: dict, done: list[str], p: RecoveryParams,
            layout: ZoneLayout) -> None:
    done_with_drive(target, summary)
    st = summary["stages"]
    clean = st.get("clean", {}).get("write_mbps_mean")
    for stage in done:
        m = st[stage]["write_mbps_mean"]
        st[stage]["write_vs_clean_pct"] = m / clean * 100.0 if clean and m is not None else None
        summary[f"{stage}_write_mbps"] = m
        summary[f"{stage}_read_mbps"] = st[stage]["read_mbps_mean"]
    table = sweep_table([(st[s]["label"], st[s]) for s in done],
                        f"{target.name}: sequential {layout.bs_bytes // 1024} KiB QD{p.sweep_qd} MB/s per stage "
                        f"({p.torture_min:g} min torture, {p.idle_min:g} min idle)")
    n = edge_zones(layout.zones)
    summary["edge_zones"] = n
    edge = f"{n} zone{'s' if n != 1 else ''}"
    table["columns"].append("write vs clean (%)")
    shape = {"title": f"{target.name}: sequential write across the pass, first vs last {edge} "
                      f"(10 % of the {layout.zones} zones)",
             "columns": ["stage", f"first {edge} (MB/s)", f"last {edge} (MB/s)", "last / first",
                         "trend (Spearman)"],
             "rows": [],
             "note": (f"Mean sequential write MB/s of the first and the last {edge} of each pass. Trend: Spearman "
                      "rank correlation of write MB/s with position: +1 = rises steadily from the first zones to "
                      "the last, -1 = falls, ~0 = no trend.")}
    for row, s in zip(table["rows"], done):
        v, t = st[s]["write_vs_clean_pct"], st[s]["write_trend"]
        first, last = st[s]["write_mbps_first_zones"], st[s]["write_mbps_last_zones"]
        row.append(None if v is None else round(v, 1))
        shape["rows"].append([st[s]["label"], fmt_mbps(first), fmt_mbps(last),
                              round(last / first, 2) if first and last is not None else None,
                              None if t is None else round(t, 2)])
        summary[f"{s}_write_mbps_first_zones"] = first
        summary[f"{s}_write_mbps_last_zones"] = last
    idle = summary.get("idle") or {}
    if "mixed_blocks_before" in idle:
        k = idle["mixing_regions"]
        note = (f"Idle {p.idle_min:g} min: GC wrote {idle['nand_write_bytes'] / 1e9:.1f} GB; blocks holding data "
                f"of more than 1/{k} of the LBA span: {idle['mixed_blocks_before']:,} of "
                f"{idle['blocks_with_data_before']:,} before, {idle['mixed_blocks_after']:,} of "
                f"{idle['blocks_with_data_after']:,} after (a full write pass empties such blocks only at its end, "
                "so they make it slow).")
        table["note"] = f"{table['note']} {note}" if table.get("note") else note
    table["bars"] = ["write avg (MB/s)"]  # the reviewers' bar table, in the report
    summary["tables"] = [table, shape]
    what = f"{layout.bs_bytes // 1024} KiB QD{p.sweep_qd}, {p.torture_min:g} min torture, {p.idle_min:g} min idle"
    charts = [Chart("sweeps", "position_pct", tuple(Line(f"{d}_mbps_{s}", st[s]["label"], "MB/s") for s in done),
                    f"{target.name} — sequential {d} ({what})", "position (% of capacity)", "MB/s",
                    label=f"sweeps: {d} MB/s", file=f"recovery_{d}")
              for d in ("write",) + (("read",) if p.read else ())] if done else []
    summary["plot"] = [c.hint() for c in charts]
    # The torture phases over time in the report: IOPS, latency, and on the simulator WA, free blocks, GC.
    summary["phase_plots"] = report.phase_hints(
        rd.path, [("torture", "torture"), ("retorture", "torture (again)")],
        f"torture, {p.torture_bs_bytes // 1024} KiB random write QD{p.torture_qd}", "torture: ")
    names = [x.name for x in plots.chart_files(rd.path, charts, {"sweeps": sweeps})]
    if done:
        bars = {st[s]["label"]: st[s]["write_mbps_mean"] for s in done}
        names += [x.name for x in plots.bar_table_plot(
            rd / "recovery_stages", bars, "average sequential write (MB/s)",
            f"{target.name} — average write MB/s per stage", formats=("png", "svg"))]
    summary["plots"] = names


def _mb(v) -> str:
    return "n/a" if v is None else f"{v:,.1f}"


def show(s: dict) -> None:
    """The lines printed at the end of a run."""
    n = s.get("edge_zones", 1)
    print(f"{s['target']}  recovery: {s['torture_min']:g} min torture, {s['idle_min']:g} min idle; "
          f"sequential write MB/s per stage (avg / min / % of clean / first {n} zones -> last {n} zones)")
    for st in s["stages"].values():
        pct = st.get("write_vs_clean_pct")
        print(f"  {st['label']:<16} {_mb(st['write_mbps_mean']):>8} / {_mb(st['write_mbps_min']):>8}"
              + ("         " if pct is None else f"  {pct:5.1f} %")
              + f"  {_mb(st.get('write_mbps_first_zones')):>8} -> {_mb(st.get('write_mbps_last_zones'))}")


#: The write pass's mean MB/s at each stage (clean, after torture, idle, TRIM), and the first
#: and last zones after torture.
METRICS = (
    *(Metric(f"{key}_write_mbps", f"write pass {label}", "MB/s", headline=True)
      for label, key in (("clean", "clean"), ("after torture", "after_torture"), ("after idle", "after_idle"),
                         ("after TRIM", "after_trim"))),
    Metric("after_torture_write_mbps_first_zones", "write pass after torture, first zones", "MB/s", headline=True),
    Metric("after_torture_write_mbps_last_zones", "write pass after torture, last zones", "MB/s"),
)


TEST = Test(
    name="recovery",
    help="TRIM and idle recovery (Plextor M3 sequence): sweeps clean / after torture / idle / TRIM",
    description="The Plextor M3 sequence: purge; clean sweep; sequential fill of the span (128 KiB, QD32) and 4 KiB "
                "random writes at QD32 over the span for --torture-min minutes; sweep; purge, fill and torture again "
                "(as the review did, so the idle sweep does not rewrite the previous sweep's zones); --idle-min "
                "minutes without I/O; sweep; TRIM of the span; sweep. Each sweep's write pass rewrites the whole "
                "span by default, as HD Tach's (--zone-bytes). Times are simulated time on sim: targets. Writes "
                "summary.json (stages: average/min/max MB/s per sweep; tables), sweeps.parquet/.csv (one column per "
                "stage and direction), fill/torture series, the overlay plots recovery_write/recovery_read (MB/s vs "
                "position, one line per stage), recovery_stages and report.html. Sizes: bytes or 4KiB, 128KiB, "
                "64MiB, 8GB (the size rule below).",
    params=RecoveryParams, plan=plan, run=run, show=show, headline=headline_of(METRICS), metrics=METRICS)
