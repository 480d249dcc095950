#!/usr/bin/env python3
"""What each built-in profile's consistency run shows, at full size: the figures the README's
profile tables quote.

Runs ``ssdlab consistency --target sim:NAME`` (sequential fill, then 2000 s of 4 KiB random
writes at QD32 over the whole drive, IOPS per second) for every built-in profile, each in a
child process, and prints per profile the figures the command prints and stores: mean and
minimum IOPS, zero-IOPS seconds, the longest stall, the maximum completion latency, the
steady state's onset, IOPS and write amplification; then the same as Markdown rows for the
README. With ``--capacity SIZE`` each drive is scaled to that user capacity (``--set
capacity=SIZE``), and its spare fraction is printed too.

    benches/bench_profile_rows.py [--profiles default,active-gc,...] [--duration 2000] [--capacity 16GiB]
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_consistency import run_child  # noqa: E402
from records import Recorder, machine  # noqa: E402

from ssdlab import profiles  # noqa: E402


def run(name: str, duration_s: float, capacity: str | None = None) -> tuple[dict, float]:
    """One consistency run of profile ``name``, scaled to ``capacity`` if given: its summary and wall time [s]."""
    scale = ["--set", f"capacity={capacity}"] if capacity else []
    with tempfile.TemporaryDirectory() as out:
        wall, _, _ = run_child([sys.executable, "-m", "ssdlab", "consistency", "--target", f"sim:{name}",
                                "--duration", str(duration_s), "--out", out, "--no-progress", *scale])
        return json.loads((Path(out) / "summary.json").read_text()), wall


def row(s: dict) -> str:
    """The figures as the README quotes them."""
    onset = s.get("steady_state_onset_s")
    steady = (f"steady from {onset:,.0f} s at {s['steady_state_iops_mean']:,.0f} IOPS, WA "
              f"{s['steady_state_write_amplification']:.2f}" if onset is not None else "steady state not reached")
    return (f"mean {s['iops_mean']:,.0f} IOPS, min {s['iops_min']:,.0f}; {s['zero_iops_seconds']:.0f} zero-IOPS "
            f"seconds, longest stall {s['longest_stall_s']:.0f} s; max latency {s['latency_us']['max'] / 1000:,.1f} ms; "
            f"{steady}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profiles", default=",".join(profiles.builtin_names()),
                    help="built-in profiles (default: all: %(default)s)")
    ap.add_argument("--duration", type=float, default=2000.0, help="random-write seconds (default: %(default)s)")
    ap.add_argument("--capacity", metavar="SIZE", help="scale each drive to this user capacity (default: full size)")
    args = ap.parse_args()
    rec = Recorder("profile_rows", {k: v for k, v in vars(args).items() if v is not None})
    print(f"consistency of each built-in profile at {args.capacity or 'full size'}, {args.duration:.0f} s; {machine()}")
    figures, rows = {}, []
    for name in filter(None, args.profiles.split(",")):
        s, wall = run(name, args.duration, args.capacity)
        rows.append(f"| `{name}` | {s['capacity_bytes'] / 1e9:,.0f} GB | {row(s)} |")
        spare = f", spare {s['geometry']['spare_fraction'] * 100:.2f} %" if args.capacity else ""
        print(f"{name}: {row(s)}{spare} ({wall:.0f} s wall)", flush=True)
        figures.update({f"{name}_iops_mean": s["iops_mean"], f"{name}_zero_iops_s": s["zero_iops_seconds"],
                        f"{name}_lat_max_us": s["latency_us"]["max"], f"{name}_wall_s": wall})
        if s.get("steady_state_onset_s") is not None:
            figures.update({f"{name}_steady_iops": s["steady_state_iops_mean"],
                            f"{name}_steady_wa": s["steady_state_write_amplification"]})
    print("\n| profile | capacity | consistency run |\n|---|---|---|")
    print("\n".join(rows))
    rec.write(figures)


if __name__ == "__main__":
    main()
