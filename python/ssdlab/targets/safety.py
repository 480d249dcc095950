"""The safety gate: ssdlab never writes to a device that holds something, unless told to.

Every real-device run writes over the whole device and destroys its data. Before a
:class:`~ssdlab.targets.fio.FioTarget` touches ``/dev/NAME`` it calls :func:`check_device`,
which refuses (raises :class:`UnsafeTargetError`) when the device

- is mounted, or one of its partitions or a device stacked on it is mounted
  (``/proc/self/mountinfo`` and ``/proc/mounts``);
- holds partitions (``/sys/class/block/NAME/*/partition``);
- carries a filesystem, partition-table, RAID, LVM or crypto signature
  (``wipefs --no-act`` and ``blkid -p``); a device that cannot be probed is refused too;
- is an LVM physical volume as LVM itself sees it (``pvs``), or holds an md RAID superblock
  (``mdadm --examine``), whatever the signature probes say;
- has holders, or one of its partitions has (``/sys/class/block/NAME/holders``: LVM and other
  device-mapper devices such as dm-crypt and multipath, md RAID arrays, bcache...);
- backs the running system: it is, contains, or lies under the device of ``/`` or an active
  swap area (``/proc/swaps``);

unless the caller passes ``destroy`` naming that exact device (the CLI's
``--destroy-data /dev/NAME``). Symlinks are resolved on both sides, so
``--destroy-data /dev/disk/by-id/...`` names the same device as ``/dev/sdb``.
A ``destroy`` that names a *different* device is an error, never a pass.

Two refusals ``destroy`` does **not** override, because writing would destroy something the
flag cannot speak for:

- **in use by another program**: the device (or one of its partitions) is claimed exclusively
  (an ``O_EXCL`` open fails with EBUSY) and no mount, holder or swap area seen here explains
  it, so another program (or a mount in another namespace) holds it. The message names the
  processes that have it open (``/proc/PID/fd``) and says to close them (``fuser -v DEVICE``).
- **holds the results folder**: the filesystem of ``out_path`` (the target's working folder,
  ``OUT/fio``) lives on the device: on it, on one of its partitions, on a device-mapper or md
  device built on it, or on a loop device whose backing file is on any of these. The run
  would overwrite its own results; the message says to put ``--out`` on another device.

:func:`check_file` is the same gate for ``file:PATH`` targets: the path must be a regular
file (a block device named as a file would bypass the device gate) that is not an active
swap file nor the backing file of a loop device (``destroy`` overrides these two), and not
one of the files ssdlab itself writes and deletes in the target's working folder (job files,
fio's JSON and logs; not overridable). Any other file, inside ``--out`` or not, is fine.

Nothing here writes anything: the gate only reads sysfs/procfs, probes signatures and opens
the device read-only for a moment. Sizes are in bytes; device numbers are ``(major, minor)``.
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import shutil
import stat
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .. import stop

SYS_BLOCK = Path("/sys/class/block")
SYS_DEV_BLOCK = Path("/sys/dev/block")
#: How the names of the files a fio target writes (and deletes) in its working folder end.
WORKDIR_SUFFIXES = (".fio", ".json", ".stderr", ".log")

__all__ = ["UnsafeTargetError", "check_device", "check_file", "device_reasons", "resolve_device", "stack_reasons"]


class UnsafeTargetError(Exception):
    """ssdlab refuses to write to this target; the message says why and what to do."""


# --------------------------------------------------------------------------- helpers


def _read(path: Path | str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


def _unescape_mount(s: str) -> str:
    """Undo the octal escapes of /proc/*/mountinfo (``\\040`` = space)."""
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\" and i + 4 <= len(s) and s[i + 1 : i + 4].isdigit():
            out.append(chr(int(s[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def _dev_of_name(name: str) -> tuple[int, int] | None:
    txt = _read(SYS_BLOCK / name / "dev")
    if ":" not in txt:
        return None
    a, b = txt.split(":", 1)
    return int(a), int(b)


def _name_of_dev(major: int, minor: int) -> str | None:
    p = SYS_DEV_BLOCK / f"{major}:{minor}"
    if not p.exists():
        return None
    return os.path.basename(os.path.realpath(p))


def _partitions(name: str) -> list[str]:
    base = SYS_BLOCK / name
    try:
        return sorted(c.name for c in base.iterdir() if (c / "partition").exists())
    except OSError:
        return []


def _holders(name: str) -> list[str]:
    try:
        return sorted(p.name for p in (SYS_BLOCK / name / "holders").iterdir())
    except OSError:
        return []


def _slaves(name: str) -> list[str]:
    try:
        return sorted(p.name for p in (SYS_BLOCK / name / "slaves").iterdir())
    except OSError:
        return []


def _parent_disk(name: str) -> str | None:
    """The whole disk a partition belongs to, or None if ``name`` is not a partition."""
    if not (SYS_BLOCK / name / "partition").exists():
        return None
    parent = os.path.basename(os.path.dirname(os.path.realpath(SYS_BLOCK / name)))
    return parent or None


def _stacked_above(name: str) -> dict[str, tuple[str, str] | None]:
    """``name`` -> None, and every device stacked on it -> (the device it sits on, the step
    in words): its partitions, holders (dm, md, bcache...) and loop devices whose backing
    file is the device node itself (at any offset), recursively."""
    loops: dict[str, _Loop] | None = None
    seen: dict[str, tuple[str, str] | None] = {name: None}
    todo = [name]
    while todo:
        n = todo.pop()
        above = [(p, "is a partition of") for p in _partitions(n)] + [(h, "is built on") for h in _holders(n)]
        dev = _dev_of_name(n)
        if dev is not None:
            loops = _loops() if loops is None else loops
            above += [(lo.name, "is a loop device over", f" from byte {lo.offset_bytes}" if lo.offset_bytes else "")
                      for lo in loops.values() if lo.backing_rdev == dev]
        for a, how, *where in above:
            if a not in seen:
                seen[a] = (n, f"{a} {how} {n}{''.join(where)}")
                todo.append(a)
    return seen


def _chain(links: dict[str, tuple[str, str] | None], n: str, *, top_first: bool = True) -> str:
    """The steps (in words) between ``n`` and the root of ``links``, a :func:`_stacked_above`
    or :func:`_built_on` map, from ``n`` to the root or (``top_first=False``) the other way;
    "" for the root itself."""
    steps = []
    while (link := links.get(n)) is not None:
        n, step = link
        steps.append(step)
    return ", ".join(steps if top_first else reversed(steps))


def resolve_device(path: str | os.PathLike) -> tuple[str, str]:
    """Return ``(real_path, kernel_name)`` of a block device, or raise UnsafeTargetError."""
    path = os.fspath(path)
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except FileNotFoundError:
        raise UnsafeTargetError(
            f"{path}: no such device. List block devices with `lsblk` and name one as /dev/NAME."
        ) from None
    except OSError as e:
        raise UnsafeTargetError(f"{path}: cannot stat it ({e.strerror}); check the path and permissions.") from None
    if not stat.S_ISBLK(st.st_mode):
        kind = "a regular file" if stat.S_ISREG(st.st_mode) else "a directory" if stat.S_ISDIR(st.st_mode) else "not a block device"
        hint = " To test on a file, name it as file:PATH." if stat.S_ISREG(st.st_mode) else ""
        raise UnsafeTargetError(
            f"{path}: is {kind}, not a block device; a device target must be a block device such as /dev/sdX or /dev/nvme0n1.{hint}"
        )
    name = _name_of_dev(os.major(st.st_rdev), os.minor(st.st_rdev)) or os.path.basename(real)
    return real, name


# --------------------------------------------------------------------------- system facts


def _mounts() -> list[tuple[tuple[int, int] | None, str, str]]:
    """(device number or None, source, mount point) of every mount this process can see."""
    out: list[tuple[tuple[int, int] | None, str, str]] = []
    try:
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            parts = line.split()
            if " - " not in line or len(parts) < 5:
                continue
            majmin = parts[2]
            post = line.split(" - ", 1)[1].split()
            source = _unescape_mount(post[1]) if len(post) > 1 else ""
            dev = None
            if ":" in majmin:
                a, b = majmin.split(":", 1)
                if a.isdigit() and b.isdigit():
                    dev = (int(a), int(b))
            out.append((dev, source, _unescape_mount(parts[4])))
    except OSError:
        pass
    try:
        for line in Path("/proc/mounts").read_text().splitlines():
            parts = line.split()
            if len(parts) >= 2:
                out.append((None, _unescape_mount(parts[0]), _unescape_mount(parts[1])))
    except OSError:
        pass
    return out


def _swaps() -> list[tuple[str, str]]:
    """(filename, type) of active swap areas."""
    res = []
    try:
        lines = Path("/proc/swaps").read_text().splitlines()[1:]
    except OSError:
        return res
    for line in lines:
        parts = line.split()
        if len(parts) >= 2:
            res.append((_unescape_mount(parts[0]), parts[1]))
    return res


def _swap_reasons(name: str, members: dict[str, tuple[str, str] | None]) -> tuple[list[str], set[str]]:
    """Active swap areas on device ``name`` or anything in ``members`` (what is stacked on
    it), and swap files on filesystems built on it, in words; and the members that are swap."""
    out, swapped = [], set()
    for fname, _typ in _swaps():
        try:
            st = os.stat(fname)
        except OSError:
            continue
        if stat.S_ISBLK(st.st_mode):
            sw = _name_of_dev(os.major(st.st_rdev), os.minor(st.st_rdev))
            if sw in members:
                swapped.add(sw)
                out.append(f"is active swap ({fname})" + (f" (via {sw}: {steps})" if (steps := _chain(members, sw)) else ""))
        elif (where := _holds_path(name, fname)) is not None:
            out.append(f"holds the active swap file {fname}: its filesystem is {where}")
    return out, swapped


_PTABLES = {"dos", "gpt", "PMBR", "sun", "sgi", "bsd", "mac", "atari", "aix", "ultrix", "minix", "solaris", "unixware", "dasd"}
_SIG_NAMES = {"linux_raid_member": "Linux md RAID member", "LVM2_member": "LVM physical volume",
              "crypto_LUKS": "LUKS encrypted volume", "swap": "swap area", "ddf_raid_member": "DDF RAID member",
              "isw_raid_member": "Intel RAID member", "zfs_member": "ZFS pool member", "bcache": "bcache device"}


def _describe_sig(typ: str) -> str:
    if typ in _PTABLES:
        return f"{typ} partition table"
    if typ in _SIG_NAMES:
        return f"{typ} ({_SIG_NAMES[typ]})"
    if typ.endswith("_raid_member"):
        return f"{typ} (RAID member)"
    return f"{typ} filesystem signature"


def _signatures(real: str) -> tuple[list[str], str | None]:
    """Signature descriptions found on the device, and an error if it could not be probed."""
    sigs: list[str] = []
    errors: list[str] = []
    probed = False
    wipefs = shutil.which("wipefs")
    if wipefs:
        try:
            r = stop.run([wipefs, "--no-act", "--json", real], 60)
            if r.returncode == 0:
                probed = True
                if r.stdout.strip():
                    for s in json.loads(r.stdout).get("signatures", []):
                        sigs.append(f"{_describe_sig(str(s.get('type')))} at offset {s.get('offset')}")
            else:
                errors.append(r.stderr.strip() or f"wipefs exited {r.returncode}")
        except (OSError, subprocess.SubprocessError, ValueError) as e:
            errors.append(f"wipefs: {e}")
    blkid = shutil.which("blkid")
    if blkid:
        try:
            r = stop.run([blkid, "-p", "-o", "export", real], 60)
            if r.returncode == 0:
                probed = True
                kv = dict(l.split("=", 1) for l in r.stdout.splitlines() if "=" in l)
                usage = kv.get("USAGE", "")
                for key in ("TYPE", "PTTYPE"):
                    if key in kv and not any(s.startswith(kv[key] + " ") for s in sigs):
                        desc = _describe_sig(kv[key]) if key == "PTTYPE" or kv[key] in _SIG_NAMES else (
                            f"{kv[key]} " + {"raid": "(RAID member)", "crypto": "(encrypted volume)"}.get(usage, "filesystem signature"))
                        sigs.append(desc + " (blkid)")
            elif r.returncode == 2 and not r.stderr.strip():  # probed, nothing found
                probed = True
            else:
                errors.append(r.stderr.strip() or f"blkid exited {r.returncode}")
        except (OSError, subprocess.SubprocessError) as e:
            errors.append(f"blkid: {e}")
    if not wipefs and not blkid:
        return sigs, "wipefs and blkid are not installed (install util-linux)"
    if not probed:
        return sigs, "; ".join(errors)
    return sigs, None


# --------------------------------------------------------------------------- stacking, users, results


_LOOP_GET_STATUS64 = 0x4C05  # <linux/loop.h>: struct loop_info64 starts with
_LOOP_INFO64_SIZE = 232       # __u64 lo_device, lo_inode, lo_rdevice, lo_offset


@dataclass(frozen=True)
class _Loop:
    """An attached loop device and what backs it."""

    name: str
    #: Device number of the backing file's filesystem (a regular file's ``st_dev``), or None.
    backing_fs: tuple[int, int] | None
    #: Device number of the backing file when it is a device node (its ``st_rdev``), or None.
    backing_rdev: tuple[int, int] | None
    offset_bytes: int
    #: Inode number of the backing file on ``backing_fs`` (0 when unknown).
    backing_ino: int = 0


def _loop(name: str) -> _Loop | None:
    """The backing of loop device ``name`` (LOOP_GET_STATUS64; sysfs if the node cannot be
    opened), or None if it is not an attached loop device."""
    if not (SYS_BLOCK / name / "loop").is_dir():
        return None
    try:
        fd = os.open(f"/dev/{name}", os.O_RDONLY | os.O_CLOEXEC)
        try:
            buf = bytearray(_LOOP_INFO64_SIZE)
            fcntl.ioctl(fd, _LOOP_GET_STATUS64, buf)
        finally:
            os.close(fd)
        dev, ino, rdev, offset = struct.unpack_from("<QQQQ", buf, 0)
        return _Loop(name, (os.major(dev), os.minor(dev)), (os.major(rdev), os.minor(rdev)) if rdev else None, offset,
                     ino)
    except OSError:
        pass
    backing = _read(SYS_BLOCK / name / "loop" / "backing_file").removesuffix(" (deleted)")
    try:
        st = os.stat(backing) if backing else None
    except OSError:
        st = None
    offset = _read(SYS_BLOCK / name / "loop" / "offset")
    offset_bytes = int(offset) if offset.isdigit() else 0
    if st is None:
        return _Loop(name, None, None, offset_bytes)
    if stat.S_ISBLK(st.st_mode):
        return _Loop(name, (os.major(st.st_dev), os.minor(st.st_dev)), (os.major(st.st_rdev), os.minor(st.st_rdev)),
                     offset_bytes, st.st_ino)
    return _Loop(name, (os.major(st.st_dev), os.minor(st.st_dev)), None, offset_bytes, st.st_ino)


def _loops() -> dict[str, _Loop]:
    """Every attached loop device, by kernel name."""
    try:
        names = sorted(p.name for p in SYS_BLOCK.iterdir() if p.name.startswith("loop"))
    except OSError:
        return {}
    return {n: lo for n in names if (lo := _loop(n)) is not None}


def _devices_of(dev: tuple[int, int]) -> list[str]:
    """Kernel names of the block devices behind device number ``dev``: the device itself, or
    for a filesystem without one (btrfs subvolumes...) the sources it is mounted from."""
    name = _name_of_dev(*dev)
    if name:
        return [name]
    names = []
    for mdev, source, _mnt in _mounts():
        if mdev == dev and source.startswith("/dev/"):
            try:
                st = os.stat(source)
            except OSError:
                continue
            if stat.S_ISBLK(st.st_mode) and (n := _name_of_dev(os.major(st.st_rdev), os.minor(st.st_rdev))):
                names.append(n)
    return names


def _built_on(names: list[str]) -> dict[str, tuple[str, str] | None]:
    """Every device ``names`` are built on -> (the device above it, the step in words), None
    for ``names``: dm/md slaves, the disk of a partition, the device node a loop device is
    over, and the devices holding a loop device's backing file."""
    seen: dict[str, tuple[str, str] | None] = {n: None for n in names}
    todo = list(names)
    while todo:
        n = todo.pop()
        below = [(s, "is built on") for s in _slaves(n)]
        if parent := _parent_disk(n):
            below.append((parent, "is a partition of"))
        if (lo := _loop(n)) is not None:
            if lo.backing_rdev is not None:
                below += [(b, "is a loop device over") for b in filter(None, [_name_of_dev(*lo.backing_rdev)])]
            elif lo.backing_fs is not None:
                below += [(b, "is a loop device over a file on") for b in _devices_of(lo.backing_fs)]
        for b, how in below:
            if b not in seen:
                seen[b] = (n, f"{n} {how} {b}")
                todo.append(b)
    return seen


def _holds_path(name: str, path: str | os.PathLike) -> str | None:
    """How device ``name`` holds the filesystem of ``path`` (or of its nearest existing
    parent): "on /dev/TOP (steps)", or None if it does not."""
    p = Path(os.path.abspath(os.fspath(path)))
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        st = os.stat(p)
    except OSError:
        return None
    tops = _devices_of((os.major(st.st_dev), os.minor(st.st_dev)))
    links = _built_on(tops)
    if name not in links:
        return None
    steps, n = _chain(links, name, top_first=False), name
    while (link := links[n]) is not None:
        n = link[0]
    return f"on /dev/{n}" + (f" ({steps})" if steps else "")


def _holds_out(name: str, out_path: str | os.PathLike) -> str | None:
    """Why device ``name`` holds the filesystem of the results folder ``out_path``, or None."""
    where = _holds_path(name, out_path)
    return None if where is None else f"holds the results folder {out_path}: its filesystem is {where}"


def _openers(paths: set[str]) -> list[str]:
    """``PID (command)`` of the other processes that have one of ``paths`` open."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            hit = any(os.readlink(fd) in paths for fd in (proc / "fd").iterdir())
        except OSError:
            continue
        if hit:
            found.append(f"{proc.name} ({_read(proc / 'comm') or '?'})")
    return sorted(found, key=lambda s: int(s.split()[0]))


def _claimed(path: str) -> bool:
    """True if an exclusive open of block device ``path`` fails with EBUSY."""
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_EXCL | os.O_CLOEXEC))
    except OSError as e:
        return e.errno == errno.EBUSY
    return False


def _lvm_pvs(paths: list[str]) -> list[str]:
    """``PATH in volume group VG`` for each of ``paths`` LVM reports as a physical volume."""
    pvs = shutil.which("pvs")
    if not pvs:
        return []
    env = dict(os.environ, LVM_SUPPRESS_FD_WARNINGS="1")
    cmd = [pvs, "--noheadings", "--separator", "|", "-o", "pv_name,vg_name"]
    out = ""
    for extra in (["--devices", ",".join(paths)], []):  # --devices: also PVs outside lvm's devices file
        try:
            r = stop.run(cmd + extra + paths, 30, env=env)
        except (OSError, subprocess.SubprocessError):
            return []
        out = r.stdout
        if out.strip() or "devices" not in r.stderr:
            break
    found = []
    for line in out.splitlines():
        pv, _, vg = line.strip().partition("|")
        if pv:
            found.append(f"{pv} in volume group {vg.strip()}" if vg.strip() else f"{pv} in no volume group yet")
    return found


def _md_superblock(real: str) -> str | None:
    """A description of the md RAID superblock ``mdadm --examine`` finds on ``real``, or None."""
    mdadm = shutil.which("mdadm")
    if not mdadm:
        return None
    try:
        r = stop.run([mdadm, "--examine", real], 30)
    except (OSError, subprocess.SubprocessError):
        return None
    level = re.search(r"^\s*raid level\s*:\s*(\S+)", r.stdout, re.I | re.M)
    if r.returncode != 0 or not level:
        return None
    uuid = re.search(r"^\s*(?:array )?uuid\s*:\s*(\S+)", r.stdout, re.I | re.M)
    name = re.search(r"^\s*name\s*:\s*(\S+)", r.stdout, re.I | re.M)
    what = [level.group(1)] + ([f"array {name.group(1)}"] if name else []) + ([f"UUID {uuid.group(1)}"] if uuid else [])
    return ", ".join(what)


# --------------------------------------------------------------------------- the gate


def _stack(name: str, real: str, *, held: bool = False) -> tuple[list[str], list[str]]:
    """(reasons ``destroy`` overrides, reasons it does not) from what is stacked on, mounted
    from, swapped to or claimed on device ``name`` (node ``real``) and everything built on it,
    and from the running system's root and the results folder living there: no signature
    probes, so it is cheap enough to repeat before every phase. ``held``: this process holds
    ``name`` open exclusively, so that claim is its own."""
    members = _stacked_above(name)

    def via(n: str) -> str:
        return "" if n == name else f" (via {n}: {_chain(members, n)})"

    devs = {d: n for n in members if (d := _dev_of_name(n)) is not None}
    nodes = {f"/dev/{n}": n for n in members} | {real: name}
    soft: list[str] = []
    mounted: dict[str, str] = {}
    for dev, source, mnt in _mounts():
        who = devs.get(dev) if dev is not None else None
        if who is None and source.startswith("/dev/"):
            who = nodes.get(os.path.realpath(source))
        if who is not None:
            mounted.setdefault(mnt, who)
    soft += [f"is mounted at {mnt}{via(who)}" for mnt, who in sorted(mounted.items())]

    parts = _partitions(name)
    if parts:
        soft.append("holds partitions: " + ", ".join(parts))
    held_by = {n: hs for n in [name, *parts] if (hs := _holders(n))}
    if held_by:
        soft.append("is in use by " + "; ".join(
            ", ".join(hs) + ("" if n == name else f" (on {n})") for n, hs in held_by.items())
            + " (device-mapper: LVM, dm-crypt, multipath...; md RAID; bcache)")
    swaps, swapped = _swap_reasons(name, members)
    named = set(parts) | {h for hs in held_by.values() for h in hs} | set(mounted.values()) | swapped
    stacked = [n for n in sorted(members) if n != name and n not in named]
    if stacked:
        soft.append("has devices stacked on it: " + "; ".join(_chain(members, n) for n in stacked))
    soft += swaps

    hard: list[str] = []
    if (where := _holds_path(name, "/")) is not None:
        hard.append(f"backs the running system: the root filesystem / is {where}. Writing it would destroy the "
                    f"system this runs on")
    # an exclusive claim that no mount, holder or swap area seen here explains is another program's
    # (a claimed partition makes its whole disk refuse exclusive opens too)
    known = set(mounted.values()) | {n for n in members if _holders(n)} | swapped
    present = {n: node for node, n in nodes.items() if os.path.exists(node)}
    busy = {n for n, node in present.items() if not (held and n == name) and _claimed(node)}
    unexplained = sorted(n for n in busy - known if not busy & set(_partitions(n)))
    if unexplained:
        shown = ", ".join(f"/dev/{n}" for n in unexplained)
        who = _openers(set(present.values()))
        hard.append(
            f"is in use by another program: {shown} is held open exclusively"
            + "".join(via(n) for n in unexplained[:1])
            + (f" (open in process {', '.join(who)})" if who else " (by a program or a mount this process cannot see)")
            + f". Close that program or unmount it first; `fuser -v /dev/{unexplained[0]}` shows who has it open")
    return soft, hard


def _gate(path: str | os.PathLike, out_path: str | os.PathLike | None) -> tuple[list[str], list[str]]:
    """(reasons ``destroy`` overrides, reasons it does not) for block device ``path``."""
    real, name = resolve_device(path)
    reasons, hard = _stack(name, real)
    sigs, probe_err = _signatures(real)
    if sigs:
        reasons.append("has signatures: " + "; ".join(sigs))
    if probe_err:
        reasons.append(f"could not be probed for filesystem/RAID signatures ({probe_err})")
    parts = _partitions(name)
    pvs = _lvm_pvs([real] + [f"/dev/{p}" for p in parts if os.path.exists(f"/dev/{p}")])
    if pvs:
        reasons.append("is an LVM physical volume (pvs): " + ", ".join(pvs))
    if md := _md_superblock(real):
        reasons.append(f"is an md RAID member (mdadm --examine: {md})")
    if out_path is not None and (why := _holds_out(name, out_path)):
        hard.append(why + ". Writing the device would destroy this run's own results; put --out on another device")
    return reasons, hard


def device_reasons(path: str | os.PathLike, out_path: str | os.PathLike | None = None) -> list[str]:
    """Why writing to block device ``path`` would be unsafe; empty list = nothing found.

    ``out_path`` is the results (working) folder of the run, refused if it lives on the device.
    Raises :class:`UnsafeTargetError` if ``path`` is not a block device.
    """
    soft, hard = _gate(path, out_path)
    return soft + hard


def stack_reasons(path: str | os.PathLike) -> list[str]:
    """What is stacked on, mounted from, swapped to or claimed on block device ``path`` (held
    open exclusively by this process) and everything built on it, in words; no signature
    probes. A run compares it before every phase with what it was when the run started."""
    real, name = resolve_device(path)
    soft, hard = _stack(name, real, held=True)
    return soft + hard


def _same_path(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    return os.path.realpath(os.fspath(a)) == os.path.realpath(os.fspath(b))


def check_device(path: str | os.PathLike, destroy: str | os.PathLike | None = None, *,
                 out_path: str | os.PathLike | None = None) -> None:
    """Raise :class:`UnsafeTargetError` unless it is safe to overwrite block device ``path``.

    ``destroy`` is the device the user named in ``--destroy-data``; when it is the same device
    as ``path`` (after resolving symlinks) the refusals it may override are overridden. A
    ``destroy`` naming another device is refused outright. ``out_path`` is the run's results
    (working) folder: a device holding it, or a device another program holds exclusively, is
    refused even with ``destroy``. Returns None when the device may be written.
    """
    path = os.fspath(path)
    real, name = resolve_device(path)
    shown = path if path == real else f"{path} ({real})"
    if destroy is not None and not _same_path(destroy, path):
        raise UnsafeTargetError(
            f"{path}: --destroy-data names {os.fspath(destroy)} "
            f"({os.path.realpath(os.fspath(destroy))}), which is not this device ({real}). "
            f"The destroy flag must name the exact device to be overwritten: --destroy-data {path}"
        )
    soft, hard = _gate(path, out_path)
    if hard:
        raise UnsafeTargetError(
            f"refusing to write to {shown}: it " + "; it ".join(hard) + ". --destroy-data cannot override this."
            + (" Also: it " + "; it ".join(soft) + "." if soft else "")
        )
    if soft and destroy is None:
        raise UnsafeTargetError(
            f"refusing to write to {shown}: it " + "; it ".join(soft) + ". "
            f"Testing overwrites the whole device and destroys all data on it. "
            f"If that is really what you want, unmount/release it and pass --destroy-data {path}"
        )
    return None


def file_reasons(path: str | os.PathLike) -> list[str]:
    """Why overwriting regular file ``path`` would be unsafe (active swap file, loop backing
    file). Files are matched by filesystem and inode, so a hard link, a bind mount or a
    backing file renamed or unlinked since is still the same file."""
    try:
        st = os.stat(path)
    except OSError:
        return []
    this = ((os.major(st.st_dev), os.minor(st.st_dev)), st.st_ino)
    reasons = []
    for fname, _typ in _swaps():
        try:
            sw = os.stat(fname)
        except OSError:
            continue
        if ((os.major(sw.st_dev), os.minor(sw.st_dev)), sw.st_ino) == this:
            reasons.append("is an active swap file (/proc/swaps)")
    for lo in _loops().values():
        if lo.backing_rdev is None and (lo.backing_fs, lo.backing_ino) == this:
            reasons.append(f"backs loop device /dev/{lo.name}")
    return reasons


#: Extended attribute ssdlab sets on a file it tests (``file:PATH``): the file holds its test
#: data, so a later run may overwrite it without ``--destroy-data``.
OWN_FILE_XATTR = "user.ssdlab.target"


def mark_own_file(path: str | os.PathLike) -> None:
    """Marks ``path`` as a file ssdlab tests (:data:`OWN_FILE_XATTR`); silently nothing on a
    filesystem without user extended attributes (a later run then asks for --destroy-data)."""
    try:
        os.setxattr(path, OWN_FILE_XATTR, b"1")
    except OSError:
        pass


def _own_file(path: str) -> bool:
    try:
        return os.getxattr(path, OWN_FILE_XATTR) == b"1"
    except OSError:
        return False


def _writers(real: str) -> list[str]:
    """``PID (command)`` of the other processes that have file ``real`` open for writing."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            fds = [fd.name for fd in (proc / "fd").iterdir() if os.readlink(fd) == real]
        except OSError:
            continue
        for fd in fds:
            m = re.search(r"^flags:\s*([0-7]+)", _read(proc / "fdinfo" / fd), re.M)
            if m and int(m.group(1), 8) & os.O_ACCMODE in (os.O_WRONLY, os.O_RDWR):
                found.append(f"{proc.name} ({_read(proc / 'comm') or '?'})")
                break
    return sorted(found, key=lambda s: int(s.split()[0]))


def check_file(path: str | os.PathLike, destroy: str | os.PathLike | None = None, *,
               out_path: str | os.PathLike | None = None) -> None:
    """Raise :class:`UnsafeTargetError` unless ``path`` may be used as a ``file:`` target.

    The path must not be a block or character device, a directory, an active swap file, the
    backing file of a loop device (ssdlab's own loop devices unlink theirs, so no path names
    them), or a file that holds data (allocated blocks) and is not marked as a file ssdlab
    tested before (:data:`OWN_FILE_XATTR`). A missing file is fine (it will be created sparse).
    ``destroy`` naming the same file overrides these refusals. Refused even with ``destroy``: a
    file another process has open for writing, and a file directly in ``out_path`` (the
    target's working folder) whose name ends as ssdlab's own files there
    (:data:`WORKDIR_SUFFIXES`): the run writes and deletes those.
    """
    path = os.fspath(path)
    real = os.path.realpath(path)
    if out_path is not None and os.path.dirname(real) == os.path.realpath(os.fspath(out_path)) \
            and real.endswith(WORKDIR_SUFFIXES):
        raise UnsafeTargetError(
            f"refusing to write to file:{path}: it is one of ssdlab's own files in the results folder {out_path} "
            f"(fio job files, fio's JSON, stderr and logs are written and deleted there). Name another file; "
            f"a target file elsewhere in the results folder is fine. --destroy-data cannot override this."
        )
    try:
        st = os.stat(path)
    except FileNotFoundError:
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):
            raise UnsafeTargetError(f"file:{path}: directory {parent} does not exist; create it first.") from None
        return None
    if stat.S_ISBLK(st.st_mode):
        raise UnsafeTargetError(
            f"file:{path} is a block device. Name block devices as {path} (not file:), "
            f"so the device safety checks apply."
        )
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeTargetError(f"file:{path} is not a regular file; give the path of a regular file (it will be overwritten).")
    if writers := _writers(real):
        raise UnsafeTargetError(
            f"refusing to write to file:{path}: it is open for writing in process {', '.join(writers)}. Close that "
            f"program first (`fuser -v {path}` shows who has it open). --destroy-data cannot override this.")
    if destroy is not None and _same_path(destroy, path):
        return None
    reasons = file_reasons(path)
    if st.st_blocks and not _own_file(real):
        reasons.append(f"holds data ({st.st_blocks * 512:,} bytes allocated) and is not a file ssdlab tested before; "
                       f"a test overwrites all of it")
    if reasons:
        raise UnsafeTargetError(
            f"refusing to write to file:{path}: it " + "; it ".join(reasons) + ". "
            f"If you are sure, release it and pass --destroy-data {path}"
        )
    return None
