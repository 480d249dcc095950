#!/usr/bin/env python3
"""Peak memory of long simulated runs: does anything grow with the bytes written?

Part 1 runs ``ssdlab run`` with 4 KiB random writes at QD32 over the whole simulated drive
(fio's ``norandommap``), once writing 1x the user capacity and once --multiple times it
(20x by default), each as a child process, and reports per run the peak resident memory
[MiB] (``wait4`` rusage), the series intervals, wall and CPU time [s], and the growth of the
long run over the short one: in MiB, in percent, and in bytes per extra interval (the series
itself is 8 bytes per column and interval; anything above that is overhead that grows with
the run).

Part 2 (``--trace-passes N``, default 10) runs the JEDEC-like TRIM trace test with N passes
per variant and reports that it completed, its wall and CPU time and peak memory, next to
the same test with 1 pass.

    benches/bench_long_run.py [--drive 256G] [--multiple 20] [--runs 1] [--trace-passes 10]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_consistency import DRIVES, run_child  # noqa: E402
from records import Recorder, machine  # noqa: E402

MIB = 2**20


def capacity_bytes(drive: str) -> int:
    """User capacity [bytes] of the simulated drive ``drive`` (a key of DRIVES)."""
    from ssdlab.profiles import load_profile
    from ssdlab.targets.sim import SimTarget

    sets = [v for k, v in zip(DRIVES[drive][::2], DRIVES[drive][1::2]) if k == "--set"]
    return SimTarget(load_profile("default", sets)).capacity_bytes


def random_write_run(drive: str, io_bytes: int) -> dict:
    """One ``ssdlab run`` of 4 KiB random writes at QD32 writing ``io_bytes`` in all."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "ssdlab", "run", "--name=long", "--rw=randwrite", "--bs=4k",
               "--iodepth=32", "--norandommap=1", f"--io_size={io_bytes}", "--out", out, "--no-progress",
               *DRIVES[drive]]
        wall, cpu, peak_bytes = run_child(cmd)
        summary = json.loads((Path(out) / "summary.json").read_text())
        from ssdlab.results import read_series

        series = read_series(Path(out) / "series")
    return {"wall_s": wall, "cpu_s": cpu, "peak_mib": peak_bytes / MIB, "intervals": len(series["t_s"]),
            "columns": len(series), "wa": summary.get("write_amplification")}


def trace_run(drive: str, passes: int) -> dict:
    """The JEDEC-like trace test (QD32 and QD1, with and without TRIM) with ``passes``."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "ssdlab", "trace", "run", "jedec-like", "--passes", str(passes),
               "--out", out, "--no-progress", *DRIVES[drive]]
        wall, cpu, peak_bytes = run_child(cmd)
        summary = json.loads((Path(out) / "summary.json").read_text())
    rows = summary["variants"]
    return {"wall_s": wall, "cpu_s": cpu, "peak_mib": peak_bytes / MIB, "complete": summary.get("complete"),
            "written_bytes": sum(r["host_write_bytes"] for r in rows), "rows": len(rows)}


def med(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--drive", default="256G", choices=list(DRIVES), help="simulated drive (default: %(default)s)")
    ap.add_argument("--multiple", type=int, default=20,
                    help="the long run writes this many times the user capacity (default: %(default)s)")
    ap.add_argument("--runs", type=int, default=1, help="runs of each (medians are quoted; default: %(default)s)")
    ap.add_argument("--trace-passes", type=int, default=10,
                    help="passes of the trace test in part 2; 0 skips it (default: %(default)s)")
    args = ap.parse_args()
    if args.multiple < 2 or args.runs < 1 or args.trace_passes < 0:
        ap.error("--multiple must be >= 2, --runs >= 1, --trace-passes >= 0")
    rec = Recorder("long_run", vars(args))
    cap = capacity_bytes(args.drive)
    print(f"Long runs on the simulated {args.drive} drive ({cap / 1e9:.0f} GB); {machine()}")
    short = [random_write_run(args.drive, cap) for _ in range(args.runs)]
    long = [random_write_run(args.drive, args.multiple * cap) for _ in range(args.runs)]
    print(f"{'run':<26} {'intervals':>10} {'peak MiB':>9} {'wall s':>8} {'CPU s':>8} {'WA':>6}")
    for label, runs in (("1x capacity", short), (f"{args.multiple}x capacity", long)):
        print(f"{label:<26} {runs[0]['intervals']:>10,} {med(runs, 'peak_mib'):>9.0f} {med(runs, 'wall_s'):>8.1f} "
              f"{med(runs, 'cpu_s'):>8.1f} {runs[0]['wa'] or float('nan'):>6.2f}")
    grow = med(long, "peak_mib") - med(short, "peak_mib")
    extra = long[0]["intervals"] - short[0]["intervals"]
    per = grow * MIB / extra if extra > 0 else float("nan")
    print(f"growth: {grow:+.0f} MiB ({100 * grow / med(short, 'peak_mib'):+.1f} %), {per:.0f} bytes per extra "
          f"interval (the series is {8 * long[0]['columns']} bytes per interval: {long[0]['columns']} columns)")
    figures = {"short_peak_mib": med(short, "peak_mib"), "long_peak_mib": med(long, "peak_mib"),
               "long_wall_s": med(long, "wall_s"), "long_cpu_s": med(long, "cpu_s"), "bytes_per_extra_interval": per}
    if args.trace_passes:
        one = trace_run(args.drive, 1)
        many = trace_run(args.drive, args.trace_passes)
        print(f"{'trace test':<26} {'complete':>10} {'peak MiB':>9} {'wall s':>8} {'CPU s':>8} {'TB written':>10}")
        for label, r in (("1 pass", one), (f"{args.trace_passes} passes", many)):
            print(f"{label:<26} {str(r['complete']):>10} {r['peak_mib']:>9.0f} {r['wall_s']:>8.1f} {r['cpu_s']:>8.1f} "
                  f"{r['written_bytes'] / 1e12:>10.2f}")
        figures.update({"trace_many_peak_mib": many["peak_mib"], "trace_many_wall_s": many["wall_s"]})
    rec.write(figures)


if __name__ == "__main__":
    main()
