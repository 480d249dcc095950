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
from pathlib import Path

SYS_BLOCK = Path("/sys/class/block")
SYS_DEV_BLOCK = Path("/sys/dev/block")
#: How the names of the files a fio target writes (and deletes) in its working folder end.
WORKDIR_SUFFIXES = (".fio", ".json", ".stderr", ".log")

__all__ = ["UnsafeTargetError", "check_device", "check_file", "device_reasons", "resolve_device"]


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


def _stacked_above(name: str) -> set[str]:
    """``name``, its partitions, and every device stacked on any of them (dm, md...)."""
    seen: set[str] = set()
    todo = [name, *_partitions(name)]
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        todo.extend(_holders(n))
        todo.extend(_partitions(n))
    return seen


def _stacked_below(name: str) -> set[str]:
    """``name``, everything it is built on (dm/md slaves), and the disks of partitions."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        todo.extend(_slaves(n))
        parent = _parent_disk(n)
        if parent:
            todo.append(parent)
    return seen


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


def _system_devices() -> dict[str, str]:
    """Kernel names of block devices the running system lives on -> why."""
    found: dict[str, str] = {}

    def add(name: str | None, why: str) -> None:
        if not name:
            return
        for n in _stacked_below(name):
            found.setdefault(n, why)

    try:
        st = os.stat("/")
        add(_name_of_dev(os.major(st.st_dev), os.minor(st.st_dev)), "holds the root filesystem /")
    except OSError:
        pass
    for dev, source, mnt in _mounts():
        if mnt == "/" and source.startswith("/dev/"):
            try:
                rdev = os.stat(source).st_rdev
                add(_name_of_dev(os.major(rdev), os.minor(rdev)), "holds the root filesystem /")
            except OSError:
                pass
    for fname, typ in _swaps():
        try:
            st = os.stat(fname)
        except OSError:
            continue
        if stat.S_ISBLK(st.st_mode):
            add(_name_of_dev(os.major(st.st_rdev), os.minor(st.st_rdev)), f"is active swap ({fname})")
        else:
            add(_name_of_dev(os.major(st.st_dev), os.minor(st.st_dev)), f"holds the active swap file {fname}")
    return found


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
            r = subprocess.run([wipefs, "--no-act", "--json", real], capture_output=True, text=True, timeout=60)
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
            r = subprocess.run([blkid, "-p", "-o", "export", real], capture_output=True, text=True, timeout=60)
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


_LOOP_GET_STATUS64 = 0x4C05  # <linux/loop.h>; struct loop_info64 starts with __u64 lo_device
_LOOP_INFO64_SIZE = 232


def _loop_backing_dev(name: str) -> tuple[int, int] | None:
    """The device number of the filesystem holding loop device ``name``'s backing file."""
    if not (SYS_BLOCK / name / "loop").is_dir():
        return None
    try:
        fd = os.open(f"/dev/{name}", os.O_RDONLY | os.O_CLOEXEC)
        try:
            buf = bytearray(_LOOP_INFO64_SIZE)
            fcntl.ioctl(fd, _LOOP_GET_STATUS64, buf)
        finally:
            os.close(fd)
        dev = struct.unpack_from("<Q", buf, 0)[0]
        return os.major(dev), os.minor(dev)
    except OSError:
        pass
    backing = _read(SYS_BLOCK / name / "loop" / "backing_file").removesuffix(" (deleted)")
    try:
        st = os.stat(backing) if backing else None
    except OSError:
        st = None
    return (os.major(st.st_dev), os.minor(st.st_dev)) if st else None


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
    """Every device ``names`` are built on -> (the device above it, how), None for ``names``:
    dm/md slaves, the disk of a partition, and the devices holding a loop device's backing file."""
    seen: dict[str, tuple[str, str] | None] = {n: None for n in names}
    todo = list(names)
    while todo:
        n = todo.pop()
        below = [(s, "is built on") for s in _slaves(n)]
        if parent := _parent_disk(n):
            below.append((parent, "is a partition of"))
        if (bdev := _loop_backing_dev(n)) is not None:
            below += [(b, "is a loop device over a file on") for b in _devices_of(bdev)]
        for b, how in below:
            if b not in seen:
                seen[b] = (n, how)
                todo.append(b)
    return seen


def _holds_out(name: str, out_path: str | os.PathLike) -> str | None:
    """Why device ``name`` holds the filesystem of ``out_path`` (or its nearest existing
    parent), or None if it does not."""
    p = Path(os.path.abspath(os.fspath(out_path)))
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        st = os.stat(p)
    except OSError:
        return None
    tops = _devices_of((os.major(st.st_dev), os.minor(st.st_dev)))
    chain = _built_on(tops)
    if name not in chain:
        return None
    steps, n = [], name
    while (up := chain[n]) is not None:
        steps.append(f"{up[0]} {up[1]} {n}")
        n = up[0]
    via = "" if not steps else " (" + ", ".join(reversed(steps)) + ")"
    return f"holds the results folder {out_path}: its filesystem is on /dev/{n}{via}"


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
            r = subprocess.run(cmd + extra + paths, capture_output=True, text=True, timeout=30, env=env)
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
        r = subprocess.run([mdadm, "--examine", real], capture_output=True, text=True, timeout=30)
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


def _gate(path: str | os.PathLike, out_path: str | os.PathLike | None) -> tuple[list[str], list[str]]:
    """(reasons ``destroy`` overrides, reasons it does not) for block device ``path``."""
    real, name = resolve_device(path)
    reasons: list[str] = []
    family = _stacked_above(name)  # name, partitions, holders (recursively)
    family_devs = {d: n for n in family if (d := _dev_of_name(n)) is not None}
    family_paths = {f"/dev/{n}" for n in family} | {real}

    # mounted (itself, a partition, or something stacked on it)
    mounted: dict[str, str] = {}
    for dev, source, mnt in _mounts():
        who = None
        if dev is not None and dev in family_devs:
            who = family_devs[dev]
        elif source.startswith("/dev/") and os.path.realpath(source) in family_paths:
            who = os.path.basename(os.path.realpath(source))
        if who is not None:
            mounted.setdefault(mnt, who)
    for mnt, who in sorted(mounted.items()):
        via = "" if who == name else f" (via {who})"
        reasons.append(f"is mounted at {mnt}{via}")

    parts = _partitions(name)
    if parts:
        reasons.append("holds partitions: " + ", ".join(parts))

    held = {n: hs for n in [name, *parts] if (hs := _holders(n))}
    if held:
        reasons.append("is in use by " + "; ".join(
            ", ".join(hs) + ("" if n == name else f" (on {n})") for n, hs in held.items())
            + " (device-mapper: LVM, dm-crypt, multipath...; md RAID; bcache)")

    # the running system lives on us if its devices (and what they are built on) meet our family
    system = _system_devices()
    backing = sorted(n for n in family if n in system)
    if backing:
        reasons.append("backs the running system: " + "; ".join(f"{n} {system[n]}" for n in backing))

    sigs, probe_err = _signatures(real)
    if sigs:
        reasons.append("has signatures: " + "; ".join(sigs))
    if probe_err:
        reasons.append(f"could not be probed for filesystem/RAID signatures ({probe_err})")
    pvs = _lvm_pvs([real] + [f"/dev/{p}" for p in parts if os.path.exists(f"/dev/{p}")])
    if pvs:
        reasons.append("is an LVM physical volume (pvs): " + ", ".join(pvs))
    if md := _md_superblock(real):
        reasons.append(f"is an md RAID member (mdadm --examine: {md})")

    # an exclusive claim that no mount, holder or swap area explains is another program's
    hard: list[str] = []
    known = set(mounted.values()) | set(held) | set(system)
    nodes = {name: real, **{p: f"/dev/{p}" for p in parts if os.path.exists(f"/dev/{p}")}}
    busy = {n for n, node in nodes.items() if _claimed(node)}
    unexplained = [p for p in parts if p in busy and p not in known]
    if name in busy and name not in known and not (busy & set(parts)):
        unexplained.insert(0, name)
    if unexplained:
        who = _openers(set(nodes.values()) | {f"/dev/{n}" for n in unexplained})
        shown = ", ".join(f"/dev/{n}" for n in unexplained)
        hard.append(
            f"is in use by another program: {shown} is held open exclusively"
            + (f" (open in process {', '.join(who)})" if who else " (by a program or a mount this process cannot see)")
            + f". Close that program or unmount it first; `fuser -v {shown.split(', ')[0]}` shows who has it open")
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
    """Why overwriting regular file ``path`` would be unsafe (active swap file, loop backing file)."""
    real = os.path.realpath(os.fspath(path))
    reasons = []
    for fname, _typ in _swaps():
        if _same_path(fname, real):
            reasons.append("is an active swap file (/proc/swaps)")
    try:
        for loop in sorted(SYS_BLOCK.glob("loop*")):
            bf = _read(loop / "loop" / "backing_file")
            if bf and _same_path(bf.removesuffix(" (deleted)"), real):
                reasons.append(f"backs loop device /dev/{loop.name}")
    except OSError:
        pass
    return reasons


def check_file(path: str | os.PathLike, destroy: str | os.PathLike | None = None, *, owned: bool = False,
               out_path: str | os.PathLike | None = None) -> None:
    """Raise :class:`UnsafeTargetError` unless ``path`` may be used as a ``file:`` target.

    The path must not be a block or character device, a directory, an active swap file, or the
    backing file of a loop device (``owned=True`` skips that last check for ssdlab's own loop
    files). A missing file is fine (it will be created sparse). ``destroy`` naming the same
    file overrides the swap/loop refusals. A file directly in ``out_path`` (the target's working
    folder) whose name ends as ssdlab's own files there (:data:`WORKDIR_SUFFIXES`) is refused
    even with ``destroy``: the run writes and deletes those.
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
    if destroy is not None and _same_path(destroy, path):
        return None
    reasons = [r for r in file_reasons(path) if not (owned and r.startswith("backs loop device"))]
    if reasons:
        raise UnsafeTargetError(
            f"refusing to write to file:{path}: it " + "; it ".join(reasons) + ". "
            f"If you are sure, release it and pass --destroy-data {path}"
        )
    return None
