"""Workloads written in fio's own language: job files and fio's ``--name=value`` options.

:func:`parse_job_file`, :func:`parse_job_text` and :func:`parse_command_line` turn what fio
would read into a :class:`Workload`: *groups* of :class:`Job` (the jobs of a group run
together, the groups one after another), one :class:`Job` per copy that ``numjobs`` makes.
:func:`format_job_file` prints a workload back as a canonical fio job file;
``parse_job_text(format_job_file(w)) == w``.

What fio would do is the reference (fio 3.33: ``parse.c``, ``options.c``, ``init.c``):

* Job files as fio reads them: ``[global]`` sections (any section whose name starts with
  ``global``) change the defaults of the jobs after them; ``;`` and ``#`` start a comment
  anywhere on a line; ``key=value``; a bare key only where fio takes one (``stonewall``,
  ``time_based``, ``norandommap``... fio's "set" options); ``include FILE`` inside a
  section (relative to the current directory, else to the including file); ``${VAR}`` is
  replaced by the environment variable (an unset one by nothing, as fio does; ``$VAR``
  without braces is not expanded by fio either); ``kb_base`` is applied before the other
  options of its section, as fio sorts it first. Job files given after the first start
  with a ``stonewall`` and fio's defaults, as fio does with several job files.
* Values as fio parses them: sizes with ``k m g t p`` = ``kb_base`` (1024 unless
  ``kb_base=1000``) and ``KiB MiB GiB TiB PiB`` = the *other* base (fio's "compatibility
  mode": with the default ``kb_base=1024``, ``4KiB`` is 4000 bytes), ``b`` for bytes, hex
  ``0x..``; percentages for ``size``, ``offset``, ``offset_increment``, ``io_size``; times
  with ``us ms s m h d`` (no unit: seconds for ``runtime``, ``ramp_time``, ``startdelay``,
  ``thinktime_iotime``; microseconds for ``thinktime``, ``thinktime_spin``); read,write,trim
  values split at ``,`` (else ``:``, else ``-``) with fio's rules for empty and trailing
  parts (``bs=,8k`` keeps the read size; ``bs=4k,8k`` gives trims 8k; ``bs=4k,8k,`` leaves
  trims alone); ``bssplit`` with fio's sharing of blank percentages; ``rw=randread:8`` and
  ``rw=write:4k`` / ``rw=read:-8k`` (backwards) modifiers; ``random_distribution`` zipf/pareto/normal with an optional
  center, zoned and zoned_abs; fio's fix-ups after parsing (``bs`` fills ``bsrange``,
  ``ba`` only for random jobs, a skewed distribution or ``ba`` turns off the random map,
  ``buffer_compress_percentage=100`` becomes ``zero_buffers``, ``randseed`` overrides
  ``randrepeat``, ``thinktime_spin`` is capped by ``thinktime``...).

**Agree or refuse.** Every value this parser accepts means what fio makes of it. Where fio
would silently read something else than the text says, the parser refuses it and says what
fio would do: ``size=1.5g`` (fio stops at the ``.``: 1 byte), ``runtime=10sec`` (fio knows
``s``, not ``sec``: 10 µs), ``size = 4k`` (fio reads `` 4k`` as 4 bytes), unknown units
(``bs=4q`` is 4 bytes to fio), ``0x`` with a unit or in a later ``:`` part
(``bs=8192:0x4000`` reads 0x8192), negative numbers, extra parts fio ignores
(``iodepth=4:8``, ``rw=randread,x``), ``bssplit`` shares adding up to more than 100 or
leaving a blank entry 0%, percentages above 100, a byte ``size``/``offset`` after a
percentage of the same option (fio keeps the percentage), ``exitall=0`` (fio turns
exitall on). fio's arithmetic ``(...)`` and host keywords (``$ncpus``) are refused too, and so
are values beyond ssdlab's limits, where fio would run out of memory: block sizes above
:data:`~ssdlab.units.MAX_BS_BYTES` (fio keeps iodepth buffers of the largest) and an iodepth
above :data:`MAX_IODEPTH`.

Options fall in three classes:

(a) **The I/O pattern** (what the simulator will run): parsed and normalized into
    :class:`Job` fields, with units in every field name.
(b) **How fio submits I/O from a host** (``ioengine``, ``direct``, ``filename``, ``thread``,
    ``group_reporting``, every log option, ``output``, ``clocksource``, ``cpus_allowed``,
    engine options...): the value is checked as fio would, then listed in
    :attr:`Job.host_options` as not applicable to the simulator, with the reason.
(c) **Options that change the I/O pattern in ways not modelled** (``verify_only``,
    ``verify_backlog``, ``trim_percentage``, ``zonemode=strided``, ``rw_sequencer=identical``,
    ``read_iolog``, ``dedupe_percentage``,
    ``sync=1``, ``write_barrier``, ``latency_target``, ``rate_min``, several files
    per job, engines that do no block I/O...): a :class:`~ssdlab.errors.UserError` naming
    the option, file and line. Set to fio's default value they change nothing and are
    listed with the host options instead.

``verify`` is part of the pattern: after its writes the job reads back what it wrote
(:attr:`Job.verify`); how fio checks the data (``verify_pattern``, ``verify_fatal``...) is a
host option.

``fsync=N`` and ``fdatasync=N`` are modelled: on a block device both end in a device cache
flush after every N writes (``fsync_every_writes``, ``fdatasync_every_writes``), as
``end_fsync`` and ``fsync_on_close`` end in one flush when the job ends. The simulator
runs every job as with ``direct=1`` (there is no host page cache).

Every error is a :class:`~ssdlab.errors.UserError` whose message names the file and line
(or the command-line argument), the option, and says what to do. An unknown option is named
with the closest option fio has (difflib); an option of a later fio release (``num_range``,
``priohint``...) is named with the release that brought it.

NVMe flexible data placement, fio 3.34's ``fdp=1`` and ``fdp_pli=``, 3.36's
``fdp_pli_select=``, 3.38's ``dataplacement=fdp``, ``plids=``, ``plid_select=`` and
``dp_scheme=``, is read as fio reads it (:attr:`Job.dataplacement`); the simulator runs it
on a profile with ``fdp = 1``, and a fio target needs the fio release that brought the
options as written (:func:`ssdlab.workload.tofio.check_placement`).

Zoned block devices, fio's ``zonemode=zbd`` with ``zonesize``, ``zonecapacity``,
``max_open_zones``, ``job_max_open_zones``, ``zone_reset_threshold``,
``zone_reset_frequency``, ``read_beyond_wp``, ``ignore_zone_limits`` and sizes in zones
(``size=8z``), are read as fio reads them (:attr:`Job.zonemode`); the simulator runs them on
a profile with zones (``zns_zone_size_bytes``), fio on a zoned device or, with
``zonesize``, in zones it emulates on a regular one (:func:`ssdlab.workload.tofio.check_zones`).
"""
from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

from ..errors import UserError
from ..units import MAX_BS_BYTES

#: Data directions in fio's order (read, write, trim): the three parts of ``bs=``, ``rate=``...
DIRECTIONS = ("read", "write", "trim")

#: ``rw=`` values (``readwrite`` is fio's other name for ``rw``).
RW_VALUES = ("read", "write", "trim", "randread", "randwrite", "randtrim", "rw", "readwrite",
             "randrw", "trimwrite", "randtrimwrite")
_RANDOM_RW = {"randread", "randwrite", "randtrim", "randrw", "randtrimwrite"}

#: Where fio's built-in defaults come from in messages and listings.
CMDLINE = "command line"

_U32 = 2 ** 32 - 1          # fio's "int" options are unsigned 32-bit
#: Deepest iodepth a job may ask for: Linux's libaio takes at most aio-max-nr = 65536
#: events by default, and the simulator books memory for every command in flight.
MAX_IODEPTH = 65535
#: The most jobs fio runs from one job file (its max_jobs, REAL_MAX_JOBS in fio.h).
MAX_JOBS = 4096
_U64 = 2 ** 63 - 1          # fio parses numbers with strtoll
_FIO_RANDSEED = 0x89        # fio's default randseed
_BSSPLIT_MAX = 64           # fio's limit of bssplit entries per direction
_ZONESPLIT_MAX = 256        # fio's limit of zones in random_distribution=zoned*


class WorkloadError(UserError):
    """A job file or fio option ssdlab cannot take; the message names file, line and option."""


# ============================================================================ results
@dataclass(frozen=True)
class Where:
    """Where an option or section was written: ``file`` and 1-based ``line``; for fio's
    command line, ``file`` is :data:`CMDLINE` and ``line`` the argument's 1-based index."""

    file: str
    line: int

    def __str__(self) -> str:
        if self.file == CMDLINE:
            return f"command line argument {self.line}"
        return f"{self.file}:{self.line}"


def where_prefix(where: Where | None) -> str:
    """``"FILE:LINE: "`` to start an error message about what was written at ``where``; ""
    where that is unknown."""
    return f"{where}: " if where is not None else ""


@dataclass(frozen=True)
class HostOption:
    """An option accepted but not applicable to the simulator (class b), or one of class (c)
    set to fio's default value. ``value`` is None for a bare key."""

    name: str
    value: str | None
    reason: str
    where: Where | None = field(default=None, compare=False)

    def text(self) -> str:
        """``name=value`` (or ``name``), as in a job file."""
        return self.name if self.value is None else f"{self.name}={self.value}"


@dataclass(frozen=True)
class BlockSizeShare:
    """One ``bssplit`` entry: I/Os of ``bs_bytes`` make ``pct`` percent of the direction's I/Os.

    Shares are fio's after its fix-ups (blank shares get an equal part of what is left,
    integer division); what is still missing to 100 goes to the last entry, which is the
    one fio falls back to. Entries are in fio's order (ascending share, stable)."""

    bs_bytes: int
    pct: int


@dataclass(frozen=True)
class Zone:
    """One zone of ``random_distribution=zoned`` (``size_pct`` of the job's region) or
    ``zoned_abs`` (``size_bytes``): ``access_pct`` percent of the random offsets fall in
    it. Zones follow each other from the start of the region, in the order given."""

    access_pct: int
    size_pct: int | None = None
    size_bytes: int | None = None


@dataclass(frozen=True)
class RandomDistribution:
    """fio's ``random_distribution`` for random offsets.

    ``kind``: ``random`` (uniform), ``zipf`` (``zipf_theta``), ``pareto`` (``pareto_h``),
    ``normal`` (``normal_dev_pct``: the deviation in percent of the region), ``zoned`` and
    ``zoned_abs`` (``zones``). ``center_frac`` (0..1, the ``:center`` postfix) moves the most
    likely offset; None when not given (fio: random for zipf/pareto, 0.5 for normal). The
    same distribution applies to reads, writes and trims (fio 3.33 cannot parse
    per-direction zone lists)."""

    kind: str = "random"
    zipf_theta: float | None = None
    pareto_h: float | None = None
    normal_dev_pct: float | None = None
    center_frac: float | None = None
    zones: tuple[Zone, ...] = ()

    def option_value(self) -> str:
        """The ``random_distribution=`` value for a job file."""
        if self.kind == "random":
            return "random"
        if self.kind in ("zoned", "zoned_abs"):
            parts = [f"{z.access_pct}/{z.size_pct}" if self.kind == "zoned" else
                     f"{z.access_pct}/{_fmt_size(z.size_bytes or 0)}" for z in self.zones]
            return f"{self.kind}:" + ":".join(parts)
        param = {"zipf": self.zipf_theta, "pareto": self.pareto_h, "normal": self.normal_dev_pct}[self.kind]
        text = f"{self.kind}:{_fmt_float(param)}"
        if self.center_frac is not None:
            text += f":{_fmt_float(self.center_frac)}"
        return text


Tri = tuple[int, int, int]


@dataclass(frozen=True)
class Job:
    """One fio job (one copy of it when ``numjobs`` > 1), normalized.

    Triples are (read, write, trim) as in :data:`DIRECTIONS`. Times are integer
    microseconds (``_us``) as fio keeps them, except ``rate_cycle_ms``; sizes are bytes.
    ``*_pct`` fields hold a percentage of the target's size where fio was given one
    (``size=50%``); then the ``*_bytes`` twin is None or 0. Percentages are resolved
    against the target when the job runs, as fio resolves them against the file or device.
    """

    #: fio's job name (the section's name, or ``name=``; copies made by numjobs from a job
    #: file take the section's name, as fio names them).
    name: str
    #: The job section (or the command line's ``--name=``) this job comes from.
    section: str
    #: Which copy: fio's subjob number, 0 for the job itself, 1..numjobs-1 for copies.
    clone: int
    numjobs: int
    #: Index of the group (in :attr:`Workload.groups`) this job runs in.
    group: int
    #: fio's reporting group (``groupid``): a new one at each ``stonewall`` or ``new_group``.
    report_group: int
    #: Name of a job this one waits for (fio's ``wait_for``), None if none.
    wait_for: str | None
    #: fio's ``startdelay``: the job starts this long after the group does; with a range
    #: (``startdelay=1-5``) fio draws a delay between the two.
    startdelay_us: int
    startdelay_max_us: int
    #: What stops when this job ends under :attr:`Workload.exitall`: ``group`` (the jobs
    #: of its reporting group), ``stonewall`` (the running jobs) or ``all`` (every job).
    exit_what: str

    #: fio's ``rw=`` (``readwrite`` is written ``rw``).
    rw: str
    #: ``rw=randread:N``: a new random offset every N I/Os, sequential in between (1 = every I/O).
    rw_new_offset_every_ios: int
    #: ``rw=write:N``: N bytes skipped after each sequential I/O (negative: backwards).
    rw_skip_bytes: int
    #: Share of reads in a mixed job (``rwmixread``; writes are the rest).
    rwmix_read_pct: int
    #: I/O sizes per direction: ``bs`` or the ``bsrange`` bounds (equal when fixed).
    bs_min_bytes: Tri
    bs_max_bytes: Tri
    #: ``bssplit`` per direction; empty where not given (then sizes come from the bounds:
    #: fio draws min + max * U[0,1), aligned down to min, capped at max).
    bssplit: tuple[tuple[BlockSizeShare, ...], tuple[BlockSizeShare, ...], tuple[BlockSizeShare, ...]]
    bs_unaligned: bool
    #: ``bs_is_seq_rand``: the read sizes apply to sequential I/O, the write sizes to random I/O.
    bs_is_seq_rand: bool
    #: Alignment of random offsets (``ba``; the minimum block size unless set, always for
    #: sequential jobs).
    ba_bytes: Tri
    #: Share of random I/Os in a random job (``percentage_random``; the rest sequential).
    percentage_random_pct: Tri
    random_distribution: RandomDistribution
    #: fio's ``norandommap`` after its fix-ups: True when random offsets may repeat before
    #: every block was touched once (set, or implied by a skewed distribution or by ``ba``).
    norandommap: bool
    #: fio's ``randrepeat`` (the same offsets every run) and ``randseed`` (None unless given;
    #: a given seed turns randrepeat off, as in fio). Neither: a new pattern each run.
    randrepeat: bool
    randseed: int | None

    #: Queue depth (fio's ``iodepth``).
    iodepth: int
    #: The region: ``size`` (None: up to the end of the target), ``offset``, and for copies
    #: ``offset_increment`` x clone; ``offset_align_bytes`` aligns percentage offsets (0:
    #: the minimum block size).
    size_bytes: int | None
    size_pct: int | None
    #: ``fill_device``: write until the target is full (the region's size when none is given).
    fill_device: bool
    offset_bytes: int
    offset_pct: int | None
    offset_align_bytes: int
    offset_increment_bytes: int
    offset_increment_pct: int | None
    #: How much I/O to do (``io_size``; None: the region once per loop).
    io_size_bytes: int | None
    io_size_pct: int | None
    #: Stop after this many I/Os (``number_ios``; 0: no such limit).
    number_ios: int
    #: ``loops``: the job's I/O is done this many times.
    loops: int
    #: ``runtime`` (0: none): the job stops then; with ``time_based`` it runs that long,
    #: wrapping around the region. ``ramp_time``: time before statistics count.
    runtime_us: int
    time_based: bool
    ramp_time_us: int

    #: Idle time: after every ``thinktime_blocks`` I/Os (completed, or issued with
    #: ``thinktime_blocks_type=issue``) or every ``thinktime_iotime_us`` of I/O, whichever
    #: comes first, the job waits ``thinktime_us``, the first ``thinktime_spin_us`` of it busy.
    thinktime_us: int
    thinktime_spin_us: int
    thinktime_blocks: int
    thinktime_blocks_type: str
    thinktime_iotime_us: int
    #: Caps per direction (0: none): ``rate`` in bytes per second, ``rate_iops``;
    #: ``rate_process`` linear or poisson; averaged over ``rate_cycle_ms``.
    rate_bytes_per_s: Tri
    rate_iops: Tri
    rate_process: str
    rate_cycle_ms: int
    rate_ignore_thinktime: bool

    #: Written data: ``buffer_compress_pct`` percent compressible, in chunks of
    #: ``buffer_compress_chunk_bytes``; all zeroes with ``zero_buffers``; fresh data for
    #: every write with ``refill_buffers`` (else buffers are reused).
    buffer_compress_pct: int
    buffer_compress_chunk_bytes: int
    zero_buffers: bool
    refill_buffers: bool
    #: A device cache flush after every N writes (fio's ``fsync=N`` / ``fdatasync=N``; 0: none).
    fsync_every_writes: int
    fdatasync_every_writes: int
    #: One flush when the job's writing ends (``end_fsync``) / when it closes the target
    #: (``fsync_on_close``).
    end_fsync: bool
    fsync_on_close: bool

    #: Accepted options that do not apply to the simulator (the last value of each), by name.
    host_options: tuple[HostOption, ...] = ()
    #: Where the job's section (or ``--name``) was written.
    where: Where | None = field(default=None, compare=False)
    #: How fio submits the job's IOs: its ``ioengine`` (fio's default psync) and ``direct``
    #: (fio's default 0, through the host's page cache). They do not change the pattern but
    #: what reaches the drive: see :attr:`queue_depth` and :attr:`host_notes`.
    ioengine: str = "psync"
    direct: bool = False
    #: NVMe flexible data placement (fio's ``fdp=1`` / ``dataplacement=fdp``): "fdp" or
    #: "none". With it, writes carry a placement id: one of ``plids`` (indices of the
    #: drive's placement handles; empty: every one) chosen by ``plid_select`` (roundrobin,
    #: random, scheme), or with ``scheme`` the id of the first ``dp_scheme`` entry (start
    #: byte, end byte, id) holding the write's offset, 0 if none (``dp_scheme_file``: the
    #: file it was read from).
    dataplacement: str = "none"
    plids: tuple[int, ...] = ()
    plid_select: str = "roundrobin"
    dp_scheme: tuple[tuple[int, int, int], ...] = ()
    dp_scheme_file: str | None = None
    #: The oldest fio that reads the data placement options as written ("" if none given).
    dp_fio_version: str = ""
    #: fio's zoned block device mode: "zbd" or "none". With zbd, writes go to the write
    #: pointers of at most ``max_open_zones`` zones (``job_max_open_zones`` for this job; 0:
    #: the device's limit) of ``zonesize`` bytes (0: the device's), ``zonecapacity`` bytes
    #: writable (0: the zone size; regular devices only); full zones are reset before
    #: rewriting, and once the job's zones hold ``zone_reset_threshold`` of its size, one write
    #: in 1 / ``zone_reset_frequency`` resets its zone first; reads stay below the write
    #: pointers unless ``read_beyond_wp``; ``ignore_zone_limits`` leaves the device's open
    #: limit out.
    zonemode: str = "none"
    zonesize: int = 0
    zonecapacity: int = 0
    max_open_zones: int = 0
    job_max_open_zones: int = 0
    zone_reset_threshold: float = 0.0
    zone_reset_frequency: float = 0.0
    read_beyond_wp: bool = False
    ignore_zone_limits: bool = False
    #: fio's data verification: the checksum type (``verify``), "none" without it (or with
    #: ``do_verify=0``). After its writes, fio reads back every block the job wrote (the
    #: latest copy of each, by offset) at the job's block size and depth, and checks it.
    verify: str = "none"
    #: io_uring_cmd's ``write_mode`` (fio after 3.42): "write", or "zone_append" (zone append
    #: commands: the drive places each write at its zone's write pointer and returns where).
    write_mode: str = "write"
    #: fio's flow control: the jobs of a group with the same ``flow_id`` submit in proportion
    #: to their ``flow`` weights (0: no flow control); a job held back sleeps
    #: ``flow_sleep_us`` [µs] before it tries again (0: it retries at once).
    flow_weight: int = 0
    flow_id: int = 0
    flow_sleep_us: int = 0

    #: Where each option the job was given was last written, by fio's name of the option
    #: (``bs``, ``size``...), for messages about its value.
    option_where: Mapping[str, Where] = field(default_factory=dict, compare=False, repr=False)

    @property
    def queue_depth(self) -> int:
        """IOs the job keeps outstanding: ``iodepth`` with an asynchronous engine; 1 with a
        synchronous one (fio caps it: "both iodepth >= 1 and synchronous I/O engine are
        selected, queue depth will be capped at 1")."""
        return 1 if self.ioengine in SYNC_ENGINES else self.iodepth

    @property
    def host_notes(self) -> list[str]:
        """What fio would do on a real target that the job's pattern does not say: a
        synchronous engine's depth of 1, the page cache without ``direct=1`` (except on an
        engine that passes NVMe or SCSI commands to the drive, which no cache sees)."""
        notes = []
        if self.queue_depth != self.iodepth:
            notes.append(f"{self.name}: ioengine={self.ioengine}" + (" (fio's default)" if self.ioengine == "psync"
                         else "") + f" is synchronous: one IO at a time, iodepth={self.iodepth} has no effect (fio "
                         "caps the queue depth at 1); set ioengine=libaio or io_uring for a deeper queue")
        if not self.direct and self.ioengine not in PASSTHROUGH_ENGINES:
            notes.append(f"{self.name}: direct=0 (fio's default): on a real device fio goes through the host's page "
                         "cache, so reads may come from memory and writes complete into it before the drive sees "
                         "them, and a device target measures the cache, not the drive; the simulated drive sees "
                         "every IO, as with direct=1. Set direct=1 to measure the drive")
        return notes

    @property
    def directions(self) -> tuple[str, ...]:
        """The data directions the job issues: ("write",), ("read", "write"), ("trim", "write")..."""
        base = self.rw.removeprefix("rand")
        return {"read": ("read",), "write": ("write",), "trim": ("trim",), "rw": ("read", "write"),
                "trimwrite": ("trim", "write")}[base]

    @property
    def random(self) -> bool:
        """True for fio's random patterns (randread, randwrite, randtrim, randrw, randtrimwrite)."""
        return self.rw in _RANDOM_RW

    @property
    def seed(self) -> int | None:
        """The seed that makes the pattern repeatable: ``randseed``, fio's default seed under
        ``randrepeat``, or None (a new pattern each run)."""
        if self.randseed is not None:
            return self.randseed
        return _FIO_RANDSEED if self.randrepeat else None


@dataclass(frozen=True)
class Workload:
    """Jobs in fio's order, as groups: the jobs of a group run together (each from its
    ``startdelay``, after its ``wait_for``), a group starts when the previous one has ended
    (fio's ``stonewall``)."""

    groups: tuple[tuple[Job, ...], ...]
    #: fio's ``exitall``, which is global in fio (set in any section, it applies to every
    #: job): when a job ends, fio stops the others as its ``exit_what`` says.
    exitall: bool = False
    #: fio's own command-line options (``--output``, ``--eta``...): listed, not applicable.
    program_options: tuple[HostOption, ...] = field(default=(), compare=False)
    #: The job files read (includes too), in order.
    sources: tuple[str, ...] = field(default=(), compare=False)

    @property
    def jobs(self) -> tuple[Job, ...]:
        """Every job, in fio's order."""
        return tuple(j for g in self.groups for j in g)

    def not_applicable(self) -> list[tuple[str, HostOption]]:
        """(job name or "fio", option) for every option not applicable to the simulator,
        once per job section, in order."""
        out: list[tuple[str, HostOption]] = [("fio", o) for o in self.program_options]
        for job in self.jobs:
            if job.clone == 0:
                out += [(job.name, o) for o in job.host_options]
        return out


# ============================================================================ values
class _Bad(Exception):
    """A value fio would refuse, or would read differently from what it says."""


@dataclass(frozen=True)
class _Pct:
    pct: int


@dataclass(frozen=True)
class _Zones:
    """A size in zones (fio's ``z`` unit, zonemode=zbd): ``n`` × the zone size."""
    n: int


_UNIT_POW = {"k": 1, "m": 2, "g": 3, "t": 4, "p": 5}


def _unit_mult(unit: str, kb_base: int) -> int | None:
    """Bytes per unit as fio's get_mult_bytes: ``k``..``p`` (with or without ``b``) are
    powers of ``kb_base``; ``kib``..``pib`` of the other base (1000 under kb_base=1024 and
    1024 under kb_base=1000); ``b`` or nothing are bytes. None for units fio does not know."""
    u = unit.lower()
    if u in ("", "b"):
        return 1
    if len(u) == 3 and u.endswith("ib") and u[0] in _UNIT_POW:
        return (1000 if kb_base == 1024 else 1024) ** _UNIT_POW[u[0]]
    if u[0] in _UNIT_POW and u[1:] in ("", "b"):
        return kb_base ** _UNIT_POW[u[0]]
    return None


def _suggest_size(exact: Decimal) -> str | None:
    """A whole-number spelling of ``exact`` bytes (kb_base 1024 units), or None."""
    if exact != exact.to_integral_value() or exact < 0:
        return None
    n = int(exact)
    return _fmt_size(n)


_NUM = re.compile(r"(\d+)([A-Za-z%]*)")
_HEX = re.compile(r"0[xX][0-9a-fA-F]+")
_DEC = re.compile(r"(\d*)\.(\d+)([A-Za-z%]*)")


def _size(text: str, kb_base: int, *, pct: bool = False, signed: bool = False) -> int | _Pct:
    """A size as fio's str_to_decimal reads it (bytes), or a percentage where ``pct``.
    Refuses what fio would read differently from the text (see the module docstring)."""
    if text == "":
        raise _Bad("needs a value")
    if text.startswith("("):
        raise _Bad("fio's arithmetic expressions are not supported; write the value")
    sign = 1
    if text[0] in "+-":
        if text[0] == "-" and not signed:
            raise _Bad("must not be negative")
        sign = -1 if text[0] == "-" else 1
        text = text[1:]
    if _HEX.fullmatch(text):
        return sign * _check_u64(int(text, 16))
    if "0x" in text.lower():       # fio's str_to_decimal: any "0x" makes it read the text as hex, unit dropped
        digits = re.match(r"(0[xX])?([0-9a-fA-F]*)", text).group(2)
        raise _Bad(f"{text!r}: fio reads a number holding '0x' as hex and drops any unit after it (this would "
                   f"be {int(digits or '0', 16)}); write a plain number with a unit, or hex alone")
    m = _NUM.fullmatch(text)
    if m is None:
        d = _DEC.fullmatch(text)
        if d is not None:
            lead = int(d.group(1) or 0)
            mult = _unit_mult(d.group(3), kb_base) if d.group(3) != "%" else None
            hint = ""
            if mult is not None:
                better = _suggest_size(Decimal(f"{d.group(1) or 0}.{d.group(2)}") * mult)
                if better:
                    hint = f", e.g. {better}"
            raise _Bad(f"fio stops reading a number at the '.', so {text!r} would be {lead} byte(s); "
                       f"write a whole number in a smaller unit{hint}")
        raise _Bad(f"{text!r} is not a size: write a whole number with an optional unit "
                   f"(4096, 4k, 1m, 2g, 128KiB{', 50%' if pct else ''})")
    n, unit = int(m.group(1)), m.group(2)
    if unit == "%":
        if not pct:
            raise _Bad(f"{text!r}: this option takes no percentage (fio would read it as a huge number)")
        if sign < 0 or not 0 <= n <= 100:
            raise _Bad(f"{text!r}: a percentage must be between 0% and 100%")
        return _Pct(n)
    if unit.lower() == "z":
        if not pct:
            raise _Bad(f"{text!r}: this option takes no count of zones; give the size in bytes")
        return _Zones(sign * n)
    mult = _unit_mult(unit, kb_base)
    if mult is None:
        raise _Bad(f"unknown unit {unit!r} in {text!r}: fio knows k, m, g, t, p (powers of kb_base), "
                   f"KiB, MiB, GiB, TiB, PiB and b, and would read this as {n} byte(s)")
    return sign * _check_u64(n * mult)


def _check_u64(n: int) -> int:
    if n > _U64:
        raise _Bad("is too large for fio")
    return n


def _bytes(text: str, kb_base: int, *, signed: bool = False) -> int:
    v = _size(text, kb_base, signed=signed)
    assert isinstance(v, int)
    return v


def _int(text: str, kb_base: int, lo: int = 0, hi: int = _U32) -> int:
    """fio's "int" options: a whole number (fio accepts size units there too: 1k = 1024)."""
    v = _bytes(text, kb_base, signed=lo < 0)
    if v < lo:
        raise _Bad(f"must be at least {lo}")
    if v > hi:
        raise _Bad(f"must be at most {hi}")
    return v


_TIME_UNITS = {"us": 1, "usec": 1, "ms": 1000, "msec": 1000, "s": 10 ** 6, "m": 60 * 10 ** 6,
               "h": 3600 * 10 ** 6, "d": 86400 * 10 ** 6}


def _time_us(text: str, default_s: bool, hi: int = _U64) -> int:
    """A time as fio's check_str_time reads it, in microseconds. Without a unit: seconds
    where ``default_s``, else microseconds."""
    default = 10 ** 6 if default_s else 1
    unit_word = "seconds" if default_s else "microseconds"
    if text == "":
        raise _Bad("needs a value")
    if text.startswith("-"):
        raise _Bad("must not be negative")
    if text.startswith("("):
        raise _Bad("fio's arithmetic expressions are not supported; write the value")
    m = _NUM.fullmatch(text)
    if m is None:
        d = _DEC.fullmatch(text)
        if d is not None:
            lead = int(d.group(1) or 0)
            raise _Bad(f"fio stops reading a number at the '.', so {text!r} would be {lead} {unit_word}; "
                       "write a whole number in a smaller unit (e.g. 1500ms)")
        raise _Bad(f"{text!r} is not a time: write a whole number with an optional unit "
                   f"(us, ms, s, m, h, d; none means {unit_word})")
    n, unit = int(m.group(1)), m.group(2).lower()
    if unit == "":
        mult = default
    elif unit in _TIME_UNITS:
        mult = _TIME_UNITS[unit]
    else:
        raise _Bad(f"unknown time unit {m.group(2)!r} in {text!r}: fio knows us, ms, s, m, h, d and would "
                   f"read this as {n} microseconds")
    v = n * mult
    if v > hi:
        raise _Bad(f"is too long: fio keeps it in microseconds, at most {hi}")
    return v


_FLOAT = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def _float(text: str) -> float:
    if not _FLOAT.fullmatch(text):
        raise _Bad(f"{text!r} is not a number")
    return float(text)


def _bool(text: str | None, *, bare_ok: bool) -> bool:
    """fio's bool (0 or 1) and "set" options (also bare: on)."""
    if text is None:
        if bare_ok:
            return True
        raise _Bad("needs a value: write =1 or =0")
    if text in ("0", "1"):
        return text == "1"
    raise _Bad(f"{text!r}: write 1 (on) or 0 (off)")


def _parts(text: str, colon_dash: bool = True) -> list[tuple[str, bool]]:
    """fio's handle_option split of a read,write,trim value: at ',' (else ':' then '-' for
    plain numbers), one (text, more) per part; ``more`` is True when a separator followed."""
    out = []
    ptr = text
    while True:
        i = ptr.find(",")
        if i < 0 and colon_dash:
            i = ptr.find(":")
            if i < 0:
                i = ptr.find("-")
        if i < 0:
            out.append((ptr, False))
            return out
        out.append((ptr[:i], True))
        ptr = ptr[i + 1:]


def _one(text: str, colon_dash: bool = True) -> str:
    """The single value of an option fio splits like read,write,trim but keeps one of."""
    parts = _parts(text, colon_dash)
    if len(parts) > 1:
        raise _Bad(f"takes one value; fio would use {parts[0][0]!r} and ignore the rest")
    return text


def _tri(old: Tri, text: str, parse: Callable[[str], int], *, colon_dash: bool = True) -> Tri:
    """A read,write,trim value applied over ``old`` as fio does: an empty part keeps the old
    value; the last part also applies to the directions after it unless a separator ends
    the text (``bs=4k`` is all three, ``bs=4k,8k`` gives trims 8k, ``bs=4k,8k,`` keeps trims)."""
    if text.startswith("-"):
        raise _Bad("must not be negative")
    vals = list(old)
    parts = _parts(text, colon_dash)
    if len(parts) > 3 and any(p for p, _ in parts[3:]):
        raise _Bad("takes at most three values (read,write,trim); fio would ignore the rest")
    done = False
    rest = text
    for curr, (part, more) in enumerate(parts[:3]):
        # fio parses each part from the rest of the text up to the next ','; a '0x' anywhere
        # in there makes it read the part as hex
        seen, rest = rest.split(",")[0], rest[len(part) + 1:]
        if "0x" in seen.lower() and not _HEX.fullmatch(part):
            raise _Bad(f"{text!r}: fio reads {part!r} as hex because {seen!r} holds '0x'; separate the "
                       "values with ',' or write them without hex")
        if part == "":
            continue
        v = parse(part)
        vals[curr] = v
        if not more:
            for d in range(curr + 1, 3):
                vals[d] = v
        done = True
    if not done:
        raise _Bad("needs a value")
    return (vals[0], vals[1], vals[2])


# ============================================================================ option tables
#: Reasons an accepted option does not apply to the simulator.
_REASONS = {
    "submit": "how fio submits I/O on the host (engine, batching, buffers, page cache); the simulator "
              "receives the commands directly, as with direct=1",
    "file": "which file or device fio opens and how it prepares it; the simulator is the drive",
    "report": "what fio reports or logs; ssdlab records its own series and metrics",
    "system": "how the host runs fio (processes, CPUs, NUMA, priorities, users, cgroups, commands, clock)",
    "rng": "which random generator fio uses; the simulator draws from its own, seeded by randseed",
    "scramble": "fio's slight scrambling of reused buffers; compressibility is buffer_compress_percentage "
                "and zero_buffers",
    "soft": "deprecated: fio ignores it",
    "default": "at fio's default value: no effect",
    "onefile": "how fio picks among several files; a job has one target here",
    "verify": "how fio checks the data it reads back (checksums, patterns, what a mismatch does); the drive "
              "sees the same read-back whatever fio computes",
}

#: Why options of class (c) are refused, and what to do.
_REFUSALS = {
    "verify": "verify_only (a read-back without the writes), trim_percentage and trim_backlog (trims of written "
              "blocks, then verified) add I/O that ssdlab does not model; remove it or run the job with fio",
    "verify_backlog": "verifying while writing (verify_backlog) interleaves the read-back with the writes; the "
                      "simulator reads back after the writes (fio's default): remove it or run the job with fio",
    "zones": "zonemode=strided and zoneskip (fio's strided zones of a regular device) are not modelled "
             "(zonemode=zbd is); remove them",
    "files": "several files per job are not modelled (the simulator is one drive); use one file "
             "(nrfiles=1) or one job per file",
    "iolog": "replaying an I/O log is not done by this parser; replay it with `ssdlab trace run FILE`, "
             "which reads fio iologs",
    "sync": "write-through I/O (O_SYNC/O_DSYNC), barrier writes and sync_file_range are not modelled; "
            "fsync=N and fdatasync=N are (a cache flush every N writes): remove it, or use fsync=1",
    "endcond": "ends the job when a rate, latency or steady-state condition is (not) met; ssdlab does "
               "not model these end conditions: remove it, or use runtime/size to end the job",
    "latency": "fio's search for the queue depth that meets a latency target is not modelled; set iodepth",
    "dedupe": "deduplicated data is not modelled (compressibility is); remove it",
    "pattern": "a fixed buffer content is not modelled; use buffer_compress_percentage or zero_buffers",
    "sequencer": "rw_sequencer=identical (the same offset repeated) is not modelled; remove it (rw=randread:N "
                 "alone gives N sequential I/Os after each random offset)",
    "profile": "fio's built-in profiles are not modelled; write their jobs out",
    "hint": "write lifetime hints (streams) are not modelled; remove it",
    "fua": "FUA and special SCSI write commands are not modelled; remove it",
    "preread": "pre_read reads every file before the job starts; this is not modelled: remove it",
    "createonly": "create_only runs no I/O; remove it",
    "engine": "this I/O engine does not read and write a block device; use one that does (libaio, "
              "io_uring, psync...)",
    "deprecated": "fio itself refuses this deprecated option; remove it",
    "spin": "",
}

# The option table: name[,alias...]  type  class[:detail]  [default]
#   types: set (bare or 0/1), bool (0/1), int, sint (signed int), size, size3, int3, time_s,
#          time_us, time3_us, str (non-empty), text (any, bare allowed), enum:a|b|c, floats,
#          cpus, engine, special (handled by its own code)
#   class: pattern          - (a), handled by _PATTERN
#          host:REASON      - (b)
#          refuse:GROUP     - (c), refused unless at the default (listed then)
#          needs:OPTION     - no effect unless OPTION (refused) is set: listed
#          soft             - soft-deprecated, fio ignores it: listed
_TABLE = """
description                 str      host:report
name                        str      pattern
wait_for                    str      pattern
filename                    special  host:file
directory                   str      host:file
filename_format             str      host:file
unique_filename             bool     host:file
lockfile                    enum:none|exclusive|readwrite  host:file
opendir                     str      refuse:files
rw,readwrite                special  pattern
rw_sequencer                enum:sequential|identical  refuse:sequencer  sequential
ioengine                    engine   host:submit
iodepth                     int      pattern
iodepth_batch,iodepth_batch_submit               int   host:submit
iodepth_batch_complete_min,iodepth_batch_complete int  host:submit
iodepth_batch_complete_max  int      host:submit
iodepth_low                 int      host:submit
serialize_overlap           bool     host:submit
io_submit_mode              enum:inline|offload  host:submit
size                        special  pattern
io_size,io_limit            special  pattern
fill_device,fill_fs         bool     pattern
filesize                    text     refuse:files
file_append                 bool     refuse:files  0
offset,fileoffset           special  pattern
offset_align                int      pattern
offset_increment            special  pattern
number_ios                  size     pattern
bs,blocksize                size3    pattern
ba,blockalign               size3    pattern
bsrange,blocksize_range     special  pattern
bssplit                     special  pattern
bs_unaligned,blocksize_unaligned  set  pattern
bs_is_seq_rand              bool     pattern
randrepeat                  bool     pattern
randseed                    size     pattern
norandommap                 set      pattern
softrandommap               bool     host:rng
random_generator            enum:tausworthe|lfsr|tausworthe64  host:rng
random_distribution         special  pattern
percentage_random           int3     pattern
percentage_sequential       text     refuse:deprecated
allrandrepeat               bool     host:rng
nrfiles,nr_files            int      refuse:files  1
openfiles                   int      host:onefile
file_service_type           text     host:onefile
fallocate                   enum:none|native|posix|keep|truncate|0|1  host:file
fadvise_hint                enum:0|1|random|sequential  host:submit
fsync                       int      pattern
fdatasync                   int      pattern
write_barrier               int      refuse:sync  0
sync_file_range             text     refuse:sync
direct                      bool     host:submit
atomic                      bool     host:submit
buffered                    bool     host:submit
overwrite                   bool     host:file
loops                       int      pattern
numjobs                     int      pattern
startdelay                  special  pattern
runtime,timeout             time_s   pattern
time_based                  set      pattern
verify_only                 set      refuse:verify  0
ramp_time                   time_s   pattern
clocksource                 enum:gettimeofday|clock_gettime|cpu  host:system
mem,iomem                   text     host:submit
iomem_align,mem_align       int      host:submit
verify                      enum:0|md5|crc64|crc32|crc32c-intel|crc32c|crc16|crc7|sha1|sha256|sha512|sha3-224|sha3-256|sha3-384|sha3-512|xxhash|meta|pattern|null  pattern
do_verify                   bool     pattern
verifysort                  text     soft
verifysort_nr               text     soft
verify_interval             int      host:verify
verify_offset               int      host:verify
verify_pattern              text     host:verify
verify_fatal                bool     host:verify
verify_dump                 bool     host:verify
verify_async                int      host:verify
verify_backlog              size     refuse:verify_backlog  0
verify_backlog_batch        int      needs:verify_backlog
verify_async_cpus           cpus     host:verify
experimental_verify         bool     host:verify
verify_state_load           bool     host:verify
verify_state_save           bool     host:verify
trim_percentage             int      refuse:verify  0
trim_verify_zero            bool     needs:trim_percentage
trim_backlog                size     refuse:verify  0
trim_backlog_batch          int      needs:trim_backlog
write_iolog                 str      host:report
read_iolog                  str      refuse:iolog
read_iolog_chunked          bool     needs:read_iolog
replay_no_stall             bool     needs:read_iolog
replay_redirect             str      needs:read_iolog
replay_scale                int      needs:read_iolog
replay_align                int      needs:read_iolog
replay_time_scale           int      needs:read_iolog
replay_skip                 text     needs:read_iolog
merge_blktrace_file         str      refuse:iolog
merge_blktrace_scalars      floats   refuse:iolog
merge_blktrace_iters        floats   refuse:iolog
exec_prerun                 str      host:system
exec_postrun                str      host:system
ioscheduler                 str      host:system
zonemode                    special  pattern
zonesize                    special  pattern
zonecapacity                special  pattern
zonerange                   special  pattern
zoneskip                    size     refuse:zones  0
read_beyond_wp              special  pattern
max_open_zones              special  pattern
job_max_open_zones          special  pattern
ignore_zone_limits          special  pattern
zone_reset_threshold        special  pattern
zone_reset_frequency        special  pattern
lockmem                     size     host:system
rwmixread                   int      pattern
rwmixwrite                  int      pattern
rwmixcycle                  text     refuse:deprecated
nice                        sint     host:system
prio                        int      host:system
prioclass                   int      host:system
thinktime                   time_us  pattern
thinktime_spin              time_us  pattern
thinktime_blocks            int      pattern
thinktime_blocks_type       enum:complete|issue  pattern
thinktime_iotime            time_s   pattern
rate                        size3    pattern
rate_min,ratemin            size3    refuse:endcond  0
rate_iops                   int3     pattern
rate_iops_min               int3     refuse:endcond  0
rate_process                enum:linear|poisson  pattern
rate_cycle,ratecycle        int      pattern
rate_ignore_thinktime       bool     pattern
max_latency                 time3_us refuse:endcond  0
latency_target              time_us  refuse:latency  0
latency_window              time_us  needs:latency_target
latency_percentile          floats   needs:latency_target
latency_run                 bool     needs:latency_target
invalidate                  bool     host:submit
sync                        enum:none|0|sync|1|dsync  refuse:sync  none
write_hint                  enum:none|short|medium|long|extreme  refuse:hint  none
create_serialize            bool     host:file
create_fsync                bool     host:file
create_on_open              bool     host:file
create_only                 bool     refuse:createonly  0
allow_file_create           bool     host:file
allow_mounted_write         bool     host:file
pre_read                    bool     refuse:preread  0
cpumask                     int      host:system
cpus_allowed                cpus     host:system
cpus_allowed_policy         enum:shared|split  host:system
numa_cpu_nodes              cpus     host:system
numa_mem_policy             text     host:system
gpu_dev_id                  int      host:system
end_fsync                   bool     pattern
fsync_on_close              bool     pattern
unlink                      bool     host:file
unlink_each_loop            bool     host:file
exitall                     set      pattern
exit_what                   enum:group|stonewall|all  pattern
exitall_on_error            set      host:system
stonewall,wait_for_previous set      pattern
new_group                   set      pattern
thread                      set      host:system
per_job_logs                bool     host:report
write_bw_log                text     host:report
write_lat_log               text     host:report
write_iops_log              text     host:report
log_entries                 int      host:report
log_avg_msec                int      host:report
log_hist_msec               int      host:report
log_hist_coarseness         int      host:report
write_hist_log              text     host:report
log_max_value               bool     host:report
log_offset                  bool     host:report
log_prio                    bool     host:report
log_compression             size     host:report
log_compression_cpus        cpus     host:report
log_store_compressed        bool     host:report
log_unix_epoch              bool     host:report
log_alternate_epoch         bool     host:report
log_alternate_epoch_clock_id int     host:report
block_error_percentiles     bool     host:report
bwavgtime                   int      host:report
iopsavgtime                 int      host:report
group_reporting             set      host:report
stats                       bool     host:report
zero_buffers                set      pattern
refill_buffers              set      pattern
scramble_buffers            bool     host:scramble
buffer_pattern              text     refuse:pattern
buffer_compress_percentage  int      pattern
buffer_compress_chunk       int      pattern
dedupe_percentage           int      refuse:dedupe  0
dedupe_global               bool     needs:dedupe_percentage
dedupe_mode                 enum:repeat|working_set  needs:dedupe_percentage
dedupe_working_set_percentage int    needs:dedupe_percentage
clat_percentiles            bool     host:report
lat_percentiles             bool     host:report
slat_percentiles            bool     host:report
percentile_list             floats   host:report
significant_figures         int      host:report
disk_util                   bool     host:report
gtod_reduce                 bool     host:report
disable_lat                 bool     host:report
disable_clat                bool     host:report
disable_slat                bool     host:report
disable_bw_measurement,disable_bw bool host:report
gtod_cpu                    int      host:system
unified_rw_reporting        enum:none|mixed|both|0|1|2  host:report
continue_on_error           enum:none|read|write|io|verify|all|0|1  host:system
ignore_error                text     host:system
error_dump                  bool     host:report
profile                     str      refuse:profile
cgroup                      str      host:system
cgroup_nodelete             bool     host:system
cgroup_weight               int      host:system
uid                         int      host:system
gid                         int      host:system
kb_base                     enum:1024|1000  pattern
unit_base                   enum:0|8|1  host:report
hugepage-size               size     host:submit
flow_id                     int      pattern
flow                        int      pattern
flow_watermark              text     soft
flow_sleep                  int      pattern
fdp                         special  pattern
dataplacement               special  pattern
plids,fdp_pli               special  pattern
plid_select,fdp_pli_select  special  pattern
dp_scheme                   special  pattern
steadystate,ss              text     needs:steadystate_duration
steadystate_duration,ss_dur time_s   refuse:endcond  0
steadystate_ramp_time,ss_ramp time_s needs:steadystate_duration
"""


@dataclass(frozen=True)
class _Opt:
    name: str
    aliases: tuple[str, ...]
    type: str
    cls: str                 # pattern | host | refuse | needs | soft | engine
    detail: str = ""         # reason key, refusal group, or the option needed
    default: str | None = None


def _load_table() -> dict[str, _Opt]:
    table: dict[str, _Opt] = {}
    for line in _TABLE.strip().splitlines():
        cols = line.split()
        names = cols[0].split(",")
        cls, _, detail = cols[2].partition(":")
        opt = _Opt(names[0], tuple(names[1:]), cols[1], cls, detail, cols[3] if len(cols) > 3 else None)
        for n in names:
            table[n] = opt
    return table


_OPTIONS = _load_table()

#: Engines fio runs one IO at a time (FIO_SYNCIO): ``iodepth`` has no effect with them.
SYNC_ENGINES = frozenset({"sync", "psync", "vsync", "pvsync", "pvsync2", "splice", "mmap", "pmemblk", "dev-dax",
                          "libpmem"})
#: The largest ``flow`` weight fio takes (FLOW_MAX_WEIGHT).
FLOW_MAX_WEIGHT = 1000
#: fio's ``verify`` types (0: none), as the option table lists them.
VERIFY_CHECKSUMS = tuple(_OPTIONS["verify"].type.removeprefix("enum:").split("|"))
#: Engines that pass NVMe or SCSI commands to the drive's character device: no page cache,
#: whatever ``direct`` says.
PASSTHROUGH_ENGINES = frozenset({"io_uring_cmd", "sg"})
#: I/O engines that read and write a block device or file (accepted, not applicable), and
#: the engine options fio 3.33 gives them.
_BLOCK_ENGINES: dict[str, tuple[str, ...]] = {
    "sync": (), "psync": (), "vsync": (), "pvsync": (), "posixaio": (), "solarisaio": (),
    "windowsaio": (), "splice": (), "null": (), "pmemblk": (), "dev-dax": (), "libpmem": (),
    "pvsync2": ("hipri", "hipri_percentage", "uncached", "nowait"),
    "libaio": ("userspace_reap", "cmdprio_percentage", "cmdprio_class", "cmdprio", "cmdprio_bssplit", "nowait"),
    "io_uring": ("hipri", "cmdprio_percentage", "cmdprio_class", "cmdprio", "cmdprio_bssplit", "fixedbufs",
                 "registerfiles", "sqthread_poll", "sqthread_poll_cpu", "nonvectored", "uncached", "nowait",
                 "force_async", "cmd_type"),
    "io_uring_cmd": ("hipri", "cmdprio_percentage", "cmdprio_class", "cmdprio", "cmdprio_bssplit", "fixedbufs",
                     "registerfiles", "sqthread_poll", "sqthread_poll_cpu", "nonvectored", "uncached", "nowait",
                     "force_async", "cmd_type", "write_mode"),
    "sg": ("hipri", "readfua", "writefua", "sg_write_mode", "stream_id"),
    "mmap": ("thp",),
    "nbd": ("uri",),
    "xnvme": ("hipri", "sqthread_poll", "xnvme_be", "xnvme_async", "xnvme_sync", "xnvme_admin",
              "xnvme_dev_nsid", "xnvme_iovec"),
}
#: Engines fio knows that do not read and write a block device (refused), with their options.
_OTHER_ENGINES: dict[str, tuple[str, ...]] = {
    "cpuio": ("cpuload", "cpuchunks", "cpumode", "exit_on_io_done"),
    "net": ("hostname", "port", "protocol", "nodelay", "listen", "pingpong", "interface", "ttl",
            "window_size", "mss"),
    "netsplice": ("hostname", "port", "protocol", "nodelay", "listen", "pingpong", "interface", "ttl",
                  "window_size", "mss"),
    "rdma": ("hostname", "bindname", "port", "verb"),
    "ftruncate": (), "filecreate": (), "filestat": ("stat_type",), "filedelete": (),
    "exec": ("program", "arguments", "grace_time", "std_redirect"),
    "falloc": (), "e4defrag": ("donorname", "inplace"), "mtd": ("skip_bad",),
    "gfapi": ("volume", "brick", "single-instance"), "gfapi_async": ("volume", "brick", "single-instance"),
    "rados": ("clustername", "pool", "clientname", "conf", "busy_poll", "touch_objects"),
    "rbd": ("clustername", "rbdname", "pool", "clientname", "busy_poll"),
    "http": (), "libhdfs": (), "dfs": (), "nfs": (), "librpma_apm_client": (), "librpma_apm_server": (),
    "librpma_gpspm_client": (), "librpma_gpspm_server": (), "ime_psync": (), "ime_psyncv": (), "ime_aio": (),
}
#: Engine options that would change what the drive is asked to do: refused unless at default.
_ENGINE_REFUSED = {"readfua": "0", "writefua": "0", "sg_write_mode": "write", "stream_id": "0"}
_ENGINE_OPTIONS = sorted({o for opts in (*_BLOCK_ENGINES.values(), *_OTHER_ENGINES.values()) for o in opts})

#: fio's own command-line options (not job options): accepted and listed, or refused.
_PROGRAM_OPTIONS_OK = {
    "output": True, "output-format": True, "minimal": False, "append-terse": None, "eta": True,
    "eta-interval": True, "eta-newline": True, "debug": True, "status-interval": True,
    "warnings-fatal": False, "max-jobs": True, "terse-version": True, "bandwidth-log": False,
    "parse-only": False, "showcmd": False, "alloc-size": True, "aux-path": True, "idle-prof": True,
}   # value: True = takes an argument, False = takes none, None = optional
_PROGRAM_OPTIONS_REFUSED = {
    "version": "prints fio's version and runs no job", "help": "prints help and runs no job",
    "cmdhelp": "prints help and runs no job", "enghelp": "prints help and runs no job",
    "crctest": "runs a self-test, no job", "memcpytest": "runs a self-test, no job",
    "cpuclock-test": "runs a self-test, no job", "latency-log": "is deprecated in fio (it refuses it)",
    "inflate-log": "inflates a log and runs no job", "merge-blktrace-only": "merges traces and runs no job",
    "server": "runs fio as a server", "daemonize": "runs fio as a server", "server-internal": "runs fio as a server",
    "client": "sends the jobs to remote fio servers", "remote-config": "reads jobs on remote fio servers",
    "trigger-file": "runs commands on a trigger", "trigger-timeout": "runs commands on a trigger",
    "trigger": "runs commands on a trigger", "trigger-remote": "runs commands on a trigger",
}
_PROGRAM_REQ_ARG = {"version": False, "help": False, "cmdhelp": None, "enghelp": None, "crctest": None,
                    "memcpytest": None, "cpuclock-test": False, "latency-log": True, "inflate-log": True,
                    "merge-blktrace-only": False, "server": None, "daemonize": True, "server-internal": True,
                    "client": True, "remote-config": True, "trigger-file": True, "trigger-timeout": True,
                    "trigger": True, "trigger-remote": True, "section": True, "readonly": False}

#: Every option name fio knows (for "did you mean").
_ALL_NAMES = sorted(set(_OPTIONS) | set(_ENGINE_OPTIONS))


def _closest(name: str, names: Iterable[str] = ()) -> str | None:
    m = difflib.get_close_matches(name, list(names) or _ALL_NAMES, n=1, cutoff=0.6)
    return m[0] if m else None


# ============================================================================ job state
_DIST_RANDOM = RandomDistribution()


def _defaults() -> dict:
    """fio's defaults for the options of class (a) (fio's fill_default_options)."""
    return {
        "name": None, "wait_for": None, "rw": "read", "rw_seq_nr": 1, "rw_seq_add": 0, "rwmix_read": 50,
        "bs": (4096, 4096, 4096), "min_bs": (0, 0, 0), "max_bs": (0, 0, 0), "bssplit": ((), (), ()),
        "ba": (0, 0, 0), "bs_unaligned": False, "bs_is_seq_rand": False, "percentage_random": (100, 100, 100),
        "dist": _DIST_RANDOM, "norandommap": False, "randrepeat": True, "randseed": _FIO_RANDSEED,
        "iodepth": 1, "size": 0, "size_pct": 0, "io_size": 0, "io_size_pct": 0, "fill_device": False,
        "offset": 0, "offset_pct": 0, "offset_align": 0, "offset_increment": 0, "offset_increment_pct": 0,
        "number_ios": 0, "loops": 1, "numjobs": 1, "startdelay": (0, 0), "runtime": 0, "time_based": False,
        "ramp_time": 0, "thinktime": 0, "thinktime_spin": 0, "thinktime_blocks": 1,
        "thinktime_blocks_type": "complete", "thinktime_iotime": 0, "rate": (0, 0, 0), "rate_iops": (0, 0, 0),
        "rate_process": "linear", "rate_cycle": 1000, "rate_ignore_thinktime": False,
        "buffer_compress_percentage": 0, "buffer_compress_chunk": 512, "zero_buffers": False,
        "refill_buffers": False, "fsync": 0, "fdatasync": 0, "end_fsync": False, "fsync_on_close": False,
        "exitall": False, "exit_what": "group", "stonewall": False, "new_group": False, "kb_base": 1024,
        "ioengine": "psync", "direct": False,
        "dataplacement": "none", "plids": (), "plid_select": "roundrobin", "dp_scheme": None,
        "zonemode": "none", "zonesize": 0, "zonecapacity": 0, "zonerange": 0, "read_beyond_wp": False,
        "max_open_zones": 0, "job_max_open_zones": 0, "ignore_zone_limits": False, "zone_reset_threshold": 0.0,
        "zone_reset_frequency": 0.0, "verify": "0", "do_verify": True, "write_mode": "write",
        "flow": 0, "flow_id": 0, "flow_sleep": 0,
        "dp_names": frozenset(),
    }


@dataclass
class _State:
    """Options of one job (or of fio's defaults, which [global] changes), as fio keeps them."""

    v: dict = field(default_factory=_defaults)
    #: Options given (fio's fio_option_is_set), by canonical name.
    given: set = field(default_factory=set)
    #: Accepted options not applicable to the simulator: canonical name -> HostOption.
    host: dict = field(default_factory=dict)
    #: Engine options, checked against the job's engine when the job is complete.
    engine_opts: dict = field(default_factory=dict)
    #: Where each option was last given (for errors about the job as a whole).
    lines: dict = field(default_factory=dict)

    def copy(self) -> "_State":
        return _State(dict(self.v), set(self.given), dict(self.host), dict(self.engine_opts), dict(self.lines))

    def at(self, *names: str, default: Where) -> Where:
        """Where the last of ``names`` was given (else ``default``)."""
        found = [self.lines[n] for n in names if n in self.lines]
        return max(found, key=lambda w: (w.file, w.line)) if found else default


@dataclass
class _Item:
    """One option as written: ``key`` (before '='), ``value`` (None for a bare key)."""

    key: str
    value: str | None
    where: Where
    text: str
    unset_vars: tuple[str, ...] = ()


def _fail(item: _Item, msg: str) -> WorkloadError:
    shown = item.text if len(item.text) <= 80 else item.text[:77] + "..."
    extra = ""
    if item.unset_vars:
        extra = " (" + ", ".join(f"${{{v}}}" for v in item.unset_vars) + " is not set, fio replaces it by nothing)"
    return WorkloadError(f"{item.where}: {shown}: {msg}{extra}")


# ---------------------------------------------------------------------------- class (a) handlers
def _h_rw(st: _State, val: str | None, kb: int) -> None:
    if val is None:
        raise _Bad("needs a value, e.g. rw=randwrite")
    base, colon, post = val.partition(":")
    if "," in base:
        raise _Bad(f"{val!r}: fio reads only {base.split(',')[0]!r} and ignores the rest; remove it")
    if base not in RW_VALUES:
        near = _closest(base, RW_VALUES)
        raise _Bad(f"{base!r} is not a pattern fio knows ({', '.join(RW_VALUES)})"
                   + (f"; did you mean {near}?" if near else ""))
    rw = "rw" if base == "readwrite" else base
    st.v.update(rw=rw, rw_seq_nr=1, rw_seq_add=0)
    if colon:
        post = post.strip()
        if rw in _RANDOM_RW:
            if not post.isdigit() or int(post) < 1:
                lead = re.match(r"\d*", post).group(0)          # fio reads it with atoi()
                raise _Bad(f"rw={base}:N needs a whole number of I/Os N >= 1 (a new random offset every N I/Os); "
                           f"fio would read {post!r} as {int(lead or 0)}")
            st.v["rw_seq_nr"] = _int(post, kb, 1)
        else:
            st.v["rw_seq_add"] = _bytes(post, kb, signed=True)


def _h_size_like(key: str, pct_key: str, *, zero_pct_ok: bool) -> Callable[[_State, str | None, int], None]:
    def handler(st: _State, val: str | None, kb: int) -> None:
        if val is None:
            raise _Bad("needs a value")
        v = _size(_one(val), kb, pct=True)
        if isinstance(v, _Zones):
            st.v[key], st.v[pct_key] = v, 0
            return
        if isinstance(v, _Pct):
            if v.pct == 0 and not zero_pct_ok:
                raise _Bad("0% is no size; give a percentage from 1% to 100%")
            st.v[key], st.v[pct_key] = 0, v.pct
            return
        pct = st.v[pct_key]
        if pct and not (pct == 100 and key in ("size", "io_size")):
            # fio's callback sets the bytes but keeps the percentage, which then wins
            does = (f"take {pct}% of {val}" if key in ("size", "io_size") else f"ignore {val} and use {pct}%")
            raise _Bad(f"follows {key}={pct}% (in this job or its [global]): fio keeps the percentage and would "
                       f"{does}; give {key} as a percentage here too, or move the percentage out of [global]")
        st.v[key], st.v[pct_key] = v, 0       # after 100% fio's bytes count as such (100% scales nothing)
    return handler


def _h_bsrange(st: _State, val: str | None, kb: int) -> None:
    if val is None:
        raise _Bad("needs a value, e.g. bsrange=4k-64k")
    lo, hi = list(st.v["min_bs"]), list(st.v["max_bs"])
    parts = _parts(val, colon_dash=False)
    if len(parts) > 3 and any(p for p, _ in parts[3:]):
        raise _Bad("takes at most three ranges (read,write,trim); fio would ignore the rest")
    done = False
    for curr, (part, more) in enumerate(parts[:3]):
        if part == "":
            continue
        sep = "-" if "-" in part else ":" if ":" in part else None
        if sep is None:
            raise _Bad(f"{part!r} is not a range: write MIN-MAX, e.g. 4k-64k")
        a, _, b = part.partition(sep)
        x, y = _block(a, kb), _block(b, kb)
        x, y = min(x, y), max(x, y)        # fio swaps a reversed range
        lo[curr], hi[curr] = x, y
        if not more:
            for d in range(curr + 1, 3):
                lo[d], hi[d] = x, y
        done = True
    if not done:
        raise _Bad("needs a value, e.g. bsrange=4k-64k")
    st.v["min_bs"], st.v["max_bs"] = tuple(lo), tuple(hi)


def _split_ddir_parts(text: str) -> tuple[str, str, str]:
    """fio's str_split_parse: 'R,W,T' -> three parts; 'R,W' -> (R, W, W); 'X' -> (X, X, X)."""
    commas = text.count(",")
    if commas > 2:
        raise _Bad("takes at most three lists (read,write,trim)")
    if commas == 0:
        return text, text, text
    if commas == 1:
        r, w = text.split(",")
        return r, w, w
    r, w, t = text.split(",")
    return r, w, t


def _bssplit_dir(text: str, kb: int) -> tuple[BlockSizeShare, ...]:
    entries = text.split(":")
    while entries and entries[-1] == "":
        entries.pop()
    if "" in entries:
        raise _Bad("an empty entry between ':'s: fio stops reading the list there; remove it")
    if len(entries) > _BSSPLIT_MAX:
        raise _Bad(f"fio takes at most {_BSSPLIT_MAX} block sizes per direction")
    raw: list[tuple[int, int | None]] = []
    for e in entries:
        bs_text, slash, pct_text = e.partition("/")
        bs = _block(bs_text, kb)
        pct: int | None = None
        if slash and pct_text != "":
            if not pct_text.isdigit():
                raise _Bad(f"{e!r}: the share after '/' must be a whole percentage (fio reads {pct_text!r} as 0, "
                           "i.e. blank)")
            pct = int(pct_text)
            if pct > 100:
                raise _Bad(f"{e!r}: a share is at most 100 (fio would cut it to 100)")
            if pct == 0:
                pct = None                 # fio: 0 means "blank", sharing the rest
        raw.append((bs, pct))
    if not raw:
        return ()
    given = sum(p for _, p in raw if p is not None)
    missing = sum(1 for _, p in raw if p is None)
    if given > 100:
        raise _Bad(f"the shares add up to {given}%, more than 100%; lower them")
    share = 0 if (missing == 1 and len(raw) == 1) else ((100 - given) // missing if missing else 0)
    if missing and share == 0 and len(raw) > 1:
        blank = ", ".join(_fmt_size(bs) for bs, p in raw if p is None)
        raise _Bad(f"{blank} get 0% (fio shares the {100 - given}% left among the blank entries): fio never "
                   "issues them, yet takes the smallest as its minimum block size and alignment (and can then "
                   "spin forever near the end of the region); remove them or give them a share")
    out = [BlockSizeShare(bs, share if p is None else p) for bs, p in raw]
    out.sort(key=lambda s: s.pct)                     # fio sorts by share (stable)
    rest = 100 - sum(s.pct for s in out)
    if rest:                                          # fio falls back to the last entry
        last = out[-1]
        out[-1] = BlockSizeShare(last.bs_bytes, last.pct + rest)
    return tuple(out)


def _h_bssplit(st: _State, val: str | None, kb: int) -> None:
    if val is None:
        raise _Bad("needs a value, e.g. bssplit=4k/50:64k/50")
    per_dir = [_bssplit_dir(part, kb) for part in _split_ddir_parts(val.strip())]
    if not any(per_dir):
        raise _Bad("needs at least one block size, e.g. bssplit=4k/50:64k/50")
    splits = list(st.v["bssplit"])
    lo, hi = list(st.v["min_bs"]), list(st.v["max_bs"])
    for d, entries in enumerate(per_dir):
        if entries:                       # a direction without entries keeps its sizes (fio)
            splits[d] = entries
            lo[d] = min(e.bs_bytes for e in entries)
            hi[d] = max(e.bs_bytes for e in entries)
    st.v["bssplit"], st.v["min_bs"], st.v["max_bs"] = tuple(splits), tuple(lo), tuple(hi)


def _zones(text: str, absolute: bool, kb: int) -> tuple[Zone, ...]:
    entries = text.split(":")
    while entries and entries[-1] == "":
        entries.pop()
    if "" in entries:
        raise _Bad("an empty zone between ':'s: fio stops reading the list there; remove it")
    if len(entries) > _ZONESPLIT_MAX:
        raise _Bad(f"fio takes at most {_ZONESPLIT_MAX} zones")
    access: list[int] = []
    sizes: list[int | None] = []
    for e in entries:
        a_text, slash, s_text = e.partition("/")
        if not a_text.isdigit() or int(a_text) > 100:
            raise _Bad(f"zone {e!r}: the access share before '/' must be a whole percentage, 0 to 100")
        access.append(int(a_text))
        if absolute:
            sizes.append(_bytes(s_text, kb) if slash and s_text else 0)
        else:
            if slash and s_text:
                if not s_text.isdigit():
                    raise _Bad(f"zone {e!r}: the size after '/' must be a whole percentage of the region")
                s = int(s_text)
                if s > 100:
                    raise _Bad(f"zone {e!r}: a zone is at most 100% of the region")
                sizes.append(s or None)        # fio: 0 means blank
            else:
                sizes.append(None)
    if sum(access) != 100:
        raise _Bad(f"the access shares add up to {sum(access)}%; fio needs exactly 100%: adjust them")
    if absolute:
        return tuple(Zone(a, size_bytes=s) for a, s in zip(access, sizes))
    given = sum(s for s in sizes if s is not None)
    missing = sizes.count(None)
    if given > 100:
        raise _Bad(f"the zone sizes add up to {given}%, more than 100%; lower them")
    if sizes == [None]:
        raise _Bad("a single zone needs its size (fio would make it 0% of the region), e.g. zoned:100/100")
    fill = (100 - given) // missing if missing else 0     # fio shares what is left (integer division)
    return tuple(Zone(a, size_pct=fill if s is None else s) for a, s in zip(access, sizes))


def _h_random_distribution(st: _State, val: str | None, kb: int) -> None:
    if val is None:
        raise _Bad("needs a value, e.g. random_distribution=zipf:1.2")
    kind, colon, post = val.partition(":")
    kinds = ("random", "zipf", "pareto", "normal", "zoned", "zoned_abs")
    if "," in kind:
        raise _Bad(f"{val!r}: fio reads only {kind.split(',')[0]!r} and ignores the rest; remove it")
    if kind not in kinds:
        near = _closest(kind, kinds)
        raise _Bad(f"{kind!r} is not a distribution fio knows ({', '.join(kinds)})"
                   + (f"; did you mean {near}?" if near else ""))
    if kind == "random":
        if colon:
            raise _Bad("random takes no parameter (fio ignores it); remove it")
        st.v["dist"] = _DIST_RANDOM
        return
    if kind in ("zoned", "zoned_abs"):
        if "," in val:
            raise _Bad("fio 3.33 cannot parse separate read,write,trim zone lists (it refuses "
                       f"'{kind}:...,...'); give one list, which applies to all directions")
        if not colon:
            raise _Bad(f"needs the zones, e.g. {kind}:60/10:30/20:10/70" if kind == "zoned"
                       else "needs the zones, e.g. zoned_abs:60/20g:40/100g")
        st.v["dist"] = RandomDistribution(kind, zones=_zones(post.strip(), kind == "zoned_abs", kb))
        return
    param = {"zipf": 1.1, "pareto": 0.2, "normal": 0.0}[kind]    # fio's defaults
    center = None
    if colon:
        post = post.strip()
        p, c2, c = post.partition(":")
        param = _float(p)
        if c2:
            center = _float(c)
            if not 0.0 <= center <= 1.0:
                raise _Bad("the center must be between 0 and 1")
    if kind == "zipf" and (param <= 0 or param == 1.0):
        raise _Bad("the zipf theta must be above 0 and not 1.0")
    if kind == "pareto" and not 0.0 < param < 1.0:
        raise _Bad("the pareto power must be between 0 and 1 (both excluded)")
    if kind == "normal" and not 0.0 <= param < 100.0:
        raise _Bad("the normal deviation must be from 0 up to (not including) 100")
    st.v["dist"] = RandomDistribution(kind, zipf_theta=param if kind == "zipf" else None,
                                      pareto_h=param if kind == "pareto" else None,
                                      normal_dev_pct=param if kind == "normal" else None, center_frac=center)


def _h_startdelay(st: _State, val: str | None, kb: int) -> None:
    if val is None:
        raise _Bad("needs a value")
    if val.startswith("-"):
        raise _Bad("must not be negative")
    parts = _parts(val)
    if len(parts) > 2:
        raise _Bad("takes a time or a range LOW-HIGH")
    lo, hi = st.v["startdelay"]
    if parts[0][0]:
        lo = _time_us(parts[0][0], True)
    if len(parts) == 1:
        hi = lo
    elif parts[1][0]:
        hi = _time_us(parts[1][0], True)
    if hi < lo:
        raise _Bad("a range is LOW-HIGH (fio would draw between them the wrong way round)")
    st.v["startdelay"] = (lo, hi)


def _simple(key: str, conv: Callable[[str | None, int], object]) -> Callable[[_State, str | None, int], None]:
    def handler(st: _State, val: str | None, kb: int) -> None:
        st.v[key] = conv(val, kb)
    return handler


def _need(val: str | None) -> str:
    if val is None:
        raise _Bad("needs a value")
    return val


def _c_int(lo: int = 0, hi: int = _U32) -> Callable[[str | None, int], int]:
    return lambda val, kb: _int(_one(_need(val)), kb, lo, hi)


def _c_time(default_s: bool, hi: int = _U64) -> Callable[[str | None, int], int]:
    return lambda val, kb: _time_us(_one(_need(val)), default_s, hi)


def _c_tri(key: str, parse: Callable[[str, int], int]) -> Callable[[_State, str | None, int], None]:
    def handler(st: _State, val: str | None, kb: int) -> None:
        st.v[key] = _tri(st.v[key], _need(val), lambda p: parse(p, kb))
    return handler


def _c_bool(bare_ok: bool) -> Callable[[str | None, int], bool]:
    return lambda val, kb: _bool(None if val is None else _one(val), bare_ok=bare_ok)


def _c_enum(values: Sequence[str]) -> Callable[[str | None, int], str]:
    def conv(val: str | None, kb: int) -> str:
        val = _need(val)
        if val not in values:
            near = _closest(val, values)
            raise _Bad(f"{val!r} is not one of {', '.join(values)}" + (f"; did you mean {near}?" if near else ""))
        return val
    return conv


def _c_name(val: str | None, kb: int) -> str:
    val = _need(val)
    if val == "":
        raise _Bad("needs a value")
    return val


def _h_rwmix(read: bool) -> Callable[[_State, str | None, int], None]:
    def handler(st: _State, val: str | None, kb: int) -> None:
        v = _int(_one(_need(val)), kb, 0, 100)
        st.v["rwmix_read"] = v if read else 100 - v     # fio: the last of the two wins
    return handler


def _h_kb_base(st: _State, val: str | None, kb: int) -> None:
    st.v["kb_base"] = int(_c_enum(("1024", "1000"))(val, kb))


#: The fio release that brought each data placement option (by the name written) [version].
DP_OPTION_FIO = {"fdp": "3.34", "fdp_pli": "3.34", "fdp_pli_select": "3.36", "dataplacement": "3.38",
                 "plids": "3.38", "plid_select": "3.38", "dp_scheme": "3.38"}
#: fio's limits: placement ids a job may list (FIO_MAX_DP_IDS), scheme entries it reads
#: (DP_MAX_SCHEME_ENTRIES; later lines are ignored), the largest id (a 16-bit dspec).
_DP_MAX_IDS = 128
_DP_MAX_SCHEME_ENTRIES = 32
_DP_MAX_ID = 0xFFFF


def _h_fdp(st: _State, val: str | None, kb: int) -> None:
    st.v["dataplacement"] = "fdp" if _c_bool(False)(val, kb) else "none"


def _h_dataplacement(st: _State, val: str | None, kb: int) -> None:
    v = _c_enum(("none", "fdp", "streams"))(val, kb)
    if v == "streams":
        raise _Bad("dataplacement=streams (NVMe write streams) is not modelled; the simulator models flexible "
                   "data placement: use dataplacement=fdp (or fdp=1)")
    st.v["dataplacement"] = v


def _h_plids(st: _State, val: str | None, kb: int) -> None:
    """fio's list of placement id indices: values and ranges, ``0,2-4,7``."""
    ids: list[int] = []
    for part in _need(val).split(","):
        lo, dash, hi = part.partition("-")
        a = _int(lo.strip(), kb, 0, _DP_MAX_ID)
        b = _int(hi.strip(), kb, 0, _DP_MAX_ID) if dash else a
        if b < a:
            raise _Bad(f"{part!r}: a range runs from low to high (fio would list no id)")
        ids += range(a, b + 1)
    if len(ids) > _DP_MAX_IDS:
        raise _Bad(f"{len(ids)} placement ids; fio takes at most {_DP_MAX_IDS}")
    st.v["plids"] = tuple(ids)


def _h_plid_select(st: _State, val: str | None, kb: int) -> None:
    st.v["plid_select"] = _c_enum(("random", "roundrobin", "scheme"))(val, kb)


def _h_dp_scheme(st: _State, val: str | None, kb: int) -> None:
    st.v["dp_scheme"] = _need(val)


def _read_dp_scheme(path: str, where: Where) -> tuple[tuple[int, int, int], ...]:
    """fio's ``dp_scheme`` file: lines ``start, end, id`` (byte offsets, a placement id
    index), at most 32 (fio ignores the rest: refused here); relative to the current
    directory as fio opens it, else to the job file's."""
    candidates = [Path(path)] + ([Path(where.file).parent / path] if not Path(path).is_absolute() else [])
    found = next((c for c in candidates if c.is_file()), None)
    if found is None:
        raise WorkloadError(f"{where}: dp_scheme={path}: no such file (looked in the current directory and beside "
                            "the job file); write it as lines 'start_offset, end_offset, placement_id'")
    entries = []
    for n, line in enumerate(found.read_text().splitlines(), 1):
        if not line.strip():
            continue
        parts = [x.strip() for x in line.split(",")]
        if len(parts) != 3 or not all(x.isdigit() for x in parts):
            raise WorkloadError(f"{found}:{n}: {line.strip()!r} is not 'start_offset, end_offset, placement_id' "
                                "(whole numbers; fio stops reading the scheme at such a line)")
        start, end, pid = map(int, parts)
        if start >= end or pid > _DP_MAX_ID:
            raise WorkloadError(f"{found}:{n}: {line.strip()!r}: the range must be start < end and the id at most "
                                f"{_DP_MAX_ID}")
        entries.append((start, end, pid))
    if not entries or len(entries) > _DP_MAX_SCHEME_ENTRIES:
        raise WorkloadError(f"{found}: {len(entries)} scheme entries; fio applies 1 to {_DP_MAX_SCHEME_ENTRIES} "
                            "(it ignores the lines after the 32nd)")
    return tuple(entries)


#: fio's limit of write target zones (ZBD_MAX_WRITE_ZONES).
_ZBD_MAX_WRITE_ZONES = 4096


def _h_zonemode(st: _State, val: str | None, kb: int) -> None:
    v = _c_enum(("none", "strided", "zbd"))(val, kb)
    if v == "strided":
        raise _Bad(_REFUSALS["zones"])
    st.v["zonemode"] = v


def _c_fraction(val: str | None, kb: int) -> float:
    f = _float(_one(_need(val)))
    if not 0.0 <= f <= 1.0:
        raise _Bad(f"{val!r} is not a fraction between 0 and 1 (fio refuses it)")
    return f


def _c_bytes(val: str | None, kb: int) -> int:
    return _bytes(_one(_need(val)), kb)


_PATTERN: dict[str, Callable[[_State, str | None, int], None]] = {
    "zonemode": _h_zonemode,
    "zonesize": _simple("zonesize", _c_bytes),
    "zonecapacity": _simple("zonecapacity", _c_bytes),
    "zonerange": _simple("zonerange", _c_bytes),
    "read_beyond_wp": _simple("read_beyond_wp", _c_bool(True)),
    "max_open_zones": _simple("max_open_zones", _c_int(0, _ZBD_MAX_WRITE_ZONES)),
    "job_max_open_zones": _simple("job_max_open_zones", _c_int(0, _ZBD_MAX_WRITE_ZONES)),
    "ignore_zone_limits": _simple("ignore_zone_limits", _c_bool(True)),
    "zone_reset_threshold": _simple("zone_reset_threshold", _c_fraction),
    "zone_reset_frequency": _simple("zone_reset_frequency", _c_fraction),
    "verify": _simple("verify", _c_enum(VERIFY_CHECKSUMS)),
    "flow": _simple("flow", _c_int(0, FLOW_MAX_WEIGHT)),
    "flow_id": _simple("flow_id", _c_int()),
    "flow_sleep": _simple("flow_sleep", _c_int()),
    "do_verify": _simple("do_verify", _c_bool(True)),
    "name": _simple("name", _c_name),
    "wait_for": _simple("wait_for", _c_name),
    "rw": _h_rw,
    "iodepth": _simple("iodepth", _c_int(1, MAX_IODEPTH)),
    "size": _h_size_like("size", "size_pct", zero_pct_ok=False),
    "io_size": _h_size_like("io_size", "io_size_pct", zero_pct_ok=False),
    "offset": _h_size_like("offset", "offset_pct", zero_pct_ok=True),
    "offset_increment": _h_size_like("offset_increment", "offset_increment_pct", zero_pct_ok=True),
    "fill_device": _simple("fill_device", _c_bool(False)),
    "offset_align": _simple("offset_align", _c_int()),
    "number_ios": _simple("number_ios", lambda val, kb: _bytes(_one(_need(val)), kb)),
    "bs": _c_tri("bs", lambda p, kb: _block(p, kb)),
    "ba": _c_tri("ba", lambda p, kb: _block(p, kb)),
    "bsrange": _h_bsrange,
    "bssplit": _h_bssplit,
    "bs_unaligned": _simple("bs_unaligned", _c_bool(True)),
    "bs_is_seq_rand": _simple("bs_is_seq_rand", _c_bool(False)),
    "randrepeat": _simple("randrepeat", _c_bool(False)),
    "randseed": _simple("randseed", lambda val, kb: _bytes(_one(_need(val)), kb)),
    "norandommap": _simple("norandommap", _c_bool(True)),
    "random_distribution": _h_random_distribution,
    "percentage_random": _c_tri("percentage_random", lambda p, kb: _int(p, kb, 0, 100)),
    "fsync": _simple("fsync", _c_int()),
    "fdatasync": _simple("fdatasync", _c_int()),
    "loops": _simple("loops", _c_int()),
    "numjobs": _simple("numjobs", _c_int(1, MAX_JOBS)),
    "startdelay": _h_startdelay,
    "runtime": _simple("runtime", _c_time(True)),
    "time_based": _simple("time_based", _c_bool(True)),
    "ramp_time": _simple("ramp_time", _c_time(True)),
    "rwmixread": _h_rwmix(True),
    "rwmixwrite": _h_rwmix(False),
    "thinktime": _simple("thinktime", _c_time(False, _U32)),
    "thinktime_spin": _simple("thinktime_spin", _c_time(False, _U32)),
    "thinktime_blocks": _simple("thinktime_blocks", _c_int()),
    "thinktime_blocks_type": _simple("thinktime_blocks_type", _c_enum(("complete", "issue"))),
    "thinktime_iotime": _simple("thinktime_iotime", _c_time(True, _U32)),
    "rate": _c_tri("rate", lambda p, kb: _bytes(p, kb)),
    "rate_iops": _c_tri("rate_iops", lambda p, kb: _int(p, kb)),
    "rate_process": _simple("rate_process", _c_enum(("linear", "poisson"))),
    "rate_cycle": _simple("rate_cycle", _c_int()),
    "rate_ignore_thinktime": _simple("rate_ignore_thinktime", _c_bool(False)),
    "end_fsync": _simple("end_fsync", _c_bool(False)),
    "fsync_on_close": _simple("fsync_on_close", _c_bool(False)),
    "exitall": _simple("exitall", lambda val, kb: _exitall(val)),
    "exit_what": _simple("exit_what", _c_enum(("group", "stonewall", "all"))),
    "stonewall": _simple("stonewall", _c_bool(True)),
    "new_group": _simple("new_group", _c_bool(True)),
    "zero_buffers": _simple("zero_buffers", _c_bool(True)),
    "refill_buffers": _simple("refill_buffers", _c_bool(True)),
    "buffer_compress_percentage": _simple("buffer_compress_percentage", _c_int(0, 100)),
    "buffer_compress_chunk": _simple("buffer_compress_chunk", _c_int()),
    "kb_base": _h_kb_base,
    "fdp": _h_fdp,
    "dataplacement": _h_dataplacement,
    "plids": _h_plids,
    "plid_select": _h_plid_select,
    "dp_scheme": _h_dp_scheme,
}


def _exitall(val: str | None) -> bool:
    if val is not None and _bool(_one(val), bare_ok=True) is False:
        raise _Bad("fio 3.33 turns exitall on even with exitall=0 (its callback ignores the value); "
                   "remove the line")
    return True


def _block(text: str, kb: int) -> int:
    """A block size or alignment (fio's minval 1), at most :data:`~ssdlab.units.MAX_BS_BYTES`."""
    v = _bytes(text, kb)
    if v < 1:
        raise _Bad("block sizes must be at least 1 byte")
    if v > MAX_BS_BYTES:
        raise _Bad(f"block sizes are at most {_fmt_size(MAX_BS_BYTES)} ({MAX_BS_BYTES} bytes) in ssdlab: "
                   f"fio keeps iodepth buffers of the largest block size in memory")
    return v


# ---------------------------------------------------------------------------- class (b)/(c) checks
def _check_value(opt: _Opt, val: str | None, kb: int) -> object:
    """Checks a host or refused option's value as fio would; returns it parsed."""
    t = opt.type
    if t in ("set", "bool"):
        return _bool(None if val is None else _one(val), bare_ok=t == "set")
    if t == "text":
        return val
    val = _need(val)
    if t == "int":
        return _int(_one(val), kb)
    if t == "sint":
        if val.startswith("-"):
            return -_int(_one(val[1:]), kb)
        return _int(_one(val), kb)
    if t == "size":
        return _bytes(_one(val), kb)
    if t == "size3":
        return _tri((0, 0, 0), val, lambda p: _bytes(p, kb))
    if t == "int3":
        return _tri((0, 0, 0), val, lambda p: _int(p, kb))
    if t == "time_s":
        return _time_us(_one(val), True)
    if t == "time_us":
        return _time_us(_one(val), False)
    if t == "time3_us":
        return _tri((0, 0, 0), val, lambda p: _time_us(p, False))
    if t.startswith("enum:"):
        return _c_enum(t[5:].split("|"))(val, kb)
    if t == "floats":
        for p in val.split(":"):
            _float(p)
        return val
    if t == "cpus":
        if not re.fullmatch(r"[0-9,\-:]+", val):
            raise _Bad(f"{val!r} is not a CPU list (e.g. 0-3,8)")
        return val
    if t in ("str", "engine", "special"):
        if val == "":
            raise _Bad("needs a value")
        return val
    raise AssertionError(t)


def _at_default(opt: _Opt, parsed: object, kb: int) -> bool:
    if opt.default is None:
        return parsed is None or parsed == "" or parsed is False
    if opt.type in ("size3", "int3", "time3_us"):
        return parsed == (0, 0, 0)
    if opt.type in ("bool", "set"):
        return parsed is (opt.default == "1")
    if opt.type.startswith("enum:"):
        same = {"none": {"none", "0"}, "0": {"0", "none"}}
        return parsed in same.get(opt.default, {opt.default})
    try:
        return parsed == _check_value(opt, opt.default, kb)
    except _Bad:
        return False


def _refuse(opt: _Opt, name: str) -> _Bad:
    return _Bad(f"{name} is not supported: {_REFUSALS[opt.detail]}")


def _apply(st: _State, item: _Item) -> None:
    """Applies one option to a job's (or fio's defaults') state, as fio would."""
    key, val = item.key, item.value
    if val is not None and val[:1].isspace():
        raise _fail(item, f"a value must follow '=' directly: fio reads {val!r} literally (a size "
                          f"' 4k' as 4 bytes, a name with the space); write {key}={val.strip()}")
    opt = _OPTIONS.get(key)
    kb = st.v["kb_base"]
    try:
        if opt is None:
            if key in _ENGINE_OPTIONS:
                st.engine_opts[key] = item
                return
            raise _fail(item, _unknown(key))
        canon = opt.name
        st.lines[canon] = item.where
        if opt.cls == "pattern":
            _PATTERN[canon](st, val, kb)
            st.given.add(canon)
            if key in DP_OPTION_FIO:
                st.v["dp_names"] = st.v["dp_names"] | {key}
            return
        if canon == "filename":
            _check_filename(val)
        if canon == "ioengine":
            st.v["ioengine"] = _check_engine(_need(val))
        parsed = _check_value(opt, val, kb)
        if canon in ("direct", "buffered"):
            st.v["direct"] = bool(parsed) == (canon == "direct")
        if opt.cls == "host":
            reason = _REASONS[opt.detail]
        elif opt.cls == "soft":
            reason = _REASONS["soft"]
        elif opt.cls == "needs":
            reason = f"no effect unless {opt.detail} is set, which ssdlab does not model"
        elif opt.cls == "refuse":
            if opt.detail == "deprecated" or not _at_default(opt, parsed, kb):
                raise _refuse(opt, key)
            reason = _REASONS["default"]
        else:
            raise AssertionError(opt.cls)
        st.host[canon] = HostOption(key, val, reason, item.where)
        st.given.add(canon)
    except _Bad as e:
        raise _fail(item, str(e)) from None


#: Options of fio releases after 3.33 (which refuses them): the release and what they do.
_NEWER_FIO = {
    "steadystate_check_interval": ("3.35", "how often a steady-state end condition is checked"),
    "priohint": ("3.36", "I/O priority hints"),
    "job_start_clock_id": ("3.36", "the clock of the job start time"),
    "num_range": ("3.37", "trims of several ranges per command"),
    "thinkcycles": ("3.37", "CPU cycles spent between IOs"),
    "log_window_value": ("3.37", "what a log window records"),
    "verify_write_sequence": ("3.38", "the write sequence check of verify"),
    "log_issue_time": ("3.38", "issue times in the latency logs"),
}


def _unknown(key: str) -> str:
    if key in _NEWER_FIO:
        version, what = _NEWER_FIO[key]
        return (f"{key} ({what}) is an option of fio {version} and later; ssdlab follows fio 3.33, which "
                "refuses it: remove it")
    if key.startswith("$"):
        return (f"{key!r}: fio expands environment variables only as ${{NAME}}, and host-dependent "
                "keywords ($pagesize, $mb_memory, $ncpus) are not supported; write the value")
    near = _closest(key)
    return (f"unknown fio option {key!r}" + (f"; did you mean {near}?" if near else "")
            + " (fio's options: fio --cmdhelp=all)")


def _check_filename(val: str | None) -> None:
    val = _need(val)
    if val == "":
        raise _Bad("needs a value")
    unescaped = re.sub(r"\\:", "", val)
    if ":" in unescaped:
        raise _Bad(f"names several files ({val!r}; fio splits at ':'); {_REFUSALS['files']}")


def _check_engine(val: str) -> str:
    """The engine's name; refuses engines that do no block I/O."""
    name = val.split(":")[0]
    if name == "external":
        raise _Bad("an external engine plugin: what it does to the drive is unknown; "
                   + _REFUSALS["engine"])
    if name in _OTHER_ENGINES:
        raise _Bad(f"ioengine={name}: {_REFUSALS['engine']}")
    if name not in _BLOCK_ENGINES:
        near = _closest(name, list(_BLOCK_ENGINES) + list(_OTHER_ENGINES))
        raise _Bad(f"unknown I/O engine {name!r}" + (f"; did you mean {near}?" if near else ""))
    return name


def _check_engine_options(st: _State) -> None:
    """fio parses engine options once the engine is known (fio_options_parse, second pass)."""
    engine = st.v["ioengine"]
    for key, item in st.engine_opts.items():
        owners = sorted(e for e, opts in {**_BLOCK_ENGINES, **_OTHER_ENGINES}.items() if key in opts)
        if key not in _BLOCK_ENGINES.get(engine, ()):
            raise _fail(item, f"{key} is an option of the {', '.join(owners)} engine(s), not of "
                              f"ioengine={engine}; set ioengine or remove it")
        if key in _ENGINE_REFUSED and item.value != _ENGINE_REFUSED[key]:
            raise _fail(item, f"{key} is not supported: {_REFUSALS['fua']}")
        if key == "write_mode" and item.value != "write":
            if item.value != "zone_append":
                raise _fail(item, f"write_mode={item.value} (write commands other than writes and zone appends) is "
                                  "not modelled; use write_mode=write or zone_append, or run the job with fio")
            if st.v["zonemode"] != "zbd":
                raise _fail(item, "write_mode=zone_append needs zonemode=zbd (fio refuses it without)")
            st.v["write_mode"] = "zone_append"
            st.given.add("write_mode")
            st.lines["write_mode"] = item.where
            continue
        reason = _REASONS["default"] if key in _ENGINE_REFUSED else _REASONS["submit"]
        st.host[key] = HostOption(key, item.value, reason, item.where)


# ============================================================================ job files
_KEYWORDS = ("$pagesize", "$mb_memory", "$ncpus")


def _expand(text: str, environ: Mapping[str, str]) -> tuple[str, tuple[str, ...]]:
    """fio's ${VAR} substitution (an unset variable becomes nothing); returns the text and
    the names of unset variables."""
    unset: list[str] = []

    def sub(m: re.Match) -> str:
        name = m.group(1)
        if name not in environ:
            unset.append(name)
            return ""
        return environ[name]

    return re.sub(r"\$\{([^}]+)\}", sub, text), tuple(unset)


def _split_item(raw: str, where: Where, environ: Mapping[str, str]) -> _Item:
    text, unset = _expand(raw, environ)
    for kw in _KEYWORDS:
        if kw in text:
            raise WorkloadError(f"{where}: {raw}: {kw} is the host's value in fio; ssdlab does not "
                                "use host values: write the number")
    key, eq, val = text.partition("=")
    key = key.rstrip()
    return _Item(key, val if eq else None, where, raw, unset)


def _strip_line(line: str) -> str:
    """fio's strip_blank_front + strip_blank_end: a comment starts at the first ';' or '#'."""
    line = line.lstrip()
    for c in ";#":
        i = line.find(c)
        if i >= 0:
            line = line[:i]
    return line.rstrip(" \t\r\n\v\f\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0e\x0f")


@dataclass
class _Section:
    name: str
    where: Where
    items: list[_Item]


def _read_sections(path: str, text: str, environ: Mapping[str, str], sources: list[str]) -> list[_Section]:
    sections: list[_Section] = []
    current: _Section | None = None
    for lineno, line in enumerate(text.splitlines(), 1):
        p = _strip_line(line)
        if not p:
            continue
        where = Where(path, lineno)
        if p.startswith("["):
            if not p.endswith("]") or len(p) < 3:
                raise WorkloadError(f"{where}: {line.strip()}: a section header is [name] alone on its line")
            current = _Section(p[1:-1], where, [])
            sections.append(current)
            continue
        if current is None:
            raise WorkloadError(f"{where}: {line.strip()}: option outside of a section; put it under "
                                "[global] (for every job) or under a [job] section")
        if p.startswith("include"):
            current.items += _read_include(p, where, path, environ, sources, (path,))
            continue
        current.items.append(_split_item(p, where, environ))
    return sections


def _is_file(path: Path) -> bool:
    """Whether ``path`` names a regular file; False, not an error, for a name the system
    refuses (too long, a NUL byte)."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def _read_include(p: str, where: Where, parent: str, environ: Mapping[str, str], sources: list[str],
                  chain: tuple[str, ...]) -> list[_Item]:
    name = p[len("include") + 1:] if len(p) > len("include") else ""
    if not p.startswith("include ") or not name.strip():
        raise WorkloadError(f"{where}: {p}: write 'include FILE'")
    # fio: the name as given (relative to the current directory), else next to the including file
    target = Path(name)
    if not _is_file(target) and "/" in parent:
        target = Path(parent).parent / name
    if not _is_file(target):
        raise WorkloadError(f"{where}: {p}: cannot open {name!r} (looked in the current directory and "
                            f"next to {parent}); check the path")
    tpath = str(target)
    if os.path.realpath(tpath) in {os.path.realpath(c) for c in chain}:
        raise WorkloadError(f"{where}: {p}: {name!r} includes itself (through {' -> '.join(chain)}); "
                            "remove the loop")
    sources.append(tpath)
    items: list[_Item] = []
    try:
        text = target.read_text(errors="replace")
    except OSError as e:
        raise WorkloadError(f"{where}: {p}: cannot read {tpath}: {e.strerror or e}; check the file") from None
    for lineno, line in enumerate(text.splitlines(), 1):
        q = _strip_line(line)
        if not q:
            continue
        w = Where(tpath, lineno)
        if q.startswith("["):
            raise WorkloadError(f"{w}: {line.strip()}: an included file holds options only, no sections "
                                f"(included from {where})")
        if q.startswith("include"):
            items += _read_include(q, w, tpath, environ, sources, chain + (tpath,))
            continue
        items.append(_split_item(q, w, environ))
    return items


# ============================================================================ jobs and groups
@dataclass
class _Record:
    """A job as fio adds it (add_job): its options, names and place."""

    state: _State
    section: str
    jobname: str          # the name fio gives copies (section name in files, job name on the command line)
    where: Where


class _Builder:
    """Collects jobs in fio's order; fio's def_thread is ``defaults``."""

    def __init__(self, environ: Mapping[str, str] | None, device_zone_bytes: int = 0):
        self.environ = os.environ if environ is None else environ
        self.device_zone_bytes = device_zone_bytes
        self.defaults = _State()
        self.records: list[_Record] = []
        self.sources: list[str] = []
        self.program: list[HostOption] = []
        self.readonly: Where | None = None
        self.exitall = False            # fio's global exitall flag, whichever section set it

    def reset_defaults(self) -> None:
        self.exitall = self.exitall or self.defaults.v["exitall"]
        self.defaults = _State()

    def add_job(self, st: _State, section: str, jobname: str, where: Where) -> None:
        _check_engine_options(st)
        name = st.v["name"] or section
        if not section:
            raise WorkloadError(f"{where}: a job needs a name")
        if any(c in name for c in ";#\n[]"):
            raise WorkloadError(f"{where}: job name {name!r}: fio's job files cannot hold ';', '#', '[' or ']' "
                                "in a name; rename the job")
        st.v["name"] = name
        wf = st.v["wait_for"]
        if wf is not None:
            at = st.at("wait_for", default=where)
            if wf == jobname:
                raise WorkloadError(f"{at}: job {name!r}: a job cannot wait for itself (wait_for={wf}); remove it")
            n = sum(1 for r in self.records if r.state.v["name"] == wf)
            if n == 0:
                raise WorkloadError(f"{at}: job {name!r}: wait_for={wf}: no job of that name before it; "
                                    "fio waits only for jobs defined earlier")
            if n > 1:
                raise WorkloadError(f"{at}: job {name!r}: wait_for={wf}: several jobs have that name; "
                                    "rename them")
        self.records.append(_Record(st, section, jobname, where))

    def parse_section_items(self, st: _State, items: list[_Item], *, sort: bool) -> None:
        if sort:   # fio sorts a section's options by priority: kb_base and unit_base first
            items = sorted(items, key=lambda it: 0 if it.key in ("kb_base", "unit_base") else 1)
        for it in items:
            _apply(st, it)

    def add_file(self, path: str, text: str, index: int, sections: Sequence[str] | None) -> None:
        self.sources.append(path)
        stonewall = index > 0       # fio separates several job files by a stonewall
        for sec in _read_sections(path, text, self.environ, self.sources):
            is_global = sec.name.startswith("global")
            if not is_global and sections and sec.name not in sections:
                continue
            if is_global:
                self.parse_section_items(self.defaults, sec.items, sort=True)
                continue
            st = self.defaults.copy()
            st.v["name"] = None             # fio names the job after its section unless name= is given
            if stonewall:
                st.v["stonewall"] = True
                stonewall = False
            self.parse_section_items(st, sec.items, sort=True)
            self.add_job(st, sec.name, sec.name, sec.where)

    def workload(self) -> Workload:
        if not self.records:
            where = f"{self.sources[0]}: " if self.sources else ""
            raise WorkloadError(f"{where}no job defined (fio: 'No job(s) defined'): add a [job] section, "
                                "or --name=JOB with its options")
        groups: list[list[Job]] = []
        report, in_report, any_started, total_jobs = 0, 0, False, 0
        for rec in self.records:
            v = rec.state.v
            if (v["stonewall"] or v["new_group"]) and in_report:
                report, in_report = report + 1, 0
            if (v["stonewall"] and any_started) or not groups:
                groups.append([])
            if self.readonly is not None and v["rw"] not in ("read", "randread"):
                raise WorkloadError(f"{rec.where}: job {v['name']!r} writes or trims, but --readonly "
                                    f"({self.readonly}) forbids it, as in fio")
            n = v["numjobs"]
            total_jobs += n
            if total_jobs > MAX_JOBS:
                raise WorkloadError(f"{rec.where}: job {v['name']!r} brings the file to {total_jobs:,} jobs "
                                    f"(numjobs copies included); fio runs at most {MAX_JOBS:,}: use fewer jobs")
            for clone in [0, *range(n - 1, 0, -1)]:       # fio adds copies numjobs-1 .. 1
                groups[-1].append(_make_job(rec, clone, len(groups) - 1, report, self.device_zone_bytes))
                in_report += 1
            any_started = True
        exitall = self.defaults.v["exitall"] or any(r.state.v["exitall"] for r in self.records) or self.exitall
        return Workload(tuple(tuple(g) for g in groups), exitall, tuple(self.program), tuple(self.sources))


def _make_job(rec: _Record, clone: int, group: int, report: int, device_zone_bytes: int = 0) -> Job:
    """fio's fixup_options: the job's effective values (``device_zone_bytes``: the zone size
    of the drive the job runs on, 0 if unknown or not zoned)."""
    st, v = rec.state, rec.state.v
    where = rec.where
    name = v["name"] if clone == 0 else rec.jobname
    random = v["rw"] in _RANDOM_RW
    lo = tuple(v["min_bs"][d] or v["bs"][d] for d in range(3))
    hi = tuple(v["max_bs"][d] or v["bs"][d] for d in range(3))
    ba = tuple(lo[d] if (not v["ba"][d] or not random) else v["ba"][d] for d in range(3))
    dist = v["dist"]
    norandommap = v["norandommap"] or ba != lo or dist.kind != "random"
    zero, refill, compress = v["zero_buffers"], v["refill_buffers"], v["buffer_compress_percentage"]
    if compress == 100:
        zero, compress = True, 0
    elif compress and "refill_buffers" not in st.given:
        refill = True
    randseed = v["randseed"] if "randseed" in st.given else None
    randrepeat = v["randrepeat"] and randseed is None
    if v["time_based"] and not v["runtime"]:
        raise WorkloadError(f"{st.at('time_based', default=where)}: job {name!r}: time_based needs a runtime "
                            "(fio would drop time_based); add runtime=...")
    if any(v["rate"]) and any(v["rate_iops"]):
        raise WorkloadError(f"{st.at('rate', 'rate_iops', default=where)}: job {name!r}: rate and rate_iops are "
                            "mutually exclusive in fio; keep one")
    dp = _data_placement(st, name, where)
    zones = _zone_fields(st, name, where, device_zone_bytes)
    min_bs = min(lo)                                 # fio's td_min_bs
    if v["size"] and v["size"] < min_bs:
        raise WorkloadError(f"{st.at('size', default=where)}: job {name!r}: size={v['size']} is below the "
                            f"minimum block size {min_bs}; make size larger")
    return Job(
        name=name, section=rec.section, clone=clone, numjobs=v["numjobs"], group=group, report_group=report,
        wait_for=v["wait_for"], startdelay_us=v["startdelay"][0],
        startdelay_max_us=max(v["startdelay"][1], v["startdelay"][0]),
        exit_what=v["exit_what"],
        rw=v["rw"], rw_new_offset_every_ios=v["rw_seq_nr"], rw_skip_bytes=v["rw_seq_add"],
        rwmix_read_pct=v["rwmix_read"], bs_min_bytes=lo, bs_max_bytes=hi, bssplit=v["bssplit"],
        bs_unaligned=v["bs_unaligned"], bs_is_seq_rand=v["bs_is_seq_rand"], ba_bytes=ba,
        percentage_random_pct=v["percentage_random"], random_distribution=dist, norandommap=norandommap,
        randrepeat=randrepeat, randseed=randseed, iodepth=v["iodepth"],
        size_bytes=v["size"] or None, size_pct=v["size_pct"] or None, fill_device=v["fill_device"],
        offset_bytes=v["offset"], offset_pct=v["offset_pct"] or None, offset_align_bytes=v["offset_align"],
        offset_increment_bytes=v["offset_increment"], offset_increment_pct=v["offset_increment_pct"] or None,
        io_size_bytes=v["io_size"] or None, io_size_pct=v["io_size_pct"] or None, number_ios=v["number_ios"],
        loops=v["loops"] or 1, runtime_us=v["runtime"], time_based=v["time_based"], ramp_time_us=v["ramp_time"],
        thinktime_us=v["thinktime"], thinktime_spin_us=min(v["thinktime_spin"], v["thinktime"]),
        thinktime_blocks=v["thinktime_blocks"], thinktime_blocks_type=v["thinktime_blocks_type"],
        thinktime_iotime_us=v["thinktime_iotime"], rate_bytes_per_s=v["rate"], rate_iops=v["rate_iops"],
        rate_process=v["rate_process"], rate_cycle_ms=v["rate_cycle"],
        rate_ignore_thinktime=v["rate_ignore_thinktime"], buffer_compress_pct=compress,
        buffer_compress_chunk_bytes=v["buffer_compress_chunk"], zero_buffers=zero, refill_buffers=refill,
        fsync_every_writes=v["fsync"], fdatasync_every_writes=v["fdatasync"], end_fsync=v["end_fsync"],
        fsync_on_close=v["fsync_on_close"], where=where, option_where=dict(st.lines),
        host_options=tuple(sorted(st.host.values(), key=lambda o: o.name)),
        ioengine=v["ioengine"], direct=v["direct"], **dp, **zones,
        verify=v["verify"] if v["verify"] != "0" and v["do_verify"] else "none", write_mode=v["write_mode"],
        flow_weight=v["flow"], flow_id=v["flow_id"], flow_sleep_us=v["flow_sleep"],
    )


_ZONE_OPTIONS = ("zonesize", "zonecapacity", "zonerange", "read_beyond_wp", "max_open_zones", "job_max_open_zones",
                 "ignore_zone_limits", "zone_reset_threshold", "zone_reset_frequency")


def _zone_fields(st: _State, name: str, where: Where, device_zone_bytes: int = 0) -> dict:
    """The job's zone fields (:attr:`Job.zonemode`...), and its sizes in zones (fio's ``z``
    unit: ``size=8z``) in bytes. The zone options need zonemode=zbd (refused otherwise),
    sizes in zones a ``zonesize`` or a zoned drive's ``device_zone_bytes`` (fio takes the
    device's); ``zonerange`` is ignored by fio in this mode (refused unless it equals
    ``zonesize``)."""
    v = st.v
    sized = [k for k in ("size", "io_size", "offset", "offset_increment") if isinstance(v[k], _Zones)]
    given = [k for k in _ZONE_OPTIONS if k in st.given]
    if v["zonemode"] != "zbd":
        if given or sized:
            raise WorkloadError(f"{st.at(*(given or sized), default=where)}: job {name!r}: "
                                f"{', '.join(given or [f'{k} in zones' for k in sized])} apply only with zonemode=zbd; add "
                                "zonemode=zbd or remove them")
        return {}
    zone_bytes = v["zonesize"] or device_zone_bytes
    if sized and not zone_bytes:
        raise WorkloadError(f"{st.at(*sized, default=where)}: job {name!r}: a size in zones ({sized[0]}=...z) needs "
                            "zonesize, or a zoned drive to take the zone size from (the target has no zones, or "
                            "none yet: --print-job reads the job without one); add zonesize=")
    for k in sized:
        v[k] = v[k].n * zone_bytes
    if v["zonerange"] and v["zonerange"] != v["zonesize"]:
        raise WorkloadError(f"{st.at('zonerange', default=where)}: job {name!r}: fio ignores zonerange with "
                            "zonemode=zbd (the zone size is zonesize, or the device's); remove it")
    if v["zonecapacity"] and v["zonesize"] and v["zonecapacity"] > v["zonesize"]:
        raise WorkloadError(f"{st.at('zonecapacity', default=where)}: job {name!r}: zonecapacity is more than "
                            "zonesize; fio refuses it")
    return {k: v[k] for k in ("zonemode", "zonesize", "zonecapacity", "max_open_zones", "job_max_open_zones",
                              "zone_reset_threshold", "zone_reset_frequency", "read_beyond_wp", "ignore_zone_limits")}


def _data_placement(st: _State, name: str, where: Where) -> dict:
    """The job's data placement fields (:attr:`Job.dataplacement`...), as fio applies them:
    the id options need ``fdp=1`` or ``dataplacement=fdp`` (fio ignores them otherwise: refused
    here), and ``plid_select=scheme`` a ``dp_scheme`` file (fio then ignores ``plids``)."""
    v = st.v
    ids_given = [n for n in ("plids", "plid_select", "dp_scheme") if n in st.given]
    if v["dataplacement"] == "none":
        if ids_given:
            raise WorkloadError(f"{st.at(*ids_given, default=where)}: job {name!r}: {', '.join(ids_given)} "
                                "apply only with fdp=1 or dataplacement=fdp (fio ignores them otherwise); add fdp=1 "
                                "or remove them")
        return {}
    scheme: tuple[tuple[int, int, int], ...] = ()
    scheme_file = None
    if v["plid_select"] == "scheme":
        if v["dp_scheme"] is None:
            raise WorkloadError(f"{st.at('plid_select', default=where)}: job {name!r}: plid_select=scheme needs a "
                                "dp_scheme file (fio would fail to open it); add dp_scheme=FILE")
        at = st.at("dp_scheme", default=where)
        scheme = _read_dp_scheme(v["dp_scheme"], at)
        scheme_file = v["dp_scheme"]
    elif v["dp_scheme"] is not None:
        raise WorkloadError(f"{st.at('dp_scheme', default=where)}: job {name!r}: dp_scheme applies only with "
                            "plid_select=scheme (fio ignores it otherwise); add plid_select=scheme or remove it")
    names = set(v["dp_names"]) | ({"plid_select"} if v["plid_select"] == "scheme" else set())
    version = max((DP_OPTION_FIO[n] for n in names), key=lambda x: tuple(map(int, x.split("."))), default="")
    return {"dataplacement": "fdp", "plids": v["plids"], "plid_select": v["plid_select"], "dp_scheme": scheme,
            "dp_scheme_file": scheme_file, "dp_fio_version": version}


# ============================================================================ entry points
def parse_job_text(text: str, *, source: str = "<job file>", environ: Mapping[str, str] | None = None,
                   sections: Sequence[str] | None = None, device_zone_bytes: int = 0) -> Workload:
    """Parses the text of a fio job file. ``source`` names it in messages (and is the
    directory relative includes fall back to). ``environ`` replaces ``os.environ`` for
    ``${VAR}``; ``sections`` keeps only those job sections (fio's ``--section``);
    ``device_zone_bytes`` is the zone size of the drive it will run on (sizes in zones
    without ``zonesize`` take it, as fio takes the device's), 0 if none."""
    b = _Builder(environ, device_zone_bytes)
    b.add_file(source, text, 0, sections)
    return b.workload()


def parse_job_file(path: str | os.PathLike, *, environ: Mapping[str, str] | None = None,
                   sections: Sequence[str] | None = None, device_zone_bytes: int = 0) -> Workload:
    """Parses a fio job file (see :func:`parse_job_text`)."""
    p = str(path)
    try:
        text = Path(p).read_text(errors="replace")
    except OSError as e:
        raise WorkloadError(f"{p}: cannot read the job file ({e.strerror}); check the path") from None
    return parse_job_text(text, source=p, environ=environ, sections=sections, device_zone_bytes=device_zone_bytes)


def parse_command_line(args: Sequence[str], *, environ: Mapping[str, str] | None = None) -> Workload:
    """Parses fio's command line (without the program name): job options as ``--name=value``
    or ``--name value`` (``-name=value`` too), jobs started by ``--name=JOB``, options before
    the first ``--name`` (or after ``--name=global``) as defaults, and job files, read after
    the command-line jobs with the command line's defaults for the first file, as fio does.
    Values are taken as given: fio expands ``${VAR}`` in job files only (on its command line
    the shell does). Options are applied in order (``kb_base`` is not moved first, as in
    fio). fio's own options (``--output``, ``--eta``...) are listed in
    :attr:`Workload.program_options`; ``--section`` and ``--readonly`` act as in fio.
    Abbreviated option names are refused."""
    b = _Builder(environ)
    files: list[str] = []
    sections: list[str] = []
    st: _State | None = None              # the job being built; b.defaults while global
    cur_section, cur_where = "", Where(CMDLINE, 0)
    i, only_files = 0, False

    def finish() -> None:
        nonlocal st
        if st is not None and st is not b.defaults:
            b.add_job(st, cur_section, st.v["name"] or "fio", cur_where)
        st = None

    while i < len(args):
        arg = args[i]
        where = Where(CMDLINE, i + 1)
        i += 1
        if only_files or not arg.startswith("-") or arg == "-":
            files.append(arg)
            continue
        if arg == "--":
            only_files = True
            continue
        body = arg[2:] if arg.startswith("--") else arg[1:]
        key, eq, val = body.partition("=")
        value: str | None = val if eq else None
        opt = _OPTIONS.get(key)
        if opt is None and key not in _ENGINE_OPTIONS:
            if key in _PROGRAM_OPTIONS_OK or key in _PROGRAM_REQ_ARG:
                takes = _PROGRAM_OPTIONS_OK.get(key, _PROGRAM_REQ_ARG.get(key))
                if value is None and takes is True:
                    if i >= len(args):
                        raise WorkloadError(f"{where}: {arg}: needs a value")
                    value, i = args[i], i + 1
                if key == "section":
                    sections.append(value or "")
                elif key == "readonly":
                    b.readonly = where
                elif key in _PROGRAM_OPTIONS_REFUSED:
                    raise WorkloadError(f"{where}: {arg}: --{key} {_PROGRAM_OPTIONS_REFUSED[key]}; "
                                        "ssdlab takes jobs to run: remove it")
                else:
                    b.program.append(HostOption(key, value, "fio's own output and run-time settings", where))
                continue
            if key.startswith("$"):
                raise WorkloadError(f"{where}: {arg}: {_unknown(key)}")
            cands = [n for n in _ALL_NAMES if n.startswith(key)] if key else []
            if len(cands) == 1:                    # getopt_long_only takes unique abbreviations
                raise WorkloadError(f"{where}: {arg}: abbreviated option {key!r}: fio would take it for "
                                    f"{cands[0]}; write --{cands[0]}")
            raise WorkloadError(f"{where}: {arg}: {_unknown(key)}")
        bare_ok = opt is not None and opt.type == "set"
        if value is None and not bare_ok and opt is not None:
            if i >= len(args):
                raise WorkloadError(f"{where}: {arg}: needs a value (--{key}=VALUE)")
            value, i = args[i], i + 1
        item = _Item(key, value, where, arg)       # fio leaves ${VAR} on its command line to the shell
        if key == "name":
            finish()
            if (value or "").startswith("global"):
                st = b.defaults
            else:
                if sections and value not in sections:
                    raise WorkloadError(f"{where}: --section with jobs given on the command line is not "
                                        "supported (fio then gives the skipped job's options to the others); "
                                        "put the jobs in a job file")
                st = b.defaults.copy()
                cur_section, cur_where = value or "", where
        elif st is None:
            st = b.defaults
        _apply(st, item)
    finish()
    for n, path in enumerate(files):
        if n > 0:
            b.reset_defaults()            # fio refills its defaults for every job file after the first
        try:
            text = Path(path).read_text(errors="replace")
        except OSError as e:
            raise WorkloadError(f"{path}: cannot read the job file ({e.strerror}); check the path") from None
        b.add_file(path, text, n, (sections or None) if n == 0 else None)   # fio: --section, first file only
    return b.workload()


# ============================================================================ printing
_SIZE_UNITS = (("p", 1024 ** 5), ("t", 1024 ** 4), ("g", 1024 ** 3), ("m", 1024 ** 2), ("k", 1024))


def _fmt_size(n: int) -> str:
    """Bytes in fio's units under the default kb_base=1024 (4096 -> 4k)."""
    if n <= 0:
        return str(n) if n == 0 else "-" + _fmt_size(-n)
    for unit, mult in _SIZE_UNITS:
        if n % mult == 0:
            return f"{n // mult}{unit}"
    return str(n)


def _fmt_time(us: int) -> str:
    if us % 10 ** 6 == 0:
        return f"{us // 10 ** 6}s"
    if us % 1000 == 0:
        return f"{us // 1000}ms"
    return f"{us}us"


def _fmt_float(x: float | None) -> str:
    return repr(float(x or 0.0))


def _fmt_tri(t: Sequence, fmt: Callable[[int], str]) -> str:
    if t[0] == t[1] == t[2]:
        return fmt(t[0])
    return ",".join(fmt(x) for x in t)


def _job_lines(job: Job) -> list[str]:
    """The options of one job, canonical: every value of class (a) that differs from fio's
    default (rw, bs or bsrange and iodepth always), then the options not applicable."""
    out = [f"rw={job.rw}" + (f":{job.rw_new_offset_every_ios}" if job.random and job.rw_new_offset_every_ios != 1
                             else f":{_fmt_size(job.rw_skip_bytes)}" if not job.random and job.rw_skip_bytes
                             else "")]
    if job.rw in ("rw", "randrw") or job.rwmix_read_pct != 50:
        out.append(f"rwmixread={job.rwmix_read_pct}")
    if any(job.bssplit):
        parts = [":".join(f"{_fmt_size(s.bs_bytes)}/{s.pct}" for s in d) for d in job.bssplit]
        out.append("bssplit=" + (parts[0] if parts[0] == parts[1] == parts[2] else ",".join(parts)))
    if any(job.bssplit) or job.bs_min_bytes != job.bs_max_bytes:
        rng = [f"{_fmt_size(a)}-{_fmt_size(b)}" for a, b in zip(job.bs_min_bytes, job.bs_max_bytes)]
        out.append("bsrange=" + (rng[0] if rng[0] == rng[1] == rng[2] else ",".join(rng)))
    else:
        out.append("bs=" + _fmt_tri(job.bs_min_bytes, _fmt_size))
    if job.random and job.ba_bytes != job.bs_min_bytes:
        out.append("ba=" + _fmt_tri(job.ba_bytes, _fmt_size))
    flags = [("bs_unaligned", job.bs_unaligned), ("bs_is_seq_rand", job.bs_is_seq_rand)]
    out += [f"{k}=1" for k, on in flags if on]
    if job.percentage_random_pct != (100, 100, 100):
        out.append("percentage_random=" + _fmt_tri(job.percentage_random_pct, str))
    if job.random_distribution.kind != "random":
        out.append("random_distribution=" + job.random_distribution.option_value())
    if job.norandommap:
        out.append("norandommap=1")
    if job.randseed is not None:
        out.append(f"randseed={job.randseed}")
    elif not job.randrepeat:
        out.append("randrepeat=0")
    out.append(f"iodepth={job.iodepth}")
    out.append(f"; runs as: ioengine={job.ioengine}, {job.queue_depth} IO{'s' if job.queue_depth > 1 else ''} "
               f"outstanding" + (f" (iodepth={job.iodepth} has no effect with a synchronous engine)"
                                 if job.queue_depth != job.iodepth else "")
               + (", direct=1" if job.direct else ", direct=0: through the host's page cache on a real target"))
    if job.size_pct is not None:
        out.append(f"size={job.size_pct}%")
    elif job.size_bytes is not None:
        out.append(f"size={_fmt_size(job.size_bytes)}")
    if job.fill_device:
        out.append("fill_device=1")
    if job.offset_pct is not None:
        out.append(f"offset={job.offset_pct}%")
    elif job.offset_bytes:
        out.append(f"offset={_fmt_size(job.offset_bytes)}")
    if job.offset_align_bytes:
        out.append(f"offset_align={_fmt_size(job.offset_align_bytes)}")
    if job.offset_increment_pct is not None:
        out.append(f"offset_increment={job.offset_increment_pct}%")
    elif job.offset_increment_bytes:
        out.append(f"offset_increment={_fmt_size(job.offset_increment_bytes)}")
    if job.io_size_pct is not None:
        out.append(f"io_size={job.io_size_pct}%")
    elif job.io_size_bytes is not None:
        out.append(f"io_size={_fmt_size(job.io_size_bytes)}")
    if job.number_ios:
        out.append(f"number_ios={job.number_ios}")
    if job.loops != 1:
        out.append(f"loops={job.loops}")
    if job.runtime_us:
        out.append(f"runtime={_fmt_time(job.runtime_us)}")
    if job.time_based:
        out.append("time_based=1")
    if job.ramp_time_us:
        out.append(f"ramp_time={_fmt_time(job.ramp_time_us)}")
    if job.startdelay_us or job.startdelay_max_us:
        out.append(f"startdelay={_fmt_time(job.startdelay_us)}" + (
            f"-{_fmt_time(job.startdelay_max_us)}" if job.startdelay_max_us != job.startdelay_us else ""))
    if job.thinktime_us:
        out.append(f"thinktime={_fmt_time(job.thinktime_us)}")
    if job.thinktime_spin_us:
        out.append(f"thinktime_spin={_fmt_time(job.thinktime_spin_us)}")
    if job.thinktime_blocks != 1:
        out.append(f"thinktime_blocks={job.thinktime_blocks}")
    if job.thinktime_blocks_type != "complete":
        out.append(f"thinktime_blocks_type={job.thinktime_blocks_type}")
    if job.thinktime_iotime_us:
        out.append(f"thinktime_iotime={_fmt_time(job.thinktime_iotime_us)}")
    if any(job.rate_bytes_per_s):
        out.append("rate=" + _fmt_tri(job.rate_bytes_per_s, _fmt_size))
    if any(job.rate_iops):
        out.append("rate_iops=" + _fmt_tri(job.rate_iops, str))
    if job.rate_process != "linear":
        out.append(f"rate_process={job.rate_process}")
    if job.rate_cycle_ms != 1000:
        out.append(f"rate_cycle={job.rate_cycle_ms}")
    if job.rate_ignore_thinktime:
        out.append("rate_ignore_thinktime=1")
    if job.buffer_compress_pct:
        out.append(f"buffer_compress_percentage={job.buffer_compress_pct}")
    if job.buffer_compress_chunk_bytes != 512:
        out.append(f"buffer_compress_chunk={_fmt_size(job.buffer_compress_chunk_bytes)}")
    if job.zero_buffers:
        out.append("zero_buffers=1")
    if job.refill_buffers or job.buffer_compress_pct:   # fio turns refill on for compression unless given
        out.append(f"refill_buffers={int(job.refill_buffers)}")
    for key, n in (("fsync", job.fsync_every_writes), ("fdatasync", job.fdatasync_every_writes)):
        if n:
            out.append(f"{key}={n}")
    for key, on in (("end_fsync", job.end_fsync), ("fsync_on_close", job.fsync_on_close)):
        if on:
            out.append(f"{key}=1")
    out += _dp_lines(job)
    out += _zone_lines(job)
    if job.verify != "none":
        out.append(f"verify={job.verify}")
    if job.write_mode != "write":
        out.append(f"write_mode={job.write_mode}")
    if job.flow_weight:
        out.append(f"flow={job.flow_weight}")
        out += [f"{k}={v}" for k, v in (("flow_id", job.flow_id), ("flow_sleep", job.flow_sleep_us)) if v]
    if job.exit_what != "group":
        out.append(f"exit_what={job.exit_what}")
    if job.wait_for is not None:
        out.append(f"wait_for={job.wait_for}")
    if job.host_options:
        out.append("; not applicable to the simulator (accepted as fio would):")
        out += [o.text() for o in job.host_options]
    return out


def _zone_lines(job: Job) -> list[str]:
    """A job's zone options (zonemode=zbd and those set)."""
    if job.zonemode != "zbd":
        return []
    out = ["zonemode=zbd"]
    for key in ("zonesize", "zonecapacity", "max_open_zones", "job_max_open_zones"):
        if getattr(job, key):
            out.append(f"{key}={getattr(job, key)}")
    for key in ("zone_reset_threshold", "zone_reset_frequency"):
        if getattr(job, key):
            out.append(f"{key}={getattr(job, key):g}")
    for key in ("read_beyond_wp", "ignore_zone_limits"):
        if getattr(job, key):
            out.append(f"{key}=1")
    return out


def _dp_lines(job: Job) -> list[str]:
    """A job's data placement options, in the names of the fio release they need (fio 3.34's
    ``fdp``/``fdp_pli``, 3.36's ``fdp_pli_select``, 3.38's ``dataplacement``, ``plids``,
    ``plid_select``, ``dp_scheme``)."""
    if job.dataplacement == "none":
        return []
    new = job.dp_fio_version == "3.38"
    out = ["dataplacement=fdp" if new else "fdp=1"]
    if job.plids:
        out.append(("plids=" if new else "fdp_pli=") + ",".join(map(str, job.plids)))
    if job.plid_select != "roundrobin":
        out.append(("plid_select=" if new else "fdp_pli_select=") + job.plid_select)
    if job.dp_scheme_file is not None:
        out.append(f"dp_scheme={job.dp_scheme_file}")
    return out


def format_job_file(workload: Workload) -> str:
    """The workload as a canonical fio job file: one section per job (numjobs for its
    copies), every option written out (no [global]), ``stonewall`` where a group starts,
    ``new_group`` where only fio's reporting group changes. Parsing the text gives the same
    :class:`Workload`; fio reads it as the same jobs."""
    lines = ["; fio job file written by ssdlab: the workload as ssdlab understood it.",
             "; Groups run one after another (stonewall); the jobs of a group run together.", ""]
    prev: Job | None = None
    for gi, group in enumerate(workload.groups):
        lines.append(f"; group {gi + 1} of {len(workload.groups)}: {len(group)} job(s) running together")
        for job in group:
            if job.clone:
                prev = job
                continue
            section = job.section
            lines.append(f"[{section}]")
            if job.name != section:
                lines.append(f"name={job.name}")
            if gi > 0 and job is group[0]:
                lines.append("stonewall")
            elif prev is not None and job.report_group != prev.report_group:
                lines.append("new_group")
            if job.numjobs != 1:
                lines.append(f"numjobs={job.numjobs}")
            if workload.exitall and prev is None:
                lines.append("exitall")          # global in fio: once is enough
            lines += _job_lines(job)
            lines.append("")
            prev = job
    return "\n".join(lines)
