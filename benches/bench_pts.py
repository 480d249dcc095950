#!/usr/bin/env python3
"""Wall time of the whole PTS suite (``ssdlab pts``, every test, spec durations: 60 s rounds,
WSAT to 4 capacities or 6 h, HIR 360 cycles and 1800 s returns, XSR 8/6/8 h, 49 DIRTH points)
on the default simulated 256 GB drive, as a child process; target <= 15 min.

    benches/bench_pts.py [--variant client|enterprise] [--test LIST]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from records import Recorder  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variant", default="client", choices=("client", "enterprise"))
    ap.add_argument("--test", default="iops,tp,lat,wsat,hir,xsr,cbw,dirth")
    a = ap.parse_args()
    rec = Recorder("pts", vars(a))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "pts"
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "ssdlab", "pts", "--variant", a.variant, "--test", a.test,
                               "--no-progress", "--out", str(out)], capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            print(proc.stdout, proc.stderr, file=sys.stderr)
            return proc.returncode
        s = json.loads((out / "summary.json").read_text())
        rounds = {k: v.get("rounds") if "rounds" in v else {kk: vv["rounds"] for kk, vv in v.items()}
                  for k, v in s["pts"]["steady_state"].items()}
        print(proc.stdout, end="")
        print(f"PTS {a.variant} ({a.test}) on {s['target']} ({s['capacity_bytes'] / 1e9:,.0f} GB): "
              f"wall {wall:,.1f} s (target <= 900 s); rounds to steady state: {rounds}")
        rec.write({"wall_s": wall})
    return 0


if __name__ == "__main__":
    sys.exit(main())
