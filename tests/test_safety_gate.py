"""The safety gate's refusals of stacked and busy devices, on real loop devices: LVM physical
volumes, md RAID members, device-mapper holders, a device another process holds exclusively,
and a device holding the results folder (the last two not overridable by --destroy-data).

Needs root and /dev/loop-control: if loop devices cannot be made these tests FAIL, unless
SSDLAB_NO_LOOP=1 (then they skip). A test needing lvm2 or mdadm skips when the tool is not
installed (scripts/bootstrap.sh installs both), and one needing the kernel's md or
device-mapper driver skips when the kernel has none.
"""
from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import tempfile
import uuid

import pytest

from conftest import run_cli
from test_safety import _mkfs, loop, loops_ok  # noqa: F401  (fixtures)
from ssdlab.targets import safety
from ssdlab.targets.fio import FioTarget
from ssdlab.targets.loop import LoopDevice, parse_size
from ssdlab.targets.safety import UnsafeTargetError, check_device, check_file

pytestmark = [pytest.mark.realtime,
              pytest.mark.skipif(os.environ.get("SSDLAB_NO_LOOP") == "1", reason="SSDLAB_NO_LOOP=1")]

LVM_ENV = dict(os.environ, LVM_SUPPRESS_FD_WARNINGS="1")


@pytest.fixture
def loop2(loops_ok):
    with LoopDevice(parse_size("32MiB")) as lo:
        yield lo


def _need(tool: str, package: str) -> str:
    path = shutil.which(tool)
    if not path:
        pytest.skip(f"{tool} is not installed (apt-get install {package}; scripts/bootstrap.sh does)")
    return path


def _kernel_has(what: str) -> bool:
    """True if the kernel's md (``md``) or device-mapper (``dm``) driver is there, loading it if it can."""
    present = (lambda: os.path.exists("/proc/mdstat")) if what == "md" else (
        lambda: "device-mapper" in open("/proc/misc").read())
    if not present() and shutil.which("modprobe"):
        subprocess.run(["modprobe", {"md": "raid1", "dm": "dm_mod"}[what]], capture_output=True)
    return present()


def _run(*cmd: str) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True, env=LVM_ENV).stdout.strip()


def _refusal(path: str, **kw) -> str:
    with pytest.raises(UnsafeTargetError) as ei:
        check_device(path, **kw)
    return str(ei.value)


@pytest.fixture
def mount_point(request):
    """mount_point(DEVICE) mounts DEVICE (after mkfs.ext4) on a new folder, unmounted at teardown."""
    mounted: list[str] = []

    def mount(dev: str) -> str:
        _mkfs(dev)
        mnt = tempfile.mkdtemp(prefix="ssdlab-gate-")
        subprocess.run(["mount", dev, mnt], check=True, capture_output=True)
        mounted.append(mnt)
        return mnt

    yield mount
    for mnt in reversed(mounted):
        subprocess.run(["umount", mnt], capture_output=True)
        os.rmdir(mnt)


# --------------------------------------------------------------------------- LVM


def test_lvm_physical_volume_is_refused_by_what_lvm_reports(loop, request, monkeypatch):
    _need("pvcreate", "lvm2")
    vg = f"ssdlab_gate_{os.getpid()}"
    request.addfinalizer(lambda: subprocess.run(["pvremove", "-ff", "-y", loop.path], capture_output=True, env=LVM_ENV))
    request.addfinalizer(lambda: subprocess.run(["vgremove", "-f", vg], capture_output=True, env=LVM_ENV))
    _run("vgcreate", vg, loop.path)
    msg = _refusal(loop.path)
    assert f"LVM physical volume (pvs): {loop.path} in volume group {vg}" in msg
    assert f"--destroy-data {loop.path}" in msg
    # refused from what lvm reports even when no signature probe sees the label
    monkeypatch.setattr(safety, "_signatures", lambda real: ([], None))
    assert "LVM2_member" not in _refusal(loop.path)
    assert check_device(loop.path, destroy=loop.path) is None


# --------------------------------------------------------------------------- md RAID


def _write_md_superblock(dev: str, sectors: int) -> None:
    """An md v1.2 superblock (member 0 of a 2-device RAID1) at 4 KiB, laid out as mdadm writes it."""
    max_dev = 2
    sb = bytearray(256 + 2 * max_dev)
    struct.pack_into("<II", sb, 0, 0xA92B4EFC, 1)  # magic, major_version
    sb[16:32] = uuid.uuid4().bytes  # set_uuid
    sb[32:43] = b"ssdlab:gate"  # set_name
    struct.pack_into("<QiiQII", sb, 64, 0, 1, 0, sectors - 2048, 0, 2)  # ctime level layout size chunk raid_disks
    struct.pack_into("<QQQ", sb, 128, 2048, sectors - 2048, 8)  # data_offset data_size super_offset
    sb[168:184] = uuid.uuid4().bytes  # device_uuid
    struct.pack_into("<QQQ", sb, 192, 0, 1, 2**64 - 1)  # utime events resync_offset
    struct.pack_into("<I", sb, 220, max_dev)
    struct.pack_into("<HH", sb, 256, 0, 1)  # dev_roles
    total = sum(struct.unpack_from(f"<{len(sb) // 4}I", sb))
    struct.pack_into("<I", sb, 216, ((total & 0xFFFFFFFF) + (total >> 32)) & 0xFFFFFFFF)  # sb_csum
    with open(dev, "r+b") as f:
        f.seek(4096)
        f.write(sb)


def test_md_superblock_is_refused_by_what_mdadm_examines(loop, monkeypatch):
    _need("mdadm", "mdadm")
    _write_md_superblock(loop.path, 32 << 11)
    monkeypatch.setattr(safety, "_signatures", lambda real: ([], None))
    msg = _refusal(loop.path)
    assert "md RAID member (mdadm --examine: raid1, array ssdlab:gate" in msg
    assert f"--destroy-data {loop.path}" in msg
    assert check_device(loop.path, destroy=loop.path) is None


def test_md_array_members_are_refused(loop, loop2, request):
    _need("mdadm", "mdadm")
    if not _kernel_has("md"):
        pytest.skip("the kernel has no md RAID driver (no /proc/mdstat, raid1 cannot be loaded)")
    md = f"/dev/md/ssdlab-gate-{os.getpid()}"
    request.addfinalizer(lambda: subprocess.run(["mdadm", "--zero-superblock", loop.path, loop2.path], capture_output=True))
    request.addfinalizer(lambda: subprocess.run(["mdadm", "--stop", md], capture_output=True))
    _run("mdadm", "--create", md, "--run", "--assume-clean", "--level=1", "--raid-devices=2", "--metadata=1.2",
         loop.path, loop2.path)
    array = os.path.basename(os.path.realpath(md))
    for member in (loop, loop2):
        msg = _refusal(member.path)
        assert f"is in use by {array}" in msg and "md RAID member (mdadm --examine: raid1" in msg
        assert f"--destroy-data {member.path}" in msg


# --------------------------------------------------------------------------- device-mapper


@pytest.fixture
def dm_linear(request):
    """dm_linear(LOOP) maps all of LOOP through a new dm linear device; returns its /dev/mapper path."""
    _need("dmsetup", "dmsetup")
    if not _kernel_has("dm"):
        pytest.skip("the kernel has no device-mapper driver (not in /proc/misc, dm_mod cannot be loaded)")
    made: list[str] = []

    def make(lo: LoopDevice) -> str:
        name = f"ssdlab-gate-{os.getpid()}-{len(made)}"
        made.append(name)
        _run("dmsetup", "create", name, "--table", f"0 {lo.size_bytes // 512} linear {lo.path} 0")
        subprocess.run(["dmsetup", "mknodes", name], capture_output=True)
        return f"/dev/mapper/{name}"

    yield make
    for name in reversed(made):
        subprocess.run(["dmsetup", "remove", "--retry", name], capture_output=True)


def test_device_mapper_holder_is_refused(loop, dm_linear):
    dm = os.path.basename(os.path.realpath(dm_linear(loop)))
    msg = _refusal(loop.path)
    assert f"is in use by {dm}" in msg and f"--destroy-data {loop.path}" in msg


def test_results_folder_on_a_dm_device_over_the_target_is_refused(loop, dm_linear, mount_point, monkeypatch):
    mapper = dm_linear(loop)
    dm = os.path.basename(os.path.realpath(mapper))
    out = os.path.join(mount_point(mapper), "out", "fio")
    msg = _refusal(loop.path, destroy=loop.path, out_path=out)
    assert f"holds the results folder {out}" in msg and f"{dm} is built on {os.path.basename(loop.path)}" in msg
    assert "--destroy-data cannot override this" in msg
    # the results-folder check alone, without the holder and mount checks
    monkeypatch.setattr(safety, "_holders", lambda name: [])
    monkeypatch.setattr(safety, "_mounts", lambda: [])
    assert f"holds the results folder {out}" in _refusal(loop.path, destroy=loop.path, out_path=out)


def test_results_folder_chain_through_a_dm_device_in_sysfs(tmp_path, monkeypatch):
    """Without a device-mapper driver: the folder's device is dm-7 (a sysfs tree made here) built on loop9."""
    block, byno = tmp_path / "class-block", tmp_path / "dev-block"
    for name in ("dm-7", "loop9"):
        (block / name / "slaves").mkdir(parents=True)
    (block / "dm-7" / "slaves" / "loop9").mkdir()
    byno.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    st = os.stat(out)
    os.symlink(block / "dm-7", byno / f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
    monkeypatch.setattr(safety, "SYS_BLOCK", block)
    monkeypatch.setattr(safety, "SYS_DEV_BLOCK", byno)
    why = safety._holds_out("loop9", out / "fio")
    assert why == f"holds the results folder {out / 'fio'}: its filesystem is on /dev/dm-7 (dm-7 is built on loop9)"
    assert safety._holds_out("loop8", out / "fio") is None


# --------------------------------------------------------------------------- in use by another process


def test_device_held_exclusively_by_another_process_is_refused_even_with_destroy(loop, tmp_path, request):
    child = subprocess.Popen([sys.executable, "-c", "import os, sys, time\n"
                              "os.open(sys.argv[1], os.O_RDONLY | os.O_EXCL)\nprint('held', flush=True)\ntime.sleep(60)",
                              loop.path], stdout=subprocess.PIPE, text=True)
    request.addfinalizer(lambda: (child.kill(), child.wait()))
    assert child.stdout.readline().strip() == "held"
    for kw in ({}, {"destroy": loop.path}):
        msg = _refusal(loop.path, **kw)
        assert f"in use by another program: {loop.path} is held open exclusively" in msg
        assert f"process {child.pid} (python" in msg and f"fuser -v {loop.path}" in msg
        assert "--destroy-data cannot override this" in msg
    with pytest.raises(UnsafeTargetError, match="in use by another program"):
        FioTarget(loop.path, tmp_path / "fio", destroy=loop.path)
    child.kill()
    child.wait()
    assert check_device(loop.path) is None


# --------------------------------------------------------------------------- the results folder


def test_device_holding_the_results_folder_is_refused_even_with_destroy(loop, tmp_path, mount_point):
    mnt = mount_point(loop.path)
    out = os.path.join(mnt, "out", "fio")
    msg = _refusal(loop.path, destroy=loop.path, out_path=out)
    assert f"holds the results folder {out}: its filesystem is on {loop.path}" in msg
    assert "put --out on another device" in msg and "--destroy-data cannot override this" in msg
    assert f"Also: it is mounted at {mnt}" in msg
    with pytest.raises(UnsafeTargetError, match="holds the results folder"):
        FioTarget(loop.path, out, destroy=loop.path)
    assert not os.path.exists(out), "the gate runs before the working folder is made"
    dry = FioTarget(loop.path, out, destroy=loop.path, dry_run=True)
    assert "holds the results folder" in dry.refused
    # results elsewhere: the mount alone is what --destroy-data overrides
    assert check_device(loop.path, destroy=loop.path, out_path=tmp_path / "out" / "fio") is None


def test_results_folder_on_a_loop_device_over_a_file_on_the_target_is_refused(loop, mount_point):
    img = os.path.join(mount_point(loop.path), "inner.img")
    with LoopDevice(parse_size("16MiB"), directory=os.path.dirname(img)) as inner:
        out = os.path.join(mount_point(inner.path), "out", "fio")
        msg = _refusal(loop.path, destroy=loop.path, out_path=out)
        assert f"holds the results folder {out}: its filesystem is on {inner.path}" in msg
        assert f"{os.path.basename(inner.path)} is a loop device over a file on {os.path.basename(loop.path)}" in msg
        assert "--destroy-data cannot override this" in msg


def test_cli_refuses_a_device_holding_its_out_folder(loop, mount_point):
    out = os.path.join(mount_point(loop.path), "results")
    r = run_cli("consistency", "--target", loop.path, "--destroy-data", loop.path, "--duration", "1",
                "--out", out, check=False)
    assert r.returncode == 2
    assert f"holds the results folder {out}/fio" in r.stderr and "--destroy-data cannot override this" in r.stderr


def test_file_target_that_is_one_of_the_results_files_is_refused(tmp_path):
    work = tmp_path / "fio"
    work.mkdir()
    job = work / "consistency_1.json"
    job.write_bytes(b"\0" * (1 << 20))
    with pytest.raises(UnsafeTargetError, match="one of ssdlab's own files in the results folder") as ei:
        FioTarget(f"file:{job}", work, destroy=str(job))
    assert "--destroy-data cannot override this" in str(ei.value)
    assert check_file(str(work / "target.img"), out_path=work) is None
    assert check_file(str(tmp_path / "target.json"), out_path=work) is None
