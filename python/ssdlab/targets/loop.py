"""Throwaway loop devices for ``loop:SIZE`` targets: a real block device with no drive behind it.

``loop:8G`` lets anyone run the real-device code path (fio, the safety gate, blkdiscard)
without a spare SSD: ssdlab creates a *sparse* backing file in a temporary directory,
attaches it with ``losetup --find --show --direct-io=on``, and removes both when done.
TRIM/discard on the loop device punches holes in the backing file, so it really deallocates
(the file's allocated blocks drop), which is what the TRIM tests look for.

SIZE is read as every size on the command line (:func:`ssdlab.units.parse_size`): ``K``,
``M``, ``G``, ``T`` are powers of 1000 (``loop:1G`` = 10^9 bytes), ``KiB``, ``MiB``, ``GiB``,
``TiB`` powers of 1024, a bare number is bytes. A loop device holds whole 4096-byte blocks, so a
size that is not a multiple of 4096 bytes is **rounded down** to one (``loop:1G`` gives
999,997,440 bytes; ``loop:1GiB`` and ``loop:8G`` are exact); the device's :meth:`LoopDevice.info`
(``loop`` in the target's description, summary.json) then gives both sizes and says so. It must
be at least 1 MiB. The backing file's filesystem must have SIZE bytes free, because the tests
fill the whole device.

Cleanup happens in :meth:`LoopDevice.close`, on leaving a ``with`` block (also on error and
Ctrl-C), and at interpreter exit (``atexit``). As a last resort the device is created with the
kernel's *autoclear* flag while ssdlab holds it open, so even if the process is killed the
kernel detaches it; stale backing files left by a killed run are swept on the next creation.

Needs root (``/dev/loop-control``) and util-linux's ``losetup``.
"""
from __future__ import annotations

import atexit
import fcntl
import os
import re
import shutil
import struct
import subprocess
import tempfile
from pathlib import Path

from .. import units
from ..units import format_size

__all__ = ["LoopDevice", "LoopError", "LoopSize", "parse_size", "format_size", "sweep_stale"]

# <linux/loop.h>
_LOOP_SET_STATUS64 = 0x4C04
_LOOP_GET_STATUS64 = 0x4C05
_LO_FLAGS_AUTOCLEAR = 4
_LOOP_INFO64_SIZE = 232
_LO_FLAGS_OFFSET = 52

_DIR_PREFIX = "ssdlab-loop-"


class LoopError(RuntimeError):
    """A loop device could not be created or removed; the message says what to do."""


#: A loop device's size is a whole number of these [bytes].
BLOCK_BYTES = 4096
#: The smallest loop device ssdlab makes [bytes].
MIN_BYTES = 1 << 20


class LoopSize(int):
    """A loop device's size in bytes (a multiple of :data:`BLOCK_BYTES`) that remembers the
    bytes asked for (``requested_bytes``), so the device can say it rounded them down."""

    requested_bytes: int

    def __new__(cls, requested_bytes: int) -> "LoopSize":
        self = super().__new__(cls, requested_bytes // BLOCK_BYTES * BLOCK_BYTES)
        self.requested_bytes = int(requested_bytes)
        return self


def parse_size(text: str | int, *, what: str = "size") -> LoopSize:
    """The size of a loop device from ``"8G"``, ``"256MiB"``, ``"1.5G"`` or a byte count
    (:func:`ssdlab.units.parse_size`: K/M/G/T powers of 1000, KiB/MiB/GiB/TiB powers of 1024),
    rounded down to a multiple of 4096 bytes. ValueError, starting with ``what``, if it is not a
    size or below 1 MiB."""
    try:
        n = units.parse_size(text)
    except ValueError as e:
        raise ValueError(f"{what} {e}; e.g. loop:8G (8 x 10^9 bytes) or loop:512MiB") from None
    size = LoopSize(n)
    if size < MIN_BYTES:
        raise ValueError(f"{what} {text!r} = {n} bytes: a loop device needs at least 1MiB ({MIN_BYTES} bytes)")
    return size


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _loop_backing_files() -> dict[str, str]:
    """/dev/loopN -> backing file of every attached loop device."""
    out = {}
    for d in Path("/sys/class/block").glob("loop*"):
        try:
            bf = (d / "loop" / "backing_file").read_text().strip()
        except OSError:
            continue
        out[f"/dev/{d.name}"] = bf.removesuffix(" (deleted)")
    return out


def sweep_stale(directory: str | os.PathLike) -> list[str]:
    """Remove backing-file directories left by killed ssdlab runs; return what was removed."""
    removed = []
    try:
        entries = list(Path(directory).glob(_DIR_PREFIX + "*"))
    except OSError:
        return removed
    in_use = _loop_backing_files().values()
    for d in entries:
        m = re.match(re.escape(_DIR_PREFIX) + r"(\d+)-", d.name)
        if not m or _pid_alive(int(m.group(1))):
            continue
        if any(str(f).startswith(str(d) + os.sep) for f in in_use):
            continue
        shutil.rmtree(d, ignore_errors=True)
        removed.append(str(d))
    return removed


class LoopDevice:
    """A loop device over a sparse temporary file, owned by this process.

    >>> with LoopDevice(parse_size("256MiB")) as lo:   # doctest: +SKIP
    ...     print(lo.path, lo.backing_file)
    /dev/loop3 /tmp/ssdlab-loop-1234-ab12cd/backing.img

    ``size_bytes``: device size in bytes, rounded down to a multiple of 4096 (a
    :class:`LoopSize` from :func:`parse_size` keeps what was asked for). ``directory``: where the backing file goes
    (default ``$SSDLAB_LOOP_DIR`` or the system temp dir). ``direct_io``: attach with
    ``--direct-io=on`` so the loop driver bypasses the page cache of the backing file.
    """

    def __init__(self, size_bytes: int, *, directory: str | os.PathLike | None = None, direct_io: bool = True):
        size = size_bytes if isinstance(size_bytes, LoopSize) else LoopSize(size_bytes)
        self.size_bytes = int(size)
        self.requested_bytes = size.requested_bytes
        self.directory = os.fspath(directory or os.environ.get("SSDLAB_LOOP_DIR") or tempfile.gettempdir())
        self.direct_io = direct_io
        self.path: str | None = None
        self.backing_file: str | None = None
        self._tmpdir: str | None = None
        self._fd: int | None = None
        self.warnings: list[str] = []

    # -- lifecycle -------------------------------------------------------------------
    def create(self) -> "LoopDevice":
        """Make the backing file and attach it; on any failure (or Ctrl-C) undo everything."""
        if self.path is not None:
            return self
        label = f"loop:{format_size(self.size_bytes)}"
        if not os.path.exists("/dev/loop-control"):
            raise LoopError(f"{label}: /dev/loop-control is missing: this machine cannot make loop devices (load the 'loop' module, or use file:PATH)")
        if os.geteuid() != 0:
            raise LoopError(f"{label}: making a loop device needs root; run as root, or use file:PATH")
        losetup = shutil.which("losetup")
        if not losetup:
            raise LoopError(f"{label}: losetup not found; install util-linux")
        if not os.path.isdir(self.directory):
            raise LoopError(f"{label}: backing directory {self.directory} does not exist; set SSDLAB_LOOP_DIR to an existing directory")
        sweep_stale(self.directory)
        vfs = os.statvfs(self.directory)
        free = vfs.f_bavail * vfs.f_frsize
        if free < self.size_bytes:
            raise LoopError(
                f"{label}: the backing file needs {format_size(self.size_bytes)} free in {self.directory} "
                f"but only {free / 2**30:.1f} GiB is free; choose a smaller size or set SSDLAB_LOOP_DIR to a roomier directory"
            )
        atexit.register(self.close)
        try:
            self._tmpdir = tempfile.mkdtemp(prefix=f"{_DIR_PREFIX}{os.getpid()}-", dir=self.directory)
            self.backing_file = os.path.join(self._tmpdir, "backing.img")
            fd = os.open(self.backing_file, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            try:
                os.ftruncate(fd, self.size_bytes)  # sparse: no blocks allocated
            finally:
                os.close(fd)
            cmd = [losetup, "--find", "--show"]
            if self.direct_io:
                cmd.append("--direct-io=on")
            cmd.append(self.backing_file)
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            if r.returncode != 0 or not r.stdout.strip().startswith("/dev/"):
                raise LoopError(f"{label}: `{' '.join(cmd)}` failed: {r.stderr.strip() or r.stdout.strip()}")
            self.path = r.stdout.strip().splitlines()[0]
            if r.stderr.strip():
                self.warnings.append(r.stderr.strip())
            # hold it open with autoclear: the kernel detaches it when we die, however we die
            self._fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                buf = bytearray(_LOOP_INFO64_SIZE)
                fcntl.ioctl(self._fd, _LOOP_GET_STATUS64, buf)
                flags = struct.unpack_from("<I", buf, _LO_FLAGS_OFFSET)[0]
                struct.pack_into("<I", buf, _LO_FLAGS_OFFSET, flags | _LO_FLAGS_AUTOCLEAR)
                fcntl.ioctl(self._fd, _LOOP_SET_STATUS64, buf)
            except OSError as e:
                self.warnings.append(f"could not set autoclear on {self.path}: {e}")
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        """Detach the device and delete the backing file and its directory. Idempotent."""
        if self.path is not None:
            # Detach while we still hold it open: the kernel then detaches lazily on our close,
            # so the number cannot be reused by someone else in between.
            bf = _loop_backing_files().get(self.path)
            if bf is not None and self.backing_file and os.path.realpath(bf) == os.path.realpath(self.backing_file):
                r = subprocess.run(["losetup", "--detach", self.path], capture_output=True, text=True)
                if r.returncode != 0:
                    self.warnings.append(f"losetup --detach {self.path}: {r.stderr.strip()}")
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None
        self.path = None
        try:
            atexit.unregister(self.close)
        except Exception:  # pragma: no cover - interpreter shutting down
            pass

    def __enter__(self) -> "LoopDevice":
        return self.create()

    def __exit__(self, *exc) -> None:
        self.close()

    # -- facts ------------------------------------------------------------------------
    def allocated_bytes(self) -> int:
        """Bytes the backing file really occupies (st_blocks * 512): drops after TRIM."""
        if not self.backing_file:
            return 0
        return os.stat(self.backing_file).st_blocks * 512

    def info(self) -> dict:
        """Facts for summary.json: device, backing file, size (and the size asked for, if it was
        rounded down), direct I/O and autoclear state."""
        d: dict = {"device": self.path, "backing_file": self.backing_file, "size_bytes": self.size_bytes}
        if self.requested_bytes != self.size_bytes:
            d["requested_bytes"] = self.requested_bytes
            d["size_note"] = (f"{self.requested_bytes} bytes asked for, rounded down to {self.size_bytes} bytes: a "
                              f"loop device holds whole {BLOCK_BYTES}-byte blocks")
        if self.path:
            sysd = Path("/sys/class/block") / os.path.basename(self.path) / "loop"
            for key in ("dio", "autoclear"):
                try:
                    d[key] = (sysd / key).read_text().strip() == "1"
                except OSError:
                    pass
        if self.warnings:
            d["warnings"] = list(self.warnings)
        return d

    def __repr__(self) -> str:
        return f"LoopDevice({format_size(self.size_bytes)}, path={self.path!r}, backing_file={self.backing_file!r})"
