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
    text = "[x]\nrw=read\n[j]\nrw=randwrite\nbs=4k\nwait_for=x\n"
    with pytest.raises(fiojob.WorkloadError, match=r"<job file>:6: job 'j', option wait_for"):
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
