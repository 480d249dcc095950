#!/usr/bin/env python3
"""Wall time and peak memory of the JEDEC-like TRIM trace test on a simulated drive.

Runs ``ssdlab trace run jedec-like`` (per variant: purge, sequential fill, one pass of the
JEDEC-client-like trace writing 800/256 of the span; variants QD32 and QD1, each with and
without TRIM: the seed's four runs, ~3.2 TB written on 256 GB) as a child process, several
times, and reports the median wall time [s], the median CPU time of the child [s] (user +
system, ``wait4`` rusage: steadier than wall time when other work shares the cores), the
median peak resident memory [GiB], the commands replayed and commands per wall second, and the
average IOPS and write amplification per variant from the first run.

    benches/bench_trace.py [--runs N] [--drive 256G] [--profile default] [--rows-json PATH]

On the simulator the four variants run side by side, one per core (see
``ssdlab.procedures.trace_replay``), so wall time is below CPU time when cores are free.
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


def run_once(drive: str, profile: str, extra: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "ssdlab", "trace", "run", "jedec-like", "--target", f"sim:{profile}",
               "--out", out, "--no-progress", *DRIVES[drive], *extra]
        wall, cpu, peak_bytes = run_child(cmd)
        peak_gib = peak_bytes / 2**30
        summary = json.loads((Path(out) / "summary.json").read_text())
    rows = summary["variants"]
    return {"wall_s": wall, "cpu_s": cpu, "peak_gib": peak_gib, "commands": sum(r["commands"] for r in rows),
            "written_bytes": sum(r["host_write_bytes"] for r in rows), "rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3, help="runs (default: %(default)s)")
    ap.add_argument("--drive", default="256G", choices=list(DRIVES), help="drive size (default: %(default)s)")
    ap.add_argument("--profile", default="default", help="built-in profile (default: %(default)s)")
    ap.add_argument("--rows-json", metavar="PATH", help="write the first run's per-variant rows (summary.json's "
                    "`variants`) to PATH, to compare builds: a speed-up must leave them identical")
    ap.add_argument("extra", nargs="*", help="more `ssdlab trace run` options after --, e.g. -- --passes 2")
    args = ap.parse_args()
    rec = Recorder("trace", {k: v for k, v in vars(args).items() if k != "rows_json"})
    print(f"JEDEC-like trace test on {args.drive} sim:{args.profile}, {args.runs} runs; {machine()}")
    runs = [run_once(args.drive, args.profile, args.extra) for _ in range(args.runs)]
    walls = [r["wall_s"] for r in runs]
    med = statistics.median(walls)
    first = runs[0]
    if args.rows_json:
        Path(args.rows_json).write_text(json.dumps(first["rows"], indent=1, sort_keys=True))
    cpus = [r["cpu_s"] for r in runs]
    print(f"median CPU {statistics.median(cpus):.1f} s (min {min(cpus):.1f}, max {max(cpus):.1f})")
    print(f"median wall {med:.1f} s (min {min(walls):.1f}, max {max(walls):.1f}); peak "
          f"{statistics.median(r['peak_gib'] for r in runs):.2f} GiB; {first['commands']:,} commands, "
          f"{first['written_bytes'] / 1e12:.2f} TB written by the replays; {first['commands'] / med:,.0f} commands/s")
    print(f"{'variant':<14} {'commands':>12} {'IOPS avg':>10} {'MB/s':>8} {'WA':>6} {'sim s':>10}")
    for r in first["rows"]:
        print(f"{r['variant']:<14} {r['commands']:>12,} {r['iops_mean']:>10,.0f} {r['mbps_mean']:>8.1f} "
              f"{r['write_amplification']:>6.2f} {r['duration_s']:>10,.0f}")
    rec.write({"cpu_s": statistics.median(cpus), "wall_s": med, "commands": first["commands"],
               "commands_per_wall_s": first["commands"] / med})


if __name__ == "__main__":
    main()
