"""HD Tach-like LBA sweep (seed 000): sequential write and read throughput in zones across
the LBA space, as MB/s against position.

The span (default: the whole drive) is cut into ``zones`` equal zones (default 100). At the
start of each zone the sweep transfers ``zone_bytes`` sequentially (default 128 KiB blocks at
QD1) and measures MB/s = bytes / time of that transfer. The **write pass** runs first, zone by
zone from the first LBA to the last; the **read pass** then reads back the same bytes. Reading
what the write pass just wrote means the read pass always reads mapped data: a drive answers
reads of never-written or TRIMmed LBAs from the controller alone, without touching NAND, so a
read-only sweep of a purged drive measures the controller, not the flash (``read=False`` /
``write=False`` skip a pass; the other column is then NaN).

QD1 by default, like HD Tach: one synchronous request at a time, so the curve shows what one
stream of large sequential requests gets from the drive (``qd`` raises it).

**A write sweep changes what it measures.** HD Tach writes the zones it measures, and so does
this sweep: on a dirty drive those sequential writes replace scattered valid pages with
whole-block writes, and the reviewers' after-torture curves show it (peaks where the sweep's own
writes freed blocks). To disturb the drive little, the default sample per zone is
``min(64 MiB, zone size, 3 % of the span / zones)`` (2.6 % of a 256 GB drive with 100 zones,
64 MiB per zone); a sweep writes ``zones * zone_bytes`` in all, stored in the summary as
``sweep_write_bytes``. ``zone_bytes = zone size`` writes the whole span: a full sequential
pass that leaves a dirty drive largely clean. Sweeps always sample the same positions (as HD
Tach does), so a second sweep rewrites what the first wrote, blocks a drive frees without
copying: back-to-back sweeps of a dirty drive overstate its recovery (``recovery`` therefore
re-tortures before its idle step).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import math
from dataclasses import dataclass
from pathlib import Path

if TYPE_CHECKING:  # imported in the functions that use them: `ssdlab --help` starts without them
    import numpy as np

from .. import plots, results
from ..charts import Chart, Line
from ..errors import UserError
from ..progress import phase_bar
from ..targets.base import JobSpec, PhaseResult, Target
from .common import base_summary, done_with_drive, end_run, failure_of, Interrupted, purge, span_bytes
from ..units import MAX_BS_BYTES, human_size
from .declare import MAX_QD, Metric, Test, headline_of, param, size

#: HD Tach-like defaults: 128 KiB sequential requests at QD1, 100 zones.
SWEEP_BS_BYTES = 128 * 1024
SWEEP_QD = 1
SWEEP_ZONES = 100
#: Most zones a sweep takes: each is two phases (write and read), so a sweep stays a few
#: thousand phases long.
MAX_ZONES = 10_000
#: Largest default sample per zone.
MAX_ZONE_SAMPLE_BYTES = 64 * 2**20
#: Default ceiling of what one sweep writes, as a fraction of the span.
SWEEP_WRITE_FRACTION = 0.03
#: The series columns a sweep returns, in order.
COLUMNS = ("zone", "position_pct", "offset_bytes", "write_mbps", "read_mbps")
#: Longest TRIM request the suite sends.
TRIM_BS_MAX = 2**20


@dataclass(frozen=True)
class ZoneLayout:
    """Where a sweep samples: the span (``span_bytes`` from ``offset_bytes``) is cut into
    ``zones`` zones; zone ``i`` starts at ``offset + i * zone_size_bytes`` and the sweep
    transfers its first ``sample_bytes``."""

    span_bytes: int
    offset_bytes: int
    zones: int
    zone_size_bytes: int
    sample_bytes: int
    bs_bytes: int

    @property
    def offsets(self) -> np.ndarray:
        import numpy as np

        return self.offset_bytes + np.arange(self.zones, dtype=np.int64) * self.zone_size_bytes

    def position_columns(self, capacity_bytes: int) -> dict[str, np.ndarray]:
        """``zone``, ``position_pct`` (zone start as % of ``capacity_bytes``), ``offset_bytes``."""
        import numpy as np

        offsets = self.offsets
        return {"zone": np.arange(self.zones, dtype=np.int64), "position_pct": offsets / capacity_bytes * 100.0,
                "offset_bytes": offsets}

    @property
    def write_bytes(self) -> int:
        """Bytes one write pass writes."""
        return self.zones * self.sample_bytes


#: ``zone_bytes`` value for whole zones: the write pass rewrites the whole span.
WHOLE_ZONES = -1


def parse_zone_bytes(text: str) -> int | None:
    """``--zone-bytes``: a size, ``full`` (:data:`WHOLE_ZONES`) for whole zones, or ``sample``
    (None) for the sweep's default sample."""
    word = text.strip().lower()
    if word == "sample":
        return None
    return WHOLE_ZONES if word == "full" else size(text)


#: ``--zone-bytes`` help: the choice, then each command's default.
ZONE_BYTES_HELP = ("bytes transferred at the start of each zone, a multiple of --bs; 'full' for whole zones; "
                   "'sample' for min(64 MiB, zone size, 3% of the span / zones), so that a sweep writes at most "
                   "~3% of the span")
SAMPLE_DEFAULT = "sample: a sweep changes the drive it measures little; 'full' rewrites the whole span"
FULL_DEFAULT = ("full: each write pass rewrites the whole span, as HD Tach's write test, which is what shows a "
                "dirty drive cleaning itself across the pass; 'sample' writes ~3% of the span and cannot")


def zone_layout(span: int, zones: int = SWEEP_ZONES, zone_bytes: int | None = None,
                bs_bytes: int = SWEEP_BS_BYTES, offset_bytes: int = 0) -> ZoneLayout:
    """Cuts ``span`` bytes into ``zones`` zones aligned to ``bs_bytes``; ``zone_bytes`` is the
    sample per zone (None: the default, see the module docstring; -1: the whole zone).
    Raises :class:`UserError` naming the option when they do not fit."""
    if bs_bytes <= 0 or bs_bytes % 4096:
        raise UserError(f"--bs {bs_bytes}: must be a positive multiple of 4096 bytes")
    if zones < 1:
        raise UserError(f"--zones {zones}: must be >= 1")
    zone_size = span // zones // bs_bytes * bs_bytes
    if zone_size < bs_bytes:
        raise UserError(f"--zones {zones}: zones of a {span}-byte span would be smaller than one "
                        f"{bs_bytes}-byte block; use at most {max(1, span // bs_bytes)} zones or a smaller --bs")
    if zone_bytes is None:
        budget = int(span * SWEEP_WRITE_FRACTION) // zones
        sample = max(bs_bytes, min(MAX_ZONE_SAMPLE_BYTES, zone_size, budget) // bs_bytes * bs_bytes)
    elif zone_bytes == WHOLE_ZONES:
        sample = zone_size
    else:
        if zone_bytes < bs_bytes or zone_bytes % bs_bytes:
            raise UserError(f"--zone-bytes {zone_bytes}: must be a positive multiple of --bs ({bs_bytes} bytes)")
        if zone_bytes > zone_size:
            raise UserError(f"--zone-bytes {zone_bytes}: larger than a zone ({zone_size} bytes = span / --zones); "
                            "use --zone-bytes full to transfer whole zones")
        sample = zone_bytes
    return ZoneLayout(span, offset_bytes, zones, zone_size, sample, bs_bytes)


class SweepInterrupted(Interrupted):
    """A sweep was cut short; ``sweep`` holds the zones measured so far (NaN elsewhere)."""

    def __init__(self, result: PhaseResult | None, sweep: dict[str, np.ndarray], label: str):
        Exception.__init__(self, f"sweep {label!r} interrupted")
        self.result = result
        self.sweep = sweep
        self.error = result.error if result is not None and not result.complete else None


def sweep_jobs(layout: ZoneLayout, *, qd: int = SWEEP_QD, write: bool = True, read: bool = True,
               label: str = "sweep") -> list[tuple[int, JobSpec]]:
    """The phases of one sweep as (zone, job): the write pass over the zones, then the read pass."""
    jobs = []
    for pattern, on in (("write", write), ("read", read)):
        if not on:
            continue
        for i, off in enumerate(layout.offsets):
            jobs.append((i, JobSpec(f"{label}_{pattern}_{i:03d}", pattern, bs_bytes=layout.bs_bytes, qd=qd,
                                    offset_bytes=int(off), span_bytes=layout.sample_bytes,
                                    io_bytes=layout.sample_bytes)))
    return jobs


def phase_mbps(result: PhaseResult) -> float:
    """MB/s (10^6 bytes/s) of a completed transfer phase: IOs * block size / duration."""
    dur = float(result.totals.get("duration_s") or 0.0)
    ios = float(result.totals.get("ios") or 0)
    return ios * result.job.bs_bytes / dur / 1e6 if dur > 0 and ios > 0 else float("nan")


def sweep(target: Target, layout: ZoneLayout, *, qd: int = SWEEP_QD, write: bool = True, read: bool = True,
          label: str = "sweep", progress: bool | None = None) -> dict[str, np.ndarray]:
    """Runs one sweep on ``target`` in its current state (no purge) with one progress bar.

    Returns the columns of :data:`COLUMNS`: ``zone``, ``position_pct`` (zone start as % of
    the target's capacity), ``offset_bytes``, ``write_mbps``, ``read_mbps`` (NaN for a
    skipped pass). On Ctrl-C raises :class:`SweepInterrupted` with the zones measured so far.
    """
    import numpy as np

    out = {**layout.position_columns(target.capacity_bytes),
           "write_mbps": np.full(layout.zones, np.nan), "read_mbps": np.full(layout.zones, np.nan)}
    jobs = sweep_jobs(layout, qd=qd, write=write, read=read, label=label)
    if not jobs:
        raise ValueError("sweep: write and read are both off, nothing to measure")
    with phase_bar(label, enabled=progress) as bar:

        def sub(k: int, fraction: float, _text: str) -> None:
            zone, job = jobs[k]
            bar((k + fraction) / len(jobs), f"{job.pattern} zone {zone + 1}/{layout.zones}")

        result = None
        try:
            # Back to back: a drive that collects garbage when idle gets no idle time between zones.
            for k, result in enumerate(target.run_phases([job for _, job in jobs], sub)):
                if not result.complete:
                    raise SweepInterrupted(result, out, label)
                zone, job = jobs[k]
                out[f"{job.pattern}_mbps"][zone] = phase_mbps(result)
        except KeyboardInterrupt:
            raise SweepInterrupted(result, out, label) from None
        if result is None or k + 1 < len(jobs):
            raise SweepInterrupted(result, out, label)  # the target stopped before the last zone
    return out


def direction_stats(mbps: np.ndarray) -> dict[str, float | None]:
    """mean / min / max of the measured zones (None when no zone was measured)."""
    import numpy as np

    v = np.asarray(mbps, dtype=float)
    v = v[np.isfinite(v)]
    if not len(v):
        return {"mean": None, "min": None, "max": None}
    return {"mean": float(v.mean()), "min": float(v.min()), "max": float(v.max())}


def sweep_stats(s: dict[str, np.ndarray]) -> dict[str, float | None]:
    """Flat ``write_mbps_mean``, ``write_mbps_min``... ``read_mbps_max`` of one sweep."""
    return {f"{d}_mbps_{k}": v for d in ("write", "read") for k, v in direction_stats(s[f"{d}_mbps"]).items()}


#: Share of the zones averaged at each end of a sweep by :func:`zone_shape`.
EDGE_FRACTION = 0.10


def edge_zones(zones: int) -> int:
    """Zones averaged at each end of a sweep: 10 % of them, at least one."""
    return max(1, int(round(zones * EDGE_FRACTION)))


def spearman(x: np.ndarray, y: np.ndarray) -> float | None:
    """Spearman rank correlation of ``y`` against ``x`` (ties get their average rank);
    None with fewer than 3 points or when either side is constant."""
    import numpy as np

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) < 3:
        return None

    def ranks(a: np.ndarray) -> np.ndarray:
        _, inverse, counts = np.unique(a, return_inverse=True, return_counts=True)
        ends = np.cumsum(counts)  # 1-based rank of the last of each group of equal values
        return (ends - (counts - 1) / 2.0)[inverse]

    rx, ry = ranks(x), ranks(y)
    if np.ptp(rx) == 0 or np.ptp(ry) == 0:
        return None
    return float(np.corrcoef(rx, ry)[0, 1])


def zone_shape(mbps: np.ndarray) -> dict[str, float | None]:
    """How throughput changes across one pass: ``first_zones`` and ``last_zones`` (mean MB/s
    of the first and last :func:`edge_zones` zones measured), ``trend`` (Spearman rank
    correlation of MB/s with position: +1 rises steadily across the pass, -1 falls, ~0 no
    trend). Zones not measured (NaN) are left out; None where there is too little to say."""
    import numpy as np

    v = np.asarray(mbps, dtype=float)
    pos = np.arange(len(v))[np.isfinite(v)]
    v = v[np.isfinite(v)]
    if not len(v):
        return {"first_zones": None, "last_zones": None, "trend": None}
    n = edge_zones(len(v))
    return {"first_zones": float(v[:n].mean()), "last_zones": float(v[-n:].mean()), "trend": spearman(pos, v)}


# --------------------------------------------------------------------------- shared by the suite

def trim_bs(span: int) -> int:
    """TRIM request size for a span: the largest power of two up to 1 MiB that divides it."""
    return math.gcd(span, TRIM_BS_MAX)


def fmt_mbps(v: float | None) -> float | None:
    import numpy as np

    return None if v is None or not np.isfinite(v) else round(float(v), 1)


# --------------------------------------------------------------------------- the sweep test

@dataclass(frozen=True)
class SweepParams:
    span_pct: float = param(100.0, "--span", "percent of the capacity to test; 75 emulates 25% extra spare area",
                            unit="%", low=0, high=100, low_open=True, metavar="PCT")
    zones: int = param(SWEEP_ZONES, "--zones", "zones across the span, one measurement per zone and direction",
                       low=1, high=MAX_ZONES)
    #: Bytes per zone; None: default sample; -1 (:data:`WHOLE_ZONES`): whole zone.
    zone_bytes: int | None = param(None, "--zone-bytes", ZONE_BYTES_HELP, parse=parse_zone_bytes, metavar="SIZE",
                                   default_text=SAMPLE_DEFAULT)
    bs_bytes: int = param(SWEEP_BS_BYTES, "--bs", "sequential request size", unit="bytes", parse=size, low=4096,
                          high=MAX_BS_BYTES, multiple_of=4096)
    qd: int = param(SWEEP_QD, "--qd", "sequential queue depth (like HD Tach: one request at a time)", low=1, high=MAX_QD)
    write: bool = param(True, "--no-write", "skip the write pass (the read pass then reads what the drive holds; "
                        "on a purged drive that is unwritten LBAs, which drives answer without reading NAND)",
                        off_switch=True)
    read: bool = param(True, "--no-read", "skip the read pass", off_switch=True)
    seed: int = param(1, None, "random seed")

    def layout(self, target: Target) -> ZoneLayout:
        if not (self.write or self.read):
            raise UserError("--no-read and --no-write together leave nothing to measure")
        span = span_bytes(target.capacity_bytes, self.span_pct, self.bs_bytes)
        return zone_layout(span, self.zones, self.zone_bytes, self.bs_bytes)


def plan(target: Target, params: SweepParams) -> list[JobSpec]:
    """The phases of the sweep test (after the purge)."""
    return [job for _, job in sweep_jobs(params.layout(target), qd=params.qd, write=params.write, read=params.read)]


def sweep_table(rows: list[tuple[str, dict]], title: str) -> dict:
    """A ``tables`` entry: one row per sweep (label, write avg/min/max, read avg/min/max MB/s)."""
    return {
        "title": title,
        "columns": ["stage", "write avg (MB/s)", "write min (MB/s)", "write max (MB/s)",
                    "read avg (MB/s)", "read min (MB/s)", "read max (MB/s)"],
        "rows": [[name] + [fmt_mbps(st[f"{d}_mbps_{k}"]) for d in ("write", "read") for k in ("mean", "min", "max")]
                 for name, st in rows],
    }


def describe_sweep(layout: ZoneLayout, qd: int) -> str:
    return (f"{layout.zones} zones of {human_size(layout.zone_size_bytes)}; {human_size(layout.sample_bytes)} sequential "
            f"per zone in {layout.bs_bytes // 1024} KiB requests at QD{qd}")


def run(target: Target, params: SweepParams, out: str | Path | results.ResultsDir, *,
        argv: list[str] | None = None, overwrite: bool = False, progress: bool | None = None) -> dict:
    """Purge, then one sweep; writes ``sweep.parquet``/``.csv``, ``sweep.png``/``.svg`` and
    summary.json into ``out`` and returns the summary. On Ctrl-C the zones measured so far are
    written, the run is marked incomplete and KeyboardInterrupt is re-raised."""
    layout = params.layout(target)
    rd = out if isinstance(out, results.ResultsDir) else results.ResultsDir(out, overwrite=overwrite)
    summary = base_summary(
        "sweep", target, params.seed, argv, span_pct=params.span_pct, span_bytes=layout.span_bytes,
        zones=layout.zones, zone_size_bytes=layout.zone_size_bytes, zone_bytes=layout.sample_bytes,
        bs_bytes=layout.bs_bytes, qd=params.qd, write_pass=params.write, read_pass=params.read,
        sweep_write_bytes=layout.write_bytes if params.write else 0)
    summary["purge"] = purge(target)
    summary["preconditioning"] = f"{summary['purge']['method']}; no fill (a clean drive, as HD Tach on a new drive)"
    summary["method"] = describe_sweep(layout, params.qd) + "; write pass first, then the read pass reads those bytes back"
    try:
        s = sweep(target, layout, qd=params.qd, write=params.write, read=params.read, label="sweep",
                  progress=progress)
        complete, error = True, None
    except SweepInterrupted as e:
        s, complete, error = e.sweep, False, failure_of(e)
    rd.write_series("sweep", s)
    stats = sweep_stats(s)
    summary.update(stats)
    summary["tables"] = [sweep_table([("sweep", stats)], f"{target.name}: sequential MB/s across the LBA space "
                                                         f"({layout.bs_bytes // 1024} KiB, QD{params.qd})")]
    chart = Chart("sweep", "position_pct",
                  tuple(Line(f"{d}_mbps", d, "MB/s") for d, on in (("write", params.write), ("read", params.read)) if on),
                  f"{target.name} — sequential {layout.bs_bytes // 1024} KiB QD{params.qd}, {layout.zones} zones",
                  "position (% of capacity)", "MB/s", file="sweep")
    summary["plot"] = chart.hint()
    summary["plots"] = [p.name for p in plots.chart_files(rd.path, [chart], {"sweep": s})]
    done_with_drive(target, summary)
    end_run(rd, summary, complete, error)
    return summary


def _mb(v) -> str:
    return "n/a" if v is None else f"{v:,.1f}"


def show(s: dict) -> None:
    """The lines printed at the end of a run."""
    print(f"{s['target']}  sweep of {s['zones']} zones, {human_size(s['zone_bytes'])} each, "
          f"{s['bs_bytes'] // 1024} KiB QD{s['qd']}")
    for d in ("write", "read"):
        if s[f"{d}_mbps_mean"] is not None:
            print(f"  {d:<5} MB/s  avg {_mb(s[f'{d}_mbps_mean'])}  min {_mb(s[f'{d}_mbps_min'])}  "
                  f"max {_mb(s[f'{d}_mbps_max'])}")


#: The sweep's write and read MB/s across the span: mean, lowest and highest zone.
METRICS = tuple(Metric(f"{d}_mbps_{stat}", f"{d} {stat} over the zones", "MB/s", headline=True)
                for d in ("write", "read") for stat in ("mean", "min", "max"))


TEST = Test(
    name="sweep",
    # :mod:`ssdlab.commands.sweep` refuses a GRID.toml here: a grid of simulations is ``ssdlab grid``.
    help="HD Tach-like sequential write and read MB/s in zones across the LBA space",
    description="LBA sweep (HD Tach-like): purge, then in each of --zones zones across the span write --zone-bytes "
                "sequentially and measure MB/s (10^6 bytes/s), then read the same bytes back and measure read MB/s. "
                "The write pass writes the drive: it is itself a sequential write workload. Writes summary.json "
                "(average/min/max MB/s per direction), sweep.parquet/.csv (zone, position_pct, offset_bytes, "
                "write_mbps, read_mbps), sweep.png/.svg and report.html. Sizes: bytes or 4KiB, 128KiB, 64MiB, 8GB "
                "(the size rule below).",
    params=SweepParams, plan=plan, run=run, show=show, headline=headline_of(METRICS), metrics=METRICS)
