"""The safety gate through stacks, and the device held for the whole run, on real loop devices.

A loop device over the target (at any offset), over one of its partitions, a loop mount of an
image at an offset, swap on a stacked loop device and a results folder two stacks above the
target: each refused, the message naming the chain, and the data on the stack unchanged.
While a run holds the target, mkfs and mount fail; a path that names another device mid-run
stops the run (exit 2). Where this kernel has no device-mapper or md driver, a sysfs tree made
here takes the holders' place so that the holder refusals run too.

Needs root and /dev/loop-control (SSDLAB_NO_LOOP=1 skips, as in test_safety.py).
"""
from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import run_cli
from test_safety import _mkfs, _write_mbr, loop, loops_ok, wait_for_partition  # noqa: F401  (fixtures)
from ssdlab.targets import safety
from ssdlab.targets.fio import FioTarget
from ssdlab.targets.loop import LoopDevice, parse_size
from ssdlab.targets.safety import UnsafeTargetError, check_device

pytestmark = [pytest.mark.realtime,
              pytest.mark.skipif(os.environ.get("SSDLAB_NO_LOOP") == "1", reason="SSDLAB_NO_LOOP=1")]

MiB = 1 << 20


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(MiB), b""):
            h.update(block)
    return h.hexdigest()


def _name(dev: str) -> str:
    return os.path.basename(os.path.realpath(dev))


@pytest.fixture
def stack(tmp_path):
    """Builds stacks and takes them down in reverse order: ``stack.loop(DEV, offset)`` attaches
    a loop device over a device node or file, ``stack.mount(DEV)`` makes ext4 on it and mounts
    it (returns the mount point), ``stack.swap(DEV)`` turns it into active swap."""
    undo: list[list[str]] = []

    class Stack:
        def loop(self, backing: str, offset: int = 0, *extra: str) -> str:
            dev = subprocess.run(["losetup", "--find", "--show", "-o", str(offset), *extra, backing], check=True,
                                 capture_output=True, text=True).stdout.strip()
            undo.append(["losetup", "--detach", dev])
            return dev

        def mount(self, dev: str, *opts: str, mkfs: bool = True) -> str:
            if mkfs:
                _mkfs(dev)
            mnt = str(tmp_path / f"mnt{len(undo)}")
            os.mkdir(mnt)
            subprocess.run(["mount", *opts, dev, mnt], check=True, capture_output=True)
            undo.append(["umount", "--detach-loop", mnt])
            return mnt

        def swap(self, dev: str) -> None:
            subprocess.run(["mkswap", dev], check=True, capture_output=True)
            subprocess.run(["swapon", dev], check=True, capture_output=True)
            undo.append(["swapoff", dev])

    yield Stack()
    for cmd in reversed(undo):
        subprocess.run(cmd, capture_output=True)


def _keep(mnt: str) -> tuple[str, str]:
    """Writes a file of random bytes on the filesystem at ``mnt``; returns (path, checksum)."""
    path = os.path.join(mnt, "data.bin")
    with open(path, "wb") as f:
        f.write(os.urandom(2 * MiB))
        f.flush()
        os.fsync(f.fileno())
    return path, _sha256(path)


def _refused_by_the_cli(target: str, tmp_path) -> str:
    r = run_cli("consistency", "--target", target, "--duration", "1", "--no-progress",
                "--out", str(tmp_path / "out"), check=False)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    return r.stderr


@pytest.mark.parametrize("offset", [0, MiB], ids=["offset-0", "offset-1MiB"])
def test_loop_over_the_target_with_a_mounted_filesystem_is_refused(loop, stack, tmp_path, offset):
    upper = stack.loop(loop.path, offset)
    mnt = stack.mount(upper)
    data, digest = _keep(mnt)
    lower_digest = _sha256(loop.path)
    err = _refused_by_the_cli(loop.path, tmp_path)
    chain = f"{_name(upper)} is a loop device over {_name(loop.path)}" + (f" from byte {offset}" if offset else "")
    assert f"is mounted at {mnt} (via {_name(upper)}: {chain})" in err
    assert f"--destroy-data {loop.path}" in err
    assert _sha256(data) == digest and _sha256(loop.path) == lower_digest
    # the gate alone, without the mount: the stacked loop device itself is refused
    subprocess.run(["umount", mnt], check=True)
    msg = str(pytest.raises(UnsafeTargetError, check_device, loop.path).value)
    assert f"has devices stacked on it: {chain}" in msg
    assert check_device(loop.path, destroy=loop.path) is None


def test_loop_over_a_partition_of_the_target_is_refused(stack, tmp_path, loops_ok):
    img = str(tmp_path / "disk.img")
    with open(img, "wb") as f:
        f.truncate(16 * MiB)
    _write_mbr(img)
    disk = stack.loop(img, 0, "--partscan")
    part = wait_for_partition(disk)
    upper = stack.loop(part)
    mnt = stack.mount(upper)
    data, digest = _keep(mnt)
    err = _refused_by_the_cli(disk, tmp_path)
    assert (f"is mounted at {mnt} (via {_name(upper)}: {_name(upper)} is a loop device over {_name(part)}, "
            f"{_name(part)} is a partition of {_name(disk)})") in err
    assert _sha256(data) == digest


def test_loop_mount_of_an_image_at_an_offset_is_refused(loop, stack, tmp_path):
    fs = stack.loop(loop.path, MiB)
    _mkfs(fs)
    subprocess.run(["losetup", "--detach", fs], check=True)
    mnt = stack.mount(loop.path, "-o", f"loop,offset={MiB}", mkfs=False)
    data, digest = _keep(mnt)
    err = _refused_by_the_cli(loop.path, tmp_path)
    assert f"is mounted at {mnt} (via loop" in err and f"is a loop device over {_name(loop.path)} from byte {MiB})" in err
    assert _sha256(data) == digest


def test_swap_on_a_stacked_loop_device_is_refused(loop, stack, tmp_path):
    head = os.urandom(MiB)  # the bytes before the swap area, which the kernel never writes
    with open(loop.path, "r+b") as f:
        f.write(head)
    upper = stack.loop(loop.path, MiB)
    stack.swap(upper)
    err = _refused_by_the_cli(loop.path, tmp_path)
    assert (f"is active swap ({upper}) (via {_name(upper)}: {_name(upper)} is a loop device over "
            f"{_name(loop.path)} from byte {MiB})") in err
    with open(loop.path, "rb") as f:
        assert f.read(MiB) == head


def test_results_folder_two_stacks_above_the_target_is_refused_even_with_destroy(loop, stack, tmp_path):
    middle = stack.loop(loop.path)
    mnt1 = stack.mount(middle)
    with LoopDevice(parse_size("16MiB"), directory=mnt1) as top:
        mnt2 = stack.mount(top.path)
        data, digest = _keep(mnt2)
        out = os.path.join(mnt2, "results")
        r = run_cli("consistency", "--target", loop.path, "--destroy-data", loop.path, "--duration", "1",
                    "--no-progress", "--out", out, check=False)
        assert r.returncode == 2 and "Traceback" not in r.stderr
        assert (f"holds the results folder {out}/fio: its filesystem is on {top.path} ({_name(top.path)} is a loop "
                f"device over a file on {_name(middle)}, {_name(middle)} is a loop device over {_name(loop.path)})"
                ) in r.stderr, r.stderr
        assert "--destroy-data cannot override this" in r.stderr
        assert _sha256(data) == digest


def test_the_running_systems_root_through_a_stack_is_not_overridable(loop, stack, monkeypatch):
    mnt = stack.mount(stack.loop(loop.path))
    holds_path = safety._holds_path
    # "/" as if the root filesystem were the one mounted on the stacked loop device
    monkeypatch.setattr(safety, "_holds_path", lambda name, p: holds_path(name, mnt if p == "/" else p))
    msg = str(pytest.raises(UnsafeTargetError, check_device, loop.path, destroy=loop.path).value)
    assert "backs the running system: the root filesystem / is on" in msg
    assert "--destroy-data cannot override this" in msg


def test_a_stacked_device_held_by_another_program_is_refused_even_with_destroy(loop, stack, request):
    upper = stack.loop(loop.path)
    child = subprocess.Popen([sys.executable, "-c", "import os, sys, time\n"
                              "os.open(sys.argv[1], os.O_RDONLY | os.O_EXCL)\nprint('held', flush=True)\ntime.sleep(60)",
                              upper], stdout=subprocess.PIPE, text=True)
    request.addfinalizer(lambda: (child.kill(), child.wait()))
    assert child.stdout.readline().strip() == "held"
    msg = str(pytest.raises(UnsafeTargetError, check_device, loop.path, destroy=loop.path).value)
    assert f"in use by another program: {upper} is held open exclusively" in msg
    assert f"process {child.pid} (python" in msg and "--destroy-data cannot override this" in msg


# --------------------------------------------------------------------------- holders without dm/md


def test_holders_in_a_sysfs_tree_are_refused(loop, tmp_path, monkeypatch):
    """The target (a real loop device) as sysfs would show it under an LVM volume (dm-4) on the
    device and an md array (md127) on its partition, dm-4 mounted: the holder and mount
    refusals, with the chain."""
    name = _name(loop.path)
    block = tmp_path / "class-block"
    rdev = os.stat(loop.path).st_rdev
    tree = {name: {"dev": f"{os.major(rdev)}:{os.minor(rdev)}",
                   "holders": ["dm-4"]},
            "dm-4": {"dev": "253:4", "slaves": [name]},
            f"{name}p1": {"dev": "259:77", "partition": "1", "holders": ["md127"]},
            "md127": {"dev": "9:127", "slaves": [f"{name}p1"]}}
    for dev, facts in tree.items():
        d = block / (f"{name}/{dev}" if "partition" in facts else dev)
        d.mkdir(parents=True)
        (block / dev).exists() or (block / dev).symlink_to(d)
        for key in ("dev", "partition"):
            if key in facts:
                (d / key).write_text(facts[key] + "\n")
        for key in ("holders", "slaves"):
            (d / key).mkdir()
            for other in facts.get(key, []):
                (d / key / other).mkdir()
    monkeypatch.setattr(safety, "SYS_BLOCK", block)
    monkeypatch.setattr(safety, "_mounts", lambda: [((253, 4), "/dev/mapper/vg-data", "/srv/data")])
    monkeypatch.setattr(safety, "_signatures", lambda real: ([], None))
    msg = str(pytest.raises(UnsafeTargetError, check_device, loop.path).value)
    assert f"is mounted at /srv/data (via dm-4: dm-4 is built on {name})" in msg, msg
    assert f"holds partitions: {name}p1" in msg
    assert f"is in use by dm-4; md127 (on {name}p1)" in msg
    assert check_device(loop.path, destroy=loop.path) is None
    # and without the holders the same tree passes: the refusals come from them
    for holder in ("dm-4", "md127"):
        for d in block.rglob(f"holders/{holder}"):
            d.rmdir()
    (block / name / f"{name}p1" / "partition").unlink()
    monkeypatch.setattr(safety, "_mounts", lambda: [])
    assert check_device(loop.path) is None


# --------------------------------------------------------------------------- holding the device


def test_a_held_target_refuses_mkfs_and_mount_until_closed(loop, tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    with FioTarget(loop.path, tmp_path / "fio") as t:
        assert t._held_fd is not None
        r = subprocess.run(["mkfs.ext4", "-q", "-F", loop.path], capture_output=True, text=True)
        assert r.returncode != 0 and "in use" in (r.stderr + r.stdout).lower()
        r = subprocess.run(["mount", "-t", "ext4", loop.path, str(mnt)], capture_output=True, text=True)
        assert r.returncode != 0
        assert t._still_ours() is None
    _mkfs(loop.path)  # free again once the target is closed


def _wait_for(pred, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not pred():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _recovery(target: str, out, idle_min: float = 0.15) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "ssdlab", "recovery", "--target", target, "--out", str(out),
                             "--torture-min", "0.02", "--idle-min", str(idle_min), "--zones", "4", "--no-read",
                             "--no-retorture", "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _idle_started(out) -> bool:
    return any((out / "fio").glob("*idle*.fio")) if (out / "fio").is_dir() else False


def test_mkfs_and_mount_fail_during_an_idle_phase(loop, tmp_path):
    out = tmp_path / "out"
    proc = _recovery(loop.path, out)
    try:
        _wait_for(lambda: _idle_started(out) or proc.poll() is not None)
        assert proc.poll() is None, proc.communicate()
        r = subprocess.run(["mkfs.ext4", "-q", "-F", loop.path], capture_output=True, text=True)
        assert r.returncode != 0, "mkfs wrote a device ssdlab holds"
        mnt = tmp_path / "mnt"
        mnt.mkdir()
        assert subprocess.run(["mount", loop.path, str(mnt)], capture_output=True).returncode != 0
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, stderr


@pytest.fixture
def dev_link(request):
    """A free path under /dev for a symlink (as /dev/disk/by-id/...), removed at teardown."""
    link = Path(f"/dev/ssdlab-test-{os.getpid()}-{request.node.name[-8:]}")
    yield link
    for p in (link, link.with_suffix(".new")):
        if p.is_symlink():
            p.unlink()


def test_a_path_that_names_another_device_mid_run_stops_the_run(loops_ok, tmp_path, dev_link):
    link = dev_link
    with LoopDevice(parse_size("32MiB")) as a, LoopDevice(parse_size("32MiB")) as b:
        os.symlink(a.path, link)
        out = tmp_path / "out"
        proc = _recovery(str(link), out, idle_min=0.05)
        try:
            _wait_for(lambda: _idle_started(out) or proc.poll() is not None)
            tmp = link.with_suffix(".new")
            os.symlink(b.path, tmp)
            os.replace(tmp, link)
            stdout, stderr = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 2, stdout + stderr
        assert "Traceback" not in stderr
        assert f"{link} now names {b.path}" in stderr and f"not {a.path}" in stderr
        assert "INCOMPLETE" in os.listdir(out)


# --------------------------------------------------------------------------- files are data too


def test_a_file_holding_data_needs_destroy_data_and_survives_without_it(tmp_path):
    data = tmp_path / "precious.img"
    data.write_bytes(os.urandom(8 * MiB))
    digest = _sha256(str(data))
    r = run_cli("consistency", "--target", f"file:{data}", "--duration", "1", "--no-progress",
                "--out", str(tmp_path / "out"), check=False)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"file:{data}: it holds data (8,388,608 bytes allocated)" in r.stderr
    assert f"--destroy-data {data}" in r.stderr
    assert _sha256(str(data)) == digest
    # named in --destroy-data it is tested, and marked as ssdlab's: a rerun needs no flag
    run_cli("consistency", "--target", f"file:{data}", "--destroy-data", str(data), "--duration", "1",
            "--no-progress", "--out", str(tmp_path / "out1"))
    run_cli("consistency", "--target", f"file:{data}", "--duration", "1", "--no-progress",
            "--out", str(tmp_path / "out2"))


def test_a_missing_file_is_made_with_file_size(tmp_path):
    path = tmp_path / "new.img"
    r = run_cli("consistency", "--target", f"file:{path}", "--duration", "1", "--out", str(tmp_path / "o0"), check=False)
    assert r.returncode == 2 and "--file-size" in r.stderr and "Traceback" not in r.stderr
    run_cli("consistency", "--target", f"file:{path}", "--file-size", "16MiB", "--duration", "1", "--no-progress",
            "--out", str(tmp_path / "o1"))
    assert path.stat().st_size == 16 * MiB


def test_a_file_open_for_writing_elsewhere_is_refused_even_with_destroy(tmp_path, request):
    path = tmp_path / "busy.img"
    path.write_bytes(b"\0" * MiB)
    child = subprocess.Popen([sys.executable, "-c", "import sys, time\nf = open(sys.argv[1], 'r+b')\n"
                              "print('open', flush=True)\ntime.sleep(60)", str(path)], stdout=subprocess.PIPE, text=True)
    request.addfinalizer(lambda: (child.kill(), child.wait()))
    assert child.stdout.readline().strip() == "open"
    r = run_cli("consistency", "--target", f"file:{path}", "--destroy-data", str(path), "--duration", "1",
                "--out", str(tmp_path / "out"), check=False)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"it is open for writing in process {child.pid} (python" in r.stderr
    assert "--destroy-data cannot override this" in r.stderr
    child.kill()
    child.wait()
    run_cli("consistency", "--target", f"file:{path}", "--destroy-data", str(path), "--duration", "1",
            "--no-progress", "--out", str(tmp_path / "out1"))
