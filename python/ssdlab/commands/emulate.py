"""``ssdlab emulate PROFILE``: a simulated drive as a real block device.

The drive (a built-in profile, a TOML file, ``--set`` overrides) is served by the native
emulator (``ssdlab._native.Emulator``, the ``ssdemu`` crate) as the one file of a FUSE
filesystem mounted at ``RUN_DIR/emu-<pid>/mnt``; a loop device with direct I/O and 4096-byte
logical blocks (the simulator's mapping unit) over that file is the block device. Every read,
write, flush and discard of the device goes through the simulator and completes at its
simulated completion time on the wall clock (simulated time = wall time since the start), so
the queue depth is what the host has in flight and wall idle time is drive idle time.

The command prints the device, then serves until Ctrl-C, SIGTERM or SIGHUP, and tears down:
the loop device (once nothing holds it open), the mount, the threads, a ``file:`` data file.
The native server runs on threads of this process (they never take the GIL), so the process's
end is the server's end: a SIGKILL leaves no thread behind, the kernel detaches the loop
device (it is attached with autoclear and held open by this process only), and what is left
(the dead FUSE mount, its directory, a data file) is removed by the next ``ssdlab emulate``
(:func:`sweep_stale`), which finds the emulator's pid gone.

``RUN_DIR`` is ``$SSDLAB_RUN_DIR`` or ``/run/ssdlab``.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from .. import stop
from ..errors import UserError
from ..procedures.declare import seed as parse_seed
from ..targets import emu as emu_counters
from ..units import format_size

#: Logical block size of the emulated device [bytes]: the simulator's 4 KiB mapping unit, so
#: every request covers whole units.
BLOCK_BYTES = 4096
#: How often the serving loop looks at the drive (to report a simulator error once) [s].
POLL_S = 0.5
#: Seconds between two status lines by default.
STATUS_EVERY_S = 10.0
#: The largest --slowdown (the emulator's own limit).
MAX_SLOWDOWN = 1000.0
_MNT_DETACH = 2  # <sys/mount.h> umount2 flag: lazy unmount

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
    p.add_argument("--slowdown", type=_slowdown, default=1.0, metavar="K",
                   help="wall seconds per simulated second, 1 to 1000: every time of the drive runs K times "
                        "slower (default: %(default)s, real time)")
    p.add_argument("--status-every", type=_status_every, default=STATUS_EVERY_S, metavar="SECONDS",
                   help="seconds between two status lines on stderr (IOPS, WA, free blocks, late replies); "
                        "0: none (default: %(default)s)")
    p.set_defaults(func=run)


def _slowdown(text: str) -> float:
    try:
        k = float(text)
    except ValueError:
        k = float("nan")
    if not 1.0 <= k <= MAX_SLOWDOWN:
        raise argparse.ArgumentTypeError(f"{text!r}: a number from 1 to {MAX_SLOWDOWN:g} (wall seconds per "
                                         f"simulated second)")
    return k


def _status_every(text: str) -> float:
    try:
        s = float(text)
    except ValueError:
        s = float("nan")
    if not (s == 0 or POLL_S <= s <= 86400):
        raise argparse.ArgumentTypeError(f"{text!r}: 0 (no status lines) or seconds from {POLL_S} to 86400")
    return s


def run_dir() -> Path:
    """Where emulators keep their mount point and state: ``$SSDLAB_RUN_DIR`` or /run/ssdlab."""
    return Path(os.environ.get("SSDLAB_RUN_DIR") or "/run/ssdlab")


# -- checks ------------------------------------------------------------------------------
def check_host() -> None:
    """Root, /dev/fuse and loop devices; UserError saying what to do otherwise."""
    if os.geteuid() != 0:
        raise UserError("ssdlab emulate needs root (it mounts a FUSE filesystem and attaches a loop device); "
                        "run it as root")
    if not os.path.exists("/dev/fuse"):
        raise UserError("/dev/fuse is missing: load the FUSE module (modprobe fuse) or install fuse3 "
                        "(apt-get install fuse3); in a container, pass --device /dev/fuse")
    if not os.path.exists("/dev/loop-control"):
        raise UserError("/dev/loop-control is missing: this machine cannot make loop devices; load the loop module "
                        "(modprobe loop); in a container, run it privileged")


def _mem_available_bytes() -> int | None:
    """MemAvailable of /proc/meminfo [bytes], or None if it cannot be read."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def parse_data(text: str, capacity_bytes: int) -> tuple[str, str | None]:
    """(mode, path) of ``--data TEXT`` for a drive of ``capacity_bytes``; UserError when the
    mode is unknown or cannot hold the capacity."""
    mode, _, path = text.partition(":")
    if not ((mode in ("none", "memory") and not path) or (mode == "file" and path)):
        raise UserError(f"--data {text}: expected none, memory or file:PATH")
    need = format_size(capacity_bytes)
    if mode == "memory":
        avail = _mem_available_bytes()
        if avail is not None and capacity_bytes > avail:
            raise UserError(f"--data memory: the drive's {capacity_bytes} bytes ({need}) do not fit in the "
                            f"{avail} bytes of memory available (MemAvailable, /proc/meminfo): use --data file:PATH, "
                            f"--data none (timing only), or a smaller drive (--set capacity=SIZE)")
    if mode == "file":
        p = Path(path).absolute()
        if p.exists():
            raise UserError(f"--data file:{path}: the file exists; the emulated drive starts empty and removes "
                            f"its file on exit: name a new file")
        if not p.parent.is_dir():
            raise UserError(f"--data file:{path}: directory {p.parent} does not exist")
        vfs = os.statvfs(p.parent)
        free = vfs.f_bavail * vfs.f_frsize
        if free < capacity_bytes:
            raise UserError(f"--data file:{path}: the drive's {capacity_bytes} bytes ({need}) need that much free in "
                            f"{p.parent}, which has {free} bytes free: choose another directory or a smaller drive "
                            f"(--set capacity=SIZE)")
        path = str(p)
    return mode, path or None


# -- stale emulators -------------------------------------------------------------------
def _start_ticks(pid: int) -> int | None:
    """Start time of process ``pid`` [clock ticks since boot], or None if there is none."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat.rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _mount_device(path: Path) -> str | None:
    """``MAJOR:MINOR`` of what is mounted at ``path`` (a dead FUSE mount too, which stat cannot
    see), or None if nothing is."""
    target = os.fsencode(path).replace(b" ", b"\\040")
    try:
        with open("/proc/self/mountinfo", "rb") as f:
            return next((line.split()[2].decode() for line in f if line.split()[4] == target), None)
    except OSError:
        return None


def _abort_fuse(device: str) -> bool:
    """Aborts the FUSE connection of the filesystem on ``device`` (MAJOR:MINOR): requests
    waiting for its dead server (a loop device's, say) fail at once instead of never. Mounts
    the FUSE control filesystem for it if it is not (and unmounts it after). True if there
    was such a connection."""
    connections = Path("/sys/fs/fuse/connections")
    abort = connections / device.split(":")[1] / "abort"
    mounted_here = False
    if not abort.exists() and not os.path.ismount(connections):
        mounted_here = subprocess.run(["mount", "-t", "fusectl", "none", str(connections)],
                                      capture_output=True).returncode == 0
    try:
        abort.write_text("1")
        return True
    except OSError:
        return False
    finally:
        if mounted_here:
            subprocess.run(["umount", str(connections)], capture_output=True)


def _umount_lazy(path: Path) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.umount2(os.fsencode(path), _MNT_DETACH) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), str(path))


def sweep_stale() -> list[str]:
    """Cleans up after emulators that are no longer running (killed, or whose teardown was cut
    short): detaches loop devices over their drive file, unmounts their filesystem, removes
    their data file and directory. Returns what it did, one line each."""
    from ..targets.loop import _loop_backing_files

    done = []
    for home in sorted(run_dir().glob("emu-*")):
        try:
            state = json.loads((home / "state.json").read_text())
            pid = int(state["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            state, pid = {}, int(home.name[4:]) if home.name[4:].isdigit() else -1
        ticks = _start_ticks(pid) if pid > 0 else None
        if ticks is not None and ticks == state.get("start_ticks", ticks):
            continue  # still running (the same process: a reused pid starts at another time)
        mnt = home / "mnt"
        fuse = _mount_device(mnt)
        if fuse and _abort_fuse(fuse):
            done.append(f"aborted the FUSE connection of {mnt}")
        for device, backing in _loop_backing_files().items():
            if backing.startswith(f"{mnt}/"):
                subprocess.run(["losetup", "-d", device], capture_output=True)
                done.append(f"detached {device}")
        if fuse:
            try:
                _umount_lazy(mnt)
                done.append(f"unmounted {mnt}")
            except OSError as e:
                done.append(f"could not unmount {mnt} ({e.strerror}): run umount -l {mnt}")
                continue
        data_file = state.get("data_file")
        if data_file and os.path.exists(data_file):
            os.unlink(data_file)
            done.append(f"removed {data_file}")
        for p in (mnt, home / "state.json", home):
            try:
                p.rmdir() if p.is_dir() else p.unlink()
            except FileNotFoundError:
                pass
        done.append(f"removed {home} (emulator pid {pid} is gone)")
    return done


# -- running ---------------------------------------------------------------------------
def run(args) -> int:
    from .. import _native
    from ..profiles import load_profile
    from ..targets.loop import LoopDevice, LoopError, _sysfs

    check_host()
    spec = args.profile.removeprefix("sim:")
    profile = load_profile(spec, args.sets)
    capacity = profile.user_bytes
    mode, data_path = parse_data(args.data, capacity)
    for line in sweep_stale():
        print(f"ssdlab emulate: stale emulator: {line}", file=sys.stderr)

    home = run_dir() / f"emu-{os.getpid()}"
    mnt = home / "mnt"
    mnt.mkdir(parents=True, exist_ok=True)
    (home / "state.json").write_text(json.dumps({"pid": os.getpid(), "start_ticks": _start_ticks(os.getpid()),
                                                 "data_file": data_path, "mountpoint": str(mnt)}))
    emu = loop = None
    clean = False
    try:
        with stop.held():
            try:
                emu = _native.Emulator(list(profile.pairs), args.seed, str(mnt), mode, data_path,
                                       slowdown=args.slowdown)
            except OSError as e:
                raise UserError(f"{e}; is the fuse module loaded (modprobe fuse)?") from None
        try:
            loop = LoopDevice.over_file(emu.image_path, block_bytes=BLOCK_BYTES).create()
        except LoopError as e:
            raise UserError(str(e)) from None
        print(f"emulating {profile.name} ({profile.source}): {capacity} bytes ({format_size(capacity)}), "
              f"{BLOCK_BYTES}-byte blocks, data: {args.data}, seed {args.seed}")
        if args.slowdown != 1:
            print(f"slowdown: {args.slowdown:g}: the drive runs {args.slowdown:g} times slower than simulated "
                  f"(its IOPS are 1/{args.slowdown:g} of the simulated drive's)")
        print(f"counters: {mnt / emu_counters.COUNTERS_NAME}")
        print(f"device: {loop.path}")
        print(f"stop: Ctrl-C or kill -TERM {os.getpid()} (detaches {loop.path}; "
              f"reads and writes in flight complete first)", flush=True)
        _serve(emu, args.status_every)
    except KeyboardInterrupt:
        pass  # the way to stop it
    finally:
        clean = _teardown(emu, loop, mnt, lambda device: _sysfs(device, "backing_file"))
        if clean:
            for p in (home / "state.json", mnt, home):
                try:
                    p.rmdir() if p.is_dir() else p.unlink()
                except OSError:
                    pass
    if emu is not None:
        print(summary(json.loads(emu.counters_json())))
    return 0 if clean else 1


def _us(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return "> 10 s" if seconds == float("inf") else f"{seconds * 1e6:,.0f} us"


def _late_text(late: dict) -> str:
    if not late["replies"]:
        return "no replies"
    return (f"{100 * late['late_share']:.2f} % late (> {emu_counters.LATE_NS // 1000} us), "
            f"p50 <= {_us(late['p50_late_s'])}, p99 <= {_us(late['p99_late_s'])}")


def summary(c: dict) -> str:
    """What the emulator served and how faithfully, from its final counters."""
    k = c["commands"]
    late = emu_counters.lateness(c)
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
            f"replies {_late_text(emu_counters.lateness(now, before))}")


def _serve(emu, status_every_s: float) -> None:
    """Serves until a stop request (KeyboardInterrupt): a status line every ``status_every_s``
    (0: none); reports the simulator's first error."""
    told = False
    before, last = json.loads(emu.counters_json()), time.monotonic()
    while True:
        time.sleep(POLL_S)
        now = json.loads(emu.counters_json())
        if now["error"] and not told:
            print(f"ssdlab emulate: the simulated drive failed: {now['error']}; requests now fail with I/O errors; "
                  f"stop it (Ctrl-C) and change the profile", file=sys.stderr)
            told = True
        if status_every_s and time.monotonic() - last >= status_every_s:
            print(status_line(now, before), file=sys.stderr, flush=True)
            before, last = now, time.monotonic()


def _teardown(emu, loop, mnt: Path, backing_file) -> bool:
    """Detaches the loop device (waiting while something else holds it open, until a second
    stop request), unmounts and stops the server. True when nothing is left behind.
    ``backing_file(device)``: the file loop device ``device`` is attached over, or None."""
    if loop is not None and loop.path is not None:
        device, image = loop.path, os.path.realpath(loop.backing_file)
        loop.close()

        def attached() -> bool:  # still over our drive's file (another file there is not ours)
            return backing_file(device) == image

        if attached() and not _wait_released(device, attached):
            # Given up: the mount goes now (lazily); the kernel fails the device's requests once
            # this process ends, and detaches it when its holder closes it.
            print(f"ssdlab emulate: left {device} to be detached when its holder closes it; its requests now fail",
                  file=sys.stderr)
            with stop.held():
                _umount_lazy(mnt)
            return False
    if emu is not None:
        with stop.held():
            try:
                emu.stop()
            except OSError as e:
                print(f"ssdlab emulate: {e}; unmounting {mnt} lazily", file=sys.stderr)
                _umount_lazy(mnt)
                return False
    return True


def _wait_released(device: str, attached) -> bool:
    """Waits until ``device`` is detached (its holder closed it: ``attached()`` is false);
    False on a stop request."""
    print(f"ssdlab emulate: {device} is still in use (mounted, or open in a program): the drive serves until it is "
          f"closed (umount it); Ctrl-C again to stop anyway", file=sys.stderr, flush=True)
    try:
        while attached():
            time.sleep(0.2)
    except KeyboardInterrupt:
        return False
    return True
