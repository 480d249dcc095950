"""Used vs new (seed 002): 4 KiB random write throughput of a new drive, a used drive and the
used drive after TRIM, as a table (the review: 13.1 / 6.93 / 12.9 MB/s).

1. **new**: purge, then 4 KiB random writes at QD32 over the span for ``duration_s``;
2. **used**: purge, sequential fill of the span (128 KiB, QD32), then ``dirty_bytes`` of 4 KiB
   random writes at QD32 (default: ``dirty_spans`` = 1 span's worth), so every block holds a mix of
   valid and invalid data and nothing was TRIMmed; then the same measurement;
3. **used after TRIM**: TRIM of the whole span, then the same measurement.

Each measurement is its own phase; MB/s = completed IOs * block size / phase time (10^6
bytes/s). A measurement writes too: at the default 60 s a new 256 GB drive takes ~20 GB
(8 % of it) and stays fresh; on a small drive, keep ``duration_s`` short or the "new"
measurement itself fills the drive and measures a used one.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from .. import plots, report, results
from ..targets.base import JobSpec, Target
from .common import (FILL_BS_BYTES, base_summary, done_with_drive, end_run, failure_of, Interrupted, purge, run_phase,
                    span_bytes)
from ..units import MAX_BS_BYTES
from .declare import MAX_DURATION_S, MAX_QD, MAX_SPANS, Metric, Test, at_most, check, headline_of, param, size
from .sweep import trim_bs

#: (id, label) of the three measurements, in order.
STATES = (("new", "new (purged)"), ("used", "used (full, no TRIM)"), ("trimmed", "used after TRIM"))


def parse_dirty(text: str) -> dict:
    """``--dirty-writes``: a size (``{"dirty_bytes": n}``) or ``Nx``, N times the span
    (``{"dirty_spans": N}``)."""
    t = text.strip().lower()
    if t.endswith("x"):
        try:
            n = float(t[:-1])
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: give bytes (e.g. 8GiB) or a multiple of the span "
                                             "(e.g. 1x, 2.5x)") from None
        if not n >= 0:
            raise argparse.ArgumentTypeError(f"{text!r}: must be >= 0")
        return {"dirty_spans": n, "dirty_bytes": None}
    return {"dirty_bytes": size(text), "dirty_spans": 1.0}


@dataclass(frozen=True)
class UsedParams:
    span_pct: float = param(100.0, "--span", "percent of the capacity to test; 75 emulates 25% extra spare area",
                            unit="%", low=0, high=100, low_open=True)
    duration_s: float = param(60.0, "--duration", "random-write time per state (simulated time on sim: targets)",
                              unit="s", low=0, low_open=True, high=MAX_DURATION_S, series_interval="interval_s")
    qd: int = param(32, "--qd", "queue depth", low=1, high=MAX_QD)
    bs_bytes: int = param(4096, "--bs", "random-write block size", unit="bytes", parse=size, low=4096,
                          high=MAX_BS_BYTES, multiple_of=4096)
    #: Random-write bytes that dirty the filled drive; None: ``dirty_spans`` times the span.
    dirty_bytes: int | None = param(None, None, "random-write bytes after the fill", unit="bytes", low=0)
    dirty_spans: float = param(1.0, "--dirty-writes", "random-write bytes after the fill that make the drive "
                               "'used': a size, or a multiple of the span such as 2x", parse=parse_dirty, low=0, high=MAX_SPANS,
                               metavar="SIZE|Nx", default_text="1x, one span")
    interval_s: float = param(1.0, "--interval", "IOPS interval of the measured random writes", unit="s",
                              low=0.001, high=60, metavar="S")
    seed: int = param(1, None, "random seed")

    def check(self) -> None:
        check(self)


def phases(target: Target, p: UsedParams) -> dict[str, JobSpec]:
    p.check()
    span = span_bytes(target.capacity_bytes, p.span_pct, max(FILL_BS_BYTES, p.bs_bytes))
    at_most("--bs", p.bs_bytes, span, "the span under test")
    if p.dirty_bytes is not None:
        at_most("--dirty-writes", p.dirty_bytes, MAX_SPANS * span, f"{MAX_SPANS} times the span under test")
    dirty = int(p.dirty_spans * span) if p.dirty_bytes is None else p.dirty_bytes
    dirty = dirty // p.bs_bytes * p.bs_bytes

    def measure(name: str) -> JobSpec:
        return JobSpec(name, "randwrite", bs_bytes=p.bs_bytes, qd=p.qd, span_bytes=span, duration_s=p.duration_s,
                       interval_s=p.interval_s)

    ph = {"new": measure("new"),
          "fill": JobSpec("fill", "write", bs_bytes=FILL_BS_BYTES, qd=32, span_bytes=span)}
    if dirty:
        ph["dirty"] = JobSpec("dirty", "randwrite", bs_bytes=p.bs_bytes, qd=p.qd, span_bytes=span, io_bytes=dirty)
    ph["used"] = measure("used")
    ph["trim"] = JobSpec("trim", "trim", bs_bytes=trim_bs(span), qd=32, span_bytes=span)
    ph["trimmed"] = measure("trimmed")
    return ph


def plan(target: Target, p: UsedParams) -> list[JobSpec]:
    """Every phase in order (for ``--dry-run``; a purge precedes "new" and "fill")."""
    return list(phases(target, p).values())


def _measurement(result, label: str) -> dict:
    t = result.totals
    dur = float(t.get("duration_s") or 0.0)
    iops = float(t.get("ios") or 0) / dur if dur > 0 else None
    out = {"label": label, "mbps": None if iops is None else iops * result.job.bs_bytes / 1e6, "iops": iops,
           "duration_s": dur, "host_write_bytes": t.get("host_write_bytes")}
    if t.get("write_amplification") is not None:
        out["write_amplification"] = t["write_amplification"]
    if result.latency_us:
        out["latency_us"] = result.latency_us
    if not result.complete:
        out["complete"] = False
    return out


def run(target: Target, p: UsedParams, out: str | Path | results.ResultsDir, *,
        argv: list[str] | None = None, overwrite: bool = False, progress: bool | None = None) -> dict:
    """Runs new / used / used-after-TRIM and writes ``out``: one series per measurement
    (``new``, ``used``, ``trimmed``: IOPS per second), ``fill``/``dirty`` series, the bar table
    ``used.png``/``.svg`` and summary.json; returns the summary. On Ctrl-C what was measured
    is written, marked incomplete, and KeyboardInterrupt is re-raised."""
    ph = phases(target, p)
    span = ph["new"].span_bytes
    dirty = ph["dirty"].io_bytes if "dirty" in ph else 0
    rd = out if isinstance(out, results.ResultsDir) else results.ResultsDir(out, overwrite=overwrite)
    summary = base_summary("used", target, p.seed, argv, span_pct=p.span_pct, span_bytes=span, qd=p.qd,
                           bs_bytes=p.bs_bytes, requested_duration_s=p.duration_s, dirty_write_bytes=dirty)
    summary["states"] = {}
    what = f"{p.bs_bytes // 1024} KiB random write QD{p.qd}"
    labels = dict(STATES)

    def step(key: str, label: str) -> None:
        result = run_phase(target, ph[key], label, progress)
        _keep(key, result)

    def _keep(key: str, result) -> None:
        if result.job.pattern != "trim":
            rd.write_series(key, result.series)
        if key in labels:
            summary["states"][key] = _measurement(result, labels[key])
        else:
            summary[key] = dict(result.totals)
        rd.write_summary(summary)

    complete, error = True, None
    try:
        summary["purge"] = purge(target)
        step("new", f"new: {what}")
        summary["purge_used"] = purge(target)
        summary["preconditioning"] = (
            f"new: {summary['purge']['method']}. used: {summary['purge_used']['method']}, sequential fill of "
            f"{span} bytes (128 KiB, QD32), then {dirty} bytes of {what} over the span, no TRIM. "
            "used after TRIM: the used drive after a TRIM of the whole span")
        step("fill", "sequential fill")
        if "dirty" in ph:
            step("dirty", f"dirty: {what}")
        step("used", f"used: {what}")
        step("trim", "TRIM span")
        step("trimmed", f"trimmed: {what}")
    except (Interrupted, KeyboardInterrupt) as e:
        complete, error = False, failure_of(e)
        if isinstance(e, Interrupted):
            _keep(e.result.job.name, e.result)
    _finish(rd, target, summary, p, what)
    end_run(rd, summary, complete, error)
    return summary


def _finish(rd, target: Target, summary: dict, p: UsedParams, what: str) -> None:
    done_with_drive(target, summary)
    st = summary["states"]
    new = st.get("new", {}).get("mbps")
    measured = [st[key] for key, _ in STATES if key in st]
    for key, _ in STATES:
        summary[f"{key}_mbps"] = st.get(key, {}).get("mbps")
        summary[f"{key}_iops"] = st.get(key, {}).get("iops")
    for m in measured:
        m["vs_new_pct"] = m["mbps"] / new * 100.0 if new and m["mbps"] is not None else None
    summary["used_vs_new_pct"] = st.get("used", {}).get("vs_new_pct")
    summary["trimmed_vs_new_pct"] = st.get("trimmed", {}).get("vs_new_pct")
    summary["tables"] = [{
        "title": f"{target.name}: {what}, {p.duration_s:g} s per state, span {p.span_pct:g}%",
        "columns": ["state", "MB/s", "IOPS", "vs new (%)"],
        "rows": [[m["label"], _r(m["mbps"], 2), _r(m["iops"], 0), _r(m["vs_new_pct"], 1)] for m in measured],
        "bars": ["MB/s"], "highlight": [dict(STATES)["used"]],  # the review's bar table, in the report
    }]
    # Each measurement over time in the report: IOPS, latency, and on the simulator WA, free blocks, GC.
    summary["phase_plots"] = report.phase_hints(rd.path, STATES, what)
    names: list[str] = []
    if measured:
        names = [x.name for x in plots.bar_table_plot(
            rd / "used", {m["label"]: m["mbps"] for m in measured}, f"MB/s ({what})",
            f"{target.name} — used vs new, {what}", highlight=dict(STATES)["used"], formats=("png", "svg"))]
    summary["plots"] = names


def _r(v, nd):
    return None if v is None else round(float(v), nd)


def show(s: dict) -> None:
    """The lines printed at the end of a run."""
    print(f"{s['target']}  {s['bs_bytes'] // 1024} KiB random write QD{s['qd']}, {s['requested_duration_s']:g} s "
          "per state")
    for st in s["states"].values():
        pct = st.get("vs_new_pct")
        mbps = "n/a" if st["mbps"] is None else f"{st['mbps']:,.1f}"
        print(f"  {st['label']:<22} {mbps:>8} MB/s  {st['iops'] or 0:>9,.0f} IOPS"
              + ("" if pct is None else f"  {pct:5.1f} % of new"))


#: The used test's figures: 4 KiB random writes new, used and used after TRIM (IOPS and the
#: used states vs new are the headline ones), and the used drive's write amplification.
METRICS = (
    Metric("new_mbps", "random writes new", "MB/s", decimals=2),
    Metric("used_mbps", "random writes used", "MB/s", decimals=2),
    Metric("trimmed_mbps", "random writes used, after TRIM", "MB/s", decimals=2),
    Metric("new_iops", "random writes new", "IOPS", headline=True),
    Metric("used_iops", "random writes used", "IOPS", headline=True),
    Metric("trimmed_iops", "random writes used, after TRIM", "IOPS", headline=True),
    Metric("used_vs_new_pct", "used vs new", "%", headline=True, decimals=1),
    Metric("trimmed_vs_new_pct", "after TRIM vs new", "%", headline=True),
    Metric("used_write_amplification", "write amplification, used", path=("states", "used", "write_amplification")),
)


TEST = Test(
    name="used",
    help="4 KiB random write MB/s and IOPS: new / used / used after TRIM",
    description="Used vs new: 4 KiB random writes at --qd over the span for --duration seconds on a new (purged) "
                "drive; on a used drive (purged, filled sequentially, then --dirty-writes of random writes: valid "
                "and invalid data, no TRIM); and on that drive after a TRIM of the span. Writes summary.json "
                "(new_mbps, used_mbps, trimmed_mbps, IOPS, a table), one IOPS-per-second series per state (new, "
                "used, trimmed), the bar table used.png/.svg and report.html. Sizes: bytes or 4KiB, 128KiB, 64MiB, "
                "8GB (the size rule below).",
    params=UsedParams, plan=plan, run=run, show=show, headline=headline_of(METRICS), metrics=METRICS)
