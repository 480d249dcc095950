"""``null:SIZE`` — a target that does nothing and answers at once, as fio's ``null`` engine:
the phases' series are scripted, so procedures run in milliseconds without a simulator or fio.

Every interval of a phase gets the figures of :attr:`NullTarget.script`: a callable
``(job, t_s) -> dict`` (``job`` the JobSpec, workload step or ReplayJob; ``t_s`` the interval's
start [s from phase start]) returning any of ``iops`` (IOs per second), ``latency_us`` (every
latency statistic of the interval [us]) and ``write_amplification`` (NAND bytes / host bytes
written); what it leaves out comes from the target's constant ``iops``, ``latency_us`` and
``write_amplification``. A phase bound by bytes lasts its bytes at the constant ``iops``; an idle
phase has 0 IOPS. The script may raise :class:`PhaseFailure` (the phase fails as a
drive or fio fails: what ran is kept, with the message), KeyboardInterrupt (Ctrl-C: what ran
is kept, marked incomplete) or any other exception (it propagates). Each interval also
answers a pending stop request (:func:`ssdlab.stop.check`), as the simulator does.

Capabilities are whatever the target is given (:data:`~ssdlab.targets.base.CAPABILITIES`): with
``simulated`` the series carries ``host_write_bytes``, ``nand_write_bytes`` and
``write_amplification`` per interval and :meth:`NullTarget.counters` the cumulative bytes; with
``drive_counters`` :meth:`NullTarget.counters` reads as a drive's host/NAND write counters.

On the command line: ``--target null:1G --set iops=5000 --set latency_us=200 --set
write_amplification=2 --set capabilities=simulated,fork``.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable, Mapping

import numpy as np

from .. import stop
from ..errors import UserError
from ..units import parse_size
from .base import (
    CAPABILITIES, DIRECTIONS, LATENCY_STATS, REOPEN, SIMULATED, JobSpec, PhaseResult, Progress, ReplayJob,
    ReplayResult, TargetDefaults, WorkloadStep, latency_column, pattern_direction, window_series,
    workload_steps,
)

#: Capacity of ``null:`` without a size [bytes].
DEFAULT_CAPACITY_BYTES = 1 << 30
#: What an interval's figures are when the script does not say.
SETTINGS = {"iops": 1000.0, "latency_us": 100.0, "write_amplification": 1.0}

Script = Callable[[object, float], Mapping[str, float]]


class PhaseFailure(Exception):
    """Raised by a script: the phase fails with this message (as fio's error line)."""


class NullTarget(TargetDefaults):
    """A scripted target of ``capacity_bytes``, with the ``capabilities`` it is given."""

    def __init__(self, capacity_bytes: int = DEFAULT_CAPACITY_BYTES, *, capabilities=(), script: Script | None = None,
                 iops: float = SETTINGS["iops"], latency_us: float = SETTINGS["latency_us"],
                 write_amplification: float = SETTINGS["write_amplification"], state_bytes: int = 1 << 20,
                 name: str | None = None):
        unknown = set(capabilities) - set(CAPABILITIES)
        if unknown:
            raise ValueError(f"null target: capabilities {sorted(unknown)} are not among {sorted(CAPABILITIES)}")
        self.name = name or f"null:{capacity_bytes}"
        self.capacity_bytes = int(capacity_bytes)
        self.capabilities = frozenset(capabilities)
        self.script = script
        self.settings = {"iops": float(iops), "latency_us": float(latency_us),
                         "write_amplification": float(write_amplification)}
        self.state_bytes = int(state_bytes)
        self.phases: list[str] = []  #: names of the phases run, in order
        self._host_bytes = 0.0
        self._nand_bytes = 0.0

    # -- operations every target has ---------------------------------------------------
    def purge(self) -> dict:
        return {"method": "none: a null target holds nothing"}

    def describe(self) -> dict:
        return {"kind": "null", "target": self.name, "capacity_bytes": self.capacity_bytes,
                "capabilities": sorted(self.capabilities), "settings": dict(self.settings),
                "scripted": self.script is not None}

    def close(self) -> None:
        pass

    def run_phase(self, job: JobSpec, progress: Progress | None = None) -> PhaseResult:
        direction = pattern_direction(job.pattern)
        return self._run(job, _duration_s(job, self.settings["iops"], self.capacity_bytes),
                         {direction: (1.0, job.bs_bytes)} if direction else {}, job.interval_s, progress, False)

    def plan_workload(self, workload, interval_s: float) -> list[WorkloadStep]:
        """The groups as :func:`~ssdlab.targets.base.workload_steps`; a group that is not time
        based lasts one interval."""
        return [s if s.duration_s else dataclasses.replace(s, duration_s=interval_s)
                for s in workload_steps(workload, interval_s)]

    def workload_notes(self, workload, steps: list) -> dict:
        return {}

    def dry_run_text(self, workload, steps: list) -> list[str]:
        return [f"# group {s.index + 1} ({s.name}): null target, {s.duration_s:g} s of scripted figures"
                for s in steps]

    def run_workload(self, step: WorkloadStep, progress: Progress | None = None) -> PhaseResult:
        group = step.workload.groups[step.index]
        ran = [d for d in DIRECTIONS if any(d in j.directions for j in group)] or ["write"]
        shares = {d: (1.0 / len(ran), 4096) for d in ran}
        return self._run(step, float(step.duration_s), shares, step.interval_s, progress, True)

    def replay(self, job: ReplayJob, chunks, progress: Progress | None = None,
               total_commands: int | None = None) -> ReplayResult:
        ops, nbytes = [], []
        complete = True
        try:
            for op, _off, ln in chunks:
                stop.check()
                ops.append(np.asarray(op))
                nbytes.append(np.asarray(ln, dtype=np.float64))
        except KeyboardInterrupt:
            complete = False
        op = np.concatenate(ops) if ops else np.zeros(0, np.uint8)
        ln = np.concatenate(nbytes) if nbytes else np.zeros(0)
        t = (np.arange(len(op)) + 1) / self.settings["iops"]
        data = np.where(op < 2, ln, 0.0)
        counts = {name: int(np.sum(op == code)) for code, name in enumerate(("reads", "writes", "trims", "flushes"))}
        duration = float(t[-1]) if len(t) else 0.0
        written, read = float(np.sum(ln[op == 1])), float(np.sum(ln[op == 0]))
        totals = {"commands": len(op), **counts, "host_write_bytes": int(written), "host_read_bytes": int(read),
                  "trim_bytes": int(np.sum(ln[op == 2])), "duration_s": duration,
                  "iops": len(op) / duration if duration else None,
                  "mbps": (written + read) / duration / 1e6 if duration else None}
        self._host_bytes += written
        self._nand_bytes += written * self.settings["write_amplification"]
        return ReplayResult(job=job, series=window_series(t, data, job.window_commands), totals=totals,
                            complete=complete, notes=[] if complete else ["interrupted"])

    # -- capabilities ------------------------------------------------------------------
    #: ``fork``: the threads a simulation would use (a null target uses none).
    threads = 1

    def set_threads(self, threads: int) -> None:
        """``fork``: kept, for the copies :meth:`fork` makes."""
        self.threads = int(threads)

    #: ``shared_replay``: followers are always taken (each replays the chunks on its own).
    shares_replays = True

    def replay_shared(self, job: ReplayJob, followers: list, chunks, progress: Progress | None = None,
                      total_commands: int | None = None) -> list[ReplayResult]:
        """``shared_replay``: :meth:`replay` of the same chunks here and on each follower."""
        kept: list = []

        def keep():
            for chunk in chunks:
                kept.append(chunk)
                yield chunk

        first = self.replay(job, keep(), progress, total_commands)
        results = [first] + [t.replay(j, iter(kept), None, total_commands) for t, j in followers]
        for r in results[1:]:
            r.complete, r.notes = first.complete, list(first.notes)  # stopped where the first was
        return results

    def counters(self) -> dict:
        """``simulated``: the cumulative bytes; ``drive_counters``: the same as a drive's
        host/NAND write counters (:func:`ssdlab.targets.counters.write_amplification` reads them)."""
        if SIMULATED in self.capabilities:
            return {"host_write_bytes": int(self._host_bytes), "nand_write_bytes": int(self._nand_bytes)}
        return {"source": "null", "wa_pair": {"what": "null target bytes", "unit": "bytes", "host": int(self._host_bytes),
                                              "nand": int(self._nand_bytes), "host_resolution": 1,
                                              "nand_resolution": 1}}

    def fork(self) -> "NullTarget":
        """An independent target of the same settings and script, as after :meth:`purge`."""
        copy = NullTarget(self.capacity_bytes, capabilities=self.capabilities - {REOPEN}, script=self.script,
                          state_bytes=self.state_bytes, name=self.name, **self.settings)
        copy.threads = self.threads
        return copy

    def job_text(self, job: JobSpec) -> str:
        """``fio_jobs``: what stands for a phase's fio job file."""
        return f"; null target: phase {job.name} runs no fio job"

    # -- helpers -----------------------------------------------------------------------
    def _figures(self, job, t_s: float) -> dict[str, float]:
        return {**self.settings, **(self.script(job, t_s) if self.script else {})}

    def _run(self, job, duration_s: float, shares: dict, interval_s: float, progress: Progress | None,
             per_direction: bool) -> PhaseResult:
        """The phase's intervals, one script call each; ``shares`` maps each direction that
        runs to (share of the IOs, bytes per IO)."""
        self.phases.append(job.name)
        n = max(1, math.ceil(duration_s / interval_s - 1e-9)) if duration_s > 0 else 0
        rows: list[dict[str, float]] = []
        complete, error = True, None
        try:
            for k in range(n):
                stop.check()
                rows.append(self._figures(job, k * interval_s))
                if progress:
                    progress((k + 1) / n, f"{rows[-1]['iops']:,.0f} IOPS (null target)")
        except KeyboardInterrupt:
            complete = False
        except PhaseFailure as e:
            complete, error = False, f"{self.name}: phase {job.name}: {e}"
        series, totals = self._series(rows, shares, interval_s, per_direction)
        notes = [f"failed: {error}"] if error else ([] if complete else ["interrupted"])
        lat = _last_latency(rows) if shares else {}
        return PhaseResult(job=job, series=series, totals=totals, latency_us=lat, complete=complete, notes=notes,
                           error=error)

    def _series(self, rows: list[dict], shares: dict, interval_s: float, per_direction: bool) -> tuple[dict, dict]:
        iops = np.array([r["iops"] if shares else 0.0 for r in rows], dtype=np.float64)
        wa = np.array([r["write_amplification"] for r in rows], dtype=np.float64)
        series = {"t_s": np.arange(len(rows)) * interval_s, "iops": iops}
        totals: dict = {"duration_s": len(rows) * interval_s, "ios": int(np.sum(iops) * interval_s)}
        moved = np.zeros(len(rows))
        written = np.zeros(len(rows))
        for d, (share, bs) in shares.items():
            d_bytes = iops * share * bs * interval_s
            moved += d_bytes if d != "trim" else 0.0
            if d == "write":
                written = d_bytes
            for label, _ in LATENCY_STATS:
                series[latency_column(d, label)] = np.array([r["latency_us"] for r in rows], dtype=np.float64)
            if per_direction:
                series[f"{d}_iops"], series[f"{d}_mbps"] = iops * share, d_bytes / interval_s / 1e6
                totals[f"{d}_ios"] = int(np.sum(iops * share) * interval_s)
                totals[f"{d}_bytes"] = int(np.sum(d_bytes))
                totals[f"{d}_latency_us"] = _last_latency(rows)
        series["mbps"] = moved / interval_s / 1e6
        totals["host_write_bytes"] = int(np.sum(written))
        totals["host_read_bytes"] = int(np.sum(iops * shares["read"][0] * shares["read"][1] * interval_s)) \
            if "read" in shares else 0
        nand = written * wa
        if SIMULATED in self.capabilities:
            series["host_write_bytes"], series["nand_write_bytes"] = written, nand
            with np.errstate(divide="ignore", invalid="ignore"):
                series["write_amplification"] = np.where(written > 0, nand / written, np.nan)
            totals["nand_write_bytes"] = int(np.sum(nand))
            total_written = float(np.sum(written))
            totals["write_amplification"] = float(np.sum(nand)) / total_written if total_written else None
        self._host_bytes += float(np.sum(written))
        self._nand_bytes += float(np.sum(nand))
        return series, totals


def _last_latency(rows: list[dict]) -> dict[str, float]:
    """The phase's latency percentiles [us]: the last interval's latency for each statistic."""
    return {label: float(rows[-1]["latency_us"]) for label, _ in LATENCY_STATS} if rows else {}


def _duration_s(job: JobSpec, iops: float, capacity_bytes: int) -> float:
    """The phase's length [s]: its ``duration_s``, else its bytes (default: one pass over its
    span) at ``iops``; an idle phase lasts its ``duration_s``."""
    if job.duration_s is not None or job.pattern == "idle":
        return float(job.duration_s or 0.0)
    span = job.span_bytes if job.span_bytes is not None else capacity_bytes - job.offset_bytes
    nbytes = job.io_bytes if job.io_bytes is not None else span
    return nbytes / (iops * job.bs_bytes) if iops > 0 else 0.0


def open_spec(spec: str, *, sets: tuple[str, ...] = (), seed: int = 1, **_kw) -> NullTarget:  # noqa: ARG001
    """``null:SIZE`` (default 1 GiB) with ``--set KEY=VALUE`` for ``iops``, ``latency_us``,
    ``write_amplification`` and ``capabilities`` (comma-separated names)."""
    size = spec[len("null:"):]
    try:
        capacity = parse_size(size) if size else DEFAULT_CAPACITY_BYTES
    except ValueError as e:
        raise UserError(f"--target {spec}: {e}") from None
    kw: dict = {}
    for item in sets:
        key, _, value = item.partition("=")
        if key == "capabilities":
            kw[key] = [c for c in value.split(",") if c]
        elif key in SETTINGS:
            try:
                kw[key] = float(value)
            except ValueError:
                raise UserError(f"--set {item}: {key} must be a number") from None
        else:
            raise UserError(f"--set {item}: a null target takes {', '.join(SETTINGS)} or capabilities")
    try:
        return NullTarget(capacity, name=spec, **kw)
    except ValueError as e:
        raise UserError(f"--set capabilities: {e}") from None
