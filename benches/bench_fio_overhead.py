#!/usr/bin/env python3
"""What running the consistency test through ssdlab costs compared with plain fio, on a loop device.

Budget (issue 6): ssdlab may cost no more than 3 % of fio's IOPS.

One loop device (default 1 GiB, backing file in /dev/shm so the device is fast and the
comparison is CPU-bound, the case where ssdlab's own work could show) serves every trial.
Each trial runs both arms, alternating which goes first (A B, B A, A B ...):

A. ssdlab: ``ssdlab consistency --target /dev/loopN --destroy-data /dev/loopN --duration D``
   (purge with blkdiscard, sequential fill, D s of 4 KiB random writes QD32, plots, report).
   Its IOPS: ``iops_mean`` from summary.json, what ssdlab reports.
B. plain fio: ``blkdiscard``, then fio on the very job files ssdlab wrote
   (``OUT/fio/*fill*.fio`` and ``OUT/fio/*randwrite*.fio`` of the first ssdlab trial) less
   ssdlab's logging (its per-interval latency-histogram log), so the ratio includes what
   that logging costs. Its IOPS: ``write.iops`` from fio's JSON.

Reports the median IOPS of each arm over the trials, the ratio ssdlab/fio and the machine.
Needs root (loop devices), fio, losetup, blkdiscard.

    benches/bench_fio_overhead.py [--trials 5] [--duration 10] [--size 1GB] [--dir /dev/shm] [--strict]

``--strict`` exits 1 when the budget is missed (the default only reports it).
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ssdlab.targets.fio import fio_version, parse_fio_json

sys.path.insert(0, str(Path(__file__).resolve().parent))
from records import Recorder, machine_info  # noqa: E402
from ssdlab.targets.loop import LoopDevice, parse_size

BUDGET = 0.03  # ssdlab may cost at most 3 % of fio's IOPS


def machine() -> dict:
    return {**machine_info(), "fio": fio_version()}


def run_ssdlab(dev: str, duration: float, out: Path) -> dict:
    cmd = [sys.executable, "-m", "ssdlab", "consistency", "--target", dev, "--destroy-data", dev,
           "--duration", f"{duration:g}", "--out", str(out), "--force", "--no-progress"]
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if r.returncode != 0:
        raise SystemExit(f"bench: `{' '.join(cmd)}` failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    s = json.loads((out / "summary.json").read_text())
    rw_json = sorted(glob.glob(str(out / "fio" / "*randwrite*.json")))[-1]
    fio_iops = parse_fio_json(Path(rw_json).read_text())["jobs"][0]["write"]["iops"]
    return {"iops": float(s["iops_mean"]), "fio_json_iops": float(fio_iops), "wall_s": wall,
            "duration_s": float(s["duration_s"])}


#: The job-file lines that are ssdlab's logging, left out of the plain-fio arm.
SSDLAB_LOG_LINES = re.compile(r"(?m)^(write_hist_log|log_hist_msec|log_hist_coarseness|write_iops_log|log_avg_msec)=.*\n")


def plain_jobs(ssdlab_out: Path, workdir: Path) -> tuple[Path, Path]:
    """Copy ssdlab's fill and randwrite job files without ssdlab's logging."""
    out = []
    for pattern, stem in (("*fill*.fio", "plain_fill"), ("*randwrite*.fio", "plain_randwrite")):
        src = sorted(glob.glob(str(ssdlab_out / "fio" / pattern)))
        if not src:
            raise SystemExit(f"bench: no {pattern} job file in {ssdlab_out / 'fio'}")
        text, n = SSDLAB_LOG_LINES.subn("", Path(src[0]).read_text())
        if n == 0:
            raise SystemExit(f"bench: no ssdlab log options found in {src[0]}")
        dst = workdir / f"{stem}.fio"
        dst.write_text(text)
        out.append(dst)
    return out[0], out[1]


def run_fio(dev: str, fill: Path, rand: Path) -> dict:
    workdir = fill.parent
    subprocess.run(["blkdiscard", "--force", dev], check=True, capture_output=True)
    for job in (fill, rand):
        r = subprocess.run(["fio", "--output-format=json", f"--output={job.stem}.json", job.name],
                           cwd=workdir, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"bench: fio {job} failed ({r.returncode}): {r.stderr}")
    data = parse_fio_json((workdir / f"{rand.stem}.json").read_text())
    w = data["jobs"][0]["write"]
    return {"iops": float(w["iops"]), "duration_s": data["jobs"][0]["job_runtime"] / 1000.0}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--duration", type=float, default=10.0, help="random-write seconds per run (default 10)")
    ap.add_argument("--size", default="1GB", help="loop device size (default 1GB = 10^9 bytes)")
    ap.add_argument("--dir", default="/dev/shm", help="where the loop device's backing file goes (default /dev/shm)")
    ap.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    ap.add_argument("--strict", action="store_true", help="exit 1 if ssdlab costs more than 3%% of fio's IOPS")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("bench_fio_overhead: needs root (loop devices); skipped", file=sys.stderr)
        return 0
    for tool in ("fio", "losetup", "blkdiscard"):
        if not shutil.which(tool):
            print(f"bench_fio_overhead: {tool} not found; skipped", file=sys.stderr)
            return 0
    mach = machine()
    rec = Recorder("fio_overhead", {k: v for k, v in vars(args).items() if k not in ("json", "strict")})
    t_start = time.monotonic()
    rows: list[tuple[int, str, dict]] = []
    with tempfile.TemporaryDirectory(prefix="ssdlab-bench-") as tmp, \
            LoopDevice(parse_size(args.size), directory=args.dir) as loop:
        tmp = Path(tmp)
        dev = loop.path
        jobs = None
        for i in range(args.trials):
            order = ("ssdlab", "fio") if i % 2 == 0 else ("fio", "ssdlab")
            for arm in order:
                load = os.getloadavg()[0]  # other work on the machine shows here
                if arm == "ssdlab":
                    out = tmp / f"ssdlab_{i}"
                    res = run_ssdlab(dev, args.duration, out)
                    if jobs is None:
                        jobs = plain_jobs(out, tmp)
                else:
                    if jobs is None:  # only if the first trial started with fio (it does not)
                        raise SystemExit("bench: no job files yet")
                    res = run_fio(dev, *jobs)
                res["load_before"] = load
                rows.append((i + 1, arm, res))
                print(f"  trial {i + 1} {arm:>6}: {res['iops']:>10,.0f} IOPS", file=sys.stderr, flush=True)
        info = loop.info()
    s_iops = [r["iops"] for _, a, r in rows if a == "ssdlab"]
    s_fio_iops = [r["fio_json_iops"] for _, a, r in rows if a == "ssdlab"]
    f_iops = [r["iops"] for _, a, r in rows if a == "fio"]
    med_s, med_f = statistics.median(s_iops), statistics.median(f_iops)
    ratio = med_s / med_f
    # Each trial's two runs are adjacent in time: their ratio is robust to drift in machine load.
    by_trial: dict[int, dict[str, float]] = {}
    for i, a, r in rows:
        by_trial.setdefault(i, {})[a] = r["iops"]
    paired = [t["ssdlab"] / t["fio"] for t in by_trial.values() if "ssdlab" in t and "fio" in t]
    cost = 1.0 - ratio
    elapsed = time.monotonic() - t_start

    print(f"\nssdlab consistency vs plain fio, same job files, loop device {args.size} "
          f"(backing file in {args.dir}, direct I/O {'on' if info.get('dio') else 'off'}), "
          f"{args.duration:g} s of 4 KiB random writes QD32 per run, {args.trials} alternating trials")
    print(f"machine: {mach['nproc']} CPUs, {mach['cpu']}, {mach['mem_gib']} GiB, Linux {mach['kernel']}, {mach['fio']}")
    print()
    print(f"{'trial':>5}  {'arm':<7}{'IOPS':>12}{'load avg':>10}  ssdlab/fio")
    for i, arm, r in rows:
        t = by_trial[i]
        pr = f"{t['ssdlab'] / t['fio']:.3f}" if arm == "fio" and len(t) == 2 else ""
        print(f"{i:>5}  {arm:<7}{r['iops']:>12,.0f}{r['load_before']:>10.2f}  {pr}")
    print()
    print(f"{'':<30}{'median IOPS':>12}{'min':>12}{'max':>12}")
    print(f"{'ssdlab (summary iops_mean)':<30}{med_s:>12,.0f}{min(s_iops):>12,.0f}{max(s_iops):>12,.0f}")
    print(f"{'ssdlab (its fio JSON)':<30}{statistics.median(s_fio_iops):>12,.0f}{min(s_fio_iops):>12,.0f}{max(s_fio_iops):>12,.0f}")
    print(f"{'plain fio (fio JSON)':<30}{med_f:>12,.0f}{min(f_iops):>12,.0f}{max(f_iops):>12,.0f}")
    verdict = "within" if cost <= BUDGET else "OVER"
    print(f"\nratio ssdlab/fio = {ratio:.3f} (median IOPS over median IOPS; median of the per-trial ratios "
          f"{statistics.median(paired):.3f}): ssdlab costs {100 * cost:+.1f}% of fio's IOPS "
          f"({verdict} the 3% budget); bench took {elapsed:.0f} s")
    # The load average counts this bench's own fio and loop worker (about 2) too.
    if max(r["load_before"] for _, _, r in rows) > (mach["nproc"] or 1) + 1:
        print(f"note: the load average went above {(mach['nproc'] or 1) + 1} during the bench (this bench accounts "
              f"for about 2): other work competed for the CPUs; the spread between trials says how much to "
              f"trust the ratio")
    rec.write({"ssdlab_iops": med_s, "fio_iops": med_f, "ratio": ratio, "median_paired_ratio": statistics.median(paired)})
    if args.json:
        Path(args.json).write_text(json.dumps({
            "machine": mach, "size": args.size, "dir": args.dir, "duration_s": args.duration, "trials": args.trials,
            "runs": [{"trial": i, "arm": a, **r} for i, a, r in rows], "median_iops_ssdlab": med_s,
            "median_iops_fio": med_f, "ratio": ratio, "median_paired_ratio": statistics.median(paired),
            "budget": BUDGET}, indent=2))
    return 1 if (args.strict and cost > BUDGET) else 0


if __name__ == "__main__":
    sys.exit(main())
