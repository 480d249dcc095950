#!/usr/bin/env python3
"""ssdlab against MQSim on equal work: the same drive, the same host writes, the same window.

**The drive** (both simulators): 8 channels x 1 chip x 2 dies x 2 planes (32 planes), 64
blocks per plane, 256 pages of 4 KiB per block (2 GiB of NAND), 1,979,711,488 bytes of user
capacity (spare 5/64 = 7.8125 %: MQSim's ``Overprovisioning_Ratio`` 0.078125, and the most
ssdlab allows at 64 blocks per plane, which keeps 5 per plane for open blocks and its GC
reserve); page read 75 us, program 750 us, erase 3.8 ms. MQSim: page-level mapping with the
whole map in DRAM (``Ideal_Mapping_Table``), a 16 MiB write cache, no wear levelling, its
default GC (``RGA``, thresholds 5 % / 0.5 %). ssdlab: the ``default`` profile's FTL and GC on
that geometry.

**The work**: a fresh (empty) drive, 4 KiB random writes, uniform over the user capacity,
queue depth 32, no reads. **The window** is ``--window A,B`` host writes (default 500,000 to
700,000: from one capacity written to 1.43 times, where GC runs all the time; MQSim on this
drive stops with a segmentation fault before 850,000 writes, so a later window cannot be
compared). For each simulator: host writes and NAND page programs (4 KiB each, host and GC)
in the window, per CPU second of the window. MQSim's window is the difference of two runs
(``A`` and ``B`` requests, its user+system CPU time and its program counters: single-plane
commands plus two pages per multi-plane command); ssdlab's is timed within one run, five
runs (seeds) per round against MQSim's one, the two simulators alternating round by round.

    benches/bench_mqsim_equal_work.py [--mqsim DIR] [--runs 3] [--window 500000,700000]

``--mqsim DIR``: a built MQSim checkout (github.com/CMU-SAFARI/MQSim, ``make``); its own
``ssdconfig.xml`` is the template the drive's keys are set in. Without it, only ssdlab's
figures are measured. One record in benches/records/mqsim_equal_work.jsonl.
"""
from __future__ import annotations

import argparse
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from records import Recorder, machine  # noqa: E402

from ssdlab.profiles import load_profile  # noqa: E402
from ssdlab.targets.sim import SimTarget  # noqa: E402

PAGE_BYTES = 4096
USER_BYTES = 1_979_711_488
SSDLAB_KEYS = {"channels": 8, "dies_per_channel": 2, "planes_per_die": 2, "blocks_per_plane": 64,
               "pages_per_block": 256, "page_size_bytes": PAGE_BYTES, "user_capacity_bytes": USER_BYTES,
               "t_read_us": 75, "t_prog_us": 750, "t_erase_us": 3800}
#: The same drive in MQSim's device parameters (times in ns).
MQSIM_KEYS = {"Flash_Channel_Count": 8, "Chip_No_Per_Channel": 1, "Die_No_Per_Chip": 2, "Plane_No_Per_Die": 2,
              "Block_No_Per_Plane": 64, "Page_No_Per_Block": 256, "Page_Capacity": PAGE_BYTES,
              "Overprovisioning_Ratio": 0.078125, "Ideal_Mapping_Table": "true", "Data_Cache_Capacity": 16 << 20,
              "Static_Wearleveling_Enabled": "false", "Dynamic_Wearleveling_Enabled": "false",
              "Enabled_Preconditioning": "false", "Page_Read_Latency_LSB": 75000, "Page_Read_Latency_CSB": 75000,
              "Page_Read_Latency_MSB": 75000, "Page_Program_Latency_LSB": 750000,
              "Page_Program_Latency_CSB": 750000, "Page_Program_Latency_MSB": 750000,
              "Block_Erase_Latency": 3800000}
#: One synthetic flow in MQSim's workload format: 4 KiB (8 sectors) uniform random writes at
#: QD32 over the whole drive, empty at the start, ending after REQUESTS requests.
MQSIM_FLOW = {"Priority_Class": "HIGH", "Device_Level_Data_Caching_Mode": "WRITE_CACHE",
              "Channel_IDs": "0,1,2,3,4,5,6,7", "Chip_IDs": "0", "Die_IDs": "0,1", "Plane_IDs": "0,1",
              "Initial_Occupancy_Percentage": 0, "Working_Set_Percentage": 100,
              "Synthetic_Generator_Type": "QUEUE_DEPTH", "Read_Percentage": 0,
              "Address_Distribution": "RANDOM_UNIFORM", "Percentage_of_Hot_Region": 0,
              "Generated_Aligned_Addresses": "true", "Address_Alignment_Unit": 8,
              "Request_Size_Distribution": "FIXED", "Average_Request_Size": 8, "Variance_Request_Size": 0,
              "Seed": 798, "Average_No_of_Reqs_in_Queue": 32, "Intensity": 32768, "Stop_Time": 0,
              "Total_Requests_To_Generate": "REQUESTS"}


#: ssdlab windows timed per round (each on a fresh drive, its own seed).
REPEATS = 5


def ssdlab_window(start: int, end: int, seed: int) -> dict:
    """One fresh drive: ``start`` writes, then the window's ``end - start`` timed."""
    target = SimTarget(load_profile("default", [f"{k}={v}" for k, v in SSDLAB_KEYS.items()]), seed=seed)
    job = {"name": "randwrite", "read_fraction": 0.0, "write_bs_bytes": 4096, "qd": 32}
    target.run_workload({**job, "number_ios": start})
    c0 = time.process_time()
    r = target.run_workload({**job, "number_ios": end - start})
    cpu_s = time.process_time() - c0
    t = r.totals
    return {"cpu_s": cpu_s, "host_writes": t["write_ios"], "programs": t["nand_write_bytes"] / PAGE_BYTES}


def _set_tags(xml: str, values: dict) -> str:
    for tag, value in values.items():
        xml, n = re.subn(rf"<{tag}>[^<]*</{tag}>", f"<{tag}>{value}</{tag}>", xml)
        if n != 1:
            raise SystemExit(f"bench: MQSim's ssdconfig.xml has {n} <{tag}> elements, expected 1")
    return xml


def mqsim_run(mqsim: Path, work: Path, requests: int) -> dict:
    """One MQSim run of ``requests`` writes on a fresh drive: its CPU time and page programs."""
    config = work / "ssdconfig.xml"
    config.write_text(_set_tags((mqsim / "ssdconfig.xml").read_text(), MQSIM_KEYS))
    flow = "".join(f"<{k}>{requests if v == 'REQUESTS' else v}</{k}>" for k, v in MQSIM_FLOW.items())
    workload = work / f"writes{requests}.xml"
    workload.write_text('<?xml version="1.0" encoding="us-ascii"?>\n<MQSim_IO_Scenarios><IO_Scenario>'
                        f"<IO_Flow_Parameter_Set_Synthetic>{flow}</IO_Flow_Parameter_Set_Synthetic>"
                        "</IO_Scenario></MQSim_IO_Scenarios>\n")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([str(mqsim / "MQSim"), "-i", str(config), "-w", str(workload)], cwd=work,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = work / f"writes{requests}_scenario_1.xml"
    if done.returncode != 0 or not out.exists():
        raise SystemExit(f"bench: MQSim exited {done.returncode} after {requests:,} requests "
                         f"({done.stderr.strip()[-200:] or 'no message'}); choose a smaller --window")
    stats = out.read_text()

    def count(name: str) -> int:
        return sum(int(v) for v in re.findall(rf'{name}="(\d+)"', stats))
    return {"cpu_s": after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime,
            "host_writes": requests,
            "programs": count("Issued_Flash_Program_CMD") + 2 * count("Issued_Flash_Multiplane_Program_CMD")}


def mqsim_window(mqsim: Path, start: int, end: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="ssdlab-bench-mqsim-") as work:
        a, b = mqsim_run(mqsim, Path(work), start), mqsim_run(mqsim, Path(work), end)
    return {k: b[k] - a[k] for k in a}


def _rates(w: dict) -> dict:
    return {"host_writes_per_cpu_s": w["host_writes"] / w["cpu_s"], "programs_per_cpu_s": w["programs"] / w["cpu_s"],
            "wa": w["programs"] / w["host_writes"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mqsim", type=Path, help="a built MQSim checkout (default: ssdlab's figures only)")
    ap.add_argument("--runs", type=int, default=3, help="runs of each simulator; medians (default: %(default)s)")
    ap.add_argument("--window", default="500000,700000",
                    help="first and last host write of the timed window (default: %(default)s)")
    a = ap.parse_args()
    start, end = (int(x) for x in a.window.split(","))
    if a.mqsim is not None and not (a.mqsim / "MQSim").is_file():
        raise SystemExit(f"bench: {a.mqsim}/MQSim not found: build MQSim there with `make` first")
    rec = Recorder("mqsim_equal_work", {"window": a.window, "runs": a.runs, "mqsim": a.mqsim is not None})
    print(f"equal work: 4 KiB random writes QD32 on a fresh 2 GiB drive, writes {start:,}..{end:,}; {machine()}")
    # ssdlab's window is a few tens of ms of CPU: it is timed REPEATS times per round (seeds
    # differ) against MQSim's one, and the two alternate round by round, so a change of the
    # machine's load falls on both.
    sims = {"ssdlab": lambda i: [ssdlab_window(start, end, seed=1 + REPEATS * i + j) for j in range(REPEATS)]}
    if a.mqsim is not None:
        sims["mqsim"] = lambda i: [mqsim_window(a.mqsim, start, end)]
    rows: dict[str, list[dict]] = {name: [] for name in sims}
    for i in range(a.runs):
        for name, run in sims.items():
            rows[name].extend(_rates(w) for w in run(i))
    med = {}
    for name, rs in rows.items():
        med[name] = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
        m = med[name]
        print(f"{name:>7}: {m['host_writes_per_cpu_s']:>12,.0f} host writes and {m['programs_per_cpu_s']:>12,.0f} "
              f"page programs per CPU second (WA {m['wa']:.2f} in the window; median of {len(rs)})", flush=True)
    figures = {f"{name}_{k}": v for name, m in med.items() for k, v in m.items()}
    if "mqsim" in med:
        for k in ("host_writes_per_cpu_s", "programs_per_cpu_s"):
            figures[f"ratio_{k}"] = med["ssdlab"][k] / med["mqsim"][k]
        print(f"ssdlab / MQSim: {figures['ratio_host_writes_per_cpu_s']:.0f}x host writes, "
              f"{figures['ratio_programs_per_cpu_s']:.0f}x page programs per CPU second")
    rec.write(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
