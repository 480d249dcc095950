"""fio jobs as the simulator runs them: one :class:`~ssdlab.workload.fiojob.Job` becomes the
dict of workload keys ``ssdlab._native.Simulator.start_workload`` takes, with the job's
percentages and region resolved against the drive, as fio resolves them against the device.

fio's ``rw=read:8k`` strides (``rw=read:-8k`` backwards), ``rw=randread:N``,
``rate_process=poisson`` and ``exitall`` (with ``exit_what``) become workload keys. Where
fio's behaviour is followed only approximately, :func:`sim_job` says so in a note (the run's
summary lists them); what the simulator cannot run is a
:class:`~ssdlab.workload.fiojob.WorkloadError` naming the option and where it was written.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..params import MAX_SERIES_POINTS, MAX_SPANS
from .fiojob import DIRECTIONS, Job, Workload, WorkloadError, where_prefix

#: Offsets and sizes the simulator takes are whole multiples of this [bytes]; a write that
#: covers a 4 KiB mapping unit only partly costs the drive a read-modify-write of the unit.
SECTOR_BYTES = 512
#: Most commands the jobs of one group keep in flight together on the simulator (the sum of
#: their iodepth): it books memory for each.
MAX_GROUP_IODEPTH = 1 << 20


@dataclass
class SimGroup:
    """One group of jobs (they run together; groups run one after another): ``keys`` is
    the ``start_workload`` dict (one job's keys, or ``{"jobs": [...], "interval_s": S}``),
    ``notes`` what the simulator does differently from fio."""

    index: int
    name: str
    keys: dict
    notes: list[str] = field(default_factory=list)
    #: Jobs of the group: (name, directions) for the summary.
    jobs: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    #: A job running alone with a ``startdelay``: the drive idles this long first [s].
    idle_before_s: float = 0.0


def _fail(job: Job, option: str, why: str) -> WorkloadError:
    """The error about ``option`` of ``job``, at the line that set it (else the job's)."""
    return WorkloadError(f"{where_prefix(job.option_where.get(option, job.where))}job {job.name!r}, option {option}: {why}")


def region(job: Job, capacity_bytes: int) -> tuple[int, int]:
    """(offset, length) [bytes] of the job's region on a drive of ``capacity_bytes``, as fio's
    ``get_start_offset`` and ``setup_files`` compute them for a block device: percentages of
    the capacity, a percentage offset aligned up to ``offset_align`` (default: the smallest
    block size), ``offset_increment`` times the copy number, the length up to the end of the
    device unless ``size`` is given (a percentage length aligned down to the smallest block
    size)."""
    min_bs = min(b for b, d in zip(job.bs_min_bytes, DIRECTIONS) if d in job.directions)
    increment = (capacity_bytes * job.offset_increment_pct // 100 if job.offset_increment_pct is not None
                 else job.offset_increment_bytes)
    align = job.offset_increment_pct is not None or job.offset_pct is not None
    offset = (capacity_bytes * job.offset_pct // 100 if job.offset_pct is not None else job.offset_bytes)
    offset += job.clone * increment
    if align:
        a = job.offset_align_bytes or min_bs
        offset = -(-offset // a) * a
    if offset >= capacity_bytes:
        raise _fail(job, "offset", f"{offset} bytes is at or beyond the end of the {capacity_bytes}-byte drive")
    if job.size_pct is not None:
        length = min(capacity_bytes * job.size_pct // 100, capacity_bytes - offset)
        length -= length % min_bs
    elif job.size_bytes is not None:
        length = job.size_bytes
        if offset + length > capacity_bytes:
            raise _fail(job, "size", f"offset {offset} + size {length} bytes runs past the end of the "
                                     f"{capacity_bytes}-byte drive; shrink size or offset")
    else:
        length = capacity_bytes - offset
    return offset, length


def _bs_weights(job: Job, i: int) -> list[tuple[int, int]]:
    """The direction's block sizes as (bs_bytes, weight): ``bssplit``, ``bs``, or ``bsrange``
    as fio draws it (min + max x U[0,1), aligned down to min, capped at max: each multiple of
    min gets the share of [0, max) that lands on it)."""
    if job.bssplit[i]:
        return [(s.bs_bytes, s.pct) for s in job.bssplit[i] if s.pct]
    lo, hi = job.bs_min_bytes[i], job.bs_max_bytes[i]
    if lo == hi:
        return [(lo, 1)]
    weights: dict[int, int] = {}
    for k in range(hi // lo):
        size = min(lo + k * lo, hi)                      # x in [k*lo, (k+1)*lo) of [0, hi)
        weights[size] = weights.get(size, 0) + min(lo, hi - k * lo)
    if hi % lo:
        weights[hi] = weights.get(hi, 0) + hi % lo       # x in [floor(hi/lo)*lo, hi): capped at hi
    return sorted(weights.items())


def _check_unit(job: Job, option: str, value: int) -> None:
    if value % SECTOR_BYTES:
        raise _fail(job, option, f"{value} bytes is not a multiple of {SECTOR_BYTES}: the simulated drive takes "
                                 f"{SECTOR_BYTES}-byte sectors; use sizes and offsets that are multiples of 512")


def sim_job(job: Job, capacity_bytes: int) -> tuple[dict, list[str]]:
    """The ``start_workload`` keys of one job (without ``interval_s``) and notes on where the
    simulator departs from fio."""
    notes: list[str] = []
    if job.rw.endswith("trimwrite"):
        raise _fail(job, "rw", f"{job.rw} (trim a block, then write it) is not simulated; use rw=randrw or "
                               "separate trim and write jobs")
    if job.fsync_every_writes or job.fdatasync_every_writes:
        key = "fsync" if job.fsync_every_writes else "fdatasync"
        raise _fail(job, key, "cache flushes within a synthetic job are not simulated yet; remove it (the "
                              "simulated drive's write buffer is flushed by trace replay's FLUSH commands)")
    if job.bs_unaligned:
        raise _fail(job, "bs_unaligned", "sizes that are not multiples of the smallest size are not simulated")
    if job.thinktime_spin_us:
        notes.append(f"{job.name}: thinktime_spin (host CPU spinning) is idle time for the drive, as the rest "
                     "of the thinktime")
    offset, length = region(job, capacity_bytes)
    _check_unit(job, "offset", offset)
    _check_unit(job, "size", length)
    dirs = job.directions
    keys: dict = {"name": job.name, "qd": job.queue_depth, "offset_bytes": offset, "span_bytes": length}
    if "read" in dirs and "write" in dirs:
        keys["read_fraction"] = job.rwmix_read_pct / 100.0
    elif dirs == ("read",):
        keys["read_fraction"] = 1.0
    elif dirs == ("trim",):
        keys["trim_fraction"] = 1.0
    mean_bs: dict[str, float] = {}
    for i, d in enumerate(DIRECTIONS):
        if d not in dirs:
            continue
        sizes = _bs_weights(job, i)
        for bs, _ in sizes:
            key = "bssplit" if job.bssplit[i] else "bsrange" if "bsrange" in job.option_where else "bs"
            _check_unit(job, key, bs)
            if bs > length:
                raise _fail(job, key, f"a {bs}-byte block is larger than the job's {length}-byte region; use a "
                                      "smaller block size or a larger size")
        if job.random:
            _check_unit(job, "ba", job.ba_bytes[i])
            if job.ba_bytes[i] != min(b for b, _ in sizes):
                keys[f"{d}_ba_bytes"] = job.ba_bytes[i]
        if len(sizes) == 1:
            keys[f"{d}_bs_bytes"] = sizes[0][0]
        else:
            keys[f"{d}_bssplit"] = sizes
        total = sum(w for _, w in sizes)
        mean_bs[d] = sum(b * w for b, w in sizes) / total
        keys[f"{d}_random_fraction"] = job.percentage_random_pct[i] / 100.0 if job.random else 0.0
        rate = 0.0
        if job.rate_process == "poisson":
            rate = _poisson_rate_iops(job, i)
        elif job.rate_iops[i]:
            rate = float(job.rate_iops[i])
        if job.rate_bytes_per_s[i] and job.rate_process == "linear":
            by_bytes = job.rate_bytes_per_s[i] / mean_bs[d]
            rate = min(rate, by_bytes) if rate else by_bytes
            if len(sizes) > 1:
                notes.append(f"{job.name}: rate={job.rate_bytes_per_s[i]} bytes/s for {d}s is simulated as "
                             f"{by_bytes:.1f} IOs/s (the mean block size, {mean_bs[d]:.0f} bytes)")
        if rate:
            keys[f"{d}_rate_iops"] = rate
    if job.rate_process == "poisson" and any(f"{d}_rate_iops" in keys for d in dirs):
        keys["rate_poisson"] = True
    if job.random and job.rw_new_offset_every_ios > 1:
        keys["random_every_ios"] = job.rw_new_offset_every_ios
        notes.append(f"{job.name}: rw={job.rw}:{job.rw_new_offset_every_ios}: fio ends the job (or its loop) when a "
                     "sequential run would start past the region's end; the simulator's run wraps to the region's "
                     "start")
    if job.rw_skip_bytes:
        keys["seq_stride_bytes"] = job.rw_skip_bytes
        pass_ios = _stride_pass_ios(job, length, mean_bs)
        if pass_ios is not None:
            keys["number_ios"] = pass_ios * max(job.loops, 1)
    dist = job.random_distribution
    if job.random and dist.kind != "random":
        keys["distribution"] = dist.kind if dist.kind != "zoned_abs" else "zoned"
        if dist.kind == "zipf":
            keys["zipf_theta"] = dist.zipf_theta
        elif dist.kind == "pareto":
            keys["pareto_h"] = dist.pareto_h
        elif dist.kind == "normal":
            keys["normal_dev_pct"] = dist.normal_dev_pct
        elif dist.kind == "zoned":
            keys["zones"] = [(z.access_pct, float(z.size_pct)) for z in dist.zones]
        else:  # zoned_abs: zone sizes in bytes, as shares of the region
            used = sum(z.size_bytes or 0 for z in dist.zones)
            if used > length:
                raise _fail(job, "random_distribution", f"the zoned_abs zones add up to {used} bytes, more than "
                                                        f"the job's {length}-byte region")
            zones = [(z.access_pct, 100.0 * (z.size_bytes or 0) / length) for z in dist.zones]
            if used < length:  # fio: offsets beyond the last zone are never drawn
                zones[-1] = (zones[-1][0], zones[-1][1] + 100.0 * (length - used) / length)
                notes.append(f"{job.name}: the zoned_abs zones cover {used} of the region's {length} bytes; the "
                             "last zone is widened to the region's end (the simulator's zones fill the region)")
            keys["zones"] = zones
        if dist.center_frac is not None:
            keys["center_fraction"] = dist.center_frac
    if job.random and not job.norandommap and dist.kind == "random":
        # fio's random map: every block of the region once per pass, in random order
        keys["random_map"] = True
    # End conditions, as fio: time_based runs for runtime; otherwise the region (or io_size)
    # times loops, cut short by runtime or number_ios.
    if job.time_based and job.runtime_us:
        keys["duration_s"] = job.runtime_us / 1e6
    else:
        if job.runtime_us:
            keys["duration_s"] = job.runtime_us / 1e6
        io = (job.io_size_bytes if job.io_size_bytes is not None else
              length * job.io_size_pct // 100 if job.io_size_pct is not None else length)
        _check_unit(job, "io_size", io)
        if io * job.loops > MAX_SPANS * capacity_bytes:
            option = "loops" if job.loops > 1 else "io_size"
            raise _fail(job, option, f"{io * job.loops} bytes of I/O ({io} x loops={job.loops}) is more than "
                                     f"{MAX_SPANS} times the {capacity_bytes}-byte drive, the most a simulated job "
                                     "transfers; give a runtime or fewer bytes")
        keys["io_bytes"] = io * job.loops
    if job.number_ios:
        keys["number_ios"] = min(job.number_ios, keys.get("number_ios", job.number_ios))
    if job.thinktime_us:
        keys["thinktime_s"] = job.thinktime_us / 1e6
        keys["thinktime_blocks"] = job.thinktime_blocks
        keys["thinktime_blocks_issued"] = job.thinktime_blocks_type == "issue"
        if job.thinktime_iotime_us:
            keys["thinktime_iotime_s"] = job.thinktime_iotime_us / 1e6
    if "write" in dirs:
        if job.zero_buffers:
            keys["buffer_compress_pct"] = 100
        elif job.buffer_compress_pct:
            keys["buffer_compress_pct"] = job.buffer_compress_pct
    if job.dataplacement == "fdp" and "write" in dirs:
        # The drive's placement handles: placement id index i is handle i (fio's plids index
        # the handles `nvme fdp status` lists; the simulated drive lists them in order).
        keys["placement_select"] = job.plid_select
        if job.plid_select == "scheme":
            keys["placement_scheme"] = [list(e) for e in job.dp_scheme]
        elif job.plids:
            keys["placement_ids"] = list(job.plids)
    if job.zonemode == "zbd":
        # fio's zbd host: the simulator keeps the write target zones and resets as fio does.
        keys["zonemode"] = "zbd"
        for key in ("max_open_zones", "job_max_open_zones", "zone_reset_threshold", "zone_reset_frequency"):
            if getattr(job, key):
                keys["zbd_" + key.removeprefix("zone_")] = getattr(job, key)
        for key in ("read_beyond_wp", "ignore_zone_limits"):
            if getattr(job, key):
                keys["zbd_" + key] = True
        if job.zonesize:
            keys["zbd_zone_size_bytes"] = job.zonesize
    if job.startdelay_us or job.startdelay_max_us:
        keys["startdelay_s"] = job.startdelay_us / 1e6
        if job.startdelay_max_us != job.startdelay_us:
            notes.append(f"{job.name}: startdelay range: the simulator starts the job after the lower bound")
    if job.randseed is not None:
        notes.append(f"{job.name}: randseed={job.randseed} seeds fio's generator; the simulator draws its own offsets "
                     "from --seed (same --seed, same run; each job its own stream)")
    if job.ramp_time_us:
        notes.append(f"{job.name}: ramp_time {job.ramp_time_us / 1e6:g} s: its IOs count in the series and totals "
                     "(fio leaves them out of its statistics)")
    return keys, notes


def _poisson_rate_iops(job: Job, i: int) -> float:
    """The mean IOs per second of direction ``i`` under ``rate_process=poisson`` (0: no cap), as
    fio's ``usec_for_io``: ``rate`` (else ``rate_iops`` x the smallest block size) in IOs of the
    smallest block size, whatever the sizes drawn, one every whole number of microseconds."""
    min_bs = job.bs_min_bytes[i]
    bps = job.rate_bytes_per_s[i] or job.rate_iops[i] * min_bs
    if not bps:
        return 0.0
    option = "rate" if job.rate_bytes_per_s[i] else "rate_iops"
    if bps < min_bs:
        raise _fail(job, option, f"{bps} bytes/s is less than one {min_bs}-byte IO a second: fio's poisson "
                                 "process divides by zero there; give a higher rate")
    gap_us = 10 ** 6 // (bps // min_bs)
    if gap_us == 0:    # fio: no gap at all, no cap
        return 0.0
    return 1e6 / gap_us


def _stride_pass_ios(job: Job, length: int, mean_bs: dict[str, float]) -> int | None:
    """Checks ``rw=<seq>:N`` for the simulator; for a forward stride that ends the job at the
    region's end, the IOs fio does in a pass (None when the job does not end there)."""
    skip = job.rw_skip_bytes
    _check_unit(job, "rw", abs(skip))
    largest = max(job.bs_max_bytes[DIRECTIONS.index(d)] for d in job.directions)
    if skip < 0:
        if -skip <= largest:
            raise _fail(job, "rw", f"rw={job.rw}:{skip} steps back no more than the {largest}-byte block size: fio's "
                                   "IOs then overlap or stand still, which is not simulated; step back more than the "
                                   "block size (rw=read:-8k with bs=4k reads block after block backwards)")
        if -skip > length:
            raise _fail(job, "rw", f"rw={job.rw}:{skip} steps back more than the job's {length}-byte region: fio "
                                   "would end the job at its first step back; use a smaller stride")
        return None
    if len(job.directions) > 1 or len(mean_bs) != 1 or job.bs_min_bytes != job.bs_max_bytes or any(job.bssplit):
        raise _fail(job, "rw", f"rw={job.rw}:{skip} with several directions or block sizes: fio ends the job when "
                               "the first direction reaches the region's end, which depends on the sizes and "
                               "directions drawn; not simulated: use one direction and one block size per job")
    bs = job.bs_min_bytes[DIRECTIONS.index(job.directions[0])]
    step = bs + skip
    pass_ios = -(-length // step)
    if (pass_ios - 1) * step + bs > length:
        raise _fail(job, "rw", f"rw={job.rw}:{skip} with bs={bs}: fio's last IO of a pass, at "
                               f"{(pass_ios - 1) * step} bytes into the region, runs past its {length}-byte end, "
                               f"which is not simulated; give a size that is a multiple of {step} bytes (bs + stride)")
    if job.time_based or job.io_size_bytes is not None or job.io_size_pct is not None:
        return None            # fio starts the next pass at the region's start
    return pass_ios


def _check_series(job: Job, keys: dict, interval_s: float) -> None:
    """A job's run time (``runtime`` plus ``startdelay``) in intervals of the series is at
    most :data:`~ssdlab.params.MAX_SERIES_POINTS`."""
    end_s = keys.get("duration_s", 0.0) + keys.get("startdelay_s", 0.0)
    if end_s / interval_s > MAX_SERIES_POINTS:
        option = "runtime" if keys.get("duration_s") else "startdelay"
        raise _fail(job, option, f"{end_s:g} s is {end_s / interval_s:,.0f} intervals of {interval_s:g} s; a series "
                                 f"holds at most {MAX_SERIES_POINTS:,}: use a shorter {option} or a longer --interval")


def _exit_stops(workload: Workload, gi: int, job: Job) -> list[int]:
    """Under fio's ``exitall``: the indices, in its group, of the jobs that stop when ``job``
    (of group ``gi``) ends, as fio's ``fio_terminate_threads``: its reporting group
    (``exit_what=group``), the jobs running (``stonewall``) or every job (``all``)."""
    group = workload.groups[gi]
    if job.exit_what == "all" and gi + 1 < len(workload.groups):
        raise _fail(job, "exit_what", "exit_what=all: when this job ends fio stops every job, so none of the "
                                      f"{len(workload.groups) - gi - 1} later group(s) would run; remove them, or use "
                                      "exit_what=group")
    if job.exit_what == "stonewall" and any(j.startdelay_us or j.startdelay_max_us for j in group if j is not job):
        raise _fail(job, "exit_what", "exit_what=stonewall stops only the jobs running when this job ends, and "
                                      "whether a job with a startdelay has started by then is not known beforehand; "
                                      "not simulated: use exit_what=group or remove the startdelay")
    return [k for k, other in enumerate(group)
            if other is not job and (job.exit_what != "group" or other.report_group == job.report_group)]


def not_applicable(workload: Workload) -> list[str]:
    """The options not applicable to the simulator, one line each: job, option, why."""
    return [f"{job}: {o.text()} ({o.reason})" for job, o in workload.not_applicable()]


def check_zones(workload: Workload, zone_size_bytes: int, profile: str) -> None:
    """Refuses zonemode=zbd on a profile without zones (``zone_size_bytes`` 0), naming the
    profile key to set, and a ``zonesize`` other than the drive's zone size (fio refuses
    it on a zoned device)."""
    for job in workload.jobs:
        if job.zonemode != "zbd":
            continue
        if not zone_size_bytes:
            raise _fail(job, "zonemode", f"zonemode=zbd needs a zoned drive; profile {profile!r} has no zones: set "
                                         "its key zns_zone_size_bytes (--set zns_zone_size_bytes=256MiB; see the zns "
                                         "profile) or use --target sim:zns")
        if job.zonesize and job.zonesize != zone_size_bytes:
            raise _fail(job, "zonesize", f"zonesize={job.zonesize} is not the drive's zone size, {zone_size_bytes} "
                                         f"bytes (profile {profile!r}, zns_zone_size_bytes); fio refuses another "
                                         "zone size on a zoned device: set zonesize to it or leave it out")


def check_placement(workload: Workload, handles: int, profile: str) -> None:
    """Refuses flexible data placement (``fdp=1``, ``dataplacement=fdp``) on a profile without
    it (``handles`` 0: its key ``fdp`` is 0) and a placement id (``plids``, ``dp_scheme``) that
    is not one of the drive's ``handles`` reclaim unit handles, naming the key to set."""
    for job in workload.jobs:
        if job.dataplacement != "fdp" or "write" not in job.directions:
            continue
        option = next((o for o in ("dataplacement", "fdp") if o in job.option_where), "dataplacement")
        if not handles:
            raise _fail(job, option, f"flexible data placement needs a drive with it; profile {profile!r} has none: "
                                     "set its key fdp = 1 (--set fdp=1 --set fdp_reclaim_unit_handles=N for N "
                                     "placement handles)")
        ids = [("plids", i) for i in job.plids] + [("dp_scheme", e[2]) for e in job.dp_scheme or ()]
        for option, pid in ids:
            if pid >= handles:
                raise _fail(job, option, f"placement id {pid} is not one of the drive's {handles} reclaim unit "
                                         f"handles (ids 0 to {handles - 1}; profile {profile!r}, "
                                         "fdp_reclaim_unit_handles): set that key higher or use lower ids")


def verify_job(job: Job, group: list[Job], capacity_bytes: int) -> Job:
    """The read-back fio runs after the writes of ``job`` (``verify``): every block the job
    wrote, the latest copy of each, in offset order at its block size and depth: a sequential
    read of what it wrote. The simulator takes it where that is the whole written region (or
    its first ``io_size`` bytes, written in order): a job alone in its group writing its
    region once in order, or at random over all of it (fio's random map); an error names the
    option otherwise."""
    def refuse(option: str, why: str) -> WorkloadError:
        return _fail(job, option, f"verify (read back what the job wrote, after its writes) is simulated for a "
                                  f"job that {why}; remove verify or run the job with fio")
    if len(group) > 1:
        raise refuse("verify", "runs alone in its group (its read-back would overlap the other jobs' I/O): "
                               "put it in a group of its own (stonewall)")
    if job.directions != ("write",):
        raise refuse("rw", "only writes (rw=write or randwrite)")
    if job.time_based:
        raise refuse("time_based", "ends when it has written its size, not at a time")
    if job.norandommap and job.random:
        raise refuse("norandommap", "writes each block of its region once (fio's random map)")
    offset, length = region(job, capacity_bytes)
    amount = length
    if job.io_size_bytes is not None or job.io_size_pct is not None or job.number_ios:
        written = (job.io_size_bytes if job.io_size_bytes is not None else
                   length * job.io_size_pct // 100 if job.io_size_pct is not None else
                   job.number_ios * job.bs_max_bytes[1])
        if written < length:
            if job.random:
                raise refuse("io_size", "writes all of its region (at random, fewer bytes than the region leave "
                                        "scattered blocks to read back)")
            amount = written
    return replace(job, rw="read", verify="none", offset_bytes=offset, offset_pct=None, offset_increment_bytes=0,
                   offset_increment_pct=None, size_bytes=length, size_pct=None, io_size_bytes=amount, io_size_pct=None,
                   number_ios=0, loops=1, runtime_us=0, ramp_time_us=0, startdelay_us=0, startdelay_max_us=0,
                   bs_min_bytes=(job.bs_min_bytes[1],) * 3, bs_max_bytes=(job.bs_max_bytes[1],) * 3,
                   bssplit=(job.bssplit[1],) * 3, zonemode="none", dataplacement="none", plids=(), clone=0)


def _split_waits(group: tuple[Job, ...]) -> list[tuple[list[Job], list[str]]]:
    """The group as the simulator runs it, with notes: as is, or, where jobs wait for another
    of the group (``wait_for``), the job they wait for, then the jobs waiting for it (exact
    when one job runs first and all the others wait for it); other waits are refused. A wait
    for a job of an earlier group has ended before the group starts: no effect."""
    names = {j.name for j in group}
    waiting = [j for j in group if j.wait_for in names]
    if not waiting:
        return [(list(group), [])]
    first = [j for j in group if j.wait_for not in names]
    if len(first) != 1 or any(j.wait_for != first[0].name for j in waiting):
        raise _fail(waiting[0], "wait_for", "jobs of a group waiting for one another are simulated where one job "
                                            "runs first and every other job of the group waits for it; put the "
                                            "others in groups of their own (stonewall)")
    note = (f"{', '.join(dict.fromkeys(j.name for j in waiting))}: wait for {first[0].name} (wait_for), so the "
            f"simulator runs them together after it, as a group of their own")
    return [(first, []), (waiting, [note])]


def sim_groups(workload: Workload, capacity_bytes: int, interval_s: float) -> list[SimGroup]:
    """The workload's groups as the simulator runs them, in order."""
    out = []
    parts = [(gi, part) for gi, whole in enumerate(workload.groups) for part in _split_waits(whole)]
    if workload.exitall and len(parts) > len(workload.groups):
        job = next(j for _, (g, n) in parts if n for j in g)
        raise _fail(job, "wait_for", "exitall with jobs of a group waiting for another is not simulated; remove "
                                     "exitall or put the waiting jobs in a group of their own (stonewall)")
    for gi, (group, notes) in parts:
        dicts = []
        depth = sum(job.iodepth for job in group)
        if depth > MAX_GROUP_IODEPTH:
            raise _fail(group[-1], "iodepth", f"the group's jobs keep {depth} commands in flight together; the "
                                              f"simulator takes at most {MAX_GROUP_IODEPTH}: fewer jobs or a lower iodepth")
        for job in group:
            keys, n = sim_job(job, capacity_bytes)
            _check_series(job, keys, interval_s)
            if job.flow_weight and len(group) > 1:
                # fio's flow control among the jobs running together (alone, a job runs free)
                keys.update(flow=job.flow_weight, flow_id=job.flow_id, flow_sleep_s=job.flow_sleep_us / 1e6)
            dicts.append(keys)
            notes += [x for x in n if x not in notes]
        name = group[0].section if len({j.section for j in group}) == 1 else "+".join(
            dict.fromkeys(j.section for j in group))
        idle = 0.0
        if len(dicts) == 1:
            keys = {**dicts[0], "interval_s": interval_s}
            idle = keys.pop("startdelay_s", 0.0)
        else:
            keys = {"jobs": dicts, "interval_s": interval_s}
        if workload.exitall:
            for job, keys_of_job in zip(group, dicts):
                stops = _exit_stops(workload, gi, job)
                if stops:
                    keys_of_job["exit_stops"] = stops
        out.append(SimGroup(gi, name, keys, notes, [(j.name, j.directions) for j in group], idle))
        for job in group:
            if job.verify != "none":
                vkeys, _ = sim_job(verify_job(job, group, capacity_bytes), capacity_bytes)
                _check_series(job, vkeys, interval_s)
                out.append(SimGroup(gi, f"{name} (verify)", {**vkeys, "interval_s": interval_s},
                                    [f"{job.name}: verify={job.verify}: after its writes, fio reads back the "
                                     f"{vkeys.get('io_bytes', vkeys['span_bytes'])} bytes "
                                     "it wrote in offset order; the simulator runs that read-back as a group of its "
                                     "own"], [(job.name, ("read",))]))
    return out
