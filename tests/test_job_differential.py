"""One job file, one workload: the same fio jobs run through fio on a loop device and on the
simulator must agree on what ran.

Each entry of :data:`JOBS` is one group of a job file (its options may add further job
sections to the group) (groups run one after another, so one
`ssdlab run` per target runs them all). Per group, the two runs must agree on, within the
stated tolerances:

- the IOs and bytes per direction of a job that ends by its size or IO count (fio and the
  simulator stop at the same count: exact for fixed block sizes, 2 % for size mixes, whose
  draws differ);
- the mean IO size per direction (3 %; 5 % for size mixes under fio's random map, whose
  IOs are cut short at blocks the pass has done: a random process, about 1.3 % standard
  deviation per run at these sizes);
- the read share (3 points, or 5 binomial standard deviations of the IOs drawn: fio draws
  the direction in runs, the simulator per IO);
- the queue depth the jobs ran at (fio's dominant ``iodepth_level`` bucket; a synchronous
  engine runs at 1 whatever ``iodepth`` says);
- the duration of a group whose length the workload fixes (timed, rate-capped or with
  thinktime: 12 %), and that a job ending by its size before its runtime lasts less than
  its runtime on both.

A drive's speed is not compared: the loop device is a file in memory, the simulator a NAND drive.
Jobs whose pattern depends on the region's size (random maps with several block sizes) give
their ``size``, since the two targets' capacities differ.
Needs root and /dev/loop-control (SSDLAB_NO_LOOP=1 skips).
"""
from __future__ import annotations

import json
import os

import pytest

from conftest import require_loops, run_cli, set_args

pytestmark = [pytest.mark.realtime,
              pytest.mark.skipif(os.environ.get("SSDLAB_NO_LOOP") == "1", reason="SSDLAB_NO_LOOP=1")]

#: (name, options, what is fixed by the workload: "count" (IOs/bytes), "time" (duration),
#: "early" (ends by size before its runtime), "none").
JOBS: list[tuple[str, str, str]] = [
    ("seq_write", "rw=write\nbs=128k\nsize=16m", "count"),
    ("seq_read", "rw=read\nbs=64k\nsize=16m", "count"),
    ("rand_write", "rw=randwrite\nbs=4k\nsize=8m", "count"),
    ("rand_read_n", "rw=randread\nbs=4k\nnumber_ios=2000", "count"),
    ("randrw70", "rw=randrw\nrwmixread=70\nbs=4k\nsize=8m", "count"),
    ("rw50", "rw=rw\nrwmixread=50\nbs=4k\nsize=16m", "count"),
    ("randrw_w20", "rw=randrw\nrwmixwrite=20\nbs=4k\nnumber_ios=3000", "count"),
    ("bsrange", "rw=randwrite\nbsrange=4k-64k\nsize=16m", "count"),
    ("bssplit_w", "rw=randwrite\nbssplit=4k/50:64k/50\nsize=16m", "count"),
    ("bssplit_r", "rw=randread\nbssplit=4k/30:16k/70\nsize=32m\nnumber_ios=4000", "count"),
    ("bs_rw", "rw=randrw\nbs=4k,16k\nnumber_ios=2000", "count"),
    ("libaio_qd16", "rw=randwrite\nbs=4k\nsize=8m\nioengine=libaio\niodepth=16\ndirect=1", "count"),
    ("io_uring_qd8", "rw=randread\nbs=4k\nnumber_ios=3000\nioengine=io_uring\niodepth=8\ndirect=1", "count"),
    ("psync_qd32", "rw=randread\nbs=4k\nnumber_ios=1000\nioengine=psync\niodepth=32\ndirect=1", "count"),
    ("default_engine_qd32", "rw=randread\nbs=4k\nnumber_ios=1000\niodepth=32\ndirect=1", "count"),
    ("io_size", "rw=randwrite\nbs=4k\nio_size=4m\nsize=32m", "count"),
    ("loops", "rw=write\nbs=64k\nsize=4m\nloops=3", "count"),
    ("offset", "rw=randwrite\nbs=4k\noffset=16m\nsize=8m", "count"),
    ("offset_4k", "rw=write\nbs=4k\noffset=4k\nsize=8m", "count"),
    ("numjobs_increment", "rw=write\nbs=64k\nsize=8m\nnumjobs=2\noffset_increment=8m", "count"),
    ("numjobs3", "rw=randread\nbs=4k\nnumber_ios=500\nnumjobs=3", "count"),
    ("ba", "rw=randwrite\nbs=4k\nba=8k\nsize=8m", "count"),
    ("norandommap", "rw=randwrite\nbs=4k\nsize=8m\nnorandommap=1", "count"),
    ("zipf", "rw=randread\nbs=4k\nnumber_ios=2000\nrandom_distribution=zipf:1.2", "count"),
    ("pareto", "rw=randread\nbs=4k\nnumber_ios=2000\nrandom_distribution=pareto:0.3", "count"),
    ("normal", "rw=randread\nbs=4k\nnumber_ios=2000\nrandom_distribution=normal:10", "count"),
    ("zoned", "rw=randread\nbs=4k\nnumber_ios=2000\nrandom_distribution=zoned:60/10:30/20:10/70", "count"),
    ("zoned_abs", "rw=randwrite\nbs=4k\nsize=16m\nnumber_ios=2000\nrandom_distribution=zoned_abs:60/4m:40/12m",
     "count"),
    ("percentage_random", "rw=randread\nbs=4k\nnumber_ios=2000\npercentage_random=50", "count"),
    ("trim", "rw=trim\nbs=64k\nsize=8m", "count"),
    ("randtrim", "rw=randtrim\nbs=16k\nsize=4m", "count"),
    ("zero_buffers", "rw=write\nbs=128k\nsize=8m\nzero_buffers=1", "count"),
    ("compressible", "rw=write\nbs=128k\nsize=8m\nbuffer_compress_percentage=50", "count"),
    ("mix_qd4", "rw=randrw\nrwmixread=50\nbsrange=4k-16k\nsize=16m\nnumber_ios=2000\nioengine=libaio\niodepth=4\n"
                "direct=1",
     "count"),
    ("seq_1m", "rw=read\nbs=1m\nsize=16m", "count"),
    ("timed", "rw=randwrite\nbs=4k\nsize=16m\nruntime=1\ntime_based=1", "time"),
    ("timed_read_ms", "rw=randread\nbs=4k\nruntime=800ms\ntime_based=1", "time"),
    ("ends_by_size", "rw=randwrite\nbs=4k\nsize=4m\nruntime=30", "early"),
    ("rate_iops", "rw=randread\nbs=4k\nnumber_ios=200\nrate_iops=200", "time"),
    ("rate_bytes", "rw=randwrite\nbs=4k\nsize=1m\nrate=1m", "time"),
    ("thinktime", "rw=randread\nbs=4k\nnumber_ios=200\nthinktime=1s\nthinktime_blocks=100", "time"),
    ("direct0", "rw=randread\nbs=4k\nnumber_ios=1000\nioengine=libaio\niodepth=8", "count"),
    ("poisson", "rw=randread\nbs=4k\nnumber_ios=500\nrate_iops=250\nrate_process=poisson\ndirect=1", "time"),
    ("stride_back", "rw=read:-8k\nbs=4k\nsize=4m", "count"),
    ("stride_holes", "rw=write:8k\nbs=4k\nsize=4m", "count"),      # fio's pass: 342 IOs, not size / bs
    ("randread_every_8", "rw=randread:8\nbs=4k\nnumber_ios=2000", "count"),
]

#: Entries run from a job file of their own: fio's exitall applies to every job of its file.
#: The second job of the group is stopped when the first ends (else it runs 30 s).
EXITALL_JOBS: list[tuple[str, str, str]] = [
    ("exitall", "rw=randread\nbs=4k\nnumber_ios=300\nrate_iops=1000\nexitall\n\n[exitall_b]\nrw=randread\nbs=4k\n"
                "rate_iops=1000\nruntime=30\ntime_based=1", "early"),
]

LOOP_SIZE = "loop:64MiB"


def _job_file(entries: list[tuple[str, str, str]] = JOBS) -> str:
    out = ["; the differential suite: one group per entry"]
    for i, (name, opts, _) in enumerate(entries):
        out += [f"[{name}]", *(["stonewall"] if i else []), opts, ""]
    return "\n".join(out)


def _dominant_bucket(qd: int) -> int:
    return max(b for b in (1, 2, 4, 8, 16, 32, 64) if b <= qd)


def _run_both(tmp_path_factory, entries: list[tuple[str, str, str]]) -> dict:
    """The summary of the entries' job file on the simulator and through fio on a loop device."""
    require_loops(("fio",))
    tmp = tmp_path_factory.mktemp("differential")
    job = tmp / "suite.fio"
    job.write_text(_job_file(entries))
    out = {}
    for name, target, extra in (("sim", "sim:default", set_args()), ("loop", LOOP_SIZE, [])):
        run_cli("run", str(job), "--target", target, *extra, "--no-progress", "--out", str(tmp / name), timeout=900)
        out[name] = json.loads((tmp / name / "summary.json").read_text())
    return out


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    return _run_both(tmp_path_factory, JOBS)


@pytest.fixture(scope="module")
def both_exitall(tmp_path_factory):
    return _run_both(tmp_path_factory, EXITALL_JOBS)


def test_the_suite_covers_the_options_the_simulator_accepts():
    """Every pattern option of at least one entry is one a user writes; the suite is at least
    40 job groups, each running on both targets (the fixture fails otherwise)."""
    assert len(JOBS) >= 40 and len({n for n, _, _ in JOBS}) == len(JOBS)
    text = _job_file() + _job_file(EXITALL_JOBS)
    for option in ("bssplit", "bsrange", "rwmixread", "rwmixwrite", "number_ios", "io_size", "loops", "offset",
                   "numjobs", "offset_increment", "ba=", "norandommap", "random_distribution", "percentage_random",
                   "rate_iops", "rate=", "thinktime", "runtime", "time_based", "ioengine", "iodepth", "direct",
                   "zero_buffers", "buffer_compress_percentage", "trim", "rw=read:-", "rw=write:8k", "randread:8",
                   "rate_process=poisson", "exitall"):
        assert option in text, option


@pytest.mark.parametrize("index", range(len(JOBS)), ids=[n for n, _, _ in JOBS])
def test_fio_and_the_simulator_agree_on_what_ran(both, index):
    _agree(both, JOBS, index)


@pytest.mark.parametrize("index", range(len(EXITALL_JOBS)), ids=[n for n, _, _ in EXITALL_JOBS])
def test_fio_and_the_simulator_agree_under_exitall(both_exitall, index):
    _agree(both_exitall, EXITALL_JOBS, index)


def _agree(both: dict, entries: list[tuple[str, str, str]], index: int) -> None:
    name, opts, fixed = entries[index]
    sim, loop = (both[k]["groups"][index] for k in ("sim", "loop"))
    assert sim["name"] == loop["name"] and sim["name"].split("+")[0] == name
    assert sim["complete"] and loop["complete"]
    dirs = set(sim["directions"]) | set(loop["directions"])
    assert set(sim["directions"]) == set(loop["directions"]), (sim["directions"].keys(), loop["directions"].keys())
    fixed_sizes = not any(k in opts for k in ("bssplit", "bsrange"))
    total = {k: sum(g["directions"][d]["ios"] for d in dirs) for k, g in (("sim", sim), ("loop", loop))}
    for d in dirs:
        s, f = sim["directions"][d], loop["directions"][d]
        cut_short = not fixed_sizes and "rand" in opts and "norandommap" not in opts
        assert s["bytes"] / s["ios"] == pytest.approx(f["bytes"] / f["ios"], rel=0.05 if cut_short else 0.03), \
            (d, "mean IO size")
        share = f["ios"] / total["loop"]
        noise = 5 * (share * (1 - share) / total["loop"]) ** 0.5
        assert s["ios"] / total["sim"] == pytest.approx(share, abs=max(0.03, noise)), (d, "share")
        if fixed == "count" and len(dirs) == 1:
            if fixed_sizes:
                assert s["ios"] == f["ios"] and s["bytes"] == f["bytes"], d
            else:
                assert s["bytes"] == pytest.approx(f["bytes"], rel=0.02), d
    if fixed == "count" and len(dirs) > 1:  # the mix is drawn per IO: the total is what is fixed
        assert total["sim"] == pytest.approx(total["loop"], rel=0 if fixed_sizes else 0.02)
    for js, jf in zip(sim["jobs"], loop["jobs"]):
        assert _dominant_bucket(js["queue_depth"]) == jf["queue_depth"], (js, jf)
    if fixed == "time":
        assert sim["duration_s"] == pytest.approx(loop["duration_s"], rel=0.12)
    if fixed == "early":
        assert sim["duration_s"] < 30 and loop["duration_s"] < 30
