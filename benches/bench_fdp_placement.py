#!/usr/bin/env python3
"""A placement study in seconds: write amplification of a hot/cold mix with and without
Flexible Data Placement on the same simulated drive, side by side.

The drive is the built-in ``default`` profile scaled to ``--capacity``, as is
(no FDP) and with ``fdp = 1`` (``--handles`` persistently isolated reclaim unit handles: GC
keeps each handle's data in reclaim units of its own). Each case fills the drive
sequentially (each range through its placement ids), then writes 4 KiB until the drive has
been written ``--passes`` times over, and reports the write amplification of the last pass
(NAND bytes / host bytes, steady state) and, with FDP, of each handle written. The hot/cold
workload is two jobs on disjoint LBA ranges, each overwriting its range in order (a log):
*hot*, 10 % of the LBAs taking 90 % of the writes (qd 27), and *cold*, the other 90 %
taking 10 % (qd 3): two lifetimes. The cases:

- ``no FDP``: the two jobs without placement ids (the drive mixes hot and cold data);
- ``FDP, one lifetime per handle``: hot through handle 0, cold through handle 1;
- ``FDP, lifetimes mixed in handles``: each job round robin over handles 0 and 1;
- ``no FDP, uniform`` and ``FDP, uniform over every handle``: one uniform random stream
  over the whole drive, with FDP on a drive of ``--many-handles`` handles, each write
  through a handle drawn at random (invalidations spread over every reclaim unit; each
  handle's open reclaim units, host and GC, in every plane hold space no other handle can
  use, which the drive's spare area pays for).

    benches/bench_fdp_placement.py [--capacity 16GB] [--passes 3] [--handles 2] [--many-handles 32]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from records import Recorder, machine  # noqa: E402

from ssdlab.profiles import load_profile  # noqa: E402
from ssdlab.targets.sim import SimTarget  # noqa: E402

HOT_LBA, HOT_WRITES = 0.1, 0.5


#: A sequential fill's writes: 128 KiB at QD32 (each job of a fill its own span once).
FILL = {"write_bs_bytes": 128 * 1024, "write_random_fraction": 0.0, "qd": 32}


def _hot_cold(user: int, write_bytes: int | None, hot_ids: list[int] | None, cold_ids: list[int] | None) -> dict:
    """The hot and cold jobs writing `write_bytes` together at random; None: each fills its
    range sequentially, through its placement ids."""
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


def _uniform(user: int, write_bytes: int | None, handles: int | None) -> dict:
    w = {"io_bytes": write_bytes, "interval_s": 10.0} if write_bytes is not None else {**FILL, "interval_s": 10.0}
    if handles is not None:
        w.update(placement_ids=list(range(handles)), placement_select="random")
    return w


def run_case(profile, passes: float, workload) -> tuple[float, list[float]]:
    """Fills the drive (`workload(user, None)`), writes it over `passes` times with
    `workload(user, bytes)`, returns the last pass's WAF and each handle's."""
    t = SimTarget(profile, seed=1)
    user = t.capacity_bytes
    t.run_workload(workload(user, None))
    if passes > 1:
        t.run_workload(workload(user, int((passes - 1) * user)))
    r = t.run_workload(workload(user, user))
    handles = [h["write_amplification"] for h in r.totals.get("fdp_handles", []) if h["host_write_bytes"]]
    return r.totals["write_amplification"], handles


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--capacity", default="16GB",
                    help="the default drive scaled to this user capacity (default: %(default)s; at 256 GB, as the "
                         "profile is, the no-FDP hot/cold case runs a plane out of room: the drive stripes writes "
                         "over its planes whatever their addresses, and the two logs' interleave leaves more than a "
                         "plane's share of data in some)")
    ap.add_argument("--passes", type=float, default=3.0,
                    help="random writes after the fill, in drive capacities; the last is measured (default: %(default)s)")
    ap.add_argument("--handles", type=int, default=2,
                    help="reclaim unit handles of the FDP drive of the hot/cold cases (default: %(default)s)")
    ap.add_argument("--many-handles", type=int, default=32,
                    help="reclaim unit handles of the FDP drive of the uniform case (default: %(default)s)")
    args = ap.parse_args()
    rec = Recorder("fdp_placement", vars(args))
    base = [f"capacity={args.capacity}"]
    plain = load_profile("default", base)
    def fdp_drive(handles: int):
        return load_profile("default", base + ["fdp=1", f"fdp_reclaim_unit_handles={handles}",
                                               "fdp_ruh_type=persistently-isolated"])

    fdp, many = fdp_drive(args.handles), fdp_drive(args.many_handles)
    print(f"hot/cold placement study on sim:default {' '.join(base)}, {args.passes:g} passes; {machine()}")
    cases = [
        ("no FDP", plain, lambda u, b: _hot_cold(u, b, None, None)),
        ("FDP, one lifetime per handle", fdp, lambda u, b: _hot_cold(u, b, [0], [1])),
        ("FDP, 1/4 of each job to the other's handle", fdp, lambda u, b: _hot_cold(u, b, [0, 0, 0, 1], [1, 1, 1, 0])),
        ("FDP, lifetimes mixed in handles", fdp, lambda u, b: _hot_cold(u, b, [0, 1], [0, 1])),
        ("no FDP, uniform", plain, lambda u, b: _uniform(u, b, None)),
        (f"FDP, uniform over every handle ({args.many_handles})", many, lambda u, b: _uniform(u, b, args.many_handles)),
    ]
    t0 = time.perf_counter()
    figures = {}
    print(f"| {'case':<40} | {'WAF':>5} | {'WAF per handle written':<28} | {'s':>5} |")
    print(f"|{'-' * 42}|{'-' * 7}|{'-' * 30}|{'-' * 7}|")
    for i, (name, profile, workload) in enumerate(cases):
        c0 = time.perf_counter()
        waf, handles = run_case(profile, args.passes, workload)
        per = ", ".join(f"{h:.2f}" for h in handles[:4]) + (" ..." if len(handles) > 4 else "")
        print(f"| {name:<40} | {waf:>5.2f} | {per:<28} | {time.perf_counter() - c0:>5.1f} |")
        figures[f"waf_case{i + 1}"] = waf
    figures["wall_s"] = time.perf_counter() - t0
    print(f"total {figures['wall_s']:.1f} s wall")
    rec.write(figures)


if __name__ == "__main__":
    main()
