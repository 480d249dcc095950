"""fio jobs as the simulator runs them (:mod:`ssdlab.workload.tosim`), checked against fio
itself: fio runs the same job on a sparse file with ``write_iolog``, and the region and the
block-size shares it used must be those ssdlab gives the simulator."""
from __future__ import annotations

import shutil
import subprocess
from collections import Counter

import pytest

from ssdlab.workload import fiojob, tosim

CAPACITY = 64 * 2 ** 20

needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed (apt install fio)")


def _fio_log(tmp_path, options: str, n_ios: int) -> list[tuple[str, int, int]]:
    """(action, offset, length) of every IO fio issues for ``options`` on a sparse file of
    CAPACITY bytes (reads: nothing is written)."""
    target = tmp_path / "disk.img"
    with open(target, "wb") as f:
        f.truncate(CAPACITY)
    log = tmp_path / "io.log"
    job = tmp_path / "j.fio"
    job.write_text(f"[j]\nfilename={target}\nioengine=psync\nnumber_ios={n_ios}\n{options}\nwrite_iolog={log}\n")
    subprocess.run(["fio", "--output=/dev/null", str(job)], check=True, cwd=tmp_path, timeout=120)
    out = []
    for line in log.read_text().splitlines():
        parts = line.split()  # iolog version 3: time, file, action, offset, length
        if len(parts) == 5 and parts[2] in ("read", "write", "trim"):
            out.append((parts[2], int(parts[3]), int(parts[4])))
    return out


def _job(options: str) -> fiojob.Job:
    return fiojob.parse_job_text("[j]\n" + options + "\n").jobs[0]


@needs_fio
@pytest.mark.parametrize("options", [
    "rw=randread\nbsrange=4k-16k",
    "rw=randread\nbsrange=8k-20k",      # fio caps 8k + [0, 20k) aligned to 8k at 20k: 40/40/20 %
    "rw=randread\nbssplit=4k/60:8k/30:64k/10",
])
@pytest.mark.realtime
def test_block_size_shares_are_fios(tmp_path, options):
    # norandommap: fio's random map shrinks IOs to the blocks still untouched in a pass,
    # which the simulator does not model (a run's summary says so)
    ios = _fio_log(tmp_path, options + "\nrandseed=7\nnorandommap=1\nio_size=100g", 40_000)
    assert len(ios) == 40_000
    got = Counter(n for _, _, n in ios)
    keys, _ = tosim.sim_job(_job(options), CAPACITY)
    want = dict(keys["read_bssplit"]) if "read_bssplit" in keys else {keys["read_bs_bytes"]: 1}
    total_w = sum(want.values())
    assert set(got) == set(want), (got, want)
    for bs, w in want.items():
        assert got[bs] / len(ios) == pytest.approx(w / total_w, abs=0.012), (bs, got, want)


@needs_fio
@pytest.mark.parametrize("options", [
    "rw=randread\nbs=4k\noffset=10%\nsize=20%",
    "rw=randread\nbs=8k\noffset=3m\nsize=5m",
    "rw=randread\nbs=16k\noffset=33%",
    "rw=read\nbs=4k\nsize=25%",
])
@pytest.mark.realtime
def test_region_is_fios(tmp_path, options):
    ios = _fio_log(tmp_path, options + "\nnorandommap=1\nio_size=100g", 20_000)
    lo = min(o for _, o, _ in ios)
    hi = max(o + n for _, o, n in ios)
    offset, length = tosim.region(_job(options), CAPACITY)
    # fio's offsets stay within the region, and 20,000 IOs reach both of its ends
    assert lo == offset and hi == offset + length, (lo, hi, offset, length)


def test_zoned_abs_becomes_shares_of_the_region():
    keys, notes = tosim.sim_job(_job("rw=randwrite\nsize=16m\nrandom_distribution=zoned_abs:60/4m:30/8m:10/4m"),
                                CAPACITY)
    assert keys["distribution"] == "zoned" and keys["zones"] == [(60, 25.0), (30, 50.0), (10, 25.0)]
    assert notes == [] or all("random map" in n for n in notes)


def test_end_conditions_follow_fio():
    keys, _ = tosim.sim_job(_job("rw=randwrite\nsize=8m\nruntime=5\ntime_based"), CAPACITY)
    assert keys["duration_s"] == 5 and "io_bytes" not in keys
    keys, _ = tosim.sim_job(_job("rw=randwrite\nsize=8m\nruntime=5\nloops=3"), CAPACITY)
    assert keys["duration_s"] == 5 and keys["io_bytes"] == 3 * 8 * 2 ** 20
    keys, _ = tosim.sim_job(_job("rw=write\nsize=8m\nio_size=2m\nnumber_ios=100"), CAPACITY)
    assert keys["io_bytes"] == 2 * 2 ** 20 and keys["number_ios"] == 100


def test_refusals_name_option_and_line():
    text = "[x]\nrw=read\n[y]\nrw=read\n[j]\nrw=randwrite\nbs=4k\nwait_for=x\n"
    with pytest.raises(fiojob.WorkloadError, match=r"<job file>:8: job 'j', option wait_for: jobs of a group waiting"):
        tosim.sim_groups(fiojob.parse_job_text(text), CAPACITY, 1.0)
    with pytest.raises(fiojob.WorkloadError, match="size"):
        tosim.sim_job(_job("rw=randwrite\noffset=60m\nsize=8m"), CAPACITY)


@pytest.mark.parametrize("options,line,key,why", [
    ("rw=randwrite\noffset=63m\nbs=2m", 4, "bs", "larger than the job's 1048576-byte region"),
    ("rw=randwrite\noffset=63m\nbssplit=4k/50:2m/50", 4, "bssplit", "larger than the job's"),
    ("rw=write\nio_size=1000001", 3, "io_size", "not a multiple of 512"),
    ("rw=write\nsize=8m\nloops=100000", 4, "loops", "more than 100 times the"),
    ("rw=write\nruntime=2000000\ntime_based", 3, "runtime", "a series holds at most 1,000,000"),
    ("rw=randwrite\niodepth=65535\nnumjobs=17", 3, "iodepth", "at most 1048576"),
])
def test_what_the_simulator_cannot_hold_is_refused_at_its_line(options, line, key, why):
    """Values fio takes but the simulator cannot run in bounded memory or time: an error at
    the line that set the option, naming it."""
    text = "[j]\n" + options + "\n"
    with pytest.raises(fiojob.WorkloadError, match=rf"^<job file>:{line}: job 'j', option {key}: .*{why}"):
        tosim.sim_groups(fiojob.parse_job_text(text), CAPACITY, 1.0)


@pytest.mark.realtime
@needs_fio
def test_random_map_is_fios_default(tmp_path):
    """fio without norandommap writes every block of the region once per pass (checked on
    fio itself), and the simulator is asked for the same; norandommap or a skewed
    distribution turn it off, as in fio."""
    ios = _fio_log(tmp_path, "rw=randread\nbs=4k\nsize=4m\nrandseed=3", 10 ** 6)
    offsets = [o for _, o, _ in ios]
    assert len(offsets) == 1024 and len(set(offsets)) == 1024      # one pass, each block once
    assert tosim.sim_job(_job("rw=randwrite\nbs=4k"), CAPACITY)[0]["random_map"] is True
    for options in ("rw=randwrite\nnorandommap=1", "rw=randwrite\nrandom_distribution=zipf:1.1", "rw=write"):
        assert "random_map" not in tosim.sim_job(_job(options), CAPACITY)[0], options


def _keys(options: str) -> tuple[dict, list[str]]:
    return tosim.sim_job(_job(options), CAPACITY)


def _refusal(options: str, capacity: int = CAPACITY) -> str:
    w = fiojob.parse_job_text("[j]\n" + options + "\n", source="s.fio")
    return str(pytest.raises(fiojob.WorkloadError, tosim.sim_groups, w, capacity, 1.0).value)


@needs_fio
@pytest.mark.parametrize("options", [
    "rw=read:8k\nbs=4k\nsize=4m",
    "rw=read:4k\nbs=8k\nsize=72k\nloops=3",
    "rw=read:16k\nbs=16k\nsize=1m\noffset=8m",
])
@pytest.mark.realtime
def test_a_forward_stride_ends_the_pass_where_fio_does(tmp_path, options):
    ios = _fio_log(tmp_path, options, 10 ** 6)
    keys, _ = _keys(options)
    assert keys["number_ios"] == len(ios) and keys["seq_stride_bytes"] > 0
    # with io_size or time_based fio starts another pass instead: no IO count
    assert "number_ios" not in _keys(options + "\nio_size=16m")[0]
    assert "number_ios" not in _keys(options + "\nruntime=1\ntime_based=1")[0]


def test_strides_random_every_n_and_poisson_become_workload_keys():
    keys, _ = _keys("rw=read:-8k\nbs=4k\nsize=64k")
    assert keys["seq_stride_bytes"] == -8192 and "number_ios" not in keys
    keys, notes = _keys("rw=randread:8\nbs=4k")
    assert keys["random_every_ios"] == 8 and any("randread:8" in n for n in notes)
    assert "random_every_ios" not in _keys("rw=randread\nbs=4k")[0]
    # fio's poisson rate: rate (else rate_iops x bs) in IOs of the smallest size, one every
    # whole microsecond: 1 MiB/s of 4 KiB IOs is 256 IOs/s, a gap of 3906 us
    keys, _ = _keys("rw=randwrite\nbs=4k\nrate=1m\nrate_process=poisson")
    assert keys["rate_poisson"] and keys["write_rate_iops"] == pytest.approx(1e6 / 3906)
    keys, _ = _keys("rw=randread\nbssplit=4k/50:64k/50\nrate_iops=3\nrate_process=poisson")
    assert keys["read_rate_iops"] == pytest.approx(1e6 / 333333)
    assert "rate_poisson" not in _keys("rw=randread\nrate_process=poisson")[0]    # no cap: nothing to pace


@pytest.mark.parametrize("options, says", [
    ("rw=read:-4k\nbs=4k", "steps back no more than the 4096-byte block size"),
    ("rw=read:-128k\nbs=4k\nsize=64k", "steps back more than the job's 65536-byte region"),
    ("rw=rw:8k\nbs=4k", "several directions or block sizes"),
    ("rw=write:8k\nbssplit=4k/50:8k/50", "several directions or block sizes"),
    ("rw=read:4k\nbs=8k\nsize=64k", "runs past its 65536-byte end"),
    ("rw=write:1000\nbs=4k", "not a multiple of 512"),
    ("rw=randread\nbs=4k\nrate=1k\nrate_process=poisson", "less than one 4096-byte IO a second"),
])
def test_strides_and_poisson_rates_the_simulator_cannot_run_are_refused(options, says):
    msg = _refusal(options)
    assert msg.startswith("s.fio:") and "job 'j'" in msg and says in msg, msg
    option = "rate" if "poisson" in options else "rw"
    assert f"option {option}:" in msg
    line = options.split("\n").index(next(o for o in options.split("\n") if o.startswith(option + "="))) + 2
    assert msg.startswith(f"s.fio:{line}:"), msg


def _stops(text: str) -> list[list[list[int]]]:
    w = fiojob.parse_job_text(text)
    out = []
    for g in tosim.sim_groups(w, CAPACITY, 1.0):
        jobs = g.keys["jobs"] if "jobs" in g.keys else [g.keys]
        out.append([j.get("exit_stops", []) for j in jobs])
    return out


def test_exitall_stops_what_exit_what_says():
    jobs = "[a]\nrw=randread\nnumber_ios=10\nexitall\n[b]\nrw=randread\n[c]\nnew_group\nrw=randread\n"
    # group (fio's default): the ending job's reporting group; new_group starts another
    assert _stops(jobs) == [[[1], [0], []]]
    assert _stops(jobs.replace("exitall\n", "exitall\nexit_what=stonewall\n")) == [[[1, 2], [0], []]]
    assert _stops(jobs.replace("exitall\n", "exitall\nexit_what=all\n")) == [[[1, 2], [0], []]]
    assert _stops(jobs.replace("exitall\n", "")) == [[[], [], []]]
    assert _stops("[a]\nrw=read\nnumjobs=3\nexitall\n") == [[[1, 2], [0, 2], [0, 1]]]
    msg = _refusal("rw=randread\nexitall\nexit_what=all\n[k]\nstonewall\nrw=read")
    assert msg.startswith("s.fio:4: job 'j', option exit_what:") and "later group(s) would run" in msg, msg
    msg = _refusal("rw=randread\nexitall\nexit_what=stonewall\n[k]\nstartdelay=1\nrw=read")
    assert "option exit_what:" in msg and "startdelay" in msg, msg


def test_data_placement_becomes_the_simulators_placement_keys(tmp_path):
    keys, _ = tosim.sim_job(_job("rw=randwrite\nfdp=1\nfdp_pli=1-3"), 1 << 30)
    assert (keys["placement_select"], keys["placement_ids"]) == ("roundrobin", [1, 2, 3])
    scheme = tmp_path / "s"
    scheme.write_text("0,4096,2\n")
    keys, _ = tosim.sim_job(_job(f"rw=randwrite\ndataplacement=fdp\nplid_select=scheme\ndp_scheme={scheme}"), 1 << 30)
    assert keys["placement_scheme"] == [[0, 4096, 2]] and "placement_ids" not in keys
    # Without fdp, and for a job that only reads, no placement.
    assert not any(k.startswith("placement") for k in tosim.sim_job(_job("rw=randwrite"), 1 << 30)[0])
    assert not any(k.startswith("placement") for k in tosim.sim_job(_job("rw=randread\nfdp=1"), 1 << 30)[0])


@pytest.mark.parametrize("options, read", [
    ("rw=randwrite\nbs=64k\niodepth=8\noffset=8m\nsize=16m", 16 << 20),
    ("rw=write\nbs=128k\nsize=16m\nio_size=4m", 4 << 20),
    ("rw=write\nbs=128k\nsize=16m\nloops=3", 16 << 20),
])
def test_verify_reads_back_what_the_job_wrote_after_its_writes(options, read):
    """fio's verify: after the writes, the latest copy of every block written, in offset order,
    at the job's block size and depth."""
    w = fiojob.parse_job_text(f"[j]\n{options}\nverify=crc32c\n[k]\nstonewall\nrw=read\nsize=4m\n")
    groups = tosim.sim_groups(w, CAPACITY, 1.0)
    assert [g.name for g in groups] == ["j", "j (verify)", "k"]
    written, back = groups[0].keys, groups[1].keys
    assert back["read_fraction"] == 1.0 and back.get("read_random_fraction", 0) == 0
    assert (back["offset_bytes"], back["qd"]) == (written["offset_bytes"], written["qd"])
    assert back.get("io_bytes", back["span_bytes"]) == read and groups[1].jobs == [("j", ("read",))]
    assert "reads back" in groups[1].notes[0]
    # do_verify=0: fio computes checksums but reads nothing back
    w = fiojob.parse_job_text(f"[j]\n{options}\nverify=crc32c\ndo_verify=0\n")
    assert [g.name for g in tosim.sim_groups(w, CAPACITY, 1.0)] == ["j"]


@pytest.mark.parametrize("options, key", [
    ("rw=randwrite\nsize=8m\ntime_based\nruntime=5", "time_based"),
    ("rw=randrw\nsize=8m", "rw"),
    ("rw=randwrite\nsize=8m\nnorandommap", "norandommap"),
    ("rw=randwrite\nsize=8m\nio_size=1m", "io_size"),
    ("rw=randwrite\nsize=8m\nnumjobs=2", "verify"),
])
def test_verify_the_simulator_cannot_read_back_as_fio_does_is_refused_naming_the_option(options, key):
    w = fiojob.parse_job_text(f"[j]\n{options}\nverify=md5\n")
    with pytest.raises(fiojob.WorkloadError, match=rf"^<job file>:\d+: job 'j', option {key}: verify \(read back"):
        tosim.sim_groups(w, CAPACITY, 1.0)


def test_jobs_waiting_for_one_job_of_their_group_run_after_it():
    """fio's wait_for within a group: one job first, the jobs waiting for it together once it
    has ended (a group of their own); a wait for a job of an earlier group changes nothing."""
    text = ("[warm]\nrw=randwrite\nsize=8m\n[a]\nrw=randwrite\nsize=8m\nwait_for=warm\n"
            "[b]\nrw=randread\nsize=8m\nwait_for=warm\n[c]\nstonewall\nrw=read\nsize=8m\nwait_for=a\n")
    groups = tosim.sim_groups(fiojob.parse_job_text(text), CAPACITY, 1.0)
    assert [(g.index, g.name) for g in groups] == [(0, "warm"), (0, "a+b"), (1, "c")]
    assert [len(g.keys.get("jobs", [g.keys])) for g in groups] == [1, 2, 1]
    assert "a, b: wait for warm" in groups[1].notes[0]
    with pytest.raises(fiojob.WorkloadError, match="exitall with jobs of a group waiting"):
        tosim.sim_groups(fiojob.parse_job_text("[global]\nexitall\n" + text), CAPACITY, 1.0)
