#!/usr/bin/env python3
"""The ceiling of ``ssdlab emulate``: 4 KiB random writes at QD32 (fio, libaio, direct) on
the emulated device, for a drive whose own latency is next to nothing (controller 0.01 us,
a 1 TB/s host link, a 1 GiB write buffer: the simulated drive alone would take millions of
IOPS), so what is measured is the emulator's path (loop device, FUSE, the simulator call,
the completion thread). Also the same job on the scaled-down default drive, whose simulated
ceiling is its controller's (~90K IOPS at 11 us per command).

Reports fio's IOPS and mean completion latency [us] per drive, how late the replies were
sent after their simulated completion time (mean and most [us]), and the machine. Needs root, /dev/fuse, loop
devices and fio.

    benches/bench_emulate.py [--duration 5] [--qd 32]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_consistency import machine_info  # noqa: E402

#: The default drive scaled down to 1.75 GiB (same dies, planes and timings).
SMALL = ["blocks_per_plane=64", "pages_per_block=64", "user_capacity_bytes=1792MiB"]
#: A drive that takes no time to speak of: the emulator's own path is the ceiling.
FAST = SMALL + ["controller_cmd_us=0.01", "host_link_mbps=1000000", "write_buffer_bytes=1GiB"]


def run(sets: list[str], duration_s: float, qd: int) -> dict:
    args = [a for kv in sets for a in ("--set", kv)]
    with tempfile.TemporaryDirectory(prefix="ssdlab-bench-emu-") as run_dir:
        env = {**os.environ, "SSDLAB_RUN_DIR": run_dir}
        emu = subprocess.Popen([sys.executable, "-m", "ssdlab.cli", "emulate", "default", *args],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            device = next((line.split()[1] for line in emu.stdout if line.startswith("device: ")), None)
            if device is None:
                raise SystemExit(f"bench: ssdlab emulate printed no device:\n{emu.stderr.read()}")
            r = subprocess.run(["fio", "--name=ceiling", f"--filename={device}", "--ioengine=libaio", "--direct=1",
                                "--rw=randwrite", "--bs=4k", f"--iodepth={qd}", "--time_based",
                                f"--runtime={duration_s:g}", "--output-format=json"],
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise SystemExit(f"bench: fio failed:\n{r.stdout}\n{r.stderr}")
            write = json.loads(r.stdout[r.stdout.index("{"):])["jobs"][0]["write"]
        finally:
            emu.send_signal(signal.SIGINT)
            out, err = emu.communicate(timeout=60)
        late = [line for line in out.splitlines() if line.startswith("stopped: ")]
        m = re.search(r"replies (\d+) us \(at most (\d+) us\)", late[-1]) if late else None
        mean_late_us, max_late_us = (int(m.group(1)), int(m.group(2))) if m else (None, None)
        return {"iops": round(write["iops"]), "clat_mean_us": round(write["clat_ns"]["mean"] / 1000, 1),
                "mean_late_us": mean_late_us, "max_late_us": max_late_us, "exit": emu.returncode}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=5.0, help="seconds of fio per drive (default: %(default)s)")
    ap.add_argument("--qd", type=int, default=32, help="fio iodepth (default: %(default)s)")
    a = ap.parse_args()
    result = {"machine": {**machine_info(), "loadavg_1min": os.getloadavg()[0]},
              "job": f"4 KiB random writes, QD{a.qd}, {a.duration:g} s, fio libaio direct",
              "near-zero-latency drive": run(FAST, a.duration, a.qd),
              "default drive (1.75 GiB)": run(SMALL, a.duration, a.qd)}
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
