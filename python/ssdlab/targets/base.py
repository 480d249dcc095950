"""The contract every target implements: a simulated drive, a block device, a file, a loop device.

A test procedure (``ssdlab.procedures``) is a sequence of *phases*; each phase is one
:class:`JobSpec` (a fio-like job: pattern, block size, queue depth, span, how long).
A target runs a phase and returns a :class:`PhaseResult`: a per-interval series plus totals,
in the same names and units whatever the target, so analysis, plots and reports never
care whether the numbers came from fio or from the simulator.

Units: bytes (``_bytes``), seconds (``_s``), nanoseconds (``_ns``), IOs per second (``_iops``),
megabytes per second (``mbps``, 1 MB = 10^6 bytes).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterator, Protocol, Sequence

if TYPE_CHECKING:  # imported in the functions that use them: `ssdlab --help` starts without them
    import numpy as np

from ..columns import DIRECTIONS, LATENCY_STATS, latency_column  # noqa: F401  (the targets' vocabulary)
from ..errors import UserError

#: Patterns a JobSpec may ask for (fio ``rw=`` names).
PATTERNS = ("write", "randwrite", "read", "randread", "trim", "idle")


def pattern_direction(pattern: str) -> str | None:
    """The data direction of a JobSpec pattern ("randwrite" -> "write"); None for idle."""
    if pattern == "idle":
        return None
    return "trim" if pattern == "trim" else ("read" if pattern.endswith("read") else "write")


@dataclass(frozen=True)
class JobSpec:
    """One phase of a test: what the host does to the target.

    ``offset_bytes``/``span_bytes`` bound the LBA range the job touches (a span below the
    target's capacity emulates extra spare area, as the reviewers did). A job ends when
    ``duration_s`` of (target) time has passed or, if ``duration_s`` is None, after
    ``io_bytes`` have been transferred (default: one pass over the span). A random pattern's
    offsets are the target's to draw: the simulator's from its seed (``open_target(seed=)``),
    fio's a new draw each run (``randrepeat=0``).
    """

    name: str
    pattern: str
    bs_bytes: int = 4096
    qd: int = 32
    offset_bytes: int = 0
    span_bytes: int | None = None
    duration_s: float | None = None
    io_bytes: int | None = None
    #: Series interval; 1.0 = the reviewers' "IOPS every second".
    interval_s: float = 1.0

    def __post_init__(self) -> None:
        if self.pattern not in PATTERNS:
            raise ValueError(f"job {self.name!r}: pattern {self.pattern!r} is not one of {PATTERNS}")
        if self.bs_bytes <= 0 or self.bs_bytes % 4096:
            raise ValueError(f"job {self.name!r}: bs_bytes={self.bs_bytes} must be a positive multiple of 4096")
        if self.qd < 1:
            raise ValueError(f"job {self.name!r}: qd={self.qd} must be >= 1")


@dataclass(frozen=True)
class WorkloadStep:
    """One group of a user's workload (``ssdlab run``) as a phase: the jobs that run together.
    ``duration_s`` is the group's run time when it is time based (None: it ends by bytes or
    IO count); ``interval_s`` the series interval."""

    name: str
    interval_s: float = 1.0
    duration_s: float | None = None
    #: Not one of the JobSpec patterns: procedures that look at ``job.pattern`` see a workload.
    pattern: str = "workload"
    #: The group's index in its workload (from 0).
    index: int = 0
    #: The workload (:class:`ssdlab.workload.fiojob.Workload`) the group belongs to.
    workload: object = field(default=None, compare=False, repr=False)


def workload_steps(workload, interval_s: float) -> list[WorkloadStep]:
    """One step per group of a :class:`ssdlab.workload.fiojob.Workload`, named after its jobs'
    sections; its ``duration_s`` is the longest ``runtime`` when every job is time based."""
    steps = []
    for gi, group in enumerate(workload.groups):
        timed = [j.runtime_us / 1e6 for j in group if j.runtime_us]
        name = "+".join(dict.fromkeys(j.section for j in group))
        steps.append(WorkloadStep(name=name, interval_s=interval_s, index=gi, workload=workload,
                                  duration_s=max(timed) if timed and all(j.time_based for j in group) else None))
    return steps


@dataclass
class PhaseResult:
    """What a target measured for one JobSpec.

    ``series`` maps column name -> 1-D numpy array, one row per interval of ``job.interval_s``
    (a regular grid: ``t_s`` = k x interval, the interval start in seconds from phase start;
    an interval in which nothing completed is a row with 0 IOPS). Always present: ``t_s``,
    ``iops``, ``mbps``; for each direction that ran, the per-interval latency statistics
    named by :func:`latency_column` (us). Targets add their
    own columns (the simulator: ``free_blocks``, ``gc_copies``, ``erases``, ``nand_write_bytes``
    per interval...). ``totals`` holds scalars: ``host_write_bytes``, ``host_read_bytes``,
    ``ios``, ``duration_s`` and, where known, ``nand_write_bytes``. ``latency_us`` maps
    percentile labels ("p50", "p99", "p99.9", "max") to microseconds when per-IO data exists.
    ``complete`` is False when the phase was interrupted (Ctrl-C, SIGTERM) or failed: what
    was measured up to then is kept. ``error`` says why a phase failed (the target's message
    for the user: target, phase, job file and the tool's own error line), None otherwise.
    """

    job: JobSpec
    series: dict[str, np.ndarray]
    totals: dict[str, float | int | None] = field(default_factory=dict)
    latency_us: dict[str, float] = field(default_factory=dict)
    complete: bool = True
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    #: When the phase ran on the wall clock, (start, end) [s since the epoch], where the target
    #: knows it closer than its fio run's (a sweep pass's zones); None otherwise.
    wall_span_s: tuple[float, float] | None = None


#: Progress callback: (done_fraction 0..1, human text) -> None.
Progress = Callable[[float, str], None]
#: Progress of a list of phases: (index of the running phase, its done fraction 0..1, human text) -> None.
PhasesProgress = Callable[[int, float, str], None]


class LiveFigures:
    """What a reviewer watches while a phase runs: the IOPS (and MB/s) of the last whole
    interval, the minimum so far, the time at 0 IOPS so far, and the phase time done and to go.
    Fed from a running count of completed IOs (:meth:`update`) or with figures a target keeps
    itself; :meth:`text` is the progress line's text."""

    def __init__(self, interval_s: float, duration_s: float | None = None, bs_bytes: int | None = None,
                 clock: str = ""):
        self.interval_s = float(interval_s)
        self.duration_s = duration_s
        self.bs_bytes = bs_bytes
        self.clock = clock  #: word after the time figures, e.g. "simulated"
        self.elapsed_s = 0.0
        self.last_iops: float | None = None
        self.last_mbps: float | None = None
        self.min_iops: float | None = None
        self.zero_intervals = 0
        self._closed = 0
        self._at_boundary = 0.0

    def update(self, elapsed_s: float, completed_ios: float) -> None:
        """The phase has run ``elapsed_s`` and completed ``completed_ios`` so far. Intervals
        that ended since the last call are closed (IOs spread evenly over them)."""
        self.elapsed_s = elapsed_s
        k = int(elapsed_s // self.interval_s)
        if k > self._closed:
            per = (completed_ios - self._at_boundary) / (k - self._closed) / self.interval_s
            self.close(per, k - self._closed)
            self._at_boundary = completed_ios

    def close(self, iops: float, intervals: int = 1) -> None:
        """Records ``intervals`` finished intervals at ``iops`` each."""
        self._closed += intervals
        self.last_iops = iops
        self.last_mbps = iops * self.bs_bytes / 1e6 if self.bs_bytes else None
        self.min_iops = iops if self.min_iops is None else min(self.min_iops, iops)
        if iops == 0:
            self.zero_intervals += intervals

    def text(self) -> str:
        """"12,345 IOPS (50.6 MB/s), min 0, 3 s at 0 · 812/2,000 s, 1,188 s to go"."""
        parts = []
        if self.last_iops is not None:
            rate = f"{self.last_iops:,.0f} IOPS"
            if self.last_mbps is not None:
                rate += f" ({self.last_mbps:,.1f} MB/s)"
            parts.append(f"{rate}, min {self.min_iops:,.0f}, {_seconds(self.zero_intervals * self.interval_s)} s at 0")
        clock = f" {self.clock}" if self.clock else ""
        if self.duration_s:
            left = max(0.0, self.duration_s - self.elapsed_s)
            parts.append(f"{_seconds(self.elapsed_s)}/{_seconds(self.duration_s)} s{clock}, {_seconds(left)} s to go")
        else:
            parts.append(f"{_seconds(self.elapsed_s)} s{clock}")
        return " · ".join(parts)


def _seconds(s: float) -> str:
    """Seconds for a progress line: whole seconds from 10 s up and below 5 ms (shown as 0),
    else 2 significant digits (never an exponent)."""
    return f"{s:,.0f}" if s >= 10 or s < 0.005 else f"{s:.2g}"


#: What a target can do besides the operations every target has (:class:`Target`), by name;
#: a procedure asks ``SIMULATED in target.capabilities`` and never looks at the target's kind.
SIMULATED = "simulated"
DRIVE_COUNTERS = "drive_counters"
FIO_JOBS = "fio_jobs"
FORK = "fork"
REOPEN = "reopen"
SHARED_REPLAY = "shared_replay"
CAPABILITIES = {
    SIMULATED: "a drive model: its time is simulated; counters() gives its exact cumulative internal counters "
               "(NAND bytes written, erases...), so write amplification is exact; release() lets its state go; "
               "its state lives in this process only (a resumed test runs its finished steps again)",
    DRIVE_COUNTERS: "counters() reads the drive's own lifetime host/NAND write counters (SMART, NVMe log pages), "
                    "for a measured write amplification",
    FIO_JOBS: "phases run as fio job files: job_text(job) is a phase's job file, and a dry run shows it and the "
              "purge the target would do",
    FORK: "fork() gives an independent drive of the same kind, as after purge(); state_bytes estimates the "
          "memory each copy holds [bytes]; threads and set_threads(n): the CPU threads its simulation may use "
          "(copies made after take them)",
    SHARED_REPLAY: "replay_shared(job, followers, chunks, progress, total_commands): replay() of the same chunks on "
                   "this drive and on followers ((target, job) pairs: fork() copies brought to this drive's state "
                   "the same way), each at its job's queue depth, the FTL's work done once for all; the results "
                   "are those of separate replays. shares_replays says whether this drive's model allows followers",
    REOPEN: "reopen(workdir=None) opens the same target anew with the same options (ssdlab.targets.open_target "
            "gives it)",
}


class Target(Protocol):
    """A thing ssdlab can test. One module per kind under ``ssdlab.targets``, registered by its
    prefix in :mod:`ssdlab.targets`. :class:`TargetDefaults` gives the attributes a kind may
    leave as they are."""

    #: How the user named it: "sim:default", "/dev/nvme1n1", "file:/tmp/x", "loop:8G".
    name: str
    #: Bytes the host can address.
    capacity_bytes: int
    #: What it can do besides these operations (names of :data:`CAPABILITIES`).
    capabilities: frozenset[str]
    #: Why the safety gate would refuse the device (dry runs), None when nothing is refused.
    refused: str | None
    #: What the gate found on a device that ``--destroy-data`` let through.
    gate_overridden: tuple[str, ...]
    #: The simulated drive's profile (:class:`ssdlab.profiles.Profile`), None for a real drive.
    profile: object | None
    #: Zone size of a zoned drive [bytes] (fio's sizes in zones take it), 0 when not zoned.
    zone_size_bytes: int

    def purge(self) -> dict:
        """Return the target to a fresh-out-of-box state; say how (``{"method": ...}``)."""
        ...

    def run_phase(self, job: JobSpec, progress: Progress | None = None) -> PhaseResult:
        """Run one job and return its series. Must keep partial results on KeyboardInterrupt."""
        ...

    def run_phases(self, jobs: Sequence[JobSpec], progress: PhasesProgress | None = None) -> Iterator[PhaseResult]:
        """Run ``jobs`` back to back, yielding each one's result as :meth:`run_phase` returns
        it; the first result that is not complete is the last one yielded. A drive sees no idle
        time between the phases beyond what the target cannot avoid (a fio target runs them in
        one fio run), so a drive that collects garbage when idle cannot recover between them.
        :class:`TargetDefaults` runs them one by one (:func:`run_phases_one_by_one`)."""
        ...

    def plan_workload(self, workload, interval_s: float) -> list:
        """The steps (one per group) in which the target runs a workload written in fio's
        language (:class:`ssdlab.workload.fiojob.Workload`), checked against the target before
        anything is written; each step has ``name`` and ``index`` (the group's, from 0). Problems raise :class:`ssdlab.errors.UserError`."""
        ...

    def run_workload(self, step, progress: Progress | None = None) -> PhaseResult:
        """Run one step of :meth:`plan_workload` (its jobs together); keeps partial results on
        KeyboardInterrupt, as :meth:`run_phase`."""
        ...

    def workload_notes(self, workload, steps: list) -> dict:
        """What the summary says of how the target runs a workload's steps (e.g. the options
        it cannot apply), ``{}`` when nothing needs saying."""
        ...

    def dry_run_text(self, workload, steps: list) -> list[str]:
        """``--dry-run``: one text per line or block telling what each step would run."""
        ...

    def replay(self, job: "ReplayJob", chunks, progress: Progress | None = None,
               total_commands: int | None = None) -> "ReplayResult":
        """Replay prepared command chunks in order (:class:`ReplayJob`)."""
        ...

    def release(self) -> None:
        """Let go of what the target holds for the tests run so far, once a test has taken all
        it needs from it (nothing on a real drive)."""
        ...

    def describe(self) -> dict:
        """Facts for summary.json: model, profile, firmware, fio version..."""
        ...

    def close(self) -> None:
        """Release what the target created (loop devices, temp files)."""
        ...


def refuse_sets(spec: str, sets) -> None:
    """Profile overrides (``--set KEY=VALUE``) apply to simulated drives only."""
    if sets:
        raise UserError(f"--set applies to simulated targets only; {spec} is a real target")


class TargetDefaults:
    """The attributes of :class:`Target` that most kinds leave as they are."""

    capabilities: frozenset[str] = frozenset()
    zone_size_bytes: int = 0
    refused: str | None = None
    gate_overridden: tuple[str, ...] = ()
    profile: object | None = None

    def release(self) -> None:
        """Nothing to let go of."""

    def run_phases(self, jobs: Sequence[JobSpec], progress: PhasesProgress | None = None) -> Iterator[PhaseResult]:
        """:meth:`Target.run_phases` by :func:`run_phases_one_by_one`."""
        return run_phases_one_by_one(self, jobs, progress)


def run_phases_one_by_one(target, jobs: Sequence[JobSpec], progress: PhasesProgress | None = None
                          ) -> Iterator[PhaseResult]:
    """:meth:`Target.run_phases` as a loop of ``target.run_phase``: right for a simulated
    drive (whose time does not pass between phases); on a real drive each phase's start-up is
    idle time for the drive."""
    for k, job in enumerate(jobs):
        sub = None if progress is None else (lambda fraction, text, k=k: progress(k, fraction, text))
        result = target.run_phase(job, sub)
        yield result
        if not result.complete:
            return


# ============================================================================ trace replay
#: Op codes of replayed commands (same as :mod:`ssdlab.traces`).
OP_READ, OP_WRITE, OP_TRIM, OP_FLUSH = 0, 1, 2, 3


@dataclass(frozen=True)
class ReplayJob:
    """One replay of a prepared command stream (the ``003_*`` trace test).

    Commands arrive already filtered (reads/TRIMs dropped as asked), remapped into the
    target's span and aligned to 4 KiB; the target issues them in order, as fast as it can,
    keeping ``qd`` outstanding (closed loop, trace timestamps ignored). A flush waits until
    every earlier command has completed. IOPS are averaged over every ``window_commands``
    completions (in completion order; the last window may be shorter).
    """

    name: str
    qd: int = 32
    window_commands: int = 100_000
    #: How compressible the written data is [%, 0..100] (fio's ``buffer_compress_percentage``);
    #: None: fio's random data, and on the simulator the profile's compression ratio.
    buffer_compress_pct: int | None = None

    def __post_init__(self) -> None:
        if self.qd < 1:
            raise ValueError(f"replay {self.name!r}: qd={self.qd} must be >= 1")
        if self.window_commands < 1:
            raise ValueError(f"replay {self.name!r}: window_commands={self.window_commands} must be >= 1")


#: A chunk of prepared commands: (op uint8, offset_bytes uint64, len_bytes uint64) arrays of
#: equal length; offsets and lengths are multiples of 4096 (0 for a flush).
CommandChunk = tuple["np.ndarray", "np.ndarray", "np.ndarray"]


@dataclass
class ReplayResult:
    """What a target measured for one :class:`ReplayJob`.

    ``series`` has one row per window of ``window_commands`` completions:
    ``window`` (0, 1, ...), ``commands`` (completed commands at the window's end, cumulative),
    ``t_s`` (time of the window's last completion, s from replay start), ``dt_s`` (window
    length, s), ``iops`` (commands / dt_s), ``mbps`` (10^6 bytes/s of data written and read
    in the window). The simulator adds ``host_write_bytes``, ``nand_write_bytes`` and
    ``write_amplification`` per window.

    ``totals``: ``commands``, ``reads``, ``writes``, ``trims``, ``flushes`` (counts),
    ``host_write_bytes``, ``host_read_bytes``, ``trim_bytes``, ``duration_s``, ``iops``
    (commands / duration_s), ``mbps`` and, on the simulator, ``nand_write_bytes`` and
    ``write_amplification``. ``complete`` is False after Ctrl-C/SIGTERM (what was measured
    is kept).
    """

    job: ReplayJob
    series: dict[str, np.ndarray]
    totals: dict[str, float | int | None] = field(default_factory=dict)
    complete: bool = True
    notes: list[str] = field(default_factory=list)
    #: Why the replay failed (as :attr:`PhaseResult.error`), None otherwise.
    error: str | None = None


def window_series(completion_s: np.ndarray, nbytes: np.ndarray, window_commands: int) -> dict[str, np.ndarray]:
    """Per-window series from per-command completion times [s from replay start] and data
    bytes (written or read; 0 for TRIM and flush). Commands are taken in completion order;
    the last window may hold fewer than ``window_commands``."""
    import numpy as np

    order = np.argsort(completion_s, kind="stable")
    t = np.asarray(completion_s, dtype=np.float64)[order]
    b = np.asarray(nbytes, dtype=np.float64)[order]
    n = len(t)
    ends = np.minimum(np.arange(window_commands, n + window_commands, window_commands), n)
    if n == 0:
        ends = np.zeros(0, dtype=np.int64)
    starts = np.concatenate([[0], ends[:-1]]).astype(np.int64) if len(ends) else ends
    t_end = t[ends - 1] if len(ends) else np.zeros(0)
    t_start = np.concatenate([[0.0], t_end[:-1]]) if len(ends) else np.zeros(0)
    dt = t_end - t_start
    cum = np.concatenate([[0.0], np.cumsum(b)])
    wbytes = cum[ends] - cum[starts]
    count = (ends - starts).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        iops = np.where(dt > 0, count / dt, np.nan)
        mbps = np.where(dt > 0, wbytes / dt / 1e6, np.nan)
    return {"window": np.arange(len(ends), dtype=np.float64), "commands": ends.astype(np.float64),
            "t_s": t_end, "dt_s": dt, "iops": iops, "mbps": mbps}
