#!/usr/bin/env python3
"""The real-drive path against known truth, at length: the same tests on ``sim:P`` (the
simulator's own path) and ``emu:P`` (the same drive served as a block device and tested
through fio), and how far apart their figures are. The short versions run in the test suite
(tests/test_emu_target.py); these run longer and on more drives.

- ``consistency`` on default (1.75 GiB), cleanup-later and stalling (2 GiB, 4 planes): floor IOPS (median
  after the first 10 % of the run), median per-second relative difference, zero-IOPS seconds,
  longest stall, write amplification (emu: from the emulated drive's counters).
- ``recovery`` on default (2 GiB, 4 planes; 1 min torture, 1 min idle, sampled sweeps): write MB/s of
  each stage (clean, after torture, after idle, after TRIM) on both.

One record in benches/records/emu_differential.jsonl. Runs in real time on the emulated side
(about 12 min). Needs root, /dev/fuse, loop devices and fio.

    benches/bench_emu_differential.py [--duration 120] [--slowdown 1]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from records import Recorder, machine  # noqa: E402

from ssdlab import cli  # noqa: E402

SMALL = ["blocks_per_plane=64", "pages_per_block=64", "user_capacity_bytes=1792MiB"]
#: 2 GiB over 4 planes of 137 blocks: stalls of seconds within a minute of random writes.
FOUR_PLANES = ["channels=2", "dies_per_channel=1", "planes_per_die=2", "blocks_per_plane=137",
               "user_capacity_bytes=2GiB"]
DRIVES = {"default": SMALL, "cleanup-later": FOUR_PLANES, "stalling": FOUR_PLANES}
STAGES = ("clean", "after_torture", "after_idle", "after_trim")


def _run(args: list[str], out: Path) -> dict:
    status = cli.main([*args, "--out", str(out), "--no-progress"])
    if status != 0:
        raise SystemExit(f"bench: ssdlab {' '.join(args)} exited {status}")
    return json.loads((out / "summary.json").read_text())


def _slowdown(kind: str, slowdown: float) -> list[str]:
    return ["--set", f"slowdown={slowdown:g}"] if kind == "emu" and slowdown != 1 else []


def consistency(profile: str, duration_s: int, work: Path, slowdown: float = 1.0) -> dict:
    sets = [a for kv in DRIVES[profile] for a in ("--set", kv)]
    runs = {}
    for kind in ("sim", "emu"):
        out = work / f"{kind}-{profile}"
        s = _run(["consistency", "--target", f"{kind}:{profile}", *sets, *_slowdown(kind, slowdown),
                  "--duration", str(duration_s)], out)
        runs[kind] = (s, np.asarray(pq.read_table(out / "series.parquet")["iops"], float))
    (sim, a), (emu, b) = runs["sim"], runs["emu"]
    n = min(len(a), len(b))
    floor = slice(max(1, n // 10), n)
    both = (a[floor] > 0) & (b[floor] > 0)
    return {"floor_iops_sim": float(np.median(a[floor])), "floor_iops_emu": float(np.median(b[floor])),
            "per_second_rel_diff_median": float(np.median(np.abs(b[floor][both] / a[floor][both] - 1)))
            if both.any() else None,
            "zero_s_sim": sim["zero_iops_seconds"], "zero_s_emu": emu["zero_iops_seconds"],
            "longest_stall_s_sim": sim["longest_stall_s"], "longest_stall_s_emu": emu["longest_stall_s"],
            "wa_sim": sim["write_amplification"], "wa_emu": emu["write_amplification"],
            "late_share_emu": emu["target_info"]["emulator"]["lateness"]["late_share"]}


def recovery(work: Path, slowdown: float = 1.0) -> dict:
    out = {}
    for kind in ("sim", "emu"):
        sets = [a for kv in FOUR_PLANES for a in ("--set", kv)] + _slowdown(kind, slowdown)
        s = _run(["recovery", "--target", f"{kind}:default", *sets, "--torture-min", "1",
                  "--idle-min", "1", "--zones", "10", "--zone-bytes", "sample"], work / f"{kind}-recovery")
        out.update({f"{stage}_write_mbps_{kind}": s["stages"][stage]["write_mbps_mean"] for stage in STAGES})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=int, default=120, help="seconds of random writes per consistency run "
                                                                  "(default: %(default)s)")
    ap.add_argument("--slowdown", type=float, default=1.0,
                    help="the emulated drive's slowdown K (wall seconds per drive second; default: %(default)s): "
                         "K > 1 keeps a loaded host's late replies small against the drive's times")
    a = ap.parse_args()
    rec = Recorder("emu_differential", vars(a) if a.slowdown != 1 else {"duration": a.duration})
    print(f"sim: vs emu: (slowdown {a.slowdown:g}), consistency {a.duration} s and recovery; {machine()}")
    figures = {}
    with tempfile.TemporaryDirectory(prefix="ssdlab-bench-emu-diff-") as work:
        os.environ.setdefault("SSDLAB_RUN_DIR", str(Path(work) / "run"))
        for profile in DRIVES:
            f = consistency(profile, a.duration, Path(work), a.slowdown)
            print(f"consistency {profile}: " + ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                                                         for k, v in f.items()), flush=True)
            figures.update({f"{profile}_{k}": v for k, v in f.items() if v is not None})
        f = recovery(Path(work), a.slowdown)
        print("recovery default: " + ", ".join(f"{k} {v:.4g}" for k, v in f.items()))
        figures.update({f"recovery_{k}": v for k, v in f.items()})
    rec.write(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
