"""FioTarget / LoopTarget: fio job files, series and totals, TRIM, purge, dry-run, Ctrl-C.

The loop-device tests need root, /dev/loop-control and fio. If loop devices cannot be made they
FAIL with the reason; set SSDLAB_NO_LOOP=1 to skip them. The whole file runs in ~45 s.
"""
from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import PYTHON_DIR, hist_row, interrupt_fio_child, loops_backed_by, loops_backed_in
from ssdlab.targets.base import JobSpec, PhaseResult
from ssdlab import fio_logs
from ssdlab.targets.fio import FioError, FioTarget, LoopTarget, open_target, parse_fio_json
from ssdlab.targets.loop import LoopDevice, format_size, parse_size
from ssdlab.targets.safety import UnsafeTargetError

pytestmark = pytest.mark.realtime  # see the marker in pyproject.toml

MiB = 1 << 20


# loops_ok, need_fio (fixtures) and interrupt_fio_child: conftest.py


# ============================================================================ pure parsing


def test_parse_fio_json_skips_preamble():
    assert parse_fio_json('fio: terminating on signal 2\n{"jobs": []}\n') == {"jobs": []}
    assert parse_fio_json('{"a": 1}') == {"a": 1}
    # fio's error lines go into the --output file too; the last may run into the brace
    text = 'fio: io_u error on file x: No space left on device: write offset=0, buflen=4096{\n  "fio version" : "fio-3.33"}'
    assert parse_fio_json(text) == {"fio version": "fio-3.33"}
    with pytest.raises(ValueError):
        parse_fio_json("fio: nothing here\n")


def test_loop_sizes_are_command_line_sizes_rounded_down_to_4096():
    # One size rule (ssdlab.units, GNU coreutils'): K/M/G/T and KiB/MiB/GiB/TiB powers of 1024,
    # KB/MB/GB/TB powers of 1000.
    assert parse_size("8GB") == 8 * 10**9 and parse_size("8G") == 8 << 30 and parse_size("512MiB") == 512 << 20
    assert parse_size("1.5GiB") == 3 << 29 and parse_size(str(4 << 20)) == 4 << 20
    assert parse_size("64MB") == 64 * 10**6 and parse_size("64MB").requested_bytes == 64 * 10**6  # 15625 blocks
    # A loop device holds whole 4096-byte blocks: 10^9 bytes is 244140.625 of them.
    one_g = parse_size("1GB")
    assert one_g == 244140 * 4096 and one_g.requested_bytes == 10**9
    assert format_size(256 << 20) == "256MiB" and format_size(64 * 10**6) == "64MB"
    for bad in ("8X", "", "-1G", "1000", "1MB"):  # 1MB = 10^6 bytes: below the 1 MiB minimum
        with pytest.raises(ValueError, match="size"):
            parse_size(bad, what="size")


def test_a_rounded_loop_size_is_said_in_the_description(tmp_path):
    t = LoopTarget("1GB", tmp_path, dry_run=True)
    assert t.name == "loop:1GB" and t.capacity_bytes == 999_997_440
    loop = t.describe()["loop"]
    assert loop["size_bytes"] == 999_997_440 and loop["requested_bytes"] == 10**9
    assert "rounded down to 999997440 bytes" in loop["size_note"]
    assert "requested_bytes" not in LoopTarget("1GiB", tmp_path, dry_run=True).describe()["loop"]


def test_bad_target_names(tmp_path):
    with pytest.raises(ValueError, match="not a real target"):
        open_target("nvme0n1")
    with pytest.raises(ValueError, match="give its size with --file-size"):
        FioTarget(f"file:{tmp_path}/missing.img", tmp_path)
    with pytest.raises(UnsafeTargetError, match="is a block device"):
        FioTarget("file:/dev/loop0", tmp_path, size_bytes=MiB)


# ============================================================================ loop devices


@pytest.mark.parametrize("attach", ["LOOP_CONFIGURE", "LOOP_SET_FD"])
def test_a_loop_device_s_backing_file_has_no_name(loops_ok, tmp_path, monkeypatch, attach):
    """The backing file is unlinked at once (its directory stays empty; the kernel shows it
    '(deleted)'); autoclear and direct I/O are on; close detaches it. LOOP_SET_FD, then the
    flags, on kernels without LOOP_CONFIGURE (< 5.8)."""
    if attach == "LOOP_SET_FD":
        monkeypatch.setattr("ssdlab.targets.loop._LOOP_CONFIGURE", 0x4CFF)  # no such ioctl
    with LoopDevice(parse_size("8MiB"), directory=tmp_path) as lo:
        assert not list(tmp_path.iterdir())
        assert loops_backed_in(tmp_path) == {lo.path: lo.backing_file}
        assert lo.info()["autoclear"] and lo.info()["dio"] and not lo.warnings
        with open(lo.path, "r+b", buffering=0) as dev:
            dev.write(bytes(range(256)) * 4096)  # 1 MiB
            os.fsync(dev.fileno())
        assert lo.allocated_bytes() >= MiB
        assert Path(lo.backing_fd_path).read_bytes()[:MiB] == bytes(range(256)) * 4096
    assert not loops_backed_in(tmp_path) and lo.allocated_bytes() == 0


def test_a_killed_process_leaves_no_loop_device_and_no_file(loops_ok, tmp_path):
    """SIGKILL (no cleanup code runs): the kernel detaches the device (autoclear) and frees
    the file (no name)."""
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom ssdlab.targets.loop import LoopDevice, parse_size\n"
         "lo = LoopDevice(parse_size('8MiB'), directory=sys.argv[1]).create()\nprint(lo.path, flush=True)\n"
         "time.sleep(60)\n", str(tmp_path)],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": PYTHON_DIR})
    try:
        dev = child.stdout.readline().strip()
        assert loops_backed_in(tmp_path).keys() == {dev}
    finally:
        child.kill()
        child.wait()
    assert not loops_backed_in(tmp_path) and not list(tmp_path.iterdir())


# ============================================================================ dry run


def test_dry_run_job_file_has_the_review_options(tmp_path):
    loops = tmp_path / "loops"
    loops.mkdir()
    t = LoopTarget("1GiB", tmp_path, dry_run=True, directory=loops)
    job = JobSpec("torture", "randwrite", bs_bytes=4096, qd=32, duration_s=2000, interval_s=1.0)
    r = t.run_phase(job)
    assert isinstance(r, PhaseResult) and not r.complete and len(r.series["t_s"]) == 0
    text = r.notes[-1]
    for opt in ("filename=/dev/loopN", "direct=1", "ioengine=", "refill_buffers=1", "randrepeat=0",
                "norandommap=1", "random_generator=tausworthe64", "write_hist_log=001_torture",
                "log_hist_msec=1000", "log_hist_coarseness=1", "rw=randwrite", "bs=4096", "iodepth=32", "offset=0",
                f"size={1 << 30}", "time_based=1", "runtime=2000000ms"):
        assert opt in text, opt
    assert (tmp_path / "001_torture.fio").read_text() == text
    fill = t.job_text(JobSpec("fill", "write", bs_bytes=128 * 1024, qd=32, span_bytes=512 * MiB, io_bytes=256 * MiB))
    assert "size=536870912" in fill and "io_size=268435456" in fill and "time_based" not in fill
    purge = t.purge()
    assert purge["method"] == "blkdiscard" and purge["dry_run"]
    assert "all 1,073,741,824 bytes of /dev/loopN" in purge["command"] and "--force" not in purge["command"]
    assert not loops_backed_in(loops) and not list(loops.iterdir())  # no loop device was made
    assert not list(tmp_path.glob("*.json"))  # fio never ran
    with pytest.raises(ValueError, match="does not fit"):
        t.job_text(JobSpec("big", "write", span_bytes=2 << 30))


def test_dry_run_touches_nothing_and_reports_refusal(loops_ok, tmp_path):
    with LoopDevice(parse_size("16MiB")) as lo:
        subprocess.run(["mkfs.ext4", "-q", "-F", lo.path], check=True, capture_output=True)
        digest = hashlib.sha256(Path(lo.backing_fd_path).read_bytes()).hexdigest()
        blocks = lo.allocated_bytes()
        t = FioTarget(lo.path, tmp_path, dry_run=True)  # an unsafe device: dry-run reports, does not raise
        assert t.refused and "ext4" in t.refused and "refused" in t.describe()
        r = t.run_phase(JobSpec("torture", "randwrite", duration_s=5))
        assert "WARNING: a real run would be refused" in r.notes[-1]
        assert f"filename={lo.path}" in r.notes[-1]
        t.purge()
        t.run_phase(JobSpec("trim", "trim", bs_bytes=MiB))
        assert hashlib.sha256(Path(lo.backing_fd_path).read_bytes()).hexdigest() == digest
        assert lo.allocated_bytes() == blocks
        assert not list(tmp_path.glob("*.json")) and not list(tmp_path.glob("*.log"))


# ============================================================================ real runs


def test_consistency_like_run_on_loop(loops_ok, tmp_path):
    with LoopTarget("256MiB", tmp_path) as t:
        assert t.capacity_bytes == 256 * MiB and t.name == "loop:256MiB"
        assert t.purge()["method"] == "blkdiscard"
        fill = t.run_phase(JobSpec("fill", "write", bs_bytes=128 * 1024, qd=32))
        assert fill.complete and fill.totals["host_write_bytes"] == 256 * MiB
        job = JobSpec("torture", "randwrite", bs_bytes=4096, qd=32, duration_s=5.0)
        r = t.run_phase(job)
        assert r.complete
        s = r.series
        n = len(s["t_s"])
        assert 4 <= n <= 6, s["t_s"]  # ~1 row per second
        assert np.allclose(np.diff(s["t_s"]), 1.0, atol=0.1)
        assert abs(float(np.sum(s["dt_s"])) - r.totals["duration_s"]) < 0.05
        assert np.allclose(s["mbps"], s["iops"] * 4096 / 1e6)
        # the series agrees with fio's own summary
        data = json.loads((tmp_path / "002_torture.json").read_text())
        fio_iops = data["jobs"][0]["write"]["iops"]
        mean = float(np.sum(s["iops"] * s["dt_s"]) / np.sum(s["dt_s"]))
        assert abs(mean - fio_iops) / fio_iops < 0.02, (mean, fio_iops)
        assert abs(float(np.mean(s["iops"])) - fio_iops) / fio_iops < 0.02
        # the series holds every IO fio counted: its histogram log plus the final window
        assert float(np.sum(s["iops"] * s["dt_s"])) == pytest.approx(data["jobs"][0]["write"]["total_ios"])
        hist = fio_logs.read_hist_log(tmp_path / "002_torture_clat_hist.1.log")
        assert hist.counts.sum() <= data["jobs"][0]["write"]["total_ios"]
        # per-interval latency percentiles, ordered, and bracketing fio's whole-job figures
        p50, p99, mx = s["write_lat_p50_us"], s["write_lat_p99_us"], s["write_lat_max_us"]
        assert np.isfinite(p99).all() and (p50 <= p99).all() and (p99 <= mx).all()
        assert np.nanmin(p50) <= r.latency_us["p50"] * 1.05 and np.nanmax(p50) >= r.latency_us["p50"] * 0.95
        assert np.nanmax(mx) == pytest.approx(r.latency_us["max"], rel=0.04)
        tot = r.totals
        assert tot["host_write_bytes"] == data["jobs"][0]["write"]["io_bytes"] > 0
        assert tot["host_read_bytes"] == 0 and tot["ios"] * 4096 == tot["host_write_bytes"]
        assert 4.9 <= tot["duration_s"] <= 5.5
        lat = r.latency_us
        assert set(lat) == {"p50", "p99", "p99.9", "max"}
        assert 0 < lat["p50"] <= lat["p99"] <= lat["p99.9"] <= lat["max"] * 1.01
        for f in ("002_torture.fio", "002_torture.json", "002_torture_clat_hist.1.log", "002_torture.stderr"):
            assert (tmp_path / f).exists(), f
        d = t.describe()
        assert d["kind"] == "loop" and d["fio_version"].startswith("fio-") and d["ioengine"] in ("io_uring", "libaio")
        backing = t.loop.backing_file
        assert loops_backed_by(backing) == [t.path]
    assert not loops_backed_by(backing)  # detached


def test_trim_deallocates_on_loop(loops_ok, tmp_path):
    with LoopTarget("64MiB", tmp_path) as t:
        t.purge()
        assert t.loop.allocated_bytes() < MiB
        t.run_phase(JobSpec("fill", "write", bs_bytes=MiB, qd=8))
        full = t.loop.allocated_bytes()
        assert full >= 60 * MiB
        r = t.run_phase(JobSpec("trim-half", "trim", bs_bytes=MiB, qd=8, span_bytes=32 * MiB))
        assert r.complete and r.totals["host_trim_bytes"] == 32 * MiB and r.totals["host_write_bytes"] == 0
        half = t.loop.allocated_bytes()
        assert half <= full - 30 * MiB, (full, half)
        assert t.purge() ["method"] == "blkdiscard"
        assert t.loop.allocated_bytes() < MiB


def test_idle_phase(tmp_path):
    with FioTarget(f"file:{tmp_path}/idle.img", tmp_path, size_bytes=MiB) as t:
        t0 = time.monotonic()
        r = t.run_phase(JobSpec("rest", "idle", duration_s=1.2, interval_s=0.5))
        assert time.monotonic() - t0 >= 1.2
        assert r.complete and r.series["t_s"].tolist() == [0.0, 0.5, 1.0]
        assert r.series["iops"].tolist() == [0.0, 0.0, 0.0] and r.totals["ios"] == 0


def test_file_target_write_trim_purge(need_fio, tmp_path):
    path = tmp_path / "drive.img"
    t = open_target(f"file:{path}", tmp_path / "wd", size_bytes=32 * MiB)
    assert t.capacity_bytes == 32 * MiB and path.stat().st_size == 32 * MiB
    assert path.stat().st_blocks * 512 < MiB  # created sparse
    w = t.run_phase(JobSpec("fill", "write", bs_bytes=MiB, qd=4))
    assert w.complete and w.totals["host_write_bytes"] == 32 * MiB
    assert path.stat().st_blocks * 512 >= 31 * MiB
    tr = t.run_phase(JobSpec("trim", "trim", bs_bytes=MiB, span_bytes=16 * MiB))
    assert "ioengine=falloc" in (tmp_path / "wd" / "002_trim.fio").read_text()
    assert tr.totals["host_trim_bytes"] == 16 * MiB
    assert path.stat().st_blocks * 512 <= 17 * MiB  # hole punched
    assert t.purge()["method"] == "truncate"
    assert path.stat().st_size == 32 * MiB and path.stat().st_blocks * 512 < MiB
    # an existing file is taken at its size
    t2 = FioTarget(f"file:{path}", tmp_path / "wd2")
    assert t2.capacity_bytes == 32 * MiB


def test_purge_methods_not_supported_on_loop(loops_ok, tmp_path):
    with LoopTarget("8MiB", tmp_path, purge_method="nvme-format") as t:
        with pytest.raises(FioError, match=r"not supported on /dev/loop\d+: it is not an NVMe namespace"):
            t.purge()
        t.purge_method = "ata-secure-erase"
        with pytest.raises(FioError, match=r"not supported on /dev/loop\d+: it is not an ATA"):
            t.purge()
        t.purge_method = "none"
        assert t.purge() == {"method": "none"}


# ============================================================================ interruption

_CHILD = textwrap.dedent("""
    import json, sys
    from ssdlab.targets.fio import LoopTarget
    from ssdlab.targets.base import JobSpec
    t = LoopTarget("64MiB", sys.argv[1])
    said = []
    def progress(frac, text):
        if not said:
            print("RUNNING", t.path, t.loop.backing_file, flush=True)
            said.append(1)
    try:
        r = t.run_phase(JobSpec("torture", "randwrite", qd=32, duration_s=60), progress=progress)
    finally:
        t.close()
    print(json.dumps({"rows": len(r.series["t_s"]), "complete": r.complete, "ios": r.totals.get("ios"),
                      "iops": [float(x) for x in r.series["iops"]], "notes": r.notes}), flush=True)
""")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_interrupt_keeps_partial_results(loops_ok, tmp_path, sig):
    res, dev, backing, stop_s = interrupt_fio_child(tmp_path, _CHILD, sig)
    assert res["complete"] is False
    assert res["rows"] > 0 and res["ios"] > 0 and max(res["iops"]) > 0
    assert any("interrupted" in n for n in res["notes"])
    assert stop_s < 15  # fio stopped, it did not run its 60 s
    assert (tmp_path / "wd" / "001_torture_clat_hist.1.log").exists()  # fio wrote its log on exit
    assert not loops_backed_by(backing)  # the loop device was detached


def test_timed_phase_series_covers_the_job_duration(tmp_path):
    """fio's runtime of a 3 s job may say 3.004 s and its last histogram row land past 3 s:
    the series still has exactly 3 one-second intervals holding every IO fio counted."""
    rows = [hist_row(t, 100) + "\n" for t in (1001, 2001, 3004)]
    with FioTarget(f"file:{tmp_path}/t.img", tmp_path, size_bytes=MiB) as t:
        (tmp_path / "007_w_clat_hist.1.log").write_text("".join(rows))
        data = {"jobs": [{"write": {"total_ios": 350}, "job_runtime": 3004}]}
        job = JobSpec("w", "randwrite", duration_s=3.0)
        series, note = t._phase_series(job, tmp_path / "007_w_clat_hist.1.log", data, {"duration_s": 3.004})
    assert series["t_s"].tolist() == [0.0, 1.0, 2.0] and series["dt_s"].tolist() == [1.0, 1.0, 1.0]
    assert float(np.sum(series["iops"] * series["dt_s"])) == 350 and "final window" in note


# ============================================================================ zones back to back

def _longest_idle_s(device: str, run) -> float:
    """Runs ``run()`` while sampling ``device``'s completed-request and in-flight counts
    (/sys/block/NAME/stat) every ~0.2 ms; returns the longest time between its first and last
    completion in which the device had nothing in flight and completed nothing [s]."""
    import threading

    stat = Path("/sys/block") / os.path.basename(os.path.realpath(device)) / "stat"
    samples: list[tuple[float, int, int]] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            f = stat.read_text().split()
            samples.append((time.monotonic(), int(f[0]) + int(f[4]), int(f[8])))
            time.sleep(0.0002)

    th = threading.Thread(target=sample)
    th.start()
    try:
        run()
    finally:
        done.set()
        th.join()
    counts = [c for _, c, _ in samples]
    # from the first sample after the first completion (two may land between samples)
    lo = next(i for i, c in enumerate(counts) if c != counts[0])
    hi = counts.index(counts[-1])
    longest, since = 0.0, None
    for (t0, c0, f0), (t1, c1, f1) in zip(samples[lo:hi], samples[lo + 1:hi + 1]):
        if c0 == c1 and f0 == f1 == 0:
            since = t0 if since is None else since
            longest = max(longest, t1 - since)
        else:
            since = None
    return longest


#: Longest idle time a sweep pass may leave the drive between its zones [s]. fio started per
#: zone leaves several hundred ms (its start-up and ssdlab's bookkeeping).
ZONE_GAP_S = 0.050


def test_sweep_zones_run_back_to_back_without_idle_gaps(loops_ok, tmp_path):
    """A sweep's write pass on a loop device: run_phases runs its zones in one fio job, and the
    device never idles longer than ZONE_GAP_S between the first IO and the last; the same
    zones through run_phase one by one leave gaps far longer (the checker sees them)."""
    from ssdlab.procedures.sweep import phase_mbps, sweep_jobs, zone_layout
    from ssdlab.targets.base import run_phases_one_by_one

    with LoopTarget("64MiB", tmp_path) as t:
        jobs = [job for _, job in sweep_jobs(zone_layout(t.capacity_bytes, 16, 2 * MiB), read=False)]
        t._ioengine()  # probed before the sampling: the probe's read is not a zone
        batch: list[PhaseResult] = []
        gap_s = _longest_idle_s(t.real_path, lambda: batch.extend(t.run_phases(jobs)))
        one: list[PhaseResult] = []
        old_gap_s = _longest_idle_s(t.real_path, lambda: one.extend(run_phases_one_by_one(t, jobs)))
        files = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("001_"))
    assert gap_s < ZONE_GAP_S < 0.1 < old_gap_s, (gap_s, old_gap_s)
    assert [r.job for r in batch] == jobs and all(r.complete for r in batch)
    for r in batch:  # each zone's own IOs and time, from fio's per-IO log
        assert r.totals["ios"] == 16 and r.totals["host_write_bytes"] == 2 * MiB
        assert 0 < r.totals["duration_s"] < 1 and np.isfinite(phase_mbps(r))
        assert float(np.sum(r.series["iops"] * r.series["dt_s"])) == pytest.approx(16)
    assert files == ["001_sweep_write_000..sweep_write_015.fio", "001_sweep_write_000..sweep_write_015.json",
                     "001_sweep_write_000..sweep_write_015.stderr", "001_sweep_write_000_clat.1.log"]


_SWEEP_CHILD = textwrap.dedent("""\
    import json, sys
    import numpy as np
    from ssdlab.procedures import sweep as sw
    from ssdlab.targets.fio import LoopTarget

    t = LoopTarget("1GiB", sys.argv[1])
    print("RUNNING", t.real_path, t.describe()["loop"]["backing_file"], flush=True)
    try:
        # 4 KiB requests at QD1 over 64 zones of 8 MiB: seconds per pass on a loop device
        sw.sweep(t, sw.zone_layout(t.capacity_bytes, 64, 8 << 20, bs_bytes=4096), progress=False)
        res = {"interrupted": False}
    except sw.SweepInterrupted as e:
        res = {"interrupted": True, "write": int(np.isfinite(e.sweep["write_mbps"]).sum()),
               "read": int(np.isfinite(e.sweep["read_mbps"]).sum()), "notes": e.result.notes,
               "complete": e.result.complete}
    finally:
        t.close()
    print(json.dumps(res), flush=True)
""")


def test_a_sweep_interrupted_in_its_fio_run_keeps_the_zones_it_finished(loops_ok, tmp_path):
    res, dev, backing, stop_s = interrupt_fio_child(tmp_path, _SWEEP_CHILD, signal.SIGTERM)
    assert res["interrupted"], "the sweep ended before the signal: make its zones larger"
    assert 0 < res["write"] + res["read"] < 128 and res["complete"] is False
    assert res["notes"][0] == "interrupted by SIGTERM: partial results"
    assert stop_s < 15 and not loops_backed_by(backing)
