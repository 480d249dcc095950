#!/usr/bin/env python3
"""The seed archetypes at full size, against the seeds' numbers.

Runs ``ssdlab consistency`` (256 GB, 2000 s of 4 KiB random writes at QD32 after the fill)
on ``stalling`` (0.1 s intervals, as the seed's reader measured bursts) and
``cleanup-later`` (1 s intervals, as the review's graph), each at the full span and with
extra spare area, and prints for the seconds t >= 1400 s (where the reviews zoom) the
shape statistics next to the seeds':

- stalling (seed 001, a reader's measurement): bursts (> 30K IOPS, the "32,000+ IOPS" mode;
  dips of up to 0.25 s inside a burst joined) of ~0.4 s every ~7 s,
  ~6 % of the time, at 0 % extra spare; every ~1.4 s, ~30 %, with 20 % (``--span 80``),
  which raises the average about 5x;
- cleanup-later (seed 004): ~7K IOPS with drops to 0 about every third second; with 25 %
  spare (``--span 75``) no zero and a minimum above 20K.

    benches/bench_archetypes.py [--profiles stalling,cleanup-later]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

from ssdlab import analysis

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_consistency import run_child  # noqa: E402
from records import Recorder, machine  # noqa: E402

#: From when the seeds' graphs are read [s].
T0_S = 1400.0
#: IOPS above which an interval counts as a burst (stalling) or as working (cleanup-later).
HIGH_IOPS = {"stalling": 30_000, "cleanup-later": 1_000}
RUNS = {
    "stalling": [(100.0, 0.1), (80.0, 0.1)],
    "cleanup-later": [(100.0, 1.0), (75.0, 1.0)],
}
SEED = {
    ("stalling", 100.0): "bursts ~0.4 s every ~7 s, ~6 % high",
    ("stalling", 80.0): "bursts ~0.4 s every ~1.4 s, ~30 % high, ~5x the 0 % average",
    ("cleanup-later", 100.0): "~7K IOPS, 0 IOPS about every third second",
    ("cleanup-later", 75.0): "no 0 IOPS, minimum above 20K",
}


def shape(iops: np.ndarray, dt_s: float, high_iops: float) -> dict:
    """Burst (``analysis.burst_stats``) and stall (``analysis.zero_runs``) statistics of a
    steady-state IOPS series at ``dt_s`` intervals."""
    bursts = analysis.burst_stats(iops, high_iops, dt_s, max_gap_s=analysis.BURST_JOIN_S)
    zero_starts, zero_lengths = analysis.zero_runs(iops)
    return {
        "mean": float(iops.mean()), "median": float(np.median(iops)), "min": float(iops.min()),
        "high_share": bursts["high_share"],
        "high_run_s": bursts["burst_mean_s"] or 0.0,
        "high_period_s": bursts["burst_period_s"] or float("nan"),
        "zero_share": float((iops == 0).mean()),
        "zero_run_s": float(zero_lengths.mean() * dt_s) if zero_lengths.size else 0.0,
        "zero_period_s": float(np.diff(zero_starts).mean() * dt_s) if zero_starts.size > 1 else float("nan"),
    }


def consistency(profile: str, span_pct: float, interval_s: float) -> tuple[dict, float]:
    from ssdlab.results import read_series

    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "ssdlab", "consistency", "--target", f"sim:{profile}", "--span",
               str(span_pct), "--interval", str(interval_s), "--out", out, "--no-progress"]
        wall, _, _ = run_child(cmd)
        s = read_series(Path(out) / "series")
    t, iops = np.asarray(s["t_s"]), np.asarray(s["iops"], dtype=np.float64)
    return shape(iops[t >= T0_S], interval_s, HIGH_IOPS[profile]), wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profiles", default=",".join(RUNS), help="archetypes to run (default: %(default)s)")
    args = ap.parse_args()
    rec = Recorder("archetypes", vars(args))
    figures = {}
    print(f"Seed archetypes at full size, t >= {T0_S:.0f} s; {machine()}")
    for profile in args.profiles.split(","):
        if profile not in RUNS:
            ap.error(f"--profiles: {profile!r} is not a seed archetype here; choose from {', '.join(RUNS)}")
        means = {}
        for span_pct, interval_s in RUNS[profile]:
            m, wall = consistency(profile, span_pct, interval_s)
            means[span_pct] = m["mean"]
            print(f"{profile} --span {span_pct:.0f} ({interval_s} s intervals, {wall:.0f} s wall): "
                  f"mean {m['mean']:,.0f} median {m['median']:,.0f} min {m['min']:,.0f} IOPS; "
                  f"> {HIGH_IOPS[profile]:,} IOPS {100 * m['high_share']:.1f} % in runs of {m['high_run_s']:.2f} s "
                  f"every {m['high_period_s']:.2f} s; 0 IOPS {100 * m['zero_share']:.1f} % in runs of "
                  f"{m['zero_run_s']:.2f} s every {m['zero_period_s']:.2f} s")
            print(f"  seed: {SEED[(profile, span_pct)]}")
            key = f"{profile}_span{span_pct:.0f}"
            figures.update({f"{key}_mean_iops": m["mean"], f"{key}_zero_share": m["zero_share"],
                            f"{key}_high_share": m["high_share"], f"{key}_wall_s": wall})
        spans = sorted(means)
        if len(spans) == 2 and means[spans[1]]:
            print(f"  average with extra spare / without: {means[spans[0]] / means[spans[1]]:.1f}x")
    rec.write(figures)


if __name__ == "__main__":
    main()
