#!/usr/bin/env python3
"""A placement study in seconds: write amplification of a hot/cold mix with and without
Flexible Data Placement on the same simulated drive, side by side.

The drive is the built-in ``default`` profile scaled to ``--capacity``, as is
(no FDP) and with ``fdp = 1`` (``--handles`` persistently isolated reclaim unit handles: GC
keeps each handle's data in reclaim units of its own). Each case fills the drive
sequentially (each range through its placement ids), then writes 4 KiB and reports the
write amplification (NAND bytes / host bytes) of its last phase and, with FDP, of each
handle written. The hot/cold workload is two jobs on disjoint LBA ranges, each overwriting
its range in order (a log): *hot*, 10 % of the LBAs taking half the writes, and *cold*, the
other 90 % taking the other half: two lifetimes. The cases:

- ``no FDP``: the two jobs without placement ids (the drive mixes hot and cold data);
- ``FDP, one lifetime per handle``: hot through handle 0, cold through handle 1;
- ``FDP, lifetimes mixed in handles``: each job round robin over handles 0 and 1;
- ``no FDP, uniform`` and ``FDP, uniform over every handle``: one uniform random stream
  over the whole drive, with FDP on a drive of ``--many-handles`` handles, each write
  through a handle drawn at random (invalidations spread over every reclaim unit; each
  handle's open reclaim units, host and GC, in every plane hold space no other handle can
  use, which the drive's spare area pays for).

How much is written after the fill, in drive capacities: a hot/cold case writes
``--passes`` - 1, then 1 more, measured (each phase starts each log at its range's start,
so its figure depends on where the phases end: it is the last pass after that warm-up, not
a figure of a steady log); a uniform case writes ``--warmup``, then ``--window``, measured
(random writes have no position to restart: the window's write amplification is the long
run's, see ``--window``). Cases run side by side in ``--jobs`` processes, the costliest
first.

    benches/bench_fdp_placement.py [--capacity 16GB] [--passes 3] [--warmup 0.5|0.25] [--window 0.25]
                                   [--handles 2] [--many-handles 32] [--jobs 2]
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from records import Recorder, machine  # noqa: E402

from ssdlab.profiles import load_profile  # noqa: E402
from ssdlab.targets.sim import SimTarget  # noqa: E402

HOT_LBA, HOT_WRITES = 0.1, 0.5
#: Uniform cases' default warm-up after the fill [drive capacities]: the drive's write
#: amplification oscillates after its first GC and settles within a quarter of its capacity
#: at the default profile's own size (each 1/16 of a capacity written after that within
#: 3.5 % of the long run's), later on a smaller drive (16 GB: 4 planes of 1027 blocks).
FULL_SIZE_BYTES, FULL_WARMUP, SMALL_WARMUP = 256_000_000_000, 0.25, 0.5


#: A sequential fill's writes: 128 KiB at QD32 (each job of a fill its own span once).
FILL = {"write_bs_bytes": 128 * 1024, "write_random_fraction": 0.0, "qd": 32}


def _hot_cold(user: int, write_bytes: int | None, *, hot_ids: list[int] | None, cold_ids: list[int] | None) -> dict:
    """The hot and cold jobs writing `write_bytes` together, each its range in order from its
    start; None: each fills its range sequentially, through its placement ids."""
    hot_span = user // 10 // 4096 * 4096
    jobs = [{"name": "hot", "span_bytes": hot_span}, {"name": "cold", "offset_bytes": hot_span, "span_bytes": user - hot_span}]
    if write_bytes is None:
        jobs = [{**j, **FILL} for j in jobs]
    else:
        # Each range overwritten in order, as a log (a cache's segments, a KV store's files):
        # its data dies in the order it was written.
        jobs[0].update(qd=16, write_random_fraction=0.0, io_bytes=int(write_bytes * HOT_WRITES) // 4096 * 4096)
        jobs[1].update(qd=16, write_random_fraction=0.0, io_bytes=int(write_bytes * (1 - HOT_WRITES)) // 4096 * 4096)
    for job, ids in zip(jobs, (hot_ids, cold_ids)):
        if ids is not None:
            job["placement_ids"] = ids
    return {"interval_s": 10.0, "jobs": jobs}


def _uniform(user: int, write_bytes: int | None, *, handles: int | None) -> dict:
    w = {"io_bytes": write_bytes, "interval_s": 10.0} if write_bytes is not None else {**FILL, "interval_s": 10.0}
    if handles is not None:
        w.update(placement_ids=list(range(handles)), placement_select="random")
    return w


def run_case(profile, workload, warmup: float, window: float) -> tuple[float, list[float], float, float]:
    """Fills the drive (`workload(user, None)`), writes it over `warmup` times, then `window`
    times with `workload(user, bytes)`; returns the last phase's WAF, each handle's, the wall
    time and the CPU time [s]."""
    t0, c0 = time.perf_counter(), time.process_time()
    t = SimTarget(profile, seed=1)
    user = t.capacity_bytes
    t.run_workload(workload(user, None))
    if warmup > 0:
        t.run_workload(workload(user, int(warmup * user)))
    r = t.run_workload(workload(user, int(window * user)))
    handles = [h["write_amplification"] for h in r.totals.get("fdp_handles", []) if h["host_write_bytes"]]
    return r.totals["write_amplification"], handles, time.perf_counter() - t0, time.process_time() - c0


def _run_indexed(args: tuple) -> tuple:
    i, case = args
    return (i, *run_case(*case))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--capacity", default="16GB",
                    help="the default drive scaled to this user capacity (default: %(default)s; 256GB is the "
                         "profile's own size)")
    ap.add_argument("--passes", type=float, default=3.0,
                    help="hot/cold cases: writes after the fill, in drive capacities; the last one is measured "
                         "(default: %(default)s)")
    ap.add_argument("--warmup", type=float, default=None,
                    help="uniform cases: random writes after the fill before the measured window, in drive "
                         f"capacities (default: {SMALL_WARMUP} below {FULL_SIZE_BYTES / 1e9:g} GB, {FULL_WARMUP} "
                         "from it: a full-size drive's write amplification settles sooner, README)")
    ap.add_argument("--window", type=float, default=0.25,
                    help="uniform cases: the measured random writes, in drive capacities (default: %(default)s; "
                         "after the default warm-up its write amplification is within 2 %% of the last of three "
                         "full passes': 16 and 256 GB, README)")
    ap.add_argument("--handles", type=int, default=2,
                    help="reclaim unit handles of the FDP drive of the hot/cold cases (default: %(default)s)")
    ap.add_argument("--many-handles", type=int, default=32,
                    help="reclaim unit handles of the FDP drive of the uniform case (default: %(default)s)")
    ap.add_argument("--jobs", type=int, default=2,
                    help="cases run side by side in this many processes (default: %(default)s)")
    args = ap.parse_args()
    base = [f"capacity={args.capacity}"]
    plain = load_profile("default", base)
    if args.warmup is None:
        args.warmup = FULL_WARMUP if plain.user_bytes >= FULL_SIZE_BYTES else SMALL_WARMUP
    rec = Recorder("fdp_placement", vars(args))

    def fdp_drive(handles: int):
        return load_profile("default", base + ["fdp=1", f"fdp_reclaim_unit_handles={handles}",
                                               "fdp_ruh_type=persistently-isolated"])

    fdp, many = fdp_drive(args.handles), fdp_drive(args.many_handles)
    logs, uniform = (args.passes - 1, 1.0), (args.warmup, args.window)
    print(f"hot/cold placement study on sim:default {' '.join(base)}: hot/cold {args.passes:g} passes, uniform "
          f"{args.warmup:g} + {args.window:g} measured; {args.jobs} processes; {machine()}")
    cases = [
        ("no FDP", plain, partial(_hot_cold, hot_ids=None, cold_ids=None), logs),
        ("FDP, one lifetime per handle", fdp, partial(_hot_cold, hot_ids=[0], cold_ids=[1]), logs),
        ("FDP, 1/4 of each job to the other's handle", fdp,
         partial(_hot_cold, hot_ids=[0, 0, 0, 1], cold_ids=[1, 1, 1, 0]), logs),
        ("FDP, lifetimes mixed in handles", fdp, partial(_hot_cold, hot_ids=[0, 1], cold_ids=[0, 1]), logs),
        ("no FDP, uniform", plain, partial(_uniform, handles=None), uniform),
        (f"FDP, uniform over every handle ({args.many_handles})", many,
         partial(_uniform, handles=args.many_handles), uniform),
    ]
    # The costliest first (CPU s at 256 GB: 23, 21, 19, 19, 15, 10), so the processes end together.
    order = [3, 2, 1, 0, 5, 4]
    t0 = time.perf_counter()
    work = [(i, (cases[i][1], cases[i][2], *cases[i][3])) for i in order]
    if args.jobs > 1:
        with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
            done = list(pool.imap_unordered(_run_indexed, work, chunksize=1))
    else:
        done = [_run_indexed(w) for w in work]
    wall = time.perf_counter() - t0
    figures = {}
    print(f"| {'case':<44} | {'WAF':>5} | {'WAF per handle written':<30} | {'s':>5} | {'CPU s':>5} |")
    print(f"|{'-' * 46}|{'-' * 7}|{'-' * 32}|{'-' * 7}|{'-' * 7}|")
    for i, waf, handles, seconds, cpu in sorted(done):
        per = ", ".join(f"{h:.2f}" for h in handles[:4]) + (" ..." if len(handles) > 4 else "")
        print(f"| {cases[i][0]:<44} | {waf:>5.2f} | {per:<30} | {seconds:>5.1f} | {cpu:>5.1f} |")
        figures[f"waf_case{i + 1}"] = waf
    figures["wall_s"] = wall
    figures["cpu_s"] = sum(d[4] for d in done)
    print(f"total {wall:.1f} s wall, {figures['cpu_s']:.1f} s CPU (load {os.getloadavg()[0]:.1f})")
    rec.write(figures)


if __name__ == "__main__":
    main()
