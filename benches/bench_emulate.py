#!/usr/bin/env python3
"""The emulated drive's speed and faithfulness (``ssdlab emulate``, ``--target emu:``).

- **Ceiling**: 4 KiB random writes at QD32 (fio, libaio, direct) on a drive whose own
  latency is next to nothing (controller 0.01 us, a 1 TB/s host link, a 1 GiB write buffer:
  the simulated drive alone would take millions of IOPS), so what is measured is the
  emulator's path (loop device, FUSE, the simulator call, the completion thread).
- **Lateness at a rate**: the same job on the default drive (256 GB, fresh: it takes random
  writes at ~90K IOPS, its controller's rate, before its first GC), rate-limited by fio to 20K
  and 50K IOPS: how long after their simulated completion time the replies were sent
  (p50, p99: the upper bound of the emulator's 1-2-5 µs bucket; the share later than 50 µs),
  from the drive's counters before and after.

Medians of ``--runs`` runs of ``--duration`` seconds each; one record in
benches/records/emulate.jsonl. Needs root, /dev/fuse, loop devices and fio.

    benches/bench_emulate.py [--runs 3] [--duration 5]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from records import Recorder, machine  # noqa: E402

from ssdlab.profiles import load_profile  # noqa: E402
from ssdlab.targets import emu  # noqa: E402

#: The default drive scaled down to 1.75 GiB (same dies, planes and timings).
SMALL = ["blocks_per_plane=64", "pages_per_block=64", "user_capacity_bytes=1792MiB"]
#: A drive that takes no time to speak of: the emulator's own path is the ceiling.
FAST = SMALL + ["controller_cmd_us=0.01", "host_link_mbps=1000000", "write_buffer_bytes=1GiB"]


def fio_randwrite(device: str, duration_s: float, rate_iops: int | None = None) -> dict:
    rate = [f"--rate_iops={rate_iops}"] if rate_iops else []
    r = subprocess.run(["fio", "--name=emu", f"--filename={device}", "--ioengine=libaio", "--direct=1",
                        "--rw=randwrite", "--bs=4k", "--iodepth=32", "--time_based", f"--runtime={duration_s:g}",
                        "--output-format=json", *rate], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"bench: fio failed:\n{r.stdout}\n{r.stderr}")
    return json.loads(r.stdout[r.stdout.index("{"):])["jobs"][0]["write"]


def run(sets: list[str], duration_s: float, rate_iops: int | None = None) -> dict:
    """One emulator, one fio job: fio's IOPS and the replies' lateness during the job."""
    with tempfile.TemporaryDirectory(prefix="ssdlab-bench-emu-") as run_dir:
        os.environ["SSDLAB_RUN_DIR"] = run_dir
        with emu.EmulatedDrive(load_profile("default", sets)) as drive:
            before = drive.counters()
            write = fio_randwrite(drive.device, duration_s, rate_iops)
            late = emu.lateness(drive.counters(), before)
    return {"iops": write["iops"], "p50_late_us": late["p50_late_s"] * 1e6, "p99_late_us": late["p99_late_s"] * 1e6,
            "late_share": late["late_share"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3, help="runs of each job (default: %(default)s)")
    ap.add_argument("--duration", type=float, default=5.0, help="seconds of fio per run (default: %(default)s)")
    a = ap.parse_args()
    rec = Recorder("emulate", vars(a))
    print(f"emulated drive, 4 KiB random writes QD32, {a.duration:g} s x {a.runs}; {machine()}")
    figures = {}
    for label, sets, rate in (("ceiling", FAST, None), ("at_20k", [], 20_000), ("at_50k", [], 50_000)):
        rows = [run(sets, a.duration, rate) for _ in range(a.runs)]
        med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        print(f"{label:>8}: IOPS {med['iops']:>9,.0f}  late p50 <= {med['p50_late_us']:,.0f} us  "
              f"p99 <= {med['p99_late_us']:,.0f} us  {100 * med['late_share']:.2f} % later than "
              f"{emu.LATE_NS // 1000} us   (runs: {', '.join(format(r['iops'], ',.0f') for r in rows)} IOPS)")
        figures[f"{label}_iops"] = med["iops"]
        if rate:
            figures.update({f"{label}_p50_late_us": med["p50_late_us"], f"{label}_p99_late_us": med["p99_late_us"],
                            f"{label}_late_share": med["late_share"]})
    rec.write(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
