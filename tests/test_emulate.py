"""``ssdlab emulate``: a simulated drive as a real block device. The command runs as a
subprocess (as a user runs it) on a 1.75 GiB drive; the tests use the device as any block
device is used (mkfs and mount, fio), stop it with each signal and look for anything left
behind. They need root, /dev/fuse, loop devices, fio and e2fsprogs."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import PYTHON_DIR, loops_backed_in, mounted, require_loops

pytestmark = pytest.mark.realtime  # see the marker in pyproject.toml

#: The default drive scaled down to 1.75 GiB (same dies, planes and timings).
EMU_DRIVE = ["blocks_per_plane=64", "pages_per_block=64", "user_capacity_bytes=1792MiB"]


@pytest.fixture(autouse=True)
def _host_ok():
    require_loops(("fio", "mkfs.ext4", "fsck.ext4"))
    if not os.path.exists("/dev/fuse"):
        pytest.fail("/dev/fuse is missing: these tests need FUSE (modprobe fuse)")


def _start(run_dir: Path, *args: str, data: str = "memory") -> tuple[subprocess.Popen, str]:
    """Starts ``ssdlab emulate`` on the test drive with its state under ``run_dir``; returns
    the process and its device once it has printed it (the lines up to it: ``_start.header``)."""
    sets = [a for kv in EMU_DRIVE for a in ("--set", kv)]
    env = {**os.environ, "SSDLAB_RUN_DIR": str(run_dir), "PYTHONPATH": PYTHON_DIR}
    proc = subprocess.Popen([sys.executable, "-m", "ssdlab", "emulate", "default", *sets, "--data", data, *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.time() + 60
    _start.header = ""
    for line in proc.stdout:
        _start.header += line
        if line.startswith("device: "):
            return proc, line.split()[1]
        if time.time() > deadline:
            break
    proc.kill()
    out, err = proc.communicate()
    raise AssertionError(f"ssdlab emulate printed no device (exit {proc.returncode}):\n{out}\n{err}")


def _stop(proc: subprocess.Popen, sig: int = signal.SIGINT) -> tuple[int, str, str]:
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err


@contextlib.contextmanager
def emulator(run_dir: Path, *args: str, data: str = "memory"):
    """The emulator's device for the block; stopped with Ctrl-C after it, which must end it
    cleanly (exit 0) and leave nothing behind."""
    proc, device = _start(run_dir, *args, data=data)
    header = _start.header
    try:
        yield device
    finally:
        if proc.poll() is None:
            rc, out, err = _stop(proc)
            assert rc == 0, f"exit {rc}\n{out}\n{err}"
            assert_nothing_left(run_dir)
            emulator.last_output, emulator.last_errors = header + out, err


def _mounts_under(directory: Path) -> list[str]:
    inside = os.fsencode(directory)
    with open("/proc/self/mountinfo", "rb") as f:
        return [line.split()[4].decode() for line in f if line.split()[4].startswith(inside)]


def assert_nothing_left(run_dir: Path) -> None:
    assert loops_backed_in(run_dir) == {}, "a loop device over the emulated drive is still attached"
    assert _mounts_under(run_dir) == [], "the emulator's filesystem is still mounted"
    assert list(run_dir.iterdir()) == [], f"left in {run_dir}: {list(run_dir.iterdir())}"


def _served(output: str) -> dict[str, int]:
    """The counts of the emulator's last line: ``stopped: N reads, N writes, N discards, N flushes``."""
    line = [x for x in output.splitlines() if x.startswith("stopped: ")][-1]
    words = line.removeprefix("stopped: ").split(";")[0].split(", ")
    return {w.split()[1]: int(w.split()[0]) for w in words}


def _fio(device: str, *args: str) -> dict:
    r = subprocess.run(["fio", "--name=emu", f"--filename={device}", "--ioengine=libaio", "--direct=1",
                        "--output-format=json", *args], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"fio {' '.join(args)} exited {r.returncode}:\n{r.stdout[-2000:]}\n{r.stderr}"
    return json.loads(r.stdout[r.stdout.index("{"):])["jobs"][0]


def test_a_filesystem_on_the_emulated_drive_keeps_its_files(tmp_path):
    run_dir = tmp_path / "run"
    files = {f"f{i}": os.urandom(1 << 20) * (i + 1) for i in range(4)}
    with emulator(run_dir) as device:
        subprocess.run(["mkfs.ext4", "-q", "-F", device], check=True, capture_output=True)
        with mounted([device], tmp_path / "fs") as fs:
            for name, data in files.items():
                (fs / name).write_bytes(data)
        # Mounted again: the files are read from the device, not from the page cache.
        with mounted([device], tmp_path / "fs") as fs:
            for name, data in files.items():
                assert (fs / name).read_bytes() == data, name
        subprocess.run(["umount", str(tmp_path / "fs")], capture_output=True)
        fsck = subprocess.run(["fsck.ext4", "-n", "-f", device], capture_output=True, text=True)
        assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    served = _served(emulator.last_output)
    assert served["writes"] > 0 and served["reads"] > 0 and served["flushes"] > 0, served


def test_fio_verifies_what_it_wrote_on_the_raw_device(tmp_path):
    size = 32 << 20
    with emulator(tmp_path / "run") as device:
        job = _fio(device, "--rw=randwrite", "--bs=4k", "--iodepth=16", f"--size={size}", "--verify=crc32c",
                   "--do_verify=1", "--verify_fatal=1", "--verify_state_save=0")
        assert job["error"] == 0
        assert job["read"]["io_bytes"] >= size, "fio read back what it wrote"
    # Every 4 KiB write went through the simulated drive.
    assert _served(emulator.last_output)["writes"] >= size // 4096


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stop_signal_leaves_nothing_behind_even_under_io(tmp_path, sig):
    run_dir = tmp_path / "run"
    proc, device = _start(run_dir)
    assert loops_backed_in(run_dir) and _mounts_under(run_dir), "the emulator's device and mount exist while it runs"
    fio = subprocess.Popen(["fio", "--name=load", f"--filename={device}", "--ioengine=libaio", "--direct=1",
                            "--rw=randrw", "--bs=4k", "--iodepth=8", "--time_based", "--runtime=30"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.5)
        fio.terminate()  # the device stays in use by no one once fio has gone
        fio.wait(timeout=30)
        rc, out, err = _stop(proc, sig)
    finally:
        if fio.poll() is None:
            fio.kill()
    assert rc == 0, f"exit {rc}\n{out}\n{err}"
    assert_nothing_left(run_dir)


def test_a_stop_waits_while_a_filesystem_on_the_device_is_mounted(tmp_path):
    run_dir = tmp_path / "run"
    proc, device = _start(run_dir)
    try:
        subprocess.run(["mkfs.ext4", "-q", "-F", device], check=True, capture_output=True)
        with mounted([device], tmp_path / "fs") as fs:
            (fs / "x").write_text("kept")
            proc.send_signal(signal.SIGINT)
            time.sleep(1.5)
            assert proc.poll() is None, "the emulator stopped under a mounted filesystem"
            assert (fs / "x").read_text() == "kept"
            subprocess.run(["umount", str(fs)], check=True)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{out}\n{err}"
    assert f"{device} is still in use" in err
    assert_nothing_left(run_dir)


def test_after_a_sigkill_the_next_start_cleans_up(tmp_path):
    run_dir = tmp_path / "run"
    proc, device = _start(run_dir)
    home = run_dir / f"emu-{proc.pid}-0"
    proc.kill()
    proc.wait(timeout=30)  # a process stuck closing its own FUSE file would never end
    # Only the dead mount and its directory stay: the kernel detached the loop device (autoclear)
    # when the process's descriptor closed.
    assert _mounts_under(run_dir) == [str(home / "mnt")]
    assert loops_backed_in(run_dir) == {}
    with emulator(run_dir):
        assert not home.exists(), "the next start removed the killed emulator's directory"
        assert _mounts_under(run_dir) == [str(p) for p in run_dir.glob("emu-*/mnt")], "only its own mount is left"


def test_a_killed_emulator_fails_the_io_in_flight_instead_of_hanging_it(tmp_path):
    """The FUSE server dies with its process: requests in flight and later ones fail (EIO on
    the loop device), so the program doing I/O ends with an error; the next start cleans up."""
    run_dir = tmp_path / "run"
    proc, device = _start(run_dir)
    fio = subprocess.Popen(["fio", "--name=load", f"--filename={device}", "--ioengine=libaio", "--direct=1",
                            "--rw=randwrite", "--bs=4k", "--iodepth=32", "--time_based", "--runtime=60"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(2)
        assert fio.poll() is None, "fio runs on the emulated device"
        proc.kill()
        proc.wait(timeout=30)
        out, _ = fio.communicate(timeout=30)
    finally:
        if fio.poll() is None:
            fio.kill()
    assert fio.returncode != 0 and "Input/output error" in out, out[-2000:]
    with emulator(run_dir):
        assert not (run_dir / f"emu-{proc.pid}-0").exists(), "the next start removed the killed emulator's directory"


def test_reads_do_not_complete_before_their_simulated_time_and_queue_up(tmp_path):
    """A 2 ms page read: every QD1 4 KiB random read of written data takes at least that long
    on the wall clock (the emulator answers at the simulated completion time, never early);
    at QD16 the reads are in flight together (the drive's 16 dies serve them in parallel), so
    a slow completion does not hold back the others."""
    t_read_us = 2000
    with emulator(tmp_path / "run", "--set", f"t_read_us={t_read_us}") as device:
        _fio(device, "--rw=write", "--bs=128k", "--iodepth=8", "--size=8M")
        qd1 = _fio(device, "--rw=randread", "--bs=4k", "--iodepth=1", "--size=8M", "--time_based", "--runtime=2")
        qd16 = _fio(device, "--rw=randread", "--bs=4k", "--iodepth=16", "--size=8M", "--time_based", "--runtime=2")
    # fio's total latency (submission + completion: a submission that blocks can take most of
    # a request's time, leaving little to its completion latency).
    lat = qd1["read"]["lat_ns"]
    assert qd1["read"]["total_ios"] > 50
    assert lat["min"] >= t_read_us * 1000, f"a read took {lat['min']} ns, less than the {t_read_us} us page read"
    assert qd16["read"]["lat_ns"]["min"] >= t_read_us * 1000
    assert qd16["read"]["iops"] > 4 * qd1["read"]["iops"], (qd1["read"]["iops"], qd16["read"]["iops"])


def test_slowdown_runs_every_time_of_the_drive_that_many_times_slower(tmp_path):
    """A 0.5 ms page read at --slowdown 4 takes at least 2 ms on the wall clock; the output
    says the drive runs slower, and the status lines report the replies' lateness."""
    with emulator(tmp_path / "run", "--set", "t_read_us=500", "--slowdown", "4", "--status-every", "0.5") as device:
        _fio(device, "--rw=write", "--bs=128k", "--iodepth=8", "--size=4M")
        qd1 = _fio(device, "--rw=randread", "--bs=4k", "--iodepth=1", "--size=4M", "--time_based", "--runtime=1.5")
    assert qd1["read"]["total_ios"] > 20
    assert qd1["read"]["lat_ns"]["min"] >= 4 * 500_000, qd1["read"]["lat_ns"]
    out = emulator.last_output
    assert "the drive runs 4 times slower than simulated" in out
    assert "every time 4 times slower than simulated" in out.splitlines()[-2]
    assert "replies after their simulated completion time: " in out


def test_the_drives_counters_are_read_from_the_device_as_a_real_drives_are(tmp_path):
    """ssdlab's drive-counter reader finds the emulated drive under the loop device: the host
    bytes it reads move by exactly what fio wrote; random overwrites of the full drive make the
    drive collect garbage, so the NAND bytes move by more (WA > 1) and blocks are erased."""
    from ssdlab.targets import counters, emu

    with emulator(tmp_path / "run", "--status-every", "0.5") as device:
        _fio(device, "--rw=write", "--bs=1M", "--iodepth=8")
        before = counters.read_counters(device)
        job = _fio(device, "--rw=randwrite", "--bs=4k", "--iodepth=32", "--time_based", "--runtime=4")
        after = counters.read_counters(device)
        raw = emu.read(emu.counters_file(device))
        with pytest.raises(PermissionError):
            open(emu.counters_file(device), "w")
    assert before["source"] == after["source"] == "ssdlab-emu", after["reason"]
    assert after["host_write_bytes"] - before["host_write_bytes"] == job["write"]["io_bytes"]
    wa, how = counters.write_amplification(before, after)
    assert wa is not None and wa > 1.05, how
    assert raw["erases"] > 0 and raw["gc_copied_bytes"] > 0
    assert raw["commands"]["write_bytes"] >= raw["host_write_bytes"] - 1 >= 0
    assert any(line.startswith("emulate: drive time ") and " WA " in line for line in emulator.last_errors.splitlines())


def test_lateness_is_read_from_the_reply_buckets():
    from ssdlab.targets import emu

    bounds = [1_000 * m for m in (1, 2, 5, 10, 20, 50, 100, 200)]
    before = {"late": [5, 0, 0, 0, 0, 0, 0, 0, 0], "late_ns": 1_000, "max_late_ns": 900}
    # Since `before`: 90 replies late by at most 5 us, 9 by at most 100 us, 1 by more than 200 us.
    after = {"late_bounds_ns": bounds, "late": [5, 0, 90, 0, 0, 0, 9, 0, 1], "late_ns": 1_000 + 2_000_000,
             "max_late_ns": 300_000}
    late = emu.lateness(after, before)
    assert late["replies"] == 100
    assert late["late_share"] == pytest.approx(0.10)  # above LATE_NS = 50 us
    assert (late["p50_late_s"], late["p99_late_s"]) == (5e-6, 100e-6)
    assert late["mean_late_s"] == pytest.approx(20e-6)
    assert emu.lateness({**after, "late": [0] * 8 + [1]})["p99_late_s"] == float("inf")
    assert emu.lateness(before | {"late_bounds_ns": bounds}, before)["late_share"] is None


def test_idleness_is_read_from_the_idle_gap_buckets():
    from ssdlab.targets import emu

    bounds = [1_000_000 * m for m in (1, 2, 5, 10)]
    before = {"late_bounds_ns": bounds, "idle_gaps": [3, 0, 0, 0, 0], "idle_ns": [900_000, 0, 0, 0, 0]}
    # Since `before`: 10 gaps of at most 1 ms (4 ms), 2 of 1-2 ms (3 ms), 1 of 5-10 ms, 1 above 10 ms.
    after = {**before, "idle_gaps": [13, 2, 0, 1, 1], "idle_ns": [4_900_000, 3_000_000, 0, 7_000_000, 50_000_000]}
    idle = emu.idleness(after, before)
    assert (idle["gaps"], idle["idle_s"]) == (14, pytest.approx(0.064))
    # Above STALL_NS = 1 ms: every bucket after the first.
    assert (idle["stalls"], idle["stall_s"]) == (4, pytest.approx(0.060))
    assert emu.idleness(after, before, stall_ns=5_000_000)["stall_s"] == pytest.approx(0.057)
    assert emu.idleness(after)["gaps"] == 17


def test_the_drive_counts_the_idle_gaps_the_host_leaves_it(tmp_path):
    """fio thinking 20 ms after each QD1 write leaves the drive idle at least that long before
    the next: the drive's idle counters hold 20 gaps of 20 to 50 ms, none of 10 to 20 ms, and
    together no longer than fio's own runtime for the writes (the independent clock: a busy
    host stretches each gap past 20 ms, never past the time fio took)."""
    from ssdlab.targets import emu

    with emulator(tmp_path / "run") as device:
        path = emu.counters_file(device)
        _fio(device, "--rw=write", "--bs=128k", "--iodepth=8", "--size=16M")
        filled = emu.read(path)
        job = _fio(device, "--rw=randwrite", "--bs=4k", "--iodepth=1", "--size=16M", "--thinktime=20000",
                   "--number_ios=21")
        thought = emu.read(path)
    fio_runtime_s = job["write"]["runtime"] / 1e3
    above_20ms, above_50ms = emu.idleness(thought, filled, 20_000_000), emu.idleness(thought, filled, 50_000_000)
    # The 20 thinktimes, and fio's start-up before the first write if it fell in the same bucket.
    gaps, stall_s = above_20ms["stalls"] - above_50ms["stalls"], above_20ms["stall_s"] - above_50ms["stall_s"]
    assert gaps in (20, 21), (above_20ms, above_50ms)
    assert 20 * 0.020 < stall_s < fio_runtime_s + (gaps - 20) * 0.050, (above_20ms, above_50ms, fio_runtime_s)
    assert emu.idleness(thought, filled, 10_000_000)["stalls"] == above_20ms["stalls"]  # none of 10-20 ms


def test_a_phase_is_unreliable_when_late_replies_weigh_against_its_latency():
    """More than 1 % of the replies late, and the p99 lateness (in the drive's time: wall /
    slowdown) above 10 % of the phase's median latency."""
    from ssdlab.targets.emulated import unreliable

    late = {"late_share": 0.10, "p99_late_s": 100e-6}
    assert unreliable(late, {"p50": 500.0}, 1)
    assert not unreliable(late, {"p50": 500.0}, 4)  # 25 us of drive time: 5 % of 500 us
    assert not unreliable(late, {"p50": 2000.0}, 1)
    assert not unreliable({**late, "late_share": 0.005}, {"p50": 500.0}, 1)
    assert not unreliable({"late_share": None, "p99_late_s": None}, {}, 1)  # no replies
    assert unreliable(late, {}, 1)  # no latency measured to weigh it against


def test_the_report_of_an_emulated_run_says_when_lateness_made_it_unreliable(tmp_path):
    from ssdlab import report

    (tmp_path / "summary.json").write_text(json.dumps({
        "test": "consistency", "target": "emu:default", "complete": True,
        "target_info": {"kind": "emu", "emulator": {"warning": "the emulator replied late in 1 phase(s) (fill)"}}}))
    errors: list[str] = []
    report.read_run(tmp_path, errors)
    assert "emulated drive: the emulator replied late in 1 phase(s) (fill)" in errors
    (tmp_path / "summary.json").write_text(json.dumps({"test": "consistency", "complete": True,
                                                       "target_info": {"kind": "emu", "emulator": {}}}))
    errors.clear()
    report.read_run(tmp_path, errors)
    assert not any("emulated drive" in e for e in errors)


@pytest.mark.parametrize("data, problem", [
    ("bogus", "expected none, memory or file:PATH"),
    ("file:", "expected none, memory or file:PATH"),
    ("memory:x", "expected none, memory or file:PATH"),
])
def test_bad_data_modes_are_refused(data, problem):
    from ssdlab.targets.emu import parse_data
    from ssdlab.errors import UserError

    with pytest.raises(UserError, match=problem):
        parse_data(data, 1 << 30)


def test_a_data_mode_that_cannot_hold_the_drive_is_refused(tmp_path, monkeypatch):
    from ssdlab.targets import emu as emulate
    from ssdlab.errors import UserError

    monkeypatch.setattr(emulate, "_mem_available_bytes", lambda: 1 << 30)
    assert emulate.parse_data("memory", 1 << 30) == ("memory", None)
    with pytest.raises(UserError, match="--data memory: the drive's 1073745920 bytes"):
        emulate.parse_data("memory", (1 << 30) + 4096)
    existing = tmp_path / "x.img"
    existing.write_bytes(b"data")
    with pytest.raises(UserError, match="the file exists"):
        emulate.parse_data(f"file:{existing}", 1 << 20)
    free = os.statvfs(tmp_path).f_bavail * os.statvfs(tmp_path).f_frsize
    with pytest.raises(UserError, match="need that much free"):
        emulate.parse_data(f"file:{tmp_path / 'new.img'}", free + (1 << 40))
    assert emulate.parse_data(f"file:{tmp_path / 'new.img'}", 1 << 20) == ("file", str(tmp_path / "new.img"))


@pytest.mark.parametrize("args, option", [
    (["--seed=-1"], "--seed"),
    ([f"--seed={2**63}"], "--seed"),
    (["--seed=x"], "--seed"),
    (["--set", "capacity=-5"], "capacity"),
    (["--set", "t_prog_us=1e15"], "t_prog_us"),
    (["--slowdown", "0.5"], "--slowdown"),
    (["--slowdown", "x"], "--slowdown"),
    (["--status-every", "-1"], "--status-every"),
])
def test_out_of_range_options_are_refused_before_anything_is_served(args, option, capsys):
    # A server runs until it is stopped, so the option walk of test_option_ranges leaves it
    # out: its refusals are checked here (exit 2, the option named, no traceback).
    from ssdlab import cli

    try:
        status = cli.main(["emulate", "default", *args])
    except SystemExit as e:  # argparse's refusals
        status = e.code
    err = capsys.readouterr().err
    assert status == 2 and option in err and "Traceback" not in err, err
