#!/usr/bin/env python3
"""Simulation speed of a mixed workload: 4 KiB random read/write 70/30 at QD32, steady state.

On the built-in default 256 GB drive (``sim:default``: active and idle GC), through the same
path as ``ssdlab`` (``SimTarget.run_workload``): purge, sequential fill (128 KiB, QD32), a
warm-up of the same workload until the drive has been written over ``--warmup`` times its
capacity, then ``--runs`` timed runs of ``--ios`` IOs each. Reports per run and as medians:
simulated IOs per wall second and per CPU second of this process (the machine may be
shared), the simulated IOPS split and the write amplification.

    benches/bench_randrw.py [--runs 5] [--ios 20000000] [--warmup 2] [--profile default] [--threads 1]

``--threads 2``: the simulation's FTL work on a second thread (``SimTarget(threads=2)``); CPU
time is then both threads'.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from records import Recorder, machine  # noqa: E402

from ssdlab.profiles import load_profile  # noqa: E402
from ssdlab.targets.base import JobSpec  # noqa: E402
from ssdlab.targets.sim import SimTarget  # noqa: E402

WORKLOAD = {"name": "randrw", "read_fraction": 0.7, "read_bs_bytes": 4096, "write_bs_bytes": 4096, "qd": 32}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5, help="timed runs (default: %(default)s)")
    ap.add_argument("--ios", type=int, default=20_000_000, help="IOs per timed run (default: %(default)s)")
    ap.add_argument("--warmup", type=float, default=2.0,
                    help="warm-up writes as multiples of the capacity (default: %(default)s)")
    ap.add_argument("--profile", default="default", help="built-in profile (default: %(default)s)")
    ap.add_argument("--threads", type=int, choices=[1, 2], default=1,
                    help="threads the simulation may use (default: %(default)s)")
    args = ap.parse_args()
    # One thread: the parameters of the records before threads could be chosen.
    rec = Recorder("randrw", {k: v for k, v in vars(args).items() if not (k == "threads" and v == 1)})
    print(f"4 KiB randrw 70/30 QD32 on sim:{args.profile}; {machine()}")
    # Builds before the threads option (a reference of benches/ab.py) take none.
    target = SimTarget(load_profile(args.profile), seed=1, **({"threads": args.threads} if args.threads != 1 else {}))
    t0 = time.perf_counter()
    target.run_phase(JobSpec("fill", "write", bs_bytes=128 * 1024, qd=32))
    capacity = target.capacity_bytes
    # Writes are 30 % of the IOs: this many IOs write the capacity `warmup` times over.
    warm_ios = int(args.warmup * capacity / 4096 / 0.3)
    warm = target.run_workload({**WORKLOAD, "number_ios": warm_ios})
    print(f"fill + warm-up ({warm_ios:,} IOs, WA {warm.totals['write_amplification']:.2f}): "
          f"{time.perf_counter() - t0:.1f} s wall")
    rows = []
    print(f"{'run':>4} {'IO/s wall':>12} {'IO/s CPU':>12} {'read IOPS':>10} {'write IOPS':>11} {'WA':>6}")
    for i in range(args.runs):
        w0, c0 = time.perf_counter(), time.process_time()
        r = target.run_workload({**WORKLOAD, "number_ios": args.ios})
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        t = r.totals
        row = {"wall": t["ios"] / wall, "cpu": t["ios"] / cpu, "read_iops": t["read_ios"] / t["duration_s"],
               "write_iops": t["write_ios"] / t["duration_s"], "wa": t["write_amplification"]}
        rows.append(row)
        print(f"{i + 1:>4} {row['wall']:>12,.0f} {row['cpu']:>12,.0f} {row['read_iops']:>10,.0f} "
              f"{row['write_iops']:>11,.0f} {row['wa']:>6.2f}")
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    print(f"median: {med['wall'] / 1e6:.2f} M simulated IO/s per wall second, {med['cpu'] / 1e6:.2f} M per CPU "
          f"second; simulated {med['read_iops']:,.0f} read + {med['write_iops']:,.0f} write IOPS, WA {med['wa']:.2f} "
          "(target: >= 3 M per wall second)")
    rec.write({"sim_io_per_wall_s": med["wall"], "sim_io_per_cpu_s": med["cpu"], "read_iops": med["read_iops"],
               "write_iops": med["write_iops"], "wa": med["wa"]})


if __name__ == "__main__":
    main()
