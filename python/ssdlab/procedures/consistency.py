"""Performance consistency (seeds 001 and 004): purge, sequential fill of the span (128 KiB,
QD32), then 4 KiB random writes at QD32 over the span for a duration (default 2000 s), with
IOPS every second (``--interval``); the reviewers' three scatter plots and the consistency
metrics.

A span below 100 % emulates extra spare area (``--span 75`` = 25 % more spare), as the
reviewers did by partitioning only part of the drive.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .. import analysis, plots, report, results
from ..targets.base import DRIVE_COUNTERS, SIMULATED, JobSpec, Target
from ..units import MAX_BS_BYTES, human_size
from .declare import MAX_DURATION_S, MAX_QD, Metric, Test, at_most, headline_of, metrics_by_test, param, size
from .common import (FILL_BS_BYTES, add_endurance, base_summary, done_with_drive, end_run, failure_of, figure,
                    Interrupted, mark_stopped, purge, raise_stopped, run_phase, show_endurance, span_bytes)


@dataclass(frozen=True)
class ConsistencyParams:
    span_pct: float = param(100.0, "--span", "percent of the capacity to fill and test; 75 emulates 25% extra "
                            "spare area, as the reviewers did", unit="%", low=0, high=100, low_open=True,
                            metavar="PCT")
    duration_s: float = param(2000.0, "--duration", "random-write time (simulated time on sim: targets)",
                              unit="s", low=0, low_open=True, high=MAX_DURATION_S, series_interval="interval_s",
                              metavar="S")
    qd: int = param(32, "--qd", "queue depth of the random writes", low=1, high=MAX_QD, metavar="N")
    bs_bytes: int = param(4096, "--bs", "random-write block size, e.g. 4KiB", unit="bytes", parse=size, low=4096,
                          high=MAX_BS_BYTES, multiple_of=4096, metavar="SIZE")
    interval_s: float = param(1.0, "--interval", "IOPS interval of the random writes (the reviewers log every "
                              "second; 0.1 resolves short bursts)", unit="s", low=0.001, high=60, metavar="S")
    seed: int = param(1, None, "random seed")
    #: Steady-state rounds for the SNIA rule [s].
    round_s: float = 60.0


def steady_state_write_amplification(series: dict, onset_s: float | None) -> float | None:
    """NAND bytes / host bytes from the steady-state onset to the end (None if unknown)."""
    import numpy as np

    if onset_s is None or "nand_write_bytes" not in series:
        return None
    sel = series["t_s"] >= onset_s
    return analysis.write_amplification(float(np.sum(series["host_write_bytes"][sel])),
                                        float(np.sum(series["nand_write_bytes"][sel])))


def plan(target: Target, params: ConsistencyParams) -> list[JobSpec]:
    """The phases: sequential fill of the span, then random writes for the duration."""
    span = span_bytes(target.capacity_bytes, params.span_pct, FILL_BS_BYTES)
    at_most("--bs", params.bs_bytes, span, "the span under test")
    return [
        JobSpec("fill", "write", bs_bytes=FILL_BS_BYTES, qd=32, span_bytes=span),
        JobSpec("randwrite", "randwrite", bs_bytes=params.bs_bytes, qd=params.qd, span_bytes=span,
                duration_s=params.duration_s, interval_s=params.interval_s),
    ]


def run(target: Target, params: ConsistencyParams, out: str | Path | results.ResultsDir, *,
        argv: list[str] | None = None, overwrite: bool = False, progress: bool | None = None) -> dict:
    """Runs the test on ``target`` and writes the results folder ``out``; returns the summary.
    On Ctrl-C the partial series and a summary marked incomplete are written, then
    KeyboardInterrupt is re-raised."""
    rd = out if isinstance(out, results.ResultsDir) else results.ResultsDir(out, overwrite=overwrite)
    fill, rand = plan(target, params)
    span = fill.span_bytes
    summary = base_summary("consistency", target, params.seed, argv, span_pct=params.span_pct, span_bytes=span,
                           qd=params.qd, bs_bytes=params.bs_bytes, requested_duration_s=params.duration_s)
    summary["purge"] = purge(target)
    summary["preconditioning"] = (
        f"{summary['purge']['method']}; sequential fill of {human_size(span)} with 128 KiB writes at QD32"
    )
    try:
        fill_result = run_phase(target, fill, "sequential fill", progress)
        rd.write_series("fill", fill_result.series)
        summary["fill"] = {**fill_result.totals,
                           "mbps_mean": fill_result.totals["host_write_bytes"] / max(fill_result.totals["duration_s"], 1e-9) / 1e6}
        if SIMULATED not in target.capabilities:
            summary["drive_counters_before"] = _read_drive_counters(target)
        result = run_phase(target, rand, f"4 KiB random write QD{params.qd}", progress)
        complete = True
    except (Interrupted, KeyboardInterrupt) as e:
        result = e.result if isinstance(e, Interrupted) else None
        complete, error = False, failure_of(e)
        if result is None or result.job.name != "randwrite" or not len(result.series["t_s"]):
            if result is not None:
                rd.write_series(result.job.name, result.series)
            end_run(rd, summary, False, error)  # raises
        mark_stopped(rd, summary, error)
    _finish(rd, target, summary, result, params)
    if not complete:
        raise_stopped(error)
    return summary


def _read_drive_counters(target: Target) -> dict:
    """A real target's host/NAND write counters (``FioTarget.counters``); never fails a run."""
    from ..targets import counters as drive_counters  # real drives only (it imports the fio targets' tools)

    if DRIVE_COUNTERS not in target.capabilities:
        return drive_counters.unavailable(f"{type(target).__name__} has no drive counters")
    try:
        return target.counters()
    except Exception as e:  # a counter read must not cost the user the test's results
        return drive_counters.unavailable(f"reading the drive's counters failed: {e}")


def _finish(rd, target: Target, summary: dict, result, params: ConsistencyParams) -> None:
    done_with_drive(target, summary)
    series = result.series
    rd.write_series("series", series)
    metrics = analysis.analyze_iops(series["iops"], result.job.interval_s, round_s=params.round_s,
                                    bs_bytes=params.bs_bytes, host_bytes=series.get("host_write_bytes"),
                                    nand_bytes=series.get("nand_write_bytes"))
    summary.update(metrics)
    summary["steady_state_rule"] = analysis.steady_state_rule(params.round_s, "nand_write_bytes" in series)
    summary["duration_s"] = result.totals["duration_s"]
    summary["host_write_bytes"] = result.totals["host_write_bytes"]
    summary["nand_write_bytes"] = result.totals.get("nand_write_bytes")
    summary["write_amplification"] = result.totals.get("write_amplification")
    if SIMULATED in target.capabilities:
        summary["write_amplification_source"] = "simulator (exact)"
    else:  # the drive's own counters around the random-write phase, where it has them
        from ..targets import counters as drive_counters

        before = summary.get("drive_counters_before")
        after = summary["drive_counters_after"] = _read_drive_counters(target) if before is not None else None
        wa, how = drive_counters.write_amplification(before, after)
        summary["write_amplification"] = wa
        summary["write_amplification_source"] = how
    summary["steady_state_write_amplification"] = steady_state_write_amplification(
        series, metrics.get("steady_state_onset_s"))
    add_endurance(summary, target.capacity_bytes)
    summary["latency_us"] = result.latency_us
    summary["complete"] = result.complete
    title = f"{target.name} — 4 KiB random write QD{params.qd}, span {params.span_pct:g}%"
    # The reviewers' zoom: from t=1400 s of a 2000 s run (70 % of shorter runs).
    summary["plots"] = [p.name for p in plots.consistency_plots(rd.path, series, title=title)]
    if report.latency_columns(series):  # per-interval latency vs time, log µs
        summary["plots"] += [p.name for p in plots.latency_plot(rd / "latency", series, title=f"{title}: latency",
                                                                formats=("png", "svg"))]
    rd.write_summary(summary)
    report.write_report([rd.path], rd.path / "report.html", metrics=metrics_by_test())
    if result.complete:
        rd.finish()


def show(s: dict) -> None:
    """The lines printed at the end of a run."""
    interval = s.get("interval_s", 1.0)
    per = "" if interval == 1.0 else f" (per {interval:g} s interval)"
    print(f"{s['target']}  span {s['span_pct']:g}%  {s['duration_s']:.0f} s of 4 KiB random write at QD{s['qd']}")
    print(f"  IOPS{per} mean {figure(s['iops_mean'])}  median {figure(s['iops_median'])}  p1 {figure(s['iops_p1'])}  "
          f"p99 {figure(s['iops_p99'])}  min {figure(s['iops_min'])}")
    stall = ",.0f" if interval >= 1 else ",.1f"
    print(f"  zero-IOPS seconds {figure(s['zero_iops_seconds'], stall)}  longest stall "
          f"{figure(s['longest_stall_s'], stall, 's')}  "
          + ("steady state not reached" if figure(s['steady_state_onset_s']) == "n/a"
             else f"steady state from {figure(s['steady_state_onset_s'], unit='s')}"))
    if s.get("write_amplification") is not None:
        steady = s.get("steady_state_write_amplification")
        print(f"  write amplification {s['write_amplification']:.2f}"
              + (f" (steady state {steady:.2f})" if steady is not None else " (over the whole phase)"))
    show_endurance(s.get("endurance"), s.get("endurance_unavailable"))

#: The consistency test's figures (the analysis of its IOPS series, write amplification,
#: latency, bytes written), in the order the report's table shows them; the headline ones
#: say what the run found.
METRICS = (
    Metric("iops_mean", "IOPS mean", "IOPS", headline=True),
    Metric("iops_median", "IOPS median", "IOPS", headline=True, decimals=0),
    Metric("iops_p1", "IOPS 1st percentile", "IOPS", headline=True, decimals=0),
    Metric("iops_p99", "IOPS 99th percentile", "IOPS"),
    Metric("iops_min", "IOPS min", "IOPS", decimals=0),
    Metric("iops_max", "IOPS max", "IOPS"),
    Metric("mbps_mean", "MB/s mean", "MB/s"),
    Metric("iops_cv", "coefficient of variation"),
    Metric("consistency_score", "consistency score (mean/σ, steady state)"),
    Metric("zero_iops_seconds", "time at zero IOPS", "s", headline=True, decimals=0),
    Metric("longest_stall_s", "longest stall", "s"),
    Metric("fob_iops", "fresh-out-of-box IOPS", "IOPS", headline=True),
    Metric("fob_duration_s", "fresh-out-of-box lasts", "s"),
    Metric("steady_state_onset_s", "steady-state onset", "s", headline=True, decimals=0),
    Metric("steady_state_iops_mean", "steady-state IOPS mean", "IOPS", headline=True),
    Metric("steady_state_iops_median", "steady-state IOPS median", "IOPS"),
    Metric("steady_state_iops_p1", "steady-state IOPS 1st percentile", "IOPS"),
    Metric("bimodal", "bimodal"),
    Metric("low_mode_iops", "low mode", "IOPS"),
    Metric("high_mode_iops", "high mode", "IOPS"),
    Metric("high_mode_share", "time in high mode", "share"),
    Metric("burst_mean_s", "burst length", "s"),
    Metric("burst_period_s", "burst period", "s"),
    Metric("write_amplification", "write amplification", headline=True, decimals=3),
    Metric("steady_state_write_amplification", "write amplification, steady state"),
    Metric("latency_us.p50", "latency p50", "µs"),
    Metric("latency_us.p99", "latency p99", "µs"),
    Metric("latency_us.p99.9", "latency p99.9", "µs", path=("latency_us", "p99.9")),
    Metric("latency_us.max", "latency max", "µs"),
    Metric("host_write_bytes", "host writes", "GB", scale=1e-9),
    Metric("nand_write_bytes", "NAND writes", "GB", scale=1e-9),
)


TEST = Test(
    name="consistency",
    help="performance consistency: fill, then 4 KiB random writes at QD32, IOPS every second",
    description="Performance consistency (AnandTech method): purge, sequential fill of the span (128 KiB, QD32), "
                "then random writes at the queue depth over the span for the duration, logging IOPS and latency "
                "every second. Writes summary.json, series.parquet/.csv, the three review scatter plots (log whole "
                "run; log and linear steady-state zoom), the latency plot and report.html.",
    params=ConsistencyParams, plan=plan, run=run, show=show, headline=headline_of(METRICS),
    metrics=METRICS)
