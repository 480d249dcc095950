"""Whole-drive fill (TechPowerUp's method): purge, then one stream of sequential writes
(1 MiB at QD1) until the span is full, throughput every 0.5 s against the bytes written; then
an idle pause and a second burst of writes, to see how much fast write cache came back.

Reviewers read three things off the fill: how much was written at full speed before the
first sustained drop (the write cache, e.g. an SLC cache), the rate of each phase after it,
and the fill's average. Phases are found by binary segmentation of the MB/s series into
constant-rate pieces, and the summary says how.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from dataclasses import dataclass
from pathlib import Path

if TYPE_CHECKING:  # imported in the functions that use them: `ssdlab --help` starts without them
    import numpy as np

from .. import plots, results
from ..charts import Chart, Line
from ..targets.base import JobSpec, Target
from .common import declared_summary, end_run, failure_of, figure, Interrupted, purge, run_phase, span_bytes
from ..units import MAX_BS_BYTES
from .declare import MAX_QD, Metric, Test, headline_of, param, size

#: A split into two phases is kept when their mean rates differ by at least this fraction.
MIN_RATE_CHANGE = 0.15


@dataclass(frozen=True)
class FillParams:
    span_pct: float = param(100.0, "--span", "percent of the capacity to fill", unit="%", low=0, high=100,
                            low_open=True, metavar="PCT")
    bs_bytes: int = param(1 << 20, "--bs", "sequential write size", unit="bytes", parse=size, low=4096,
                          high=MAX_BS_BYTES, multiple_of=4096)
    qd: int = param(1, "--qd", "queue depth (1: one stream, as TechPowerUp; AnandTech uses 128 KiB at QD32)",
                    low=1, high=MAX_QD)
    interval_s: float = param(0.5, "--interval", "throughput interval", unit="s", low=0.001, high=60)
    pause_s: float = param(60.0, "--pause", "idle time after the fill, before the second burst (0: no burst)",
                           unit="s", low=0, high=86400, series_interval="interval_s")
    burst_pct: float = param(10.0, "--burst", "bytes of the second burst, in percent of the span, written from "
                             "its start", unit="%", low=0, high=100)
    min_phase_pct: float = param(1.0, "--min-phase", "shortest phase the change-point detection keeps, in "
                                 "percent of the bytes written", unit="%", low=0, high=50, low_open=True)
    seed: int = param(1, None, "random seed")


def plan(target: Target, params: FillParams) -> list[JobSpec]:
    """The fill, the pause and the burst."""
    span = span_bytes(target.capacity_bytes, params.span_pct, params.bs_bytes)
    jobs = [JobSpec("fill", "write", bs_bytes=params.bs_bytes, qd=params.qd, span_bytes=span,
                    interval_s=params.interval_s)]
    burst = int(span * params.burst_pct / 100) // params.bs_bytes * params.bs_bytes
    if params.pause_s > 0 and burst > 0:
        jobs += [JobSpec("pause", "idle", duration_s=params.pause_s, interval_s=params.interval_s),
                 JobSpec("burst", "write", bs_bytes=params.bs_bytes, qd=params.qd, span_bytes=burst,
                         interval_s=params.interval_s)]
    return jobs


def written_bytes(series: dict) -> np.ndarray:
    """Bytes written up to the end of each interval (whole bytes): the series' own
    ``host_write_bytes`` per interval where the target counts them (the simulator), else MB/s
    x interval length (fio's MB/s is IOs x block size / interval, so that is whole bytes again)."""
    import numpy as np

    if "host_write_bytes" in series:
        per = np.asarray(series["host_write_bytes"], float)
    else:
        per = np.asarray(series["mbps"], float) * _durations(series) * 1e6
    return np.cumsum(np.rint(per).astype(np.int64))


def written_gb(series: dict) -> np.ndarray:
    """Bytes written up to the end of each interval [GB, 10^9 bytes]."""
    return written_bytes(series) / 1e9


def _durations(series: dict) -> np.ndarray:
    """Length of each interval [s]: fio's ``dt_s``, else the series' regular step."""
    import numpy as np

    return np.asarray(series.get("dt_s", np.full(len(series["t_s"]), _step(series))), float)


def _step(series: dict) -> float:
    import numpy as np

    t = np.asarray(series["t_s"], float)
    return float(t[1] - t[0]) if len(t) > 1 else 1.0


def phases(mbps: np.ndarray, gb: np.ndarray, min_gb: float) -> list[dict]:
    """Constant-rate phases of a fill: binary segmentation (the split of a piece that removes
    the most squared deviation from the piece's mean MB/s) kept where the two sides' mean
    rates differ by at least :data:`MIN_RATE_CHANGE` and each side holds at least ``min_gb``
    GB written; then neighbours closer than that are merged. ``gb``: GB written by the end of
    each interval. Each phase: ``start_gb``, ``end_gb``, ``mbps`` (mean), ``intervals``."""
    import numpy as np

    x = np.asarray(mbps, float)
    n = len(x)
    if n == 0:
        return []
    c1 = np.concatenate([[0.0], np.cumsum(x)])
    c2 = np.concatenate([[0.0], np.cumsum(x * x)])
    g0 = np.concatenate([[0.0], np.asarray(gb, float)])

    def sse(a, b):  # squared deviations from the mean of x[a:b] (a, b may be arrays)
        m = b - a
        s = c1[b] - c1[a]
        return c2[b] - c2[a] - s * s / np.maximum(m, 1)

    def differ(a: int, k: int, b: int) -> bool:
        left, right = x[a:k].mean(), x[k:b].mean()
        return abs(left - right) >= MIN_RATE_CHANGE * max(left, right, 1e-12)

    cuts, todo = [0, n], [(0, n)]
    while todo:
        a, b = todo.pop()
        ks = np.arange(a + 1, b)
        ks = ks[(g0[ks] - g0[a] >= min_gb) & (g0[b] - g0[ks] >= min_gb)]
        if not ks.size:
            continue
        k = int(ks[np.argmin(sse(a, ks) + sse(ks, b))])
        if differ(a, k, b):
            cuts.append(k)
            todo += [(a, k), (k, b)]
    cuts = sorted(cuts)
    merged = [0]
    for k, nxt in zip(cuts[1:-1], cuts[2:]):
        if differ(merged[-1], k, nxt):
            merged.append(k)
    merged.append(n)
    return [{"start_gb": float(g0[a]), "end_gb": float(g0[b]), "mbps": float(x[a:b].mean()), "intervals": int(b - a)}
            for a, b in zip(merged[:-1], merged[1:])]


def analyze_fill(series: dict, min_phase_pct: float) -> dict:
    """The fill's metrics: phases, write cache (bytes written before the first phase whose rate
    is at least :data:`MIN_RATE_CHANGE` below the first phase's; None when the rate never
    drops), average MB/s and time."""
    import numpy as np

    done = written_bytes(series)
    gb = done / 1e9
    mbps = np.asarray(series["mbps"], float)
    full = mbps[:-1] if len(mbps) > 2 else mbps  # the last interval is partial
    min_gb = float(gb[len(full) - 1]) * min_phase_pct / 100 if len(full) else 0.0
    found = phases(full, gb[:len(full)], min_gb)
    cache = None
    if found and any(p["mbps"] <= (1 - MIN_RATE_CHANGE) * found[0]["mbps"] for p in found[1:]):
        cache = int(done[found[0]["intervals"] - 1])  # written by the end of the first phase
    total_s = float(np.sum(_durations(series)))
    return {"phases": found, "cache_bytes": cache, "cache_mbps": found[0]["mbps"] if cache else None,
            "after_cache_mbps": [p["mbps"] for p in found[1:]] if cache else [],
            "fill_mbps_mean": float(gb[-1] * 1e3 / total_s) if total_s else None,
            "written_bytes": int(done[-1]) if len(done) else 0, "fill_s": total_s,
            "phase_method": (f"binary segmentation of MB/s per interval into constant-rate phases: a split is "
                             f"kept when the two sides' mean rates differ by at least {MIN_RATE_CHANGE:.0%} and "
                             f"each side holds at least {min_phase_pct:g} % of the bytes written ({min_gb:,.2f} GB)")}


def _with_gb(series: dict) -> dict:
    return {**series, "written_gb": written_gb(series)}


def run(target: Target, params: FillParams, out, *, argv=None, overwrite: bool = False, progress=None) -> dict:
    """Runs the fill (and pause and burst) into the results folder ``out``; returns the summary."""
    rd = out if isinstance(out, results.ResultsDir) else results.ResultsDir(out, overwrite=overwrite)
    jobs = plan(target, params)
    summary = declared_summary("fill", target, params, argv)
    summary["span_bytes"] = jobs[0].span_bytes
    summary["purge"] = purge(target)
    done: dict[str, dict] = {}
    complete, error = True, None
    try:
        for job in jobs:
            r = run_phase(target, job, {"fill": "whole-drive fill", "pause": "idle pause",
                                        "burst": "write burst after the pause"}[job.name], progress)
            done[job.name] = r.series
    except (Interrupted, KeyboardInterrupt) as e:
        complete, error = False, failure_of(e)
        if isinstance(e, Interrupted) and e.result.job.pattern == "write":
            done[e.result.job.name] = e.result.series
    for name in ("fill", "burst"):
        if name in done and len(done[name]["t_s"]):
            rd.write_series(name, _with_gb(done[name]))
    if "fill" in done and len(done["fill"]["t_s"]):
        summary.update(analyze_fill(done["fill"], params.min_phase_pct))
        _burst(summary, done.get("burst"), params)
        _plot(rd, target, summary, done)
    end_run(rd, summary, complete, error)
    return summary


def _burst(summary: dict, series: dict | None, params: FillParams) -> None:
    """How much fast cache the pause gave back: bytes of the burst written at (at least 80 %
    of) the fill's cache rate; None without a cache or a burst."""
    import numpy as np

    summary.update(dict.fromkeys(("burst_mbps_mean", "cache_after_pause_bytes", "cache_after_pause_pct", "burst_bytes")))
    if series is None or not len(series["t_s"]) or not summary.get("cache_mbps"):
        return
    done = written_bytes(series)
    fast = np.asarray(series["mbps"], float) >= (1 - MIN_RATE_CHANGE) * summary["cache_mbps"]
    first_slow = int(np.argmin(fast)) if not fast.all() else len(fast)
    back = int(done[first_slow - 1]) if first_slow else 0
    burst_s = float(np.sum(_durations(series)))
    summary["burst_mbps_mean"] = float(done[-1] / 1e6 / burst_s) if burst_s > 0 else None
    summary["cache_after_pause_bytes"] = back
    summary["cache_after_pause_pct"] = 100.0 * back / summary["cache_bytes"]
    summary["burst_bytes"] = int(done[-1])


def _plot(rd, target: Target, summary: dict, done: dict) -> None:
    series = {name: _with_gb(done[name]) for name in ("fill", "burst") if name in done and len(done[name]["t_s"])}
    title = f"{target.name}: whole-drive fill, {summary['bs_bytes'] // 1024} KiB QD{summary['qd']}"
    lines = [Line("mbps", "fill", "MB/s")]
    if "burst" in series:
        lines.append(Line("mbps", f"after {summary['pause_s']:g} s idle", "MB/s", series="burst"))
    charts = [Chart("fill", "written_gb", tuple(lines), title, "written (GB)", "MB/s", label="MB/s vs written",
                    file="fill")]
    if "slc_cache_bytes" in series["fill"]:  # a simulated drive with a pseudo-SLC cache: why the rate changes
        step = _step(series["fill"])
        charts += [
            Chart("fill", "written_gb", (Line("slc_cache_bytes", "held in the SLC cache", "GB", scale=1e-9),),
                  f"{title}: host data held in the SLC cache", "written (GB)", "GB", label="SLC cache"),
            Chart("fill", "written_gb", (Line("fold_bytes", "folding", "MB/s", scale=1e-6 / step),
                                         Line("mbps", "host writes", "MB/s")),
                  f"{title}: folding into the native mode", "written (GB)", "MB/s", label="folding")]
    summary["plots"] = [p.name for p in plots.chart_files(rd.path, charts, series)]
    summary["plot"] = [c.hint() for c in charts]


def show(s: dict) -> None:
    """The lines printed at the end."""
    print(f"{s['target']}  fill of {s['span_bytes'] / 1e9:,.1f} GB: {figure(s.get('fill_mbps_mean'), ',.0f', 'MB/s')} "
          f"average, {figure(s.get('fill_s'), ',.1f', 's')}")
    if s.get("cache_bytes"):
        rates = ", then ".join(f"{r:,.0f}" for r in s["after_cache_mbps"])
        print(f"  write cache {s['cache_bytes'] / 1e9:,.1f} GB at {s['cache_mbps']:,.0f} MB/s, then {rates} MB/s")
    elif "phases" in s:
        print("  no sustained drop in write speed: no write cache found")
    if s.get("cache_after_pause_bytes") is not None:
        print(f"  after {s['pause_s']:g} s idle: {s['cache_after_pause_bytes'] / 1e9:,.1f} GB at cache speed "
              f"({s['cache_after_pause_pct']:.0f} % of the cache)")


#: The fill's findings: cache size and speed, the rate after it, the average, and what an idle
#: pause gave back; then what it wrote.
METRICS = (
    Metric("cache_bytes", "write cache", "GB", scale=1e-9, headline=True),
    Metric("cache_mbps", "in-cache write", "MB/s", headline=True),
    Metric("after_cache_mbps", "after the cache", "MB/s", path=("after_cache_mbps", 0), headline=True),
    Metric("fill_mbps_mean", "whole-drive fill average", "MB/s", headline=True),
    Metric("fill_s", "fill time", "s", headline=True),
    Metric("cache_after_pause_bytes", "cache back after the pause", "GB", scale=1e-9, headline=True),
    Metric("cache_after_pause_pct", "cache back after the pause, of the cache", "%"),
    Metric("written_bytes", "written by the fill", "GB", scale=1e-9),
    Metric("burst_mbps_mean", "burst after the pause, average", "MB/s"),
    Metric("burst_bytes", "burst after the pause", "GB", scale=1e-9),
)


TEST = Test(
    name="fill",
    help="whole-drive fill: sequential writes until full, MB/s vs GB written, write-cache size and phases",
    description=__doc__.replace("%", "%%"),
    params=FillParams, plan=plan, run=run, show=show, headline=headline_of(METRICS), metrics=METRICS)
