#!/usr/bin/env python3
"""Whole-drive fills of today's built-in drives at full size, against the reviews they cite.

Runs ``ssdlab fill`` (1 MiB sequential writes at QD1 over the erased drive, throughput every
0.5 s, then a 60 s pause and a second burst) on ``tlc-direct``, ``tlc-fold`` and ``qlc``,
each in a child process, and prints per drive the phases found (end [GB], MB/s), the fill's
average and the cache size next to TechPowerUp's published figures, with the deviation in
percent, the static SLC cache against the largest the NAND holds beside the user capacity,
plus wall and CPU time and peak memory of the run. ``tests/test_todays_drives.py``
checks the same at 1/32 of the size.

Then the speed of a big fill: the ``qlc`` drive at 4 TB (4096 blocks per plane), filled
without the pause and second burst, ``--big-runs`` times; each run's wall and CPU time and the
median wall time (target: at most 20 s). On a virtual machine, the first touch of memory the
host has not backed yet costs extra (up to ~2 s per GB); the CPU time shows the simulator's
own share.

    benches/bench_todays_drives.py [--drives tlc-direct,tlc-fold,qlc] [--big-runs 3]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_consistency import run_child  # noqa: E402
from records import Recorder, machine  # noqa: E402

#: Published (TechPowerUp): cache size [GB], rate after it [MB/s], fill average [MB/s], and
#: where the review gives one, the end of the second phase [GB] and the rate after it.
PUBLISHED = {
    "tlc-direct": {"review": "Samsung 980 Pro 1 TB", "cache_gb": 113, "cache_mbps": 4000, "post_mbps": 1500,
                   "average_mbps": 1900},
    "tlc-fold": {"review": "Kingston A2000 1 TB", "cache_gb": 150, "cache_mbps": 2000, "post_mbps": 500,
                 "second_end_gb": 600, "third_mbps": 400, "average_mbps": 480},
    "qlc": {"review": "HP FX700 2 TB", "cache_gb": 54, "cache_mbps": 5000, "post_mbps": 3500,
            "second_end_gb": 460, "third_mbps": 130, "average_mbps": 168},
}


#: The big fill: the qlc drive at 4 TB.
BIG_FILL = ["--set", "blocks_per_plane=4096", "--set", "user_capacity_bytes=4000000000000", "--pause", "0"]


def fill(profile: str, *args: str) -> tuple[dict, float, float, int]:
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "ssdlab", "fill", "--target", f"sim:{profile}", "--out", out,
               "--no-progress", *args]
        wall, cpu, peak = run_child(cmd)
        return json.loads((Path(out) / "summary.json").read_text()), wall, cpu, peak


def row(what: str, got: float, want: float | None) -> str:
    dev = f"{100 * (got / want - 1):+6.1f} %" if want else ""
    return f"  {what:<28} {got:>10,.1f} {'' if want is None else f'{want:>10,}':>10} {dev}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--drives", default=",".join(PUBLISHED), help="profiles to fill (default: %(default)s)")
    ap.add_argument("--big-runs", type=int, default=3, help="runs of the 4 TB qlc fill (0: none; default: %(default)s)")
    args = ap.parse_args()
    rec = Recorder("todays_drives", vars(args))
    figures = {}
    print(f"Whole-drive fills at full size; {machine()}")
    for name in filter(None, args.drives.split(",")):
        if name not in PUBLISHED:
            ap.error(f"--drives: {name!r} has no published fill here; choose from {', '.join(PUBLISHED)}")
        s, wall, cpu, peak = fill(name)
        pub = PUBLISHED[name]
        phases = s["phases"]
        print(f"{name} ({pub['review']}): {wall:.1f} s wall, {cpu:.1f} s CPU, peak {peak / 2**20:,.0f} MiB")
        print(f"  {'':<28} {'simulated':>10} {'published':>10}")
        print(row("cache size [GB]", s["cache_bytes"] / 1e9, pub["cache_gb"]))
        print(row("cache rate [MB/s]", phases[0]["mbps"], pub["cache_mbps"]))
        print(row("rate after the cache [MB/s]", phases[1]["mbps"], pub["post_mbps"]))
        if "second_end_gb" in pub and len(phases) > 2:
            print(row("second phase ends [GB]", phases[1]["end_gb"], pub["second_end_gb"]))
            print(row("third rate [MB/s]", phases[2]["mbps"], pub["third_mbps"]))
        print(row("fill average [MB/s]", s["fill_mbps_mean"], pub["average_mbps"]))
        geo, static_bytes = s["geometry"], s["profile"]["slc_static_bytes"]
        print(f"  static SLC cache {static_bytes / 1e9:.1f} GB ({geo['slc_static_nand_bytes'] / 1e9:.1f} GB of NAND); "
              f"the NAND holds at most {geo['slc_static_max_bytes'] / 1e9:.1f} GB")
        figures.update({f"{name}_cache_gb": s["cache_bytes"] / 1e9, f"{name}_fill_mbps": s["fill_mbps_mean"],
                        f"{name}_wall_s": wall})
        print("  phases: " + ", ".join(f"{p['start_gb']:.0f}-{p['end_gb']:.0f} GB {p['mbps']:,.0f} MB/s" for p in phases))

    walls = []
    for run in range(args.big_runs):
        s, wall, cpu, peak = fill("qlc", *BIG_FILL)
        walls.append(wall)
        print(f"qlc at 4 TB, run {run + 1}: {wall:.1f} s wall, {cpu:.1f} s CPU, peak {peak / 2**30:.1f} GiB, "
              f"{s['written_bytes'] / 1e12:.2f} TB written at {s['fill_mbps_mean']:,.0f} MB/s simulated")
    if walls:
        print(f"qlc at 4 TB: median {statistics.median(walls):.1f} s wall over {len(walls)} runs (target <= 20 s)")
        figures["qlc_4tb_fill_wall_s"] = statistics.median(walls)
    rec.write(figures)


if __name__ == "__main__":
    main()
