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
from typing import Callable, Protocol

import numpy as np

#: Patterns a JobSpec may ask for (fio ``rw=`` names).
PATTERNS = ("write", "randwrite", "read", "randread", "trim", "idle")


@dataclass(frozen=True)
class JobSpec:
    """One phase of a test: what the host does to the target.

    ``offset_bytes``/``span_bytes`` bound the LBA range the job touches (a span below the
    target's capacity emulates extra spare area, as the reviewers did). A job ends when
    ``duration_s`` of (target) time has passed or, if ``duration_s`` is None, after
    ``io_bytes`` have been transferred (default: one pass over the span).
    """

    name: str
    pattern: str
    bs_bytes: int = 4096
    qd: int = 32
    offset_bytes: int = 0
    span_bytes: int | None = None
    duration_s: float | None = None
    io_bytes: int | None = None
    seed: int = 1
    #: Series interval; 1.0 = the reviewers' "IOPS every second".
    interval_s: float = 1.0

    def __post_init__(self) -> None:
        if self.pattern not in PATTERNS:
            raise ValueError(f"job {self.name!r}: pattern {self.pattern!r} is not one of {PATTERNS}")
        if self.bs_bytes <= 0 or self.bs_bytes % 4096:
            raise ValueError(f"job {self.name!r}: bs_bytes={self.bs_bytes} must be a positive multiple of 4096")
        if self.qd < 1:
            raise ValueError(f"job {self.name!r}: qd={self.qd} must be >= 1")


@dataclass
class PhaseResult:
    """What a target measured for one JobSpec.

    ``series`` maps column name -> 1-D numpy array, one row per interval. Always present:
    ``t_s`` (interval start, seconds from phase start), ``iops``, ``mbps``. Targets add their
    own columns (the simulator: ``free_blocks``, ``gc_copies``, ``erases``, ``nand_write_bytes``
    per interval...). ``totals`` holds scalars: ``host_write_bytes``, ``host_read_bytes``,
    ``ios``, ``duration_s`` and, where known, ``nand_write_bytes``. ``latency_us`` maps
    percentile labels ("p50", "p99", "p99.9", "max") to microseconds when per-IO data exists.
    ``complete`` is False when the phase was interrupted (Ctrl-C, SIGTERM): what was measured
    up to then is kept.
    """

    job: JobSpec
    series: dict[str, np.ndarray]
    totals: dict[str, float | int | None] = field(default_factory=dict)
    latency_us: dict[str, float] = field(default_factory=dict)
    complete: bool = True
    notes: list[str] = field(default_factory=list)


#: Progress callback: (done_fraction 0..1, human text) -> None.
Progress = Callable[[float, str], None]


class Target(Protocol):
    """A thing ssdlab can test. One module per kind under ``ssdlab.targets``."""

    #: How the user named it: "sim:default", "/dev/nvme1n1", "file:/tmp/x", "loop:8G".
    name: str
    #: Bytes the host can address.
    capacity_bytes: int
    #: True for the simulator (exact internal counters, write amplification).
    simulated: bool

    def purge(self) -> dict:
        """Return the target to a fresh-out-of-box state; say how (``{"method": ...}``)."""
        ...

    def run_phase(self, job: JobSpec, progress: Progress | None = None) -> PhaseResult:
        """Run one job and return its series. Must keep partial results on KeyboardInterrupt."""
        ...

    def describe(self) -> dict:
        """Facts for summary.json: model, profile, firmware, fio version..."""
        ...

    def close(self) -> None:
        """Release what the target created (loop devices, temp files)."""
        ...
