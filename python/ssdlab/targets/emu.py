"""An emulated drive: a simulated drive served as a real block device, and read from outside
as a real drive is read (its counters, and how faithfully it kept to its simulated times).

:class:`EmulatedDrive` starts one: the drive (a profile) is served by the native emulator
(``ssdlab._native.Emulator``, the ``ssdemu`` crate) as the file ``drive.img`` of a FUSE
filesystem mounted at ``RUN_DIR/emu-<pid>-<n>/mnt``; a loop device with direct I/O and
4096-byte logical blocks (the simulator's mapping unit) over that file is the block device.
Every read, write, flush and discard of the device goes through the simulator and completes at
its simulated completion time on the wall clock (``slowdown`` times later), so the queue depth
is what the host has in flight and wall idle time is drive idle time.

The native server runs on threads of this process (they never take the GIL), so the process's
end is the server's end: a SIGKILL leaves no thread behind, the kernel detaches the loop
device (it is attached with autoclear and held open by this process only), and what is left
(the dead FUSE mount, its directory, a data file) is removed by the next emulator's start
(:func:`sweep_stale`), which finds the emulator's pid gone. ``RUN_DIR`` is
``$SSDLAB_RUN_DIR`` or ``/run/ssdlab``.

The emulator's FUSE filesystem holds the drive's file (under the loop device) and beside it
``counters.json``: a JSON object of the drive's counters at the moment the file is opened
(bytes, ns and counts, cumulative since the emulator started; layout version ``format``):
host and NAND bytes written, GC copies, erases, SLC level, commands served, and the replies
by how long after their simulated completion time they were sent (``late``: a count per
bucket of ``late_bounds_ns``, 1-2-5 µs steps up to 10 s, the last bucket above), and the idle
gaps the host left the drive in the same buckets (``idle_gaps``, and their drive time
``idle_ns``).
"""
from __future__ import annotations

import ctypes
import itertools
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

from .. import stop
from ..errors import UserError
from ..fio_logs import bins_percentiles_us
from ..units import format_size
from .loop import LoopDevice, LoopError, _loop_backing_files, _sysfs

#: The counters file beside the drive's file, and the layout this module reads.
COUNTERS_NAME = "counters.json"
IMAGE_NAME = "drive.img"
COUNTERS_FORMAT = 3

#: Logical block size of the emulated device [bytes]: the simulator's 4 KiB mapping unit, so
#: every request covers whole units.
BLOCK_BYTES = 4096
#: The largest slowdown (the emulator's own limit).
MAX_SLOWDOWN = 1000.0
#: Threads reading the FUSE device. One: the simulator is behind one lock and a reply due at
#: once is sent by the thread that took its request, so a second thread only adds context
#: switches (2-core host, 4 KiB random writes QD32 on a near-zero-latency drive: 122K IOPS
#: with one, 99K with two, 70K with three; lateness at 20K and 50K IOPS the same).
FUSE_THREADS = 1
_MNT_DETACH = 2  # <sys/mount.h> umount2 flag: lazy unmount
#: Emulators started by this process (each gets its own directory).
_started = itertools.count()

#: A reply sent more than this long after its simulated completion time counts as late [ns]:
#: well above a wake-up's jitter on an idle host (a few µs), and a tenth of a TLC program.
LATE_NS = 50_000
#: An idle gap the host left the drive counts as a host stall when longer than this [ns, drive
#: time]: far above a request's round trip through the loop device and FUSE (tens of µs), so
#: what is left is the host not sending (fio descheduled on a busy host, or between its runs).
STALL_NS = 1_000_000


def counters_file(device: str) -> Path | None:
    """The counters file of the emulated drive under loop device ``device`` (/dev/loopN), or
    None when ``device`` is not over an emulated drive."""
    backing = _sysfs(os.path.realpath(device), "backing_file")
    if backing is None:
        return None
    image = Path(backing.removesuffix(" (deleted)"))
    if image.name != IMAGE_NAME:
        return None
    path = image.with_name(COUNTERS_NAME)
    return path if path.exists() else None


def read(path: str | os.PathLike) -> dict:
    """The counters in ``path`` (a counters file); ValueError when it is not one this version
    reads."""
    d = json.loads(Path(path).read_text())
    if not isinstance(d, dict) or d.get("source") != "ssdlab-emu":
        raise ValueError(f"{path}: not an emulated drive's counters file")
    if d.get("format") != COUNTERS_FORMAT:
        raise ValueError(f"{path}: counters format {d.get('format')!r}; this ssdlab reads format {COUNTERS_FORMAT}")
    return d


def lateness(after: dict, before: dict | None = None) -> dict:
    """How late the replies sent between two counter readings were (since the start without
    ``before``): ``replies``, ``late_share`` (the share sent more than :data:`LATE_NS` after
    their completion time; None without replies), ``p50_late_s`` and ``p99_late_s`` (the upper
    bound of the bucket holding that percentile [s]; None without replies, inf past 10 s),
    ``mean_late_s`` [s], and ``max_late_s`` (the most any reply since the start was late [s])."""
    bounds = after["late_bounds_ns"]
    counts = [a - (before["late"][i] if before else 0) for i, a in enumerate(after["late"])]
    replies = sum(counts)
    late_ns = after["late_ns"] - (before["late_ns"] if before else 0)
    # Nearest rank over the buckets' upper bounds; a percentile in the last bucket is inf.
    pct_us = bins_percentiles_us(dict(zip(bounds + [math.inf], counts)))
    p50_s, p99_s = ((pct_us.get(k, math.inf) / 1e6 if replies else None) for k in ("p50", "p99"))
    on_time = sum(n for bound, n in zip(bounds, counts) if bound <= LATE_NS)
    return {"replies": replies, "late_share": (replies - on_time) / replies if replies else None,
            "p50_late_s": p50_s, "p99_late_s": p99_s,
            "mean_late_s": late_ns / replies / 1e9 if replies else None,
            "max_late_s": after["max_late_ns"] / 1e9}


def idleness(after: dict, before: dict | None = None, stall_ns: int = STALL_NS) -> dict:
    """The idle gaps the host left the drive that ended between two counter readings (since
    the start without ``before``): ``gaps``, ``idle_s`` (their drive time [s]), and ``stalls``
    and ``stall_s``: those of them in buckets wholly above ``stall_ns`` [ns] (a bucket's
    resolution: 1-2-5 steps) and their drive time [s]."""
    bounds = after["late_bounds_ns"]
    gaps = [a - (before["idle_gaps"][i] if before else 0) for i, a in enumerate(after["idle_gaps"])]
    ns = [a - (before["idle_ns"][i] if before else 0) for i, a in enumerate(after["idle_ns"])]
    # Bucket i holds the gaps above bounds[i - 1].
    long = [i for i in range(1, len(ns)) if bounds[i - 1] >= stall_ns]
    return {"gaps": sum(gaps), "idle_s": sum(ns) / 1e9,
            "stalls": sum(gaps[i] for i in long), "stall_s": sum(ns[i] for i in long) / 1e9}


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
    done = []
    for home in sorted(run_dir().glob("emu-*")):
        try:
            state = json.loads((home / "state.json").read_text())
            pid = int(state["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            digits = home.name[4:].split("-")[0]
            state, pid = {}, int(digits) if digits.isdigit() else -1
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




# -- a running emulator ----------------------------------------------------------------
class EmulatedDrive:
    """A simulated drive (``profile``: a :class:`ssdlab.profiles.Profile`) served as a block
    device from now until :meth:`close`: ``device`` (/dev/loopN), ``counters_path``,
    ``capacity_bytes``, ``idle_work_delay_ns`` (how long the host must leave the drive idle
    before the idle time changes it: idle GC, an SLC cache folded or taken back in use
    [ns, drive time]; None when it never does). ``data``/``data_path`` as :func:`parse_data` returns them;
    ``slowdown`` wall seconds per simulated second. Problems the user can fix (no root, no
    FUSE, a mount that fails) raise :class:`UserError`; nothing is left attached then."""

    def __init__(self, profile, *, seed: int = 1, data: str = "none", data_path: str | None = None,
                 slowdown: float = 1.0):
        from .. import _native

        check_host()
        self.profile, self.seed, self.slowdown = profile, seed, slowdown
        self.capacity_bytes = profile.user_bytes
        self.stale = sweep_stale()
        self.home = run_dir() / f"emu-{os.getpid()}-{next(_started)}"
        self.mnt = self.home / "mnt"
        self.counters_path = self.mnt / COUNTERS_NAME
        self.mnt.mkdir(parents=True, exist_ok=True)
        (self.home / "state.json").write_text(json.dumps(
            {"pid": os.getpid(), "start_ticks": _start_ticks(os.getpid()), "data_file": data_path,
             "mountpoint": str(self.mnt)}))
        self._emu = self._loop = None
        self.device: str | None = None
        try:
            with stop.held():
                try:
                    self._emu = _native.Emulator(list(profile.pairs), seed, str(self.mnt), data, data_path,
                                                 threads=FUSE_THREADS, slowdown=slowdown)
                except OSError as e:
                    raise UserError(f"{e}; is the fuse module loaded (modprobe fuse)?") from None
            self.idle_work_delay_ns: int | None = self._emu.idle_work_delay_ns
            try:
                self._loop = LoopDevice.over_file(self._emu.image_path, block_bytes=BLOCK_BYTES).create()
            except LoopError as e:
                raise UserError(str(e)) from None
            self.device = self._loop.path
        except BaseException:
            self.close(wait=False)
            raise

    @property
    def running(self) -> bool:
        """True from the start until :meth:`close` has stopped the server."""
        return self._emu is not None

    def counters(self) -> dict:
        """The drive's counters now (the counters file's object)."""
        return json.loads(self._emu.counters_json())

    def close(self, wait: bool = True) -> bool:
        """Detaches the loop device, unmounts and stops the server; with ``wait``, waits while
        something else holds the device open (until a second stop request). True when nothing
        is left behind; the final counters stay readable in ``final_counters``."""
        if self._emu is not None:
            self.final_counters = self.counters()
        clean = _teardown(self._emu, self._loop, self.mnt, lambda device: _sysfs(device, "backing_file"), wait)
        self._loop = None
        if clean:
            self._emu = None
            for p in (self.home / "state.json", self.mnt, self.home):
                try:
                    p.rmdir() if p.is_dir() else p.unlink()
                except OSError:
                    pass
        return clean

    def __enter__(self) -> "EmulatedDrive":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _teardown(emu, loop, mnt: Path, backing_file, wait: bool = True) -> bool:
    """Detaches the loop device (with ``wait``, waiting while something else holds it open,
    until a second stop request), unmounts and stops the server. True when nothing is left
    behind. ``backing_file(device)``: the file loop device ``device`` is attached over, or None."""
    if loop is not None and loop.path is not None:
        device, image = loop.path, os.path.realpath(loop.backing_file)
        loop.close()

        def attached() -> bool:  # still over our drive's file (another file there is not ours)
            return backing_file(device) == image

        if attached() and not (wait and _wait_released(device, attached)):
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
