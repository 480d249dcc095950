#!/usr/bin/env python3
"""Wall time and peak memory of the full consistency test on simulated drives.

Runs ``ssdlab consistency --duration 2000`` (sequential fill + 2000 s of 4 KiB random
writes at QD32, results folder, plots) as a child process, several times per drive, and
reports the median wall time [s], the median peak resident memory of the child [GiB]
(``wait4`` rusage), the simulated host I/Os and the simulated I/Os per wall second.

    benches/bench_consistency.py [--runs N] [--drives 256G,1T,4T] [--duration S]

Drives: 256G is the built-in default profile; 1T and 4T are the same drive with more
blocks per plane (physical 1 TiB / 4 TiB, 7 % spare).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from records import Recorder, machine  # noqa: E402

DRIVES = {
    "256G": [],
    "1T": ["--set", "blocks_per_plane=8192", "--set", "user_capacity_bytes=1024000000000"],
    "4T": ["--set", "blocks_per_plane=32768", "--set", "user_capacity_bytes=4096000000000"],
}


def run_child(cmd: list[str]) -> tuple[float, float, int]:
    """Runs ``cmd``; returns (wall time [s], CPU time of the child [s], peak resident memory
    of the child and the children it waited for [bytes]). Exits naming the command and its
    stderr if it fails. The benchmarks share it."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, rusage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    stderr = proc.stderr.read().decode()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{stderr}")
    return wall, rusage.ru_utime + rusage.ru_stime, rusage.ru_maxrss * 1024


def run_once(drive: str, duration: float, profile: str) -> dict:
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "ssdlab", "consistency", "--target", f"sim:{profile}",
               "--duration", str(duration), "--out", out, "--no-progress", *DRIVES[drive]]
        wall, _, peak_bytes = run_child(cmd)
        peak_gib = peak_bytes / 2**30
        summary = json.loads((Path(out) / "summary.json").read_text())
    ios = summary["fill"]["ios"] + round(summary["iops_mean"] * summary["duration_s"])
    return {"wall_s": wall, "peak_gib": peak_gib, "ios": ios,
            "iops_median": summary["iops_median"], "wa": summary["write_amplification"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3, help="runs per drive (default: %(default)s)")
    ap.add_argument("--drives", default="256G", help="comma-separated: 256G,1T,4T (default: %(default)s)")
    ap.add_argument("--duration", type=float, default=2000.0, help="random-write seconds (default: %(default)s)")
    ap.add_argument("--profile", default="default", help="built-in profile (default: %(default)s)")
    args = ap.parse_args()
    rec = Recorder("consistency", vars(args))
    figures = {}
    print(f"consistency test, {args.duration:.0f} s random write, {args.runs} runs per drive; {machine()}")
    print(f"{'drive':<6} {'median wall s':>14} {'min..max s':>14} {'peak GiB':>9} {'sim IOs':>12} {'sim IO/s':>12} {'WA':>6}")
    for drive in args.drives.split(","):
        runs = [run_once(drive, args.duration, args.profile) for _ in range(args.runs)]
        walls = [r["wall_s"] for r in runs]
        med = statistics.median(walls)
        peak = statistics.median(r["peak_gib"] for r in runs)
        ios = runs[0]["ios"]
        print(f"{drive:<6} {med:>14.2f} {min(walls):>6.2f}..{max(walls):<6.2f} {peak:>9.2f} {ios:>12,} "
              f"{ios / med:>12,.0f} {runs[0]['wa']:>6.2f}")
        figures.update({f"{drive}_wall_s": med, f"{drive}_peak_gib": peak, f"{drive}_sim_io_per_wall_s": ios / med,
                        f"{drive}_wa": runs[0]["wa"]})
    rec.write(figures)


if __name__ == "__main__":
    main()
