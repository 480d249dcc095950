"""Throwaway loop devices for ``loop:SIZE`` targets: a real block device with no drive behind it.

``loop:8G`` lets anyone run the real-device code path (fio, the safety gate, blkdiscard)
without a spare SSD: ssdlab creates a *sparse* backing file in a temporary directory and
attaches it with direct I/O (the loop driver bypasses the backing file's page cache).
TRIM/discard on the loop device punches holes in the backing file, so it really deallocates
(the file's allocated blocks drop), which is what the TRIM tests look for.

SIZE is read as every size on the command line (:func:`ssdlab.units.parse_size`): ``K``,
``M``, ``G``, ``T`` and ``KiB``, ``MiB``, ``GiB``, ``TiB`` are powers of 1024 (``loop:1G`` =
2^30 bytes), ``KB``, ``MB``, ``GB``, ``TB`` powers of 1000, a bare number is bytes. A loop
device holds whole 4096-byte blocks, so a size that is not a multiple of 4096 bytes is
**rounded down** to one (``loop:1GB`` gives 999,997,440 bytes; ``loop:1G`` and ``loop:8GB`` are exact); the device's :meth:`LoopDevice.info`
(``loop`` in the target's description, summary.json) then gives both sizes and says so. It must
be at least 1 MiB. The backing file's filesystem must have SIZE bytes free, because the tests
fill the whole device.

Nothing is left behind, however the process ends (Ctrl-C, SIGTERM, SIGHUP, even SIGKILL):

- the backing file is unlinked as soon as it is made: only ssdlab's open file descriptor
  and the loop device keep it (``losetup`` and ``/sys/block/loopN/loop/backing_file`` show
  its path followed by ``(deleted)``), so the kernel frees its blocks when both are gone;
- the device is attached with the kernel's ``LOOP_CONFIGURE`` (Linux >= 5.8), which sets
  *autoclear* and direct I/O together with the backing file: from the moment it exists the
  kernel detaches it when its last user closes it, and ssdlab is that user;
- making and releasing the device run inside :func:`ssdlab.stop.held`, so a stop request
  cannot cut them short between two steps.

:meth:`LoopDevice.close`, leaving a ``with`` block (also on error and Ctrl-C), the object
being collected and interpreter exit detach the device at once. On an older kernel the device is attached with
``LOOP_SET_FD`` and then given autoclear (a SIGKILL between the two leaves it attached). Files
left by a run killed between making the backing file and unlinking it are swept on the
next creation.

Needs root (``/dev/loop-control``).
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import shutil
import struct
import tempfile
import weakref
from pathlib import Path

from .. import stop, units
from ..units import format_size

__all__ = ["LoopDevice", "LoopError", "LoopSize", "parse_size", "format_size", "sweep_stale"]

# <linux/loop.h>
_LOOP_SET_FD = 0x4C00
_LOOP_CLR_FD = 0x4C01
_LOOP_SET_STATUS64 = 0x4C04
_LOOP_SET_DIRECT_IO = 0x4C08
_LOOP_CONFIGURE = 0x4C0A
_LOOP_CTL_GET_FREE = 0x4C82
_LO_FLAGS_AUTOCLEAR = 4
_LO_FLAGS_DIRECT_IO = 16
# struct loop_info64: lo_device, lo_inode, lo_rdevice, lo_offset, lo_sizelimit (u64);
# lo_number, lo_encrypt_type, lo_encrypt_key_size, lo_flags (u32); lo_file_name[64],
# lo_crypt_name[64], lo_encrypt_key[32]; lo_init[2] (u64): 232 bytes
_LOOP_INFO64 = struct.Struct("<5Q4I64s64s32s2Q")
# struct loop_config: fd, block_size (u32); struct loop_info64; __reserved[8] (u64): 304 bytes
_LOOP_CONFIG = struct.Struct("<2I" + _LOOP_INFO64.format[1:] + "64x")

_PREFIX = "ssdlab-loop-"


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
    """The size of a loop device from ``"8G"``, ``"256MiB"``, ``"1.5GB"`` or a byte count
    (:func:`ssdlab.units.parse_size`: K/M/G/T and KiB/MiB/GiB/TiB powers of 1024, KB/MB/GB/TB
    powers of 1000),
    rounded down to a multiple of 4096 bytes. ValueError, starting with ``what``, if it is not a
    size or below 1 MiB."""
    try:
        n = units.parse_size(text)
    except ValueError as e:
        raise ValueError(f"{what} {e}; e.g. loop:8G (8 x 2^30 bytes) or loop:8GB (8 x 10^9)") from None
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


def _sysfs(device: str, key: str) -> str | None:
    """``/sys/class/block/loopN/loop/KEY`` of loop device ``device`` (/dev/loopN), or None."""
    try:
        return (Path("/sys/class/block") / os.path.basename(device) / "loop" / key).read_text().strip()
    except OSError:
        return None


def _detach(fd: int | None, attached: bool, backing_fd: int | None) -> None:
    """Detaches loop device ``fd`` (if ``attached``: our backing file is on it) and closes it
    and the backing file's ``backing_fd``: the kernel frees the unlinked file with the last."""
    with stop.held():
        if fd is not None:
            if attached:
                with contextlib.suppress(OSError):  # ENXIO: already detached
                    fcntl.ioctl(fd, _LOOP_CLR_FD)  # detach on our close; nobody may open it meanwhile
            os.close(fd)
        if backing_fd is not None:
            os.close(backing_fd)


def sweep_stale(directory: str | os.PathLike) -> list[str]:
    """Remove backing files (and the backing-file directories of earlier ssdlab versions) that
    killed ssdlab runs left in ``directory``; return what was removed."""
    removed = []
    try:
        entries = list(Path(directory).glob(_PREFIX + "*"))
    except OSError:
        return removed
    in_use = _loop_backing_files().values()
    for p in entries:
        m = re.match(re.escape(_PREFIX) + r"(\d+)-", p.name)
        if not m or _pid_alive(int(m.group(1))):
            continue
        if any(f == str(p) or f.startswith(str(p) + os.sep) for f in in_use):
            continue
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        else:
            try:
                p.unlink()
            except OSError:
                continue
        removed.append(str(p))
    return removed


class LoopDevice:
    """A loop device over a sparse, unlinked temporary file, owned by this process.

    >>> with LoopDevice(parse_size("256MiB")) as lo:   # doctest: +SKIP
    ...     print(lo.path, lo.backing_file)
    /dev/loop3 /tmp/ssdlab-loop-1234-ab12cd.img

    ``size_bytes``: device size in bytes, rounded down to a multiple of 4096 (a
    :class:`LoopSize` from :func:`parse_size` keeps what was asked for). ``directory``: where the backing file goes
    (default ``$SSDLAB_LOOP_DIR`` or the system temp dir). ``direct_io``: the loop driver
    bypasses the page cache of the backing file.

    ``backing_file`` is the path the backing file was made at; it is unlinked at once, so
    nothing is at that path (read the file through :attr:`backing_fd_path`).
    """

    def __init__(self, size_bytes: int, *, directory: str | os.PathLike | None = None, direct_io: bool = True):
        size = size_bytes if isinstance(size_bytes, LoopSize) else LoopSize(size_bytes)
        self.size_bytes = int(size)
        self.requested_bytes = size.requested_bytes
        self.directory = os.fspath(directory or os.environ.get("SSDLAB_LOOP_DIR") or tempfile.gettempdir())
        self.direct_io = direct_io
        self.block_bytes = 0  # the device's logical block size [bytes]; 0: the kernel's (512)
        self._existing: str | None = None  # over_file(): attach this file, not a new one
        self.path: str | None = None
        self.backing_file: str | None = None
        self._fd: int | None = None  # the loop device, open: it stays attached while we hold it
        self._backing_fd: int | None = None  # the backing file, open (it has no name)
        self._attached = False  # whether _fd has our backing file attached
        self._finalizer = None  # detaches at close(), when the object is collected, or at exit
        self.warnings: list[str] = []

    @classmethod
    def over_file(cls, path: str | os.PathLike, *, block_bytes: int = 0, direct_io: bool = True) -> "LoopDevice":
        """A loop device (not yet created) over the existing file ``path``, as large as the file
        (a multiple of 4096 bytes), with logical blocks of ``block_bytes`` (0: the kernel's 512
        bytes). The file is not ssdlab's: it stays where it is when the device goes. Attached
        with autoclear and direct I/O like any other (:meth:`create`)."""
        self = cls(os.stat(path).st_size, direct_io=direct_io)
        self._existing, self.block_bytes = os.fspath(path), block_bytes
        return self

    # -- lifecycle -------------------------------------------------------------------
    def create(self) -> "LoopDevice":
        """Make the backing file and attach it; on any failure (or Ctrl-C) undo everything."""
        if self.path is not None:
            return self
        label = f"loop:{format_size(self.size_bytes)}"
        if self._existing is not None:
            label = f"loop over {self._existing}"
        if not os.path.exists("/dev/loop-control"):
            raise LoopError(f"{label}: /dev/loop-control is missing: this machine cannot make loop devices (load the 'loop' module, or use file:PATH)")
        if os.geteuid() != 0:
            raise LoopError(f"{label}: making a loop device needs root; run as root, or use file:PATH")
        if self._existing is None:
            self._check_directory(label)
        try:
            with stop.held():  # a stop request meanwhile is raised at its end, and undoes it all
                if self._existing is not None:
                    self.backing_file = self._existing
                    self._backing_fd = os.open(self._existing, os.O_RDWR | os.O_CLOEXEC)
                else:
                    self._backing_fd, self.backing_file = tempfile.mkstemp(
                        prefix=f"{_PREFIX}{os.getpid()}-", suffix=".img", dir=self.directory)
                    os.unlink(self.backing_file)
                    os.ftruncate(self._backing_fd, self.size_bytes)  # sparse: no blocks allocated
                self._attach(label)
                self._finalizer = weakref.finalize(self, _detach, self._fd, True, self._backing_fd)
        except BaseException as e:
            self.close()
            if isinstance(e, OSError):
                why = f"{e.strerror or e}" + (f" ({e.filename})" if e.filename else "")
                where = self._existing or f"a file in {self.directory}"
                raise LoopError(f"{label}: could not make a loop device over {where}: {why}") from None
            raise
        if self.direct_io and _sysfs(self.path, "dio") == "0":
            self.warnings.append(f"{self.path}: the kernel did not enable direct I/O over "
                                 f"{self._existing or 'a file in ' + self.directory}; the loop device uses the page cache")
        return self

    def _check_directory(self, label: str) -> None:
        """The backing directory exists and has room for the new backing file (stale ones
        swept first); LoopError saying what to do if not."""
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

    def _attach(self, label: str) -> None:
        """Attaches the backing file to a free loop device, with autoclear and (if asked)
        direct I/O from the start; sets ``path``, ``_fd`` and ``_attached``."""
        flags = _LO_FLAGS_AUTOCLEAR | (_LO_FLAGS_DIRECT_IO if self.direct_io else 0)
        ctl = os.open("/dev/loop-control", os.O_RDWR | os.O_CLOEXEC)
        try:
            for _ in range(64):
                n = fcntl.ioctl(ctl, _LOOP_CTL_GET_FREE)
                self.path, self._fd = f"/dev/loop{n}", os.open(f"/dev/loop{n}", os.O_RDWR | os.O_CLOEXEC)
                try:
                    self._configure(flags)
                    return
                except OSError as e:
                    if e.errno != errno.EBUSY or self._attached:
                        raise
                os.close(self._fd)  # another program took this device first: not ours
                self.path, self._fd = None, None
            raise LoopError(f"{label}: other programs kept taking the free loop device first; try again")
        finally:
            os.close(ctl)

    def _info(self, flags: int) -> tuple:
        """The fields of a struct loop_info64 with ``flags`` and the backing file's name."""
        return (0, 0, 0, 0, 0, 0, 0, 0, flags, self.backing_file.encode()[:63], b"", b"", 0, 0)

    def _configure(self, flags: int) -> None:
        """LOOP_CONFIGURE: backing file, autoclear and direct I/O in one step. A kernel
        without it (< 5.8) gets LOOP_SET_FD, then the flags."""
        # a filesystem without direct I/O (tmpfs) may refuse the flag: then without it
        for f in dict.fromkeys((flags, flags & ~_LO_FLAGS_DIRECT_IO)):
            try:
                fcntl.ioctl(self._fd, _LOOP_CONFIGURE, _LOOP_CONFIG.pack(self._backing_fd, self.block_bytes, *self._info(f)))
                self._attached = True
                return
            except OSError as e:
                if e.errno not in (errno.EINVAL, errno.ENOTTY):
                    raise
        fcntl.ioctl(self._fd, _LOOP_SET_FD, self._backing_fd)
        self._attached = True
        fcntl.ioctl(self._fd, _LOOP_SET_STATUS64, _LOOP_INFO64.pack(*self._info(_LO_FLAGS_AUTOCLEAR)))
        if flags & _LO_FLAGS_DIRECT_IO:
            try:
                fcntl.ioctl(self._fd, _LOOP_SET_DIRECT_IO, 1)
            except OSError:
                pass  # create() warns that direct I/O is off

    def close(self) -> None:
        """Detach the device and let the kernel free the backing file. Idempotent; a stop
        request cannot cut it short once it has begun."""
        with stop.held():
            if self._finalizer is not None:
                self._finalizer()  # once only
            elif self._fd is not None or self._backing_fd is not None:  # creation failed part way
                _detach(self._fd, self._attached, self._backing_fd)
            self._finalizer, self._fd, self._backing_fd, self._attached, self.path = None, None, None, False, None

    def __enter__(self) -> "LoopDevice":
        return self.create()

    def __exit__(self, *exc) -> None:
        self.close()

    # -- facts ------------------------------------------------------------------------
    def allocated_bytes(self) -> int:
        """Bytes the backing file really occupies (st_blocks * 512): drops after TRIM; 0 once
        the device is closed (the kernel has freed the file)."""
        if self._backing_fd is None:
            return 0
        return os.fstat(self._backing_fd).st_blocks * 512

    @property
    def backing_fd_path(self) -> str | None:
        """A path this process can open the (unlinked) backing file by, to read what the
        device holds: ``/proc/self/fd/N``. None once the device is closed."""
        return None if self._backing_fd is None else f"/proc/self/fd/{self._backing_fd}"

    def info(self) -> dict:
        """Facts for summary.json: device, backing file, size (and the size asked for, if it was
        rounded down), direct I/O and autoclear state."""
        d: dict = {"device": self.path, "backing_file": self.backing_file, "size_bytes": self.size_bytes}
        if self.requested_bytes != self.size_bytes:
            d["requested_bytes"] = self.requested_bytes
            d["size_note"] = (f"{self.requested_bytes} bytes asked for, rounded down to {self.size_bytes} bytes: a "
                              f"loop device holds whole {BLOCK_BYTES}-byte blocks")
        if self.path:
            for key in ("dio", "autoclear"):
                if (value := _sysfs(self.path, key)) is not None:
                    d[key] = value == "1"
        if self.warnings:
            d["warnings"] = list(self.warnings)
        return d

    def __repr__(self) -> str:
        return f"LoopDevice({format_size(self.size_bytes)}, path={self.path!r}, backing_file={self.backing_file!r})"
