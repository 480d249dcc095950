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
import dataclasses
import os

import numpy as np

from ..errors import UserError
from ..params import number
from .base import JobSpec, PhaseResult
from .emu import MAX_SLOWDOWN, EmulatedDrive, lateness
from .fio import FioError, FioTarget
from .loop import LoopError
from .safety import UnsafeTargetError

#: The ``--set`` key of the emulator itself (the others are the drive's profile keys).
SLOWDOWN_KEY = "slowdown"
#: ``--set slowdown=K``: as ``ssdlab emulate --slowdown``.
parse_slowdown = number(float, 1, MAX_SLOWDOWN)


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


def open_spec(spec: str, *, sets: tuple[str, ...] = (), seed: int = 1, **kw) -> "EmuTarget":
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
        counters file) and ``lateness`` (:func:`ssdlab.targets.emu.lateness` since the start),
        kept up to date after every fio run in the same dict."""
        d = super().describe()
        d["kind"] = "emu"
        d["emulator"] = {"profile": self.profile.name, "profile_source": self.profile.source, "seed": self.seed,
                         "slowdown": self.slowdown, "counters": str(self.drive.counters_path) if self.drive else None,
                         "time": "drive time" if self.slowdown == 1 else
                         f"drive time: emulated at slowdown {self.slowdown:g}, each phase ran {self.slowdown:g} times "
                         f"longer on the wall clock and its figures were rescaled (IOPS and MB/s x {self.slowdown:g}, "
                         f"times and latencies / {self.slowdown:g}); workloads and trace replays: wall time"}
        self._note_lateness()
        return d

    def _wall_job(self, job: JobSpec) -> JobSpec:
        """``job`` stretched ``slowdown`` times on the wall clock: its duration and interval."""
        if self.slowdown == 1:
            return job
        return dataclasses.replace(job, interval_s=job.interval_s * self.slowdown,
                                   duration_s=None if job.duration_s is None else job.duration_s * self.slowdown)

    def _drive_result(self, result: PhaseResult, job: JobSpec) -> PhaseResult:
        """``result`` in the drive's own time (:func:`drive_time`)."""
        return result if self.slowdown == 1 else drive_time(result, job, self.slowdown)

    def _note_lateness(self) -> None:
        if self.drive is not None and self.drive.running and "emulator" in self._facts:
            self._facts["emulator"]["lateness"] = lateness(self.drive.counters())

    def _run_fio(self, *args, **kw):
        try:
            return super()._run_fio(*args, **kw)
        finally:
            self._note_lateness()

    def close(self) -> None:
        """Lets go of the device, then detaches it and stops the emulator."""
        try:
            super().close()
        finally:
            if self.drive is not None:
                self.drive.close(wait=False)
