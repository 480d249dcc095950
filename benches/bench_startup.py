#!/usr/bin/env python3
"""How long a short ``ssdlab run`` takes from the shell: start-up, a 1 s job, results, report.

The job: 4 KiB random writes at QD32 (libaio, direct), ``--runtime=1 --time_based``, on the
default drive scaled to 1.75 GiB (same dies and timings), writing series, summary and
report.html (no PNG/SVG: that is ``--plots``, timed as a second row). A grid point, a fit's
candidate and a scripted call pay this per run, so it should be simulation, not start-up.
References measured in the same run: ``python -c pass`` and ``ssdlab --help``.

Each command runs once to warm the page cache and write bytecode (as an installed package
has it), then ``--runs`` times; medians of wall time and CPU time (user + system of the
child). One record in benches/records/startup.jsonl.

    benches/bench_startup.py [--runs 5]
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from records import Recorder, machine  # noqa: E402

SMALL = ["--set", "blocks_per_plane=64", "--set", "pages_per_block=64", "--set", "user_capacity_bytes=1792MiB"]
JOB = ["--name=w", "--rw=randwrite", "--bs=4k", "--iodepth=32", "--ioengine=libaio", "--direct=1",
       "--runtime=1", "--time_based"]


def timed(cmd: list[str], env: dict) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of one run of ``cmd``; fails on a non-zero exit."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5, help="timed runs of each command (default: %(default)s)")
    args = ap.parse_args()
    rec = Recorder("startup", vars(args))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    ssdlab = [sys.executable, "-m", "ssdlab"]
    print(f"a 1 s `ssdlab run` on a 1.75 GiB simulated drive, {args.runs} runs each; {machine()}")
    with tempfile.TemporaryDirectory(prefix="ssdlab-startup-") as tmp:
        commands = {
            "python": [sys.executable, "-c", "pass"],
            "help": ssdlab + ["--help"],
            "run": ssdlab + ["run", *JOB, *SMALL, "--out", f"{tmp}/run", "--force"],
            "run_plots": ssdlab + ["run", *JOB, *SMALL, "--plots", "--out", f"{tmp}/plots", "--force"],
        }
        figures: dict[str, float] = {}
        print(f"{'command':<10} {'wall s':>8} {'CPU s':>8}   (medians)")
        for name, cmd in commands.items():
            timed(cmd, env)
            runs = [timed(cmd, env) for _ in range(args.runs)]
            wall, cpu = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
            figures[f"{name}_wall_s"], figures[f"{name}_cpu_s"] = round(wall, 3), round(cpu, 3)
            print(f"{name:<10} {wall:>8.3f} {cpu:>8.3f}")
    print(f"run / python: {figures['run_wall_s'] / figures['python_wall_s']:.1f}x wall")
    rec.write(figures)


if __name__ == "__main__":
    main()
