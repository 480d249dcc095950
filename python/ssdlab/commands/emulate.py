"""``ssdlab emulate PROFILE``: a simulated drive as a real block device
(:class:`ssdlab.targets.emu.EmulatedDrive`), served until Ctrl-C, SIGTERM or SIGHUP.

The command prints the device and the drive's counters file, then serves with a status line
every ``--status-every`` seconds, and tears down: the loop device (once nothing holds it
open), the mount, the threads, a ``file:`` data file; what a killed emulator leaves is removed
by the next start.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

from ..params import number
from ..params import seed as parse_seed
from ..targets import emu
from ..units import format_size

#: How often the serving loop looks at the drive (to report a simulator error once) [s].
POLL_S = 0.5
#: Seconds between two status lines by default.
STATUS_EVERY_S = 10.0

DESCRIPTION = """\
Serve a simulated drive as a real block device (/dev/loopN) until Ctrl-C or SIGTERM: a FUSE
file of the drive's capacity under a loop device with direct I/O. Every read, write, flush and
discard goes through the simulator and completes at its simulated completion time on the wall
clock (queue depth is what the host has in flight; idle time is drive idle time, so idle GC
runs). Use it to run any block-device tool (fio, mkfs, a database) against a simulated drive.
Needs root, /dev/fuse and loop devices."""

EPILOG = """\
Data modes (--data): none (default): writes are timed and dropped, reads return zeros (enough
for fio timing tests; a filesystem will not work); memory: data kept in RAM, allocated as
written (refused if the capacity exceeds MemAvailable); file:PATH: a new sparse file at PATH
(refused if it exists or its filesystem lacks the capacity free; removed on exit).
Capacity: --set capacity=SIZE (the same drive, smaller: the NAND scales with it).
Counters: MOUNT/counters.json (the mount is printed) holds the drive's counters as JSON: host
and NAND bytes, erases, GC copies, SLC level, commands served, and how late replies were sent;
`ssdlab` reads WA from it for a test on the device as it reads a real drive's SMART log.
Faithfulness: a reply is late when it is sent more than 50 us after its simulated completion
time (the host could not keep up); the status lines and the summary give the share late and
the p50/p99/max lateness. --slowdown K runs every time of the drive K times slower, for drives
faster than this host can emulate: the device then does 1/K of the simulated drive's IOPS.
Example: ssdlab emulate default --set capacity=2GiB --data memory"""


def register(subparsers, add_target_args) -> None:
    p = subparsers.add_parser("emulate",
                              help="serve a simulated drive as a real block device (/dev/loopN) until Ctrl-C",
                              description=DESCRIPTION, epilog=EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("profile", nargs="?", default="default",
                   help="the drive: a built-in profile name or a .toml path (sim:PROFILE also accepted; "
                        "default: %(default)s)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="override one profile key (repeatable), e.g. --set capacity=2GiB; "
                        "`ssdlab profiles --keys` lists keys and units")
    p.add_argument("--seed", type=parse_seed, default=1, metavar="N",
                   help="random seed in [0, 2^63-1] of the simulated drive (default: %(default)s)")
    p.add_argument("--data", default="none", metavar="MODE",
                   help="where written data is kept: none (reads return zeros), memory, file:PATH "
                        "(default: %(default)s)")
    p.add_argument("--slowdown", type=number(float, 1, emu.MAX_SLOWDOWN), default=1.0, metavar="K",
                   help="wall seconds per simulated second, 1 to 1000: every time of the drive runs K times "
                        "slower (default: %(default)s, real time)")
    p.add_argument("--status-every", type=number(float, 0, 86400), default=STATUS_EVERY_S, metavar="SECONDS",
                   help="seconds between two status lines on stderr (IOPS, WA, free blocks, late replies; at most "
                        f"one every {POLL_S:g} s); 0: none (default: %(default)s)")
    p.set_defaults(func=run)


# -- running ---------------------------------------------------------------------------
def run(args) -> int:
    from ..profiles import load_profile

    emu.check_host()
    profile = load_profile(args.profile.removeprefix("sim:"), args.sets)
    capacity = profile.user_bytes
    mode, data_path = emu.parse_data(args.data, capacity)
    drive = None
    clean = False
    try:
        drive = emu.EmulatedDrive(profile, seed=args.seed, data=mode, data_path=data_path, slowdown=args.slowdown)
        for line in drive.stale:
            print(f"ssdlab emulate: stale emulator: {line}", file=sys.stderr)
        print(f"emulating {profile.name} ({profile.source}): {capacity} bytes ({format_size(capacity)}), "
              f"{emu.BLOCK_BYTES}-byte blocks, data: {args.data}, seed {args.seed}")
        if args.slowdown != 1:
            print(f"slowdown: {args.slowdown:g}: the drive runs {args.slowdown:g} times slower than simulated "
                  f"(its IOPS are 1/{args.slowdown:g} of the simulated drive's)")
        print(f"counters: {drive.counters_path}")
        print(f"device: {drive.device}")
        print(f"stop: Ctrl-C or kill -TERM {os.getpid()} (detaches {drive.device}; "
              f"reads and writes in flight complete first)", flush=True)
        _serve(drive, args.status_every)
    except KeyboardInterrupt:
        pass  # the way to stop it
    finally:
        if drive is not None:
            clean = drive.close()
    if drive is not None:
        print(summary(drive.final_counters))
    return 0 if clean else 1


def _us(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return "> 10 s" if seconds == float("inf") else f"{seconds * 1e6:,.0f} us"


def _late_text(late: dict) -> str:
    if not late["replies"]:
        return "no replies"
    return (f"{100 * late['late_share']:.2f} % late (> {emu.LATE_NS // 1000} us), "
            f"p50 <= {_us(late['p50_late_s'])}, p99 <= {_us(late['p99_late_s'])}")


def summary(c: dict) -> str:
    """What the emulator served and how faithfully, from its final counters."""
    k = c["commands"]
    late = emu.lateness(c)
    wa = f"{c['nand_write_bytes'] / c['host_write_bytes']:.2f}" if c["host_write_bytes"] else "-"
    slow = f"; every time {c['slowdown']:g} times slower than simulated" if c["slowdown"] != 1 else ""
    return (f"stopped: {k['reads']} reads, {k['writes']} writes, {k['trims']} discards, {k['flushes']} flushes "
            f"served; {c['errors']} failed; {c['sim_time_ns'] / 1e9:.1f} s of drive time, write amplification {wa}, "
            f"{c['erases']} erases{slow}\n"
            f"replies after their simulated completion time: {_late_text(late)}, at most {_us(late['max_late_s'])}, "
            f"mean {_us(late['mean_late_s'])}")


def status_line(now: dict, before: dict) -> str:
    """One status line: the interval since ``before`` (counters read then) to ``now``."""
    dt = (now["sim_time_ns"] - before["sim_time_ns"]) / 1e9 or float("nan")
    k, b = now["commands"], before["commands"]
    dh = now["host_write_bytes"] - before["host_write_bytes"]
    wa = f"{(now['nand_write_bytes'] - before['nand_write_bytes']) / dh:.2f}" if dh > 0 else "-"
    return (f"emulate: drive time {now['sim_time_ns'] / 1e9:,.1f} s: read {(k['reads'] - b['reads']) / dt:,.0f} IOPS, "
            f"write {(k['writes'] - b['writes']) / dt:,.0f} IOPS, WA {wa}, {now['free_blocks']:,} free blocks; "
            f"replies {_late_text(emu.lateness(now, before))}")


def _serve(drive, status_every_s: float) -> None:
    """Serves until a stop request (KeyboardInterrupt): a status line every ``status_every_s``
    (0: none); reports the simulator's first error."""
    told = False
    before, last = drive.counters(), time.monotonic()
    while True:
        time.sleep(POLL_S)
        now = drive.counters()
        if now["error"] and not told:
            print(f"ssdlab emulate: the simulated drive failed: {now['error']}; requests now fail with I/O errors; "
                  f"stop it (Ctrl-C) and change the profile", file=sys.stderr)
            told = True
        if status_every_s and time.monotonic() - last >= status_every_s:
            print(status_line(now, before), file=sys.stderr, flush=True)
            before, last = now, time.monotonic()
