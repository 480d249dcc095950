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

from dataclasses import dataclass
from pathlib import Path

from .. import plots, report, results
from ..errors import UserError
from ..targets.base import JobSpec, Target
from .common import FILL_BS_BYTES, Interrupted, base_summary, end_run, failure_of, run_phase, span_bytes
from .sweep import trim_bs

#: (id, label) of the three measurements, in order.
STATES = (("new", "new (purged)"), ("used", "used (full, no TRIM)"), ("trimmed", "used after TRIM"))


@dataclass(frozen=True)
class UsedParams:
    span_pct: float = 100.0
    duration_s: float = 60.0
    qd: int = 32
    bs_bytes: int = 4096
    #: Random-write bytes that dirty the filled drive; None: ``dirty_spans`` times the span.
    dirty_bytes: int | None = None
    dirty_spans: float = 1.0
    seed: int = 1

    def check(self) -> None:
        if not self.duration_s > 0:
            raise UserError(f"--duration {self.duration_s}: must be > 0 seconds")
        if self.qd < 1:
            raise UserError(f"--qd {self.qd}: must be >= 1")
        if self.bs_bytes <= 0 or self.bs_bytes % 4096:
            raise UserError(f"--bs {self.bs_bytes}: must be a positive multiple of 4096 bytes")
        if (self.dirty_bytes is not None and self.dirty_bytes < 0) or not self.dirty_spans >= 0:
            raise UserError(f"--dirty-writes {self.dirty_bytes if self.dirty_bytes is not None else self.dirty_spans}: "
                            "must be >= 0")


def phases(target: Target, p: UsedParams) -> dict[str, JobSpec]:
    p.check()
    span = span_bytes(target.capacity_bytes, p.span_pct, max(FILL_BS_BYTES, p.bs_bytes))
    dirty = int(p.dirty_spans * span) if p.dirty_bytes is None else p.dirty_bytes
    dirty = dirty // p.bs_bytes * p.bs_bytes

    def measure(name: str) -> JobSpec:
        return JobSpec(name, "randwrite", bs_bytes=p.bs_bytes, qd=p.qd, span_bytes=span, duration_s=p.duration_s,
                       seed=p.seed)

    ph = {"new": measure("new"),
          "fill": JobSpec("fill", "write", bs_bytes=FILL_BS_BYTES, qd=32, span_bytes=span, seed=p.seed)}
    if dirty:
        ph["dirty"] = JobSpec("dirty", "randwrite", bs_bytes=p.bs_bytes, qd=p.qd, span_bytes=span, io_bytes=dirty,
                              seed=p.seed + 1)
    ph["used"] = measure("used")
    ph["trim"] = JobSpec("trim", "trim", bs_bytes=trim_bs(span), qd=32, span_bytes=span, seed=p.seed)
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
        summary["purge"] = target.purge()
        step("new", f"new: {what}")
        summary["purge_used"] = target.purge()
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
    if target.simulated:
        summary["counters"] = target.counters()


def _r(v, nd):
    return None if v is None else round(float(v), nd)
