"""Zoned namespaces (NVMe ZNS) in fio's own zbd options: the example job files (written to the
options of fio's ``zbd-*.fio`` and ``xnvme-zoned.fio``) run on the zoned simulated drive (the
zns profile) with write amplification 1, no refused write and zones reset; the job parser
reads fio's zone options and sizes in zones; zonemode=zbd on a profile without zones, or a
zonesize other than the drive's, is an error naming the profile key; on a loop device (no
zones) fio emulates zones of ``zonesize``, and a job without it is refused as fio refuses it.
Loop-device tests need root and loop devices; they fail (not skip) without them unless
SSDLAB_NO_LOOP=1."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from conftest import SMALL_DRIVE, run_cli, set_args
from ssdlab.workload import fiojob, tofio, tosim

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
ENV = {"FIO_RW": "randwrite", "FIO_IODEPTH": "4", "FIO_BS": "64k"}
ERRORS = ("zone_invalid_write_errors", "zone_full_errors", "zone_open_limit_errors", "zone_active_limit_errors",
          "zone_boundary_errors")
needs_loop = pytest.mark.skipif(os.environ.get("SSDLAB_NO_LOOP") == "1", reason="SSDLAB_NO_LOOP=1")


def _run(tmp_path: Path, jobfile: Path, *args: str, env: dict | None = None) -> dict:
    out = tmp_path / "out"
    run_cli("run", str(jobfile), "--target", "sim:zns", *args, "--out", str(out), "--no-progress", env=env)
    return json.loads((out / "summary.json").read_text())


@pytest.mark.parametrize("name", ["zbd-seq-write", "zbd-rand-write", "zbd-rand-write-zone-reset-gc", "zbd-seq-read",
                                  "zbd-rand-write-trim-gc", "zns-uring-cmd", "zns-zone-append"])
def test_the_examples_run_on_the_zoned_drive_without_gc_or_refused_writes(tmp_path, name):
    short = tmp_path / f"{name}.fio"
    # fio's runtimes shortened (3 minutes, 40 s), the rest as written.
    short.write_text((EXAMPLES / f"{name}.fio").read_text().replace("runtime=180", "runtime=20")
                     .replace("runtime=40", "runtime=10").replace("runtime=30", "runtime=8"))
    groups = _run(tmp_path, short, env=ENV)["groups"]
    for g in groups:
        assert all(g[k] == 0 for k in ERRORS), {k: g[k] for k in ERRORS}
        assert g["gc_copied_bytes"] == 0
        if g.get("host_write_bytes"):
            assert g["write_amplification"] == 1.0
    if name == "zbd-rand-write-zone-reset-gc":
        # 10 s at ~370 MB/s into 8 zones of 256 MiB: the threshold resets keep them from filling,
        # each reset erasing its zone's 64 blocks.
        g = groups[0]
        assert g["zone_resets"] >= 8 and g["erases"] == 64 * g["zone_resets"]
    if name == "zbd-rand-write-trim-gc":
        # warmup alone, then the writer and the collector in the 128:1 ratio of their flow
        # weights, each TRIM resetting a zone (64 blocks erased).
        assert [g["name"] for g in groups] == ["warmup", "wjob+trimjob"]
        w, t = (groups[1]["directions"][d]["ios"] for d in ("write", "trim"))
        assert w > 500 and w // 128 - 1 <= t <= w // 128 + 1, (w, t)
        assert groups[1]["zone_resets"] >= t
    if name.startswith("zns-"):
        # Each job (1 GiB, or one zone) written, then read back in a group of its own.
        zone = 256 << 20
        assert [g["name"] for g in groups] == [n + v for n in ("rand-write", "write-opts", "randwrite-opts")
                                              for v in ("", " (verify)")]
        for w, r in zip(groups[::2], groups[1::2]):
            assert w["host_write_bytes"] == r["host_read_bytes"] == (zone if "append" in name else 1 << 30)
    if name == "zbd-seq-read":
        # The reads find the 40 zones the first group wrote: 10 GiB read from NAND (a read of
        # unwritten units would take no page read, 50 us).
        read = groups[1]["directions"]["read"]
        assert read["bytes"] == 10 << 30 and read["latency_us"]["p1"] > 50


def test_a_random_write_without_zonemode_is_refused_by_the_drive_and_counted(tmp_path):
    job = tmp_path / "r.fio"
    job.write_text("[r]\nrw=randwrite\nbs=64k\nsize=64m\nioengine=libaio\niodepth=4\n")
    g = _run(tmp_path, job, *set_args(SMALL_DRIVE))["groups"][0]
    # Every write lands off its zone's write pointer (the first in a zone at its start may not).
    assert g["zone_invalid_write_errors"] > 0.9 * 1024 and g["host_write_bytes"] < 0.1 * (64 << 20)


def test_zonemode_zbd_on_a_profile_without_zones_names_the_profile_key(tmp_path):
    job = tmp_path / "z.fio"
    job.write_text("[z]\nrw=write\nzonemode=zbd\nsize=8m\n")
    proc = run_cli("run", str(job), "--target", "sim:default", *set_args(SMALL_DRIVE), "--out", str(tmp_path / "o"),
                   "--no-progress", check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"{job}:3: job 'z', option zonemode" in proc.stderr and "zns_zone_size_bytes" in proc.stderr
    job.write_text("[z]\nrw=write\nzonemode=zbd\nzonesize=128m\nsize=8m\n")
    w = fiojob.parse_job_file(str(job))
    with pytest.raises(fiojob.WorkloadError, match=r"z\.fio:4: .*zonesize=134217728 is not the drive's zone size, "
                                                   r"268435456 bytes"):
        tosim.check_zones(w, 256 << 20, "zns")
    tosim.check_zones(fiojob.parse_job_text("[z]\nrw=write\nzonemode=zbd\nzonesize=256m\n"), 256 << 20, "zns")


def test_the_parser_reads_fios_zone_options_and_sizes_in_zones():
    w = fiojob.parse_job_file(str(EXAMPLES / "zbd-rand-write-zone-reset-gc.fio"))
    j = w.jobs[0]
    assert (j.zonemode, j.zonesize, j.offset_bytes, j.size_bytes) == ("zbd", 256 << 20, 524 * (256 << 20), 8 << 28)
    assert (j.zone_reset_threshold, j.zone_reset_frequency) == (0.7, 0.125)
    keys, _ = tosim.sim_job(j, 960 * (256 << 20))
    assert {k: v for k, v in keys.items() if k.startswith("z")} == {
        "zonemode": "zbd", "zbd_reset_threshold": 0.7, "zbd_reset_frequency": 0.125, "zbd_zone_size_bytes": 256 << 20}
    r = fiojob.parse_job_file(str(EXAMPLES / "zbd-rand-write.fio")).jobs[0]
    assert (r.max_open_zones, len(fiojob.parse_job_file(str(EXAMPLES / "zbd-rand-write.fio")).jobs)) == (32, 16)
    # The canonical job file keeps them, so fio reads the same job.
    again = fiojob.parse_job_text(fiojob.format_job_file(w)).jobs[0]
    assert (again.zonemode, again.zonesize, again.offset_bytes, again.zone_reset_frequency) == \
        ("zbd", j.zonesize, j.offset_bytes, 0.125)


@pytest.mark.parametrize("text, needle", [
    ("[z]\nrw=write\nmax_open_zones=4\n", "z.fio:3: job 'z': max_open_zones apply only with zonemode=zbd"),
    ("[z]\nrw=write\nsize=4z\n", "z.fio:3: job 'z': size in zones apply only with zonemode=zbd"),
    ("[z]\nrw=write\nzonemode=zbd\nsize=4z\n", "z.fio:4: job 'z': a size in zones (size=...z) needs zonesize"),
    ("[z]\nrw=write\nzonemode=strided\n", "zonemode=strided"),
    ("[z]\nrw=write\nzonemode=zbd\nzone_reset_threshold=1.5\n", "not a fraction between 0 and 1"),
    ("[z]\nrw=write\nzonemode=zbd\nzonesize=64m\nzonerange=1m\n", "fio ignores zonerange"),
])
def test_zone_options_fio_would_ignore_or_refuse_are_errors_at_their_line(text, needle):
    with pytest.raises(fiojob.WorkloadError, match=None) as e:
        fiojob.parse_job_text(text, source="z.fio")
    assert needle in str(e.value)


def test_on_a_fio_target_a_device_without_zones_needs_zonesize(tmp_path):
    plain = tmp_path / "plain.img"
    plain.write_bytes(b"")
    w = fiojob.parse_job_text("[z]\nrw=randwrite\nzonemode=zbd\nsize=32m\n", source="z.fio")
    with pytest.raises(fiojob.WorkloadError, match=r"z\.fio:1: job 'z': zonemode=zbd on .*plain\.img, which has no "
                                                   r"zones: fio emulates zones .* only with zonesize="):
        tofio.check_zones(w, str(plain))
    tofio.check_zones(fiojob.parse_job_text("[z]\nrw=randwrite\nzonemode=zbd\nzonesize=4m\n"), str(plain))


@pytest.mark.realtime
@needs_loop
def test_on_a_loop_device_fio_runs_zbd_jobs_in_emulated_zones(tmp_path):
    job = tmp_path / "z.fio"
    job.write_text("[z]\nrw=randwrite\nzonemode=zbd\nzonesize=4m\nmax_open_zones=4\nsize=8z\nbs=1m\n"
                   "ioengine=psync\ntime_based\nruntime=1\n")
    out = tmp_path / "o"
    run_cli("run", str(job), "--target", "loop:64MB", "--out", str(out), "--no-progress")
    assert "zonemode=zbd" in (out / "job.fio").read_text()
    assert json.loads((out / "summary.json").read_text())["groups"][0]["directions"]["write"]["bytes"] > 0


def test_reads_stay_below_the_write_pointers_unless_read_beyond_wp(tmp_path):
    def read_latency(beyond: int) -> dict:
        job = tmp_path / f"r{beyond}.fio"
        job.write_text("[global]\nzonemode=zbd\nzonesize=256m\nbs=256k\nioengine=libaio\niodepth=1\n"
                       "[w]\nrw=write\nsize=2z\n"
                       f"[r]\nstonewall\nrw=read\nsize=20z\nio_size=2g\nread_beyond_wp={beyond}\n")
        groups = _run(tmp_path / f"o{beyond}", job, *set_args(SMALL_DRIVE))["groups"]
        return groups[1]["directions"]["read"]["latency_us"]
    below, beyond = read_latency(0), read_latency(1)
    # Moved to the 2 zones holding data, every read senses NAND pages (50 us each); read where
    # the offsets say, three quarters of the 2 GiB hold no data and take no page read.
    assert beyond["p50"] < below["p1"], (below, beyond)


def test_a_read_with_nothing_written_ends_the_job_as_fio_does(tmp_path):
    """fio's zbd reads stay below the write pointers; with no zone of the job's range holding
    data, fio ends the job (zbd_find_zone finds none: end of file) instead of reading."""
    def read_bytes(beyond: int) -> int:
        job = tmp_path / f"e{beyond}.fio"
        job.write_text(f"[global]\nzonemode=zbd\nzonesize=256m\nread_beyond_wp={beyond}\n"
                       "[r]\nrw=read\nbs=256k\nsize=4z\n[w]\nrw=randread\nbs=64k\nsize=4z\noffset=8z\n")
        g = _run(tmp_path / f"o{beyond}", job, *set_args(SMALL_DRIVE))["groups"][0]
        return g["host_read_bytes"]
    assert read_bytes(0) == 0
    # read where the offsets say: the sequential job reads its 4 zones, the random one too
    assert read_bytes(1) == 2 * 4 * (256 << 20)


def test_sizes_in_zones_take_the_zoned_drives_zone_size_as_fio_does(tmp_path):
    job = tmp_path / "z.fio"
    job.write_text("[z]\nzonemode=zbd\nrw=write\nbs=1m\nsize=3z\n")
    g = _run(tmp_path, job, *set_args(SMALL_DRIVE))["groups"][0]
    assert g["host_write_bytes"] == 3 * (256 << 20)
    proc = run_cli("run", str(job), "--target", "sim:default", *set_args(SMALL_DRIVE), "--out", str(tmp_path / "d"),
                   "--no-progress", check=False)
    assert proc.returncode == 2 and f"{job}:5: job 'z': a size in zones" in proc.stderr, proc.stderr


def test_zone_append_runs_on_the_simulator_and_names_what_fio_needs_elsewhere(tmp_path):
    text = ("[global]\nioengine=io_uring_cmd\ncmd_type=nvme\nzonemode=zbd\nzonesize=256m\n"
            "[a]\nrw=randwrite\nbs=64k\nsize=2z\nwrite_mode=zone_append\n")
    w = fiojob.parse_job_text(text)
    assert w.jobs[0].write_mode == "zone_append" and "write_mode=zone_append" in fiojob.format_job_file(w)
    job = tmp_path / "a.fio"
    job.write_text(text)
    g = _run(tmp_path, job, *set_args(SMALL_DRIVE))["groups"][0]
    assert g["host_write_bytes"] == 2 * (256 << 20) and all(g[k] == 0 for k in ERRORS)
    with pytest.raises(fiojob.WorkloadError, match=r"<job file>:10: job 'a': write_mode=zone_append needs a fio "
                                                   r"release after 3\.42; the installed fio is fio-3\.33"):
        tofio.check_write_mode(w, "fio-3.33", "/dev/ng0n1")
    with pytest.raises(fiojob.WorkloadError, match=r"generic character device .*the target is /dev/loop3"):
        tofio.check_write_mode(w, "fio-3.43", "/dev/loop3")
    tofio.check_write_mode(w, "fio-3.43", "/dev/ng0n1")
    for bad, says in (("write_mode=uncor", "write_mode=uncor (write commands other"),
                      ("zonemode=none\nwrite_mode=zone_append", "needs zonemode=zbd")):
        with pytest.raises(fiojob.WorkloadError, match=re.escape(says)):
            fiojob.parse_job_text(f"[a]\nioengine=io_uring_cmd\nrw=write\n{bad}\n")


def test_the_same_seed_gives_the_same_zoned_run(tmp_path):
    short = tmp_path / "r.fio"
    short.write_text((EXAMPLES / "zbd-rand-write.fio").read_text().replace("runtime=180", "runtime=5"))
    a, b = (_run(tmp_path / d, short, "--seed", "9")["groups"][0] for d in ("a", "b"))
    keys = ("host_write_bytes", "erases", "zone_resets", "duration_s")
    assert [a[k] for k in keys] == [b[k] for k in keys] and a["latency_us"] == b["latency_us"]
    assert a["zone_resets"] >= 0 and a["host_write_bytes"] > 0
