"""``sim:PROFILE`` — the built-in NAND/FTL simulator as a test target.

Phases run in simulated time, as fast as the simulator goes. The series carries, besides
``t_s``/``iops``/``mbps``, the drive's internal counters per interval: ``host_write_bytes``,
``nand_write_bytes``, ``gc_copied_bytes``, ``erases``, ``gc_die_s`` (die time spent on GC in
the interval, summed over dies), ``free_blocks`` (at the end of the interval) and
``write_amplification`` (NAND bytes / host bytes written in the interval, pseudo-SLC folding
included; NaN when the host wrote nothing). Each counts work when it is carried out: host
bytes when the write completes, NAND bytes when the die ends the program, copies and erases
spread evenly over the die time of the GC work that does them (as ``gc_die_s``), so a drive
that decides a whole round of GC at once (``stalling``) shows its copies over the intervals
its dies spend on them, and an interval never holds more NAND bytes than the dies can
program in it. The last interval of a phase also counts what its dies still had to do when
it ended (the next phase starts after it), so the intervals add up to the phase's totals;
its ``gc_die_s`` does not (that die time shows in the next phase's first intervals). On a
drive with a pseudo-SLC cache the series also has ``slc_cache_bytes`` (host data held in the
cache at the end of the interval, as decided) and ``fold_bytes`` (folded into the native
mode in the interval, when the die ends the folding program); on a DRAM-less drive (a map cache) ``map_misses`` (map-cache misses in the
interval) and ``map_bypassed`` (lookups served from the controller's SRAM while the map
cache was bypassed as thrashing, ``map_bypass_hit_pct``); and for the job's direction the
per-interval latency columns of :func:`~ssdlab.targets.base.latency_column` (p50, p99,
p99.9 within 1/32, exact max; us; by completion time, NaN where nothing completed).

:meth:`SimTarget.run_workload` runs a synthetic workload richer than a
:class:`~ssdlab.targets.base.JobSpec` (read/write/TRIM mixes, block-size splits, random and
sequential shares, skewed address distributions, idle gaps, rate caps; the keys of
``ssdlab._native.Simulator.start_workload``); its series adds ``{dir}_iops`` and
``{dir}_mbps`` and the latency columns of every direction that ran. Several jobs sharing the
drive (fio's numjobs, the jobs of a stonewall group) run as one phase from
``{"jobs": [job, ...], "interval_s": S}``; its totals add each job's figures.

While a phase runs, its final intervals (those no completion can land in any more) leave
the simulator about once a second of wall time (``Simulator.take_intervals``) as rows of its
series: the simulator's memory stays flat however long the phase runs, and during a run the
rows go to the results folder's journal (:mod:`ssdlab.journal`) at once, exactly as the final
series holds them, so a run killed outright keeps them.
"""
from __future__ import annotations

import mmap
import time
from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np

from .. import _native, columns, errors, results, stop
from ..journal import CHECKPOINT_S
from ..profiles import Profile, load_profile
from .base import (
    DIRECTIONS, FORK, LATENCY_STATS, SHARED_REPLAY, SIMULATED, CommandChunk, JobSpec, LiveFigures, PhaseResult, Progress, ReplayJob,
    ReplayResult, TargetDefaults, latency_column, pattern_direction,
)

UNIT_BYTES = int(_native.UNIT_BYTES)
#: The counter of the drive's host write bytes (the ``host_write_bytes`` column reads it).
_HOST_COUNTER = next(c.counter for c in columns.drive_columns() if c.name == "host_write_bytes")
#: An idle phase reports how many blocks hold data of more than one of this many equal LBA
#: regions, before and after (``mixed_blocks_before`` / ``_after``).
MIXING_REGIONS = 32


@dataclass(frozen=True)
class WorkloadPhase:
    """A synthetic workload run by :meth:`SimTarget.run_workload` (its result's ``job``):
    ``params`` are the workload's keys as ``ssdlab._native.Simulator.start_workload`` takes
    them (sizes in bytes, times in seconds, rates per second), ``interval_s`` the series
    interval."""

    name: str
    params: Mapping[str, object] = field(default_factory=dict)
    interval_s: float = 1.0
    #: Not one of the JobSpec patterns: procedures that look at ``job.pattern`` see a workload.
    pattern: str = "workload"

    @classmethod
    def of(cls, spec: "WorkloadPhase | Mapping[str, object]") -> "WorkloadPhase":
        """``spec`` itself, or the phase of a dict of workload keys (``name`` labels it)."""
        if isinstance(spec, WorkloadPhase):
            return spec
        params = {k: v for k, v in dict(spec).items() if k != "name"}
        interval = params.get("interval_s")
        return cls(name=str(spec.get("name") or "workload"), params=params,
                   interval_s=float(interval) if interval is not None else 1.0)

    def shares(self) -> dict[str, float]:
        """Share of IOs per direction (read, write, trim) the workload asks for (of several
        jobs: the largest any job asks for)."""
        jobs = self.params.get("jobs")
        if jobs is not None:
            each = [_shares(job) for job in jobs]
            return {d: max((s[d] for s in each), default=0.0) for d in DIRECTIONS}
        return _shares(self.params)


def _shares(params: Mapping[str, object]) -> dict[str, float]:
    """Share of IOs per direction of one workload's keys."""
    read = float(params.get("read_fraction") or 0.0)
    trim = float(params.get("trim_fraction") or 0.0)
    return {"read": read, "write": max(0.0, 1.0 - read - trim), "trim": trim}


def open_spec(spec: str, *, sets: tuple[str, ...] = (), seed: int = 1, threads: int = 1, **_kw) -> "SimTarget":
    """``sim:PROFILE`` (a built-in name or a .toml path; ``sim`` alone: ``default``) with the
    ``--set KEY=VALUE`` overrides ``sets``, on ``threads`` threads (1 or 2); the fio targets'
    keywords are ignored."""
    return SimTarget(load_profile(spec[4:] or "default", sets), seed=seed, threads=threads)


class _Drive:
    """A ``_native.Simulator`` whose calls raise the simulator's user errors as
    :mod:`ssdlab.errors`' (the native module imports nothing from the package):
    ``DriveFullError`` (the drive ran out of room; args = (message, key)) as
    :class:`~ssdlab.errors.DriveFullError`, ``SeriesError`` (a series interval too short for
    the phase) as :class:`~ssdlab.errors.UserError`, ``WorkloadKeyError`` (a workload key the
    simulator refuses) as :class:`~ssdlab.errors.WorkloadKeyError`; any other error (a call
    the drive's state does not take: a program's mistake) as raised."""

    __slots__ = ("_sim",)

    def __init__(self, sim: _native.Simulator):
        self._sim = sim

    def __getattr__(self, name: str):
        attr = getattr(self._sim, name)
        if not callable(attr):
            return attr

        def call(*args, **kwargs):
            try:
                return attr(*args, **kwargs)
            except _native.DriveFullError as e:
                raise errors.DriveFullError(*e.args) from None
            except _native.SeriesError as e:
                raise errors.UserError(*e.args) from None
            except _native.WorkloadKeyError as e:
                # a workload key the job file's checks let through: still the user's to change
                raise errors.WorkloadKeyError(f"the simulated drive refuses this workload: {e}") from None
        return call


class SimTarget(TargetDefaults):
    """A simulated drive built from a :class:`~ssdlab.profiles.Profile`."""

    capabilities = frozenset({SIMULATED, FORK, SHARED_REPLAY})

    def __init__(self, profile: Profile, seed: int = 1, threads: int = 1):
        self.profile = profile
        self.seed = int(seed)
        #: Threads one simulation may use, 1 or 2 (``_native.Simulator.set_threads``): the
        #: same results, sooner where the drive and the phase allow two.
        self.threads = int(threads)
        self.name = f"sim:{profile.name}"
        self.capacity_bytes = profile.user_bytes
        self.zone_size_bytes = int(profile.values.get("zns_zone_size_bytes") or 0)
        self._drive = None  # built on first use: allocating a large drive's maps costs seconds
        self._released = False

    def set_threads(self, threads: int) -> None:
        """Threads the simulation may use from now on, 1 or 2 (:attr:`threads`); copies made
        by :meth:`fork` take them."""
        self.threads = int(threads)
        if self._drive is not None:
            self._drive.set_threads(self.threads)

    def fork(self) -> "SimTarget":
        """Another drive of the same profile and seed, independent of this one (as this one
        is after :meth:`purge`): procedures whose steps each start with a purge may run them
        side by side on copies."""
        return SimTarget(self.profile, self.seed, self.threads)

    @property
    def state_bytes(self) -> int:
        """Memory a drive of this profile holds, estimated without building one [bytes]:
        about 8 bytes per physical 4 KiB page (L2P, P2L, block records)."""
        return int(self.profile.geometry["physical_bytes"]) // 4096 * 8

    @property
    def _sim(self):
        if self._released:
            raise RuntimeError(f"{self.name}: the drive was released (SimTarget.release); purge() gives a fresh one")
        if self._drive is None:
            self._drive = _Drive(_native.Simulator(list(self.profile.pairs), self.seed))
            self._drive.set_threads(self.threads)
        return self._drive

    # -- Target protocol -------------------------------------------------------------
    def purge(self) -> dict:
        """A fresh, erased drive (the simulator's secure erase)."""
        self._drive = None
        self._released = False
        return {"method": "fresh simulated drive (all blocks erased, nothing mapped)"}

    def describe(self) -> dict:
        return {
            "kind": "simulator",
            "target": self.name,
            "profile_source": self.profile.source,
            "profile": self.profile.values,
            "geometry": self.profile.geometry,
            "seed": self.seed,
            **({"spare_warning": self.profile.geometry["spare_warning"]} if "spare_warning" in self.profile.geometry else {}),
        }

    def counters(self) -> dict:
        """Cumulative internal counters (bytes written, erases, erase-count spread...)."""
        return dict(self._sim.counters())

    @property
    def now_s(self) -> float:
        return float(self._sim.now_s)

    def close(self) -> None:
        self.release()

    def release(self) -> None:
        """Lets the drive's state go (its maps, about :attr:`state_bytes`: most of a run's
        memory), once a test has taken all it needs from it; the target then takes no phase
        until :meth:`purge` makes a fresh drive."""
        self._drive = None
        self._released = True

    def run_phase(self, job: JobSpec, progress: Progress | None = None) -> PhaseResult:
        span = job.span_bytes if job.span_bytes is not None else self.capacity_bytes - job.offset_bytes
        if job.pattern == "idle":
            return self._idle(job)
        handles_before = self._sim.fdp_handles()
        self._sim.start_phase(
            job.pattern, job.bs_bytes, job.qd, job.offset_bytes, span,
            duration_s=job.duration_s, io_bytes=job.io_bytes, interval_s=job.interval_s,
        )
        direction = pattern_direction(job.pattern)
        raw, series, complete, journal = self._run_started(progress, job.name,
                                                           lambda r: _interval_series(r, (direction,)))
        totals, latency_us = _counter_totals(raw)
        _add_handle_totals(totals, handles_before, self._sim.fdp_handles())
        result = PhaseResult(job=job, series=series, totals=totals, latency_us=latency_us)
        return _mark_complete(result, raw, complete, journal)

    def plan_workload(self, workload, interval_s: float) -> list:
        """The groups of a :class:`~ssdlab.workload.fiojob.Workload` as the simulator runs
        them (:class:`~ssdlab.workload.tosim.SimGroup`); an option it cannot run is an error
        naming the job file's line."""
        from ..workload import tosim

        values = self.profile.values
        tosim.check_zones(workload, self.zone_size_bytes, self.profile.name)
        tosim.check_placement(workload, int(values.get("fdp_reclaim_unit_handles") or 0) if values.get("fdp") else 0,
                              self.profile.name)
        return tosim.sim_groups(workload, self.capacity_bytes, interval_s)

    def workload_notes(self, workload, steps: list) -> dict:
        """The workload's options the simulator does not apply, and what it does differently
        from fio in each group."""
        from ..workload import tosim

        return {"not_applicable": tosim.not_applicable(workload),
                "simulator_notes": [n for g in steps for n in g.notes]}

    def dry_run_text(self, workload, steps: list) -> list[str]:
        """The options not applied, then each group's simulator workload keys and notes."""
        from ..workload import tosim

        lines = [f"# not applicable to the simulator: {opt}" for opt in tosim.not_applicable(workload)]
        for g in steps:
            lines.append(f"# group {g.index + 1} ({g.name}): simulator workload {g.keys}")
            lines += [f"#   note: {note}" for note in g.notes]
        return lines

    def run_workload(self, spec: "WorkloadPhase | Mapping[str, object]",
                     progress: Progress | None = None) -> PhaseResult:
        """Runs a synthetic workload: ``spec`` is a group of :meth:`plan_workload`
        (:class:`~ssdlab.workload.tosim.SimGroup`: its ``startdelay`` idles the drive first),
        a :class:`WorkloadPhase` or a dict of the
        keys ``ssdlab._native.Simulator.start_workload`` documents (plus ``name``). Returns a
        :class:`~ssdlab.targets.base.PhaseResult` (``job`` = the :class:`WorkloadPhase`)
        whose series has ``t_s``, ``iops``, ``mbps``, the simulator's counters, and for each
        direction that ran (or has a share) ``{dir}_iops``, ``{dir}_mbps`` (TRIM: MB
        deallocated per second) and the latency columns of
        :func:`~ssdlab.targets.base.latency_column`; totals add ``{dir}_ios``,
        ``{dir}_bytes``, ``{dir}_latency_us``, ``idle_gaps`` and ``idle_s`` (thinktime gaps
        and the time the host left the drive idle, summed over jobs), and ``jobs``: per job
        (one for a single workload), ``name`` and, for each direction it ran or asks for,
        ``{dir}_ios``, ``{dir}_bytes``, ``{dir}_latency_us``.

        Several jobs at once: ``{"jobs": [job dict, ...], "interval_s": S}``, each job taking
        the workload keys but ``interval_s``, plus ``startdelay_s`` and ``name`` (see
        ``Simulator.start_workload``). Bad keys raise ``ValueError`` naming the key. Ctrl-C
        keeps what was measured, marked incomplete."""
        from ..workload.tosim import SimGroup

        if isinstance(spec, SimGroup):
            if spec.idle_before_s:
                self.run_phase(JobSpec("startdelay", "idle", duration_s=spec.idle_before_s,
                                       interval_s=spec.keys["interval_s"]))
            spec = {**spec.keys, "name": spec.name}
        phase = WorkloadPhase.of(spec)
        handles_before = self._sim.fdp_handles()
        self._sim.start_workload({**phase.params, "name": phase.name})
        shares = phase.shares()
        directions = tuple(d for d in DIRECTIONS if shares[d])
        raw, series, complete, journal = self._run_started(
            progress, phase.name, lambda r: _interval_series(r, directions, per_direction=True))
        result = self._workload_result(phase, raw, series)
        _add_handle_totals(result.totals, handles_before, self._sim.fdp_handles())
        return _mark_complete(result, raw, complete, journal)

    def replay(self, job: ReplayJob, chunks, progress: Progress | None = None,
               total_commands: int | None = None) -> ReplayResult:
        """Replays prepared command chunks (:data:`~ssdlab.targets.base.CommandChunk`) closed-loop
        at ``job.qd`` in simulated time; see :class:`~ssdlab.targets.base.ReplayResult`.
        ``total_commands`` (if known) makes the progress fraction exact. A job with a
        ``buffer_compress_pct`` (0..100) writes data that compressible (see
        ``Simulator.start_workload``); without one the profile's compression ratio holds."""
        return self.replay_shared(job, [], chunks, progress, total_commands)[0]

    @property
    def shares_replays(self) -> bool:
        """Whether :meth:`replay_shared` may have followers: this profile's FTL decides by the
        order of the commands alone (``_native.Simulator.shares_replays``)."""
        return bool(self._sim.shares_replays)

    def replay_shared(self, job: ReplayJob, followers: list[tuple["SimTarget", ReplayJob]], chunks,
                      progress: Progress | None = None, total_commands: int | None = None) -> list[ReplayResult]:
        """:meth:`replay` on this drive and, with the same chunks, on each follower target at its
        own job's queue depth: drives of this profile brought to this drive's state the same
        way (copies from :meth:`fork`, purged and filled alike). The FTL's work is done once,
        by this drive's on a thread of its own, and the drives' timing models take turns on
        another (``_native.Simulator.replay_chunk_shared``); each result is the one the
        follower's own :meth:`replay` gives. Followers need :attr:`shares_replays`. Returns this
        drive's result, then each follower's; on Ctrl-C every one is marked incomplete."""
        drives = [self._sim, *(t._sim for t, _ in followers)]
        jobs = [job, *(j for _, j in followers)]
        for d, j in zip(drives, jobs):
            d.start_replay(j.qd, j.window_commands, getattr(j, "buffer_compress_pct", None))
        native = [d._sim for d in drives[1:]]
        complete = True
        try:
            for op, off, ln in chunks:
                stop.check()
                args = (_le(op, "u1"), _le(off, "<u8"), _le(ln, "<u8"))
                if native:
                    done, elapsed_s = drives[0].replay_chunk_shared(native, *args)[0]
                else:
                    done, elapsed_s = drives[0].replay_chunk(*args)
                if progress:
                    frac = done / total_commands if total_commands else 0.0
                    progress(min(frac, 1.0), f"{done:,} commands, {elapsed_s:,.0f} s simulated")
        except KeyboardInterrupt:
            complete = False
        except BaseException:
            self._end_replays(drives)  # leave the drives usable, then report the error
            raise
        return [_replay_result(j, raw, complete) for j, raw in zip(jobs, self._end_replays(drives))]

    @staticmethod
    def _end_replays(drives: list) -> list[dict]:
        """Brings followers' FTLs up to the leader's (``drives[0]``) and finishes every replay."""
        for d in drives[1:]:
            d.catch_up(drives[0]._sim)
        return [d.finish_replay() for d in drives]

    # -- helpers -----------------------------------------------------------------------
    def _run_started(self, progress: Progress | None, name: str,
                     to_series: Callable[[dict], dict]) -> tuple[dict, dict, bool, object]:
        """Advances the started phase to its end (or Ctrl-C); returns (``finish_phase``'s
        dict decoded, the phase's whole series, False if interrupted, its journal or None).

        About once a second of wall time (:data:`~ssdlab.journal.CHECKPOINT_S`) the intervals
        already final leave the simulator (``take_intervals``) and ``to_series`` turns them into
        rows of the series; while a run goes on (:func:`ssdlab.results.current_dir`) they go to
        the phase's journal (:mod:`ssdlab.journal`) at once."""
        journal = results.open_phase_journal(name, "simulator")
        series = _Rows()

        def take(raw: dict, last: bool = False) -> None:
            rows = to_series(_decode_phase(raw))
            series.append(rows)
            if journal is not None and (len(rows["t_s"]) or last):
                journal.append(rows, sync=not last)  # the last: synced by the journal's close()

        chunk = 20_000
        complete = True
        last_take = time.monotonic()
        try:
            while True:
                t0 = time.perf_counter()
                stop.check()  # a request whose KeyboardInterrupt was swallowed (ssdlab.stop)
                done, elapsed_s, fraction = self._sim.advance(chunk)
                dt = time.perf_counter() - t0
                # Aim at ~0.1 s of wall time per call: responsive progress and Ctrl-C.
                if dt > 0:
                    chunk = int(min(max(chunk * 0.1 / dt, 1_000), 5_000_000))
                if progress:
                    progress(fraction, live_text(self._sim.phase_live()))
                if done:
                    break
                if time.monotonic() - last_take >= CHECKPOINT_S:
                    take(self._sim.take_intervals())
                    last_take = time.monotonic()
        except KeyboardInterrupt:
            complete = False
        raw = self._sim.finish_phase()
        take(raw, last=True)
        return raw, series.series(), complete, journal

    def _workload_result(self, phase: WorkloadPhase, raw: dict, series: dict[str, np.ndarray]) -> PhaseResult:
        """The workload's result: ``series`` and the totals of ``finish_phase``'s dict."""
        totals, latency_us = _counter_totals(raw)
        shares = phase.shares()
        for direction in DIRECTIONS:
            d = raw["directions"][direction]
            if not d["total_ios"] and not shares[direction]:
                continue
            totals[f"{direction}_ios"] = int(d["total_ios"])
            totals[f"{direction}_bytes"] = int(d["total_bytes"])
            totals[f"{direction}_latency_us"] = {k: v / 1e3 for k, v in d["latency_ns"].items() if v is not None}
        totals["idle_gaps"] = int(raw["idle_gaps"])
        totals["idle_s"] = float(raw["idle_s"])
        job_specs = phase.params.get("jobs") or [phase.params]
        totals["jobs"] = [_job_totals(job, spec) for job, spec in zip(raw["jobs"], job_specs)]
        return PhaseResult(job=phase, series=series, totals=totals, latency_us=latency_us)

    def _idle(self, job: JobSpec) -> PhaseResult:
        before = self._sim.counters()
        holding_before, mixed_before = self._sim.region_mixing(MIXING_REGIONS)
        collected = self._sim.idle(float(job.duration_s or 0.0))
        after = self._sim.counters()
        holding_after, mixed_after = self._sim.region_mixing(MIXING_REGIONS)
        n = int(np.ceil((job.duration_s or 0.0) / job.interval_s))
        zeros = np.zeros(n)
        series = {"t_s": np.arange(n) * job.interval_s, "iops": zeros, "mbps": zeros.copy()}
        totals = {
            "duration_s": float(job.duration_s or 0.0), "ios": 0, "host_write_bytes": 0, "host_read_bytes": 0,
            # What idle GC did: the growth of every drive counter that ``counters()`` holds by its column's name.
            **{c.name: after[c.name] - before[c.name] for c in columns.drive_columns()
               if c.reading == "change" and c.name in after and c.name != "host_write_bytes"},
            "idle_gc_blocks": int(collected),
            # Why a full write pass is slow or fast afterwards: blocks whose data spans more
            # than 1/MIXING_REGIONS of the LBA space empty only at the end of such a pass.
            "mixing_regions": MIXING_REGIONS,
            "blocks_with_data_before": int(holding_before), "mixed_blocks_before": int(mixed_before),
            "blocks_with_data_after": int(holding_after), "mixed_blocks_after": int(mixed_after),
        }
        return PhaseResult(job=job, series=series, totals=totals)


def _job_totals(job: dict, spec: Mapping[str, object]) -> dict:
    """One job's totals from ``finish_phase``'s ``jobs`` and its workload keys ``spec``: its
    name, ``queue_depth`` (IOs it kept outstanding at most) and, per direction it ran or has a
    share in, ``{dir}_ios``, ``{dir}_bytes``, ``{dir}_latency_us``."""
    out: dict = {"name": job["name"], "queue_depth": int(spec["qd"]) if spec.get("qd") else None}
    shares = _shares(spec)
    for direction in DIRECTIONS:
        d = job["directions"][direction]
        if not d["total_ios"] and not shares[direction]:
            continue
        out[f"{direction}_ios"] = int(d["total_ios"])
        out[f"{direction}_bytes"] = int(d["total_bytes"])
        out[f"{direction}_latency_us"] = {k: v / 1e3 for k, v in d["latency_ns"].items() if v is not None}
    return out


def _interval_series(raw: dict, directions: tuple[str, ...], per_direction: bool = False) -> dict[str, np.ndarray]:
    """Rows of a simulated phase's series from ``finish_phase``'s or ``take_intervals``' dict
    (decoded): ``t_s`` (from the phase's start), ``dt_s`` (the interval's length: the last
    may be shorter), ``iops``, ``mbps``, the drive's columns (:func:`_drive_series`) with
    ``write_amplification`` after ``nand_write_bytes``, then per direction in ``directions`` the latency columns of
    :func:`~ssdlab.targets.base.latency_column`: of that direction's IOs with
    ``per_direction`` (which adds ``{dir}_iops`` and ``{dir}_mbps``), else of every IO (a
    phase of one direction)."""
    interval = float(raw["interval_s"])
    ios = np.asarray(raw["ios"], dtype=np.float64)
    n = len(ios)
    t = (int(raw["first_interval"]) + np.arange(n, dtype=np.float64)) * interval
    # Interval lengths [s]: the phase's last interval (in the final rows, which carry the
    # phase's duration) ends with the phase, often before a whole interval (byte-limited
    # phases); rates are over the interval's own length, as fio's.
    dt = np.full(n, interval)
    if n and "duration_s" in raw:
        last = float(raw["duration_s"]) - t[-1]
        if 0 < last < interval:
            dt[-1] = last

    series = {
        "t_s": t,
        "dt_s": dt,
        "iops": ios / dt,
        "mbps": np.asarray(raw["bytes"], dtype=np.float64) / dt / 1e6,
    }
    series.update(_drive_series(raw))
    for direction in directions:
        d = raw["directions"][direction] if per_direction else raw
        if per_direction:
            series[f"{direction}_iops"] = np.asarray(d["ios"], dtype=np.float64) / dt
            series[f"{direction}_mbps"] = np.asarray(d["bytes"], dtype=np.float64) / dt / 1e6
        for label, _ in LATENCY_STATS:
            series[latency_column(direction, label)] = _us(d["latency_intervals_ns"][label])
    return series


def _read_columns(raw: Mapping) -> list[columns.Column]:
    """The drive's columns (:func:`ssdlab.columns.drive_columns`) that ``raw`` (a dict of
    the simulator's counters per interval or window, each preceded by its value at the
    start) carries: those whose counter it holds and whose feature the drive has."""
    return [c for c in columns.drive_columns() if c.counter in raw and not (c.needs and not raw[c.needs])]


def _scale(c: columns.Column, raw: Mapping) -> float:
    """Factor from column ``c``'s counter to its unit."""
    return {"one": 1.0, "unit_bytes": float(UNIT_BYTES), "nand_unit_bytes": float(raw["nand_bytes_per_unit"]),
            "ns_to_s": 1e-9}[c.scale]


def _drive_series(raw: Mapping) -> dict[str, np.ndarray]:
    """The drive's columns per interval (or replay window) from ``finish_phase``'s,
    ``take_intervals``' or ``finish_replay``'s dict (decoded), those it carries
    (:func:`_read_columns`): a counter's growth over each interval, or its level at the
    interval's end, in the column's unit; ``write_amplification`` (NAND bytes / host bytes,
    pseudo-SLC folding included) after ``nand_write_bytes``."""
    out = {}
    for c in _read_columns(raw):
        counts = np.asarray(raw[c.counter])
        v = (np.diff(counts.astype(np.int64)) if c.reading == "change" else counts[1:]).astype(np.float64)
        out[c.name] = v / 1e9 if c.scale == "ns_to_s" else v * _scale(c, raw)
        if c.name == "nand_write_bytes" and "host_write_bytes" in out:
            with np.errstate(divide="ignore", invalid="ignore"):
                out["write_amplification"] = np.where(out["host_write_bytes"] > 0, v / out["host_write_bytes"], np.nan)
    return out


def _drive_totals(raw: Mapping, start: Mapping) -> dict:
    """The growth of every drive column read as a change (:func:`_read_columns`) from the
    counters ``start`` to the last values in ``raw``, in the column's unit (whole bytes and
    counts; seconds), and ``write_amplification`` (None where the host wrote nothing)."""
    out: dict = {}
    for c in _read_columns(raw):
        if c.reading != "change":
            continue
        grew = int(np.asarray(raw[c.counter])[-1]) - int(start[c.counter])
        out[c.name] = grew / 1e9 if c.scale == "ns_to_s" else int(grew * _scale(c, raw))
    host, nand = out.get("host_write_bytes"), out.get("nand_write_bytes")
    out["write_amplification"] = nand / host if host and nand is not None else None
    return out


def _add_handle_totals(totals: dict, before: list[dict], after: list[dict]) -> None:
    """On a drive with Flexible Data Placement, adds ``fdp_handles`` to a phase's totals:
    per reclaim unit handle, what the phase did through it (``host_write_bytes``,
    ``gc_copied_bytes``, ``nand_write_bytes`` [bytes], ``write_amplification``,
    ``ru_filled``, ``ru_reclaimed`` [reclaim units]), from the drive's counters before and
    after it. Nothing without FDP."""
    if not after:
        return
    handles = []
    for b, a in zip(before, after):
        d = {k: a[k] - b[k] for k in a}
        d["write_amplification"] = d["nand_write_bytes"] / d["host_write_bytes"] if d["host_write_bytes"] else None
        handles.append(d)
    totals["fdp_handles"] = handles


def _counter_totals(raw: dict) -> tuple[dict, dict]:
    """The totals every simulated phase has, and its latency percentiles [us], from
    ``finish_phase``'s dict: the host's IOs and bytes, then the drive's counters from the
    phase's start to its end (:func:`_drive_totals`; the host bytes the drive counted
    give the write amplification)."""
    totals = {
        "duration_s": float(raw["duration_s"]),
        "ios": int(raw["total_ios"]),
        "host_write_bytes": int(raw["host_write_bytes"]),
        "host_read_bytes": int(raw["host_read_bytes"]),
    }
    totals.update({k: v for k, v in _drive_totals(raw, raw["start_counters"]).items() if k not in totals})
    latency_us = {k: v / 1e3 for k, v in raw["latency_ns"].items() if v is not None}
    return totals, latency_us


class _Rows:
    """A phase's series as its rows are taken: each column in its own anonymous memory
    mapping, reserved ahead and doubled when full (a page counts in memory only once written,
    and the whole mapping goes back to the system with the series), so a long phase holds
    its series once, with no copy at its end and no heap left fragmented by the batches."""

    def __init__(self, capacity_rows: int = 4096) -> None:
        self.capacity = capacity_rows
        self.n = 0
        self.columns: dict[str, np.ndarray] = {}

    @staticmethod
    def _mapped(dtype: np.dtype, rows: int) -> np.ndarray:
        return np.frombuffer(mmap.mmap(-1, max(rows, 1) * dtype.itemsize, flags=mmap.MAP_PRIVATE), dtype=dtype)

    def append(self, rows: dict[str, np.ndarray]) -> None:
        """Appends ``rows`` (column -> array, the same columns every time)."""
        k = len(rows["t_s"])
        if self.n + k > self.capacity:
            self.capacity = max(2 * self.capacity, self.n + k)
            for c, a in self.columns.items():  # one column at a time: the old mapping goes at once
                grown = self._mapped(a.dtype, self.capacity)
                grown[:self.n] = a[:self.n]
                self.columns[c] = grown
        for c, v in rows.items():
            v = np.asarray(v)
            if c not in self.columns:
                self.columns[c] = self._mapped(v.dtype, self.capacity)
            self.columns[c][self.n:self.n + k] = v
        self.n += k

    def series(self) -> dict[str, np.ndarray]:
        """The rows appended, column -> array (views of the mappings)."""
        return {c: a[:self.n] for c, a in self.columns.items()}


def _us(per_interval_ns: np.ndarray) -> np.ndarray:
    """Per-interval latencies [ns, NaN where nothing completed] in us."""
    return np.asarray(per_interval_ns, dtype=np.float64) / 1e3


#: Per-interval columns of ``finish_phase``'s dict (and of each direction's), as the native
#: module returns them: little-endian u64 bytes.
_U64_COLUMNS = ("ios", "bytes") + columns.counters()
#: What a latency column holds for an interval in which nothing completed.
_NO_LATENCY = np.uint64(2**64 - 1)


def _decode_phase(raw: dict) -> dict:
    """``finish_phase``'s dict with its per-interval columns as numpy arrays: counters as
    uint64, latencies [ns] as float64 with NaN where nothing completed. In place; returns it."""
    def decode(d: dict) -> None:
        for k in _U64_COLUMNS:
            if k in d:
                d[k] = np.frombuffer(d[k], dtype="<u8")
        lat = d["latency_intervals_ns"]
        for label, v in lat.items():
            a = np.frombuffer(v, dtype="<u8")
            lat[label] = np.where(a == _NO_LATENCY, np.nan, a.astype(np.float64))

    decode(raw)
    for d in raw["directions"].values():
        decode(d)
    return raw


def _mark_complete(result: PhaseResult, raw: dict, complete: bool, journal=None) -> PhaseResult:
    result.complete = complete and bool(raw["complete"])
    if not result.complete:
        result.notes.append(f"interrupted after {raw['duration_s']:.1f} s of simulated time")
    if journal is not None:
        journal.close(result.complete)
    return result


def live_text(live: dict) -> str:
    """Progress text (:class:`~ssdlab.targets.base.LiveFigures`) from the simulator's
    ``phase_live()``, over the intervals already final; times are simulated seconds."""
    remaining = live["remaining_s"]
    f = LiveFigures(live["interval_s"], None if remaining is None else live["elapsed_s"] + remaining,
                    clock="simulated")
    f.elapsed_s = live["elapsed_s"]
    if live["last_iops"] is not None:
        f.last_iops, f.last_mbps = live["last_iops"], live["last_mbps"]
        f.min_iops, f.zero_intervals = live["min_iops"], live["zero_intervals"]
    return f.text()


def _le(a, dtype: str) -> bytes:
    return np.ascontiguousarray(a, dtype=dtype).tobytes()


def _replay_result(job: ReplayJob, raw: dict, complete: bool = True) -> ReplayResult:
    """The result of a replay from ``finish_replay``'s dict; an incomplete one (Ctrl-C) says
    where it stopped."""
    commands = np.asarray(raw["commands"], dtype=np.float64)
    end_s = np.asarray(raw["end_s"], dtype=np.float64)
    dt = np.diff(np.concatenate([[0.0], end_s]))
    count = np.diff(np.concatenate([[0.0], commands]))
    data = np.asarray(raw["data_bytes"], dtype=np.float64)
    # The windows carry the drive's host writes in units; its column reads them in bytes.
    counters = {**raw, _HOST_COUNTER: np.asarray(raw["host_units"], dtype=np.int64) * UNIT_BYTES}
    with np.errstate(divide="ignore", invalid="ignore"):
        series = {
            "window": np.arange(len(commands), dtype=np.float64), "commands": commands, "t_s": end_s, "dt_s": dt,
            "iops": np.where(dt > 0, count / dt, np.nan), "mbps": np.where(dt > 0, data / dt / 1e6, np.nan),
            **_drive_series(counters),
        }
    drive = _drive_totals(counters, {k: np.asarray(v)[0] for k, v in counters.items() if k in columns.counters()})
    n = int(raw["reads"] + raw["writes"] + raw["trims"] + raw["flushes"])
    dur = float(raw["duration_s"])
    totals = {
        "commands": n, "reads": int(raw["reads"]), "writes": int(raw["writes"]), "trims": int(raw["trims"]),
        "flushes": int(raw["flushes"]), "host_write_bytes": int(raw["host_write_bytes"]),
        "host_read_bytes": int(raw["host_read_bytes"]), "trim_bytes": int(raw["trim_bytes"]), "duration_s": dur,
        "iops": n / dur if dur > 0 else None,
        "mbps": (raw["host_write_bytes"] + raw["host_read_bytes"]) / dur / 1e6 if dur > 0 else None,
        **{k: v for k, v in drive.items() if k != "host_write_bytes"},
        "latency_us": {k: v / 1e3 for k, v in raw["latency_ns"].items() if v is not None},
    }
    result = ReplayResult(job=job, series=series, totals=totals)
    result.complete = complete
    if not complete:
        result.notes.append(f"interrupted after {n:,} commands ({dur:.1f} s of simulated time)")
    return result
