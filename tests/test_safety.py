"""The safety gate (ssdlab.targets.safety) on real loop devices.

Needs root and /dev/loop-control. If loop devices cannot be made these tests FAIL (so a CI
machine that silently lost them is noticed); set SSDLAB_NO_LOOP=1 to skip them instead.
"""
from __future__ import annotations

import os
import subprocess
import tempfile
import time

import pytest

from conftest import require_loops
from ssdlab.targets.fio import FioTarget
from ssdlab.targets.loop import LoopDevice, parse_size
from ssdlab.targets.safety import UnsafeTargetError, check_device, check_file, device_reasons

pytestmark = pytest.mark.realtime  # see the marker in pyproject.toml


@pytest.fixture(scope="module")
def loops_ok():
    require_loops(("wipefs", "blkid", "mkfs.ext4", "mount", "umount"))


@pytest.fixture
def loop(loops_ok):
    with LoopDevice(parse_size("32MiB")) as lo:
        yield lo


def _mkfs(path: str) -> None:
    subprocess.run(["mkfs.ext4", "-q", "-F", path], check=True, capture_output=True)


# --------------------------------------------------------------------------- device gate


def test_fresh_loop_passes_without_destroy(loop):
    assert device_reasons(loop.path) == []
    assert check_device(loop.path) is None


def test_refuses_ext4_and_names_the_flag(loop, tmp_path):
    _mkfs(loop.path)
    with pytest.raises(UnsafeTargetError) as ei:
        check_device(loop.path)
    msg = str(ei.value)
    assert loop.path in msg and "ext4" in msg
    assert f"--destroy-data {loop.path}" in msg
    # FioTarget runs the same gate
    with pytest.raises(UnsafeTargetError):
        FioTarget(loop.path, tmp_path)
    # the destroy flag naming this device, directly or through a symlink, lets it through
    assert check_device(loop.path, destroy=loop.path) is None
    link = str(tmp_path / "mydisk")
    os.symlink(loop.path, link)
    assert check_device(link, destroy=loop.path) is None
    assert check_device(loop.path, destroy=link) is None


def test_destroy_naming_another_device_is_refused(loops_ok):
    with LoopDevice(parse_size("8MiB")) as a, LoopDevice(parse_size("8MiB")) as b:
        with pytest.raises(UnsafeTargetError) as ei:
            check_device(a.path, destroy=b.path)
        assert a.path in str(ei.value) and b.path in str(ei.value)
        assert f"--destroy-data {a.path}" in str(ei.value)


def test_refuses_mounted_and_accepts_with_destroy(loop, tmp_path):
    _mkfs(loop.path)
    mnt = tempfile.mkdtemp(prefix="ssdlab-mnt-")
    subprocess.run(["mount", loop.path, mnt], check=True, capture_output=True)
    try:
        with pytest.raises(UnsafeTargetError) as ei:
            check_device(loop.path)
        msg = str(ei.value)
        assert f"mounted at {mnt}" in msg and f"--destroy-data {loop.path}" in msg
        assert check_device(loop.path, destroy=loop.path) is None
        t = FioTarget(loop.path, tmp_path, destroy=loop.path, dry_run=True)
        assert t.refused is None and t.capacity_bytes == 32 << 20
        assert any(f"mounted at {mnt}" in r for r in t.describe()["destroy_overrode"])
    finally:
        subprocess.run(["umount", mnt], check=True, capture_output=True)
        os.rmdir(mnt)


def wait_for_partition(dev: str) -> str:
    """The first partition of loop device ``dev`` (attached with --partscan over an image with
    an MBR), added with BLKPG where the kernel has no DOS parser; fails if none appears."""
    name = os.path.basename(dev)
    if not os.path.exists(f"/sys/class/block/{name}/{name}p1"):
        subprocess.run(["partx", "--add", dev], capture_output=True)
    for _ in range(100):
        if os.path.exists(f"/sys/class/block/{name}/{name}p1/partition") and os.path.exists(f"{dev}p1"):
            break
        time.sleep(0.02)
    assert os.path.exists(f"{dev}p1"), f"could not create a partition on {dev}"
    return f"{dev}p1"


def _write_mbr(img: str, start_lba: int = 2048, sectors: int = 8192) -> None:
    """A DOS partition table with one Linux partition, written by hand (no fdisk needed)."""
    import struct
    entry = struct.pack("<B3sB3sII", 0x00, b"\0\0\0", 0x83, b"\0\0\0", start_lba, sectors)
    with open(img, "r+b") as f:
        f.seek(446)
        f.write(entry)
        f.seek(510)
        f.write(b"\x55\xaa")


def test_refuses_partitions(loops_ok, tmp_path):
    img = str(tmp_path / "p.img")
    with open(img, "wb") as f:
        f.truncate(16 << 20)
    _write_mbr(img)
    dev = subprocess.run(["losetup", "--find", "--show", "--partscan", img], check=True,
                         capture_output=True, text=True).stdout.strip()
    try:
        name = os.path.basename(dev)
        wait_for_partition(dev)
        with pytest.raises(UnsafeTargetError) as ei:
            check_device(dev)
        msg = str(ei.value)
        assert "dos partition table" in msg
        assert f"holds partitions: {name}p1" in msg
        assert f"--destroy-data {dev}" in msg
        assert check_device(dev, destroy=dev) is None
    finally:
        subprocess.run(["losetup", "--detach", dev], capture_output=True)


def test_refuses_the_system_disk():
    st = os.stat("/")
    sysdev = f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    if not os.path.exists(sysdev):
        pytest.skip("the root filesystem is not on a block device here (container overlay)")
    name = os.path.basename(os.path.realpath(sysdev))
    path = f"/dev/{name}"
    if not os.path.exists(path):
        pytest.skip(f"{path} has no device node here")
    with pytest.raises(UnsafeTargetError) as ei:
        check_device(path)
    msg = str(ei.value)
    assert "backs the running system" in msg and "root filesystem" in msg
    assert "--destroy-data cannot override this" in msg
    with pytest.raises(UnsafeTargetError, match="backs the running system"):
        check_device(path, destroy=path)


def test_not_a_block_device_is_a_clear_error(tmp_path):
    f = tmp_path / "plain.img"
    f.write_bytes(b"x" * 4096)
    with pytest.raises(UnsafeTargetError, match="not a block device.*file:PATH"):
        check_device(str(f))
    with pytest.raises(UnsafeTargetError, match="no such device"):
        check_device("/dev/ssdlab-does-not-exist")
    with pytest.raises(UnsafeTargetError, match="not a block device"):
        check_device("/dev/null")


# --------------------------------------------------------------------------- file gate


def test_file_gate(tmp_path, loops_ok):
    assert check_file(str(tmp_path / "new.img")) is None
    with pytest.raises(UnsafeTargetError, match="is a block device"):
        check_file("/dev/loop0")
    with pytest.raises(UnsafeTargetError, match="not a regular file"):
        check_file("/dev/null")
    with pytest.raises(UnsafeTargetError, match="does not exist"):
        check_file(str(tmp_path / "nodir" / "x.img"))
    # a file that backs a loop device is refused unless named in the destroy flag (attached by
    # hand: ssdlab's own loop devices unlink their backing files, so no path names those)
    img = tmp_path / "backing.img"
    with open(img, "wb") as f:
        f.truncate(1 << 20)  # sparse: no data for the file gate to protect
    dev = subprocess.run(["losetup", "--find", "--show", str(img)], capture_output=True, text=True,
                         check=True).stdout.strip()
    try:
        with pytest.raises(UnsafeTargetError) as ei:
            check_file(str(img))
        assert f"backs loop device {dev}" in str(ei.value)
        assert f"--destroy-data {img}" in str(ei.value)
        assert check_file(str(img), destroy=str(img)) is None
        # the same file under another name: a hard link, and the file renamed after attaching
        link = tmp_path / "link.img"
        os.link(img, link)
        with pytest.raises(UnsafeTargetError, match=f"backs loop device {dev}"):
            check_file(str(link))
        moved = tmp_path / "moved.img"
        os.rename(img, moved)
        with pytest.raises(UnsafeTargetError, match=f"backs loop device {dev}"):
            check_file(str(moved))
        os.rename(moved, img)
    finally:
        subprocess.run(["losetup", "--detach", dev], capture_output=True)
    assert check_file(str(img)) is None
