"""``ssdlab run``: one fio job file on the simulator and on a loop device through fio, fio's
options on the command line, and the errors a user meets. Loop-device tests need root and
loop devices; they fail (not skip) without them unless SSDLAB_NO_LOOP=1."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from conftest import run_cli, set_args
from ssdlab import results

needs_loop = pytest.mark.skipif(os.environ.get("SSDLAB_NO_LOOP") == "1", reason="SSDLAB_NO_LOOP=1")

#: Two sections: a sequential fill of the region, then a 70/30 mix over a zipf-skewed region
#: in bursts of 2000 IOs separated by 500 ms of idle time.
MIX_JOB = """\
[global]
ioengine=libaio
direct=1
size=48m
iodepth=16

[fill]
rw=write
bs=128k

[mix]
stonewall
rw=randrw
rwmixread=70
bs=4k
random_distribution=zipf:1.2
runtime=3
time_based
thinktime=500ms
thinktime_blocks=2000
"""


def _run(tmp_path, target: str, *extra: str, job: str = MIX_JOB, name: str = "r") -> tuple[dict, dict]:
    jobfile = tmp_path / f"{name}.fio"
    jobfile.write_text(job)
    out = tmp_path / name
    run_cli("run", str(jobfile), "--target", target, "--interval", "0.1", "--out", str(out), "--no-progress",
            *extra)
    return json.loads((out / "summary.json").read_text()), results.read_series(out / "series")


def _zero_runs(iops: np.ndarray, min_len: int) -> int:
    """Runs of at least ``min_len`` consecutive intervals without a completion."""
    runs, n = 0, 0
    for v in list(iops) + [1.0]:
        if v == 0:
            n += 1
        else:
            runs += n >= min_len
            n = 0
    return runs


def _structure(summary: dict, series: dict) -> dict:
    g1, g2 = summary["groups"]
    d = g2["directions"]
    mix = series["group"] == 2
    iops = series["iops"][mix][:-1]          # the last interval may be cut short
    return {"names": [g1["name"], g2["name"]], "fill_dirs": sorted(g1["directions"]),
            "fill_bytes": g1["directions"]["write"]["bytes"], "mix_s": g2["duration_s"],
            "read_share": d["read"]["ios"] / (d["read"]["ios"] + d["write"]["ios"]),
            "ios": d["read"]["ios"] + d["write"]["ios"], "gaps": _zero_runs(iops, 3)}


def _check_structure(st: dict) -> None:
    assert st["names"] == ["fill", "mix"]
    assert st["fill_dirs"] == ["write"] and st["fill_bytes"] == 48 * 2 ** 20
    assert 2.95 <= st["mix_s"] <= 3.55  # fio may end in a thinktime past the runtime
    assert st["read_share"] == pytest.approx(0.70, abs=0.02)
    # Every 2000 IOs the host idles 500 ms: at least three whole 0.1 s intervals without a
    # completion between bursts (a burst may straddle two intervals).
    bursts = st["ios"] / 2000
    assert bursts >= 2
    assert int(bursts) - 1 <= st["gaps"] <= int(np.ceil(bursts)), st


def test_job_file_on_simulator(tmp_path):
    summary, series = _run(tmp_path, "sim:default", *set_args())
    st = _structure(summary, series)
    _check_structure(st)
    assert summary["write_amplification"] is not None
    assert {"read_iops", "write_iops", "read_mbps", "write_mbps", "read_lat_p99_us"} <= set(series)
    assert any("ioengine=libaio" in n for n in summary["not_applicable"])
    # No endurance projection from a run that judges no steady state; the summary says why.
    assert summary["endurance"] is None and "does not judge steady state" in summary["endurance_unavailable"]
    # Thinktime left the drive idle: the simulator counts the gaps.
    assert summary["groups"][1]["idle_gaps"] == pytest.approx(st["ios"] / 2000, abs=1)


@pytest.mark.realtime
@needs_loop
def test_same_job_file_on_simulator_and_loop_device(tmp_path):
    sim = _structure(*_run(tmp_path, "sim:default", *set_args(), name="sim"))
    loop = _structure(*_run(tmp_path, "loop:64MB", name="loop"))
    for st in (sim, loop):
        _check_structure(st)
    assert sim["read_share"] == pytest.approx(loop["read_share"], abs=0.03)
    assert sim["names"] == loop["names"] and sim["fill_bytes"] == loop["fill_bytes"]


def test_fio_options_on_the_command_line(tmp_path):
    out = tmp_path / "o"
    run_cli("run", "--name=r", "--rw=randread", "--bs=8k", "--iodepth=4", "--size=64m", "--number_ios=5000",
            "--target", "sim:default", *set_args(), "--out", str(out), "--no-progress")
    s = json.loads((out / "summary.json").read_text())
    d = s["groups"][0]["directions"]
    assert list(d) == ["read"] and d["read"]["ios"] == 5000 and d["read"]["bytes"] == 5000 * 8192
    assert s["workload_source"].startswith("command line: --name=r")
    # number_ios does not extend the I/O beyond one pass over the region (fio's rule).
    run_cli("run", "--name=r", "--rw=randread", "--bs=8k", "--size=16m", "--number_ios=5000", "--target",
            "sim:default", *set_args(), "--out", str(out), "--no-progress")
    assert json.loads((out / "summary.json").read_text())["groups"][0]["directions"]["read"]["ios"] == 2048


def test_print_job_and_dry_run(tmp_path):
    jobfile = tmp_path / "j.fio"
    jobfile.write_text(MIX_JOB)
    printed = run_cli("run", str(jobfile), "--print-job").stdout
    assert "[mix]" in printed and "stonewall" in printed and "random_distribution=zipf:1.2" in printed
    dry = run_cli("run", str(jobfile), "--dry-run", *set_args(), "--out", str(tmp_path / "d")).stdout
    assert "simulator workload" in dry and "'read_fraction': 0.7" in dry
    assert not (tmp_path / "d").exists()


def test_section_runs_those_sections_and_verify_reads_back_what_was_written(tmp_path):
    """fio's --section=NAME keeps only the named sections of a job file; a job with verify
    reads back, after its writes, the bytes it wrote."""
    jobfile = tmp_path / "j.fio"
    jobfile.write_text("[global]\nbs=64k\nsize=32m\nstonewall\n[a]\nrw=randwrite\nverify=crc32c\n"
                       "[b]\nrw=randread\n[c]\nrw=write\nsize=16m\n")
    out = tmp_path / "o"
    run_cli("run", str(jobfile), "--section=a", "--section=c", *set_args(), "--out", str(out), "--no-progress")
    groups = json.loads((out / "summary.json").read_text())["groups"]
    assert [g["name"] for g in groups] == ["a", "a (verify)", "c"]
    assert groups[0]["host_write_bytes"] == groups[1]["host_read_bytes"] == 32 << 20
    assert groups[1]["host_write_bytes"] == 0 and groups[2]["host_write_bytes"] == 16 << 20


@pytest.mark.parametrize("text,needle", [
    ("[a]\nrw=randwrite\nverify=md5\ntime_based\nruntime=1\n", "option time_based: verify"),
    ("[a]\nrw=randwrite\nbs=1000\nsize=1m\n", "multiple of 512"),
    ("[a]\nrw=randtrimwrite\n", "rw"),
])
def test_refusals_name_the_option_and_line(tmp_path, text, needle):
    jobfile = tmp_path / "j.fio"
    jobfile.write_text(text)
    proc = run_cli("run", str(jobfile), *set_args(), "--out", str(tmp_path / "o"), check=False)
    assert proc.returncode == 2, proc.stderr
    assert needle in proc.stderr and "Traceback" not in proc.stderr
    assert str(jobfile) in proc.stderr or "j.fio" in proc.stderr


@pytest.mark.realtime
@needs_loop
def test_job_writing_elsewhere_is_refused(tmp_path):
    jobfile = tmp_path / "j.fio"
    jobfile.write_text("[a]\nfilename=/dev/sda\nrw=randwrite\nsize=1m\n")
    proc = run_cli("run", str(jobfile), "--target", "loop:16MB", "--out", str(tmp_path / "o"), check=False)
    assert proc.returncode == 2 and "filename=/dev/sda is not the target" in proc.stderr


def test_usage_errors(tmp_path):
    proc = run_cli("run", "--out", str(tmp_path / "o"), check=False)
    assert proc.returncode == 2 and "give a fio job file" in proc.stderr
    proc = run_cli("run", "nosuchjob", "--out", str(tmp_path / "o"), check=False)
    assert proc.returncode == 2 and "no such job file" in proc.stderr
    proc = run_cli("run", "--rw", "randread", "--out", str(tmp_path / "o"), check=False)
    assert proc.returncode == 2 and "--name=value" in proc.stderr
    # A missing job file with options: the file is what is wrong, not the options' form.
    proc = run_cli("run", "nosuchjob.fio", "--bs=4k", "--out", str(tmp_path / "o"), check=False)
    assert proc.returncode == 2 and "nosuchjob.fio: no such job file" in proc.stderr, proc.stderr
    assert "--name=value" not in proc.stderr


@pytest.mark.realtime
def test_ctrl_c_keeps_what_was_measured(tmp_path):
    from conftest import interrupt_cli

    jobfile = tmp_path / "long.fio"
    jobfile.write_text("[fill]\nrw=write\nbs=128k\nsize=64m\n[w]\nstonewall\nrw=randwrite\nbs=4k\niodepth=32\n"
                       "runtime=1000000\ntime_based\n")
    out = tmp_path / "o"
    interrupt_cli("run", str(jobfile), *set_args(), "--out", str(out), "--no-progress", settle_s=3.0)
    s = json.loads((out / "summary.json").read_text())
    assert s["complete"] is False and results.incomplete_reason(out)
    fill, w = s["groups"]
    assert fill["complete"] and not w["complete"] and 0 < w["duration_s"] < 1_000_000
    series = results.read_series(out / "series")
    assert (series["group"] == 2).sum() == pytest.approx(w["duration_s"], abs=1)
    assert (out / "report.html").exists()


def test_numjobs_run_together_on_the_simulator(tmp_path):
    job = "[w]\nrw=randwrite\nbs=4k\niodepth=4\nnumjobs=3\nsize=16m\noffset_increment=16m\n[r]\nrw=randread\nbs=8k\n" \
          "iodepth=1\nsize=8m\n"
    summary, series = _run(tmp_path, "sim:default", *set_args(), job=job)
    (group,) = summary["groups"]
    assert [j["name"] for j in group["jobs"]] == ["w", "w", "w", "r"]
    assert [j.get("write_ios") for j in group["jobs"][:3]] == [4096] * 3
    assert group["jobs"][3]["read_ios"] == 1024 and "write_ios" not in group["jobs"][3]
    assert group["directions"]["write"]["ios"] == 3 * 4096 and group["directions"]["read"]["ios"] == 1024
    # one series for the group, both directions in it
    assert (series["write_iops"] * series["dt_s"]).sum() == pytest.approx(3 * 4096, rel=1e-6)


def test_compare_shows_reads_and_writes_of_runs(tmp_path):
    job = "[mix]\nioengine=libaio\ndirect=1\nrw=randrw\nrwmixread=70\nbs=4k\niodepth=8\nsize=32m\nnumber_ios=20000\n"
    folders = []
    for qd in (1, 16):
        summary, _ = _run(tmp_path, "sim:default", *set_args(), job=job.replace("iodepth=8", f"iodepth={qd}"),
                          name=f"qd{qd}")
        folders.append(str(tmp_path / f"qd{qd}"))
        d = summary["groups"][0]["directions"]
        assert summary["read_iops_mean"] == pytest.approx(d["read"]["ios"] / summary["duration_s"])
        assert summary["write_latency_us"] == d["write"]["latency_us"]
    out = run_cli("compare", *folders).stdout
    rows = {line.split("  ")[0].strip(): line for line in out.splitlines()}
    for label in ("read IOPS mean", "write IOPS mean", "read MB/s mean", "read latency p99 (µs)",
                  "write latency p99 (µs)"):
        assert label in rows, out
    # a deeper queue: more IOPS, longer waits
    iops = [float(v.replace(",", "")) for v in rows["read IOPS mean"].split()[-2:]]
    assert iops[1] > iops[0]


#: A job whose size ends it before its runtime (no time_based), then two jobs together: one
#: timed, one ending by size first. fio ends each job at whichever comes first.
EARLY_END_JOB = """\
[global]
ioengine=libaio
direct=1
bs=4k
iodepth=16

[sized]
rw=randwrite
size=24m
runtime=60

[timed]
stonewall
rw=randread
size=24m
runtime=2
time_based

[short]
rw=randwrite
size=8m
runtime=60
"""


@pytest.mark.realtime
@pytest.mark.parametrize("target", ["sim", pytest.param("loop", marks=needs_loop)])
def test_a_job_ended_by_its_size_lasts_as_long_as_it_ran(tmp_path, target):
    """runtime without time_based caps a job that may end sooner (fio 3.33): the group lasts as
    long as its IOs took, its IOPS are over that time, and no 0-IOPS intervals follow."""
    args = set_args() if target == "sim" else ()
    summary, series = _run(tmp_path, "sim:default" if target == "sim" else "loop:64MB", *args,
                           job=EARLY_END_JOB, name=target)
    sized, together = summary["groups"]
    ios = sized["directions"]["write"]["ios"]
    assert ios == 24 * 2 ** 20 // 4096
    assert sized["duration_s"] < 30, sized["duration_s"]
    first = series["group"] == 1
    assert (series["iops"][first][:-1] > 0).all(), series["iops"][first]
    assert np.sum(series["iops"][first] * series["dt_s"][first]) == pytest.approx(ios, rel=1e-9)
    assert sized["directions"]["write"]["iops_mean"] == pytest.approx(ios / sized["duration_s"], rel=0.02)
    # the timed job sets the second group's length; the short job's 8 MiB are all there
    assert 1.95 <= together["duration_s"] <= 2.2
    assert together["directions"]["write"]["ios"] == 8 * 2 ** 20 // 4096
