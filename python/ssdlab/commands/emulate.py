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
from ..units import format_size

#: Logical block size of the emulated device [bytes]: the simulator's 4 KiB mapping unit, so
#: every request covers whole units.
BLOCK_BYTES = 4096
#: How often the serving loop looks at the drive (to report a simulator error once) [s].
POLL_S = 0.5
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
    p.set_defaults(func=run)


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
                emu = _native.Emulator(list(profile.pairs), args.seed, str(mnt), mode, data_path)
            except OSError as e:
                raise UserError(f"{e}; is the fuse module loaded (modprobe fuse)?") from None
        try:
            loop = LoopDevice.over_file(emu.image_path, block_bytes=BLOCK_BYTES).create()
        except LoopError as e:
            raise UserError(str(e)) from None
        print(f"emulating {profile.name} ({profile.source}): {capacity} bytes ({format_size(capacity)}), "
              f"{BLOCK_BYTES}-byte blocks, data: {args.data}, seed {args.seed}")
        print(f"device: {loop.path}")
        print(f"stop: Ctrl-C or kill -TERM {os.getpid()} (detaches {loop.path}; "
              f"reads and writes in flight complete first)", flush=True)
        _serve(emu)
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
        c = emu.counts()
        print(f"stopped: {c['reads']} reads, {c['writes']} writes, {c['trims']} discards, {c['flushes']} flushes "
              f"served; {c['errors']} failed; replies {c['mean_late_s'] * 1e6:.0f} us "
              f"(at most {c['max_late_s'] * 1e6:.0f} us) "
              f"after their simulated completion time")
    return 0 if clean else 1


def _serve(emu) -> None:
    """Serves until a stop request (KeyboardInterrupt); reports the simulator's first error."""
    told = False
    while True:
        time.sleep(POLL_S)
        error = emu.counts()["error"]
        if error and not told:
            print(f"ssdlab emulate: the simulated drive failed: {error}; requests now fail with I/O errors; "
                  f"stop it (Ctrl-C) and change the profile", file=sys.stderr)
            told = True


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
