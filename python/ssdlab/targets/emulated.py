"""``emu:PROFILE``: a simulated drive served as a block device in this process
(:class:`ssdlab.targets.emu.EmulatedDrive`) and tested through fio exactly as a real drive
is: the safety gate, fio's job files and logs, purge by discard, drive counters (read from
the emulator's counters file). Its figures and the ``sim:PROFILE`` run's answer the same
question by two paths: the real-drive path checked against a drive whose truth is known.

The drive keeps no data (reads return zeros): tests time I/O and never read back what they
wrote. It runs at the simulated drive's speed on the wall clock (``slowdown`` times slower), so
a test lasts its drive time (times ``slowdown``); how late the emulator answered is in
``describe()["emulator"]``.

At a slowdown K above 1 every phase runs K times longer on the wall clock (timed jobs, idle
phases, series intervals) and its results are given in the drive's own time
(:func:`drive_time`: IOPS and MB/s x K, times and latencies / K), so they compare with the
simulator's as they are; the summary's ``target_info.emulator.time`` says so. Workloads in
fio's language (``ssdlab run``) and trace replays are not stretched: their figures are wall
time.
"""
from __future__ import annotations

import argparse
import bisect
import dataclasses
import math
import os
import threading
import time

import numpy as np

from ..errors import UserError
from ..params import number
from .base import JobSpec, PhaseResult
from .emu import LATE_NS, MAX_SLOWDOWN, STALL_NS, EmulatedDrive, idleness, lateness
from .fio import FioError, FioTarget
from .loop import LoopError
from .safety import UnsafeTargetError

#: The ``--set`` key of the emulator itself (the others are the drive's profile keys).
SLOWDOWN_KEY = "slowdown"
#: ``--set slowdown=K``: as ``ssdlab emulate --slowdown``.
parse_slowdown = number(float, 1, MAX_SLOWDOWN)


#: How often the emulated drive's counters are read while fio runs [s]: the resolution of
#: the per-interval lateness.
COUNTER_SAMPLE_S = 0.05
#: A phase's emulated figures are unreliable when more than this share of its replies was
#: late (more than LATE_NS after its simulated time)...
UNRELIABLE_LATE_SHARE = 0.01
#: ...and its p99 lateness, in the drive's time, is more than this fraction of its median
#: completion latency: the replies' lateness is then a visible part of what fio measured.
UNRELIABLE_LATE_FRACTION = 0.10


def unreliable(late: dict, latency_us: dict, slowdown: float) -> bool:
    """Whether a phase whose replies were late as ``late`` says (:func:`ssdlab.targets.emu.lateness`,
    wall clock) with completion latency percentiles ``latency_us`` (drive time) measured the
    emulator rather than the drive (:data:`UNRELIABLE_LATE_SHARE`, :data:`UNRELIABLE_LATE_FRACTION`)."""
    share, p99_s, p50_us = late.get("late_share"), late.get("p99_late_s"), latency_us.get("p50")
    if share is None or p99_s is None or share <= UNRELIABLE_LATE_SHARE:
        return False
    return not p50_us or p99_s / slowdown * 1e6 > UNRELIABLE_LATE_FRACTION * p50_us


class _CounterSamples:
    """How late the emulated drive's replies were and how long the host left it idle, read
    from its counters every :data:`COUNTER_SAMPLE_S` on a thread from now until :meth:`stop`:
    the reply buckets (``late``), ``late_ns``, ``max_late_ns`` and the idle gap buckets
    (``idle_gaps``, ``idle_ns``) at each wall time ``times`` [s since the epoch] (kept as one
    int64 row each: about 60 KB a minute)."""

    #: The counters kept, in a row's order (lists, then numbers).
    LISTS, NUMBERS = ("late", "idle_gaps", "idle_ns"), ("late_ns", "max_late_ns")

    def __init__(self, drive: EmulatedDrive):
        self.drive = drive
        self.bounds = drive.counters()["late_bounds_ns"]
        self._n = len(self.bounds) + 1
        self.times: list[float] = []
        self.rows: list[np.ndarray] = []
        self._read()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ssdlab-emu-counters", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        c = self.drive.counters()
        row = [v for k in self.LISTS for v in c[k]] + [c[k] for k in self.NUMBERS]
        self.rows.append(np.array(row, dtype=np.int64))
        self.times.append(time.time())

    def _run(self) -> None:
        while not self._stop.wait(COUNTER_SAMPLE_S):
            self._read()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._read()

    def at(self, t: float) -> dict:
        """The counters kept, at the reading nearest before ``t`` [s since the epoch]."""
        n = self._n
        row = self.rows[max(0, bisect.bisect_right(self.times, t) - 1)].tolist()
        d = {k: row[i * n:(i + 1) * n] for i, k in enumerate(self.LISTS)}
        d.update(zip(self.NUMBERS, row[len(self.LISTS) * n:]))
        return {"late_bounds_ns": self.bounds, **d}

    def between(self, start_s: float, end_s: float) -> dict:
        """:func:`ssdlab.targets.emu.lateness` of the replies between the readings nearest
        before ``start_s`` and ``end_s`` [s since the epoch]."""
        return lateness(self.at(end_s), self.at(start_s))

    def idle_between(self, start_s: float, end_s: float, stall_ns: int = STALL_NS) -> dict:
        """:func:`ssdlab.targets.emu.idleness` of the idle gaps (stalls: over ``stall_ns``)
        between the readings nearest before ``start_s`` and ``end_s``."""
        return idleness(self.at(end_s), self.at(start_s), stall_ns)


def _time_factor(name: str, slowdown: float) -> float:
    """What a series column or total named ``name`` is multiplied by to go from the wall
    clock of a drive emulated ``slowdown`` times slower to the drive's own time: rates
    (``iops``, ``mbps``, ``*_iops``, ``*_mbps``) x slowdown, times and latencies (``*_s``,
    ``*_us``, ``*_ns``) / slowdown, anything else (bytes, counts) 1."""
    if name in ("iops", "mbps") or name.endswith(("_iops", "_mbps")):
        return slowdown
    return 1.0 / slowdown if name.endswith(("_s", "_us", "_ns")) else 1.0


def drive_time(result: PhaseResult, job: JobSpec, slowdown: float) -> PhaseResult:
    """``result`` measured on the wall clock of a drive emulated ``slowdown`` times slower, as
    the result of ``job`` in the drive's own time: series and totals by :func:`_time_factor`,
    latency percentiles / slowdown; a note says so."""
    return dataclasses.replace(
        result, job=job,
        series={c: np.asarray(v) * _time_factor(c, slowdown) for c, v in result.series.items()},
        totals={k: v * _time_factor(k, slowdown) if isinstance(v, (int, float)) and not isinstance(v, bool) else v
                for k, v in result.totals.items()},
        latency_us={k: v / slowdown for k, v in result.latency_us.items()},
        notes=result.notes + [f"emulated at slowdown {slowdown:g}: ran {slowdown:g} times longer on the wall clock; "
                              f"figures rescaled to the drive's time (IOPS and MB/s x {slowdown:g}, times and "
                              f"latencies / {slowdown:g})"])


def open_spec(spec: str, *, sets: tuple[str, ...] = (), seed: int = 1, threads: int = 1, **kw) -> "EmuTarget":  # noqa: ARG001
    """``emu:PROFILE`` for :func:`ssdlab.targets.open_target`: the drive with the ``--set``
    profile overrides ``sets``, and ``--set slowdown=K`` (wall seconds per simulated second,
    1 to 1000); ``workdir``, ``dry_run``, ``purge_method`` and ``fio`` as for the fio
    targets. Problems (no root or FUSE, a bad profile, the safety gate) as :class:`UserError`."""
    from ..profiles import load_profile

    slowdown = 1.0
    profile_sets = []
    for kv in sets:
        key, _, value = kv.partition("=")
        if key.strip() != SLOWDOWN_KEY:
            profile_sets.append(kv)
            continue
        try:
            slowdown = parse_slowdown(value)
        except argparse.ArgumentTypeError as e:
            raise UserError(f"--set {kv}: {e} (slowdown is wall seconds per simulated second)") from None
    kw = {k: v for k, v in kw.items() if k in ("workdir", "dry_run", "purge_method", "fio")}
    profile = load_profile(spec[4:] or "default", profile_sets)
    try:
        return EmuTarget(profile, seed=seed, slowdown=slowdown, **kw)
    except (ValueError, UnsafeTargetError, FioError, LoopError) as e:
        raise UserError(str(e)) from None


class EmuTarget(FioTarget):
    """The simulated drive ``profile`` (a :class:`ssdlab.profiles.Profile`) as a block device
    made now and removed by :meth:`close`; ``seed`` of the simulated drive, ``slowdown`` wall
    seconds per simulated second; ``workdir``, ``dry_run`` (nothing is started; job files say
    ``/dev/loopN``), ``purge_method`` and ``fio`` as for :class:`FioTarget`. The fresh device
    is ours, so no ``--destroy-data`` is needed, but the safety gate still runs on it."""

    def __init__(self, profile, workdir: str | os.PathLike | None = None, *, seed: int = 1, slowdown: float = 1.0,
                 dry_run: bool = False, purge_method: str = "blkdiscard", fio: str = "fio"):
        self.profile, self.seed, self.slowdown = profile, seed, slowdown
        self.drive = None
        self._samples: _CounterSamples | None = None
        self._unreliable: list[dict] = []
        self._idle_work: list[dict] = []
        #: The counter samples of the fio run whose first phase has been read.
        self._idle_seen: _CounterSamples | None = None
        if dry_run:
            self._init_dry_loop(f"emu:{profile.name}", profile.user_bytes, workdir, purge_method, fio)
            return
        self.drive = EmulatedDrive(profile, seed=seed, slowdown=slowdown)
        try:
            super().__init__(self.drive.device, workdir, destroy=None, dry_run=False, purge_method=purge_method, fio=fio)
        except BaseException:
            self.drive.close(wait=False)
            raise
        self.name = f"emu:{profile.name}"

    def describe(self) -> dict:
        """The fio target's facts, and ``emulator``: the drive (profile, seed, slowdown, its
        counters file), ``time`` (in which time the figures are), ``lateness``
        (:func:`ssdlab.targets.emu.lateness` since the start), once a phase's figures were
        :func:`unreliable` ``unreliable_phases`` and ``warning``, and once the host left the
        drive idle past its idle delay ``idle_work_phases`` (:meth:`_with_lateness`); kept up
        to date after every fio run in the same dict."""
        d = super().describe()
        d["kind"] = "emu"
        d["emulator"] = {"profile": self.profile.name, "profile_source": self.profile.source, "seed": self.seed,
                         "slowdown": self.slowdown, "counters": str(self.drive.counters_path) if self.drive else None,
                         "time": "drive time" if self.slowdown == 1 else
                         f"drive time: emulated at slowdown {self.slowdown:g}, each phase ran {self.slowdown:g} times "
                         f"longer on the wall clock and its figures were rescaled (IOPS and MB/s x {self.slowdown:g}, "
                         f"times and latencies / {self.slowdown:g}); workloads and trace replays: wall time"}
        if self._unreliable:
            self._note_unreliable()
        self._note_idle_work()
        self._note_lateness()
        return d

    def _wall_job(self, job: JobSpec) -> JobSpec:
        """``job`` stretched ``slowdown`` times on the wall clock: its duration and interval."""
        if self.slowdown == 1:
            return job
        return dataclasses.replace(job, interval_s=job.interval_s * self.slowdown,
                                   duration_s=None if job.duration_s is None else job.duration_s * self.slowdown)

    def _drive_result(self, result: PhaseResult, job: JobSpec) -> PhaseResult:
        """``result`` in the drive's own time (:func:`drive_time`), with the lateness of the
        emulator's replies (:meth:`_with_lateness`)."""
        return self._with_lateness(result if self.slowdown == 1 else drive_time(result, job, self.slowdown))

    def _with_lateness(self, result: PhaseResult) -> PhaseResult:
        """``result`` with how late the emulator's replies were while it ran (wall clock):
        totals ``late_replies``, ``late_share``, ``late_p99_s``; series ``late_share`` and
        ``late_p99_us`` per interval; and how long the host left the drive idle (drive time;
        for the first phase of a fio run, from the run's start, the gap before its first
        command included): totals ``host_idle_s`` and ``host_stall_s`` (the part in gaps over
        :data:`ssdlab.targets.emu.STALL_NS`: fio's start-up, fio descheduled on a busy host),
        and on a drive that idle time changes (its ``idle_work_delay_ns``) ``idle_work_gaps``:
        the gaps longer than its idle delay (to the counters' 1-2-5 buckets), which give the
        phase a note and go into the ``emulator`` facts' ``idle_work_phases``. The phase ran
        over its ``wall_span_s``, else the last fio run's end less its run time; its
        intervals follow on the wall clock from its start
        (to :data:`COUNTER_SAMPLE_S`, and fio's start-up for a phase of its own). A phase whose
        figures the lateness makes :func:`unreliable` gets a note and goes into the
        ``emulator`` facts' ``unreliable_phases`` and ``warning``."""
        samples = self._samples
        if samples is None or result.job.pattern == "idle":
            return result
        k = self.slowdown
        run_start, run_end = samples.times[0], samples.times[-1]
        start, end = result.wall_span_s or (max(run_start, run_end - float(result.totals.get("duration_s") or 0) * k),
                                            run_end)
        late = samples.between(start, end)
        # The gap before a fio run's first command ends at that command, which the first
        # phase's own span may just miss: its idle time counts from the run's start.
        first, self._idle_seen = samples is not self._idle_seen, samples
        idle_start = run_start if first else start
        idle = samples.idle_between(idle_start, end)
        t = np.asarray(result.series.get("t_s", ()), dtype=np.float64)
        dt = np.asarray(result.series.get("dt_s", np.ones_like(t) * result.job.interval_s), dtype=np.float64)
        per = [samples.between(start + a * k, start + (a + d) * k) for a, d in zip(t, dt)]
        series = {**result.series,
                  "late_share": np.array([math.nan if p["late_share"] is None else p["late_share"] for p in per]),
                  "late_p99_us": np.array([math.nan if p["p99_late_s"] is None else p["p99_late_s"] * 1e6
                                           for p in per])}
        totals = {**result.totals, "late_replies": late["replies"], "late_share": late["late_share"],
                  "late_p99_s": late["p99_late_s"], "host_idle_s": idle["idle_s"], "host_stall_s": idle["stall_s"]}
        notes = list(result.notes)
        if unreliable(late, result.latency_us, k):
            self._unreliable.append({"phase": result.job.name, "late_share": late["late_share"],
                                     "p99_late_s": late["p99_late_s"], "latency_p50_us": result.latency_us.get("p50")})
            notes.append(f"unreliable: {late['late_share']:.1%} of the emulator's replies were late by more than "
                         f"{LATE_NS / 1000:g} us (p99 {late['p99_late_s'] * 1e6:,.0f} us on the wall clock), against "
                         f"a median completion latency of {result.latency_us.get('p50') or 0:,.0f} us: the latencies "
                         f"include that much of this host's delay, and IOPS and MB/s are the drive's only where the "
                         f"drive, not the host, limits them")
            self._note_unreliable()
        delay_ns = self.drive.idle_work_delay_ns
        if delay_ns is not None:
            idle_work = samples.idle_between(idle_start, end, delay_ns)
            totals["idle_work_gaps"] = idle_work["stalls"]
            if idle_work["stalls"]:
                self._idle_work.append({"phase": result.job.name, "gaps": idle_work["stalls"],
                                        "idle_s": idle_work["stall_s"]})
                self._note_idle_work()
                notes.append(
                    f"the host left the drive idle {idle_work['stalls']} time(s) for longer than its idle delay "
                    f"(gc_idle_delay_ms = {delay_ns / 1e6:g}), {idle_work['stall_s']:.2f} s of drive time "
                    f"in all, during or just before this phase (fio's start-up, or fio kept from running on a busy "
                    f"host): the drive collected garbage, or folded its SLC cache or took it back in use, then, which a sim: run of the same "
                    f"phases, back to back, does not: where their figures differ, this may be why")
        return dataclasses.replace(result, series=series, totals=totals, notes=notes)

    def _note_unreliable(self) -> None:
        if "emulator" not in self._facts:
            return
        names = [u["phase"] for u in self._unreliable]
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        self._facts["emulator"]["unreliable_phases"] = list(self._unreliable)
        self._facts["emulator"]["warning"] = (
            f"the emulator replied late in {len(names)} phase(s) ({shown}): more than "
            f"{UNRELIABLE_LATE_SHARE:.0%} of their replies over {LATE_NS / 1000:g} us late, the p99 above "
            f"{UNRELIABLE_LATE_FRACTION:.0%} of their median latency (each phase's late_share and late_p99_s, "
            f"per interval in its series). Their latencies include this host's delay, and their IOPS and MB/s are "
            f"the drive's only where the drive, not the host, limits them: where they differ from a sim: run of "
            f"the same test, the simulator's are the drive's. Run emu: on a quieter host or at a higher "
            f"--set slowdown")

    def _note_idle_work(self) -> None:
        if self._idle_work and "emulator" in self._facts:
            self._facts["emulator"]["idle_work_phases"] = list(self._idle_work)

    def _note_lateness(self) -> None:
        if self.drive is not None and self.drive.running and "emulator" in self._facts:
            self._facts["emulator"]["lateness"] = lateness(self.drive.counters())

    def _run_fio(self, *args, **kw):
        """fio's run, with the drive's counters sampled meanwhile (:class:`_CounterSamples`)."""
        samples = _CounterSamples(self.drive) if self.drive is not None and self.drive.running else None
        try:
            return super()._run_fio(*args, **kw)
        finally:
            if samples is not None:
                samples.stop()
            self._samples = samples
            self._note_lateness()

    def close(self) -> None:
        """Lets go of the device, then detaches it and stops the emulator."""
        try:
            super().close()
        finally:
            if self.drive is not None:
                self.drive.close(wait=False)
